//! A scripted OpenAI Responses API and Chat Completions server on loopback.
//!
//! Mino talks to a model through `POST {OPENAI_BASE_URL}/responses` (the Responses API) or
//! `POST {OPENAI_BASE_URL}/chat/completions` (Chat Completions), with `stream: true`.
//! Tests (and the offline demo, `mino --demo`) need that endpoint to behave exactly like the real
//! service — same server-sent event framing, same event order, same error shapes — but
//! deterministically and without a network. This crate is that stand-in:
//!
//! * a test builds a script of [`Reply`] values, one per expected model request;
//! * [`MockModel::start`] serves it on `127.0.0.1:<ephemeral>` and every request to
//!   `POST /v1/responses` or `POST /v1/chat/completions` pops exactly one reply, rendered in
//!   that API's stream format (one script, two renderings) (when the script runs dry the answer is the text
//!   [`NO_REPLY_LEFT`], so a test fails visibly instead of hanging);
//! * every request is recorded *before* it is answered, so a test can assert on what Mino sent
//!   (history replay, tool outputs, headers) with [`MockModel::requests`].
//!
//! The `mino-mock-model` binary serves the same thing for the Node and Lua tests of the editor
//! clients. They drive it over HTTP control endpoints:
//!
//! | endpoint | effect |
//! |---|---|
//! | `GET /_mock/requests` | JSON array of [`RecordedRequest`] |
//! | `POST /_mock/script` | body: JSON array of [`Reply`] (or one reply); appended to the script |
//! | `POST /_mock/reset` | clears the script, the recorded requests and the id counters, restores the model list and stops holding it |
//! | `POST /_mock/models` | body: what `GET /v1/models` lists (a JSON array of ids, or of entries `{"id": …, …}` whose other fields are listed as given), or `null` for a service without a list (404) |
//! | `POST /_mock/models/hold` | body: `true` holds every `GET /v1/models` unanswered (a service hanging on its list), `false` answers them |
//! | `GET /_mock/models/waiting` | `{"waiting": n}`: the `GET /v1/models` held now whose clients still wait |
//!
//! `GET /v1/models` answers `{"object":"list","data":[{"id":…,"object":"model",…}]}` as OpenAI,
//! Ollama, vLLM and llama.cpp do; by default it lists [`DEFAULT_MODELS`] (the second with a
//! `context_length`, as some servers give it; [`MockModel::set_model_entries`] lists others, with
//! whatever fields a test gives them). It is not a model request: it takes no reply
//! from the script and is not among [`MockModel::requests`] ([`MockModel::model_list_requests`]
//! has its `Authorization` headers).
//!
//! Replies serialize with an internal `type` tag in snake case, e.g.
//! `{"type":"text","deltas":["Hi"," there!"]}` or
//! `{"type":"calls","calls":[{"call_id":"call_1","command":"ls"}]}`. Calls of the edit tools are
//! `named_call`s, e.g. `{"type":"named_call","call_id":"call_2","name":"write_file",
//! "arguments":"{\"path\":\"notes.txt\",\"content\":\"milk\\n\"}"}` (what
//! [`Reply::edit_file`] and [`Reply::write_file`] build).
//!
//! Any other path answers 404 with an OpenAI-style error body.

mod render;
mod render_chat;
mod server;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

/// The models `GET /v1/models` lists until told otherwise.
pub const DEFAULT_MODELS: [&str; 2] = ["mock-model", "mock-model-large"];

/// The context window the mock gives its second default model (as `context_length`).
pub const LARGE_MODEL_CONTEXT: u64 = 32768;

/// The text answered once the script is exhausted.
pub const NO_REPLY_LEFT: &str = "mock model: no scripted reply left";

/// One request received on `POST /v1/responses` or `POST /v1/chat/completions`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// The request body; a JSON string holding the raw text if the body was not valid JSON.
    pub body: serde_json::Value,
    /// The `Authorization` header, e.g. `Bearer sk-test`.
    pub authorization: Option<String>,
    /// The request path: `/v1/responses` or `/v1/chat/completions`.
    pub path: String,
}

/// One scripted answer to one model request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    /// Streams a text answer as these deltas (joined = full text).
    Text {
        deltas: Vec<String>,
        #[serde(default)]
        delay_ms: u64,
    },
    /// Optional leading text deltas, then one function call item per entry (call ids as given,
    /// name `bash`, arguments = the JSON text `{"command": ...}` unless `raw_arguments` is given).
    Calls {
        #[serde(default)]
        text: Vec<String>,
        calls: Vec<ScriptedCall>,
        #[serde(default)]
        delay_ms: u64,
    },
    /// A reasoning item (with `encrypted_content` and a summary) before a text answer.
    ReasoningThenText { encrypted_content: String, deltas: Vec<String> },
    /// An HTTP error before any stream: status code, OpenAI error body
    /// `{"error":{"message","type","param","code"}}`, optional `Retry-After` header (seconds).
    HttpError {
        status: u16,
        code: Option<String>,
        message: String,
        #[serde(default)]
        retry_after: Option<u64>,
    },
    /// 200 stream that sends `response.created` and these deltas, then drops the connection
    /// mid-body (the chunked body is never terminated, so the client sees a transport error).
    CutStream { deltas: Vec<String> },
    /// 200 stream that sends `response.created` and these deltas, then ends the body cleanly
    /// without a terminal event — the other way a stream can stop short (e.g. behind a proxy).
    EndWithoutTerminal { deltas: Vec<String> },
    /// 200 stream that sends `response.created` (and these deltas) then goes silent, keeping the
    /// connection open for `stall_ms` (default 60 s), after which the connection is dropped.
    Stall {
        #[serde(default)]
        deltas: Vec<String>,
        #[serde(default)]
        stall_ms: Option<u64>,
    },
    /// 200 stream ending in `response.failed` with `response.error {code, message}`.
    Failed { code: String, message: String },
    /// 200 stream with a bare `error` event `{type:"error", code, message, param:null}`.
    ErrorEvent { code: String, message: String },
    /// 200 stream of text deltas ending in `response.incomplete` with
    /// `incomplete_details.reason`.
    Incomplete { deltas: Vec<String>, reason: String },
    /// 200 stream that opens a message and then sends `delta` as a text
    /// delta again and again, without end, until the client hangs up: a
    /// model that never stops talking. (The repeated event keeps one
    /// `sequence_number`.)
    EndlessText { delta: String },
    /// A text answer of `count` deltas, each the moment it is sent: the
    /// [`monotonic_nanos`] reading taken as the delta leaves the mock, in
    /// decimal, followed by a space (e.g. `"84211630094512 "`). A client on
    /// the same machine reading the same clock learns each delta's latency.
    /// The closing events carry the text the deltas made. `delay_ms` paces
    /// the deltas (tokio's timer, so millisecond resolution).
    StampedText {
        count: usize,
        #[serde(default)]
        delay_ms: u64,
    },
    /// One function call with any tool name and these verbatim `arguments`: Mino's edit tools
    /// ([`Reply::edit_file`], [`Reply::write_file`]), or a client whose tools are not Mino's
    /// (e.g. another agent measured beside Mino against this mock).
    NamedCall { call_id: String, name: String, arguments: String },
    /// 200 stream of these text deltas, then one event whose data is `data` verbatim (e.g. text
    /// that is not JSON), then the end of the body: a server sending an unreadable event.
    Garbled {
        #[serde(default)]
        deltas: Vec<String>,
        data: String,
    },
    /// 200 with an event-stream content type and no event at all: what
    /// llama-cpp-python answers when its handler raises after the headers
    /// went out (a prompt longer than its window, or `"tool_choice": "auto"`
    /// with `chatml-function-calling`). Answers an unstreamed request the same.
    EmptyStream,
    /// A text answer as a local server streams it: under Chat Completions no
    /// usage chunk even when asked (llama-cpp-python reports none); under
    /// the Responses API the same as [`Reply::Text`].
    TextWithoutUsage { deltas: Vec<String> },
    /// Under Chat Completions these deltas, then `finish_reason: "length"`
    /// and no usage: a local server whose window filled up while it
    /// answered. Under the Responses API, `response.incomplete` with
    /// `max_output_tokens`.
    LengthStop { deltas: Vec<String> },
}

/// `CLOCK_MONOTONIC` in nanoseconds: one clock for every process on the
/// machine (unlike [`std::time::Instant`], whose readings cannot be shared),
/// so a process can compare a [`Reply::StampedText`] delta with its own
/// reading.
pub fn monotonic_nanos() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One `bash` function call in a [`Reply::Calls`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScriptedCall {
    pub call_id: String,
    pub command: String,
    /// Sent verbatim as the call's `arguments`, to test malformed or unexpected arguments.
    #[serde(default)]
    pub raw_arguments: Option<String>,
}

impl ScriptedCall {
    pub fn new(call_id: impl Into<String>, command: impl Into<String>) -> Self {
        ScriptedCall { call_id: call_id.into(), command: command.into(), raw_arguments: None }
    }
}

impl Reply {
    /// A text answer streamed as word-sized deltas (`"Hi there!"` → `"Hi"`, `" there!"`).
    pub fn text(text: &str) -> Reply {
        Reply::Text { deltas: split_words(text), delay_ms: 0 }
    }

    /// One `bash` call running `command`.
    pub fn call(call_id: &str, command: &str) -> Reply {
        Reply::calls(&[(call_id, command)])
    }

    /// Several `bash` calls in one response, as `(call_id, command)` pairs.
    pub fn calls(calls: &[(&str, &str)]) -> Reply {
        Reply::Calls {
            text: Vec::new(),
            calls: calls.iter().map(|(id, command)| ScriptedCall::new(*id, *command)).collect(),
            delay_ms: 0,
        }
    }

    /// One `edit_file` call (a [`Reply::NamedCall`] with the arguments
    /// `{"path","old_text","new_text","replace_all"}` encoded as JSON text).
    pub fn edit_file(call_id: &str, path: &str, old_text: &str, new_text: &str, replace_all: bool) -> Reply {
        let arguments = serde_json::json!({
            "path": path, "old_text": old_text, "new_text": new_text, "replace_all": replace_all,
        });
        Reply::NamedCall { call_id: call_id.into(), name: "edit_file".into(), arguments: arguments.to_string() }
    }

    /// One `write_file` call (arguments `{"path","content"}`).
    pub fn write_file(call_id: &str, path: &str, content: &str) -> Reply {
        let arguments = serde_json::json!({ "path": path, "content": content });
        Reply::NamedCall { call_id: call_id.into(), name: "write_file".into(), arguments: arguments.to_string() }
    }

    /// An HTTP error before any stream. `code` accepts `"rate_limit_exceeded"`,
    /// `Some("...")` or `None`.
    pub fn http_error<'a>(status: u16, code: impl Into<Option<&'a str>>, message: impl Into<String>) -> Reply {
        Reply::HttpError { status, code: code.into().map(str::to_owned), message: message.into(), retry_after: None }
    }

    /// The service's answer to a request longer than the model's context window, as both APIs
    /// give it: HTTP 400 with `{"error":{"code":"context_length_exceeded",…}}` (for the
    /// in-stream forms use [`Reply::Failed`] — the Responses API's `response.failed` — or
    /// [`Reply::ErrorEvent`], which Chat Completions renders as its `error` object, with the
    /// same code).
    /// HTTP 400 naming the context without OpenAI's code, in the words of
    /// llama.cpp's `llama-server` (`exceed_context_size_error`).
    pub fn context_size_exceeded() -> Reply {
        Reply::HttpError {
            status: 400,
            code: None,
            message: "request (1300 tokens) exceeds the available context size (1024 tokens), try increasing it".into(),
            retry_after: None,
        }
    }

    /// A local server's text answer without usage ([`Reply::TextWithoutUsage`]).
    pub fn local_text(text: &str) -> Reply {
        Reply::TextWithoutUsage { deltas: split_words(text) }
    }

    pub fn context_length_exceeded() -> Reply {
        Reply::http_error(
            400,
            "context_length_exceeded",
            "Your input exceeds the context window of this model. Please adjust your input and try again.",
        )
    }

    /// The answer to Mino's summary request (a compaction): plain text, like any answer. The
    /// request is recognisable by what it lacks: no `tools`.
    pub fn summary(text: &str) -> Reply {
        Reply::text(text)
    }

    /// Sets `retry_after` on an [`Reply::HttpError`]; other replies are returned unchanged.
    pub fn with_retry_after(mut self, seconds: u64) -> Reply {
        if let Reply::HttpError { retry_after, .. } = &mut self {
            *retry_after = Some(seconds);
        }
        self
    }

    /// Sets `delay_ms` on a [`Reply::Text`] or [`Reply::Calls`]; other replies are returned
    /// unchanged.
    pub fn with_delay_ms(mut self, ms: u64) -> Reply {
        if let Reply::Text { delay_ms, .. } | Reply::Calls { delay_ms, .. } = &mut self {
            *delay_ms = ms;
        }
        self
    }
}

/// Splits before each run of whitespace, so deltas look like model tokens and join back exactly.
pub fn split_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut prev_ws = false;
    for c in text.chars() {
        let ws = c.is_whitespace();
        if ws && !prev_ws && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        current.push(c);
        prev_ws = ws;
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Per-server counters behind `resp_N`, `msg_N`, `fc_N`, `rs_N`.
#[derive(Default)]
pub(crate) struct IdCounters {
    resp: AtomicU64,
    msg: AtomicU64,
    fc: AtomicU64,
    rs: AtomicU64,
}

impl IdCounters {
    pub(crate) fn resp(&self) -> String {
        format!("resp_{}", self.resp.fetch_add(1, Ordering::Relaxed) + 1)
    }
    pub(crate) fn msg(&self) -> String {
        format!("msg_{}", self.msg.fetch_add(1, Ordering::Relaxed) + 1)
    }
    pub(crate) fn fc(&self) -> String {
        format!("fc_{}", self.fc.fetch_add(1, Ordering::Relaxed) + 1)
    }
    /// A chat completion's id; counts with `resp_N` (one response, either API).
    pub(crate) fn chatcmpl(&self) -> String {
        format!("chatcmpl-{}", self.resp.fetch_add(1, Ordering::Relaxed) + 1)
    }
    pub(crate) fn rs(&self) -> String {
        format!("rs_{}", self.rs.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn reset(&self) {
        for c in [&self.resp, &self.msg, &self.fc, &self.rs] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

pub(crate) struct Shared {
    script: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Number of recorded requests, so waiters wake without polling.
    received: watch::Sender<usize>,
    /// TCP connections accepted so far (a client reusing a connection makes fewer than requests).
    connections: AtomicU64,
    pub(crate) ids: IdCounters,
    /// The entries `GET /v1/models` lists (each an object with an `id`); `None`: it answers
    /// 404, like a service without a list.
    pub(crate) models: Mutex<Option<Vec<serde_json::Value>>>,
    /// The `Authorization` header of each `GET /v1/models`.
    pub(crate) model_list_requests: Mutex<Vec<Option<String>>>,
    /// While true, `GET /v1/models` is held unanswered (a service that hangs on its list).
    pub(crate) models_held: watch::Sender<bool>,
    /// `GET /v1/models` requests being held now; one whose client hung up is no longer counted.
    pub(crate) models_waiting: AtomicU64,
}

fn default_models() -> Option<Vec<serde_json::Value>> {
    let [small, large] = DEFAULT_MODELS;
    Some(vec![
        serde_json::json!({ "id": small }),
        serde_json::json!({ "id": large, "context_length": LARGE_MODEL_CONTEXT }),
    ])
}

/// A poisoned lock only means a test thread panicked; the data is still usable for reporting.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn new(script: Vec<Reply>) -> Shared {
        Shared {
            script: Mutex::new(script.into()),
            requests: Mutex::new(Vec::new()),
            received: watch::Sender::new(0),
            connections: AtomicU64::new(0),
            ids: IdCounters::default(),
            models: Mutex::new(default_models()),
            model_list_requests: Mutex::new(Vec::new()),
            models_held: watch::Sender::new(false),
            models_waiting: AtomicU64::new(0),
        }
    }

    pub(crate) fn record(&self, request: RecordedRequest) {
        let mut requests = lock(&self.requests);
        requests.push(request);
        // Updated under the lock so the count never runs ahead of, or behind, the list.
        self.received.send_replace(requests.len());
    }

    pub(crate) fn pop(&self) -> Option<Reply> {
        lock(&self.script).pop_front()
    }

    pub(crate) fn push(&self, replies: impl IntoIterator<Item = Reply>) -> usize {
        let mut script = lock(&self.script);
        script.extend(replies);
        script.len()
    }

    pub(crate) fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.requests).clone()
    }

    pub(crate) fn last_requests(&self, n: usize) -> Vec<RecordedRequest> {
        let requests = lock(&self.requests);
        requests[requests.len().saturating_sub(n)..].to_vec()
    }

    pub(crate) fn reset(&self) {
        lock(&self.script).clear();
        *lock(&self.models) = default_models();
        lock(&self.model_list_requests).clear();
        self.models_held.send_replace(false);
        let mut requests = lock(&self.requests);
        requests.clear();
        self.received.send_replace(0);
        self.ids.reset();
    }
}

/// How the mock's listening socket treats its connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MockOptions {
    /// Sets `TCP_NODELAY` on every accepted connection (the default), as hosted services do.
    /// `false` leaves Nagle's algorithm on, like some local model servers: a small write then
    /// waits for the client's ACK of the previous one, which shows how a client's delayed ACKs
    /// hold a paced stream back.
    pub nodelay: bool,
}

impl Default for MockOptions {
    fn default() -> Self {
        MockOptions { nodelay: true }
    }
}

/// Handle to a running mock server. Cheap to clone; the server keeps running until the tokio
/// runtime it was started on shuts down or [`MockModel::shutdown`] is called, so dropping the
/// handle early never pulls the endpoint out from under a client.
#[derive(Clone)]
pub struct MockModel {
    shared: Arc<Shared>,
    addr: SocketAddr,
    server: Arc<Mutex<Option<tokio::task::JoinHandle<()>>>>,
}

impl std::fmt::Debug for MockModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockModel").field("addr", &self.addr).finish()
    }
}

impl MockModel {
    /// Binds 127.0.0.1:0 and serves in a tokio task on the current runtime.
    pub async fn start(script: Vec<Reply>) -> std::io::Result<MockModel> {
        MockModel::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), script).await
    }

    /// Like [`MockModel::start`] on a chosen address (the binary's `--port`).
    pub async fn start_on(addr: SocketAddr, script: Vec<Reply>) -> std::io::Result<MockModel> {
        MockModel::start_with(addr, script, MockOptions::default()).await
    }

    /// Like [`MockModel::start_on`] with socket options (the binary's `--no-nodelay`).
    pub async fn start_with(addr: SocketAddr, script: Vec<Reply>, options: MockOptions) -> std::io::Result<MockModel> {
        use axum::serve::ListenerExt;
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::new(script));
        let app = server::router(shared.clone());
        // axum leaves the accepted sockets as the kernel made them (Nagle on), so the choice is
        // made here, on every connection.
        let nodelay = options.nodelay;
        let counted = shared.clone();
        let listener = listener.tap_io(move |stream| {
            counted.connections.fetch_add(1, Ordering::Relaxed);
            if let Err(e) = stream.set_nodelay(nodelay) {
                tracing::warn!("mock model: could not set TCP_NODELAY={nodelay}: {e}");
            }
        });
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!("mock model server stopped: {e}");
            }
        });
        tracing::debug!("mock model listening on {addr}");
        Ok(MockModel { shared, addr, server: Arc::new(Mutex::new(Some(task))) })
    }

    /// e.g. `http://127.0.0.1:41234/v1` — what `OPENAI_BASE_URL` should be set to.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The bound socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends replies to the script.
    pub fn push(&self, reply: Reply) {
        self.shared.push([reply]);
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::Relaxed)
    }

    /// Number of scripted replies not yet consumed.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).len()
    }

    /// Every model request received so far (either API), in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests()
    }

    /// The last `n` requests received (fewer if fewer came), in order: what a
    /// long run needs without copying every earlier body.
    pub fn last_requests(&self, n: usize) -> Vec<RecordedRequest> {
        self.shared.last_requests(n)
    }

    /// Waits until at least `n` requests were received, or the timeout elapses (then returns
    /// what is there).
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> Vec<RecordedRequest> {
        let mut rx = self.shared.received.subscribe();
        // The sender lives in `shared`, which we hold, so `wait_for` cannot fail on a closed
        // channel; a timeout simply falls through to reporting what arrived.
        let _ = tokio::time::timeout(timeout, rx.wait_for(|&count| count >= n)).await;
        self.requests()
    }

    /// Sets the ids `GET /v1/models` lists (with no other fields); `None` makes it answer 404.
    pub fn set_models(&self, models: Option<&[&str]>) {
        *lock(&self.shared.models) = models.map(|m| m.iter().map(|id| serde_json::json!({ "id": id })).collect());
    }

    /// Sets the entries `GET /v1/models` lists, each an object with an `id` and whatever
    /// other fields a service gives (e.g. `{"id": "m", "max_model_len": 8192}`); the usual
    /// `object`, `created` and `owned_by` are added where an entry has none. `None` makes
    /// it answer 404.
    pub fn set_model_entries(&self, entries: Option<Vec<serde_json::Value>>) {
        *lock(&self.shared.models) = entries;
    }

    /// Holds every `GET /v1/models` unanswered until called with `false` (then they are
    /// answered): a model service that hangs on its list.
    pub fn hold_models(&self, held: bool) {
        self.shared.models_held.send_replace(held);
    }

    /// How many `GET /v1/models` are held unanswered now (whose clients still wait).
    pub fn models_waiting(&self) -> u64 {
        self.shared.models_waiting.load(Ordering::SeqCst)
    }

    /// The `Authorization` header of each `GET /v1/models` so far.
    pub fn model_list_requests(&self) -> Vec<Option<String>> {
        lock(&self.shared.model_list_requests).clone()
    }

    /// Clears the script, the recorded requests and the id counters, and restores the model list.
    pub fn reset(&self) {
        self.shared.reset();
    }

    /// Stops accepting connections; once this returns, new connects are refused (to test an
    /// unreachable model). Streams already in flight run to their scripted end.
    pub async fn shutdown(&self) {
        let task = lock(&self.server).take();
        if let Some(task) = task {
            task.abort();
            // Awaiting the aborted task guarantees the listener has been dropped.
            let _ = task.await;
        }
    }
}
