#!/usr/bin/env bash
# GNU coreutils 9.1's and GNU grep 3.8's own test suites, run against aoi-coreutils and against
# this machine's GNU tools: the second judge (after .ci/busybox.sh) of "aoi-coreutils as a
# drop-in" in human mode, by the suites the GNU maintainers wrote for the tools it stands in for.
#
# Usage: bash .ci/gnu-suites.sh
#        GNU_SUITES_APPLETS="head grep" bash .ci/gnu-suites.sh   only those applets' test files
#        GNU_SUITES_REPORT=FILE bash .ci/gnu-suites.sh   also writes the per-file table (TSV:
#          suite, applet, test file, GNU verdict, aoi-coreutils verdict) to FILE
#        GNU_SUITES_KEEP=1 bash .ci/gnu-suites.sh   keeps the work dir: every test file's log,
#          as logs/IMPL/SUITE/TEST-FILE.log, for reading why a test failed
#        GNU_SUITES_FILES=REGEX bash .ci/gnu-suites.sh   only the test files whose path matches
#          (awk's extended regex: GNU_SUITES_FILES='tests/misc/stat-' ...); no floor then
#        GNU_SUITES_VERBOSE=1 bash .ci/gnu-suites.sh   runs the tests with VERBOSE=yes (the shell
#          tests trace themselves with set -x into their logs), with GNU_SUITES_KEEP to read them
#        GNU_SUITES_JOBS=N (default 2) test files at a time; AOI_COREUTILS=PATH the binary judged
#          (default target/debug/aoi-coreutils; it is copied first, so a rebuild cannot change it
#          in the middle of a run)
#
# The sources: Debian bookworm's source packages coreutils 9.1-1 and grep 3.8-5 (pinned: the
# versions bookworm installs as the system's tools, the baseline), fetched with `apt-get source`
# through a private deb-src list (nothing of the system's apt configuration is changed), with
# Debian's patches applied as its build does, kept under $COMPAT_CACHE (default
# /var/cache/machinemode-ci/compat, shared with .ci/busybox.sh).
#
# The test files, per applet:
#   coreutils (head tail wc cat ls du cp mv rm mkdir touch stat): of the test files `make check`
#     runs (tests/local.mk's `all_tests`; the root-only `all_root_tests` of `make check-root` are
#     left out), those in the applet's own directory tests/APPLET/ (tail's is tests/tail-2/;
#     head, wc, cat and stat have none) and those in tests/misc/ named APPLET.EXT or APPLET-*
#     (tests/misc/head-c.sh, tests/misc/ls-misc.pl, tests/misc/tail.pl). Tests of several
#     programs at once (tests/misc/help-version.sh, invalid-opt.pl) are not taken.
#   grep: every test file of tests/Makefile.am's `TESTS` (its XFAIL_TESTS, triple-backref, is
#     judged by its raw exit status like the rest, so GNU "fails" it).
#
# How: nothing is configured or built. Each test file runs as Automake's `make check` runs it,
# in a fresh fake build directory (under ${TMPDIR:-/tmp}) whose src/ holds a symbolic link per
# program the build would have made: the environment of the suite's TESTS_ENVIRONMENT (srcdir,
# abs_top_builddir, built_programs, VERSION, LOCALE_FR*, host_os, CONFIG_HEADER, ...,
# PATH=BUILDDIR/src:PATH, grep's PCRE_WORKS probe, fd 9 on stderr, tests/lang-default and
# tests/envvar-check sourced), `.sh` and extension-less files run by /bin/sh, `.pl` by
# `perl -w -I... -MCuSkip -MCoreutils -M"CuTmpdir qw(FILE)"` (`.xpl` with -T), the PL_LOG_COMPILER
# of the sources. The rest of the environment is cleared (env -i: HOME, TMPDIR and a PATH of the
# system's directories only), so a program the tests use from outside src/ is the system's too.
# For impl `gnu` every link points at the system's program (coreutils' in /usr/bin; grep, and
# Debian's egrep/fgrep scripts). For impl `aoi` the same, except the applet under test (for grep:
# grep, egrep and fgrep), which is the copy of aoi-coreutils: a test file judges one applet only,
# as in .ci/busybox.sh. What the build would also have made: coreutils' src/getlimits and grep's
# tests/get-mb-cur-max are compiled here with cc from small equivalents (the same NAME=VALUE lines;
# MB_CUR_MAX of a locale), and CONFIG_HEADER is a config.h holding just the #define lines the
# chosen tests grep for, with the values of Debian's Linux build. The locales the tests ask for
# (en_US.UTF-8, zh_CN, ja_JP.eucJP, ...) are compiled once with localedef and reached through
# LOCPATH (below). Tests skip as root where they say so (skip_if_root_), alike for both.
#
# Needs: apt-get (once), patch, cc, perl, python3, localedef with the `locales` package's sources
# (once); a test whose own prerequisite is missing here (strace, gdb, setfacl, a second group)
# skips, alike for both impls.
#
# A test file's verdict is its exit status: 0 PASS, 77 SKIP, 99 ERROR, anything else FAIL (a file
# still running after 120 s is stopped, and FAILs). Every file runs for both impls.
#
# The verdict: the test files GNU passes and aoi-coreutils does not are compared with
# crates/aoi-coreutils/compat/gnu-differences.txt, one `SUITE/APPLET: TEST FILE` per line after a
# `# reason` comment. A file failing that the list does not name fails this script (a regression,
# or a difference nobody wrote down), and so does a listed file that now passes (the list must
# shrink with the work), and so does GNU passing fewer files of an applet than the floor below (a
# harness that runs nothing must not pass). A line `~ SUITE/APPLET: TEST FILE` names a file
# aoi-coreutils passes on some runs only: it may do either. GNU_SUITES_APPLETS limits all three
# checks to its applets, GNU_SUITES_FILES the first two to its files.
# The per-applet pass counts are printed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
aoi_built=${AOI_COREUTILS:-$root/target/debug/aoi-coreutils}
cache=${COMPAT_CACHE:-/var/cache/machinemode-ci/compat}
expected=$root/crates/aoi-coreutils/compat/gnu-differences.txt
all_applets=(head tail wc cat ls du cp mv rm mkdir touch stat grep)
read -r -a applets <<<"${GNU_SUITES_APPLETS:-${all_applets[*]}}"
jobs=${GNU_SUITES_JOBS:-2}
limit=120
# The fewest test files GNU passes per applet on a working harness: about nine tenths of what it
# passed on Debian bookworm as root (head 5, tail 28, wc 6, cat 4, ls 42, du 19, cp 48, mv 30,
# rm 25, mkdir 9, touch 11, stat 7, grep 112).
floors="head=4 tail=25 wc=5 cat=3 ls=38 du=17 cp=43 mv=27 rm=22 mkdir=8 touch=10 stat=6 grep=100"

[[ -x $aoi_built ]] || { echo "gnu-suites.sh: no $aoi_built (cargo build -p aoi-coreutils)" >&2; exit 1; }
command -v cc >/dev/null || { echo "gnu-suites.sh: no cc (getlimits and get-mb-cur-max are compiled)" >&2; exit 1; }
for applet in "${applets[@]}"; do
  [[ " ${all_applets[*]} " == *" $applet "* ]] \
    || { echo "gnu-suites.sh: no applet $applet (one of: ${all_applets[*]})" >&2; exit 1; }
done

# -- the sources, once -------------------------------------------------------------------------
cu_src=$cache/coreutils-9.1
grep_src=$cache/grep-3.8
wanted=()
[[ -f $cu_src/.fetched ]] || wanted+=(coreutils=9.1-1)
[[ -f $grep_src/.fetched ]] || wanted+=(grep=3.8-5)
if [[ ${#wanted[@]} -gt 0 ]]; then
  mkdir -p "$cache"
  source "$root/.ci/debian-source.sh"
  dl=$(mktemp -d)
  debian_sources "$dl" "${wanted[@]}"
  unpack() { # package upstream-version debian-version dir
    [[ ! -f $4/.fetched ]] || return 0
    rm -rf "$4" && mkdir -p "$4"
    tar xJf "$dl/$1_$2.orig.tar.xz" -C "$4" --strip-components=1
    tar xJf "$dl/$1_$3.debian.tar.xz" -C "$4"
    # Debian's patches, as its build applies them: the system's tools are built with them
    # (grep's 1029235 fixes a bug and changes tests/backref with it).
    local patch
    while read -r patch; do
      patch -d "$4" -p1 -s <"$4/debian/patches/$patch"
    done < <(sed -e '/^#/d' -e '/^$/d' "$4/debian/patches/series")
    touch "$4/.fetched"
  }
  unpack coreutils 9.1 9.1-1 "$cu_src"
  unpack grep 3.8 3.8-5 "$grep_src"
  rm -rf "$dl"
fi

# -- the locales the tests ask for, once -------------------------------------------------------
# grep's multibyte tests skip without en_US.UTF-8 (and others without zh_CN, ja_JP.eucJP, ...), a
# third of its suite; a system may have none of them. They are compiled here with localedef from
# the `locales` package's sources into $COMPAT_CACHE/locales, and the tests of both impls run with
# LOCPATH pointing there (C.UTF-8 copied in beside them, as LOCPATH hides the system's).
locales=$cache/locales
if [[ ! -f $locales/.built ]]; then
  { command -v localedef >/dev/null && [[ -d /usr/share/i18n/locales ]]; } \
    || { echo "gnu-suites.sh: no localedef or /usr/share/i18n/locales (apt-get install locales)" >&2; exit 1; }
  rm -rf "$locales" && mkdir -p "$locales"
  for spec in en_US.utf8:UTF-8 en_US:ISO-8859-1 fr_FR.utf8:UTF-8 fr_FR:ISO-8859-1 de_DE.utf8:UTF-8 \
              cs_CZ.utf8:UTF-8 tr_TR.utf8:UTF-8 el_GR:ISO-8859-7 ja_JP.eucjp:EUC-JP \
              ru_RU.koi8r:KOI8-R zh_CN:GB2312 zh_CN.gb18030:GB18030; do
    name=${spec%:*}
    localedef -i "${name%%.*}" -f "${spec#*:}" "$locales/$name" >/dev/null
  done
  [[ ! -d /usr/lib/locale/C.utf8 ]] || cp -a /usr/lib/locale/C.utf8 "$locales/"
  touch "$locales/.built"
fi
export LOCPATH=$locales

# -- the fake build directories ----------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/gnu-suites.XXXXXX")
if [[ -n ${GNU_SUITES_KEEP:-} ]]; then
  echo "gnu-suites.sh: keeping $work"
else
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work/bin" "$work/helpers" "$work/templates" "$work/run" "$work/logs" "$work/verdicts"
cp "$aoi_built" "$work/bin/aoi-coreutils"
aoi=$work/bin/aoi-coreutils
sys_path=/usr/sbin:/usr/bin:/sbin:/bin

# coreutils' src/getlimits: the type limits as NAME=VALUE lines, as src/getlimits.c prints them.
cat >"$work/helpers/getlimits.c" <<'EOF'
#include <float.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#define TYPE_SIGNED(t) (!((t) 0 < (t) -1))
#define TYPE_MAXIMUM(t) ((t) (!TYPE_SIGNED (t) ? (t) -1 \
                              : ((((t) 1 << (sizeof (t) * CHAR_BIT - 2)) - 1) * 2 + 1)))
#define TYPE_MINIMUM(t) ((t) ~TYPE_MAXIMUM (t))
#define SSIZE_MIN TYPE_MINIMUM (ssize_t)
#define TIME_T_MAX TYPE_MAXIMUM (time_t)
#define TIME_T_MIN TYPE_MINIMUM (time_t)
#define UID_T_MAX TYPE_MAXIMUM (uid_t)
#define GID_T_MAX TYPE_MAXIMUM (gid_t)
#define PID_T_MAX TYPE_MAXIMUM (pid_t)
#define PID_T_MIN TYPE_MINIMUM (pid_t)
#define OFF_T_MAX TYPE_MAXIMUM (off_t)
#define OFF_T_MIN TYPE_MINIMUM (off_t)
#define SIZE_MIN 0
#define UCHAR_MIN 0
#define UINT_MIN 0
#define ULONG_MIN 0
#define UINTMAX_MIN 0
#define UID_T_MIN 0
#define GID_T_MIN 0
static char const *add_one (char *buf) /* src/getlimits.c's decimal_absval_add_one */
{
  int negative = buf[1] == '-';
  char *absnum = buf + 1 + negative, *p = absnum + strlen (absnum), *result;
  absnum[-1] = '0';
  while (*--p == '9')
    *p = '0';
  ++*p;
  result = absnum < p ? absnum : p;
  if (negative)
    *--result = '-';
  return result;
}
/* ftoastr's shortest text that reads back as the same value */
#define PRINT_FLOAT(N, T, DIG, FMT, READ) \
  static void N (T x) { char b[64]; for (int p = DIG; p < 40; p++) { \
    snprintf (b, sizeof b, FMT, p, x); if (READ (b, NULL) == x) break; } puts (b); }
PRINT_FLOAT (print_FLT, float, FLT_DIG, "%.*g", strtof)
PRINT_FLOAT (print_DBL, double, DBL_DIG, "%.*g", strtod)
PRINT_FLOAT (print_LDBL, long double, LDBL_DIG, "%.*Lg", strtold)
int main (void)
{
  char limit[64];
#define print_int(TYPE) \
  sprintf (limit + 1, "%ju", (uintmax_t) TYPE##_MAX); \
  printf (#TYPE "_MAX=%s\n", limit + 1); \
  printf (#TYPE "_OFLOW=%s\n", add_one (limit)); \
  if (TYPE##_MIN) { \
    sprintf (limit + 1, "%jd", (intmax_t) TYPE##_MIN); \
    printf (#TYPE "_MIN=%s\n", limit + 1); \
    printf (#TYPE "_UFLOW=%s\n", add_one (limit)); }
#define print_float(TYPE) \
  printf (#TYPE "_MIN="); print_##TYPE (TYPE##_MIN); \
  printf (#TYPE "_MAX="); print_##TYPE (TYPE##_MAX);
  print_int (CHAR) print_int (SCHAR) print_int (UCHAR) print_int (SHRT) print_int (INT)
  print_int (UINT) print_int (LONG) print_int (ULONG) print_int (SIZE) print_int (SSIZE)
  print_int (TIME_T) print_int (UID_T) print_int (GID_T) print_int (PID_T) print_int (OFF_T)
  print_int (INTMAX) print_int (UINTMAX)
  print_float (FLT) print_float (DBL) print_float (LDBL)
  return 0;
}
EOF
# grep's tests/get-mb-cur-max.c, without its gnulib includes.
cat >"$work/helpers/get-mb-cur-max.c" <<'EOF'
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
int main (int argc, char **argv)
{
  if (1 < argc && setlocale (LC_ALL, argv[1]))
    {
      printf ("%d\n", (int) MB_CUR_MAX);
      exit (EXIT_SUCCESS);
    }
  exit (EXIT_FAILURE);
}
EOF
cc -O -o "$work/helpers/getlimits" "$work/helpers/getlimits.c"
cc -O -o "$work/helpers/get-mb-cur-max" "$work/helpers/get-mb-cur-max.c"
# The #define lines the chosen tests grep CONFIG_HEADER for, as Debian's build on Linux has them.
cat >"$work/helpers/config.h" <<'EOF'
#define HAVE_INOTIFY 1
#define HAVE_LINKAT 1
/* #undef LINKAT_SYMLINK_NOTSUP */
#define LINK_FOLLOWS_SYMLINKS 0
#define HAVE_LUTIMES 1
#define HAVE_OPENAT 1
#define HAVE_SELINUX_SELINUX_H 1
#define HAVE_UTIMENSAT 1
#define USE_ACL 1
EOF

# configure's findings, as it would find them here.
locale_fr=none locale_fr_utf8=none
for name in fr_FR fr_FR.ISO-8859-1 fr_FR.ISO8859-1 fr_FR.iso88591; do
  if [[ $("$work/helpers/get-mb-cur-max" "$name" 2>/dev/null) == 1 ]]; then locale_fr=$name; break; fi
done
for name in fr_FR.UTF-8 fr_FR.utf8; do
  if [[ $("$work/helpers/get-mb-cur-max" "$name" 2>/dev/null) -gt 1 ]]; then locale_fr_utf8=$name; break; fi
done
awk_name=$(PATH=$sys_path; for a in gawk mawk nawk awk; do command -v $a >/dev/null && { echo $a; break; }; done)
sys_grep=$(PATH=$sys_path type -P grep)
host_triplet=$(uname -m)-pc-linux-gnu

# coreutils' programs (build-aux/gen-lists-of-programs.sh, as installed: ginstall is install),
# those this system has; hostname, kill and uptime come from other Debian packages.
built_programs=()
for program in $(sh "$cu_src/build-aux/gen-lists-of-programs.sh" --list-progs); do
  [[ $program == ginstall ]] && program=install
  case $program in coreutils | libstdbuf.so | hostname | kill | uptime) continue ;; esac
  PATH=$sys_path type -P "$program" >/dev/null && built_programs+=("$program")
done

# One src/ per impl and applet: every program the system's, the applet under test aoi-coreutils.
for impl in gnu aoi; do
  for applet in "${applets[@]}"; do
    dir=$work/templates/$impl-$applet/src
    mkdir -p "$dir"
    if [[ $applet == grep ]]; then
      programs=(grep egrep fgrep)
    else
      programs=("${built_programs[@]}")
      ln -s "$work/helpers/getlimits" "$dir/getlimits"
    fi
    for program in "${programs[@]}"; do
      if [[ $impl == aoi && ($program == "$applet" || $applet == grep) ]]; then
        ln -s "$aoi" "$dir/$program"
      else
        ln -s "$(PATH=$sys_path type -P "$program")" "$dir/$program"
      fi
    done
  done
done

# -- the test files ----------------------------------------------------------------------------
list=$work/tests.tsv   # suite, applet, test file (relative to the source's top)
: >"$list"
sed -n '/^all_tests =/,/^$/p' "$cu_src/tests/local.mk" | grep -oE 'tests/[^[:space:]\\]+' \
  >"$work/coreutils-tests"
for applet in "${applets[@]}"; do
  if [[ $applet == grep ]]; then
    sed -n '/^TESTS =/,/^$/p' "$grep_src/tests/Makefile.am" | sed 1d | grep -oE '[^[:space:]\\]+' \
      | sed 's,^,grep\tgrep\ttests/,' >>"$list"
  else
    dir=$applet
    [[ $applet == tail ]] && dir=tail-2
    grep -E "^tests/$dir/|^tests/misc/${applet}[-.]" "$work/coreutils-tests" \
      | sed "s/^/coreutils\t$applet\t/" >>"$list" || true
  fi
done
if [[ -n ${GNU_SUITES_FILES:-} ]]; then
  awk -F'\t' -v only="$GNU_SUITES_FILES" '$3 ~ only' "$list" >"$list.only"
  mv "$list.only" "$list"
fi

# -- the runs ----------------------------------------------------------------------------------
# run_test N IMPL SUITE APPLET FILE: one test file in a fresh build dir; writes its verdict.
run_test() {
  local n=$1 impl=$2 suite=$3 applet=$4 file=$5
  local build=$work/run/$impl-$n src cwd status verdict start command=()
  local log=$work/logs/$impl/$suite/$file.log
  mkdir -p "$build/lib" "$(dirname "$log")"
  cp -a "$work/templates/$impl-$applet/src" "$build/src"
  local env=(HOME="$HOME" TMPDIR="${TMPDIR:-/tmp}" LC_ALL=C LOCPATH="$LOCPATH" PATH="$build/src:$sys_path"
             abs_top_builddir="$build" host_triplet="$host_triplet" CC=cc MAKE=make PERL=perl
             SHELL=/bin/sh AWK="$awk_name" LOCALE_FR="$locale_fr" LOCALE_FR_UTF8="$locale_fr_utf8")
  [[ -z ${GNU_SUITES_VERBOSE:-} ]] || env+=(VERBOSE=yes)
  local prologue
  if [[ $suite == coreutils ]]; then
    src=$cu_src cwd=$build
    mkdir -p "$build/$(dirname "$file")"   # CuTmpdir's temp dir is made beside the file's name
    cp "$work/helpers/config.h" "$build/lib/config.h"
    env+=(VERSION=9.1 PACKAGE_VERSION=9.1 abs_top_srcdir="$src" abs_srcdir="$src" srcdir="$src"
          top_srcdir="$src" built_programs="$built_programs_list" fail=0 host_os=linux-gnu
          CONFIG_HEADER="$build/lib/config.h" EGREP="$sys_grep -E" EXEEXT=
          CU_TEST_NAME="coreutils-9.1,${file//\//-}")
    # shellcheck disable=SC2016 # expanded by the test's shell
    prologue='. "$srcdir/tests/lang-default"; . "$srcdir/tests/envvar-check"'
    case $file in
      *.pl) command=(perl -w -I"$src/tests" -MCuSkip -MCoreutils "-MCuTmpdir qw($file)" "$src/$file") ;;
      *.xpl) command=(perl -T -w -I"$src/tests" -MCuSkip -MCoreutils "-MCuTmpdir qw($file)" "$src/$file") ;;
      *) command=(/bin/sh "$src/$file") ;;
    esac
  else
    src=$grep_src cwd=$build/tests
    mkdir -p "$cwd"
    cp "$work/helpers/get-mb-cur-max" "$cwd/"
    env+=(VERSION=3.8 PACKAGE_VERSION=3.8 abs_top_srcdir="$src" abs_srcdir="$src/tests"
          srcdir="$src/tests" top_srcdir="$src" built_programs='grep egrep fgrep'
          GREP_TEST_NAME="${file#tests/}" MALLOC_PERTURB_=1 PACKAGE_BUGREPORT=bug-grep@gnu.org)
    # shellcheck disable=SC2016 # expanded by the test's shell
    prologue='. "$srcdir/envvar-check"; m=0; if err=`echo .|grep -Pq . 2>&1`; then test -z "$err" && m=1; fi; export PCRE_WORKS=$m'
    case $file in
      *.pl) command=(perl -w -I"$src/tests" -MCoreutils -MCuSkip "-MCuTmpdir qw(${file#tests/})" "$src/$file") ;;
      *) command=(/bin/sh "$src/$file") ;;
    esac
  fi
  start=$SECONDS
  status=0
  (cd "$cwd" && timeout -k 10 "$limit" env -i "${env[@]}" /bin/sh -c "$prologue; exec \"\$@\" 9>&2" \
    sh "${command[@]}" </dev/null >"$log" 2>&1) || status=$?
  case $status in
    0) verdict=PASS ;;
    77) verdict=SKIP ;;
    99) verdict=ERROR ;;
    *) verdict=FAIL ;;
  esac
  [[ $status -ne 124 ]] || echo "gnu-suites.sh: stopped after $limit s" >>"$log"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$impl" "$suite" "$applet" "$file" "$verdict" \
    "$((SECONDS - start))" >"$work/verdicts/$n-$impl"
  chmod -R u+rwx "$build" 2>/dev/null || true
  rm -rf "$build" || echo "gnu-suites.sh: could not remove $build" >&2
}
export -f run_test
export work sys_path host_triplet awk_name locale_fr locale_fr_utf8 cu_src grep_src sys_grep limit
export built_programs_list="${built_programs[*]}"

# Each file's two runs are neighbours in the queue, so they run side by side, under equal load.
awk -F'\t' '{ print NR, "gnu", $1, $2, $3; print NR, "aoi", $1, $2, $3 }' "$list" \
  | xargs -r -P "$jobs" -L 1 bash -c 'run_test "$@"' run_test

results=$work/results.tsv   # impl, suite, applet, test file, verdict, seconds
find "$work/verdicts" -type f -exec cat {} + >"$results"
[[ $(wc -l <"$results") -eq $((2 * $(wc -l <"$list"))) ]] \
  || { echo "gnu-suites.sh: some test files left no verdict" >&2; exit 1; }

# -- the verdict -------------------------------------------------------------------------------
python3 - "$results" "$expected" "${GNU_SUITES_REPORT:-}" "${applets[*]}" "$floors" \
  "${GNU_SUITES_FILES:-}" <<'EOF'
import sys
from collections import defaultdict

results, expected_path, report, ran, floors, only = sys.argv[1:7]
ran = ran.split()
floor = dict(f.split("=") for f in floors.split())
outcome = {}
for line in open(results, encoding="utf-8"):
    impl, suite, applet, name, verdict, _seconds = line.rstrip("\n").split("\t")
    outcome[(impl, f"{suite}/{applet}", name)] = verdict
tests = sorted({(a, n) for (_, a, n) in outcome})
gnu_pass = {t for t in tests if outcome.get(("gnu",) + t) == "PASS"}
aoi_pass = {t for t in tests if outcome.get(("aoi",) + t) == "PASS"}
differences = sorted(t for t in gnu_pass if t not in aoi_pass)
listed, unstable = set(), set()
for line in open(expected_path, encoding="utf-8"):
    line = line.rstrip("\n")
    if line and not line.startswith("#"):
        # `~ ` marks a file aoi-coreutils passes on some runs only: it may pass or fail.
        mark, line = (unstable, line[2:]) if line.startswith("~ ") else (listed, line)
        applet, _, name = line.partition(": ")
        if applet.split("/")[-1] in ran and (not only or (applet, name) in tests):
            mark.add((applet, name))

per = defaultdict(lambda: [0, 0, 0])
for applet, name in tests:
    per[applet][0] += 1
    per[applet][1] += (applet, name) in gnu_pass
    per[applet][2] += (applet, name) in gnu_pass and (applet, name) in aoi_pass
print(f"{'applet':16} {'files':>5}  {'GNU passes':>10}  {'aoi-coreutils passes of those':>29}")
for applet in sorted(per, key=lambda a: ran.index(a.split("/")[1])):
    n, g, a = per[applet]
    print(f"{applet:16} {n:5}  {g:10}  {a:29}  ({100 * a / g:.0f}%)" if g else f"{applet:16} {n:5}  {g:10}")
n, g, a = (sum(v[i] for v in per.values()) for i in range(3))
print(f"{'all':16} {n:5}  {g:10}  {a:29}  ({100 * a / g:.0f}%)" if g else "no test file passed under GNU")
if report:
    with open(report, "w", encoding="utf-8") as out:
        for applet, name in tests:
            suite, applet_name = applet.split("/")
            out.write(f"{suite}\t{applet_name}\t{name}\t{outcome.get(('gnu', applet, name), '-')}\t"
                      f"{outcome.get(('aoi', applet, name), '-')}\n")
for applet, name in sorted(t for t in aoi_pass if t not in gnu_pass):
    print(f"(aoi-coreutils passes and GNU does not: {applet}: {name})")
new = [t for t in differences if t not in listed and t not in unstable]
fixed = sorted(t for t in listed if t not in differences)
for applet, name in new:
    print(f"✗ GNU passes and aoi-coreutils does not, not listed: {applet}: {name}")
for applet, name in fixed:
    print(f"✗ listed as a difference, and it is none now (remove it): {applet}: {name}")
short = [a for a in ran
         if not only and per[("grep/" if a == "grep" else "coreutils/") + a][1] < int(floor[a])]
for a in short:
    print(f"✗ GNU passed fewer {a} test files than {floor[a]}: the suite did not run as it should")
sys.exit(1 if new or fixed or short else 0)
EOF
