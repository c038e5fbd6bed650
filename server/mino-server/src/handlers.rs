//! The protocol binding: every `mino/*` method and notification, mapped
//! between `mino-protocol`'s wire types and `mino-core`'s calls.
//!
//! This is the only file that knows both vocabularies. Handlers return
//! quickly: a turn runs in the task the [`Agent`] spawns, and its events reach
//! the client through [`Notifications`], which the transport reads straight
//! into its outbox, so they keep their `seq` order with no task in between.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mino_core::agent::Decision;
use mino_core::agent::{AgentError, AgentEvent, Events, Numbered, TurnLimits};
use mino_core::bash;
use mino_core::model::{ListedModel, ModelSource};
use mino_core::policy::{ApprovalMode, PolicyError};
use mino_core::read::{CallTool, ReadInfo, ReadTool};
use mino_core::recovery::{RecoveredTurn, RecoveryReport};
use mino_core::rules::{Rule, RuleEffect, RuleKind, RuleScope};
use mino_core::sandbox::SandboxMode;
use mino_core::transcript::{Approver, Call, Turn, TurnItem};
use mino_core::{agent::Agent, App, OpenError, OpenOptions, Session, SessionError};
use mino_core::{ListScope, SessionStore, StoreError};
use mino_protocol as wire;
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tower_lsp_server::gen_lsp_types::{
    InitializeParams, InitializeResult, InitializedParams, ServerCapabilities, ServerInfo,
};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::{LanguageServer, LspService, LspServiceBuilder};

pub const SERVER_NAME: &str = "mino-server";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// How long an exiting server waits for a cancelled turn to write its end.
const EXIT_GRACE: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------- notifications

// ---------------------------------------------------------------- state

/// What `initialize` opened.
struct Opened {
    agent: Agent,
    /// Locked after the agent's session when both are needed (a switch).
    store: Arc<Mutex<SessionStore>>,
    /// The models the configuration names, offered when the service lists none.
    configured_models: Vec<ListedModel>,
    /// Taken by the task that streams notifications, once.
    stream: Option<Stream>,
}

type Stream = (wire::RecoveryNotification, Events);

struct Shared {
    opened: Mutex<Option<Opened>>,
    /// Hands the stream to [`Notifications`] once streaming starts.
    start: Mutex<Option<oneshot::Sender<Stream>>>,
    /// Taken by the transport, once.
    notifications: Mutex<Option<Notifications>>,
}

/// The server's notifications in send order, as JSON-RPC messages: first
/// `mino/recovery`, then every agent event. Read by the transport, which
/// queues each for stdout itself.
pub struct Notifications {
    start: Option<oneshot::Receiver<Stream>>,
    recovery: Option<wire::RecoveryNotification>,
    events: Option<Events>,
}

impl Notifications {
    /// The next notification; `None` once there will be no more (the
    /// session never opened, or the agent is gone).
    pub async fn next(&mut self) -> Option<String> {
        if let Some(start) = &mut self.start {
            let started = start.await.ok();
            self.start = None;
            (self.recovery, self.events) = started.map(|(r, e)| (Some(r), Some(e))).unwrap_or_default();
        }
        if let Some(recovery) = self.recovery.take() {
            return Some(message::<wire::notification::Recovery>(recovery));
        }
        loop {
            if let Some(message) = notification(self.events.as_mut()?.recv().await?) {
                return Some(message);
            }
        }
    }

    /// The next notification already waiting, without waiting for one.
    pub fn try_next(&mut self) -> Option<String> {
        if let Some(start) = &mut self.start {
            let started = start.try_recv().ok()?;
            self.start = None;
            (self.recovery, self.events) = (Some(started.0), Some(started.1));
        }
        if let Some(recovery) = self.recovery.take() {
            return Some(message::<wire::notification::Recovery>(recovery));
        }
        loop {
            if let Some(message) = notification(self.events.as_mut()?.try_recv()?) {
                return Some(message);
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A handle the transport keeps to stop the agent when the client is gone.
#[derive(Clone)]
pub struct Handle {
    shared: Arc<Shared>,
}

impl Handle {
    /// The notification stream, for the transport to send; `None` after the
    /// first call.
    pub fn notifications(&self) -> Option<Notifications> {
        lock(&self.shared.notifications).take()
    }

    /// Cancels the running turn (the client is gone) and waits, a bounded
    /// time, for it to record its end.
    pub async fn shutdown(&self) {
        let agent = lock(&self.shared.opened).as_ref().map(|o| o.agent.clone());
        let Some(agent) = agent else { return };
        if agent.running_turn().is_some() {
            tracing::info!("client gone: cancelling the running turn");
        }
        // Closing refuses any chat still in flight, so no turn can start
        // after this and outlive the server without an end on file.
        if tokio::time::timeout(EXIT_GRACE, agent.close()).await.is_err() {
            tracing::warn!("the cancelled turn did not record its end in time");
        }
    }
}

pub struct Backend {
    shared: Arc<Shared>,
}

/// The service with lifecycle methods plus Mino's.
pub fn service() -> (LspService<Backend>, tower_lsp_server::ClientSocket, Handle) {
    let (start, started) = oneshot::channel();
    let shared = Arc::new(Shared {
        opened: Mutex::new(None),
        start: Mutex::new(Some(start)),
        notifications: Mutex::new(Some(Notifications { start: Some(started), recovery: None, events: None })),
    });
    let handle = Handle { shared: shared.clone() };
    let builder: LspServiceBuilder<Backend> =
        LspService::build_with_lifecycle_methods(move |_client| Backend { shared });
    let (service, socket) = builder
        .custom_method(wire::method::CHAT, Backend::chat)
        .custom_method(wire::method::APPROVAL, Backend::approval)
        .custom_method(wire::method::ACKNOWLEDGE, Backend::acknowledge)
        .custom_method(wire::method::CANCEL, Backend::cancel)
        .custom_method(wire::method::HISTORY, Backend::history)
        .custom_method(wire::method::IMAGE, Backend::image)
        .custom_method(wire::method::SESSIONS_LIST, Backend::sessions_list)
        .custom_method(wire::method::SESSIONS_NEW, Backend::sessions_new)
        .custom_method(wire::method::SESSIONS_OPEN, Backend::sessions_open)
        .custom_method(wire::method::SESSIONS_RENAME, Backend::sessions_rename)
        .custom_method(wire::method::SESSIONS_DELETE, Backend::sessions_delete)
        // Approval rules and settings.
        .custom_method(wire::method::RULES_LIST, Backend::rules_list)
        .custom_method(wire::method::RULES_REVOKE, Backend::rules_revoke)
        .custom_method(wire::method::SETTINGS_UPDATE, Backend::settings_update)
        .custom_method(wire::method::COMPACT, Backend::compact)
        .custom_method(wire::method::MODELS_LIST, Backend::models_list)
        .custom_method(wire::method::MODELS_SELECT, Backend::models_select)
        .custom_method(wire::method::MCP_LIST, Backend::mcp_list)
        .custom_method(wire::method::MCP_RESTART, Backend::mcp_restart)
        .custom_method(wire::method::REWIND_PLAN, Backend::rewind_plan)
        .custom_method(wire::method::REWIND, Backend::rewind)
        .finish();
    (service, socket, handle)
}

/// Methods whose params are all optional: the transport gives them `{}`
/// when a request has no `params` member.
pub const OPTIONAL_PARAMS: [&str; 9] = [
    wire::method::MCP_LIST,
    wire::method::ACKNOWLEDGE,
    wire::method::HISTORY,
    wire::method::SESSIONS_LIST,
    wire::method::SESSIONS_NEW,
    wire::method::RULES_LIST,
    wire::method::SETTINGS_UPDATE,
    wire::method::COMPACT,
    wire::method::MODELS_LIST,
];

// ---------------------------------------------------------------- errors

fn error(code: i64, message: impl Into<String>) -> Error {
    Error { code: ErrorCode::ServerError(code), message: message.into().into(), data: None }
}

fn error_with(code: i64, message: impl Into<String>, data: Value) -> Error {
    Error { code: ErrorCode::ServerError(code), message: message.into().into(), data: Some(data) }
}

fn internal(message: impl Into<String>) -> Error {
    Error { code: ErrorCode::InternalError, message: message.into().into(), data: None }
}

fn invalid_params(message: impl Into<String>) -> Error {
    Error { code: ErrorCode::InvalidParams, message: message.into().into(), data: None }
}

fn session_error(e: SessionError) -> Error {
    use wire::error_code as code;
    match e {
        SessionError::AcknowledgementRequired => {
            error(code::ACKNOWLEDGEMENT_REQUIRED, wire::ACKNOWLEDGEMENT_REQUIRED_MESSAGE)
        }
        SessionError::TurnInProgress(turn_id) => {
            let message = SessionError::TurnInProgress(turn_id.clone()).to_string();
            error_with(code::TURN_IN_PROGRESS, message, json!({ "turnId": turn_id }))
        }
        SessionError::NothingToAcknowledge(turn_id) => {
            let message = SessionError::NothingToAcknowledge(turn_id.clone()).to_string();
            error_with(code::UNKNOWN_TURN, message, json!({ "turnId": turn_id }))
        }
        SessionError::Journal(e) => error(code::JOURNAL_FAILURE, format!("The session could not be saved: {e}")),
        SessionError::InvalidInput(why) => invalid_params(why),
        SessionError::Home(e) => error(code::JOURNAL_FAILURE, format!("The session could not be saved: {e}")),
        e @ SessionError::ImageStore(_) => error(code::JOURNAL_FAILURE, e.to_string()),
        other @ (SessionError::NotFound { .. } | SessionError::Usage(_)) => internal(other.to_string()),
    }
}

fn agent_error(e: AgentError) -> Error {
    use wire::error_code as code;
    match e {
        AgentError::Session(e) => session_error(e),
        AgentError::NoPendingApproval { turn_id, call_id } => {
            let message =
                AgentError::NoPendingApproval { turn_id: turn_id.clone(), call_id: call_id.clone() }.to_string();
            error_with(code::NO_PENDING_APPROVAL, message, json!({ "turnId": turn_id, "callId": call_id }))
        }
        e @ AgentError::BadHunks(_) => invalid_params(e.to_string()),
        AgentError::UnknownTurn(turn_id) => {
            let message = AgentError::UnknownTurn(turn_id.clone()).to_string();
            error_with(code::UNKNOWN_TURN, message, json!({ "turnId": turn_id }))
        }
        AgentError::Closed => internal(AgentError::Closed.to_string()),
        AgentError::Switching => error(code::TURN_IN_PROGRESS, AgentError::Switching.to_string()),
        AgentError::Compacting => error(code::TURN_IN_PROGRESS, AgentError::Compacting.to_string()),
        AgentError::Policy(e @ (PolicyError::Sandbox(_) | PolicyError::UnknownRule(_))) => {
            invalid_params(e.to_string())
        }
        AgentError::RewindPlan(mino_core::rewind::PlanError::UnknownTurn(turn_id)) => {
            let message = mino_core::rewind::PlanError::UnknownTurn(turn_id.clone()).to_string();
            error_with(code::UNKNOWN_TURN, message, json!({ "turnId": turn_id }))
        }
        AgentError::RewindPlan(e) => invalid_params(e.to_string()),
        AgentError::StalePlan => error(code::REWIND_PLAN_CHANGED, AgentError::StalePlan.to_string()),
        AgentError::Policy(e @ PolicyError::File(_)) => {
            tracing::warn!(error = %e, "the workspace rules file could not be changed");
            error(wire::error_code::JOURNAL_FAILURE, e.to_string())
        }
    }
}

// ---------------------------------------------------------------- approval rules and settings

fn sandbox_mode(mode: SandboxMode) -> wire::SandboxMode {
    match mode {
        SandboxMode::Off => wire::SandboxMode::Off,
        SandboxMode::ReadOnly => wire::SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite => wire::SandboxMode::WorkspaceWrite,
    }
}

fn core_sandbox_mode(mode: wire::SandboxMode) -> SandboxMode {
    match mode {
        wire::SandboxMode::Off => SandboxMode::Off,
        wire::SandboxMode::ReadOnly => SandboxMode::ReadOnly,
        wire::SandboxMode::WorkspaceWrite => SandboxMode::WorkspaceWrite,
    }
}

fn instruction_files(project: &mino_core::project_instructions::ProjectInstructions) -> Vec<wire::InstructionFile> {
    project.files.iter().map(instruction_file).collect()
}

fn instruction_file(f: &mino_core::project_instructions::InstructionFile) -> wire::InstructionFile {
    wire::InstructionFile {
        path: f.path.clone(),
        size: f.size,
        truncated: f.truncated,
        given: f.given,
        sha256: f.sha256.clone(),
    }
}

fn approval_mode(mode: ApprovalMode) -> wire::ApprovalMode {
    match mode {
        ApprovalMode::Ask => wire::ApprovalMode::Ask,
        ApprovalMode::Rules => wire::ApprovalMode::Rules,
        ApprovalMode::SandboxedAuto => wire::ApprovalMode::SandboxedAuto,
        ApprovalMode::Plan => wire::ApprovalMode::Plan,
    }
}

fn core_approval_mode(mode: wire::ApprovalMode) -> ApprovalMode {
    match mode {
        wire::ApprovalMode::Ask => ApprovalMode::Ask,
        wire::ApprovalMode::Rules => ApprovalMode::Rules,
        wire::ApprovalMode::SandboxedAuto => ApprovalMode::SandboxedAuto,
        wire::ApprovalMode::Plan => ApprovalMode::Plan,
    }
}

fn rule_kind(kind: RuleKind) -> wire::RuleKind {
    match kind {
        RuleKind::Exact => wire::RuleKind::Exact,
        RuleKind::Prefix => wire::RuleKind::Prefix,
        RuleKind::Path => wire::RuleKind::Path,
        RuleKind::Mcp => wire::RuleKind::Mcp,
    }
}

fn rule_view(rule: &Rule) -> wire::RuleView {
    let text = Some(rule.command().to_owned());
    let (command, pattern, tool) = match rule.kind() {
        RuleKind::Path => (None, text, None),
        RuleKind::Mcp => (None, None, text),
        _ => (text, None, None),
    };
    wire::RuleView {
        id: rule.id().to_owned(),
        kind: rule_kind(rule.kind()),
        command,
        pattern,
        tool,
        scope: match rule.scope() {
            RuleScope::Session => wire::RuleScope::Session,
            RuleScope::Workspace => wire::RuleScope::Workspace,
        },
        effect: (rule.effect() == RuleEffect::Deny).then_some(wire::RuleEffect::Deny),
    }
}

fn approved_by(approver: &Approver) -> wire::ApprovedBy {
    match approver {
        Approver::User => wire::ApprovedBy { kind: wire::ApproverKind::User, rule: None },
        Approver::Sandbox => wire::ApprovedBy { kind: wire::ApproverKind::Sandbox, rule: None },
        Approver::Workspace => wire::ApprovedBy { kind: wire::ApproverKind::Workspace, rule: None },
        Approver::Rule(rule) => wire::ApprovedBy { kind: wire::ApproverKind::Rule, rule: Some(rule_view(rule)) },
    }
}

/// A session method's error. A session that cannot be opened, held
/// elsewhere, missing or current (for delete) is `-32015` with what to do.
fn store_error(e: StoreError) -> Error {
    use wire::error_code as code;
    match e {
        StoreError::Session(e @ (SessionError::TurnInProgress(_) | SessionError::InvalidInput(_))) => session_error(e),
        StoreError::Session(e @ SessionError::NotFound { .. }) => {
            session_unavailable(format!("{e}; mino/sessions/list (scope \"all\") shows the sessions that exist"))
        }
        StoreError::Session(e @ SessionError::Journal(mino_core::journal::JournalError::Locked { .. })) => {
            session_unavailable(format!("{e}; or open another session"))
        }
        StoreError::Session(e) => session_unavailable(format!("The session could not be opened: {e}")),
        e @ (StoreError::HeldElsewhere { .. } | StoreError::Current { .. }) => session_unavailable(e.to_string()),
        StoreError::InvalidInput(why) => invalid_params(why),
        e @ StoreError::Io { .. } => error(code::JOURNAL_FAILURE, e.to_string()),
    }
}

/// The longest denial reason accepted: it goes into the model's input.
const MAX_DENIAL_REASON: usize = 4096;

/// The agent's decision for `params`; a rule the matcher refuses, a reason
/// on anything but a denial, or a missing rule is `-32602` (and the call
/// stays pending).
fn decision(params: &wire::ApprovalParams) -> Result<Decision> {
    if params.reason.is_some() && params.decision != wire::Decision::Deny {
        return Err(invalid_params("`reason` goes only with decision \"deny\""));
    }
    if let Some(hunks) = &params.accepted_hunks {
        if params.decision != wire::Decision::Approve {
            return Err(invalid_params(
                "`acceptedHunks` goes only with decision \"approve\"; nothing was decided and the call still waits",
            ));
        }
        return Ok(Decision::ApproveHunks(hunks.iter().map(|&i| i as usize).collect()));
    }
    let (scope, effect) = match params.decision {
        wire::Decision::Approve => return Ok(Decision::Approve),
        wire::Decision::Deny => {
            if params.reason.as_ref().is_some_and(|r| r.len() > MAX_DENIAL_REASON) {
                return Err(invalid_params(format!(
                    "the denial reason is longer than {MAX_DENIAL_REASON} bytes; shorten it"
                )));
            }
            return Ok(Decision::Deny { reason: params.reason.clone() });
        }
        wire::Decision::AllowSession => (RuleScope::Session, RuleEffect::Allow),
        wire::Decision::AllowWorkspace => (RuleScope::Workspace, RuleEffect::Allow),
        wire::Decision::DenySession => (RuleScope::Session, RuleEffect::Deny),
        wire::Decision::DenyWorkspace => (RuleScope::Workspace, RuleEffect::Deny),
    };
    let Some(spec) = &params.rule else {
        return Err(invalid_params(format!(
            "decision {:?} needs `rule`: {{\"kind\": \"exact\" | \"prefix\", \"command\": \"...\"}}, {{\"kind\": \"path\", \"pattern\": \"...\"}} or {{\"kind\": \"mcp\", \"tool\": \"server/tool\" | \"server/*\"}}",
            params.decision.as_str()
        )));
    };
    let (kind, text, field) = match spec.kind {
        wire::RuleKind::Exact => (RuleKind::Exact, &spec.command, "command"),
        wire::RuleKind::Prefix => (RuleKind::Prefix, &spec.command, "command"),
        wire::RuleKind::Path => (RuleKind::Path, &spec.pattern, "pattern"),
        wire::RuleKind::Mcp => (RuleKind::Mcp, &spec.tool, "tool"),
    };
    let Some(text) = text else {
        return Err(invalid_params(format!("a {:?} rule needs `{field}`", spec.kind.as_str())));
    };
    let rule = Rule::new(Rule::new_id(), kind, text, scope)
        .map_err(|e| invalid_params(format!("the rule was refused, nothing ran and the call still waits: {e}")))?
        .with_effect(effect);
    Ok(match effect {
        RuleEffect::Allow => Decision::Allow(rule),
        RuleEffect::Deny => Decision::DenyWithRule(rule),
    })
}

// ---------------------------------------------------------------- vocabulary

fn turn_status(s: mino_core::TurnStatus) -> wire::TurnStatus {
    use mino_core::TurnStatus as C;
    match s {
        C::Completed => wire::TurnStatus::Completed,
        C::Failed => wire::TurnStatus::Failed,
        C::Cancelled => wire::TurnStatus::Cancelled,
        C::Interrupted => wire::TurnStatus::Interrupted,
    }
}

fn tool_status(s: mino_core::ToolStatus) -> wire::ToolStatus {
    use mino_core::ToolStatus as C;
    match s {
        C::Success => wire::ToolStatus::Success,
        C::Failed => wire::ToolStatus::Failed,
        C::Refused => wire::ToolStatus::Refused,
        C::TimedOut => wire::ToolStatus::TimedOut,
        C::Cancelled => wire::ToolStatus::Cancelled,
        C::NotExecuted => wire::ToolStatus::NotExecuted,
        C::Unknown => wire::ToolStatus::Unknown,
        C::Applied => wire::ToolStatus::Applied,
        C::NotApplied => wire::ToolStatus::NotApplied,
        C::Unavailable => wire::ToolStatus::Unavailable,
    }
}

fn edit_tool_name(tool: mino_core::edit::EditTool) -> wire::EditToolName {
    match tool {
        mino_core::edit::EditTool::EditFile => wire::EditToolName::EditFile,
        mino_core::edit::EditTool::WriteFile => wire::EditToolName::WriteFile,
    }
}

fn call_tool(tool: CallTool) -> wire::ToolName {
    match tool {
        CallTool::Edit(tool) => edit_tool_name(tool).into(),
        CallTool::Read(ReadTool::ReadFile) => wire::ToolName::ReadFile,
        CallTool::Read(ReadTool::ListFiles) => wire::ToolName::ListFiles,
        CallTool::Read(ReadTool::Search) => wire::ToolName::Search,
    }
}

fn read_view(r: ReadInfo) -> wire::ReadView {
    wire::ReadView {
        tool: match r.tool {
            ReadTool::ReadFile => wire::ReadToolName::ReadFile,
            ReadTool::ListFiles => wire::ReadToolName::ListFiles,
            ReadTool::Search => wire::ReadToolName::Search,
        },
        path: r.path,
        pattern: r.pattern,
        start_line: r.start_line,
        end_line: r.end_line,
        leaves_workspace: r.leaves_workspace,
        summary: r.summary,
        truncated: r.truncated,
    }
}

fn edit_view(e: mino_core::agent::EditApproval) -> wire::EditView {
    wire::EditView {
        tool: edit_tool_name(e.tool),
        path: e.path,
        new_file: e.new_file,
        size: e.size,
        diff: e.diff,
        leaves_workspace: e.leaves_workspace,
        protected: e.protected,
    }
}

fn limits(l: bash::Limits) -> wire::Limits {
    wire::Limits { timeout_seconds: l.timeout.as_secs(), output_limit_bytes: l.output_limit as u64 }
}

fn evidence(e: &mino_core::supervisor::Evidence) -> wire::Evidence {
    use mino_core::supervisor::EvidenceOutcome as C;
    wire::Evidence {
        outcome: match e.outcome {
            C::Exited => wire::EvidenceOutcome::Exited,
            C::Signalled => wire::EvidenceOutcome::Signalled,
            C::StoppedWhenMinoStopped => wire::EvidenceOutcome::StoppedWhenMinoStopped,
            C::TimedOut => wire::EvidenceOutcome::TimedOut,
        },
        exit_code: e.exit_code,
        pid: e.pid,
        started_at: e.started_at.clone(),
        ended_at: e.ended_at.clone(),
        output_tail: e.output_tail.clone(),
        summary: e.summary(),
    }
}

fn recovered_turn(t: &RecoveredTurn) -> wire::RecoveredTurnView {
    wire::RecoveredTurnView {
        turn_id: t.turn_id.clone(),
        status: turn_status(t.status),
        calls: t
            .calls
            .iter()
            .map(|c| wire::RecoveredCallView {
                call_id: c.call_id.clone(),
                command: c.command.clone(),
                tool: c
                    .edit_tool
                    .map(edit_tool_name)
                    .map(Into::into)
                    .or(c.read.as_ref().map(|r| call_tool(CallTool::Read(r.tool)))),
                read: c.read.clone().map(read_view),
                result: wire::ToolResultView {
                    status: tool_status(c.status),
                    output: c.output.clone(),
                    exit_code: c.exit_code,
                    diff: c.diff.clone(),
                },
                evidence: c.evidence.as_ref().map(evidence),
                approved_by: c.approver.as_ref().map(approved_by),
                sandbox: c.sandbox.map(sandbox_mode),
            })
            .collect(),
    }
}

fn recovery_notification(session_id: &str, report: &RecoveryReport) -> wire::RecoveryNotification {
    wire::RecoveryNotification {
        session_id: session_id.to_string(),
        turns: report.turns().into_iter().map(recovered_turn).collect(),
        acknowledgement_required: report.acknowledgement_required(),
        unacknowledged_turn_ids: report.unacknowledged.iter().map(|t| t.turn_id.clone()).collect(),
        repairs: report.repairs(),
        rewind: report.rewind.as_ref().map(|r| wire::RecoveredRewind {
            turn_id: r.turn_id.clone(),
            files: r.outcomes.iter().map(rewind_file_outcome).collect(),
            conflicts: r.plan.conflicts.iter().map(rewind_conflict).collect(),
            commands: r.plan.commands.iter().map(rewind_command).collect(),
        }),
    }
}

fn rewind_file_outcome(o: &mino_core::rewind::FileOutcome) -> wire::RewindFileOutcome {
    use mino_core::rewind::Outcome;
    wire::RewindFileOutcome {
        path: o.path.clone(),
        outcome: match o.outcome {
            Outcome::Restored => wire::RewindOutcome::Restored,
            Outcome::Removed => wire::RewindOutcome::Removed,
            Outcome::NotRestored => wire::RewindOutcome::NotRestored,
            Outcome::Conflict => wire::RewindOutcome::Conflict,
            Outcome::Changed => wire::RewindOutcome::Changed,
        },
        why: o.why.clone(),
    }
}

fn rewind_conflict(c: &mino_core::rewind::Conflict) -> wire::RewindConflict {
    wire::RewindConflict { path: c.path.clone(), why: c.why.clone() }
}

fn rewind_command(c: &mino_core::rewind::PlannedCommand) -> wire::RewindCommand {
    wire::RewindCommand { turn_id: c.turn_id.clone(), call_id: c.call_id.clone(), command: c.command.clone() }
}

/// The core's token counts on the wire.
fn token_usage(u: mino_core::usage::Usage) -> wire::TokenUsage {
    wire::TokenUsage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        total_tokens: u.total_tokens,
        cached_input_tokens: u.cached_input_tokens,
        reasoning_tokens: u.reasoning_tokens,
    }
}

fn history_call(session: &Session, turn: &Turn, index: usize, c: &Call) -> wire::HistoryCall {
    wire::HistoryCall {
        call_id: c.call_id.clone(),
        command: c.command(),
        tool: CallTool::of_name(&c.name).map(call_tool),
        read: ReadInfo::of_call(c).map(read_view),
        result: c.result.as_ref().map(|r| wire::ToolResultView {
            status: tool_status(r.status),
            output: r.output.clone(),
            exit_code: r.exit_code,
            diff: c.applied_diff(),
        }),
        evidence: session.evidence(turn, index).as_ref().map(evidence),
        approved_by: c.approver().as_ref().map(approved_by),
        sandbox: c.sandbox.map(sandbox_mode),
        directory: c.directory.clone(),
        environment: c.environment.clone(),
        limits: c
            .limits
            .map(|l| wire::Limits { timeout_seconds: l.timeout_seconds, output_limit_bytes: l.output_limit_bytes }),
        edit: c.edit.as_ref().map(|e| wire::EditView {
            tool: edit_tool_name(e.tool),
            // As the approval showed it: relative to the session's
            // directory when inside it.
            path: c
                .directory
                .as_deref()
                .filter(|_| !e.leaves_workspace)
                .and_then(|dir| std::path::Path::new(&e.path).strip_prefix(dir).ok())
                .map_or_else(|| e.path.clone(), |p| p.display().to_string()),
            new_file: e.new_file,
            size: e.after_size,
            diff: c.applied_diff().unwrap_or_default(),
            leaves_workspace: e.leaves_workspace,
            // Said on the approval request only; history keeps what was written.
            protected: None,
        }),
    }
}

// The wire states the image bounds the core enforces: one fact, checked here.
const _: () = assert!(
    wire::MAX_IMAGES == mino_core::images::MAX_IMAGES
        && wire::MAX_IMAGE_BYTES == mino_core::images::MAX_IMAGE_BYTES
        && wire::MAX_QUESTION_IMAGE_BYTES == mino_core::images::MAX_QUESTION_IMAGE_BYTES
);

/// A question's images as `mino/chat` carried them: each decoded (`data`)
/// or read from its file (`path`, relative to the session's directory).
fn chat_images(
    images: Vec<wire::ChatImage>,
    cwd: &std::path::Path,
) -> std::result::Result<Vec<mino_core::images::ImageInput>, String> {
    use mino_core::images::{self, ImageInput};
    if images.len() > images::MAX_IMAGES {
        return Err(images::ImageError::TooMany { count: images.len() }.to_string());
    }
    images
        .into_iter()
        .enumerate()
        .map(|(index, image)| match (image.data, image.path) {
            (Some(data), None) => {
                let bytes = images::decode_base64(index, &image.name, &data).map_err(|e| e.to_string())?;
                Ok(ImageInput { bytes, name: image.name, declared_mime: image.mime_type })
            }
            (None, Some(path)) => {
                let read = images::read_path(index, &cwd.join(path)).map_err(|e| e.to_string())?;
                Ok(ImageInput { name: image.name.or(read.name), declared_mime: image.mime_type, ..read })
            }
            _ => Err(format!("image {} must have exactly one of `data` (base64) and `path`", index + 1)),
        })
        .collect()
}

/// A question's images for history, each said unavailable when its kept
/// file is missing or of another size (replay checks the hash too).
fn history_images(session: &Session, turn: &Turn) -> Vec<wire::HistoryImage> {
    let dir = session.transcript().images_dir.as_deref();
    turn.images
        .iter()
        .map(|image| {
            let unavailable = match dir {
                None => Some("the session keeps no images".to_string()),
                Some(dir) => {
                    let path = mino_core::images::path_in(dir, image);
                    match std::fs::metadata(&path) {
                        Ok(meta) if meta.is_file() && meta.len() == image.size => None,
                        Ok(_) => Some(format!("{} does not hold the bytes the session recorded", path.display())),
                        Err(_) => Some(format!("{} is missing", path.display())),
                    }
                }
            };
            wire::HistoryImage {
                sha256: image.sha256.clone(),
                mime_type: image.mime_type.clone(),
                size: image.size,
                name: image.name.clone(),
                unavailable,
            }
        })
        .collect()
}

fn history_turn(session: &Session, turn: &Turn) -> wire::HistoryTurn {
    let status = turn.end.as_ref().map(|e| e.status);
    // The same notice the model receives after this turn's results.
    let notices: Vec<String> = turn.notice().into_iter().collect();
    let calls: Vec<wire::HistoryCall> =
        turn.calls.iter().enumerate().map(|(index, c)| history_call(session, turn, index, c)).collect();
    let items = turn
        .items()
        .into_iter()
        .filter_map(|item| match item {
            TurnItem::Text(text) => Some(wire::HistoryItem::Text { text }),
            TurnItem::Call(index) => calls.get(index).map(|call| wire::HistoryItem::Call { call: call.clone() }),
            TurnItem::Notice(text) => Some(wire::HistoryItem::Notice { text }),
        })
        .collect();
    wire::HistoryTurn {
        turn_id: turn.id.clone(),
        input: turn.input.clone(),
        images: history_images(session, turn),
        text: turn.text(),
        calls,
        status: status.map(turn_status),
        reason: turn.end.as_ref().and_then(|e| e.reason.clone()),
        notices,
        rewound: turn.rewound,
        usage: turn.usage.map(token_usage),
        items,
    }
}

/// One notification as a JSON-RPC message.
fn message<N: wire::notification::Notification>(params: N::Params) -> String {
    #[derive(serde::Serialize)]
    struct Message<'a, P> {
        jsonrpc: &'static str,
        method: &'a str,
        params: P,
    }
    serde_json::to_string(&Message { jsonrpc: "2.0", method: N::METHOD, params }).unwrap_or_else(|e| {
        // The wire types are plain data; this cannot fail in practice.
        tracing::error!("cannot serialize a notification: {e}");
        String::new()
    })
}

fn compaction_trigger(trigger: mino_core::compaction::Trigger) -> wire::CompactionTrigger {
    use mino_core::compaction::Trigger;
    match trigger {
        Trigger::Manual => wire::CompactionTrigger::Manual,
        Trigger::Auto => wire::CompactionTrigger::Auto,
        Trigger::ContextLengthExceeded => wire::CompactionTrigger::ContextLengthExceeded,
    }
}

fn compact_result(outcome: mino_core::agent::CompactionOutcome) -> wire::CompactResult {
    wire::CompactResult {
        compacted: outcome.compacted,
        summarized_turns: outcome.summarized_turns as u64,
        kept_turns: outcome.kept_turns as u64,
        through_turn_id: outcome.through_turn_id,
        reason: outcome.reason,
    }
}

/// One agent event as its notification; `None` for the events `mino/*`
/// does not notify (a response's usage: `mino/turnEnded` carries the
/// turn's; a settings change: `mino/settings/update` answers with it).
fn notification(Numbered { seq, session_id, event }: Numbered) -> Option<String> {
    Some(match event {
        AgentEvent::TurnStarted { turn_id, input } => {
            message::<wire::notification::TurnStarted>(wire::TurnStarted { turn_id, seq, session_id, input })
        }
        AgentEvent::TextDelta { turn_id, delta } => {
            message::<wire::notification::TextDelta>(wire::TextDelta { turn_id, seq, session_id, delta })
        }
        AgentEvent::Retrying { turn_id, attempt, delay_ms, reason } => {
            let n = wire::Retrying { turn_id, seq, session_id, attempt, delay_ms, reason };
            message::<wire::notification::Retrying>(n)
        }
        AgentEvent::ApprovalRequest {
            turn_id,
            call_id,
            command,
            directory,
            environment,
            limits: l,
            sandbox,
            approval_mode: mode,
            suggested_rule,
            edit,
            deny_rules,
            read,
            mcp,
        } => {
            let edit = edit.map(edit_view);
            let n = wire::ApprovalRequest {
                turn_id,
                seq,
                session_id,
                call_id,
                command,
                directory,
                environment,
                limits: limits(l),
                edit,
                read: read.map(read_view),
                sandbox: sandbox_mode(sandbox),
                approval_mode: approval_mode(mode),
                suggested_rule: suggested_rule.map(|rule| match rule.kind {
                    RuleKind::Path => wire::RuleSpec::path(rule.text),
                    RuleKind::Mcp => wire::RuleSpec::mcp(rule.text),
                    kind => wire::RuleSpec::command(rule_kind(kind), rule.text),
                }),
                deny_rules: deny_rules.iter().map(rule_view).collect(),
                mcp: mcp.map(mcp_view),
            };
            message::<wire::notification::ApprovalRequest>(n)
        }
        AgentEvent::ToolStarted { turn_id, call_id, command, approver, sandbox, tool, read } => {
            let n = wire::ToolStarted {
                turn_id,
                seq,
                session_id,
                call_id,
                command,
                approved_by: approved_by(&approver),
                sandbox: sandbox_mode(sandbox),
                tool: tool.map(call_tool),
                read: read.map(read_view),
            };
            message::<wire::notification::ToolStarted>(n)
        }
        AgentEvent::ToolOutput { turn_id, call_id, stream, chunk } => {
            let stream = match stream {
                bash::Stream::Stdout => wire::OutputStream::Stdout,
                bash::Stream::Stderr => wire::OutputStream::Stderr,
            };
            let n = wire::ToolOutput { turn_id, seq, session_id, call_id, stream, chunk };
            message::<wire::notification::ToolOutput>(n)
        }
        AgentEvent::ToolResult { turn_id, call_id, command, status, output, exit_code, diff, tool, read } => {
            let status = tool_status(status);
            let n = wire::ToolResult {
                turn_id,
                seq,
                session_id,
                call_id,
                command,
                status,
                output,
                exit_code,
                diff,
                tool: tool.map(call_tool),
                read: read.map(read_view),
            };
            message::<wire::notification::ToolResult>(n)
        }
        AgentEvent::TurnEnded { turn_id, status, reason, text, usage, session_usage } => {
            let (usage, session_usage) = (usage.map(token_usage), session_usage.map(token_usage));
            let status = turn_status(status);
            let n = wire::TurnEnded { turn_id, seq, session_id, status, reason, text, usage, session_usage };
            message::<wire::notification::TurnEnded>(n)
        }
        AgentEvent::CompactionStarted { trigger, turn_id } => {
            let n = wire::CompactionStarted { seq, session_id, trigger: compaction_trigger(trigger), turn_id };
            message::<wire::notification::CompactionStarted>(n)
        }
        AgentEvent::CompactionEnded { trigger, turn_id, outcome } => {
            let usage = outcome.usage.map(token_usage);
            let n = wire::CompactionEnded {
                seq,
                session_id,
                trigger: compaction_trigger(trigger),
                turn_id,
                result: compact_result(outcome),
                usage,
            };
            message::<wire::notification::CompactionEnded>(n)
        }
        AgentEvent::InstructionsChanged { files } => {
            let files = files.iter().map(instruction_file).collect();
            message::<wire::notification::InstructionsChanged>(wire::InstructionsChanged { session_id, files })
        }
        // A switched-to session announces itself as a started one does.
        AgentEvent::SessionOpened { recovery } => {
            message::<wire::notification::Recovery>(recovery_notification(&session_id, &recovery))
        }
        AgentEvent::McpStatus { status } => message::<wire::notification::McpStatus>(wire::McpStatusNotification {
            session_id,
            status: mcp_status(status),
        }),
        // No `mino/*` client offers its own terminals.
        AgentEvent::ResponseUsage { .. } | AgentEvent::SettingsChanged { .. } | AgentEvent::ToolTerminal { .. } => {
            return None
        }
    })
}

/// An MCP server's state on the wire.
fn mcp_status(status: mino_core::mcp::McpStatus) -> wire::McpServerStatus {
    use mino_core::mcp::McpState;
    let (state, tools, reason) = match status.state {
        McpState::Starting => (wire::McpState::Starting, None, None),
        McpState::Ready { tools } => (wire::McpState::Ready, Some(tools), None),
        McpState::Failed { reason } => (wire::McpState::Failed, None, Some(reason)),
        McpState::Exited { reason } => (wire::McpState::Exited, None, Some(reason)),
    };
    wire::McpServerStatus { server: status.server, state, tools, reason }
}

/// An MCP call's approval view on the wire.
fn mcp_view(mcp: mino_core::mcp::McpApproval) -> wire::McpView {
    let annotations = mcp.annotations.map(|a| {
        let flag = |key: &str| a.get(key).and_then(serde_json::Value::as_bool);
        wire::McpAnnotations {
            title: a.get("title").and_then(serde_json::Value::as_str).map(str::to_string),
            read_only_hint: flag("readOnlyHint"),
            destructive_hint: flag("destructiveHint"),
            idempotent_hint: flag("idempotentHint"),
            open_world_hint: flag("openWorldHint"),
        }
    });
    wire::McpView { server: mcp.server, tool: mcp.tool, arguments: mcp.arguments, annotations }
}

/// `mino/sessions/list`'s page size when none is asked for, and the largest.
const DEFAULT_LIST_LIMIT: u64 = 50;
const MAX_LIST_LIMIT: u64 = 500;

fn session_info(info: mino_core::SessionInfo) -> wire::SessionInfo {
    wire::SessionInfo {
        session_id: info.session_id,
        journal_path: info.journal_path.display().to_string(),
        cwd: info.cwd,
        title: info.title,
    }
}

/// A listed session on the wire. Both structs are named field by field
/// (no `..`), so a field added to either one fails to compile here until it
/// is mapped (test: `a_listed_session_maps_field_by_field`).
fn session_entry(entry: mino_core::SessionEntry) -> wire::SessionEntry {
    let mino_core::SessionEntry {
        session_id,
        cwd,
        title,
        created_at,
        last_active_at,
        turns,
        held_elsewhere,
        acknowledgement_required,
        current,
        usage,
        // Not on the wire: a damaged session says what is wrong when it is
        // opened (docs/journal.md, "Listing").
        damage: _,
    } = entry;
    wire::SessionEntry {
        session_id,
        cwd,
        title,
        created_at,
        last_active_at,
        turns,
        held_elsewhere,
        acknowledgement_required,
        current,
        usage: usage.map(token_usage),
    }
}

fn session_unavailable(message: impl Into<String>) -> Error {
    error(wire::error_code::SESSION_UNAVAILABLE, message)
}

fn open_error(e: OpenError) -> Error {
    match e {
        e @ (OpenError::Workspace { .. } | OpenError::WorkspaceNotADirectory { .. }) => invalid_params(e.to_string()),
        e @ (OpenError::Home(_) | OpenError::Session(_)) => {
            tracing::warn!(error = %e, "the session could not be opened");
            session_unavailable(e.to_string())
        }
        e @ OpenError::Sandbox(_) => invalid_params(e.to_string()),
        e @ (OpenError::WorkingDirectory(_)
        | OpenError::Setting(_)
        | OpenError::Model(_)
        | OpenError::Instructions { .. }) => internal(e.to_string()),
    }
}

// ---------------------------------------------------------------- methods

impl Backend {
    fn agent(&self) -> Result<Agent> {
        self.start_streaming();
        lock(&self.shared.opened)
            .as_ref()
            .map(|o| o.agent.clone())
            .ok_or_else(|| internal("no session is open; initialize failed"))
    }

    fn store(&self) -> Result<Arc<Mutex<SessionStore>>> {
        lock(&self.shared.opened)
            .as_ref()
            .map(|o| o.store.clone())
            .ok_or_else(|| internal("no session is open; initialize failed"))
    }

    /// Runs `f` with the store locked on a blocking thread (it reads and
    /// writes files).
    async fn with_store<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut SessionStore) -> std::result::Result<R, StoreError> + Send + 'static,
    ) -> Result<R> {
        let store = self.store()?;
        match tokio::task::spawn_blocking(move || f(&mut lock(&store))).await {
            Ok(result) => result.map_err(store_error),
            Err(e) => Err(internal(format!("a session operation was abandoned: {e}"))),
        }
    }

    /// Makes another session current through `open` (the store's `open` or
    /// `new_session`); the agent then sends its `mino/recovery`.
    async fn switch(
        &self,
        open: impl FnOnce(
                &mut SessionStore,
                &mut Session,
            ) -> std::result::Result<(mino_core::SessionInfo, RecoveryReport), StoreError>
            + Send
            + 'static,
    ) -> Result<wire::SessionInfo> {
        let agent = self.agent()?;
        let store = self.store()?;
        let info = agent
            .switch(move |session| open(&mut lock(&store), session))
            .await
            .map_err(agent_error)?
            .map_err(store_error)?;
        tracing::info!(session_id = info.session_id, journal_path = %info.journal_path.display(), cwd = info.cwd, "session switched");
        Ok(session_info(info))
    }

    async fn sessions_list(&self, params: wire::SessionsListParams) -> Result<wire::SessionsListResult> {
        let limit = match params.limit {
            None => DEFAULT_LIST_LIMIT,
            Some(n @ 1..=MAX_LIST_LIMIT) => n,
            Some(n) => return Err(invalid_params(format!("limit must be 1 to {MAX_LIST_LIMIT}; it was {n}"))),
        };
        let scope = match params.scope.unwrap_or(wire::ListScope::Workspace) {
            wire::ListScope::Workspace => ListScope::Workspace,
            wire::ListScope::All => ListScope::All,
        };
        let page = self.with_store(move |store| store.list(scope, limit as usize, params.cursor.as_deref())).await?;
        Ok(wire::SessionsListResult {
            sessions: page.sessions.into_iter().map(session_entry).collect(),
            next_cursor: page.next_cursor,
        })
    }

    async fn sessions_new(&self, params: wire::SessionsNewParams) -> Result<wire::SessionInfo> {
        self.switch(move |store, session| {
            // Relative to the workspace, as the client sees it.
            let cwd = params.cwd.map(|dir| store.workspace().join(dir));
            store.new_session(session, cwd.as_deref())
        })
        .await
    }

    async fn sessions_open(&self, params: wire::SessionsOpenParams) -> Result<wire::SessionInfo> {
        self.switch(move |store, session| store.open(session, &params.session_id)).await
    }

    async fn sessions_rename(&self, params: wire::SessionsRenameParams) -> Result<wire::EmptyResult> {
        self.with_store(move |store| store.rename(&params.session_id, &params.title)).await?;
        Ok(wire::EmptyResult {})
    }

    async fn sessions_delete(&self, params: wire::SessionsDeleteParams) -> Result<wire::SessionsDeleteResult> {
        let trashed = self.with_store(move |store| store.delete(&params.session_id)).await?;
        Ok(wire::SessionsDeleteResult { trashed_to: trashed.display().to_string() })
    }

    /// Hands `mino/recovery` and the agent's events to [`Notifications`].
    /// Runs once: on `initialized`, or on the first Mino request if a client
    /// skips it.
    fn start_streaming(&self) {
        let Some(stream) = lock(&self.shared.opened).as_mut().and_then(|o| o.stream.take()) else {
            return;
        };
        if let Some(start) = lock(&self.shared.start).take() {
            // Unheard when the transport dropped its stream (the fuzzer).
            let _ = start.send(stream);
        }
    }

    async fn chat(&self, params: wire::ChatParams) -> Result<wire::ChatResult> {
        let agent = self.agent()?;
        let turn_id = if params.images.is_empty() {
            agent.chat(&params.text).await
        } else {
            let cwd = PathBuf::from(agent.with_session(|s| s.cwd().to_string()));
            let images = tokio::task::spawn_blocking(move || chat_images(params.images, &cwd))
                .await
                .map_err(|e| internal(format!("reading the question's images failed: {e}")))?
                .map_err(|e| invalid_params(e.to_string()))?;
            agent.chat_with_images(&params.text, images).await
        }
        .map_err(agent_error)?;
        Ok(wire::ChatResult { turn_id })
    }

    /// The bytes of an image a question of the current session carried.
    async fn image(&self, params: wire::ImageParams) -> Result<wire::ImageResult> {
        let agent = self.agent()?;
        let found = agent.with_session(|s| {
            let image = s.transcript().turns.iter().flat_map(|t| &t.images).find(|i| i.sha256 == params.sha256)?;
            Some((image.clone(), s.transcript().images_dir.clone()?))
        });
        let Some((image, dir)) = found else {
            return Err(invalid_params(format!(
                "sha256 {:?} names no image of this session; use a sha256 from mino/history",
                params.sha256
            )));
        };
        let bytes = tokio::task::spawn_blocking(move || {
            mino_core::images::read_checked(&mino_core::images::path_in(&dir, &image), &image)
                .map(|bytes| (image.mime_type, bytes))
        })
        .await
        .map_err(|e| internal(format!("reading the image failed: {e}")))?;
        match bytes {
            Ok((mime_type, bytes)) => Ok(wire::ImageResult { mime_type, data: mino_core::images::base64(&bytes) }),
            Err(why) => Err(error(wire::error_code::JOURNAL_FAILURE, format!("The image cannot be read: {why}"))),
        }
    }

    async fn approval(&self, params: wire::ApprovalParams) -> Result<wire::EmptyResult> {
        let agent = self.agent()?;
        let decision = decision(&params)?;
        agent.decide(&params.turn_id, &params.call_id, decision).map_err(agent_error)?;
        Ok(wire::EmptyResult {})
    }

    async fn rules_list(&self, _: wire::RulesListParams) -> Result<wire::RulesListResult> {
        let rules = self.agent()?.rules();
        Ok(wire::RulesListResult {
            rules: rules.rules.iter().map(rule_view).collect(),
            workspace_file: rules.workspace_file.map(|p| p.display().to_string()).unwrap_or_default(),
            workspace_file_error: rules.workspace_file_error,
        })
    }

    async fn rules_revoke(&self, params: wire::RulesRevokeParams) -> Result<wire::EmptyResult> {
        self.agent()?.revoke_rule(&params.id).await.map_err(agent_error)?;
        Ok(wire::EmptyResult {})
    }

    async fn settings_update(&self, params: wire::SettingsUpdateParams) -> Result<wire::SettingsResult> {
        let agent = self.agent()?;
        let settings = agent
            .update_settings(params.approval_mode.map(core_approval_mode), params.sandbox.map(core_sandbox_mode))
            .map_err(|e| agent_error(e.into()))?;
        let (_, support) = agent.settings();
        Ok(wire::SettingsResult {
            approval_mode: approval_mode(settings.approval_mode),
            sandbox: sandbox_mode(settings.sandbox),
            sandbox_support: support,
        })
    }

    /// Waits for the summary to be saved (or for the reason it was not).
    async fn compact(&self, _: wire::CompactParams) -> Result<wire::CompactResult> {
        let outcome = self.agent()?.compact().await.map_err(agent_error)?;
        Ok(compact_result(outcome))
    }

    async fn models_list(&self, _: wire::ModelsListParams) -> Result<wire::ModelsListResult> {
        let agent = self.agent()?;
        let configured = lock(&self.shared.opened).as_ref().map(|o| o.configured_models.clone()).unwrap_or_default();
        let list = agent.models(&configured).await;
        Ok(wire::ModelsListResult {
            models: list
                .models
                .into_iter()
                .map(|m| wire::ModelEntry { id: m.id, context_window: m.context_window })
                .collect(),
            current: list.current,
            source: match list.source {
                ModelSource::Service => wire::ModelSource::Service,
                ModelSource::Config => wire::ModelSource::Config,
            },
        })
    }

    async fn mcp_list(&self, _: wire::McpListParams) -> Result<wire::McpListResult> {
        let agent = self.agent()?;
        Ok(wire::McpListResult { servers: agent.mcp().statuses().into_iter().map(mcp_status).collect() })
    }

    async fn mcp_restart(&self, params: wire::McpRestartParams) -> Result<wire::McpServerStatus> {
        let agent = self.agent()?;
        let mcp = agent.mcp().clone();
        mcp.restart(&params.server).await.map_err(invalid_params)?;
        let status = mcp.statuses().into_iter().find(|s| s.server == params.server);
        status.map(mcp_status).ok_or_else(|| invalid_params(format!("no MCP server `{}`", params.server)))
    }

    async fn rewind_plan(&self, params: wire::RewindPlanParams) -> Result<wire::RewindPlanResult> {
        let (plan, digest) = self.agent()?.rewind_plan(&params.turn_id).await.map_err(agent_error)?;
        Ok(wire::RewindPlanResult {
            turn_id: params.turn_id,
            turns: plan.turns.clone(),
            files: plan
                .files
                .iter()
                .map(|f| wire::RewindFile {
                    path: f.path.clone(),
                    action: match f.action {
                        mino_core::rewind::FileAction::Restore => wire::RewindAction::Restore,
                        mino_core::rewind::FileAction::Remove => wire::RewindAction::Remove,
                    },
                })
                .collect(),
            conflicts: plan.conflicts.iter().map(rewind_conflict).collect(),
            commands: plan.commands.iter().map(rewind_command).collect(),
            digest,
        })
    }

    async fn rewind(&self, params: wire::RewindParams) -> Result<wire::RewindResult> {
        let done = self.agent()?.rewind(&params.turn_id, &params.digest).await.map_err(agent_error)?;
        Ok(wire::RewindResult {
            turn_id: done.turn_id,
            turns: done.plan.turns.clone(),
            files: done.outcomes.iter().map(rewind_file_outcome).collect(),
            conflicts: done.plan.conflicts.iter().map(rewind_conflict).collect(),
            commands: done.plan.commands.iter().map(rewind_command).collect(),
        })
    }

    async fn models_select(&self, params: wire::ModelsSelectParams) -> Result<wire::ModelsSelectResult> {
        let model = self.agent()?.select_model(&params.model).await.map_err(agent_error)?;
        Ok(wire::ModelsSelectResult { model })
    }

    async fn acknowledge(&self, params: wire::AcknowledgeParams) -> Result<wire::AcknowledgeResult> {
        let acknowledged = self.agent()?.acknowledge(params.turn_ids).await.map_err(agent_error)?;
        Ok(wire::AcknowledgeResult { acknowledged })
    }

    async fn cancel(&self, params: wire::CancelParams) -> Result<wire::EmptyResult> {
        self.agent()?.cancel(&params.turn_id).map_err(agent_error)?;
        Ok(wire::EmptyResult {})
    }

    /// The session's turns, or a page of them (see `wire::HistoryParams`):
    /// a client need never hold a whole long session at once.
    async fn history(&self, params: wire::HistoryParams) -> Result<wire::HistoryResult> {
        let agent = self.agent()?;
        let instruction_files = instruction_files(&agent.project_instructions());
        agent.with_session(|s| {
            let turns = &s.transcript().turns;
            let end = match params.before_turn_id.as_deref() {
                None => turns.len(),
                Some(id) => turns.iter().position(|t| t.id == id).ok_or_else(|| Error {
                    code: ErrorCode::InvalidParams,
                    message: format!(
                        "beforeTurnId {id:?} names no turn of this session; use a turnId from an earlier mino/history result"
                    )
                    .into(),
                    data: Some(json!({ "beforeTurnId": id })),
                })?,
            };
            let start = match params.limit {
                None => 0,
                Some(limit) => end.saturating_sub(usize::try_from(limit).unwrap_or(usize::MAX)),
            };
            Ok(wire::HistoryResult {
                session_id: s.id().to_string(),
                turns: turns[start..end].iter().map(|t| history_turn(s, t)).collect(),
                has_more: start > 0,
                usage: s.transcript().usage.map(token_usage),
                instruction_files,
            })
        })
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let options: wire::InitializationOptions = match params.initialization_options {
            None | Some(Value::Null) => wire::InitializationOptions::default(),
            Some(value) => serde_json::from_value(value)
                .map_err(|e| invalid_params(format!("invalid initializationOptions: {e}")))?,
        };
        if lock(&self.shared.opened).is_some() {
            return Err(Error::invalid_request());
        }
        // Each command runs under this very binary in supervise mode.
        let supervisor = std::env::current_exe()
            .map_err(|e| internal(format!("cannot find the server's own executable to supervise commands: {e}")))?;
        let app = mino_core::open(OpenOptions {
            cwd: options.cwd.map(PathBuf::from),
            session: options.session,
            new_session: options.new_session,
            supervisor,
            limits: TurnLimits::default(),
            approval_mode: options.approval_mode.map(core_approval_mode),
            sandbox: options.sandbox.map(core_sandbox_mode),
        })
        .map_err(open_error)?;
        let (settings, sandbox_support) = app.settings();
        let instruction_files = instruction_files(&app.agent.project_instructions());
        let App {
            agent,
            events,
            recovery,
            session_id,
            journal_path,
            cwd,
            model: model_name,
            configured_models,
            title,
            store,
            home_in_workspace,
        } = app;
        let journal_path = journal_path.display().to_string();
        let recovery = recovery_notification(&session_id, &recovery);
        tracing::info!(session_id, journal_path, cwd = %cwd.display(), model = model_name, "session open");
        {
            let mut opened = lock(&self.shared.opened);
            if opened.is_some() {
                // A concurrent initialize won; this one's session is dropped (and unlocked).
                return Err(Error::invalid_request());
            }
            *opened = Some(Opened {
                agent,
                store: Arc::new(Mutex::new(store)),
                configured_models,
                stream: Some((recovery, events)),
            });
        }

        let mino = wire::ServerCapabilities {
            session_id,
            journal_path,
            cwd: cwd.display().to_string(),
            model: model_name,
            title,
            approval_mode: approval_mode(settings.approval_mode),
            sandbox: sandbox_mode(settings.sandbox),
            sandbox_support,
            home_in_workspace,
            instruction_files,
        };
        let mino = serde_json::to_value(mino).map_err(|e| internal(e.to_string()))?;
        Ok(InitializeResult {
            capabilities: ServerCapabilities { experimental: Some(json!({ "mino": mino })), ..Default::default() },
            server_info: Some(ServerInfo { name: SERVER_NAME.to_string(), version: Some(VERSION.to_string()) }),
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        self.start_streaming();
    }

    async fn shutdown(&self) -> Result<()> {
        Handle { shared: self.shared.clone() }.shutdown().await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of a listed session reaches the wire with its own value,
    /// and the wire has no field the core does not fill: both structs are
    /// destructured without `..`, so a field added to either one fails this
    /// test (it stops compiling) until it is mapped. Each flag is
    /// set in exactly one entry, so a swapped or constant field fails too.
    #[test]
    fn a_listed_session_maps_field_by_field() {
        let entries = [
            mino_core::SessionEntry {
                session_id: "s-1".into(),
                cwd: "/work/project".into(),
                title: Some("Fix the build".into()),
                created_at: "2026-12-01T01:00:00Z".into(),
                last_active_at: "2026-12-01T02:00:00Z".into(),
                turns: 7,
                held_elsewhere: true,
                acknowledgement_required: false,
                current: false,
                usage: Some(mino_core::usage::Usage {
                    input_tokens: 1200,
                    output_tokens: 34,
                    total_tokens: 1234,
                    cached_input_tokens: Some(1000),
                    reasoning_tokens: None,
                }),
                damage: Some("the last line is torn".into()),
            },
            mino_core::SessionEntry {
                session_id: "s-2".into(),
                cwd: "/work/other".into(),
                title: None,
                created_at: "2026-11-30T01:00:00Z".into(),
                last_active_at: "2026-11-30T02:00:00Z".into(),
                turns: 0,
                held_elsewhere: false,
                acknowledgement_required: true,
                current: false,
                usage: None,
                damage: None,
            },
            mino_core::SessionEntry {
                session_id: "s-3".into(),
                cwd: "/work/third".into(),
                title: Some("Tidy the docs".into()),
                created_at: "2026-11-29T01:00:00Z".into(),
                last_active_at: "2026-11-29T02:00:00Z".into(),
                turns: 3,
                held_elsewhere: false,
                acknowledgement_required: false,
                current: true,
                usage: None,
                damage: None,
            },
        ];
        for core in entries {
            let wire::SessionEntry {
                session_id,
                cwd,
                title,
                created_at,
                last_active_at,
                turns,
                held_elsewhere,
                acknowledgement_required,
                current,
                usage,
            } = session_entry(core.clone());
            let mino_core::SessionEntry {
                session_id: core_session_id,
                cwd: core_cwd,
                title: core_title,
                created_at: core_created_at,
                last_active_at: core_last_active_at,
                turns: core_turns,
                held_elsewhere: core_held_elsewhere,
                acknowledgement_required: core_acknowledgement_required,
                current: core_current,
                usage: core_usage,
                // Not on the wire (see `session_entry`).
                damage: _,
            } = core;
            assert_eq!(session_id, core_session_id);
            assert_eq!(cwd, core_cwd);
            assert_eq!(title, core_title);
            assert_eq!(created_at, core_created_at);
            assert_eq!(last_active_at, core_last_active_at);
            assert_eq!(turns, core_turns);
            assert_eq!(held_elsewhere, core_held_elsewhere);
            assert_eq!(acknowledgement_required, core_acknowledgement_required);
            assert_eq!(current, core_current);
            assert_eq!(usage, core_usage.map(token_usage));
        }
    }
}
