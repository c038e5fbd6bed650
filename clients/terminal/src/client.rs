//! Typed calls to `mino-server` over jsonrpsee's async client, and the
//! ordered stream of its notifications.

use std::pin::Pin;
use std::process::Stdio;
use std::task::Poll;
use std::time::Duration;

use anyhow::{anyhow, Context as _};
use futures::{Stream, StreamExt};
use jsonrpsee::core::client::{Client, ClientBuilder, ClientT, Error as RpcError, SubscriptionClientT};
use jsonrpsee::core::traits::ToRpcParams;
use mino_protocol::{
    method, AcknowledgeParams, AcknowledgeResult, ApprovalParams, ApprovalRequest, CancelParams, ChatParams,
    ChatResult, Decision, EmptyResult, HistoryParams, HistoryResult, InitializationOptions, RecoveryNotification,
    Retrying, ServerCapabilities, TextDelta, ToolOutput, ToolResult, ToolStarted, TurnEnded, TurnStarted,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::process::Child;

use crate::transport::{Receiver, Sender};

/// How many notifications may queue per method before jsonrpsee would drop
/// the subscription (its default is 1,024; a chatty command easily exceeds it).
const NOTIFICATION_BUFFER: usize = 1 << 20;

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
            CallError::Server { message, code } => write!(f, "{message} (error {code})"),
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
            RpcError::Call(obj) => CallError::Server { code: i64::from(obj.code()), message: obj.message().to_owned() },
            other => CallError::Connection(other.to_string()),
        }
    }
}

/// One server notification.
#[derive(Debug, Clone)]
pub enum Event {
    Recovery(RecoveryNotification),
    TurnStarted(TurnStarted),
    TextDelta(TextDelta),
    Retrying(Retrying),
    ApprovalRequest(ApprovalRequest),
    ToolStarted(ToolStarted),
    ToolOutput(ToolOutput),
    ToolResult(ToolResult),
    TurnEnded(TurnEnded),
}

impl Event {
    /// The session-wide order of turn notifications; the recovery notice comes first.
    fn seq(&self) -> u64 {
        match self {
            Event::Recovery(_) => 0,
            Event::TurnStarted(n) => n.seq,
            Event::TextDelta(n) => n.seq,
            Event::Retrying(n) => n.seq,
            Event::ApprovalRequest(n) => n.seq,
            Event::ToolStarted(n) => n.seq,
            Event::ToolOutput(n) => n.seq,
            Event::ToolResult(n) => n.seq,
            Event::TurnEnded(n) => n.seq,
        }
    }
}

type EventStream = Pin<Box<dyn Stream<Item = Event> + Send>>;

/// Every `mino/*` notification, merged back into the server's order.
///
/// jsonrpsee delivers each method to its own subscription channel, so the
/// order *between* methods is lost (a tool's output could overtake the
/// approval request before it). The background task fills the channels in
/// arrival order, so once a message is seen, everything sent before it is
/// already queued somewhere: [`Events::next`] drains all channels until a
/// full pass finds nothing, then hands the batch out sorted by `seq`.
pub struct Events {
    streams: Vec<(EventStream, bool)>,
    ready: std::collections::VecDeque<Event>,
}

impl Events {
    /// The next notification; `None` once the connection is closed.
    pub async fn next(&mut self) -> Option<Event> {
        if let Some(ev) = self.ready.pop_front() {
            return Some(ev);
        }
        let streams = &mut self.streams;
        let batch = futures::future::poll_fn(|cx| {
            let mut batch = Vec::new();
            loop {
                let mut got = false;
                for (stream, open) in streams.iter_mut() {
                    while *open {
                        match stream.as_mut().poll_next(cx) {
                            Poll::Ready(Some(ev)) => {
                                batch.push(ev);
                                got = true;
                            }
                            Poll::Ready(None) => *open = false,
                            Poll::Pending => break,
                        }
                    }
                }
                if !got {
                    break;
                }
            }
            if !batch.is_empty() {
                Poll::Ready(Some(batch))
            } else if streams.iter().all(|(_, open)| !open) {
                Poll::Ready(None)
            } else {
                Poll::Pending
            }
        })
        .await?;
        let mut batch = batch;
        batch.sort_by_key(Event::seq);
        self.ready.extend(batch);
        self.ready.pop_front()
    }
}

/// A running `mino-server` and the JSON-RPC client talking to it.
pub struct Server {
    rpc: Client,
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
    /// terminal reaches only the client, which decides what it means) and
    /// subscribes to every notification before anything can be sent.
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
        let rpc = ClientBuilder::default()
            .request_timeout(Duration::from_secs(600))
            .max_buffer_capacity_per_subscription(NOTIFICATION_BUFFER)
            .build_with_tokio(Sender::new(stdin), Receiver::new(stdout));

        let mut streams: Vec<(EventStream, bool)> = Vec::new();
        streams.push((subscribe(&rpc, method::RECOVERY, Event::Recovery).await?, true));
        streams.push((subscribe(&rpc, method::TURN_STARTED, Event::TurnStarted).await?, true));
        streams.push((subscribe(&rpc, method::TEXT_DELTA, Event::TextDelta).await?, true));
        streams.push((subscribe(&rpc, method::RETRYING, Event::Retrying).await?, true));
        streams.push((subscribe(&rpc, method::APPROVAL_REQUEST, Event::ApprovalRequest).await?, true));
        streams.push((subscribe(&rpc, method::TOOL_STARTED, Event::ToolStarted).await?, true));
        streams.push((subscribe(&rpc, method::TOOL_OUTPUT, Event::ToolOutput).await?, true));
        streams.push((subscribe(&rpc, method::TOOL_RESULT, Event::ToolResult).await?, true));
        streams.push((subscribe(&rpc, method::TURN_ENDED, Event::TurnEnded).await?, true));
        Ok((Server { rpc, child }, Events { streams, ready: Default::default() }))
    }

    async fn call<P: Serialize + Send, R: DeserializeOwned>(&self, method: &str, params: P) -> Result<R, CallError> {
        Ok(self.rpc.request(method, Params(params)).await?)
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
        self.call(method::CHAT, ChatParams { text: text.to_owned() }).await
    }

    pub async fn approval(&self, turn_id: &str, call_id: &str, decision: Decision) -> Result<EmptyResult, CallError> {
        let params = ApprovalParams { turn_id: turn_id.to_owned(), call_id: call_id.to_owned(), decision };
        self.call(method::APPROVAL, params).await
    }

    pub async fn acknowledge(&self, turn_ids: Option<Vec<String>>) -> Result<AcknowledgeResult, CallError> {
        self.call(method::ACKNOWLEDGE, AcknowledgeParams { turn_ids }).await
    }

    pub async fn cancel(&self, turn_id: &str) -> Result<EmptyResult, CallError> {
        self.call(method::CANCEL, CancelParams { turn_id: turn_id.to_owned() }).await
    }

    pub async fn history(&self) -> Result<HistoryResult, CallError> {
        self.call(method::HISTORY, HistoryParams::default()).await
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

async fn subscribe<N, F>(rpc: &Client, name: &str, wrap: F) -> anyhow::Result<EventStream>
where
    N: DeserializeOwned + Send + 'static,
    F: Fn(N) -> Event + Send + 'static,
{
    let sub = rpc.subscribe_to_method::<N>(name).await.with_context(|| format!("could not subscribe to {name}"))?;
    let owned = name.to_owned();
    Ok(Box::pin(sub.filter_map(move |item| {
        let out = match item {
            Ok(n) => Some(wrap(n)),
            Err(e) => {
                tracing::warn!("ignoring a malformed {owned} notification: {e}");
                None
            }
        };
        futures::future::ready(out)
    })))
}
