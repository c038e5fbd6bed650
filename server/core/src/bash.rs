//! The `bash` tool: how an approved command runs.
//!
//! A command runs with `bash -c` in the session's directory, in a process
//! group of its own, with a cleared environment plus [`ENV_ALLOWLIST`] (so no
//! API key or other secret of Mino's own environment reaches it), stdin closed,
//! and its output streamed and capped. On timeout or cancel the whole group
//! gets SIGTERM, then SIGKILL after a grace period; when the command exits,
//! whatever it left running in its group is killed too, so nothing outlives
//! the call.
//!
//! The command is not this process's child: a [`crate::supervisor`] process
//! spawns it, reads its output, enforces its limits, and stops it if this
//! process dies, whatever kills it. This module starts that supervisor and
//! relays what it reports.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::supervisor::wire::{self, Frame};
pub use crate::supervisor::wire::{Outcome, Stream};
use crate::supervisor::{self, EvidenceTarget, Spec};
use crate::tool_facts::ToolStatus;

/// Variables passed through from Mino's environment when set.
pub const ENV_ALLOWLIST: [&str; 10] =
    ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR"];

/// The `PATH` a command gets when Mino's own has none.
pub const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
pub const DEFAULT_OUTPUT_LIMIT: usize = 64 * 1024;
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);

/// How long a supervisor the editor started has to connect once the
/// editor said it started it.
pub const TERMINAL_CONNECT_WAIT: Duration = Duration::from_secs(10);
/// How long a connection has to send its token.
const TOKEN_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    /// Bytes of output kept: the first and last halves, with a note of what was cut.
    pub output_limit: usize,
    /// Time between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
}

impl Limits {
    /// The limits as an `approval` record journals them.
    pub fn recorded(&self) -> crate::tool_facts::RecordedLimits {
        crate::tool_facts::RecordedLimits {
            timeout_seconds: self.timeout.as_secs(),
            output_limit_bytes: self.output_limit as u64,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self { timeout: DEFAULT_TIMEOUT, output_limit: DEFAULT_OUTPUT_LIMIT, kill_grace: DEFAULT_KILL_GRACE }
    }
}

#[derive(Debug, Clone)]
pub struct BashTool {
    cwd: PathBuf,
    env: BTreeMap<String, String>,
    limits: Limits,
    /// The executable run as `<supervisor> --supervise` (its spec on stdin) for each
    /// command: `mino-server` itself in production.
    supervisor: PathBuf,
    /// The sandbox each command enters before bash starts; `None` is `off`.
    sandbox: Option<crate::sandbox::SandboxPolicy>,
    /// Mino's home, a protected path for the sandbox ([`crate::protect`]).
    home: Option<PathBuf>,
}

impl BashTool {
    /// A tool running in `cwd` with the allowlisted part of this process's
    /// environment, each command under `supervisor` (an executable that
    /// dispatches [`supervisor::FLAG`] to [`supervisor::main`]).
    pub fn new(cwd: PathBuf, limits: Limits, supervisor: PathBuf) -> Self {
        let mut env: BTreeMap<String, String> =
            ENV_ALLOWLIST.iter().filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?))).collect();
        env.entry("PATH".into()).or_insert_with(|| FALLBACK_PATH.into());
        Self { cwd, env, limits, supervisor, sandbox: None, home: None }
    }

    /// Runs every command in `mode`'s sandbox: writes (in `workspace-write`)
    /// only in this tool's directory and the command's `$TMPDIR` (else
    /// `/tmp`). A sandbox that cannot be set up fails the command, which
    /// then does not run. Check support first ([`crate::sandbox::detect`]).
    /// The protected paths of the workspace and of `home` (Mino's home)
    /// are read-only to a sandboxed command ([`crate::protect`]).
    pub fn with_sandbox(mut self, mode: crate::sandbox::SandboxMode) -> Self {
        self.sandbox = (mode != crate::sandbox::SandboxMode::Off).then(|| crate::sandbox::SandboxPolicy {
            mode,
            workspace: self.cwd.clone(),
            temp: self.env.get("TMPDIR").filter(|t| !t.is_empty()).map_or_else(|| PathBuf::from("/tmp"), PathBuf::from),
            protected: crate::protect::sandbox_protected(&self.cwd, self.home.as_deref()),
        });
        self
    }

    /// Mino's home: kept read-only for sandboxed commands with the
    /// workspace's protected paths.
    pub fn with_home(mut self, home: PathBuf) -> Self {
        self.home = Some(home);
        self
    }

    /// The same tool (environment, limits, supervisor, sandbox mode) running
    /// commands in `cwd`: a switched-to session's own directory.
    pub fn in_dir(&self, cwd: PathBuf) -> Self {
        let mut tool = self.clone();
        if let Some(policy) = &mut tool.sandbox {
            policy.workspace = cwd.clone();
            policy.protected = crate::protect::sandbox_protected(&cwd, tool.home.as_deref());
        }
        tool.cwd = cwd;
        tool
    }

    /// Where `bash` is in the command's `PATH`: the first directory holding
    /// an executable `bash`, as `execvp` would pick. Just `bash` (looked up
    /// at spawn, as before) when that needs anything but absolute
    /// directories to decide.
    fn bash_program(&self) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.env.get("PATH").map(String::as_str).unwrap_or("");
        for dir in path.split(':') {
            if !dir.starts_with('/') {
                break;
            }
            let candidate = std::path::Path::new(dir).join("bash");
            match std::fs::metadata(&candidate) {
                // access(X_OK) as execvp would find out: a noexec mount or an
                // execute bit for someone else makes it skip to the next.
                Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o111 != 0 => {
                    if executable(&candidate) {
                        return candidate;
                    }
                }
                Ok(_) => break,
                Err(_) => {}
            }
        }
        PathBuf::from("bash")
    }

    /// The executable each supervisor runs as (MCP servers use it too).
    pub fn supervisor(&self) -> &std::path::Path {
        &self.supervisor
    }

    pub fn cwd(&self) -> &std::path::Path {
        &self.cwd
    }

    /// Mino's home, when [`Self::with_home`] gave it.
    pub fn home(&self) -> Option<&std::path::Path> {
        self.home.as_deref()
    }

    /// Exactly the environment a command gets.
    pub fn environment(&self) -> &BTreeMap<String, String> {
        &self.env
    }

    /// What the approval of a command run by this tool shows (directory,
    /// environment, limits), as the `approval` record journals it.
    pub fn approval_facts(&self) -> crate::tool_facts::ApprovalFacts {
        crate::tool_facts::ApprovalFacts {
            cwd: Some(self.cwd().display().to_string()),
            environment: Some(self.environment().clone()),
            limits: Some(self.limits().recorded()),
            accepted_hunks: None,
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Runs a command and settles it at once: for runs whose result no
    /// journal records (benchmarks, tests).
    pub async fn run(
        &self,
        command: &str,
        on_output: &mut (dyn FnMut(Stream, &str) + Send),
        cancel: &CancellationToken,
    ) -> Outcome {
        let (outcome, running) = self.run_recorded(self.start_supervisor(), command, None, on_output, cancel).await;
        running.saved().await;
        outcome
    }

    /// Starts a supervisor that waits, doing nothing, until it is given a
    /// command by [`BashTool::run_recorded`]. The turn loop starts it before
    /// it syncs the call's approval and `tool_start`, so the supervisor's
    /// own start-up (an exec of this large binary) overlaps the disk's work
    /// instead of following it. Dropped unused, its stdin closes and it
    /// exits without running anything; so does it if this process dies.
    pub fn start_supervisor(&self) -> IdleSupervisor {
        // The supervisor gets exactly the command's environment, which bash
        // inherits from it; no secret of this process reaches either. It
        // runs in a process group of its own, so a signal to the server's
        // whole group (even SIGKILL) cannot take it down with the server.
        let spawned = tokio::process::Command::new(&self.supervisor)
            .arg(supervisor::FLAG)
            .env_clear()
            .envs(&self.env)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn();
        IdleSupervisor {
            link: spawned.map(Link::Child).map_err(|e| {
                format!(
                    "Could not start bash in {}: its supervisor {} did not start: {e}",
                    self.cwd.display(),
                    self.supervisor.display()
                )
            }),
        }
    }

    /// Has the editor start a supervisor in its own terminal
    /// ([`crate::terminal`]) and waits for it to connect: a socket in a
    /// private directory (0700, the socket 0600) that only the process
    /// holding the one-time token may use. Like [`BashTool::start_supervisor`]'s,
    /// it runs nothing until [`BashTool::run_recorded`] gives it the
    /// command. Returns it and the terminal's id, or why the terminal could
    /// not be had (the editor refused, did not answer, or its process did
    /// not connect in [`TERMINAL_CONNECT_WAIT`]): nothing has run then, and
    /// a terminal that was created is finished (killed and released).
    pub async fn start_in_terminal(
        &self,
        terminals: &dyn crate::terminal::CommandTerminals,
        turn_id: &str,
        call_id: &str,
    ) -> Result<(IdleSupervisor, String), String> {
        let place = listen().map_err(|e| format!("Mino could not make the socket for it ({e})"))?;
        let launch = crate::terminal::TerminalLaunch {
            turn_id: turn_id.to_string(),
            call_id: call_id.to_string(),
            program: self.supervisor.clone(),
            args: vec![
                supervisor::FLAG.to_string(),
                supervisor::CONNECT_FLAG.to_string(),
                place.path.display().to_string(),
            ],
            env: vec![(supervisor::TOKEN_VAR.to_string(), place.token.clone())],
            cwd: self.cwd.clone(),
            output_limit: self.limits.output_limit,
        };
        let terminal_id = terminals.create(launch).await?;
        match tokio::time::timeout(TERMINAL_CONNECT_WAIT, place.accept()).await {
            Ok(Ok(stream)) => Ok((IdleSupervisor { link: Ok(Link::Socket(stream)) }, terminal_id)),
            failed => {
                terminals.finish(terminal_id, true).await;
                Err(match failed {
                    Ok(Err(e)) => format!("its connection could not be accepted ({e})"),
                    _ => format!("the process it started did not connect within {} s", TERMINAL_CONNECT_WAIT.as_secs()),
                })
            }
        }
        // `place` is dropped here: the socket and its directory go, the
        // accepted connection stays.
    }

    /// Runs an approved command under `idle`, a supervisor this tool
    /// started. Only the turn loop calls this, and only after the call's
    /// approval and `tool_start` are synced. The returned [`Settle`] must be
    /// told when the result is saved; until then (and if this process dies
    /// first) the supervisor keeps what it saw, and leaves it in `evidence`
    /// if it never hears.
    pub async fn run_recorded(
        &self,
        idle: IdleSupervisor,
        command: &str,
        evidence: Option<EvidenceTarget>,
        on_output: &mut (dyn FnMut(Stream, &str) + Send),
        cancel: &CancellationToken,
    ) -> (Outcome, Settle) {
        let failed = |output: String| Outcome { status: ToolStatus::Failed, output, exit_code: None };
        let spec = Spec {
            // `bash` found in the command's own PATH (as a spawn would find
            // it), named by its path with argv[0] still `bash`: a program
            // named by its path is spawned with posix_spawn (vfork-like,
            // cheap), one looked up in a changed PATH with fork + exec.
            bash: self.bash_program(),
            command: command.to_string(),
            cwd: self.cwd.clone(),
            timeout_ms: u64::try_from(self.limits.timeout.as_millis()).unwrap_or(u64::MAX),
            kill_grace_ms: u64::try_from(self.limits.kill_grace.as_millis()).unwrap_or(u64::MAX),
            output_limit: self.limits.output_limit,
            evidence,
            sandbox: self.sandbox.clone(),
            env: Some(self.env.clone()),
        };
        let (mut child, mut control, mut frames): (Option<tokio::process::Child>, Control, Frames) = match idle.link {
            Err(why) => return (failed(why), Settle { control: None }),
            Ok(Link::Socket(stream)) => {
                let (read, write) = stream.into_split();
                (None, Box::pin(write), Box::pin(read))
            }
            Ok(Link::Child(mut child)) => {
                let (Some(control), Some(frames)) = (child.stdin.take(), child.stdout.take()) else {
                    let _ = child.start_kill();
                    return (failed("Could not talk to the command's supervisor.".into()), Settle { control: None });
                };
                (Some(child), Box::pin(control), Box::pin(frames))
            }
        };
        let start_kill = |child: &mut Option<tokio::process::Child>| {
            if let Some(child) = child {
                let _ = child.start_kill();
            }
        };
        // The spec is the first thing on the supervisor's stdin (it was
        // started before the command was known). A supervisor gone before
        // it read the spec ran nothing.
        let spec = wire::spec_frame(&spec);
        if spec.len() > wire::MAX_FRAME {
            start_kill(&mut child);
            return (failed(supervisor::too_long(command.len(), "over Mino's bound")), Settle { control: None });
        }
        if let Err(e) = control.write_all(&spec).await {
            start_kill(&mut child);
            let why = format!("Could not start bash in {}: its supervisor exited before it got the command ({e}); the command did not run.", self.cwd.display());
            return (failed(why), Settle { control: None });
        }

        let mut pid: Option<i32> = None;
        let mut buf: Vec<u8> = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        let mut cancel_sent = false;
        let mut result: Option<Outcome> = None;
        let mut broken: Option<String> = None;
        while result.is_none() && broken.is_none() {
            tokio::select! {
                read = frames.read(&mut chunk) => match read {
                    Ok(0) => broken = Some("it stopped without reporting".into()),
                    Err(e) => broken = Some(format!("its output could not be read: {e}")),
                    Ok(n) => {
                        buf.extend_from_slice(&chunk[..n]);
                        let mut at = 0;
                        while let Some(next) = wire::next_frame(&buf[at..]) {
                            let (frame, used) = match next {
                                Ok(next) => next,
                                Err(why) => { broken = Some(why); break; }
                            };
                            at += used;
                            match frame {
                                Frame::Pid(payload) => pid = std::str::from_utf8(payload).ok().and_then(|p| p.parse().ok()),
                                Frame::Output(stream, payload) => on_output(stream, &String::from_utf8_lossy(payload)),
                                Frame::Result(payload) => match serde_json::from_slice::<Outcome>(payload) {
                                    Ok(outcome) => { result = Some(outcome); break; }
                                    Err(e) => { broken = Some(format!("its result is not readable: {e}")); break; }
                                },
                            }
                        }
                        buf.drain(..at);
                    }
                },
                _ = cancel.cancelled(), if !cancel_sent => {
                    cancel_sent = true;
                    // A failed write means the supervisor is gone, which
                    // the read above reports.
                    let _ = control.write_all(&[wire::CONTROL_CANCEL]).await;
                }
            }
        }
        if let Some(outcome) = result {
            // The child is reaped in the background once it exits.
            return (outcome, Settle { control: Some(control) });
        }
        // The supervisor died (killed from outside): nothing of the
        // command may outlive the call, so its group is killed here.
        supervisor::kill_group(pid, libc::SIGKILL);
        let status = match &mut child {
            Some(child) => child.wait().await.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string()),
            // The editor is its parent: its connection is all there is.
            None => "its connection to Mino closed".to_string(),
        };
        let why = broken.unwrap_or_default();
        let mut output = format!("The command's supervisor failed ({why}; {status}).");
        if pid.is_some() {
            supervisor::push_note(
                &mut output,
                "[the command's process group was killed; it may have had effects before]",
            );
        }
        (failed(output), Settle { control: None })
    }
}

type Control = Pin<Box<dyn AsyncWrite + Send>>;
type Frames = Pin<Box<dyn AsyncRead + Send>>;

/// A supervisor started ahead of its command ([`BashTool::start_supervisor`],
/// [`BashTool::start_in_terminal`]), or why it could not start (reported as
/// the command's failure when it is run).
pub struct IdleSupervisor {
    link: Result<Link, String>,
}

/// How the server reaches a supervisor.
enum Link {
    /// It spawned it: its stdin and stdout.
    Child(tokio::process::Child),
    /// An editor started it in its terminal; it connected and proved itself.
    Socket(tokio::net::UnixStream),
}

impl IdleSupervisor {
    /// The supervisor's process id, if this process spawned it.
    pub fn id(&self) -> Option<u32> {
        match &self.link {
            Ok(Link::Child(child)) => child.id(),
            _ => None,
        }
    }
}

/// A finished command whose supervisor waits to hear that the result is
/// saved. Dropping it unsaved tells the supervisor Mino stopped first, so it
/// leaves its evidence record.
pub struct Settle {
    control: Option<Control>,
}

impl Settle {
    /// The result is on disk: the supervisor exits without a record.
    pub async fn saved(mut self) {
        if let Some(mut control) = self.control.take() {
            let _ = control.write_all(&[wire::CONTROL_SAVED]).await;
        }
    }
}

/// Where a supervisor started by an editor connects: a socket in a
/// directory of its own, and the token it must send first.
struct Rendezvous {
    listener: tokio::net::UnixListener,
    path: PathBuf,
    token: String,
    /// Removed (the socket with it) when this is dropped.
    _dir: tempfile::TempDir,
}

/// A private directory (0700) under `$XDG_RUNTIME_DIR` (else the temporary
/// directory: a socket's path must stay short) with a socket (0600) in it.
fn listen() -> std::io::Result<Rendezvous> {
    use std::os::unix::fs::PermissionsExt;
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute() && dir.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    // tempfile makes its directories 0700.
    let dir = tempfile::Builder::new().prefix("mino-term-").tempdir_in(base)?;
    let path = dir.path().join("s");
    let listener = tokio::net::UnixListener::bind(&path)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    Ok(Rendezvous { listener, path, token: random_token()?, _dir: dir })
}

impl Rendezvous {
    /// The first connection that sends the token (a line); others are closed.
    async fn accept(&self) -> std::io::Result<tokio::net::UnixStream> {
        loop {
            let (mut stream, _) = self.listener.accept().await?;
            let mut line = Vec::with_capacity(self.token.len() + 1);
            let read = tokio::time::timeout(TOKEN_WAIT, async {
                let mut byte = [0u8; 1];
                // Byte by byte: what follows the line is the supervisor's.
                while line.len() <= self.token.len() {
                    if stream.read(&mut byte).await? == 0 {
                        break;
                    }
                    if byte[0] == b'\n' {
                        return Ok::<bool, std::io::Error>(line == self.token.as_bytes());
                    }
                    line.push(byte[0]);
                }
                Ok(false)
            })
            .await;
            match read {
                Ok(Ok(true)) => return Ok(stream),
                _ => tracing::warn!("a connection to a command's socket without its token was closed"),
            }
        }
    }
}

/// 128 bits from the kernel's random source, in hex.
fn random_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn executable(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: access(2) reads a NUL-terminated path we own for the call's duration.
    unsafe { libc::access(c_path.as_ptr(), libc::X_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_is_found_in_the_commands_path_and_still_called_bash() {
        let mut tool = BashTool::new(std::env::temp_dir(), Limits::default(), PathBuf::new());
        let found = tool.bash_program();
        assert!(found.is_absolute() && found.ends_with("bash"), "{found:?}");
        // A PATH needing more than absolute directories: looked up at spawn, as before.
        tool.env.insert("PATH".into(), format!("relative:{}", found.parent().unwrap().display()));
        assert_eq!(tool.bash_program(), PathBuf::from("bash"));
        tool.env.insert("PATH".into(), "/nonexistent-mino-dir".into());
        assert_eq!(tool.bash_program(), PathBuf::from("bash"));
    }
}
