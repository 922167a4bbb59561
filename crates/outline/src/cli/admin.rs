//! The commands about the database itself: `status` and `doctor` (§16.2, §16.3).

use crate::cli::Db;
use std::process::ExitCode;

use aoi::app::App;
use aoi::discover::doctor::Doctor;
use aoi::surface::flags::GlobalArgs;
use aoi::{Outcome, Severity};
use outline::store::schema::supported_version;
use outline::store::{Status, Store};

use super::auth::credential;
use super::errors::RunError;
use super::events::StatusEvent;
use super::{db_path, human, human_failure, open_store, Access};

/// The status of the database this run is about.
fn fetch_status(db: Db) -> Result<StatusEvent, RunError> {
    let path = db_path(&db)?;
    let store = open_store(db, Access::Read)?;
    let status: Status = store.status()?;
    // A database not created yet reads as an empty one (and is not created by reading it).
    let exists = status.db_path.is_some();
    Ok(StatusEvent {
        db_path: path.display().to_string(),
        exists,
        documents: status.documents,
        collections: status.collections,
        tags: status.tags,
        size_bytes: if exists { status.size_bytes } else { 0 },
        schema_version: status.schema_version,
        wal: status.wal,
        last_change: status.last_change,
    })
}

/// Runs `outline status`.
pub fn status(app: &App, global: &GlobalArgs, db: Db) -> ExitCode {
    if !global.machine() {
        return match fetch_status(db) {
            Ok(s) => {
                let database = if s.exists {
                    s.db_path.clone()
                } else {
                    format!(
                        "{} (not created yet: the first write creates it)",
                        s.db_path
                    )
                };
                let rows = [
                    ("database", database),
                    ("documents", s.documents.to_string()),
                    ("collections", s.collections.to_string()),
                    ("tags", s.tags.to_string()),
                    ("size", format!("{} bytes", s.size_bytes)),
                    ("schema", format!("version {}", s.schema_version)),
                    ("journal", if s.wal { "wal" } else { "not wal" }.to_owned()),
                ];
                for (name, value) in rows {
                    human::line(&format!("{name:<12}{value}"));
                }
                ExitCode::SUCCESS
            }
            Err(e) => human_failure(e, global.color_allowed()),
        };
    }
    app.run(global, |out| {
        let s = fetch_status(db)?;
        out.emit(&s)?;
        Ok(Outcome::success())
    })
}

/// One readiness check: its name, whether it passed, severity, detail and hint.
struct CheckResult {
    name: &'static str,
    ok: bool,
    severity: Severity,
    detail: String,
    hint: Option<&'static str>,
}

impl CheckResult {
    fn error(name: &'static str, ok: bool, detail: String, hint: &'static str) -> CheckResult {
        CheckResult {
            name,
            ok,
            severity: Severity::Error,
            detail,
            hint: (!ok).then_some(hint),
        }
    }
}

/// Where a token would come from (§16.2: doctor checks credentials). Having none is fine:
/// only a sync with a protected database needs one.
fn credential_check() -> CheckResult {
    let (ok, severity, detail, hint) = match credential() {
        Ok(Some(c)) => (
            true,
            Severity::Info,
            format!("a token comes from {}", c.source_name()),
            None,
        ),
        Ok(None) => (
            true,
            Severity::Info,
            "no token (only a sync with a protected database needs one)".to_owned(),
            None,
        ),
        Err(e) => (
            false,
            Severity::Warning,
            e.message,
            Some("run `outline auth logout`, then `outline auth login`"),
        ),
    };
    CheckResult {
        name: "credential",
        ok,
        severity,
        detail,
        hint,
    }
}

/// Runs every check in order: the database's (where one that cannot be opened stops the
/// other database checks), then the credential's.
fn run_checks(db: Db) -> Vec<CheckResult> {
    let mut checks = database_checks(db);
    checks.push(credential_check());
    checks
}

fn database_checks(db: Db) -> Vec<CheckResult> {
    let mut checks = Vec::new();
    let path = match db_path(&db) {
        Ok(p) => p,
        Err(e) => {
            checks.push(CheckResult::error(
                "database_path",
                false,
                e.message.clone(),
                "pass --db PATH",
            ));
            return checks;
        }
    };
    if !path.exists() && db.named().is_some() {
        // A database named that is not there is a failure, never an empty store.
        let missing = super::errors::database_not_found(&path);
        checks.push(CheckResult::error(
            "database_reachable",
            false,
            missing.message.clone(),
            "check the path; a write (create, import) creates the database",
        ));
        return checks;
    }
    if !path.exists() {
        // doctor is read-only: it reports the missing database instead of creating it.
        checks.push(CheckResult {
            name: "database_reachable",
            ok: true,
            severity: Severity::Info,
            detail: format!(
                "no database at {} yet; the first write creates it",
                path.display()
            ),
            hint: None,
        });
        return checks;
    }
    let mut store = match Store::open_for_reading(&path) {
        Ok(s) => {
            checks.push(CheckResult::error(
                "database_reachable",
                true,
                format!("{} opened", path.display()),
                "",
            ));
            s
        }
        Err(e) => {
            checks.push(CheckResult::error(
                "database_reachable",
                false,
                format!("{}: {e}", path.display()),
                "check the path and its permissions, or pass --db PATH",
            ));
            return checks;
        }
    };
    match store.status() {
        Ok(s) => checks.push(CheckResult::error(
            "schema_version",
            s.schema_version == supported_version(),
            format!(
                "schema version {} (this outline supports {})",
                s.schema_version,
                supported_version()
            ),
            "upgrade outline to a version that knows this schema",
        )),
        Err(e) => checks.push(CheckResult::error(
            "schema_version",
            false,
            e.to_string(),
            "run `outline status` for details",
        )),
    }
    match store.integrity_problems() {
        Ok(problems) => checks.push(CheckResult::error(
            "integrity",
            problems.is_empty(),
            if problems.is_empty() {
                "integrity_check, foreign keys, full-text index and tags are consistent".to_owned()
            } else {
                problems.join("; ")
            },
            "export the documents with `outline export` and import them into a fresh database",
        )),
        Err(e) => checks.push(CheckResult::error(
            "integrity",
            false,
            e.to_string(),
            "the database may be locked or damaged; retry, then restore from an export",
        )),
    }
    checks
}

/// Runs `outline doctor`.
pub fn doctor(app: &App, global: &GlobalArgs, db: Db) -> ExitCode {
    if !global.machine() {
        let checks = run_checks(db);
        let paint = human::stdout_paint(global);
        let mut failed = false;
        for c in &checks {
            let mark = match (c.ok, c.severity) {
                (true, _) => paint.good("ok  "),
                (false, Severity::Error) => paint.bad("FAIL"),
                (false, _) => paint.warn("warn"),
            };
            human::marked_line(&mark, &format!("  {:<20}{}", c.name, c.detail));
            if let Some(hint) = c.hint {
                human::line(&format!("      hint: {hint}"));
            }
            failed |= !c.ok && matches!(c.severity, Severity::Error);
        }
        return if failed {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    app.run(global, |out| {
        let mut doctor = Doctor::new();
        for c in run_checks(db) {
            doctor
                .check(out, c.name, c.ok, c.severity, c.detail, c.hint)
                .map_err(RunError::from)?;
        }
        Ok(doctor.outcome())
    })
}
