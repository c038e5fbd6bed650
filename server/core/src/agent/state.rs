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

/// Who holds the session, behind one lock, so that starting a turn, a
/// compaction or a claim between turns, and closing, each decide on all of
/// it at once: none can slip in between another's check and its claim.
#[derive(Default)]
pub(super) struct TurnSlot {
    /// The running turn or compaction.
    pub(super) running: Option<RunningTurn>,
    /// The client is gone: no new turn may start, so none can slip in after
    /// the running one was cancelled.
    pub(super) closed: bool,
    /// Set, only while nothing runs, while [`Agent::switch`] replaces the
    /// session or a model choice or a rewind is saved
    /// ([`Agent::claim_between_turns`]): nothing may start meanwhile.
    pub(super) switching: bool,
}

impl TurnSlot {
    /// Why nothing may start now (the client gone, a turn or compaction
    /// running, a claim between turns), or `None` when the session is free.
    pub(super) fn refusal(&self) -> Option<AgentError> {
        if self.closed {
            return Some(AgentError::Closed);
        }
        if let Some(turn) = self.running.as_ref() {
            return Some(turn.busy_error());
        }
        self.switching.then_some(AgentError::Switching)
    }
}

pub(super) struct PendingApproval {
    pub(super) call_id: String,
    /// An edit's proposal: how many hunks its diff has (a decision may
    /// accept some of them); `None` for a command.
    pub(super) edit_hunks: Option<usize>,
    pub(super) decision: oneshot::Sender<Decision>,
}

/// What one session's agent holds, shared by every clone of the [`Agent`]:
/// one lock per part, none held across an await or a journal sync.
///
/// Lock order, where two are held at once: `slot` before `session` and
/// before `emitter` (a turn is claimed, and its end announced, under the
/// slot); `policy` before `bash`. No other lock is taken while one is held.
pub(super) struct SessionState {
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
    /// Who holds the session now (see [`TurnSlot`]).
    pub(super) slot: Mutex<TurnSlot>,
    /// Whether a turn runs, published (under the `slot` lock) whenever
    /// `slot.running` changes, so [`Agent::close`] can wait for a turn's
    /// end to be recorded without polling.
    pub(super) busy: watch::Sender<bool>,
    /// The editor's text of open files, when the front door can ask for it.
    pub(super) open_buffers: Mutex<Option<Arc<dyn OpenBuffers>>>,
    pub(super) command_terminals: Mutex<Option<Arc<dyn crate::terminal::CommandTerminals>>>,
    /// The session's MCP servers.
    pub(super) mcp: crate::mcp::McpManager,
}

/// Held while the session is claimed between turns
/// ([`Agent::claim_between_turns`]); lets turns start again when dropped.
pub(super) struct BetweenTurns<'a>(&'a SessionState);

impl Drop for BetweenTurns<'_> {
    fn drop(&mut self) {
        lock(&self.0.slot).switching = false;
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
        let mut slot = lock(&self.state.slot);
        if let Some(refused) = slot.refusal() {
            return Err(refused);
        }
        slot.switching = true;
        Ok(BetweenTurns(&self.state))
    }
}
