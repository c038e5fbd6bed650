//! MCP servers: one session's servers, started concurrently each within its
//! start-up time limit, their tools offered to the model as
//! `mcp__<server>__<tool>`, and their calls made. The agent decides whether
//! a call may be made (approval, rules, the journal's save points); this
//! room only starts, lists, calls and stops. Every change of a server's
//! state is reported ([`McpStatus`]): a server that fails to start, exits
//! or times out is never dropped silently.

pub mod client;
pub mod config;
pub mod http;
pub mod process;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::journal::record::ToolStatus;
pub use config::{McpServerConfig, McpTransport};

/// The prefix of every MCP tool's offered name.
pub const TOOL_PREFIX: &str = "mcp__";
/// The longest tool name the model services take (`^[a-zA-Z0-9_-]{1,64}$`).
pub const MAX_TOOL_NAME: usize = 64;
/// The most of one tool's input schema offered to the model (serialised).
pub const MAX_SCHEMA_BYTES: usize = 32 * 1024;
/// The most of one tool's description offered to the model.
pub const MAX_DESCRIPTION_BYTES: usize = 4 * 1024;
/// The most tools one server may offer; the rest are left out (and logged).
pub const MAX_TOOLS_PER_SERVER: usize = 128;

/// A server's state, as clients are told it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpState {
    Starting,
    /// Answering; `tools` are the names its tools are offered under.
    Ready {
        tools: Vec<String>,
    },
    /// It never became ready: its tools are missing.
    Failed {
        reason: String,
    },
    /// It was ready and its connection ended: its tools are missing.
    Exited {
        reason: String,
    },
}

impl McpState {
    pub fn as_str(&self) -> &'static str {
        match self {
            McpState::Starting => "starting",
            McpState::Ready { .. } => "ready",
            McpState::Failed { .. } => "failed",
            McpState::Exited { .. } => "exited",
        }
    }
}

/// One server's state change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpStatus {
    pub server: String,
    pub state: McpState,
}

/// A tool as the model is offered it and the approval shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferedTool {
    /// `mcp__<server>__<tool>`, sanitised and made unique.
    pub offered: String,
    pub server: String,
    pub tool: String,
    /// The server's annotations (`readOnlyHint`…), shown, never trusted.
    pub annotations: Option<Value>,
    definition: Value,
}

/// What a call's outcome is, for its `tool_result`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallOutcome {
    pub status: ToolStatus,
    pub output: String,
}

struct Slot {
    config: McpServerConfig,
    state: McpState,
    connection: Option<Arc<client::Connection>>,
    tools: Vec<rmcp::model::Tool>,
    /// Counts starts: what an older connection reports is ignored.
    generation: u64,
}

type Notifier = Arc<dyn Fn(McpStatus) + Send + Sync>;

/// How much longer than the longest start-up limit a turn waits for
/// servers still starting (a start that was never begun, say).
const SETTLE_MARGIN: Duration = Duration::from_secs(1);

/// How long after `notifications/tools/list_changed` the tools are listed
/// again.
const LIST_CHANGED_DEBOUNCE: Duration = Duration::from_millis(100);

struct State {
    slots: BTreeMap<String, Slot>,
    offered: Arc<Vec<OfferedTool>>,
    /// `offered`'s definitions, shared with every request body.
    definitions: Arc<Vec<Value>>,
}

/// One session's MCP servers. Cheap to clone.
#[derive(Clone)]
pub struct McpManager {
    state: Arc<Mutex<State>>,
    supervisor: PathBuf,
    notify: Arc<Mutex<Option<Notifier>>>,
    output_limit: usize,
    /// Where a stdio server without a `cwd` runs: the session's directory.
    workspace: Arc<Mutex<Option<PathBuf>>>,
    /// Woken at every state change, for [`McpManager::settled`].
    changed: Arc<tokio::sync::Notify>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl McpManager {
    /// Servers not yet started: [`McpManager::start_all`] starts them.
    pub fn new(servers: Vec<McpServerConfig>, supervisor: PathBuf) -> McpManager {
        let slots = servers
            .into_iter()
            .map(|config| {
                let slot = Slot {
                    state: McpState::Starting,
                    connection: None,
                    tools: Vec::new(),
                    generation: 0,
                    config: config.clone(),
                };
                (config.name, slot)
            })
            .collect();
        McpManager {
            state: Arc::new(Mutex::new(State {
                slots,
                offered: Arc::new(Vec::new()),
                definitions: Arc::new(Vec::new()),
            })),
            supervisor,
            notify: Arc::new(Mutex::new(None)),
            output_limit: crate::bash::DEFAULT_OUTPUT_LIMIT,
            workspace: Arc::new(Mutex::new(None)),
            changed: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Resolves once no server is `starting` and none said its tools
    /// changed without their being listed again: each ends ready or failed
    /// within its own start-up limit, so a turn's first request waits for
    /// the slowest start and no longer (an editor that passes `mcpServers`
    /// and prompts at once still offers their tools), and a request after
    /// a call that changed a server's tools offers the new set. Bounded by
    /// the longest start-up limit and a margin, whatever a server does.
    pub async fn settled(&self) {
        let limit = {
            let state = lock(&self.state);
            state.slots.values().map(|s| s.config.startup_timeout).max().unwrap_or_default()
        } + SETTLE_MARGIN;
        let waiting = async {
            loop {
                let changed = self.changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                let busy = lock(&self.state).slots.values().any(|s| {
                    matches!(s.state, McpState::Starting) || s.connection.as_ref().is_some_and(|c| c.changes.behind())
                });
                if !busy {
                    return;
                }
                changed.await;
            }
        };
        if tokio::time::timeout(limit, waiting).await.is_err() {
            tracing::warn!("MCP servers still starting after {} s; the turn goes on without them", limit.as_secs_f64());
        }
    }

    pub fn is_empty(&self) -> bool {
        lock(&self.state).slots.is_empty()
    }

    /// The directory stdio servers without a `cwd` of their own run in.
    pub fn set_workspace(&self, dir: PathBuf) {
        *lock(&self.workspace) = Some(dir);
    }

    /// Where state changes are reported.
    pub fn set_notifier(&self, notify: impl Fn(McpStatus) + Send + Sync + 'static) {
        *lock(&self.notify) = Some(Arc::new(notify));
    }

    fn report(&self, status: McpStatus) {
        self.changed.notify_waiters();
        match &status.state {
            McpState::Failed { reason } | McpState::Exited { reason } => {
                tracing::warn!(server = %status.server, state = status.state.as_str(), reason, "MCP server")
            }
            state => tracing::info!(server = %status.server, state = state.as_str(), "MCP server"),
        }
        let notify = lock(&self.notify).clone();
        if let Some(notify) = notify {
            notify(status);
        }
    }

    /// Adds servers (an ACP client's `mcpServers`); a name already present
    /// keeps the first one.
    pub fn add(&self, servers: Vec<McpServerConfig>) {
        let mut state = lock(&self.state);
        for config in servers {
            state.slots.entry(config.name.clone()).or_insert(Slot {
                state: McpState::Starting,
                connection: None,
                tools: Vec::new(),
                generation: 0,
                config,
            });
        }
    }

    /// Starts every server at once and returns when each is ready or failed
    /// (each within its own start-up limit): the slowest, not the sum.
    pub async fn start_all(&self) {
        let names: Vec<String> = lock(&self.state).slots.keys().cloned().collect();
        let starts = names.iter().map(|name| self.start(name));
        futures::future::join_all(starts).await;
    }

    /// The current state of every server, in name order.
    pub fn statuses(&self) -> Vec<McpStatus> {
        lock(&self.state)
            .slots
            .iter()
            .map(|(name, slot)| McpStatus { server: name.clone(), state: slot.state.clone() })
            .collect()
    }

    /// Stops `name` if it runs and starts it again. `Err` names no such server.
    pub async fn restart(&self, name: &str) -> Result<(), String> {
        let old = {
            let mut state = lock(&self.state);
            let Some(slot) = state.slots.get_mut(name) else {
                let known: Vec<&str> = state.slots.keys().map(String::as_str).collect();
                return Err(format!("no MCP server `{name}`; the configured ones are: {}", known.join(", ")));
            };
            slot.connection.take()
        };
        if let Some(old) = old {
            old.stop();
        }
        self.start(name).await;
        Ok(())
    }

    /// Stops every server (the session ends).
    pub fn stop_all(&self) {
        let mut state = lock(&self.state);
        for slot in state.slots.values_mut() {
            slot.generation += 1;
            if let Some(connection) = slot.connection.take() {
                connection.stop();
            }
        }
    }

    async fn start(&self, name: &str) {
        let (config, generation) = {
            let mut state = lock(&self.state);
            let Some(slot) = state.slots.get_mut(name) else { return };
            slot.generation += 1;
            slot.state = McpState::Starting;
            slot.tools.clear();
            let started = (slot.config.clone(), slot.generation);
            Self::rebuild(&mut state);
            started
        };
        self.report(McpStatus { server: name.to_string(), state: McpState::Starting });
        let limit = config.startup_timeout;
        let tail = Arc::new(Mutex::new(None));
        let connected = tokio::time::timeout(limit, self.connect(&config, &tail)).await;
        let result = match connected {
            Ok(Ok(connected)) => Ok(connected),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!(
                "it did not answer `initialize` and `tools/list` within {} s (startup_timeout_sec)",
                limit.as_secs_f64()
            )),
        };
        let tail = lock(&tail).take();
        let result = match (result, tail) {
            (Err(reason), Some(tail)) => Err(with_stderr_tail(reason, &tail.settled(STDERR_SETTLE).await)),
            (result, _) => result,
        };
        match result {
            Ok((connection, tools, ended)) => {
                let connection = Arc::new(connection);
                let ready = {
                    let mut state = lock(&self.state);
                    let Some(slot) = state.slots.get_mut(name).filter(|s| s.generation == generation) else {
                        connection.stop();
                        return;
                    };
                    slot.connection = Some(connection.clone());
                    slot.tools = tools;
                    Self::rebuild(&mut state);
                    Self::ready_state(&state, name)
                };
                self.report(McpStatus { server: name.to_string(), state: ready });
                self.watch(name.to_string(), generation, connection, ended);
            }
            Err(reason) => {
                let failed = McpState::Failed { reason };
                {
                    let mut state = lock(&self.state);
                    let Some(slot) = state.slots.get_mut(name).filter(|s| s.generation == generation) else { return };
                    slot.state = failed.clone();
                }
                self.report(McpStatus { server: name.to_string(), state: failed });
            }
        }
    }

    #[allow(clippy::type_complexity)]
    /// Connects to the server of `config`; a stdio server's stderr tail is
    /// put in `tail` as soon as it runs, for the reason it failed.
    async fn connect(
        &self,
        config: &McpServerConfig,
        tail: &Mutex<Option<process::StderrTail>>,
    ) -> Result<
        (client::Connection, Vec<rmcp::model::Tool>, futures::future::BoxFuture<'static, String>),
        client::ConnectError,
    > {
        let (connection, ended) = match &config.transport {
            McpTransport::Stdio(spec) => {
                let mut spec = spec.clone();
                if spec.cwd.is_none() {
                    spec.cwd = lock(&self.workspace).clone();
                }
                let child = process::spawn_stdio(&spec, &self.supervisor).await?;
                *lock(tail) = Some(child.guard().stderr_tail_handle());
                let (connection, ended) = client::Connection::over_stdio(child).await?;
                (connection, Box::pin(ended) as futures::future::BoxFuture<'static, String>)
            }
            McpTransport::Http { url, headers } => {
                // Named with where it is (a query may hold a key: left out).
                let at = url.split(['?', '#']).next().unwrap_or_default();
                let (connection, ended) = client::Connection::over_http(url, headers)
                    .await
                    .map_err(|e| client::ConnectError::Http(format!("MCP server `{}` at {at}: {e}", config.name)))?;
                (connection, Box::pin(ended) as futures::future::BoxFuture<'static, String>)
            }
            McpTransport::Unsupported { why } => return Err(client::ConnectError::Unsupported(why.clone())),
        };
        let tools = match connection.list_tools().await {
            Ok(tools) => tools,
            Err(e) => {
                connection.stop();
                return Err(e);
            }
        };
        Ok((connection, tools, ended))
    }

    /// Reports the connection's end, and lists the tools again whenever
    /// the server says they changed.
    fn watch(
        &self,
        name: String,
        generation: u64,
        connection: Arc<client::Connection>,
        ended: futures::future::BoxFuture<'static, String>,
    ) {
        let manager = self.clone();
        tokio::spawn(async move {
            let mut ended = ended;
            loop {
                tokio::select! {
                    reason = &mut ended => {
                        let exited = McpState::Exited { reason };
                        {
                            let mut state = lock(&manager.state);
                            let Some(slot) = state.slots.get_mut(&name).filter(|s| s.generation == generation) else { return };
                            slot.state = exited.clone();
                            slot.connection = None;
                            slot.tools.clear();
                            Self::rebuild(&mut state);
                        }
                        manager.report(McpStatus { server: name.clone(), state: exited });
                        return;
                    }
                    _ = connection.list_changed.notified() => {
                        // A server adding several tools says so for each:
                        // one listing once they settle. Notifications during
                        // it leave one permit, so at most one more follows.
                        tokio::time::sleep(LIST_CHANGED_DEBOUNCE).await;
                        let said = connection.changes.said();
                        let limit = manager.startup_timeout(&name);
                        let tools = match tokio::time::timeout(limit, connection.list_tools()).await {
                            Ok(Ok(tools)) => tools,
                            Ok(Err(e)) => {
                                tracing::warn!(server = %name, "MCP server said its tools changed; listing them failed: {e}; the tools offered stay as they were");
                                connection.changes.listed_up_to(said);
                                manager.changed.notify_waiters();
                                continue;
                            }
                            Err(_) => {
                                tracing::warn!(server = %name, "MCP server said its tools changed; listing them took over {} s; the tools offered stay as they were", limit.as_secs_f64());
                                connection.changes.listed_up_to(said);
                                manager.changed.notify_waiters();
                                continue;
                            }
                        };
                        let ready = {
                            let mut state = lock(&manager.state);
                            let Some(slot) = state.slots.get_mut(&name).filter(|s| s.generation == generation) else { return };
                            slot.tools = tools;
                            Self::rebuild(&mut state);
                            Self::ready_state(&state, &name)
                        };
                        connection.changes.listed_up_to(said);
                        manager.report(McpStatus { server: name.clone(), state: ready });
                    }
                }
            }
        });
    }

    fn ready_state(state: &State, name: &str) -> McpState {
        let tools = state.offered.iter().filter(|t| t.server == name).map(|t| t.offered.clone()).collect();
        McpState::Ready { tools }
    }

    /// Offers again every ready server's tools, naming them deterministically.
    fn rebuild(state: &mut State) {
        let mut offered: Vec<OfferedTool> = Vec::new();
        let mut taken = std::collections::HashSet::new();
        for (server, slot) in state.slots.iter_mut() {
            if slot.connection.is_none() {
                continue;
            }
            let mut tools: Vec<&rmcp::model::Tool> = slot.tools.iter().collect();
            tools.sort_by(|a, b| a.name.cmp(&b.name));
            if tools.len() > MAX_TOOLS_PER_SERVER {
                tracing::warn!(server = %server, tools = tools.len(), "MCP server offers more tools than Mino offers the model; the rest are left out");
                tools.truncate(MAX_TOOLS_PER_SERVER);
            }
            for tool in tools {
                let name = unique_name(&offered_name(server, &tool.name), &mut taken);
                offered.push(offer(server, tool, name));
            }
            slot.state = McpState::Ready { tools: Vec::new() };
        }
        for (server, slot) in state.slots.iter_mut() {
            if slot.connection.is_some() {
                let tools = offered.iter().filter(|t| &t.server == server).map(|t| t.offered.clone()).collect();
                slot.state = McpState::Ready { tools };
            }
        }
        state.definitions = Arc::new(offered.iter().map(|t| t.definition.clone()).collect());
        state.offered = Arc::new(offered);
    }

    /// The tool definitions offered to the model now, in the Responses
    /// API's flat form.
    pub fn tool_definitions(&self) -> Arc<Vec<Value>> {
        lock(&self.state).definitions.clone()
    }

    /// The tool an offered name stands for, if a ready server offers it.
    pub fn resolve(&self, offered: &str) -> Option<OfferedTool> {
        lock(&self.state).offered.iter().find(|t| t.offered == offered).cloned()
    }

    /// Whether `name` is shaped like an MCP tool's name.
    pub fn is_mcp_name(name: &str) -> bool {
        name.starts_with(TOOL_PREFIX)
    }

    /// The tracker of `server`'s calls in flight, for their evidence
    /// ([`process::CallTracker`]); one that does nothing if it is not running.
    pub fn call_tracker(&self, server: &str) -> process::CallTracker {
        let state = lock(&self.state);
        state.slots.get(server).and_then(|s| s.connection.as_ref()).map(|c| c.tracker.clone()).unwrap_or_default()
    }

    fn startup_timeout(&self, server: &str) -> Duration {
        lock(&self.state).slots.get(server).map_or(config::DEFAULT_STARTUP_TIMEOUT, |s| s.config.startup_timeout)
    }

    /// The time limit of `server`'s calls.
    pub fn tool_timeout(&self, server: &str) -> Duration {
        lock(&self.state).slots.get(server).map_or(config::DEFAULT_TOOL_TIMEOUT, |s| s.config.tool_timeout)
    }

    /// An HTTP server whose connection broke during a call is reported
    /// `exited` (a remote server's going away ends no process Mino
    /// watches, and its connection would look alive until the next
    /// request); its tools are missing until it is restarted. A stdio
    /// server's end is seen by its connection's watch.
    fn lost(&self, server: &str, connection: &Arc<client::Connection>, why: &str) {
        let exited = {
            let mut state = lock(&self.state);
            let Some(slot) = state.slots.get_mut(server) else { return };
            let current = slot.connection.as_ref().is_some_and(|c| Arc::ptr_eq(c, connection));
            let McpTransport::Http { url, .. } = &slot.config.transport else { return };
            if !current {
                return;
            }
            let at = url.split(['?', '#']).next().unwrap_or_default().to_string();
            // What the old connection's watch reports from now on is ignored.
            slot.generation += 1;
            slot.connection = None;
            slot.tools.clear();
            let exited = McpState::Exited {
                reason: format!("MCP server `{server}` at {at}: its connection broke during a call ({why})"),
            };
            slot.state = exited.clone();
            Self::rebuild(&mut state);
            exited
        };
        connection.stop();
        self.report(McpStatus { server: server.to_string(), state: exited });
    }

    /// Makes one call. The caller has approved it and synced its start.
    /// Cancelling `cancel` drops the request, which sends
    /// `notifications/cancelled`.
    pub async fn call(&self, tool: &OfferedTool, arguments: &str, cancel: &CancellationToken) -> CallOutcome {
        let failed = |output: String| CallOutcome { status: ToolStatus::Failed, output };
        let arguments = match parse_arguments(arguments) {
            Ok(arguments) => arguments,
            Err(why) => return failed(why),
        };
        let connection = lock(&self.state).slots.get(&tool.server).and_then(|s| s.connection.clone());
        let Some(connection) = connection else {
            return failed(not_running(&tool.server));
        };
        let limit = self.tool_timeout(&tool.server);
        let call = connection.call(&tool.tool, arguments);
        let result = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                return CallOutcome {
                    status: ToolStatus::Cancelled,
                    output: format!(
                        "The turn was cancelled during this call; Mino sent the MCP server `{}` notifications/cancelled. The tool may have acted before it stopped.",
                        tool.server
                    ),
                }
            }
            result = tokio::time::timeout(limit, call) => result,
        };
        match result {
            Err(_) => CallOutcome {
                status: ToolStatus::TimedOut,
                output: format!(
                    "The MCP tool did not answer within {} s (tool_timeout_sec); Mino cancelled the call. It may have acted.",
                    limit.as_secs_f64()
                ),
            },
            Ok(Err(e)) => {
                let why = service_error_text(&e);
                if matches!(e, rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)) {
                    self.lost(&tool.server, &connection, &why);
                }
                failed(format!(
                    "The MCP server `{}` did not answer the call: {why}. The tool may have acted before it stopped.",
                    tool.server
                ))
            }
            Ok(Ok(result)) => {
                let is_error = result.is_error == Some(true);
                let text = bound(&result_text(&result), self.output_limit);
                CallOutcome { status: if is_error { ToolStatus::Failed } else { ToolStatus::Success }, output: text }
            }
        }
    }
}

/// How long a failed server's stderr may take to close before its reason is
/// given with the lines read so far (a server that exited closes it at once).
const STDERR_SETTLE: Duration = Duration::from_millis(500);
/// The most of a server's stderr a failure's reason carries: its last lines.
pub const REASON_STDERR_LINES: usize = 10;
pub const REASON_STDERR_BYTES: usize = 4096;

/// `reason` with the server's last stderr lines (already redacted of its
/// `env` values), bounded by [`REASON_STDERR_LINES`] and
/// [`REASON_STDERR_BYTES`]: why a server that exits at start did.
pub fn with_stderr_tail(reason: String, lines: &[String]) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let mut bytes = 0;
    for line in lines.iter().rev().filter(|l| !l.trim().is_empty()).take(REASON_STDERR_LINES) {
        if bytes + line.len() > REASON_STDERR_BYTES {
            break;
        }
        bytes += line.len() + 1;
        kept.push(line);
    }
    if kept.is_empty() {
        return format!("{reason}; it wrote nothing on stderr");
    }
    kept.reverse();
    format!("{reason}; its last stderr lines:\n{}", kept.join("\n"))
}

/// A call's failure in the transport's words, without rmcp's type names.
fn service_error_text(e: &rmcp::ServiceError) -> String {
    match e {
        rmcp::ServiceError::TransportSend(error) => {
            let text = error.error.to_string();
            text.strip_prefix("Client error: ").unwrap_or(&text).to_string()
        }
        rmcp::ServiceError::TransportClosed => "its connection closed".to_string(),
        other => other.to_string(),
    }
}

/// What the model reads when a server is not running.
pub fn not_running(server: &str) -> String {
    format!("The MCP server `{server}` is not running, so its tools are missing; the person can restart it (/mcp restart {server}). Nothing was called.")
}

#[cfg(test)]
mod stderr_tail_tests {
    #[test]
    fn a_reason_carries_the_last_lines_bounded() {
        let lines: Vec<String> = (0..30).map(|i| format!("line {i}")).collect();
        let reason = super::with_stderr_tail("it exited".into(), &lines);
        assert!(reason.starts_with("it exited; its last stderr lines:\nline 20\n"), "{reason}");
        assert!(reason.ends_with("line 29") && !reason.contains("line 19"), "{reason}");
        let long = vec!["x".repeat(3000), "y".repeat(3000)];
        let reason = super::with_stderr_tail("r".into(), &long);
        assert!(reason.len() < super::REASON_STDERR_BYTES + 100 && reason.ends_with('y'), "{}", reason.len());
        assert_eq!(super::with_stderr_tail("r".into(), &[]), "r; it wrote nothing on stderr");
    }
}

fn parse_arguments(arguments: &str) -> Result<Option<serde_json::Map<String, Value>>, String> {
    if arguments.trim().is_empty() {
        return Ok(None);
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(Value::Null) => Ok(None),
        Ok(_) => Err("The MCP tool's arguments must be a JSON object.".into()),
        Err(e) => Err(format!("The MCP tool's arguments are not valid JSON ({e}).")),
    }
}

/// A result's content as text: text parts as they are, anything else
/// named (an image by its type and size), structured content when there
/// is no text.
fn result_text(result: &rmcp::model::CallToolResult) -> String {
    let value = serde_json::to_value(result).unwrap_or(Value::Null);
    let mut parts = Vec::new();
    if let Some(content) = value.get("content").and_then(Value::as_array) {
        for item in content {
            match item.get("type").and_then(Value::as_str) {
                Some("text") => parts.push(item.get("text").and_then(Value::as_str).unwrap_or_default().to_string()),
                Some(kind @ ("image" | "audio")) => {
                    let mime = item.get("mimeType").and_then(Value::as_str).unwrap_or("?");
                    let size = item.get("data").and_then(Value::as_str).map_or(0, str::len);
                    parts.push(format!("[{kind} {mime}, {size} bytes of base64, not shown]"));
                }
                _ => parts.push(item.to_string()),
            }
        }
    }
    if parts.is_empty() {
        if let Some(structured) = value.get("structuredContent") {
            parts.push(structured.to_string());
        }
    }
    parts.join("\n")
}

/// `text` within `limit` bytes: its head and tail, with a note of what was left out.
pub fn bound(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let half = limit / 2;
    let mut head_end = half;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - half;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    format!(
        "{}\n[... {} bytes of the MCP tool's output left out ...]\n{}",
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..]
    )
}

fn sanitise(part: &str) -> String {
    part.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// `mcp__<server>__<tool>` in the model services' name rules, at most 64 characters.
pub fn offered_name(server: &str, tool: &str) -> String {
    let mut name = format!("{TOOL_PREFIX}{}__{}", sanitise(server), sanitise(tool));
    name.truncate(MAX_TOOL_NAME);
    name
}

/// `name`, or `name` with a counter when it is taken: the first tool (in
/// server then tool name order) keeps the plain name.
fn unique_name(name: &str, taken: &mut std::collections::HashSet<String>) -> String {
    if taken.insert(name.to_string()) {
        return name.to_string();
    }
    for n in 2.. {
        let suffix = format!("_{n}");
        let mut base = name.to_string();
        base.truncate(MAX_TOOL_NAME - suffix.len());
        let candidate = format!("{base}{suffix}");
        if taken.insert(candidate.clone()) {
            return candidate;
        }
    }
    unreachable!("the counter is unbounded")
}

fn offer(server: &str, tool: &rmcp::model::Tool, offered: String) -> OfferedTool {
    let mut description = format!("MCP tool `{}` of the server `{server}`.", tool.name);
    if let Some(text) = &tool.description {
        description.push(' ');
        description.push_str(&bound(text, MAX_DESCRIPTION_BYTES));
    }
    let schema = Value::Object((*tool.input_schema).clone());
    let schema = if serde_json::to_vec(&schema).map_or(usize::MAX, |b| b.len()) > MAX_SCHEMA_BYTES {
        description.push_str(" (Its argument schema is too large to show; pass the arguments its description names.)");
        json!({"type": "object"})
    } else if schema.get("type").is_none() {
        let mut schema = schema;
        if let Some(map) = schema.as_object_mut() {
            map.insert("type".into(), json!("object"));
        }
        schema
    } else {
        schema
    };
    let annotations = tool.annotations.as_ref().and_then(|a| serde_json::to_value(a).ok());
    OfferedTool {
        definition: json!({
            "type": "function",
            "name": offered,
            "description": description,
            "strict": false,
            "parameters": schema,
        }),
        offered,
        server: server.to_string(),
        tool: tool.name.to_string(),
        annotations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_model_services_rules_and_stay_unique() {
        assert_eq!(offered_name("fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(offered_name("fs", "read.file/x"), "mcp__fs__read_file_x");
        let long = offered_name("server", &"t".repeat(100));
        assert_eq!(long.len(), MAX_TOOL_NAME);
        let mut taken = std::collections::HashSet::new();
        assert_eq!(unique_name("mcp__a__b", &mut taken), "mcp__a__b");
        assert_eq!(unique_name("mcp__a__b", &mut taken), "mcp__a__b_2");
        let mut taken = std::collections::HashSet::new();
        let first = unique_name(&long, &mut taken);
        let second = unique_name(&long, &mut taken);
        assert_ne!(first, second);
        assert!(second.len() <= MAX_TOOL_NAME);
    }

    #[test]
    fn output_is_bounded_head_and_tail() {
        let text = "a".repeat(100) + &"b".repeat(100);
        let out = bound(&text, 50);
        assert!(out.starts_with("aaaa") && out.ends_with("bbbb"));
        assert!(out.contains("150 bytes"));
    }
}

/// What the person approves for an MCP tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpApproval {
    pub server: String,
    pub tool: String,
    /// The arguments as the model sent them (JSON text).
    pub arguments: String,
    /// The tool's annotations as the server states them (`readOnlyHint`,
    /// `destructiveHint`…): hints from the server, shown and never used to
    /// skip the approval.
    pub annotations: Option<Value>,
}

/// The most of a call's arguments its one-line summary shows.
const SUMMARY_ARGUMENTS: usize = 200;

/// A call's one line, as history and the journal's `command` show it:
/// `mcp fs/read_file {"path":"a.txt"}`.
pub fn summary(server: &str, tool: &str, arguments: &str) -> String {
    let arguments = arguments.trim();
    let mut end = arguments.len().min(SUMMARY_ARGUMENTS);
    while !arguments.is_char_boundary(end) {
        end -= 1;
    }
    let cut = if end < arguments.len() { "…" } else { "" };
    format!("mcp {server}/{tool} {}{cut}", &arguments[..end]).trim_end().to_string()
}
