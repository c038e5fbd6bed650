//! Typed calls to `mino-server` over jsonrpsee's async client; its
//! notifications arrive on the one ordered queue of [`crate::notifications`].

use std::future::Future;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context as _};
use jsonrpsee::core::client::{Client, ClientBuilder, ClientT, Error as RpcError};
use jsonrpsee::core::traits::ToRpcParams;
use mino_protocol::{
    method, AcknowledgeParams, AcknowledgeResult, ApprovalParams, CancelParams, ChatParams, ChatResult, EmptyResult,
    HistoryParams, HistoryResult, InitializationOptions, ModelsListParams, ModelsListResult, ModelsSelectParams,
    ModelsSelectResult, RulesListParams, RulesListResult, RulesRevokeParams, ServerCapabilities, SessionInfo,
    SessionsListParams, SessionsListResult, SessionsNewParams, SessionsOpenParams, SettingsResult,
    SettingsUpdateParams,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::process::Child;

use crate::notifications::{self, Events};
use crate::transport::{Receiver, Sender};

/// Params serialized as given, always sent (jsonrpsee leaves out empty
/// `ObjectParams`, and LSP's `initialized` wants `{}`).
struct Params<T>(T);

impl<T: Serialize> ToRpcParams for Params<T> {
    fn to_rpc_params(self) -> Result<Option<Box<RawValue>>, serde_json::Error> {
        serde_json::value::to_raw_value(&self.0).map(Some)
    }
}

/// An error answered by the server, or a failure to reach it.
#[derive(Debug)]
pub enum CallError {
    /// The server answered with a JSON-RPC error.
    Server { code: i64, message: String },
    /// The connection is gone or the answer could not be read.
    Connection(String),
}

impl CallError {
    pub fn code(&self) -> Option<i64> {
        match self {
            CallError::Server { code, .. } => Some(*code),
            CallError::Connection(_) => None,
        }
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // The person reads of sessions and commands; the code and the
            // server's own words are in the log (RUST_LOG=mino=warn).
            CallError::Server { message, code } => f.write_str(&crate::ui::error_sentence(*code, message)),
            CallError::Connection(message) => {
                write!(f, "lost the connection to mino-server: {message}")
            }
        }
    }
}

impl std::error::Error for CallError {}

impl From<RpcError> for CallError {
    fn from(e: RpcError) -> Self {
        match e {
            RpcError::Call(obj) => {
                tracing::warn!(code = obj.code(), message = obj.message(), "mino-server refused a request");
                CallError::Server { code: i64::from(obj.code()), message: obj.message().to_owned() }
            }
            other => CallError::Connection(other.to_string()),
        }
    }
}

/// A running `mino-server` and the JSON-RPC client talking to it.
pub struct Server {
    /// Shared with calls that run beside the notification loop ([`Server::approval`], [`Server::cancel`]).
    rpc: Arc<Client>,
    child: Child,
}

/// Where `mino-server` is and how to start it.
pub struct Launch {
    pub program: std::path::PathBuf,
    pub cwd: Option<std::path::PathBuf>,
    pub env: Vec<(String, String)>,
    pub stderr: Stdio,
}

impl Server {
    /// Spawns the server in its own process group (a Ctrl+C typed in the
    /// terminal reaches only the client, which decides what it means); its
    /// notifications are queued from the first byte it writes.
    pub async fn spawn(launch: Launch) -> anyhow::Result<(Server, Events)> {
        let mut cmd = tokio::process::Command::new(&launch.program);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(launch.stderr).kill_on_drop(true);
        // A session of its own: a Ctrl+C typed in the terminal reaches only
        // the client, and neither the server nor an approved command has a
        // controlling terminal to write to or read from behind mino's back.
        // SAFETY: setsid(2) is async-signal-safe and touches no memory.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        if let Some(dir) = &launch.cwd {
            cmd.current_dir(dir);
        }
        for (k, v) in &launch.env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().with_context(|| format!("could not start {}", launch.program.display()))?;
        let stdin = child.stdin.take().ok_or_else(|| anyhow!("mino-server has no stdin pipe"))?;
        let stdout = child.stdout.take().ok_or_else(|| anyhow!("mino-server has no stdout pipe"))?;
        let (rpc, events) = connect(stdout, stdin);
        Ok((Server { rpc, child }, events))
    }

    /// A request whose future does not borrow the server, so it can run
    /// while the app goes on reading notifications.
    fn call<P, R>(&self, method: &'static str, params: P) -> impl Future<Output = Result<R, CallError>> + Send + 'static
    where
        P: Serialize + Send + 'static,
        R: DeserializeOwned + Send + 'static,
    {
        let rpc = self.rpc.clone();
        async move { Ok(rpc.request(method, Params(params)).await?) }
    }

    /// LSP `initialize` with Mino's options; returns what the server put in
    /// `capabilities.experimental.mino` (if it could be read).
    pub async fn initialize(&self, options: &InitializationOptions) -> Result<Option<ServerCapabilities>, CallError> {
        let params = serde_json::json!({
            "processId": std::process::id(),
            "clientInfo": { "name": "mino", "version": env!("CARGO_PKG_VERSION") },
            "rootUri": null,
            "capabilities": {},
            "initializationOptions": options,
        });
        let result: serde_json::Value = self.call("initialize", params).await?;
        let mino = result.pointer("/capabilities/experimental/mino").cloned();
        Ok(mino.and_then(|v| serde_json::from_value(v).ok()))
    }

    pub async fn initialized(&self) -> Result<(), CallError> {
        Ok(self.rpc.notification("initialized", Params(serde_json::json!({}))).await?)
    }

    pub async fn chat(&self, text: &str) -> Result<ChatResult, CallError> {
        self.chat_with_images(text, &[]).await
    }

    /// A question with images the server reads from their files (`/image`).
    pub async fn chat_with_images(&self, text: &str, images: &[std::path::PathBuf]) -> Result<ChatResult, CallError> {
        let images = images
            .iter()
            .map(|path| mino_protocol::ChatImage { path: Some(path.display().to_string()), ..Default::default() })
            .collect();
        self.call(method::CHAT, ChatParams { text: text.to_owned(), images }).await
    }

    pub fn approval(
        &self,
        params: ApprovalParams,
    ) -> impl Future<Output = Result<EmptyResult, CallError>> + Send + 'static {
        self.call(method::APPROVAL, params)
    }

    // Approval rules and settings.

    pub async fn rules_list(&self) -> Result<RulesListResult, CallError> {
        self.call(method::RULES_LIST, RulesListParams::default()).await
    }

    pub async fn rules_revoke(&self, id: &str) -> Result<EmptyResult, CallError> {
        self.call(method::RULES_REVOKE, RulesRevokeParams { id: id.to_owned() }).await
    }

    pub async fn settings_update(&self, params: SettingsUpdateParams) -> Result<SettingsResult, CallError> {
        self.call(method::SETTINGS_UPDATE, params).await
    }

    // Models.

    pub async fn mcp_list(&self) -> Result<mino_protocol::McpListResult, CallError> {
        self.call(method::MCP_LIST, mino_protocol::McpListParams::default()).await
    }

    pub async fn mcp_restart(&self, server: &str) -> Result<mino_protocol::McpServerStatus, CallError> {
        self.call(method::MCP_RESTART, mino_protocol::McpRestartParams { server: server.to_owned() }).await
    }

    pub async fn rewind_plan(&self, turn_id: &str) -> Result<mino_protocol::RewindPlanResult, CallError> {
        self.call(method::REWIND_PLAN, mino_protocol::RewindPlanParams { turn_id: turn_id.to_owned() }).await
    }

    pub async fn rewind(&self, turn_id: &str, digest: &str) -> Result<mino_protocol::RewindResult, CallError> {
        let params = mino_protocol::RewindParams { turn_id: turn_id.to_owned(), digest: digest.to_owned() };
        self.call(method::REWIND, params).await
    }

    pub async fn models_list(&self) -> Result<ModelsListResult, CallError> {
        self.call(method::MODELS_LIST, ModelsListParams::default()).await
    }

    pub async fn models_select(&self, model: &str) -> Result<ModelsSelectResult, CallError> {
        self.call(method::MODELS_SELECT, ModelsSelectParams { model: model.to_owned() }).await
    }

    pub async fn acknowledge(&self, turn_ids: Option<Vec<String>>) -> Result<AcknowledgeResult, CallError> {
        self.call(method::ACKNOWLEDGE, AcknowledgeParams { turn_ids }).await
    }

    pub fn cancel(&self, turn_id: &str) -> impl Future<Output = Result<EmptyResult, CallError>> + Send + 'static {
        self.call(method::CANCEL, CancelParams { turn_id: turn_id.to_owned() })
    }

    /// Compacts the conversation (`mino/compact`); answers once the summary is saved, or why not.
    pub async fn compact(&self) -> Result<mino_protocol::CompactResult, CallError> {
        self.call(method::COMPACT, mino_protocol::CompactParams {}).await
    }

    pub async fn history(&self) -> Result<HistoryResult, CallError> {
        self.call(method::HISTORY, HistoryParams::default()).await
    }

    /// This workspace's sessions, newest first (one page of at most 500).
    pub async fn sessions(&self) -> Result<SessionsListResult, CallError> {
        self.call(method::SESSIONS_LIST, SessionsListParams { limit: Some(500), ..Default::default() }).await
    }

    /// Starts a new session in the workspace and makes it current; its
    /// `mino/recovery` follows on the notification queue.
    pub async fn new_session(&self) -> Result<SessionInfo, CallError> {
        self.call(method::SESSIONS_NEW, SessionsNewParams::default()).await
    }

    /// Opens session `id` and makes it current; its `mino/recovery` follows
    /// on the notification queue.
    pub async fn fork_session(
        &self,
        session_id: &str,
        turn_id: &str,
    ) -> Result<mino_protocol::SessionsForkResult, CallError> {
        let params =
            mino_protocol::SessionsForkParams { session_id: session_id.to_owned(), turn_id: turn_id.to_owned() };
        self.call(method::SESSIONS_FORK, params).await
    }

    pub async fn open_session(&self, id: &str) -> Result<SessionInfo, CallError> {
        self.call(method::SESSIONS_OPEN, SessionsOpenParams { session_id: id.to_owned() }).await
    }

    /// Closes the server's stdin (it then releases the session and exits) and
    /// waits a little for it; a server that does not go is killed.
    pub async fn shutdown(self) {
        let Server { rpc, mut child } = self;
        // Dropping the client ends its background task, which drops the
        // sender and with it the pipe to the server's stdin.
        drop(rpc);
        match tokio::time::timeout(Duration::from_secs(10), child.wait()).await {
            Ok(_) => {}
            Err(_) => {
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
        }
    }
}

/// jsonrpsee's client over `reader`/`writer`, and the queue of the
/// notifications read from `reader`, in arrival order.
pub fn connect<R, W>(reader: R, writer: W) -> (Arc<Client>, Events)
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (queue, events) = notifications::queue(notifications::QUEUE_BYTES);
    let rpc = ClientBuilder::default()
        .request_timeout(Duration::from_secs(600))
        .build_with_tokio(Sender::new(writer), Receiver::new(reader, queue));
    (Arc::new(rpc), events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::{SinkExt, StreamExt};
    use mino_framing::{Frame, FrameCodec};
    use mino_protocol::{OutputStream, TextDelta, ToolOutput, TurnNotification};
    use serde_json::{json, Value};
    use tokio_util::codec::{FramedRead, FramedWrite};

    use crate::notifications::Event;

    /// The `i`th notification a fake server writes: methods alternate, and
    /// `seq` falls as `i` grows, so neither sorting by `seq` nor reading
    /// per-method channels one after another gives the arrival order back.
    fn nth(i: u64, count: u64) -> TurnNotification {
        let (turn_id, seq, session_id) = ("turn-1".to_owned(), count - i, "s1".to_owned());
        if i % 3 == 2 {
            TurnNotification::ToolOutput(ToolOutput {
                turn_id,
                seq,
                session_id,
                call_id: "call_1".into(),
                stream: OutputStream::Stdout,
                chunk: format!("line-{i}\n"),
            })
        } else {
            TurnNotification::TextDelta(TextDelta { turn_id, seq, session_id, delta: format!("d{i}") })
        }
    }

    fn wire(n: &TurnNotification) -> String {
        let mut v = serde_json::to_value(n).expect("a notification serializes");
        v["jsonrpc"] = json!("2.0");
        v.to_string()
    }

    #[tokio::test]
    async fn notifications_arrive_in_the_order_written_while_a_call_is_answered_between_them() {
        const COUNT: u64 = 3_000;
        let (client_in, server_out) = tokio::io::duplex(64 * 1024);
        let (server_in, client_out) = tokio::io::duplex(64 * 1024);
        let (rpc, mut events) = connect(client_in, client_out);
        let server = tokio::spawn(async move {
            let mut requests = FramedRead::new(server_in, FrameCodec::new());
            let mut out = FramedWrite::new(server_out, FrameCodec::new());
            let Some(Ok(Frame::Body(request))) = requests.next().await else { panic!("no request") };
            let request: Value = serde_json::from_slice(&request).expect("a request is JSON");
            for i in 0..COUNT {
                if i == COUNT / 2 {
                    // The answer, in the middle of the stream.
                    let response =
                        json!({"jsonrpc": "2.0", "id": request["id"], "result": {"echo": request["params"]}});
                    out.send(response.to_string()).await.expect("write the response");
                }
                out.send(wire(&nth(i, COUNT))).await.expect("write a notification");
            }
        });
        let answer: Value = rpc.request("test/echo", Params(json!({"x": 1}))).await.expect("the call is answered");
        assert_eq!(answer, json!({"echo": {"x": 1}}));
        server.await.expect("the fake server wrote everything");
        let mut got = Vec::new();
        while got.len() < COUNT as usize {
            match events.next().await {
                Some(Event::Turn(n)) => got.push(n),
                other => panic!("expected a turn notification, got {other:?}"),
            }
        }
        let expected: Vec<TurnNotification> = (0..COUNT).map(|i| nth(i, COUNT)).collect();
        assert!(got == expected, "notifications out of arrival order");
        // The server closed its output: the stream ends.
        drop(rpc);
        assert!(events.next().await.is_none());
    }
}
