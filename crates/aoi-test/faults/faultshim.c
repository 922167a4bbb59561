/*
 * faultshim: an LD_PRELOAD library that makes the operating system fail chosen writes, so
 * tests can watch a real binary meet a full disk, a failing device or a stdout that breaks
 * halfway, without mocking any of its code.
 *
 * It interposes write, pwrite, pwrite64, writev, fsync, fdatasync, ftruncate and ftruncate64
 * (each found with dlsym(RTLD_NEXT)), plus close, dup2 and dup3 to keep its per-fd cache true. Only
 * calls on a *targeted* fd are touched; everything else passes straight through.
 *
 * Configuration, read once from the environment:
 *
 *   FAULTSHIM_PATH=S     target every fd whose path (readlink of /proc/self/fd/N) contains S;
 *                        (S ending in '$': whose path ends with S); the answer is cached
 *                        per fd until that fd is closed or replaced
 *   FAULTSHIM_FD=N       target fd N (e.g. 1 for stdout), whatever it is open on
 *   FAULTSHIM_AFTER=B    bytes the targeted fds may take in all before the fault (default 0);
 *                        the write that crosses the budget is cut short at it, as a filling
 *                        disk does, and every later one fails
 *   FAULTSHIM_ERRNO=E    ENOSPC (default), EIO, EPIPE, EDQUOT, EFBIG, or a number
 *   FAULTSHIM_OPS=LIST   which calls fail once the budget is spent, a comma list of
 *                        write (write/pwrite/pwrite64/writev), sync (fsync/fdatasync) and
 *                        truncate (ftruncate/ftruncate64); default "write,sync". Writes always count
 *                        against the budget, failing or not, so "sync" alone fails the first
 *                        fsync after B bytes were written
 *   FAULTSHIM_REPORT=F   append one line per injected failure to file F,
 *                        "<call> fd=<n> errno=<e> path=<path>", and at exit one line
 *                        "written <bytes>": what the targeted fds took in all
 *
 * Neither FAULTSHIM_PATH nor FAULTSHIM_FD set: the shim does nothing. It never writes to
 * stdout or stderr, so what a test reads there is the program's own.
 *
 * Build: cc -shared -fPIC -O2 -o faultshim.so faultshim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define OP_WRITE 1
#define OP_SYNC 2
#define OP_TRUNCATE 4

/* Per-fd answer to "is this fd targeted?": 0 unknown, 1 yes, 2 no. */
#define MAX_FD 4096
static unsigned char fd_state[MAX_FD];

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int enabled;
static const char *match_path;
static size_t match_len;
static int match_suffix;
static int match_fd = -1;
static long long budget;
static int fault_errno = ENOSPC;
static int ops = OP_WRITE | OP_SYNC;
static const char *report_path;

/* Bytes written to targeted fds so far. */
static long long used;

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off64_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_ftruncate)(int, off_t);
static int (*real_ftruncate64)(int, off64_t);
static int (*real_close)(int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);

static int parse_errno(const char *s) {
    if (s == NULL || *s == '\0' || strcmp(s, "ENOSPC") == 0) return ENOSPC;
    if (strcmp(s, "EIO") == 0) return EIO;
    if (strcmp(s, "EPIPE") == 0) return EPIPE;
    if (strcmp(s, "EDQUOT") == 0) return EDQUOT;
    if (strcmp(s, "EFBIG") == 0) return EFBIG;
    int n = atoi(s);
    return n > 0 ? n : ENOSPC;
}

static int parse_ops(const char *s) {
    if (s == NULL || *s == '\0') return OP_WRITE | OP_SYNC;
    int out = 0;
    if (strstr(s, "write")) out |= OP_WRITE;
    if (strstr(s, "sync")) out |= OP_SYNC;
    if (strstr(s, "truncate")) out |= OP_TRUNCATE;
    return out;
}

static void init(void) {
    real_write = dlsym(RTLD_NEXT, "write");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
    real_writev = dlsym(RTLD_NEXT, "writev");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_ftruncate = dlsym(RTLD_NEXT, "ftruncate");
    real_ftruncate64 = dlsym(RTLD_NEXT, "ftruncate64");
    real_close = dlsym(RTLD_NEXT, "close");
    real_dup2 = dlsym(RTLD_NEXT, "dup2");
    real_dup3 = dlsym(RTLD_NEXT, "dup3");

    const char *p = getenv("FAULTSHIM_PATH");
    const char *f = getenv("FAULTSHIM_FD");
    if (p != NULL && *p != '\0') {
        char *copy = strdup(p);
        if (copy == NULL) abort();
        match_len = strlen(copy);
        if (copy[match_len - 1] == '$') {
            copy[--match_len] = '\0';
            match_suffix = 1;
        }
        match_path = copy;
    }
    if (f != NULL && *f != '\0') match_fd = atoi(f);
    const char *a = getenv("FAULTSHIM_AFTER");
    budget = a ? atoll(a) : 0;
    fault_errno = parse_errno(getenv("FAULTSHIM_ERRNO"));
    ops = parse_ops(getenv("FAULTSHIM_OPS"));
    const char *r = getenv("FAULTSHIM_REPORT");
    if (r != NULL && *r != '\0') report_path = strdup(r);
    enabled = match_path != NULL || match_fd >= 0;
}

static void ensure_init(void) { pthread_once(&once, init); }

static void forget(int fd) {
    if (fd >= 0 && fd < MAX_FD) __atomic_store_n(&fd_state[fd], 0, __ATOMIC_RELAXED);
}

/* The path fd is open on, into buf; "" when it cannot be read. */
static void fd_path(int fd, char *buf, size_t len) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, buf, len - 1);
    buf[n > 0 ? n : 0] = '\0';
}

static int targeted(int fd) {
    ensure_init();
    if (!enabled || fd < 0) return 0;
    if (fd == match_fd) return 1;
    if (match_path == NULL) return 0;
    if (fd < MAX_FD) {
        unsigned char s = __atomic_load_n(&fd_state[fd], __ATOMIC_RELAXED);
        if (s) return s == 1;
    }
    char path[PATH_MAX];
    fd_path(fd, path, sizeof path);
    size_t len = strlen(path);
    int yes = match_suffix ? len >= match_len && strcmp(path + len - match_len, match_path) == 0
                           : strstr(path, match_path) != NULL;
    if (fd < MAX_FD) __atomic_store_n(&fd_state[fd], yes ? 1 : 2, __ATOMIC_RELAXED);
    return yes;
}

/* Records an injected failure in FAULTSHIM_REPORT, with raw system calls only (the shim must
 * not re-enter itself, and stdio may be what is failing). */
static void report(const char *call, int fd) {
    if (report_path == NULL) return;
    char path[PATH_MAX];
    fd_path(fd, path, sizeof path);
    char line[PATH_MAX + 128];
    int n = snprintf(line, sizeof line, "%s fd=%d errno=%d path=%s\n", call, fd, fault_errno,
                     path);
    if (n <= 0) return;
    if (n >= (int)sizeof line) n = sizeof line - 1;
    int out = (int)syscall(SYS_openat, AT_FDCWD, report_path,
                           O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out < 0) return;
    syscall(SYS_write, out, line, (size_t)n);
    syscall(SYS_close, out);
}

/* At exit: how many bytes the targeted fds took, for a test that places budgets inside a
 * measured run. */
__attribute__((destructor)) static void report_written(void) {
    if (!enabled || report_path == NULL) return;
    char line[64];
    int n = snprintf(line, sizeof line, "written %lld\n", __atomic_load_n(&used, __ATOMIC_RELAXED));
    int out = (int)syscall(SYS_openat, AT_FDCWD, report_path,
                           O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out < 0) return;
    syscall(SYS_write, out, line, (size_t)n);
    syscall(SYS_close, out);
}

/* How many of `count` bytes a targeted write may pass: count when the budget allows them all,
 * fewer when it runs out inside them, -1 (errno set) when it is spent. */
static ssize_t allowance(const char *call, int fd, size_t count) {
    long long want = (long long)count;
    long long before = __atomic_fetch_add(&used, want, __ATOMIC_RELAXED);
    if (!(ops & OP_WRITE)) return (ssize_t)count;
    long long left = budget - before;
    if (left >= want) return (ssize_t)count;
    if (left > 0) {
        /* The part beyond the budget is not written: take it back off the count. */
        __atomic_fetch_sub(&used, want - left, __ATOMIC_RELAXED);
        return (ssize_t)left;
    }
    __atomic_fetch_sub(&used, want, __ATOMIC_RELAXED);
    report(call, fd);
    errno = fault_errno;
    return -1;
}

/* True (errno set) when a sync or truncate of a targeted fd must fail now. */
static int spent(const char *call, int fd, int op) {
    if (!(ops & op)) return 0;
    if (__atomic_load_n(&used, __ATOMIC_RELAXED) < budget) return 0;
    report(call, fd);
    errno = fault_errno;
    return 1;
}

ssize_t write(int fd, const void *buf, size_t count) {
    ensure_init();
    if (targeted(fd) && count > 0) {
        ssize_t n = allowance("write", fd, count);
        if (n < 0) return -1;
        count = (size_t)n;
    }
    return real_write(fd, buf, count);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    ensure_init();
    if (targeted(fd) && count > 0) {
        ssize_t n = allowance("pwrite", fd, count);
        if (n < 0) return -1;
        count = (size_t)n;
    }
    return real_pwrite(fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off64_t offset) {
    ensure_init();
    if (targeted(fd) && count > 0) {
        ssize_t n = allowance("pwrite64", fd, count);
        if (n < 0) return -1;
        count = (size_t)n;
    }
    return real_pwrite64(fd, buf, count, offset);
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    ensure_init();
    if (!targeted(fd) || iovcnt <= 0) return real_writev(fd, iov, iovcnt);
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++) total += iov[i].iov_len;
    if (total == 0) return real_writev(fd, iov, iovcnt);
    ssize_t n = allowance("writev", fd, total);
    if (n < 0) return -1;
    if ((size_t)n == total) return real_writev(fd, iov, iovcnt);
    /* Cut short: write the first n bytes of the vector as one plain write. */
    size_t left = (size_t)n;
    ssize_t done = 0;
    for (int i = 0; i < iovcnt && left > 0; i++) {
        size_t take = iov[i].iov_len < left ? iov[i].iov_len : left;
        ssize_t w = real_write(fd, iov[i].iov_base, take);
        if (w < 0) return done > 0 ? done : -1;
        done += w;
        left -= (size_t)w;
        if ((size_t)w < take) break;
    }
    return done;
}

int fsync(int fd) {
    ensure_init();
    if (targeted(fd) && spent("fsync", fd, OP_SYNC)) return -1;
    return real_fsync(fd);
}

int fdatasync(int fd) {
    ensure_init();
    if (targeted(fd) && spent("fdatasync", fd, OP_SYNC)) return -1;
    return real_fdatasync(fd);
}

int ftruncate(int fd, off_t length) {
    ensure_init();
    if (targeted(fd) && spent("ftruncate", fd, OP_TRUNCATE)) return -1;
    return real_ftruncate(fd, length);
}

int ftruncate64(int fd, off64_t length) {
    ensure_init();
    if (targeted(fd) && spent("ftruncate64", fd, OP_TRUNCATE)) return -1;
    return real_ftruncate64(fd, length);
}

int close(int fd) {
    ensure_init();
    forget(fd);
    return real_close(fd);
}

int dup2(int oldfd, int newfd) {
    ensure_init();
    forget(newfd);
    return real_dup2(oldfd, newfd);
}

int dup3(int oldfd, int newfd, int flags) {
    ensure_init();
    forget(newfd);
    return real_dup3(oldfd, newfd, flags);
}
