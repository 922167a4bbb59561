//! Arbitrary text as `aoi-lint.toml` through `aoi_lint::Config::parse`. It never panics; a
//! refusal is one line (lint prints it as one); a config it accepts, written back as TOML,
//! reads back equal; and the values lint takes from it are usable (a finite, positive timeout).

#![no_main]

use aoi_lint::config::{CommandConfig, Config, SetupStep};
use libfuzzer_sys::fuzz_target;
use toml::{Table, Value};

fn strings(items: &[String]) -> Value {
    Value::Array(items.iter().cloned().map(Value::String).collect())
}

fn env(vars: &std::collections::BTreeMap<String, String>) -> Value {
    Value::Table(
        vars.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

fn setup(steps: &[SetupStep]) -> Value {
    Value::Array(
        steps
            .iter()
            .map(|step| match step {
                SetupStep::Args(args) => strings(args),
                SetupStep::WithStdin { args, stdin } => {
                    let mut t = Table::new();
                    t.insert("args".into(), strings(args));
                    if let Some(stdin) = stdin {
                        t.insert("stdin".into(), Value::String(stdin.clone()));
                    }
                    Value::Table(t)
                }
            })
            .collect(),
    )
}

fn command(c: &CommandConfig) -> Value {
    let mut t = Table::new();
    if let Some(args) = &c.args {
        t.insert("args".into(), strings(args));
    }
    if let Some(stdin) = &c.stdin {
        t.insert("stdin".into(), Value::String(stdin.clone()));
    }
    t.insert("env".into(), env(&c.env));
    t.insert("setup".into(), setup(&c.setup));
    if let Some(skip) = &c.skip {
        t.insert("skip".into(), Value::String(skip.clone()));
    }
    Value::Table(t)
}

/// The config as TOML text: every field, so nothing is left to a default.
fn write(c: &Config) -> String {
    let mut t = Table::new();
    t.insert("tool".into(), strings(&c.tool));
    t.insert("setup".into(), setup(&c.setup));
    if let Some(fixtures) = &c.fixtures {
        let path = fixtures.to_str().expect("read from TOML, so UTF-8");
        t.insert("fixtures".into(), Value::String(path.to_owned()));
    }
    t.insert("ignore_paths".into(), strings(&c.ignore_paths));
    t.insert("env".into(), env(&c.env));
    if let Some(timeout) = c.timeout {
        t.insert("timeout".into(), Value::Float(timeout));
    }
    t.insert(
        "commands".into(),
        Value::Table(
            c.commands
                .iter()
                .map(|(k, v)| (k.clone(), command(v)))
                .collect(),
        ),
    );
    toml::to_string(&t).expect("a table of strings writes")
}

fn same_timeout(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b || (a.is_nan() && b.is_nan()),
        (a, b) => a.is_none() && b.is_none(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let config = match Config::parse(text) {
        Ok(config) => config,
        Err(message) => {
            assert!(
                !message.contains(['\n', '\r']),
                "a refusal of more than one line: {message:?}"
            );
            return;
        }
    };
    let timeout = config.timeout();
    assert!(timeout > std::time::Duration::ZERO);
    // The sandbox's deadline for each run.
    assert!(
        std::time::Instant::now().checked_add(timeout).is_some(),
        "timeout {timeout:?}"
    );
    let written = write(&config);
    let back = match Config::parse(&written) {
        Ok(back) => back,
        Err(e) => panic!("what it accepted, written back, is refused: {e}\n{written}"),
    };
    assert!(same_timeout(back.timeout, config.timeout), "{written}");
    let (mut back, mut config) = (back, config);
    back.timeout = None;
    config.timeout = None;
    assert_eq!(back, config, "{written}");
});
