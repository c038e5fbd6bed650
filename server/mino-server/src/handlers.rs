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

use mino_core::agent::{AgentError, AgentEvent, Numbered, TurnLimits};
use mino_core::bash;
use mino_core::recovery::{RecoveredTurn, RecoveryReport};
use mino_core::transcript::Turn;
use mino_core::{agent::Agent, App, ApprovalDecision, OpenError, OpenOptions, Session, SessionError};
use mino_protocol as wire;
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedReceiver;
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
    /// Taken by the task that streams notifications, once.
    stream: Option<Stream>,
}

type Stream = (wire::RecoveryNotification, UnboundedReceiver<Numbered>);

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
    events: Option<UnboundedReceiver<Numbered>>,
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
        self.events.as_mut()?.recv().await.map(notification)
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
        self.events.as_mut()?.try_recv().ok().map(notification)
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
        .finish();
    (service, socket, handle)
}

/// Methods whose params are all optional: the transport gives them `{}`
/// when a request has no `params` member.
pub const OPTIONAL_PARAMS: [&str; 2] = [wire::method::ACKNOWLEDGE, wire::method::HISTORY];

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
        AgentError::UnknownTurn(turn_id) => {
            let message = AgentError::UnknownTurn(turn_id.clone()).to_string();
            error_with(code::UNKNOWN_TURN, message, json!({ "turnId": turn_id }))
        }
        AgentError::Closed => internal(AgentError::Closed.to_string()),
    }
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
    }
}

fn edit_tool_name(tool: mino_core::edit::EditTool) -> wire::EditToolName {
    match tool {
        mino_core::edit::EditTool::EditFile => wire::EditToolName::EditFile,
        mino_core::edit::EditTool::WriteFile => wire::EditToolName::WriteFile,
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
                tool: c.edit_tool.map(edit_tool_name),
                result: wire::ToolResultView {
                    status: tool_status(c.status),
                    output: c.output.clone(),
                    exit_code: c.exit_code,
                    diff: c.diff.clone(),
                },
                evidence: c.evidence.as_ref().map(evidence),
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
    }
}

fn history_turn(session: &Session, turn: &Turn) -> wire::HistoryTurn {
    let status = turn.end.as_ref().map(|e| e.status);
    // The same notice the model receives after this turn's results.
    let notices: Vec<String> = turn.notice().into_iter().collect();
    wire::HistoryTurn {
        turn_id: turn.id.clone(),
        input: turn.input.clone(),
        text: turn.text(),
        calls: turn
            .calls
            .iter()
            .enumerate()
            .map(|(index, c)| wire::HistoryCall {
                call_id: c.call_id.clone(),
                command: c.command(),
                tool: mino_core::edit::EditTool::from_name(&c.name).map(edit_tool_name),
                result: c.result.as_ref().map(|r| wire::ToolResultView {
                    status: tool_status(r.status),
                    output: r.output.clone(),
                    exit_code: r.exit_code,
                    diff: c.applied_diff(),
                }),
                evidence: session.evidence(turn, index).as_ref().map(evidence),
            })
            .collect(),
        status: status.map(turn_status),
        reason: turn.end.as_ref().and_then(|e| e.reason.clone()),
        notices,
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

/// One agent event as its notification.
fn notification(Numbered { seq, event }: Numbered) -> String {
    match event {
        AgentEvent::TurnStarted { turn_id, input } => {
            message::<wire::notification::TurnStarted>(wire::TurnStarted { turn_id, seq, input })
        }
        AgentEvent::TextDelta { turn_id, delta } => {
            message::<wire::notification::TextDelta>(wire::TextDelta { turn_id, seq, delta })
        }
        AgentEvent::Retrying { turn_id, attempt, delay_ms, reason } => {
            message::<wire::notification::Retrying>(wire::Retrying { turn_id, seq, attempt, delay_ms, reason })
        }
        AgentEvent::ApprovalRequest { turn_id, call_id, command, directory, environment, limits: l, edit } => {
            let edit = edit.map(edit_view);
            let n = wire::ApprovalRequest {
                turn_id,
                seq,
                call_id,
                command,
                directory,
                environment,
                limits: limits(l),
                edit,
            };
            message::<wire::notification::ApprovalRequest>(n)
        }
        AgentEvent::ToolStarted { turn_id, call_id, command } => {
            message::<wire::notification::ToolStarted>(wire::ToolStarted { turn_id, seq, call_id, command })
        }
        AgentEvent::ToolOutput { turn_id, call_id, stream, chunk } => {
            let stream = match stream {
                bash::Stream::Stdout => wire::OutputStream::Stdout,
                bash::Stream::Stderr => wire::OutputStream::Stderr,
            };
            message::<wire::notification::ToolOutput>(wire::ToolOutput { turn_id, seq, call_id, stream, chunk })
        }
        AgentEvent::ToolResult { turn_id, call_id, status, output, exit_code, diff } => {
            let n = wire::ToolResult { turn_id, seq, call_id, status: tool_status(status), output, exit_code, diff };
            message::<wire::notification::ToolResult>(n)
        }
        AgentEvent::TurnEnded { turn_id, status, reason, text } => {
            let n = wire::TurnEnded { turn_id, seq, status: turn_status(status), reason, text };
            message::<wire::notification::TurnEnded>(n)
        }
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
        let turn_id = agent.chat(&params.text).await.map_err(agent_error)?;
        Ok(wire::ChatResult { turn_id })
    }

    async fn approval(&self, params: wire::ApprovalParams) -> Result<wire::EmptyResult> {
        let decision = match params.decision {
            wire::Decision::Approve => ApprovalDecision::Approved,
            wire::Decision::Deny => ApprovalDecision::Denied,
        };
        self.agent()?.approve(&params.turn_id, &params.call_id, decision).map_err(agent_error)?;
        Ok(wire::EmptyResult {})
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
        self.agent()?.with_session(|s| {
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
        })
        .map_err(open_error)?;
        let App { agent, events, recovery, session_id, journal_path, cwd, model: model_name } = app;
        let journal_path = journal_path.display().to_string();
        let recovery = recovery_notification(&session_id, &recovery);
        tracing::info!(session_id, journal_path, cwd = %cwd.display(), model = model_name, "session open");
        {
            let mut opened = lock(&self.shared.opened);
            if opened.is_some() {
                // A concurrent initialize won; this one's session is dropped (and unlocked).
                return Err(Error::invalid_request());
            }
            *opened = Some(Opened { agent, stream: Some((recovery, events)) });
        }

        let mino =
            wire::ServerCapabilities { session_id, journal_path, cwd: cwd.display().to_string(), model: model_name };
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
