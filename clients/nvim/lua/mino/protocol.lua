-- Generated from server/protocol (mino-protocol) by `cargo run -p mino-protocol --bin mino-protocol-gen`.
-- Do not edit: change the crate and run that command.
local M = {}

--- A table whose keys are its values.
local function values(list)
  local t = {}
  for _, v in ipairs(list) do
    t[v] = v
  end
  return t
end

--- Client-to-server requests.
M.method = { chat = "mino/chat", approval = "mino/approval", acknowledge = "mino/acknowledge", cancel = "mino/cancel", history = "mino/history", image = "mino/image", sessionsList = "mino/sessions/list", sessionsNew = "mino/sessions/new", sessionsOpen = "mino/sessions/open", sessionsRename = "mino/sessions/rename", sessionsDelete = "mino/sessions/delete", sessionsFork = "mino/sessions/fork", rulesList = "mino/rules/list", rulesRevoke = "mino/rules/revoke", settingsUpdate = "mino/settings/update", compact = "mino/compact", modelsList = "mino/models/list", modelsSelect = "mino/models/select", mcpList = "mino/mcp/list", mcpRestart = "mino/mcp/restart", rewindPlan = "mino/rewind/plan", rewind = "mino/rewind" }

--- Server-to-client notifications.
M.notification = { recovery = "mino/recovery", turnStarted = "mino/turnStarted", textDelta = "mino/textDelta", retrying = "mino/retrying", approvalRequest = "mino/approvalRequest", toolStarted = "mino/toolStarted", toolOutput = "mino/toolOutput", toolResult = "mino/toolResult", turnEnded = "mino/turnEnded", compactionStarted = "mino/compactionStarted", compactionEnded = "mino/compactionEnded", instructionsChanged = "mino/instructionsChanged", mcpStatus = "mino/mcp/status" }

--- Every notification a turn emits, in the order a turn emits them.
M.turn_notifications = { "mino/turnStarted", "mino/textDelta", "mino/retrying", "mino/approvalRequest", "mino/toolStarted", "mino/toolOutput", "mino/toolResult", "mino/turnEnded" }

--- Turn statuses.
M.turn_status = values { "completed", "failed", "cancelled", "interrupted" }

--- Tool statuses.
M.tool_status = values { "success", "failed", "refused", "timed_out", "cancelled", "not_executed", "unknown", "applied", "not_applied", "unavailable" }

--- Tools a call's `tool` names (absent: bash).
M.tool_name = values { "edit_file", "write_file", "read_file", "list_files", "search" }

--- The read-only tools: shown as one line each.
M.read_tool = values { "read_file", "list_files", "search" }

--- Decisions in mino/approval.
M.decision = values { "approve", "deny", "allowSession", "allowWorkspace", "denySession", "denyWorkspace" }

--- Approval modes.
M.approval_mode = values { "ask", "rules", "sandboxed-auto", "plan" }

--- Approval modes in the protocol's order (a picker's).
M.approval_modes = { "ask", "rules", "sandboxed-auto", "plan" }

--- Sandbox modes.
M.sandbox_mode = values { "off", "read-only", "workspace-write" }

--- Mino's own JSON-RPC error codes.
M.errors = { ACKNOWLEDGEMENT_REQUIRED = -32010, TURN_IN_PROGRESS = -32011, NO_PENDING_APPROVAL = -32012, JOURNAL_FAILURE = -32013, UNKNOWN_TURN = -32014, SESSION_UNAVAILABLE = -32015, REWIND_PLAN_CHANGED = -32016 }

--- JSON-RPC's own error codes, and the two of the language-server lifecycle.
M.jsonrpc_errors = { PARSE_ERROR = -32700, INVALID_REQUEST = -32600, METHOD_NOT_FOUND = -32601, INVALID_PARAMS = -32602, INTERNAL_ERROR = -32603, SERVER_NOT_INITIALIZED = -32002, REQUEST_CANCELLED = -32800 }

--- Fixed sentences shown exactly as written.
M.messages = { ACKNOWLEDGEMENT_REQUIRED = "Acknowledge unknown tool results before continuing", ACKNOWLEDGEMENT_QUESTION = "Do you understand that these commands may already have run?" }

return M
