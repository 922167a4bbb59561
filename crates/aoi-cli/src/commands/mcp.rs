//! `aoi mcp`: Machine Mode CLIs as an MCP server over stdio.

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use aoi::{Category, Code, ErrorEvent};
use aoi_mcp::call::Bounds;
use aoi_mcp::catalog::absolute;
use std::sync::Arc;

use aoi_mcp::{Catalog, Filter, McpServer, ServerOptions};
use rmcp::ServiceExt;

use crate::cli::McpArgs;
use crate::exit::{CommandError, Mode};

/// The command's name, as `capabilities` says it.
pub const NAME: &str = "mcp";

/// `aoi mcp` cannot serve: said on stderr (stdout belongs to the MCP protocol), the
/// category's exit status.
fn fail(category: Category, code: &'static str, message: impl AsRef<str>) -> CommandError {
    Mode::Protocol.failed(
        NAME,
        ErrorEvent::new(category, Code::from_static(code), message),
    )
}

/// The CLIs to serve, each as its argv prefix.
fn clis(args: &McpArgs) -> Vec<Vec<OsString>> {
    if args.cli.is_empty() {
        args.tools.iter().map(|t| vec![t.clone()]).collect()
    } else {
        vec![args.cli.clone()]
    }
}

/// A configuration snippet for MCP hosts that read `mcpServers` (Claude Desktop, Cursor) —
/// VS Code's `servers` takes the same object.
///
/// The roots and pins are written out resolved (absolute, the working directory when no
/// `--root` was given), since a host starts the server in a directory of its own.
fn print_config(
    args: &McpArgs,
    catalog: &Catalog,
    catalog_names: &[String],
) -> Result<ExitCode, CommandError> {
    let aoi = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "aoi".into());
    let mut server_args = vec!["mcp".to_owned()];
    for root in catalog.confinement.roots() {
        server_args.extend(["--root".to_owned(), root.display().to_string()]);
    }
    for pin in &args.pins {
        let value = catalog
            .tools
            .iter()
            .find_map(|t| t.pins.get(&pin.name))
            .map(|v| match v {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Array(items) if items.len() == 1 => match &items[0] {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                },
                other => other.to_string(),
            })
            .unwrap_or_else(|| pin.value.clone());
        server_args.extend(["--pin".to_owned(), format!("{}={value}", pin.name)]);
    }
    for a in &args.allow {
        server_args.extend(["--allow".to_owned(), a.clone()]);
    }
    for e in &args.exclude {
        server_args.extend(["--exclude".to_owned(), e.clone()]);
    }
    let name = if args.cli.is_empty() {
        for t in &args.tools {
            server_args.extend(["--tool".to_owned(), absolute(t).display().to_string()]);
        }
        catalog_names.join("-")
    } else {
        server_args.push("--".to_owned());
        let mut cli = args.cli.iter();
        if let Some(program) = cli.next() {
            server_args.push(absolute(program).display().to_string());
        }
        server_args.extend(cli.map(|a| a.to_string_lossy().into_owned()));
        catalog_names.first().cloned().unwrap_or_default()
    };
    let snippet = serde_json::json!({
        "mcpServers": { name: { "command": aoi, "args": server_args } }
    });
    let mut text = serde_json::to_string_pretty(&snippet).unwrap_or_default();
    text.push('\n');
    crate::exit::write_stdout(Mode::Protocol, NAME, "the configuration", &text)?;
    Ok(ExitCode::SUCCESS)
}

/// The first of SIGTERM, SIGINT and SIGHUP, as its number; never, when they cannot be watched.
async fn stop_signal() -> Option<i32> {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => Some(15),
        _ = int.recv() => Some(2),
        _ = hup.recv() => Some(1),
    }
}

/// Runs `aoi mcp`.
pub fn run(args: McpArgs) -> Result<ExitCode, CommandError> {
    let clis = clis(&args);
    if clis.is_empty() {
        return Err(fail(
            Category::Usage,
            "USAGE",
            "say which CLI to serve: `aoi mcp -- TOOL` or `aoi mcp --tool TOOL`",
        ));
    }
    let filter = Filter {
        allow: args.allow.clone(),
        exclude: args.exclude.clone(),
    };
    let cache = if args.no_cache {
        None
    } else {
        aoi_mcp::catalog::default_cache_dir()
    };
    let mut catalog = Catalog::discover(&clis, &filter, cache.as_deref())
        .map_err(|e| fail(Category::Unavailable, "DISCOVERY_FAILED", e.to_string()))?;
    catalog
        .confine(&args.roots, &args.pins)
        .map_err(|e| fail(Category::Usage, "USAGE", e.to_string()))?;
    if args.print_config {
        let mut names: Vec<String> = catalog.tools.iter().map(|t| t.cli.name.clone()).collect();
        names.dedup();
        return print_config(&args, &catalog, &names);
    }
    let options = ServerOptions {
        bounds: Bounds {
            timeout: Duration::from_secs(args.timeout),
            max_output: args.max_output,
        },
        // Both transports write results from the CLI's own text (aoi_mcp::structured).
        spliced_results: true,
    };
    let listen = match args.listen.as_deref().map(aoi_mcp::http::parse_addr) {
        None => None,
        Some(Ok(addr)) => Some(addr),
        Some(Err(e)) => return Err(fail(Category::Usage, "USAGE", e)),
    };
    // Whatever ends this process (SIGKILL too), no call's processes outlive it.
    aoi_mcp::reap::start_watchdog(std::path::Path::new("/proc/self/exe"));
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return Err(fail(
                Category::Internal,
                "RUNTIME_FAILED",
                format!("cannot start: {e}"),
            ))
        }
    };
    // A CLI upgraded or rebuilt while the server runs is discovered again (the cache is keyed
    // by the same files, so it is not read for the new version), so its tools are current.
    let reload: aoi_mcp::server::Reload = {
        let (roots, pins) = (args.roots.clone(), args.pins.clone());
        let (clis, filter, cache) = (clis.clone(), filter.clone(), cache.clone());
        Arc::new(move || {
            let mut catalog =
                Catalog::discover(&clis, &filter, cache.as_deref()).map_err(|e| e.to_string())?;
            catalog.confine(&roots, &pins).map_err(|e| e.to_string())?;
            Ok(catalog)
        })
    };
    let server = McpServer::new(catalog, options).with_reload(reload);
    let served = runtime.block_on(async move {
        if let Some(addr) = listen {
            let (listener, bound) = aoi_mcp::http::bind(addr)
                .await
                .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
            if !bound.ip().is_loopback() {
                let _ = writeln!(
                    std::io::stderr(),
                    "aoi mcp: warning: {bound} is not a loopback address: anyone who can reach it can run these tools"
                );
            }
            let _ = writeln!(std::io::stderr(), "aoi mcp: listening on http://{bound}/mcp");
            let cancel = tokio_util::sync::CancellationToken::new();
            let stop = cancel.clone();
            // The signal it stopped on decides the exit status, as over stdio (128 + N).
            let stopped_by = tokio::spawn(async move {
                let signal = stop_signal().await;
                stop.cancel();
                signal
            });
            let http = aoi_mcp::http::HttpOptions {
                allow_origins: args.allow_origins.clone(),
            };
            aoi_mcp::http::serve(server, listener, http, cancel)
                .await
                .map_err(|e| e.to_string())?;
            return Ok(stopped_by.await.ok().flatten());
        }
        // The host closing stdin is a shutdown (MCP stdio): running calls are killed at
        // once rather than drained, so nothing they started outlives the session.
        aoi_mcp::reap::on_stdin_hangup(|| {
            aoi_mcp::reap::stop_all();
        });
        let service = server
            .serve(aoi_mcp::stdio::StdioTransport::stdio())
            .await
            .map_err(|e| e.to_string())?;
        // The host closing stdin ends the service; a signal ends it too. Either way every
        // call's CLI, and whatever it started, is killed before aoi mcp exits.
        let signal = tokio::select! {
            waited = service.waiting() => { waited.map_err(|e| e.to_string())?; None }
            signal = stop_signal() => signal,
        };
        Ok::<Option<i32>, String>(signal)
    });
    aoi_mcp::reap::stop_all();
    runtime.shutdown_timeout(Duration::from_secs(1));
    match served {
        Ok(None) => Ok(ExitCode::SUCCESS),
        Ok(Some(signal)) => Ok(ExitCode::from(128u8.saturating_add(signal as u8))),
        Err(e) => Err(fail(Category::Io, "SERVE_FAILED", e)),
    }
}
