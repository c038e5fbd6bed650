//! A lean blocking client for the real `mino-server` over stdio: frames out
//! on stdin, and a reader thread that timestamps every `mino/textDelta` the
//! moment its frame is read (before anything else is done with it), so the
//! client's own cost stays out of the latency it reports.
//!
//! The same client drives another agent server speaking JSON-RPC over stdio
//! with one message per line (see `peers.rs`): only the framing and the name
//! of the text-delta notification differ.

use std::borrow::Cow;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use mino_framing::{BlockingFrameReader, Frame};
use mino_mock_model::monotonic_nanos;
use serde::Deserialize;
use serde_json::{json, Value};

/// `mino-server` next to this executable (target/release), or `MINO_BENCH_SERVER` (to
/// measure another build of it, e.g. before and after a change).
pub fn server_bin() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("MINO_BENCH_SERVER") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe()?;
    let bin = exe.parent().context("exe dir")?.join("mino-server");
    if !bin.exists() {
        bail!("{} is missing; scripts/bench builds it (cargo build --release -p mino-server)", bin.display());
    }
    Ok(bin)
}

/// The member the reader adds to every message other than a text delta:
/// [`monotonic_nanos`] when its frame was read.
pub const READ_AT: &str = "_readAtNanos";

/// What the reader thread saw of the text deltas.
#[derive(Default)]
pub struct DeltaLog {
    /// (read at, stamp in the delta or 0) per delta, monotonic ns.
    pub deltas: Vec<(u64, u64)>,
}

/// How a server's messages are framed on stdio, and which notification carries streamed text.
#[derive(Clone, Copy)]
pub struct Wire {
    /// `Content-Length` headers (LSP style) when true; one JSON message per line when false.
    pub content_length: bool,
    /// The method of the text-delta notification, quoted as it appears in a frame
    /// (`"mino/textDelta"`): found by a byte search before anything is parsed.
    pub delta_method: &'static str,
}

/// Mino's own wire.
pub const MINO_WIRE: Wire = Wire { content_length: true, delta_method: "\"mino/textDelta\"" };

pub struct Server {
    child: Child,
    wire: Wire,
    stdin: Option<ChildStdin>,
    messages: mpsc::Receiver<Value>,
    reader: Option<JoinHandle<DeltaLog>>,
    next_id: i64,
    /// When set, every message `wait_for` receives is kept here (to report what a server said).
    pub seen: Option<Vec<Value>>,
}

#[derive(Deserialize)]
struct DeltaFrame<'a> {
    #[serde(borrow)]
    params: DeltaParams<'a>,
}

#[derive(Deserialize)]
struct DeltaParams<'a> {
    #[serde(borrow)]
    delta: Cow<'a, str>,
}

fn read_frames(stdout: impl Read, wire: Wire, messages: mpsc::Sender<Value>) -> DeltaLog {
    let mut log = DeltaLog::default();
    let needle = wire.delta_method.as_bytes();
    if wire.content_length {
        let mut frames = BlockingFrameReader::new(stdout);
        loop {
            let body = match frames.next_frame() {
                Ok(Some(Frame::Body(body))) => body,
                // A server that writes a bad frame ends the run, as one that closes its output.
                Ok(Some(Frame::Malformed(_)) | None) | Err(_) => return log,
            };
            if !handle_frame(&body, needle, &mut log, &messages) {
                return log;
            }
        }
    }
    let mut input = BufReader::with_capacity(1 << 16, stdout);
    let mut body = Vec::new();
    loop {
        body.clear();
        match input.read_until(b'\n', &mut body) {
            Ok(0) | Err(_) => return log,
            Ok(_) => {}
        }
        if !handle_frame(&body, needle, &mut log, &messages) {
            return log;
        }
    }
}

/// Stamps a text delta the moment its frame is read, or passes any other message on; false
/// once nobody listens.
fn handle_frame(body: &[u8], needle: &[u8], log: &mut DeltaLog, messages: &mpsc::Sender<Value>) -> bool {
    let read_at = monotonic_nanos();
    if body.windows(needle.len()).any(|w| w == needle) {
        if let Ok(frame) = serde_json::from_slice::<DeltaFrame>(body) {
            // A server whose client fell behind sends several deltas joined
            // in one notification (Mino merges them): each stamp counts.
            let stamps: Option<Vec<u64>> = frame.params.delta.split_whitespace().map(|s| s.parse().ok()).collect();
            match stamps.filter(|s| !s.is_empty()) {
                Some(stamps) => log.deltas.extend(stamps.into_iter().map(|stamp| (read_at, stamp))),
                None => log.deltas.push((read_at, 0)),
            }
            return true;
        }
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(mut value) => {
            // When the frame was read, for intervals between messages that
            // leave out the channel to the reading thread.
            if let Some(object) = value.as_object_mut() {
                object.insert(READ_AT.into(), read_at.into());
            }
            messages.send(value).is_ok()
        }
        Err(_) => true,
    }
}

impl Server {
    /// Spawns the server with `home` as `MINO_HOME` and `base_url` as the model.
    pub fn spawn(home: &Path, base_url: &str) -> Result<Server> {
        // MINO_BENCH_WRAP="perf record -g -o FILE --" profiles the server.
        let wrap: Vec<String> =
            std::env::var("MINO_BENCH_WRAP").unwrap_or_default().split_whitespace().map(String::from).collect();
        let mut command = match wrap.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(server_bin()?);
                c
            }
            None => Command::new(server_bin()?),
        };
        command
            .env("MINO_HOME", home)
            .env("OPENAI_BASE_URL", base_url)
            .env("OPENAI_API_KEY", "sk-bench")
            .env("MINO_MODEL", "bench-model")
            .env("RUST_LOG", "warn")
            .current_dir(home);
        Server::spawn_command(command, MINO_WIRE)
    }

    /// Spawns any stdio JSON-RPC server (environment and directory already set on `command`).
    pub fn spawn_command(mut command: Command, wire: Wire) -> Result<Server> {
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().context("stdout")?;
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || read_frames(stdout, wire, tx));
        Ok(Server { child, wire, stdin, messages: rx, reader: Some(reader), next_id: 1, seen: None })
    }

    /// SIGKILLs the server (only its own process: what it started lives on if it can) and
    /// reaps it.
    pub fn kill(mut self) -> Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        drop(self.stdin.take());
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        Ok(())
    }

    fn send(&mut self, message: &Value) -> Result<()> {
        let body = serde_json::to_vec(message)?;
        let stdin = self.stdin.as_mut().context("stdin closed")?;
        let frame = if self.wire.content_length {
            mino_framing::frame(&body)
        } else {
            let mut frame = body;
            frame.push(b'\n');
            frame
        };
        stdin.write_all(&frame)?;
        stdin.flush()?;
        Ok(())
    }

    /// Answers a request the server sent (e.g. an approval question).
    pub fn respond(&mut self, id: &Value, result: Value) -> Result<()> {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "result": result }))
    }

    pub fn request(&mut self, method: &str, params: Value) -> Result<i64> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))?;
        Ok(id)
    }

    pub fn notify(&mut self, method: &str, params: Value) -> Result<()> {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }))
    }

    /// The next message (response or notification other than a text delta) satisfying `want`.
    pub fn wait_for(&mut self, timeout: Duration, want: impl Fn(&Value) -> bool) -> Result<Value> {
        self.wait_for_any(timeout, |m| {
            if let Some(error) = m.get("error") {
                bail!("the server answered an error: {error}");
            }
            Ok(want(m))
        })
    }

    /// The answer to request `id`, an error included.
    pub fn wait_reply(&mut self, id: i64, timeout: Duration) -> Result<Value> {
        self.wait_for_any(timeout, |m| Ok(m.get("id").and_then(Value::as_i64) == Some(id) && m.get("method").is_none()))
    }

    fn wait_for_any(&mut self, timeout: Duration, want: impl Fn(&Value) -> Result<bool>) -> Result<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.messages.recv_timeout(left).context("no answer from the server in time")?;
            if let Some(seen) = &mut self.seen {
                seen.push(message.clone());
            }
            if want(&message)? {
                return Ok(message);
            }
        }
    }

    pub fn wait_response(&mut self, id: i64, timeout: Duration) -> Result<Value> {
        self.wait_for(timeout, |m| m.get("id").and_then(Value::as_i64) == Some(id) && m.get("method").is_none())
    }

    /// `initialize` with these options; returns once it is answered.
    pub fn initialize(&mut self, options: Value) -> Result<Value> {
        let id = self.request(
            "initialize",
            json!({ "processId": null, "capabilities": {}, "initializationOptions": options }),
        )?;
        self.wait_response(id, Duration::from_secs(60))
    }

    /// Closes stdin, waits for the exit, and returns what the reader saw.
    pub fn finish(mut self) -> Result<DeltaLog> {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if self.child.try_wait()?.is_some() {
                break;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.reader.take().context("reader")?.join().map_err(|_| anyhow::anyhow!("reader thread panicked"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.reader.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
