//! The state of a running session, shared by every clone of an
//! [`Agent`]: the session, its tools and policy, the running turn.

use super::*;

pub(super) struct RunningTurn {
    /// Empty for a compaction.
    pub(super) turn_id: String,
    pub(super) cancel: CancellationToken,
    /// The one call waiting for a decision (calls are asked one at a time).
    pub(super) approval: Option<PendingApproval>,
    /// Not a turn: [`Agent::compact`] holds the session (no turn may start
    /// while the summary is made and saved).
    pub(super) compaction: bool,
}

impl RunningTurn {
    /// Why nothing else may start now.
    pub(super) fn busy_error(&self) -> AgentError {
        if self.compaction {
            AgentError::Compacting
        } else {
            SessionError::TurnInProgress(self.turn_id.clone()).into()
        }
    }
}

pub(super) struct PendingApproval {
    pub(super) call_id: String,
    /// An edit's proposal: how many hunks its diff has (a decision may
    /// accept some of them); `None` for a command.
    pub(super) edit_hunks: Option<usize>,
    pub(super) decision: oneshot::Sender<Decision>,
}

pub(super) struct Inner {
    pub(super) session: Mutex<Session>,
    /// The client for the current session's model: the configured one, or
    /// the one its `model` record names. Replaced only between turns (a
    /// selection or a switch); a turn takes a copy when it starts.
    pub(super) model: Mutex<ModelClient>,
    /// The configured model's client, which a session that chose none uses.
    pub(super) configured_model: ModelClient,
    /// Replaced by a switch (a session's commands run in its own directory);
    /// a running call keeps the one it started with.
    pub(super) bash: Mutex<Arc<BashTool>>,
    /// Mino's own instructions (SOUL.md).
    pub(super) instructions: String,
    /// The project's `AGENTS.md` files, read again when each turn starts
    /// (and for `mino/history`), so an edited file applies to the next turn.
    pub(super) project: Mutex<ProjectInstructions>,
    pub(super) limits: TurnLimits,
    /// Approval mode, sandbox mode, workspace rules (see [`crate::policy`]).
    pub(super) policy: Mutex<Policy>,
    /// Every model's context window and when to compact automatically,
    /// resolved for the session's current model at each check.
    pub(super) compaction: Mutex<CompactionTable>,
    pub(super) emitter: Mutex<Emitter>,
    pub(super) running: Mutex<Option<RunningTurn>>,
    /// Whether a turn runs, published (under the `running` lock) whenever
    /// `running` changes, so [`Agent::close`] can wait for a turn's end to
    /// be recorded without polling.
    pub(super) busy: watch::Sender<bool>,
    /// Set (under the `running` lock) when the client is gone: no new turn
    /// may start, so none can slip in after the running one was cancelled.
    pub(super) closed: std::sync::atomic::AtomicBool,
    /// Set (under the `running` lock, only while no turn runs) while
    /// [`Agent::switch`] replaces the session: no turn may start meanwhile.
    pub(super) switching: std::sync::atomic::AtomicBool,
    /// The editor's text of open files, when the front door can ask for it.
    pub(super) open_buffers: Mutex<Option<Arc<dyn OpenBuffers>>>,
    pub(super) command_terminals: Mutex<Option<Arc<dyn crate::terminal::CommandTerminals>>>,
    /// The session's MCP servers.
    pub(super) mcp: crate::mcp::McpManager,
}

/// Held while the session is claimed between turns
/// ([`Agent::claim_between_turns`]); lets turns start again when dropped.
pub(super) struct BetweenTurns<'a>(&'a Inner);

impl Drop for BetweenTurns<'_> {
    fn drop(&mut self) {
        self.0.switching.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves data that was valid
    // between statements; carrying on is better than wedging the session.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Agent {
    /// Claims the session between turns (for a switch or a model choice):
    /// refused while a turn runs, the client is gone or another claim
    /// holds; no turn can start until the returned guard is dropped.
    pub(super) fn claim_between_turns(&self) -> Result<BetweenTurns<'_>, AgentError> {
        use std::sync::atomic::Ordering::SeqCst;
        let running = lock(&self.inner.running);
        if self.inner.closed.load(SeqCst) {
            return Err(AgentError::Closed);
        }
        if let Some(turn) = running.as_ref() {
            return Err(turn.busy_error());
        }
        if self.inner.switching.swap(true, SeqCst) {
            return Err(AgentError::Switching);
        }
        Ok(BetweenTurns(&self.inner))
    }
}
