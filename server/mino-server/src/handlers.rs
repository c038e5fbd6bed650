//! The protocol binding: every `mino/*` method and notification, mapped
//! between `mino-protocol`'s wire types and `mino-core`'s calls.
//!
//! This is the only file that knows both vocabularies. Handlers return
//! quickly: a turn runs in the task the [`Agent`] spawns, and its events reach
//! the client through one forwarding task, so they keep their `seq` order.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mino_core::agent::{AgentError, AgentEvent, Numbered, TurnLimits};
use mino_core::bash::{self, BashTool};
use mino_core::model::{ModelClient, ModelConfig};
use mino_core::recovery::{RecoveredTurn, RecoveryReport};
use mino_core::transcript::Turn;
use mino_core::{agent::Agent, soul, ApprovalDecision, MinoHome, Session, SessionError};
use mino_protocol as wire;
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedReceiver;
use tower_lsp_server::gen_lsp_types::{
    InitializeParams, InitializeResult, InitializedParams, LspNotificationMethod, MessageDirection, Notification,
    ServerCapabilities, ServerInfo,
};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::{Client, LanguageServer, LspService, LspServiceBuilder};

pub const SERVER_NAME: &str = "mino-server";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// How long an exiting server waits for a cancelled turn to write its end.
const EXIT_GRACE: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------- notifications

macro_rules! notifications {
    ($($marker:ident => $method:path, $params:ty;)+) => {
        $(
            /// Marker type for one server-to-client notification.
            pub enum $marker {}
            impl Notification for $marker {
                type Params = $params;
                const METHOD: LspNotificationMethod<'static> = LspNotificationMethod::Custom($method);
                const MESSAGE_DIRECTION: MessageDirection = MessageDirection::ServerToClient;
            }
        )+
    };
}

notifications! {
    RecoveryN => wire::method::RECOVERY, wire::RecoveryNotification;
    TurnStartedN => wire::method::TURN_STARTED, wire::TurnStarted;
    TextDeltaN => wire::method::TEXT_DELTA, wire::TextDelta;
    RetryingN => wire::method::RETRYING, wire::Retrying;
    ApprovalRequestN => wire::method::APPROVAL_REQUEST, wire::ApprovalRequest;
    ToolStartedN => wire::method::TOOL_STARTED, wire::ToolStarted;
    ToolOutputN => wire::method::TOOL_OUTPUT, wire::ToolOutput;
    ToolResultN => wire::method::TOOL_RESULT, wire::ToolResult;
    TurnEndedN => wire::method::TURN_ENDED, wire::TurnEnded;
}

// ---------------------------------------------------------------- state

/// What `initialize` opened.
struct Opened {
    agent: Agent,
    /// Taken by the task that streams notifications, once.
    stream: Option<(wire::RecoveryNotification, UnboundedReceiver<Numbered>)>,
}

#[derive(Default)]
struct Shared {
    opened: Mutex<Option<Opened>>,
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
    /// Cancels the running turn (the client is gone) and waits, a bounded
    /// time, for it to record its end.
    pub async fn shutdown(&self) {
        let agent = lock(&self.shared.opened).as_ref().map(|o| o.agent.clone());
        let Some(agent) = agent else { return };
        // Closing refuses any chat still in flight, so no turn can start
        // after this and outlive the server without an end on file.
        agent.close();
        if agent.running_turn().is_none() {
            return;
        }
        tracing::info!("client gone: cancelling the running turn");
        let deadline = tokio::time::Instant::now() + EXIT_GRACE;
        while agent.running_turn().is_some() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

pub struct Backend {
    client: Client,
    shared: Arc<Shared>,
}

/// The service with lifecycle methods plus Mino's.
pub fn service() -> (LspService<Backend>, tower_lsp_server::ClientSocket, Handle) {
    let shared = Arc::new(Shared::default());
    let handle = Handle { shared: shared.clone() };
    let builder: LspServiceBuilder<Backend> =
        LspService::build_with_lifecycle_methods(move |client| Backend { client, shared });
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
                result: wire::ToolResultView {
                    status: tool_status(c.status),
                    output: c.output.clone(),
                    exit_code: c.exit_code,
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
                result: c.result.as_ref().map(|r| wire::ToolResultView {
                    status: tool_status(r.status),
                    output: r.output.clone(),
                    exit_code: r.exit_code,
                }),
                evidence: session.evidence(turn, index).as_ref().map(evidence),
            })
            .collect(),
        status: status.map(turn_status),
        reason: turn.end.as_ref().and_then(|e| e.reason.clone()),
        notices,
    }
}

/// Sends one agent event as its notification.
async fn forward(client: &Client, Numbered { seq, event }: Numbered) {
    match event {
        AgentEvent::TurnStarted { turn_id, input } => {
            client.send_notification::<TurnStartedN>(wire::TurnStarted { turn_id, seq, input }).await
        }
        AgentEvent::TextDelta { turn_id, delta } => {
            client.send_notification::<TextDeltaN>(wire::TextDelta { turn_id, seq, delta }).await
        }
        AgentEvent::Retrying { turn_id, attempt, delay_ms, reason } => {
            client.send_notification::<RetryingN>(wire::Retrying { turn_id, seq, attempt, delay_ms, reason }).await
        }
        AgentEvent::ApprovalRequest { turn_id, call_id, command, directory, environment, limits: l } => {
            let n = wire::ApprovalRequest { turn_id, seq, call_id, command, directory, environment, limits: limits(l) };
            client.send_notification::<ApprovalRequestN>(n).await
        }
        AgentEvent::ToolStarted { turn_id, call_id, command } => {
            client.send_notification::<ToolStartedN>(wire::ToolStarted { turn_id, seq, call_id, command }).await
        }
        AgentEvent::ToolOutput { turn_id, call_id, stream, chunk } => {
            let stream = match stream {
                bash::Stream::Stdout => wire::OutputStream::Stdout,
                bash::Stream::Stderr => wire::OutputStream::Stderr,
            };
            client.send_notification::<ToolOutputN>(wire::ToolOutput { turn_id, seq, call_id, stream, chunk }).await
        }
        AgentEvent::ToolResult { turn_id, call_id, status, output, exit_code } => {
            let n = wire::ToolResult { turn_id, seq, call_id, status: tool_status(status), output, exit_code };
            client.send_notification::<ToolResultN>(n).await
        }
        AgentEvent::TurnEnded { turn_id, status, reason, text } => {
            let n = wire::TurnEnded { turn_id, seq, status: turn_status(status), reason, text };
            client.send_notification::<TurnEndedN>(n).await
        }
    }
}

/// Resolves the directory commands run in.
fn command_dir(requested: Option<&str>) -> Result<PathBuf> {
    let here =
        std::env::current_dir().map_err(|e| internal(format!("cannot read the server's working directory: {e}")))?;
    let dir = match requested {
        None => here,
        Some(dir) if Path::new(dir).is_absolute() => PathBuf::from(dir),
        Some(dir) => here.join(dir),
    };
    match std::fs::metadata(&dir) {
        Ok(meta) if meta.is_dir() => Ok(dir),
        Ok(_) => Err(invalid_params(format!("initializationOptions.cwd {} is not a directory", dir.display()))),
        Err(e) => Err(invalid_params(format!("initializationOptions.cwd {}: {e}", dir.display()))),
    }
}

/// The environment variable that sets a command's time limit in seconds.
pub const COMMAND_TIMEOUT_ENV: &str = "MINO_COMMAND_TIMEOUT_SECS";

/// The limits commands run with: the defaults, with the timeout from
/// [`COMMAND_TIMEOUT_ENV`] when it is set (a whole number of seconds, ≥ 1).
fn command_limits() -> Result<bash::Limits> {
    let mut limits = bash::Limits::default();
    match std::env::var(COMMAND_TIMEOUT_ENV) {
        Err(std::env::VarError::NotPresent) => {}
        Ok(value) if value.trim().is_empty() => {}
        Ok(value) => match value.trim().parse::<u64>() {
            Ok(secs) if secs >= 1 => limits.timeout = Duration::from_secs(secs),
            _ => {
                return Err(internal(format!(
                    "{COMMAND_TIMEOUT_ENV}={value:?} is not a whole number of seconds (at least 1)"
                )))
            }
        },
        Err(e) => return Err(internal(format!("{COMMAND_TIMEOUT_ENV}: {e}"))),
    }
    Ok(limits)
}

fn session_unavailable(message: impl Into<String>) -> Error {
    error(wire::error_code::SESSION_UNAVAILABLE, message)
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

    /// Sends `mino/recovery`, then forwards the agent's events, in one task
    /// so that every notification keeps its order. Runs once: on
    /// `initialized`, or on the first Mino request if a client skips it.
    fn start_streaming(&self) {
        let Some((recovery, mut events)) = lock(&self.shared.opened).as_mut().and_then(|o| o.stream.take()) else {
            return;
        };
        let client = self.client.clone();
        tokio::spawn(async move {
            client.send_notification::<RecoveryN>(recovery).await;
            while let Some(event) = events.recv().await {
                forward(&client, event).await;
            }
        });
    }

    async fn chat(&self, params: wire::ChatParams) -> Result<wire::ChatResult> {
        let agent = self.agent()?;
        let turn_id = agent.chat(&params.text).map_err(agent_error)?;
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
        let acknowledged = self.agent()?.acknowledge(params.turn_ids.as_deref()).map_err(agent_error)?;
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
        let cwd = command_dir(options.cwd.as_deref())?;
        let command_limits = command_limits()?;
        // Everything that can fail without touching the session comes first,
        // so a refused initialize writes nothing to it.
        let model = ModelClient::new(ModelConfig::from_env())
            .map_err(|e| internal(format!("the model client could not be set up: {e}")))?;
        let model_name = model.config().model.clone();
        let home = MinoHome::from_env()
            .and_then(|home| home.ensure_root().map(|()| home))
            .map_err(|e| session_unavailable(format!("Mino's home directory is unusable: {e}")))?;
        let soul_path = home.soul_path();
        let instructions = soul::load_or_create(&soul_path)
            .map_err(|e| internal(format!("{}: could not read the instructions: {e}", soul_path.display())))?;

        let opened = if options.new_session {
            Session::create(&home, &cwd).map(|s| (s, RecoveryReport::default()))
        } else {
            Session::open_or_create(&home, options.session.as_deref(), &cwd)
        };
        let (session, report) = opened.map_err(|e| {
            tracing::warn!(error = %e, "the session could not be opened");
            session_unavailable(format!("The session could not be opened: {e}"))
        })?;
        let session_id = session.id().to_string();
        let journal_path = session.path().display().to_string();
        // A session's commands run where it was created, whichever directory opened it.
        let cwd = PathBuf::from(session.cwd());
        let recovery = recovery_notification(&session_id, &report);
        tracing::info!(session_id, journal_path, cwd = %cwd.display(), model = model_name, "session open");

        // Each command runs under this very binary in supervise mode.
        let supervisor = std::env::current_exe()
            .map_err(|e| internal(format!("cannot find the server's own executable to supervise commands: {e}")))?;
        let bash = BashTool::new(cwd.clone(), command_limits, supervisor);
        let (agent, events) = Agent::new(session, model, bash, instructions, TurnLimits::default());
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
