--- The chat buffer: a markdown prompt buffer (`buftype=prompt`). Output is
--- inserted above the prompt line, which always stays last; pressing <CR> on
--- the prompt line sends the question.
local M = {}

local api = vim.api

M.PROMPT = "You> "
M.ASSISTANT = "Assistant> "
M.RETRYING = "Connection to the model failed; retrying…"
local HISTORY_OUTPUT_LINES = 20

--- Marks where the current model response's text blocks start and end.
local ns = api.nvim_create_namespace("mino.chat.response")

local st = {
  buf = nil,
  win = nil,
  --- "text" while deltas extend the line above the prompt, "output" while tool
  --- output extends it inside a fence, nil otherwise.
  stream = nil,
  stream_call = nil,
  streamed = {}, -- turnId -> true once a text delta was shown
  output_streamed = {}, -- callId -> true once output was shown
  --- The text of the model's current response (since mino/turnStarted or the
  --- turn's last mino/toolResult), which a mino/retrying voids:
  --- { turn = turnId, prior = streamed[turnId] when it began,
  ---   blocks = { { start = extmark, stop = extmark } } }, each block an
  --- "Assistant>" paragraph from its blank line to its last line.
  response = nil,
  sender = nil,
  log_path = nil,
}

function M._set_sender(fn)
  st.sender = fn
end

local function is_nil(v)
  return v == nil or v == vim.NIL
end

local function valid_buf()
  return st.buf and api.nvim_buf_is_valid(st.buf)
end

--- The chat buffer, created on first use.
function M.buf()
  if valid_buf() then
    return st.buf
  end
  local buf = api.nvim_create_buf(false, true)
  st.buf = buf
  pcall(api.nvim_buf_set_name, buf, "mino://chat")
  vim.bo[buf].buftype = "prompt"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "markdown"
  vim.fn.prompt_setprompt(buf, M.PROMPT)
  api.nvim_buf_set_lines(buf, 0, -1, false, { M.PROMPT })
  vim.fn.prompt_setcallback(buf, function(text)
    M._on_prompt(text)
  end)
  vim.fn.prompt_setinterrupt(buf, function()
    require("mino").cancel()
  end)
  vim.keymap.set("n", "<C-c>", function()
    require("mino").cancel()
  end, { buffer = buf, desc = "Cancel Mino's turn" })
  vim.keymap.set("n", "q", function()
    if #api.nvim_list_wins() > 1 then
      api.nvim_win_close(0, false)
    end
  end, { buffer = buf, desc = "Close the Mino window" })
  -- The chat is no file: Neovim still marks a prompt buffer modified when text
  -- is typed or inserted, and :q / :qa would then refuse to quit (E37, E162)
  -- over a buffer that can never be written. Those commands check 'modified'
  -- right after QuitPre / ExitPre.
  api.nvim_create_autocmd({ "QuitPre", "ExitPre" }, {
    group = api.nvim_create_augroup("mino.chat", { clear = true }),
    callback = function()
      if valid_buf() then
        vim.bo[st.buf].modified = false
      end
    end,
  })
  M._install_paste()
  return buf
end

--- Marks the chat unmodified after the plugin's own edits (no "[+]").
local function settle(buf)
  vim.bo[buf].modified = false
end

-- ------------------------------------------------------------ pasting

--- A paste larger than this is refused here: the server refuses questions
--- over 1 MiB anyway, and the pasted text is held in memory until it ends.
M.MAX_PASTE_BYTES = 1024 * 1024

--- The prompt line holds one line, so a multi-line paste into the chat would
--- leave all but its last line above the prompt, never sent. Instead the text
--- of the prompt line with the paste inserted at the cursor is sent at once as
--- one question. A one-line paste goes into the prompt line as usual.
function M._install_paste()
  if st.paste_installed then
    return
  end
  st.paste_installed = true
  local fallback = vim.paste
  vim.paste = function(lines, phase)
    -- Only a paste into the chat's text (insert or normal mode); one into
    -- the command line, a visual selection etc. is Neovim's as usual.
    local mode = api.nvim_get_mode().mode:sub(1, 1)
    if not (valid_buf() and api.nvim_get_current_buf() == st.buf and (mode == "i" or mode == "n")) then
      st.pasting = nil
      return fallback(lines, phase)
    end
    if phase == -1 or phase == 1 then
      st.pasting = { lines = {}, bytes = 0 }
    end
    local acc = st.pasting
    if not acc then
      -- The rest of a paste that began in another buffer.
      return fallback(lines, phase)
    end
    if acc.refused then
      -- A UI may send the chunks after a refusal anyway: none is kept.
      if phase == 3 then
        st.pasting = nil
      end
      return false
    end
    for i, l in ipairs(lines) do
      -- A chunk boundary can split a line: the first line of a chunk
      -- continues the last line of the chunk before.
      if i == 1 and #acc.lines > 0 then
        acc.lines[#acc.lines] = acc.lines[#acc.lines] .. l
      else
        table.insert(acc.lines, l)
      end
      acc.bytes = acc.bytes + #l + 1
    end
    if acc.bytes > M.MAX_PASTE_BYTES then
      st.pasting = (phase ~= -1 and phase ~= 3) and { refused = true } or nil
      require("mino")._notify(("paste not sent: it is larger than %d bytes; save it to a file and ask Mino to read it")
        :format(M.MAX_PASTE_BYTES), vim.log.levels.ERROR)
      return false -- cancels the rest of the paste
    end
    if phase ~= -1 and phase ~= 3 then
      return true
    end
    st.pasting = nil
    if #acc.lines <= 1 then
      return fallback(acc.lines, -1)
    end
    M._send_paste(acc.lines)
    return true
  end
end

--- Sends the prompt line's text with `lines` inserted at the cursor.
function M._send_paste(lines)
  local buf = M.buf()
  local last = api.nvim_buf_line_count(buf)
  local line = api.nvim_buf_get_lines(buf, last - 1, last, false)[1] or ""
  local cursor = api.nvim_win_get_cursor(0)
  local at = #line
  if cursor[1] == last then
    at = math.max(cursor[2], math.min(#M.PROMPT, #line))
    if api.nvim_get_mode().mode:sub(1, 1) ~= "i" and at < #line then
      at = at + 1 -- a normal-mode paste goes after the cursor
    end
  end
  local typed_before, typed_after = line:sub(1, at), line:sub(at + 1)
  if typed_before:sub(1, #M.PROMPT) == M.PROMPT then
    typed_before = typed_before:sub(#M.PROMPT + 1)
  end
  local parts = {}
  for i, l in ipairs(lines) do
    parts[i] = (l:gsub("\r$", ""))
  end
  local text = typed_before .. table.concat(parts, "\n") .. typed_after
  api.nvim_buf_set_lines(buf, last - 1, last, false, { M.PROMPT })
  settle(buf)
  pcall(api.nvim_win_set_cursor, 0, { last, #M.PROMPT })
  st.stream = nil
  if st.sender then
    st.sender(text, { echo = true })
  end
end

--- Called with the text of the prompt line when the user presses <CR>.
function M._on_prompt(text)
  st.stream = nil
  -- The prompt buffer leaves "You> text" above the new prompt line.
  if st.sender and vim.trim(text or "") ~= "" then
    st.sender(text)
  end
end

--- Lines of the buffer, without the prompt line.
function M.lines()
  local buf = M.buf()
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  return lines
end

function M.text()
  return table.concat(M.lines(), "\n")
end

--- Index (0-based) of the prompt line.
local function prompt_index(buf)
  return api.nvim_buf_line_count(buf) - 1
end

local function scroll()
  if st.win and api.nvim_win_is_valid(st.win) and api.nvim_get_current_win() ~= st.win then
    pcall(api.nvim_win_set_cursor, st.win, { api.nvim_buf_line_count(st.buf), 0 })
  end
end

local function insert_lines(lines)
  local buf = M.buf()
  local at = prompt_index(buf)
  -- A fresh buffer holds just the (empty) prompt line; keep the first line used.
  api.nvim_buf_set_lines(buf, at, at, false, lines)
  settle(buf)
  scroll()
end

--- Appends whole lines above the prompt line (ends any stream).
function M.append(lines)
  if type(lines) == "string" then
    lines = vim.split(lines, "\n", { plain = true })
  end
  st.stream = nil
  st.stream_call = nil
  insert_lines(lines)
end

--- Extends the line just above the prompt with `s` (which may hold newlines).
local function extend_last(s)
  local buf = M.buf()
  local at = prompt_index(buf) - 1
  if at < 0 then
    insert_lines({ "" })
    at = 0
  end
  local last = api.nvim_buf_get_lines(buf, at, at + 1, false)[1] or ""
  local parts = vim.split(last .. s, "\n", { plain = true })
  api.nvim_buf_set_lines(buf, at, at + 1, false, parts)
  settle(buf)
  scroll()
end

local function close_output_fence()
  if st.stream == "output" then
    st.stream = nil
    st.stream_call = nil
    local buf = M.buf()
    local at = prompt_index(buf) - 1
    local last = at >= 0 and api.nvim_buf_get_lines(buf, at, at + 1, false)[1] or nil
    if last == "" then
      api.nvim_buf_set_lines(buf, at, at + 1, false, { "```" })
    else
      insert_lines({ "```" })
    end
  end
end

--- A new model response begins: text before it is settled.
local function start_response()
  if valid_buf() then
    api.nvim_buf_clear_namespace(st.buf, ns, 0, -1)
  end
  st.response = nil
end

-- ------------------------------------------------------------ window

function M.open(config)
  local buf = M.buf()
  if st.win and api.nvim_win_is_valid(st.win) then
    api.nvim_set_current_win(st.win)
  elseif config.window == "float" then
    local f = config.float or {}
    local width = math.max(20, math.floor(vim.o.columns * (f.width or 0.8)))
    local height = math.max(5, math.floor((vim.o.lines - 2) * (f.height or 0.8)))
    st.win = api.nvim_open_win(buf, true, {
      relative = "editor",
      width = width,
      height = height,
      row = math.floor((vim.o.lines - 2 - height) / 2),
      col = math.floor((vim.o.columns - width) / 2),
      border = f.border or "rounded",
      title = " Mino ",
      title_pos = "center",
    })
  else
    vim.cmd(config.split_cmd or "botright vsplit")
    st.win = api.nvim_get_current_win()
    api.nvim_win_set_buf(st.win, buf)
  end
  vim.wo[st.win].wrap = true
  vim.wo[st.win].linebreak = true
  vim.wo[st.win].number = false
  vim.wo[st.win].relativenumber = false
  pcall(api.nvim_win_set_cursor, st.win, { api.nvim_buf_line_count(buf), 0 })
  if config.start_insert then
    vim.cmd("startinsert!")
  end
  return st.win
end

function M.win()
  return st.win
end

--- Whether the chat buffer is shown in some window.
function M.visible()
  return valid_buf() and vim.fn.bufwinid(st.buf) ~= -1
end

--- Shows the chat (without moving the cursor) if no window shows it.
function M.reveal(config)
  if M.visible() then
    return
  end
  local cur = api.nvim_get_current_win()
  M.open(config)
  if api.nvim_win_is_valid(cur) and config.window ~= "float" then
    api.nvim_set_current_win(cur)
  end
end

-- ------------------------------------------------------------ rendering

local function fence(lang, text)
  local out = { "```" .. (lang or "") }
  local body = vim.split(text or "", "\n", { plain = true })
  if body[#body] == "" and #body > 1 then
    table.remove(body)
  end
  vim.list_extend(out, body)
  table.insert(out, "```")
  return out
end

local function status_line(status, exit_code)
  local s = ("Result: **%s**"):format(status or "?")
  if not is_nil(exit_code) then
    s = s .. (" (exit %s)"):format(exit_code)
  end
  return s
end

local function truncate(text, max_lines)
  local lines = vim.split(text or "", "\n", { plain = true })
  if #lines <= max_lines then
    return text
  end
  local kept = vim.list_slice(lines, 1, max_lines)
  table.insert(kept, ("… (%d more lines)"):format(#lines - max_lines))
  return table.concat(kept, "\n")
end

local EVIDENCE_LINES = 12

--- What the command supervisor saw of a call whose result is `unknown` (e.g.
--- "the command exited 0 after Mino stopped; last output: …"), as lines
--- indented by `indent`; none without evidence. The result stays unknown.
local function evidence_lines(call, indent)
  local e = call.evidence
  if type(e) ~= "table" or is_nil(e.summary) or e.summary == "" then
    return {}
  end
  local out = {}
  local text = truncate(tostring(e.summary), EVIDENCE_LINES)
  for i, l in ipairs(vim.split(text, "\n", { plain = true })) do
    table.insert(out, indent .. (i == 1 and "Evidence: " or "  ") .. l)
  end
  return out
end

--- A new server started: the buffer is rebuilt from its history.
function M.server_started(caps)
  local buf = M.buf()
  st.stream = nil
  st.streamed = {}
  st.output_streamed = {}
  start_response()
  -- Remove everything above the prompt line.
  api.nvim_buf_set_lines(buf, 0, prompt_index(buf), false, {})
  local header = { "# Mino" }
  if type(caps) == "table" then
    table.insert(header, ("_Session %s · model %s · %s_"):format(caps.sessionId or "?", caps.model or "?",
      caps.cwd or "?"))
  end
  table.insert(header, "_Bash commands require approval. Type a question on the `You>` line and press Enter._")
  M.append(header)
end

function M.render_history(result)
  local turns = (result and result.turns) or {}
  for _, t in ipairs(turns) do
    local lines = { "", M.PROMPT .. (t.input or "") }
    for _, c in ipairs(t.calls or {}) do
      table.insert(lines, "")
      table.insert(lines, ("**Tool call** `%s`"):format(c.callId or "?"))
      vim.list_extend(lines, fence("sh", c.command))
      if is_nil(c.result) then
        table.insert(lines, "Result: _pending_")
      else
        if (c.result.output or "") ~= "" then
          vim.list_extend(lines, fence("text", truncate(c.result.output, HISTORY_OUTPUT_LINES)))
        end
        table.insert(lines, status_line(c.result.status, c.result.exitCode))
        vim.list_extend(lines, evidence_lines(c, ""))
      end
    end
    if (t.text or "") ~= "" then
      table.insert(lines, "")
      vim.list_extend(lines, vim.split(M.ASSISTANT .. t.text, "\n", { plain = true }))
    end
    if not is_nil(t.status) and t.status ~= "completed" then
      local s = ("_Turn %s_"):format(t.status)
      if not is_nil(t.reason) and t.reason ~= "" then
        s = ("_Turn %s: %s_"):format(t.status, t.reason)
      end
      table.insert(lines, s)
    end
    for _, n in ipairs(t.notices or {}) do
      table.insert(lines, "> " .. n)
    end
    M.append(lines)
  end
end

function M.render_recovery(p)
  local turns = p.turns or {}
  local lines = { "" }
  if #turns > 0 then
    table.insert(lines, "## Recovered turns")
    table.insert(lines, "An interrupted tool turn was recovered without executing commands.")
  end
  local unknown = false
  for _, t in ipairs(turns) do
    table.insert(lines, ("- Turn `%s` (%s)"):format(t.turnId or "?", t.status or "?"))
    for _, c in ipairs(t.calls or {}) do
      local r = c.result or {}
      if r.status == "unknown" then
        unknown = true
      end
      table.insert(lines, ("  - `%s` → **%s**"):format(c.command or "?", r.status or "?"))
      vim.list_extend(lines, evidence_lines(c, "    "))
      if (r.output or "") ~= "" then
        table.insert(lines, "    " .. truncate(r.output, 3):gsub("\n", "\n    "))
      end
    end
  end
  if p.acknowledgementRequired then
    unknown = true
  end
  if unknown then
    table.insert(lines,
      "A previous command started, but its result is unknown. It may have changed files or external systems. Mino has not rerun it. Review those effects before continuing.")
  end
  for _, r in ipairs(p.repairs or {}) do
    table.insert(lines, "- Repair: " .. r)
  end
  if p.acknowledgementRequired then
    table.insert(lines, "**" .. require("mino").ACK_QUESTION .. "** (answer Yes, or run :MinoAcknowledge)")
  end
  if #lines > 1 then
    local flat = {}
    for _, l in ipairs(lines) do
      vim.list_extend(flat, vim.split(l, "\n", { plain = true }))
    end
    M.append(flat)
  end
end

function M.user_input(text)
  local lines = vim.split(M.PROMPT .. text, "\n", { plain = true })
  table.insert(lines, 1, "")
  M.append(lines)
end

function M.turn_started(p)
  st.streamed[p.turnId] = st.streamed[p.turnId] or false
  start_response()
end

function M.text_delta(p)
  close_output_fence()
  local buf = M.buf()
  if not st.response or st.response.turn ~= p.turnId then
    start_response()
    st.response = { turn = p.turnId, prior = st.streamed[p.turnId] or false, blocks = {} }
  end
  local block
  if st.stream ~= "text" or #st.response.blocks == 0 then
    M.append({ "", M.ASSISTANT })
    st.stream = "text"
    local first = prompt_index(buf) - 2 -- the blank line
    block = {
      start = api.nvim_buf_set_extmark(buf, ns, first, 0, {}),
      stop = api.nvim_buf_set_extmark(buf, ns, first + 1, 0, {}),
    }
    table.insert(st.response.blocks, block)
  else
    block = st.response.blocks[#st.response.blocks]
  end
  st.streamed[p.turnId] = true
  extend_last(p.delta or "")
  if block then
    -- The block now ends on the line above the prompt.
    api.nvim_buf_set_extmark(buf, ns, prompt_index(buf) - 1, 0, { id = block.stop })
  end
end

--- mino/retrying: the text of the current response is void (the retried
--- response streams it again). Removes it and says why.
function M.retrying(p)
  close_output_fence()
  local buf = M.buf()
  local r = st.response
  if r and r.turn == p.turnId then
    for i = #r.blocks, 1, -1 do
      local b = r.blocks[i]
      local from = api.nvim_buf_get_extmark_by_id(buf, ns, b.start, {})
      local to = api.nvim_buf_get_extmark_by_id(buf, ns, b.stop, {})
      if from[1] and to[1] and from[1] <= to[1] and to[1] < prompt_index(buf) then
        api.nvim_buf_set_lines(buf, from[1], to[1] + 1, false, {})
      end
    end
    st.streamed[p.turnId] = r.prior
  end
  start_response()
  local details = {}
  local attempt = not is_nil(p.attempt) and tonumber(p.attempt) or nil
  if attempt and attempt > 1 then
    table.insert(details, ("attempt %d"):format(attempt))
  end
  if not is_nil(p.reason) and p.reason ~= "" then
    local reason = vim.trim((tostring(p.reason):gsub("%s+", " ")))
    if vim.fn.strchars(reason) > 80 then
      reason = vim.fn.strcharpart(reason, 0, 79) .. "…"
    end
    table.insert(details, reason)
  end
  local line = M.RETRYING
  if #details > 0 then
    line = ("%s (%s)"):format(line, table.concat(details, ": "))
  end
  -- Ends the text stream: the retried text starts a new "Assistant>" paragraph.
  M.append({ "", ("_%s_"):format(line) })
end

local function env_lines(env)
  local out = {}
  if type(env) ~= "table" then
    return out
  end
  local names = vim.tbl_keys(env)
  table.sort(names)
  for _, k in ipairs(names) do
    table.insert(out, ("  - `%s=%s`"):format(k, tostring(env[k])))
  end
  return out
end

function M.approval_request(p)
  close_output_fence()
  local lines = { "", ("**Tool call** `%s` wants to run:"):format(p.callId or "?") }
  vim.list_extend(lines, fence("sh", p.command))
  table.insert(lines, ("- Directory: `%s`"):format(p.directory or "?"))
  local env = env_lines(p.environment)
  if #env == 0 then
    table.insert(lines, "- Environment: (empty)")
  else
    table.insert(lines, "- Environment:")
    vim.list_extend(lines, env)
  end
  local l = p.limits or {}
  table.insert(lines, ("- Limits: timeout %s s, output limit %s bytes"):format(l.timeoutSeconds or "?",
    l.outputLimitBytes or "?"))
  table.insert(lines, "_Waiting for your decision (Approve / Deny)…_")
  M.append(lines)
end

function M.approval_decided(req, decision)
  M.append({ decision == "approve" and ("_Approved `%s`._"):format(req.callId)
    or ("_Denied `%s`._"):format(req.callId) })
end

function M.tool_started(p)
  close_output_fence()
  st.stream = nil
end

function M.tool_output(p)
  if st.stream ~= "output" or st.stream_call ~= p.callId then
    close_output_fence()
    M.append({ "```text", "" })
    st.stream = "output"
    st.stream_call = p.callId
  end
  st.output_streamed[p.callId] = true
  extend_last(p.chunk or "")
end

function M.tool_result(p)
  close_output_fence()
  start_response()
  local lines = {}
  if not st.output_streamed[p.callId] and (p.output or "") ~= "" then
    vim.list_extend(lines, fence("text", p.output))
  end
  table.insert(lines, status_line(p.status, p.exitCode))
  M.append(lines)
end

function M.turn_ended(p)
  close_output_fence()
  st.stream = nil
  start_response()
  local lines = {}
  if not st.streamed[p.turnId] and not is_nil(p.text) and p.text ~= "" then
    table.insert(lines, "")
    vim.list_extend(lines, vim.split(M.ASSISTANT .. p.text, "\n", { plain = true }))
  end
  if p.status ~= "completed" then
    local s = ("_Turn %s_"):format(p.status or "?")
    if not is_nil(p.reason) and p.reason ~= "" then
      s = ("_Turn %s: %s_"):format(p.status, p.reason)
    end
    table.insert(lines, s)
  end
  if #lines > 0 then
    M.append(lines)
  end
end

function M.refused(err, message)
  M.append({ "", ("**Refused:** %s"):format(message) })
end

function M.server_exited(code, signal, purposeful)
  close_output_fence()
  if not valid_buf() then
    return
  end
  if purposeful then
    M.append({ "", "_mino-server stopped._" })
  else
    M.append({ "", ("**mino-server exited unexpectedly** (code %s, signal %s). Log: `%s`. Run :Mino to restart."):format(
      code, signal, require("mino").log_path()) })
  end
end

function M._reset()
  if st.win and api.nvim_win_is_valid(st.win) and #api.nvim_list_wins() > 1 then
    pcall(api.nvim_win_close, st.win, true)
  end
  if valid_buf() then
    pcall(api.nvim_buf_delete, st.buf, { force = true })
  end
  st.buf, st.win, st.stream, st.stream_call = nil, nil, nil, nil
  st.streamed, st.output_streamed, st.response = {}, {}, nil
end

return M
