//! The library, as a host that embeds the adapter calls it: a catalog discovered from a real
//! Machine Mode CLI (the SDK's `feed` example) through its own `capabilities` and
//! `input-schema` (machine-mode-and-mcp.md: one MCP tool per command, hints no more
//! reassuring than the manifest). `aoi mcp`'s own tests, in `aoi-cli`, drive the binary with
//! real MCP clients.

use std::ffi::OsString;

use aoi_mcp::{Catalog, Filter};

fn feed() -> Vec<OsString> {
    vec![aoi_test::workspace_bin("examples/feed").into_os_string()]
}

fn names(catalog: &Catalog) -> Vec<String> {
    catalog
        .tools
        .iter()
        .map(|t| t.tool.name.to_string())
        .collect()
}

#[test]
fn every_command_capabilities_lists_is_a_tool_and_discovery_commands_are_not() {
    let catalog = Catalog::discover(&[feed()], &Filter::default(), None).expect("discovered");
    let names = names(&catalog);
    assert_eq!(names, ["list", "doctor"], "{names:?}");
    for served in &catalog.tools {
        // Both are read-only in feed's manifest, and the hint says no more than that.
        let hints = served.tool.annotations.as_ref().expect("annotations");
        assert_eq!(hints.read_only_hint, Some(true), "{}", served.tool.name);
        assert_eq!(hints.destructive_hint, Some(false), "{}", served.tool.name);
        // The input schema is the command's own, strict as the CLI publishes it (§10.3).
        let schema = &served.tool.input_schema;
        assert_eq!(schema.get("type").and_then(|t| t.as_str()), Some("object"));
        assert_eq!(
            schema.get("additionalProperties"),
            Some(&serde_json::Value::Bool(false)),
            "{}",
            served.tool.name
        );
    }
}

#[test]
fn a_filter_keeps_only_what_it_allows_and_never_what_it_excludes() {
    let only = Filter {
        allow: vec!["list".into()],
        exclude: Vec::new(),
    };
    let catalog = Catalog::discover(&[feed()], &only, None).expect("discovered");
    assert_eq!(names(&catalog), ["list"]);
    let without = Filter {
        allow: Vec::new(),
        exclude: vec!["list".into()],
    };
    let catalog = Catalog::discover(&[feed()], &without, None).expect("discovered");
    assert_eq!(names(&catalog), ["doctor"]);
}

#[test]
fn a_cli_that_cannot_run_is_an_error_of_one_line_naming_it() {
    let missing = vec![OsString::from("/nonexistent/no-such-cli")];
    let Err(error) = Catalog::discover(&[missing], &Filter::default(), None) else {
        panic!("a CLI that cannot run was discovered");
    };
    let error = error.to_string();
    assert!(error.contains("no-such-cli"), "{error}");
    assert!(!error.contains('\n'), "{error}");
}
