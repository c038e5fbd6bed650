//! A small typed test client for the real `mino-server` binary.
//!
//! [`Server::spawn`] starts the binary with its own `MINO_HOME` (a temporary
//! directory unless one is given), `OPENAI_BASE_URL` pointing at a
//! [`mino_mock_model::MockModel`], and the sentinel [`API_KEY`]; it talks
//! `Content-Length`-framed JSON-RPC over the child's real stdin/stdout and
//! keeps its stderr in a file ([`Server::stderr`]).
//!
//! # Which binary
//!
//! `MINO_SERVER_BIN` if set; otherwise `mino-server` in the target directory
//! of this test executable (`target/<profile>/mino-server`). `cargo test
//! --workspace` builds it, since it is a workspace member. When it is missing
//! or older than its sources, [`server_bin`] runs `cargo build -p mino-server`
//! (same profile) once, so `cargo test -p mino-e2e` works on its own too.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use mino_framing::{Frame, FrameCodec};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin};
use tokio::sync::{oneshot, Notify};
use tokio_util::codec::FramedRead;

pub use mino_mock_model::{MockModel, RecordedRequest, Reply};
pub use mino_protocol as wire;

/// The API key every spawned server gets; it must never show up in a
/// journal or a log.
pub const API_KEY: &str = "sk-e2e-SENTINEL-4d1f0c-never-log-me";

/// Generous: no test asserts on timing, a slow machine must not fail it.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// A JSON-RPC error answered by the server.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.code, self.message)
    }
}

impl std::error::Error for RpcError {}

/// A notification as received: method and params.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub method: String,
    pub params: Value,
}

impl Notification {
    pub fn turn_id(&self) -> Option<&str> {
        self.params.get("turnId").and_then(Value::as_str)
    }

    pub fn seq(&self) -> Option<u64> {
        self.params.get("seq").and_then(Value::as_u64)
    }

    /// The params as a wire type.
    pub fn parse<T: DeserializeOwned>(&self) -> T {
        serde_json::from_value(self.params.clone())
            .unwrap_or_else(|e| panic!("{} params do not parse: {e}: {}", self.method, self.params))
    }
}

#[derive(Default)]
struct Inbox {
    pending: HashMap<i64, oneshot::Sender<Value>>,
    /// Notifications not yet taken by `next_notification`.
    queue: VecDeque<Notification>,
    /// Every notification, in arrival order.
    log: Vec<Notification>,
    /// Responses whose id is null or unknown (answers to malformed input).
    orphans: VecDeque<Value>,
    closed: bool,
}

/// One running `mino-server`.
pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    inbox: Arc<Mutex<Inbox>>,
    arrived: Arc<Notify>,
    next_id: i64,
    home: PathBuf,
    stderr_path: PathBuf,
    _tempdir: Option<Arc<tempfile::TempDir>>,
}

/// Options for [`Server::spawn_with`].
#[derive(Debug, Clone, Default)]
pub struct Spawn {
    /// `MINO_HOME`; a fresh temporary directory when `None`.
    pub home: Option<PathBuf>,
    /// `OPENAI_BASE_URL`.
    pub base_url: Option<String>,
    /// `RUST_LOG` (default `info`).
    pub rust_log: Option<String>,
    /// The server's working directory.
    pub cwd: Option<PathBuf>,
    /// The binary; [`server_bin`] when `None`.
    pub bin: Option<PathBuf>,
    /// `FAILPOINTS` (needs a binary built with `--features failpoints`, see
    /// [`failpoints_server_bin`]).
    pub failpoints: Option<String>,
    /// More environment variables for the server, set last (so they can override `MINO_HOME`).
    pub env: Vec<(String, String)>,
    /// Start the server as the leader of a process group of its own.
    pub own_process_group: bool,
    /// Command-line arguments (none by default).
    pub args: Vec<String>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

fn newest_source(dir: &Path) -> std::time::SystemTime {
    let mut newest = std::time::UNIX_EPOCH;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return newest;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let time = if path.is_dir() {
            newest_source(&path)
        } else {
            entry.metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH)
        };
        newest = newest.max(time);
    }
    newest
}

/// The `mino-server` binary to test (see the crate docs).
pub fn server_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("MINO_SERVER_BIN").filter(|v| !v.is_empty()) {
            return PathBuf::from(bin);
        }
        let exe = std::env::current_exe().expect("current_exe");
        // target/<profile>/deps/<test> → target/<profile>/mino-server
        let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>");
        let bin = profile_dir.join("mino-server");
        let root = workspace_root();
        let sources = ["server/mino-server", "server/acp", "server/core", "server/protocol"]
            .iter()
            .map(|d| newest_source(&root.join(d)))
            .max()
            .unwrap_or(std::time::UNIX_EPOCH);
        let built = bin.metadata().and_then(|m| m.modified()).ok();
        if built.is_none_or(|t| t < sources) {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut cmd = std::process::Command::new(cargo);
            cmd.current_dir(&root).args(["build", "-p", "mino-server"]);
            if profile_dir.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            let status = cmd.status().expect("running cargo build -p mino-server");
            assert!(status.success(), "cargo build -p mino-server failed");
        }
        assert!(bin.exists(), "{} is missing: run `cargo build -p mino-server` or set MINO_SERVER_BIN", bin.display());
        bin
    })
    .clone()
}

/// A `mino-server` built with `--features failpoints`, for crash injection
/// through `FAILPOINTS`: `MINO_SERVER_FAILPOINTS_BIN` if set; else, when
/// `MINO_E2E_FAILPOINTS=1`, one built on demand into its own target directory
/// (`target/failpoints`, so the default binary is never replaced); else `None`
/// and the tests that need it are skipped (the first build takes a while).
pub fn failpoints_server_bin() -> Option<PathBuf> {
    static BIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("MINO_SERVER_FAILPOINTS_BIN").filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(bin));
        }
        if std::env::var("MINO_E2E_FAILPOINTS").ok().as_deref() != Some("1") {
            // CI runs every crash test: scripts/test builds the binary and
            // names it, so a run without it is a broken run, not a skip.
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set but MINO_SERVER_FAILPOINTS_BIN is not: run the tests through scripts/test, which builds it"
            );
            return None;
        }
        let exe = std::env::current_exe().expect("current_exe");
        let target = exe.ancestors().nth(3).expect("target dir").to_path_buf();
        let target_dir = target.join("failpoints");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = std::process::Command::new(cargo)
            .current_dir(workspace_root())
            .args(["build", "-p", "mino-server", "--features", "failpoints", "--target-dir"])
            .arg(&target_dir)
            .status()
            .expect("running cargo build --features failpoints");
        assert!(status.success(), "cargo build -p mino-server --features failpoints failed");
        Some(target_dir.join("debug").join("mino-server"))
    })
    .clone()
}

/// `message` as one `Content-Length` frame, for tests that write raw bytes.
pub fn frame(message: &Value) -> Vec<u8> {
    mino_framing::frame(message.to_string().as_bytes())
}

/// Reads `Content-Length` frames from the server's stdout into the inbox.
async fn read_loop(stdout: tokio::process::ChildStdout, inbox: Arc<Mutex<Inbox>>, arrived: Arc<Notify>) {
    let mut frames = FramedRead::new(stdout, FrameCodec::new());
    while let Some(Ok(frame)) = frames.next().await {
        let body = match frame {
            Frame::Body(body) => body,
            Frame::Malformed(why) => panic!("server wrote a malformed frame: {why}"),
        };
        let message: Value = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("server wrote invalid JSON ({e}): {}", String::from_utf8_lossy(&body)));
        let mut inbox = lock(&inbox);
        if let Some(method) = message.get("method").and_then(Value::as_str) {
            let n = Notification {
                method: method.to_string(),
                params: message.get("params").cloned().unwrap_or(Value::Null),
            };
            inbox.log.push(n.clone());
            inbox.queue.push_back(n);
        } else {
            let sender = message.get("id").and_then(Value::as_i64).and_then(|id| inbox.pending.remove(&id));
            match sender {
                Some(sender) => {
                    let _ = sender.send(message);
                }
                None => inbox.orphans.push_back(message),
            }
        }
        drop(inbox);
        arrived.notify_waiters();
    }
    let mut inbox = lock(&inbox);
    inbox.closed = true;
    inbox.pending.clear();
    drop(inbox);
    arrived.notify_waiters();
}

impl Server {
    /// Spawns a server on a fresh `MINO_HOME`, talking to `mock`.
    pub async fn spawn(mock: &MockModel) -> Server {
        Server::spawn_with(Spawn { base_url: Some(mock.base_url()), ..Default::default() }).await
    }

    /// Spawns a server on `home` (to reopen a session), talking to `mock`.
    pub async fn spawn_in(home: &Path, mock: &MockModel) -> Server {
        Server::spawn_with(Spawn {
            home: Some(home.to_path_buf()),
            base_url: Some(mock.base_url()),
            ..Default::default()
        })
        .await
    }

    pub async fn spawn_with(options: Spawn) -> Server {
        let (home, tempdir) = match options.home {
            Some(home) => (home, None),
            None => {
                let dir = tempfile::tempdir().expect("tempdir");
                (dir.path().to_path_buf(), Some(Arc::new(dir)))
            }
        };
        std::fs::create_dir_all(&home).expect("create MINO_HOME");
        let stderr_path = home.join(format!("server-{}.stderr.log", unique()));
        let stderr = std::fs::File::create(&stderr_path).expect("stderr log file");
        let mut cmd = tokio::process::Command::new(options.bin.unwrap_or_else(server_bin));
        cmd.args(&options.args)
            .env("MINO_HOME", &home)
            .env("OPENAI_API_KEY", API_KEY)
            .env("OPENAI_BASE_URL", options.base_url.unwrap_or_else(|| "http://127.0.0.1:9/v1".into()))
            .env("MINO_MODEL", "mock-model")
            .env("RUST_LOG", options.rust_log.unwrap_or_else(|| "info".into()))
            .env_remove("FAILPOINTS")
            .envs(options.failpoints.map(|f| ("FAILPOINTS", f)))
            .envs(options.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .kill_on_drop(true);
        if let Some(cwd) = &options.cwd {
            cmd.current_dir(cwd);
        }
        if options.own_process_group {
            cmd.process_group(0);
        }
        let mut child = cmd.spawn().expect("spawn mino-server");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let inbox = Arc::new(Mutex::new(Inbox::default()));
        let arrived = Arc::new(Notify::new());
        tokio::spawn(read_loop(stdout, inbox.clone(), arrived.clone()));
        Server { child, stdin, inbox, arrived, next_id: 0, home, stderr_path, _tempdir: tempdir }
    }

    /// `MINO_HOME` of this server.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Keeps the temporary home alive for as long as the returned handle lives,
    /// so a test can reopen the session after this server is gone.
    pub fn keep_home(&self) -> Option<Arc<tempfile::TempDir>> {
        self._tempdir.clone()
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// The server's peak resident memory so far (`VmHWM`), in bytes.
    pub fn peak_rss(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?)).ok()?;
        let kib: u64 =
            status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kib * 1024)
    }

    /// Everything the server logged so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// Writes raw bytes to the server's stdin.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is closed");
        stdin.write_all(bytes).await.expect("write to server stdin");
        stdin.flush().await.expect("flush server stdin");
    }

    /// Writes one message in a `Content-Length` frame.
    pub async fn send_message(&mut self, message: &Value) {
        self.send_raw(&frame(message)).await;
    }

    /// Sends a request given as a whole message (its `id` is replaced) and
    /// waits for the answer.
    pub async fn request_message(&mut self, mut message: Value) -> Result<Value, RpcError> {
        self.next_id += 1;
        let id = self.next_id;
        message["id"] = json!(id);
        let (tx, rx) = oneshot::channel();
        lock(&self.inbox).pending.insert(id, tx);
        self.send_message(&message).await;
        let method = message.get("method").cloned().unwrap_or(Value::Null);
        let response = tokio::time::timeout(TIMEOUT, rx)
            .await
            .unwrap_or_else(|_| panic!("no answer to {method} within {TIMEOUT:?}; stderr:\n{}", self.stderr()))
            .unwrap_or_else(|_| {
                panic!("the server closed its output before answering {method}; stderr:\n{}", self.stderr())
            });
        into_result(response)
    }

    /// A request; `Value::Null` params are sent as no `params` member.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, RpcError> {
        let mut message = json!({ "jsonrpc": "2.0", "method": method });
        if !params.is_null() {
            message["params"] = params;
        }
        self.request_message(message).await
    }

    /// A request with typed params and result.
    pub async fn call<P: serde::Serialize, R: DeserializeOwned>(
        &mut self,
        method: &str,
        params: &P,
    ) -> Result<R, RpcError> {
        let params = serde_json::to_value(params).expect("params serialize");
        let value = self.request(method, params).await?;
        Ok(serde_json::from_value(value.clone())
            .unwrap_or_else(|e| panic!("{method} result does not parse: {e}: {value}")))
    }

    /// `mino/approval` for the call `turn_id`/`call_id` (the pair a
    /// `mino/approvalRequest` names).
    pub async fn approval(
        &mut self,
        turn_id: &str,
        call_id: &str,
        decision: wire::Decision,
    ) -> Result<Value, RpcError> {
        let params = wire::ApprovalParams::new(turn_id, call_id, decision);
        self.call(wire::method::APPROVAL, &params).await
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        let mut message = json!({ "jsonrpc": "2.0", "method": method });
        if !params.is_null() {
            message["params"] = params;
        }
        self.send_message(&message).await;
    }

    /// `initialize` with these options, then `initialized`. Returns the
    /// result, or the error that refused it (then `initialized` is not sent).
    pub async fn initialize(&mut self, options: &wire::InitializationOptions) -> Result<Value, RpcError> {
        let params = json!({
            "processId": null,
            "capabilities": {},
            "clientInfo": { "name": "mino-e2e" },
            "initializationOptions": options,
        });
        let result = self.request("initialize", params).await?;
        self.notify("initialized", json!({})).await;
        Ok(result)
    }

    /// `capabilities.experimental.mino` of an initialize result.
    pub fn capabilities(result: &Value) -> wire::ServerCapabilities {
        serde_json::from_value(result["capabilities"]["experimental"]["mino"].clone())
            .unwrap_or_else(|e| panic!("no mino capabilities ({e}) in {result}"))
    }

    /// Waits for the next notification named `method` (earlier notifications
    /// of other methods stay queued).
    pub async fn next_notification(&mut self, method: &str, timeout: Duration) -> Notification {
        let found = self.wait_for(timeout, |queue| {
            let i = queue.iter().position(|n| n.method == method)?;
            queue.remove(i)
        });
        found.await.unwrap_or_else(|| panic!("no {method} notification within {timeout:?}; stderr:\n{}", self.stderr()))
    }

    /// Waits for the next notification of turn `turn_id`, whatever its
    /// method (earlier notifications of other turns stay queued).
    pub async fn next_notification_of(&mut self, turn_id: &str, timeout: Duration) -> Notification {
        let turn = turn_id.to_string();
        let found = self.wait_for(timeout, move |queue| {
            let i = queue.iter().position(|n| n.turn_id() == Some(turn.as_str()))?;
            queue.remove(i)
        });
        found.await.unwrap_or_else(|| {
            panic!("no notification of turn {turn_id} within {timeout:?}; stderr:\n{}", self.stderr())
        })
    }

    /// Takes every queued notification up to and including the
    /// `mino/turnEnded` of `turn_id`.
    pub async fn turn_notifications(&mut self, turn_id: &str, timeout: Duration) -> Vec<Notification> {
        let turn = turn_id.to_string();
        let found = self.wait_for(timeout, move |queue| {
            let end = queue
                .iter()
                .position(|n| n.method == wire::method::TURN_ENDED && n.turn_id() == Some(turn.as_str()))?;
            Some(queue.drain(..=end).collect::<Vec<_>>())
        });
        found
            .await
            .unwrap_or_else(|| panic!("turn {turn_id} did not end within {timeout:?}; stderr:\n{}", self.stderr()))
    }

    /// Waits for the next response that answered no request of ours (the
    /// answer to malformed input, with `id: null`).
    pub async fn next_orphan_response(&mut self, timeout: Duration) -> Value {
        match self.wait_inbox(timeout, |inbox| inbox.orphans.pop_front()).await {
            Some(response) => response,
            None => panic!("no id-less response within {timeout:?}; stderr:\n{}", self.stderr()),
        }
    }

    async fn wait_for<T>(
        &self,
        timeout: Duration,
        mut take: impl FnMut(&mut VecDeque<Notification>) -> Option<T>,
    ) -> Option<T> {
        self.wait_inbox(timeout, move |inbox| take(&mut inbox.queue)).await
    }

    /// Waits until `take` finds something in the inbox, the server's output
    /// closes, or the timeout passes.
    async fn wait_inbox<T>(&self, timeout: Duration, mut take: impl FnMut(&mut Inbox) -> Option<T>) -> Option<T> {
        let inbox = self.inbox.clone();
        let arrived = self.arrived.clone();
        let wait = async move {
            loop {
                let notified = arrived.notified();
                {
                    let mut inbox = lock(&inbox);
                    if let Some(found) = take(&mut inbox) {
                        return Some(found);
                    }
                    if inbox.closed {
                        return None;
                    }
                }
                notified.await;
            }
        };
        tokio::time::timeout(timeout, wait).await.ok().flatten()
    }

    /// Every notification received so far, in order.
    pub fn notification_log(&self) -> Vec<Notification> {
        lock(&self.inbox).log.clone()
    }

    /// Closes the server's stdin (the client goes away).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// SIGKILL, from outside.
    pub async fn kill(&mut self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: plain kill(2) on our own child's pid.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
        }
        let _ = self.wait(TIMEOUT).await;
    }

    /// Waits for the process to exit.
    pub async fn wait(&mut self, timeout: Duration) -> std::process::ExitStatus {
        match tokio::time::timeout(timeout, self.child.wait()).await {
            Ok(Ok(status)) => status,
            Ok(Err(e)) => panic!("waiting for mino-server: {e}"),
            Err(_) => panic!("mino-server did not exit within {timeout:?}; stderr:\n{}", self.stderr()),
        }
    }
}

fn into_result(response: Value) -> Result<Value, RpcError> {
    if let Some(error) = response.get("error") {
        return Err(RpcError {
            code: error.get("code").and_then(Value::as_i64).unwrap_or_default(),
            message: error.get("message").and_then(Value::as_str).unwrap_or_default().to_string(),
            data: error.get("data").cloned(),
        });
    }
    Ok(response.get("result").cloned().unwrap_or(Value::Null))
}

fn unique() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!("{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// The session files under `home`.
pub fn session_files(home: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(home.join("sessions"))
        .map(|entries| {
            entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "jsonl")).collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// The journal's records as JSON values, one per line.
pub fn journal_records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("journal line is not JSON ({e}): {line}")))
        .collect()
}

/// How many records of `kind` the journal holds.
pub fn count_kind(path: &Path, kind: &str) -> usize {
    journal_records(path).iter().filter(|r| r["kind"] == kind).count()
}

/// A compact view of a model request's `input` items, for order assertions:
/// `user: <text>`, `assistant: <text>`, `function_call <call_id>`,
/// `function_call_output <call_id> <status>`, `reasoning`.
///
/// A Chat Completions request's `messages` are read back as those items
/// first ([`replayed_items`]), so one assertion holds under both providers.
pub fn input_summary(body: &Value) -> Vec<String> {
    replayed_items(body)
        .iter()
        .map(|item| {
            let text = |item: &Value| match item.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => {
                    parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("")
                }
                _ => String::new(),
            };
            match item.get("type").and_then(Value::as_str) {
                Some("function_call") => {
                    format!("function_call {}", item["call_id"].as_str().unwrap_or("?"))
                }
                Some("function_call_output") => {
                    let output: Value =
                        item["output"].as_str().and_then(|s| serde_json::from_str(s).ok()).unwrap_or(Value::Null);
                    format!(
                        "function_call_output {} {}",
                        item["call_id"].as_str().unwrap_or("?"),
                        output["status"].as_str().unwrap_or("?")
                    )
                }
                Some("reasoning") => "reasoning".to_string(),
                _ => format!("{}: {}", item["role"].as_str().unwrap_or("?"), text(item)),
            }
        })
        .collect()
}

/// The replayed conversation of a model request as Responses API input
/// items: its `input`, or its Chat Completions `messages` read back
/// (the `system` message left out; an assistant message's text, then one
/// `function_call` per tool call; a `tool` message as a
/// `function_call_output`).
pub fn replayed_items(body: &Value) -> Vec<Value> {
    if let Some(items) = body.get("input").and_then(Value::as_array) {
        return items.clone();
    }
    let mut items = Vec::new();
    for message in body.get("messages").and_then(Value::as_array).into_iter().flatten() {
        match message["role"].as_str() {
            Some("system") => {}
            Some("tool") => items.push(serde_json::json!({
                "type": "function_call_output",
                "call_id": message["tool_call_id"],
                "output": message["content"],
            })),
            role => {
                if let Some(text) = message["content"].as_str().filter(|t| !t.is_empty()) {
                    items.push(serde_json::json!({ "type": "message", "role": role, "content": text }));
                }
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    items.push(serde_json::json!({
                        "type": "function_call",
                        "call_id": call["id"],
                        "name": call["function"]["name"],
                        "arguments": call["function"]["arguments"],
                    }));
                }
            }
        }
    }
    items
}

/// The two wires Mino speaks to a model service (`MINO_PROVIDER`); the mock
/// speaks both, so a test can run under each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    Responses,
    ChatCompletions,
}

impl Provider {
    /// The value of `MINO_PROVIDER`.
    pub fn name(self) -> &'static str {
        match self {
            Provider::Responses => "responses",
            Provider::ChatCompletions => "chat-completions",
        }
    }

    /// The path the mock sees model requests on.
    pub fn path(self) -> &'static str {
        match self {
            Provider::Responses => "/v1/responses",
            Provider::ChatCompletions => "/v1/chat/completions",
        }
    }

    /// A server on `home` (a fresh one when `None`) talking to `mock` through this provider.
    pub fn spawn(self, home: Option<&Path>, mock: &MockModel) -> Spawn {
        Spawn {
            home: home.map(Path::to_path_buf),
            base_url: Some(mock.base_url()),
            env: vec![("MINO_PROVIDER".into(), self.name().into())],
            ..Spawn::default()
        }
    }
}

/// Runs each named `async fn(Provider)` as two tests, `responses::<name>`
/// and `chat_completions::<name>`: one body, both wires.
#[macro_export]
macro_rules! under_both_providers {
    ($($name:ident),+ $(,)?) => {
        mod responses {
            $(
                #[tokio::test(flavor = "multi_thread")]
                async fn $name() {
                    super::$name($crate::Provider::Responses).await
                }
            )+
        }
        mod chat_completions {
            $(
                #[tokio::test(flavor = "multi_thread")]
                async fn $name() {
                    super::$name($crate::Provider::ChatCompletions).await
                }
            )+
        }
    };
}

/// A directory for commands to run in, inside `home` (kept with it).
pub fn work_dir(home: &Path) -> PathBuf {
    let dir = home.join("work");
    std::fs::create_dir_all(&dir).expect("work dir");
    dir
}

/// Initializes `server` with commands in `cwd` and returns its `mino/recovery`.
pub async fn open(server: &mut Server, cwd: &Path) -> wire::RecoveryNotification {
    server.initialize(&options_in(cwd)).await.expect("initialize");
    server.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse()
}

/// Sends `text` as a question; returns the new turn's id.
pub async fn chat(server: &mut Server, text: &str) -> String {
    let result: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: text.into(), ..Default::default() })
        .await
        .expect("chat");
    result.turn_id
}

/// The next `mino/approvalRequest`.
pub async fn next_approval_request(server: &mut Server) -> wire::ApprovalRequest {
    server.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await.parse()
}

/// Waits for `turn_id` to end and returns its `mino/turnEnded`.
pub async fn end_of(server: &mut Server, turn_id: &str) -> wire::TurnEnded {
    server.turn_notifications(turn_id, TIMEOUT).await.last().expect("turnEnded").parse()
}

/// Options that open (or create) the most recent session with commands in `cwd`.
pub fn options_in(cwd: &Path) -> wire::InitializationOptions {
    wire::InitializationOptions { cwd: Some(cwd.display().to_string()), ..Default::default() }
}

/// Processes of process group `pgid` that are still alive (zombies, which
/// can do nothing more and wait only to be reaped, are not counted), read
/// from `/proc`.
pub fn live_group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
            // After the command name's closing parenthesis: state, ppid, pgrp.
            let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { return false };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.len() > 2 && fields[0] != "Z" && fields[2].parse::<i32>().ok() == Some(pgid)
        })
        .collect()
}

/// Waits until `check` holds, polling every 10 ms, for at most `deadline`.
/// Returns whether it held.
pub async fn poll_until(deadline: Duration, mut check: impl FnMut() -> bool) -> bool {
    let end = tokio::time::Instant::now() + deadline;
    loop {
        if check() {
            return true;
        }
        if tokio::time::Instant::now() >= end {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A command for tests that must kill `mino-server` itself from inside an
/// approved command: commands run under a supervisor, so the server is the
/// parent of `$PPID`.
pub const KILL_SERVER: &str = "kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)";
