//! Errors on the wire: each core error as the JSON-RPC error a client
//! receives (its code from `mino_protocol::error_code`, its message saying
//! what to do).

use mino_core::agent::AgentError;
use mino_core::policy::PolicyError;
use mino_core::{OpenError, SessionError, StoreError};
use mino_protocol as wire;
use serde_json::{json, Value};
use tower_lsp_server::jsonrpc::{Error, ErrorCode};

pub(crate) fn error(code: i64, message: impl Into<String>) -> Error {
    Error { code: ErrorCode::ServerError(code), message: message.into().into(), data: None }
}

pub(crate) fn error_with(code: i64, message: impl Into<String>, data: Value) -> Error {
    Error { code: ErrorCode::ServerError(code), message: message.into().into(), data: Some(data) }
}

pub(crate) fn internal(message: impl Into<String>) -> Error {
    Error { code: ErrorCode::InternalError, message: message.into().into(), data: None }
}

pub(crate) fn invalid_params(message: impl Into<String>) -> Error {
    Error { code: ErrorCode::InvalidParams, message: message.into().into(), data: None }
}

pub(crate) fn session_error(e: SessionError) -> Error {
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

pub(crate) fn agent_error(e: AgentError) -> Error {
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

/// A session method's error. A session that cannot be opened, held
/// elsewhere, missing or current (for delete) is `-32015` with what to do.
pub(crate) fn store_error(e: StoreError) -> Error {
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

pub(crate) fn session_unavailable(message: impl Into<String>) -> Error {
    error(wire::error_code::SESSION_UNAVAILABLE, message)
}

pub(crate) fn open_error(e: OpenError) -> Error {
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
