//! Running the binary and reading what it wrote.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// The built `aoi-coreutils`.
pub fn bin() -> PathBuf {
    aoi_test::workspace_bin("aoi-coreutils")
}

/// Runs `aoi-coreutils ARGS` in `dir` with stdin closed, in the C locale and UTC.
pub fn run(dir: &Path, args: &[&str]) -> Output {
    command(dir, args).output().expect("aoi-coreutils runs")
}

/// Runs as a user whom permission bits bind: as `nobody` (through `setpriv`) when the tests
/// run as root, who reads everything, else as the current user.
pub fn run_unprivileged(dir: &Path, args: &[&str]) -> Output {
    if !is_root() {
        return run(dir, args);
    }
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(bin())
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .stdin(Stdio::null());
    cmd.output().expect("setpriv runs")
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// Parses a captured machine-mode stream, which must conform.
pub fn parse(out: &Output) -> (i32, Vec<Value>) {
    aoi_test::assert_conforms(&out.stdout);
    let events = out
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("each line is JSON"))
        .collect();
    (out.status.code().unwrap_or(-1), events)
}

fn command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null());
    cmd
}

/// Runs a command in machine mode; its stream must conform (§2–§8). Returns the exit status
/// and the events as JSON.
pub fn machine(dir: &Path, args: &[&str]) -> (i32, Vec<Value>) {
    let mut all = args.to_vec();
    all.extend(["--output", "jsonl"]);
    parse(&run(dir, &all))
}

/// The events of one type.
pub fn of_type<'a>(events: &'a [Value], ty: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == ty).collect()
}

/// The summary (the last event).
pub fn summary(events: &[Value]) -> &Value {
    let last = events.last().expect("a stream");
    assert_eq!(last["type"], "aoi:summary");
    last
}

/// A fresh directory under the system temp dir, removed when dropped.
#[derive(Debug)]
pub struct Scratch(pub PathBuf, aoi_test::TempDir);

impl Scratch {
    /// A new empty directory, `work/` inside a directory of its own: its `..` (which `ls -a`
    /// lists, with a link count and a time) belongs to this test alone, never to the shared
    /// temp directory that other tests change meanwhile.
    pub fn new(tag: &str) -> Scratch {
        let base = aoi_test::temp_dir(&format!("coreutils-it-{tag}"));
        let dir = base.join("work");
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir, base)
    }

    /// The path of `rel` inside.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    /// Takes every permission away from `rel` (mode 000): unreadable to anyone but root, so
    /// to be run through [`run_unprivileged`]. [`Drop`] gives them back before removing.
    pub fn lock(&self, rel: &str) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(self.path(rel), std::fs::Permissions::from_mode(0o000))
            .expect("chmod 000");
    }

    /// Makes the directory a git repository (`git init`), so `.gitignore` applies, as it does
    /// for fd and ripgrep only inside one.
    pub fn git_init(&self) {
        let git = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&self.0)
            .status();
        assert!(git.is_ok_and(|st| st.success()), "git init");
    }

    /// Writes a file (creating parents).
    pub fn file(&self, rel: &str, body: &[u8]) -> PathBuf {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("parent dir");
        }
        std::fs::write(&path, body).expect("write file");
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = Command::new("chmod")
            .args(["-R", "u+rwx"])
            .arg(self.1.path())
            .status();
        // The temp dir goes next, with everything in it.
    }
}

/// A human-mode run as a snapshot reads it: the exit code, then stdout and stderr, with the
/// owner and group names of `ls -l` (whoever runs the tests) replaced by `OWNER GROUP`.
pub fn transcript(out: &Output) -> String {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let owner = |flag: &str| {
        Command::new("id")
            .arg(flag)
            .output()
            .map(|o| text(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    };
    let names = format!(" {} {} ", owner("-un"), owner("-gn"));
    aoi_test::transcript(out).replace(&names, " OWNER GROUP ")
}
