//! `aoi mcp --root DIR -- aoi-coreutils`, a filesystem MCP server, driven by the official Python
//! MCP SDK client (`tests/data/mcp/client.py`): listing, reading, searching and writing inside
//! the root, bounded by default, binary files typed rather than dumped, destructive commands
//! behind `confirm`, and nothing outside the root reachable, an omitted path included.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::mcp::{
    names, of_type, path, process_error, server, success, tool, tool_error, PythonHost,
};
use crate::support::{temp_dir, TempDir};

/// A tree to serve (`root/`) beside a secret the server must not reach (`outside/`); the server
/// starts in `start` (the parent of both, outside the root) unless said otherwise.
struct Tree {
    base: TempDir,
}

impl Tree {
    fn new(tag: &str) -> Tree {
        let base = temp_dir(&format!("mcp-coreutils-{tag}"));
        for (rel, body) in [
            (
                "root/notes/todo.txt",
                &b"TODO: write the tests\nbuy milk\nTODO: call the plumber\n"[..],
            ),
            ("root/notes/readme.md", b"# Notes\n"),
            (
                "root/data/blob.bin",
                b"PK\x03\x04\x00\x00binary\x00data\xff",
            ),
            ("outside/secret.txt", b"TODO: the secret\n"),
        ] {
            let p = base.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        for i in 0..150 {
            std::fs::write(base.join(format!("root/notes/n{i:03}.txt")), b"x\n").unwrap();
        }
        Tree { base }
    }

    fn root(&self) -> PathBuf {
        self.base.join("root")
    }

    /// The client against `aoi mcp --root ROOT -- aoi-coreutils`, started in `cwd`.
    fn host(&self, cwd: &Path) -> PythonHost {
        let coreutils = aoi_test::workspace_bin("aoi-coreutils");
        PythonHost {
            command: server(&["--root", &path(&self.root()), "--", &path(&coreutils)]),
            env: json!({"HOME": path(&self.base), "AOI_COREUTILS_STATE_DIR": path(&self.base.join("state"))}),
            cwd: cwd.to_path_buf(),
        }
    }
}

fn p(tree: &Tree, rel: &str) -> String {
    path(&tree.root().join(rel))
}

#[test]
fn every_command_is_a_tool_with_the_hints_its_effects_deserve() {
    let tree = Tree::new("tools");
    let out = tree.host(&tree.base).run("schemas", json!({}));
    let tools = &out["tools"];
    let expected: std::collections::BTreeSet<String> = [
        "cat", "cp", "du", "find", "grep", "head", "ls", "mkdir", "mv", "rm", "stat", "tail",
        "touch", "wc",
    ]
    .map(String::from)
    .into();
    assert_eq!(names(tools), expected);
    for read in [
        "cat", "du", "find", "grep", "head", "ls", "stat", "tail", "wc",
    ] {
        assert_eq!(
            tool(tools, read)["annotations"]["readOnlyHint"],
            true,
            "{read}"
        );
    }
    assert_eq!(tool(tools, "rm")["annotations"]["destructiveHint"], true);
    assert!(tool(tools, "rm")["description"]
        .as_str()
        .unwrap()
        .contains("`confirm`"));
}

#[test]
fn list_read_and_search_inside_the_root_are_bounded_and_typed() {
    let tree = Tree::new("read");
    let results = tree.host(&tree.base).calls(json!([
        {"tool": "ls", "arguments": {"paths": [p(&tree, "notes")]}},
        {"tool": "cat", "arguments": {"files": [p(&tree, "notes/todo.txt")]}},
        {"tool": "grep", "arguments": {"pattern": "TODO", "paths": [p(&tree, "notes")]}},
        {"tool": "cat", "arguments": {"files": [p(&tree, "data/blob.bin")]}},
    ]));
    let ls = success(&results[0]);
    assert_eq!(of_type(ls, "entry").len(), 100, "bounded by default");
    assert_eq!(ls["summary"]["truncated"], true);
    assert!(ls["summary"]["next_cursor"].is_string());

    let cat = success(&results[1]);
    let text: String = of_type(cat, "content")
        .iter()
        .map(|c| c["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        text,
        "TODO: write the tests\nbuy milk\nTODO: call the plumber\n"
    );

    let grep = success(&results[2]);
    let matches = of_type(grep, "match");
    assert_eq!(matches.len(), 2);
    for m in matches {
        let (start, end) = (
            m["submatches"][0]["start"].as_u64().unwrap() as usize,
            m["submatches"][0]["end"].as_u64().unwrap() as usize,
        );
        assert_eq!(&m["text"].as_str().unwrap()[start..end], "TODO");
    }

    let binary = success(&results[3]);
    assert_eq!(of_type(binary, "binary").len(), 1);
    assert!(
        of_type(binary, "content").is_empty(),
        "no bytes dumped into the model"
    );
}

#[test]
fn nothing_outside_the_root_is_reachable_not_even_by_an_omitted_path() {
    let tree = Tree::new("confine");
    // The server starts outside its root (in the parent of root/ and outside/).
    let host = tree.host(&tree.base);
    let results = host.calls(json!([
        {"tool": "cat", "arguments": {"files": [path(&tree.base.join("outside/secret.txt"))]}},
        {"tool": "grep", "arguments": {"pattern": "secret", "paths": [p(&tree, "../outside")]}},
        {"tool": "ls", "arguments": {}},
        {"tool": "grep", "arguments": {"pattern": "TODO"}},
    ]));
    for refused in &results[..2] {
        let s = tool_error(refused);
        assert_eq!(s["adapter_error"]["code"], "PATH_OUTSIDE_ROOTS", "{s}");
        assert_eq!(s["summary"], Value::Null, "the CLI never ran");
    }
    // Without a path, the commands read their default `.`: the root, not the start directory.
    let ls = success(&results[2]);
    let listed: Vec<&str> = of_type(ls, "entry")
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["data", "notes"]);
    let grep = success(&results[3]);
    assert!(of_type(grep, "match")
        .iter()
        .all(|m| !m["text"].as_str().unwrap().contains("secret")));
}

#[test]
fn rm_is_refused_without_confirm_and_a_dry_run_changes_nothing() {
    let tree = Tree::new("rm");
    let todo = p(&tree, "notes/todo.txt");
    let results = tree.host(&tree.base).calls(json!([
        {"tool": "rm", "arguments": {"paths": [todo]}},
        {"tool": "rm", "arguments": {"paths": [todo], "dry_run": true}},
        {"tool": "rm", "arguments": {"paths": [todo], "confirm": true}},
    ]));
    let refused = tool_error(&results[0]);
    assert_eq!(process_error(refused)["code"], "CONFIRMATION_REQUIRED");
    assert_eq!(refused["summary"]["reason"], "denied");
    let plan = success(&results[1]);
    assert_eq!(of_type(plan, "aoi:plan").len(), 1);
    let removed = success(&results[2]);
    assert_eq!(of_type(removed, "removed")[0]["path"], todo.as_str());
    assert!(!tree.root().join("notes/todo.txt").exists());
}
