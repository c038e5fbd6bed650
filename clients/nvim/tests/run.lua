-- Headless tests of mino.nvim against the real mino-server and mino-mock-model.
--
--   nvim --headless -l tests/run.lua [pattern]
--
-- Env: MINO_SERVER_BIN, MINO_MOCK_BIN (default ../../target/debug/...),
-- MINO_TEST_VERBOSE=1 prints the chat buffer after each test.
-- Prints one line per test and a final "N passed, N failed"; exits 1 on failure.

local uv = vim.uv or vim.loop
local api = vim.api
local script_path = debug.getinfo(1, "S").source:sub(2)
local root = vim.fn.fnamemodify(script_path, ":p:h:h") -- clients/nvim
local repo = vim.fn.fnamemodify(root, ":h:h")
local SERVER = vim.env.MINO_SERVER_BIN or (repo .. "/target/debug/mino-server")
local MOCK = vim.env.MINO_MOCK_BIN or (repo .. "/target/debug/mino-mock-model")
local FILTER = _G.arg and _G.arg[1] or nil
local VERBOSE = vim.env.MINO_TEST_VERBOSE == "1"

vim.opt.rtp:prepend(root)
vim.o.swapfile = false
vim.cmd("runtime plugin/mino.lua")

local mino = require("mino")
local chat = require("mino.chat")

local function out(s)
  io.stdout:write(s .. "\n")
  io.stdout:flush()
end

-- ------------------------------------------------------------ stubs

--- Every vim.notify call: { msg, level }.
local notes = {}
vim.notify = function(msg, level)
  table.insert(notes, { msg = tostring(msg), level = level })
  if VERBOSE then
    out("    notify: " .. tostring(msg))
  end
end

--- Neovim's own vim.ui.select (a numbered list read with inputlist()), which
--- reads the keys waiting in Neovim's input as a person's UI would.
local builtin_select = vim.ui.select

--- vim.ui.select answers, per opts.kind: a list consumed in order; a missing
--- answer leaves the select pending (like a user who has not answered yet).
local answers = {}
local selects = {} -- every call: { items, prompt, kind, buffer (the chat's text when it was asked) }
local pending_selects = {}
--- Screen redraws and questions asked, in order ("redraw", "select <kind>").
local ui_log = {}
local chat_redraw = chat.redraw
chat.redraw = function()
  table.insert(ui_log, "redraw")
  return chat_redraw()
end
local function record_select(items, opts)
  local kind = opts and opts.kind or "?"
  local ok, text = pcall(chat.text)
  table.insert(ui_log, "select " .. kind)
  table.insert(selects, { items = vim.deepcopy(items), prompt = opts and opts.prompt, kind = kind, buffer = ok and text,
    format_item = opts and opts.format_item or tostring })
  return kind
end
vim.ui.select = function(items, opts, on_choice)
  local kind = record_select(items, opts)
  local queue = answers[kind]
  if queue and #queue > 0 then
    local a = table.remove(queue, 1)
    vim.schedule(function()
      -- A function answer picks from the items (tables, for the pickers).
      if type(a) == "function" then
        a = a(items, opts)
      end
      on_choice(a ~= vim.NIL and a or nil)
    end)
  else
    table.insert(pending_selects, { kind = kind, on_choice = on_choice })
  end
end

--- Answers a select that is already waiting.
local function answer_pending(kind, choice)
  for i, p in ipairs(pending_selects) do
    if p.kind == kind then
      table.remove(pending_selects, i)
      p.on_choice(choice)
      return true
    end
  end
  return false
end

local stub_select = vim.ui.select

--- Neovim's own vim.ui.input (the command line), for the typed-ahead tests.
local builtin_input = vim.ui.input
--- vim.ui.input answers per opts.kind, like `answers`; every call is recorded
--- in `inputs` ({ prompt, default, kind, buffer }) and `ui_log` ("input <kind>").
local input_answers = {}
local inputs = {}
local pending_inputs = {}
local function record_input(opts)
  local kind = opts and opts.kind or "?"
  local ok, text = pcall(chat.text)
  table.insert(ui_log, "input " .. kind)
  table.insert(inputs, { prompt = opts and opts.prompt, default = opts and opts.default, kind = kind,
    buffer = ok and text })
  return kind
end
vim.ui.input = function(opts, on_confirm)
  local kind = record_input(opts)
  local queue = input_answers[kind]
  if queue and #queue > 0 then
    local a = table.remove(queue, 1)
    vim.schedule(function()
      on_confirm(a ~= vim.NIL and a or nil)
    end)
  else
    table.insert(pending_inputs, { kind = kind, on_confirm = on_confirm })
  end
end
local stub_input = vim.ui.input

--- Uses the real vim.ui.input for this test; `after_prompt[kind]` as in
--- use_builtin_select (below).
local function use_builtin_input(after_prompt)
  vim.ui.input = function(opts, on_confirm)
    local kind = record_input(opts)
    local keys = table.remove(after_prompt[kind] or {}, 1)
    if not keys then
      error("use_builtin_input: no keys for input " .. kind)
    end
    vim.api.nvim_input(keys)
    _G.__mino_builtin_input = function()
      builtin_input(opts, on_confirm)
    end
    vim.cmd("silent lua __mino_builtin_input()")
  end
end

--- Requests answered here instead of by the server, per method:
--- `stubbed[method] = function(params) return err, result end`. Every stubbed
--- request is recorded in `stub_sent` ({ method, params }).
local stubbed = {}
local stub_sent = {}
local real_request = mino.request
mino.request = function(m, params, cb)
  local handler = stubbed[m]
  if not handler then
    return real_request(m, params, cb)
  end
  table.insert(stub_sent, { method = m, params = vim.deepcopy(params) })
  local err, result = handler(params)
  vim.schedule(function()
    if cb then
      cb(err, result)
    end
  end)
  return true
end

--- The params of every stubbed request of `m`.
local function stub_params(m)
  local out = {}
  for _, r in ipairs(stub_sent) do
    if r.method == m then
      table.insert(out, r.params)
    end
  end
  return out
end

--- Drops keys left in Neovim's input by a test.
local function drain_input()
  while vim.fn.getchar(0) ~= 0 do
  end
end

--- Uses the real vim.ui.select for this test. `after_prompt[kind]` is a queue of
--- keys a person types once the question is on screen (the test must give one
--- for every question, or inputlist() would wait for input forever).
local function use_builtin_select(after_prompt)
  vim.ui.select = function(items, opts, on_choice)
    local kind = record_select(items, opts)
    local keys = table.remove(after_prompt[kind] or {}, 1)
    if type(keys) == "function" then
      keys = keys(items)
    end
    if not keys then
      error("use_builtin_select: no keys for question " .. kind)
    end
    vim.api.nvim_input(keys)
    _G.__mino_builtin_select = function()
      builtin_select(items, opts, on_choice)
    end
    -- :silent keeps the list off the runner's output.
    vim.cmd("silent lua __mino_builtin_select()")
  end
end

-- ------------------------------------------------------------ assertions

local Fail = {}
local Skip = {}

local function fail(msg)
  error(setmetatable({ msg = msg }, Fail), 2)
end

--- Ends the test as skipped, printing why (e.g. a server without a method).
local function skip(reason)
  error(setmetatable({ msg = reason }, Skip), 2)
end

local function buffer_text()
  local ok, t = pcall(chat.text)
  return ok and t or "<no chat buffer>"
end

local function contains(hay, needle)
  return hay:find(needle, 1, true) ~= nil
end

local function assert_contains(hay, needle, what)
  if not contains(hay, needle) then
    fail(("%s does not contain %q:\n%s"):format(what or "text", needle, hay))
  end
end

local function assert_not_contains(hay, needle, what)
  if contains(hay, needle) then
    fail(("%s unexpectedly contains %q:\n%s"):format(what or "text", needle, hay))
  end
end

local function assert_eq(a, b, what)
  if not vim.deep_equal(a, b) then
    fail(("%s: expected %s, got %s"):format(what or "value", vim.inspect(b), vim.inspect(a)))
  end
end

local function wait_for(desc, pred, timeout)
  local ok = vim.wait(timeout or 10000, pred, 20)
  if not ok then
    local recent = {}
    for i = math.max(1, #notes - 5), #notes do
      table.insert(recent, notes[i].msg)
    end
    fail(("timed out waiting for %s\n  notifications: %s\n  chat buffer:\n%s"):format(desc, vim.inspect(recent),
      buffer_text()))
  end
end

--- How the chat buffer shows a question and an answer: each speaker's heading
--- on its own line, then a blank line, then the text.
local function question(text)
  return chat.USER_HEADING .. "\n\n" .. text
end

local function answer(text)
  return chat.ASSISTANT_HEADING .. "\n\n" .. text
end

local function wait_buffer(needle, timeout)
  wait_for(("chat buffer to contain %q"):format(needle), function()
    return contains(buffer_text(), needle)
  end, timeout)
end

local function note_matching(needle, since)
  for i = (since or 0) + 1, #notes do
    if contains(notes[i].msg, needle) then
      return notes[i]
    end
  end
end

local function wait_note(needle, since, timeout)
  wait_for(("a notification containing %q"):format(needle), function()
    return note_matching(needle, since) ~= nil
  end, timeout)
  return note_matching(needle, since)
end

local function read_file(path)
  local f = io.open(path, "r")
  if not f then
    return nil
  end
  local s = f:read("*a")
  f:close()
  return s
end

-- ------------------------------------------------------------ the mock model

local ctx = {}
local mock = { proc = nil, base_url = nil, stdout = "" }

function mock.start()
  mock.proc = vim.system({ MOCK }, {
    stdin = true, -- the mock exits when its stdin closes
    stdout = function(_, data)
      if data then
        mock.stdout = mock.stdout .. data
      end
    end,
    stderr = function() end,
    env = { RUST_LOG = "warn" },
  })
  local ok = vim.wait(15000, function()
    return mock.stdout:match("listening (%S+)") ~= nil
  end, 20)
  if not ok then
    error("mino-mock-model did not print its listening line: " .. mock.stdout)
  end
  mock.base_url = mock.stdout:match("listening (%S+)")
  mock.control = mock.base_url:gsub("/v1/?$", "")
end

function mock.stop()
  if mock.proc then
    pcall(function()
      mock.proc:kill(15)
    end)
    mock.proc = nil
  end
end

local function http(method, path, body)
  local cmd = { "curl", "-sS", "-f", "-X", method, mock.control .. path }
  if body then
    vim.list_extend(cmd, { "-H", "content-type: application/json", "--data-binary", body })
  end
  local r = vim.system(cmd, { text = true }):wait(10000)
  if r.code ~= 0 then
    error(("%s %s failed: %s"):format(method, path, r.stderr))
  end
  return r.stdout
end

function mock.script(replies)
  http("POST", "/_mock/script", vim.json.encode(replies))
end

function mock.reset()
  http("POST", "/_mock/reset", "{}")
end

function mock.requests()
  return vim.json.decode(http("GET", "/_mock/requests"))
end

-- ------------------------------------------------------------ the wire

--- Server log level that traces every JSON-RPC message in and out.
local TRACE_WIRE = "info,mino_server::transport=trace"

--- The messages of `method` mino-server received ("<-") or sent ("->"), decoded
--- from its trace log (needs cmd_env.RUST_LOG = TRACE_WIRE).
local function wire(direction, method)
  local found = {}
  for line in (read_file(ctx.log) or ""):gmatch("[^\n]+") do
    local dir, json = line:match("mino_server::transport: ([<-][-<>]) (%{.*%})%s*$")
    if dir == direction then
      local ok, msg = pcall(vim.json.decode, json)
      if ok and type(msg) == "table" and msg.method == method then
        table.insert(found, msg)
      end
    end
  end
  return found
end

-- ------------------------------------------------------------ fixtures

--- A fresh plugin state with a temporary MINO_HOME and work directory.
local function fresh(extra)
  mino._reset()
  vim.ui.select = stub_select
  vim.ui.input = stub_input
  drain_input()
  notes = {}
  selects = {}
  pending_selects = {}
  answers = {}
  inputs = {}
  pending_inputs = {}
  input_answers = {}
  stubbed = {}
  stub_sent = {}
  ui_log = {}
  mock.reset()
  local base = vim.fn.tempname()
  ctx.home = base .. "/home"
  ctx.work = base .. "/work"
  vim.fn.mkdir(ctx.home, "p")
  vim.fn.mkdir(ctx.work, "p")
  ctx.log = base .. "/mino-server.log"
  mino.setup(vim.tbl_deep_extend("force", {
    server_path = SERVER,
    cwd = ctx.work,
    log_file = ctx.log,
    cmd_env = {
      MINO_HOME = ctx.home,
      OPENAI_BASE_URL = mock.base_url,
      OPENAI_API_KEY = "sk-test",
      MINO_MODEL = "mock-model",
      RUST_LOG = "info",
    },
  }, extra or {}))
end

local function start_and_wait()
  vim.cmd("Mino")
  wait_for("the server to start and the history to load", function()
    return mino.client() ~= nil and mino.state.history_loaded
  end, 15000)
end

local function wait_turn_end()
  wait_for("the turn to end", function()
    return mino.state.running_turn == nil
  end, 15000)
end

-- ------------------------------------------------------------ tests

local tests = {}
local function test(name, fn)
  table.insert(tests, { name = name, fn = fn })
end

test("plugin/mino.lua defines the commands and guards against double loading", function()
  for _, c in ipairs({ "Mino", "MinoCancel", "MinoAcknowledge", "MinoRestart", "MinoNew", "MinoSessions", "MinoRename",
    "MinoDelete", "MinoRules", "MinoDiff", "MinoCompact", "MinoModel", "MinoMode", "MinoSend", "MinoImage", "MinoMcp", "MinoRewind",
    "MinoFork" }) do
    if vim.fn.exists(":" .. c) ~= 2 then
      fail("command :" .. c .. " is missing")
    end
  end
  vim.api.nvim_del_user_command("MinoCancel")
  vim.cmd("runtime plugin/mino.lua")
  if vim.fn.exists(":MinoCancel") == 2 then
    fail("plugin/mino.lua ran twice (its guard did not hold)")
  end
  -- restore
  vim.g.loaded_mino = nil
  vim.cmd("runtime plugin/mino.lua")
  assert_eq(vim.fn.exists(":MinoCancel"), 2, ":MinoCancel after reload")
end)

test("doc/mino.txt has valid help tags and the shipped doc/tags is up to date", function()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, "p")
  vim.fn.writefile(vim.fn.readfile(root .. "/doc/mino.txt"), dir .. "/mino.txt")
  local ok, err = pcall(vim.cmd, "helptags " .. vim.fn.fnameescape(dir))
  if not ok then
    fail("helptags: " .. tostring(err))
  end
  local tags = table.concat(vim.fn.readfile(dir .. "/tags"), "\n")
  for _, tag in ipairs({ "mino.setup()", ":Mino", ":MinoCancel", ":MinoAcknowledge", "mino-recovery", "mino-options",
    "mino-events", "mino-keymaps", "mino-input", ":MinoNew", ":MinoSessions", ":MinoRename", ":MinoDelete", ":MinoRules", ":MinoCompact",
    "mino-sessions", "mino-rules", ":MinoDiff", "mino-diff", ":MinoModel", "mino", ":MinoSend", "mino-context",
    "mino-#buffer" }) do
    assert_contains(tags, tag .. "\t", "tags")
  end
  -- doc/tags is shipped (so :help mino works after a manual install) and must
  -- be what :helptags makes of doc/mino.txt now.
  local shipped = vim.fn.filereadable(root .. "/doc/tags") == 1
    and table.concat(vim.fn.readfile(root .. "/doc/tags"), "\n") or "<missing>"
  if shipped ~= tags then
    fail("clients/nvim/doc/tags is stale or missing: run  nvim --clean --headless -c 'helptags clients/nvim/doc' -c q"
      .. "  from the repository root and commit it")
  end
end)

test("setup and :checkhealth mino name the binary, its version and the environment", function()
  fresh()
  local version = vim.trim(vim.system({ SERVER, "--version" }, { text = true }):wait().stdout or "")
  if not version:match("^mino%-server ") then
    fail("mino-server --version printed " .. vim.inspect(version))
  end
  vim.cmd("silent checkhealth mino")
  wait_for("the health report", function()
    return contains(table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n"), "OPENAI")
  end, 10000)
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  assert_contains(report, SERVER, "health report")
  assert_contains(report, version, "health report")
  assert_contains(report, "MINO_HOME=" .. ctx.home, "health report")
  assert_contains(report, "OPENAI_API_KEY is set", "health report")
  assert_contains(report, "OPENAI_BASE_URL=" .. mock.base_url, "health report")
  vim.cmd("bwipeout!")

  mino.setup({ server_path = "/nonexistent/mino-server", cmd_env = { MINO_HOME = ctx.home } })
  vim.cmd("silent checkhealth mino")
  report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  assert_contains(report, "mino-server not found", "health report with a wrong path")
  vim.cmd("bwipeout!")
  local since = #notes
  vim.cmd("Mino")
  wait_note("mino-server not found", since)
end)

test("a question is streamed into the markdown chat buffer", function()
  fresh()
  mock.script({ { type = "text", deltas = { "Hello", " from", " the", " mock." }, delay_ms = 150 } })
  start_and_wait()
  assert_eq(vim.bo[chat.buf()].filetype, "markdown", "filetype")
  vim.cmd("Mino What is up?")
  wait_buffer(question("What is up?"))
  -- A partial answer is visible before the whole one.
  wait_for("a partial answer", function()
    local t = buffer_text()
    return contains(t, answer("Hello")) and not contains(t, "the mock.")
  end)
  wait_buffer(answer("Hello from the mock."))
  wait_turn_end()
  local reqs = mock.requests()
  assert_eq(#reqs, 1, "model requests")
  assert_contains(vim.json.encode(reqs[1].body), "What is up?", "the model request")
  -- The chat ends with the answer and the turn's tokens (no prompt line).
  local lines = chat.lines()
  assert_eq(lines[#lines - 2], "Hello from the mock.", "the answer")
  if not lines[#lines]:match("^_Turn used [%d,]+ tokens %(") then
    fail("last line: expected the turn's tokens, got " .. lines[#lines])
  end
end)

test(":MinoCompact compacts and the next question sends the summary instead of the earlier turn", function()
  fresh()
  mock.script({
    { type = "text", deltas = { "Paris." } },
    { type = "text", deltas = { "They asked about France." } },
    { type = "text", deltas = { "Rome." } },
  })
  start_and_wait()
  vim.cmd("Mino Capital of France?")
  wait_buffer(answer("Paris."))
  wait_turn_end()
  local since = #notes
  vim.cmd("MinoCompact")
  wait_note("compacted: 1 turn(s) summarised by the model", since)
  vim.cmd("Mino Capital of Italy?")
  wait_buffer(answer("Rome."))
  wait_turn_end()
  local reqs = mock.requests()
  assert_eq(#reqs, 3, "model requests")
  assert_eq(reqs[2].body.tools, nil, "the summary request offers no tools")
  local last = vim.json.encode(reqs[3].body.input)
  assert_contains(last, "They asked about France.", "the next request")
  if contains(last, "Capital of France?") then
    fail("the summarised question was sent again: " .. last)
  end
  -- The chat still shows every turn.
  assert_contains(buffer_text(), question("Capital of France?"), "chat buffer")
end)

test("an automatic compaction in a turn is shown in the chat and fires MinoCompaction autocmds", function()
  -- The mock reports about a token per four bytes: far past 80 % of 10.
  fresh({ cmd_env = { MINO_CONTEXT_WINDOW = "10" } })
  mock.script({
    { type = "text", deltas = { "Paris." } },
    { type = "text", deltas = { "They asked about France." } },
    { type = "text", deltas = { "Rome." } },
  })
  local fired = {}
  local group = vim.api.nvim_create_augroup("mino.test.compaction", { clear = true })
  vim.api.nvim_create_autocmd("User", {
    group = group,
    pattern = "MinoCompaction*",
    callback = function(ev)
      table.insert(fired, { name = ev.match, data = ev.data })
    end,
  })
  start_and_wait()
  vim.cmd("Mino Capital of France?")
  wait_buffer(answer("Paris."))
  wait_turn_end()
  vim.cmd("Mino Capital of Italy?")
  wait_buffer(answer("Rome."))
  wait_turn_end()
  vim.api.nvim_del_augroup_by_id(group)
  local t = buffer_text()
  local started = t:find("_" .. chat.COMPACTING .. "_", 1, true)
  local ended = t:find("_Compacted: 1 turn(s) summarised by the model", 1, true)
  local rome = t:find(answer("Rome."), 1, true)
  if not (started and ended and rome and t:find(answer("Paris."), 1, true) < started and started < ended and ended < rome) then
    fail("the compaction lines are missing or out of order:\n" .. t)
  end
  assert_eq(#fired, 2, "MinoCompaction autocmds")
  assert_eq(fired[1].name, "MinoCompactionStarted", "first")
  assert_eq(fired[1].data.trigger, "auto", "trigger")
  assert_eq(fired[2].name, "MinoCompactionEnded", "second")
  assert_eq(fired[2].data.compacted, true, "compacted")
  assert_eq(fired[2].data.summarizedTurns, 1, "summarizedTurns")
  assert_eq(fired[2].data.turnId, fired[1].data.turnId, "the same turn")
end)

test("a retried model request replaces the void text instead of repeating it", function()
  fresh()
  mock.script({
    { type = "cut_stream", deltas = { "Hel" } },
    { type = "text", deltas = { "Hello" } },
  })
  start_and_wait()
  mino.send("Say hello.")
  wait_buffer(answer("Hello"))
  wait_turn_end()
  local t = buffer_text()
  assert_not_contains(t, "HelHello", "chat buffer")
  assert_contains(t, "_" .. chat.RETRYING, "chat buffer")
  local count = 0
  for _ in t:gmatch("Hel") do
    count = count + 1
  end
  assert_eq(count, 1, "times \"Hel\" is in the chat buffer")
  -- The notice comes after the question and before the retried answer.
  local q = t:find(question("Say hello."), 1, true)
  local n = t:find(chat.RETRYING, 1, true)
  local a = t:find(answer("Hello"), 1, true)
  if not (q < n and n < a) then
    fail("question, notice and answer are out of order:\n" .. t)
  end
  assert_eq(#mock.requests(), 2, "model requests")
  local lines = chat.lines()
  assert_eq(lines[#lines - 2], "Hello", "the answer, before the turn's tokens")
end)

test("a retry after a tool call voids only the current response's text", function()
  fresh()
  mock.script({
    { type = "calls", text = { "Let me look." }, calls = { { call_id = "call_1", command = "echo listed" } } },
    { type = "cut_stream", deltas = { "Partial" } },
    { type = "cut_stream", deltas = { "Partial ans" } },
    { type = "text", deltas = { "Final", " answer." } },
  })
  answers["mino.approval"] = { "Approve once" }
  start_and_wait()
  mino.send("look around")
  wait_buffer(answer("Final answer."))
  wait_turn_end()
  local t = buffer_text()
  assert_contains(t, answer("Let me look."), "chat buffer")
  assert_contains(t, "Result: **success** (exit 0)", "chat buffer")
  assert_not_contains(t, "Partial", "chat buffer")
  assert_contains(t, "(attempt 2", "chat buffer")
  local answers_shown = 0
  for _ in t:gmatch("Final answer%.") do
    answers_shown = answers_shown + 1
  end
  assert_eq(answers_shown, 1, "times the final answer is shown")
end)

test(":Mino {question} starts the server and keeps question before answer", function()
  fresh()
  mock.script({ { type = "text", deltas = { "Cold", " start." } } })
  vim.cmd("Mino cold question")
  wait_buffer(answer("Cold start."))
  wait_turn_end()
  local t = buffer_text()
  local q = t:find(question("cold question"), 1, true)
  local a = t:find(answer("Cold start."), 1, true)
  if not q or q > a then
    fail("the question is not shown before the answer:\n" .. t)
  end
end)

--- Types `keys` (with <..> key notation) as a person would, executing them now.
local function type_keys(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), "x", false)
end

local function input_lines()
  return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(chat.input_win()), 0, -1, false)
end

test("the input window under the chat sends several lines as one question with <C-s> or <CR>", function()
  fresh({ cmd_env = { RUST_LOG = TRACE_WIRE } })
  mock.script({ { type = "text", deltas = { "Typed", " answer." } }, { type = "text", deltas = { "Second." } } })
  start_and_wait()
  -- :Mino leaves the cursor in the input window, which sits under the chat.
  assert_eq(vim.api.nvim_get_current_win(), chat.input_win(), "current window after :Mino")
  local chat_pos, input_pos = vim.fn.win_screenpos(chat.win()), vim.fn.win_screenpos(chat.input_win())
  if not (input_pos[1] > chat_pos[1] and input_pos[2] == chat_pos[2]) then
    fail(("the input window (%s) is not under the chat window (%s)"):format(vim.inspect(input_pos),
      vim.inspect(chat_pos)))
  end
  -- <CR> in insert mode starts a new line; nothing is sent until <C-s>.
  type_keys("iWhat is 2+2?<CR>Answer briefly.")
  assert_eq(input_lines(), { "What is 2+2?", "Answer briefly." }, "input buffer before sending")
  assert_eq(#wire("<-", "mino/chat"), 0, "mino/chat requests before sending")
  type_keys("<C-s><Esc>")
  wait_buffer(answer("Typed answer."))
  wait_turn_end()
  assert_eq(input_lines(), { "" }, "input buffer after sending")
  assert_eq(wire("<-", "mino/chat")[1].params.text, "What is 2+2?\nAnswer briefly.", "mino/chat text")
  assert_contains(buffer_text(), question("What is 2+2?\nAnswer briefly."), "chat buffer")
  -- <CR> in normal mode sends too.
  type_keys("iand now?<Esc><CR>")
  wait_buffer(answer("Second."))
  wait_turn_end()
  assert_eq(wire("<-", "mino/chat")[2].params.text, "and now?", "second mino/chat text")
  -- The send key is configurable.
  mino.setup(vim.tbl_extend("force", mino.config, { send_key = "<C-t>" }))
  chat._reset()
  chat.open(mino.config)
  assert_eq(vim.fn.maparg("<C-t>", "i", false, true).desc, "Send the question to Mino", "<C-t> in the input buffer")
  local c_s = vim.fn.maparg("<C-s>", "i", false, true)
  if c_s.buffer == 1 then
    fail("<C-s> is still mapped in the input buffer with send_key = <C-t>")
  end
end)

test("a result's output is shown unless that same call streamed it, when a call id repeats in a turn or a later turn", function()
  chat._reset()
  chat.open(mino.config)
  local on = mino._on
  on["mino/turnStarted"]({ turnId = "r1", seq = 0, input = "q" })
  on["mino/toolStarted"]({ turnId = "r1", seq = 1, callId = "call_0", command = "ls" })
  on["mino/toolOutput"]({ turnId = "r1", seq = 2, callId = "call_0", stream = "stdout", chunk = "a.txt\n" })
  on["mino/toolResult"]({ turnId = "r1", seq = 3, callId = "call_0", status = "success", output = "a.txt\n", exitCode = 0 })
  -- The same response repeated call_0: answered without running, and the
  -- person must see why.
  on["mino/toolResult"]({ turnId = "r1", seq = 4, callId = "call_0", status = "failed", output = "Not run: repeated id" })
  on["mino/turnEnded"]({ turnId = "r1", seq = 5, status = "completed" })
  on["mino/turnStarted"]({ turnId = "r2", seq = 6, input = "again" })
  on["mino/toolResult"]({ turnId = "r2", seq = 7, callId = "call_0", status = "refused", output = "The user denied this command." })
  on["mino/turnEnded"]({ turnId = "r2", seq = 8, status = "completed" })
  local text = buffer_text()
  assert_contains(text, "Not run: repeated id", "the repeated call's output")
  assert_contains(text, "The user denied this command.", "the later turn's call_0 output")
  assert_eq(select(2, text:gsub("a%.txt", "")), 1, "the streamed output shown once")
end)

test("a result with no request or start before it shows the call's block naming its command, as history shows it", function()
  chat._reset()
  chat.open(mino.config)
  local on = mino._on
  local output = 'Denied by a rule the user set: prefix "git push"'
  on["mino/turnStarted"]({ turnId = "d1", seq = 0, input = "push" })
  on["mino/toolResult"]({ turnId = "d1", seq = 1, callId = "call_9", command = "git push --force origin main",
    status = "refused", output = output })
  on["mino/turnEnded"]({ turnId = "d1", seq = 2, status = "completed" })
  local function block(text)
    return text:match("(%*%*Tool call%*%* wants to run:.-Result: [^\n]*)")
  end
  local live = block(buffer_text())
  assert_eq(live, "**Tool call** wants to run:\n```sh\ngit push --force origin main\n```\n\n"
    .. "_Denied `git push --force origin main`._\n```text\n" .. output .. "\n```\nResult: **refused**", "the live block")
  chat._reset()
  chat.open(mino.config)
  chat.render_history({ sessionId = "s", turns = { { turnId = "d1", input = "push", text = "", status = "completed",
    notices = {}, calls = { { callId = "call_9", command = "git push --force origin main",
      result = { status = "refused", output = output } } } } } })
  assert_eq(block(buffer_text()), live, "the restored block is the live one")
end)

--- The lines of the chat from the read's line `first` through its closing fence.
local function read_block(lines, first)
  for i, l in ipairs(lines) do
    if l == first then
      local out = { l }
      for j = i + 1, #lines do
        table.insert(out, lines[j])
        if lines[j]:match("^````+$") then
          return out, i
        end
      end
      return out, i
    end
  end
  fail("no read line " .. first .. " in:\n" .. table.concat(lines, "\n"))
end

test("a read inside the workspace is one folded line; zo opens its output; history shows the same lines", function()
  chat._reset()
  chat.open(mino.config)
  local on = mino._on
  local read = { tool = "read_file", path = "src/main.rs", leavesWorkspace = false }
  local done = vim.tbl_extend("force", read, { summary = "lines 1-2 of 2 (16 bytes)" })
  local output = "1\tfn main() {\n2\t}\n"
  on["mino/turnStarted"]({ turnId = "r1", seq = 0, input = "read it" })
  on["mino/toolStarted"]({ turnId = "r1", seq = 1, callId = "call_1", command = "read_file src/main.rs",
    approvedBy = { kind = "workspace" }, sandbox = "off", tool = "read_file", read = read })
  assert_not_contains(buffer_text(), "**Tool call**", "a read asks nothing and shows no call block")
  on["mino/toolResult"]({ turnId = "r1", seq = 2, callId = "call_1", command = "read_file src/main.rs",
    status = "success", output = output, tool = "read_file", read = done })
  on["mino/toolResult"]({ turnId = "r1", seq = 3, callId = "call_2", command = "search fn main",
    status = "failed", output = "Not a valid regular expression: unclosed group\nmore", tool = "search",
    read = { tool = "search", path = ".", pattern = "fn (main", leavesWorkspace = false } })
  on["mino/turnEnded"]({ turnId = "r1", seq = 4, status = "completed" })
  local first = "▸ read `src/main.rs` · lines 1-2 of 2 (16 bytes)"
  local lines = chat.lines()
  local live, at = read_block(lines, first)
  assert_eq(live, { first, "````text", "1\tfn main() {", "2\t}", "````" }, "the read's line and its output")
  local search = read_block(lines, "▸ search `/fn (main/` · failed: Not a valid regular expression: unclosed group")
  assert_eq(#search, 5, "a failed search: its line and its whole output")
  assert_not_contains(buffer_text(), "Result: **", "a read has no result line")
  -- In the chat window the read is one line: a closed fold showing its line.
  local win = chat.win()
  api.nvim_win_call(win, function()
    assert_eq(vim.fn.foldclosed(at), at, "the read's fold starts at its line and is closed")
    assert_eq(vim.fn.foldclosedend(at), at + 4, "the fold holds the output")
    assert_contains(vim.fn.foldtextresult(at), first, "the closed fold shows the read's line")
    api.nvim_win_set_cursor(win, { at, 0 })
    vim.cmd("normal! zo")
    assert_eq(vim.fn.foldclosed(at), -1, "zo opens the read")
    vim.cmd("normal! zc")
    assert_eq(vim.fn.foldclosed(at), at, "zc closes it again")
  end)
  -- Restored from history: the same lines.
  chat._reset()
  chat.open(mino.config)
  chat.render_history({ sessionId = "s", turns = { { turnId = "r1", input = "read it", text = "", status = "completed",
    notices = {}, calls = {}, items = {
      { type = "call", call = { callId = "call_1", command = "read_file src/main.rs", tool = "read_file", read = done,
        approvedBy = { kind = "workspace" }, sandbox = "off", result = { status = "success", output = output } } },
      { type = "call", call = { callId = "call_2", command = "search fn main", tool = "search",
        read = { tool = "search", path = ".", pattern = "fn (main", leavesWorkspace = false },
        result = { status = "failed", output = "Not a valid regular expression: unclosed group\nmore" } } },
    } } } })
  local restored, rat = read_block(chat.lines(), first)
  assert_eq(restored, live, "the restored read is the live one")
  api.nvim_win_call(chat.win(), function()
    assert_eq(vim.fn.foldclosed(rat), rat, "restored, the read is a closed fold too")
  end)
  assert_eq(read_block(chat.lines(), search[1]), search, "the restored failed search is the live one")
end)

--- The first line of the chat matching `pattern`.
local function line_matching(pattern)
  for _, l in ipairs(chat.lines()) do
    if l:match(pattern) then
      return l
    end
  end
  fail(("no line matches %q in:\n%s"):format(pattern, buffer_text()))
end

test("reads through the real server ask nothing, are one folded line each, and are restored the same", function()
  fresh()
  vim.fn.writefile({ "alpha", "beta-line" }, ctx.work .. "/notes.txt")
  mock.script({
    { type = "named_call", call_id = "call_read", name = "read_file", arguments = vim.json.encode({ path = "notes.txt" }) },
    { type = "named_call", call_id = "call_search", name = "search", arguments = vim.json.encode({ pattern = "alp+ha" }) },
    { type = "text", deltas = { "They say alpha." } },
  })
  start_and_wait()
  mino.send("What do my notes say?")
  wait_buffer(answer("They say alpha."))
  wait_turn_end()
  for _, asked in ipairs(selects) do
    assert_eq(asked.kind ~= "mino.approval", true, "a question asked about a read inside the workspace")
  end
  local read_line = line_matching("^▸ read `notes%.txt` · lines 1%-2 of 2")
  local search_line = line_matching("^▸ search `/alp%+ha/` · 1 match")
  local live, at = read_block(chat.lines(), read_line)
  assert_contains(table.concat(live, "\n"), "beta-line", "the read's output, under its line")
  local search = read_block(chat.lines(), search_line)
  assert_contains(table.concat(search, "\n"), "notes.txt:1:alpha", "the search's output, under its line")
  assert_not_contains(buffer_text(), "**Tool call**", "a read shown as a call block")
  api.nvim_win_call(chat.win(), function()
    assert_eq(vim.fn.foldclosed(at), at, "the read is a closed fold")
  end)
  mino.restart()
  wait_for("the restarted server's history", function()
    return mino.client() ~= nil and mino.state.history_loaded
  end, 15000)
  wait_buffer(read_line)
  assert_eq(read_block(chat.lines(), read_line), live, "the restored read is the live one")
  assert_eq(read_block(chat.lines(), search_line), search, "the restored search is the live one")
end)

test("a read leaving the workspace asks naming the path with no rule offered; denied, the model learns nothing", function()
  fresh()
  vim.fn.writefile({ "the-secret-words" }, vim.fn.fnamemodify(ctx.work, ":h") .. "/secret.txt")
  mock.script({
    { type = "named_call", call_id = "call_1", name = "read_file", arguments = vim.json.encode({ path = "../secret.txt" }) },
    { type = "text", deltas = { "I could not read it." } },
  })
  answers["mino.approval"] = { "Deny" }
  start_and_wait()
  mino.send("Read the secret.")
  wait_buffer(answer("I could not read it."))
  wait_turn_end()
  local asked = selects[#selects]
  assert_eq(asked.kind, "mino.approval", "the read was asked about")
  -- The question names where the path leads, not only how the model wrote it.
  local leads = vim.fn.resolve(vim.fn.fnamemodify(ctx.work, ":h") .. "/secret.txt")
  assert_contains(asked.prompt, "read_file `" .. leads .. "`, OUTSIDE the workspace", "the prompt")
  assert_eq(asked.items, { "Deny", "Deny with reason…", "Approve once" }, "no rule can cover a path outside")
  assert_contains(asked.buffer, "wants to read_file outside the workspace: `" .. leads .. "`", "the chat showed the read first")
  line_matching("^▸ read `%.%./secret%.txt` · refused")
  for _, r in ipairs(mock.requests()) do
    assert_not_contains(vim.json.encode(r.body), "the-secret-words", "a model request")
  end
end)

test("history is restored when the chat opens again", function()
  fresh()
  mock.script({ { type = "text", deltas = { "First", " answer." } } })
  start_and_wait()
  mino.send("first question")
  wait_buffer(answer("First answer."))
  wait_turn_end()
  mino.restart()
  wait_for("the restarted server's history", function()
    return mino.client() ~= nil and mino.state.history_loaded
  end, 15000)
  local t = buffer_text()
  assert_contains(t, question("first question"), "restored chat")
  assert_contains(t, answer("First answer."), "restored chat")
  local ids = 0
  for _ in t:gmatch(vim.pesc(question("first question"))) do
    ids = ids + 1
  end
  assert_eq(ids, 1, "times the question is shown")
end)

test("approve: the call shows command, directory, environment and limits, then runs", function()
  fresh()
  mock.script({
    { type = "calls", calls = { { call_id = "call_1", command = "echo approved-output > approved.txt; echo done-$((40+2))" } } },
    { type = "text", deltas = { "It", " ran." } },
  })
  answers["mino.approval"] = { "Approve once" }
  start_and_wait()
  mino.send("run it")
  wait_buffer(answer("It ran."))
  wait_turn_end()
  local t = buffer_text()
  assert_contains(t, "echo approved-output > approved.txt", "chat buffer")
  assert_contains(t, "Directory: `", "chat buffer")
  assert_contains(t, "Environment:", "chat buffer")
  assert_contains(t, "Limits: timeout", "chat buffer")
  assert_contains(t, "output limit", "chat buffer")
  assert_contains(t, "_Approved `echo approved-output > approved.txt; echo done-$((40+2))`._", "chat buffer")
  assert_contains(t, "done-42", "chat buffer")
  assert_contains(t, "Result: **success** (exit 0)", "chat buffer")
  local s = selects[1]
  -- Declining comes first: a menu whose <CR> takes the first item declines.
  -- (The allow choices follow when the server suggests a rule.)
  assert_eq(s and vim.list_slice(s.items, 1, 3), { "Deny", "Deny with reason…", "Approve once" },
    "vim.ui.select items")
  assert_contains(s.prompt, "echo approved-output", "select prompt")
  assert_eq(read_file(ctx.work .. "/approved.txt"), "approved-output\n", "approved.txt")
end)

test("deny: the command does not run and the result is refused", function()
  fresh()
  mock.script({
    { type = "calls", calls = { { call_id = "call_1", command = "touch denied.txt" } } },
    { type = "text", deltas = { "Understood." } },
  })
  answers["mino.approval"] = { "Deny" }
  start_and_wait()
  mino.send("make a file")
  wait_buffer(answer("Understood."))
  wait_turn_end()
  assert_contains(buffer_text(), "_Denied `touch denied.txt`._", "chat buffer")
  assert_contains(buffer_text(), "Result: **refused**", "chat buffer")
  assert_eq(vim.fn.filereadable(ctx.work .. "/denied.txt"), 0, "denied.txt exists")
end)

test("dismissing the approval menu denies (nothing is approved by default)", function()
  fresh()
  mock.script({
    { type = "calls", calls = { { call_id = "call_1", command = "touch dismissed.txt" } } },
    { type = "text", deltas = { "Skipped." } },
  })
  answers["mino.approval"] = { vim.NIL }
  start_and_wait()
  mino.send("make a file")
  wait_buffer(answer("Skipped."))
  wait_turn_end()
  assert_contains(buffer_text(), "Result: **refused**", "chat buffer")
  assert_eq(vim.fn.filereadable(ctx.work .. "/dismissed.txt"), 0, "dismissed.txt exists")
end)

--- Keys choosing `item` in Neovim's own select list.
local function choose(item)
  return function(items)
    for i, it in ipairs(items) do
      if it == item then
        return i .. "<CR>"
      end
    end
  end
end

test("keys typed before the approval question appeared do not answer it; dismissing it denies", function()
  fresh()
  mock.script({
    { type = "calls", calls = {
      { call_id = "call_1", command = "touch typed-1.txt" },
      { call_id = "call_2", command = "touch typed-2.txt" },
    } },
    { type = "text", deltas = { "Nothing", " ran." } },
  })
  -- Neovim's own select: once each question is on screen, the person
  -- dismisses it with <Esc>.
  use_builtin_select({ ["mino.approval"] = { "<Esc>", "<Esc>" } })
  start_and_wait()
  -- Typed before any question exists, still unread: read by the questions,
  -- "1<CR>" and "2<CR>" would choose Approve in one of them, whatever the order.
  vim.api.nvim_input("1<CR>2<CR>")
  mino.send("make two files")
  wait_buffer(answer("Nothing ran."))
  wait_turn_end()
  local t = buffer_text()
  assert_contains(t, "_Denied `touch typed-1.txt`._", "chat buffer")
  assert_contains(t, "_Denied `touch typed-2.txt`._", "chat buffer")
  assert_not_contains(t, "_Approved", "chat buffer")
  assert_eq(vim.fn.filereadable(ctx.work .. "/typed-1.txt"), 0, "typed-1.txt exists")
  assert_eq(vim.fn.filereadable(ctx.work .. "/typed-2.txt"), 0, "typed-2.txt exists")
  local n = note_matching("typed before the question appeared were ignored")
  if not n then
    fail("no notification that typed-ahead keys were ignored")
  end
end)

test("keys typed before the acknowledgement question appeared do not acknowledge", function()
  fresh({ cmd_env = { RUST_LOG = TRACE_WIRE } })
  use_builtin_select({ ["mino.acknowledge"] = { "<Esc>" } })
  start_and_wait()
  -- "1<CR>" or "2<CR>" is Yes, whatever the order. (Fed to the typeahead
  -- buffer here; the approval test uses Neovim's input queue.)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("1<CR>2<CR>", true, false, true), "t", false)
  mino._on["mino/recovery"]({
    sessionId = "s",
    turns = { { turnId = "turn-1", status = "interrupted", calls = {
      { callId = "call_1", command = "echo milk >> shopping.txt", result = { status = "unknown", output = "" } },
    } } },
    acknowledgementRequired = true,
    unacknowledgedTurnIds = { "turn-1" },
    repairs = {},
  })
  wait_buffer("_Not acknowledged.")
  assert_eq(#selects, 1, "questions asked")
  assert_eq(selects[1].items, { "No", "Yes" }, "answers offered (declining first)")
  assert_eq(#wire("<-", "mino/acknowledge"), 0, "mino/acknowledge requests the server received")
  if not note_matching("typed before the question appeared were ignored") then
    fail("no notification that typed-ahead keys were ignored")
  end
end)

test("mino/approval carries its request's turnId; Approve chosen once the question shows runs the command", function()
  fresh({ cmd_env = { RUST_LOG = TRACE_WIRE } })
  mock.script({
    { type = "calls", calls = { { call_id = "call_1", command = "echo bound > bound.txt" } } },
    { type = "text", deltas = { "Done." } },
  })
  use_builtin_select({ ["mino.approval"] = { choose("Approve once") } })
  start_and_wait()
  mino.send("write it")
  wait_buffer(answer("Done."))
  wait_turn_end()
  assert_eq(read_file(ctx.work .. "/bound.txt"), "bound\n", "bound.txt")
  local asked = wire("->", "mino/approvalRequest")
  local decided = wire("<-", "mino/approval")
  assert_eq(#asked, 1, "approval requests the server sent")
  assert_eq(#decided, 1, "decisions the server received")
  assert_eq(decided[1].params, { turnId = asked[1].params.turnId, callId = "call_1", decision = "approve" },
    "mino/approval params")
end)

test("acknowledgement gate after the server is killed mid-call", function()
  fresh()
  local cmd = "echo milk >> shopping.txt; kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)"
  mock.script({ { type = "calls", calls = { { call_id = "call_1", command = cmd } } } })
  answers["mino.approval"] = { "Approve once" }
  start_and_wait()
  mino.send("Add milk to shopping.txt.")
  local crash = wait_note("exited unexpectedly", 0, 15000)
  assert_contains(crash.msg, ctx.log, "crash notification")
  assert_eq(crash.level, vim.log.levels.ERROR, "crash notification level")
  assert_contains(buffer_text(), "exited unexpectedly", "chat buffer")
  assert_eq(read_file(ctx.work .. "/shopping.txt"), "milk\n", "shopping.txt")

  local function ack_asks()
    local n = 0
    for _, s in ipairs(selects) do
      if s.kind == "mino.acknowledge" then
        n = n + 1
      end
    end
    return n
  end

  -- Restart: the question appears; dismissing it does not acknowledge.
  answers["mino.acknowledge"] = { vim.NIL }
  local since = #notes
  vim.cmd("Mino")
  wait_for("the acknowledgement question", function()
    return ack_asks() == 1
  end, 15000)
  wait_note("not acknowledged", since)
  assert_eq(mino.state.recovery ~= nil, true, "recovery still pending after dismissal")

  -- The next start asks again; this time the answer is No.
  answers["mino.acknowledge"] = { "No" }
  since = #notes
  mino.restart()
  wait_for("the acknowledgement question after another restart", function()
    return ack_asks() == 2
  end, 15000)
  local ask
  for _, s in ipairs(selects) do
    if s.kind == "mino.acknowledge" then
      ask = s
    end
  end
  assert_eq(ask.prompt, "Do you understand that these commands may already have run?", "question")
  assert_eq(ask.items, { "No", "Yes" }, "answers offered (declining first)")
  local t = buffer_text()
  assert_contains(t, "`" .. cmd .. "` → **unknown**", "chat buffer")
  assert_contains(t, "may have changed files or external systems", "chat buffer")
  wait_note("not acknowledged", since)

  -- Before yes, a question is refused by the server, and said so clearly.
  local before = #mock.requests()
  since = #notes
  mino.send("Is milk on the list now?")
  local refusal = wait_note("Acknowledge unknown tool results before continuing", since)
  assert_contains(refusal.msg, ":MinoAcknowledge", "refusal")
  wait_buffer("**Refused:** Acknowledge unknown tool results before continuing")
  assert_eq(#mock.requests(), before, "model requests after the refused question")

  -- Yes acknowledges.
  answers["mino.acknowledge"] = { "Yes" }
  since = #notes
  vim.cmd("MinoAcknowledge")
  wait_note("acknowledged", since)
  assert_eq(mino.state.recovery, nil, "pending recovery")
  wait_buffer("_Acknowledged:")

  mock.script({ { type = "text", deltas = { "It", " may", " be." } } })
  mino.send("Is milk on the list now?")
  wait_buffer(answer("It may be."))
  wait_turn_end()
  assert_eq(read_file(ctx.work .. "/shopping.txt"), "milk\n", "shopping.txt (nothing reran)")

  -- Restarting again does not ask again.
  local asks = 0
  for _, s in ipairs(selects) do
    if s.kind == "mino.acknowledge" then
      asks = asks + 1
    end
  end
  mino.restart()
  -- The question would be asked on the new server's mino/recovery: once that
  -- is handled, asking_ack says whether a question is on its way.
  wait_for("the restarted server's mino/recovery", function()
    return mino.client() ~= nil and mino.state.history_loaded and mino.state.recovery_seen
  end, 15000)
  assert_eq(mino.state.asking_ack, false, "an acknowledgement question on its way")
  local asks_after = 0
  for _, s in ipairs(selects) do
    if s.kind == "mino.acknowledge" then
      asks_after = asks_after + 1
    end
  end
  assert_eq(asks_after, asks, "acknowledgement questions after a clean restart")
end)

test(":MinoCancel stops a streaming turn", function()
  fresh()
  mock.script({ { type = "stall", deltas = { "Thinking" }, stall_ms = 30000 } })
  start_and_wait()
  mino.send("take your time")
  wait_buffer(answer("Thinking"))
  vim.cmd("MinoCancel")
  wait_buffer("_Turn cancelled")
  wait_turn_end()
end)

test(":MinoCancel stops a running command", function()
  fresh()
  mock.script({
    { type = "calls", calls = { { call_id = "call_1", command = "echo started; sleep 30" } } },
    { type = "text", deltas = { "never" } },
  })
  answers["mino.approval"] = { "Approve once" }
  start_and_wait()
  mino.send("sleep")
  wait_buffer("```text\nstarted")
  vim.cmd("MinoCancel")
  wait_buffer("_Turn cancelled", 15000)
  wait_turn_end()
  assert_contains(buffer_text(), "Result: **cancelled**", "chat buffer")
end)

test(":MinoCancel while the approval question is open; a late answer is harmless", function()
  fresh()
  mock.script({
    { type = "calls", calls = { { call_id = "call_1", command = "touch late.txt" } } },
    { type = "text", deltas = { "never" } },
  })
  start_and_wait()
  mino.send("make a file")
  wait_for("the approval question", function()
    return #pending_selects == 1
  end)
  vim.cmd("MinoCancel")
  wait_buffer("_Turn cancelled")
  wait_turn_end()
  local since = #notes
  answer_pending("mino.approval", "Approve once")
  wait_buffer("no longer awaits a decision")
  for i = since + 1, #notes do
    if notes[i].level == vim.log.levels.ERROR then
      fail("unexpected error notification: " .. notes[i].msg)
    end
  end
  assert_eq(vim.fn.filereadable(ctx.work .. "/late.txt"), 0, "late.txt exists")
  assert_contains(buffer_text(), "Result: **not_executed**", "chat buffer")
end)

test("a second question while a turn runs shows the server's refusal", function()
  fresh()
  mock.script({ { type = "stall", deltas = { "Busy" }, stall_ms = 30000 } })
  start_and_wait()
  mino.send("one")
  wait_buffer(answer("Busy"))
  local since = #notes
  mino.send("two")
  wait_for("a refusal notification", function()
    for i = since + 1, #notes do
      if notes[i].level == vim.log.levels.WARN or notes[i].level == vim.log.levels.ERROR then
        return true
      end
    end
  end)
  wait_buffer("**Refused:**")
  vim.cmd("MinoCancel")
  wait_turn_end()
end)

test("a failed turn is reported with vim.notify and the log path", function()
  fresh()
  mock.script({
    { type = "http_error", status = 400, code = "invalid_request_error", message = "mock says no" },
    { type = "http_error", status = 400, code = "invalid_request_error", message = "mock says no" },
  })
  start_and_wait()
  mino.send("fail please")
  local n = wait_note("turn failed", 0, 15000)
  assert_contains(n.msg, ctx.log, "notification")
  assert_eq(n.level, vim.log.levels.ERROR, "level")
  wait_buffer("_Turn failed")
  wait_turn_end()
end)

test("a server that refuses to open the session is reported with the log path", function()
  fresh({ session = "../not a session" })
  local since = #notes
  vim.cmd("Mino")
  local n = wait_note("mino-server refused to start", since, 15000)
  assert_contains(n.msg, ctx.log, "notification")
  assert_eq(n.level, vim.log.levels.ERROR, "level")
  -- The exit is handled (and any crash notice sent) in the callback that
  -- forgets the client id.
  wait_for("the server's exit to be handled", function()
    return mino.state.client_id == nil
  end)
  assert_eq(note_matching("exited unexpectedly", since), nil, "a second, crash notification")
end)

test(":qa quits Neovim with the chat open after a question (no E37/E162)", function()
  fresh()
  mock.script({ { type = "text", deltas = { "Bye", " now." } } })
  local script = vim.fn.tempname() .. ".lua"
  -- A second Neovim asks a question, leaves unsent text in the input buffer,
  -- then runs :qa; ":cq 3" runs only if :qa did not quit.
  vim.fn.writefile(vim.split(([[
vim.opt.rtp:prepend(%q)
vim.cmd("runtime plugin/mino.lua")
local mino, chat = require("mino"), require("mino.chat")
mino.setup(vim.json.decode(%q))
vim.cmd("Mino a question before quitting")
local answered = vim.wait(15000, function()
  return chat.text():find("## Mino\n\nBye now.", 1, true) ~= nil and mino.state.running_turn == nil
end, 20)
if not answered then
  io.stderr:write("no answer:\n" .. chat.text() .. "\n")
  vim.cmd("cq 4")
end
vim.api.nvim_set_current_win(chat.input_win())
vim.api.nvim_feedkeys("inot sent yet\27", "x", false)
]]):format(root, vim.json.encode(mino.config)), "\n"), script)
  local r = vim.system({ vim.v.progpath, "--clean", "--headless", "-c", "luafile " .. script, "-c", "qa", "-c", "cq 3" },
    { text = true }):wait(30000)
  local output = (r.stdout or "") .. (r.stderr or "")
  assert_not_contains(output, "E37", "the quitting Neovim's output")
  assert_not_contains(output, "E162", "the quitting Neovim's output")
  assert_eq(r.code, 0, "exit code of the quitting Neovim (output: " .. output .. ")")
end)

test("a multi-line paste lands in the input buffer and is sent whole, with every line, when sent", function()
  fresh({ cmd_env = { RUST_LOG = TRACE_WIRE } })
  mock.script({
    { type = "text", deltas = { "Got", " all", " three." } },
    { type = "text", deltas = { "Got", " the", " chunks." } },
  })
  start_and_wait()
  vim.api.nvim_set_current_win(chat.input_win())
  --- Pastes `chunks` as a UI does (one nvim_paste call, or a stream of them).
  _G.__mino_paste = function(chunks)
    for i, c in ipairs(chunks) do
      local phase = #chunks == 1 and -1 or (i == 1 and 1 or (i == #chunks and 3 or 2))
      vim.api.nvim_paste(c, false, phase)
    end
  end
  local function paste_in_insert(typed, chunks)
    _G.__mino_chunks = chunks
    type_keys("A" .. typed .. "<Cmd>lua __mino_paste(__mino_chunks)<CR><Esc>")
  end
  local function questions()
    return vim.tbl_map(function(m)
      return m.params.text
    end, wire("<-", "mino/chat"))
  end

  local before = buffer_text()
  paste_in_insert("Review this: ", { "line one\nline two\nline three" })
  -- The pasted lines wait in the input; nothing is sent or shown yet.
  assert_eq(input_lines(), { "Review this: line one", "line two", "line three" }, "input buffer after the paste")
  assert_eq(buffer_text(), before, "chat buffer after the paste")
  assert_eq(#questions(), 0, "mino/chat requests after the paste")
  type_keys("A<CR>Thanks.<C-s><Esc>")
  wait_buffer(answer("Got all three."))
  wait_turn_end()
  assert_eq(questions(), { "Review this: line one\nline two\nline three\nThanks." }, "mino/chat texts")
  assert_contains(buffer_text(), question("Review this: line one\nline two\nline three\nThanks.\n"), "chat buffer")
  assert_contains(vim.json.encode(mock.requests()[1].body), "line one\\nline two\\nline three", "the model request")

  -- A paste streamed in chunks that split lines.
  paste_in_insert("", { "alpha li", "ne\nbeta line\ngam", "ma line\n" })
  assert_eq(input_lines(), { "alpha line", "beta line", "gamma line", "" }, "input buffer after a chunked paste")
  type_keys("<C-s>")
  wait_buffer(answer("Got the chunks."))
  wait_turn_end()
  assert_eq(questions()[2], "alpha line\nbeta line\ngamma line", "second mino/chat text")

  -- A question over 1 MiB is not sent; it stays in the input with a message.
  local since = #notes
  local big = string.rep("x", 700 * 1024)
  paste_in_insert("", { big .. "\n", big, "\nend" })
  type_keys("<C-s>")
  wait_note("question not sent: it is larger than", since)
  assert_eq(#input_lines(), 3, "lines left in the input buffer")
  assert_not_contains(buffer_text(), "xxxx", "chat buffer")
  -- The server has read everything sent before this request: nothing more.
  local done = false
  mino.request("mino/history", vim.empty_dict(), function()
    done = true
  end)
  wait_for("a mino/history answer", function()
    return done
  end)
  assert_eq(#questions(), 2, "mino/chat requests")
end)

test("evidence of an unknown result is shown beside it in recovery and history", function()
  fresh()
  start_and_wait()
  local unknown = { status = "unknown", output = "Execution was started but its result was not saved." }
  local exited = {
    outcome = "exited", exitCode = 0, pid = 4242, startedAt = "2026-11-30T10:00:00Z", endedAt = "2026-11-30T10:00:01Z",
    outputTail = "milk\n", summary = "the command exited 0 after Mino stopped; last output: milk",
  }
  local stopped = {
    outcome = "stopped_when_mino_stopped", pid = 4243, startedAt = "2026-11-30T10:00:02Z", outputTail = "line 1\nline 2\n",
    summary = "the command was stopped when Mino stopped; last output:\nline 1\nline 2",
  }
  mino._on["mino/recovery"]({
    sessionId = "s",
    turns = { { turnId = "turn-1", status = "interrupted", calls = {
      { callId = "call_1", command = "echo milk >> shopping.txt", result = unknown, evidence = exited },
      { callId = "call_2", command = "seq 1 2; sleep 100", result = unknown, evidence = stopped },
      { callId = "call_3", command = "echo plain", result = unknown },
    } } },
    acknowledgementRequired = true,
    unacknowledgedTurnIds = { "turn-1" },
    repairs = {},
  })
  local t = buffer_text()
  assert_contains(t, "`echo milk >> shopping.txt` → **unknown**\n    Evidence: " .. exited.summary .. "\n", "chat buffer")
  assert_contains(t, "`seq 1 2; sleep 100` → **unknown**\n    Evidence: the command was stopped when Mino stopped; "
    .. "last output:\n      line 1\n      line 2\n", "chat buffer")
  assert_contains(t, "`echo plain` → **unknown**\n    Execution was started", "chat buffer (a call without evidence)")
  -- The result stays unknown: the acknowledgement question is still asked.
  wait_for("the acknowledgement question", function()
    return #pending_selects == 1 and pending_selects[1].kind == "mino.acknowledge"
  end)

  chat.render_history({ sessionId = "s", turns = { {
    turnId = "turn-1", input = "Add milk", text = "", status = "interrupted", notices = {},
    calls = { { callId = "call_1", command = "echo milk >> shopping.txt", result = unknown, evidence = exited } },
  } } })
  assert_contains(buffer_text(), "Result: **unknown**\nEvidence: " .. exited.summary .. "\n", "chat buffer (history)")
end)

--- The ordered run of `needles` (whole lines) in `lines`, or fails.
local function assert_lines_in_order(lines, needles, what)
  local from = 1
  for _, n in ipairs(needles) do
    local found
    for i = from, #lines do
      if lines[i] == n then
        found = i
        break
      end
    end
    if not found then
      fail(("%s: line %q not found (in order) in:\n%s"):format(what, n, table.concat(lines, "\n")))
    end
    from = found + 1
  end
end

--- Consecutive `block` lines somewhere in `lines`, or fails.
local function assert_block(lines, block, what)
  for i = 1, #lines - #block + 1 do
    if vim.deep_equal(vim.list_slice(lines, i, i + #block - 1), block) then
      return
    end
  end
  fail(("%s: lines %s not found together in:\n%s"):format(what, vim.inspect(block), table.concat(lines, "\n")))
end

test("the approval question is asked over a redrawn chat showing the call; its prompt names command, directory and timeout",
  function()
    fresh()
    mock.script({
      { type = "calls", calls = { { call_id = "call_1", command = "echo shown > shown.txt" } } },
      { type = "text", deltas = { "Not run." } },
    })
    start_and_wait()
    mino.send("write it")
    wait_for("the approval question", function()
      return #pending_selects == 1
    end)
    local s = selects[#selects]
    -- When the question opens, the chat already holds the whole call block...
    assert_contains(s.buffer, "**Tool call** wants to run:\n```sh\necho shown > shown.txt\n```\n- Directory: `",
      "chat buffer when the question opened")
    local dir = s.buffer:match("%- Directory: `([^`]+)`")
    local timeout = s.buffer:match("%- Limits: timeout (%d+) s")
    if not (dir and timeout) then
      fail("no directory or timeout in the call block:\n" .. s.buffer)
    end
    assert_eq(vim.fn.resolve(dir), vim.fn.resolve(ctx.work), "directory shown")
    -- ...and the screen was redrawn right before it was asked.
    assert_eq(vim.list_slice(ui_log, #ui_log - 1), { "redraw", "select mino.approval" }, "redraw, then question")
    -- The prompt itself carries the essentials.
    assert_contains(s.prompt, "echo shown > shown.txt", "approval prompt")
    assert_contains(s.prompt, dir, "approval prompt")
    assert_contains(s.prompt, "timeout " .. timeout .. " s", "approval prompt")
    answer_pending("mino.approval", "Deny")
    wait_buffer(answer("Not run."))
    wait_turn_end()
    assert_eq(vim.fn.filereadable(ctx.work .. "/shown.txt"), 0, "shown.txt exists")
  end)

test("an MCP server that fails to start is a warning naming it and why, in vim.notify and the chat; :MinoMcp lists it and :MinoMcp restart NAME restarts it",
  function()
    fresh({ cmd_env = { RUST_LOG = TRACE_WIRE } })
    local f = assert(io.open(ctx.home .. "/config.toml", "w"))
    f:write('[mcp_servers.ghost]\ncommand = "/nonexistent/mino-mcp-ghost"\n')
    f:close()
    local events = {}
    local au = vim.api.nvim_create_autocmd("User", { pattern = "MinoMcpStatus", callback = function(ev)
      table.insert(events, ev.data)
    end })
    start_and_wait()
    local n = wait_note("MCP server ghost: failed to start (its tools are missing)")
    assert_eq(n.level, vim.log.levels.WARN, "level of the failed server's notification")
    assert_contains(n.msg, "/nonexistent/mino-mcp-ghost", "the reason names the command")
    assert_contains(n.msg, ":MinoMcp restart ghost", "how to restart it")
    wait_buffer("_**MCP server `ghost` did not start**: ")
    assert_contains(chat.text(), "Its tools are missing until it is restarted (`:MinoMcp restart ghost`)._", "chat line")
    wait_for("the MinoMcpStatus autocmd", function()
      return #vim.tbl_filter(function(e) return e.state == "failed" end, events) == 1
    end)
    vim.api.nvim_del_autocmd(au)

    local before = #notes
    vim.cmd("MinoMcp")
    local listed = wait_note("MCP server ghost: failed", before)
    assert_eq(listed.level, vim.log.levels.WARN, "level of the list with a failed server")
    assert_contains(listed.msg, ":MinoMcp restart NAME starts one again", "the list says how to restart")

    before = #notes
    vim.cmd("MinoMcp restart ghost")
    wait_note("restarting the MCP server ghost", before)
    wait_for("mino/mcp/restart on the wire", function()
      return #wire("<-", "mino/mcp/restart") == 1
    end)
    assert_eq(wire("<-", "mino/mcp/restart")[1].params, { server = "ghost" }, "restart params")
    -- It fails again (the command is still missing) and says so again.
    wait_note("MCP server ghost: failed to start", before)

    before = #notes
    vim.cmd("MinoMcp restart nope")
    local refused = wait_note("cannot restart the MCP server nope", before)
    assert_eq(refused.level, vim.log.levels.ERROR, "level of a refused restart")
    before = #notes
    vim.cmd("MinoMcp stop ghost")
    assert_contains(wait_note("usage: :MinoMcp", before).msg, ":MinoMcp restart NAME", "usage")
    assert_eq(mino.mcp_complete("", "MinoMcp "), { "restart" }, "completion of the first word")
    assert_eq(mino.mcp_complete("g", "MinoMcp restart g"), { "ghost" }, "completion of a server name")
  end)

test("an MCP call's approval shows server, tool, indented arguments and the annotations as the server's claims; Deny stays first",
  function()
    fresh()
    start_and_wait()
    local args = '{"path":"notes.txt","options":{"head":3}}'
    mino._on["mino/approvalRequest"]({
      sessionId = mino.state.session and mino.state.session.sessionId, turnId = "turn-mcp", seq = 1, callId = "call_1",
      command = "mcp fs/read_text_file " .. args, directory = ctx.work, environment = {},
      limits = { timeoutSeconds = 120, outputLimitBytes = 65536 }, approvalMode = "rules", sandbox = "off",
      mcp = { server = "fs", tool = "read_text_file", arguments = args,
        annotations = { readOnlyHint = true, destructiveHint = false } },
    })
    wait_for("the approval question", function()
      return #pending_selects == 1
    end)
    local s = selects[#selects]
    assert_eq(s.items[1], "Deny", "the first (default) answer")
    assert_eq(vim.tbl_contains(s.items, mino.APPROVAL_CHOICES.allow_session), false, "a rule offered for an MCP call")
    assert_contains(s.buffer, "**MCP tool call** wants to call `read_text_file` of the MCP server `fs` with:\n"
      .. '```json\n{\n  "path": "notes.txt",\n  "options": {\n    "head": 3\n  }\n}\n```', "chat when the question opened")
    assert_contains(s.buffer, "- Annotations: the server says: read-only, not destructive (the server's own claims: "
      .. "Mino does not check them and asks anyway)", "annotations in the chat")
    assert_contains(s.buffer, "- Limits: timeout 120 s", "limits in the chat")
    assert_contains(s.prompt, "the tool `read_text_file` of the MCP server `fs` with " .. args, "approval prompt")
    assert_contains(s.prompt, "the server says: read-only, not destructive, unchecked", "approval prompt")
    -- The whole call is bounded in the chat, and in the prompt line.
    local long = '{"text":"' .. ("y"):rep(5000) .. '"}'
    assert_contains(chat.mcp_arguments(long), "more characters not shown)", "a long call's arguments")
    assert_eq(vim.fn.strchars(chat.mcp_arguments(long)) < 4100, true, "shown arguments bounded")
    local prompt = mino.approval_prompt({ command = "mcp x/y", mcp = { server = "x", tool = "y", arguments = long } })
    assert_eq(vim.fn.strchars(prompt) < 400, true, "prompt bounded: " .. vim.fn.strchars(prompt))
    answer_pending("mino.approval", "Deny")
    wait_buffer("_Denied `mcp fs/read_text_file")
  end)

test("an MCP call's rule is for this tool or every tool of its server: Deny stays first, the server's rule is sent as `server/*`",
  function()
    fresh()
    start_and_wait()
    local args = '{"path":"notes.txt"}'
    mino._on["mino/approvalRequest"]({
      sessionId = mino.state.session and mino.state.session.sessionId, turnId = "turn-mcp2", seq = 1, callId = "call_1",
      command = "mcp fs/read_text_file " .. args, directory = ctx.work, environment = {},
      limits = { timeoutSeconds = 120, outputLimitBytes = 65536 }, approvalMode = "rules", sandbox = "off",
      suggestedRule = { kind = "mcp", tool = "fs/read_text_file" },
      mcp = { server = "fs", tool = "read_text_file", arguments = args },
    })
    wait_for("the approval question", function()
      return #pending_selects == 1
    end)
    local s = selects[#selects]
    local c = mino.APPROVAL_CHOICES
    assert_eq(s.items[1], "Deny", "the first (default) answer")
    for _, choice in ipairs({ c.mcp_tool_session, c.mcp_server_session, c.mcp_tool_workspace, c.mcp_server_workspace,
      c.mcp_deny_session, c.mcp_deny_workspace }) do
      assert_eq(vim.tbl_contains(s.items, choice), true, "offered: " .. choice)
    end
    assert_eq(vim.tbl_contains(s.items, c.allow_session), false, "no command rule for an MCP call")
    local decision, rule = mino.mcp_choice_rule({ suggestedRule = { kind = "mcp", tool = "fs/read_text_file" } },
      c.mcp_tool_workspace)
    assert_eq({ decision, rule }, { "allowWorkspace", { kind = "mcp", tool = "fs/read_text_file" } }, "this tool")
    -- What the plugin sends (the server refuses it: no turn of its own waits for this made-up call).
    local params
    local request = mino.request
    mino.request = function(m, p, cb)
      if m == "mino/approval" then
        params = p
      end
      return request(m, p, cb)
    end
    answer_pending("mino.approval", c.mcp_server_session)
    wait_for("mino/approval sent", function()
      return params ~= nil
    end)
    mino.request = request
    assert_eq({ params.decision, params.rule }, { "allowSession", { kind = "mcp", tool = "fs/*" } }, "the server's rule")
  end)

test("the recovery question is asked over a redrawn chat showing the recovered turns; MinoRecovery fires", function()
  fresh()
  start_and_wait()
  local fired = {}
  local group = vim.api.nvim_create_augroup("mino.test.recovery", { clear = true })
  vim.api.nvim_create_autocmd("User", {
    group = group,
    pattern = "MinoRecovery",
    callback = function(ev)
      table.insert(fired, ev.data)
    end,
  })
  mino._on["mino/recovery"]({
    sessionId = "s",
    turns = { { turnId = "turn-1", status = "interrupted", calls = {
      { callId = "call_1", command = "echo milk >> shopping.txt", result = { status = "unknown", output = "" } },
    } } },
    acknowledgementRequired = true,
    unacknowledgedTurnIds = { "turn-1" },
    repairs = {},
  })
  vim.api.nvim_del_augroup_by_id(group)
  wait_for("the acknowledgement question", function()
    return #pending_selects == 1 and pending_selects[1].kind == "mino.acknowledge"
  end)
  local s = selects[#selects]
  assert_contains(s.buffer, "## Recovered turns", "chat buffer when the question opened")
  assert_contains(s.buffer, "`echo milk >> shopping.txt` → **unknown**", "chat buffer when the question opened")
  assert_eq(vim.list_slice(ui_log, #ui_log - 1), { "redraw", "select mino.acknowledge" }, "redraw, then question")
  assert_eq(fired, { { acknowledgementRequired = true, turnIds = { "turn-1" }, unacknowledgedTurnIds = { "turn-1" } } },
    "MinoRecovery data")
end)

test("the chat is valid markdown: speakers are headings on their own lines, calls are ```sh fences", function()
  fresh()
  mock.script({
    { type = "calls", text = { "## Plan\n\nI will ", "list it." }, calls = { { call_id = "call_1", command = "echo listed" } } },
    { type = "text", deltas = { "Done: **listed**." } },
  })
  answers["mino.approval"] = { "Approve once" }
  start_and_wait()
  mino.send("## not a heading of mine\nplan it")
  wait_buffer(answer("Done: **listed**."))
  wait_turn_end()
  local lines = chat.lines()
  assert_eq(vim.bo[chat.buf()].filetype, "markdown", "filetype")
  assert_block(lines, { "", "## You", "", "## not a heading of mine", "plan it" }, "question")
  assert_block(lines, { "", "## Mino", "", "## Plan", "", "I will list it." }, "first answer")
  assert_block(lines, { "```sh", "echo listed", "```" }, "call block")
  assert_block(lines, { "", "## Mino", "", "Done: **listed**." }, "final answer")
  assert_lines_in_order(lines, { "## You", "## Mino", "## Plan", "```sh", "Result: **success** (exit 0)", "## Mino" },
    "order")
  for _, l in ipairs(lines) do
    if l:match("^You> ") or l:match("^Assistant> ") then
      fail("a speaker label shares its line with text: " .. l)
    end
  end
  -- Neovim's own markdown parser finds the headings (and no heading glued to
  -- a label), and every fence is closed.
  local parser = vim.treesitter.get_string_parser(table.concat(lines, "\n") .. "\n", "markdown")
  local tree = parser:parse()[1]
  local query = vim.treesitter.query.parse("markdown", "(atx_heading) @h (fenced_code_block) @f")
  local headings, fences = {}, 0
  for id, node in query:iter_captures(tree:root(), table.concat(lines, "\n") .. "\n") do
    if query.captures[id] == "h" then
      table.insert(headings, vim.trim(vim.treesitter.get_node_text(node, table.concat(lines, "\n") .. "\n")))
    else
      fences = fences + 1
      local text = vim.treesitter.get_node_text(node, table.concat(lines, "\n") .. "\n")
      if not vim.trim(text):match("```$") then
        fail("an unclosed fence: " .. text)
      end
    end
  end
  -- The first heading is the header's: "# Mino", or "# Mino: <title>" once the session has one.
  if not (headings[1] or ""):match("^# Mino") then
    fail("the chat does not start with the # Mino heading: " .. vim.inspect(headings))
  end
  assert_lines_in_order(headings, { "## You", "## not a heading of mine", "## Mino", "## Plan", "## Mino" },
    "markdown headings")
  if fences < 2 then
    fail("expected the call and its output as fenced code blocks, found " .. fences)
  end
end)

test("User autocmds report a tool turn's progress in order, with turn and call ids", function()
  fresh()
  mock.script({
    { type = "calls", text = { "Let me look." }, calls = { { call_id = "call_1", command = "echo progress" } } },
    { type = "text", deltas = { "Looked." } },
  })
  answers["mino.approval"] = { "Approve once" }
  local fired = {}
  local group = vim.api.nvim_create_augroup("mino.test.events", { clear = true })
  vim.api.nvim_create_autocmd("User", {
    group = group,
    pattern = "Mino*",
    callback = function(ev)
      table.insert(fired, { name = ev.match, data = ev.data })
    end,
  })
  start_and_wait()
  mino.send("look")
  wait_buffer(answer("Looked."))
  wait_turn_end()
  vim.api.nvim_del_augroup_by_id(group)
  -- The start announced the session first (MinoSessionChanged, tested with the sessions).
  assert_eq(fired[1].name, "MinoSessionChanged", "first event")
  assert_eq(fired[1].data.sessionId, mino.state.session.sessionId, "MinoSessionChanged sessionId")
  table.remove(fired, 1)
  local names = vim.tbl_map(function(e)
    return e.name
  end, fired)
  assert_eq(names, {
    "MinoRequestStarted", "MinoStreaming", "MinoApprovalRequested", "MinoApprovalDecided", "MinoToolStarted",
    "MinoToolFinished", "MinoStreaming", "MinoRequestFinished",
  }, "events")
  local turn = fired[1].data.turnId
  if type(turn) ~= "string" or turn == "" then
    fail("MinoRequestStarted has no turnId: " .. vim.inspect(fired[1].data))
  end
  for _, e in ipairs(fired) do
    assert_eq(e.data.turnId, turn, e.name .. " turnId")
  end
  assert_eq(fired[1].data.input, "look", "MinoRequestStarted input")
  assert_eq(fired[3].data.callId, "call_1", "MinoApprovalRequested callId")
  assert_eq(fired[3].data.command, "echo progress", "MinoApprovalRequested command")
  assert_eq(fired[4].data.decision, "approve", "MinoApprovalDecided decision")
  assert_eq(fired[5].data.callId, "call_1", "MinoToolStarted callId")
  assert_eq({ fired[6].data.callId, fired[6].data.status, fired[6].data.exitCode }, { "call_1", "success", 0 },
    "MinoToolFinished callId, status, exitCode")
  assert_eq(fired[8].data.status, "completed", "MinoRequestFinished status")
end)

test("keymaps are opt-in; approve answers only a question already shown", function()
  fresh({ cmd_env = { RUST_LOG = TRACE_WIRE } })
  local defaults = mino.default_keymaps
  for _, lhs in pairs(defaults) do
    assert_eq(vim.fn.maparg(lhs, "n"), "", "mapping of " .. lhs .. " without keymaps")
  end
  mino.setup(vim.tbl_extend("force", mino.config, { keymaps = { deny = "<leader>mx" } }))
  assert_eq(vim.fn.maparg(defaults.approve, "n", false, true).desc, "Approve the command Mino is asking about",
    "approve keymap")
  assert_eq(vim.fn.maparg(defaults.cancel, "n", false, true).desc, "Cancel Mino's running turn", "cancel keymap")
  assert_eq(vim.fn.maparg(defaults.open, "n", false, true).desc, "Open the Mino chat and write a question",
    "open keymap")
  assert_eq(vim.fn.maparg("<leader>mx", "n", false, true).desc, "Deny the command Mino is asking about",
    "deny keymap (overridden)")
  assert_eq(vim.fn.maparg(defaults.deny, "n"), "", "the overridden default deny key")
  assert_eq(vim.fn.maparg(defaults.new, "n", false, true).desc, "Start a new Mino chat", "new chat keymap")
  assert_eq(vim.fn.maparg(defaults.sessions, "n", false, true).desc, "Pick a Mino session to continue",
    "sessions keymap")

  mock.script({
    { type = "calls", calls = { { call_id = "call_1", command = "echo keyed > keyed.txt" } } },
    { type = "text", deltas = { "Keyed." } },
  })
  start_and_wait()
  vim.cmd("wincmd p")
  -- Pressed before any approval request exists: nothing to approve.
  local since = #notes
  type_keys(defaults.approve)
  wait_note("no command is waiting for your approval", since)
  -- Pressed ahead while the request is on its way (still unread when the
  -- question appears): dropped with the typed-ahead keys.
  vim.api.nvim_input((defaults.approve:gsub("<leader>", "\\")))
  mino.send("write it")
  wait_for("the approval question", function()
    return #pending_selects == 1
  end)
  assert_eq(#wire("<-", "mino/approval"), 0, "decisions sent before the question showed")
  if not note_matching("typed before the question appeared were ignored", since) then
    fail("the approve key typed ahead was not dropped")
  end
  assert_eq(vim.fn.filereadable(ctx.work .. "/keyed.txt"), 0, "keyed.txt before the question is answered")
  -- Pressed once the question shows: approves it.
  type_keys(defaults.approve)
  wait_buffer(answer("Keyed."))
  wait_turn_end()
  assert_eq(read_file(ctx.work .. "/keyed.txt"), "keyed\n", "keyed.txt")
  assert_eq(#wire("<-", "mino/approval"), 1, "decisions sent")
  -- The menu answered late changes nothing.
  answer_pending("mino.approval", "Deny")
  assert_eq(#wire("<-", "mino/approval"), 1, "decisions sent after a late menu answer")

  mino.setup(vim.tbl_extend("force", mino.config, { keymaps = false }))
  assert_eq(vim.fn.maparg(defaults.approve, "n"), "", "approve keymap after keymaps = false")
end)

test("float window option opens the chat in a floating window", function()
  fresh({ window = "float" })
  start_and_wait()
  local cfg = vim.api.nvim_win_get_config(chat.win())
  assert_eq(cfg.relative, "editor", "window relative")
  -- The input is a float of its own under the chat's.
  local input = vim.api.nvim_win_get_config(chat.input_win())
  assert_eq(input.relative, "editor", "input window relative")
  if not (vim.fn.win_screenpos(chat.input_win())[1] > vim.fn.win_screenpos(chat.win())[1] + cfg.height) then
    fail("the input float is not under the chat float")
  end
  assert_eq(vim.api.nvim_get_current_win(), chat.input_win(), "current window")
end)

-- ------------------------------------------------------------ approval rules

--- An approval request as the server sends it (wave 2 fields included).
local function approval_request(over)
  return vim.tbl_extend("force", {
    sessionId = mino.state.session and mino.state.session.sessionId or nil,
    turnId = "turn-r", seq = 2, callId = "call_r", command = "git status --short",
    directory = "/tmp/ws", environment = { PATH = "/usr/bin" },
    limits = { timeoutSeconds = 120, outputLimitBytes = 65536 },
    sandbox = "workspace-write", approvalMode = "rules",
    suggestedRule = { kind = "prefix", command = "git status" },
  }, over or {})
end

--- The chat opened without a server, mino/approval answered by `handler`.
local function stubbed_approval(handler)
  fresh()
  chat.open(mino.config)
  stubbed["mino/approval"] = handler or function()
    return nil, {}
  end
end

local function count_kind(list, kind)
  local n = 0
  for _, s in ipairs(list) do
    if s.kind == kind then
      n = n + 1
    end
  end
  return n
end

test("the approval menu: Deny first, then Deny with reason, Approve once, the allow and the deny-rule choices; the prompt names sandbox and mode",
  function()
    stubbed_approval()
    mino._on["mino/approvalRequest"](approval_request())
    wait_for("the approval question", function()
      return #pending_selects == 1
    end)
    local s = selects[1]
    assert_eq(s.items, { "Deny", "Deny with reason…", "Approve once", "Allow for this session…",
      "Always allow in this workspace…", "Deny for this session…", "Always deny in this workspace…" }, "approval choices")
    assert_contains(s.prompt, "git status --short", "prompt")
    assert_contains(s.prompt, "sandbox workspace-write", "prompt")
    assert_contains(s.prompt, "approval mode rules", "prompt")
    assert_contains(s.buffer, "- Sandbox: workspace-write · approval mode: rules", "chat when asked")
    -- Dismissing the menu denies.
    pending_selects[1].on_choice(nil)
    wait_for("the decision", function()
      return #stub_params("mino/approval") == 1
    end)
    assert_eq(stub_params("mino/approval")[1], { turnId = "turn-r", callId = "call_r", decision = "deny" },
      "mino/approval params")
    -- Without a suggested rule (a command that is not plain), no allow choice.
    mino._on["mino/approvalRequest"](approval_request({ callId = "call_s", command = "a | b", suggestedRule = vim.NIL }))
    wait_for("the second question", function()
      return #selects == 2
    end)
    assert_eq(selects[2].items, { "Deny", "Deny with reason…", "Approve once" }, "choices without a suggested rule")
  end)

test("Allow for this session… asks for the rule prefilled with the suggestion, editable, and sends it", function()
  stubbed_approval()
  local decided = {}
  vim.api.nvim_create_autocmd("User", {
    group = vim.api.nvim_create_augroup("mino.test.decided", { clear = true }),
    pattern = "MinoApprovalDecided",
    callback = function(ev)
      table.insert(decided, ev.data)
    end,
  })
  answers["mino.approval"] = { "Allow for this session…" }
  input_answers["mino.approval.rule"] = { "git status --short" }
  mino._on["mino/approvalRequest"](approval_request())
  wait_for("the decision", function()
    return #stub_params("mino/approval") == 1
  end)
  vim.api.nvim_del_augroup_by_name("mino.test.decided")
  assert_eq(#inputs, 1, "inputs asked")
  assert_eq(inputs[1].default, "git status", "the rule's prefill (suggestedRule.command)")
  assert_contains(inputs[1].prompt, "this session", "rule prompt")
  assert_eq(vim.list_slice(ui_log, #ui_log - 1), { "redraw", "input mino.approval.rule" }, "redraw, then the input")
  assert_eq(stub_params("mino/approval")[1], { turnId = "turn-r", callId = "call_r", decision = "allowSession",
    rule = { kind = "prefix", command = "git status --short" } }, "mino/approval params")
  wait_buffer("_Approved `git status --short`, and from now on in this session every command starting with `git status --short`._")
  assert_eq(decided[1].decision, "allowSession", "MinoApprovalDecided decision")
  assert_eq(decided[1].rule, { kind = "prefix", command = "git status --short" }, "MinoApprovalDecided rule")

  assert_not_contains(buffer_text(), "The approval mode is `ask`", "chat buffer (mode rules)")

  -- The workspace choice sends allowWorkspace; in `ask` mode the chat says
  -- the rule waits for another mode.
  answers["mino.approval"] = { "Always allow in this workspace…" }
  input_answers["mino.approval.rule"] = { "git" }
  mino._on["mino/approvalRequest"](approval_request({ callId = "call_w", approvalMode = "ask" }))
  wait_for("the second decision", function()
    return #stub_params("mino/approval") == 2
  end)
  assert_contains(inputs[2].prompt, "workspace", "rule prompt")
  assert_eq(stub_params("mino/approval")[2].decision, "allowWorkspace", "decision")
  assert_eq(stub_params("mino/approval")[2].rule, { kind = "prefix", command = "git" }, "rule")
  wait_buffer("in this workspace every command starting with `git`._ _(The approval mode is `ask`: rules apply once it is `rules` or `sandboxed-auto`.)_")
end)

test("an edit's Allow for this session… asks for a path rule prefilled with its path and sends the glob", function()
  stubbed_approval()
  answers["mino.approval"] = { "Allow for this session…" }
  input_answers["mino.approval.rule"] = { "src/*.rs" }
  mino._on["mino/approvalRequest"](approval_request({ callId = "call_e", command = "edit_file src/a.rs",
    edit = { tool = "edit_file", path = "src/a.rs", newFile = false, size = 3, diff = "", leavesWorkspace = false },
    suggestedRule = { kind = "path", pattern = "src/a.rs" } }))
  wait_for("the decision", function()
    return #stub_params("mino/approval") == 1
  end)
  assert_eq(inputs[1].default, "src/a.rs", "the rule's prefill (suggestedRule.pattern)")
  assert_contains(inputs[1].prompt, "edits of files matching", "rule prompt")
  assert_eq(stub_params("mino/approval")[1].rule, { kind = "path", pattern = "src/*.rs" }, "the path rule sent")
  wait_buffer("_Approved edit_file `src/a.rs`, and from now on in this session every edit of a file matching `src/*.rs`._")
  assert_eq(mino.format_rule({ kind = "path", pattern = "src/*.rs", scope = "session", effect = "deny" }),
    "src/*.rs  (path, this session, deny)", "a path deny rule in :MinoRules")
end)

test("Deny for this session… asks for the rule prefilled with the suggestion, sends denySession and never approves; Always deny in this workspace… sends denyWorkspace",
  function()
    stubbed_approval()
    local decided = {}
    vim.api.nvim_create_autocmd("User", {
      group = vim.api.nvim_create_augroup("mino.test.denied", { clear = true }),
      pattern = "MinoApprovalDecided",
      callback = function(ev)
        table.insert(decided, ev.data)
      end,
    })
    answers["mino.approval"] = { "Deny for this session…" }
    input_answers["mino.approval.rule"] = { "  git push --force  " }
    mino._on["mino/approvalRequest"](approval_request({ command = "git push --force origin main",
      suggestedRule = { kind = "prefix", command = "git push" } }))
    wait_for("the decision", function()
      return #stub_params("mino/approval") == 1
    end)
    vim.api.nvim_del_augroup_by_name("mino.test.denied")
    assert_eq(inputs[1].default, "git push", "the rule's prefill (suggestedRule.command)")
    assert_contains(inputs[1].prompt, "for this session refuse without asking", "rule prompt")
    assert_eq(vim.list_slice(ui_log, #ui_log - 1), { "redraw", "input mino.approval.rule" }, "redraw, then the input")
    assert_eq(stub_params("mino/approval")[1], { turnId = "turn-r", callId = "call_r", decision = "denySession",
      rule = { kind = "prefix", command = "git push --force" } }, "mino/approval params")
    wait_buffer("_Denied `git push --force origin main`, and from now on in this session every command starting with `git push --force` is refused without asking._")
    assert_not_contains(buffer_text(), "_Approved", "chat buffer")
    assert_eq(decided[1].decision, "denySession", "MinoApprovalDecided decision")
    assert_eq(decided[1].rule, { kind = "prefix", command = "git push --force" }, "MinoApprovalDecided rule")

    -- The workspace choice sends denyWorkspace; an edit's deny rule is a path rule.
    answers["mino.approval"] = { "Always deny in this workspace…" }
    input_answers["mino.approval.rule"] = { "secrets/**" }
    mino._on["mino/approvalRequest"](approval_request({ callId = "call_e", command = "edit_file secrets/key.txt",
      edit = { tool = "edit_file", path = "secrets/key.txt", newFile = false, size = 3, diff = "", leavesWorkspace = false },
      suggestedRule = { kind = "path", pattern = "secrets/key.txt" } }))
    wait_for("the second decision", function()
      return #stub_params("mino/approval") == 2
    end)
    assert_eq(inputs[2].default, "secrets/key.txt", "the path rule's prefill (suggestedRule.pattern)")
    assert_contains(inputs[2].prompt, "always refuse in this workspace edits of files matching", "rule prompt")
    assert_eq(stub_params("mino/approval")[2], { turnId = "turn-r", callId = "call_e", decision = "denyWorkspace",
      rule = { kind = "path", pattern = "secrets/**" } }, "mino/approval params")
    wait_buffer("_Denied edit_file `secrets/key.txt`, and from now on in this workspace every edit of a file matching `secrets/**` is refused without asking._")

    -- An edit leaving the workspace has no suggested rule: no deny-rule choice either.
    mino._on["mino/approvalRequest"](approval_request({ callId = "call_o", command = "edit_file /etc/hosts",
      edit = { tool = "edit_file", path = "/etc/hosts", newFile = false, size = 3, diff = "", leavesWorkspace = true },
      suggestedRule = vim.NIL }))
    wait_for("the third question", function()
      return #pending_selects == 1
    end)
    assert_eq(selects[#selects].items, { "Deny", "Deny with reason…", "Approve once" }, "choices outside the workspace")
    pending_selects[1].on_choice(nil)
    wait_for("the third decision", function()
      return #stub_params("mino/approval") == 3
    end)
    assert_eq(stub_params("mino/approval")[3].decision, "deny", "dismissed: denied")
  end)

test("an empty or dismissed deny rule goes back to the question and never approves", function()
  stubbed_approval()
  answers["mino.approval"] = { "Deny for this session…", "Always deny in this workspace…" }
  input_answers["mino.approval.rule"] = { "   ", vim.NIL }
  mino._on["mino/approvalRequest"](approval_request())
  wait_for("the question asked a third time", function()
    return #pending_selects == 1 and count_kind(selects, "mino.approval") == 3
  end)
  assert_eq(#stub_params("mino/approval"), 0, "decisions sent")
  pending_selects[1].on_choice("Deny")
  wait_for("the decision", function()
    return #stub_params("mino/approval") == 1
  end)
  assert_eq(stub_params("mino/approval")[1], { turnId = "turn-r", callId = "call_r", decision = "deny" }, "the decision at last")
end)

test("an empty or dismissed rule or reason goes back to the question and never approves", function()
  stubbed_approval()
  answers["mino.approval"] = { "Allow for this session…", "Always allow in this workspace…", "Deny with reason…" }
  input_answers["mino.approval.rule"] = { "   ", vim.NIL }
  input_answers["mino.approval.reason"] = { "" }
  mino._on["mino/approvalRequest"](approval_request())
  -- Three times back to the question, which then stays open.
  wait_for("the question asked a fourth time", function()
    return #pending_selects == 1 and count_kind(selects, "mino.approval") == 4
  end)
  assert_eq(#stub_params("mino/approval"), 0, "decisions sent")
  assert_not_contains(buffer_text(), "_Approved", "chat buffer")
  pending_selects[1].on_choice("Deny")
  wait_for("the decision", function()
    return #stub_params("mino/approval") == 1
  end)
  assert_eq(stub_params("mino/approval")[1].decision, "deny", "the decision at last")
end)

test("Deny with reason… sends the reason with the denial and shows it", function()
  stubbed_approval()
  answers["mino.approval"] = { "Deny with reason…" }
  input_answers["mino.approval.reason"] = { "  use the Makefile target instead  " }
  mino._on["mino/approvalRequest"](approval_request())
  wait_for("the decision", function()
    return #stub_params("mino/approval") == 1
  end)
  assert_eq(inputs[1].default, "", "reason prefill")
  assert_eq(stub_params("mino/approval")[1], { turnId = "turn-r", callId = "call_r", decision = "deny",
    reason = "use the Makefile target instead" }, "mino/approval params")
  wait_buffer("_Denied `git status --short`: use the Makefile target instead_")
end)

test("a rule the server refuses (-32602) is shown and the question is asked again", function()
  local refusals = 0
  stubbed_approval(function(params)
    if params.rule and params.rule.command == "bash" then
      refusals = refusals + 1
      return { code = -32602, message = "the rule `bash` would allow any command: bash runs other commands" }
    end
    return nil, {}
  end)
  answers["mino.approval"] = { "Allow for this session…" }
  input_answers["mino.approval.rule"] = { "bash" }
  mino._on["mino/approvalRequest"](approval_request())
  wait_for("the question asked again", function()
    return refusals == 1 and #pending_selects == 1
  end)
  wait_buffer("**Refused:** the rule `bash` would allow any command")
  wait_note("the rule `bash` would allow any command")
  assert_not_contains(buffer_text(), "_Approved", "chat buffer")
  assert_eq(count_kind(selects, "mino.approval"), 2, "questions asked")
  pending_selects[1].on_choice("Approve once")
  wait_for("the second decision", function()
    return #stub_params("mino/approval") == 2
  end)
  assert_eq(stub_params("mino/approval")[2].decision, "approve", "decision after the refusal")
end)

-- The allow and the deny rule choices ask for their rule through the same
-- input: a key typed right as the choice is made (before the rule prompt
-- shows) would confirm the prefilled rule.
for _, case in ipairs({
  { choice = "Allow for this session…", rule = "rule" },
  { choice = "Deny for this session…", rule = "deny rule" },
}) do
  test(("keys typed before the %s input appeared are dropped, never typed into it"):format(case.rule), function()
    stubbed_approval()
    answers["mino.approval"] = {
      function()
        vim.api.nvim_input("<CR>")
        return case.choice
      end,
      "Deny",
    }
    -- Once the prompt shows, the person dismisses it.
    use_builtin_input({ ["mino.approval.rule"] = { "<Esc>" } })
    mino._on["mino/approvalRequest"](approval_request())
    wait_for("the decision", function()
      return #stub_params("mino/approval") == 1
    end)
    assert_eq(stub_params("mino/approval")[1], { turnId = "turn-r", callId = "call_r", decision = "deny" }, "decision")
    assert_eq(count_kind(selects, "mino.approval"), 2, "questions asked (back to the question after the input)")
    if not note_matching("typed before the question appeared were ignored") then
      fail(("the key typed before the %s prompt was not dropped"):format(case.rule))
    end
  end)
end

test("call blocks say what approved a call: a rule, the sandbox; history and recovery too", function()
  fresh()
  chat.open(mino.config)
  mino.state.history_loaded = true
  local on = mino._on
  on["mino/turnStarted"]({ turnId = "t1", seq = 1, input = "q" })
  on["mino/toolStarted"]({ turnId = "t1", seq = 2, callId = "call_1", command = "git status",
    approvedBy = { kind = "rule", rule = { id = "r1", kind = "prefix", command = "git status", scope = "session" } },
    sandbox = "off" })
  on["mino/toolResult"]({ turnId = "t1", seq = 3, callId = "call_1", status = "success", output = "", exitCode = 0 })
  on["mino/toolStarted"]({ turnId = "t1", seq = 4, callId = "call_2", command = "make test",
    approvedBy = { kind = "sandbox" }, sandbox = "workspace-write" })
  on["mino/toolResult"]({ turnId = "t1", seq = 5, callId = "call_2", status = "success", output = "", exitCode = 0 })
  local lines = chat.lines()
  assert_block(lines, { "**Tool call** runs:", "```sh", "git status", "```",
    "_Approved by rule `git status` (prefix, this session)._" }, "call approved by a rule")
  assert_block(lines, { "**Tool call** runs:", "```sh", "make test", "```",
    "_Approved automatically in the sandbox (workspace-write)._" }, "call approved in the sandbox")
  chat.render_history({ turns = { { turnId = "t0", input = "old", text = "", status = "completed", notices = {},
    calls = { { callId = "call_0", command = "ls", result = { status = "success", output = "", exitCode = 0 },
      approvedBy = { kind = "rule", rule = { id = "r2", kind = "exact", command = "ls", scope = "workspace" } },
      sandbox = "read-only" } } } } })
  assert_contains(buffer_text(), "```sh\nls\n```\n_Approved by rule `ls` (exact, this workspace)._", "history")
  mino._on["mino/recovery"]({ turns = { { turnId = "t0", status = "interrupted", calls = { { callId = "call_9",
    command = "make", result = { status = "not_executed", output = "" }, approvedBy = { kind = "sandbox" },
    sandbox = "workspace-write" } } } }, acknowledgementRequired = false, unacknowledgedTurnIds = {}, repairs = {} })
  assert_contains(buffer_text(), "`make` → **not_executed**\n    _Approved automatically in the sandbox (workspace-write)._",
    "recovery")
end)

test("usage: the turn's tokens after each turn, the session's in the header, live and from history", function()
  fresh()
  chat.open(mino.config)
  chat.server_started({ sessionId = "s", model = "m", cwd = "/w", title = "Tokens" })
  mino.state.history_loaded = true
  local on = mino._on
  on["mino/turnStarted"]({ turnId = "t1", seq = 1, input = "q" })
  on["mino/textDelta"]({ turnId = "t1", seq = 2, delta = "Answer." })
  on["mino/turnEnded"]({ turnId = "t1", seq = 3, status = "completed", text = "Answer.",
    usage = { inputTokens = 1000, outputTokens = 234, totalTokens = 1234, cachedInputTokens = 800 },
    sessionUsage = { inputTokens = 3000, outputTokens = 456, totalTokens = 3456 } })
  local lines = chat.lines()
  assert_lines_in_order(lines, { "Answer.", "_Turn used 1,234 tokens (1,000 in (800 cached), 234 out)._" }, "live turn")
  assert_eq(lines[4], "_Session tokens: 3,456 tokens (3,000 in, 456 out)_", "header")
  on["mino/turnStarted"]({ turnId = "t2", seq = 4, input = "again" })
  on["mino/turnEnded"]({ turnId = "t2", seq = 5, status = "completed", text = vim.NIL,
    usage = { inputTokens = 10, outputTokens = 5, totalTokens = 15 },
    sessionUsage = { inputTokens = 3010, outputTokens = 461, totalTokens = 3471 } })
  lines = chat.lines()
  assert_eq(lines[4], "_Session tokens: 3,471 tokens (3,010 in, 461 out)_", "header, replaced")
  assert_eq(#vim.tbl_filter(function(l)
    return vim.startswith(l, "_Session tokens")
  end, lines), 1, "one session line")

  chat.server_started({ sessionId = "s", model = "m", cwd = "/w", title = "Tokens" })
  chat.render_history({ sessionId = "s", usage = { inputTokens = 3010, outputTokens = 461, totalTokens = 3471 },
    turns = { { turnId = "t1", input = "q", text = "Answer.", status = "completed", notices = {}, calls = {},
      usage = { inputTokens = 10, outputTokens = 5, totalTokens = 15 }, items = { { type = "text", text = "Answer." } } } } })
  lines = chat.lines()
  assert_eq(lines[4], "_Session tokens: 3,471 tokens (3,010 in, 461 out)_", "header from history")
  assert_lines_in_order(lines, { "Answer.", "_Turn used 15 tokens (10 in, 5 out)._" }, "history turn")
end)

test("against the server: a reopened session shows each turn as it was live: text, the call with its directory, environment and limits, more text cut short by a cancel", function()
  fresh()
  local deltas = {}
  for i = 0, 59 do
    table.insert(deltas, ("half%d "):format(i))
  end
  mock.script({
    { type = "calls", text = { "Let me", " look." }, calls = { { call_id = "call_1", command = "echo hi" } } },
    { type = "text", deltas = deltas, delay_ms = 200 },
  })
  answers["mino.approval"] = { "Approve once" }
  start_and_wait()
  mino.send("Look around")
  wait_buffer("Result: **success** (exit 0)")
  wait_buffer(answer("half0"))
  vim.cmd("MinoCancel")
  wait_buffer("_Turn cancelled")
  wait_turn_end()
  local live = chat.lines()
  local partial
  for i, l in ipairs(live) do
    if vim.startswith(l, "half0") then
      partial = l
    end
  end
  if not partial then
    fail("no partial text live:\n" .. table.concat(live, "\n"))
  end
  local dir = buffer_text():match("%- Directory: `([^`]+)`")
  local limits
  for _, l in ipairs(live) do
    if vim.startswith(l, "- Limits: ") then
      limits = l
    end
  end
  local cancelled
  for _, l in ipairs(live) do
    if vim.startswith(l, "_Turn cancelled") then
      cancelled = l
    end
  end
  local order = { chat.USER_HEADING, "Look around", chat.ASSISTANT_HEADING, "Let me look.",
    "**Tool call** wants to run:", "echo hi", "- Directory: `" .. dir .. "`", "- Environment:", limits,
    "_Approved `echo hi`._", "hi", "Result: **success** (exit 0)", chat.ASSISTANT_HEADING, partial, cancelled }
  assert_lines_in_order(live, order, "live")

  -- Reopened: the history rebuilds the same lines in the same order.
  mino.restart()
  wait_for("the restarted server's history", function()
    return mino.client() ~= nil and mino.state.history_loaded
  end, 15000)
  local restored = chat.lines()
  assert_lines_in_order(restored, order, "restored from history")
  assert_not_contains(table.concat(restored, "\n"), "Waiting for your decision", "restored (the decision is known)")
end)

--- Skips the test unless the running server answers `m` (a server built
--- before that method answers -32601).
local function require_method(m, params)
  local answer
  mino.request(m, params or vim.empty_dict(), function(err)
    answer = err or false
  end)
  wait_for("the server's answer to " .. m, function()
    return answer ~= nil
  end)
  if answer and answer.code == -32601 then
    skip(("this mino-server does not implement %s yet (-32601)"):format(m))
  end
end

test("against the server: a session rule lets a later matching command run unasked, shown approved by rule", function()
  fresh({ cmd_env = { RUST_LOG = TRACE_WIRE }, approval_mode = "rules" })
  mock.script({
    { type = "calls", calls = { { call_id = "call_1", command = "touch one.txt" } } },
    { type = "calls", calls = { { call_id = "call_2", command = "touch two.txt" } } },
    { type = "text", deltas = { "Both", " made." } },
  })
  start_and_wait()
  require_method("mino/rules/list")
  answers["mino.approval"] = { "Allow for this session…" }
  input_answers["mino.approval.rule"] = { "touch" }
  mino.send("make two files")
  wait_buffer(answer("Both made."))
  wait_turn_end()
  assert_eq(count_kind(selects, "mino.approval"), 1, "approval questions")
  local asked = wire("->", "mino/approvalRequest")[1].params
  assert_eq(inputs[1].default, asked.suggestedRule.command, "rule prefill")
  assert_eq(wire("<-", "mino/approval")[1].params.rule, { kind = "prefix", command = "touch" }, "rule sent")
  assert_eq(vim.fn.filereadable(ctx.work .. "/one.txt"), 1, "one.txt")
  assert_eq(vim.fn.filereadable(ctx.work .. "/two.txt"), 1, "two.txt")
  assert_contains(buffer_text(), "**Tool call** runs:\n```sh\ntouch two.txt\n```\n_Approved by rule `touch` (prefix, this session)._",
    "chat buffer")

  -- :MinoRules lists it; No (the default) keeps it, Yes revokes it.
  answers["mino.rules"] = { function(items)
    return items[1]
  end, function(items)
    return items[1]
  end }
  answers["mino.rules.revoke"] = { vim.NIL, "Yes" }
  vim.cmd("MinoRules")
  wait_for("the revoke question", function()
    return count_kind(selects, "mino.rules.revoke") == 1
  end)
  local listed = selects[#selects - 1]
  assert_eq(listed.kind, "mino.rules", "the rules list")
  assert_eq(#listed.items, 1, "rules listed")
  assert_eq({ listed.items[1].kind, listed.items[1].command, listed.items[1].scope }, { "prefix", "touch", "session" },
    "the rule")
  assert_eq(selects[#selects].items, { "No", "Yes" }, "revoke question (No first)")
  vim.cmd("MinoRules")
  local since = #notes
  wait_note("revoked the rule", since)
  assert_eq(#wire("<-", "mino/rules/revoke"), 1, "revocations sent")
  vim.cmd("MinoRules")
  wait_note("no approval rules")

  -- The history says so too, after a restart.
  mino.restart()
  wait_for("the restarted server's history", function()
    return mino.client() ~= nil and mino.state.history_loaded
  end, 15000)
  assert_contains(buffer_text(), "**Tool call** runs:\n```sh\ntouch two.txt\n```\n"
    .. "_Approved by rule `touch` (prefix, this session)._", "chat buffer after a restart")
end)

test("against the server: Deny for this session… refuses the same command asked again without a question", function()
  fresh({ cmd_env = { RUST_LOG = TRACE_WIRE }, approval_mode = "rules" })
  mock.script({
    { type = "calls", calls = { { call_id = "call_1", command = "touch leaked.txt" } } },
    { type = "calls", calls = { { call_id = "call_2", command = "touch leaked.txt" } } },
    { type = "text", deltas = { "Not", " made." } },
  })
  start_and_wait()
  answers["mino.approval"] = { "Deny for this session…" }
  input_answers["mino.approval.rule"] = { "touch leaked.txt" }
  mino.send("leave a note")
  wait_buffer(answer("Not made."))
  wait_turn_end()
  -- One question: the second, identical call was refused by the rule.
  assert_eq(count_kind(selects, "mino.approval"), 1, "approval questions")
  assert_eq(#wire("->", "mino/approvalRequest"), 1, "approval requests from the server")
  local asked = wire("->", "mino/approvalRequest")[1].params
  assert_eq(inputs[1].default, asked.suggestedRule.command, "rule prefill")
  assert_eq(wire("<-", "mino/approval")[1].params.decision, "denySession", "decision sent")
  assert_eq(wire("<-", "mino/approval")[1].params.rule, { kind = "prefix", command = "touch leaked.txt" }, "rule sent")
  assert_eq(vim.fn.filereadable(ctx.work .. "/leaked.txt"), 0, "leaked.txt")
  local results = wire("->", "mino/toolResult")
  assert_eq(#results, 2, "tool results")
  assert_eq(results[2].params.callId, "call_2", "the second result's call")
  assert_eq(results[2].params.status, "refused", "the second call's status")
  assert_contains(results[2].params.output, "Denied by a rule the user set", "the second call's output")
  wait_buffer("_Denied `touch leaked.txt`, and from now on in this session every command starting with `touch leaked.txt` is refused without asking._")
  -- The refused call is shown with its command and the rule that refused it.
  assert_eq(results[2].params.command, "touch leaked.txt", "the second result's command")
  wait_buffer('Denied by a rule the user set: prefix "touch leaked.txt"')
  assert_contains(buffer_text(), "**Tool call** wants to run:\n```sh\ntouch leaked.txt\n```\n\n_Denied `touch leaked.txt`._",
    "the refused call's block")
end)

test("against the server: a rule the matcher refuses is shown and the question asked again", function()
  fresh({ approval_mode = "rules" })
  mock.script({
    { type = "calls", calls = { { call_id = "call_1", command = "touch refused.txt" } } },
    { type = "text", deltas = { "Not", " made." } },
  })
  start_and_wait()
  require_method("mino/rules/list")
  answers["mino.approval"] = { "Allow for this session…" }
  input_answers["mino.approval.rule"] = { "bash" }
  mino.send("make a file")
  wait_for("the question asked again", function()
    return count_kind(selects, "mino.approval") == 2 and #pending_selects == 1
  end, 15000)
  wait_buffer("**Refused:**")
  assert_eq(vim.fn.filereadable(ctx.work .. "/refused.txt"), 0, "refused.txt")
  pending_selects[1].on_choice("Deny")
  wait_buffer(answer("Not made."))
  wait_turn_end()
  assert_eq(vim.fn.filereadable(ctx.work .. "/refused.txt"), 0, "refused.txt")
end)

test("against the server: in sandboxed-auto a command runs in the sandbox without a question, and says so", function()
  fresh({ approval_mode = "sandboxed-auto", sandbox = "workspace-write" })
  mock.script({
    { type = "calls", calls = { { call_id = "call_1", command = "touch boxed.txt" } } },
    { type = "text", deltas = { "Boxed." } },
  })
  local since = #notes
  vim.cmd("Mino")
  wait_for("the start or its refusal", function()
    return (mino.client() ~= nil and mino.state.history_loaded) or note_matching("refused to start", since) ~= nil
  end, 15000)
  local refused = note_matching("refused to start", since)
  if refused then
    -- A machine that cannot enforce the sandbox refuses the mode (never runs weaker).
    skip("this machine cannot enforce the sandbox: " .. refused.msg)
  end
  require_method("mino/rules/list")
  mino.send("make it")
  wait_buffer(answer("Boxed."))
  wait_turn_end()
  assert_eq(count_kind(selects, "mino.approval"), 0, "approval questions")
  assert_contains(buffer_text(), "**Tool call** runs:\n```sh\ntouch boxed.txt\n```\n"
    .. "_Approved automatically in the sandbox (workspace-write)._", "chat buffer")
  assert_eq(vim.fn.filereadable(ctx.work .. "/boxed.txt"), 1, "boxed.txt")
  assert_contains(chat.lines()[3], "sandbox workspace-write · approval mode sandboxed-auto", "header")
end)

test("against the server: plan mode and the AGENTS.md in force in the header; a command is refused unasked; :MinoMode ask leaves it", function()
  fresh({ approval_mode = "plan" })
  vim.fn.writefile({ "Use tabs." }, ctx.work .. "/AGENTS.md")
  mock.script({
    { type = "calls", calls = { { call_id = "call_1", command = "touch planned.txt" } } },
    { type = "text", deltas = { "The plan." } },
  })
  start_and_wait()
  local head = table.concat(vim.list_slice(chat.lines(), 1, 8), "\n")
  assert_contains(head, "· approval mode plan_", "header mode")
  assert_contains(head, "_Plan mode: commands and edits are refused without running", "header sentence")
  assert_contains(head, "_Instructions: `" .. ctx.work .. "/AGENTS.md` (10 bytes)_", "header instructions")
  mino.send("make it")
  wait_buffer(answer("The plan."))
  wait_turn_end()
  assert_eq(count_kind(selects, "mino.approval"), 0, "approval questions")
  assert_contains(buffer_text(), "the session is in plan mode", "the refusal shown")
  assert_eq(vim.fn.filereadable(ctx.work .. "/planned.txt"), 0, "planned.txt")

  -- An edited file: the next request's notification updates the header.
  vim.fn.writefile({ "Use tabs.", "And spaces." }, ctx.work .. "/AGENTS.md")
  mock.script({ { type = "text", deltas = { "Again." } } })
  mino.send("again")
  wait_buffer(answer("Again."))
  wait_turn_end()
  head = table.concat(vim.list_slice(chat.lines(), 1, 8), "\n")
  assert_contains(head, "_Instructions: `" .. ctx.work .. "/AGENTS.md` (22 bytes)_", "header after the change")
  assert_contains(buffer_text(), "_The project's instructions changed._", "said in the chat")

  vim.cmd("MinoMode ask")
  wait_note("approval mode ask")
  head = table.concat(vim.list_slice(chat.lines(), 1, 8), "\n")
  assert_contains(head, "· approval mode ask_", "header mode after :MinoMode")
  assert_contains(head, "_Bash commands require approval.", "header sentence after :MinoMode")
  vim.cmd("MinoMode yolo")
  wait_note("unknown approval mode “yolo”: use one of ask, rules, sandboxed-auto, plan")
end)

test(":MinoRules shows an unreadable workspace rules file's error", function()
  fresh()
  chat.open(mino.config)
  stubbed["mino/rules/list"] = function()
    return nil, { rules = { { id = "r1", kind = "prefix", command = "cargo test", scope = "session" } },
      workspaceFile = "/w/.mino/rules.json", workspaceFileError = "line 1: expected value" }
  end
  vim.cmd("MinoRules")
  local n = wait_note("line 1: expected value")
  assert_contains(n.msg, "/w/.mino/rules.json", "notification")
  wait_for("the rules list", function()
    return count_kind(selects, "mino.rules") == 1
  end)
  assert_contains(selects[1].prompt, "line 1: expected value", "rules list prompt")
end)

-- ------------------------------------------------------------ sessions

local function session_entry(over)
  return vim.tbl_extend("force", {
    sessionId = "s-1", cwd = "/w", title = "Add milk", createdAt = "2026-11-30T10:00:00Z",
    lastActiveAt = os.date("!%Y-%m-%dT%H:%M:%SZ", os.time() - 300), turns = 3, heldElsewhere = false,
    acknowledgementRequired = false, current = false,
  }, over or {})
end

test(":MinoSessions shows title, time, turns and marks, then every folder's sessions from its last entry", function()
  fresh()
  chat.open(mino.config)
  -- The server's answers are stubbed: this is what the picker makes of them.
  local scopes = {}
  stubbed["mino/sessions/list"] = function(params)
    table.insert(scopes, params.scope)
    if params.scope == "all" then
      return nil, { sessions = { session_entry({ sessionId = "s-9", cwd = "/elsewhere", title = vim.NIL, turns = 0 }) } }
    end
    return nil, { sessions = {
      session_entry({ current = true, title = "Open one", turns = 1 }),
      session_entry({ sessionId = "s-2", title = "Waiting", acknowledgementRequired = true,
        usage = { inputTokens = 1200, outputTokens = 34, totalTokens = 1234 } }),
      session_entry({ sessionId = "s-3", title = "Busy", heldElsewhere = true }),
    } }
  end
  stubbed["mino/sessions/open"] = function()
    return { code = -32015, message = "stubbed" }
  end
  answers["mino.sessions"] = { function(items)
    return items[#items]
  end }
  vim.cmd("MinoSessions")
  wait_for("the all-folders list", function()
    return count_kind(selects, "mino.sessions") == 2
  end)
  assert_eq(scopes, { "workspace", "all" }, "scopes listed")
  --- The picker's lines, as its format_item shows them.
  local function shown(s)
    return vim.tbl_map(function(item)
      return s.format_item(item)
    end, s.items)
  end
  assert_eq(shown(selects[1]), {
    "Open one · 5 min ago · 1 turn · open here",
    "Waiting · 5 min ago · 3 turns · 1,234 tokens · ⚠ needs acknowledgement",
    "Busy · 5 min ago · 3 turns · open in another Mino",
    "All folders' sessions…",
  }, "this folder's sessions")
  assert_eq(shown(selects[2]), { "untitled · 5 min ago · 0 turns · /elsewhere" }, "every folder's sessions")
  assert_eq(mino.relative_time("2026-11-30T10:00:00Z", 1796032800 + 7200), "2 h ago", "relative time")
  assert_eq(mino.relative_time("2026-11-30T11:00:00+01:00", 1796032800 + 30), "just now", "offset time")
  assert_eq(mino.relative_time("2026-11-01T10:00:00Z", 1796032800), "2026-11-01", "an old time")
end)

--- The session-changed events, recorded.
local function record_session_events()
  local fired = {}
  vim.api.nvim_create_autocmd("User", {
    group = vim.api.nvim_create_augroup("mino.test.session", { clear = true }),
    pattern = "MinoSessionChanged",
    callback = function(ev)
      table.insert(fired, ev.data)
    end,
  })
  return fired
end

local function current_session()
  return mino.state.session and mino.state.session.sessionId
end

test("against the server: :MinoNew clears the chat into a new session; the title appears after the first question", function()
  fresh({ cmd_env = { RUST_LOG = TRACE_WIRE } })
  mock.script({ { type = "text", deltas = { "First", " answer." } }, { type = "text", deltas = { "Second", " answer." } } })
  start_and_wait()
  require_method("mino/sessions/list", { scope = "workspace" })
  local fired = record_session_events()
  mino.send("Buy milk today\nand bread")
  wait_buffer(answer("First answer."))
  wait_turn_end()
  wait_for("the title in the header", function()
    return chat.lines()[1] == "# Mino: Buy milk today"
  end)
  local first = current_session()
  vim.cmd("MinoNew")
  wait_for("the new session", function()
    return current_session() ~= first and mino.state.history_loaded
  end)
  assert_eq(chat.lines()[1], "# Mino", "header of the new session")
  assert_not_contains(buffer_text(), "Buy milk", "chat of the new session")
  assert_contains(buffer_text(), "_Session " .. current_session(), "header")
  assert_eq(#wire("<-", "mino/sessions/new"), 1, "mino/sessions/new requests")
  mino.send("Second question")
  wait_buffer(answer("Second answer."))
  wait_turn_end()
  wait_for("the new session's title in the header", function()
    return chat.lines()[1] == "# Mino: Second question"
  end)
  vim.api.nvim_del_augroup_by_name("mino.test.session")
  assert_eq(vim.tbl_map(function(e)
    return e.sessionId
  end, fired), { first, current_session(), current_session() }, "MinoSessionChanged (titled, new, titled)")
  assert_eq(fired[1].title, "Buy milk today", "MinoSessionChanged title")
  assert_eq(fired[2].title, nil, "MinoSessionChanged title of the new session")
  assert_eq(fired[3].title, "Second question", "MinoSessionChanged title of the new session once asked")
end)

test("against the server: :MinoSessions reopens a session with its history; a switch during a turn is refused", function()
  fresh()
  mock.script({ { type = "text", deltas = { "Milk", " answer." } }, { type = "text", deltas = { "Bread", " answer." } } })
  start_and_wait()
  require_method("mino/sessions/list", { scope = "workspace" })
  mino.send("About milk")
  wait_buffer(answer("Milk answer."))
  wait_turn_end()
  local milk = current_session()
  vim.cmd("MinoNew")
  wait_for("the new session", function()
    return current_session() ~= milk and mino.state.history_loaded
  end)
  mino.send("About bread")
  wait_buffer(answer("Bread answer."))
  wait_turn_end()
  local bread = current_session()

  answers["mino.sessions"] = { function(items)
    for _, it in ipairs(items) do
      if type(it) == "table" and it.sessionId == milk then
        return it
      end
    end
  end }
  vim.cmd("MinoSessions")
  wait_for("the milk session", function()
    return current_session() == milk and mino.state.history_loaded
  end)
  local listed = selects[#selects].items
  assert_eq(type(listed[1]) == "table" and listed[1].sessionId, bread, "newest first (the open one)")
  assert_eq(listed[1].current, true, "the open session is marked current")
  assert_eq(listed[#listed], mino.ALL_SESSIONS_ITEM, "the last entry")
  wait_buffer(answer("Milk answer."))
  assert_not_contains(buffer_text(), "Bread", "chat after the switch")
  assert_eq(chat.lines()[1], "# Mino: About milk", "header")
  -- A restart reopens the session switched to.
  mino.restart()
  wait_for("the restarted server's history", function()
    return mino.client() ~= nil and mino.state.history_loaded
  end, 15000)
  assert_eq(current_session(), milk, "session after a restart")
  wait_buffer(answer("Milk answer."))

  -- A switch while a turn runs is refused (-32011); nothing changes.
  mock.script({ { type = "stall", deltas = { "Thinking" }, stall_ms = 30000 } })
  mino.send("take your time")
  wait_buffer(answer("Thinking"))
  local before = buffer_text()
  local since = #notes
  vim.cmd("MinoNew")
  wait_for("the refusal", function()
    return notes[since + 1] ~= nil
  end)
  assert_eq(notes[since + 1].level, vim.log.levels.WARN, "refusal level (" .. notes[since + 1].msg .. ")")
  assert_eq(current_session(), milk, "open session after the refusal")
  assert_eq(buffer_text(), before, "chat after the refusal")
  vim.cmd("MinoCancel")
  wait_buffer("_Turn cancelled")
  wait_turn_end()
end)

test("against the server: opening a session that needs acknowledgement asks the question, No by default", function()
  fresh()
  local cmd = "echo milk >> shopping.txt; kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)"
  mock.script({ { type = "calls", calls = { { call_id = "call_1", command = cmd } } } })
  start_and_wait()
  require_method("mino/sessions/list", { scope = "workspace" })
  answers["mino.approval"] = { "Approve once" }
  mino.send("Add milk")
  wait_note("exited unexpectedly", 0, 15000)
  local crashed = current_session()
  -- Start into a new session: the crashed one waits for acknowledgement.
  mino.config.new_session = true
  vim.cmd("Mino")
  wait_for("the new session", function()
    return mino.client() ~= nil and mino.state.history_loaded and current_session() ~= crashed
  end, 15000)
  mino.config.new_session = false
  assert_eq(count_kind(selects, "mino.acknowledge"), 0, "acknowledgement questions in the new session")
  answers["mino.sessions"] = { function(items)
    for _, it in ipairs(items) do
      if type(it) == "table" and it.sessionId == crashed then
        return it
      end
    end
  end }
  answers["mino.acknowledge"] = { vim.NIL }
  vim.cmd("MinoSessions")
  wait_for("the acknowledgement question", function()
    return count_kind(selects, "mino.acknowledge") == 1
  end)
  local listed = vim.tbl_filter(function(it)
    return type(it) == "table" and it.sessionId == crashed
  end, selects[#selects - 1].items)
  assert_eq(#listed, 1, "the crashed session in the list")
  assert_eq(listed[1].acknowledgementRequired, true, "its acknowledgement mark")
  assert_eq(current_session(), crashed, "open session")
  local ask = selects[#selects]
  assert_eq(ask.items, { "No", "Yes" }, "answers offered (declining first)")
  assert_contains(ask.buffer, "`" .. cmd .. "` → **unknown**", "chat when asked")
  assert_contains(ask.buffer, question("Add milk"), "history shown when asked")
  assert_eq(vim.list_slice(ui_log, #ui_log - 1), { "redraw", "select mino.acknowledge" }, "redraw, then question")
  wait_buffer("_Not acknowledged.")
end)

test("against the server: :MinoRename titles the session; :MinoDelete asks (No by default) and trashes", function()
  fresh()
  mock.script({ { type = "text", deltas = { "Old", " answer." } } })
  start_and_wait()
  require_method("mino/sessions/list", { scope = "workspace" })
  mino.send("An old question")
  wait_buffer(answer("Old answer."))
  wait_turn_end()
  local old = current_session()
  vim.cmd("MinoNew")
  wait_for("the new session", function()
    return current_session() ~= old and mino.state.history_loaded
  end)
  vim.cmd("MinoRename Shopping *list*")
  wait_for("the renamed header", function()
    return chat.lines()[1] == "# Mino: Shopping \\*list\\*"
  end)
  local since = #notes
  vim.cmd("MinoRename " .. string.rep("x", 201))
  wait_note("rename refused", since)
  assert_eq(chat.lines()[1], "# Mino: Shopping \\*list\\*", "header after a refused rename")

  answers["mino.sessions.delete"] = { function(items)
    return items[1]
  end, function(items)
    return items[1]
  end }
  answers["mino.sessions.delete.confirm"] = { vim.NIL, "Yes" }
  vim.cmd("MinoDelete")
  wait_for("the confirmation", function()
    return count_kind(selects, "mino.sessions.delete.confirm") == 1
  end)
  assert_eq(selects[#selects - 1].items[1].sessionId, old, "the deletable session (not the open one)")
  assert_eq(#selects[#selects - 1].items, 1, "sessions offered for deletion")
  assert_eq(selects[#selects].items, { "No", "Yes" }, "confirmation (No first)")
  since = #notes
  vim.cmd("MinoDelete")
  local n = wait_note("moved to", since)
  assert_contains(n.msg, ctx.home .. "/trash", "notification")
  local listed
  mino.list_sessions("workspace", function(_, entries)
    listed = entries
  end)
  wait_for("the sessions list", function()
    return listed ~= nil
  end)
  assert_eq(#listed, 1, "sessions left")
  assert_eq(listed[1].sessionId, current_session(), "the session left")
end)

test("against the server: :MinoModel lists the models (current marked) and the chosen one asks the next question; :MinoModel NAME chooses directly", function()
  fresh()
  mock.script({ { type = "text", deltas = { "Large", " answer." } }, { type = "text", deltas = { "Named", " answer." } } })
  start_and_wait()
  require_method("mino/models/list", vim.empty_dict())
  answers["mino.models"] = { function(items)
    return items[2]
  end }
  vim.cmd("MinoModel")
  wait_for("the model chosen", function()
    return contains(buffer_text(), "· model mock-model-large ·")
  end)
  local listed = selects[#selects]
  assert_eq(listed.kind, "mino.models", "the models list")
  assert_eq(vim.tbl_map(function(m)
    return mino.format_model(m, "mock-model")
  end, listed.items), { "mock-model  (current)", "mock-model-large  (32768 tokens)" }, "models listed")
  assert_contains(listed.prompt, "the service's models", "prompt")
  mino.send("Which model?")
  wait_buffer(answer("Large answer."))
  wait_turn_end()
  vim.cmd("MinoModel mock-model")
  wait_for("the named model chosen", function()
    return contains(buffer_text(), "· model mock-model ·")
  end)
  mino.send("And now?")
  wait_buffer(answer("Named answer."))
  wait_turn_end()
  local reqs = mock.requests()
  assert_eq({ reqs[1].body.model, reqs[2].body.model }, { "mock-model-large", "mock-model" }, "models asked")
end)

test("notifications naming another session are ignored", function()
  fresh()
  start_and_wait()
  local id = current_session()
  if not id then
    fail("no session id from initialize")
  end
  mino._dispatch("mino/turnStarted", { sessionId = "another", turnId = "x1", seq = 1, input = "q" })
  mino._dispatch("mino/textDelta", { sessionId = "another", turnId = "x1", seq = 2, delta = "from another session" })
  assert_not_contains(buffer_text(), "from another session", "chat buffer")
  assert_eq(mino.state.running_turn, nil, "running turn")
  mino._dispatch("mino/turnStarted", { sessionId = id, turnId = "x2", seq = 3, input = "q" })
  mino._dispatch("mino/textDelta", { sessionId = id, turnId = "x2", seq = 4, delta = "from this session" })
  assert_contains(buffer_text(), "from this session", "chat buffer")
  mino._dispatch("mino/turnEnded", { sessionId = id, turnId = "x2", seq = 5, status = "completed" })
end)

-- ------------------------------------------------------------ edit diffs

local diffview = require("mino.diff")

local function write_file(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

--- The diff split as it is now: nil when closed.
local function diff_split()
  local win = diffview.win()
  if not win then
    return nil
  end
  local buf = vim.api.nvim_win_get_buf(win)
  return {
    win = win,
    lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false),
    filetype = vim.bo[buf].filetype,
    modifiable = vim.bo[buf].modifiable,
    buftype = vim.bo[buf].buftype,
    name = vim.api.nvim_buf_get_name(buf),
  }
end

--- Records the diff split (and the current window) when each approval question is asked.
local function record_split_at_questions()
  local seen = {}
  local inner = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    if opts and opts.kind == "mino.approval" then
      table.insert(seen, { split = diff_split(), current = vim.api.nvim_get_current_win() })
    end
    return inner(items, opts, on_choice)
  end
  return seen
end

local MILK_EDIT = { type = "named_call", call_id = "call_e", name = "edit_file",
  arguments = vim.json.encode({ path = "shopping.txt", old_text = "butter\n", new_text = "butter\nmilk\n" }) }

test(":MinoRewind shows the plan, asks No first (typed-ahead keys and No change nothing), and Yes puts the file back and says so",
  function()
    fresh()
    write_file(ctx.work .. "/shopping.txt", "bread\nbutter\njam\n")
    mock.script({ MILK_EDIT, { type = "text", deltas = { "Milk added." } } })
    answers["mino.approval"] = { "Approve once" }
    start_and_wait()
    mino.send("add milk")
    wait_buffer(answer("Milk added."))
    wait_turn_end()
    assert_eq(read_file(ctx.work .. "/shopping.txt"), "bread\nbutter\nmilk\njam\n", "the edit was written")
    local turn_id = mino.state.last_turn_id
    if not turn_id then
      for id in pairs(mino.state.ended) do
        turn_id = id
      end
    end

    -- Keys typed before the question appeared never confirm it.
    use_builtin_select({ ["mino.rewind"] = { "<Esc>" } })
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("2<CR>", true, false, true), "t", false)
    vim.cmd("MinoRewind " .. turn_id)
    wait_buffer("_Not rewound: nothing was changed._")
    local asked = selects[#selects]
    assert_eq(asked.kind, "mino.rewind", "the question")
    assert_eq(asked.items, { "No", "Yes" }, "answers offered (declining first)")
    assert_contains(asked.prompt, "put back 1 file(s), leave 0 conflict(s), 0 command(s) not undone", "the question")
    assert_contains(asked.buffer, "**Rewind plan** (1 turn; nothing is written until you confirm):", "plan shown first")
    assert_contains(asked.buffer, "Files put back as they were before:\n- `" , "plan's files")
    assert_contains(asked.buffer, "shopping.txt`", "plan's files")
    assert_eq(read_file(ctx.work .. "/shopping.txt"), "bread\nbutter\nmilk\njam\n", "after the typed-ahead keys")
    vim.ui.select = stub_select

    answers["mino.rewind"] = { "No" }
    vim.cmd("MinoRewind " .. turn_id)
    wait_for("the second No", function()
      local n = 0
      for _ in chat.text():gmatch("_Not rewound: nothing was changed%._") do
        n = n + 1
      end
      return n == 2
    end)
    assert_eq(read_file(ctx.work .. "/shopping.txt"), "bread\nbutter\nmilk\njam\n", "after No")

    answers["mino.rewind"] = { "Yes" }
    vim.cmd("MinoRewind " .. turn_id)
    wait_buffer("**Rewound** 1 turn:")
    assert_contains(chat.text(), "shopping.txt`: restored", "the outcome")
    assert_eq(read_file(ctx.work .. "/shopping.txt"), "bread\nbutter\njam\n", "after Yes")
    wait_note("rewound 1 turn(s); every file put back")
  end)

test(":MinoFork opens a new session holding the turns up to the one named, asks nothing, and the model hears only them", function()
  fresh()
  mock.script({
    { type = "text", deltas = { "Paris." } },
    { type = "text", deltas = { "Lyon." } },
    { type = "text", deltas = { "Rome." } },
  })
  start_and_wait()
  mino.send("Capital of France?")
  wait_buffer(answer("Paris."))
  wait_turn_end()
  mino.send("Second city?")
  wait_buffer(answer("Lyon."))
  wait_for("the second turn's end", function()
    return mino.state.ended["turn-2"] ~= nil
  end)
  local first = current_session()
  local asked = #selects
  vim.cmd("MinoFork turn-1")
  wait_for("the fork opened", function()
    return current_session() ~= nil and current_session() ~= first and mino.state.history_loaded
  end)
  assert_eq(#selects, asked, "a fork asks nothing")
  wait_note("forked 1 turn(s) (through turn-1) of session " .. first)
  assert_contains(chat.text(), "Capital of France?", "the forked turn is in the chat")
  assert_not_contains(chat.text(), "Second city?", "the later turn is not")
  mino.send("Capital of Italy?")
  wait_buffer(answer("Rome."))
  local reqs = mock.requests()
  local body = vim.json.encode(reqs[#reqs].body.input)
  assert_contains(body, "Capital of France?", "the fork's history reaches the model")
  assert_contains(body, "Capital of Italy?", "and the new question")
  assert_not_contains(body, "Second city?", "the old session's later turn does not")
end)

test("an edit's diff is drawn in a read-only diff split before its question, which names tool, path and new file; the split closes after Approve", function()
  fresh()
  write_file(ctx.work .. "/shopping.txt", "bread\nbutter\njam\n")
  mock.script({ MILK_EDIT, { type = "text", deltas = { "Milk added." } } })
  answers["mino.approval"] = { "Approve once" }
  local seen = record_split_at_questions()
  start_and_wait()
  mino.send("add milk")
  wait_buffer(answer("Milk added."))
  wait_turn_end()
  local at = seen[1]
  if not at or not at.split then
    fail("no diff split was open when the approval question was asked")
  end
  local split = at.split
  assert_eq(split.filetype, "diff", "filetype")
  assert_eq(split.modifiable, false, "modifiable")
  assert_eq(split.buftype, "nofile", "buftype")
  assert_contains(split.name, "mino://diff/shopping.txt", "buffer name")
  assert_contains(split.lines[1], "edit_file shopping.txt (existing file, 22 bytes after the edit)", "first line")
  assert_contains(table.concat(split.lines, "\n"), "--- a/shopping.txt\n+++ b/shopping.txt\n@@ -1,3 +1,4 @@\n bread\n butter\n+milk\n jam",
    "split")
  -- The question came after the split was drawn (a redraw between), with focus where it was.
  local asked = nil
  for i, e in ipairs(ui_log) do
    if e == "select mino.approval" then
      asked = i
      break
    end
  end
  assert_eq(ui_log[asked - 1], "redraw", "what came right before the question")
  if at.current == split.win then
    fail("the diff split took the cursor")
  end
  local s = selects[1]
  assert_eq(s.items[1], "Deny", "first (default) choice")
  assert_contains(s.prompt, "edit_file shopping.txt (existing file, 22 bytes after the edit)", "question")
  -- Decided: the split is closed, the file edited, the chat shows the applied diff.
  assert_eq(diff_split(), nil, "diff split after the decision")
  assert_eq(read_file(ctx.work .. "/shopping.txt"), "bread\nbutter\nmilk\njam\n", "shopping.txt")
  local t = buffer_text()
  assert_contains(t, "wants to edit_file `shopping.txt`", "chat buffer")
  assert_contains(t, "Edited shopping.txt", "chat buffer")
  assert_contains(t, "````diff\n--- a/shopping.txt", "chat buffer")
  assert_contains(t, "Result: **success**", "chat buffer")
end)

test("an edit leaving the workspace is marked in the split and the question; denied, nothing is written", function()
  fresh()
  mock.script({
    { type = "named_call", call_id = "call_o", name = "write_file",
      arguments = vim.json.encode({ path = "../outside.txt", content = "milk\n" }) },
    { type = "text", deltas = { "Not written." } },
  })
  answers["mino.approval"] = { "Deny" }
  local seen = record_split_at_questions()
  start_and_wait()
  mino.send("write outside")
  wait_buffer(answer("Not written."))
  wait_turn_end()
  local split = seen[1] and seen[1].split
  if not split then
    fail("no diff split when the question was asked")
  end
  assert_contains(split.lines[1], "new file", "first line")
  assert_contains(split.lines[1], "OUTSIDE THE WORKSPACE", "first line")
  assert_contains(split.lines[2], "WARNING: this edit writes outside the workspace", "second line")
  assert_contains(split.lines[2], "/outside.txt", "second line")
  assert_contains(selects[1].prompt, "OUTSIDE THE WORKSPACE", "question")
  assert_contains(buffer_text(), "**Writes outside the workspace:**", "chat buffer")
  assert_eq(vim.fn.filereadable(vim.fn.fnamemodify(ctx.work, ":h") .. "/outside.txt"), 0, "outside.txt exists")
  assert_eq(diff_split(), nil, "diff split after the decision")
end)

test(":MinoDiff reopens the pending edit's diff while its question is open, then the last edit's applied diff; close_after_decision = false keeps the split", function()
  fresh({ diff = { close_after_decision = false } })
  write_file(ctx.work .. "/shopping.txt", "bread\nbutter\njam\n")
  mock.script({ MILK_EDIT, { type = "text", deltas = { "Done." } } })
  start_and_wait()
  mino.send("add milk")
  wait_for("the approval question", function()
    return #pending_selects > 0
  end)
  -- Closed by hand (q in the split), then reopened by :MinoDiff while the question waits.
  vim.api.nvim_win_call(diffview.win(), function()
    vim.cmd("normal q")
  end)
  assert_eq(diff_split(), nil, "diff split after q")
  vim.cmd("MinoDiff")
  local split = diff_split()
  if not split then
    fail(":MinoDiff opened no split")
  end
  assert_contains(split.lines[1], "waiting for your decision", "first line")
  assert_eq(read_file(ctx.work .. "/shopping.txt"), "bread\nbutter\njam\n", "shopping.txt before the decision")
  answer_pending("mino.approval", "Approve once")
  wait_buffer(answer("Done."))
  wait_turn_end()
  -- Kept open after the decision.
  if not diff_split() then
    fail("the split closed although close_after_decision = false")
  end
  diffview.close()
  vim.cmd("MinoDiff")
  split = diff_split()
  if not split then
    fail(":MinoDiff opened no split after the edit")
  end
  assert_contains(split.lines[1], "applied", "first line")
  assert_contains(table.concat(split.lines, "\n"), "+milk", "split")
  assert_eq(split.modifiable, false, "modifiable")
end)

test(":MinoDiff with no edit says so", function()
  fresh()
  start_and_wait()
  local since = #notes
  vim.cmd("MinoDiff")
  wait_note("no edit to show", since)
  assert_eq(diff_split(), nil, "diff split")
end)

test("keys typed before an edit's question appeared do not answer it; the split is on screen when it asks", function()
  fresh()
  write_file(ctx.work .. "/shopping.txt", "bread\nbutter\njam\n")
  mock.script({ MILK_EDIT, { type = "text", deltas = { "Left as it was." } } })
  use_builtin_select({ ["mino.approval"] = { "<Esc>" } })
  local seen = record_split_at_questions()
  start_and_wait()
  -- "3<CR>" would choose "Approve once" if the question read it.
  vim.api.nvim_input("3<CR>")
  mino.send("add milk")
  wait_buffer(answer("Left as it was."))
  wait_turn_end()
  if not (seen[1] and seen[1].split) then
    fail("no diff split when the question was asked")
  end
  assert_contains(buffer_text(), "_Denied edit_file `shopping.txt`._", "chat buffer")
  assert_eq(read_file(ctx.work .. "/shopping.txt"), "bread\nbutter\njam\n", "shopping.txt")
  if not note_matching("typed before the question appeared were ignored") then
    fail("no notification that typed-ahead keys were ignored")
  end
end)

test("history shows an edit's applied diff as a closed fold of the chat window; gd in it shows it in the split", function()
  fresh()
  write_file(ctx.work .. "/shopping.txt", "bread\nbutter\njam\n")
  mock.script({ MILK_EDIT, { type = "text", deltas = { "Milk added." } } })
  answers["mino.approval"] = { "Approve once" }
  start_and_wait()
  mino.send("add milk")
  wait_buffer(answer("Milk added."))
  wait_turn_end()
  mino.restart()
  wait_for("the restarted server's history", function()
    return mino.client() ~= nil and mino.state.history_loaded
  end, 15000)
  local t = buffer_text()
  assert_contains(t, "````diff\n--- a/shopping.txt\n+++ b/shopping.txt\n@@ -1,3 +1,4 @@\n bread\n butter\n+milk\n jam\n````",
    "restored chat")
  local win = chat.win()
  if not (win and vim.api.nvim_win_is_valid(win)) then
    fail("no chat window")
  end
  local lines = vim.api.nvim_buf_get_lines(chat.buf(), 0, -1, false)
  local open_at
  for i, l in ipairs(lines) do
    if l == "````diff" then
      open_at = i
    end
  end
  vim.api.nvim_win_call(win, function()
    -- Folded from the fence to its end; the line after it is not.
    assert_eq(vim.fn.foldclosed(open_at + 3), open_at, "fold start of a diff line")
    assert_eq(vim.fn.foldclosedend(open_at + 3), open_at + 8, "fold end")
    assert_eq(vim.fn.foldlevel(open_at + 9), 0, "fold level after the diff")
    vim.cmd(("%dfoldopen"):format(open_at))
    assert_eq(vim.fn.foldclosed(open_at + 3), -1, "after zo")
    -- gd on a line of that diff shows it in the split.
    vim.api.nvim_win_set_cursor(win, { open_at + 6, 0 })
    vim.cmd("normal gd")
  end)
  local split = diff_split()
  if not split then
    fail("gd in the chat opened no split")
  end
  assert_contains(split.lines[1], "shopping.txt", "first line")
  assert_contains(split.lines[1], "from the chat", "first line")
  assert_contains(table.concat(split.lines, "\n"), "@@ -1,3 +1,4 @@\n bread\n butter\n+milk\n jam", "split")
  assert_eq(split.filetype, "diff", "filetype")
end)

-- ------------------------------------------------------------ issue 25: Neovim as people use it

test(":help mino opens the top of the manual", function()
  vim.cmd("help mino")
  local name, line = vim.fn.expand("%:t"), vim.fn.line(".")
  vim.cmd("helpclose")
  assert_eq(name, "mino.txt", "help file")
  assert_eq(line, 1, "line :help mino shows")
end)

test("the chat window keeps its height when the diff split closes", function()
  fresh()
  write_file(ctx.work .. "/shopping.txt", "bread\nbutter\njam\n")
  mock.script({ MILK_EDIT, { type = "text", deltas = { "Milk added." } } })
  start_and_wait()
  local chat_height = vim.api.nvim_win_get_height(chat.win())
  local input_height = vim.api.nvim_win_get_height(chat.input_win())
  mino.send("add milk")
  wait_for("the approval question", function()
    return #pending_selects > 0
  end)
  if not diffview.win() then
    fail("no diff split while the question waits")
  end
  answer_pending("mino.approval", "Approve once")
  wait_buffer(answer("Milk added."))
  wait_turn_end()
  assert_eq(diffview.win(), nil, "diff split after the decision")
  assert_eq(vim.api.nvim_win_get_height(chat.win()), chat_height, "chat window height after the split closed")
  assert_eq(vim.api.nvim_win_get_height(chat.input_win()), input_height, "input window height after the split closed")
end)

test("<C-c> in insert mode in the input cancels the running turn; the text written stays", function()
  fresh()
  mock.script({ { type = "stall", deltas = { "Thinking" }, stall_ms = 30000 } })
  start_and_wait()
  mino.send("take your time")
  wait_buffer(answer("Thinking"))
  vim.api.nvim_set_current_win(chat.input_win())
  type_keys("inext question<C-c>")
  wait_buffer("_Turn cancelled", 15000)
  wait_turn_end()
  assert_eq(input_lines(), { "next question" }, "the input after <C-c>")
end)

--- Runs a second Neovim with the plugin in a terminal buffer of this one (a
--- real screen: what the person sees), set up like `fresh()`'s. Returns
--- { job, buf, screen = function() -> text, send = function(keys) }.
local function screen_nvim(lua)
  local script = vim.fn.tempname() .. ".lua"
  vim.fn.writefile(vim.split(([[
vim.opt.rtp:prepend(%q)
vim.o.swapfile = false
vim.cmd("runtime plugin/mino.lua")
local mino = require("mino")
mino.setup(vim.json.decode(vim.env.MINO_CHILD_SETUP))
]]):format(root) .. lua, "\n", { plain = true }), script)
  local setup = vim.deepcopy(mino.config)
  setup.keymaps = nil
  vim.cmd("tabnew")
  local buf = vim.api.nvim_get_current_buf()
  local job = vim.fn.jobstart({ vim.v.progpath, "--clean", "-u", script }, {
    term = true,
    env = { MINO_CHILD_SETUP = vim.json.encode(setup) },
  })
  local function screen()
    return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  end
  return {
    job = job,
    buf = buf,
    screen = screen,
    send = function(keys)
      vim.fn.chansend(job, keys)
    end,
    close = function()
      pcall(vim.fn.jobstop, job)
      vim.fn.jobwait({ job }, 5000)
      pcall(vim.cmd, "bwipeout! " .. buf)
    end,
  }
end

test("on a real screen, Neovim's own approval menu never hides the edit's diff it asks about", function()
  fresh()
  write_file(ctx.work .. "/shopping.txt", "bread\nbutter\njam\n")
  mock.script({ MILK_EDIT, { type = "text", deltas = { "Left as it was." } } })
  local child = screen_nvim([[
vim.cmd("Mino")
vim.wait(15000, function() return mino.client() ~= nil and mino.state.history_loaded end, 20)
mino.send("add milk")
]])
  local ok, err = pcall(function()
    wait_for("the approval menu on the screen", function()
      return contains(child.screen(), "Type number and <Enter>")
    end, 20000)
    local screen = child.screen()
    if VERBOSE then
      out(screen)
    end
    for _, seen in ipairs({ "Mino: edit_file shopping.txt", "@@ -1,3 +1,4 @@", "+milk", "1: Deny" }) do
      assert_contains(screen, seen, "the screen while the menu asks")
    end
    -- The diff's lines are above the menu's, not under it.
    local rows = vim.split(screen, "\n", { plain = true })
    local milk_row, menu_row
    for i, r in ipairs(rows) do
      if r:find("+milk", 1, true) and not milk_row then
        milk_row = i
      end
      if r:find("Approve?", 1, true) and not menu_row then
        menu_row = i
      end
    end
    if not (milk_row and menu_row and milk_row < menu_row) then
      fail("the diff is not above the menu:\n" .. screen)
    end
    child.send("1\r") -- Deny
    wait_for("the model's answer after the denial", function()
      return #mock.requests() == 2
    end, 15000)
    assert_eq(read_file(ctx.work .. "/shopping.txt"), "bread\nbutter\njam\n", "shopping.txt")
  end)
  child.close()
  if not ok then
    error(err, 0)
  end
end)

test("buffers of files Mino changed are reloaded after an edit and after a command", function()
  fresh()
  write_file(ctx.work .. "/shopping.txt", "bread\nbutter\njam\n")
  mock.script({
    MILK_EDIT,
    { type = "calls", calls = { { call_id = "call_2", command = "echo eggs >> shopping.txt" } } },
    { type = "text", deltas = { "Milk and eggs." } },
  })
  answers["mino.approval"] = { "Approve once", "Approve once" }
  vim.cmd("edit " .. vim.fn.fnameescape(ctx.work .. "/shopping.txt"))
  local file_buf = vim.api.nvim_get_current_buf()
  start_and_wait()
  local seen = {}
  local group = vim.api.nvim_create_augroup("mino.test.reload", { clear = true })
  vim.api.nvim_create_autocmd("User", {
    group = group,
    pattern = "MinoToolFinished",
    callback = function()
      -- What the buffer holds once the result arrived (after the reload it triggers).
      vim.schedule(function()
        vim.schedule(function()
          table.insert(seen, table.concat(vim.api.nvim_buf_get_lines(file_buf, 0, -1, false), "\n"))
        end)
      end)
    end,
  })
  mino.send("add milk and eggs")
  wait_buffer(answer("Milk and eggs."))
  wait_turn_end()
  wait_for("both results seen", function()
    return #seen == 2
  end)
  vim.api.nvim_del_augroup_by_id(group)
  assert_eq(seen[1], "bread\nbutter\nmilk\njam", "the buffer after the edit")
  assert_eq(seen[2], "bread\nbutter\nmilk\njam\neggs", "the buffer after the command")
  assert_eq(vim.bo[file_buf].modified, false, "the buffer is modified")
  vim.cmd("bwipeout! " .. file_buf)
end)

test("internal call ids are not shown: not live, not in the history", function()
  fresh()
  write_file(ctx.work .. "/shopping.txt", "bread\nbutter\njam\n")
  mock.script({
    { type = "calls", calls = { { call_id = "call_x7Q2", command = "echo hi" } } },
    { type = "named_call", call_id = "call_e9Z", name = "edit_file",
      arguments = vim.json.encode({ path = "shopping.txt", old_text = "butter\n", new_text = "butter\nmilk\n" }) },
    { type = "text", deltas = { "Done." } },
  })
  answers["mino.approval"] = { "Approve once", "Deny" }
  start_and_wait()
  mino.send("say hi and add milk")
  wait_buffer(answer("Done."))
  wait_turn_end()
  local live = buffer_text()
  assert_contains(live, "_Approved `echo hi`._", "chat buffer")
  assert_contains(live, "_Denied edit_file `shopping.txt`._", "chat buffer")
  for _, id in ipairs({ "call_x7Q2", "call_e9Z" }) do
    assert_not_contains(live, id, "chat buffer")
  end
  mino.restart()
  wait_for("the restarted server's history", function()
    return mino.client() ~= nil and mino.state.history_loaded
  end, 15000)
  local restored = buffer_text()
  assert_contains(restored, "echo hi", "restored chat")
  for _, id in ipairs({ "call_x7Q2", "call_e9Z" }) do
    assert_not_contains(restored, id, "restored chat")
  end
end)

--- Waits until the callbacks scheduled so far (and those they schedule) ran.
local function settle(rounds)
  for _ = 1, rounds or 3 do
    local done = false
    vim.schedule(function()
      done = true
    end)
    wait_for("the scheduled callbacks", function()
      return done
    end)
  end
end

test("a crash of mino-server is reported once", function()
  fresh()
  local cmd = "kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)"
  mock.script({ { type = "calls", calls = { { call_id = "call_1", command = cmd } } } })
  answers["mino.approval"] = { "Approve once" }
  start_and_wait()
  mino.send("crash")
  wait_buffer("exited unexpectedly", 15000)
  wait_for("the client to be gone", function()
    return mino.client() == nil
  end)
  settle(5)
  local reports = {}
  for _, n in ipairs(notes) do
    if n.msg:find("exit", 1, true) or n.msg:find("quit", 1, true) or n.msg:find("not running", 1, true) then
      table.insert(reports, n.msg)
    end
  end
  assert_eq(#reports, 1, "notifications about the crash (" .. vim.inspect(reports) .. ")")
  assert_contains(reports[1], "mino-server exited unexpectedly", "the report")
  assert_contains(reports[1], ctx.log, "the report")
  local _, in_chat = buffer_text():gsub("exited unexpectedly", "")
  assert_eq(in_chat, 1, "crash lines in the chat")
end)

test(":MinoModel NAME asks before choosing a model the service does not list; No (the default) keeps the model", function()
  fresh({ cmd_env = { RUST_LOG = TRACE_WIRE } })
  mock.script({ { type = "text", deltas = { "Kept." } } })
  start_and_wait()
  require_method("mino/models/list", vim.empty_dict())
  answers["mino.models.confirm"] = { "No" }
  local since = #notes
  vim.cmd("MinoModel mock-modle")
  wait_note("model not changed", since)
  local asked = selects[#selects]
  assert_eq(asked.kind, "mino.models.confirm", "the question")
  assert_eq(asked.items, { "No", "Yes" }, "answers (declining first)")
  assert_contains(asked.prompt, "mock-modle", "question")
  assert_contains(asked.prompt, "the service does not list it (it lists: mock-model, mock-model-large)", "question")
  assert_eq(#wire("<-", "mino/models/select"), 0, "mino/models/select requests")
  -- Dismissed: not chosen either.
  answers["mino.models.confirm"] = { vim.NIL }
  since = #notes
  vim.cmd("MinoModel mock-modle")
  wait_note("model not changed", since)
  assert_eq(#wire("<-", "mino/models/select"), 0, "mino/models/select requests after dismissing")
  mino.send("Which model?")
  wait_buffer(answer("Kept."))
  wait_turn_end()
  assert_eq(mock.requests()[1].body.model, "mock-model", "the model asked")
  -- A listed name is chosen without a question.
  local questions = #selects
  vim.cmd("MinoModel mock-model-large")
  wait_buffer("· model mock-model-large ·")
  assert_eq(#selects, questions, "questions asked for a listed model")
  -- Yes chooses an unlisted one.
  answers["mino.models.confirm"] = { "Yes" }
  vim.cmd("MinoModel my-local-model")
  wait_buffer("· model my-local-model ·")
  assert_eq(wire("<-", "mino/models/select")[2].params.model, "my-local-model", "the model chosen")
end)

test("keys typed before :MinoModel's confirmation appeared do not confirm it", function()
  fresh({ cmd_env = { RUST_LOG = TRACE_WIRE } })
  start_and_wait()
  require_method("mino/models/list", vim.empty_dict())
  use_builtin_select({ ["mino.models.confirm"] = { "<Esc>" } })
  -- "2<CR>" is Yes if the question read it.
  vim.api.nvim_input("2<CR>")
  local since = #notes
  vim.cmd("MinoModel mock-modle")
  wait_note("model not changed", since)
  assert_eq(#wire("<-", "mino/models/select"), 0, "mino/models/select requests")
  if not note_matching("typed before the question appeared were ignored", since) then
    fail("no notification that typed-ahead keys were ignored")
  end
end)

test("#buffer in the input attaches the buffer you came from; the chat shows what was attached, live and in the history", function()
  fresh({ cmd_env = { RUST_LOG = TRACE_WIRE } })
  write_file(ctx.work .. "/shopping.txt", "bread\nbutter\njam\n")
  mock.script({ { type = "text", deltas = { "Three things." } } })
  vim.cmd("edit " .. vim.fn.fnameescape(ctx.work .. "/shopping.txt"))
  local file_buf = vim.api.nvim_get_current_buf()
  vim.cmd("cd " .. vim.fn.fnameescape(ctx.work))
  start_and_wait()
  vim.api.nvim_set_current_win(chat.input_win())
  type_keys("iWhat is on #buffer?<C-s><Esc>")
  wait_buffer(answer("Three things."))
  wait_turn_end()
  local sent = wire("<-", "mino/chat")[1].params.text
  assert_eq(sent, "What is on #buffer?\n\n[#buffer shopping.txt, lines 1-3 of 3]\n```text\nbread\nbutter\njam\n```",
    "the question sent")
  assert_contains(vim.json.encode(mock.requests()[1].body.input), "bread\\nbutter\\njam", "the model request")
  local shown = question("What is on #buffer?\n\n_Attached `shopping.txt`, lines 1–3 of 3 (3 lines)_")
  assert_contains(buffer_text(), shown, "chat buffer")
  assert_not_contains(buffer_text(), "butter", "chat buffer")
  mino.restart()
  wait_for("the restarted server's history", function()
    return mino.client() ~= nil and mino.state.history_loaded
  end, 15000)
  assert_contains(buffer_text(), shown, "restored chat")
  vim.cmd("cd -")
  vim.cmd("bwipeout! " .. file_buf)
end)

test("<C-x><C-o> in the input completes #buffer: with the open buffers' paths", function()
  fresh()
  write_file(ctx.work .. "/shopping.txt", "bread\n")
  vim.cmd("cd " .. vim.fn.fnameescape(ctx.work))
  vim.cmd("edit shopping.txt")
  local file_buf = vim.api.nvim_get_current_buf()
  chat.open(mino.config)
  vim.api.nvim_set_current_win(chat.input_win())
  local context = require("mino.context")
  vim.api.nvim_buf_set_lines(chat.input_buf(), 0, -1, false, { "Explain #buffer:sho" })
  vim.api.nvim_win_set_cursor(0, { 1, #"Explain #buffer:sho" })
  assert_eq(vim.bo[chat.input_buf()].omnifunc, "v:lua.require'mino.context'.omnifunc", "the input's omnifunc")
  assert_eq(context.omnifunc(1, ""), #"Explain ", "where the completion starts")
  local words = vim.tbl_map(function(i)
    return i.word
  end, context.omnifunc(0, "#buffer:sho"))
  assert_eq(words, { "#buffer:shopping.txt" }, "completions")
  type_keys("A<C-x><C-o><Esc>")
  assert_eq(input_lines(), { "Explain #buffer:shopping.txt" }, "the input after <C-x><C-o>")
  vim.cmd("cd -")
  vim.cmd("bwipeout! " .. file_buf)
end)

test("a question sent while mino-server cannot start stays in the input", function()
  fresh({ server_path = "/nonexistent/mino-server" })
  chat.open(mino.config)
  vim.api.nvim_set_current_win(chat.input_win())
  local since = #notes
  type_keys("iKeep me<C-s><Esc>")
  wait_note("mino-server not found", since)
  assert_eq(input_lines(), { "Keep me" }, "the input")
end)

test("#buffer that names no buffer, or one too large, is refused with why; the text stays in the input", function()
  fresh({ cmd_env = { RUST_LOG = TRACE_WIRE } })
  start_and_wait()
  vim.api.nvim_set_current_win(chat.input_win())
  local since = #notes
  type_keys("iExplain #buffer:no-such-file.lua<C-s><Esc>")
  local n = wait_note("question not sent", since)
  assert_contains(n.msg, "#buffer:no-such-file.lua names no open buffer", "the refusal")
  assert_eq(input_lines(), { "Explain #buffer:no-such-file.lua" }, "the input after the refusal")
  -- Too large: more than the bound.
  local big = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_buf_set_name(big, ctx.work .. "/big.txt")
  local line = ("x"):rep(1023)
  local lines = {}
  for i = 1, 300 do
    lines[i] = line
  end
  vim.api.nvim_buf_set_lines(big, 0, -1, false, lines)
  vim.api.nvim_buf_set_lines(chat.input_buf(), 0, -1, false, {})
  since = #notes
  type_keys("iSummarise #buffer:big.txt<C-s><Esc>")
  n = wait_note("question not sent", since)
  assert_contains(n.msg, "more than the 262144 Mino attaches", "the refusal")
  assert_contains(n.msg, "MinoSend", "the refusal says how to attach less")
  assert_eq(input_lines(), { "Summarise #buffer:big.txt" }, "the input after the refusal")
  assert_eq(#wire("<-", "mino/chat"), 0, "questions sent")
  vim.cmd("bwipeout! " .. big)
end)

test(":'<,'>MinoSend sends the selected lines with a question, or writes their reference into the input; the visual keymap too", function()
  fresh({ cmd_env = { RUST_LOG = TRACE_WIRE }, keymaps = true })
  write_file(ctx.work .. "/shopping.txt", "bread\nbutter\njam\n")
  mock.script({ { type = "text", deltas = { "Butter and jam." } }, { type = "text", deltas = { "Bread." } } })
  vim.cmd("cd " .. vim.fn.fnameescape(ctx.work))
  start_and_wait()
  vim.cmd("wincmd p")
  vim.cmd("edit shopping.txt")
  local file_buf = vim.api.nvim_get_current_buf()
  vim.cmd("2,3MinoSend What are these?")
  wait_buffer(answer("Butter and jam."))
  wait_turn_end()
  assert_eq(wire("<-", "mino/chat")[1].params.text,
    "What are these?\n\n#buffer:shopping.txt:2-3\n\n[#buffer shopping.txt, lines 2-3 of 3]\n```text\nbutter\njam\n```",
    "the question sent")
  assert_contains(buffer_text(), "_Attached `shopping.txt`, lines 2–3 of 3 (2 lines)_", "chat buffer")
  -- Without a question: the reference goes into the input, where the question is written.
  vim.cmd("wincmd p")
  assert_eq(vim.api.nvim_get_current_buf(), file_buf, "back in the file")
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  type_keys("V" .. mino.default_keymaps.attach:gsub("<leader>", "\\"))
  assert_eq(vim.api.nvim_get_current_win(), chat.input_win(), "the window after the keymap")
  assert_eq(input_lines(), { "#buffer:shopping.txt:1-1 " }, "the input")
  type_keys("<Esc>AWhat is this?<C-s><Esc>")
  wait_buffer(answer("Bread."))
  wait_turn_end()
  assert_contains(wire("<-", "mino/chat")[2].params.text, "[#buffer shopping.txt, lines 1-1 of 3]\n```text\nbread\n```",
    "the second question")
  vim.cmd("cd -")
  vim.cmd("bwipeout! " .. file_buf)
end)

-- ------------------------------------------------------------ images

--- The image parts of a request's user messages, as their data URLs.
local function sent_image_urls(body)
  local urls = {}
  for _, item in ipairs(body.input or {}) do
    if item.role == "user" and type(item.content) == "table" then
      for _, part in ipairs(item.content) do
        if part.type == "input_image" then
          table.insert(urls, part.image_url)
        end
      end
    end
  end
  return urls
end

test(":MinoImage attaches an image to the next question; what is not an image is refused and stays attached; history names it", function()
  fresh()
  mock.script({ { type = "text", deltas = { "A small picture." } } })
  start_and_wait()
  local png = "\137PNG\r\n\26\n" .. string.rep("x", 1016)
  write_file(ctx.work .. "/shot.png", png)
  write_file(ctx.work .. "/notes.txt", "plain words\n")
  local since = #notes
  vim.cmd("MinoImage notes.txt")
  wait_note("attached notes.txt (12 B)", since)
  mino.send("What is this?")
  wait_note("is not an image Mino can send (text)", since)
  wait_note("question not sent; 1 image(s) still attached", since)
  assert_eq(#mock.requests(), 0, "nothing reached the model")
  vim.cmd("MinoImage!")
  wait_note("attached images dropped", since)
  vim.cmd("MinoImage shot.png")
  wait_note("attached shot.png (1.0 KiB)", since)
  mino.send("What is this?")
  wait_buffer(answer("A small picture."))
  wait_turn_end()
  local reqs = mock.requests()
  assert_eq(#reqs, 1, "model requests")
  assert_eq(sent_image_urls(reqs[1].body)[1], "data:image/png;base64," .. vim.base64.encode(png), "the image's bytes")
  assert_eq(#mino.state.images, 0, "sent images are no longer attached")
  mino.restart()
  wait_for("the restarted server's history", function()
    return mino.client() ~= nil and mino.state.history_loaded
  end, 15000)
  assert_contains(buffer_text(), "[image: shot.png, 1.0 KiB]", "history names the image")
end)

-- ------------------------------------------------------------ run

local passed, failed, skipped = 0, 0, 0
local function run()
  for _, bin in ipairs({ SERVER, MOCK }) do
    if vim.fn.executable(bin) ~= 1 then
      out("missing binary: " .. bin .. " (cargo build -p mino-server -p mino-mock-model)")
      out("0 passed, 1 failed")
      os.exit(1)
    end
  end
  mock.start()
  out(("# mino.nvim tests on Neovim %s; server %s; mock %s"):format(tostring(vim.version()), SERVER, mock.base_url))
  for _, t in ipairs(tests) do
    if not FILTER or t.name:find(FILTER, 1, true) then
      local start = uv.hrtime()
      local skipped_why
      local ok, err = xpcall(t.fn, function(e)
        if getmetatable(e) == Skip then
          skipped_why = e.msg
          return e.msg
        end
        if getmetatable(e) == Fail then
          return e.msg
        end
        return debug.traceback(tostring(e), 2)
      end)
      local ms = math.floor((uv.hrtime() - start) / 1e6)
      if skipped_why then
        skipped = skipped + 1
        out(("skip %s: %s"):format(t.name, skipped_why))
      elseif ok then
        passed = passed + 1
        out(("ok   %s (%d ms)"):format(t.name, ms))
      else
        failed = failed + 1
        out(("FAIL %s (%d ms)\n     %s"):format(t.name, ms, tostring(err):gsub("\n", "\n     ")))
        if ctx.log then
          local log = read_file(ctx.log) or ""
          out("     server log (" .. ctx.log .. "):\n     " .. log:sub(-2000):gsub("\n", "\n     "))
        end
      end
      if VERBOSE then
        out(buffer_text())
      end
    end
  end
  pcall(mino._reset)
  mock.stop()
end

local ok, err = xpcall(run, debug.traceback)
if not ok then
  failed = failed + 1
  out("runner error: " .. tostring(err))
  mock.stop()
end
out(("%d passed, %d failed, %d skipped"):format(passed, failed, skipped))
os.exit(failed == 0 and 0 or 1)
