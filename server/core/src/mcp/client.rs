//! One connection to an MCP server, on the official Rust SDK (`rmcp`): the
//! client side of `initialize`, `tools/list` (again whenever the server
//! says `notifications/tools/list_changed`) and `tools/call`. Dropping a
//! call's future before its answer sends `notifications/cancelled` (rmcp's
//! `call_tool` does so), which is how a cancelled turn stops a call.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientConfig, Implementation, Tool};
use rmcp::service::{NotificationContext, Peer, RunningServiceCancellationToken};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::sync::Notify;

use super::process::{McpChild, McpSpawnError};

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(transparent)]
    Spawn(#[from] McpSpawnError),
    #[error("the server did not complete `initialize`: {0}")]
    Initialize(String),
    #[error("`tools/list` failed: {0}")]
    ListTools(String),
    #[error("{0}")]
    Unsupported(String),
    /// An HTTP server's failure, its name and URL in front.
    #[error("{0}")]
    Http(String),
}

/// What Mino does with what a server sends unasked: a changed tool list
/// counts in [`ToolListChanges`] and wakes [`Connection::list_changed`].
struct Handler {
    info: ClientConfig,
    list_changed: Arc<Notify>,
    changes: Arc<ToolListChanges>,
}

/// How many times a server said its tools changed, and up to which of
/// those its tools were listed again: the model's next request waits while
/// the list is behind (the server says so during the call that changed
/// it, before its answer; the answer's next request offers the new set).
#[derive(Default)]
pub struct ToolListChanges {
    said: AtomicU64,
    listed: AtomicU64,
}

impl ToolListChanges {
    /// The changes said so far: pass it to [`ToolListChanges::listed_up_to`]
    /// once the list fetched after this is offered.
    pub fn said(&self) -> u64 {
        self.said.load(Ordering::SeqCst)
    }

    pub fn listed_up_to(&self, said: u64) {
        self.listed.fetch_max(said, Ordering::SeqCst);
    }

    /// Whether a change was said that is not listed yet.
    pub fn behind(&self) -> bool {
        self.listed.load(Ordering::SeqCst) < self.said.load(Ordering::SeqCst)
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    #[allow(refining_impl_trait)]
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.changes.said.fetch_add(1, Ordering::SeqCst);
        self.list_changed.notify_one();
        std::future::ready(())
    }
}

/// A live connection.
pub struct Connection {
    pub peer: Peer<RoleClient>,
    cancel: std::sync::Mutex<Option<RunningServiceCancellationToken>>,
    pub pid: Option<u32>,
    /// Woken when the server says its tools changed.
    pub list_changed: Arc<Notify>,
    pub changes: Arc<ToolListChanges>,
    /// Tells a stdio server's supervisor which calls are in flight (for
    /// their evidence); does nothing for a server without one (HTTP).
    pub tracker: super::process::CallTracker,
}

/// The child's pipes as one duplex stream for rmcp's transport. The child
/// (with the guard that stops its process group) lives inside: when the
/// connection ends for any reason, rmcp drops the transport and the
/// server's processes are stopped.
struct ChildIo {
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
    _guard: super::process::McpGuard,
}

impl tokio::io::AsyncRead for ChildIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stdout).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for ChildIo {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stdin).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stdin).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stdin).poll_shutdown(cx)
    }
}

impl Connection {
    /// Connects over a started stdio child. The returned future resolves
    /// when the connection ends (the server exited or closed its output),
    /// with why.
    pub async fn over_stdio(
        child: McpChild,
    ) -> Result<(Connection, impl std::future::Future<Output = String> + Send + 'static), ConnectError> {
        let pid = child.pid();
        let tracker = child.guard().call_tracker();
        let (stdin, stdout, guard) = child.into_parts();
        Self::serve(ChildIo { stdin, stdout, _guard: guard }, pid, tracker).await
    }

    /// Connects to a streamable HTTP server at `url`, sending `headers`
    /// with every request. Nothing is retried that could act twice: a
    /// session the server forgets is not silently re-initialised (a call
    /// in it would be sent again), and the server going away ends the
    /// connection.
    pub async fn over_http(
        url: &str,
        headers: &std::collections::BTreeMap<String, String>,
    ) -> Result<(Connection, impl std::future::Future<Output = String> + Send + 'static), ConnectError> {
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let client = super::http::MinoHttpClient::new(headers).map_err(|e| ConnectError::Unsupported(e.to_string()))?;
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string())
            .reinit_on_expired_session(false)
            .max_sse_event_size(super::http::MAX_MESSAGE_BYTES)
            .max_json_response_size(super::http::MAX_MESSAGE_BYTES)
            .max_error_response_size(super::http::MAX_ERROR_BYTES);
        // The GET stream and a call's SSE stream are resumed a few times at
        // most, then the connection is reported ended.
        let mut retry = rmcp::transport::common::client_side_sse::FixedInterval::default();
        retry.max_times = Some(HTTP_RESUMES);
        retry.duration = HTTP_RESUME_WAIT;
        config.retry_config = Arc::new(retry);
        let transport = rmcp::transport::StreamableHttpClientTransport::with_client(client, config);
        Self::serve(transport, None, super::process::CallTracker::default()).await
    }

    async fn serve<T, E, A>(
        transport: T,
        pid: Option<u32>,
        tracker: super::process::CallTracker,
    ) -> Result<(Connection, impl std::future::Future<Output = String> + Send + 'static), ConnectError>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        // `serve` is rmcp's client start: `initialize`, then `initialized`.
        let list_changed = Arc::new(Notify::new());
        let mut info = ClientConfig::default();
        info.client_info = Implementation::new("mino", env!("CARGO_PKG_VERSION"));
        let changes = Arc::new(ToolListChanges::default());
        let handler = Handler { info, list_changed: list_changed.clone(), changes: changes.clone() };
        let service = handler.serve(transport).await.map_err(|e| ConnectError::Initialize(initialize_error(&e)))?;
        let peer = service.peer().clone();
        let cancel = service.cancellation_token();
        let ended = async move {
            match service.waiting().await {
                Ok(reason) => quit_reason(&reason),
                Err(e) => format!("its connection's task ended: {e}"),
            }
        };
        Ok((
            Connection { peer, cancel: std::sync::Mutex::new(Some(cancel)), pid, list_changed, changes, tracker },
            ended,
        ))
    }

    pub async fn list_tools(&self) -> Result<Vec<Tool>, ConnectError> {
        self.peer.list_all_tools().await.map_err(|e| ConnectError::ListTools(e.to_string()))
    }

    /// One `tools/call`; dropping the future cancels it on the server.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<rmcp::model::CallToolResult, rmcp::ServiceError> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        self.peer.call_tool(params).await
    }

    /// Ends the connection; rmcp drops the transport, which stops the
    /// server's processes.
    pub fn stop(&self) {
        let cancel = self.cancel.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(cancel) = cancel {
            cancel.cancel();
        }
    }
}

/// How many times a broken SSE stream of an HTTP server is resumed.
const HTTP_RESUMES: usize = 2;
/// The wait before each resumption.
const HTTP_RESUME_WAIT: Duration = Duration::from_millis(500);

/// Why `initialize` failed, in the transport's own words (an HTTP
/// server's status is there) without rmcp's type names.
fn initialize_error(e: &rmcp::service::ClientInitializeError) -> String {
    match e {
        rmcp::service::ClientInitializeError::TransportError { error, .. } => {
            let text = error.error.to_string();
            text.strip_prefix("Client error: ").unwrap_or(&text).to_string()
        }
        other => other.to_string(),
    }
}

fn quit_reason(reason: &rmcp::service::QuitReason) -> String {
    match reason {
        rmcp::service::QuitReason::Cancelled => "stopped by Mino".to_string(),
        rmcp::service::QuitReason::Closed => "the server closed its output (it exited or crashed)".to_string(),
        other => format!("the connection ended: {other:?}"),
    }
}
