-- Generated from server/protocol (mino-protocol) by `cargo run -p mino-protocol --bin mino-protocol-gen`.
-- Do not edit: change the crate and run that command.
local M = {}

--- Client-to-server requests.
M.method = {
  chat = "mino/chat",
  approval = "mino/approval",
  acknowledge = "mino/acknowledge",
  cancel = "mino/cancel",
  history = "mino/history",
}

--- Server-to-client notifications.
M.notification = {
  recovery = "mino/recovery",
  turnStarted = "mino/turnStarted",
  textDelta = "mino/textDelta",
  retrying = "mino/retrying",
  approvalRequest = "mino/approvalRequest",
  toolStarted = "mino/toolStarted",
  toolOutput = "mino/toolOutput",
  toolResult = "mino/toolResult",
  turnEnded = "mino/turnEnded",
}

--- Every notification a turn emits, in the order a turn emits them.
M.turn_notifications = {
  "mino/turnStarted",
  "mino/textDelta",
  "mino/retrying",
  "mino/approvalRequest",
  "mino/toolStarted",
  "mino/toolOutput",
  "mino/toolResult",
  "mino/turnEnded",
}

--- Turn statuses.
M.turn_status = {
  completed = "completed",
  failed = "failed",
  cancelled = "cancelled",
  interrupted = "interrupted",
}

--- Tool statuses.
M.tool_status = {
  success = "success",
  failed = "failed",
  refused = "refused",
  timed_out = "timed_out",
  cancelled = "cancelled",
  not_executed = "not_executed",
  unknown = "unknown",
  applied = "applied",
  not_applied = "not_applied",
}

--- Decisions in mino/approval.
M.decision = {
  approve = "approve",
  deny = "deny",
}

--- Mino's own JSON-RPC error codes.
M.errors = {
  ACKNOWLEDGEMENT_REQUIRED = -32010,
  TURN_IN_PROGRESS = -32011,
  NO_PENDING_APPROVAL = -32012,
  JOURNAL_FAILURE = -32013,
  UNKNOWN_TURN = -32014,
  SESSION_UNAVAILABLE = -32015,
}

--- Fixed sentences shown exactly as written.
M.messages = {
  ACKNOWLEDGEMENT_REQUIRED = "Acknowledge unknown tool results before continuing",
  ACKNOWLEDGEMENT_QUESTION = "Do you understand that these commands may already have run?",
}

return M
