//! The command supervisor: one small process per approved command that
//! outlives the server if it must, so that no command outlives its limits.
//!
//! `mino-server` re-executes itself as `mino-server --supervise` (any
//! executable that calls [`main`] for [`FLAG`] will do; the core's tests use
//! the `mino-supervisor` binary of this crate). The supervisor:
//!
//! - is started before the command is approved to run, and waits: its first
//!   input is the [`Spec`] ([`spec_frame`]), written only once the call's
//!   approval and `tool_start` are synced. End of file before a whole spec
//!   means nothing is to run, and it exits;
//! - spawns `bash -c <command>` in a process group of its own, in the
//!   session's directory, with its own environment (which the server set to
//!   exactly the command's: cleared plus the allowlist), stdin closed;
//! - reads the command's output, caps it, and forwards it to the server as
//!   frames on its stdout ([`Frame`]);
//! - enforces the time limit itself (SIGTERM to the group, SIGKILL after the
//!   grace period), so the limit holds whether or not the server is there;
//! - reads its stdin, a pipe only the server holds: `c` cancels the command,
//!   `s` says the result is saved, and end of file means the server is gone.
//!   Then the command gets [`ORPHAN_GRACE`] to finish on its own before its
//!   group is stopped, so whatever kills the server, the command's group is
//!   gone within [`ORPHAN_GRACE`] + [`ORPHAN_KILL_GRACE`];
//! - when the server is gone before it confirmed the result saved, writes
//!   what it saw ([`Evidence`]) beside the journal, atomically and synced.
//!
//! The supervisor runs in a process group of its own (the server spawns it
//! so), and SIGTERM, SIGHUP and SIGINT sent to it are ignored: the server
//! decides, and a signal to the server's whole process group must not orphan
//! the command. Only SIGKILL stops it, and then the server kills the
//! command's group itself.

use std::collections::VecDeque;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::bash::{Outcome, Stream};
use crate::journal::record::ToolStatus;

/// The first argument that selects supervise mode.
pub const FLAG: &str = "--supervise";

/// How long a command may go on finishing by itself once the server is gone.
pub const ORPHAN_GRACE: Duration = Duration::from_millis(1000);
/// Then its group gets SIGTERM, and SIGKILL this much later.
pub const ORPHAN_KILL_GRACE: Duration = Duration::from_millis(500);

/// Control bytes the server writes to the supervisor's stdin.
pub(crate) const CONTROL_CANCEL: u8 = b'c';
pub(crate) const CONTROL_SAVED: u8 = b's';

/// Frame tags on the supervisor's stdout: `tag, u32 length (LE), payload`.
pub(crate) const TAG_PID: u8 = b'p';
pub(crate) const TAG_STDOUT: u8 = b'o';
pub(crate) const TAG_STDERR: u8 = b'e';
pub(crate) const TAG_RESULT: u8 = b'r';
pub(crate) const FRAME_HEADER: usize = 5;
/// No frame is larger: a result holds at most the output limit (a chunk
/// far less), each byte at most three after lossy decoding, plus JSON escapes.
pub(crate) const MAX_FRAME: usize = 64 * 1024 * 1024;

/// Frames waiting for the server beyond this stop the reading of the
/// command's output (its pipes fill and it waits), never the timers.
const FORWARD_HIGH_WATER: usize = 256 * 1024;

/// What the server asks of one supervisor: one JSON argument after [`FLAG`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spec {
    /// The `bash` to run, by path (see `BashTool::bash_program`).
    pub bash: PathBuf,
    pub command: String,
    pub cwd: PathBuf,
    pub timeout_ms: u64,
    pub kill_grace_ms: u64,
    pub output_limit: usize,
    /// Where to leave [`Evidence`] if the server goes away; none for runs
    /// outside a session.
    #[serde(default)]
    pub evidence: Option<EvidenceTarget>,
    /// The sandbox bash enters before it starts (`pre_exec`); none is `off`.
    #[serde(default)]
    pub sandbox: Option<crate::sandbox::SandboxPolicy>,
}

/// Which call the evidence is about, and where it goes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct EvidenceTarget {
    pub path: PathBuf,
    pub turn_id: String,
    pub call_id: String,
    pub call_index: usize,
}

/// How a supervised command ended, as the evidence record names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceOutcome {
    Exited,
    Signalled,
    StoppedWhenMinoStopped,
    TimedOut,
}

/// The format version of evidence records this build writes and reads.
pub const EVIDENCE_VERSION: u32 = 1;
/// An evidence file larger than this is not read (it holds at most the output limit).
const MAX_EVIDENCE_BYTES: u64 = 8 * 1024 * 1024;

/// What a supervisor saw of a command whose result the server never
/// confirmed saved. It never changes a result: a start without a result
/// stays `unknown`; this is shown beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub v: u32,
    pub turn_id: String,
    pub call_id: String,
    pub call_index: usize,
    pub pid: u32,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub outcome: EvidenceOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Whether the server was already gone when the command ended.
    pub after_mino_stopped: bool,
    /// Whether the server had asked to cancel the command.
    #[serde(default)]
    pub cancelled: bool,
    /// The last bytes of the command's output, at most the output limit.
    pub output_tail: String,
}

impl Evidence {
    /// One sentence for people, e.g. "the command exited 0 after Mino
    /// stopped; last output: done".
    pub fn summary(&self) -> String {
        let what = match self.outcome {
            EvidenceOutcome::Exited => format!("the command exited {}", self.exit_code.unwrap_or(-1)),
            EvidenceOutcome::Signalled => {
                format!("the command was terminated by signal {}", self.signal.unwrap_or(0))
            }
            EvidenceOutcome::TimedOut => "the command was stopped by its time limit".to_string(),
            EvidenceOutcome::StoppedWhenMinoStopped => "the command was stopped when Mino stopped".to_string(),
        };
        let when = match self.outcome {
            EvidenceOutcome::StoppedWhenMinoStopped => "",
            _ if self.after_mino_stopped => " after Mino stopped",
            _ if self.cancelled => " after it was cancelled; Mino stopped before saving its result",
            _ => "; Mino stopped before saving its result",
        };
        match last_line(&self.output_tail) {
            Some(line) => format!("{what}{when}; last output: {line}"),
            None => format!("{what}{when}; it printed nothing"),
        }
    }
}

/// The last non-empty line of `text`, at most 200 characters.
fn last_line(text: &str) -> Option<String> {
    const MAX: usize = 200;
    let line = text.lines().rev().map(str::trim).find(|l| !l.is_empty())?;
    if line.chars().count() > MAX {
        let kept: String = line.chars().rev().take(MAX).collect::<Vec<_>>().into_iter().rev().collect();
        Some(format!("…{kept}"))
    } else {
        Some(line.to_string())
    }
}

/// The directory beside the journal that holds its calls' evidence:
/// `sessions/<id>.jsonl` → `sessions/<id>.evidence/`.
pub fn evidence_dir(journal: &Path) -> PathBuf {
    journal.with_extension("evidence")
}

/// Where the evidence of the `call_index`-th call (0-based, in the order the
/// turn's responses asked for them) of `turn_id` goes. `None` for a turn id
/// that could name anything outside the directory (ids Mino writes are
/// `turn-N`). The turn and the index, not the model's call id, make the
/// name, so a call id repeated in a later turn or the same one cannot collide.
pub fn evidence_path(journal: &Path, turn_id: &str, call_index: usize) -> Option<PathBuf> {
    let safe = !turn_id.is_empty()
        && !turn_id.starts_with('.')
        && turn_id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    safe.then(|| evidence_dir(journal).join(format!("{turn_id}.call-{call_index}.json")))
}

/// Reads the evidence left for one call, if any. A record that is unreadable,
/// of another version or about another call is ignored (logged): evidence
/// only ever adds to what the journal says.
pub fn load_evidence(journal: &Path, turn_id: &str, call_index: usize, call_id: &str) -> Option<Evidence> {
    let path = evidence_path(journal, turn_id, call_index)?;
    let read = (|| -> Result<Option<Evidence>, String> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        // Only the session's own directory: a symlink there could lead
        // anywhere (checked by what it is, not what it points to).
        match std::fs::symlink_metadata(evidence_dir(journal)) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err("the evidence directory is not a directory (a symlink or a file)".into()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        }
        // Opened without following a symlink and without waiting on a FIFO;
        // what is open is then checked, so nothing swapped in between the
        // check and the read is read, and no more than the bound is read.
        let mut file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(&path)
        {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        let meta = file.metadata().map_err(|e| e.to_string())?;
        if !meta.is_file() || meta.len() > MAX_EVIDENCE_BYTES {
            return Err(format!("not a regular file of at most {MAX_EVIDENCE_BYTES} bytes"));
        }
        let mut bytes = Vec::new();
        (&mut file).take(MAX_EVIDENCE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
        if bytes.len() as u64 > MAX_EVIDENCE_BYTES {
            return Err(format!("it grew past {MAX_EVIDENCE_BYTES} bytes while being read"));
        }
        let evidence: Evidence = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
        if evidence.v != EVIDENCE_VERSION {
            return Err(format!("version {} (this Mino reads {EVIDENCE_VERSION})", evidence.v));
        }
        if evidence.turn_id != turn_id || evidence.call_index != call_index || evidence.call_id != call_id {
            return Err("it is about another call".into());
        }
        Ok(Some(evidence))
    })();
    read.unwrap_or_else(|why| {
        tracing::warn!(path = %path.display(), "ignoring a command's evidence record: {why}");
        None
    })
}

/// Writes `evidence` to `path` so that it is either there whole and durable
/// or not at all: a temporary file, fsync, rename, fsync of the directory
/// (created, and its parent synced, if it does not exist yet).
pub fn write_evidence(path: &Path, evidence: &Evidence) -> std::io::Result<()> {
    let dir = path.parent().ok_or_else(|| std::io::Error::other("the evidence path has no directory"))?;
    // A symlink (or file) in place of the directory is not followed out of
    // the session's directory: the record is then not written.
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(std::io::Error::other(format!("{} is not a directory", dir.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            match std::fs::create_dir(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
            if let Some(parent) = dir.parent() {
                std::fs::File::open(parent)?.sync_all()?;
            }
        }
        Err(e) => return Err(e),
    }
    let bytes = serde_json::to_vec(evidence).map_err(std::io::Error::other)?;
    crate::durable::replace(path, &bytes, 0o600)
        .map_err(|(step, e)| std::io::Error::new(e.kind(), format!("{}: {e}", step.as_str())))
}

/// The spec as the server writes it first on the supervisor's stdin: its
/// length (u32, little-endian) then its JSON.
pub(crate) fn spec_frame(spec: &Spec) -> Vec<u8> {
    // Serialising our own plain struct cannot fail.
    let json = serde_json::to_vec(spec).unwrap_or_default();
    let mut frame = Vec::with_capacity(4 + json.len());
    frame.extend_from_slice(&(json.len() as u32).to_le_bytes());
    frame.extend_from_slice(&json);
    frame
}

/// Why no spec was read from stdin.
enum NoSpec {
    /// Stdin ended first: the server dropped this supervisor unused.
    Ended,
    Invalid(String),
}

/// Reads the spec from stdin, byte-exact (unbuffered), so that the control
/// bytes after it stay in the pipe for the supervise loop.
fn read_spec() -> Result<Spec, NoSpec> {
    use std::io::Read;
    // SAFETY: fd 0 is the pipe the server gave this process. ManuallyDrop
    // keeps it open: the supervise loop takes it over afterwards.
    let mut stdin = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(0) });
    let mut len = [0u8; 4];
    if let Err(e) = stdin.read_exact(&mut len) {
        return Err(match e.kind() {
            std::io::ErrorKind::UnexpectedEof => NoSpec::Ended,
            _ => NoSpec::Invalid(format!("its stdin could not be read: {e}")),
        });
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(NoSpec::Invalid(format!("a spec of {len} bytes is over the {MAX_FRAME}-byte bound")));
    }
    let mut json = vec![0u8; len];
    if let Err(e) = stdin.read_exact(&mut json) {
        return Err(match e.kind() {
            std::io::ErrorKind::UnexpectedEof => NoSpec::Ended,
            _ => NoSpec::Invalid(format!("its stdin could not be read: {e}")),
        });
    }
    serde_json::from_slice(&json).map_err(|e| NoSpec::Invalid(format!("the spec is not valid ({e})")))
}

/// Entry point of supervise mode: `args` are the arguments after [`FLAG`]
/// (none; the spec comes on stdin). Returns the process's exit code. Call
/// it before any runtime or logging is set up; it builds its own
/// single-threaded runtime.
pub fn main(args: &[String]) -> i32 {
    // Not dumpable, no core dumps: a command cannot read this process's
    // memory or ptrace it (docs/reliability.md, "Known limits").
    crate::hardening::harden_supervisor();
    // Descriptors the server was started with (a parent's pipes, a build
    // tool's jobserver) are no business of an approved command: none above
    // stderr survives the exec of bash. One syscall; the supervisor's own
    // use of them is unaffected.
    #[cfg(target_os = "linux")]
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets a flag on open
    // descriptors; PR_SET_NAME copies at most 16 bytes from a NUL-terminated
    // string that outlives the call.
    unsafe {
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC);
        // Its own name in `ps`, and out of reach of `pkill mino-server` /
        // `killall mino-server`, which would otherwise take the supervisors
        // with the server and leave their commands with nobody to stop them.
        libc::prctl(libc::PR_SET_NAME, c"mino-supervise".as_ptr());
    }
    if !args.is_empty() {
        eprintln!("mino supervisor: expected no argument after {FLAG} (the spec comes on stdin); it is started by mino-server");
        return 2;
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mino supervisor: cannot start its runtime: {e}");
            return 1;
        }
    };
    runtime.block_on(async {
        // Before it waits: a signal that would orphan a command must not
        // end the supervisor at any point.
        ignore_stop_signals();
        // A blocking read on this single-threaded runtime: nothing else is
        // running yet (the signal handlers above only need their handlers
        // installed to keep the signals from ending the process).
        match read_spec() {
            Ok(spec) => supervise(spec).await,
            Err(NoSpec::Ended) => 0,
            Err(NoSpec::Invalid(why)) => {
                eprintln!("mino supervisor: {why}; it is written by mino-server");
                2
            }
        }
    })
}

/// SIGTERM, SIGHUP and SIGINT are ignored by handling: a handler (unlike
/// SIG_IGN) is reset when bash is executed, so the command still gets the
/// default dispositions.
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
            Err(e) => eprintln!("mino supervisor: cannot handle a signal: {e}"),
        }
    }
}

/// The longest one argument of a program may be, its closing NUL included
/// (Linux's `MAX_ARG_STRLEN`: 32 pages of 4 KiB).
const ARGUMENT_MAX: usize = 32 * 4096;

/// Rejoins the parts of a command given in several arguments, restores the
/// default `IFS` and clears the positional parameters, then runs it: what
/// `bash -c <command>` would do, for a command too long for one argument.
const REJOIN_PARTS: &str = "IFS=; eval \"IFS=$' \\t\\n'; set --; $*\"";

/// bash's arguments after its name: `-c <command>`, or for a command longer
/// than one argument may be (a heredoc of a few hundred KiB), the command in
/// parts after [`REJOIN_PARTS`], which the whole argument list may still
/// hold (its bound is far larger).
fn bash_arguments(command: &str) -> Vec<&str> {
    if command.len() < ARGUMENT_MAX {
        return vec!["-c", command];
    }
    let mut arguments = vec!["-c", REJOIN_PARTS, "bash"];
    let mut rest = command;
    while !rest.is_empty() {
        let mut end = rest.len().min(ARGUMENT_MAX - 1);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (part, tail) = rest.split_at(end);
        arguments.push(part);
        rest = tail;
    }
    arguments
}

/// The result of a command too long to run (`why`: the bound it is over).
pub(crate) fn too_long(bytes: usize, why: &str) -> String {
    format!(
        "The command did not run: at {bytes} bytes it is more than a command may be ({why}). \
         Write large content to a file with write_file, or in smaller parts."
    )
}

/// What ended the command, when something other than its own exit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    TimedOut,
    Cancelled,
    MinoStopped,
}

fn frame(tag: u8, payload: &[u8], out: &mut Vec<u8>) {
    out.push(tag);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
}

/// The output stream to the server, writes never blocking the supervisor.
struct ToServer {
    pipe: Option<tokio::net::unix::pipe::Sender>,
    pending: Vec<u8>,
}

impl ToServer {
    fn push(&mut self, tag: u8, payload: &[u8]) {
        if self.pipe.is_some() {
            frame(tag, payload, &mut self.pending);
        }
    }

    fn gone(&mut self) {
        self.pipe = None;
        self.pending = Vec::new();
    }
}

async fn supervise(spec: Spec) -> i32 {
    // SAFETY: fds 0 and 1 are the pipes the server gave this process; nothing
    // else in this process owns them.
    let (control_fd, out_fd) = unsafe { (OwnedFd::from_raw_fd(0), OwnedFd::from_raw_fd(1)) };
    let control = tokio::net::unix::pipe::Receiver::from_owned_fd(control_fd);
    let out = tokio::net::unix::pipe::Sender::from_owned_fd(out_fd);
    let (mut control, out) = match (control, out) {
        (Ok(control), Ok(out)) => (Some(control), out),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("mino supervisor: stdin and stdout must be pipes from mino-server: {e}");
            return 2;
        }
    };
    let mut to_server = ToServer { pipe: Some(out), pending: Vec::new() };
    let started_at = crate::home::now_rfc3339();

    let mut bash = tokio::process::Command::new(&spec.bash);
    bash.arg0("bash")
        .args(bash_arguments(&spec.command))
        .current_dir(&spec.cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    // Placeholders for missing protected paths, removed once nothing of the
    // command is left (dropped on every early return, which removes them).
    let mut placeholders = crate::sandbox::Placeholders::default();
    let mut own_mount_namespace = false;
    if let Some(policy) = &spec.sandbox {
        // Prepared here, before the fork; the child only enters it. A
        // sandbox that cannot be had means the command does not run.
        match crate::sandbox::prepare(policy, &crate::sandbox::detect()) {
            Ok(Some(mut prepared)) => {
                placeholders = prepared.take_placeholders();
                own_mount_namespace = prepared.mount_namespace();
                // SAFETY: `enter` makes system calls only, as required
                // between fork and exec.
                unsafe {
                    bash.pre_exec(move || prepared.enter());
                }
            }
            Ok(None) => {}
            Err(e) => {
                let outcome = Outcome {
                    status: ToolStatus::Failed,
                    output: format!("The command did not run: {e}"),
                    exit_code: None,
                };
                send_result(&mut to_server, &outcome);
                flush(&mut to_server).await;
                return 0;
            }
        }
    }
    let mut child = match bash.spawn() {
        Ok(child) => child,
        Err(e) => {
            let outcome = Outcome {
                status: ToolStatus::Failed,
                output: match &spec.sandbox {
                    // The child's own error (from `enter`) is all a failed
                    // spawn reports; say where it came from.
                    Some(policy) => format!(
                        "Could not start bash in {} inside the {} sandbox: {e}",
                        spec.cwd.display(),
                        policy.mode
                    ),
                    None if e.raw_os_error() == Some(libc::E2BIG) => too_long(spec.command.len(), &e.to_string()),
                    None => format!("Could not start bash in {}: {e}", spec.cwd.display()),
                },
                exit_code: None,
            };
            send_result(&mut to_server, &outcome);
            flush(&mut to_server).await;
            return 0;
        }
    };
    let pid = child.id().unwrap_or(0);
    let pgid = Some(pid as i32);
    // The command's own mount namespace (never this process's): whatever
    // is still in it when the command ends escaped its group, and is killed.
    let namespace = own_mount_namespace
        .then(|| crate::sandbox::mount_namespace_of(pid))
        .flatten()
        .filter(|ns| Some(ns) != crate::sandbox::mount_namespace_of(std::process::id()).as_ref());
    to_server.push(TAG_PID, pid.to_string().as_bytes());
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        kill_group(pgid, libc::SIGKILL);
        let outcome = Outcome {
            status: ToolStatus::Failed,
            output: "Could not capture the command's output.".into(),
            exit_code: None,
        };
        send_result(&mut to_server, &outcome);
        flush(&mut to_server).await;
        return 0;
    };

    let timeout = Duration::from_millis(spec.timeout_ms);
    let kill_grace = Duration::from_millis(spec.kill_grace_ms);
    let mut capture = Capture::new(spec.output_limit);
    let mut tail = Tail::new(spec.output_limit);
    let mut decoders = [Utf8Carry::default(), Utf8Carry::default()];
    let (mut out_buf, mut err_buf) = (vec![0u8; 8192], vec![0u8; 8192]);
    let mut control_buf = [0u8; 64];
    let (mut out_open, mut err_open) = (true, true);
    let far = || tokio::time::Instant::now() + Duration::from_secs(u64::from(u32::MAX));
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    // After exit, output still in the pipes is read for a short while; a
    // process that escaped the group (setsid) cannot hold the call open.
    let drain = tokio::time::sleep_until(far());
    tokio::pin!(drain);
    // SIGKILL for a group that got SIGTERM and whose leader has not exited.
    let escalate = tokio::time::sleep_until(far());
    tokio::pin!(escalate);
    let mut escalate_armed = false;
    // Once the server is gone: how long the command may finish by itself.
    let orphan = tokio::time::sleep_until(far());
    tokio::pin!(orphan);
    let mut orphan_armed = false;
    let mut exit: Option<std::process::ExitStatus> = None;
    let mut stopped: Option<Stop> = None;
    let mut saved = false;
    let mut server_gone = false;
    let mut ended_after_mino_stopped = false;
    let mut cancel_requested = false;

    loop {
        let done = !out_open && !err_open && exit.is_some();
        if done {
            break;
        }
        let forwarding = to_server.pending.len() < FORWARD_HIGH_WATER;
        tokio::select! {
            read = stdout.read(&mut out_buf), if out_open && forwarding => match read {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => relay(&mut decoders[0], &out_buf[..n], Stream::Stdout, &mut capture, &mut tail, &mut to_server),
            },
            read = stderr.read(&mut err_buf), if err_open && forwarding => match read {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => relay(&mut decoders[1], &err_buf[..n], Stream::Stderr, &mut capture, &mut tail, &mut to_server),
            },
            status = child.wait(), if exit.is_none() => {
                exit = Some(status.unwrap_or_else(|_| std::os::unix::process::ExitStatusExt::from_raw(1 << 8)));
                ended_after_mino_stopped = server_gone;
                // Leftover background children hold the pipes open; they do
                // not outlive the command.
                kill_group(pgid, libc::SIGKILL);
                if let Some(namespace) = &namespace {
                    crate::sandbox::kill_namespace(namespace, 50);
                }
                drain.as_mut().reset(tokio::time::Instant::now() + kill_grace);
            }
            _ = &mut drain, if exit.is_some() => {
                out_open = false;
                err_open = false;
            }
            // Once the command has exited, its status is settled: a
            // timeout or cancel while its leftover output drains is not
            // what happened to it.
            _ = &mut deadline, if stopped.is_none() && exit.is_none() => {
                stopped = Some(Stop::TimedOut);
                kill_group(pgid, libc::SIGTERM);
                escalate.as_mut().reset(tokio::time::Instant::now() + kill_grace);
                escalate_armed = true;
            }
            _ = &mut escalate, if escalate_armed && exit.is_none() => {
                escalate_armed = false;
                kill_group(pgid, libc::SIGKILL);
            }
            _ = &mut orphan, if orphan_armed && stopped.is_none() && exit.is_none() => {
                orphan_armed = false;
                stopped = Some(Stop::MinoStopped);
                kill_group(pgid, libc::SIGTERM);
                escalate.as_mut().reset(tokio::time::Instant::now() + ORPHAN_KILL_GRACE);
                escalate_armed = true;
            }
            read = read_control(&mut control, &mut control_buf), if control.is_some() => match read {
                Some(bytes) => {
                    if bytes.contains(&CONTROL_SAVED) {
                        saved = true;
                    }
                    if bytes.contains(&CONTROL_CANCEL) {
                        cancel_requested = true;
                        if stopped.is_none() && exit.is_none() {
                            stopped = Some(Stop::Cancelled);
                            kill_group(pgid, libc::SIGTERM);
                            escalate.as_mut().reset(tokio::time::Instant::now() + kill_grace);
                            escalate_armed = true;
                        }
                    }
                }
                None => {
                    // The server is gone (it closed the pipe, or died).
                    control = None;
                    server_gone = true;
                    to_server.gone();
                    if exit.is_none() && stopped.is_none() {
                        orphan.as_mut().reset(tokio::time::Instant::now() + ORPHAN_GRACE);
                        orphan_armed = true;
                    } else if exit.is_none() {
                        // Already being stopped (timeout or cancel): no more
                        // grace than the orphan's.
                        let latest = tokio::time::Instant::now() + ORPHAN_KILL_GRACE;
                        if !escalate_armed || escalate.deadline() > latest {
                            escalate.as_mut().reset(latest);
                            escalate_armed = true;
                        }
                    }
                }
            },
            written = write_some(&mut to_server), if !to_server.pending.is_empty() => {
                if !written {
                    // The server stopped reading for good; its end of the
                    // control pipe tells whether it is gone.
                    to_server.gone();
                }
            }
        }
    }

    for (carry, stream) in decoders.iter_mut().zip([Stream::Stdout, Stream::Stderr]) {
        let text = carry.finish();
        if !text.is_empty() {
            capture.push(&text);
            tail.push(text.as_bytes());
            to_server.push(stream_tag(stream), text.as_bytes());
        }
    }
    let exit_status = exit.unwrap_or_else(|| std::os::unix::process::ExitStatusExt::from_raw(1 << 8));
    // Nothing of the command may be left before its placeholders go: the
    // read-only binds over them live as long as its mount namespace does.
    if let Some(namespace) = &namespace {
        crate::sandbox::kill_namespace(namespace, 50);
        if crate::sandbox::kill_namespace(namespace, 1) == 0 {
            std::mem::take(&mut placeholders).remove();
        } else {
            // Kept (never removed under a live bind) rather than uncovered.
            std::mem::forget(std::mem::take(&mut placeholders));
        }
    }
    let mut outcome = outcome_of(capture.finish(), exit_status, stopped, timeout);
    if let Some(policy) = &spec.sandbox {
        if let Some(note) = crate::sandbox::failure_note(policy, &outcome.output, outcome.exit_code) {
            push_note(&mut outcome.output, &note);
        }
    }
    send_result(&mut to_server, &outcome);

    // Hand the result over, then wait to hear that it is saved, or that the
    // server is gone before it could say so.
    while !saved && control.is_some() {
        tokio::select! {
            read = read_control(&mut control, &mut control_buf) => match read {
                Some(bytes) => saved |= bytes.contains(&CONTROL_SAVED),
                None => {
                    control = None;
                    to_server.gone();
                }
            },
            written = write_some(&mut to_server), if !to_server.pending.is_empty() => {
                if !written {
                    to_server.gone();
                }
            }
        }
    }
    if saved {
        return 0;
    }
    let Some(target) = spec.evidence else { return 0 };
    let (outcome, exit_code, signal) = match (stopped, exit_status.code()) {
        (Some(Stop::MinoStopped), _) => (EvidenceOutcome::StoppedWhenMinoStopped, exit_status.code(), None),
        (Some(Stop::TimedOut), _) => (EvidenceOutcome::TimedOut, exit_status.code(), None),
        (_, Some(code)) => (EvidenceOutcome::Exited, Some(code), None),
        (_, None) => (EvidenceOutcome::Signalled, None, std::os::unix::process::ExitStatusExt::signal(&exit_status)),
    };
    let evidence = Evidence {
        v: EVIDENCE_VERSION,
        turn_id: target.turn_id,
        call_id: target.call_id,
        call_index: target.call_index,
        pid,
        started_at,
        ended_at: Some(crate::home::now_rfc3339()),
        outcome,
        exit_code,
        signal,
        after_mino_stopped: ended_after_mino_stopped,
        cancelled: cancel_requested,
        output_tail: tail.finish(),
    };
    match write_evidence(&target.path, &evidence) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("mino supervisor: could not write {}: {e}", target.path.display());
            1
        }
    }
}

/// Reads what the server wrote on the control pipe; `None` at its end.
async fn read_control<'a>(
    control: &mut Option<tokio::net::unix::pipe::Receiver>,
    buf: &'a mut [u8],
) -> Option<&'a [u8]> {
    let pipe = control.as_mut()?;
    match pipe.read(buf).await {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(&buf[..n]),
    }
}

/// Writes some of the pending frames; false when the server's pipe is broken.
async fn write_some(to_server: &mut ToServer) -> bool {
    let Some(pipe) = to_server.pipe.as_mut() else { return false };
    match pipe.write(&to_server.pending).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            to_server.pending.drain(..n);
            true
        }
    }
}

async fn flush(to_server: &mut ToServer) {
    while !to_server.pending.is_empty() {
        if !write_some(to_server).await {
            return;
        }
    }
}

fn send_result(to_server: &mut ToServer, outcome: &Outcome) {
    // Serialising our own plain struct cannot fail.
    let json = serde_json::to_vec(outcome).unwrap_or_default();
    to_server.push(TAG_RESULT, &json);
}

fn stream_tag(stream: Stream) -> u8 {
    match stream {
        Stream::Stdout => TAG_STDOUT,
        Stream::Stderr => TAG_STDERR,
    }
}

fn relay(
    carry: &mut Utf8Carry,
    bytes: &[u8],
    stream: Stream,
    capture: &mut Capture,
    tail: &mut Tail,
    to_server: &mut ToServer,
) {
    let text = carry.decode(bytes);
    if !text.is_empty() {
        capture.push(&text);
        tail.push(text.as_bytes());
        to_server.push(stream_tag(stream), text.as_bytes());
    }
}

/// The result as the server records it, from how the command ended.
fn outcome_of(mut output: String, exit: std::process::ExitStatus, stopped: Option<Stop>, timeout: Duration) -> Outcome {
    let exit_code = exit.code();
    let status = match stopped {
        Some(Stop::TimedOut) => {
            push_note(
                &mut output,
                &format!("[timed out after {}; the command's process group was killed]", seconds(timeout)),
            );
            ToolStatus::TimedOut
        }
        Some(Stop::Cancelled) => {
            push_note(&mut output, "[cancelled; the command's process group was killed]");
            ToolStatus::Cancelled
        }
        Some(Stop::MinoStopped) => {
            // Nobody receives this result; the evidence record says it.
            push_note(&mut output, "[stopped because Mino stopped; the command's process group was killed]");
            ToolStatus::Cancelled
        }
        None => match exit_code {
            Some(0) => ToolStatus::Success,
            Some(code) => {
                push_note(&mut output, &format!("[exit code {code}]"));
                ToolStatus::Failed
            }
            None => {
                let signal = std::os::unix::process::ExitStatusExt::signal(&exit);
                push_note(&mut output, &format!("[terminated by signal {}]", signal.unwrap_or(0)));
                ToolStatus::Failed
            }
        },
    };
    Outcome { status, output, exit_code }
}

pub(crate) fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

pub(crate) fn kill_group(pgid: Option<i32>, signal: i32) {
    if let Some(pgid) = pgid.filter(|&p| p > 0) {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory is involved.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

pub(crate) fn push_note(output: &mut String, note: &str) {
    if !output.is_empty() && !output.ends_with('\n') {
        output.push('\n');
    }
    output.push_str(note);
}

/// Decodes UTF-8 across read boundaries: an incomplete sequence at the end of
/// one read waits for the next instead of becoming replacement characters.
#[derive(Default)]
struct Utf8Carry {
    pending: Vec<u8>,
}

impl Utf8Carry {
    fn decode(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        // Only a sequence cut at the very end waits; invalid bytes before it
        // become replacement characters now.
        let keep = incomplete_tail(&self.pending);
        let rest = self.pending.split_off(self.pending.len() - keep);
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending = rest;
        text
    }

    /// What is left when the stream ends: a cut sequence is shown, not lost.
    fn finish(&mut self) -> String {
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        text
    }
}

/// How many bytes at the end start a UTF-8 sequence that is not complete yet.
fn incomplete_tail(bytes: &[u8]) -> usize {
    for k in 1..=bytes.len().min(3) {
        let b = bytes[bytes.len() - k];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for the lead
        }
        let needed = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0,
        };
        return if needed > k { k } else { 0 };
    }
    0
}

/// Keeps the head and tail of the output within the limit.
struct Capture {
    limit: usize,
    head: String,
    tail: VecDeque<char>,
    tail_bytes: usize,
    cut: usize,
}

impl Capture {
    fn new(limit: usize) -> Self {
        Self { limit, head: String::new(), tail: Default::default(), tail_bytes: 0, cut: 0 }
    }

    fn push(&mut self, text: &str) {
        let head_limit = self.limit / 2;
        let mut chars = text.chars();
        if self.head.len() < head_limit {
            for c in chars.by_ref() {
                if self.head.len() + c.len_utf8() > head_limit {
                    self.push_tail(c);
                    break;
                }
                self.head.push(c);
            }
        }
        for c in chars {
            self.push_tail(c);
        }
    }

    fn push_tail(&mut self, c: char) {
        let tail_limit = self.limit - self.limit / 2;
        self.tail.push_back(c);
        self.tail_bytes += c.len_utf8();
        while self.tail_bytes > tail_limit {
            if let Some(old) = self.tail.pop_front() {
                self.tail_bytes -= old.len_utf8();
                self.cut += old.len_utf8();
            }
        }
    }

    fn finish(self) -> String {
        let mut out = self.head;
        if self.cut > 0 {
            push_note(
                &mut out,
                &format!(
                    "[... {} bytes of output cut: the limit is {} bytes, first and last halves kept ...]\n",
                    self.cut, self.limit
                ),
            );
        }
        out.extend(self.tail);
        out
    }
}

/// The last `limit` bytes of the output (for the evidence record).
struct Tail {
    limit: usize,
    bytes: VecDeque<u8>,
}

impl Tail {
    fn new(limit: usize) -> Self {
        Self { limit, bytes: VecDeque::new() }
    }

    fn push(&mut self, bytes: &[u8]) {
        let skip = bytes.len().saturating_sub(self.limit);
        self.bytes.extend(&bytes[skip..]);
        let excess = self.bytes.len().saturating_sub(self.limit);
        self.bytes.drain(..excess);
    }

    fn finish(self) -> String {
        let bytes: Vec<u8> = self.bytes.into();
        // The cut may fall inside a character: start at the next whole one.
        let start = bytes.iter().position(|&b| b & 0xC0 != 0x80).unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[start..]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_head_and_tail_and_says_what_was_cut() {
        let mut c = Capture::new(10);
        c.push("0123456789abcdefghij");
        let out = c.finish();
        assert!(out.starts_with("01234\n[... 10 bytes"), "{out}");
        assert!(out.ends_with("fghij"), "{out}");
    }

    #[test]
    fn the_tail_keeps_the_last_bytes_on_a_character_boundary() {
        let mut t = Tail::new(3);
        t.push("ab".as_bytes());
        t.push("€c".as_bytes());
        assert_eq!(t.finish(), "c", "the euro's cut bytes are dropped, not mangled");
        let mut t = Tail::new(10);
        t.push(b"hello");
        assert_eq!(t.finish(), "hello");
    }

    #[test]
    fn invalid_bytes_do_not_disable_the_carry_and_a_cut_tail_is_kept() {
        let mut d = Utf8Carry::default();
        let euro = "€".as_bytes();
        let mut first = vec![b'x', 0xFF, b'y'];
        first.extend_from_slice(&euro[..2]);
        assert_eq!(d.decode(&first), "x\u{FFFD}y");
        let mut second = euro[2..].to_vec();
        second.push(b'z');
        assert_eq!(d.decode(&second), "€z");
        assert_eq!(d.decode(&euro[..2]), "");
        assert_eq!(d.finish(), "\u{FFFD}", "a sequence cut by the end of the stream is shown, not lost");
    }

    #[test]
    fn utf8_split_across_reads_is_not_mangled() {
        let mut d = Utf8Carry::default();
        let bytes = "é".as_bytes();
        assert_eq!(d.decode(&bytes[..1]), "");
        assert_eq!(d.decode(&bytes[1..]), "é");
    }

    fn evidence(outcome: EvidenceOutcome, after: bool, tail: &str) -> Evidence {
        Evidence {
            v: EVIDENCE_VERSION,
            turn_id: "turn-1".into(),
            call_id: "call_1".into(),
            call_index: 0,
            pid: 42,
            started_at: "2026-01-01T00:00:00Z".into(),
            ended_at: Some("2026-01-01T00:00:01Z".into()),
            outcome,
            exit_code: (outcome == EvidenceOutcome::Exited).then_some(0),
            signal: None,
            after_mino_stopped: after,
            cancelled: false,
            output_tail: tail.into(),
        }
    }

    #[test]
    fn summaries_say_what_happened_and_when() {
        assert_eq!(
            evidence(EvidenceOutcome::Exited, true, "start\ndone\n\n").summary(),
            "the command exited 0 after Mino stopped; last output: done"
        );
        assert_eq!(
            evidence(EvidenceOutcome::StoppedWhenMinoStopped, true, "").summary(),
            "the command was stopped when Mino stopped; it printed nothing"
        );
        assert_eq!(
            evidence(EvidenceOutcome::Exited, false, "x").summary(),
            "the command exited 0; Mino stopped before saving its result; last output: x"
        );
    }

    #[test]
    fn evidence_names_use_the_turn_and_index_and_refuse_odd_turn_ids() {
        let journal = Path::new("/h/sessions/s1.jsonl");
        assert_eq!(
            evidence_path(journal, "turn-3", 1),
            Some(PathBuf::from("/h/sessions/s1.evidence/turn-3.call-1.json"))
        );
        for bad in ["", "../x", "a/b", ".hidden", "x\0y"] {
            assert_eq!(evidence_path(journal, bad, 0), None, "{bad:?}");
        }
    }

    #[test]
    fn evidence_is_not_written_through_a_symlinked_directory() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let journal = dir.path().join("s1.jsonl");
        std::os::unix::fs::symlink(outside.path(), evidence_dir(&journal)).unwrap();
        let path = evidence_path(&journal, "turn-1", 0).unwrap();
        assert!(write_evidence(&path, &evidence(EvidenceOutcome::Exited, true, "ok\n")).is_err());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing written outside");
    }

    #[test]
    fn evidence_round_trips_atomically_and_only_for_its_own_call() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("s1.jsonl");
        let path = evidence_path(&journal, "turn-1", 0).unwrap();
        let written = evidence(EvidenceOutcome::Exited, true, "ok\n");
        write_evidence(&path, &written).unwrap();
        assert_eq!(load_evidence(&journal, "turn-1", 0, "call_1"), Some(written));
        assert_eq!(load_evidence(&journal, "turn-1", 0, "call_2"), None, "another call's record");
        assert_eq!(load_evidence(&journal, "turn-2", 0, "call_1"), None, "no record");
        let leftovers: Vec<_> = std::fs::read_dir(evidence_dir(&journal)).unwrap().flatten().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left");
    }
}
