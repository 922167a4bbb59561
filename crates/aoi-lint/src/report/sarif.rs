//! The report as SARIF 2.1.0, the format code-scanning dashboards (GitHub code scanning,
//! Azure DevOps, IDE viewers) ingest: one rule per check, one result per failure.

use serde_json::{json, Value};

use super::command_label;
use crate::model::{CheckId, CheckOutcome, CheckResult, Report};

/// Where the checks are defined (§18.2); each rule's `helpUri` points at it.
const SPEC_URI: &str = concat!(
    env!("CARGO_PKG_REPOSITORY"),
    "/blob/main/spec/aoi-cli-v1.0-alpha.md#182-lint-checks"
);

/// Writes `report` as a SARIF 2.1.0 log with one run.
///
/// `tool.driver.rules` holds the sixteen checks in order (`AOI001`…`AOI016`, so a result's
/// `ruleIndex` is its check number minus one), tagged with their factors. `results` holds one
/// `error` per fail and one `note` per could-not-run; passes and not-applicable results are
/// left out, as SARIF records problems. A result is located logically, at the command, and
/// physically at the report's artifact (the `aoi-lint.toml` used, else the tool's path), which
/// code scanning needs; `invocations` records lint's command line. Its evidence is under
/// `properties.evidence`, and
/// `properties` also carries `check`, `command` and `outcome` for filtering. The run's
/// `properties` carry the counts, factors passed, processes, wall time and network isolation.
pub fn sarif(report: &Report) -> Value {
    let rules: Vec<Value> = CheckId::all().map(rule).collect();
    let mut results: Vec<Value> = report
        .results
        .iter()
        .filter(|r| matches!(r.outcome, CheckOutcome::Fail | CheckOutcome::CouldNotRun))
        .map(|r| result(report, r))
        .collect();
    // The profile's advice: a note, never an error (docs/discovery.md, not the spec).
    results.extend(report.advice().map(|(r, advice)| {
        let mut note = result(report, r);
        note["level"] = json!("note");
        note["message"]["text"] = json!(format!("advice: {} (fix: {})", advice.detail, advice.fix));
        note["properties"]["outcome"] = json!("advice");
        note["properties"]["evidence"] = json!(advice.evidence);
        note
    }));
    let mut run_properties = json!({
        "tool": report.tool,
        "pass": report.count(CheckOutcome::Pass),
        "fail": report.count(CheckOutcome::Fail),
        "advice": report.advice().count(),
        "not_applicable": report.count(CheckOutcome::NotApplicable),
        "could_not_run": report.count(CheckOutcome::CouldNotRun),
        "factors_passed": report.factors_passed().iter().map(|f| f.name()).collect::<Vec<_>>(),
        "processes": report.processes,
        "escaped_processes": report.escaped,
        "elapsed_ms": u64::try_from(report.elapsed.as_millis()).unwrap_or(u64::MAX),
        "network_isolated": report.network_isolated,
    });
    if let Some(version) = &report.tool_version {
        run_properties["tool_version"] = json!(version);
    }
    if let Some(note) = &report.network_note {
        run_properties["network_note"] = json!(note);
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "aoi-lint",
                    "informationUri": env!("CARGO_PKG_REPOSITORY"),
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                }
            },
            "results": results,
            // Lint ran to its end (whatever it found): SARIF's executionSuccessful is about
            // the analysis, not the tool analysed.
            "invocations": [{
                "executionSuccessful": true,
                "commandLine": report.invocation.join(" "),
                "arguments": report.invocation.iter().skip(1).collect::<Vec<_>>(),
            }],
            "properties": run_properties,
        }]
    })
}

/// `AOI006` for check 6.
fn rule_id(check: CheckId) -> String {
    format!("AOI{:03}", check.number())
}

fn rule(check: CheckId) -> Value {
    let info = check.info();
    json!({
        "id": rule_id(check),
        "name": info.name,
        "shortDescription": { "text": info.title },
        "fullDescription": {
            "text": format!("\"{}\" (AOI-CLI v1.0-alpha §18.2 #{}; {})", info.quote, check, info.sections)
        },
        "helpUri": SPEC_URI,
        "defaultConfiguration": { "level": "error" },
        "properties": {
            "tags": info.factors.iter().map(|f| f.name()).collect::<Vec<_>>(),
            "sections": info.sections,
        }
    })
}

fn result(report: &Report, result: &CheckResult) -> Value {
    let level = match result.outcome {
        CheckOutcome::Fail => "error",
        _ => "note",
    };
    // SARIF requires a message to say something; an empty detail falls back to the check.
    let text = if result.detail.trim().is_empty() {
        result.check.info().title.to_owned()
    } else {
        result.detail.clone()
    };
    // A subcommand is a named entry point the tool dispatches to, invoked with arguments:
    // of SARIF's logical location kinds (§3.33.7) that is a "function". The whole tool, for a
    // single invocation (`""`), is the executable itself: a "module".
    let location = if result.command.is_empty() {
        json!({ "name": report.tool, "kind": "module" })
    } else {
        json!({
            "name": result.command,
            "fullyQualifiedName": format!("{} {}", report.tool, result.command),
            "kind": "function",
        })
    };
    // Code-scanning dashboards need a file: the config lint used, else the tool itself.
    let mut place = json!({ "logicalLocations": [location] });
    if let Some(artifact) = &report.artifact {
        place["physicalLocation"] = json!({
            "artifactLocation": { "uri": artifact },
            "region": { "startLine": 1 }
        });
    }
    json!({
        "ruleId": rule_id(result.check),
        "ruleIndex": usize::from(result.check.number()) - 1,
        "level": level,
        "message": { "text": text },
        "locations": [place],
        "properties": {
            "check": result.check.number(),
            "command": command_label(&result.command),
            "outcome": result.outcome.as_str(),
            "evidence": result.evidence,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{all_pass_report, sample_report};

    /// The official OASIS SARIF 2.1.0 schema (draft-07, `$id`
    /// `https://raw.githubusercontent.com/oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json`),
    /// vendored from the `serde-sarif` 0.8.0 crate on crates.io (`src/schema.json`, MIT
    /// licence, © 2021 Paul Sastrasinh; the schema itself is OASIS's). Its definitions match
    /// those of the `sarif-2.1.0-rtm.5.json` shipped in the npm package `@microsoft/jest-sarif`
    /// 1.0.0-beta.0 (MIT) except `suppression`, which changed between rtm.5 and the final
    /// 2.1.0. Every `$ref` in it is internal (`#/definitions/…`), so validation is offline.
    const SARIF_SCHEMA: &str = include_str!("../../tests/data/sarif-schema-2.1.0.json");

    fn validator() -> jsonschema::Validator {
        let mut schema: Value = serde_json::from_str(SARIF_SCHEMA).unwrap();
        // The official schema's `language` patterns (on `run` and `toolComponent`) have a
        // stray `]`, legal in ECMA-262's Annex B (a literal `]`) but rejected by jsonschema's
        // check of the schema itself (`format: regex`); they are escaped here, in memory,
        // meaning the same, and the vendored file stays as published. Aoi-lint never writes
        // `language`.
        for definition in ["run", "toolComponent"] {
            let pattern =
                &mut schema["definitions"][definition]["properties"]["language"]["pattern"];
            assert_eq!(*pattern, r"^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$");
            *pattern = json!(r"^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}\]?$");
        }
        // `offline()`: an external `$ref` would be an error, never a fetch. Formats (`uri`,
        // `date-time`) are checked too.
        jsonschema::options()
            .offline()
            .should_validate_formats(true)
            .build(&schema)
            .unwrap()
    }

    fn assert_valid(log: &Value) {
        let validator = validator();
        let errors: Vec<String> = validator
            .iter_errors(log)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}\n{log:#}");
    }

    #[test]
    fn the_log_validates_against_the_sarif_schema() {
        assert_valid(&sarif(&sample_report()));
        assert_valid(&sarif(&all_pass_report()));
    }

    #[test]
    fn the_schema_catches_a_broken_log() {
        let mut log = sarif(&sample_report());
        log["runs"][0]["results"][0]["level"] = json!("fatal");
        assert!(!validator().is_valid(&log));
        let mut log = sarif(&sample_report());
        log["runs"][0]["tool"]["driver"]["informationUri"] = json!("not a uri");
        assert!(!validator().is_valid(&log), "formats are checked");
    }

    #[test]
    fn one_rule_per_check_with_factor_tags() {
        let log = sarif(&sample_report());
        let rules = log["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .unwrap();
        assert_eq!(rules.len(), 16);
        assert_eq!(rules[0]["id"], "AOI001");
        assert_eq!(rules[15]["id"], "AOI016");
        assert_eq!(rules[5]["name"], "confirmation");
        assert_eq!(
            rules[10]["properties"]["tags"],
            json!(["Bounded", "Streamable"])
        );
        assert_eq!(
            log["runs"][0]["tool"]["driver"]["version"],
            env!("CARGO_PKG_VERSION")
        );
    }

    #[test]
    fn one_result_per_fail_and_could_not_run() {
        let report = sample_report();
        let log = sarif(&report);
        let results = log["runs"][0]["results"].as_array().unwrap();
        assert_eq!(
            results.len(),
            report.count(CheckOutcome::Fail) + report.count(CheckOutcome::CouldNotRun)
        );
        let confirmation = results.iter().find(|r| r["ruleId"] == "AOI006").unwrap();
        assert_eq!(confirmation["level"], "error");
        assert_eq!(confirmation["ruleIndex"], 5);
        assert_eq!(
            confirmation["message"]["text"],
            "deleted «doc_1» without --yes <&\"'> \u{1b}[31mred\u{7}"
        );
        assert_eq!(
            confirmation["locations"][0]["logicalLocations"][0],
            json!({"name": "delete", "fullyQualifiedName": "outline ☃ delete", "kind": "function"})
        );
        assert_eq!(confirmation["properties"]["outcome"], "fail");
        assert_eq!(confirmation["properties"]["check"], 6);
        let evidence = &confirmation["properties"]["evidence"];
        assert_eq!(evidence[0]["line"], 3);
        assert_eq!(evidence[0]["invocation"][2], "doc 1");
        assert_eq!(evidence[1]["finding"], "seq_gap");

        let idempotency = results.iter().find(|r| r["ruleId"] == "AOI007").unwrap();
        assert_eq!(idempotency["level"], "note");
        assert_eq!(idempotency["properties"]["outcome"], "could_not_run");

        let whole = results
            .iter()
            .find(|r| r["properties"]["command"] == "(invocation)")
            .unwrap();
        assert_eq!(
            whole["locations"][0]["logicalLocations"][0],
            json!({"name": "outline ☃", "kind": "module"})
        );
        assert!(sarif(&all_pass_report())["runs"][0]["results"]
            .as_array()
            .unwrap()
            .is_empty());
    }
}
