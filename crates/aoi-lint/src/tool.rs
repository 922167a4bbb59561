//! The tool under test, as its own discovery describes it (§3, §16.2, §17).
//!
//! Discovery runs in a fresh sandbox with no credentials, no configuration and, where the
//! machine allows it, no network: exactly the conditions §3 promises discovery works under.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::sync::{Arc, Mutex, OnceLock};

use aoi::read::CompiledSchema;
use serde_json::Value;

use crate::config::Config;
use crate::manifest::{InputSchema, Manifest};
use crate::model::cut;
use crate::sandbox::{Invocation, Run, Sandbox, SandboxConfig};

/// Checks that `schema` is a valid JSON Schema (2020-12 unless it says otherwise).
pub fn check_schema_document(schema: &Value) -> Result<(), String> {
    if !schema.is_object() {
        return Err("the schema is not a JSON object".into());
    }
    jsonschema::meta::validate(schema)
        .map_err(|e| format!("not a valid JSON Schema: {}", cut(&e.to_string(), 200)))
}

/// One discovery document and how it was obtained.
#[derive(Debug, Clone)]
pub struct Discovered<T> {
    /// The run that printed it (none when it could not be started).
    pub run: Option<Run>,
    /// The document, or why there is none.
    pub value: Result<T, String>,
}

/// Everything lint knows about the tool before it exercises a command.
#[derive(Debug)]
pub struct Tool {
    /// The program, then the arguments that precede a command (e.g. an interpreter's script).
    pub argv: Vec<OsString>,
    /// Its name, from capabilities (else the program's file name).
    pub name: String,
    /// `capabilities --output json`.
    pub capabilities: Discovered<Manifest>,
    /// `schema --output json`.
    pub schema: Discovered<Value>,
    /// That schema compiled, once, for every stream lint verifies.
    pub compiled: Option<CompiledSchema>,
    /// `input-schema --command NAME --output json`, per command.
    pub input_schemas: BTreeMap<String, Discovered<InputSchema>>,
    /// The flag forms §3 allows (`--capabilities`, `--schema`) that exist: each that printed
    /// one JSON document, with the subcommand it must agree with.
    pub discovery_flags: Vec<DiscoveryFlag>,
    /// `TOOL --version` (§16.1 SHOULD), run once.
    pub version: Option<Run>,
    /// The configuration file's settings (defaults without one).
    pub config: Config,
    /// How each sandbox is made.
    pub sandbox: SandboxConfig,
    /// Sandboxes with setup done, by the command whose own setup they include (`""` for the
    /// global setup alone): made once, then copied for every probe.
    pub templates: Templates,
    /// `schema --schema-version V --output json` compiled, per version other than the
    /// default, made on first use.
    pub versioned: Versioned,
}

/// A discovery flag that answered (§3: "Equivalent flags MAY exist").
#[derive(Debug, Clone)]
pub struct DiscoveryFlag {
    /// `--capabilities` or `--schema`.
    pub flag: &'static str,
    /// The subcommand it stands for: `capabilities` or `schema`.
    pub subcommand: &'static str,
    /// The run, which exited 0.
    pub run: Run,
    /// What it printed.
    pub document: Value,
}

/// Schemas of other versions, fetched on first use.
pub type Versioned = Mutex<HashMap<String, Arc<OnceLock<Result<Arc<CompiledSchema>, SchemaOf>>>>>;

/// Why another version's schema is not there.
#[derive(Debug, Clone)]
pub enum SchemaOf {
    /// `schema --schema-version V` failed or printed no schema: the version is not served.
    NotServed(String),
    /// It printed one that does not compile offline (a remote `$ref`): discovery's failure.
    Unusable(String),
}

/// Set-up sandboxes, made on first use.
pub type Templates = Mutex<HashMap<String, Arc<OnceLock<Result<Sandbox, String>>>>>;

impl Tool {
    /// An invocation of the tool with `args` after its own argv, with the config's
    /// environment.
    pub fn invocation<S: Into<OsString>>(&self, args: impl IntoIterator<Item = S>) -> Invocation {
        let mut argv = self.argv.iter().skip(1).cloned().collect::<Vec<_>>();
        argv.extend(args.into_iter().map(Into::into));
        let mut inv = Invocation::new(self.argv[0].clone(), argv);
        for (k, v) in &self.config.env {
            inv = inv.env(k, v);
        }
        inv
    }

    /// Runs discovery: capabilities, schema, and the input schema of every command
    /// capabilities lists, each with the network unreachable where possible.
    pub fn discover(argv: Vec<OsString>, config: Config, sandbox: SandboxConfig) -> Tool {
        let fallback_name = argv
            .first()
            .map(|p| {
                std::path::Path::new(p)
                    .file_name()
                    .unwrap_or(p)
                    .to_string_lossy()
                    .into_owned()
            })
            .unwrap_or_default();
        let mut tool = Tool {
            argv,
            name: fallback_name,
            capabilities: Discovered {
                run: None,
                value: Err("not run".into()),
            },
            schema: Discovered {
                run: None,
                value: Err("not run".into()),
            },
            compiled: None,
            input_schemas: BTreeMap::new(),
            discovery_flags: Vec::new(),
            version: None,
            config,
            sandbox,
            templates: Mutex::new(HashMap::new()),
            versioned: Mutex::new(HashMap::new()),
        };
        tool.capabilities = tool.discover_json(&["capabilities", "--output", "json"], |v| {
            serde_json::from_value::<Manifest>(v).map_err(|e| format!("not a §17 manifest: {e}"))
        });
        tool.schema = tool.discover_json(&["schema", "--output", "json"], |v| {
            check_schema_document(&v).map(|()| v)
        });
        // A schema that does not compile here, offline (a remote `$ref`), is a discovery
        // failure (§3.2): check 1 fails and check 4 cannot run, never passes by default.
        if let Ok(schema) = &tool.schema.value {
            match CompiledSchema::new(schema) {
                Ok(compiled) => tool.compiled = Some(compiled),
                Err(e) => {
                    tool.schema.value = Err(format!(
                        "the schema does not compile offline (every $ref must resolve inside the document): {e}"
                    ))
                }
            }
        }
        tool.discovery_flags = tool.discovery_flags();
        tool.version = tool.discover_json(&["--version"], Ok).run;
        if let Ok(manifest) = &tool.capabilities.value {
            if !manifest.tool.is_empty() {
                tool.name = manifest.tool.clone();
            }
            let entries: Vec<_> = manifest
                .commands
                .iter()
                .filter(|c| !c.is_discovery())
                .cloned()
                .collect();
            for entry in entries {
                let found = tool.discover_json(
                    &["input-schema", "--command", &entry.name, "--output", "json"],
                    |v| check_schema_document(&v).map(|()| InputSchema::for_command(v, &entry)),
                );
                tool.input_schemas.insert(entry.name, found);
            }
        }
        tool
    }

    /// The first command capabilities lists that is not a discovery command: where lint
    /// reports what concerns the whole tool, once.
    pub fn first_command(&self) -> Option<&str> {
        let manifest = self.capabilities.value.as_ref().ok()?;
        manifest
            .commands
            .iter()
            .find(|c| !c.is_discovery())
            .map(|c| c.name.as_str())
    }

    /// `--capabilities` and `--schema`, where the subcommand answered: those that exit 0 with
    /// one JSON document exist (a tool without them refuses them as usage errors).
    fn discovery_flags(&self) -> Vec<DiscoveryFlag> {
        let answered = [
            (
                "--capabilities",
                "capabilities",
                self.capabilities.value.is_ok(),
            ),
            ("--schema", "schema", self.schema.value.is_ok()),
        ];
        let mut found = Vec::new();
        for (flag, subcommand, ok) in answered {
            if !ok {
                continue;
            }
            let found_doc = self.discover_json(&[flag], Ok);
            if let (Some(run), Ok(document)) = (found_doc.run, found_doc.value) {
                found.push(DiscoveryFlag {
                    flag,
                    subcommand,
                    run,
                    document,
                });
            }
        }
        found
    }

    /// Runs one discovery command in a fresh sandbox without network and parses its stdout
    /// as one JSON document.
    fn discover_json<T>(
        &self,
        args: &[&str],
        parse: impl FnOnce(Value) -> Result<T, String>,
    ) -> Discovered<T> {
        let inv = self.invocation(args.iter().copied()).isolated_network();
        let run = match Sandbox::new(&self.sandbox).and_then(|s| s.run(&inv)) {
            Ok(run) => run,
            Err(e) => {
                return Discovered {
                    run: None,
                    value: Err(format!("could not run `{}`: {e}", args.join(" "))),
                }
            }
        };
        let value = if run.timed_out {
            Err(format!("`{}` did not finish in time", args.join(" ")))
        } else if run.exit.code() != Some(0) {
            Err(format!(
                "`{}` exited with status {}",
                args.join(" "),
                run.exit.shell_status()
            ))
        } else {
            serde_json::from_slice::<Value>(&run.stdout)
                .map_err(|e| format!("`{}` did not print one JSON document: {e}", args.join(" ")))
                .and_then(parse)
        };
        Discovered {
            run: Some(run),
            value,
        }
    }

    /// The arguments that select the tool's machine mode (`--output jsonl` unless its
    /// manifest says otherwise).
    pub fn machine_args(&self) -> Vec<String> {
        self.manifest().map_or_else(
            || vec!["--output".to_owned(), "jsonl".to_owned()],
            aoi::discover::manifest::Manifest::machine_args,
        )
    }

    /// The manifest, when capabilities worked.
    pub fn manifest(&self) -> Option<&Manifest> {
        self.capabilities.value.as_ref().ok()
    }

    /// The input schema of `command`, when discovery gave one.
    pub fn input_schema(&self, command: &str) -> Option<&InputSchema> {
        self.input_schemas.get(command)?.value.as_ref().ok()
    }

    /// The event schema of `version`, as `schema --schema-version VERSION --output json`
    /// prints it (§5, §19.2), compiled offline; fetched once.
    pub fn schema_of(&self, version: &str) -> Result<Arc<CompiledSchema>, SchemaOf> {
        let slot = match self.versioned.lock() {
            Ok(mut map) => Arc::clone(map.entry(version.to_owned()).or_default()),
            Err(_) => {
                return Err(SchemaOf::Unusable(
                    "the versioned schemas could not be shared".into(),
                ))
            }
        };
        slot.get_or_init(|| {
            let found = self.discover_json(
                &["schema", "--schema-version", version, "--output", "json"],
                |v| check_schema_document(&v).map(|()| v),
            );
            let schema = found.value.map_err(SchemaOf::NotServed)?;
            CompiledSchema::new(&schema).map(Arc::new).map_err(|e| {
                SchemaOf::Unusable(format!(
                    "the schema of version {version} does not compile offline: {e}"
                ))
            })
        })
        .clone()
    }

    /// The schema versions the tool serves, default first.
    pub fn schema_versions(&self) -> Vec<String> {
        let Some(entry) = self.manifest().and_then(|m| m.schemas.first()) else {
            return Vec::new();
        };
        let mut versions: Vec<String> = entry.default.iter().cloned().collect();
        for v in &entry.versions {
            if !versions.contains(v) {
                versions.push(v.clone());
            }
        }
        versions
    }
}
