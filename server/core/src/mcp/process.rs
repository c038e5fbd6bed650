//! Starting a stdio MCP server under supervision, so that it never outlives
//! Mino: [`spawn_stdio`] here, the MCP supervisor ([`main`], `mino-server
//! --supervise-mcp`) there.
//!
//! ```text
//! mino-server ──stdin pipe──────────────────────────────▶ ┐
//!             ◀─stdout pipe───────────────────────────── ┤ inherited as is by the MCP server
//!             ◀─stderr pipe (logged line by line)──────── ┘ (no copy, no added latency)
//!             ◀═fd 3, a socket pair═▶ mino-server --supervise-mcp
//!                 spec, then `s` = stop;        │ spawns, owns the group
//!                 EOF = mino-server gone        ▼
//!                                      the MCP server (own process group)
//! ```
//!
//! The supervisor is started with the MCP server's stdin, stdout and stderr
//! and hands them to the server it spawns, so the protocol stream goes
//! straight between Mino and the server. Its fd 3 is one end of a socket
//! pair whose other end only `mino-server` holds: the spec comes first on
//! it (u32 length, little-endian, then JSON: the command by path, its
//! arguments, its whole environment, its directory), the supervisor answers
//! one JSON line (`{"pid":N}` or `{"error":"…"}`), and from then on a `s`
//! asks it to stop the server and end of file means `mino-server` is gone,
//! whatever killed it (SIGKILL included). Either way the server gets
//! [`EXIT_GRACE`] to exit by itself (its stdin is closed by then), then its
//! whole group SIGTERM, then SIGKILL after [`TERM_GRACE`], so grandchildren
//! (`npx`'s node, `uvx`'s python, a shell's background job) go too. If the
//! server exits by itself, what is left of its group is killed and the
//! supervisor exits with the server's status.
//!
//! The supervisor ignores SIGTERM, SIGHUP and SIGINT (handled, so the
//! server gets the default dispositions back at exec), runs in a process
//! group of its own (a signal to Mino's group does not orphan the server),
//! is not dumpable and allows no core dump ([`crate::hardening`]).
//!
//! The environment: cleared, then [`DEFAULT_ENV_ALLOWLIST`] from Mino's own
//! environment (what Codex passes by default too), then the spec's `env`
//! on top. Mino's API key is never in it (withdrawn at start-up, and not
//! on the list). Values are never logged: the log names the variables at
//! most, and a value of the spec's `env` that shows up in the server's
//! stderr is replaced by `[redacted]` before the line is logged.
//!
//! The server's stderr goes to Mino's log (tracing target
//! [`STDERR_TARGET`], level info, field `server`), line by line, each line
//! cut at [`MAX_STDERR_LINE`] bytes and at most [`STDERR_LINES_PER_SECOND`]
//! lines a second (burst [`STDERR_BURST`]); lines over the rate are counted
//! and the count logged. The last [`STDERR_TAIL`] lines are kept for a
//! status message ([`McpGuard::stderr_tail`]).

use std::collections::{BTreeMap, VecDeque};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

/// The first argument that selects MCP supervise mode.
pub const FLAG: &str = "--supervise-mcp";

/// What a stdio MCP server is: as configured (`[mcp_servers.NAME]`) or as an
/// ACP client passed it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StdioServerSpec {
    /// The server's name, as the person knows it (in errors and the log).
    pub name: String,
    /// A program name looked up in `PATH` (the server's own: `env`'s, else
    /// Mino's), or a path (relative to `cwd`).
    pub command: String,
    pub args: Vec<String>,
    /// Set on top of [`DEFAULT_ENV_ALLOWLIST`]. Values may be secrets: they
    /// are never logged.
    pub env: BTreeMap<String, String>,
    /// The server's working directory; `None` is Mino's own.
    pub cwd: Option<PathBuf>,
}

/// The variables of Mino's environment an MCP server inherits (when set):
/// Codex's default list for MCP servers, plus `LC_CTYPE`. Everything else
/// it needs comes from its spec's `env`.
pub const DEFAULT_ENV_ALLOWLIST: [&str; 11] =
    ["HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "TZ"];

/// After a stop (or Mino gone), how long the server may take to exit by
/// itself before its group gets SIGTERM.
pub const EXIT_GRACE: Duration = Duration::from_millis(200);
/// After SIGTERM, how long before SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_millis(500);

/// The tracing target of the servers' stderr lines.
pub const STDERR_TARGET: &str = "mino::mcp::stderr";
/// A stderr line longer than this is cut (the rest is counted).
pub const MAX_STDERR_LINE: usize = 2048;
/// Lines a second logged from one server's stderr, after a burst of
/// [`STDERR_BURST`].
pub const STDERR_LINES_PER_SECOND: u32 = 50;
pub const STDERR_BURST: u32 = 200;
/// Lines kept for a status message.
pub const STDERR_TAIL: usize = 20;
/// An `env` value shorter than this is not redacted from stderr (`1`,
/// `true`, `en` would blank out ordinary words).
const MIN_REDACTED_VALUE: usize = 6;

/// How long the supervisor may take to answer the spec (an exec of Mino's
/// executable, then a spawn).
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long [`McpGuard::stop`] waits for the supervisor before it kills it
/// and the group itself: well over [`EXIT_GRACE`] + [`TERM_GRACE`].
const STOP_TIMEOUT: Duration = Duration::from_secs(3);
/// No spec is larger (a few KiB in practice).
const MAX_SPEC: usize = 16 * 1024 * 1024;
const MAX_REPLY: usize = 64 * 1024;
const CONTROL_STOP: u8 = b's';
/// The supervisor's fd for its socket to `mino-server`.
const CONTROL_FD: i32 = 3;

/// Why an MCP server could not be started. Each says which server.
#[derive(Debug, thiserror::Error)]
pub enum McpSpawnError {
    #[error("MCP server `{server}`: command `{command}` not found (looked in PATH={path})")]
    CommandNotFound { server: String, command: String, path: String },
    #[error("MCP server `{server}`: command `{}` does not exist", path.display())]
    CommandMissing { server: String, path: PathBuf },
    #[error("MCP server `{server}`: command `{}` is not an executable file", path.display())]
    NotExecutable { server: String, path: PathBuf },
    #[error("MCP server `{server}`: cwd {} does not exist", cwd.display())]
    CwdMissing { server: String, cwd: PathBuf },
    #[error("MCP server `{server}`: cwd {} is not a directory", cwd.display())]
    CwdNotDirectory { server: String, cwd: PathBuf },
    #[error("MCP server `{server}`: its supervisor {} did not start: {source}", exe.display())]
    Supervisor { server: String, exe: PathBuf, source: std::io::Error },
    #[error("MCP server `{server}`: `{command}` did not start: {reason}")]
    Start { server: String, command: String, reason: String },
}

/// A running stdio MCP server: its protocol pipes and the guard that
/// stops it. Dropping it (or its guard) stops the server's whole group.
pub struct McpChild {
    pub stdin: tokio::process::ChildStdin,
    pub stdout: tokio::process::ChildStdout,
    guard: McpGuard,
}

impl McpChild {
    /// The server's pid (also its process group's id).
    pub fn pid(&self) -> Option<u32> {
        self.guard.pid()
    }

    /// Closes the server's stdin, asks the supervisor to stop it and waits
    /// for it: the group is gone when this returns (within about a second).
    pub async fn stop(self) {
        let McpChild { stdin, stdout, guard } = self;
        drop(stdin);
        drop(stdout);
        guard.stop().await;
    }

    /// The pipes, to hand to a transport, and the guard, which must live as
    /// long as the server should: dropping it stops the server.
    pub fn into_parts(self) -> (tokio::process::ChildStdin, tokio::process::ChildStdout, McpGuard) {
        (self.stdin, self.stdout, self.guard)
    }

    /// The guard (pid, stderr tail) without taking the pipes.
    pub fn guard(&self) -> &McpGuard {
        &self.guard
    }
}

/// Keeps a stdio MCP server running; dropping it stops the server's group
/// (the supervisor does, within about a second).
pub struct McpGuard {
    name: String,
    pid: u32,
    /// Shared with the [`CallTracker`]s (weakly: the supervisor sees end of
    /// file once the guard lets go of it).
    control: Option<Arc<tokio::net::UnixStream>>,
    supervisor: Option<tokio::process::Child>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
    tail: StderrTail,
}

/// The last lines a server wrote on stderr (secrets redacted), shared with
/// whoever reports why it failed, and whether its stderr has closed.
#[derive(Clone, Default)]
pub struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    closed: Arc<tokio::sync::Notify>,
    done: Arc<std::sync::atomic::AtomicBool>,
}

impl StderrTail {
    /// The lines kept (at most [`STDERR_TAIL`]), oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().map(|tail| tail.iter().cloned().collect()).unwrap_or_default()
    }

    fn push(&self, line: String) {
        if let Ok(mut tail) = self.lines.lock() {
            if tail.len() == STDERR_TAIL {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    }

    fn close(&self) {
        self.done.store(true, std::sync::atomic::Ordering::SeqCst);
        self.closed.notify_waiters();
    }

    /// The lines once the server's stderr has closed (every line of a
    /// server that exited is read), or after `limit` (a server still
    /// running keeps it open): a bound, never a fixed wait.
    pub async fn settled(&self, limit: Duration) -> Vec<String> {
        let closed = self.closed.notified();
        tokio::pin!(closed);
        closed.as_mut().enable();
        if !self.done.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = tokio::time::timeout(limit, closed).await;
        }
        self.lines()
    }
}

impl McpGuard {
    pub fn pid(&self) -> Option<u32> {
        Some(self.pid)
    }

    /// The server's name, as in its spec.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The last lines the server wrote on stderr (at most [`STDERR_TAIL`],
    /// secrets redacted), oldest first: what to show when it failed.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.tail.lines()
    }

    /// The tail itself, which outlives the guard (see [`StderrTail`]).
    pub fn stderr_tail_handle(&self) -> StderrTail {
        self.tail.clone()
    }

    /// Asks the supervisor to stop the server and waits until it has (or,
    /// should the supervisor not answer, kills both). The server's stdin
    /// should be closed first, so it can exit by itself.
    pub async fn stop(mut self) {
        self.ask_stop();
        let Some(mut supervisor) = self.supervisor.take() else { return };
        match tokio::time::timeout(STOP_TIMEOUT, supervisor.wait()).await {
            Ok(_) => {}
            Err(_) => {
                tracing::warn!(server = %self.name, "the MCP supervisor did not stop its server in time; killing both");
                let _ = supervisor.start_kill();
                crate::supervisor::kill_group(Some(self.pid as i32), libc::SIGKILL);
                let _ = supervisor.wait().await;
            }
        }
        // The stderr pipe closes once nothing of the group holds it; the
        // last lines are logged before this returns.
        if let Some(task) = self.stderr_task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
        }
    }

    fn ask_stop(&mut self) {
        if let Some(control) = self.control.take() {
            // A short line into the socket's buffer does not block; if it
            // fails, the close just below says the same (end of file).
            let _ = control.try_write(&[CONTROL_STOP, b'\n']);
        }
    }

    /// Tells the supervisor which calls are in flight, so that it can leave
    /// evidence for them should Mino stop before their results are saved.
    pub fn call_tracker(&self) -> CallTracker {
        CallTracker { control: self.control.as_ref().map(Arc::downgrade).unwrap_or_default() }
    }
}

impl Drop for McpGuard {
    fn drop(&mut self) {
        // The supervisor stops the group on `s` or end of file; tokio reaps
        // the supervisor's process once it exits.
        self.ask_stop();
    }
}

/// One MCP call in flight, as its server's supervisor is told it: where
/// its evidence record goes, should Mino stop before its result is saved.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct InFlightCall {
    pub target: crate::supervisor::EvidenceTarget,
    pub tool: String,
}

/// The most calls of one server a supervisor keeps evidence targets for;
/// more are not tracked (and logged).
pub const MAX_TRACKED_CALLS: usize = 64;
/// The longest control line the supervisor reads (a call's target is a
/// path and a few ids); a longer one is dropped.
const MAX_CONTROL_LINE: usize = 16 * 1024;
/// After its server ended by itself with calls in flight, how long the
/// supervisor waits for Mino to save their results (it says so) before it
/// exits; were Mino gone meanwhile, it leaves their evidence.
const RESULTS_WAIT: Duration = Duration::from_secs(5);
const CONTROL_BEGIN: u8 = b'b';
const CONTROL_END: u8 = b'e';

/// Tells one server's supervisor about the calls in flight (see
/// [`InFlightCall`]). Each message is one line on the control socket; one
/// lost (the socket full, the server gone) only means no evidence.
#[derive(Clone, Default)]
pub struct CallTracker {
    control: std::sync::Weak<tokio::net::UnixStream>,
}

impl CallTracker {
    /// Before the call is sent. Returns whether the supervisor was told.
    pub fn begin(&self, call: &InFlightCall) -> bool {
        self.send(CONTROL_BEGIN, serde_json::to_vec(call).unwrap_or_default())
    }

    /// Once the call's result is saved (or it was never sent): no evidence is needed.
    pub fn end(&self, target: &crate::supervisor::EvidenceTarget) {
        self.send(CONTROL_END, serde_json::to_vec(&target.path).unwrap_or_default());
    }

    fn send(&self, kind: u8, json: Vec<u8>) -> bool {
        let Some(control) = self.control.upgrade() else { return false };
        let mut line = Vec::with_capacity(json.len() + 2);
        line.push(kind);
        line.extend_from_slice(&json);
        line.push(b'\n');
        match control.try_write(&line) {
            Ok(n) if n == line.len() => true,
            Ok(n) => {
                tracing::warn!(written = n, "an MCP supervisor's control line was cut; its calls may lack evidence");
                false
            }
            Err(e) => {
                tracing::debug!("an MCP supervisor was not told about a call: {e}");
                false
            }
        }
    }
}

/// What the supervisor reads on fd 3 before anything else.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SupervisedSpec {
    name: String,
    /// By path, as [`resolve_command`] found it.
    program: PathBuf,
    args: Vec<String>,
    /// The server's whole environment.
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
}

/// The supervisor's answer: one JSON line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Reply {
    Pid(u32),
    Error(String),
}

/// The environment a server with `spec` gets: [`DEFAULT_ENV_ALLOWLIST`]
/// from this process's, then `spec.env`.
pub fn server_environment(spec: &StdioServerSpec) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> =
        DEFAULT_ENV_ALLOWLIST.iter().filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?))).collect();
    env.extend(spec.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    env
}

/// Finds the program `spec.command` names, as a spawn with `env` would,
/// and checks `cwd`; errors name the server.
fn resolve_command(spec: &StdioServerSpec, env: &BTreeMap<String, String>) -> Result<PathBuf, McpSpawnError> {
    if let Some(cwd) = &spec.cwd {
        match std::fs::metadata(cwd) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(McpSpawnError::CwdNotDirectory { server: spec.name.clone(), cwd: cwd.clone() }),
            Err(_) => return Err(McpSpawnError::CwdMissing { server: spec.name.clone(), cwd: cwd.clone() }),
        }
    }
    let executable = |path: &Path| {
        std::fs::metadata(path).map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0).unwrap_or(false)
    };
    if spec.command.contains('/') {
        let path = PathBuf::from(&spec.command);
        let path = match (&spec.cwd, path.is_relative()) {
            (Some(cwd), true) => cwd.join(path),
            _ => path,
        };
        if !path.exists() {
            return Err(McpSpawnError::CommandMissing { server: spec.name.clone(), path });
        }
        if !executable(&path) {
            return Err(McpSpawnError::NotExecutable { server: spec.name.clone(), path });
        }
        return Ok(path);
    }
    let path_var = env.get("PATH").cloned().unwrap_or_else(|| crate::bash::FALLBACK_PATH.to_string());
    let base = spec.cwd.clone().or_else(|| std::env::current_dir().ok()).unwrap_or_default();
    for dir in path_var.split(':') {
        // An empty entry is the current directory, as for execvp.
        let dir = if dir.is_empty() { base.clone() } else { base.join(dir) };
        let candidate = dir.join(&spec.command);
        if executable(&candidate) {
            return Ok(candidate);
        }
    }
    Err(McpSpawnError::CommandNotFound { server: spec.name.clone(), command: spec.command.clone(), path: path_var })
}

/// Starts the stdio MCP server `spec` under a supervisor (`supervisor_exe
/// --supervise-mcp`: `mino-server` itself, or the core's `mino-supervisor`
/// in tests). Returns once the server's process exists; its stdin and
/// stdout are the MCP stream, its stderr goes to the log.
pub async fn spawn_stdio(spec: &StdioServerSpec, supervisor_exe: &Path) -> Result<McpChild, McpSpawnError> {
    let env = server_environment(spec);
    let program = resolve_command(spec, &env)?;
    tracing::debug!(
        server = %spec.name,
        program = %program.display(),
        args = spec.args.len(),
        env = ?env.keys().collect::<Vec<_>>(),
        "starting MCP server"
    );
    let supervisor_error = |source: std::io::Error| McpSpawnError::Supervisor {
        server: spec.name.clone(),
        exe: supervisor_exe.to_path_buf(),
        source,
    };
    // Close-on-exec on both ends: only the supervisor gets its end, as fd 3.
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().map_err(supervisor_error)?;
    let theirs_fd = theirs.as_raw_fd();
    let mut command = tokio::process::Command::new(supervisor_exe);
    command
        .arg(FLAG)
        // The supervisor needs nothing of Mino's environment; the server's
        // comes in the spec.
        .env_clear()
        .env("PATH", crate::bash::FALLBACK_PATH)
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(false);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    // SAFETY: between fork and exec only dup2/fcntl, async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            if theirs_fd == CONTROL_FD {
                // dup2 onto itself would keep close-on-exec set.
                if libc::fcntl(CONTROL_FD, libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(theirs_fd, CONTROL_FD) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut supervisor = command.spawn().map_err(supervisor_error)?;
    drop(theirs);
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (supervisor.stdin.take(), supervisor.stdout.take(), supervisor.stderr.take())
    else {
        let _ = supervisor.start_kill();
        return Err(supervisor_error(std::io::Error::other("its pipes were not set up")));
    };
    let tail = StderrTail::default();
    let stderr_task = tokio::spawn(log_stderr(spec.name.clone(), stderr, redactions(&spec.env), tail.clone()));
    let fail =
        |reason: String| McpSpawnError::Start { server: spec.name.clone(), command: spec.command.clone(), reason };

    ours.set_nonblocking(true).map_err(supervisor_error)?;
    let mut control = tokio::net::UnixStream::from_std(ours).map_err(supervisor_error)?;
    let supervised =
        SupervisedSpec { name: spec.name.clone(), program, args: spec.args.clone(), env, cwd: spec.cwd.clone() };
    // Serialising our own plain struct cannot fail.
    let json = serde_json::to_vec(&supervised).unwrap_or_default();
    let mut frame = Vec::with_capacity(4 + json.len());
    frame.extend_from_slice(&(json.len() as u32).to_le_bytes());
    frame.extend_from_slice(&json);
    let answered = tokio::time::timeout(START_TIMEOUT, async {
        control.write_all(&frame).await.map_err(|e| format!("its supervisor did not take the spec: {e}"))?;
        read_reply(&mut control).await
    })
    .await
    .unwrap_or_else(|_| Err(format!("its supervisor did not answer within {} s", START_TIMEOUT.as_secs())));
    let pid = match answered {
        Ok(Reply::Pid(pid)) => pid,
        Ok(Reply::Error(reason)) | Err(reason) => {
            drop(control);
            let _ = tokio::time::timeout(STOP_TIMEOUT, supervisor.wait()).await;
            let _ = tokio::time::timeout(Duration::from_secs(1), stderr_task).await;
            return Err(fail(reason));
        }
    };
    tracing::debug!(server = %spec.name, pid, "MCP server started");
    Ok(McpChild {
        stdin,
        stdout,
        guard: McpGuard {
            name: spec.name.clone(),
            pid,
            control: Some(Arc::new(control)),
            supervisor: Some(supervisor),
            stderr_task: Some(stderr_task),
            tail,
        },
    })
}

async fn read_reply(control: &mut tokio::net::UnixStream) -> Result<Reply, String> {
    let mut line = Vec::new();
    let mut byte = [0u8; 256];
    loop {
        let n = control.read(&mut byte).await.map_err(|e| format!("its supervisor's answer was lost: {e}"))?;
        if n == 0 {
            return Err("its supervisor exited before it answered".into());
        }
        line.extend_from_slice(&byte[..n]);
        if let Some(end) = line.iter().position(|&b| b == b'\n') {
            return serde_json::from_slice(&line[..end]).map_err(|e| format!("its supervisor answered nonsense: {e}"));
        }
        if line.len() > MAX_REPLY {
            return Err("its supervisor's answer is too long".into());
        }
    }
}

/// The values to blank out of stderr lines: the spec's `env` values long
/// enough not to be ordinary words, longest first (a value containing
/// another is blanked whole).
fn redactions(env: &BTreeMap<String, String>) -> Vec<String> {
    let mut values: Vec<String> = env.values().filter(|v| v.len() >= MIN_REDACTED_VALUE).cloned().collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    values
}

fn redact(line: &str, secrets: &[String]) -> String {
    let mut line = line.to_string();
    for secret in secrets {
        if line.contains(secret.as_str()) {
            line = line.replace(secret.as_str(), "[redacted]");
        }
    }
    line
}

/// One stderr line as logged: decoded, secrets redacted, then cut at
/// [`MAX_STDERR_LINE`] bytes saying how many more there were (`cut` were
/// not even kept).
fn stderr_line(line: &[u8], cut: usize, secrets: &[String]) -> String {
    let mut text = redact(String::from_utf8_lossy(line).trim_end_matches('\r'), secrets);
    let mut more = cut;
    if text.len() > MAX_STDERR_LINE {
        let mut end = MAX_STDERR_LINE;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        more += text.len() - end;
        text.truncate(end);
    }
    if more > 0 {
        text.push_str(&format!(" [… {more} more bytes]"));
    }
    text
}

/// A token bucket: [`STDERR_LINES_PER_SECOND`] after a burst.
struct Rate {
    tokens: f64,
    at: std::time::Instant,
    dropped: u64,
}

impl Rate {
    fn allow(&mut self) -> bool {
        let now = std::time::Instant::now();
        let refill = now.duration_since(self.at).as_secs_f64() * f64::from(STDERR_LINES_PER_SECOND);
        self.tokens = (self.tokens + refill).min(f64::from(STDERR_BURST));
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            self.dropped += 1;
            false
        }
    }
}

/// Logs the server's stderr (see the module docs) until it closes.
async fn log_stderr(server: String, stderr: tokio::process::ChildStderr, secrets: Vec<String>, tail: StderrTail) {
    // A secret that starts within the kept part of a line is kept whole,
    // so that it is redacted before the line is cut.
    let keep = MAX_STDERR_LINE + secrets.first().map_or(0, String::len);
    let mut reader = tokio::io::BufReader::with_capacity(8192, stderr);
    let mut rate = Rate { tokens: f64::from(STDERR_BURST), at: std::time::Instant::now(), dropped: 0 };
    let mut line = Vec::with_capacity(256);
    loop {
        line.clear();
        let mut cut = 0usize;
        // One line, keeping at most MAX_STDERR_LINE bytes of it.
        let ended = loop {
            let chunk = match reader.fill_buf().await {
                Ok([]) | Err(_) => break true,
                Ok(chunk) => chunk,
            };
            let (part, newline) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (&chunk[..i], Some(i)),
                None => (chunk, None),
            };
            let room = keep.saturating_sub(line.len());
            line.extend_from_slice(&part[..part.len().min(room)]);
            cut += part.len().saturating_sub(room);
            let used = newline.map_or(chunk.len(), |i| i + 1);
            reader.consume(used);
            if newline.is_some() {
                break false;
            }
        };
        if !line.is_empty() || cut > 0 {
            let text = stderr_line(&line, cut, &secrets);
            // Every line reaches the tail (the last words of a server that
            // crashed matter most); the log takes them within the rate.
            if rate.allow() {
                if rate.dropped > 0 {
                    tracing::info!(target: STDERR_TARGET, server = %server, "[{} lines of stderr not logged: more than {STDERR_LINES_PER_SECOND} a second]", rate.dropped);
                    rate.dropped = 0;
                }
                tracing::info!(target: STDERR_TARGET, server = %server, "{text}");
            }
            tail.push(text);
        }
        if ended {
            break;
        }
    }
    tail.close();
    if rate.dropped > 0 {
        tracing::info!(target: STDERR_TARGET, server = %server, "[{} lines of stderr not logged: more than {STDERR_LINES_PER_SECOND} a second]", rate.dropped);
    }
}

// ---------------------------------------------------------------------
// The supervisor's side.

/// Entry point of MCP supervise mode: `args` are the arguments after
/// [`FLAG`] (none; the spec comes on fd 3). Returns the process's exit
/// code: the MCP server's (128 + signal when a signal ended it). Call it
/// before any runtime or logging is set up.
pub fn main(args: &[String]) -> i32 {
    crate::hardening::harden_supervisor();
    #[cfg(target_os = "linux")]
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets a flag on open
    // descriptors; PR_SET_NAME copies at most 16 bytes from a NUL-terminated
    // string that outlives the call.
    unsafe {
        // Nothing above stderr reaches the MCP server: not fd 3 either.
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC);
        // Out of reach of `pkill mino-server`, as the command supervisor.
        libc::prctl(libc::PR_SET_NAME, c"mino-mcp-superv".as_ptr());
    }
    if !args.is_empty() {
        eprintln!("mino MCP supervisor: expected no argument after {FLAG} (the spec comes on fd 3); it is started by mino-server");
        return 2;
    }
    // SAFETY: fd 3 is the socket mino-server gave this process (set up in
    // spawn_stdio's pre_exec); nothing else here owns it. Checked first.
    if unsafe { libc::fcntl(CONTROL_FD, libc::F_GETFD) } == -1 {
        eprintln!("mino MCP supervisor: fd 3 is not open; it is started by mino-server");
        return 2;
    }
    let mut control = unsafe { std::os::unix::net::UnixStream::from(OwnedFd::from_raw_fd(CONTROL_FD)) };
    let spec = match read_spec(&mut control) {
        Ok(Some(spec)) => spec,
        Ok(None) => return 0,
        Err(why) => {
            eprintln!("mino MCP supervisor: {why}; it is written by mino-server");
            return 2;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = reply(&mut control, &Reply::Error(format!("its supervisor cannot start its runtime: {e}")));
            return 1;
        }
    };
    runtime.block_on(async move {
        ignore_stop_signals();
        supervise(spec, control).await
    })
}

/// The spec from fd 3; `None` at end of file before a whole one (nothing
/// is to run).
fn read_spec(control: &mut std::os::unix::net::UnixStream) -> Result<Option<SupervisedSpec>, String> {
    let mut length = [0u8; 4];
    if control.read_exact(&mut length).is_err() {
        return Ok(None);
    }
    let length = u32::from_le_bytes(length) as usize;
    if length > MAX_SPEC {
        return Err(format!("a spec of {length} bytes is more than {MAX_SPEC}"));
    }
    let mut json = vec![0u8; length];
    if control.read_exact(&mut json).is_err() {
        return Ok(None);
    }
    serde_json::from_slice(&json).map(Some).map_err(|e| format!("the spec is not valid: {e}"))
}

fn reply(control: &mut std::os::unix::net::UnixStream, reply: &Reply) -> std::io::Result<()> {
    // Serialising our own plain enum cannot fail.
    let mut line = serde_json::to_vec(reply).unwrap_or_default();
    line.push(b'\n');
    control.write_all(&line)
}

/// As the command supervisor: handled (not ignored), so the server gets
/// the default dispositions at exec.
fn ignore_stop_signals() {
    for kind in [
        tokio::signal::unix::SignalKind::terminate(),
        tokio::signal::unix::SignalKind::hangup(),
        tokio::signal::unix::SignalKind::interrupt(),
    ] {
        match tokio::signal::unix::signal(kind) {
            Ok(mut signal) => {
                tokio::spawn(async move { while signal.recv().await.is_some() {} });
            }
            Err(e) => eprintln!("mino MCP supervisor: cannot handle a signal: {e}"),
        }
    }
}

async fn supervise(spec: SupervisedSpec, mut control: std::os::unix::net::UnixStream) -> i32 {
    let mut command = tokio::process::Command::new(&spec.program);
    command
        .args(&spec.args)
        .env_clear()
        .envs(&spec.env)
        .stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(false);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let _ = reply(&mut control, &Reply::Error(format!("{}: {e}", spec.program.display())));
            return 127;
        }
    };
    let pid = child.id().unwrap_or(0);
    let pgid = Some(pid as i32);
    // Only the server holds its stdin and stdout now: its exit (or its
    // group's death) is end of file for mino-server at once.
    release_stdio();
    if reply(&mut control, &Reply::Pid(pid)).is_err() {
        // mino-server is already gone.
        return stop(&mut child, pgid).await;
    }
    let control = match control.set_nonblocking(true).and_then(|()| tokio::net::UnixStream::from_std(control)) {
        Ok(control) => control,
        Err(e) => {
            eprintln!("mino MCP supervisor: cannot watch mino-server: {e}; stopping `{}`", spec.name);
            return stop(&mut child, pgid).await;
        }
    };
    let mut buf = [0u8; 4096];
    let mut lines = ControlLines::default();
    loop {
        tokio::select! {
            status = child.wait() => {
                // What the server left in its group does not outlive it.
                crate::supervisor::kill_group(pgid, libc::SIGKILL);
                let status = status.ok();
                let ended_at = crate::home::now_rfc3339();
                if !lines.in_flight.is_empty() && mino_gone_before_results(&control, &mut lines).await {
                    leave_mcp_evidence(&spec.name, pid, &lines.in_flight, status, false, &ended_at);
                }
                return exit_code(status);
            }
            read = control.readable() => {
                if read.is_err() {
                    return stop_after_mino(&spec.name, &mut child, pid, &lines).await;
                }
                match control.try_read(&mut buf) {
                    // End of file: mino-server is gone.
                    Ok(0) => return stop_after_mino(&spec.name, &mut child, pid, &lines).await,
                    Ok(n) => {
                        if lines.take(&buf[..n]) {
                            // A stop: mino-server saves what its calls became.
                            return stop(&mut child, pgid).await;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => return stop_after_mino(&spec.name, &mut child, pid, &lines).await,
                }
            }
        }
    }
}

/// The control lines read so far, and the calls in flight they named.
#[derive(Default)]
struct ControlLines {
    partial: Vec<u8>,
    /// Each with when the supervisor heard of it.
    in_flight: Vec<(InFlightCall, String)>,
}

impl ControlLines {
    /// Takes `bytes`; true when they held a stop.
    fn take(&mut self, bytes: &[u8]) -> bool {
        let mut stop = false;
        for &byte in bytes {
            if byte != b'\n' {
                if self.partial.len() < MAX_CONTROL_LINE {
                    self.partial.push(byte);
                }
                continue;
            }
            let line = std::mem::take(&mut self.partial);
            match line.split_first() {
                Some((&CONTROL_STOP, _)) => stop = true,
                Some((&CONTROL_BEGIN, json)) => match serde_json::from_slice::<InFlightCall>(json) {
                    Ok(call) if self.in_flight.len() < MAX_TRACKED_CALLS => {
                        self.in_flight.push((call, crate::home::now_rfc3339()))
                    }
                    Ok(_) => eprintln!(
                        "mino MCP supervisor: more than {MAX_TRACKED_CALLS} calls in flight; one is not tracked"
                    ),
                    Err(e) => eprintln!("mino MCP supervisor: a call's target is not valid: {e}"),
                },
                Some((&CONTROL_END, json)) => {
                    if let Ok(path) = serde_json::from_slice::<PathBuf>(json) {
                        self.in_flight.retain(|(call, _)| call.target.path != path);
                    }
                }
                _ => {}
            }
        }
        stop
    }
}

/// The server ended by itself with calls in flight: waits (bounded) for
/// mino-server to say their results are saved. True when it went away
/// first, leaving some unsaved.
async fn mino_gone_before_results(control: &tokio::net::UnixStream, lines: &mut ControlLines) -> bool {
    let mut buf = [0u8; 4096];
    let waiting = async {
        while !lines.in_flight.is_empty() {
            if control.readable().await.is_err() {
                return true;
            }
            match control.try_read(&mut buf) {
                Ok(0) => return true,
                Ok(n) => {
                    if lines.take(&buf[..n]) {
                        return false;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return true,
            }
        }
        false
    };
    tokio::time::timeout(RESULTS_WAIT, waiting).await.unwrap_or(false)
}

/// mino-server is gone: the server is stopped, and each call in flight
/// gets its evidence record (the server was stopped, when, its status).
async fn stop_after_mino(name: &str, child: &mut tokio::process::Child, pid: u32, lines: &ControlLines) -> i32 {
    let code = stop(child, Some(pid as i32)).await;
    if !lines.in_flight.is_empty() {
        let status = child.try_wait().ok().flatten();
        leave_mcp_evidence(name, pid, &lines.in_flight, status, true, &crate::home::now_rfc3339());
    }
    code
}

fn leave_mcp_evidence(
    server: &str,
    pid: u32,
    calls: &[(InFlightCall, String)],
    status: Option<std::process::ExitStatus>,
    mino_stopped: bool,
    ended_at: &str,
) {
    use crate::supervisor::{write_evidence, Evidence, EvidenceOutcome, McpEvidence, EVIDENCE_VERSION};
    let (exit_code, signal) = match status {
        Some(status) => (status.code(), status.signal()),
        None => (None, None),
    };
    let outcome = match (mino_stopped, exit_code) {
        (true, _) => EvidenceOutcome::StoppedWhenMinoStopped,
        (false, Some(_)) => EvidenceOutcome::Exited,
        (false, None) => EvidenceOutcome::Signalled,
    };
    for (call, started_at) in calls {
        let evidence = Evidence {
            v: EVIDENCE_VERSION,
            turn_id: call.target.turn_id.clone(),
            call_id: call.target.call_id.clone(),
            call_index: call.target.call_index,
            pid,
            started_at: started_at.clone(),
            ended_at: Some(ended_at.to_string()),
            outcome,
            exit_code,
            signal,
            after_mino_stopped: mino_stopped,
            cancelled: false,
            output_tail: String::new(),
            mcp: Some(McpEvidence { server: server.to_string(), tool: call.tool.clone() }),
        };
        if let Err(e) = write_evidence(&call.target.path, &evidence) {
            eprintln!("mino MCP supervisor: could not write {}: {e}", call.target.path.display());
        }
    }
}

/// fds 0 and 1 become /dev/null in the supervisor, so it holds no end of
/// the protocol pipes.
fn release_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") {
        // SAFETY: dup2 onto 0 and 1, which this process owns; `null`
        // stays open for the calls.
        unsafe {
            libc::dup2(null.as_raw_fd(), 0);
            libc::dup2(null.as_raw_fd(), 1);
        }
    }
}

/// The server gets [`EXIT_GRACE`] to exit by itself, then its group
/// SIGTERM, then SIGKILL after [`TERM_GRACE`]. Returns its exit code.
async fn stop(child: &mut tokio::process::Child, pgid: Option<i32>) -> i32 {
    use crate::supervisor::kill_group;
    if let Ok(status) = tokio::time::timeout(EXIT_GRACE, child.wait()).await {
        kill_group(pgid, libc::SIGKILL);
        return exit_code(status.ok());
    }
    kill_group(pgid, libc::SIGTERM);
    let status = match tokio::time::timeout(TERM_GRACE, child.wait()).await {
        Ok(status) => status.ok(),
        Err(_) => None,
    };
    // Whatever is left (the server itself, or what ignored SIGTERM).
    kill_group(pgid, libc::SIGKILL);
    let status = match status {
        Some(status) => Some(status),
        None => child.wait().await.ok(),
    };
    exit_code(status)
}

fn exit_code(status: Option<std::process::ExitStatus>) -> i32 {
    match status {
        Some(status) => status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
        None => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_across_the_cut_of_a_long_line_is_redacted_not_halved() {
        let secret = "s3cr3t-value-4242".to_string();
        let mut line = vec![b'a'; MAX_STDERR_LINE - 8];
        line.extend_from_slice(secret.as_bytes());
        line.extend_from_slice(b" and more");
        let text = stderr_line(&line, 0, std::slice::from_ref(&secret));
        assert!(!text.contains("s3cr3t"), "{}", &text[text.len() - 60..]);
        assert!(text.ends_with(" more bytes]"), "{}", &text[text.len() - 60..]);
    }

    #[test]
    fn short_values_are_not_redacted_and_longer_ones_win() {
        let env = BTreeMap::from([
            ("A".to_string(), "1".to_string()),
            ("B".to_string(), "token".to_string()),
            ("C".to_string(), "secret-abc".to_string()),
            ("D".to_string(), "secret-abc-def".to_string()),
        ]);
        let secrets = redactions(&env);
        assert_eq!(secrets, ["secret-abc-def", "secret-abc"]);
        assert_eq!(redact("1 token secret-abc-def secret-abc", &secrets), "1 token [redacted] [redacted]");
    }
}
