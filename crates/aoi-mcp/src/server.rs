//! The MCP server: `tools/list` from the catalog, `tools/call` through [`crate::call`].

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use aoi::Category;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{json, Map, Value};

use crate::call::{self, Bounds, Invocation};
use crate::catalog::{Catalog, Fingerprint, ServedTool};
use crate::session_calls::SessionCalls;
use aoi::discover::argv::to_argv;

use crate::revision;
use rmcp::model::{CacheScope, CustomRequest, CustomResult, DiscoverResult, ProtocolVersion};

/// How the server runs calls.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServerOptions {
    /// Bounds of each call.
    pub bounds: Bounds,
    /// Results are held as the CLI's JSON texts and written from them by the transport
    /// ([`crate::structured`]): true only for transports that do, [`crate::stdio`] and
    /// [`crate::http`].
    pub spliced_results: bool,
}

/// Discovers the catalog again, when a CLI changed under a running server.
pub type Reload = Arc<dyn Fn() -> Result<Catalog, String> + Send + Sync>;

/// The MCP server over a [`Catalog`].
#[derive(Clone)]
pub struct McpServer {
    served: Arc<RwLock<Arc<Served>>>,
    reload: Option<Reload>,
    options: ServerOptions,
    /// The calls running in each Streamable HTTP session (shared by every session's clone).
    session_calls: Arc<SessionCalls>,
    /// The generation of the catalog this session has seen (its clients told of a newer one
    /// with `notifications/tools/list_changed`).
    seen: Arc<AtomicU64>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("options", &self.options)
            .field("reloads", &self.reload.is_some())
            .finish_non_exhaustive()
    }
}

/// The catalog served now, and its compiled schemas.
#[derive(Debug)]
pub struct Served {
    /// The tools.
    pub catalog: Catalog,
    /// Each tool's `inputSchema` and `outputSchema` compiled, on its first call (in catalog
    /// order): compiling a schema costs more than the rest of a call's own work.
    validators: Vec<Validators>,
    /// 0 for the catalog discovered at start, one more for each discovered since.
    pub generation: u64,
}

impl Served {
    fn new(catalog: Catalog, generation: u64) -> Served {
        let validators = catalog
            .tools
            .iter()
            .map(|_| Validators::default())
            .collect();
        Served {
            catalog,
            validators,
            generation,
        }
    }

    /// The compiled schemas of `tool`.
    fn validators(&self, tool: &ServedTool) -> Option<&Validators> {
        let index = self
            .catalog
            .tools
            .iter()
            .position(|t| t.tool.name == tool.tool.name)?;
        self.validators.get(index)
    }

    /// The compiled `outputSchema` of `tool`, compiled on its first call.
    fn output_validator(&self, tool: &ServedTool) -> Option<&jsonschema::Validator> {
        self.validators(tool)?
            .output
            .get_or_init(|| {
                let schema = tool.tool.output_schema.as_ref()?;
                jsonschema::validator_for(&Value::Object(schema.as_ref().clone())).ok()
            })
            .as_ref()
    }

    /// The compiled `inputSchema` of `tool`, compiled on its first call.
    fn input_validator(&self, tool: &ServedTool) -> Option<&jsonschema::Validator> {
        self.validators(tool)?
            .input
            .get_or_init(|| {
                jsonschema::validator_for(&Value::Object(tool.tool.input_schema.as_ref().clone()))
                    .ok()
            })
            .as_ref()
    }
}

impl McpServer {
    /// A server for `catalog`.
    pub fn new(catalog: Catalog, options: ServerOptions) -> McpServer {
        McpServer {
            served: Arc::new(RwLock::new(Arc::new(Served::new(catalog, 0)))),
            reload: None,
            options,
            session_calls: Arc::default(),
            seen: Arc::default(),
        }
    }

    /// The server, discovering its catalog again with `reload` whenever a file a CLI runs
    /// from changes ([`Catalog::changed`], checked at every request): the tools served are
    /// always those of the CLI as it is, and each session is sent
    /// `notifications/tools/list_changed` when they change.
    pub fn with_reload(mut self, reload: Reload) -> McpServer {
        self.reload = Some(reload);
        self
    }

    /// The server for a new session: the same catalog, a session of its own.
    pub fn for_session(&self) -> McpServer {
        let mut server = self.clone();
        server.seen = Arc::new(AtomicU64::new(self.current().generation));
        server
    }

    /// The calls running in each Streamable HTTP session, for the transport to end them with
    /// their session.
    pub fn session_calls(&self) -> Arc<SessionCalls> {
        self.session_calls.clone()
    }

    /// The catalog served now (discovered again first if a CLI changed).
    pub fn current(&self) -> Arc<Served> {
        let served = match self.served.read() {
            Ok(s) => Arc::clone(&s),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        };
        let Some(reload) = &self.reload else {
            return served;
        };
        if !served.catalog.changed() {
            return served;
        }
        let Ok(mut slot) = self.served.write() else {
            return served;
        };
        if !Arc::ptr_eq(&slot, &served) {
            // Another request discovered it first.
            return Arc::clone(&slot);
        }
        let next = match reload() {
            Ok(catalog) => Served::new(catalog, served.generation + 1),
            Err(why) => {
                // The old tools stay; the change is not tried again until the files change
                // once more.
                let _ = writeln!(
                    std::io::stderr(),
                    "aoi mcp: a CLI changed, and discovering it again failed (the tools stay as they were): {why}"
                );
                let mut catalog = served.catalog.clone();
                catalog.programs = catalog
                    .programs
                    .iter()
                    .map(|f| Fingerprint::of(f.path.clone()))
                    .collect();
                Served::new(catalog, served.generation)
            }
        };
        *slot = Arc::new(next);
        Arc::clone(&slot)
    }

    /// Tells this session's client that the tools changed, once per new catalog.
    async fn announce(&self, served: &Served, peer: &rmcp::Peer<RoleServer>) {
        if self.seen.fetch_max(served.generation, Ordering::AcqRel) < served.generation {
            let _ = peer.notify_tool_list_changed().await;
        }
    }
}

/// One tool's schemas, compiled once.
#[derive(Debug, Default)]
struct Validators {
    input: OnceLock<Option<jsonschema::Validator>>,
    output: OnceLock<Option<jsonschema::Validator>>,
}

/// The content of a result: a headline a model reads first, in its own text block, then the
/// serialized JSON of `structuredContent` (the same JSON), as the MCP specification
/// recommends for clients that ignore structured content.
fn result(headline: &str, structured: Value, is_error: bool) -> CallToolResult {
    let json = serde_json::to_string(&structured).unwrap_or_default();
    with_content(headline, json, structured, is_error)
}

fn with_content(headline: &str, json: String, structured: Value, is_error: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(headline), ContentBlock::text(json)];
    let mut result = if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = Some(structured);
    result
}

/// The result of a run: held for the transport to write from the CLI's own text when it
/// does, one JSON value otherwise.
fn run_result(outcome: call::CallOutcome, spliced: bool) -> CallToolResult {
    if spliced {
        let (structured, json) = crate::structured::hold(outcome.structured);
        return with_content(&outcome.headline, json, structured, outcome.is_error);
    }
    result(
        &outcome.headline,
        outcome.structured.into_value(),
        outcome.is_error,
    )
}

/// A call the adapter refuses before running anything (arguments that do not fit the
/// command): an error result the model can act on, not a protocol error it cannot see.
fn refused(tool: &ServedTool, message: String) -> CallToolResult {
    let error =
        crate::adapter_error::adapter_error(Category::Usage, "INVALID_ARGUMENTS", message.clone());
    result(
        &format!("{}: {message}", tool.tool.name),
        json!({"events": [], "summary": null, "adapter_error": error}),
        true,
    )
}

/// A call refused before the CLI runs, by its own category and code: a path outside the
/// roots (`authz`), a pinned or misplaced argument (`usage`).
fn refusal_result(tool: &ServedTool, refusal: crate::confine::Refusal) -> CallToolResult {
    let error = crate::adapter_error::adapter_error(
        refusal.category,
        refusal.code,
        refusal.message.clone(),
    );
    result(
        &format!("{}: {}", tool.tool.name, refusal.message),
        json!({"events": [], "summary": null, "adapter_error": error}),
        true,
    )
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        // A server that discovers a changed CLI again says so when its tools change.
        let capabilities = match self.reload {
            Some(_) => ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
            None => ServerCapabilities::builder().enable_tools().build(),
        };
        let mut info = ServerConfig::new(capabilities);
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
        let served = self.current();
        // The client is reading the new list: nothing to announce.
        self.seen.fetch_max(served.generation, Ordering::AcqRel);
        Ok(ListToolsResult::with_all_items(
            served
                .catalog
                .tools
                .iter()
                .map(|t| t.tool.clone())
                .collect(),
        )
        .with_ttl_ms(revision::LIST_TTL_MS)
        .with_cache_scope(CacheScope::Public))
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(revision::SERVED)
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, McpError> {
        let mut info = self.get_info();
        // 2026-07-28 (the revision that discovers) delivers list changes on
        // `subscriptions/listen`, which this server does not serve: it does not advertise them
        // there; a client reads the list again when its `ttlMs` is up.
        info.capabilities = ServerCapabilities::builder().enable_tools().build();
        Ok(
            DiscoverResult::from_server_info(revision::SERVED.to_vec(), info)
                .with_ttl_ms(revision::LIST_TTL_MS)
                .with_cache_scope(CacheScope::Public),
        )
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        Err(revision::unparsed_request(&request))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.current().catalog.get(name).map(|t| t.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let served = self.current();
        self.announce(&served, &context.peer).await;
        let Some(tool) = served.catalog.get(&request.name) else {
            return Err(McpError::invalid_params(
                format!("no tool called `{}`", request.name),
                None,
            ));
        };
        let mut arguments: Map<String, Value> = request.arguments.clone().unwrap_or_default();
        if let Some(validator) = served.input_validator(tool) {
            if let Some(e) = validator
                .iter_errors(&Value::Object(arguments.clone()))
                .next()
            {
                return Ok(refused(tool, format!("invalid arguments: {e}")).into());
            }
        }
        let stdin = match tool.admit(&served.catalog.confinement, &mut arguments) {
            Ok(stdin) => stdin,
            Err(refusal) => return Ok(refusal_result(tool, refusal).into()),
        };
        let (max_duration, max_events) = split_bounds(tool, &mut arguments);
        let keyed = keyed(tool, &arguments);
        let argv = match to_argv(&tool.input, &arguments, &tool.cli.machine_flag) {
            Ok(argv) => argv,
            Err(e) => return Ok(refused(tool, e.to_string()).into()),
        };
        // One task per call forwards its progress, in the order the CLI reported it.
        let token = context.meta.get_progress_token();
        let (sender, mut updates) = tokio::sync::mpsc::unbounded_channel::<call::ProgressUpdate>();
        let forwarder = token.map(|token| {
            let peer = context.peer.clone();
            tokio::spawn(async move {
                while let Some(update) = updates.recv().await {
                    let mut param = ProgressNotificationParam::new(token.clone(), update.progress);
                    param.total = update.total;
                    param.message = update.message;
                    if peer.notify_progress(param).await.is_err() {
                        break;
                    }
                }
            })
        });
        let progress = move |update: call::ProgressUpdate| {
            let _ = sender.send(update);
        };
        let invocation = Invocation {
            argv,
            stdin,
            keyed,
            max_duration,
            max_events,
            cwd: Some(served.catalog.confinement.base().to_path_buf()),
        };
        // Over Streamable HTTP the call also ends with its session (a DELETE).
        let session_call = context
            .extensions
            .get::<hyper::http::request::Parts>()
            .and_then(|parts| parts.headers.get(crate::http::SESSION_ID))
            .and_then(|id| id.to_str().ok())
            .map(|id| self.session_calls.begin(id, &context.ct));
        let cancel = session_call
            .as_ref()
            .map_or_else(|| context.ct.clone(), |c| c.token().clone());
        let outcome = call::run(
            tool,
            invocation,
            self.options.bounds,
            served.output_validator(tool),
            cancel,
            progress,
        )
        .await;
        drop(session_call);
        if let Some(forwarder) = forwarder {
            // Every notification goes out before the result; a peer that stopped reading does
            // not hold the result back for long.
            let _ = tokio::time::timeout(Duration::from_secs(5), forwarder).await;
        }
        // A cancelled request's answer is dropped by rmcp, unsent: nothing is held for it.
        let spliced = self.options.spliced_results && !context.ct.is_cancelled();
        Ok(run_result(outcome, spliced).into())
    }
}

/// The adapter's own bounds of an unbounded command (`max_duration_ms`, `max_events`), taken
/// out of `arguments`: they are not the CLI's flags.
fn split_bounds(
    tool: &ServedTool,
    arguments: &mut Map<String, Value>,
) -> (Option<Duration>, Option<u64>) {
    if !tool.entry.unbounded {
        return (None, None);
    }
    let duration = arguments
        .remove(crate::catalog::MAX_DURATION_MS)
        .and_then(|v| v.as_u64())
        .map(Duration::from_millis)
        .or(Some(crate::catalog::DEFAULT_MAX_DURATION));
    let events = arguments
        .remove(crate::catalog::MAX_EVENTS)
        .and_then(|v| v.as_u64());
    (duration, events)
}

/// True when the caller passed a non-empty value for the command's `--idempotency-key`.
fn keyed(tool: &ServedTool, arguments: &Map<String, Value>) -> bool {
    tool.entry.supports_idempotency_key
        && arguments.iter().any(|(name, value)| {
            tool.input
                .flag(name)
                .is_some_and(|f| f == "--idempotency-key")
                && value.as_str().is_some_and(|s| !s.is_empty())
        })
}
