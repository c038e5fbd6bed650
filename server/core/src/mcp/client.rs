//! One connection to an MCP server, on the official Rust SDK (`rmcp`): the
//! client side of `initialize`, `tools/list` (again whenever the server
//! says `notifications/tools/list_changed`) and `tools/call`. Dropping a
//! call's future before its answer sends `notifications/cancelled` (rmcp's
//! `call_tool` does so), which is how a cancelled turn stops a call.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

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
}

/// What Mino does with what a server sends unasked: a changed tool list
/// wakes [`Connection::list_changed`].
struct Handler {
    info: ClientConfig,
    list_changed: Arc<Notify>,
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
    /// Tells a stdio server's supervisor which calls are in flight (for
    /// their evidence); does nothing for a server without one.
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
        let list_changed = Arc::new(Notify::new());
        let mut info = ClientConfig::default();
        info.client_info = Implementation::new("mino", env!("CARGO_PKG_VERSION"));
        let handler = Handler { info, list_changed: list_changed.clone() };
        let (stdin, stdout, guard) = child.into_parts();
        let service = handler
            .serve(ChildIo { stdin, stdout, _guard: guard })
            .await
            .map_err(|e| ConnectError::Initialize(e.to_string()))?;
        let peer = service.peer().clone();
        let cancel = service.cancellation_token();
        let ended = async move {
            match service.waiting().await {
                Ok(reason) => quit_reason(&reason),
                Err(e) => format!("its connection's task ended: {e}"),
            }
        };
        Ok((Connection { peer, cancel: std::sync::Mutex::new(Some(cancel)), pid, list_changed, tracker }, ended))
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

fn quit_reason(reason: &rmcp::service::QuitReason) -> String {
    match reason {
        rmcp::service::QuitReason::Cancelled => "stopped by Mino".to_string(),
        rmcp::service::QuitReason::Closed => "the server closed its output (it exited or crashed)".to_string(),
        other => format!("the connection ended: {other:?}"),
    }
}
