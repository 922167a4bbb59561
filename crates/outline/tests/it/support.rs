//! Running `outline` on a throwaway database and reading what it wrote.

use std::path::PathBuf;
use std::process::{Command, Output};

use aoi::read::Event;
use serde_json::{Map, Value};

/// A fresh database in its own temp directory, removed on drop.
pub struct Db {
    dir: aoi_test::TempDir,
}

/// One finished run.
pub struct Run {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Db {
    pub fn new(name: &str) -> Db {
        let dir = aoi_test::temp_dir(&format!("outline-it-{name}"));
        // The database's directory exists; the database itself does not, until a write.
        std::fs::create_dir_all(dir.join("data")).unwrap();
        Db { dir }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join("data").join("outline.db")
    }

    /// Runs `outline ARGS --db <this db>`.
    pub fn run(&self, args: &[&str]) -> Run {
        self.run_env(args, &[], None)
    }

    /// The directory this database's runs use as `XDG_CONFIG_HOME` (for the credential file).
    pub fn config_dir(&self) -> PathBuf {
        self.dir.join("config")
    }

    /// Runs `outline ARGS --db <this db>` with extra environment variables and, when given,
    /// these bytes on stdin (else stdin is empty). Runs never see the caller's
    /// `OUTLINE_TOKEN` or credential file: `XDG_CONFIG_HOME` is [`Db::config_dir`].
    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)], stdin: Option<&[u8]>) -> Run {
        use std::io::Write;
        let mut child = Command::new(env!("CARGO_BIN_EXE_outline"))
            .args(args)
            .arg("--db")
            .arg(self.path())
            .env_remove("OUTLINE_DB")
            .env_remove("OUTLINE_TOKEN")
            .env("XDG_CONFIG_HOME", self.config_dir())
            .env("NO_COLOR", "1")
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        let _ = input.write_all(stdin.unwrap_or_default());
        drop(input);
        let out: Output = child.wait_with_output().unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs in machine mode and checks the stream conforms.
    pub fn jsonl(&self, args: &[&str]) -> Run {
        let mut all = args.to_vec();
        all.extend(["--output", "jsonl"]);
        let run = self.run(&all);
        aoi_test::assert_conforms(&run.stdout);
        run
    }

    /// Creates a document and returns its id.
    pub fn create(&self, args: &[&str]) -> String {
        let mut all = vec!["create"];
        all.extend(args);
        let run = self.jsonl(&all);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let created = domain(&run, "created");
        created[0]["id"].as_str().unwrap().to_owned()
    }
}

impl Run {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// The fields of every domain event of `event_type`, in order.
pub fn domain(run: &Run, event_type: &str) -> Vec<Map<String, Value>> {
    aoi_test::events(&run.stdout)
        .into_iter()
        .filter_map(|e| match e {
            Event::Domain { ty, fields } if ty == event_type => Some(fields),
            _ => None,
        })
        .collect()
}

/// The run's summary.
pub fn summary(run: &Run) -> aoi::Summary {
    aoi_test::events(&run.stdout)
        .into_iter()
        .find_map(|e| match e {
            Event::Summary(s) => Some(s),
            _ => None,
        })
        .expect("a summary")
}

/// The run's process error.
pub fn error(run: &Run) -> aoi::ErrorEvent {
    aoi_test::events(&run.stdout)
        .into_iter()
        .find_map(|e| match e {
            Event::Error(e) => Some(e),
            _ => None,
        })
        .expect("an aoi:error")
}

/// The number of `aoi:plan` events.
pub fn plans(run: &Run) -> usize {
    aoi_test::events(&run.stdout)
        .into_iter()
        .filter(|e| matches!(e, Event::Plan(_)))
        .count()
}

impl Run {
    /// Exit code, stdout and stderr, with the ids in `ids` hidden ([`hide_ids`]), for a
    /// human-mode snapshot.
    pub fn transcript(&self, ids: &[&str]) -> String {
        let text = format!(
            "exit: {}\n--- stdout\n{}--- stderr\n{}",
            self.code,
            self.stdout_text(),
            self.stderr
        );
        hide_ids(&text, ids)
    }
}

/// `text` with each id in `ids` replaced by a placeholder of the same width (so column
/// alignment still shows): the whole id by `doc_N___…`, the end of it that a table shows
/// by `~N___…`.
pub fn hide_ids(text: &str, ids: &[&str]) -> String {
    let mut text = text.to_owned();
    for (n, id) in ids.iter().enumerate() {
        let label = format!("doc_{}", n + 1);
        text = text.replace(id, &format!("{label:_<width$}", width = id.len()));
        for len in (outline::store::SHORT_ID_MIN..id.len()).rev() {
            let short = format!("~{}", n + 1);
            text = text.replace(&id[id.len() - len..], &format!("{short:_<len$}"));
        }
    }
    text
}
