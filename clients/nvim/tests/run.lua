-- Headless tests of mino.nvim against the real mino-server and mino-mock-model.
--
--   nvim --headless -l tests/run.lua [pattern]
--
-- Env: MINO_SERVER_BIN, MINO_MOCK_BIN (default ../../target/debug/...),
-- MINO_TEST_VERBOSE=1 prints the chat buffer after each test.
-- Prints one line per test and a final "N passed, N failed"; exits 1 on failure.

local uv = vim.uv or vim.loop
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

--- vim.ui.select answers, per opts.kind: a list consumed in order; a missing
--- answer leaves the select pending (like a user who has not answered yet).
local answers = {}
local selects = {} -- every call: { items, opts, kind }
local pending_selects = {}
vim.ui.select = function(items, opts, on_choice)
  local kind = opts and opts.kind or "?"
  table.insert(selects, { items = vim.deepcopy(items), prompt = opts and opts.prompt, kind = kind })
  local queue = answers[kind]
  if queue and #queue > 0 then
    local a = table.remove(queue, 1)
    vim.schedule(function()
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

-- ------------------------------------------------------------ assertions

local Fail = {}

local function fail(msg)
  error(setmetatable({ msg = msg }, Fail), 2)
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

-- ------------------------------------------------------------ fixtures

local ctx = {}

--- A fresh plugin state with a temporary MINO_HOME and work directory.
local function fresh(extra)
  mino._reset()
  notes = {}
  selects = {}
  pending_selects = {}
  answers = {}
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
  for _, c in ipairs({ "Mino", "MinoCancel", "MinoAcknowledge", "MinoRestart" }) do
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

test("doc/mino.txt has valid help tags", function()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, "p")
  vim.fn.writefile(vim.fn.readfile(root .. "/doc/mino.txt"), dir .. "/mino.txt")
  local ok, err = pcall(vim.cmd, "helptags " .. vim.fn.fnameescape(dir))
  if not ok then
    fail("helptags: " .. tostring(err))
  end
  local tags = table.concat(vim.fn.readfile(dir .. "/tags"), "\n")
  for _, tag in ipairs({ "mino.setup()", ":Mino", ":MinoCancel", ":MinoAcknowledge", "mino-recovery", "mino-options" }) do
    assert_contains(tags, tag .. "\t", "tags")
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
  wait_buffer("You> What is up?")
  -- A partial answer is visible before the whole one.
  wait_for("a partial answer", function()
    local t = buffer_text()
    return contains(t, "Assistant> Hello") and not contains(t, "the mock.")
  end)
  wait_buffer("Assistant> Hello from the mock.")
  wait_turn_end()
  local reqs = mock.requests()
  assert_eq(#reqs, 1, "model requests")
  assert_contains(vim.json.encode(reqs[1].body), "What is up?", "the model request")
  -- The prompt line stays last.
  local lines = chat.lines()
  assert_eq(lines[#lines]:sub(1, 5), "You> ", "last line")
end)

test("a retried model request replaces the void text instead of repeating it", function()
  fresh()
  mock.script({
    { type = "cut_stream", deltas = { "Hel" } },
    { type = "text", deltas = { "Hello" } },
  })
  start_and_wait()
  mino.send("Say hello.")
  wait_buffer("Assistant> Hello")
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
  local q = t:find("You> Say hello.", 1, true)
  local n = t:find(chat.RETRYING, 1, true)
  local a = t:find("Assistant> Hello", 1, true)
  if not (q < n and n < a) then
    fail("question, notice and answer are out of order:\n" .. t)
  end
  assert_eq(#mock.requests(), 2, "model requests")
  -- The prompt line stays last.
  local lines = chat.lines()
  assert_eq(lines[#lines]:sub(1, 5), "You> ", "last line")
end)

test("a retry after a tool call voids only the current response's text", function()
  fresh()
  mock.script({
    { type = "calls", text = { "Let me look." }, calls = { { call_id = "call_1", command = "echo listed" } } },
    { type = "cut_stream", deltas = { "Partial" } },
    { type = "cut_stream", deltas = { "Partial ans" } },
    { type = "text", deltas = { "Final", " answer." } },
  })
  answers["mino.approval"] = { "Approve" }
  start_and_wait()
  mino.send("look around")
  wait_buffer("Assistant> Final answer.")
  wait_turn_end()
  local t = buffer_text()
  assert_contains(t, "Assistant> Let me look.", "chat buffer")
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
  wait_buffer("Assistant> Cold start.")
  wait_turn_end()
  local t = buffer_text()
  local q = t:find("You> cold question", 1, true)
  local a = t:find("Assistant> Cold start.", 1, true)
  if not q or q > a then
    fail("the question is not shown before the answer:\n" .. t)
  end
end)

test("the prompt line sends a question", function()
  fresh()
  mock.script({ { type = "text", deltas = { "Typed", " answer." } } })
  start_and_wait()
  vim.api.nvim_set_current_win(chat.win())
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("A2+2?<CR><Esc>", true, false, true), "x", false)
  wait_buffer("Assistant> Typed answer.")
  wait_turn_end()
  assert_contains(vim.json.encode(mock.requests()[1].body), "2+2?", "the model request")
  assert_contains(buffer_text(), "You> 2+2?", "chat buffer")
end)

test("history is restored when the chat opens again", function()
  fresh()
  mock.script({ { type = "text", deltas = { "First", " answer." } } })
  start_and_wait()
  mino.send("first question")
  wait_buffer("Assistant> First answer.")
  wait_turn_end()
  mino.restart()
  wait_for("the restarted server's history", function()
    return mino.client() ~= nil and mino.state.history_loaded
  end, 15000)
  local t = buffer_text()
  assert_contains(t, "You> first question", "restored chat")
  assert_contains(t, "Assistant> First answer.", "restored chat")
  local ids = 0
  for _ in t:gmatch("first question") do
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
  answers["mino.approval"] = { "Approve" }
  start_and_wait()
  mino.send("run it")
  wait_buffer("Assistant> It ran.")
  wait_turn_end()
  local t = buffer_text()
  assert_contains(t, "echo approved-output > approved.txt", "chat buffer")
  assert_contains(t, "Directory: `", "chat buffer")
  assert_contains(t, "Environment:", "chat buffer")
  assert_contains(t, "Limits: timeout", "chat buffer")
  assert_contains(t, "output limit", "chat buffer")
  assert_contains(t, "_Approved `call_1`._", "chat buffer")
  assert_contains(t, "done-42", "chat buffer")
  assert_contains(t, "Result: **success** (exit 0)", "chat buffer")
  local s = selects[1]
  assert_eq(s and s.items, { "Approve", "Deny" }, "vim.ui.select items")
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
  wait_buffer("Assistant> Understood.")
  wait_turn_end()
  assert_contains(buffer_text(), "_Denied `call_1`._", "chat buffer")
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
  wait_buffer("Assistant> Skipped.")
  wait_turn_end()
  assert_contains(buffer_text(), "Result: **refused**", "chat buffer")
  assert_eq(vim.fn.filereadable(ctx.work .. "/dismissed.txt"), 0, "dismissed.txt exists")
end)

test("acknowledgement gate after the server is killed mid-call", function()
  fresh()
  local cmd = "echo milk >> shopping.txt; kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)"
  mock.script({ { type = "calls", calls = { { call_id = "call_1", command = cmd } } } })
  answers["mino.approval"] = { "Approve" }
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
  assert_eq(ask.items, { "Yes", "No" }, "answers offered")
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
  wait_buffer("Assistant> It may be.")
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
  wait_for("restart", function()
    return mino.client() ~= nil and mino.state.history_loaded
  end, 15000)
  vim.wait(300)
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
  wait_buffer("Assistant> Thinking")
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
  answers["mino.approval"] = { "Approve" }
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
  answer_pending("mino.approval", "Approve")
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
  wait_buffer("Assistant> Busy")
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
  wait_for("the client to go away", function()
    return mino.client() == nil
  end)
  vim.wait(200)
  assert_eq(note_matching("exited unexpectedly", since), nil, "a second, crash notification")
end)

test("float window option opens the chat in a floating window", function()
  fresh({ window = "float" })
  start_and_wait()
  local cfg = vim.api.nvim_win_get_config(chat.win())
  assert_eq(cfg.relative, "editor", "window relative")
end)

-- ------------------------------------------------------------ run

local passed, failed = 0, 0
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
      local ok, err = xpcall(t.fn, function(e)
        if getmetatable(e) == Fail then
          return e.msg
        end
        return debug.traceback(tostring(e), 2)
      end)
      local ms = math.floor((uv.hrtime() - start) / 1e6)
      if ok then
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
out(("%d passed, %d failed"):format(passed, failed))
os.exit(failed == 0 and 0 or 1)
