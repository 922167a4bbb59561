//! Where the database lives: `--db`, else `OUTLINE_DB`, else the XDG data directory.

use std::path::Path;
use std::process::Command;

use crate::support::{error, Db};

/// Runs `outline create` with only `env` deciding the database, and returns its exit code.
fn create_with_env(env: &[(&str, &Path)]) -> i32 {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_outline"));
    cmd.args(["create", "--title", "t", "--output", "jsonl"])
        .env_remove("OUTLINE_DB")
        .env_remove("XDG_DATA_HOME")
        .env_remove("HOME");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    aoi_test::assert_conforms(&out.stdout);
    out.status.code().unwrap_or(-1)
}

#[test]
fn outline_db_then_xdg_data_home_then_home() {
    let db = Db::new("paths");
    let root = db.path().parent().unwrap().to_owned();

    let explicit = root.join("explicit.db");
    assert_eq!(create_with_env(&[("OUTLINE_DB", &explicit)]), 0);
    assert!(explicit.exists());

    let xdg = root.join("xdg");
    assert_eq!(
        create_with_env(&[("XDG_DATA_HOME", &xdg), ("HOME", &root.join("home"))]),
        0
    );
    assert!(xdg.join("outline/outline.db").exists());
    assert!(!root.join("home").exists(), "XDG_DATA_HOME wins over HOME");

    let home = root.join("home2");
    assert_eq!(create_with_env(&[("HOME", &home)]), 0);
    assert!(home.join(".local/share/outline/outline.db").exists());

    // A read of a named database that does not exist is not_found (never an empty store),
    // and creates nothing.
    let run = db.jsonl(&["list"]);
    assert_eq!(run.code, 66);
    assert_eq!(error(&run).code.as_str(), "DATABASE_NOT_FOUND");
    assert!(
        !db.path().exists(),
        "a read-only command created the database"
    );

    // --db wins over OUTLINE_DB.
    db.create(&["--title", "here"]);
    assert!(db.path().exists());
}

#[test]
fn no_path_at_all_is_a_config_error() {
    let code = create_with_env(&[]);
    assert_eq!(code, 78, "config errors exit 78");
}
