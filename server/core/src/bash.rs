//! The `bash` tool: how an approved command runs.
//!
//! A command runs with `bash -c` in the session's directory, in a process
//! group of its own, with a cleared environment plus [`ENV_ALLOWLIST`] (so no
//! API key or other secret of Mino's own environment reaches it), stdin closed,
//! and its output streamed and capped. On timeout or cancel the whole group
//! gets SIGTERM, then SIGKILL after a grace period; when the command exits,
//! whatever it left running in its group is killed too, so nothing outlives
//! the call.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use crate::journal::record::ToolStatus;

/// Variables passed through from Mino's environment when set.
pub const ENV_ALLOWLIST: [&str; 10] =
    ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR"];

/// The `PATH` a command gets when Mino's own has none.
pub const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
pub const DEFAULT_OUTPUT_LIMIT: usize = 64 * 1024;
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    /// Bytes of output kept: the first and last halves, with a note of what was cut.
    pub output_limit: usize,
    /// Time between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self { timeout: DEFAULT_TIMEOUT, output_limit: DEFAULT_OUTPUT_LIMIT, kill_grace: DEFAULT_KILL_GRACE }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub status: ToolStatus,
    pub output: String,
    pub exit_code: Option<i32>,
}

/// Reads the `command` of a bash call's arguments; the error is written for
/// the model, which sent them.
pub fn command_of(arguments: &str) -> Result<String, String> {
    let value: serde_json::Value = serde_json::from_str(arguments)
        .map_err(|e| format!("The bash tool's arguments are not valid JSON ({e}); send {{\"command\": \"...\"}}."))?;
    match value.get("command") {
        Some(serde_json::Value::String(command)) if !command.trim().is_empty() => Ok(command.clone()),
        Some(serde_json::Value::String(_)) => Err("The bash tool's `command` is empty.".into()),
        Some(_) => Err("The bash tool's `command` must be a string.".into()),
        None => Err("The bash tool needs a `command` argument: {\"command\": \"...\"}.".into()),
    }
}

#[derive(Debug, Clone)]
pub struct BashTool {
    cwd: PathBuf,
    env: BTreeMap<String, String>,
    limits: Limits,
}

impl BashTool {
    /// A tool running in `cwd` with the allowlisted part of this process's environment.
    pub fn new(cwd: PathBuf, limits: Limits) -> Self {
        let mut env: BTreeMap<String, String> =
            ENV_ALLOWLIST.iter().filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?))).collect();
        env.entry("PATH".into()).or_insert_with(|| FALLBACK_PATH.into());
        Self { cwd, env, limits }
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

    pub fn cwd(&self) -> &std::path::Path {
        &self.cwd
    }

    /// Exactly the environment a command gets.
    pub fn environment(&self) -> &BTreeMap<String, String> {
        &self.env
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Runs an approved command. Only the turn loop calls this, and only after
    /// the call's approval and `tool_start` are synced.
    pub async fn run(
        &self,
        command: &str,
        on_output: &mut (dyn FnMut(Stream, &str) + Send),
        cancel: &CancellationToken,
    ) -> Outcome {
        // `bash` found in the command's own PATH (as the spawn would find
        // it), named by its path with argv[0] still `bash`: the standard
        // library spawns a program it must look up in a changed PATH with
        // fork + exec, whose cost grows with this process's memory, and one
        // named by its path with posix_spawn (vfork-like, cheap).
        let mut child = match tokio::process::Command::new(self.bash_program())
            .arg0("bash")
            .arg("-c")
            .arg(command)
            .current_dir(&self.cwd)
            .env_clear()
            .envs(&self.env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
        {
            Ok(child) => child,
            Err(e) => {
                return Outcome {
                    status: ToolStatus::Failed,
                    output: format!("Could not start bash in {}: {e}", self.cwd.display()),
                    exit_code: None,
                }
            }
        };
        let pgid = child.id().map(|id| id as i32);
        let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
            kill_group(pgid, libc::SIGKILL);
            return Outcome {
                status: ToolStatus::Failed,
                output: "Could not capture the command's output.".into(),
                exit_code: None,
            };
        };

        let mut capture = Capture::new(self.limits.output_limit);
        let mut decoders = [Utf8Carry::default(), Utf8Carry::default()];
        let (mut out_buf, mut err_buf) = (vec![0u8; 8192], vec![0u8; 8192]);
        let (mut out_open, mut err_open) = (true, true);
        let deadline = tokio::time::sleep(self.limits.timeout);
        tokio::pin!(deadline);
        // After exit, output still in the pipes is read for a short while; a
        // process that escaped the group (setsid) cannot hold the call open.
        let drain = tokio::time::sleep(Duration::from_secs(u64::from(u32::MAX)));
        tokio::pin!(drain);
        let mut exit: Option<std::process::ExitStatus> = None;
        let mut stopped: Option<ToolStatus> = None;

        while out_open || err_open || exit.is_none() {
            tokio::select! {
                read = stdout.read(&mut out_buf), if out_open => match read {
                    Ok(0) | Err(_) => out_open = false,
                    Ok(n) => emit(&mut decoders[0], &out_buf[..n], Stream::Stdout, &mut capture, on_output),
                },
                read = stderr.read(&mut err_buf), if err_open => match read {
                    Ok(0) | Err(_) => err_open = false,
                    Ok(n) => emit(&mut decoders[1], &err_buf[..n], Stream::Stderr, &mut capture, on_output),
                },
                status = child.wait(), if exit.is_none() => {
                    exit = Some(status.unwrap_or_else(|_| std::os::unix::process::ExitStatusExt::from_raw(1 << 8)));
                    // Leftover background children hold the pipes open; they do
                    // not outlive the command.
                    kill_group(pgid, libc::SIGKILL);
                    drain.as_mut().reset(tokio::time::Instant::now() + self.limits.kill_grace);
                }
                _ = &mut drain, if exit.is_some() => {
                    out_open = false;
                    err_open = false;
                }
                // Once the command has exited, its status is settled: a
                // timeout or cancel while its leftover output drains is not
                // what happened to it.
                _ = &mut deadline, if stopped.is_none() && exit.is_none() => {
                    stopped = Some(ToolStatus::TimedOut);
                    self.stop_group(pgid, &mut child).await;
                }
                _ = cancel.cancelled(), if stopped.is_none() && exit.is_none() => {
                    stopped = Some(ToolStatus::Cancelled);
                    self.stop_group(pgid, &mut child).await;
                }
            }
        }

        for (carry, stream) in decoders.iter_mut().zip([Stream::Stdout, Stream::Stderr]) {
            let text = carry.finish();
            if !text.is_empty() {
                capture.push(&text);
                on_output(stream, &text);
            }
        }
        let mut output = capture.finish();
        let exit_code = exit.and_then(|s| s.code());
        let status = match stopped {
            Some(ToolStatus::TimedOut) => {
                push_note(
                    &mut output,
                    &format!(
                        "[timed out after {}; the command's process group was killed]",
                        seconds(self.limits.timeout)
                    ),
                );
                ToolStatus::TimedOut
            }
            Some(other) => {
                push_note(&mut output, "[cancelled; the command's process group was killed]");
                other
            }
            None => match exit_code {
                Some(0) => ToolStatus::Success,
                Some(code) => {
                    push_note(&mut output, &format!("[exit code {code}]"));
                    ToolStatus::Failed
                }
                None => {
                    let signal = exit.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
                    push_note(&mut output, &format!("[terminated by signal {}]", signal.unwrap_or(0)));
                    ToolStatus::Failed
                }
            },
        };
        Outcome { status, output, exit_code }
    }

    /// SIGTERM to the group, SIGKILL after the grace period if the leader
    /// has not exited.
    async fn stop_group(&self, pgid: Option<i32>, child: &mut tokio::process::Child) {
        kill_group(pgid, libc::SIGTERM);
        if tokio::time::timeout(self.limits.kill_grace, child.wait()).await.is_err() {
            kill_group(pgid, libc::SIGKILL);
        } else {
            // The leader exited; children that ignore SIGTERM must not survive it.
            kill_group(pgid, libc::SIGKILL);
        }
    }
}

fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

fn kill_group(pgid: Option<i32>, signal: i32) {
    if let Some(pgid) = pgid.filter(|&p| p > 0) {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory is involved.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

fn push_note(output: &mut String, note: &str) {
    if !output.is_empty() && !output.ends_with('\n') {
        output.push('\n');
    }
    output.push_str(note);
}

fn emit(
    carry: &mut Utf8Carry,
    bytes: &[u8],
    stream: Stream,
    capture: &mut Capture,
    on_output: &mut (dyn FnMut(Stream, &str) + Send),
) {
    let text = carry.decode(bytes);
    if !text.is_empty() {
        capture.push(&text);
        on_output(stream, &text);
    }
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

fn executable(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: access(2) reads a NUL-terminated path we own for the call's duration.
    unsafe { libc::access(c_path.as_ptr(), libc::X_OK) == 0 }
}

/// Keeps the head and tail of the output within the limit.
struct Capture {
    limit: usize,
    head: String,
    tail: std::collections::VecDeque<char>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_for_the_model() {
        assert_eq!(command_of(r#"{"command":"ls"}"#), Ok("ls".into()));
        assert!(command_of("{").unwrap_err().contains("not valid JSON"));
        assert!(command_of(r#"{"cmd":"ls"}"#).unwrap_err().contains("needs a `command`"));
        assert!(command_of(r#"{"command":3}"#).unwrap_err().contains("must be a string"));
    }

    #[test]
    fn capture_keeps_head_and_tail_and_says_what_was_cut() {
        let mut c = Capture::new(10);
        c.push("0123456789abcdefghij");
        let out = c.finish();
        assert!(out.starts_with("01234\n[... 10 bytes"), "{out}");
        assert!(out.ends_with("fghij"), "{out}");
    }

    #[test]
    fn bash_is_found_in_the_commands_path_and_still_called_bash() {
        let mut tool = BashTool::new(std::env::temp_dir(), Limits::default());
        let found = tool.bash_program();
        assert!(found.is_absolute() && found.ends_with("bash"), "{found:?}");
        // A PATH needing more than absolute directories: looked up at spawn, as before.
        tool.env.insert("PATH".into(), format!("relative:{}", found.parent().unwrap().display()));
        assert_eq!(tool.bash_program(), PathBuf::from("bash"));
        tool.env.insert("PATH".into(), "/nonexistent-mino-dir".into());
        assert_eq!(tool.bash_program(), PathBuf::from("bash"));
    }

    #[tokio::test]
    async fn the_command_sees_bash_as_its_name() {
        let tool = BashTool::new(std::env::temp_dir(), Limits::default());
        let outcome = tool.run("echo $0", &mut |_, _| {}, &CancellationToken::new()).await;
        assert_eq!((outcome.status, outcome.output.as_str()), (ToolStatus::Success, "bash\n"));
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
}
