//! A lean blocking client for the real `mino-server` over stdio: frames out
//! on stdin, and a reader thread that timestamps every `mino/textDelta` the
//! moment its frame is read (before anything else is done with it), so the
//! client's own cost stays out of the latency it reports.

use std::borrow::Cow;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use mino_mock_model::monotonic_nanos;
use serde::Deserialize;
use serde_json::{json, Value};

/// `mino-server` next to this executable (target/release).
pub fn server_bin() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let bin = exe.parent().context("exe dir")?.join("mino-server");
    if !bin.exists() {
        bail!("{} is missing; scripts/bench builds it (cargo build --release -p mino-server)", bin.display());
    }
    Ok(bin)
}

/// What the reader thread saw of the text deltas.
#[derive(Default)]
pub struct DeltaLog {
    /// (read at, stamp in the delta or 0) per delta, monotonic ns.
    pub deltas: Vec<(u64, u64)>,
}

pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    messages: mpsc::Receiver<Value>,
    reader: Option<JoinHandle<DeltaLog>>,
    next_id: i64,
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

fn read_frames(stdout: impl Read, messages: mpsc::Sender<Value>) -> DeltaLog {
    let mut input = BufReader::with_capacity(1 << 16, stdout);
    let mut log = DeltaLog::default();
    let mut line = String::new();
    let mut body = Vec::new();
    loop {
        let mut length = None;
        loop {
            line.clear();
            match input.read_line(&mut line) {
                Ok(0) | Err(_) => return log,
                Ok(_) => {}
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse::<usize>().ok();
                }
            }
        }
        let Some(length) = length else { return log };
        body.resize(length, 0);
        if input.read_exact(&mut body).is_err() {
            return log;
        }
        let read_at = monotonic_nanos();
        if body.windows(16).any(|w| w == b"\"mino/textDelta\"") {
            if let Ok(frame) = serde_json::from_slice::<DeltaFrame>(&body) {
                let stamp = frame.params.delta.trim_end().parse::<u64>().unwrap_or(0);
                log.deltas.push((read_at, stamp));
                continue;
            }
        }
        if let Ok(value) = serde_json::from_slice::<Value>(&body) {
            if messages.send(value).is_err() {
                return log;
            }
        }
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
        let mut child = command
            .env("MINO_HOME", home)
            .env("OPENAI_BASE_URL", base_url)
            .env("OPENAI_API_KEY", "sk-bench")
            .env("MINO_MODEL", "bench-model")
            .env("RUST_LOG", "warn")
            .current_dir(home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().context("stdout")?;
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || read_frames(stdout, tx));
        Ok(Server { child, stdin, messages: rx, reader: Some(reader), next_id: 1 })
    }

    fn send(&mut self, message: &Value) -> Result<()> {
        let body = serde_json::to_vec(message)?;
        let stdin = self.stdin.as_mut().context("stdin closed")?;
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend_from_slice(&body);
        stdin.write_all(&frame)?;
        stdin.flush()?;
        Ok(())
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
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.messages.recv_timeout(left).context("no answer from mino-server in time")?;
            if let Some(error) = message.get("error") {
                bail!("mino-server answered an error: {error}");
            }
            if want(&message) {
                return Ok(message);
            }
        }
    }

    pub fn wait_response(&mut self, id: i64, timeout: Duration) -> Result<Value> {
        self.wait_for(timeout, |m| m.get("id").and_then(Value::as_i64) == Some(id))
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
