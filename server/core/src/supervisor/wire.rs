//! The pipe protocol between the server and a supervisor, both ends of it:
//! the server writes ([`spec_frame`], then control bytes) and reads
//! ([`next_frame`]) with what the supervisor reads ([`read_spec`]) and
//! writes ([`Frame::encode`]), so the two cannot drift apart.
//!
//! - stdin of the supervisor: the [`Spec`] (u32 length, little-endian, then
//!   its JSON), then single control bytes: [`CONTROL_CANCEL`],
//!   [`CONTROL_SAVED`]; end of file means the server is gone.
//! - stdout of the supervisor: frames `tag, u32 length (LE), payload`, one
//!   per [`Frame`]: the command's pid, its output as it comes, its result.

use std::os::fd::FromRawFd;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::evidence::EvidenceTarget;
use crate::tool_facts::ToolStatus;

/// Control bytes the server writes to the supervisor's stdin.
pub(crate) const CONTROL_CANCEL: u8 = b'c';
pub(crate) const CONTROL_SAVED: u8 = b's';

/// Frame tags on the supervisor's stdout: `tag, u32 length (LE), payload`.
const TAG_PID: u8 = b'p';
const TAG_STDOUT: u8 = b'o';
const TAG_STDERR: u8 = b'e';
const TAG_RESULT: u8 = b'r';
const FRAME_HEADER: usize = 5;
/// No frame is larger: a result holds at most the output limit (a chunk
/// far less), each byte at most three after lossy decoding, plus JSON escapes.
pub(crate) const MAX_FRAME: usize = 64 * 1024 * 1024;

/// Which of the command's output streams a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// A command's result, as the supervisor reports it and the journal records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub status: ToolStatus,
    pub output: String,
    pub exit_code: Option<i32>,
}

/// What the server asks of one supervisor: the first bytes on its stdin.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spec {
    /// The `bash` to run, by path (see `BashTool::bash_program`).
    pub bash: PathBuf,
    pub command: String,
    pub cwd: PathBuf,
    pub timeout_ms: u64,
    pub kill_grace_ms: u64,
    pub output_limit: usize,
    /// Where to leave [`super::Evidence`] if the server goes away; none for runs
    /// outside a session.
    #[serde(default)]
    pub evidence: Option<EvidenceTarget>,
    /// The sandbox bash enters before it starts (`pre_exec`); none is `off`.
    #[serde(default)]
    pub sandbox: Option<crate::sandbox::SandboxPolicy>,
    /// Exactly the environment bash gets (cleared, then these). A
    /// supervisor the server spawned already has it as its own; one an
    /// editor started in its terminal has the editor's, which the command
    /// must not see. None: bash inherits the supervisor's.
    #[serde(default)]
    pub env: Option<std::collections::BTreeMap<String, String>>,
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
pub(super) enum NoSpec {
    /// Stdin ended first: the server dropped this supervisor unused.
    Ended,
    Invalid(String),
}

/// Reads the spec from `fd` (stdin, or the connection to the server),
/// byte-exact (unbuffered), so that the control bytes after it stay there
/// for the supervise loop.
pub(super) fn read_spec(fd: std::os::fd::RawFd) -> Result<Spec, NoSpec> {
    use std::io::Read;
    // SAFETY: `fd` is open for this process's whole life (the pipe the
    // server gave it, or its connection). ManuallyDrop keeps it open: the
    // supervise loop takes it over afterwards.
    let mut stdin = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
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

/// One frame on the supervisor's stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Frame<'a> {
    /// The command's process id, in decimal.
    Pid(&'a [u8]),
    /// Output of the command, as UTF-8 text.
    Output(Stream, &'a [u8]),
    /// The [`Outcome`] as JSON; the last frame.
    Result(&'a [u8]),
}

impl Frame<'_> {
    fn tag(&self) -> u8 {
        match self {
            Frame::Pid(_) => TAG_PID,
            Frame::Output(Stream::Stdout, _) => TAG_STDOUT,
            Frame::Output(Stream::Stderr, _) => TAG_STDERR,
            Frame::Result(_) => TAG_RESULT,
        }
    }

    fn payload(&self) -> &[u8] {
        match self {
            Frame::Pid(payload) | Frame::Output(_, payload) | Frame::Result(payload) => payload,
        }
    }

    /// Appends the frame to `out`.
    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        let payload = self.payload();
        out.push(self.tag());
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend_from_slice(payload);
    }
}

/// The next whole frame at the start of `buf` and the bytes it took, or an
/// error for a frame no supervisor writes; `None` while incomplete.
pub(crate) fn next_frame(buf: &[u8]) -> Option<Result<(Frame<'_>, usize), String>> {
    if buf.len() < FRAME_HEADER {
        return None;
    }
    let len = u32::from_le_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
    if len > MAX_FRAME {
        return Some(Err(format!("it sent a frame of {len} bytes")));
    }
    let end = FRAME_HEADER + len;
    if buf.len() < end {
        return None;
    }
    let payload = &buf[FRAME_HEADER..end];
    let frame = match buf[0] {
        TAG_PID => Frame::Pid(payload),
        TAG_STDOUT => Frame::Output(Stream::Stdout, payload),
        TAG_STDERR => Frame::Output(Stream::Stderr, payload),
        TAG_RESULT => Frame::Result(payload),
        other => return Some(Err(format!("it sent an unknown frame {other}"))),
    };
    Some(Ok((frame, end)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_read_whole_and_oversized_ones_refused() {
        let mut buf = Vec::new();
        Frame::Output(Stream::Stdout, b"abc").encode(&mut buf);
        assert_eq!(next_frame(&buf[..6]), None, "incomplete");
        assert_eq!(next_frame(&buf), Some(Ok((Frame::Output(Stream::Stdout, &b"abc"[..]), 8))));
        let mut huge = vec![TAG_RESULT];
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(next_frame(&huge), Some(Err(_))));
    }

    #[test]
    fn every_frame_written_reads_back_as_itself() {
        let frames =
            [Frame::Pid(b"42"), Frame::Output(Stream::Stderr, "€".as_bytes()), Frame::Result(b"{}"), Frame::Pid(b"")];
        let mut buf = Vec::new();
        for frame in &frames {
            frame.encode(&mut buf);
        }
        let mut at = 0;
        for frame in frames {
            let (read, used) = next_frame(&buf[at..]).expect("whole").expect("valid");
            assert_eq!(read, frame);
            at += used;
        }
        assert_eq!(at, buf.len());
        assert_eq!(next_frame(b"x\0\0\0\0"), Some(Err("it sent an unknown frame 120".into())));
    }
}
