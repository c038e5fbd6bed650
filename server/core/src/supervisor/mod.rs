//! The command supervisor: one small process per approved command that
//! outlives the server if it must, so that no command outlives its limits.
//!
//! `mino-server` re-executes itself as `mino-server --supervise` (any
//! executable that calls [`main`] for [`FLAG`] will do; the core's tests use
//! the `mino-supervisor` binary of this crate). The supervisor:
//!
//! - is started before the command is approved to run, and waits: its first
//!   input is the [`Spec`] (`wire::spec_frame`), written only once the call's
//!   approval and `tool_start` are synced. End of file before a whole spec
//!   means nothing is to run, and it exits;
//! - spawns `bash -c <command>` in a process group of its own, in the
//!   session's directory, with its own environment (which the server set to
//!   exactly the command's: cleared plus the allowlist), stdin closed;
//! - reads the command's output, caps it, and forwards it to the server as
//!   frames on its stdout (`wire::Frame`);
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
//!
//! An editor may start the supervisor instead (an ACP client's
//! `terminal/create`, so that the command's output shows in the editor's
//! own terminal): then it is `--supervise --connect <socket>` with a
//! one-time token in [`TOKEN_VAR`], and it reads its spec, the control
//! bytes and end of file from, and writes its frames to, that connection
//! to the server (`crate::bash::TerminalLaunch`) instead of its stdin and
//! stdout; it also writes the command's output to its stdout, the
//! terminal. Everything else (the sandbox, the environment, the limits, the
//! process group, the evidence) is the same.
//!
//! Its rooms: [`wire`] (the pipe protocol, both ends), [`evidence`] (the
//! record it leaves, read back by recovery), `capture` (the output kept
//! within the limit), `run` (supervise mode, step by step).

use std::time::Duration;

mod capture;
pub mod evidence;
mod run;
pub mod wire;

pub(crate) use capture::push_note;
pub use evidence::{
    evidence_dir, evidence_path, load_evidence, write_evidence, Evidence, EvidenceOutcome, EvidenceTarget, McpEvidence,
    EVIDENCE_VERSION,
};
pub(crate) use run::{kill_group, too_long};
pub use run::{main, CONNECT_FLAG, TOKEN_VAR};
pub use wire::Spec;

/// The first argument that selects supervise mode.
pub const FLAG: &str = "--supervise";

/// How long a command may go on finishing by itself once the server is gone.
pub const ORPHAN_GRACE: Duration = Duration::from_millis(1000);
/// Then its group gets SIGTERM, and SIGKILL this much later.
pub const ORPHAN_KILL_GRACE: Duration = Duration::from_millis(500);
