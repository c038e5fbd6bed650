//! The turn loop: the user's input goes to the model, the model's calls go
//! to the person for approval and then to bash, their results go back to
//! the model, until it answers without calls or a limit, an error or a cancel
//! ends the turn.
//!
//! Every step is recorded at the journal's save points before the next one
//! happens, and emitted as an [`AgentEvent`] in order, numbered by a `seq`
//! that counts up across the session. The events are the only way out of
//! here; a transport forwards them.
//!
//! In rooms of one purpose: `state` (what a running session holds, shared
//! by every clone), `turn` (the loop), `approvals`, `rules`, `bash_call`,
//! `edit_call`, `read_call` and `mcp_call` (one step per tool: they are the
//! agent's, reaching its private state, so they live here rather than
//! beside the tools they call), `results`, `compaction`, `rewind`,
//! `models`, `settings`, `instructions`, `editor`, `switch`, `events` (what
//! is emitted) and `event_stream` (numbered and queued, bounded, for the
//! front door).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::bash::{self, BashTool, Stream};
use crate::buffers::OpenBuffers;
use crate::compaction::Trigger;
use crate::config::{CompactionSettings, CompactionTable};
use crate::edit::{self, EditArgs, EditProposal, EditTool, Workspace};
use crate::journal::record::{ApprovalDecision, ApprovalFacts, ApprovedBy, ToolStatus, TurnStatus};
use crate::model::{ModelClient, ModelError, ModelEvent, ModelRequest, CONTEXT_WINDOW_FULL};
use crate::policy::{ApprovalMode, Policy, PolicyError, RuleDecision, Settings};
use crate::project_instructions::{self, ProjectInstructions};
use crate::read::{CallTool, ReadInfo};
use crate::recovery::RecoveryReport;
use crate::rules::{Rule, RuleScope};
use crate::sandbox::SandboxMode;
use crate::session::{Session, SessionError};
use crate::transcript::Approver;
use crate::usage::Usage;

mod approvals;
mod bash_call;
mod compaction;
mod edit_call;
mod editor;
mod event_stream;
mod events;
mod instructions;
mod mcp_call;
mod models;
pub mod outputs;
mod read_call;
mod results;
mod rewind;
mod rules;
mod settings;
mod state;
mod switch;
mod turn;

pub use approvals::Decision;
pub use bash_call::LIVE_OUTPUT_LIMIT;
pub use compaction::{CompactionOutcome, COMPACTION_CANCELLED};
pub use edit_call::EditApproval;
pub use event_stream::Events;
pub use events::{AgentEvent, Numbered};
pub use models::MAX_MODEL_NAME;
pub use rewind::RewindOutcome;
pub use rules::RulesInForce;
pub use turn::{
    turn_text_limit_reason, unsaved_end_reason, TurnLimits, DEFAULT_MAX_CALLS, DEFAULT_MAX_REQUESTS, TURN_TEXT_LIMIT,
};

// What the rooms share among themselves (each takes the lot with `use super::*`).
use approvals::*;
use event_stream::*;
use models::*;
use results::*;
use state::*;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The decision names a (turn, call) other than the one waiting now:
    /// call ids repeat across turns (and models), so a call id alone could
    /// approve a different command.
    #[error("call {call_id} of turn {turn_id} is not waiting for approval; a decision must name the turnId and callId of the pending mino/approvalRequest")]
    NoPendingApproval { turn_id: String, call_id: String },
    /// A decision accepting some hunks that cannot apply to the call
    /// waiting (a command, no hunk, a hunk the diff lacks); nothing was
    /// decided and the call still waits.
    #[error("{0}; nothing was decided and the call still waits")]
    BadHunks(String),
    #[error("no running turn {0}")]
    UnknownTurn(String),
    #[error("the server is shutting down: its client is gone")]
    Closed,
    /// A chat, a switch or a model choice while a switch opens a session
    /// or a model choice is being saved.
    #[error("another session is being opened or a model chosen; wait for it to finish")]
    Switching,
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// A chat, a switch or a compaction while a compaction runs.
    #[error("the conversation is being compacted; wait for mino/compactionEnded")]
    Compacting,
    /// No rewind plan can be made (an unknown or open turn, one rewound before…).
    #[error(transparent)]
    RewindPlan(#[from] crate::rewind::PlanError),
    /// The plan shown is no longer the plan: something changed since.
    #[error("the rewind plan changed since it was shown (files or turns changed); nothing was written. Ask for the plan again (mino/rewind/plan), show it, and confirm that one")]
    StalePlan,
}

/// One session's agent. Cheap to clone; all clones drive the same session.
#[derive(Clone)]
pub struct Agent {
    state: Arc<SessionState>,
}

/// Runs blocking file work (the journal's writes and syncs, reading,
/// hashing and writing an edit) without holding up the async workers.
///
/// On the multi-threaded runtime (the server's) the calling thread hands its
/// worker's queue to another thread and does the work itself
/// (`block_in_place`), so other tasks go on at once and the turn waits for
/// no other thread to wake: a round trip to the blocking pool woke two
/// threads per save, each waiting for a CPU on a busy machine, which was
/// most of the turn step's own time (docs/performance.md, "The turn step's
/// own time"). A current-thread runtime (some tests) cannot hand its worker
/// over, so there the work goes to the blocking pool.
async fn blocking<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    use tokio::runtime::{Handle, RuntimeFlavor};
    if Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread) {
        return tokio::task::block_in_place(f);
    }
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Only when the runtime shuts down, which drops this task too.
        Err(e) => panic!("blocking file work was abandoned: {e}"),
    }
}

impl Agent {
    pub fn new(
        session: Session,
        model: ModelClient,
        bash: BashTool,
        instructions: String,
        limits: TurnLimits,
    ) -> (Agent, Events) {
        Self::with_policy(session, model, bash, instructions, limits, Policy::ask_only())
    }

    /// [`Agent::new`] with a session policy (approval mode, sandbox, rules).
    pub fn with_policy(
        session: Session,
        model: ModelClient,
        bash: BashTool,
        instructions: String,
        limits: TurnLimits,
        policy: Policy,
    ) -> (Agent, Events) {
        let (sender, receiver) = event_stream::channel();
        let session_id = session.id().to_string();
        let session_model = session_model(&model, &session);
        let project = project_instructions::load(Path::new(session.cwd()));
        let supervisor = bash.supervisor().to_path_buf();
        let state = SessionState {
            session: Mutex::new(session),
            model: Mutex::new(session_model),
            configured_model: model,
            bash: Mutex::new(Arc::new(bash)),
            project: Mutex::new(project),
            instructions,
            limits,
            policy: Mutex::new(policy),
            compaction: Mutex::new(CompactionTable::default()),
            emitter: Mutex::new(Emitter { next_seq: 1, session_id, sender }),
            slot: Mutex::new(TurnSlot::default()),
            busy: watch::Sender::new(false),
            open_buffers: Mutex::new(None),
            command_terminals: Mutex::new(None),
            mcp: crate::mcp::McpManager::new(Vec::new(), supervisor),
        };
        (Agent { state: Arc::new(state) }, receiver)
    }

    /// Runs `f` with the session locked (never across an await).
    pub fn with_session<R>(&self, f: impl FnOnce(&mut Session) -> R) -> R {
        f(&mut lock(&self.state.session))
    }

    /// The running turn, if any (a compaction is not a turn).
    pub fn running_turn(&self) -> Option<String> {
        lock(&self.state.slot).running.as_ref().filter(|t| !t.compaction).map(|t| t.turn_id.clone())
    }

    /// Runs `f` with the session locked, off the async workers (see
    /// [`blocking`]): every save point (a journal sync) goes through here,
    /// so no async worker waits on the disk (and `approve`/`cancel`, which
    /// only need the turn slot's lock, never wait behind a sync).
    pub async fn with_session_io<R: Send + 'static>(&self, f: impl FnOnce(&mut Session) -> R + Send + 'static) -> R {
        let state = self.state.clone();
        blocking(move || f(&mut lock(&state.session))).await
    }

    /// The client is gone: refuses every later turn, cancels the running
    /// one, and resolves once that turn's end is recorded (or failed to be,
    /// and said so): at once when no turn runs.
    pub async fn close(&self) {
        let mut busy = {
            let mut slot = lock(&self.state.slot);
            slot.closed = true;
            if let Some(turn) = slot.running.as_ref() {
                turn.cancel.cancel();
            }
            self.state.busy.subscribe()
        };
        // An error means the agent is gone, and its turn with it.
        let _ = busy.wait_for(|busy| !busy).await;
    }

    pub async fn acknowledge(&self, turn_ids: Option<Vec<String>>) -> Result<Vec<String>, AgentError> {
        Ok(self.with_session_io(move |s| s.acknowledge(turn_ids.as_deref())).await?)
    }
}
