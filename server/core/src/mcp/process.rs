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
    control: Option<tokio::net::UnixStream>,
    supervisor: Option<tokio::process::Child>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
    tail: Arc<Mutex<VecDeque<String>>>,
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
        self.tail.lock().map(|tail| tail.iter().cloned().collect()).unwrap_or_default()
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
            // One byte into an empty socket buffer does not block; if it
            // fails, the close just below says the same (end of file).
            let _ = control.try_write(&[CONTROL_STOP]);
        }
    }
}

impl Drop for McpGuard {
    fn drop(&mut self) {
        // The supervisor stops the group on `s` or end of file; tokio reaps
        // the supervisor's process once it exits.
        self.ask_stop();
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
    let tail = Arc::new(Mutex::new(VecDeque::new()));
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
            control: Some(control),
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
async fn log_stderr(
    server: String,
    stderr: tokio::process::ChildStderr,
    secrets: Vec<String>,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
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
            let room = MAX_STDERR_LINE.saturating_sub(line.len());
            line.extend_from_slice(&part[..part.len().min(room)]);
            cut += part.len().saturating_sub(room);
            let used = newline.map_or(chunk.len(), |i| i + 1);
            reader.consume(used);
            if newline.is_some() {
                break false;
            }
        };
        if !line.is_empty() || cut > 0 {
            if rate.allow() {
                if rate.dropped > 0 {
                    tracing::info!(target: STDERR_TARGET, server = %server, "[{} lines of stderr not logged: more than {STDERR_LINES_PER_SECOND} a second]", rate.dropped);
                    rate.dropped = 0;
                }
                let mut text = redact(String::from_utf8_lossy(&line).trim_end_matches('\r'), &secrets);
                if cut > 0 {
                    text.push_str(&format!(" [… {cut} more bytes]"));
                }
                tracing::info!(target: STDERR_TARGET, server = %server, "{text}");
                if let Ok(mut tail) = tail.lock() {
                    if tail.len() == STDERR_TAIL {
                        tail.pop_front();
                    }
                    tail.push_back(text);
                }
            }
        }
        if ended {
            break;
        }
    }
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
    let mut buf = [0u8; 64];
    loop {
        tokio::select! {
            status = child.wait() => {
                // What the server left in its group does not outlive it.
                crate::supervisor::kill_group(pgid, libc::SIGKILL);
                return exit_code(status.ok());
            }
            read = control.readable() => {
                if read.is_err() {
                    return stop(&mut child, pgid).await;
                }
                match control.try_read(&mut buf) {
                    // End of file (mino-server gone), or a stop.
                    Ok(0) => return stop(&mut child, pgid).await,
                    Ok(n) if buf[..n].contains(&CONTROL_STOP) => return stop(&mut child, pgid).await,
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => return stop(&mut child, pgid).await,
                }
            }
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
