//! The first phase of a call: the CLI spawned in machine mode, in its own process group,
//! marked for the sweep that ends the call, its stdin fed beside the reading of its stdout.

use std::process::Stdio;

use aoi::Category;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStderr, ChildStdout, Command};

use super::{object, CallOutcome, Invocation};
use crate::adapter_error::adapter_error;
use crate::catalog::ServedTool;
use crate::reap::{CallProcesses, MARKER};
use crate::structured::Structured;

/// A CLI that is running, with what the call reads of it and what ends it.
pub(super) struct Started {
    pub(super) child: Child,
    pub(super) processes: CallProcesses,
    pub(super) stdout: ChildStdout,
    pub(super) stderr: ChildStderr,
}

/// Spawns `tool`'s CLI with `invocation` (whose stdin it takes); `Err` is the call's result
/// when it could not start.
pub(super) fn start(
    tool: &ServedTool,
    invocation: &mut Invocation,
) -> Result<Started, CallOutcome> {
    let cli = &tool.cli;
    let Some(mut processes) = CallProcesses::new() else {
        return Err(not_started(tool, "the adapter is stopping".into()));
    };
    let mut command = Command::new(cli.argv.first().cloned().unwrap_or_default());
    command
        .args(&cli.argv[1.min(cli.argv.len())..])
        .args(tool.entry.words())
        .args(&invocation.argv)
        .env(MARKER, processes.marker())
        .stdin(if invocation.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = &invocation.cwd {
        command.current_dir(cwd);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return Err(not_started(tool, format!("cannot run {}: {e}", cli.name))),
    };
    if !processes.started(child.id().unwrap_or_default()) {
        return Err(not_started(tool, "the adapter is stopping".into()));
    }
    if let (Some(bytes), Some(mut input)) = (invocation.stdin.take(), child.stdin.take()) {
        // Written beside the reading of stdout, so a CLI that writes before it has read
        // everything cannot deadlock; one that exits unread is a broken pipe, ignored. The
        // task ends when the pipe does: the CLI's group is killed at the end of the call.
        tokio::spawn(async move {
            let _ = input.write_all(&bytes).await;
        });
    }
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(not_started(tool, "the CLI's pipes were not opened".into()));
    };
    Ok(Started {
        child,
        processes,
        stdout,
        stderr,
    })
}

/// The result of a call whose CLI could not be run.
fn not_started(tool: &ServedTool, message: String) -> CallOutcome {
    let error = adapter_error(Category::Unavailable, "CLI_NOT_RUNNABLE", &message);
    CallOutcome {
        structured: Structured::without_events(object(
            json!({"summary": null, "adapter_error": error}),
        )),
        is_error: true,
        headline: format!("{} {}: {message}", tool.cli.name, tool.entry.name),
    }
}
