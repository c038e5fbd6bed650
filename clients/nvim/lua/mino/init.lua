--- Mino for Neovim: a chat buffer on top of `mino-server` (JSON-RPC over stdio,
--- LSP base protocol). The server runs as an LSP client that is attached to no
--- buffer; Mino's own methods go through `client:request`, its notifications
--- through the client's handlers.
local M = {}

local chat = require("mino.chat")
--- Method names, statuses, decisions, error codes and fixed messages,
--- generated from the Rust crate mino-protocol (see that file's first line).
local protocol = require("mino.protocol")
local method, notification = protocol.method, protocol.notification

local HAS_011 = vim.fn.has("nvim-0.11") == 1

--- Error codes of the wire contract.
M.errors = protocol.errors

M.ACK_QUESTION = protocol.messages.ACKNOWLEDGEMENT_QUESTION

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
  }
end
M.state = fresh_state()
--- Client ids stopped on purpose (kept across resets: their exit arrives later).
local stopping = {}
--- Client ids whose process has exited.
local exited = {}

local function notify(msg, level)
  vim.notify("Mino: " .. msg, level or vim.log.levels.INFO, { title = "Mino" })
end
M._notify = notify

--- Global keymaps set by the last setup(), so a later setup() can remove them.
local mapped = {}

local function apply_keymaps(opt)
  for _, lhs in ipairs(mapped) do
    pcall(vim.keymap.del, "n", lhs)
  end
  mapped = {}
  if not opt then
    return
  end
  local keys = vim.deepcopy(M.default_keymaps)
  if type(opt) == "table" then
    for name, lhs in pairs(opt) do
      if M.default_keymaps[name] == nil then
        notify(("keymaps.%s is not a Mino keymap (known: open, cancel, approve, deny)"):format(name),
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
  }
  for name, lhs in pairs(keys) do
    if type(lhs) == "string" and lhs ~= "" then
      vim.keymap.set("n", lhs, actions[name][1], { desc = actions[name][2] })
      table.insert(mapped, lhs)
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
    local expected = {
      [M.errors.TURN_IN_PROGRESS] = true,
      [M.errors.NO_PENDING_APPROVAL] = true,
      [M.errors.UNKNOWN_TURN] = true,
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

on[notification.approvalRequest] = function(p)
  chat.approval_request(p)
  chat.reveal(M.config)
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

on[notification.toolResult] = function(p)
  chat.tool_result(p)
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
  chat.turn_ended(p)
  emit("MinoRequestFinished", {
    turnId = p.turnId,
    status = p.status,
    reason = (p.reason ~= vim.NIL) and p.reason or nil,
  })
  if p.status == protocol.turn_status.failed then
    local reason = (p.reason ~= nil and p.reason ~= vim.NIL) and p.reason or "no reason given"
    notify(("turn failed: %s (log: %s)"):format(reason, M.log_path()), vim.log.levels.ERROR)
  end
end

M._on = on

local function make_handlers()
  local handlers = {}
  for method, fn in pairs(on) do
    handlers[method] = function(_, params, _)
      local ok, e = pcall(fn, params or {})
      if not ok then
        notify(("error handling %s: %s"):format(method, e), vim.log.levels.ERROR)
      end
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

--- Asks `question` with vim.ui.select after dropping typed-ahead keys; the
--- declining answer is listed first, so a UI whose <CR> takes the highlighted
--- (first) item declines, and so does dismissing the menu. The screen is
--- redrawn first, so the question never shows over a stale chat; `on_shown`
--- runs right before the question is asked.
local function ask_safely(question, decline, accept, kind, on_answer, on_shown)
  local dropped = discard_typeahead()
  if dropped > 0 then
    notify(("%d key(s) typed before the question appeared were ignored"):format(dropped), vim.log.levels.WARN)
  end
  chat.redraw()
  if on_shown then
    on_shown()
  end
  vim.ui.select({ decline, accept }, { prompt = question, kind = kind }, function(choice)
    on_answer(choice == accept)
  end)
end

--- Records the decision about `asked` (once: a keymap and the menu may both
--- answer it) and asks about the next queued approval.
local function decide(asked, approved)
  if asked.decided then
    return
  end
  asked.decided = true
  if M.state.shown_approval == asked then
    M.state.shown_approval = nil
  end
  local req = asked.req
  local decision = approved and protocol.decision.approve or protocol.decision.deny
  M.state.asking_approval = false
  if M.state.ended[req.turnId] then
    chat.append({ ("_`%s` no longer awaits a decision: its turn has ended; nothing was run._"):format(req.callId) })
    M._next_approval()
    return
  end
  chat.approval_decided(req, decision)
  emit("MinoApprovalDecided", { turnId = req.turnId, callId = req.callId, decision = decision })
  -- The turn id binds the decision to the turn that asked: the server
  -- refuses it (-32012) if that turn no longer waits for this call.
  M.request(method.approval, { turnId = req.turnId, callId = req.callId, decision = decision }, function(err)
    if err and err.code == M.errors.NO_PENDING_APPROVAL then
      -- The turn ended (e.g. cancelled) while the question was open.
      chat.append({ ("_`%s` no longer awaits a decision: %s_"):format(req.callId, err.message or "") })
    elseif err then
      notify("approval of " .. req.callId .. " failed: " .. format_error(err), vim.log.levels.ERROR)
    end
  end)
  M._next_approval()
end

--- The question asked about a call: the essentials are in the prompt itself,
--- for UIs that show it apart from the chat.
function M.approval_prompt(req)
  local limits = type(req.limits) == "table" and req.limits or {}
  return ("Mino wants to run `%s` in %s (timeout %s s). Approve?"):format(req.command or "?", req.directory or "?",
    limits.timeoutSeconds or "?")
end

--- Asks about the next queued approval with vim.ui.select; anything but an
--- explicit "Approve" (including dismissing the menu) denies.
function M._next_approval()
  if M.state.asking_approval then
    return
  end
  local req = table.remove(M.state.approvals, 1)
  if not req then
    return
  end
  M.state.asking_approval = true
  local asked = { req = req, decided = false }
  vim.schedule(function()
    ask_safely(M.approval_prompt(req), "Deny", "Approve", "mino.approval", function(approved)
      decide(asked, approved)
    end, function()
      M.state.shown_approval = asked
    end)
  end)
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
  decide(asked, approved)
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
    ask_safely(M.ACK_QUESTION, "No", "Yes", "mino.acknowledge", function(yes)
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
    exited[client_id] = true
    vim.schedule(function()
      local purposeful = stopping[client_id] or start_ctx.init_failed
      stopping[client_id] = nil
      if M.state.client_id == client_id then
        M.state.client_id = nil
        M.state.running_turn = nil
        M.state.approvals = {}
        M.state.shown_approval = nil
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

local function load_history()
  M.request(method.history, vim.empty_dict(), function(err, result)
    if err then
      notify("cannot load history: " .. format_error(err), vim.log.levels.ERROR)
    elseif result then
      chat.render_history(result)
    end
    M.state.history_loaded = true
    local deferred = M.state.deferred
    M.state.deferred = {}
    for _, d in ipairs(deferred) do
      on[d[1]](d[2])
    end
    local outbox = M.state.outbox
    M.state.outbox = {}
    for _, q in ipairs(outbox) do
      M.send(q.text, q.opts)
    end
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
  if M.config.session then
    init_options.session = M.config.session
  end
  if M.config.new_session then
    init_options.newSession = true
  end

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

  local start_ctx = { init_failed = false }
  local env = M.config.cmd_env
  local config = {
    name = "mino",
    -- A function, so that a refused `initialize` (e.g. the session is locked by
    -- another Mino) is reported with vim.notify instead of an assertion error.
    cmd = function(dispatchers)
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

-- ------------------------------------------------------------ user actions

--- Sends a question. `opts.echo` = false when the prompt line already shows it.
function M.send(text, opts)
  opts = opts or {}
  text = vim.trim(text or "")
  if text == "" then
    return
  end
  if not M.start() then
    return
  end
  if not M.state.history_loaded then
    -- Sent once the server is initialized and the history is shown, so the
    -- question appears after the history and before its answer.
    table.insert(M.state.outbox, { text = text, opts = { echo = true } })
    return
  end
  if opts.echo ~= false then
    chat.user_input(text)
  end
  M.request(method.chat, { text = text }, function(err, result)
    if err then
      chat.refused(err, format_error(err))
      local level = vim.log.levels.ERROR
      if err.code == M.errors.ACKNOWLEDGEMENT_REQUIRED or err.code == M.errors.TURN_IN_PROGRESS then
        level = vim.log.levels.WARN
      end
      notify(format_error(err), level)
      return
    end
    -- mino/turnStarted (or even mino/turnEnded) may arrive before this response.
    if result and result.turnId and not M.state.running_turn and not M.state.ended[result.turnId] then
      M.state.running_turn = result.turnId
    end
  end)
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
  chat._reset()
end

chat._set_sender(function(text, opts)
  M.send(text, opts or { echo = false })
end)

return M
