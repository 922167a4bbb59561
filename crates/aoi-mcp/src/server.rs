//! The MCP server: `tools/list` from the catalog, `tools/call` through [`crate::call`].

use std::sync::Arc;

use aoi::Category;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{json, Map, Value};

use crate::call::{self, Bounds};
use crate::catalog::{Catalog, ServedTool};
use aoi::discover::argv::to_argv;

/// How the server runs calls.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServerOptions {
    /// Bounds of each call.
    pub bounds: Bounds,
}

/// The MCP server over a [`Catalog`].
#[derive(Debug, Clone)]
pub struct McpServer {
    catalog: Arc<Catalog>,
    options: ServerOptions,
}

impl McpServer {
    /// A server for `catalog`.
    pub fn new(catalog: Catalog, options: ServerOptions) -> McpServer {
        McpServer {
            catalog: Arc::new(catalog),
            options,
        }
    }

    /// The catalog served.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }
}

/// The text block and structured content of a result: the same JSON in both, after a
/// headline a model reads first.
fn result(headline: &str, structured: Value, is_error: bool) -> CallToolResult {
    let text = format!(
        "{headline}\n{}",
        serde_json::to_string(&structured).unwrap_or_default()
    );
    let mut result = if is_error {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    result.structured_content = Some(structured);
    result
}

/// A call the adapter refuses before running anything (arguments that do not fit the
/// command): an error result the model can act on, not a protocol error it cannot see.
fn refused(tool: &ServedTool, message: String) -> CallToolResult {
    let error = call::adapter_error(Category::Usage, "INVALID_ARGUMENTS", message.clone());
    result(
        &format!("{}: {message}", tool.tool.name),
        json!({"events": [], "summary": null, "adapter_error": error}),
        true,
    )
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("aoi-mcp", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "Each tool runs one command of a Machine Mode CLI and returns its typed events and its summary. \
             ok:false results carry the CLI's own error with category and retryable; a destructive tool never runs without confirm."
                .into(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(
            self.catalog.tools.iter().map(|t| t.tool.clone()).collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.catalog.get(name).map(|t| t.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(tool) = self.catalog.get(&request.name) else {
            return Err(McpError::invalid_params(
                format!("no tool called `{}`", request.name),
                None,
            ));
        };
        let mut arguments: Map<String, Value> = request.arguments.clone().unwrap_or_default();
        if let Ok(validator) =
            jsonschema::validator_for(&Value::Object(tool.tool.input_schema.as_ref().clone()))
        {
            if let Some(e) = validator
                .iter_errors(&Value::Object(arguments.clone()))
                .next()
            {
                return Ok(refused(tool, format!("invalid arguments: {e}")).into());
            }
        }
        let stdin = tool.split_records(&mut arguments);
        let argv = match to_argv(&tool.input, &arguments, &tool.cli.machine_flag) {
            Ok(argv) => argv,
            Err(e) => return Ok(refused(tool, e.to_string()).into()),
        };
        let token = context.meta.get_progress_token();
        let peer = context.peer.clone();
        let progress = move |update: call::ProgressUpdate| {
            if let Some(token) = token.clone() {
                let peer = peer.clone();
                let mut param = ProgressNotificationParam::new(token, update.progress);
                param.total = update.total;
                param.message = update.message;
                tokio::spawn(async move {
                    let _ = peer.notify_progress(param).await;
                });
            }
        };
        let outcome = call::run(
            tool,
            argv,
            stdin,
            self.options.bounds,
            context.ct.clone(),
            progress,
        )
        .await;
        Ok(result(&outcome.headline, outcome.structured, outcome.is_error).into())
    }
}
