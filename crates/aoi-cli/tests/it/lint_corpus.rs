//! `aoi lint` against a held-out corpus: tools in plain Python and POSIX sh written from the
//! spec and docs/discovery.md alone (no aoi SDK, no `x-aoi`), each with one planted fault.
//!
//! `kvtool.py` is a key-value store; its wrappers `py-kv-<fault>.py` switch one fault on (the
//! list is at the top of kvtool.py). `sh-kv.sh` is a smaller store in sh whose faulty variants
//! the tests write. A fault must fail exactly its check for the faulty command, and nothing
//! else; a conforming tool must fail nothing and leave nothing unproven (lint exits 0).
//!
//! Fault tests lint only the commands the fault is in (`--command`), to keep the run short.

use std::path::PathBuf;

use super::lint::{
    assert_fails_exactly, assert_fails_within, checks_of, corpus, lint, outcome_of, scratch, Row,
};

/// kvtool's commands, in capabilities order.
const KV_COMMANDS: [&str; 8] = [
    "list", "get", "put", "delete", "import", "login", "relay", "watch",
];

/// `py-kv-<variant>.py`.
fn kv(variant: &str) -> PathBuf {
    corpus(&format!("py-kv-{variant}.py"))
}

/// Lints kvtool variant `variant`, only `commands` (all of them when empty).
fn lint_kv(variant: &str, commands: &[&str]) -> Vec<Row> {
    let mut args = Vec::new();
    for command in commands {
        args.extend(["--command", command]);
    }
    let rows = lint(&kv(variant), &args);
    let n = if commands.is_empty() {
        KV_COMMANDS.len()
    } else {
        commands.len()
    };
    assert_eq!(checks_of(&rows), 16 * n, "py-kv-{variant}: {rows:#?}");
    rows
}

/// Asserts that py-kv-`variant`, linted on `commands`, fails exactly `check` on `failing`.
fn kv_fails(variant: &str, commands: &[&str], check: u64, failing: &[&str]) {
    let rows = lint_kv(variant, commands);
    let expected: Vec<(u64, &str)> = failing.iter().map(|c| (check, *c)).collect();
    assert_fails_exactly(&format!("py-kv-{variant}"), &rows, &expected);
}

/// A variant of `sh-kv.sh`, written to the scratch directory as `name`: each `(from, to)`
/// replaced (every `from` must be there), executable.
fn sh_kv_variant(name: &str, replacements: &[(&str, &str)]) -> PathBuf {
    let mut source = std::fs::read_to_string(corpus("sh-kv.sh")).unwrap();
    for (from, to) in replacements {
        assert!(source.contains(from), "{name}: `{from}` is not in sh-kv.sh");
        source = source.replace(from, to);
    }
    let tool = scratch().join(name);
    std::fs::write(&tool, source).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    tool
}

// ---- conforming tools: nothing fails, nothing is left unproven, lint exits 0

/// §18.1, §18.2: a tool that follows the spec and docs/discovery.md passes every applicable
/// check with no configuration (lint's exit status 0 is asserted by `lint`).
#[test]
fn kvtool_clean_passes_every_check_with_no_config() {
    let rows = lint_kv("clean", &[]);
    assert_fails_exactly("py-kv-clean", &rows, &[]);
    let outcome = |check: u64, command: &str| outcome_of(&rows, check, command);
    // The checks that need the tool's behaviour ran where they apply.
    for (check, command) in [
        (6, "delete"),
        (6, "put"),
        (7, "put"),
        (8, "put"),
        (9, "login"),
        (10, "watch"),
        (11, "list"),
        (12, "import"),
        (12, "relay"),
        (13, "list"),
        (16, "import"),
        (16, "relay"),
    ] {
        assert_eq!(outcome(check, command), "pass", "{check} on {command}");
    }
}

/// §14.4 with §10.3: a replay may mark its events `"replayed": true` when the schema declares
/// the field; the replay still returns the prior result without doubling the effect.
#[test]
fn kvtool_marking_replayed_events_passes_every_check() {
    let rows = lint_kv("replayed", &[]);
    assert_fails_exactly("py-kv-replayed", &rows, &[]);
}

/// §14.4 ("or a documented natural key") and §14.5 ("stable IDs/paths/URLs"): mutation events
/// that identify the resource by its documented natural key `key`, with no separate id field.
#[test]
fn kvtool_identifying_records_by_natural_key_passes_every_check() {
    let rows = lint_kv("natural-key", &[]);
    assert_fails_exactly("py-kv-natural-key", &rows, &[]);
}

/// §18.2: lint is language-neutral; a POSIX sh tool with no JSON tooling conforms too.
#[test]
fn sh_kv_passes_every_check_with_no_config() {
    let rows = lint(&corpus("sh-kv.sh"), &[]);
    assert_eq!(checks_of(&rows), 16 * 3);
    assert_fails_exactly("sh-kv.sh", &rows, &[]);
    for (check, command) in [(6, "delete"), (7, "put"), (11, "list"), (15, "list")] {
        assert!(
            rows.iter()
                .any(|r| r.check == check && r.command == command && r.outcome == "pass"),
            "{check} on {command}: {rows:#?}"
        );
    }
}

// ---- check 1, Discoverable

/// §14.1 with §17 (`read_only`: changes nothing): `list` writes a resume file, but only when
/// given `--cursor`.
#[test]
fn a_read_only_list_that_writes_when_given_a_cursor_fails_check_1() {
    kv_fails("ro-writes-on-cursor", &["list"], 1, &["list"]);
}

/// §17 (supported commands) and §16.1 (`--help` MUST): capabilities lists `export`, which the
/// tool does not have.
#[test]
fn a_command_capabilities_lists_but_kvtool_lacks_fails_check_1() {
    kv_fails("ghost-command", &["export"], 1, &["export"]);
}

/// §3 "If both flags and subcommands exist, they MUST return equivalent information":
/// `--capabilities` leaves a command out. The clean tool's flags agree with its subcommands.
#[test]
fn a_discovery_flag_that_disagrees_with_its_subcommand_fails_check_1() {
    kv_fails("flag-differs", &["list"], 1, &["list"]);
}

/// §10.3 "Event/output schemas SHOULD be permissive for forward‑compatible extension": a
/// schema that closes the record events is advice on the commands that emit them, never a
/// failure; the clean tool's open events get none.
#[test]
fn a_closed_domain_event_schema_is_advice() {
    let closed = |rows: &[Row], command: &str| {
        rows.iter().any(|r| {
            r.check == 4
                && r.command == command
                && r.outcome == "advice"
                && r.detail
                    .starts_with("spec §10.3 SHOULD: the event schema rejects `entry`")
        })
    };
    let rows = lint_kv("closed-events", &["list", "get"]);
    assert_fails_exactly("py-kv-closed-events", &rows, &[]);
    assert!(closed(&rows, "list") && closed(&rows, "get"), "{rows:#?}");
    let rows = lint_kv("clean", &["list"]);
    assert!(!closed(&rows, "list"), "{rows:#?}");
}

/// §10.2 "Schema `$id` MUST NOT be a machine‑local file URI unless the schema is explicitly
/// local‑only": the event schema's `$id` is `file:///usr/share/…`.
#[test]
fn a_schema_id_that_is_a_local_file_uri_fails_check_1() {
    kv_fails("file-id", &["list"], 1, &["list"]);
}

/// §3, §3.2 (`schema` MUST NOT require network access): a remote `$ref` fails discovery, and
/// check 4 cannot validate against a schema that does not compile, so it could not run (never
/// a vacuous pass). Nor can check 13 validate a negotiated run against its version's schema,
/// which has the same `$ref` (§5, §18.2 #13): it could not run either, and fails nothing.
#[test]
fn a_schema_with_a_remote_ref_fails_check_1_and_check_4_could_not_run() {
    let rows = lint_kv("remote-ref", &["list", "put"]);
    for command in ["list", "put"] {
        let of = |check: u64| {
            rows.iter()
                .find(|r| r.check == check && r.command == command)
                .unwrap()
        };
        assert_eq!(of(1).outcome, "fail", "{:?}", of(1));
        assert_eq!(of(4).outcome, "could_not_run", "{:?}", of(4));
        assert_ne!(of(13).outcome, "fail", "{:?}", of(13));
    }
    let others: Vec<&Row> = rows
        .iter()
        .filter(|r| r.check != 1 && r.check != 4 && r.check != 13)
        .filter(|r| !matches!(r.outcome.as_str(), "pass" | "not_applicable"))
        .collect();
    assert!(others.is_empty(), "{others:#?}");
}

// ---- check 2, Typed

/// §2 (machine-mode stdout MUST NOT include color or ANSI escape codes, human prose): `put`
/// prints a coloured confirmation line after its event.
#[test]
fn a_coloured_prose_line_on_stdout_fails_check_2() {
    kv_fails("prose-stdout", &["put"], 2, &["put"]);
}

// ---- check 3, Verifiable

/// §4, §4.1 (exit 0 + `aoi:summary.ok=true` means success): `get` finds its record, exits 0,
/// and says ok:false.
#[test]
fn exit_0_with_an_ok_false_summary_fails_check_3() {
    kv_fails("exit0-not-ok", &["get"], 3, &["get"]);
}

// ---- check 4, Typed · Verifiable

/// §10.1, §18.2 #4 (framework events validate against the declared schema): `list`'s summary
/// carries `properties.store_keys` as a string where the schema says integer.
#[test]
fn a_summary_that_violates_the_declared_schema_fails_check_4() {
    kv_fails("schema-violation", &["list"], 4, &["list"]);
}

// ---- check 5, Verifiable

/// §9.1 (`retryable` MUST), §9.3 (producers MUST NOT allow it to be absent): only the refusal
/// of `delete` without `--confirm` lacks it.
#[test]
fn a_confirm_refusal_without_retryable_fails_check_5() {
    kv_fails("confirm-no-retryable", &["delete"], 5, &["delete"]);
}

// ---- check 6, Safe

/// §14.3 (destructive operations MUST require explicit confirmation; bulk ones SHOULD need
/// more): `delete --prefix` deletes without `--confirm`.
#[test]
fn a_bulk_delete_that_skips_confirm_fails_check_6() {
    kv_fails("bulk-no-confirm", &["delete"], 6, &["delete"]);
}

/// §14.2 (`--dry-run`: plan without side effects): `put --dry-run` creates the store file.
#[test]
fn a_dry_run_that_writes_fails_check_6() {
    kv_fails("dry-run-writes", &["put"], 6, &["put"]);
}

// ---- check 7, Idempotent

/// §14.4, §18.2 #7 (replay returns the prior result without doubling the effect): a repeat of
/// `put` with the same `--idempotency-key` writes again.
#[test]
fn an_idempotency_replay_that_applies_twice_fails_check_7() {
    kv_fails("replay-doubles", &["put"], 7, &["put"]);
}

// ---- check 8, Auditable

/// §14.5 (stable IDs for resources created or updated): `get` makes a new id on every read, so
/// the id is not the one `put` reported and no two reads agree. The fault is in `get`.
#[test]
fn ids_that_change_on_every_read_fail_check_8() {
    kv_fails("unstable-ids", &["put", "get"], 8, &["get"]);
}

// ---- check 9, Safe

/// §11 (URLs with credentials or token query keys are sensitive): `login` reports its URL with
/// the token as userinfo.
#[test]
fn a_token_echoed_as_url_userinfo_fails_check_9() {
    kv_fails("token-in-userinfo", &["login"], 9, &["login"]);
}

/// §11 (query keys such as `token`): `login` reports its URL with `?token=`.
#[test]
fn a_token_echoed_in_a_url_query_fails_check_9() {
    kv_fails("token-in-query", &["login"], 9, &["login"]);
}

/// §11 ("Do not leak secrets"): an encoding is no redaction; `login` echoes the token inside a
/// base64 Basic authorization value.
#[test]
fn a_token_echoed_base64_encoded_fails_check_9() {
    kv_fails("token-base64", &["login"], 9, &["login"]);
}

// ---- check 10, Composable

/// §7 (exit cleanly on a closed pipe without stack traces), §20 Python (handle
/// `BrokenPipeError`): `watch` keeps writing after its reader left. `list` writes a few lines
/// and is usually done before the reader goes; when it is not, the traceback shows there too.
#[test]
fn a_python_traceback_on_an_early_pipe_close_fails_check_10() {
    let rows = lint_kv("pipe-trace", &["watch", "list"]);
    assert_fails_within("py-kv-pipe-trace", &rows, &[(10, "watch")], &[(10, "list")]);
}

/// §4.2, §7 (on SIGINT, a `reason:"cancelled"` summary): `watch` exits 130 on SIGINT without
/// one.
#[test]
fn sigint_without_a_cancelled_summary_fails_check_10() {
    kv_fails("sigint-no-cancel", &["watch"], 10, &["watch"]);
}

// ---- check 11, Bounded · Streamable

/// §15 (bounded by default; if output is truncated, `truncated` MUST be true): `list` without
/// `--limit` cuts its default page and says truncated:false.
#[test]
fn a_default_page_cut_without_truncated_fails_check_11() {
    kv_fails("default-page-untruncated", &["list"], 11, &["list"]);
}

/// §15, §18.2 #11 (cursor behaviour consistent): the next page starts at the last item of the
/// previous one.
#[test]
fn a_cursor_that_repeats_an_item_fails_check_11() {
    kv_fails("cursor-repeats", &["list"], 11, &["list"]);
}

// ---- check 12, Composable

/// §12.2 (the tool MUST document its malformed-line handling; handling matches the declared
/// mode): `import` declares whole-input fail-fast but writes the records before a bad line.
#[test]
fn fail_fast_that_writes_the_records_before_a_bad_line_fails_check_12() {
    kv_fails("fail-fast-writes", &["import"], 12, &["import"]);
}

/// §12.2 (per-line tolerant: malformed lines emit item errors and processing continues):
/// `import --continue-on-error` stops at the first bad line.
#[test]
fn continue_on_error_that_stops_at_the_bad_line_fails_check_12() {
    kv_fails("continue-stops", &["import"], 12, &["import"]);
}

// ---- check 13, Versioned

/// §5.1, §18.2 #13 (`schema_version` honoured when negotiated): `--schema-version 1.0.0`
/// relabels aoi:meta but the events stay 2.0.0's (`updated_at`, not 1.0.0's `modified`), on
/// every command whose events differ between the two versions.
#[test]
fn a_schema_version_that_only_relabels_meta_fails_check_13() {
    let commands = ["list", "get", "put", "import"];
    kv_fails("schema-version-label", &commands, 13, &commands);
}

// ---- check 14, Composable · Verifiable

/// §13.1 (at most one `aoi:meta`, first): `list` emits a second one.
#[test]
fn two_meta_events_fail_check_14() {
    kv_fails("two-meta", &["list"], 14, &["list"]);
}

// ---- check 15, Verifiable

/// §8.1 (`aoi.seq` monotonic from 0, no gaps), §18.2 #15: `list` skips a number.
#[test]
fn an_aoi_seq_gap_fails_check_15() {
    kv_fails("seq-gap", &["list"], 15, &["list"]);
}

// ---- check 16, Composable

/// §13.1 (an AOI producer MUST NOT forward upstream `aoi:summary`): `relay` passes the
/// upstream's summary through as its own terminal event.
#[test]
fn a_relay_that_forwards_the_upstream_summary_fails_check_16() {
    kv_fails("relay-forwards-summary", &["relay"], 16, &["relay"]);
}

/// §13.1 (upstream EOF without a terminal `aoi:summary` sets `aoi:summary.ok=false`), §4: a
/// relay that reports ok:true for a cut upstream.
#[test]
fn a_relay_reporting_ok_for_an_upstream_without_summary_fails_check_16() {
    kv_fails("relay-ok-without-summary", &["relay"], 16, &["relay"]);
}

// ---- sh-kv faults, written as variants

/// §14.3 (destructive operations MUST require explicit confirmation): the confirmation is only
/// enforced when an environment variable asks for it.
#[test]
fn sh_kv_delete_confirmed_only_when_configured_fails_check_6() {
    let tool = sh_kv_variant(
        "sh-kv-confirm-optional.sh",
        &[(
            r#"if [ -z "$confirm" ]; then"#,
            r#"if [ -z "$confirm" ] && [ -n "${SH_KV_REQUIRE_CONFIRM:-}" ]; then"#,
        )],
    );
    let rows = lint(&tool, &["--command", "delete"]);
    assert_fails_exactly("sh-kv-confirm-optional.sh", &rows, &[(6, "delete")]);
}

/// §14.4 (replay returns the prior result without doubling the effect): the stored request is
/// looked up by the wrong column, so a replay is never found and `put` runs again.
#[test]
fn sh_kv_replay_looked_up_in_the_wrong_column_fails_check_7() {
    let tool = sh_kv_variant(
        "sh-kv-replay-doubles.sh",
        &[(
            r#"'$1 == k { print $2 "\t" $3 "\t" $4; exit }'"#,
            r#"'$2 == k { print $2 "\t" $3 "\t" $4; exit }'"#,
        )],
    );
    let rows = lint(&tool, &["--command", "put"]);
    assert_fails_exactly("sh-kv-replay-doubles.sh", &rows, &[(7, "put")]);
}

/// §15 (`next_cursor` continues), §18.2 #11: the cursor filter keeps the key it resumes after.
#[test]
fn sh_kv_cursor_that_includes_its_own_key_fails_check_11() {
    let tool = sh_kv_variant(
        "sh-kv-cursor-repeats.sh",
        &[(r#"'a == "" || $2 > a'"#, r#"'a == "" || $2 >= a'"#)],
    );
    let rows = lint(&tool, &["--command", "list"]);
    assert_fails_exactly("sh-kv-cursor-repeats.sh", &rows, &[(11, "list")]);
}

/// §8.1 (`aoi.seq`: no gaps, one per emitted line), §18.2 #15: the counter is bumped twice
/// after the first entry.
#[test]
fn sh_kv_seq_bumped_twice_fails_check_15() {
    let tool = sh_kv_variant(
        "sh-kv-seq-gap.sh",
        &[(
            "      shown=$((shown + 1))\n",
            "      shown=$((shown + 1))\n      [ \"$shown\" -ne 1 ] || seq=$((seq + 1))\n",
        )],
    );
    let rows = lint(&tool, &["--command", "list"]);
    assert_fails_exactly("sh-kv-seq-gap.sh", &rows, &[(15, "list")]);
}
