//! Check 13, Versioned (§5, §5.1): `schema_version` is in `aoi:meta` and `aoi:summary`, a
//! version the tool advertises is honoured when asked for with `--schema-version` (the meta
//! and the summary say it, and the events validate against that version's schema, from
//! `schema --schema-version V`), and one it does not serve is refused as `unsupported`.

use super::{id, Judge};
use crate::model::{CheckId, CheckResult};
use aoi::read::FindingCode;

use crate::subject::{with, Captured, Extras, Subject};
use crate::tool::SchemaOf;

/// This check.
pub const ID: CheckId = id(13);

/// A version no tool serves.
const UNSERVED: &str = "999.0.0";

/// The findings that say a stream does not follow the schema version it names.
const VERSION_CODES: [FindingCode; 2] = [
    FindingCode::EventSchemaInvalid,
    FindingCode::SchemaIdentityMismatch,
];

/// The run's own summary: with several (an upstream's forwarded, check 16's fault), the one
/// whose tool is the meta's.
fn own_summary(run: &Captured) -> Option<&aoi::Summary> {
    let tool = run.meta().and_then(|m| m.tool.as_deref());
    run.summaries()
        .filter(|s| tool.is_none() || s.tool.is_none() || s.tool.as_deref() == tool)
        .last()
        .or_else(|| run.summary())
}

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let judge = Judge::new(ID, subject);
    let base = match subject.base_run() {
        Ok(base) => base,
        Err(why) => return judge.could_not_run(why),
    };
    if base.meta().is_none() && base.run.exit.code() == Some(i32::from(aoi::exit_code::USAGE)) {
        // Its example is refused as usage: check 1 says whether the command exists at all.
        return judge
            .could_not_run(format!(
                "the example is a usage error (exit {}), so there is no stream to read a schema_version from",
                base.run.exit.shell_status()
            ))
            .evidence(base.evidence());
    }
    let carried = [
        (
            base.meta()
                .map(|m| (m.schema_version.as_deref(), serde_json::to_string(m))),
            "aoi:meta",
        ),
        (
            own_summary(base).map(|s| (s.schema_version.as_deref(), serde_json::to_string(s))),
            "aoi:summary",
        ),
    ];
    for (event, name) in carried {
        // An unbounded stream ends on lint's signal: whether it ends with a summary is
        // check 10's to judge; one that does carries the version.
        if name == "aoi:summary"
            && ((event.is_none() && subject.entry.unbounded) || subject.forwarded_summary(base))
        {
            continue;
        }
        let Some((version, text)) = event else {
            return judge
                .fail(format!("the stream has no {name} to carry schema_version"))
                .evidence(base.evidence());
        };
        if version.is_none() {
            return judge
                .fail(format!("{name} has no schema_version"))
                .evidence(base.quote(None, &text.unwrap_or_default()));
        }
    }
    if !subject.takes("--schema-version") {
        return judge.pass(
            "schema_version is in aoi:meta and aoi:summary (no --schema-version to negotiate)",
        );
    }
    let args = match &subject.base {
        Ok(args) => args.clone(),
        Err(why) => return judge.could_not_run(why.clone()),
    };
    let versions = subject.tool.schema_versions();
    let default = versions.first().cloned();
    for version in &versions {
        let args = with(&args, "--schema-version", version);
        // Another version's events are judged by that version's schema, not the default's.
        let run = if Some(version) == default.as_ref() {
            subject.exec(&args, &Extras::default())
        } else {
            match subject.tool.schema_of(version) {
                Ok(schema) => subject.exec_against(&args, &schema),
                Err(SchemaOf::NotServed(why)) => return judge.fail(format!(
                    "capabilities advertises schema version {version}, but `schema --schema-version {version}` does not give it: {why}"
                )),
                // A schema that needs the network is check 1's failure (§3.2).
                Err(SchemaOf::Unusable(why)) => return judge.could_not_run(why),
            }
        };
        let run = match run {
            Ok(run) => run,
            Err(why) => return judge.could_not_run(why),
        };
        let said = [
            (
                "aoi:meta",
                run.meta().and_then(|m| m.schema_version.as_deref()),
            ),
            (
                "aoi:summary",
                own_summary(&run).and_then(|s| s.schema_version.as_deref()),
            ),
        ];
        for (name, said) in said {
            if name == "aoi:summary"
                && ((subject.entry.unbounded && own_summary(&run).is_none())
                    || subject.forwarded_summary(&run))
            {
                continue;
            }
            if said != Some(version.as_str()) {
                return judge
                    .fail(format!(
                        "--schema-version {version} gave {name} schema_version {}",
                        said.map_or("(none)".to_owned(), |s| format!("{s:?}"))
                    ))
                    .evidence(run.evidence());
            }
        }
        if Some(version) != default.as_ref() {
            // What breaks this version's schema and not the default's in the base run: a
            // fault of the stream itself is its own check's (4, 14, 15, …), counted there.
            let in_base: Vec<FindingCode> =
                base.verification.findings.iter().map(|f| f.code).collect();
            let broken: Vec<_> = run
                .verification
                .findings
                .iter()
                .filter(|f| f.level == aoi::read::Level::Violation)
                .filter(|f| VERSION_CODES.contains(&f.code) && !in_base.contains(&f.code))
                .collect();
            if let Some(first) = broken.first() {
                let mut result = judge.fail(format!(
                    "--schema-version {version} is named but not honoured: the stream breaks that version's schema ({}, {})",
                    first.code.as_str(),
                    first.message
                ));
                for f in broken {
                    result = result.evidence(run.quote(f.line, &f.message));
                }
                return result;
            }
        }
    }
    let refused = match subject.exec(
        &with(&args, "--schema-version", UNSERVED),
        &Extras::default(),
    ) {
        Ok(run) => run,
        Err(why) => return judge.could_not_run(why),
    };
    if refused.run.exit.code() == Some(0) {
        return judge
            .fail(format!(
                "--schema-version {UNSERVED}, which it does not serve, exits 0"
            ))
            .evidence(refused.evidence());
    }
    let category = refused.errors().next().map(|e| e.category.as_str());
    if !refused.run.stdout.is_empty() && category != Some("unsupported") {
        return judge
            .fail(format!(
                "--schema-version {UNSERVED} is refused as {}, not unsupported",
                category.unwrap_or("no aoi:error")
            ))
            .evidence(refused.evidence());
    }
    judge.pass(format!(
        "schema_version in meta and summary; {} advertised version(s) honoured, each stream valid against its version's schema; {UNSERVED} refused",
        versions.len()
    ))
}
