//! An editor's own terminal for a command: a front door whose client can
//! run a process in a terminal it shows (an ACP client offering
//! `terminal/create`) gives the agent a [`CommandTerminals`], and an
//! approved command then runs under a supervisor the editor starts there
//! (`BashTool::start_in_terminal`). The supervisor is the same one Mino
//! starts itself (sandbox, environment, limits, process group, evidence):
//! only its parent and its connection to the server differ. The core
//! knows nothing of how the front door asks.

use std::path::PathBuf;

use futures::future::BoxFuture;

/// What the editor is asked to run: Mino's own supervisor, never the
/// command itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalLaunch {
    /// The call it is for, so the front door can show the terminal in it.
    pub turn_id: String,
    pub call_id: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Only the supervisor's one-time token: the command's own
    /// environment reaches it in its spec, never through the editor.
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// How much of its output the terminal need keep (the command's limit).
    pub output_limit: usize,
}

/// The editor's terminals.
pub trait CommandTerminals: Send + Sync {
    /// Starts `launch` in a new terminal; its id, or why not. The
    /// implementation bounds its own wait.
    fn create(&self, launch: TerminalLaunch) -> BoxFuture<'static, Result<String, String>>;

    /// The call is over (its result saved, or it never ran): wait for the
    /// terminal's process to exit (bounded), kill it when `kill` is set or
    /// it does not exit, and release the terminal. Never fails: the
    /// result is Mino's, from its own supervisor.
    fn finish(&self, terminal_id: String, kill: bool) -> BoxFuture<'static, ()>;
}
