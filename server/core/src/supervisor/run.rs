//! Supervise mode itself: [`main`] reads the spec, and `supervise` runs
//! the command through its steps (open the pipes, start bash, watch it,
//! clear its namespace, report, wait for "saved", else leave evidence).

use std::os::fd::{FromRawFd, OwnedFd};
use std::pin::Pin;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::capture::{push_note, Capture, Tail, Utf8Carry};
use super::evidence::{write_evidence, Evidence, EvidenceOutcome, EvidenceTarget, EVIDENCE_VERSION};
use super::wire::{self, Frame, Outcome, Spec, Stream, CONTROL_CANCEL, CONTROL_SAVED};
use super::{FLAG, ORPHAN_GRACE, ORPHAN_KILL_GRACE};
use crate::tool_facts::ToolStatus;

/// Frames waiting for the server beyond this stop the reading of the
/// command's output (its pipes fill and it waits), never the timers.
const FORWARD_HIGH_WATER: usize = 256 * 1024;

/// Entry point of supervise mode: `args` are the arguments after [`FLAG`]:
/// none (the spec comes on stdin, from the server that spawned it), or
/// [`CONNECT_FLAG`] and the socket to reach the server by (an editor
/// started it in its terminal; see `connect`). Returns the process's exit
/// code. Call it before any runtime or logging is set up; it builds its
/// own single-threaded runtime.
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
    let socket = match args {
        [] => None,
        [flag, path] if flag == CONNECT_FLAG => Some(std::path::PathBuf::from(path)),
        _ => {
            eprintln!(
                "mino supervisor: expected no argument after {FLAG} (the spec comes on stdin), or {CONNECT_FLAG} <socket>; it is started by mino-server"
            );
            return 2;
        }
    };
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
        let link = match socket {
            None => Link::Stdio,
            Some(path) => match connect(&path) {
                Ok(stream) => Link::Socket(stream),
                Err(why) => {
                    eprintln!("mino supervisor: {why}; nothing was run");
                    return 2;
                }
            },
        };
        // A blocking read on this single-threaded runtime: nothing else is
        // running yet (the signal handlers above only need their handlers
        // installed to keep the signals from ending the process).
        match wire::read_spec(link.spec_fd()) {
            Ok(spec) => {
                let (code, tee) = supervise(spec, link).await;
                // What the editor's terminal has still to show, for a
                // bounded time: the result is the server's either way.
                if let Some(tee) = tee {
                    let _ = tokio::time::timeout(TEE_FLUSH, tee).await;
                }
                code
            }
            Err(wire::NoSpec::Ended) => 0,
            Err(wire::NoSpec::Invalid(why)) => {
                eprintln!("mino supervisor: {why}; it is written by mino-server");
                2
            }
        }
    })
}

/// The argument (then a socket's path) of a supervisor an editor started
/// in its own terminal: it connects to the server, proves itself with the
/// token in [`TOKEN_VAR`], then reads its spec and reports on that
/// connection, and shows the command's output on its own stdout (the
/// editor's terminal) as well.
pub const CONNECT_FLAG: &str = "--connect";
/// The environment variable holding the one-time token a connecting
/// supervisor sends first.
pub const TOKEN_VAR: &str = "MINO_SUPERVISOR_TOKEN";
/// How long the command's last output may take to reach the editor's
/// terminal before the supervisor exits.
const TEE_FLUSH: Duration = Duration::from_millis(500);
/// Chunks of output waiting for the editor's terminal; beyond, they are
/// dropped from the terminal (never from the result, nor the command).
const TEE_QUEUE: usize = 256;

/// How this supervisor talks to the server.
enum Link {
    /// The server spawned it: stdin is the control pipe, stdout the frames.
    Stdio,
    /// An editor spawned it: both go over this connection.
    Socket(std::os::unix::net::UnixStream),
}

impl Link {
    fn spec_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        match self {
            Link::Stdio => 0,
            Link::Socket(stream) => stream.as_raw_fd(),
        }
    }
}

/// Connects to the server's socket and sends the token (a line) it was
/// given in [`TOKEN_VAR`].
fn connect(path: &std::path::Path) -> Result<std::os::unix::net::UnixStream, String> {
    use std::io::Write;
    let token = std::env::var(TOKEN_VAR).map_err(|_| format!("{TOKEN_VAR} is not set"))?;
    let mut stream = std::os::unix::net::UnixStream::connect(path)
        .map_err(|e| format!("cannot connect to mino-server at {}: {e}", path.display()))?;
    stream
        .write_all(format!("{token}\n").as_bytes())
        .map_err(|e| format!("cannot write to mino-server at {}: {e}", path.display()))?;
    Ok(stream)
}

/// The command's output on this supervisor's stdout, for an editor's
/// terminal: written by a thread of its own, so a terminal that does not
/// keep up never holds up the command, the timers or the server.
struct Tee {
    chunks: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    done: Option<tokio::sync::oneshot::Receiver<()>>,
    dropped: bool,
}

impl Tee {
    fn start() -> Tee {
        let (chunks, queue) = std::sync::mpsc::sync_channel::<Vec<u8>>(TEE_QUEUE);
        let (finished, done) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            for chunk in queue {
                if out.write_all(&chunk).and_then(|()| out.flush()).is_err() {
                    break;
                }
            }
            let _ = finished.send(());
        });
        Tee { chunks: Some(chunks), done: Some(done), dropped: false }
    }

    fn push(&mut self, bytes: &[u8]) {
        use std::sync::mpsc::TrySendError;
        let Some(chunks) = &self.chunks else { return };
        if self.dropped {
            let note = b"\n[Mino: output was left out here while this terminal did not keep up; the result keeps it]\n";
            if chunks.try_send(note.to_vec()).is_err() {
                return;
            }
            self.dropped = false;
        }
        match chunks.try_send(bytes.to_vec()) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.dropped = true,
            Err(TrySendError::Disconnected(_)) => self.chunks = None,
        }
    }

    /// No more output: what resolves once the terminal has it all.
    fn finish(mut self) -> Option<tokio::sync::oneshot::Receiver<()>> {
        self.chunks = None;
        self.done.take()
    }
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

/// The control bytes from the server, as they are read.
type Control = Option<Pin<Box<dyn tokio::io::AsyncRead>>>;

/// The output stream to the server, writes never blocking the supervisor.
struct ToServer {
    pipe: Option<Pin<Box<dyn tokio::io::AsyncWrite>>>,
    pending: Vec<u8>,
}

impl ToServer {
    fn push(&mut self, frame: Frame<'_>) {
        if self.pipe.is_some() {
            frame.encode(&mut self.pending);
        }
    }

    fn gone(&mut self) {
        self.pipe = None;
        self.pending = Vec::new();
    }
}

/// Runs the spec's command to its end and reports it: the steps below, in
/// order. Returns the process's exit code, and for an editor's terminal
/// the flush of what it still has to show.
async fn supervise(spec: Spec, link: Link) -> (i32, Option<tokio::sync::oneshot::Receiver<()>>) {
    let tee = matches!(link, Link::Socket(_)).then(Tee::start);
    let (mut control, mut to_server) = match open_pipes(link) {
        Ok(pipes) => pipes,
        Err(code) => return (code, None),
    };
    let mut output = Output::new(spec.output_limit, tee);
    if let Some(tee) = &mut output.tee {
        tee.push(terminal_header(&spec.command).as_bytes());
    }
    let started_at = crate::home::now_rfc3339();
    let mut command = match start(&spec, &mut to_server) {
        Ok(command) => command,
        Err(outcome) => {
            if let Some(tee) = &mut output.tee {
                tee.push(format!("{}\n", outcome.output).as_bytes());
            }
            send_result(&mut to_server, &outcome);
            flush(&mut to_server).await;
            return (0, output.tee.take().and_then(Tee::finish));
        }
    };
    let mut watch = Watch::new(command.pgid);
    watch.run(&spec, &mut command, &mut output, &mut control, &mut to_server).await;
    output.finish(&mut to_server);
    supervise_rest(spec, command, output, watch, control, to_server, started_at).await
}

/// The first line an editor's terminal shows: the command (its first
/// line), as a shell would echo it.
fn terminal_header(command: &str) -> String {
    let mut lines = command.lines();
    let first = lines.next().unwrap_or("");
    let more = if lines.next().is_some() { " …" } else { "" };
    format!("$ {first}{more}\n")
}

/// The steps once the command has ended: its result, "saved", evidence.
async fn supervise_rest(
    spec: Spec,
    mut command: Running,
    mut output: Output,
    watch: Watch,
    mut control: Control,
    mut to_server: ToServer,
    started_at: String,
) -> (i32, Option<tokio::sync::oneshot::Receiver<()>>) {
    let exit_status = watch.exit.unwrap_or_else(|| std::os::unix::process::ExitStatusExt::from_raw(1 << 8));
    clear_namespace(&mut command);

    let captured = output.capture.finish();
    let captured_len = captured.len();
    let mut outcome = outcome_of(captured, exit_status, watch.stopped, spec_timeout(&spec));
    if let Some(policy) = &spec.sandbox {
        if let Some(note) = crate::sandbox::failure_note(policy, &outcome.output, outcome.exit_code) {
            push_note(&mut outcome.output, &note);
        }
    }
    send_result(&mut to_server, &outcome);
    // The editor's terminal ends with how the command ended (the notes
    // its result ends with: exit code, timeout, cancel, sandbox).
    let tee = output.tee.take().and_then(|mut tee| {
        let notes = outcome.output.get(captured_len..).unwrap_or("").trim_start_matches('\n');
        if !notes.is_empty() {
            tee.push(format!("\n{notes}\n").as_bytes());
        }
        tee.finish()
    });

    if watch.saved || await_saved(&mut control, &mut to_server).await {
        return (0, tee);
    }
    let Some(target) = spec.evidence else { return (0, tee) };
    (leave_evidence(target, &watch, exit_status, command.pid, started_at, output.tail.finish()), tee)
}

/// Step 1: the control bytes and the frames, async: stdin and stdout
/// (pipes from the server), or the two halves of the connection.
fn open_pipes(link: Link) -> Result<(Control, ToServer), i32> {
    let stream = match link {
        Link::Socket(stream) => stream,
        Link::Stdio => {
            // SAFETY: fds 0 and 1 are the pipes the server gave this
            // process; nothing else in this process owns them.
            let (control_fd, out_fd) = unsafe { (OwnedFd::from_raw_fd(0), OwnedFd::from_raw_fd(1)) };
            let control = tokio::net::unix::pipe::Receiver::from_owned_fd(control_fd);
            let out = tokio::net::unix::pipe::Sender::from_owned_fd(out_fd);
            return match (control, out) {
                (Ok(control), Ok(out)) => Ok((
                    Some(Box::pin(control) as Pin<Box<dyn tokio::io::AsyncRead>>),
                    ToServer { pipe: Some(Box::pin(out)), pending: Vec::new() },
                )),
                (Err(e), _) | (_, Err(e)) => {
                    eprintln!("mino supervisor: stdin and stdout must be pipes from mino-server: {e}");
                    Err(2)
                }
            };
        }
    };
    let stream = stream.set_nonblocking(true).and_then(|()| tokio::net::UnixStream::from_std(stream));
    match stream {
        Ok(stream) => {
            // Dropping the write half shuts down only the writing: the
            // server still reads what was sent.
            let (read, write) = stream.into_split();
            Ok((
                Some(Box::pin(read) as Pin<Box<dyn tokio::io::AsyncRead>>),
                ToServer { pipe: Some(Box::pin(write)), pending: Vec::new() },
            ))
        }
        Err(e) => {
            eprintln!("mino supervisor: its connection to mino-server cannot be used: {e}");
            Err(2)
        }
    }
}

/// A started command: bash, in its own process group (and sandbox).
struct Running {
    child: tokio::process::Child,
    pid: u32,
    pgid: Option<i32>,
    stdout: tokio::process::ChildStdout,
    stderr: tokio::process::ChildStderr,
    /// The command's own mount namespace (never this process's): whatever
    /// is still in it when the command ends escaped its group, and is killed.
    /// The command's own mount namespace, held open until its
    /// placeholders are gone (see [`crate::sandbox::MountNamespace`]).
    namespace: Option<crate::sandbox::MountNamespace>,
    /// Placeholders for missing protected paths, removed once nothing of
    /// the command is left.
    placeholders: crate::sandbox::Placeholders,
}

/// Step 2: spawns bash (inside the sandbox the spec asks for) and tells
/// the server its pid; the result to report when it cannot.
fn start(spec: &Spec, to_server: &mut ToServer) -> Result<Running, Outcome> {
    let failed = |output: String| Outcome { status: ToolStatus::Failed, output, exit_code: None };
    let mut bash = tokio::process::Command::new(&spec.bash);
    bash.arg0("bash")
        .args(bash_arguments(&spec.command))
        .current_dir(&spec.cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    if let Some(env) = &spec.env {
        bash.env_clear().envs(env);
    }
    // Dropped on every early return, which removes them.
    let mut placeholders = crate::sandbox::Placeholders::default();
    let mut namespace_receiver = None;
    if let Some(policy) = &spec.sandbox {
        // Prepared here, before the fork; the child only enters it. A
        // sandbox that cannot be had means the command does not run.
        match crate::sandbox::prepare(policy, &crate::sandbox::detect()) {
            Ok(Some(mut prepared)) => {
                placeholders = prepared.take_placeholders();
                namespace_receiver = prepared
                    .report_mount_namespace()
                    .map_err(|e| failed(format!("The command did not run: its sandbox could not be set up: {e}")))?;
                // SAFETY: `enter` makes system calls only, as required
                // between fork and exec.
                unsafe {
                    bash.pre_exec(move || prepared.enter());
                }
            }
            Ok(None) => {}
            Err(e) => return Err(failed(format!("The command did not run: {e}"))),
        }
    }
    let mut child = bash.spawn().map_err(|e| {
        failed(match &spec.sandbox {
            // The child's own error (from `enter`) is all a failed
            // spawn reports; say where it came from.
            Some(policy) => {
                format!("Could not start bash in {} inside the {} sandbox: {e}", spec.cwd.display(), policy.mode)
            }
            None if e.raw_os_error() == Some(libc::E2BIG) => too_long(spec.command.len(), &e.to_string()),
            None => format!("Could not start bash in {}: {e}", spec.cwd.display()),
        })
    })?;
    let pid = child.id().unwrap_or(0);
    let pgid = Some(pid as i32);
    let namespace = match namespace_receiver {
        None => None,
        Some(receiver) => match receiver.receive() {
            Some(namespace) => Some(namespace),
            None => {
                // Never seen: the child sends it before its exec. Without it
                // nothing it leaves could be found, so it does not go on.
                kill_group(pgid, libc::SIGKILL);
                // Kept (never removed under a bind that may still live).
                std::mem::forget(placeholders);
                return Err(failed("The command was stopped as it started: its sandbox's mount namespace could not be held, so what it left running could not be stopped.".into()));
            }
        },
    };
    to_server.push(Frame::Pid(pid.to_string().as_bytes()));
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        kill_group(pgid, libc::SIGKILL);
        return Err(failed("Could not capture the command's output.".into()));
    };
    Ok(Running { child, pid, pgid, stdout, stderr, namespace, placeholders })
}

fn spec_timeout(spec: &Spec) -> Duration {
    Duration::from_millis(spec.timeout_ms)
}

/// The command's output as it is read: decoded, kept, forwarded.
struct Output {
    decoders: [Utf8Carry; 2],
    capture: Capture,
    tail: Tail,
    /// The editor's terminal, when an editor started this supervisor.
    tee: Option<Tee>,
}

impl Output {
    fn new(limit: usize, tee: Option<Tee>) -> Self {
        Self { decoders: Default::default(), capture: Capture::new(limit), tail: Tail::new(limit), tee }
    }

    fn relay(&mut self, stream: Stream, bytes: &[u8], to_server: &mut ToServer) {
        let text = self.decoders[stream as usize].decode(bytes);
        self.keep(stream, &text, to_server);
    }

    fn keep(&mut self, stream: Stream, text: &str, to_server: &mut ToServer) {
        if !text.is_empty() {
            self.capture.push(text);
            self.tail.push(text.as_bytes());
            if let Some(tee) = &mut self.tee {
                tee.push(text.as_bytes());
            }
            to_server.push(Frame::Output(stream, text.as_bytes()));
        }
    }

    /// The streams ended: a sequence cut at their end is shown, not lost.
    fn finish(&mut self, to_server: &mut ToServer) {
        for stream in [Stream::Stdout, Stream::Stderr] {
            let text = self.decoders[stream as usize].finish();
            self.keep(stream, &text, to_server);
        }
    }
}

/// Step 3: what happens while the command runs, and what ended it.
struct Watch {
    pgid: Option<i32>,
    exit: Option<std::process::ExitStatus>,
    stopped: Option<Stop>,
    /// The server said the result is saved (it may say so early).
    saved: bool,
    server_gone: bool,
    ended_after_mino_stopped: bool,
    cancel_requested: bool,
    /// SIGKILL for a group that got SIGTERM and whose leader has not exited.
    escalate: Pin<Box<tokio::time::Sleep>>,
    escalate_armed: bool,
}

impl Watch {
    fn new(pgid: Option<i32>) -> Self {
        Self {
            pgid,
            exit: None,
            stopped: None,
            saved: false,
            server_gone: false,
            ended_after_mino_stopped: false,
            cancel_requested: false,
            escalate: Box::pin(tokio::time::sleep_until(far())),
            escalate_armed: false,
        }
    }

    /// SIGTERM to the group now, SIGKILL after `grace` unless it has exited.
    fn stop(&mut self, why: Stop, grace: Duration) {
        self.stopped = Some(why);
        kill_group(self.pgid, libc::SIGTERM);
        self.escalate.as_mut().reset(tokio::time::Instant::now() + grace);
        self.escalate_armed = true;
    }

    /// Reads the command's output, enforces its limits and follows the
    /// control pipe until the command has exited and its output is read
    /// (or drained for a while after its exit).
    async fn run(
        &mut self,
        spec: &Spec,
        command: &mut Running,
        output: &mut Output,
        control: &mut Control,
        to_server: &mut ToServer,
    ) {
        let kill_grace = Duration::from_millis(spec.kill_grace_ms);
        let (mut out_buf, mut err_buf) = (vec![0u8; 8192], vec![0u8; 8192]);
        let mut control_buf = [0u8; 64];
        let (mut out_open, mut err_open) = (true, true);
        let deadline = tokio::time::sleep(spec_timeout(spec));
        tokio::pin!(deadline);
        // After exit, output still in the pipes is read for a short while; a
        // process that escaped the group (setsid) cannot hold the call open.
        let drain = tokio::time::sleep_until(far());
        tokio::pin!(drain);
        // Once the server is gone: how long the command may finish by itself.
        let orphan = tokio::time::sleep_until(far());
        tokio::pin!(orphan);
        let mut orphan_armed = false;

        while out_open || err_open || self.exit.is_none() {
            let forwarding = to_server.pending.len() < FORWARD_HIGH_WATER;
            tokio::select! {
                read = command.stdout.read(&mut out_buf), if out_open && forwarding => match read {
                    Ok(0) | Err(_) => out_open = false,
                    Ok(n) => output.relay(Stream::Stdout, &out_buf[..n], to_server),
                },
                read = command.stderr.read(&mut err_buf), if err_open && forwarding => match read {
                    Ok(0) | Err(_) => err_open = false,
                    Ok(n) => output.relay(Stream::Stderr, &err_buf[..n], to_server),
                },
                status = command.child.wait(), if self.exit.is_none() => {
                    self.exit = Some(status.unwrap_or_else(|_| std::os::unix::process::ExitStatusExt::from_raw(1 << 8)));
                    self.ended_after_mino_stopped = self.server_gone;
                    // Leftover background children hold the pipes open; they do
                    // not outlive the command.
                    kill_group(self.pgid, libc::SIGKILL);
                    if let Some(namespace) = &command.namespace {
                        crate::sandbox::kill_namespace(namespace, NAMESPACE_KILL_EARLY);
                    }
                    drain.as_mut().reset(tokio::time::Instant::now() + kill_grace);
                }
                _ = &mut drain, if self.exit.is_some() => {
                    out_open = false;
                    err_open = false;
                }
                // Once the command has exited, its status is settled: a
                // timeout or cancel while its leftover output drains is not
                // what happened to it.
                _ = &mut deadline, if self.stopped.is_none() && self.exit.is_none() => {
                    self.stop(Stop::TimedOut, kill_grace);
                }
                _ = &mut self.escalate, if self.escalate_armed && self.exit.is_none() => {
                    self.escalate_armed = false;
                    kill_group(self.pgid, libc::SIGKILL);
                }
                _ = &mut orphan, if orphan_armed && self.stopped.is_none() && self.exit.is_none() => {
                    orphan_armed = false;
                    self.stop(Stop::MinoStopped, ORPHAN_KILL_GRACE);
                }
                read = read_control(control, &mut control_buf), if control.is_some() => match read {
                    Some(bytes) => {
                        if bytes.contains(&CONTROL_SAVED) {
                            self.saved = true;
                        }
                        if bytes.contains(&CONTROL_CANCEL) {
                            self.cancel_requested = true;
                            if self.stopped.is_none() && self.exit.is_none() {
                                self.stop(Stop::Cancelled, kill_grace);
                            }
                        }
                    }
                    None => {
                        // The server is gone (it closed the pipe, or died).
                        *control = None;
                        self.server_gone = true;
                        to_server.gone();
                        if self.exit.is_none() && self.stopped.is_none() {
                            orphan.as_mut().reset(tokio::time::Instant::now() + ORPHAN_GRACE);
                            orphan_armed = true;
                        } else if self.exit.is_none() {
                            // Already being stopped (timeout or cancel): no more
                            // grace than the orphan's.
                            let latest = tokio::time::Instant::now() + ORPHAN_KILL_GRACE;
                            if !self.escalate_armed || self.escalate.deadline() > latest {
                                self.escalate.as_mut().reset(latest);
                                self.escalate_armed = true;
                            }
                        }
                    }
                },
                written = write_some(to_server), if !to_server.pending.is_empty() => {
                    if !written {
                        // The server stopped reading for good; its end of the
                        // control pipe tells whether it is gone.
                        to_server.gone();
                    }
                }
            }
        }
    }
}

/// A deadline that does not come: a timer not armed yet.
fn far() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(u64::from(u32::MAX))
}

/// How long the processes left in a command's namespace get to die once it
/// has exited, before the output is drained: enough to let go of the pipes.
const NAMESPACE_KILL_EARLY: Duration = Duration::from_millis(250);
/// How long they get before its placeholders go. A SIGKILLed process takes
/// its time to leave on a loaded machine; one stuck past this (in an
/// uninterruptible wait) keeps the placeholders where they are.
const NAMESPACE_KILL_LIMIT: Duration = Duration::from_secs(10);

/// Step 4: nothing of the command may be left before its placeholders go:
/// the read-only binds over them live as long as its mount namespace does.
fn clear_namespace(command: &mut Running) {
    if let Some(namespace) = &command.namespace {
        if crate::sandbox::kill_namespace(namespace, NAMESPACE_KILL_LIMIT).left == 0 {
            std::mem::take(&mut command.placeholders).remove();
        } else {
            // Kept (never removed under a live bind) rather than uncovered.
            std::mem::forget(std::mem::take(&mut command.placeholders));
        }
    }
}

/// Step 5: hands the result over, then waits to hear that it is saved
/// (true), or that the server is gone before it could say so (false).
async fn await_saved(control: &mut Control, to_server: &mut ToServer) -> bool {
    let mut control_buf = [0u8; 64];
    while control.is_some() {
        tokio::select! {
            read = read_control(control, &mut control_buf) => match read {
                Some(bytes) if bytes.contains(&CONTROL_SAVED) => return true,
                Some(_) => {}
                None => {
                    *control = None;
                    to_server.gone();
                }
            },
            written = write_some(to_server), if !to_server.pending.is_empty() => {
                if !written {
                    to_server.gone();
                }
            }
        }
    }
    false
}

/// Step 6: the server is gone without the result saved: what was seen is
/// left beside the journal.
fn leave_evidence(
    target: EvidenceTarget,
    watch: &Watch,
    exit_status: std::process::ExitStatus,
    pid: u32,
    started_at: String,
    output_tail: String,
) -> i32 {
    let (outcome, exit_code, signal) = match (watch.stopped, exit_status.code()) {
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
        after_mino_stopped: watch.ended_after_mino_stopped,
        cancelled: watch.cancel_requested,
        output_tail,
        mcp: None,
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
async fn read_control<'a>(control: &mut Control, buf: &'a mut [u8]) -> Option<&'a [u8]> {
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
    to_server.push(Frame::Result(&json));
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
