//! `outline auth`: the token that protected databases ask a sync for (§1.3).
//!
//! A token comes from `OUTLINE_TOKEN`, else from the credential file that `outline auth login`
//! writes (`$XDG_CONFIG_HOME/outline/credentials`, else `~/.config/outline/credentials`,
//! mode 0600). Only `auth login` in human mode ever prompts, and only on a terminal; in
//! machine mode a missing token is an `authn` `INTERACTIVE_REQUIRED` error with a hint, at
//! once, without reading stdin. No output of any command contains a token.

use crate::cli::Db;
use std::fmt;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aoi::app::App;
use aoi::surface::flags::{DryRunArgs, GlobalArgs};
use aoi::surface::safety::Effects;
use aoi::{Category, Code, ErrorEvent, Outcome, Plan, Warning};
use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};

use super::errors::RunError;
use super::events::{CredentialEvent, ProtectionEvent};
use super::name;
use super::{human, human_failure, open_store, Access};

/// The environment variable that supplies a token, ahead of the credential file.
pub const TOKEN_VAR: &str = "OUTLINE_TOKEN";

/// The longest token accepted, in bytes.
const MAX_TOKEN_LEN: usize = 4096;

/// `outline auth`'s subcommands.
#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Save a token for protected databases (prompts on a terminal; --with-token reads stdin).
    #[command(name = name::leaf(name::AUTH_LOGIN))]
    Login(LoginArgs),
    /// Remove the saved token.
    #[command(name = name::leaf(name::AUTH_LOGOUT))]
    Logout(DryRunArgs),
    /// Say where a token would come from: OUTLINE_TOKEN, the credential file, or nowhere.
    #[command(name = name::leaf(name::AUTH_STATUS))]
    Status,
    /// Protect this database: a sync with it must present the current token.
    #[command(name = name::leaf(name::AUTH_PROTECT))]
    Protect(DryRunArgs),
    /// Remove this database's protection (needs its token).
    #[command(name = name::leaf(name::AUTH_UNPROTECT))]
    Unprotect(DryRunArgs),
}

/// `outline auth login`.
#[derive(Debug, Args)]
pub struct LoginArgs {
    /// Read the token from standard input (its first line) instead of prompting.
    #[arg(long)]
    with_token: bool,
    #[command(flatten)]
    dry_run: DryRunArgs,
}

/// A token, and where it came from. Its `Debug` never shows it.
pub struct Credential {
    token: String,
    source: Source,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl Credential {
    /// The token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Where it came from, for a person: `OUTLINE_TOKEN` or the file's path.
    pub fn source_name(&self) -> String {
        match &self.source {
            Source::Env => TOKEN_VAR.to_owned(),
            Source::File(path) => path.display().to_string(),
        }
    }
}

/// Where a token came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `OUTLINE_TOKEN`.
    Env,
    /// The credential file at this path.
    File(PathBuf),
}

impl Source {
    fn name(&self) -> &'static str {
        match self {
            Source::Env => "env",
            Source::File(_) => "file",
        }
    }
}

/// The file on disk: JSON, one field.
#[derive(Serialize, Deserialize)]
struct CredentialFile {
    token: String,
}

/// Where `auth login` saves the token.
fn credential_path() -> Result<PathBuf, ErrorEvent> {
    if let Some(path) = super::xdg_file("XDG_CONFIG_HOME", ".config", "credentials") {
        return Ok(path);
    }
    Err(ErrorEvent::new(
        Category::Config,
        Code::from_static("CREDENTIAL_PATH_UNKNOWN"),
        "no place for the credential file: neither XDG_CONFIG_HOME nor HOME is set",
    )
    .hint("set OUTLINE_TOKEN instead"))
}

/// Checks a token's shape: one line of visible characters.
fn check_token(token: &str, origin: &str) -> Result<(), ErrorEvent> {
    let problem = if token.is_empty() {
        Some("is empty")
    } else if token.len() > MAX_TOKEN_LEN {
        Some("is longer than 4096 bytes")
    } else if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Some("contains whitespace or control characters")
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(ErrorEvent::new(
            Category::Validation,
            Code::from_static("INVALID_TOKEN"),
            format!("the token from {origin} {problem}"),
        )
        .field("token")),
    }
}

/// The token to present, if any: `OUTLINE_TOKEN`, else the credential file.
///
/// A credential file that exists but cannot be read or parsed is an error, not "no token":
/// the person who saved it should hear that it is broken.
pub fn credential() -> Result<Option<Credential>, ErrorEvent> {
    if let Some(token) = std::env::var_os(TOKEN_VAR).filter(|v| !v.is_empty()) {
        let token = token.into_string().map_err(|_| {
            ErrorEvent::new(
                Category::Config,
                Code::from_static("INVALID_TOKEN"),
                format!("{TOKEN_VAR} is not valid UTF-8"),
            )
        })?;
        check_token(&token, TOKEN_VAR)?;
        return Ok(Some(Credential {
            token,
            source: Source::Env,
        }));
    }
    let Ok(path) = credential_path() else {
        return Ok(None);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ErrorEvent::cannot_open(&path.display().to_string(), &e)),
    };
    let file: CredentialFile = serde_json::from_str(&text).map_err(|_| {
        ErrorEvent::new(
            Category::Config,
            Code::from_static("CREDENTIAL_FILE_INVALID"),
            format!("{} is not an outline credential file", path.display()),
        )
        .target(path.display().to_string())
        .hint("run `outline auth logout`, then `outline auth login`")
    })?;
    check_token(&file.token, &path.display().to_string())?;
    Ok(Some(Credential {
        token: file.token,
        source: Source::File(path),
    }))
}

/// The error for a command that needs a token and has none (§1.3): never a prompt.
pub fn interactive_required(need: &str) -> ErrorEvent {
    ErrorEvent::new(
        Category::Authn,
        Code::from_static("INTERACTIVE_REQUIRED"),
        format!(
            "{need} needs a token: set {TOKEN_VAR}, or run `outline auth login` in a terminal to save one"
        ),
    )
    .hint("outline auth login")
}

/// Writes the credential file with owner-only permissions, replacing it atomically.
fn save(path: &Path, token: &str) -> Result<(), ErrorEvent> {
    let fail = |e: std::io::Error| {
        ErrorEvent::new(
            Category::Io,
            Code::from_static("CREDENTIAL_WRITE_FAILED"),
            format!("cannot write {}: {e}", path.display()),
        )
        .target(path.display().to_string())
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let text = serde_json::to_string(&CredentialFile {
        token: token.to_owned(),
    })
    .map_err(|e| fail(std::io::Error::other(e)))?;
    let temp = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(&temp).and_then(|mut file| {
        file.write_all(text.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&temp, path)) {
        let _ = std::fs::remove_file(&temp);
        return Err(fail(e));
    }
    Ok(())
}

/// Reads the token `auth login` saves: stdin under `--with-token`, else a prompt on the
/// terminal (human mode only).
fn read_login_token(args: &LoginArgs, machine: bool) -> Result<String, ErrorEvent> {
    let token = if args.with_token {
        let mut text = String::new();
        std::io::stdin()
            .take(u64::try_from(MAX_TOKEN_LEN).unwrap_or(u64::MAX) * 2)
            .read_to_string(&mut text)
            .map_err(|e| ErrorEvent::cannot_open("standard input", &e))?;
        text.lines().next().unwrap_or_default().trim().to_owned()
    } else if machine {
        return Err(ErrorEvent::new(
            Category::Authn,
            Code::from_static("INTERACTIVE_REQUIRED"),
            "`outline auth login` prompts for the token, and machine mode never prompts; run it in a terminal, or pass --with-token and the token on stdin",
        )
        .hint("outline auth login"));
    } else if std::io::stdin().is_terminal() {
        rpassword::prompt_password("Token for protected outline databases: ")
            .map_err(|e| ErrorEvent::cannot_open("the terminal", &e))?
            .trim()
            .to_owned()
    } else {
        return Err(ErrorEvent::new(
            Category::Usage,
            Code::from_static("NOT_A_TERMINAL"),
            "standard input is not a terminal, so there is nowhere to prompt; pass --with-token to read the token from it",
        )
        .hint("outline auth login --with-token < token.txt"));
    };
    check_token(&token, "the input")?;
    Ok(token)
}

/// What an `auth` subcommand did.
enum Done {
    Credential(CredentialEvent, Option<Warning>),
    Protection(ProtectionEvent),
    /// `--dry-run`: what would change.
    Planned(Plan),
}

fn plan(action: &str, target: String, detail: &str) -> Done {
    Done::Planned(Plan {
        action: action.to_owned(),
        target: Some(target),
        detail: Some(detail.to_owned()),
        properties: None,
    })
}

fn run(db: Db, command: &AuthCommand, machine: bool) -> Result<Done, RunError> {
    match command {
        AuthCommand::Login(args) => {
            let token = read_login_token(args, machine)?;
            let path = credential_path()?;
            if args.dry_run.dry_run {
                let target = path.display().to_string();
                return Ok(plan(
                    "save",
                    target,
                    "save the token, readable by its owner only",
                ));
            }
            save(&path, &token)?;
            let shadowed = std::env::var_os(TOKEN_VAR).is_some_and(|v| !v.is_empty());
            Ok(Done::Credential(
                CredentialEvent {
                    action: "login".into(),
                    source: "file".into(),
                    path: Some(path.display().to_string()),
                    changed: true,
                },
                shadowed.then(|| {
                    env_warning(
                        "OUTLINE_TOKEN_SHADOWS_FILE",
                        "is set and is used ahead of the saved token",
                    )
                }),
            ))
        }
        AuthCommand::Logout(dry_run) => {
            let path = credential_path()?;
            if dry_run.dry_run {
                let target = path.display().to_string();
                return Ok(plan("remove", target, "remove the saved token"));
            }
            let removed = match std::fs::remove_file(&path) {
                Ok(()) => true,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
                Err(e) => {
                    return Err(ErrorEvent::cannot_open(&path.display().to_string(), &e).into())
                }
            };
            let still = std::env::var_os(TOKEN_VAR).is_some_and(|v| !v.is_empty());
            Ok(Done::Credential(
                CredentialEvent {
                    action: "logout".into(),
                    source: "file".into(),
                    path: Some(path.display().to_string()),
                    changed: removed,
                },
                still.then(|| {
                    env_warning(
                        "OUTLINE_TOKEN_STILL_SET",
                        "is still set and still supplies a token",
                    )
                }),
            ))
        }
        AuthCommand::Status => {
            let found = credential()?;
            let (source, path) = match found.as_ref().map(|c| &c.source) {
                Some(Source::Env) => ("env", None),
                Some(Source::File(path)) => ("file", Some(path.display().to_string())),
                None => ("none", None),
            };
            Ok(Done::Credential(
                CredentialEvent {
                    action: "status".into(),
                    source: source.into(),
                    path,
                    changed: false,
                },
                None,
            ))
        }
        AuthCommand::Protect(dry_run) | AuthCommand::Unprotect(dry_run) => {
            let protect = matches!(command, AuthCommand::Protect(_));
            let verb = if protect {
                "`outline auth protect`"
            } else {
                "`outline auth unprotect`"
            };
            let credential = credential()?.ok_or_else(|| interactive_required(verb))?;
            let mut store = open_store(db, Access::unless_dry_run(dry_run.dry_run))?;
            let database = store
                .path()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let dry_run = dry_run.dry_run;
            let changed = store.transaction(|tx| -> Result<bool, RunError> {
                let current = tx.protection()?;
                if current.is_protected() && !current.admits(Some(credential.token())) {
                    return Err(token_rejected(&database, &credential).into());
                }
                if dry_run {
                    return Ok(false);
                }
                let changed = protect || current.is_protected();
                tx.set_protection(protect.then_some(credential.token()))?;
                Ok(changed)
            });
            let changed = store.finish(changed)?;
            if dry_run {
                let detail = if protect {
                    "require the current token for every sync with this database"
                } else {
                    "let any sync with this database run without a token"
                };
                let action = if protect { "protect" } else { "unprotect" };
                return Ok(plan(action, database, detail));
            }
            Ok(Done::Protection(ProtectionEvent {
                path: database,
                protected: protect,
                changed,
                token_source: credential.source.name().into(),
            }))
        }
    }
}

fn env_warning(code: &'static str, what: &str) -> Warning {
    Warning::new(Code::from_static(code), format!("{TOKEN_VAR} {what}"))
}

/// The error for a token that does not open a protected database.
pub fn token_rejected(database: &str, credential: &Credential) -> ErrorEvent {
    ErrorEvent::new(
        Category::Authn,
        Code::from_static("TOKEN_REJECTED"),
        format!(
            "{database} is protected by another token than the one from {}",
            credential.source_name()
        ),
    )
    .target(database.to_owned())
    .hint("set OUTLINE_TOKEN, or run `outline auth login`, with the database's token")
}

/// Runs `outline auth ...`.
pub fn auth(app: &App, global: &GlobalArgs, db: Db, command: AuthCommand) -> ExitCode {
    if !global.machine() {
        return match run(db, &command, false) {
            Ok(done) => {
                print_done(&done);
                ExitCode::SUCCESS
            }
            Err(e) => human_failure(e, global.color_allowed()),
        };
    }
    app.run(global, |out| {
        match run(db, &command, true)? {
            Done::Credential(event, warning) => {
                if let Some(w) = warning {
                    out.warning(&w)?;
                }
                out.emit(&event)?;
            }
            Done::Protection(event) => out.emit(&event)?,
            Done::Planned(plan) => {
                Effects::new(true).apply(out, plan, || Ok::<(), ErrorEvent>(()))?;
            }
        }
        Ok(Outcome::success())
    })
}

fn print_done(done: &Done) {
    match done {
        Done::Credential(c, warning) => {
            let path = c.path.as_deref().unwrap_or_default();
            let text = match (c.action.as_str(), c.source.as_str(), c.changed) {
                ("login", _, _) => format!("token saved to {path}"),
                ("logout", _, true) => format!("token removed from {path}"),
                ("logout", _, false) => format!("no token was saved at {path}"),
                (_, "env", _) => format!("a token comes from {TOKEN_VAR}"),
                (_, "file", _) => format!("a token comes from {path}"),
                _ => "no token: set OUTLINE_TOKEN or run `outline auth login`".to_owned(),
            };
            human::line(&text);
            if let Some(w) = warning {
                human::line(&format!("note: {}", w.message));
            }
        }
        Done::Protection(p) => human::line(&match (p.protected, p.changed) {
            (true, _) => format!(
                "{} is protected: a sync with it needs the token you have now",
                p.path
            ),
            (false, true) => format!("{} is no longer protected", p.path),
            (false, false) => format!("{} was not protected", p.path),
        }),
        Done::Planned(p) => {
            human::line(&format!(
                "would {} {}: {}",
                p.action,
                p.target.as_deref().unwrap_or_default(),
                p.detail.as_deref().unwrap_or_default()
            ));
            human::line("dry run: nothing was changed");
        }
    }
}
