//! What a model may name: path arguments confined to the server's roots, and arguments the
//! operator pinned.
//!
//! A model that calls a tool chooses every argument, so an argument that names a file lets it
//! read or write any file the CLI can (`create {body_file: "/etc/passwd"}` and then `get`). The
//! adapter knows which arguments are paths from the input schema (`x-aoi-format: "path"`, or
//! `"format": "path"`, `docs/discovery.md`) and refuses a call whose path is outside the roots
//! (`--root`, by default the working directory) before the CLI runs. Paths are resolved as the
//! kernel would open them: relative to the working directory the CLI runs in (the adapter's, or
//! the first root when the adapter's is outside every root), every symlink followed
//! (canonicalized); a path that does not exist yet is resolved through its nearest existing
//! ancestor, and must not climb out of it with `..`. A pinned argument (`--pin name=value`) is
//! the operator's: it is gone from the tool's `inputSchema`, a call that passes it is refused,
//! and every call gets the pinned value.

use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};

use aoi::discover::manifest::marks_path;
use aoi::Category;
use serde_json::{Map, Value};

/// The error code of a path argument outside every root.
pub const PATH_OUTSIDE_ROOTS: &str = "PATH_OUTSIDE_ROOTS";

/// Why a call is refused before the CLI runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Its category: `usage` for arguments that do not fit, `authz` for a path outside the
    /// roots (§9.2 has no narrower category: the arguments are valid, the action is not allowed).
    pub category: Category,
    /// Its code.
    pub code: &'static str,
    /// One line for the model.
    pub message: String,
}

impl Refusal {
    /// Arguments that do not fit the tool (`usage`, `INVALID_ARGUMENTS`).
    pub fn invalid(message: impl Into<String>) -> Refusal {
        Refusal {
            category: Category::Usage,
            code: "INVALID_ARGUMENTS",
            message: message.into(),
        }
    }
}

/// Why the server's confinement cannot be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfineError {
    /// A `--root` that cannot be resolved (it must exist).
    #[error("--root {path}: {why}")]
    Root {
        /// The root as given.
        path: String,
        /// What went wrong.
        why: String,
    },
    /// The working directory, the default root, cannot be resolved.
    #[error("the working directory cannot be resolved: {0}")]
    WorkingDirectory(String),
}

/// The directories path arguments must stay in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confinement {
    /// The roots, canonical. None: every path argument is refused.
    roots: Vec<PathBuf>,
    /// What a relative path is relative to: the working directory the CLI inherits.
    base: PathBuf,
}

impl Confinement {
    /// The roots `roots` (canonicalized; each must exist), or the working directory when
    /// `roots` is empty.
    pub fn new(roots: &[PathBuf]) -> Result<Confinement, ConfineError> {
        let cwd = std::env::current_dir()
            .and_then(|d| d.canonicalize())
            .map_err(|e| ConfineError::WorkingDirectory(e.to_string()))?;
        let roots = if roots.is_empty() {
            vec![cwd.clone()]
        } else {
            roots
                .iter()
                .map(|r| {
                    let full = cwd.join(r);
                    match full.canonicalize() {
                        Ok(c) if c.is_dir() => Ok(c),
                        Ok(_) => Err("not a directory".to_owned()),
                        Err(e) => Err(e.to_string()),
                    }
                    .map_err(|why| ConfineError::Root {
                        path: r.display().to_string(),
                        why,
                    })
                })
                .collect::<Result<Vec<PathBuf>, _>>()?
        };
        // A CLI run from outside every root would read its own defaults (an omitted path is
        // often `.`) outside them: then the CLI runs in the first root, and relative paths are
        // relative to it.
        let base = if roots.iter().any(|r| cwd.starts_with(r)) {
            cwd
        } else {
            roots[0].clone()
        };
        Ok(Confinement { roots, base })
    }

    /// The roots, canonical.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The working directory every CLI runs in, which relative paths are resolved against:
    /// the adapter's own, or the first root when that is outside every root.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// Where `value` leads once every symlink is followed, when that is inside a root; else
    /// why not. `-` (standard input or output) is no path and always allowed.
    pub fn resolve(&self, value: &str) -> Result<Option<PathBuf>, String> {
        if value == "-" {
            return Ok(None);
        }
        if value.is_empty() {
            return Err("an empty path names no file inside the roots".to_owned());
        }
        let full = self.base.join(value);
        let resolved = resolve_existing(&full)?;
        match self.roots.iter().find(|r| resolved.starts_with(r)) {
            Some(_) => Ok(Some(resolved)),
            None => Err(format!(
                "{} is outside the roots the server allows ({})",
                resolved.display(),
                self.roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// Refuses `arguments` when one of `paths` (the tool's path properties) leads outside the
    /// roots. A string is one path, an array of strings several; other values are the input
    /// schema's to refuse.
    pub fn check(&self, paths: &[String], arguments: &Map<String, Value>) -> Result<(), Refusal> {
        for name in paths {
            let values: Vec<&str> = match arguments.get(name) {
                Some(Value::String(s)) => vec![s.as_str()],
                Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
                _ => continue,
            };
            for value in values {
                self.resolve(value).map_err(|why| Refusal {
                    category: Category::Authz,
                    code: PATH_OUTSIDE_ROOTS,
                    message: format!("`{name}` is not allowed: {why}"),
                })?;
            }
        }
        Ok(())
    }
}

/// `path` canonicalized through its nearest existing ancestor: what exists is resolved by the
/// kernel (every symlink and `..`), and what does not exist yet is appended, with no `..` in
/// it (the kernel would resolve it after the fact, through what the CLI creates). An entry
/// that exists but cannot be resolved (a dangling symlink, a directory not searchable) is
/// refused: following it later could land anywhere.
fn resolve_existing(path: &Path) -> Result<PathBuf, String> {
    let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
    let mut at = path;
    loop {
        match std::fs::symlink_metadata(at) {
            Ok(_) => {
                let mut resolved = at
                    .canonicalize()
                    .map_err(|e| format!("{} cannot be resolved: {e}", at.display()))?;
                for part in missing.iter().rev() {
                    resolved.push(part);
                }
                return Ok(resolved);
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{} cannot be resolved: {e}", at.display())),
        }
        let Some(parent) = at.parent() else {
            return Err(format!("{} has no existing ancestor", path.display()));
        };
        match at.components().next_back() {
            Some(Component::Normal(name)) => missing.push(name),
            Some(Component::CurDir) => {}
            _ => {
                return Err(format!(
                    "{} climbs with `..` out of a directory that does not exist",
                    path.display()
                ))
            }
        }
        at = parent;
    }
}

/// One `--pin NAME=VALUE`: the argument `name` is `value` in every call that takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// The property, by its input-schema name (`db`, `dry_run`).
    pub name: String,
    /// The value as given.
    pub value: String,
}

impl std::str::FromStr for Pin {
    type Err = String;

    fn from_str(s: &str) -> Result<Pin, String> {
        match s.split_once('=') {
            Some((name, value)) if !name.is_empty() => Ok(Pin {
                name: name.to_owned(),
                value: value.to_owned(),
            }),
            _ => Err(format!("`{s}` is not NAME=VALUE")),
        }
    }
}

impl Pin {
    /// The pinned value as the JSON the property `schema` takes: a boolean, a number, one
    /// item of an array, else the string; a path made absolute against `base`, so it means
    /// the same file whatever directory a host starts the server in.
    pub fn typed(&self, schema: &Value, base: &Path) -> Result<Value, String> {
        let kind = schema.get("type").and_then(Value::as_str);
        let raw = &self.value;
        let bad = |what: &str| format!("--pin {}={raw}: `{}` takes {what}", self.name, self.name);
        let value = match kind {
            Some("boolean") => Value::Bool(raw.parse().map_err(|_| bad("true or false"))?),
            Some("integer") => Value::from(raw.parse::<i64>().map_err(|_| bad("an integer"))?),
            Some("number") => raw
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| bad("a number"))?,
            _ if marks_path(schema) && raw != "-" => Value::String(
                base.join(raw)
                    .components()
                    .collect::<PathBuf>()
                    .display()
                    .to_string(),
            ),
            _ => Value::String(raw.clone()),
        };
        let value = if kind == Some("array") {
            Value::Array(vec![value])
        } else {
            value
        };
        if let Ok(validator) = jsonschema::validator_for(schema) {
            if let Some(e) = validator.iter_errors(&value).next() {
                return Err(format!("--pin {}={raw}: {e}", self.name));
            }
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn clis_run_in_the_first_root_when_the_working_directory_is_outside_every_root() {
        let dir = scratch("base");
        let root = dir.join("root").canonicalize().unwrap();
        // The test runs in the crate's directory, outside the scratch root.
        let c = Confinement::new(std::slice::from_ref(&root)).unwrap();
        assert_eq!(c.base(), root);
        assert_eq!(c.resolve("notes.db").unwrap(), Some(root.join("notes.db")));
        // Inside a root, the working directory stays the base.
        let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
        let c = Confinement::new(&[cwd.clone(), root]).unwrap();
        assert_eq!(c.base(), cwd);
    }

    fn scratch(tag: &str) -> aoi_test::TempDir {
        let dir = aoi_test::temp_dir(&format!("mcp-confine-{tag}"));
        std::fs::create_dir_all(dir.join("root/sub")).unwrap();
        std::fs::create_dir_all(dir.join("outside")).unwrap();
        std::fs::write(dir.join("outside/secret"), "s").unwrap();
        std::fs::write(dir.join("root/notes.db"), "").unwrap();
        dir
    }

    fn confined(dir: &Path) -> Confinement {
        Confinement {
            roots: vec![dir.join("root")],
            base: dir.join("root"),
        }
    }

    #[test]
    fn paths_inside_the_roots_pass_and_new_files_resolve_through_their_parent() {
        let dir = scratch("inside");
        let c = confined(&dir);
        assert_eq!(
            c.resolve("notes.db").unwrap(),
            Some(dir.join("root/notes.db"))
        );
        assert_eq!(
            c.resolve("sub/new/deeper.db").unwrap(),
            Some(dir.join("root/sub/new/deeper.db")),
            "a file that does not exist yet"
        );
        assert_eq!(
            c.resolve("sub/../notes.db").unwrap(),
            Some(dir.join("root/notes.db")),
            "`..` that stays inside is fine"
        );
        assert_eq!(c.resolve("-").unwrap(), None, "stdin is no path");
    }

    #[test]
    fn escapes_by_absolute_path_dotdot_symlink_and_dangling_link_are_refused() {
        let dir = scratch("escape");
        let c = confined(&dir);
        let secret = dir.join("outside/secret");
        assert!(c.resolve(&secret.display().to_string()).is_err());
        assert!(c.resolve("../outside/secret").is_err());
        assert!(c.resolve("sub/../../outside/secret").is_err());
        assert!(
            c.resolve("nothing/../../outside/new").is_err(),
            "`..` out of a directory that does not exist"
        );
        std::os::unix::fs::symlink(dir.join("outside"), dir.join("root/link")).unwrap();
        assert!(c.resolve("link/secret").is_err(), "a symlink leading out");
        assert!(c.resolve("link/new-file").is_err(), "a new file through it");
        std::os::unix::fs::symlink(dir.join("outside/not-yet"), dir.join("root/dangling")).unwrap();
        assert!(c.resolve("dangling").is_err(), "a dangling symlink");
        assert!(c.resolve("").is_err());
        assert!(
            Confinement::default().resolve("anything").is_err(),
            "no roots, no paths"
        );
    }

    #[test]
    fn check_refuses_with_authz_and_looks_only_at_path_properties() {
        let dir = scratch("check");
        let c = confined(&dir);
        let paths = ["db".to_owned(), "files".to_owned()];
        let args = |v: Value| v.as_object().cloned().unwrap();
        assert!(c
            .check(
                &paths,
                &args(json!({"db": "notes.db", "title": "/etc/passwd"}))
            )
            .is_ok());
        let refusal = c
            .check(&paths, &args(json!({"files": ["notes.db", "/etc/passwd"]})))
            .unwrap_err();
        assert_eq!(refusal.category, Category::Authz);
        assert_eq!(refusal.code, PATH_OUTSIDE_ROOTS);
        assert!(refusal.message.contains("`files`"), "{}", refusal.message);
    }

    #[test]
    fn pins_are_typed_by_their_property_and_paths_made_absolute() {
        let pin = |s: &str| s.parse::<Pin>().unwrap();
        let base = Path::new("/srv/work");
        assert_eq!(
            pin("db=data/o.db")
                .typed(&json!({"type": "string", "x-aoi-format": "path"}), base)
                .unwrap(),
            json!("/srv/work/data/o.db")
        );
        assert_eq!(
            pin("dry_run=true")
                .typed(&json!({"type": "boolean"}), base)
                .unwrap(),
            json!(true)
        );
        assert_eq!(
            pin("limit=5")
                .typed(&json!({"type": "integer", "minimum": 0}), base)
                .unwrap(),
            json!(5)
        );
        assert!(pin("limit=-5")
            .typed(&json!({"type": "integer", "minimum": 0}), base)
            .is_err());
        assert!(pin("dry_run=yes")
            .typed(&json!({"type": "boolean"}), base)
            .is_err());
        assert!("novalue".parse::<Pin>().is_err());
        assert!("=x".parse::<Pin>().is_err());
        assert_eq!(pin("title=").value, "");
    }
}
