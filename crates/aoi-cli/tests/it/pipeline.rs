//! The example source, transformer and sink in real shell pipelines (§13, §13.1).

use aoi::read::Event;
use aoi::{Category, Reason, Verdict};

use crate::support::{bash, temp_dir, transcript};

/// The summary of the last stage, read from a file the pipeline tee'd.
fn summary_of(path: &std::path::Path) -> aoi::Summary {
    let bytes = std::fs::read(path).unwrap();
    aoi_test::assert_conforms(&bytes);
    aoi_test::events(&bytes)
        .into_iter()
        .find_map(|e| match e {
            Event::Summary(s) => Some(s),
            _ => None,
        })
        .expect("a summary")
}

fn statuses(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn source_transformer_sink_and_verify_succeed_together() {
    let dir = temp_dir("pipe-ok");
    let out = bash(
        r#"$FEED list --limit 7 --output jsonl | tee feed.jsonl \
             | $SHOUT upcase --input-jsonl - --output jsonl | tee shout.jsonl \
             | $COLLECT add --into store.jsonl --input-jsonl - --output jsonl | tee collect.jsonl \
             | $AOI verify -q
           echo "${PIPESTATUS[*]}""#,
        &dir,
    );
    assert_eq!(statuses(&out), "0 0 0 0 0 0 0", "{}", transcript(&out));
    let stored = std::fs::read_to_string(dir.join("store.jsonl")).unwrap();
    assert_eq!(stored.lines().count(), 7);
    assert!(stored.contains("\"ITEM 7\""));
    let shout = summary_of(&dir.join("shout.jsonl"));
    assert_eq!(
        (shout.count, shout.input_count),
        (Some(7), Some(7)),
        "nothing dropped"
    );
    assert_eq!(shout.upstream.unwrap().tool.as_deref(), Some("feed"));
    let collect = summary_of(&dir.join("collect.jsonl"));
    assert!(collect.ok);
    assert_eq!((collect.count, collect.input_count), (Some(7), Some(7)));
    assert_eq!(collect.upstream.unwrap().tool.as_deref(), Some("shout"));
    // No stage forwarded an upstream meta or summary.
    for stage in ["shout.jsonl", "collect.jsonl"] {
        let bytes = std::fs::read(dir.join(stage)).unwrap();
        let report = aoi_test::assert_conforms(&bytes);
        assert_eq!(report.verdict, Verdict::Succeeded, "{stage}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_upstream_rate_limit_keeps_its_retry_detail_through_every_stage() {
    let dir = temp_dir("pipe-rate");
    let out = bash(
        r#"$FEED list --limit 5 --fail-after 2 --output jsonl \
             | $SHOUT upcase --input-jsonl - --output jsonl | tee shout.jsonl \
             | $COLLECT add --into store.jsonl --input-jsonl - --output jsonl | tee collect.jsonl \
             | $AOI verify --output jsonl > verify.jsonl
           echo "${PIPESTATUS[*]}""#,
        &dir,
    );
    // feed: rate_limited (75); shout and collect: honest failures (1); aoi verify: 1.
    assert_eq!(statuses(&out), "75 1 0 1 0 1", "{}", transcript(&out));
    let shout = summary_of(&dir.join("shout.jsonl"));
    assert!(!shout.ok);
    assert_eq!(shout.reason, Some(Reason::Failed));
    let cause = shout.caused_by.clone().expect("caused_by on shout");
    assert_eq!(cause.origin.as_deref(), Some("feed"));
    assert_eq!(cause.category, Category::RateLimited);
    assert_eq!(cause.code.as_str(), "UPSTREAM_RATE_LIMIT");
    assert!(cause.retryable);
    assert_eq!(cause.retry_after_ms, Some(7200));
    assert_eq!(
        (shout.count, shout.input_count, shout.error_count),
        (Some(2), Some(2), Some(1))
    );
    // The forwarded error names its origin.
    let forwarded: Vec<aoi::ErrorEvent> =
        aoi_test::events(&std::fs::read(dir.join("shout.jsonl")).unwrap())
            .into_iter()
            .filter_map(|e| match e {
                Event::Error(e) => Some(e),
                _ => None,
            })
            .collect();
    assert_eq!(forwarded.len(), 1);
    assert_eq!(forwarded[0].origin.as_deref(), Some("feed"));
    assert_eq!(forwarded[0].retry_after_ms, Some(7200));
    // The sink stores nothing from a failed upstream and keeps the same retry detail.
    let collect = summary_of(&dir.join("collect.jsonl"));
    assert!(!collect.ok);
    assert_eq!(collect.caused_by, Some(cause.clone()));
    assert_eq!(collect.count, Some(0));
    assert_eq!(collect.upstream.unwrap().tool.as_deref(), Some("shout"));
    assert!(!dir.join("store.jsonl").exists(), "nothing stored");
    // aoi verify, at the end, still reports the original retry fields.
    let verify = summary_of(&dir.join("verify.jsonl"));
    assert_eq!(verify.caused_by, Some(cause));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_cut_upstream_is_an_io_failure_downstream() {
    let dir = temp_dir("pipe-cut");
    let out = bash(
        r#"$FEED list --limit 5 --crash-after 3 --output jsonl 2>/dev/null \
             | $SHOUT upcase --input-jsonl - --output jsonl | tee shout.jsonl \
             | $COLLECT add --into store.jsonl --input-jsonl - --output jsonl > collect.jsonl
           echo "${PIPESTATUS[*]}""#,
        &dir,
    );
    // feed aborts (SIGABRT: 134); shout sees EOF without a summary: io (74).
    assert_eq!(statuses(&out), "134 74 0 1", "{}", transcript(&out));
    let shout = summary_of(&dir.join("shout.jsonl"));
    assert!(!shout.ok);
    assert_eq!(
        shout.count,
        Some(3),
        "what arrived before the cut was processed"
    );
    let error = aoi_test::events(&std::fs::read(dir.join("shout.jsonl")).unwrap())
        .into_iter()
        .find_map(|e| match e {
            Event::Error(e) => Some(e),
            _ => None,
        })
        .expect("an io error");
    assert_eq!(error.category, Category::Io);
    assert_eq!(error.code.as_str(), "UPSTREAM_TRUNCATED");
    assert!(error.origin.is_none(), "raised by shout itself");
    let collect = summary_of(&dir.join("collect.jsonl"));
    assert!(!collect.ok);
    let cause = collect.caused_by.expect("caused_by");
    assert_eq!(
        (cause.category, cause.origin.as_deref()),
        (Category::Io, Some("shout"))
    );
    assert!(!dir.join("store.jsonl").exists());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn every_event_the_example_tools_emit_validates_against_their_published_schema() {
    let dir = temp_dir("pipe-schema");
    let out = bash(
        r#"set -e
           $FEED schema > feed.schema.json
           $FEED list --limit 4 --output jsonl | $AOI verify -q --schema feed.schema.json
           $FEED list --limit 4 --fail-after 1 --output jsonl | $AOI verify -q --schema-from $FEED || [ $? = 1 ]
           $FEED doctor --output jsonl | $AOI verify -q --schema-from $FEED
           $FEED list --limit 4 --output jsonl | $SHOUT upcase --input-jsonl - --output jsonl | $AOI verify -q --schema-from $SHOUT
           $FEED list --limit 4 --output jsonl | $COLLECT add --into s.jsonl --input-jsonl - --output jsonl --dry-run | $AOI verify -q --schema-from $COLLECT
           $FEED list --limit 4 --output jsonl | $COLLECT add --into s.jsonl --input-jsonl - --output jsonl | $AOI verify -q --schema-from $COLLECT
           $COLLECT clear --into s.jsonl --confirm --confirm-count 4 --output jsonl | $AOI verify -q --schema-from $COLLECT
           $COLLECT clear --into s.jsonl --output jsonl | $AOI verify -q --schema-from $COLLECT || [ $? = 1 ]
           echo done"#,
        &dir,
    );
    assert_eq!(statuses(&out), "done", "{}", transcript(&out));
    for tool in ["feed", "shout", "collect"] {
        let schema: serde_json::Value =
            serde_json::from_slice(&bash(&format!("${} schema", tool.to_uppercase()), &dir).stdout)
                .unwrap();
        assert!(
            jsonschema::meta::is_valid(&schema),
            "{tool}: not a valid 2020-12 schema"
        );
        let id = schema["$id"].as_str().unwrap();
        assert!(id.starts_with("https://"), "{tool}: $id {id}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_upstream_cut_inside_a_line_fails_the_transformer_in_every_mode() {
    let dir = temp_dir("pipe-midline");
    for mode in ["--fail-fast", "--continue-on-error"] {
        let out = bash(
            &format!(
                r#"$FEED list --limit 3 --output jsonl | head -c 300 \
                     | $SHOUT upcase --input-jsonl - {mode} --output jsonl > shout.jsonl
                   echo "${{PIPESTATUS[*]}}""#
            ),
            &dir,
        );
        // feed may or may not see the pipe close (0 or 141); head exits 0; shout must fail: io.
        let status = statuses(&out);
        assert!(
            status.ends_with(" 0 74"),
            "{mode}: {status}: {}",
            transcript(&out)
        );
        let shout = summary_of(&dir.join("shout.jsonl"));
        assert!(!shout.ok, "{mode}");
        let error = aoi_test::events(&std::fs::read(dir.join("shout.jsonl")).unwrap())
            .into_iter()
            .find_map(|e| match e {
                Event::Error(e) => Some(e),
                _ => None,
            })
            .unwrap();
        assert_eq!(
            (error.category, error.code.as_str()),
            (Category::Io, "UPSTREAM_TRUNCATED")
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn two_concatenated_upstream_streams_are_not_one_good_stream() {
    let dir = temp_dir("pipe-two");
    let out = bash(
        r#"( $FEED list --limit 1 --output jsonl; $FEED list --limit 2 --output jsonl ) \
             | $SHOUT upcase --input-jsonl - --output jsonl > shout.jsonl
           echo "${PIPESTATUS[*]}""#,
        &dir,
    );
    assert_eq!(statuses(&out), "0 65", "{}", transcript(&out));
    let shout = summary_of(&dir.join("shout.jsonl"));
    assert!(!shout.ok);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A producer speaking a later 1.x (`aoi_version` "1.1") whose error has a category v1.0-alpha
/// does not know, in a finished stream: meta, one item, the error, a failed summary.
fn newer_minor_upstream(aoi_version: &str) -> String {
    [
        r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"U"},"tool":"up","tool_version":"2.0.0","aoi_version":"AOI_VERSION","schema_name":"com.example.up.events","schema_version":"1.0.0"}"#,
        r#"{"type":"item","aoi":{"seq":1,"run":"U"},"id":"a","n":1,"title":"quota"}"#,
        r#"{"type":"aoi:error","aoi":{"seq":2,"run":"U"},"scope":"item","category":"quota_exhausted","code":"QUOTA_GONE","message":"monthly quota used up","retryable":true,"retry_after_ms":60000}"#,
        r#"{"type":"aoi:summary","aoi":{"seq":3,"run":"U"},"ok":false,"reason":"failed","event_count":4,"count":1,"warning_count":0,"error_count":1,"caused_by":{"category":"quota_exhausted","code":"QUOTA_GONE","retryable":true,"retry_after_ms":60000}}"#,
    ]
    .map(|l| l.replace("AOI_VERSION", aoi_version))
    .join("\n")
        + "\n"
}

/// The raw JSON objects of a stream file, as written.
fn raw_lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// §9.4 through a real transformer: under `--continue-on-error` an upstream error whose
/// category this version does not know (from a stream declaring a later minor) does not fail
/// the run; it is forwarded unchanged, its wire category kept, with `origin` (§13.1). Without
/// `--continue-on-error` it fails the run as any upstream error does, decided as `internal`
/// with the event's own retry disposition (§9.3).
#[test]
fn an_unknown_category_from_a_newer_minor_upstream_passes_through_the_transformer_section_9_4() {
    let dir = temp_dir("pipe-category");
    std::fs::write(dir.join("up.jsonl"), newer_minor_upstream("1.1")).unwrap();
    let out = bash(
        r#"$SHOUT upcase --input-jsonl - --continue-on-error --output jsonl < up.jsonl > shout.jsonl
           echo "$?"
           $SHOUT upcase --input-jsonl - --output jsonl < up.jsonl > strict.jsonl
           echo "$?""#,
        &dir,
    );
    assert_eq!(statuses(&out), "0\n1", "{}", transcript(&out));
    let lines = raw_lines(&dir.join("shout.jsonl"));
    let errors: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["type"] == "aoi:error").collect();
    assert_eq!(errors.len(), 1, "only the forwarded error: {lines:?}");
    assert_eq!(
        errors[0]["category"], "quota_exhausted",
        "forwarded unchanged"
    );
    assert_eq!(errors[0]["origin"], "up");
    assert_eq!(errors[0]["retryable"], true);
    assert_eq!(errors[0]["retry_after_ms"], 60000);
    assert!(
        errors[0].get("details").is_none(),
        "nothing added: {}",
        errors[0]
    );
    let summary = lines.last().unwrap();
    assert_eq!(summary["type"], "aoi:summary");
    assert_eq!(summary["ok"], true, "{summary}");
    assert_eq!(summary["count"], 1, "the item went through");

    let strict = raw_lines(&dir.join("strict.jsonl"));
    let summary = strict.last().unwrap();
    assert_eq!(summary["ok"], false);
    let cause = &summary["caused_by"];
    assert_eq!(
        cause["category"], "internal",
        "decided as internal: {cause}"
    );
    assert_eq!(cause["origin"], "up");
    assert_eq!(
        (&cause["retryable"], &cause["retry_after_ms"]),
        (&true.into(), &60000.into())
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// §9.2: a stream that declares exactly v1.0-alpha holds its producer to the closed enum, so
/// there an unknown category is the upstream's protocol violation, as `aoi verify` decides.
#[test]
fn an_unknown_category_in_a_1_0_alpha_upstream_is_a_violation_section_9_2() {
    let dir = temp_dir("pipe-category-alpha");
    std::fs::write(dir.join("up.jsonl"), newer_minor_upstream(aoi::AOI_VERSION)).unwrap();
    let out = bash(
        r#"$SHOUT upcase --input-jsonl - --continue-on-error --output jsonl < up.jsonl > shout.jsonl
           echo "$?"
           $AOI verify -q up.jsonl
           echo "$?""#,
        &dir,
    );
    assert_eq!(statuses(&out), "65\n65", "{}", transcript(&out));
    let codes: Vec<String> = raw_lines(&dir.join("shout.jsonl"))
        .iter()
        .filter(|l| l["type"] == "aoi:error")
        .map(|l| l["code"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(codes, ["QUOTA_GONE", "UPSTREAM_PROTOCOL_VIOLATION"]);
    std::fs::remove_dir_all(dir).unwrap();
}
