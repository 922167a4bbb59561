//! Real MCP clients that no one here wrote, installed by the tests themselves from the package
//! registries: the official Python SDK (`mcp` from PyPI, in a venv), the MCP Inspector CLI
//! (`@modelcontextprotocol/inspector` from npm, in a local prefix) and, for
//! [`crate::mcp_protocol`], the official TypeScript SDK, v1 and v2, with Ajv on Node.js 22 (all
//! from npm, in a local prefix of their own: [`ts_client`], [`ts_client_v2`]).
//!
//! Installed once per test process (a `OnceLock`) and cached across runs under
//! `target/mcp-clients/`, in a directory named after the pinned versions so a new pin installs
//! afresh. An exclusive `flock` on `target/mcp-clients/.lock` keeps parallel test binaries from
//! installing twice; a `.complete` marker, written last, says an install finished.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The Python SDK, pinned: the version these tests were written and checked against.
pub const PYTHON_MCP: &str = "mcp==2.3.0";
/// Validates `structuredContent` against `outputSchema` in the Python client.
pub const PYTHON_JSONSCHEMA: &str = "jsonschema==4.26.0";
/// The MCP Inspector, pinned (0.21.1 runs on Node.js 20; its CLI mode is `--cli`).
pub const INSPECTOR: &str = "@modelcontextprotocol/inspector@0.21.1";

/// The TypeScript SDK v1, pinned (its `Client` validates structuredContent with Ajv).
pub const TS_SDK: &str = "@modelcontextprotocol/sdk@1.32.2";
/// The TypeScript SDK v2's client package, pinned: split from the server, and able to speak
/// 2026-07-28 (`server/discover`, per-request `_meta`) when its negotiation asks for it.
pub const TS_SDK_V2: &str = "@modelcontextprotocol/client@2.4.0";
/// The Ajv that `tests/data/mcp/ts/client.mjs` validates results with, and its formats.
pub const AJV: &str = "ajv@8.20.0";
/// Ajv's standard formats (`date-time`, `uri`, ...), as the SDK adds them.
pub const AJV_FORMATS: &str = "ajv-formats@3.0.1";
/// Node.js itself, from npm (the `node` package ships the binary): the conformance suite needs
/// 22 or newer, more than Debian's `nodejs` gives.
pub const NODE: &str = "node@22.23.3";

/// What a test runs.
#[derive(Debug)]
pub struct McpClients {
    /// The venv's Python, with `mcp` and `jsonschema` installed.
    pub python: PathBuf,
    /// The Inspector's `mcp-inspector` launcher.
    pub inspector: PathBuf,
}

/// The clients, installed on first use.
pub fn mcp_clients() -> &'static McpClients {
    static CLIENTS: OnceLock<McpClients> = OnceLock::new();
    CLIENTS.get_or_init(|| {
        let root = target_dir().join("mcp-clients");
        fs::create_dir_all(&root).expect("create target/mcp-clients");
        let lock = File::create(root.join(".lock")).expect("create target/mcp-clients/.lock");
        // Held until this function returns; released by the kernel if the process dies.
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
            .expect("lock target/mcp-clients/.lock");
        let key = |s: &str| s.replace(['@', '/', '='], "-");
        let venv = root.join(format!("py-{}-{}", key(PYTHON_MCP), key(PYTHON_JSONSCHEMA)));
        let node = root.join(format!("node-{}", key(INSPECTOR).trim_start_matches('-')));
        let (py, js) = std::thread::scope(|s| {
            let py = s.spawn(|| cached(&venv, install_python));
            let js = s.spawn(|| cached(&node, install_inspector));
            (py.join(), js.join())
        });
        if let Err(e) = py.expect("python install thread") {
            panic!("{e}");
        }
        if let Err(e) = js.expect("inspector install thread") {
            panic!("{e}");
        }
        drop(lock);
        McpClients {
            python: venv.join("bin").join("python"),
            inspector: node.join("node_modules").join(".bin").join("mcp-inspector"),
        }
    })
}

/// The TypeScript SDK client: Node.js 22 and the `node_modules` that
/// `tests/data/mcp/ts/client.mjs` loads the SDK and Ajv from (`AOI_TS_MODULES`).
#[derive(Debug)]
pub struct TsClient {
    /// Node.js 22, from npm.
    pub node: PathBuf,
    /// The `node_modules` directory with the SDK, Ajv and ajv-formats.
    pub modules: PathBuf,
    /// The SDK's major version, for `AOI_TS_SDK`: `"1"` or `"2"`.
    pub major: &'static str,
}

/// The TypeScript client on SDK v1, installed on first use.
pub fn ts_client() -> &'static TsClient {
    static CLIENT: OnceLock<TsClient> = OnceLock::new();
    CLIENT.get_or_init(|| ts_install(TS_SDK, "1"))
}

/// The TypeScript client on SDK v2, installed on first use.
pub fn ts_client_v2() -> &'static TsClient {
    static CLIENT: OnceLock<TsClient> = OnceLock::new();
    CLIENT.get_or_init(|| ts_install(TS_SDK_V2, "2"))
}

fn ts_install(sdk: &str, major: &'static str) -> TsClient {
    let prefix = npm_cached(&[NODE, sdk, AJV, AJV_FORMATS]);
    TsClient {
        node: prefix.join("node_modules").join(".bin").join("node"),
        modules: prefix.join("node_modules"),
        major,
    }
}

/// `packages` installed by npm into a prefix under `target/mcp-clients/` named after them,
/// once (flock'd, with a `.complete` marker): the prefix.
pub fn npm_cached(packages: &[&str]) -> PathBuf {
    let root = target_dir().join("mcp-clients");
    fs::create_dir_all(&root).expect("create target/mcp-clients");
    let lock = File::create(root.join(".lock")).expect("create target/mcp-clients/.lock");
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
        .expect("lock target/mcp-clients/.lock");
    let name: Vec<String> = packages
        .iter()
        .map(|p| p.trim_start_matches('@').replace(['@', '/', '='], "-"))
        .collect();
    let prefix = root.join(format!("npm-{}", name.join("+")));
    let marker = prefix.join(".complete");
    if !marker.exists() {
        let _ = fs::remove_dir_all(&prefix);
        fs::create_dir_all(&prefix).expect("create the npm prefix");
        let installed = run(
            &format!("npm install {}", packages.join(" ")),
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
                .arg("--prefix")
                .arg(&prefix)
                .args(packages),
        );
        if let Err(e) = installed {
            panic!("{e}");
        }
        fs::write(&marker, "").expect("write the .complete marker");
    }
    drop(lock);
    prefix
}

/// `target/`: `CARGO_TARGET_DIR`, or three levels above this test binary
/// (`target/<profile>/deps/it-…`).
fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("the test binary knows its own path");
    exe.ancestors()
        .nth(3)
        .expect("test binaries live in target/<profile>/deps")
        .to_path_buf()
}

/// Runs `install` into `dir` unless an earlier run completed it.
fn cached(dir: &Path, install: fn(&Path) -> Result<(), String>) -> Result<(), String> {
    let marker = dir.join(".complete");
    if marker.exists() {
        return Ok(());
    }
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    install(dir)?;
    fs::write(&marker, "").map_err(|e| format!("write {}: {e}", marker.display()))
}

const NEEDS: &str = "the MCP client tests install real MCP clients from PyPI and npm, so they need \
python3 with venv and pip (Debian: apt-get install python3 python3-venv) and Node.js 20 or newer with \
npm (Debian: apt-get install nodejs npm, or NodeSource)";

fn run(what: &str, command: &mut Command) -> Result<(), String> {
    let out = command.output().map_err(|e| {
        format!(
            "{what}: cannot run {:?}: {e}\n{NEEDS}",
            command.get_program()
        )
    })?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed ({}):\n{}{}\n{NEEDS}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

fn install_python(venv: &Path) -> Result<(), String> {
    run(
        "python3 -m venv",
        Command::new("python3").arg("-m").arg("venv").arg(venv),
    )?;
    run(
        &format!("pip install {PYTHON_MCP} {PYTHON_JSONSCHEMA}"),
        Command::new(venv.join("bin").join("python")).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-input",
            PYTHON_MCP,
            PYTHON_JSONSCHEMA,
        ]),
    )
}

fn install_inspector(prefix: &Path) -> Result<(), String> {
    run(
        &format!("npm install {INSPECTOR}"),
        Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
            .arg("--prefix")
            .arg(prefix)
            .arg(INSPECTOR),
    )
}

/// What a client printed, as JSON, after checking that it succeeded (`what` names it in the
/// failure message).
pub fn client_json(out: &std::process::Output, what: &str) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        let text = String::from_utf8_lossy(&out.stdout);
        panic!(
            "{what} printed no JSON ({e}), {} bytes:\n{}",
            text.len(),
            text.chars().take(2000).collect::<String>()
        )
    })
}

/// Runs the Python SDK client driver (`tests/data/mcp/client.py`) with `scenario` and
/// `config` (its `command`, `env`, `cwd`, …); returns what it printed.
pub fn python_client(scenario: &str, config: &serde_json::Value) -> serde_json::Value {
    let out = Command::new(&mcp_clients().python)
        .arg(crate::mcp::data("client.py"))
        .arg(scenario)
        .arg(config.to_string())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("the Python client runs");
    client_json(&out, &format!("client.py {scenario}"))
}
