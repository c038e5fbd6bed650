//! Mino's wire types: every custom JSON-RPC method and notification that
//! `mino-server` speaks, with its params, result and error codes.
//!
//! This crate knows nothing about transports or about the domain core; clients
//! and tests depend on it so that the contract lives in exactly one place.
//! `docs/protocol.md` documents the same contract for people, with examples.
//! Field names are camelCase on the wire.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Method and notification names.
pub mod method {
    pub const CHAT: &str = "mino/chat";
    pub const APPROVAL: &str = "mino/approval";
    pub const ACKNOWLEDGE: &str = "mino/acknowledge";
    pub const CANCEL: &str = "mino/cancel";
    pub const HISTORY: &str = "mino/history";

    pub const RECOVERY: &str = "mino/recovery";
    pub const TURN_STARTED: &str = "mino/turnStarted";
    pub const TEXT_DELTA: &str = "mino/textDelta";
    pub const RETRYING: &str = "mino/retrying";
    pub const APPROVAL_REQUEST: &str = "mino/approvalRequest";
    pub const TOOL_STARTED: &str = "mino/toolStarted";
    pub const TOOL_OUTPUT: &str = "mino/toolOutput";
    pub const TOOL_RESULT: &str = "mino/toolResult";
    pub const TURN_ENDED: &str = "mino/turnEnded";

    /// Every notification a turn can emit, in the order a turn emits them.
    pub const TURN_NOTIFICATIONS: [&str; 8] =
        [TURN_STARTED, TEXT_DELTA, RETRYING, APPROVAL_REQUEST, TOOL_STARTED, TOOL_OUTPUT, TOOL_RESULT, TURN_ENDED];
}

/// JSON-RPC error codes of Mino's own methods.
pub mod error_code {
    /// `mino/chat` while an unknown tool result awaits acknowledgement.
    pub const ACKNOWLEDGEMENT_REQUIRED: i64 = -32010;
    /// `mino/chat` while another turn is running.
    pub const TURN_IN_PROGRESS: i64 = -32011;
    /// `mino/approval` whose `turnId` and `callId` do not name the call waiting for a decision.
    pub const NO_PENDING_APPROVAL: i64 = -32012;
    /// The session journal could not be read or written; the message names the file and cause.
    pub const JOURNAL_FAILURE: i64 = -32013;
    /// `mino/cancel` or `mino/acknowledge` named a turn that is not running / not pending.
    pub const UNKNOWN_TURN: i64 = -32014;
    /// The session could not be opened (locked elsewhere, unreadable, newer format).
    pub const SESSION_UNAVAILABLE: i64 = -32015;
}

/// The message of [`error_code::ACKNOWLEDGEMENT_REQUIRED`], fixed by the specification.
pub const ACKNOWLEDGEMENT_REQUIRED_MESSAGE: &str = "Acknowledge unknown tool results before continuing";

/// `initializationOptions` of the LSP `initialize` request.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct InitializationOptions {
    /// Directory bash commands run in; defaults to the server's working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Session to open; `None` opens the most recent one, or a new one if there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Start a new session even if others exist.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub new_session: bool,
}

/// What the server adds to `InitializeResult.capabilities.experimental.mino`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    pub session_id: String,
    pub journal_path: String,
    pub cwd: String,
    pub model: String,
}

// ---------------------------------------------------------------- requests

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ChatParams {
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ChatResult {
    pub turn_id: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Approve,
    Deny,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalParams {
    /// The turn of the call, as in its `mino/approvalRequest`: call ids
    /// repeat across turns, so the pair names the call.
    pub turn_id: String,
    pub call_id: String,
    pub decision: Decision,
}

/// The `{}` result of methods that only acknowledge.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct EmptyResult {}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct AcknowledgeParams {
    /// Turns to acknowledge; absent means every pending one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_ids: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct AcknowledgeResult {
    pub acknowledged: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CancelParams {
    pub turn_id: String,
}

/// Paging: without `limit` every turn (before `beforeTurnId`, if given);
/// with it, the newest `limit` turns before `beforeTurnId` (or the end),
/// oldest first.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct HistoryParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_turn_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct HistoryResult {
    pub session_id: String,
    pub turns: Vec<HistoryTurn>,
    /// Whether older turns exist before the first one returned.
    #[serde(default)]
    pub has_more: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct HistoryTurn {
    pub turn_id: String,
    pub input: String,
    /// The assistant's text, all responses of the turn joined.
    pub text: String,
    pub calls: Vec<HistoryCall>,
    /// `None` while the turn is still running.
    pub status: Option<TurnStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Runtime notices shown with the turn (e.g. that it was interrupted).
    pub notices: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct HistoryCall {
    pub call_id: String,
    pub command: String,
    /// `None` only while the call is still in flight.
    pub result: Option<ToolResultView>,
    /// What the command's supervisor saw; only beside an `unknown` result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
}

/// How a supervised command ended, as its supervisor saw it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceOutcome {
    Exited,
    Signalled,
    StoppedWhenMinoStopped,
    TimedOut,
}

/// What the command's supervisor recorded about a call whose result Mino
/// never saved. Present only beside an `unknown` result; the result stays
/// `unknown` and acknowledgement is still required.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    pub outcome: EvidenceOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub pid: u32,
    /// RFC 3339.
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// The last bytes of the command's output, at most its output limit.
    pub output_tail: String,
    /// One sentence to show beside the unknown result, e.g. "the command
    /// exited 0 after Mino stopped; last output: done".
    pub summary: String,
}

// ---------------------------------------------------------------- shared vocabulary

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    Completed,
    Failed,
    Cancelled,
    Interrupted,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Success,
    Failed,
    Refused,
    TimedOut,
    Cancelled,
    NotExecuted,
    Unknown,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultView {
    pub status: ToolStatus,
    pub output: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    pub timeout_seconds: u64,
    pub output_limit_bytes: u64,
}

// ---------------------------------------------------------------- notifications

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryNotification {
    pub session_id: String,
    /// Turns closed by this open's recovery, and earlier recovered turns still
    /// awaiting acknowledgement.
    pub turns: Vec<RecoveredTurnView>,
    pub acknowledgement_required: bool,
    pub unacknowledged_turn_ids: Vec<String>,
    /// Repairs made to the file while opening it (a torn last line cut off).
    pub repairs: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RecoveredTurnView {
    pub turn_id: String,
    pub status: TurnStatus,
    pub calls: Vec<RecoveredCallView>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RecoveredCallView {
    pub call_id: String,
    pub command: String,
    pub result: ToolResultView,
    /// What the command's supervisor saw; only beside an `unknown` result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TurnStarted {
    pub turn_id: String,
    pub seq: u64,
    pub input: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TextDelta {
    pub turn_id: String,
    pub seq: u64,
    pub delta: String,
}

/// The model request failed in a retryable way (network, 5xx, 429, a cut
/// stream) and is sent again after `delayMs`. Text streamed since the
/// model's current response began (since `turnStarted` or the last
/// `toolResult`) is void: the retried response streams it again.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Retrying {
    pub turn_id: String,
    pub seq: u64,
    pub attempt: u32,
    pub delay_ms: u64,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    pub turn_id: String,
    pub seq: u64,
    pub call_id: String,
    pub command: String,
    pub directory: String,
    /// The complete environment the command will get (names and values).
    pub environment: BTreeMap<String, String>,
    pub limits: Limits,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ToolStarted {
    pub turn_id: String,
    pub seq: u64,
    pub call_id: String,
    pub command: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OutputStream {
    Stdout,
    Stderr,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutput {
    pub turn_id: String,
    pub seq: u64,
    pub call_id: String,
    pub stream: OutputStream,
    pub chunk: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub turn_id: String,
    pub seq: u64,
    pub call_id: String,
    pub status: ToolStatus,
    pub output: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TurnEnded {
    pub turn_id: String,
    pub seq: u64,
    pub status: TurnStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// Any notification a turn emits, tagged by its method name; handy for
/// clients that read them from one stream.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "method", content = "params")]
pub enum TurnNotification {
    #[serde(rename = "mino/turnStarted")]
    TurnStarted(TurnStarted),
    #[serde(rename = "mino/textDelta")]
    TextDelta(TextDelta),
    #[serde(rename = "mino/retrying")]
    Retrying(Retrying),
    #[serde(rename = "mino/approvalRequest")]
    ApprovalRequest(ApprovalRequest),
    #[serde(rename = "mino/toolStarted")]
    ToolStarted(ToolStarted),
    #[serde(rename = "mino/toolOutput")]
    ToolOutput(ToolOutput),
    #[serde(rename = "mino/toolResult")]
    ToolResult(ToolResult),
    #[serde(rename = "mino/turnEnded")]
    TurnEnded(TurnEnded),
}

impl TurnNotification {
    pub fn turn_id(&self) -> &str {
        match self {
            Self::TurnStarted(n) => &n.turn_id,
            Self::TextDelta(n) => &n.turn_id,
            Self::Retrying(n) => &n.turn_id,
            Self::ApprovalRequest(n) => &n.turn_id,
            Self::ToolStarted(n) => &n.turn_id,
            Self::ToolOutput(n) => &n.turn_id,
            Self::ToolResult(n) => &n.turn_id,
            Self::TurnEnded(n) => &n.turn_id,
        }
    }

    pub fn seq(&self) -> u64 {
        match self {
            Self::TurnStarted(n) => n.seq,
            Self::TextDelta(n) => n.seq,
            Self::Retrying(n) => n.seq,
            Self::ApprovalRequest(n) => n.seq,
            Self::ToolStarted(n) => n.seq,
            Self::ToolOutput(n) => n.seq,
            Self::ToolResult(n) => n.seq,
            Self::TurnEnded(n) => n.seq,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn approval_request_is_camel_case_on_the_wire() {
        let n = TurnNotification::ApprovalRequest(ApprovalRequest {
            turn_id: "t1".into(),
            seq: 3,
            call_id: "call_1".into(),
            command: "ls".into(),
            directory: "/tmp".into(),
            environment: BTreeMap::from([("PATH".into(), "/usr/bin".into())]),
            limits: Limits { timeout_seconds: 120, output_limit_bytes: 65536 },
        });
        let v = serde_json::to_value(&n).unwrap();
        assert_eq!(v["method"], "mino/approvalRequest");
        assert_eq!(v["params"]["callId"], "call_1");
        assert_eq!(v["params"]["limits"]["timeoutSeconds"], 120);
    }

    #[test]
    fn approval_params_name_the_turn_and_the_call() {
        let p = ApprovalParams { turn_id: "turn-2".into(), call_id: "call_1".into(), decision: Decision::Approve };
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v, json!({"turnId": "turn-2", "callId": "call_1", "decision": "approve"}));
        let missing = serde_json::from_value::<ApprovalParams>(json!({"callId": "call_1", "decision": "approve"}));
        let err = missing.expect_err("turnId is required").to_string();
        assert!(err.contains("turnId"), "{err}");
    }

    #[test]
    fn acknowledge_params_accept_an_empty_object() {
        let p: AcknowledgeParams = serde_json::from_value(json!({})).unwrap();
        assert_eq!(p.turn_ids, None);
    }

    #[test]
    fn statuses_are_snake_case() {
        assert_eq!(serde_json::to_value(ToolStatus::NotExecuted).unwrap(), "not_executed");
        assert_eq!(serde_json::to_value(ToolStatus::TimedOut).unwrap(), "timed_out");
        assert_eq!(serde_json::to_value(TurnStatus::Interrupted).unwrap(), "interrupted");
    }
}
