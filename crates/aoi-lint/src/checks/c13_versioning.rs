//! Check 13, Versioned (§5, §5.1): `schema_version` is in `aoi:meta` and `aoi:summary`, a
//! version the tool advertises is honoured when asked for with `--schema-version`, and one it
//! does not serve is refused as `unsupported`.

use super::{id, Judge};
use crate::model::{CheckId, CheckResult};
use crate::subject::{with, Extras, Subject};

/// This check.
pub const ID: CheckId = id(13);

/// A version no tool serves.
const UNSERVED: &str = "999.0.0";

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let judge = Judge::new(ID, subject);
    let base = match subject.base_run() {
        Ok(base) => base,
        Err(why) => return judge.could_not_run(why),
    };
    let carried = [
        (
            base.meta()
                .map(|m| (m.schema_version.as_deref(), serde_json::to_string(m))),
            "aoi:meta",
        ),
        (
            base.summary()
                .map(|s| (s.schema_version.as_deref(), serde_json::to_string(s))),
            "aoi:summary",
        ),
    ];
    for (event, name) in carried {
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
    for version in &versions {
        let run = match subject.exec(
            &with(&args, "--schema-version", version),
            &Extras::default(),
        ) {
            Ok(run) => run,
            Err(why) => return judge.could_not_run(why),
        };
        let said = run.meta().and_then(|m| m.schema_version.as_deref());
        if said != Some(version.as_str()) {
            return judge
                .fail(format!(
                    "--schema-version {version} gave aoi:meta schema_version {}",
                    said.map_or("(none)".to_owned(), |s| format!("{s:?}"))
                ))
                .evidence(run.evidence());
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
        "schema_version in meta and summary; {} advertised version(s) honoured; {UNSERVED} refused",
        versions.len()
    ))
}
