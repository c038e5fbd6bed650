//! The turn loop: the user's input goes to the model, the model's calls go
//! to the person for approval and then to bash, their results go back to
//! the model, until it answers without calls or a limit, an error or a cancel
//! ends the turn.
//!
//! Every step is recorded at the journal's save points before the next one
//! happens, and emitted as an [`AgentEvent`] in order, numbered by a `seq`
//! that counts up across the session. The events are the only way out of
//! here; a transport forwards them.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::bash::{self, BashTool, Stream};
use crate::buffers::OpenBuffers;
use crate::compaction::{self, Trigger};
use crate::config::{CompactionSettings, CompactionTable};
use crate::edit::{self, EditArgs, EditProposal, EditTool, Workspace};
pub use crate::events::Events;
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

pub const DEFAULT_MAX_REQUESTS: u32 = 8;
pub const DEFAULT_MAX_CALLS: u32 = 16;
/// Live output streamed to the client per call; the saved result has its own cap.
pub const LIVE_OUTPUT_LIMIT: usize = 1024 * 1024;
/// The most text a turn may stream (all its model responses together): a
/// model that never stops would otherwise fill the client, the journal and
/// the queues towards the client without end. Past it the turn ends `failed`.
pub const TURN_TEXT_LIMIT: usize = 4 * 1024 * 1024;

/// The `mino/turnEnded` reason of a turn stopped by a failed save: the end it
/// reports is not in the session file, which shows the turn `interrupted` once
/// reopened (docs/journal.md, "When a save fails").
pub fn unsaved_end_reason(cause: &dyn std::fmt::Display) -> String {
    format!(
        "The session could not be saved, so the turn stopped and its end is not on file \
         (reopened, the session shows it interrupted): {cause}"
    )
}

/// The reason a turn ends with when its text passes [`TURN_TEXT_LIMIT`].
pub fn turn_text_limit_reason() -> String {
    format!(
        "the model's answer passed 4 MiB ({TURN_TEXT_LIMIT} bytes), the most a turn may stream; \
         the rest was not read and the turn was stopped"
    )
}

#[derive(Debug, Clone, Copy)]
pub struct TurnLimits {
    pub max_requests: u32,
    pub max_calls: u32,
}

impl Default for TurnLimits {
    fn default() -> Self {
        Self { max_requests: DEFAULT_MAX_REQUESTS, max_calls: DEFAULT_MAX_CALLS }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
// Events pass one at a time through a queue bounded by bytes; none is kept
// in bulk, so the approval request's size costs nothing a box would save.
#[allow(clippy::large_enum_variant)]
pub enum AgentEvent {
    TurnStarted {
        turn_id: String,
        input: String,
    },
    TextDelta {
        turn_id: String,
        delta: String,
    },
    /// The model request failed in a retryable way and is sent again after
    /// `delay_ms`: text streamed since the last response began is void.
    Retrying {
        turn_id: String,
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
    ApprovalRequest {
        turn_id: String,
        call_id: String,
        command: String,
        directory: String,
        environment: BTreeMap<String, String>,
        limits: bash::Limits,
        /// An edit call's proposal (`None` for a command).
        edit: Option<EditApproval>,
        /// The sandbox the command will run in if approved.
        sandbox: SandboxMode,
        approval_mode: ApprovalMode,
        /// The rule a client offers for "allow/deny for session/workspace":
        /// a prefix rule for a command, the path for an edit inside the workspace.
        suggested_rule: Option<crate::policy::SuggestedRule>,
        /// Deny rules the command might reach although none matches it
        /// ([`crate::policy::deny_rules_in_reach`]): why it is asked about.
        deny_rules: Vec<Rule>,
        /// A read call leaving the workspace: what it would read.
        read: Option<ReadInfo>,
        /// An MCP tool call: the server, the tool, the arguments and the
        /// tool's annotations (shown, never trusted).
        mcp: Option<crate::mcp::McpApproval>,
    },
    ToolStarted {
        turn_id: String,
        call_id: String,
        command: String,
        approver: Approver,
        sandbox: SandboxMode,
        /// The edit or read tool; `None` for a command.
        tool: Option<CallTool>,
        read: Option<ReadInfo>,
    },
    ToolOutput {
        turn_id: String,
        call_id: String,
        stream: Stream,
        chunk: String,
    },
    /// A command runs in the editor's own terminal ([`crate::terminal`]),
    /// or could not and runs as any other (`terminal_id` `None`, `note`
    /// saying why). Sent after its `ToolStarted`, before its output.
    ToolTerminal {
        turn_id: String,
        call_id: String,
        terminal_id: Option<String>,
        note: Option<String>,
    },
    ToolResult {
        turn_id: String,
        call_id: String,
        /// The call's command as `mino/history` shows it
        /// ([`crate::transcript::Call::command`]): a call refused by a rule,
        /// or one that failed before it could be asked about, has no
        /// approval request or start to name it. `None` only when the call
        /// is not on record.
        command: Option<String>,
        status: ToolStatus,
        output: String,
        exit_code: Option<i32>,
        /// The diff an edit call wrote (`success` of an edit only).
        diff: Option<String>,
        /// The edit or read tool; `None` for a command.
        tool: Option<CallTool>,
        /// A read call, with its summary on `success`.
        read: Option<ReadInfo>,
    },
    TurnEnded {
        turn_id: String,
        status: TurnStatus,
        reason: Option<String>,
        text: Option<String>,
        /// The tokens of the turn's responses, as the service reported them.
        usage: Option<Usage>,
        /// The session's tokens so far, this turn included.
        session_usage: Option<Usage>,
    },
    /// [`Agent::switch`] made another session current: what opening it
    /// recovered, as the first event of that session.
    SessionOpened {
        recovery: RecoveryReport,
    },
    /// A compaction began: the summary request is being sent. `turn_id`
    /// names the turn it runs in (automatic, or after
    /// `context_length_exceeded`); `None` for [`Agent::compact`].
    CompactionStarted {
        trigger: Trigger,
        turn_id: Option<String>,
    },
    /// The compaction that started last ended: its record synced, or
    /// nothing changed (`outcome.compacted` false, with the reason).
    CompactionEnded {
        trigger: Trigger,
        turn_id: Option<String>,
        outcome: CompactionOutcome,
    },
    /// A response of the turn was recorded with the tokens the service
    /// reported for it (or estimated, when it reported none). Not a turn
    /// event (it takes no `seq`): a front door may pass it over.
    ResponseUsage {
        turn_id: String,
        usage: Usage,
        /// The context window of the model the turn uses, as compaction
        /// reckons it (configured, reported by the service, else the default).
        context_window: u64,
    },
    /// The approval or sandbox mode changed ([`Agent::update_settings`]),
    /// whoever changed it: the settings now in force. Not a turn event (it
    /// takes no `seq`).
    SettingsChanged {
        settings: Settings,
    },
    /// The project's instruction files in force changed (one was added,
    /// removed or edited) since they were last read: the next request is
    /// built from these.
    InstructionsChanged {
        files: Vec<project_instructions::InstructionFile>,
    },
    /// An MCP server's state changed (starting, ready with its tools,
    /// failed to start, exited). Not a turn event (it takes no `seq`).
    McpStatus {
        status: crate::mcp::McpStatus,
    },
}

/// The reason of a compaction cancelled before its record's sync began
/// ([`Agent::cancel_compaction`], a cancelled turn, the client gone).
pub const COMPACTION_CANCELLED: &str = "cancelled; the conversation was left as it was";

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompactionOutcome {
    /// A `compaction` record was synced: later requests start with the summary.
    pub compacted: bool,
    /// Turns newly summarised.
    pub summarized_turns: usize,
    /// Turns covered by the summary that are replayed verbatim after it.
    pub kept_turns: usize,
    /// The last turn the summary covers (when compacted).
    pub through_turn_id: Option<String>,
    /// Why nothing changed (when not compacted).
    pub reason: Option<String>,
    /// The summary request's tokens, when the service reported them.
    pub usage: Option<Usage>,
}

impl CompactionOutcome {
    fn unchanged(reason: impl Into<String>) -> Self {
        CompactionOutcome { reason: Some(reason.into()), ..Default::default() }
    }
}

/// What the person approves for an edit call (`mino/approvalRequest`'s `edit`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditApproval {
    pub tool: EditTool,
    /// Relative to the session's directory when inside it, else absolute
    /// (every symbolic link resolved): where the edit writes.
    pub path: String,
    pub new_file: bool,
    /// Size in bytes of the file's content after the edit.
    pub size: u64,
    /// The unified diff from the content now to the content after.
    pub diff: String,
    /// The path is outside the session's directory.
    pub leaves_workspace: bool,
    /// Why the path is protected ([`crate::protect::why_protected`]): the
    /// edit is asked about whatever rule or mode is in force.
    pub protected: Option<String>,
    /// The file written, absolute, every symbolic link resolved.
    pub absolute_path: PathBuf,
    /// The whole content before the edit (`None` for a new file) and after
    /// it, as the proposal computed them: for diff views (ACP's `diff`
    /// content) that need both sides, without reading the file again.
    pub old_text: Option<Arc<str>>,
    pub new_text: Arc<str>,
    /// `old_text` (and the diff) is the text the person's editor holds,
    /// with changes not saved ([`crate::buffers::OpenBuffers`]): applying
    /// writes those changes too.
    pub from_editor: bool,
}

/// An event with its place in the agent's order and the session it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Numbered {
    /// Counts the turn events up by one; a `SessionOpened` takes none (it
    /// carries the `seq` the next turn event will have).
    pub seq: u64,
    pub session_id: String,
    pub event: AgentEvent,
}

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

/// What a rewind did: its plan and each planned file's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindOutcome {
    pub turn_id: String,
    pub plan: crate::rewind::RewindPlan,
    pub outcomes: Vec<crate::rewind::FileOutcome>,
}

/// The command of the open turn's call that a result for `call_id` is about
/// (its pending call, so a duplicate id names the right one), as history
/// shows it; read before the result is recorded, which closes the call.
fn pending_call_command(session: &Session, call_id: &str) -> CallShown {
    let call = session.transcript().open_turn().and_then(|t| t.pending_call(call_id));
    CallShown {
        command: call.map(crate::transcript::Call::command),
        tool: call.and_then(|c| CallTool::of_name(&c.name)),
        read: call.and_then(ReadInfo::of_call),
    }
}

/// How a call's result names it: its command, its tool and (a read) what it read.
#[derive(Debug, Default)]
struct CallShown {
    command: Option<String>,
    tool: Option<CallTool>,
    read: Option<ReadInfo>,
}

/// The result of a call whose id an earlier call of the same response
/// already used. Names the command, since the id cannot tell the model which
/// call this is.
fn duplicate_call_output(call_id: &str, arguments: &str) -> String {
    let command = crate::calls::command_of(arguments).unwrap_or_else(|_| arguments.to_string());
    format!(
        "Not run: this response already has a call with call_id {call_id}, and a result cannot say which of them it answers. This call (`{command}`) was not executed; ask for it again in a new response if it is still needed."
    )
}

/// Output for results the turn itself decides.
pub mod outputs {
    pub const REFUSED: &str = "The user denied this command; it was not run.";
    pub const PLAN_MODE: &str = "Not run: the session is in plan mode, where Mino runs no command and makes no edit. Propose the plan instead; the person decides when to leave plan mode.";
    pub const CANCELLED_BEFORE_START: &str = "The turn was cancelled before this command was approved; it was not run.";
    pub const NOT_RUN_AFTER_CANCEL: &str = "The turn was cancelled before this call; it was not run.";
    pub const CANCELLED_BEFORE_SPAWN: &str =
        "The turn was cancelled after this command was approved and before it was started; it was not run.";
    pub const EDIT_REFUSED: &str = "The user denied this edit; the file was not changed.";

    /// What the approval of an edit outside the workspace that could not be
    /// proposed shows in place of a diff: the path and why, which the model
    /// is told only if the person approves.
    pub fn unproposable_outside(path: &str, why: &str) -> String {
        format!(
            "# Mino could not propose this edit of {path}, outside the workspace: {why}\n\
             # Nothing will be written. Approving tells the model this reason; declining tells it only that the edit \
             was declined.\n"
        )
    }
    pub const EDIT_CANCELLED_BEFORE_START: &str =
        "The turn was cancelled before this edit was approved; nothing was written.";
    pub const EDIT_CANCELLED_BEFORE_WRITE: &str =
        "The turn was cancelled after this edit was approved and before it was written; nothing was written.";

    /// The result of a call the person denied with a reason: the model
    /// reads the reason as they wrote it.
    /// What a command's call shows when the editor's terminal could not be
    /// had (`why`): Mino ran it itself, under the same supervisor.
    pub fn terminal_fallback(why: &str) -> String {
        format!("[Mino: the editor's terminal could not be used ({why}); Mino ran the command itself, as it runs any command.]")
    }

    pub fn denied_with_reason(reason: &str) -> String {
        format!("Denied by the user: {reason}")
    }

    /// The result of a call deny rules refused without asking.
    pub fn denied_by_rule(rules: &[crate::rules::Rule]) -> String {
        let named: Vec<String> = rules.iter().map(|rule| rule.describe()).collect();
        format!("Denied by a rule the user set: {}", named.join(", "))
    }
}

struct TurnEnded {
    turn_id: String,
    status: TurnStatus,
    reason: Option<String>,
    text: Option<String>,
}

struct RunningTurn {
    /// Empty for a compaction.
    turn_id: String,
    cancel: CancellationToken,
    /// The one call waiting for a decision (calls are asked one at a time).
    approval: Option<PendingApproval>,
    /// Not a turn: [`Agent::compact`] holds the session (no turn may start
    /// while the summary is made and saved).
    compaction: bool,
}

impl RunningTurn {
    /// Why nothing else may start now.
    fn busy_error(&self) -> AgentError {
        if self.compaction {
            AgentError::Compacting
        } else {
            SessionError::TurnInProgress(self.turn_id.clone()).into()
        }
    }
}

struct PendingApproval {
    call_id: String,
    /// An edit's proposal: how many hunks its diff has (a decision may
    /// accept some of them); `None` for a command.
    edit_hunks: Option<usize>,
    decision: oneshot::Sender<Decision>,
}

/// The person's answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Approve,
    /// Not run; the model hears `Denied by the user: <reason>` when a
    /// reason is given.
    Deny {
        reason: Option<String>,
    },
    /// Approve, and grant `rule` (its scope says for the session or the
    /// workspace). The rule is journaled before it applies.
    Allow(Rule),
    /// Deny, and grant `rule`, a deny rule (journaled before it applies).
    DenyWithRule(Rule),
    /// Approve only these hunks of an edit's proposed diff (0-based, in the
    /// diff's order): the rest are rejected and not written. Only for an
    /// edit; [`Agent::decide`] refuses it for a command and checks the
    /// indices against the proposal.
    ApproveHunks(Vec<usize>),
}

/// A [`Decision`] once the rule it grants is on file.
enum Answer {
    Approve,
    /// An edit approved in part (see [`Decision::ApproveHunks`]).
    ApproveHunks(Vec<usize>),
    Deny {
        reason: Option<String>,
    },
}

impl From<ApprovalDecision> for Decision {
    fn from(decision: ApprovalDecision) -> Self {
        match decision {
            ApprovalDecision::Approved => Decision::Approve,
            ApprovalDecision::Denied => Decision::Deny { reason: None },
        }
    }
}

/// The rules a client can list: those in force, and the workspace file.
#[derive(Debug, Clone)]
pub struct RulesInForce {
    pub rules: Vec<Rule>,
    pub workspace_file: Option<std::path::PathBuf>,
    pub workspace_file_error: Option<String>,
}

struct Emitter {
    next_seq: u64,
    /// The current session's id, stamped on every event.
    session_id: String,
    sender: crate::events::EventSender,
}

struct Inner {
    session: Mutex<Session>,
    /// The client for the current session's model: the configured one, or
    /// the one its `model` record names. Replaced only between turns (a
    /// selection or a switch); a turn takes a copy when it starts.
    model: Mutex<ModelClient>,
    /// The configured model's client, which a session that chose none uses.
    configured_model: ModelClient,
    /// Replaced by a switch (a session's commands run in its own directory);
    /// a running call keeps the one it started with.
    bash: Mutex<Arc<BashTool>>,
    /// Mino's own instructions (SOUL.md).
    instructions: String,
    /// The project's `AGENTS.md` files, read again when each turn starts
    /// (and for `mino/history`), so an edited file applies to the next turn.
    project: Mutex<ProjectInstructions>,
    limits: TurnLimits,
    /// Approval mode, sandbox mode, workspace rules (see [`crate::policy`]).
    policy: Mutex<Policy>,
    /// Every model's context window and when to compact automatically,
    /// resolved for the session's current model at each check.
    compaction: Mutex<CompactionTable>,
    emitter: Mutex<Emitter>,
    running: Mutex<Option<RunningTurn>>,
    /// Whether a turn runs, published (under the `running` lock) whenever
    /// `running` changes, so [`Agent::close`] can wait for a turn's end to
    /// be recorded without polling.
    busy: watch::Sender<bool>,
    /// Set (under the `running` lock) when the client is gone: no new turn
    /// may start, so none can slip in after the running one was cancelled.
    closed: std::sync::atomic::AtomicBool,
    /// Set (under the `running` lock, only while no turn runs) while
    /// [`Agent::switch`] replaces the session: no turn may start meanwhile.
    switching: std::sync::atomic::AtomicBool,
    /// The editor's text of open files, when the front door can ask for it.
    open_buffers: Mutex<Option<Arc<dyn OpenBuffers>>>,
    command_terminals: Mutex<Option<Arc<dyn crate::terminal::CommandTerminals>>>,
    /// The session's MCP servers.
    mcp: crate::mcp::McpManager,
}

/// One session's agent. Cheap to clone; all clones drive the same session.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

/// Held while the session is claimed between turns
/// ([`Agent::claim_between_turns`]); lets turns start again when dropped.
struct BetweenTurns<'a>(&'a Inner);

impl Drop for BetweenTurns<'_> {
    fn drop(&mut self) {
        self.0.switching.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The longest model name `mino/models/select` takes.
pub const MAX_MODEL_NAME: usize = 256;

/// The client for `session`'s model: the one its last `model` record names,
/// else `configured`.
fn session_model(configured: &ModelClient, session: &Session) -> ModelClient {
    match &session.transcript().model {
        Some(model) => configured.with_model(model),
        None => configured.clone(),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves data that was valid
    // between statements; carrying on is better than wedging the session.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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
        let (sender, receiver) = crate::events::channel();
        let session_id = session.id().to_string();
        let session_model = session_model(&model, &session);
        let project = project_instructions::load(Path::new(session.cwd()));
        let supervisor = bash.supervisor().to_path_buf();
        let inner = Inner {
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
            running: Mutex::new(None),
            busy: watch::Sender::new(false),
            closed: std::sync::atomic::AtomicBool::new(false),
            switching: std::sync::atomic::AtomicBool::new(false),
            open_buffers: Mutex::new(None),
            command_terminals: Mutex::new(None),
            mcp: crate::mcp::McpManager::new(Vec::new(), supervisor),
        };
        (Agent { inner: Arc::new(inner) }, receiver)
    }

    /// Runs `f` with the session locked (never across an await).
    pub fn with_session<R>(&self, f: impl FnOnce(&mut Session) -> R) -> R {
        f(&mut lock(&self.inner.session))
    }

    /// The running turn, if any (a compaction is not a turn).
    pub fn running_turn(&self) -> Option<String> {
        lock(&self.inner.running).as_ref().filter(|t| !t.compaction).map(|t| t.turn_id.clone())
    }

    /// Sets every model's context window and automatic compaction threshold
    /// (`mino_core::open` passes the configuration's; one
    /// [`crate::config::CompactionSettings`] applies to every model).
    pub fn set_compaction(&self, table: impl Into<CompactionTable>) {
        *lock(&self.inner.compaction) = table.into();
    }

    /// Asks the model service in the background for the context window it
    /// reports for the current session's model (its `GET /models`), unless
    /// the environment or the configuration file sets that model's window:
    /// called when a session opens, is switched to, or chooses a model, so a
    /// turn rarely waits for it. Without a runtime to run it on, the first
    /// turn that needs the figure asks.
    pub fn fetch_context_window(&self) {
        let client = self.model_client();
        let table = lock(&self.inner.compaction).clone();
        if table.configured_window(&client.config().model).is_some() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let reported = client.reported_context_window().await;
            let model = &client.config().model;
            let (settings, source) = table.resolve(model, reported);
            tracing::info!(
                model,
                window = settings.context_window,
                from = source.as_str(),
                "the context window automatic compaction uses"
            );
        });
    }

    /// The compaction settings of the model a turn uses: the window the
    /// environment or the file sets, else the one the service reports for
    /// it, else the default. The service's answer is waited for (at most
    /// [`crate::model::MODEL_LIST_TIMEOUT`], usually not at all: it was
    /// asked when the session opened, and is asked once per model) only
    /// when the check depends on it: no configured window and a last
    /// request's size to compare; a cancel stops the wait. (Whether there is
    /// anything to compact is left to the caller, after `due`: it walks the
    /// whole history, which no turn should pay for otherwise.)
    async fn compaction_settings(&self, model: &ModelClient, cancel: &CancellationToken) -> CompactionSettings {
        let table = lock(&self.inner.compaction).clone();
        let name = &model.config().model;
        let needed = table.configured_window(name).is_none()
            && self.with_session(|s| s.transcript().last_input_tokens.is_some());
        let reported = if needed {
            tokio::select! {
                window = model.reported_context_window() => window,
                () = cancel.cancelled() => None,
            }
        } else {
            // For a request's estimated size: what is known without waiting.
            model.known_context_window()
        };
        let (settings, source) = table.resolve(name, reported);
        tracing::debug!(model = name, window = settings.context_window, from = source.as_str(), "compaction window");
        settings
    }

    /// Whether the turn compacts before its first request: the last
    /// request's input tokens passed the threshold, as the service reported
    /// them; or, when it reported none (a local server that gives no usage,
    /// or the first request since a compaction), the request about to be
    /// sent does, counted by the service's tokenize endpoint or estimated
    /// from its bytes ([`ModelClient::request_tokens`]). And there is a turn
    /// to summarise.
    async fn auto_compaction_due(&self, model: &ModelClient, settings: &CompactionSettings) -> bool {
        let reported = self.with_session(|s| s.transcript().last_input_tokens);
        let tokens = match reported {
            Some(tokens) => tokens,
            None => {
                let body = self.with_session(|s| s.request_body(model, &self.inner.instructions));
                let Ok(body) = body else { return false };
                let counted = model.request_tokens(&body).await;
                tracing::debug!(tokens = counted.tokens, by = counted.counted_by, "the next request's size");
                counted.tokens
            }
        };
        compaction::passes_threshold(tokens, settings)
            && self.with_session(|s| compaction::plan(s.transcript()).is_some())
    }

    /// Compacts the conversation now (`mino/compact`): the model summarises
    /// every ended turn, and the summary's record is synced before this
    /// returns. Refused while a turn or another compaction runs, and while
    /// an unknown result awaits acknowledgement (the person must have seen
    /// it before anything acts on the conversation). Emits
    /// [`AgentEvent::CompactionStarted`] and [`AgentEvent::CompactionEnded`].
    pub async fn compact(&self) -> Result<CompactionOutcome, AgentError> {
        use std::sync::atomic::Ordering::SeqCst;
        let cancel = {
            let mut running = lock(&self.inner.running);
            if self.inner.closed.load(SeqCst) {
                return Err(AgentError::Closed);
            }
            if let Some(turn) = running.as_ref() {
                return Err(turn.busy_error());
            }
            if self.inner.switching.load(SeqCst) {
                return Err(AgentError::Switching);
            }
            if !lock(&self.inner.session).pending_acknowledgement().is_empty() {
                return Err(SessionError::AcknowledgementRequired.into());
            }
            let cancel = CancellationToken::new();
            *running =
                Some(RunningTurn { turn_id: String::new(), cancel: cancel.clone(), approval: None, compaction: true });
            self.inner.busy.send_replace(true);
            cancel
        };
        // Freed however this ends (a failed save, a panic), as a turn is.
        struct ClearCompaction<'a>(&'a Inner);
        impl Drop for ClearCompaction<'_> {
            fn drop(&mut self) {
                let mut running = lock(&self.0.running);
                if running.as_ref().is_some_and(|t| t.compaction) {
                    running.take();
                    self.0.busy.send_replace(false);
                }
            }
        }
        let _clear = ClearCompaction(&self.inner);
        let outcome = self.run_compaction(Trigger::Manual, None, &cancel).await?;
        // Announced and freed in one step, as a turn's end is: a chat sent
        // on hearing the end is never refused as busy.
        let mut running = lock(&self.inner.running);
        self.emit(AgentEvent::CompactionEnded { trigger: Trigger::Manual, turn_id: None, outcome: outcome.clone() });
        running.take();
        self.inner.busy.send_replace(false);
        Ok(outcome)
    }

    /// Summarises the ended turns (all of them, through the last one) and
    /// syncs the `compaction` record. Emits [`AgentEvent::CompactionStarted`];
    /// the caller emits the end. A model failure, a cancel or an empty
    /// summary leave the session as it was and say why; only a failed save
    /// is an error.
    async fn run_compaction(
        &self,
        trigger: Trigger,
        turn_id: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<CompactionOutcome, SessionError> {
        self.emit(AgentEvent::CompactionStarted { trigger, turn_id: turn_id.map(str::to_string) });
        let prepared = self.with_session(|s| {
            let transcript = s.transcript();
            compaction::plan(transcript).map(|plan| {
                let input = compaction::summary_input(transcript, &plan);
                (plan, input)
            })
        });
        let Some((plan, mut input)) = prepared else {
            return Ok(CompactionOutcome::unchanged(compaction::NOTHING_TO_COMPACT));
        };
        tracing::info!(trigger = trigger.as_str(), through = plan.through_turn_id, "compacting the conversation");
        // The summary is bounded like a turn's text: a model that never
        // stops must not fill the journal.
        let stop_stream = cancel.child_token();
        let model = self.model_client();
        // A summary of at most an eighth of a window the configuration or
        // the service gave (not the default's guess).
        let output_limit = {
            let table = lock(&self.inner.compaction).clone();
            let (settings, source) = table.resolve(&model.config().model, model.known_context_window());
            (source != crate::config::WindowSource::Default).then_some(settings.context_window / 8)
        };
        let mut shortened = false;
        let response = loop {
            let mut streamed = 0usize;
            let request = ModelRequest { instructions: &self.inner.instructions, input: &input };
            let mut on_event = |event: ModelEvent<'_>| match event {
                ModelEvent::TextDelta(delta) => {
                    streamed += delta.len();
                    if streamed > TURN_TEXT_LIMIT {
                        stop_stream.cancel();
                    }
                }
                ModelEvent::Retrying { attempt, delay, reason } => {
                    streamed = 0;
                    tracing::warn!(attempt, ?delay, reason, "retrying the summary request");
                }
            };
            let response = model.respond_summary(&request, output_limit, &mut on_event, &stop_stream).await;
            match response {
                // The summary request itself is too long for the window (a
                // small local window, a turn that filled it): once, its
                // texts are shortened to about half the window and it is
                // sent again. Only the summary request is: the records
                // keep every word.
                Err(e) if !shortened && compaction::is_context_length_exceeded(&e) => {
                    shortened = true;
                    let body = serde_json::to_vec(&model.request_body_without_tools(&request)).unwrap_or_default();
                    let tokens = model.request_tokens(&body).await.tokens.max(1);
                    let window = model.known_context_window().unwrap_or(tokens);
                    let keep = window as f64 * compaction::SHORTENED_SHARE / tokens as f64;
                    tracing::info!(tokens, window, keep, "the summary request is too long; shortening its texts");
                    compaction::shorten_texts(&mut input, keep);
                }
                other => break other,
            }
        };
        let response = match response {
            Ok(response) => response,
            Err(ModelError::Cancelled) if !cancel.is_cancelled() => {
                return Ok(CompactionOutcome::unchanged(format!(
                    "the summary passed 4 MiB ({TURN_TEXT_LIMIT} bytes); the conversation was left as it was"
                )))
            }
            Err(ModelError::Cancelled) => return Ok(CompactionOutcome::unchanged(COMPACTION_CANCELLED)),
            Err(e) => {
                return Ok(CompactionOutcome::unchanged(format!(
                    "the summary request failed: {e}; the conversation was left as it was"
                )))
            }
        };
        // A summary the window cut short is still a summary of what came
        // before (and the smaller request it makes room for is the point);
        // any other cut is not kept.
        if let Some(why) = response.incomplete.as_ref().filter(|why| *why != CONTEXT_WINDOW_FULL) {
            return Ok(CompactionOutcome::unchanged(format!(
                "the summary was cut short ({why}); the conversation was left as it was"
            )));
        }
        let Some(summary) = compaction::summary_text(&response.items) else {
            return Ok(CompactionOutcome::unchanged(
                "the model answered without a summary; the conversation was left as it was",
            ));
        };
        // A cancel that came with (or after) the summary's last bytes still
        // wins until the record's sync begins; from then on the outcome is
        // what the disk holds, so the record is written and reported.
        if cancel.is_cancelled() {
            return Ok(CompactionOutcome::unchanged(COMPACTION_CANCELLED));
        }
        fail::fail_point!("compaction::before_record");
        let usage = response.usage;
        let through = plan.through_turn_id.clone();
        self.with_session_io(move |s| s.record_compaction(&through, summary, usage)).await?;
        tracing::info!(summarized = plan.summarized_turns, kept = plan.kept_turns, "conversation compacted");
        Ok(CompactionOutcome {
            compacted: true,
            summarized_turns: plan.summarized_turns,
            kept_turns: plan.kept_turns,
            through_turn_id: Some(plan.through_turn_id),
            reason: None,
            usage,
        })
    }

    /// Cancels the running [`Agent::compact`], if one runs: its summary
    /// request is abandoned and it answers `compacted: false` (reason
    /// [`COMPACTION_CANCELLED`]) with no `compaction` record written,
    /// unless the record's sync had already begun, in which case it answers
    /// with the compaction the disk holds. `false` when no compaction runs.
    /// (A compaction inside a turn is cancelled with the turn, [`Agent::cancel`].)
    pub fn cancel_compaction(&self) -> bool {
        match lock(&self.inner.running).as_ref() {
            Some(running) if running.compaction => {
                running.cancel.cancel();
                true
            }
            _ => false,
        }
    }

    /// [`Agent::run_compaction`] inside a turn, with its end announced.
    async fn compact_in_turn(
        &self,
        trigger: Trigger,
        turn_id: &str,
        cancel: &CancellationToken,
    ) -> Result<CompactionOutcome, SessionError> {
        let outcome = self.run_compaction(trigger, Some(turn_id), cancel).await?;
        self.emit(AgentEvent::CompactionEnded {
            trigger,
            turn_id: Some(turn_id.to_string()),
            outcome: outcome.clone(),
        });
        Ok(outcome)
    }

    /// Runs `f` with the session locked, off the async workers (see
    /// [`blocking`]): every save point (a journal sync) goes through here,
    /// so no async worker waits on the disk (and `approve`/`cancel`, which
    /// only need the running-turn lock, never wait behind a sync).
    pub async fn with_session_io<R: Send + 'static>(&self, f: impl FnOnce(&mut Session) -> R + Send + 'static) -> R {
        let inner = self.inner.clone();
        blocking(move || f(&mut lock(&inner.session))).await
    }

    /// Starts a turn: the user's record is synced when this returns its id;
    /// the rest happens in a spawned task and is reported through events.
    ///
    /// The turn is claimed under the running-turn lock, and the lock is let
    /// go before the user's record is synced: a concurrent `chat` is refused
    /// at once, and `approve`/`cancel` never wait behind the disk.
    pub async fn chat(&self, text: &str) -> Result<String, AgentError> {
        self.chat_with_images(text, Vec::new()).await
    }

    /// [`Agent::chat`] with the question's images, kept and synced before
    /// the user's record (`Session::begin_turn_with_images`).
    pub async fn chat_with_images(
        &self,
        text: &str,
        images: Vec<crate::images::ImageInput>,
    ) -> Result<String, AgentError> {
        let turn_id = {
            let mut running = lock(&self.inner.running);
            if self.inner.closed.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(AgentError::Closed);
            }
            if let Some(turn) = running.as_ref() {
                return Err(turn.busy_error());
            }
            if self.inner.switching.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(AgentError::Switching);
            }
            let turn_id = lock(&self.inner.session).next_turn_id();
            let cancel = CancellationToken::new();
            *running = Some(RunningTurn { turn_id: turn_id.clone(), cancel, approval: None, compaction: false });
            self.inner.busy.send_replace(true);
            turn_id
        };
        let owned = text.to_string();
        let begun = self.with_session_io(move |s| s.begin_turn_with_images(&owned, images)).await;
        let begun = begun.map_err(AgentError::from).and_then(|id| {
            if id == turn_id {
                Ok(id)
            } else {
                Err(SessionError::Usage(format!("the session opened {id} where {turn_id} was expected")).into())
            }
        });
        let cancel = {
            let mut running = lock(&self.inner.running);
            if let Err(e) = begun {
                // Nothing was started: free the claim for the next chat.
                if running.as_ref().is_some_and(|t| t.turn_id == turn_id) {
                    running.take();
                    self.inner.busy.send_replace(false);
                }
                return Err(e);
            }
            // A close while the record was being synced cancelled this token:
            // the turn then ends `cancelled` on file like any other.
            running.as_ref().map(|t| t.cancel.clone()).unwrap_or_default()
        };
        self.emit(AgentEvent::TurnStarted { turn_id: turn_id.clone(), input: text.to_string() });
        let agent = self.clone();
        let id = turn_id.clone();
        tokio::spawn(async move { agent.run_turn(id, cancel).await });
        Ok(turn_id)
    }

    /// Delivers the person's decision on the call waiting for it, which
    /// `turn_id` and `call_id` must both name; anything else is refused and
    /// decides nothing.
    pub fn approve(&self, turn_id: &str, call_id: &str, decision: ApprovalDecision) -> Result<(), AgentError> {
        self.decide(turn_id, call_id, decision.into())
    }

    /// [`Agent::approve`] with every answer a person can give (a reason for
    /// a denial, a rule to grant).
    pub fn decide(&self, turn_id: &str, call_id: &str, decision: Decision) -> Result<(), AgentError> {
        let refused = || AgentError::NoPendingApproval { turn_id: turn_id.to_string(), call_id: call_id.to_string() };
        let mut running = lock(&self.inner.running);
        let turn = running
            .as_mut()
            .filter(|turn| turn.turn_id == turn_id && !turn.compaction && !turn.cancel.is_cancelled())
            .ok_or_else(refused)?;
        let waiting = turn.approval.as_ref().filter(|pending| pending.call_id == call_id).ok_or_else(refused)?;
        if let Decision::ApproveHunks(hunks) = &decision {
            let Some(of) = waiting.edit_hunks else {
                return Err(AgentError::BadHunks(format!(
                    "call {call_id} is a command, not an edit: only an edit's hunks can be accepted"
                )));
            };
            if hunks.is_empty() {
                return Err(AgentError::BadHunks(edit::NarrowError::NoneAccepted.to_string()));
            }
            if let Some(&index) = hunks.iter().find(|&&i| i >= of) {
                return Err(AgentError::BadHunks(edit::NarrowError::OutOfRange { index, of }.to_string()));
            }
        }
        let pending = turn.approval.take().ok_or_else(refused)?;
        drop(running);
        pending.decision.send(decision).map_err(|_| refused())
    }

    /// The project's `AGENTS.md` files for the current session's directory,
    /// read now (the next request is built from them).
    /// Emits [`AgentEvent::InstructionsChanged`] when they differ from the
    /// files read last.
    pub fn project_instructions(&self) -> ProjectInstructions {
        let cwd = lock(&self.inner.bash).cwd().to_path_buf();
        let project = project_instructions::load(&cwd);
        let changed = {
            let mut last = lock(&self.inner.project);
            let changed = last.files != project.files;
            *last = project.clone();
            changed
        };
        if changed {
            self.emit(AgentEvent::InstructionsChanged { files: project.files.clone() });
        }
        project
    }

    /// The session's settings and what the machine's sandbox enforces.
    pub fn settings(&self) -> (Settings, String) {
        let policy = lock(&self.inner.policy);
        (policy.settings(), policy.support_line())
    }

    /// Changes the approval or sandbox mode for the calls asked about from
    /// now on (a call already waiting runs as its request said). A sandbox
    /// the machine cannot enforce is refused.
    pub fn update_settings(
        &self,
        approval_mode: Option<ApprovalMode>,
        sandbox: Option<SandboxMode>,
    ) -> Result<Settings, PolicyError> {
        let settings = lock(&self.inner.policy).update(approval_mode, sandbox)?;
        tracing::info!(approval_mode = %settings.approval_mode, sandbox = %settings.sandbox, "settings changed");
        self.emit(AgentEvent::SettingsChanged { settings });
        Ok(settings)
    }

    /// Lets what Mino reads of a file come from the person's editor when it
    /// holds the file open ([`OpenBuffers`]); set by a front door whose
    /// client can say.
    pub fn set_open_buffers(&self, buffers: Arc<dyn OpenBuffers>) {
        *lock(&self.inner.open_buffers) = Some(buffers);
    }

    /// Runs approved commands in the person's editor's own terminals
    /// ([`crate::terminal::CommandTerminals`]), under Mino's supervisor
    /// all the same; set by a front door whose client offers them.
    pub fn set_command_terminals(&self, terminals: Arc<dyn crate::terminal::CommandTerminals>) {
        *lock(&self.inner.command_terminals) = Some(terminals);
    }

    /// The editor's text of open files, when a front door gave one.
    pub fn open_buffers(&self) -> Option<Arc<dyn OpenBuffers>> {
        lock(&self.inner.open_buffers).clone()
    }

    /// The editor's text of the file an edit names, when a front door gave
    /// [`OpenBuffers`] and the path resolves inside the session's directory
    /// (a file outside is read from the disk, as before approval nothing of
    /// it may be told); `None` otherwise, or once `cancel` fires.
    async fn editor_text(&self, directory: &Path, requested: &str, cancel: &CancellationToken) -> Option<String> {
        let buffers = self.open_buffers()?;
        let (directory, requested) = (directory.to_path_buf(), requested.to_string());
        let path = blocking(move || {
            let resolved = Workspace::new(&directory).ok()?.resolve(&requested).ok()?;
            (!resolved.leaves_workspace).then_some(resolved.path)
        })
        .await?;
        tokio::select! {
            text = buffers.text(&path) => text,
            () = cancel.cancelled() => None,
        }
    }

    /// The client for the current session's model.
    pub fn model_client(&self) -> ModelClient {
        lock(&self.inner.model).clone()
    }

    /// The models to choose from: the service's list, else `configured`
    /// (see [`crate::model::model_list`]); never an error.
    pub async fn models(&self, configured: &[crate::model::ListedModel]) -> crate::model::ModelList {
        let service = self.inner.configured_model.service_models().await;
        // Read after the service answers: a model chosen meanwhile is the current one.
        let current = self.model_client().config().model.clone();
        crate::model::model_list(service, configured, &current)
    }

    /// The models to offer without asking the service: the configured
    /// ones, with the current model among them (for a caller that cannot
    /// wait on the service's list, e.g. while a session opens).
    pub fn configured_models(&self, configured: &[crate::model::ListedModel]) -> crate::model::ModelList {
        let current = self.model_client().config().model.clone();
        crate::model::model_list(
            Err("not awaited: the service's list is asked for separately".into()),
            configured,
            &current,
        )
    }

    /// Chooses the model of the current session's requests from the next
    /// turn on: a synced `model` record first, so the session keeps it when
    /// reopened. Refused while a turn runs (or a switch is under way).
    pub async fn select_model(&self, model: &str) -> Result<String, AgentError> {
        let model = model.trim().to_string();
        if model.is_empty() || model.len() > MAX_MODEL_NAME || model.chars().any(char::is_control) {
            return Err(SessionError::InvalidInput(format!(
                "`model` must name a model: 1 to {MAX_MODEL_NAME} bytes without control characters \
                 (mino/models/list lists them)"
            ))
            .into());
        }
        // No turn can start while the record is written, and none runs
        // with a model it did not start with.
        let _claim = self.claim_between_turns()?;
        let owned = model.clone();
        self.with_session_io(move |s| s.record_model(&owned)).await?;
        *lock(&self.inner.model) = self.inner.configured_model.with_model(&model);
        tracing::info!(model, "model chosen");
        self.fetch_context_window();
        Ok(model)
    }

    /// The plan for rewinding `turn_id` and every later turn, with the
    /// digest that [`Agent::rewind`] must be given to carry it out. Writes
    /// nothing.
    pub async fn rewind_plan(&self, turn_id: &str) -> Result<(crate::rewind::RewindPlan, String), AgentError> {
        let turn_id = turn_id.to_string();
        let plan = self.with_session_io(move |s| s.rewind_plan(&turn_id)).await?;
        let digest = crate::rewind::digest(&plan);
        Ok((plan, digest))
    }

    /// Carries out the rewind of `turn_id` the person confirmed: refused
    /// ([`AgentError::StalePlan`]) unless the plan made now has `digest`.
    /// No turn may start meanwhile. The plan is recorded (`rewind`, synced)
    /// before the first file is touched; each file is put back atomically
    /// beneath the workspace ([`edit::restore`]), re-checked against what
    /// Mino wrote just before the write (a file changed since the plan is a
    /// conflict, left as it is); then `rewind_end`, synced, records each
    /// outcome. See docs/journal.md ("Rewind").
    pub async fn rewind(&self, turn_id: &str, digest: &str) -> Result<RewindOutcome, AgentError> {
        let _claim = self.claim_between_turns()?;
        let (turn_id, digest) = (turn_id.to_string(), digest.to_string());
        let outcome = self
            .with_session_io(move |s| -> Result<RewindOutcome, AgentError> {
                let plan = s.rewind_plan(&turn_id)?;
                if crate::rewind::digest(&plan) != digest {
                    return Err(AgentError::StalePlan);
                }
                let workspace = Workspace::new(Path::new(s.cwd())).map_err(|e| {
                    SessionError::Usage(format!(
                        "the session's directory {} cannot be opened ({e}); nothing was written",
                        s.cwd()
                    ))
                })?;
                fail::fail_point!("rewind::before_plan_record");
                s.record_rewind(&turn_id, &digest, plan.clone())?;
                fail::fail_point!("rewind::after_plan_record");
                let mut outcomes = Vec::with_capacity(plan.files.len());
                for (index, file) in plan.files.iter().enumerate() {
                    if index > 0 {
                        fail::fail_point!("rewind::between_files");
                    }
                    outcomes.push(restore_one(&workspace, s, file));
                }
                fail::fail_point!("rewind::before_end_record");
                s.record_rewind_end(&turn_id, outcomes.clone(), false)?;
                Ok(RewindOutcome { turn_id, plan, outcomes })
            })
            .await?;
        tracing::info!(turn_id = %outcome.turn_id, files = outcome.outcomes.len(), "rewound");
        Ok(outcome)
    }

    /// The rules in force (this session's and the workspace file's).
    pub fn rules(&self) -> RulesInForce {
        let granted = self.with_session(|s| s.transcript().rules.clone());
        let policy = lock(&self.inner.policy);
        RulesInForce {
            rules: policy.rules_in_force(&granted),
            workspace_file: policy.workspace_file.clone(),
            workspace_file_error: policy.workspace_file_error.clone(),
        }
    }

    /// Revokes a rule: a rule this session granted gets a synced
    /// `rule_revoke` record; a workspace rule is also removed from the
    /// workspace rules file (rewritten atomically).
    pub async fn revoke_rule(&self, id: &str) -> Result<(), AgentError> {
        let granted = self.with_session(|s| s.transcript().rules.iter().find(|r| r.id() == id).cloned());
        let (in_file, path) = {
            let policy = lock(&self.inner.policy);
            (policy.workspace_rules.iter().find(|r| r.id() == id).cloned(), policy.workspace_file.clone())
        };
        if granted.is_none() && in_file.is_none() {
            return Err(AgentError::Policy(PolicyError::UnknownRule(id.to_owned())));
        }
        if granted.is_some() {
            let owned = id.to_owned();
            self.with_session_io(move |s| s.record_rule_revoke(&owned)).await?;
        }
        let workspace_rule = in_file.is_some() || granted.is_some_and(|r| r.scope() == RuleScope::Workspace);
        if workspace_rule {
            lock(&self.inner.policy).workspace_rules.retain(|r| r.id() != id);
            if let Some(path) = path {
                let owned = id.to_owned();
                let removed = tokio::task::spawn_blocking(move || crate::rules::file::remove(&path, &owned)).await;
                match removed {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => return Err(AgentError::Policy(PolicyError::File(e))),
                    Err(e) => return Err(AgentError::Session(SessionError::Usage(e.to_string()))),
                }
            }
        }
        tracing::info!(rule = id, "rule revoked");
        Ok(())
    }

    /// Cancels the running turn; it ends `cancelled` through its own events.
    pub fn cancel(&self, turn_id: &str) -> Result<(), AgentError> {
        match lock(&self.inner.running).as_ref() {
            Some(turn) if turn.turn_id == turn_id && !turn.compaction => {
                turn.cancel.cancel();
                Ok(())
            }
            _ => Err(AgentError::UnknownTurn(turn_id.to_string())),
        }
    }

    fn cancel_reason(&self) -> String {
        if self.inner.closed.load(std::sync::atomic::Ordering::SeqCst) {
            "cancelled: the client is gone".into()
        } else {
            "cancelled by the user".into()
        }
    }

    /// The client is gone: refuses every later turn, cancels the running
    /// one, and resolves once that turn's end is recorded (or failed to be,
    /// and said so): at once when no turn runs.
    pub async fn close(&self) {
        let mut busy = {
            let running = lock(&self.inner.running);
            self.inner.closed.store(true, std::sync::atomic::Ordering::SeqCst);
            if let Some(turn) = running.as_ref() {
                turn.cancel.cancel();
            }
            self.inner.busy.subscribe()
        };
        // An error means the agent is gone, and its turn with it.
        let _ = busy.wait_for(|busy| !busy).await;
    }

    /// Claims the session between turns (for a switch or a model choice):
    /// refused while a turn runs, the client is gone or another claim
    /// holds; no turn can start until the returned guard is dropped.
    fn claim_between_turns(&self) -> Result<BetweenTurns<'_>, AgentError> {
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

    /// Replaces the session with the one `open` makes current (it is given
    /// the current session to replace, as `SessionStore::open` and
    /// `new_session` take it), then emits [`AgentEvent::SessionOpened`] with
    /// what `open` recovered, stamped with the new session's id, before any
    /// event of a turn in it. Refused while a turn runs; no turn can start
    /// until it returns. Commands then run in the new session's directory.
    /// `open`'s own error (the session left as it was) is the inner one.
    pub async fn switch<T: Send + 'static, E: Send + 'static>(
        &self,
        open: impl FnOnce(&mut Session) -> Result<(T, RecoveryReport), E> + Send + 'static,
    ) -> Result<Result<T, E>, AgentError> {
        let _claim = self.claim_between_turns()?;
        let opened = self
            .with_session_io(move |s| {
                open(s).map(|(value, report)| (value, report, s.id().to_string(), std::path::PathBuf::from(s.cwd())))
            })
            .await;
        let (value, recovery, session_id, cwd) = match opened {
            Ok(opened) => opened,
            Err(e) => return Ok(Err(e)),
        };
        {
            // The new session's workspace rules replace the old one's.
            let mut policy = lock(&self.inner.policy);
            *policy = policy.for_workspace(&cwd);
        }
        {
            let mut bash = lock(&self.inner.bash);
            *bash = Arc::new(bash.in_dir(cwd));
        }
        // The new session's model: the one it chose, else the configured one.
        let chosen = self.with_session(|s| session_model(&self.inner.configured_model, s));
        *lock(&self.inner.model) = chosen;
        self.fetch_context_window();
        lock(&self.inner.emitter).session_id = session_id;
        self.emit(AgentEvent::SessionOpened { recovery });
        // The new session's directory may have other instruction files.
        self.project_instructions();
        Ok(Ok(value))
    }

    pub async fn acknowledge(&self, turn_ids: Option<Vec<String>>) -> Result<Vec<String>, AgentError> {
        Ok(self.with_session_io(move |s| s.acknowledge(turn_ids.as_deref())).await?)
    }

    fn emit(&self, event: AgentEvent) {
        let mut emitter = lock(&self.inner.emitter);
        let seq = emitter.next_seq;
        // `seq` numbers the turn events (a client sees it count up by one);
        // a switch's `SessionOpened` is not one of them and takes none, nor
        // does a delta merged into the one queued last (the client is behind).
        let counts = !matches!(
            event,
            AgentEvent::SessionOpened { .. }
                | AgentEvent::ResponseUsage { .. }
                | AgentEvent::SettingsChanged { .. }
                | AgentEvent::InstructionsChanged { .. }
                | AgentEvent::ToolTerminal { .. }
                | AgentEvent::McpStatus { .. }
        );
        // Nobody listening any more drops the event: the journal still
        // records everything.
        let sent = emitter.sender.send(seq, &emitter.session_id, event);
        if counts && sent == crate::events::Sent::Queued {
            emitter.next_seq += 1;
        }
    }

    async fn run_turn(self, turn_id: String, cancel: CancellationToken) {
        // Whatever happens to this task (a panic included), the session must
        // not stay "running" forever; the journal still shows an open turn,
        // which the next open recovers.
        // Only this turn's entry: once it has ended, the client may already
        // have started the next turn, whose entry must stay.
        struct ClearRunning<'a>(&'a Inner, String);
        impl Drop for ClearRunning<'_> {
            fn drop(&mut self) {
                let mut running = lock(&self.0.running);
                if running.as_ref().is_some_and(|t| t.turn_id == self.1) {
                    running.take();
                    self.0.busy.send_replace(false);
                }
            }
        }
        let _clear = ClearRunning(&self.inner, turn_id.clone());
        // What was streamed of a response that has not finished: kept in
        // the turn's end when the turn stops mid-response (shown in history,
        // never replayed).
        let mut partial_text = String::new();
        let end = self.turn_steps(&turn_id, &cancel, &mut partial_text).await;
        let (status, reason) = match end {
            Ok((status, reason)) => (status, reason),
            Err(e @ SessionError::Journal(_)) => {
                // A failed save: the turn stops here, and nothing claims an
                // outcome the disk does not hold (no turn_end is written, and
                // the reason says the end is not on file).
                tracing::error!(turn_id, error = %e, "turn stopped by a journal failure");
                let reason = unsaved_end_reason(&e);
                self.finish(TurnEnded { turn_id, status: TurnStatus::Failed, reason: Some(reason), text: None });
                return;
            }
            // Not a failed save (e.g. an inconsistent model response): the
            // journal is healthy, so the turn ends on file like any other.
            Err(e) => (TurnStatus::Failed, Some(format!("The turn stopped: {e}"))),
        };
        let saved = {
            let (turn_id, reason) = (turn_id.clone(), reason.clone());
            self.with_session_io(move |s| {
                s.close_unresolved_calls(&turn_id)?;
                s.end_turn_with(&turn_id, status, reason, Some(partial_text))
            })
            .await
        };
        let text = self.with_session(|s| s.transcript().turn(&turn_id).map(|t| t.text())).filter(|t| !t.is_empty());
        let (status, reason) = match saved {
            Ok(()) => (status, reason),
            // The outcome is not on file: say so, rather than report the
            // status the failed turn_end would have recorded.
            Err(e) => (TurnStatus::Failed, Some(unsaved_end_reason(&e))),
        };
        self.finish(TurnEnded { turn_id, status, reason, text });
    }

    /// Announces the turn's end and frees the session for the next turn in
    /// one step, so no next turn can start (and announce itself) in between.
    fn finish(&self, ended: TurnEnded) {
        let TurnEnded { turn_id, status, reason, text } = ended;
        // Read first, so that neither lock is held while the other is taken.
        let (usage, session_usage) =
            self.with_session(|s| (s.transcript().turn(&turn_id).and_then(|t| t.usage), s.transcript().usage));
        let mut running = lock(&self.inner.running);
        self.emit(AgentEvent::TurnEnded { turn_id, status, reason, text, usage, session_usage });
        running.take();
        self.inner.busy.send_replace(false);
    }

    /// The turn's steps; returns how it ends, or the save that failed.
    async fn turn_steps(
        &self,
        turn_id: &str,
        cancel: &CancellationToken,
        partial_text: &mut String,
    ) -> Result<(TurnStatus, Option<String>), SessionError> {
        let limits = self.inner.limits;
        // Fixed for the turn: the model is chosen only between turns.
        let model = self.model_client();
        let mut requests = 0u32;
        let mut calls_seen = 0u32;
        // Text of the turn's finished responses; a retried attempt's text is void.
        let mut turn_text = 0usize;
        // `context_length_exceeded` compacts once per turn, then the request is
        // repeated once (a model request is safe to repeat; a command never is).
        let mut compacted_for_length = false;
        // Whether that compaction, asked for by an answer that filled the
        // window, changed nothing.
        let mut window_compaction_failed = false;
        // The window of the model this turn uses, not the one configured at
        // start: the session may have switched (`mino/models/select`).
        let settings = self.compaction_settings(&model, cancel).await;
        if cancel.is_cancelled() {
            return Ok((TurnStatus::Cancelled, Some(self.cancel_reason())));
        }
        let due = self.auto_compaction_due(&model, &settings).await;
        if due {
            // Failing here is not the turn's failure: the request may fit
            // anyway, and if it does not, the service says so below.
            self.compact_in_turn(Trigger::Auto, turn_id, cancel).await?;
            if cancel.is_cancelled() {
                return Ok((TurnStatus::Cancelled, Some(self.cancel_reason())));
            }
        }
        loop {
            if requests == limits.max_requests {
                return Ok((
                    TurnStatus::Failed,
                    Some(format!("limit reached: at most {} model requests per turn", limits.max_requests)),
                ));
            }
            requests += 1;
            // Read and composed for each request: a file or the mode may
            // change between them.
            let project = self.project_instructions();
            let plan_mode = lock(&self.inner.policy).approval_mode == ApprovalMode::Plan;
            let (instructions, used) = project_instructions::compose(&self.inner.instructions, &project, plan_mode);
            // The session's MCP servers may still be starting (an editor's
            // `mcpServers` start with the session), or relisting tools a call
            // just changed: each request offers what they end up with.
            tokio::select! {
                _ = self.inner.mcp.settled() => {}
                _ = cancel.cancelled() => return Ok((TurnStatus::Cancelled, Some(self.cancel_reason()))),
            }
            let mcp_tools = self.inner.mcp.tool_definitions();
            let body = self.with_session(|s| s.request_body_with_tools(&model, &instructions, &mcp_tools));
            fail::fail_point!("agent::before_model_request");
            // Stops this response's stream (and only it) once the turn's text
            // passes its limit; the user's cancel stops it too.
            let stop_stream = cancel.child_token();
            let mut streamed = 0usize;
            let mut text_over_limit = false;
            let response = {
                let mut on_event = |event: ModelEvent<'_>| match event {
                    ModelEvent::TextDelta(_) if text_over_limit => {}
                    ModelEvent::TextDelta(delta) => {
                        streamed += delta.len();
                        if turn_text + streamed > TURN_TEXT_LIMIT {
                            text_over_limit = true;
                            stop_stream.cancel();
                            return;
                        }
                        partial_text.push_str(delta);
                        self.emit(AgentEvent::TextDelta { turn_id: turn_id.to_string(), delta: delta.to_string() });
                        fail::fail_point!("agent::after_text_delta");
                    }
                    ModelEvent::Retrying { attempt, delay, reason } => {
                        streamed = 0;
                        partial_text.clear();
                        tracing::warn!(turn_id, attempt, ?delay, reason, "retrying the model request");
                        self.emit(AgentEvent::Retrying {
                            turn_id: turn_id.to_string(),
                            attempt,
                            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                            reason: reason.to_string(),
                        });
                    }
                };
                match body {
                    Ok(body) => model.respond_with_body(body, &mut on_event, &stop_stream).await,
                    Err(e) => Err(e),
                }
            };
            if text_over_limit && !cancel.is_cancelled() {
                tracing::warn!(turn_id, limit = TURN_TEXT_LIMIT, "the model's text passed the turn's limit");
                return Ok((TurnStatus::Failed, Some(turn_text_limit_reason())));
            }
            turn_text += streamed;
            let response = match response {
                Ok(response) => response,
                Err(ModelError::Cancelled) => return Ok((TurnStatus::Cancelled, Some(self.cancel_reason()))),
                Err(e) if compaction::is_context_length_exceeded(&e) => {
                    if compacted_for_length {
                        return Ok((TurnStatus::Failed, Some(compaction::too_long_reason(&e, true))));
                    }
                    compacted_for_length = true;
                    let outcome = self.compact_in_turn(Trigger::ContextLengthExceeded, turn_id, cancel).await?;
                    if cancel.is_cancelled() {
                        return Ok((TurnStatus::Cancelled, Some(self.cancel_reason())));
                    }
                    if !outcome.compacted {
                        let reason = match outcome.reason.as_deref() {
                            Some(compaction::NOTHING_TO_COMPACT) | None => compaction::too_long_reason(&e, false),
                            Some(why) => compaction::compaction_failed_reason(why),
                        };
                        return Ok((TurnStatus::Failed, Some(reason)));
                    }
                    // The same request again, shorter: it is not another of
                    // the turn's requests.
                    requests -= 1;
                    continue;
                }
                Err(e) => return Ok((TurnStatus::Failed, Some(e.to_string()))),
            };
            if response.incomplete.as_deref() == Some(CONTEXT_WINDOW_FULL) && !compacted_for_length {
                // The window filled up while the model answered: as a refusal
                // of the request as too long, compact once and ask again.
                compacted_for_length = true;
                let outcome = self.compact_in_turn(Trigger::ContextLengthExceeded, turn_id, cancel).await?;
                if cancel.is_cancelled() {
                    return Ok((TurnStatus::Cancelled, Some(self.cancel_reason())));
                }
                if outcome.compacted {
                    // What this response streamed is void, as after a retry.
                    turn_text -= streamed;
                    partial_text.clear();
                    self.emit(AgentEvent::Retrying {
                        turn_id: turn_id.to_string(),
                        attempt: 1,
                        delay_ms: 0,
                        reason: compaction::WINDOW_FULL_RETRY.to_string(),
                    });
                    requests -= 1;
                    continue;
                }
                window_compaction_failed = true;
            }
            fail::fail_point!("agent::after_model_response");
            // The calls are what the transcript made of the recorded response:
            // one reading of the items, shared with recovery and replay.
            // The response is written through, not synced (no save point):
            // a write into the page cache, done here rather than handed to
            // another thread, which cost more than the write itself
            // (docs/performance.md, "The turn step's own time").
            let usage = response.usage;
            let calls = self.with_session(|s| -> Result<Vec<(String, String, String)>, SessionError> {
                s.record_response_with_usage(turn_id, response.items, response.usage, Some(used))?;
                Ok(s.transcript()
                    .turn(turn_id)
                    .map(|turn| {
                        let last = turn.responses.len().saturating_sub(1);
                        turn.calls
                            .iter()
                            .filter(|c| c.response_index == last)
                            .map(|c| (c.call_id.clone(), c.name.clone(), c.arguments.clone()))
                            .collect()
                    })
                    .unwrap_or_default())
            })?;
            // Recorded: its text is in the response record now.
            partial_text.clear();
            if let Some(usage) = usage {
                self.emit(AgentEvent::ResponseUsage {
                    turn_id: turn_id.to_string(),
                    usage,
                    context_window: settings.context_window,
                });
            }
            if calls.is_empty() {
                return Ok(match response.incomplete {
                    Some(why) if why == CONTEXT_WINDOW_FULL => {
                        (TurnStatus::Failed, Some(compaction::window_full_reason(window_compaction_failed)))
                    }
                    Some(why) => (TurnStatus::Failed, Some(format!("the model's answer was cut short ({why})"))),
                    None => (TurnStatus::Completed, None),
                });
            }
            let mut over_limit = false;
            let mut cancelled = false;
            // Ids already used in this response: a second call with one of
            // them cannot be answered unambiguously (its output would carry
            // the same call_id as the first's), so it is not run.
            let mut ids_in_response: HashSet<String> = HashSet::new();
            for (call_id, name, arguments) in calls {
                if !ids_in_response.insert(call_id.clone()) {
                    let output = duplicate_call_output(&call_id, &arguments);
                    self.save_result(turn_id, &call_id, ToolStatus::Failed, &output, None).await?;
                    continue;
                }
                if cancelled || over_limit || calls_seen == limits.max_calls {
                    over_limit |= !cancelled;
                    let output = if cancelled {
                        outputs::NOT_RUN_AFTER_CANCEL.to_string()
                    } else {
                        format!("Not executed: the turn reached its limit of {} tool calls.", limits.max_calls)
                    };
                    self.save_result(turn_id, &call_id, ToolStatus::NotExecuted, &output, None).await?;
                    continue;
                }
                calls_seen += 1;
                cancelled = self.handle_call(turn_id, &call_id, &name, &arguments, cancel).await?;
            }
            if cancelled {
                return Ok((TurnStatus::Cancelled, Some(self.cancel_reason())));
            }
            if over_limit {
                return Ok((
                    TurnStatus::Failed,
                    Some(format!("limit reached: at most {} tool calls per turn", limits.max_calls)),
                ));
            }
        }
    }

    /// One call, from approval to saved result. Returns whether the turn was
    /// cancelled during it.
    async fn handle_call(
        &self,
        turn_id: &str,
        call_id: &str,
        name: &str,
        arguments: &str,
        cancel: &CancellationToken,
    ) -> Result<bool, SessionError> {
        if lock(&self.inner.policy).approval_mode.refuses_unasked(name) {
            // Refused without asking and without a `tool_start`: recovery
            // can only ever find it not executed.
            tracing::info!(turn_id, call_id, "refused: plan mode");
            self.save_result(turn_id, call_id, ToolStatus::Refused, outputs::PLAN_MODE, None).await?;
            return Ok(false);
        }
        if let Some(tool) = EditTool::from_name(name) {
            return self.handle_edit_call(turn_id, call_id, tool, arguments, cancel).await;
        }
        if let Some(tool) = crate::read::ReadTool::from_name(name) {
            return self.handle_read_call(turn_id, call_id, tool, arguments, cancel).await;
        }
        if crate::mcp::McpManager::is_mcp_name(name) {
            return self.handle_mcp_call(turn_id, call_id, name, arguments, cancel).await;
        }
        if name != "bash" {
            let output = format!("Unknown tool `{name}`; the tools are `bash`, `edit_file`, `write_file`, `read_file`, `list_files` and `search`.");
            self.save_result(turn_id, call_id, ToolStatus::Failed, &output, None).await?;
            return Ok(false);
        }
        let command = match crate::calls::command_of(arguments) {
            Ok(command) => command,
            Err(why) => {
                self.save_result(turn_id, call_id, ToolStatus::Failed, &why, None).await?;
                return Ok(false);
            }
        };
        if cancel.is_cancelled() {
            self.save_result(turn_id, call_id, ToolStatus::NotExecuted, outputs::NOT_RUN_AFTER_CANCEL, None).await?;
            return Ok(true);
        }

        // What would approve it without asking, decided from the policy as
        // it stands now; the mode shown is the mode it runs in.
        let granted = self.with_session(|s| s.transcript().rules.clone());
        let (sandbox, approval_mode, by_rules, by_sandbox, deny_rules) = {
            let policy = lock(&self.inner.policy);
            let by_rules = crate::policy::command_decision(&policy, &granted, &command);
            let deny_rules = crate::policy::deny_rules_in_reach(&policy, &granted, &command);
            (policy.sandbox, policy.approval_mode, by_rules, policy.sandbox_approves(), deny_rules)
        };
        let automatic = match by_rules {
            // Deny wins over allow rules and over the sandbox.
            Some(RuleDecision::Denied(rules)) => return self.deny_by_rules(turn_id, call_id, rules).await,
            // ... and so does a deny rule the command might reach unseen.
            _ if !deny_rules.is_empty() => None,
            Some(RuleDecision::Allowed(rules)) => Some((ApprovedBy::Rule, rules)),
            None => by_sandbox.then(|| (ApprovedBy::Sandbox, Vec::new())),
        };
        if let Some((by, rules)) = automatic {
            tracing::info!(turn_id, call_id, approved_by = ?by, "approved without asking");
            return self.run_approved(turn_id, call_id, &command, (Some(by), rules), sandbox, cancel).await;
        }

        let (request, facts) = {
            let bash = lock(&self.inner.bash);
            let facts = bash.approval_facts();
            (
                AgentEvent::ApprovalRequest {
                    turn_id: turn_id.to_string(),
                    call_id: call_id.to_string(),
                    command: command.clone(),
                    directory: bash.cwd().display().to_string(),
                    environment: bash.environment().clone(),
                    limits: bash.limits(),
                    edit: None,
                    sandbox,
                    approval_mode,
                    suggested_rule: crate::policy::SuggestedRule::for_command(&command),
                    deny_rules,
                    read: None,
                    mcp: None,
                },
                facts,
            )
        };
        let decision = self.wait_for_decision(turn_id, call_id, None, request, cancel).await;
        match self.grant_rule(turn_id, call_id, decision).await? {
            None => {
                self.save_result(turn_id, call_id, ToolStatus::NotExecuted, outputs::CANCELLED_BEFORE_START, None)
                    .await?;
                Ok(true)
            }
            Some(Answer::Deny { reason }) => {
                self.record_denial(turn_id, call_id, reason, outputs::REFUSED, facts).await?;
                Ok(false)
            }
            Some(Answer::Approve) => {
                self.run_approved(turn_id, call_id, &command, (None, Vec::new()), sandbox, cancel).await
            }
            // `decide` refuses hunks for a command; were one to arrive, nothing runs.
            Some(Answer::ApproveHunks(_)) => {
                self.record_denial(turn_id, call_id, None, outputs::REFUSED, facts).await?;
                Ok(false)
            }
        }
    }

    /// Grants the rule a decision carries while answering `call_id`, and
    /// returns the plain decision left (`Approve` or `Deny`). The rule is on
    /// file (a synced `rule` record, and the workspace rules file for a
    /// workspace rule) before it applies to anything.
    async fn grant_rule(
        &self,
        turn_id: &str,
        call_id: &str,
        decision: Option<Decision>,
    ) -> Result<Option<Answer>, SessionError> {
        let (rule, left) = match decision {
            None => return Ok(None),
            Some(Decision::Approve) => return Ok(Some(Answer::Approve)),
            Some(Decision::ApproveHunks(hunks)) => return Ok(Some(Answer::ApproveHunks(hunks))),
            Some(Decision::Deny { reason }) => return Ok(Some(Answer::Deny { reason })),
            Some(Decision::Allow(rule)) => (rule, Answer::Approve),
            Some(Decision::DenyWithRule(rule)) => (rule, Answer::Deny { reason: None }),
        };
        let (t, c, r) = (turn_id.to_string(), call_id.to_string(), rule.clone());
        self.with_session_io(move |s| s.record_rule(&t, &c, r)).await?;
        tracing::info!(rule = rule.id(), text = rule.command(), effect = ?rule.effect(), scope = ?rule.scope(), "rule granted");
        if rule.scope() == RuleScope::Workspace {
            self.write_workspace_rule(&rule).await;
        }
        Ok(Some(left))
    }

    /// Refuses a call deny rules cover, without asking: its `approval`
    /// (`denied`, `decided_by: rule`, naming them) and its `refused` result.
    async fn deny_by_rules(&self, turn_id: &str, call_id: &str, rules: Vec<Rule>) -> Result<bool, SessionError> {
        tracing::info!(turn_id, call_id, "denied by a rule without asking");
        let output = outputs::denied_by_rule(&rules);
        let (t, c) = (turn_id.to_string(), call_id.to_string());
        self.with_session_io(move |s| {
            s.record_approval(&t, &c, ApprovalDecision::Denied, Some(ApprovedBy::Rule), rules)
        })
        .await?;
        self.save_result(turn_id, call_id, ToolStatus::Refused, &output, None).await?;
        Ok(false)
    }

    /// Records the person's denial of a call and its `refused` result, synced
    /// together (the decision's save point is the result's sync): the model
    /// reads the reason they gave, else `refused`.
    async fn record_denial(
        &self,
        turn_id: &str,
        call_id: &str,
        reason: Option<String>,
        refused: &str,
        facts: ApprovalFacts,
    ) -> Result<(), SessionError> {
        let output = match reason.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
            Some(reason) => outputs::denied_with_reason(reason),
            None => refused.to_string(),
        };
        let (t, c, o) = (turn_id.to_string(), call_id.to_string(), output.clone());
        let command = self
            .with_session_io(move |s| {
                s.record_approval_of(&t, &c, ApprovalDecision::Denied, (None, Vec::new()), facts)?;
                let command = pending_call_command(s, &c);
                s.record_tool_result(&t, &c, ToolStatus::Refused, &o, None)?;
                Ok::<_, SessionError>(command)
            })
            .await?;
        self.emit_result(turn_id, call_id, command, ToolStatus::Refused, output, None, None);
        Ok(())
    }

    /// Appends a granted workspace rule to the workspace rules file. A
    /// failure is logged: the rule still holds for this session (its `rule`
    /// record says so) and is missing from the file for later ones.
    async fn write_workspace_rule(&self, rule: &Rule) {
        let (path, workspace) = {
            let policy = lock(&self.inner.policy);
            (policy.workspace_file.clone(), lock(&self.inner.bash).cwd().to_path_buf())
        };
        let Some(path) = path else {
            tracing::warn!(
                rule = rule.id(),
                "the workspace rules file cannot be located; the rule holds for this session only"
            );
            return;
        };
        let owned = rule.clone();
        let written = tokio::task::spawn_blocking(move || crate::rules::file::append(&path, &workspace, &owned)).await;
        match written {
            Ok(Ok(_)) => {
                let mut policy = lock(&self.inner.policy);
                if policy.workspace_file_error.is_none() && !policy.workspace_rules.iter().any(|r| r.id() == rule.id())
                {
                    policy.workspace_rules.push(rule.clone());
                }
            }
            Ok(Err(e)) => {
                tracing::warn!(rule = rule.id(), error = %e, "the workspace rule could not be written to the rules file; it holds for this session only")
            }
            Err(e) => tracing::warn!(rule = rule.id(), error = %e, "writing the workspace rule was abandoned"),
        }
    }

    /// Runs an approved call: its approval (saying who approved it) and its
    /// start (saying the sandbox) are synced first, then it runs in that
    /// sandbox and its result is saved. Returns whether the turn was
    /// cancelled during it.
    async fn run_approved(
        &self,
        turn_id: &str,
        call_id: &str,
        command: &str,
        (approved_by, rules): (Option<ApprovedBy>, Vec<Rule>),
        sandbox: SandboxMode,
        cancel: &CancellationToken,
    ) -> Result<bool, SessionError> {
        let approver = Approver::of(approved_by, &rules);
        let bash = BashTool::clone(&lock(&self.inner.bash)).with_sandbox(sandbox);
        let directory = bash.cwd().display().to_string();
        let facts = bash.approval_facts();
        // Started now, it gets ready while the approval and start are
        // synced; it runs nothing until it is given the command below, and
        // exits unused if it is dropped (a failed save, a cancel). With the
        // editor's terminals, the editor starts it, and only once both are
        // synced: asking the editor is the first thing that leaves Mino.
        let terminals = lock(&self.inner.command_terminals).clone();
        let supervisor = terminals.is_none().then(|| bash.start_supervisor());
        let (t, c, cmd) = (turn_id.to_string(), call_id.to_string(), command.to_string());
        let evidence = self
            .with_session_io(move |s| {
                s.record_approval_of(&t, &c, ApprovalDecision::Approved, (approved_by, rules), facts)?;
                s.record_tool_start_in(&t, &c, &cmd, &directory, sandbox)?;
                Ok::<_, SessionError>(s.evidence_target(&t, &c))
            })
            .await?;
        if cancel.is_cancelled() {
            // Cancelled while the start was being saved: the start is
            // on file, so the result says plainly that it never ran.
            self.save_result(turn_id, call_id, ToolStatus::Cancelled, outputs::CANCELLED_BEFORE_SPAWN, None).await?;
            return Ok(true);
        }
        // The approval and tool_start are on disk: only now may it run.
        self.emit(AgentEvent::ToolStarted {
            turn_id: turn_id.to_string(),
            call_id: call_id.to_string(),
            command: command.to_string(),
            approver,
            sandbox,
            tool: None,
            read: None,
        });
        let (supervisor, terminal) = match (supervisor, terminals) {
            (Some(supervisor), _) => (supervisor, None),
            (None, None) => (bash.start_supervisor(), None),
            (None, Some(terminals)) => {
                let asked = bash.start_in_terminal(&*terminals, turn_id, call_id);
                let started = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => None,
                    started = asked => Some(started),
                };
                let Some(started) = started else {
                    self.save_result(turn_id, call_id, ToolStatus::Cancelled, outputs::CANCELLED_BEFORE_SPAWN, None)
                        .await?;
                    return Ok(true);
                };
                let (supervisor, terminal_id, note) = match started {
                    Ok((supervisor, id)) => (supervisor, Some(id), None),
                    // Nothing has run: Mino runs it itself, as without a terminal.
                    Err(why) => (bash.start_supervisor(), None, Some(outputs::terminal_fallback(&why))),
                };
                self.emit(AgentEvent::ToolTerminal {
                    turn_id: turn_id.to_string(),
                    call_id: call_id.to_string(),
                    terminal_id: terminal_id.clone(),
                    note,
                });
                (supervisor, terminal_id.map(|id| (terminals, id)))
            }
        };
        fail::fail_point!("agent::before_spawn");
        let mut streamed = 0usize;
        let mut on_output = |stream: Stream, chunk: &str| {
            // The saved result keeps head and tail within the output
            // limit; live output stops too, so a runaway command
            // cannot flood the client (or the server's queues).
            if streamed >= LIVE_OUTPUT_LIMIT {
                return;
            }
            streamed += chunk.len();
            let chunk = if streamed >= LIVE_OUTPUT_LIMIT {
                format!("{chunk}\n[live output stopped after {LIVE_OUTPUT_LIMIT} bytes; the result keeps the head and tail]\n")
            } else {
                chunk.to_string()
            };
            // The command is running (it has written output).
            fail::fail_point!("agent::after_spawn");
            self.emit(AgentEvent::ToolOutput {
                turn_id: turn_id.to_string(),
                call_id: call_id.to_string(),
                stream,
                chunk,
            })
        };
        let (outcome, settle) = bash.run_recorded(supervisor, command, evidence, &mut on_output, cancel).await;
        fail::fail_point!("agent::before_tool_result");
        // Unsaved, `settle` is dropped: the supervisor hears that
        // and leaves its evidence for the unknown result.
        self.save_result(turn_id, call_id, outcome.status, &outcome.output, outcome.exit_code).await?;
        settle.saved().await;
        if let Some((terminals, id)) = terminal {
            // The result is Mino's and saved; the editor's terminal is tidied
            // up without holding up the turn.
            tokio::spawn(terminals.finish(id, outcome.status == ToolStatus::Cancelled));
        }
        Ok(outcome.status == ToolStatus::Cancelled)
    }

    async fn save_result(
        &self,
        turn_id: &str,
        call_id: &str,
        status: ToolStatus,
        output: &str,
        exit_code: Option<i32>,
    ) -> Result<(), SessionError> {
        self.save_result_with_diff(turn_id, call_id, status, output, exit_code, None).await
    }

    /// [`Agent::save_result`], the event carrying the diff an edit wrote.
    async fn save_result_with_diff(
        &self,
        turn_id: &str,
        call_id: &str,
        status: ToolStatus,
        output: &str,
        exit_code: Option<i32>,
        diff: Option<String>,
    ) -> Result<(), SessionError> {
        let (t, c, o) = (turn_id.to_string(), call_id.to_string(), output.to_string());
        let command = self
            .with_session_io(move |s| {
                let command = pending_call_command(s, &c);
                s.record_tool_result(&t, &c, status, &o, exit_code)?;
                Ok::<_, SessionError>(command)
            })
            .await?;
        self.emit_result(turn_id, call_id, command, status, output.to_string(), exit_code, diff);
        Ok(())
    }

    /// Announces a result that is on disk.
    #[allow(clippy::too_many_arguments)]
    fn emit_result(
        &self,
        turn_id: &str,
        call_id: &str,
        shown: CallShown,
        status: ToolStatus,
        output: String,
        exit_code: Option<i32>,
        diff: Option<String>,
    ) {
        let read = shown.read.map(|r| r.with_result(status, &output));
        self.emit(AgentEvent::ToolResult {
            turn_id: turn_id.to_string(),
            call_id: call_id.to_string(),
            command: shown.command,
            status,
            output,
            exit_code,
            diff,
            tool: shown.tool,
            read,
        });
    }

    /// One `edit_file` / `write_file` call, from proposal to saved result.
    /// Returns whether the turn was cancelled during it.
    ///
    /// A call that cannot be proposed (bad arguments, `old_text` absent or
    /// ambiguous, a binary file…) gets a `failed` result saying why, and
    /// nobody is asked. Otherwise the person approves the diff; the
    /// approval and the `tool_start` (path and hashes) are synced before
    /// [`edit::apply`] writes, and `apply` refuses, writing nothing, when
    /// the file changed since the proposal.
    async fn handle_edit_call(
        &self,
        turn_id: &str,
        call_id: &str,
        tool: EditTool,
        arguments: &str,
        cancel: &CancellationToken,
    ) -> Result<bool, SessionError> {
        let args = match EditArgs::parse(tool, arguments) {
            Ok(args) => args,
            Err(why) => {
                self.save_result(turn_id, call_id, ToolStatus::Failed, &why.to_string(), None).await?;
                return Ok(false);
            }
        };
        if cancel.is_cancelled() {
            self.save_result(turn_id, call_id, ToolStatus::NotExecuted, outputs::NOT_RUN_AFTER_CANCEL, None).await?;
            return Ok(true);
        }
        let summary = edit::summary(tool, args.path());
        let directory = lock(&self.inner.bash).cwd().to_path_buf();
        let editor_text = self.editor_text(&directory, args.path(), cancel).await;
        // Reading and hashing up to 4 MiB (and diffing) is blocking work.
        let proposed = blocking(move || -> Result<(Workspace, EditProposal), (String, Option<PathBuf>)> {
            let workspace = Workspace::new(&directory).map_err(|e| {
                let why = format!(
                    "The session's directory {} cannot be resolved ({e}); nothing was written.",
                    directory.display()
                );
                (why, None)
            })?;
            let proposal = edit::propose_with_editor_text(&workspace, &args, editor_text.as_deref())
                .map_err(|r| (r.error.to_string(), r.outside))?;
            Ok((workspace, proposal))
        })
        .await;
        let (workspace, proposal) = match proposed {
            Ok(proposed) => proposed,
            Err((why, Some(outside))) => {
                return self.ask_before_telling(turn_id, call_id, tool, &summary, why, outside, cancel).await;
            }
            Err((why, None)) => {
                self.save_result(turn_id, call_id, ToolStatus::Failed, &why, None).await?;
                return Ok(false);
            }
        };
        let directory = lock(&self.inner.bash).cwd().display().to_string();
        let relative = workspace.display_path(&proposal.path);
        let granted = self.with_session(|s| s.transcript().rules.clone());
        let protected = {
            let home = lock(&self.inner.bash).home().map(Path::to_path_buf);
            crate::protect::why_protected(Path::new(&directory), home.as_deref(), &proposal.path)
        };
        let (approval_mode, by_rules) = {
            let policy = lock(&self.inner.policy);
            let by_rules = crate::policy::edit_decision(
                &policy,
                &granted,
                &relative,
                proposal.leaves_workspace,
                protected.is_some(),
            );
            (policy.approval_mode, by_rules)
        };
        let request = AgentEvent::ApprovalRequest {
            turn_id: turn_id.to_string(),
            call_id: call_id.to_string(),
            command: summary.clone(),
            directory: directory.clone(),
            // Nothing runs: no environment, no command limits.
            environment: BTreeMap::new(),
            limits: bash::Limits { timeout: Duration::ZERO, output_limit: 0, kill_grace: Duration::ZERO },
            edit: Some(EditApproval {
                tool,
                path: relative.clone(),
                new_file: proposal.new_file,
                size: proposal.after.size,
                diff: proposal.diff.clone(),
                leaves_workspace: proposal.leaves_workspace,
                protected: protected.clone(),
                absolute_path: proposal.path.clone(),
                old_text: proposal.before_content().map(Arc::from),
                new_text: Arc::from(proposal.after_content()),
                from_editor: proposal.from_editor,
            }),
            // The sandbox covers commands only.
            sandbox: SandboxMode::Off,
            approval_mode,
            // A rule would never approve a protected path: none is offered.
            suggested_rule: crate::policy::SuggestedRule::for_path(&relative, proposal.leaves_workspace)
                .filter(|_| protected.is_none()),
            deny_rules: Vec::new(),
            read: None,
            mcp: None,
        };
        let (decision, rules) = match by_rules {
            Some(RuleDecision::Denied(rules)) => return self.deny_by_rules(turn_id, call_id, rules).await,
            Some(RuleDecision::Allowed(rules)) => (Some(Answer::Approve), rules),
            None => {
                let hunks = Some(proposal.hunk_count());
                let decision = self.wait_for_decision(turn_id, call_id, hunks, request, cancel).await;
                (self.grant_rule(turn_id, call_id, decision).await?, Vec::new())
            }
        };
        // Approved in part: the proposal becomes the accepted hunks alone,
        // computed from the content it was made from, and that is what is
        // journaled (the approval names the hunks, tool_start hashes the
        // narrowed content) and written.
        let (decision, proposal, accepted_hunks) = match decision {
            Some(Answer::ApproveHunks(hunks)) => match proposal.narrowed(&hunks) {
                Ok(narrowed) => {
                    let accepted = narrowed.narrowed.as_ref().map(|n| n.accepted.iter().map(|&i| i as u32).collect());
                    (Some(Answer::Approve), narrowed, accepted)
                }
                // Checked by `decide`; were it not, nothing is written.
                Err(why) => {
                    let output = format!("Not applied: {why}. Nothing was written.");
                    self.save_result(turn_id, call_id, ToolStatus::Failed, &output, None).await?;
                    return Ok(false);
                }
            },
            other => (other, proposal, None),
        };
        let approved_by = (!rules.is_empty()).then_some(ApprovedBy::Rule);
        let approver = Approver::of(approved_by, &rules);
        match decision {
            None => {
                self.save_result(turn_id, call_id, ToolStatus::NotExecuted, outputs::EDIT_CANCELLED_BEFORE_START, None)
                    .await?;
                Ok(true)
            }
            Some(Answer::Deny { reason }) => {
                self.record_denial(turn_id, call_id, reason, outputs::EDIT_REFUSED, ApprovalFacts::default()).await?;
                Ok(false)
            }
            // Made plain above, with the proposal narrowed; were it not, nothing is written.
            Some(Answer::ApproveHunks(_)) => {
                let output = "Not applied: the accepted hunks were not applied to the proposal. Nothing was written.";
                self.save_result(turn_id, call_id, ToolStatus::Failed, output, None).await?;
                Ok(false)
            }
            Some(Answer::Approve) => {
                let (t, c, start) = (turn_id.to_string(), call_id.to_string(), proposal.start_record());
                let facts = ApprovalFacts { accepted_hunks, ..ApprovalFacts::default() };
                // What a rewind puts back, kept (and synced) before the start
                // record that lets the write happen.
                let before = proposal.before_on_disk().map(str::to_string).zip(start.before_sha256.clone());
                self.with_session_io(move |s| {
                    if let Some((content, sha256)) = before {
                        s.keep_before_content(content.as_bytes(), &sha256);
                    }
                    s.record_approval_of(&t, &c, ApprovalDecision::Approved, (approved_by, rules), facts)?;
                    s.record_edit_start(&t, &c, start, &directory)
                })
                .await?;
                if cancel.is_cancelled() {
                    self.save_result(
                        turn_id,
                        call_id,
                        ToolStatus::Cancelled,
                        outputs::EDIT_CANCELLED_BEFORE_WRITE,
                        None,
                    )
                    .await?;
                    return Ok(true);
                }
                // The approval and tool_start are on disk: only now may it write.
                self.emit(AgentEvent::ToolStarted {
                    turn_id: turn_id.to_string(),
                    call_id: call_id.to_string(),
                    command: summary,
                    approver,
                    sandbox: SandboxMode::Off,
                    tool: Some(CallTool::Edit(tool)),
                    read: None,
                });
                fail::fail_point!("agent::before_edit_write");
                let applied = blocking(move || edit::apply(&workspace, &proposal)).await;
                fail::fail_point!("agent::before_tool_result");
                match applied {
                    Ok(applied) => {
                        self.save_result_with_diff(
                            turn_id,
                            call_id,
                            ToolStatus::Success,
                            &applied.output,
                            None,
                            Some(applied.diff),
                        )
                        .await?
                    }
                    Err(refused) => {
                        self.save_result(turn_id, call_id, ToolStatus::Failed, &refused.to_string(), None).await?
                    }
                }
                Ok(false)
            }
        }
    }

    /// An edit outside the workspace that cannot be proposed: the reason
    /// (the file is absent, lacks `old_text`, already holds the content,
    /// is binary or too large…) tells the model something about a file
    /// outside, so it is told only once the person approved, as for any
    /// edit there. The person sees the path and the reason instead of a
    /// diff; a denial answers exactly as the denial of a real diff, so the
    /// model cannot tell the two apart. Nothing is written either way.
    #[allow(clippy::too_many_arguments)]
    async fn ask_before_telling(
        &self,
        turn_id: &str,
        call_id: &str,
        tool: EditTool,
        summary: &str,
        why: String,
        outside: PathBuf,
        cancel: &CancellationToken,
    ) -> Result<bool, SessionError> {
        let directory = lock(&self.inner.bash).cwd().display().to_string();
        let approval_mode = lock(&self.inner.policy).approval_mode;
        let shown = outside.display().to_string();
        let request = AgentEvent::ApprovalRequest {
            turn_id: turn_id.to_string(),
            call_id: call_id.to_string(),
            command: summary.to_string(),
            directory,
            environment: BTreeMap::new(),
            limits: bash::Limits { timeout: Duration::ZERO, output_limit: 0, kill_grace: Duration::ZERO },
            edit: Some(EditApproval {
                tool,
                path: shown.clone(),
                new_file: false,
                size: 0,
                diff: outputs::unproposable_outside(&shown, &why),
                leaves_workspace: true,
                absolute_path: outside,
                // Both sides empty: a diff view shows no change (none is proposed).
                old_text: Some(Arc::from("")),
                new_text: Arc::from(""),
                protected: None,
                from_editor: false,
            }),
            sandbox: SandboxMode::Off,
            approval_mode,
            suggested_rule: None,
            deny_rules: Vec::new(),
            read: None,
            mcp: None,
        };
        // No diff is proposed, so there are no hunks to narrow.
        let decision = self.wait_for_decision(turn_id, call_id, None, request, cancel).await;
        match self.grant_rule(turn_id, call_id, decision).await? {
            None => {
                self.save_result(turn_id, call_id, ToolStatus::NotExecuted, outputs::EDIT_CANCELLED_BEFORE_START, None)
                    .await?;
                Ok(true)
            }
            Some(Answer::Deny { reason }) => {
                self.record_denial(turn_id, call_id, reason, outputs::EDIT_REFUSED, ApprovalFacts::default()).await?;
                Ok(false)
            }
            // With no hunks offered, a narrowed approval is refused before it gets here.
            Some(Answer::Approve | Answer::ApproveHunks(_)) => {
                let (t, c) = (turn_id.to_string(), call_id.to_string());
                self.with_session_io(move |s| s.record_approval(&t, &c, ApprovalDecision::Approved, None, Vec::new()))
                    .await?;
                self.save_result(turn_id, call_id, ToolStatus::Failed, &why, None).await?;
                Ok(false)
            }
        }
    }

    /// Emits `request` (an approval request) and waits for the person's
    /// decision on it; `None` when the turn is cancelled first. A cancel
    /// wins over a decision that arrives at the same moment: once
    /// `mino/cancel` has answered, nothing of this turn may start.
    async fn wait_for_decision(
        &self,
        turn_id: &str,
        call_id: &str,
        edit_hunks: Option<usize>,
        request: AgentEvent,
        cancel: &CancellationToken,
    ) -> Option<Decision> {
        let (sender, receiver) = oneshot::channel();
        if let Some(turn) = lock(&self.inner.running).as_mut() {
            turn.approval = Some(PendingApproval { call_id: call_id.to_string(), edit_hunks, decision: sender });
        }
        debug_assert!(matches!(&request, AgentEvent::ApprovalRequest { turn_id: t, .. } if t == turn_id));
        self.emit(request);
        let decision = tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            decision = receiver => decision.ok(),
        };
        let decision = decision.filter(|_| !cancel.is_cancelled());
        if let Some(turn) = lock(&self.inner.running).as_mut() {
            turn.approval = None;
        }
        decision
    }
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
/// The MCP tools' turn step (`mcp/turn.rs` beside the MCP client).
#[path = "mcp/turn.rs"]
mod mcp_turn;

/// The read tools' turn step (`read_turn.rs` beside the read tools).
#[path = "read/turn.rs"]
mod read_turn;

/// Puts one planned file back (or removes it), and says what became of it.
fn restore_one(
    workspace: &Workspace,
    session: &Session,
    file: &crate::rewind::PlannedFile,
) -> crate::rewind::FileOutcome {
    use crate::rewind::{FileAction, FileOutcome, Outcome};
    let outcome = |outcome, why: Option<String>| FileOutcome { path: file.path.clone(), outcome, why };
    let content = match (&file.action, &file.to_sha256) {
        (FileAction::Remove, _) => None,
        (FileAction::Restore, Some(sha256)) => {
            match crate::blobs::read_checked(&crate::blobs::dir_for(session.path()), sha256) {
                Ok(bytes) => Some(bytes),
                Err(e) => return outcome(Outcome::NotRestored, Some(format!("before-content not kept: {e}"))),
            }
        }
        (FileAction::Restore, None) => {
            return outcome(Outcome::NotRestored, Some("the plan names no content to put back".into()))
        }
    };
    match edit::restore(workspace, Path::new(&file.path), &file.from_sha256, content.as_deref()) {
        Ok(()) if content.is_none() => outcome(Outcome::Removed, None),
        Ok(()) => outcome(Outcome::Restored, None),
        Err(edit::RestoreError::Changed(why)) => outcome(Outcome::Conflict, Some(why)),
        Err(e) => outcome(Outcome::NotRestored, Some(e.to_string())),
    }
}

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
