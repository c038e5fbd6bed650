--- The chat: a read-only markdown transcript (`mino://chat`, output appended
--- at its end) and under it a small input buffer (`mino://input`) where a
--- question of any number of lines is written and sent whole with the send key.
local M = {}

local api = vim.api
--- Statuses and decisions, generated from the Rust crate mino-protocol.
local protocol = require("mino.protocol")

--- Speaker headings: each on its own line with a blank line after it, so the
--- buffer stays valid markdown whatever the answer holds (an answer starting
--- with "## Heading" is a heading of its own, not part of a label line).
M.USER_HEADING = "## You"
M.ASSISTANT_HEADING = "## Mino"
M.RETRYING = "Connection to the model failed; retrying…"
M.COMPACTING = "Compacting the conversation…"
local HISTORY_OUTPUT_LINES = 20
--- Height of the input window (lines).
local INPUT_HEIGHT = 5

--- Marks where the current model response's text blocks start and end.
local ns = api.nvim_create_namespace("mino.chat.response")

local st = {
  buf = nil,
  win = nil,
  input_buf = nil,
  input_win = nil,
  --- "text" while deltas extend the last line, "output" while tool output
  --- extends it inside a fence, nil otherwise.
  stream = nil,
  stream_call = nil,
  streamed = {}, -- turnId -> true once a text delta was shown
  -- "turnId callId" -> true once that call's output was shown; cleared by its
  -- result, since models reuse call ids (in a later response or turn).
  output_streamed = {},
  --- The text of the model's current response (since mino/turnStarted or the
  --- turn's last mino/toolResult), which a mino/retrying voids:
  --- { turn = turnId, prior = streamed[turnId] when it began,
  ---   blocks = { { start = extmark, stop = extmark } } }, each block a
  --- "## Mino" section from its blank line to its last line.
  response = nil,
  sender = nil,
  --- "turnId callId" -> true while a call shown with its approval request has
  --- not started (a call that starts without one is shown at its start).
  asked = {},
  --- "turnId callId" -> true once the call's block (its request or start) is
  --- shown; cleared by its result. A result without one (a call a deny rule
  --- refused, a call that failed before anyone was asked) shows the block.
  shown = {},
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

local function valid_input()
  return st.input_buf and api.nvim_buf_is_valid(st.input_buf)
end

--- Neither buffer is a file: :q / :qa must never refuse to quit over them
--- (E37, E162). Those commands check 'modified' right after QuitPre / ExitPre.
local function install_quit_guard()
  api.nvim_create_autocmd({ "QuitPre", "ExitPre" }, {
    group = api.nvim_create_augroup("mino.chat", { clear = true }),
    callback = function()
      for _, b in ipairs({ st.buf, st.input_buf }) do
        if b and api.nvim_buf_is_valid(b) then
          vim.bo[b].modified = false
        end
      end
    end,
  })
end

local function scratch(name)
  local buf = api.nvim_create_buf(false, true)
  pcall(api.nvim_buf_set_name, buf, name)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "markdown"
  return buf
end

--- The chat buffer (read-only markdown transcript), created on first use.
function M.buf()
  if valid_buf() then
    return st.buf
  end
  local buf = scratch("mino://chat")
  st.buf = buf
  vim.bo[buf].modifiable = false
  vim.keymap.set("n", "<C-c>", function()
    require("mino").cancel()
  end, { buffer = buf, desc = "Cancel Mino's turn" })
  vim.keymap.set("n", "q", function()
    M.close()
  end, { buffer = buf, desc = "Close the Mino windows" })
  vim.keymap.set("n", "gd", function()
    require("mino").show_diff({ at_cursor = true })
  end, { buffer = buf, desc = "Show the edit diff under the cursor (else the pending or last one) in its split" })
  for _, key in ipairs({ "i", "a", "o" }) do
    vim.keymap.set("n", key, function()
      M.focus_input(true)
    end, { buffer = buf, desc = "Write to Mino in the input window" })
  end
  install_quit_guard()
  return buf
end

--- Marks the chat unmodified after the plugin's own edits (no "[+]").
local function settle(buf)
  vim.bo[buf].modified = false
end

--- nvim_buf_set_lines on the read-only chat buffer.
local function set_lines(buf, from, to, lines)
  vim.bo[buf].modifiable = true
  local ok, err = pcall(api.nvim_buf_set_lines, buf, from, to, false, lines)
  vim.bo[buf].modifiable = false
  settle(buf)
  if not ok then
    error(err)
  end
end

-- ------------------------------------------------------------ input

--- A question larger than this is not sent: the server refuses questions over
--- 1 MiB anyway; the text stays in the input buffer.
M.MAX_QUESTION_BYTES = 1024 * 1024

--- Keys that send the input buffer: `send_key` (normal and insert mode) and
--- <CR> in normal mode.
local function send_keys(config)
  local keys = config and config.send_key
  if keys == nil then
    keys = "<C-s>"
  end
  if keys == false then
    keys = {}
  elseif type(keys) == "string" then
    keys = { keys }
  end
  return keys
end

--- The input buffer: several lines of markdown, sent whole with the send key.
function M.input_buf(config)
  if valid_input() then
    return st.input_buf
  end
  local buf = scratch("mino://input")
  st.input_buf = buf
  local send = function()
    M.send_input()
  end
  for _, key in ipairs(send_keys(config)) do
    vim.keymap.set({ "n", "i" }, key, send, { buffer = buf, desc = "Send the question to Mino" })
  end
  vim.keymap.set("n", "<CR>", send, { buffer = buf, desc = "Send the question to Mino" })
  vim.keymap.set("n", "<C-c>", function()
    require("mino").cancel()
  end, { buffer = buf, desc = "Cancel Mino's turn" })
  -- <C-x><C-o> completes #buffer references (:help mino-context).
  vim.bo[buf].omnifunc = "v:lua.require'mino.context'.omnifunc"
  -- In insert mode too, where one writes while the answer streams; with no
  -- turn running it leaves insert mode as <C-c> always does.
  vim.keymap.set("i", "<C-c>", function()
    if require("mino").state.running_turn then
      vim.schedule(function()
        require("mino").cancel()
      end)
      return ""
    end
    return "<C-c>"
  end, { buffer = buf, expr = true, desc = "Cancel Mino's turn (else leave insert mode)" })
  install_quit_guard()
  return buf
end

--- The input buffer's text (lines joined with newlines).
function M.input_text()
  if not valid_input() then
    return ""
  end
  return table.concat(api.nvim_buf_get_lines(st.input_buf, 0, -1, false), "\n")
end

--- Sends the input buffer's text as one question and empties it. Nothing is
--- sent (and the text stays) when it is empty, too large, or a turn runs.
function M.send_input()
  local text = M.input_text()
  if vim.trim(text) == "" then
    return
  end
  local mino = require("mino")
  if #text > M.MAX_QUESTION_BYTES then
    mino._notify(("question not sent: it is larger than %d bytes; save it to a file and ask Mino to read it")
      :format(M.MAX_QUESTION_BYTES), vim.log.levels.ERROR)
    return
  end
  if mino.state.running_turn then
    mino._notify("a turn is running: wait for it to end or cancel it (:MinoCancel); your text stays in the input",
      vim.log.levels.WARN)
    return
  end
  -- Attachments are read now; one that cannot be (no such buffer, too
  -- large) is said and nothing is sent: the text stays.
  local full, why = require("mino.context").expand(text)
  if not full then
    mino._notify("question not sent: " .. why, vim.log.levels.ERROR)
    return
  end
  if #full > M.MAX_QUESTION_BYTES then
    mino._notify(("question not sent: with its attachments it is larger than %d bytes; attach less (#buffer:NAME:FROM-TO)")
      :format(M.MAX_QUESTION_BYTES), vim.log.levels.ERROR)
    return
  end
  st.stream = nil
  -- Emptied once the question is on its way (or queued until the server
  -- is ready): a server that cannot start loses nothing.
  if st.sender and st.sender(full, { echo = true, expanded = true }) and valid_input() then
    api.nvim_buf_set_lines(st.input_buf, 0, -1, false, {})
    vim.bo[st.input_buf].modified = false
  end
end

--- Adds `text` at the end of the input (on a line of its own when the input
--- holds text) and moves there in insert mode.
function M.add_to_input(text)
  local buf = M.input_buf(require("mino").config)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  if #lines == 1 and lines[1] == "" then
    api.nvim_buf_set_lines(buf, 0, -1, false, { text .. " " })
  else
    api.nvim_buf_set_lines(buf, -1, -1, false, { text .. " " })
  end
  M.focus_input(false)
  if st.input_win and api.nvim_win_is_valid(st.input_win) then
    local last = api.nvim_buf_line_count(buf)
    api.nvim_win_set_cursor(st.input_win, { last, #api.nvim_buf_get_lines(buf, last - 1, last, false)[1] })
    vim.cmd("startinsert!")
  end
end

--- Lines of the chat buffer.
function M.lines()
  return api.nvim_buf_get_lines(M.buf(), 0, -1, false)
end

function M.text()
  return table.concat(M.lines(), "\n")
end

--- Whether the buffer is still the single empty line of a new buffer.
local function is_empty(buf)
  return api.nvim_buf_line_count(buf) == 1 and api.nvim_buf_get_lines(buf, 0, 1, false)[1] == ""
end

local function scroll()
  if st.win and api.nvim_win_is_valid(st.win) and api.nvim_get_current_win() ~= st.win then
    pcall(api.nvim_win_set_cursor, st.win, { api.nvim_buf_line_count(st.buf), 0 })
  end
end

local function insert_lines(lines)
  local buf = M.buf()
  if is_empty(buf) then
    set_lines(buf, 0, -1, lines)
  else
    set_lines(buf, -1, -1, lines)
  end
  scroll()
end

--- Appends whole lines at the end (ends any stream).
function M.append(lines)
  if type(lines) == "string" then
    lines = vim.split(lines, "\n", { plain = true })
  end
  st.stream = nil
  st.stream_call = nil
  insert_lines(lines)
end

--- Index (0-based) of the last line.
local function last_index(buf)
  return api.nvim_buf_line_count(buf) - 1
end

--- Extends the last line with `s` (which may hold newlines).
local function extend_last(s)
  local buf = M.buf()
  local at = last_index(buf)
  local last = api.nvim_buf_get_lines(buf, at, at + 1, false)[1] or ""
  set_lines(buf, at, at + 1, vim.split(last .. s, "\n", { plain = true }))
  scroll()
end

local function close_output_fence()
  if st.stream == "output" then
    st.stream = nil
    st.stream_call = nil
    local buf = M.buf()
    local at = last_index(buf)
    if api.nvim_buf_get_lines(buf, at, at + 1, false)[1] == "" then
      set_lines(buf, at, at + 1, { "```" })
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

local function win_valid(win)
  return win and api.nvim_win_is_valid(win)
end

local function style_chat_window(win)
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  vim.wo[win].number = false
  vim.wo[win].relativenumber = false
end

--- Opens the input window under the chat window (without focusing it).
local function open_input(config)
  local input = M.input_buf(config)
  if win_valid(st.input_win) and api.nvim_win_get_buf(st.input_win) == input then
    return
  end
  local cur = api.nvim_get_current_win()
  if config.window == "float" then
    local cc = api.nvim_win_get_config(st.win)
    local row = type(cc.row) == "table" and cc.row[false] or cc.row
    local col = type(cc.col) == "table" and cc.col[false] or cc.col
    st.input_win = api.nvim_open_win(input, false, {
      relative = "editor",
      width = cc.width,
      height = INPUT_HEIGHT,
      row = row + cc.height + 2,
      col = col,
      border = (config.float or {}).border or "rounded",
      title = " Ask Mino ",
      title_pos = "center",
    })
  else
    api.nvim_set_current_win(st.win)
    vim.cmd(("belowright %dsplit"):format(INPUT_HEIGHT))
    st.input_win = api.nvim_get_current_win()
    api.nvim_win_set_buf(st.input_win, input)
    vim.wo[st.input_win].winfixheight = true
    api.nvim_set_current_win(cur)
  end
  style_chat_window(st.input_win)
end

--- Opens the chat window and the input window under it, and focuses the input.
function M.open(config)
  local buf = M.buf()
  if win_valid(st.win) then
    api.nvim_set_current_win(st.win)
  elseif config.window == "float" then
    local f = config.float or {}
    local width = math.max(20, math.floor(vim.o.columns * (f.width or 0.8)))
    local height = math.max(5, math.floor((vim.o.lines - 2) * (f.height or 0.8)))
    -- The input float (plus its border) takes the bottom of that height.
    local chat_height = math.max(3, height - INPUT_HEIGHT - 2)
    st.win = api.nvim_open_win(buf, true, {
      relative = "editor",
      width = width,
      height = chat_height,
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
  style_chat_window(st.win)
  require("mino.diff").fold_window(st.win)
  pcall(api.nvim_win_set_cursor, st.win, { api.nvim_buf_line_count(buf), 0 })
  open_input(config)
  M.focus_input(config.start_insert)
  return st.win
end

--- Moves the cursor to the input window (opening it if needed), optionally in
--- insert mode at the end of the text.
function M.focus_input(insert)
  if not win_valid(st.input_win) then
    if not win_valid(st.win) then
      return
    end
    open_input(require("mino").config)
  end
  api.nvim_set_current_win(st.input_win)
  if insert then
    vim.cmd("startinsert!")
  end
end

function M.win()
  return st.win
end

--- The heights of the chat and input windows that are splits (window -> rows).
function M.heights()
  local h = {}
  for _, w in ipairs({ st.win, st.input_win }) do
    if win_valid(w) and api.nvim_win_get_config(w).relative == "" then
      h[w] = api.nvim_win_get_height(w)
    end
  end
  return h
end

--- Gives the chat and input windows the heights `h` (from M.heights()) again;
--- the input first, so the rows it gives back go to the chat above it.
function M.restore_heights(h)
  for _, w in ipairs({ st.input_win, st.win }) do
    if h[w] and win_valid(w) then
      pcall(api.nvim_win_set_height, w, h[w])
    end
  end
end

function M.input_win()
  return st.input_win
end

--- Closes the chat and input windows (the buffers stay).
function M.close()
  for _, win in ipairs({ st.input_win, st.win }) do
    if win_valid(win) and #api.nvim_list_wins() > 1 then
      pcall(api.nvim_win_close, win, false)
    end
  end
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
  M.open(vim.tbl_extend("force", config, { start_insert = false }))
  if api.nvim_win_is_valid(cur) and config.window ~= "float" then
    api.nvim_set_current_win(cur)
  end
end

--- Brings the screen up to date before a question is asked over it, so the
--- person sees what they decide about (a blocking prompt would otherwise
--- appear over the screen as it was before the call block was drawn).
function M.redraw()
  vim.cmd.redraw()
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

--- A speaker's section: a blank line, the heading on its own line, a blank
--- line, then the text.
local function speaker(heading, text)
  local lines = { "", heading, "" }
  vim.list_extend(lines, vim.split(text, "\n", { plain = true }))
  return lines
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

--- `s` as literal markdown text on one line (a title is the person's text).
local function md_text(s)
  s = tostring(s):gsub("[%c]+", " ")
  return (s:gsub("([\\`*_%[%]<>#|~])", "\\%1"))
end

--- A markdown code span holding `s` whatever backticks it contains.
local function code_span(s)
  s = tostring(s):gsub("\n", " ")
  local longest = 0
  for run in s:gmatch("`+") do
    longest = math.max(longest, #run)
  end
  local fence_ = ("`"):rep(longest + 1)
  if longest > 0 then
    return fence_ .. " " .. s .. " " .. fence_
  end
  return fence_ .. s .. fence_
end

M.code_span = code_span

--- How the chat names a call in the lines about it (its decision, a late
--- answer): the edit's tool and path, else the command's first line, cut
--- short. The model's call id is internal and never shown.
local LABEL_CHARS = 60
function M.call_label(p)
  local e = type(p) == "table" and p.edit or nil
  if type(e) == "table" and type(e.path) == "string" then
    return ("%s %s"):format(e.tool or "edit", code_span(e.path))
  end
  local command = type(p) == "table" and type(p.command) == "string" and p.command or "?"
  local first = vim.split(command, "\n", { plain = true })[1] or ""
  if vim.fn.strchars(first) > LABEL_CHARS then
    first = vim.fn.strcharpart(first, 0, LABEL_CHARS - 1) .. "…"
  elseif first ~= command then
    first = first .. " …"
  end
  return code_span(first)
end

--- The header's first line: the session's title as the document's heading.
function M.title_line(title)
  if type(title) == "string" and title ~= "" then
    return "# Mino: " .. md_text(title)
  end
  return "# Mino"
end

--- Shows `title` (the open session's, just named or renamed) in the header.
function M.set_title(title)
  if not valid_buf() then
    return
  end
  local first = api.nvim_buf_get_lines(st.buf, 0, 1, false)[1] or ""
  if first:match("^# Mino") then
    set_lines(st.buf, 0, 1, { M.title_line(title) })
  end
end

--- Names `model` in the header's session line (after a model was chosen, or
--- a switch learnt the new session's).
function M.set_model(model)
  if not valid_buf() then
    return
  end
  for i, line in ipairs(api.nvim_buf_get_lines(st.buf, 0, 4, false)) do
    if line:match("^_Session ") then
      local replaced = line:gsub("· model .- ·", function()
        return "· model " .. model .. " ·"
      end, 1)
      set_lines(st.buf, i - 1, i, { replaced })
      return
    end
  end
end

--- A new server started, or another session was opened: the buffer is
--- rebuilt from its header and (by the caller) its history.
function M.server_started(caps)
  local buf = M.buf()
  st.stream = nil
  st.streamed = {}
  st.output_streamed = {}
  st.asked = {}
  st.shown = {}
  start_response()
  -- Remove everything above the prompt line.
  set_lines(buf, 0, -1, {})
  local header = { M.title_line(type(caps) == "table" and caps.title or nil) }
  if type(caps) == "table" then
    table.insert(header, "")
    local line = ("_Session %s · model %s · %s"):format(caps.sessionId or "?", caps.model or "?", caps.cwd or "?")
    if type(caps.sandbox) == "string" then
      line = line .. " · sandbox " .. caps.sandbox
    end
    if type(caps.approvalMode) == "string" then
      line = line .. " · approval mode " .. caps.approvalMode
    end
    table.insert(header, line .. "_")
  end
  if type(caps) == "table" then
    table.insert(header, M.instructions_line(caps.instructionFiles))
  end
  table.insert(header, "")
  table.insert(header, "_" .. M.approval_sentence(type(caps) == "table" and caps.approvalMode or nil)
    .. " Write in the input window below the chat and send with "
    .. "`" .. (send_keys(require("mino").config)[1] or "<CR>") .. "`._")
  M.append(header)
end

--- What the approval mode means, for the header.
function M.approval_sentence(mode)
  if mode == "plan" then
    return "Plan mode: commands and edits are refused without running and the model plans; :MinoMode ask leaves it."
  elseif mode == "rules" or mode == "sandboxed-auto" then
    return "Bash commands require approval unless a rule (or, in sandboxed-auto, the sandbox) allows them."
  end
  return "Bash commands require approval."
end

--- The header's line of the project's instruction files (AGENTS.md) the
--- model is given, farther first, with their sizes and what was cut.
function M.instructions_line(files)
  if type(files) ~= "table" or #files == 0 then
    return "_Instructions: no AGENTS.md in force_"
  end
  local parts = {}
  for _, f in ipairs(files) do
    if type(f) == "table" then
      local cut = f.truncated == true and (", cut to %s bytes"):format(tostring(f.given)) or ""
      table.insert(parts, ("`%s` (%s bytes%s)"):format(tostring(f.path), tostring(f.size), cut))
    end
  end
  return "_Instructions: " .. table.concat(parts, ", ") .. "_"
end

--- Replaces the header line that starts with `prefix` (within its first lines).
local function replace_header_line(prefix, line)
  if not valid_buf() then
    return false
  end
  for i, old in ipairs(api.nvim_buf_get_lines(st.buf, 0, 8, false)) do
    if vim.startswith(old, prefix) then
      set_lines(st.buf, i - 1, i, { line })
      return true
    end
  end
  return false
end

--- The instruction files in force changed (mino/history, mino/instructionsChanged).
function M.set_instructions(files)
  replace_header_line("_Instructions:", M.instructions_line(files))
end

--- The approval mode changed (:MinoMode): the header's session line and sentence follow.
function M.set_mode(mode)
  if not valid_buf() then
    return
  end
  for i, line in ipairs(api.nvim_buf_get_lines(st.buf, 0, 8, false)) do
    if line:match("^_Session ") then
      local replaced = line:gsub("· approval mode [^ _]+", "· approval mode " .. mode, 1)
      set_lines(st.buf, i - 1, i, { replaced })
    elseif line:match("^_Bash commands") or line:match("^_Plan mode") then
      local rest = line:match(" (Write in the input window.*)$") or "_"
      set_lines(st.buf, i - 1, i, { "_" .. M.approval_sentence(mode) .. " " .. rest })
    end
  end
end

--- An edit's approval request: what it writes and its diff (a fold).
local function edit_request_lines(p)
  local e = p.edit
  local lines = { "", ("**Tool call** wants to %s %s:"):format(e.tool or "edit", code_span(e.path)) }
  if e.leavesWorkspace then
    table.insert(lines, ("- **Writes outside the workspace:** %s"):format(code_span(e.path)))
  end
  if type(e.protected) == "string" then
    table.insert(lines, ("- **Protected path:** %s"):format(e.protected))
  end
  table.insert(lines, ("- File: %s, %s bytes after the edit"):format(e.newFile and "new" or "existing", tostring(e.size)))
  vim.list_extend(lines, require("mino.diff").fence(e.diff))
  return lines
end

--- An edit's result with the diff it applied: what was done, then the diff (a fold).
local function edit_result_lines(result)
  local summary = vim.split(result.output or "", "\n\n", { plain = true })[1] or ""
  local lines = {}
  if summary ~= "" then
    vim.list_extend(lines, fence("text", summary))
  end
  vim.list_extend(lines, require("mino.diff").fence(result.diff))
  return lines
end

--- A history turn's content in the order it happened (`items`); from a
--- server without them, its calls, then its text, then its notices (as this
--- plugin showed history before).
local function history_items(t)
  if type(t.items) == "table" then
    return t.items
  end
  local items = {}
  for _, c in ipairs(t.calls or {}) do
    table.insert(items, { type = "call", call = c })
  end
  table.insert(items, { type = "text", text = t.text })
  for _, n in ipairs(t.notices or {}) do
    table.insert(items, { type = "notice", text = n })
  end
  return items
end

--- A read that asked (its path leaves the workspace): what it would read.
local function read_request_lines(p, read)
  local lines = { "", ("**Tool call** wants to %s outside the workspace: %s"):format(read.tool, code_span(read.path)) }
  if type(read.pattern) == "string" then
    table.insert(lines, ("- %s: %s"):format(read.tool == "search" and "Regular expression" or "Pattern",
      code_span(read.pattern)))
  end
  table.insert(lines, "- Mino sees what this reads only if you approve.")
  return lines
end

--- A read from history: asked (outside the workspace) with its answer, then
--- the line and folded output its live turn showed.
local function history_read_lines(c, read)
  local lines = {}
  if read.leavesWorkspace then
    lines = read_request_lines(c, read)
    local r = type(c.result) == "table" and c.result or {}
    if r.status == protocol.tool_status.refused then
      vim.list_extend(lines, { "", ("_Denied %s._"):format(M.call_label(c)) })
    elseif type(c.approvedBy) == "table" then
      vim.list_extend(lines, { "", ("_Approved %s._"):format(M.call_label(c)) })
    end
  end
  vim.list_extend(lines, require("mino.reads").lines(read, not is_nil(c.result) and c.result or nil))
  return lines
end

--- A call from history, as it was shown live: asked (with what the approval
--- showed, then the answer) or approved by a rule or the sandbox; its output
--- and result.
local function history_call_lines(c)
  local read = require("mino.reads").of(c)
  if read then
    return history_read_lines(c, read)
  end
  local id = M.call_label(c)
  local by = M.approved_by_line(c.approvedBy, c.sandbox)
  local lines = { "", ("**Tool call** %s:"):format(by and "runs" or "wants to run") }
  vim.list_extend(lines, fence("sh", c.command))
  if by then
    table.insert(lines, by)
  else
    vim.list_extend(lines, M.call_facts_lines(c))
    local r = type(c.result) == "table" and c.result or {}
    if r.status == protocol.tool_status.refused then
      vim.list_extend(lines, { "", ("_Denied %s._"):format(id) })
    elseif type(c.approvedBy) == "table" then
      vim.list_extend(lines, { "", ("_Approved %s._"):format(id) })
    end
  end
  if is_nil(c.result) then
    table.insert(lines, "Result: _pending_")
  else
    if type(c.result.diff) == "string" then
      vim.list_extend(lines, edit_result_lines(c.result))
    elseif (c.result.output or "") ~= "" then
      vim.list_extend(lines, fence("text", truncate(c.result.output, HISTORY_OUTPUT_LINES)))
    end
    table.insert(lines, status_line(c.result.status, c.result.exitCode))
    vim.list_extend(lines, evidence_lines(c, ""))
  end
  return lines
end

--- `_Tokens: 1,234 (1,000 in, 234 out)_`; nil without usage.
function M.usage_text(u)
  if type(u) ~= "table" or type(u.totalTokens) ~= "number" then
    return nil
  end
  local function n(x)
    local digits = tostring(math.floor(tonumber(x) or 0))
    return (digits:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", ""))
  end
  local input = n(u.inputTokens) .. " in"
  if type(u.cachedInputTokens) == "number" and u.cachedInputTokens > 0 then
    input = input .. (" (%s cached)"):format(n(u.cachedInputTokens))
  end
  return ("%s tokens (%s, %s out)"):format(n(u.totalTokens), input, n(u.outputTokens))
end

local function turn_usage_line(u)
  local text = M.usage_text(u)
  return text and ("_Turn used %s._"):format(text) or nil
end

local SESSION_USAGE_PREFIX = "_Session tokens: "

--- Shows the session's tokens so far in the header (below the session line).
function M.set_session_usage(u)
  local text = M.usage_text(u)
  if not text or not valid_buf() then
    return
  end
  local line = SESSION_USAGE_PREFIX .. text .. "_"
  local head = api.nvim_buf_get_lines(st.buf, 0, 6, false)
  for i, l in ipairs(head) do
    if vim.startswith(l, SESSION_USAGE_PREFIX) then
      set_lines(st.buf, i - 1, i, { line })
      return
    end
  end
  for i, l in ipairs(head) do
    if vim.startswith(l, "_Session ") then
      set_lines(st.buf, i, i, { line })
      return
    end
  end
end

--- A question's images in history: one line each, its name and size (and
--- why it cannot be sent, when its kept file is gone).
function M.image_lines(images)
  local lines = {}
  if type(images) ~= "table" then
    return lines
  end
  for _, image in ipairs(images) do
    local name = type(image.name) == "string" and image.name or ("image " .. tostring(image.sha256):sub(1, 12))
    local line = ("[image: %s, %s]"):format(name, require("mino").human_size(tonumber(image.size) or 0))
    if type(image.unavailable) == "string" then
      line = ("[image: %s, %s; unavailable: %s]"):format(name, require("mino").human_size(tonumber(image.size) or 0), image.unavailable)
    end
    table.insert(lines, line)
  end
  return lines
end

function M.render_history(result)
  if type(result) == "table" and type(result.instructionFiles) == "table" then
    M.set_instructions(result.instructionFiles)
  end
  local turns = (result and result.turns) or {}
  for _, t in ipairs(turns) do
    local lines = speaker(M.USER_HEADING, require("mino.context").display(t.input or ""))
    vim.list_extend(lines, M.image_lines(t.images))
    for _, item in ipairs(history_items(t)) do
      if item.type == "text" and type(item.text) == "string" and item.text ~= "" then
        vim.list_extend(lines, speaker(M.ASSISTANT_HEADING, item.text))
      elseif item.type == "call" and type(item.call) == "table" then
        vim.list_extend(lines, history_call_lines(item.call))
      elseif item.type == "notice" and type(item.text) == "string" then
        table.insert(lines, "> " .. item.text)
      end
    end
    if not is_nil(t.status) and t.status ~= protocol.turn_status.completed then
      local s = ("_Turn %s_"):format(t.status)
      if not is_nil(t.reason) and t.reason ~= "" then
        s = ("_Turn %s: %s_"):format(t.status, t.reason)
      end
      table.insert(lines, s)
    end
    local usage = turn_usage_line(t.usage)
    if usage then
      vim.list_extend(lines, { "", usage })
    end
    M.append(lines)
  end
  if result then
    M.set_session_usage(result.usage)
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
      if r.status == protocol.tool_status.unknown then
        unknown = true
      end
      table.insert(lines, ("  - `%s` → **%s**"):format(c.command or "?", r.status or "?"))
      local by = M.approved_by_line(c.approvedBy, c.sandbox)
      if by then
        table.insert(lines, "    " .. by)
      end
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

--- A question as sent: its attachments (#buffer, :MinoSend) are shown as
--- one line each.
function M.user_input(text)
  M.append(speaker(M.USER_HEADING, require("mino.context").display(text)))
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
    M.append({ "", M.ASSISTANT_HEADING, "", "" })
    st.stream = "text"
    local first = last_index(buf) - 3 -- the blank line before the heading
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
    api.nvim_buf_set_extmark(buf, ns, last_index(buf), 0, { id = block.stop })
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
      if from[1] and to[1] and from[1] <= to[1] and to[1] <= last_index(buf) then
        set_lines(buf, from[1], to[1] + 1, {})
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
  -- Ends the text stream: the retried text starts a new "## Mino" section.
  M.append({ "", ("_%s_"):format(line) })
end

--- mino/compactionStarted in a turn: the wait is the summary request.
function M.compaction_started(_)
  close_output_fence()
  start_response()
  M.append({ "", ("_%s_"):format(M.COMPACTING) })
end

--- mino/instructionsChanged: the header follows, and the chat says so
--- where it happened (the next request is built from these).
function M.instructions_changed(files)
  M.set_instructions(files)
  close_output_fence()
  start_response()
  M.append({ "", "_The project's instructions changed._", M.instructions_line(files) })
end

--- mino/compactionEnded in a turn: what it did.
function M.compaction_ended(p)
  close_output_fence()
  start_response()
  local line
  if p.compacted then
    local kept = ""
    if tonumber(p.keptTurns) and tonumber(p.keptTurns) > 0 then
      kept = ("; %d kept as they were"):format(p.keptTurns)
    end
    line = ("Compacted: %d turn(s) summarised by the model%s. Later requests send the summary instead."):format(
      tonumber(p.summarizedTurns) or 0,
      kept
    )
  else
    line = "Not compacted: " .. (is_nil(p.reason) and "the server gave no reason" or tostring(p.reason))
  end
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

--- What an approval shows about a call: directory, environment, limits,
--- sandbox and approval mode. Live (mino/approvalRequest) all are there; a
--- call from mino/history has those its session recorded, and only those
--- are shown.
function M.call_facts_lines(p)
  local lines = {}
  local live = type(p.approvalMode) == "string"
  if live or type(p.directory) == "string" then
    table.insert(lines, ("- Directory: `%s`"):format(p.directory or "?"))
  end
  if live or type(p.environment) == "table" then
    local env = env_lines(p.environment)
    if #env == 0 then
      table.insert(lines, "- Environment: (empty)")
    else
      table.insert(lines, "- Environment:")
      vim.list_extend(lines, env)
    end
  end
  if live or type(p.limits) == "table" then
    local l = type(p.limits) == "table" and p.limits or {}
    table.insert(lines, ("- Limits: timeout %s s, output limit %s bytes"):format(l.timeoutSeconds or "?",
      l.outputLimitBytes or "?"))
  end
  if live then
    table.insert(lines, ("- Sandbox: %s · approval mode: %s"):format(is_nil(p.sandbox) and "?" or p.sandbox,
      p.approvalMode))
  elseif #lines > 0 and type(p.sandbox) == "string" then
    table.insert(lines, ("- Sandbox: %s"):format(p.sandbox))
  end
  if type(p.denyRules) == "table" and #p.denyRules > 0 then
    local names = {}
    for _, r in ipairs(p.denyRules) do
      if type(r) == "table" and type(r.command or r.pattern) == "string" then
        table.insert(names, "`" .. (r.command or r.pattern) .. "`")
      end
    end
    table.insert(lines, ("- **May reach a denied program** (%s): it asks instead of running by itself"):format(
      table.concat(names, ", ")))
  end
  return lines
end

-- ------------------------------------------------------------ rewind

--- At most this many lines of each list of a rewind plan or outcome (the rest are counted).
M.REWIND_LIST_SHOWN = 20

local function bounded_list(out, title, items)
  if #items == 0 then
    return
  end
  table.insert(out, title)
  for i, l in ipairs(items) do
    if i > M.REWIND_LIST_SHOWN then
      table.insert(out, ("- … and %d more"):format(#items - M.REWIND_LIST_SHOWN))
      break
    end
    table.insert(out, "- " .. l)
  end
end

--- The plan of mino/rewind/plan as chat lines.
function M.rewind_plan_lines(plan)
  local out = { "", ("**Rewind plan** (%d turn%s; nothing is written until you confirm):"):format(#(plan.turns or {}),
    #(plan.turns or {}) == 1 and "" or "s") }
  local files = {}
  for _, f in ipairs(plan.files or {}) do
    table.insert(files, code_span(f.path) .. (f.action == "remove" and " (created by Mino: removed)" or ""))
  end
  if #files == 0 then
    table.insert(out, "- No file to put back.")
  end
  bounded_list(out, "Files put back as they were before:", files)
  local conflicts = {}
  for _, c in ipairs(plan.conflicts or {}) do
    table.insert(conflicts, ("%s: %s"):format(code_span(c.path), md_text(c.why or "")))
  end
  bounded_list(out, "Conflicts, left as they are:", conflicts)
  local commands = {}
  for _, c in ipairs(plan.commands or {}) do
    table.insert(commands, code_span(c.command))
  end
  bounded_list(out, "Commands that ran (Mino cannot undo their effects):", commands)
  return out
end

local REWIND_OUTCOMES = {
  restored = "restored",
  removed = "removed",
  notRestored = "**not restored**",
  conflict = "left as it is (changed since the plan)",
  changed = "changed (neither before nor what Mino wrote)",
}

--- The outcome of mino/rewind as chat lines.
function M.rewind_outcome_lines(result)
  local out = { "", ("**Rewound** %d turn%s:"):format(#(result.turns or {}), #(result.turns or {}) == 1 and "" or "s") }
  local files = {}
  for _, f in ipairs(result.files or {}) do
    local why = type(f.why) == "string" and (" (" .. md_text(f.why) .. ")") or ""
    table.insert(files, ("%s: %s%s"):format(code_span(f.path), REWIND_OUTCOMES[f.outcome] or tostring(f.outcome), why))
  end
  bounded_list(out, "Files:", files)
  local conflicts = {}
  for _, c in ipairs(result.conflicts or {}) do
    table.insert(conflicts, code_span(c.path))
  end
  bounded_list(out, "Left as they are:", conflicts)
  local commands = {}
  for _, c in ipairs(result.commands or {}) do
    table.insert(commands, code_span(c.command))
  end
  bounded_list(out, "Not undone (commands):", commands)
  return out
end

-- ------------------------------------------------------------ MCP

--- The `mcp` of an approval request when it is a well-formed one.
function M.mcp_of(p)
  local m = type(p) == "table" and p.mcp or nil
  if type(m) == "table" and type(m.server) == "string" and type(m.tool) == "string" and type(m.arguments) == "string" then
    return m
  end
end

--- At most this many characters of an MCP call's arguments are shown (the rest is counted).
M.MCP_ARGUMENTS_SHOWN = 4000

--- Valid JSON text `text` indented by two spaces, its members in the order
--- sent (vim.json would lose it): only whitespace outside strings changes.
local function indent_json(text)
  local out, depth, in_string, escaped = {}, 0, false, false
  local function newline()
    table.insert(out, "\n" .. ("  "):rep(depth))
  end
  local i, n = 1, #text
  while i <= n do
    local c = text:sub(i, i)
    if in_string then
      table.insert(out, c)
      if escaped then
        escaped = false
      elseif c == "\\" then
        escaped = true
      elseif c == '"' then
        in_string = false
      end
    elseif c == '"' then
      in_string = true
      table.insert(out, c)
    elseif c == "{" or c == "[" then
      -- An empty object or array stays on its line.
      local close = text:match("^%s*([%]}])", i + 1)
      if close then
        local j = text:find(close, i + 1, true)
        table.insert(out, c .. close)
        i = j
      else
        table.insert(out, c)
        depth = depth + 1
        newline()
      end
    elseif c == "}" or c == "]" then
      depth = depth - 1
      newline()
      table.insert(out, c)
    elseif c == "," then
      table.insert(out, c)
      newline()
    elseif c == ":" then
      table.insert(out, ": ")
    elseif not c:match("%s") then
      table.insert(out, c)
    end
    i = i + 1
  end
  return table.concat(out)
end

--- The arguments as indented JSON (as sent when they do not parse), cut to
--- MCP_ARGUMENTS_SHOWN characters.
function M.mcp_arguments(text)
  local shown = text
  if pcall(vim.json.decode, text) then
    shown = indent_json(text)
  end
  local n = vim.fn.strchars(shown)
  if n > M.MCP_ARGUMENTS_SHOWN then
    local left = n - M.MCP_ARGUMENTS_SHOWN
    shown = vim.fn.strcharpart(shown, 0, M.MCP_ARGUMENTS_SHOWN)
      .. ("\n… (%d more character%s not shown)"):format(left, left == 1 and "" or "s")
  end
  return shown
end

local MCP_HINTS = {
  { "readOnlyHint", "read-only", "not read-only" },
  { "destructiveHint", "destructive", "not destructive" },
  { "idempotentHint", "idempotent", "not idempotent" },
  { "openWorldHint", "reaches the outside world", "closed world" },
}

--- The tool's annotations as the server's claims ("the server says:
--- read-only, not destructive"), or nil without any.
function M.mcp_claims(annotations)
  if type(annotations) ~= "table" then
    return nil
  end
  local claims = {}
  if type(annotations.title) == "string" and annotations.title ~= "" then
    table.insert(claims, ('titled "%s"'):format(annotations.title))
  end
  for _, h in ipairs(MCP_HINTS) do
    if annotations[h[1]] == true then
      table.insert(claims, h[2])
    elseif annotations[h[1]] == false then
      table.insert(claims, h[3])
    end
  end
  if #claims == 0 then
    return nil
  end
  return "the server says: " .. table.concat(claims, ", ")
end

local function mcp_request_lines(p, m)
  local lines = { "", ("**MCP tool call** wants to call %s of the MCP server %s with:"):format(code_span(m.tool),
    code_span(m.server)) }
  vim.list_extend(lines, fence("json", M.mcp_arguments(m.arguments)))
  table.insert(lines, ("- Server: %s · tool: %s"):format(code_span(m.server), code_span(m.tool)))
  local claims = M.mcp_claims(m.annotations)
  if claims then
    table.insert(lines, ("- Annotations: %s (the server's own claims: Mino does not check them and asks anyway)")
      :format(md_text(claims)))
  end
  if type(p.limits) == "table" then
    table.insert(lines, ("- Limits: timeout %s s, output limit %s bytes"):format(p.limits.timeoutSeconds or "?",
      p.limits.outputLimitBytes or "?"))
  end
  if type(p.approvalMode) == "string" then
    table.insert(lines, ("- Approval mode: %s"):format(p.approvalMode))
  end
  return lines
end

local MCP_GONE = { failed = "did not start", exited = "stopped" }

--- The chat's line about a mino/mcp/status (nil for `starting`).
function M.mcp_status_line(p)
  local name = code_span(p.server or "?")
  if MCP_GONE[p.state] then
    local why = type(p.reason) == "string" and p.reason ~= "" and (": " .. md_text(p.reason)) or ""
    return ("_**MCP server %s %s**%s. Its tools are missing until it is restarted (`:MinoMcp restart %s`)._"):format(
      name, MCP_GONE[p.state], why, p.server or "?")
  elseif p.state == "ready" then
    local tools = type(p.tools) == "table" and #p.tools or 0
    return ("_MCP server %s is ready (%d tool%s)._"):format(name, tools, tools == 1 and "" or "s")
  end
end

function M.mcp_status(p)
  local line = M.mcp_status_line(p)
  if not line then
    return
  end
  close_output_fence()
  start_response()
  M.append({ "", line })
end

function M.approval_request(p)
  close_output_fence()
  local read = require("mino.reads").of(p)
  if read then
    local lines = read_request_lines(p, read)
    table.insert(lines, "")
    table.insert(lines, "_Waiting for your decision (Approve / Deny)…_")
    st.asked[(p.turnId or "") .. " " .. (p.callId or "")] = true
    st.shown[(p.turnId or "") .. " " .. (p.callId or "")] = true
    M.append(lines)
    return
  end
  if require("mino.diff").is_edit(p) then
    local lines = edit_request_lines(p)
    table.insert(lines, "")
    table.insert(lines, "_Waiting for your decision (Approve / Deny); the diff is in the split (:MinoDiff shows it again)…_")
    st.asked[(p.turnId or "") .. " " .. (p.callId or "")] = true
    st.shown[(p.turnId or "") .. " " .. (p.callId or "")] = true
    M.append(lines)
    return
  end
  local m = M.mcp_of(p)
  if m then
    local lines = mcp_request_lines(p, m)
    table.insert(lines, "")
    table.insert(lines, "_Waiting for your decision (Approve / Deny)…_")
    st.asked[(p.turnId or "") .. " " .. (p.callId or "")] = true
    st.shown[(p.turnId or "") .. " " .. (p.callId or "")] = true
    M.append(lines)
    return
  end
  local lines = { "", "**Tool call** wants to run:" }
  vim.list_extend(lines, fence("sh", p.command))
  vim.list_extend(lines, M.call_facts_lines(p))
  -- Blank lines keep each note a paragraph of its own (not part of the list).
  table.insert(lines, "")
  table.insert(lines, "_Waiting for your decision (Approve / Deny)…_")
  st.asked[(p.turnId or "") .. " " .. (p.callId or "")] = true
  st.shown[(p.turnId or "") .. " " .. (p.callId or "")] = true
  M.append(lines)
end

local SCOPES = { session = "this session", workspace = "this workspace" }

--- `answer` = { decision, reason?, rule? } as sent in mino/approval.
function M.approval_decided(req, answer)
  local d = protocol.decision
  local call = M.call_label(req)
  local line
  if answer.decision == d.approve then
    line = ("_Approved %s._"):format(call)
  elseif answer.decision == d.deny then
    line = answer.reason and ("_Denied %s: %s_"):format(call, md_text(answer.reason)) or ("_Denied %s._"):format(call)
  else
    local denies = answer.decision == d.denySession or answer.decision == d.denyWorkspace
    local scope = (answer.decision == d.allowSession or answer.decision == d.denySession) and "this session"
      or "this workspace"
    local rule = answer.rule or {}
    local what = rule.kind == "path" and "every edit of a file matching"
      or rule.kind == "mcp" and "every call of the MCP tool (`server/*`: every tool of the server)"
      or "every command starting with"
    local text = rule.command or rule.pattern or rule.tool or "?"
    if denies then
      line = ("_Denied %s, and from now on in %s %s %s is refused without asking._"):format(call, scope, what,
        code_span(text))
    else
      line = ("_Approved %s, and from now on in %s %s %s._"):format(call, scope, what, code_span(text))
    end
    if req.approvalMode == "ask" then
      -- The server records the rule but applies none in `ask` mode.
      line = line .. " _(The approval mode is `ask`: rules apply once it is `rules` or `sandboxed-auto`.)_"
    end
  end
  M.append({ "", line })
end

--- How a call was approved, from its `approvedBy` ({kind, rule?}) and
--- `sandbox`: nil for the person's own approval (shown when it was given).
function M.approved_by_line(approved_by, sandbox)
  if type(approved_by) ~= "table" then
    return nil
  end
  if approved_by.kind == "rule" then
    local r = type(approved_by.rule) == "table" and approved_by.rule or {}
    return ("_Approved by rule %s (%s, %s)._"):format(code_span(r.command or r.pattern or r.tool or "?"), r.kind or "?",
      SCOPES[r.scope] or tostring(r.scope or "?"))
  elseif approved_by.kind == "sandbox" then
    return ("_Approved automatically in the sandbox (%s)._"):format(type(sandbox) == "string" and sandbox or "?")
  end
  return nil
end

function M.tool_started(p)
  close_output_fence()
  st.stream = nil
  local key = (p.turnId or "") .. " " .. (p.callId or "")
  st.shown[key] = true
  if st.asked[key] then
    st.asked[key] = nil
    return
  end
  -- A read inside the workspace asks nothing: its line comes with its result.
  if require("mino.reads").of(p) then
    return
  end
  -- Approved without a question (by a rule or in the sandbox): the call
  -- block is shown here, with what approved it.
  local lines = { "", "**Tool call** runs:" }
  vim.list_extend(lines, fence("sh", p.command))
  local by = M.approved_by_line(p.approvedBy, p.sandbox)
  if by then
    table.insert(lines, by)
  end
  M.append(lines)
end

function M.tool_output(p)
  if st.stream ~= "output" or st.stream_call ~= p.callId then
    close_output_fence()
    M.append({ "```text", "" })
    st.stream = "output"
    st.stream_call = p.callId
  end
  st.output_streamed[p.turnId .. " " .. p.callId] = true
  extend_last(p.chunk or "")
end

function M.tool_result(p)
  close_output_fence()
  start_response()
  local lines = {}
  local key = (p.turnId or "") .. " " .. (p.callId or "")
  local streamed = st.output_streamed[key]
  st.output_streamed[key] = nil
  local shown = st.shown[key]
  st.shown[key] = nil
  local read = require("mino.reads").of(p)
  if read then
    -- One line, its output folded under it, as history shows it.
    M.append(require("mino.reads").lines(read, { status = p.status, output = p.output }))
    return
  end
  if not shown and type(p.command) == "string" then
    -- Nothing showed this call before its result (no request, no start):
    -- it is shown as the history shows it, naming its command.
    M.append(history_call_lines({
      callId = p.callId,
      command = p.command,
      result = { status = p.status, output = p.output, exitCode = p.exitCode, diff = p.diff },
    }))
    return
  end
  if type(p.diff) == "string" then
    vim.list_extend(lines, edit_result_lines(p))
  elseif not streamed and (p.output or "") ~= "" then
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
    vim.list_extend(lines, speaker(M.ASSISTANT_HEADING, p.text))
  end
  if p.status ~= protocol.turn_status.completed then
    local s = ("_Turn %s_"):format(p.status or "?")
    if not is_nil(p.reason) and p.reason ~= "" then
      s = ("_Turn %s: %s_"):format(p.status, p.reason)
    end
    table.insert(lines, s)
  end
  local usage = turn_usage_line(p.usage)
  if usage then
    vim.list_extend(lines, { "", usage })
  end
  if #lines > 0 then
    M.append(lines)
  end
  M.set_session_usage(p.sessionUsage)
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
  for _, win in ipairs({ st.input_win, st.win }) do
    if win_valid(win) and #api.nvim_list_wins() > 1 then
      pcall(api.nvim_win_close, win, true)
    end
  end
  for _, buf in ipairs({ st.input_buf, st.buf }) do
    if buf and api.nvim_buf_is_valid(buf) then
      pcall(api.nvim_buf_delete, buf, { force = true })
    end
  end
  st.buf, st.win, st.input_buf, st.input_win, st.stream, st.stream_call = nil, nil, nil, nil, nil, nil
  st.streamed, st.output_streamed, st.response, st.asked, st.shown = {}, {}, nil, {}, {}
end

return M
