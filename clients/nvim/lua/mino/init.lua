--- Mino for Neovim: a chat buffer on top of `mino-server` (JSON-RPC over stdio,
--- LSP base protocol). The server runs as an LSP client that is attached to no
--- buffer; Mino's own methods go through `client:request`, its notifications
--- through the client's handlers.
local M = {}

local chat = require("mino.chat")
--- #buffer and :MinoSend attachments.
local context = require("mino.context")
context.track()
--- Edit diffs: the split shown before an edit's question, :MinoDiff.
local diff = require("mino.diff")
--- Method names, statuses, decisions, error codes and fixed messages,
--- generated from the Rust crate mino-protocol (see that file's first line).
local protocol = require("mino.protocol")
local method, notification = protocol.method, protocol.notification

local HAS_011 = vim.fn.has("nvim-0.11") == 1

--- Error codes of the wire contract.
M.errors = protocol.errors

M.ACK_QUESTION = protocol.messages.ACKNOWLEDGEMENT_QUESTION

--- JSON-RPC's own codes the plugin tells apart: an unknown method (a server
--- older than a command) and invalid params (e.g. a rule the server refuses).
M.METHOD_NOT_FOUND = protocol.jsonrpc_errors.METHOD_NOT_FOUND
M.INVALID_PARAMS = protocol.jsonrpc_errors.INVALID_PARAMS

local defaults = {
  --- Path or name (looked up on $PATH) of the server binary.
  server_path = "mino-server",
  --- Extra arguments for the server.
  server_args = {},
  --- Environment added to Neovim's for the server (MINO_HOME, OPENAI_API_KEY,
  --- OPENAI_BASE_URL, MINO_MODEL, RUST_LOG ...).
  cmd_env = {},
  --- Directory bash commands run in; nil = Neovim's current directory at start.
  cwd = nil,
  --- Session id to open; nil = the most recent one (or a new one).
  session = nil,
  --- Start a new session even if others exist.
  new_session = false,
  --- Approval mode ("ask", "rules", "sandboxed-auto", "plan") and sandbox
  --- ("off", "read-only", "workspace-write") asked of the server at start;
  --- nil = the server's default. :MinoMode changes the mode while it runs.
  approval_mode = nil,
  sandbox = nil,
  --- Where the server's stderr goes; nil = stdpath("log") .. "/mino-server.log".
  log_file = nil,
  --- "split" or "float".
  window = "split",
  --- Command used to open the split (window = "split").
  split_cmd = "botright vsplit",
  --- Float geometry (window = "float"), as fractions of the editor size.
  float = { width = 0.8, height = 0.8, border = "rounded" },
  --- Enter insert mode in the input window when :Mino opens the chat.
  start_insert = false,
  --- Key(s) that send the input buffer, in normal and insert mode (a string,
  --- a list, or false for none); <CR> in normal mode always sends too.
  send_key = "<C-s>",
  --- The split showing an edit's diff, drawn before its approval question:
  --- `position` "above", "below", "left" or "right" (a split of the whole
  --- editor; above, the default, stays clear of the menu Neovim's own
  --- vim.ui.select draws at the bottom), `height` (above/below: at most this
  --- fraction of the editor),
  --- `close_after_decision` (false keeps it open until `q` or the next diff).
  diff = { position = "above", height = 0.4, close_after_decision = true },
  --- Global keymaps: false (none, the default), true (M.default_keymaps), or
  --- a table overriding some of them (a key set to false is not mapped).
  keymaps = false,
}

--- The keymaps `keymaps = true` sets (normal mode).
M.default_keymaps = {
  open = "<leader>mo", -- open the chat and write in its input window
  cancel = "<leader>mc", -- cancel the running turn
  approve = "<leader>my", -- approve the command whose question is shown
  deny = "<leader>mn", -- deny the command whose question is shown
  new = "<leader>mN", -- start a new chat (a new session) in this workspace
  sessions = "<leader>ms", -- pick a session to continue
  attach = "<leader>ma", -- (visual mode) write a reference to the selected lines into the input
}

M.config = vim.deepcopy(defaults)

--- Runtime state, reset by M._reset() (tests).
local function fresh_state()
  return {
    client_id = nil,
    running_turn = nil,
    history_loaded = false,
    deferred = {}, -- notifications that arrived before the history was rendered
    outbox = {}, -- questions asked before the server was ready
    images = {}, -- :MinoImage paths, sent with the next question
    ended = {}, -- turnId -> true once mino/turnEnded arrived
    recovery = nil, -- last mino/recovery params while acknowledgement is pending
    recovery_seen = false, -- this server's mino/recovery was handled (asking_ack is set by then if needed)
    approvals = {}, -- queue of approval requests
    asking_approval = false,
    --- The approval whose question is on screen ({ req, decided }); set only
    --- once the question shows, so a key pressed before cannot answer it.
    shown_approval = nil,
    response_streaming = false, -- MinoStreaming was sent for the current response
    asking_ack = false,
    capabilities = nil,
    --- The open session: { sessionId, title (nil until the first question),
    --- cwd, journalPath }, from `initialize` or the last switch.
    session = nil,
    --- A mino/sessions/new or /open is on its way (notifications wait meanwhile).
    switching = false,
    --- The server answered mino/sessions/list with -32601 (it predates sessions).
    no_session_list = false,
    --- The open session's MCP servers as last reported (mino/mcp/status, :MinoMcp), by name.
    mcp = {},
    mcp_deferred = {}, -- mino/mcp/status params to show in the chat once the history is rendered
  }
end
M.state = fresh_state()
--- Client ids stopped on purpose (kept across resets: their exit arrives later).
local stopping = {}
--- Client ids whose process has exited.
local exited = {}
--- The session a start opens after a switch (the one switched to last), so a
--- restart continues it; nil = what `setup()` asked for. Kept across restarts.
local reopen_session = nil
--- Defined with the sessions (below); used by the notifications and the start.
local session_changed, refresh_title

local function notify(msg, level)
  vim.notify("Mino: " .. msg, level or vim.log.levels.INFO, { title = "Mino" })
end
M._notify = notify

--- Global keymaps set by the last setup(), so a later setup() can remove them.
local mapped = {}

local function apply_keymaps(opt)
  for _, m in ipairs(mapped) do
    pcall(vim.keymap.del, m[1], m[2])
  end
  mapped = {}
  if not opt then
    return
  end
  local keys = vim.deepcopy(M.default_keymaps)
  if type(opt) == "table" then
    for name, lhs in pairs(opt) do
      if M.default_keymaps[name] == nil then
        local known = vim.tbl_keys(M.default_keymaps)
        table.sort(known)
        notify(("keymaps.%s is not a Mino keymap (known: %s)"):format(name, table.concat(known, ", ")),
          vim.log.levels.WARN)
      else
        keys[name] = lhs
      end
    end
  end
  local actions = {
    open = { function() M.open({ focus_insert = true }) end, "Open the Mino chat and write a question" },
    cancel = { function() M.cancel() end, "Cancel Mino's running turn" },
    approve = { function() M.approve_shown() end, "Approve the command Mino is asking about" },
    deny = { function() M.deny_shown() end, "Deny the command Mino is asking about" },
    new = { function() M.new_session() end, "Start a new Mino chat" },
    sessions = { function() M.pick_session() end, "Pick a Mino session to continue" },
    attach = { ":MinoSend<CR>", "Attach the selected lines to a Mino question", "x" },
  }
  for name, lhs in pairs(keys) do
    if type(lhs) == "string" and lhs ~= "" then
      local mode = actions[name][3] or "n"
      vim.keymap.set(mode, lhs, actions[name][1], { desc = actions[name][2], silent = true })
      table.insert(mapped, { mode, lhs })
    end
  end
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  if M.config.window ~= "split" and M.config.window ~= "float" then
    notify("window must be \"split\" or \"float\", got " .. tostring(M.config.window), vim.log.levels.WARN)
    M.config.window = "split"
  end
  apply_keymaps(M.config.keymaps)
  return M
end

-- ------------------------------------------------------------ events

--- Fires `User {name}` with `data` (for statuslines and progress UIs, see
--- :help mino-events). A failing user handler is reported, never fatal.
local function emit(name, data)
  local ok, err = pcall(vim.api.nvim_exec_autocmds, "User", { pattern = name, modeline = false, data = data })
  if not ok then
    notify(("a User %s autocmd failed: %s"):format(name, err), vim.log.levels.WARN)
  end
end
M._emit = emit

--- The file the server's stderr is appended to.
function M.log_path()
  return M.config.log_file or (vim.fn.stdpath("log") .. "/mino-server.log")
end

--- The server binary as an absolute path, or nil and why not.
function M.server_binary()
  local path = M.config.server_path
  local exe = vim.fn.exepath(path)
  if exe == "" then
    return nil, ("mino-server not found: %q is not an executable (set server_path in require('mino').setup)"):format(path)
  end
  return exe
end

-- ------------------------------------------------------------ client plumbing

local function client_call(client, name, ...)
  if HAS_011 then
    return client[name](client, ...)
  end
  return client[name](...)
end

local function is_stopped(client)
  return client_call(client, "is_stopped")
end

--- The running client, or nil.
function M.client()
  local id = M.state.client_id
  if not id then
    return nil
  end
  local client = vim.lsp.get_client_by_id(id)
  if not client or is_stopped(client) then
    return nil
  end
  return client
end

local function format_error(err)
  if type(err) == "table" then
    local msg = err.message or vim.inspect(err)
    if err.code == M.errors.ACKNOWLEDGEMENT_REQUIRED then
      return msg .. " (run :MinoAcknowledge)"
    end
    -- Refusals whose message says what to do: the log adds nothing.
    local expected = {
      [M.errors.TURN_IN_PROGRESS] = true,
      [M.errors.NO_PENDING_APPROVAL] = true,
      [M.errors.UNKNOWN_TURN] = true,
      [M.errors.SESSION_UNAVAILABLE] = true,
      [M.INVALID_PARAMS] = true,
    }
    if not expected[err.code] then
      -- Unexpected failures: the server log has the details.
      return ("%s (log: %s)"):format(msg, M.log_path())
    end
    return msg
  end
  return ("%s (log: %s)"):format(tostring(err), M.log_path())
end
M._format_error = format_error

--- Sends a request; `cb(err, result)` runs on the main loop.
--- Returns false when there is no running server.
function M.request(method, params, cb)
  local client = M.client()
  if not client then
    local e = { code = -32099, message = "mino-server is not running (log: " .. M.log_path() .. ")" }
    if cb then
      cb(e, nil)
    end
    return false
  end
  local ok = client_call(client, "request", method, params, function(err, result)
    if cb then
      cb(err, result)
    end
  end)
  if not ok and cb then
    cb({ code = -32099, message = "mino-server is not running (log: " .. M.log_path() .. ")" }, nil)
  end
  return ok
end

-- ------------------------------------------------------------ notifications

local on = {}

local function defer_until_history(method, params)
  if not M.state.history_loaded then
    table.insert(M.state.deferred, { method, params })
    return true
  end
  return false
end

on[notification.recovery] = function(p)
  if defer_until_history(notification.recovery, p) then
    return
  end
  chat.render_recovery(p)
  M.state.recovery_seen = true
  local turn_ids = {}
  for _, t in ipairs(p.turns or {}) do
    table.insert(turn_ids, t.turnId)
  end
  -- Every start sends mino/recovery; only one that recovered something is an event.
  if #turn_ids > 0 or p.acknowledgementRequired or #(p.repairs or {}) > 0 then
    emit("MinoRecovery", {
      acknowledgementRequired = p.acknowledgementRequired == true,
      turnIds = turn_ids,
      unacknowledgedTurnIds = p.unacknowledgedTurnIds or {},
    })
  end
  if p.acknowledgementRequired then
    chat.reveal(M.config)
    M.state.recovery = p
    M.ask_acknowledgement()
  else
    M.state.recovery = nil
  end
end

on[notification.turnStarted] = function(p)
  M.state.running_turn = p.turnId
  M.state.response_streaming = false
  chat.turn_started(p)
  emit("MinoRequestStarted", { turnId = p.turnId, input = p.input })
end

on[notification.textDelta] = function(p)
  chat.text_delta(p)
  if not M.state.response_streaming then
    -- Once per model response: when its text starts to arrive.
    M.state.response_streaming = true
    emit("MinoStreaming", { turnId = p.turnId })
  end
end

on[notification.retrying] = function(p)
  chat.retrying(p)
  M.state.response_streaming = false
end

-- The project's instruction files changed (read for each model request):
-- the header follows, and the chat says so.
on[notification.instructionsChanged] = function(p)
  if type(M.state.capabilities) == "table" then
    M.state.capabilities.instructionFiles = p.files
  end
  chat.instructions_changed(p.files)
  emit("MinoInstructionsChanged", { files = p.files })
end

-- An MCP server's state changed: one that failed to start or exited is a
-- warning (which server, why, that its tools are missing and how to restart
-- it), in vim.notify and in the chat; ready is said too.
on[notification.mcpStatus] = function(p)
  if type(p.server) ~= "string" then
    return
  end
  local before = M.state.mcp[p.server]
  M.state.mcp[p.server] = { server = p.server, state = p.state, tools = type(p.tools) == "table" and p.tools or nil,
    reason = type(p.reason) == "string" and p.reason or nil }
  -- The answer of :MinoMcp restart and the server's own notification may say the same thing.
  if before and before.state == p.state and before.reason == M.state.mcp[p.server].reason then
    return
  end
  if p.state == "failed" or p.state == "exited" then
    notify(M.format_mcp(M.state.mcp[p.server]) .. (". Its tools are missing; :MinoMcp restart %s starts it again"):format(
      p.server), vim.log.levels.WARN)
  elseif p.state == "ready" then
    notify(M.format_mcp(M.state.mcp[p.server]))
  end
  -- The chat shows it once the history is there (rendering the history replaces the buffer).
  if not M.state.history_loaded then
    table.insert(M.state.mcp_deferred, p)
  else
    chat.mcp_status(p)
  end
  emit("MinoMcpStatus", { server = p.server, state = p.state, reason = M.state.mcp[p.server].reason })
end

-- A compaction: shown in the chat when it runs inside a turn (automatic,
-- or after context_length_exceeded; :MinoCompact says its own outcome).
on[notification.compactionStarted] = function(p)
  local turn_id = (p.turnId ~= vim.NIL) and p.turnId or nil
  if turn_id then
    chat.compaction_started(p)
  end
  emit("MinoCompactionStarted", { turnId = turn_id, trigger = p.trigger })
end

on[notification.compactionEnded] = function(p)
  local turn_id = (p.turnId ~= vim.NIL) and p.turnId or nil
  if turn_id then
    chat.compaction_ended(p)
  end
  emit("MinoCompactionEnded", {
    turnId = turn_id,
    trigger = p.trigger,
    compacted = p.compacted,
    summarizedTurns = p.summarizedTurns,
    keptTurns = p.keptTurns,
    reason = (p.reason ~= vim.NIL) and p.reason or nil,
  })
end

on[notification.approvalRequest] = function(p)
  chat.approval_request(p)
  chat.reveal(M.config)
  diff.requested(p)
  table.insert(M.state.approvals, p)
  emit("MinoApprovalRequested", { turnId = p.turnId, callId = p.callId, command = p.command, directory = p.directory })
  M._next_approval()
end

on[notification.toolStarted] = function(p)
  chat.tool_started(p)
  emit("MinoToolStarted", { turnId = p.turnId, callId = p.callId, command = p.command })
end

on[notification.toolOutput] = function(p)
  chat.tool_output(p)
end

--- Reloads the buffers of files on disk that changed (as :checktime does,
--- with 'autoread' for the moment): after a command or an edit, no buffer
--- shows what the disk no longer holds. A buffer with unsaved changes is
--- left alone (Neovim warns before it is written over the newer file).
--- Coalesced: once per tick however many results arrive.
local reload_pending = false
local function reload_changed_buffers()
  if reload_pending then
    return
  end
  reload_pending = true
  vim.schedule(function()
    reload_pending = false
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" and not vim.bo[buf].modified
        and vim.api.nvim_buf_get_name(buf) ~= "" then
        pcall(vim.api.nvim_buf_call, buf, function()
          vim.cmd("setlocal autoread | silent! checktime " .. buf .. " | set autoread<")
        end)
      end
    end
  end)
end
M._reload_changed_buffers = reload_changed_buffers

on[notification.toolResult] = function(p)
  chat.tool_result(p)
  diff.applied(p)
  if p.status ~= protocol.tool_status.refused then
    reload_changed_buffers()
  end
  M.state.response_streaming = false
  emit("MinoToolFinished", {
    turnId = p.turnId,
    callId = p.callId,
    status = p.status,
    exitCode = (p.exitCode ~= vim.NIL) and p.exitCode or nil,
  })
end

on[notification.turnEnded] = function(p)
  M.state.ended[p.turnId] = true
  if M.state.running_turn == p.turnId then
    M.state.running_turn = nil
  end
  -- Approvals of an ended turn can no longer be answered.
  M.state.approvals = vim.tbl_filter(function(a)
    return a.turnId ~= p.turnId
  end, M.state.approvals)
  diff.turn_ended(p.turnId)
  chat.turn_ended(p)
  reload_changed_buffers()
  emit("MinoRequestFinished", {
    turnId = p.turnId,
    status = p.status,
    reason = (p.reason ~= vim.NIL) and p.reason or nil,
  })
  refresh_title()
  if p.status == protocol.turn_status.failed then
    local reason = (p.reason ~= nil and p.reason ~= vim.NIL) and p.reason or "no reason given"
    notify(("turn failed: %s (log: %s)"):format(reason, M.log_path()), vim.log.levels.ERROR)
  end
end

M._on = on

--- Handles a notification of the open session; one that names another
--- session (sent before a switch took effect) is dropped. mino/recovery
--- waits while a switch or the history is on its way (defer_until_history)
--- and comes back here once the open session is known.
local function dispatch(name, params)
  -- The new session's mino/recovery can arrive before the switch's answer
  -- names that session: it waits for the answer (and the history) rather
  -- than being taken for an old session's.
  if M.state.switching and name == notification.recovery then
    table.insert(M.state.deferred, { name, params })
    return
  end
  local current = M.state.session and M.state.session.sessionId
  if current and type(params.sessionId) == "string" and params.sessionId ~= current then
    return
  end
  local ok, e = pcall(on[name], params)
  if not ok then
    notify(("error handling %s: %s"):format(name, e), vim.log.levels.ERROR)
  end
end
M._dispatch = dispatch

local function make_handlers()
  local handlers = {}
  for name in pairs(on) do
    handlers[name] = function(_, params, _)
      dispatch(name, params or {})
    end
  end
  return handlers
end

-- ------------------------------------------------------------ approvals

--- Keys received but not yet read when a question appears were typed before the
--- person could see it (meant for the prompt line, or typed ahead): they must
--- never answer it. Reads and drops them; the bound keeps a stuck input source
--- from holding Neovim here. Returns how many keys were dropped.
local MAX_DISCARDED_KEYS = 100000
local function discard_typeahead()
  local dropped = 0
  while dropped < MAX_DISCARDED_KEYS do
    local ok, key = pcall(vim.fn.getchar, 0)
    if not ok or key == 0 then
      break
    end
    dropped = dropped + 1
  end
  return dropped
end

--- Drops the keys typed before a question appears (saying how many) and
--- brings the screen up to date, so the question never shows over a stale
--- chat and nothing typed earlier can answer it.
local function prepare_question()
  local dropped = discard_typeahead()
  if dropped > 0 then
    notify(("%d key(s) typed before the question appeared were ignored"):format(dropped), vim.log.levels.WARN)
  end
  chat.redraw()
end

--- Asks `question` with vim.ui.select after prepare_question(). `items[1]` is
--- the declining answer: a UI whose <CR> takes the highlighted (first) item
--- declines, and dismissing the menu gives `on_choice(nil)`, which every
--- caller treats as declining. `on_shown` runs right before the question.
local function ask_safely(question, items, kind, on_choice, on_shown, format_item)
  prepare_question()
  if on_shown then
    on_shown()
  end
  vim.ui.select(items, { prompt = question, kind = kind, format_item = format_item }, on_choice)
end

--- A No / Yes question (No first and the default); `on_answer(true)` only for
--- an explicit Yes.
local function ask_yes_no(question, kind, on_answer)
  ask_safely(question, { "No", "Yes" }, kind, function(choice)
    on_answer(choice == "Yes")
  end)
end

--- Asks for a line of text with vim.ui.input after prepare_question() (keys
--- typed ahead would otherwise be typed into the field and confirm it).
--- `on_answer` gets the trimmed text, or nil when it is empty or dismissed.
local function input_safely(prompt, default, kind, on_answer)
  prepare_question()
  vim.ui.input({ prompt = prompt, default = default, kind = kind }, function(text)
    text = type(text) == "string" and vim.trim(text) or ""
    on_answer(text ~= "" and text or nil)
  end)
end

--- The approval menu's answers. Deny is first, so it is the default.
M.APPROVAL_CHOICES = {
  deny = "Deny",
  deny_with_reason = "Deny with reason…",
  approve = "Approve once",
  allow_session = "Allow for this session…",
  allow_workspace = "Always allow in this workspace…",
  deny_session = "Deny for this session…",
  deny_workspace = "Always deny in this workspace…",
  -- An MCP call's: its rule is for this tool or every tool of its server.
  mcp_tool_session = "Always allow this tool, this session",
  mcp_server_session = "Always allow every tool of its MCP server, this session",
  mcp_tool_workspace = "Always allow this tool in this workspace",
  mcp_server_workspace = "Always allow every tool of its MCP server in this workspace",
  mcp_deny_session = "Always deny this tool, this session",
  mcp_deny_workspace = "Always deny this tool in this workspace",
}

--- The rule the server suggests for a request ({kind, command}, or for an
--- edit {kind = "path", pattern}) and its text, or nil when the command is
--- not plain enough for one (or the edit leaves the workspace).
local function suggested_rule(req)
  local r = req.suggestedRule
  local text = type(r) == "table" and (r.kind == "path" and r.pattern or r.kind == "mcp" and r.tool or r.command)
  if type(text) == "string" and text ~= "" then
    return r, text
  end
end

--- The menu for `req`: the rule choices (allow and deny) only when the server
--- suggests a rule (a command it cannot split into words, or an edit leaving
--- the workspace, gets none).
function M.approval_items(req)
  local c = M.APPROVAL_CHOICES
  local items = { c.deny, c.deny_with_reason, c.approve }
  local suggested = suggested_rule(req)
  if suggested and suggested.kind == "mcp" then
    vim.list_extend(items, { c.mcp_tool_session, c.mcp_server_session, c.mcp_tool_workspace, c.mcp_server_workspace,
      c.mcp_deny_session, c.mcp_deny_workspace })
  elseif suggested then
    vim.list_extend(items, { c.allow_session, c.allow_workspace, c.deny_session, c.deny_workspace })
  end
  return items
end

local ask_approval

--- Sends the answer about `asked` (once: a keymap and the menu may both answer
--- it). `answer` = { decision, reason?, rule? }. The next queued approval is
--- asked once the server took this one; a refused rule or reason (-32602:
--- nothing ran, the call still waits) is shown and the question asked again.
local function decide(asked, answer)
  if asked.decided then
    return
  end
  asked.decided = true
  if M.state.shown_approval == asked then
    M.state.shown_approval = nil
  end
  local req = asked.req
  diff.decided(req)
  local function next_one()
    M.state.asking_approval = false
    M._next_approval()
  end
  if M.state.ended[req.turnId] then
    chat.append({ ("_%s no longer awaits a decision: its turn has ended; nothing was run._"):format(chat.call_label(req)) })
    next_one()
    return
  end
  local params = { turnId = req.turnId, callId = req.callId, decision = answer.decision, reason = answer.reason,
    rule = answer.rule }
  local function decided()
    chat.approval_decided(req, answer)
    emit("MinoApprovalDecided", { turnId = req.turnId, callId = req.callId, decision = answer.decision,
      reason = answer.reason, rule = answer.rule })
  end
  -- A plain approve or deny is shown at once (its tool notifications follow);
  -- a rule or a reason only once the server accepted it.
  local plain = answer.rule == nil and answer.reason == nil
  if plain then
    decided()
  end
  -- The turn id binds the decision to the turn that asked: the server
  -- refuses it (-32012) if that turn no longer waits for this call.
  M.request(method.approval, params, function(err)
    if err and err.code == M.INVALID_PARAMS and not plain then
      chat.append({ "", ("**Refused:** %s"):format(err.message or "invalid decision") })
      notify(("%s: %s"):format(chat.call_label(req), err.message or "invalid decision"), vim.log.levels.WARN)
      ask_approval(req)
      return
    end
    if err and err.code == M.errors.NO_PENDING_APPROVAL then
      -- The turn ended (e.g. cancelled) while the question was open.
      chat.append({ ("_%s no longer awaits a decision: %s_"):format(chat.call_label(req), err.message or "") })
    elseif err then
      notify(("the decision about %s failed: %s"):format(chat.call_label(req), format_error(err)), vim.log.levels.ERROR)
    elseif not plain then
      decided()
    end
    next_one()
  end)
end

--- What the rule choices ask, by decision.
local RULE_PROMPTS = {
  allowSession = "Allow for this session the commands starting with: ",
  allowWorkspace = "Always allow in this workspace the commands starting with: ",
  denySession = "Deny, and for this session refuse without asking the commands starting with: ",
  denyWorkspace = "Deny, and always refuse in this workspace the commands starting with: ",
  path_allowSession = "Allow for this session edits of files matching (a glob): ",
  path_allowWorkspace = "Always allow in this workspace edits of files matching (a glob): ",
  path_denySession = "Deny, and for this session refuse without asking edits of files matching (a glob): ",
  path_denyWorkspace = "Deny, and always refuse in this workspace edits of files matching (a glob): ",
}

--- The rule choices and the decision each sends (a deny rule denies the call).
local RULE_CHOICES = {
  [M.APPROVAL_CHOICES.allow_session] = protocol.decision.allowSession,
  [M.APPROVAL_CHOICES.allow_workspace] = protocol.decision.allowWorkspace,
  [M.APPROVAL_CHOICES.deny_session] = protocol.decision.denySession,
  [M.APPROVAL_CHOICES.deny_workspace] = protocol.decision.denyWorkspace,
}

--- An MCP call's rule choices: the decision, and whether the rule is for every
--- tool of the server (`server/*`) rather than this tool (`server/tool`).
local MCP_CHOICES = {
  [M.APPROVAL_CHOICES.mcp_tool_session] = { protocol.decision.allowSession, false },
  [M.APPROVAL_CHOICES.mcp_server_session] = { protocol.decision.allowSession, true },
  [M.APPROVAL_CHOICES.mcp_tool_workspace] = { protocol.decision.allowWorkspace, false },
  [M.APPROVAL_CHOICES.mcp_server_workspace] = { protocol.decision.allowWorkspace, true },
  [M.APPROVAL_CHOICES.mcp_deny_session] = { protocol.decision.denySession, false },
  [M.APPROVAL_CHOICES.mcp_deny_workspace] = { protocol.decision.denyWorkspace, false },
}

--- The rule an MCP choice grants for `req`, or nil when it is not one.
function M.mcp_choice_rule(req, choice)
  local how = MCP_CHOICES[choice]
  local suggested, text = suggested_rule(req)
  if not how or not suggested or suggested.kind ~= "mcp" then
    return nil
  end
  local server = text:match("^([^/]+)/")
  if not server then
    return nil
  end
  return how[1], { kind = "mcp", tool = how[2] and (server .. "/*") or text }
end

--- Acts on the menu's choice about `asked`: Deny, dismissal and anything
--- unknown deny; the "…" choices ask for a reason or a rule first, and an
--- empty or dismissed answer there goes back to the question.
local function on_approval_choice(asked, choice)
  if asked.decided then
    return
  end
  local c = M.APPROVAL_CHOICES
  local d = protocol.decision
  local function back()
    if not asked.decided then
      asked.decided = true
      ask_approval(asked.req)
    end
  end
  if choice == c.approve then
    decide(asked, { decision = d.approve })
  elseif choice == c.deny_with_reason then
    input_safely("Why deny it? (the model reads this): ", "", "mino.approval.reason", function(reason)
      if asked.decided then
        return
      end
      if not reason then
        return back()
      end
      decide(asked, { decision = d.deny, reason = reason })
    end)
  elseif MCP_CHOICES[choice] then
    -- The menu named the rule: nothing more to ask. No rule: denied.
    local decision, rule = M.mcp_choice_rule(asked.req, choice)
    decide(asked, decision and { decision = decision, rule = rule } or { decision = d.deny })
  elseif RULE_CHOICES[choice] and suggested_rule(asked.req) then
    local decision = RULE_CHOICES[choice]
    local suggested, text = suggested_rule(asked.req)
    local path = suggested.kind == "path"
    input_safely(RULE_PROMPTS[(path and "path_" or "") .. decision], text, "mino.approval.rule", function(rule)
      if asked.decided then
        return
      end
      if not rule then
        return back()
      end
      decide(asked, { decision = decision, rule = path and { kind = "path", pattern = rule } or { kind = "prefix", command = rule } })
    end)
  else
    decide(asked, { decision = d.deny })
  end
end

--- At most this many characters of an MCP call's arguments go in its prompt line.
local MCP_PROMPT_ARGUMENTS = 200

--- The question asked about a call: the essentials are in the prompt itself,
--- for UIs that show it apart from the chat.
function M.approval_prompt(req)
  local read = require("mino.reads").of(req)
  if read then
    local mode = type(req.approvalMode) == "string" and (", approval mode " .. req.approvalMode) or ""
    return ("Mino wants to %s `%s`, OUTSIDE the workspace%s. Approve?"):format(read.tool, read.path, mode)
  end
  if diff.is_edit(req) then
    local mode = type(req.approvalMode) == "string" and (", approval mode " .. req.approvalMode) or ""
    return ("Mino wants to %s%s (the diff is in the split). Approve?"):format(diff.summary(req.edit), mode)
  end
  local m = chat.mcp_of(req)
  if m then
    local args = m.arguments:gsub("%s+", " ")
    if vim.fn.strchars(args) > MCP_PROMPT_ARGUMENTS then
      args = vim.fn.strcharpart(args, 0, MCP_PROMPT_ARGUMENTS - 1) .. "…"
    end
    local claims = chat.mcp_claims(m.annotations)
    local mode = type(req.approvalMode) == "string" and (", approval mode " .. req.approvalMode) or ""
    return ("Mino wants to call the tool `%s` of the MCP server `%s` with %s%s%s (the whole call is in the chat). Approve?")
      :format(m.tool, m.server, args, claims and (" — " .. claims .. ", unchecked") or "", mode)
  end
  local limits = type(req.limits) == "table" and req.limits or {}
  local details = { ("timeout %s s"):format(limits.timeoutSeconds or "?") }
  if type(req.sandbox) == "string" then
    table.insert(details, "sandbox " .. req.sandbox)
  end
  if type(req.approvalMode) == "string" then
    table.insert(details, "approval mode " .. req.approvalMode)
  end
  return ("Mino wants to run `%s` in %s (%s). Approve?"):format(req.command or "?", req.directory or "?",
    table.concat(details, ", "))
end

--- The screen rows at the bottom Neovim's own vim.ui.select (inputlist())
--- covers for a question: its prompt (wrapped), one row per answer, the
--- "Type number" line, and one for a warning (typed-ahead keys dropped).
function M.menu_rows(prompt, items)
  local columns = math.max(20, vim.o.columns)
  return math.ceil(math.max(1, vim.fn.strdisplaywidth(prompt)) / columns) + #items + 2
end

--- Asks about `req` (again, after a refused rule or a dismissed reason).
ask_approval = function(req)
  local asked = { req = req, decided = false }
  vim.schedule(function()
    local prompt, items = M.approval_prompt(req), M.approval_items(req)
    -- An edit's diff is on screen before its question, clear of the menu:
    -- the person sees what they decide about.
    local ok, e = pcall(diff.show_request, req, M.menu_rows(prompt, items))
    if not ok then
      notify("could not show the diff: " .. tostring(e) .. " (it is in the chat)", vim.log.levels.WARN)
    end
    ask_safely(prompt, items, "mino.approval", function(choice)
      on_approval_choice(asked, choice)
    end, function()
      M.state.shown_approval = asked
    end)
  end)
end

--- Asks about the next queued approval, one at a time.
function M._next_approval()
  if M.state.asking_approval then
    return
  end
  local req = table.remove(M.state.approvals, 1)
  if not req then
    return
  end
  M.state.asking_approval = true
  ask_approval(req)
end

--- The approve / deny keymaps: they answer only a question already on screen
--- (a key pressed before it appeared finds none, or was dropped with the
--- typed-ahead keys when it appeared).
local function answer_shown(approved)
  local asked = M.state.shown_approval
  if not asked or asked.decided then
    notify("no command is waiting for your approval")
    return
  end
  decide(asked, { decision = approved and protocol.decision.approve or protocol.decision.deny })
end

function M.approve_shown()
  answer_shown(true)
end

function M.deny_shown()
  answer_shown(false)
end

-- ------------------------------------------------------------ acknowledgement gate

--- Asks the recovery question; only an explicit "Yes" sends mino/acknowledge.
function M.acknowledge()
  local rec = M.state.recovery
  if not rec then
    notify("no unknown tool results await acknowledgement")
    return
  end
  M.ask_acknowledgement()
end

function M.ask_acknowledgement()
  local rec = M.state.recovery
  if not rec or M.state.asking_ack then
    return
  end
  M.state.asking_ack = true
  vim.schedule(function()
    ask_yes_no(M.ACK_QUESTION, "mino.acknowledge", function(yes)
      if M.state.recovery ~= rec then
        return -- asked about a session that is no longer open
      end
      M.state.asking_ack = false
      if not yes then
        chat.append({ "", "_Not acknowledged. Mino refuses new questions until you run :MinoAcknowledge and answer Yes._" })
        notify("unknown tool results not acknowledged; Mino will refuse questions until you run :MinoAcknowledge",
          vim.log.levels.WARN)
        return
      end
      local ids = rec.unacknowledgedTurnIds
      local params = (ids and #ids > 0) and { turnIds = ids } or vim.empty_dict()
      M.request(method.acknowledge, params, function(err, result)
        if err then
          notify("acknowledgement failed: " .. format_error(err), vim.log.levels.ERROR)
          return
        end
        if M.state.recovery == rec then
          M.state.recovery = nil
        end
        local acked = (result and result.acknowledged) or {}
        chat.append({ "", ("_Acknowledged: %s. You can continue._"):format(table.concat(acked, ", ")) })
        notify("acknowledged " .. table.concat(acked, ", "))
      end)
    end)
  end)
end

-- ------------------------------------------------------------ lifecycle

local function make_on_exit(start_ctx)
  return function(code, signal, client_id)
    -- The process's own status (Neovim's client is told 0, 0: see M.start).
    code, signal = start_ctx.exit_code or code, start_ctx.exit_signal or signal
    exited[client_id] = true
    vim.schedule(function()
      local purposeful = stopping[client_id] or start_ctx.init_failed
      stopping[client_id] = nil
      if M.state.client_id == client_id then
        M.state.client_id = nil
        M.state.running_turn = nil
        M.state.approvals = {}
        M.state.shown_approval = nil
        -- No edit of a stopped server waits for a decision any more.
        diff.turn_ended(nil)
        if #M.state.outbox > 0 then
          notify(("%d question(s) not sent: the server is not running"):format(#M.state.outbox), vim.log.levels.WARN)
          M.state.outbox = {}
        end
      end
      if start_ctx.init_failed then
        return
      end
      chat.server_exited(code, signal, purposeful)
      if not purposeful then
        notify(("mino-server exited unexpectedly (code %s, signal %s). Log: %s"):format(code, signal, M.log_path()),
          vim.log.levels.ERROR)
      end
    end)
  end
end

--- Waits (briefly) until the process of client `id` has exited.
local function wait_exit(id, ms)
  if not id then
    return true
  end
  return vim.wait(ms or 3000, function()
    return exited[id] == true
  end, 10)
end

--- Handles the notifications that waited for the history (or a switch) and
--- sends the questions asked meanwhile.
local function release_deferred()
  M.state.history_loaded = true
  local deferred = M.state.deferred
  M.state.deferred = {}
  for _, d in ipairs(deferred) do
    dispatch(d[1], d[2])
  end
  local mcp = M.state.mcp_deferred
  M.state.mcp_deferred = {}
  for _, p in ipairs(mcp) do
    chat.mcp_status(p)
  end
  local outbox = M.state.outbox
  M.state.outbox = {}
  for _, q in ipairs(outbox) do
    M.send(q.text, q.opts)
  end
end

local function load_history()
  M.request(method.history, vim.empty_dict(), function(err, result)
    if err then
      notify("cannot load history: " .. format_error(err), vim.log.levels.ERROR)
    elseif result then
      chat.render_history(result)
    end
    release_deferred()
  end)
end

--- Starts mino-server unless it runs already; returns the client id or nil.
function M.start()
  if M.client() then
    return M.state.client_id
  end
  -- A server that is still shutting down holds the session lock.
  if M.state.client_id and not exited[M.state.client_id] then
    wait_exit(M.state.client_id, 3000)
  end
  local exe, why = M.server_binary()
  if not exe then
    notify(why, vim.log.levels.ERROR)
    return nil
  end
  local cwd = vim.fn.fnamemodify(M.config.cwd or vim.fn.getcwd(), ":p"):gsub("/$", "")
  if cwd == "" then
    cwd = "/"
  end
  if vim.fn.isdirectory(cwd) ~= 1 then
    notify(("cwd %s is not a directory"):format(cwd), vim.log.levels.ERROR)
    return nil
  end
  local log = M.log_path()
  vim.fn.mkdir(vim.fn.fnamemodify(log, ":h"), "p")
  local f = io.open(log, "a")
  if f then
    f:write(("\n=== %s mino.nvim starting %s (cwd %s) ===\n"):format(os.date("!%Y-%m-%dT%H:%M:%SZ"), exe, cwd))
    f:close()
  end
  -- The shell only redirects stderr to the log and then becomes the server.
  local cmd = { "sh", "-c", 'log=$1; shift; exec "$@" 2>>"$log"', "mino-server", log, exe }
  vim.list_extend(cmd, M.config.server_args or {})

  local init_options = { cwd = cwd }
  -- After a switch, a restart reopens the session switched to.
  local session = reopen_session or M.config.session
  if session then
    init_options.session = session
  elseif M.config.new_session then
    init_options.newSession = true
  end
  init_options.approvalMode = M.config.approval_mode
  init_options.sandbox = M.config.sandbox

  M.state.history_loaded = false
  M.state.deferred = {}
  M.state.outbox = M.state.outbox or {}
  M.state.ended = {}
  M.state.recovery = nil
  M.state.recovery_seen = false
  M.state.running_turn = nil
  M.state.approvals = {}
  M.state.asking_approval = false
  M.state.shown_approval = nil
  M.state.asking_ack = false
  M.state.no_session_list = false

  local start_ctx = { init_failed = false }
  local env = M.config.cmd_env
  local config = {
    name = "mino",
    -- A function, so that a refused `initialize` (e.g. the session is locked by
    -- another Mino) is reported with vim.notify instead of an assertion error.
    cmd = function(dispatchers)
      -- Mino reports an unexpected exit itself, once (chat and vim.notify):
      -- Neovim's client, told a clean exit, does not repeat it as "Client
      -- mino quit with exit code …".
      local lsp_on_exit = dispatchers.on_exit
      dispatchers = vim.tbl_extend("force", dispatchers, {
        on_exit = function(code, signal)
          start_ctx.exit_code, start_ctx.exit_signal = code, signal
          if lsp_on_exit then
            lsp_on_exit(0, 0)
          end
        end,
      })
      local rpc = vim.lsp.rpc.start(cmd, dispatchers, { cwd = cwd, env = env })
      local request = rpc.request
      -- Works whether the rpc object is called as rpc.request(...) or rpc:request(...).
      rpc.request = function(...)
        local args = { ... }
        local n = select("#", ...)
        local i = args[1] == rpc and 2 or 1
        if args[i] == "initialize" then
          local orig = args[i + 2]
          args[i + 2] = function(err, result)
            if err then
              start_ctx.init_failed = true
              local msg = ("mino-server refused to start: %s. Log: %s"):format(format_error(err), log)
              vim.schedule(function()
                chat.append({ "", "**" .. msg .. "**" })
                notify(msg, vim.log.levels.ERROR)
              end)
              rpc.terminate(rpc)
              return
            end
            return orig(err, result)
          end
        end
        return request((table.unpack or unpack)(args, 1, n))
      end
      return rpc
    end,
    root_dir = cwd,
    init_options = init_options,
    handlers = make_handlers(),
    on_init = function(client, result)
      M.state.capabilities = vim.tbl_get(result or {}, "capabilities", "experimental", "mino")
      vim.schedule(function()
        if type(M.state.capabilities) == "table" then
          session_changed(M.state.capabilities)
        end
        chat.server_started(M.state.capabilities)
        load_history()
      end)
    end,
    on_error = function(code, err)
      vim.schedule(function()
        local name = vim.lsp.rpc.client_errors[code] or tostring(code)
        notify(("client error %s: %s (log: %s)"):format(name, vim.inspect(err), M.log_path()), vim.log.levels.ERROR)
      end)
    end,
    on_exit = make_on_exit(start_ctx),
  }
  local id
  if HAS_011 then
    id = vim.lsp.start(config, {
      attach = false,
      reuse_client = function()
        return false
      end,
    })
  else
    id = vim.lsp.start_client(config)
  end
  if not id then
    notify("could not start " .. exe .. " (log: " .. log .. ")", vim.log.levels.ERROR)
    return nil
  end
  M.state.client_id = id
  if not M._leave_autocmd then
    -- Neovim stops every LSP client on exit; that is not a crash.
    M._leave_autocmd = vim.api.nvim_create_autocmd("VimLeavePre", {
      group = vim.api.nvim_create_augroup("mino", { clear = true }),
      callback = function()
        if M.state.client_id then
          stopping[M.state.client_id] = true
        end
      end,
    })
  end
  return id
end

--- Stops the server; `force` kills it instead of asking it to shut down.
function M.stop(force)
  local client = M.client()
  if not client then
    return
  end
  stopping[client.id] = true
  client_call(client, "stop", force)
end

function M.restart()
  local old = M.state.client_id
  M.stop()
  if old and not wait_exit(old, 3000) then
    M.stop(true)
    wait_exit(old, 2000)
  end
  M.state.client_id = nil
  return M.start()
end

-- ------------------------------------------------------------ sessions

local function is_nil(v)
  return v == nil or v == vim.NIL
end

--- Seconds since the epoch of an RFC 3339 time ("2026-11-30T10:00:00.123Z",
--- "…+01:00"), or nil.
local function rfc3339_epoch(s)
  if type(s) ~= "string" then
    return nil
  end
  local y, mo, d, h, mi, sec, rest = s:match("^(%d%d%d%d)-(%d%d)-(%d%d)[Tt ](%d%d):(%d%d):(%d%d)(.*)$")
  if not y then
    return nil
  end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  -- Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
  local yy = mo <= 2 and y - 1 or y
  local era = math.floor(yy / 400)
  local yoe = yy - era * 400
  local doy = math.floor((153 * (mo + (mo > 2 and -3 or 9)) + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  local days = era * 146097 + doe - 719468
  local t = days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(sec)
  rest = rest:gsub("^%.%d+", "")
  local sign, oh, om = rest:match("^([+-])(%d%d):?(%d%d)$")
  if sign then
    local offset = tonumber(oh) * 3600 + tonumber(om) * 60
    t = sign == "+" and t - offset or t + offset
  elseif not rest:match("^[Zz]?$") then
    return nil
  end
  return t
end

--- "just now", "5 min ago", "3 h ago", "2 days ago", or the date for older times.
function M.relative_time(s, now)
  local t = rfc3339_epoch(s)
  if not t then
    return tostring(is_nil(s) and "?" or s)
  end
  local ago = (now or os.time()) - t
  if ago < 60 then
    return "just now"
  elseif ago < 3600 then
    return ("%d min ago"):format(math.floor(ago / 60))
  elseif ago < 86400 then
    return ("%d h ago"):format(math.floor(ago / 3600))
  elseif ago < 7 * 86400 then
    local days = math.floor(ago / 86400)
    return days == 1 and "yesterday" or ("%d days ago"):format(days)
  end
  return s:sub(1, 10)
end

--- A session's title for display ("untitled" before its first question).
local function title_of(s)
  if type(s) == "table" and type(s.title) == "string" and s.title ~= "" then
    return s.title
  end
  return "untitled"
end

--- How a `SessionEntry` reads in the picker: title, last activity, turns, and
--- marks for a session waiting for acknowledgement or open in another Mino.
--- `with_cwd` adds its folder (the all-folders list).
function M.format_session(e, with_cwd)
  local turns = tonumber(e.turns) or 0
  local parts = { title_of(e), M.relative_time(e.lastActiveAt), ("%d turn%s"):format(turns, turns == 1 and "" or "s") }
  if type(e.usage) == "table" and type(e.usage.totalTokens) == "number" then
    -- The session's tokens, summed by the server.
    table.insert(parts, require("mino.chat").usage_text(e.usage):match("^[%d,]+ tokens"))
  end
  if e.acknowledgementRequired == true then
    table.insert(parts, "⚠ needs acknowledgement")
  end
  if e.heldElsewhere == true then
    table.insert(parts, "open in another Mino")
  end
  if e.current == true then
    table.insert(parts, "open here")
  end
  if with_cwd and type(e.cwd) == "string" then
    table.insert(parts, e.cwd)
  end
  return table.concat(parts, " · ")
end

--- The picker's last entry: the sessions of every folder.
M.ALL_SESSIONS_ITEM = "All folders' sessions…"

--- Records `info` as the open session and fires MinoSessionChanged.
session_changed = function(info)
  M.state.session = {
    sessionId = info.sessionId,
    title = (type(info.title) == "string" and info.title ~= "") and info.title or nil,
    cwd = info.cwd,
    journalPath = info.journalPath,
  }
  emit("MinoSessionChanged", vim.deepcopy(M.state.session))
end

--- Makes `info` (a SessionInfo) the open session: the chat is cleared and
--- rebuilt from its history, then the mino/recovery that follows the switch is
--- handled as at startup (its acknowledgement question included).
local function switched(info)
  reopen_session = info.sessionId
  M.state.ended = {}
  M.state.recovery = nil
  M.state.recovery_seen = false
  M.state.running_turn = nil
  M.state.approvals = {}
  M.state.asking_approval = false
  M.state.shown_approval = nil
  M.state.asking_ack = false
  -- MCP servers are the session's: the new one reports its own.
  M.state.mcp = {}
  diff._reset()
  local caps = vim.tbl_extend("force", M.state.capabilities or {}, {
    sessionId = info.sessionId,
    journalPath = info.journalPath,
    cwd = info.cwd,
    title = info.title,
  })
  -- Each session keeps its own model: learnt below, not carried over.
  caps.model = nil
  M.state.capabilities = caps
  session_changed(info)
  chat.server_started(caps)
  load_history()
  M.request(method.modelsList, vim.empty_dict(), function(err, result)
    if not err and type(result) == "table" and type(result.current) == "string"
      and M.state.capabilities == caps then
      caps.model = result.current
      chat.set_model(result.current)
    end
  end)
end

--- Asks the server to switch sessions (mino/sessions/new or /open). Until it
--- answers, the recovery that follows a switch and questions sent meanwhile
--- wait; a refusal (e.g. -32011 while a turn runs, -32015 for a session open
--- elsewhere) is shown and changes nothing.
local function switch_session(name, params, cb)
  if not M.client() then
    notify("mino-server is not running: run :Mino first", vim.log.levels.WARN)
    return
  end
  if M.state.switching then
    notify("a session switch is already on its way", vim.log.levels.WARN)
    return
  end
  if not M.state.history_loaded then
    -- The open session's history is still being shown: a switch now would mix the two.
    notify("Mino is still loading this session; try again in a moment", vim.log.levels.WARN)
    return
  end
  M.state.switching = true
  M.state.history_loaded = false
  M.request(name, params, function(err, info)
    M.state.switching = false
    if err or type(info) ~= "table" or type(info.sessionId) ~= "string" then
      release_deferred()
      local level = (err and err.code == M.errors.TURN_IN_PROGRESS) and vim.log.levels.WARN or vim.log.levels.ERROR
      notify(err and format_error(err) or ("%s answered without a session"):format(name), level)
      return
    end
    chat.reveal(M.config)
    switched(info)
    if cb then
      cb(info)
    end
  end)
end

--- :MinoNew: a new session in this workspace.
function M.new_session()
  if not M.client() then
    -- Nothing is open yet: start straight into a new session.
    reopen_session = nil
    local saved = M.config.new_session
    M.config.new_session = true
    M.open()
    M.config.new_session = saved
    return
  end
  switch_session(method.sessionsNew, { cwd = M.state.capabilities and M.state.capabilities.cwd or nil })
end

--- Opens session `id` (mino/sessions/open).
function M.open_session(id)
  switch_session(method.sessionsOpen, { sessionId = id })
end

--- Lists sessions (`scope` "workspace" or "all"), newest first; `cb(err, entries)`.
local SESSION_PAGE = 100
function M.list_sessions(scope, cb)
  M.request(method.sessionsList, { scope = scope, limit = SESSION_PAGE }, function(err, result)
    if err then
      return cb(err)
    end
    cb(nil, (result and result.sessions) or {}, result and not is_nil(result.nextCursor))
  end)
end

local function list_or_notify(scope, cb)
  if not M.start() then
    return
  end
  M.list_sessions(scope, function(err, entries, more)
    if err then
      notify("cannot list sessions: " .. format_error(err), vim.log.levels.ERROR)
      return
    end
    cb(entries, more)
  end)
end

--- :MinoSessions: picks a session of this workspace (or, from the last entry,
--- of any folder) with vim.ui.select and opens it.
function M.pick_session(scope)
  scope = scope or "workspace"
  list_or_notify(scope, function(entries, more)
    local items = vim.list_extend({}, entries)
    if scope == "workspace" then
      table.insert(items, M.ALL_SESSIONS_ITEM)
    end
    local prompt = scope == "workspace" and "Mino sessions in this folder" or "Mino sessions in every folder"
    if more then
      prompt = ("%s (the %d most recent)"):format(prompt, SESSION_PAGE)
    end
    vim.ui.select(items, {
      prompt = prompt,
      kind = "mino.sessions",
      format_item = function(item)
        return type(item) == "table" and M.format_session(item, scope == "all") or item
      end,
    }, function(choice)
      if choice == M.ALL_SESSIONS_ITEM then
        return M.pick_session("all")
      end
      if type(choice) ~= "table" then
        return
      end
      if choice.current then
        notify(("“%s” is already open"):format(title_of(choice)))
        return
      end
      M.open_session(choice.sessionId)
    end)
  end)
end

--- :MinoRename {title}: renames the open session (asks for the title without one).
function M.rename_session(title)
  local session = M.state.session
  if not M.client() or not session then
    notify("no session is open: run :Mino first", vim.log.levels.WARN)
    return
  end
  local function rename(t)
    t = vim.trim(t or "")
    if t == "" then
      return
    end
    M.request(method.sessionsRename, { sessionId = session.sessionId, title = t }, function(err)
      if err then
        notify("rename refused: " .. format_error(err), vim.log.levels.ERROR)
        return
      end
      if M.state.session and M.state.session.sessionId == session.sessionId then
        session_changed(vim.tbl_extend("force", M.state.session, { title = t }))
        chat.set_title(t)
      end
      notify(("session renamed “%s”"):format(t))
    end)
  end
  if title and vim.trim(title) ~= "" then
    return rename(title)
  end
  vim.ui.input({ prompt = "Session title: ", default = session.title or "" }, rename)
end

--- :MinoDelete: picks a session of this workspace and, after a confirmation
--- (No is the default), moves it to Mino's trash.
function M.delete_session()
  list_or_notify("workspace", function(entries)
    local deletable = vim.tbl_filter(function(e)
      return not e.current
    end, entries)
    if #deletable == 0 then
      notify("no other session of this folder to delete (the open one cannot be)")
      return
    end
    vim.ui.select(deletable, {
      prompt = "Delete which Mino session?",
      kind = "mino.sessions.delete",
      format_item = function(e)
        return M.format_session(e, false)
      end,
    }, function(choice)
      if type(choice) ~= "table" then
        return
      end
      ask_yes_no(("Move the session “%s” (%s) to Mino's trash?"):format(title_of(choice), choice.sessionId),
        "mino.sessions.delete.confirm", function(yes)
          if not yes then
            return
          end
          M.request(method.sessionsDelete, { sessionId = choice.sessionId }, function(err, result)
            if err then
              notify("delete refused: " .. format_error(err), vim.log.levels.ERROR)
              return
            end
            notify(("session “%s” moved to %s"):format(title_of(choice), (result and result.trashedTo) or "the trash"))
          end)
        end)
    end)
  end)
end

--- After a session's first question the server names it: fetches the title
--- for the header (a server without mino/sessions/list is left alone).
refresh_title = function()
  local session = M.state.session
  if not session or session.title or M.state.no_session_list then
    return
  end
  M.request(method.sessionsList, { scope = "all", limit = 20 }, function(err, result)
    if err and err.code == M.METHOD_NOT_FOUND then
      M.state.no_session_list = true -- a server older than sessions: not asked again
    end
    if err or not result then
      return
    end
    for _, e in ipairs(result.sessions or {}) do
      if e.sessionId == session.sessionId and M.state.session == session and type(e.title) == "string" then
        session_changed(vim.tbl_extend("force", session, { title = e.title }))
        chat.set_title(e.title)
      end
    end
  end)
end

-- ------------------------------------------------------------ approval rules

--- How a rule reads: `git status` (prefix, this session).
function M.format_rule(r)
  local scope = r.scope == "workspace" and "this workspace" or (r.scope == "session" and "this session" or tostring(r.scope))
  local deny = r.effect == "deny" and ", deny" or ""
  return ("%s  (%s, %s%s)"):format(r.command or r.pattern or "?", r.kind or "?", scope, deny)
end

--- :MinoRules: lists the approval rules in force and revokes the chosen one
--- after a confirmation (No is the default).
function M.rules()
  if not M.start() then
    return
  end
  M.request(method.rulesList, vim.empty_dict(), function(err, result)
    if err then
      notify("cannot list rules: " .. format_error(err), vim.log.levels.ERROR)
      return
    end
    result = result or {}
    local file_error = not is_nil(result.workspaceFileError) and result.workspaceFileError or nil
    if file_error then
      notify(("the workspace rules file %s is not used: %s"):format(result.workspaceFile or "?", file_error),
        vim.log.levels.WARN)
    end
    local rules = result.rules or {}
    if #rules == 0 then
      notify(("no approval rules (workspace rules file: %s)"):format(result.workspaceFile or "?"))
      return
    end
    local prompt = "Mino approval rules: choose one to revoke"
    if file_error then
      prompt = ("%s (workspace file unreadable: %s)"):format(prompt, file_error)
    end
    vim.ui.select(rules, { prompt = prompt, kind = "mino.rules", format_item = M.format_rule }, function(rule)
      if type(rule) ~= "table" then
        return
      end
      ask_yes_no(("Revoke the rule %s?"):format(M.format_rule(rule)), "mino.rules.revoke", function(yes)
        if not yes then
          return
        end
        M.request(method.rulesRevoke, { id = rule.id }, function(e)
          if e then
            notify("revoke refused: " .. format_error(e), vim.log.levels.ERROR)
            return
          end
          notify("revoked the rule " .. M.format_rule(rule))
        end)
      end)
    end)
  end)
end

local MCP_STATES = {
  starting = "starting",
  ready = "ready",
  failed = "failed to start (its tools are missing)",
  exited = "exited (its tools are missing)",
}

--- One MCP server's line: "fs: ready (2 tools: mcp__fs__read, mcp__fs__list)",
--- "ghost: failed to start (its tools are missing): why".
function M.format_mcp(s)
  local line = ("MCP server %s: %s"):format(s.server or "?", MCP_STATES[s.state] or tostring(s.state))
  if s.state == "ready" and type(s.tools) == "table" then
    line = line .. (" (%d tool%s%s)"):format(#s.tools, #s.tools == 1 and "" or "s",
      #s.tools > 0 and (": " .. table.concat(s.tools, ", ")) or "")
  end
  if type(s.reason) == "string" and s.reason ~= "" then
    line = line .. ": " .. s.reason
  end
  return line
end

local function restart_mcp(name)
  notify(("restarting the MCP server %s…"):format(name))
  M.request(method.mcpRestart, { server = name }, function(err, status)
    if err then
      notify(("cannot restart the MCP server %s: %s"):format(name, format_error(err)), vim.log.levels.ERROR)
      return
    end
    if type(status) == "table" and type(status.server) == "string" then
      -- Shown as a mino/mcp/status is (the server may also send one).
      local current = M.state.session and M.state.session.sessionId
      dispatch(notification.mcpStatus, vim.tbl_extend("force", status, { sessionId = current }))
    end
  end)
end

--- :MinoMcp lists the open session's MCP servers and their states;
--- `:MinoMcp restart NAME` restarts one (mino/mcp/restart).
function M.mcp(args)
  local words = vim.split(vim.trim(args or ""), "%s+", { trimempty = true })
  if #words > 0 and not (words[1] == "restart" and #words == 2) then
    notify("usage: :MinoMcp (list the MCP servers) or :MinoMcp restart NAME", vim.log.levels.ERROR)
    return
  end
  if not M.start() then
    return
  end
  if words[1] == "restart" then
    return restart_mcp(words[2])
  end
  M.request(method.mcpList, vim.empty_dict(), function(err, result)
    if err then
      notify("cannot list the MCP servers: " .. format_error(err), vim.log.levels.ERROR)
      return
    end
    local servers = type(result) == "table" and result.servers or {}
    if #servers == 0 then
      notify("no MCP servers (add them to config.toml as [mcp_servers.NAME])")
      return
    end
    local lines = {}
    local gone = false
    for _, s in ipairs(servers) do
      M.state.mcp[s.server] = s
      table.insert(lines, M.format_mcp(s))
      gone = gone or s.state == "failed" or s.state == "exited"
    end
    notify(table.concat(lines, "\n") .. (gone and "\n:MinoMcp restart NAME starts one again" or ""),
      gone and vim.log.levels.WARN or vim.log.levels.INFO)
  end)
end

--- The names :MinoMcp completes: `restart`, then the known servers.
function M.mcp_complete(arg_lead, cmd_line)
  local words = vim.split(cmd_line, "%s+", { trimempty = true })
  local candidates
  if #words <= 1 or (#words == 2 and arg_lead ~= "") then
    candidates = { "restart" }
  else
    candidates = vim.tbl_keys(M.state.mcp)
    table.sort(candidates)
  end
  return vim.tbl_filter(function(c)
    return c:sub(1, #arg_lead) == arg_lead
  end, candidates)
end

--- Carries out the confirmed plan and shows what happened (the history is
--- reloaded first: the rewound turns are marked there).
local function carry_out_rewind(plan)
  M.request(method.rewind, { turnId = plan.turnId, digest = plan.digest }, function(err, result)
    if err then
      local why = err.code == protocol.errors.REWIND_PLAN_CHANGED
          and " (something changed since the plan was shown; nothing was written: :MinoRewind again shows the new plan)"
        or ""
      chat.append({ "", ("**Rewind refused:** %s%s"):format(err.message or "?", why) })
      notify("the rewind was refused: " .. format_error(err) .. why, vim.log.levels.ERROR)
      return
    end
    local all = true
    for _, f in ipairs(result.files or {}) do
      all = all and (f.outcome == "restored" or f.outcome == "removed")
    end
    M.request(method.history, vim.empty_dict(), function(herr, history)
      if not herr and history then
        chat.render_history(history)
      end
      chat.append(chat.rewind_outcome_lines(result))
      reload_changed_buffers()
      notify(("rewound %d turn(s); %s"):format(#(result.turns or {}), all and "every file put back"
        or "some files were NOT put back (see the chat)"), all and vim.log.levels.INFO or vim.log.levels.WARN)
    end)
  end)
end

--- Shows the plan of rewinding `turn_id` and asks (No first and the
--- default; keys typed before the question are dropped).
local function plan_rewind(turn_id)
  M.request(method.rewindPlan, { turnId = turn_id }, function(err, plan)
    if err then
      notify("cannot rewind that turn: " .. format_error(err), vim.log.levels.ERROR)
      return
    end
    chat.reveal(M.config)
    chat.append(chat.rewind_plan_lines(plan))
    local question = ("Rewind: put back %d file(s), leave %d conflict(s), %d command(s) not undone?"):format(
      #(plan.files or {}), #(plan.conflicts or {}), #(plan.commands or {}))
    ask_yes_no(question, "mino.rewind", function(yes)
      if not yes then
        chat.append({ "", "_Not rewound: nothing was changed._" })
        return
      end
      carry_out_rewind(plan)
    end)
  end)
end

--- :MinoRewind [turn]: the plan of rewinding that turn and every later one
--- (without one, pick an ended turn of the history), confirmed before anything
--- is written.
function M.rewind(turn_id)
  if not M.start() then
    return
  end
  if type(turn_id) == "string" and turn_id ~= "" then
    return plan_rewind(turn_id)
  end
  M.request(method.history, vim.empty_dict(), function(err, history)
    if err then
      notify("cannot read the history: " .. format_error(err), vim.log.levels.ERROR)
      return
    end
    local turns = {}
    for _, t in ipairs(history and history.turns or {}) do
      if t.rewound ~= true and type(t.status) == "string" then
        table.insert(turns, 1, t)
      end
    end
    if #turns == 0 then
      notify("no turn to rewind")
      return
    end
    vim.ui.select(turns, {
      prompt = "Rewind to which turn? (its edits and every later turn's are undone)",
      kind = "mino.rewind.turn",
      format_item = function(t)
        local first = vim.split(t.input or "", "\n", { plain = true })[1] or ""
        return ("%s  %s"):format(t.turnId, first)
      end,
    }, function(t)
      if type(t) == "table" then
        plan_rewind(t.turnId)
      end
    end)
  end)
end

--- :MinoFork [turn]: a new session holding this one's history up to and
--- including `turn` (without one, the last ended turn not rewound), opened
--- at once; this session is kept as it is. It acts on no file, so nothing is
--- asked (and no typed-ahead key can answer anything).
function M.fork(turn_id)
  if not M.start() then
    return
  end
  M.request(method.history, vim.empty_dict(), function(err, history)
    if err or type(history) ~= "table" then
      notify("cannot read the history: " .. (err and format_error(err) or "no answer"), vim.log.levels.ERROR)
      return
    end
    local at = type(turn_id) == "string" and turn_id ~= "" and turn_id or nil
    if not at then
      for _, t in ipairs(history.turns or {}) do
        if t.rewound ~= true and type(t.status) == "string" then
          at = t.turnId
        end
      end
    end
    if not at then
      notify("no ended turn to fork from")
      return
    end
    M.request(method.sessionsFork, { sessionId = history.sessionId, turnId = at }, function(ferr, forked)
      if ferr or type(forked) ~= "table" or type(forked.sessionId) ~= "string" then
        notify("cannot fork: " .. (ferr and format_error(ferr) or "no answer"), vim.log.levels.ERROR)
        return
      end
      local said = ("forked %d turn(s) (through %s) of session %s into session %s; :MinoSessions goes back"):format(
        forked.turns or 0, at, history.sessionId, forked.sessionId)
      notify(said)
      M.open_session(forked.sessionId)
    end)
  end)
end

--- :MinoCompact: has the model summarise the conversation so far (later
--- questions send the summary; every turn stays in the history) and says
--- in one message what happened.
function M.compact()
  if not M.start() then
    return
  end
  M.request(method.compact, vim.empty_dict(), function(err, r)
    if err then
      notify("cannot compact: " .. format_error(err), vim.log.levels.ERROR)
    elseif r.compacted then
      local kept = (r.keptTurns or 0) > 0
          and ("; %d with unknown, not executed or recovered results still sent as they were"):format(r.keptTurns)
        or ""
      notify(("compacted: %d turn(s) summarised by the model%s"):format(r.summarizedTurns or 0, kept))
    else
      notify("not compacted: " .. tostring(r.reason), vim.log.levels.WARN)
    end
  end)
end

-- ------------------------------------------------------------ models

--- How a model reads in the picker: `qwen3:8b  (32768 tokens, current)`.
function M.format_model(m, current)
  local notes = {}
  if type(m.contextWindow) == "number" then
    table.insert(notes, ("%d tokens"):format(m.contextWindow))
  end
  if m.id == current then
    table.insert(notes, "current")
  end
  return #notes > 0 and ("%s  (%s)"):format(m.id, table.concat(notes, ", ")) or m.id
end

--- Makes `model` the open session's model (from its next question on).
local function select_model(model)
  M.request(method.modelsSelect, { model = model }, function(err, result)
    if err then
      notify("model not chosen: " .. format_error(err), vim.log.levels.ERROR)
      return
    end
    local chosen = (result or {}).model or model
    if type(M.state.capabilities) == "table" then
      M.state.capabilities.model = chosen
    end
    chat.set_model(chosen)
    notify(("this session now uses %s (from the next question on)"):format(chosen))
  end)
end

--- Sets the approval mode of the running server (mino/settings/update);
--- only the server's answer changes the header.
local function set_mode(mode)
  M.request(method.settingsUpdate, { approvalMode = mode }, function(err, result)
    if err then
      notify("approval mode not changed: " .. format_error(err), vim.log.levels.ERROR)
      return
    end
    local now = (result or {}).approvalMode or mode
    if type(M.state.capabilities) == "table" then
      M.state.capabilities.approvalMode = now
    end
    chat.set_mode(now)
    notify(("approval mode %s"):format(now))
  end)
end

--- :MinoMode [mode]: with a mode, sets it; without, picks one with
--- vim.ui.select (the protocol's modes in its order, the current marked).
function M.choose_mode(name)
  if not M.start() then
    return
  end
  name = name and vim.trim(name) or ""
  if name ~= "" then
    if not protocol.approval_mode[name] then
      notify(("unknown approval mode “%s”: use one of %s"):format(name, table.concat(protocol.approval_modes, ", ")),
        vim.log.levels.ERROR)
      return
    end
    return set_mode(name)
  end
  local current = type(M.state.capabilities) == "table" and M.state.capabilities.approvalMode or nil
  vim.ui.select(protocol.approval_modes, {
    prompt = ("Mino approval mode (current: %s)"):format(current or "?"),
    kind = "mino.modes",
    format_item = function(m)
      return m == current and (m .. "  (current)") or m
    end,
  }, function(m)
    if type(m) == "string" and m ~= current then
      set_mode(m)
    end
  end)
end

--- :MinoModel NAME: a model the list holds (the service's, else the
--- configured ones) is chosen at once; any other name (a typo would fail
--- only at the next question) is asked about, No first and the default,
--- keys typed before the question dropped.
function M.choose_named_model(name)
  M.request(method.modelsList, vim.empty_dict(), function(err, result)
    local why
    if err then
      why = ("the models could not be listed (%s)"):format(format_error(err))
    else
      result = result or {}
      local ids = {}
      for _, m in ipairs(result.models or {}) do
        if type(m) == "table" and m.id == name then
          return select_model(name)
        end
        table.insert(ids, type(m) == "table" and tostring(m.id) or "?")
      end
      local shown = table.concat(vim.list_slice(ids, 1, 10), ", ") .. (#ids > 10 and ", …" or "")
      if #ids == 0 then
        shown = "none"
      end
      why = result.source == "service" and ("the service does not list it (it lists: %s)"):format(shown)
        or ("the service gave no list and it is not a configured model (configured: %s)"):format(shown)
    end
    ask_yes_no(("Use the model “%s”? %s; a wrong name fails at the next question."):format(name, why),
      "mino.models.confirm", function(yes)
        if yes then
          select_model(name)
        else
          notify(("model not changed: “%s” is not listed (:MinoModel without a name lists the models)"):format(name),
            vim.log.levels.WARN)
        end
      end)
  end)
end

--- :MinoModel [name]: without a name, picks one of the models the service
--- lists (else the configured ones) with vim.ui.select, the current one
--- marked; with a name, chooses it. The session keeps its model when reopened.
function M.choose_model(name)
  if not M.start() then
    return
  end
  name = name and vim.trim(name) or ""
  if name ~= "" then
    return M.choose_named_model(name)
  end
  M.request(method.modelsList, vim.empty_dict(), function(err, result)
    if err then
      notify("cannot list models: " .. format_error(err), vim.log.levels.ERROR)
      return
    end
    result = result or {}
    local from = result.source == "service" and "the service's models" or "the configured models (the service gave no list)"
    local prompt = ("Mino model for this session (%s; current: %s)"):format(from, result.current or "?")
    vim.ui.select(result.models or {}, {
      prompt = prompt,
      kind = "mino.models",
      format_item = function(m)
        return M.format_model(m, result.current)
      end,
    }, function(m)
      if type(m) ~= "table" or m.id == result.current then
        return
      end
      select_model(m.id)
    end)
  end)
end

-- ------------------------------------------------------------ user actions

--- Sends a question. `opts.echo` = false when the prompt line already shows
--- it; `opts.expanded` when its #buffer references are already attached
--- (else they are, now: see mino.context). Returns false when nothing was
--- sent or queued.
function M.send(text, opts)
  opts = opts or {}
  text = vim.trim(text or "")
  if text == "" then
    return false
  end
  if not opts.expanded then
    local full, why = context.expand(text)
    if not full then
      notify("question not sent: " .. why, vim.log.levels.ERROR)
      return false
    end
    text = full
  end
  if not M.start() then
    return false
  end
  if not M.state.history_loaded then
    -- Sent once the server is initialized and the history is shown, so the
    -- question appears after the history and before its answer.
    table.insert(M.state.outbox, { text = text, opts = { echo = true, expanded = true } })
    return true
  end
  if opts.echo ~= false then
    chat.user_input(text)
  end
  local params = { text = text }
  local images = M.state.images or {}
  if #images > 0 then
    params.images = {}
    for _, path in ipairs(images) do
      table.insert(params.images, { path = path })
    end
  end
  M.request(method.chat, params, function(err, result)
    if err then
      chat.refused(err, format_error(err))
      if #images > 0 then
        notify(
          ("question not sent; %d image(s) still attached (:MinoImage! drops them)"):format(#images),
          vim.log.levels.WARN
        )
      end
      local level = vim.log.levels.ERROR
      if err.code == M.errors.ACKNOWLEDGEMENT_REQUIRED or err.code == M.errors.TURN_IN_PROGRESS then
        level = vim.log.levels.WARN
      end
      notify(format_error(err), level)
      return
    end
    if #images > 0 and M.state.images == images then
      M.state.images = {}
    end
    -- mino/turnStarted (or even mino/turnEnded) may arrive before this response.
    if result and result.turnId and not M.state.running_turn and not M.state.ended[result.turnId] then
      M.state.running_turn = result.turnId
    end
  end)
  return true
end

--- A byte count as people read it: `512 B`, `5.0 KiB`, `2.3 MiB`.
function M.human_size(bytes)
  if bytes < 1024 then
    return ("%d B"):format(bytes)
  elseif bytes < 1024 * 1024 then
    return ("%.1f KiB"):format(bytes / 1024)
  end
  return ("%.1f MiB"):format(bytes / (1024 * 1024))
end

--- :MinoImage PATH: attaches an image file (relative to the session's
--- directory) to the next question; the server reads it and checks it (PNG,
--- JPEG, GIF or WebP; at most 20 MiB; 8 per question). `:MinoImage` lists
--- what is attached; `:MinoImage!` drops it.
function M.attach_image(path, opts)
  opts = opts or {}
  M.state.images = M.state.images or {}
  if opts.clear then
    M.state.images = {}
    notify("attached images dropped")
    return true
  end
  path = vim.trim(path or "")
  if path == "" then
    if #M.state.images == 0 then
      notify("no image attached; :MinoImage PATH attaches one to your next question")
    else
      notify("attached: " .. table.concat(M.state.images, ", "))
    end
    return true
  end
  if #M.state.images >= 8 then
    notify("not attached: at most 8 images go with one question (:MinoImage! drops them)", vim.log.levels.ERROR)
    return false
  end
  local cwd = M.config.cwd or vim.fn.getcwd()
  local full = vim.fn.fnamemodify(path, ":p")
  if not vim.startswith(path, "/") and not vim.startswith(path, "~") then
    full = vim.fs.normalize(cwd .. "/" .. path)
  end
  local size = vim.fn.getfsize(full)
  if size < 0 or vim.fn.isdirectory(full) == 1 then
    notify(("not attached: %s is not a readable file"):format(full), vim.log.levels.ERROR)
    return false
  end
  if size > 20 * 1024 * 1024 then
    notify(
      ("not attached: %s is %s; an image may be at most 20 MiB (scale it down or crop it)"):format(full, M.human_size(size)),
      vim.log.levels.ERROR
    )
    return false
  end
  table.insert(M.state.images, full)
  notify(("attached %s (%s); %d image(s) go with your next question"):format(
    vim.fn.fnamemodify(full, ":t"), M.human_size(size), #M.state.images))
  return true
end

--- :[range]MinoSend [question]: attaches lines `line1`-`line2` of the current
--- buffer (all of it without a range). With a question, asks it at once;
--- without one, writes the reference (`#buffer:NAME:FROM-TO`) into the
--- input, where you write the question.
function M.send_range(opts)
  local buf = vim.api.nvim_get_current_buf()
  if vim.startswith(vim.api.nvim_buf_get_name(buf), "mino://") then
    notify(":MinoSend attaches lines of another buffer: run it there (e.g. on a visual selection)", vim.log.levels.WARN)
    return
  end
  local ref
  if opts.range and opts.range > 0 then
    ref = context.reference(buf, opts.line1, opts.line2)
  else
    ref = context.reference(buf)
  end
  local question = vim.trim(opts.question or "")
  if question ~= "" then
    M.open()
    M.send(question .. "\n\n" .. ref)
    return
  end
  M.start()
  chat.open(M.config)
  chat.add_to_input(ref)
end

--- Opens the chat window (starting the server if needed) and optionally asks;
--- `focus_insert` starts insert mode in the input window.
function M.open(opts)
  opts = opts or {}
  M.start()
  local config = M.config
  if opts.focus_insert then
    config = vim.tbl_extend("force", config, { start_insert = true })
  end
  chat.open(config)
  if opts.question then
    M.send(opts.question)
  end
end

--- :MinoDiff: the diff of the edit waiting for a decision, else of the last
--- edit, in its split. `opts.at_cursor` (`gd` in the chat): the diff the
--- cursor is in, when it is in one.
function M.show_diff(opts)
  if opts and opts.at_cursor and diff.show_at_cursor() then
    return
  end
  if not diff.reopen() then
    notify("no edit to show: no edit waits for a decision and none was made in this session")
  end
end

--- Cancels the running turn.
function M.cancel()
  local turn = M.state.running_turn
  if not turn then
    notify("no turn is running")
    return
  end
  M.request(method.cancel, { turnId = turn }, function(err)
    if err then
      notify("cancel failed: " .. format_error(err), vim.log.levels.ERROR)
    end
  end)
end

--- Test hook: stops everything and forgets all state.
function M._reset()
  local client = M.client()
  if client then
    stopping[client.id] = true
    client_call(client, "stop", true)
    wait_exit(client.id, 3000)
  end
  M.state = fresh_state()
  reopen_session = nil
  chat._reset()
  diff._reset()
end

chat._set_sender(function(text, opts)
  return M.send(text, opts or { echo = false })
end)

return M
