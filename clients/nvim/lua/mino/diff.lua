--- Edit diffs: the split that shows an edit's diff before its approval
--- question is asked, :MinoDiff (the pending or last edit's diff again), and
--- the folds of the diffs in the chat buffer.
local M = {}

local api = vim.api

local st = {
  --- The diff split's window and scratch buffer (one at a time).
  win = nil,
  buf = nil,
  --- "turnId callId" -> the edit request ({ turnId, callId, edit }) whose
  --- approval has not been decided yet.
  pending = {},
  --- What :MinoDiff shows when no edit waits: the last edit decided or
  --- applied ({ edit, diff, applied }).
  last = nil,
  --- The chat's window heights before the split opened, given back when it closes.
  heights = nil,
}

local function key(turn_id, call_id)
  return (turn_id or "") .. " " .. (call_id or "")
end

local function is_edit(req)
  local e = type(req) == "table" and req.edit or nil
  return type(e) == "table" and type(e.diff) == "string" and type(e.path) == "string"
end
M.is_edit = is_edit

local function config()
  local c = require("mino").config.diff
  return type(c) == "table" and c or {}
end

--- One line saying what the edit does, for the split's first line and the
--- approval question: tool, path, new file or not, size, outside or not.
function M.summary(edit)
  local parts = {}
  if type(edit.newFile) == "boolean" then
    table.insert(parts, edit.newFile and "new file" or "existing file")
  end
  if type(edit.size) == "number" then
    table.insert(parts, ("%d bytes after the edit"):format(edit.size))
  end
  local s = ("%s %s"):format(edit.tool or "edit", edit.path)
  if #parts > 0 then
    s = s .. " (" .. table.concat(parts, ", ") .. ")"
  end
  if edit.leavesWorkspace then
    s = s .. " OUTSIDE THE WORKSPACE"
  end
  return s
end

--- The split's lines: what it is, a warning when the path leaves the
--- workspace, then the unified diff as Mino sent it.
function M.lines(edit, diff, state)
  local lines = { ("Mino: %s — %s"):format(M.summary(edit), state) }
  if edit.leavesWorkspace then
    table.insert(lines, ("WARNING: this edit writes outside the workspace, to %s"):format(edit.path))
  end
  if type(edit.protected) == "string" then
    table.insert(lines, ("PROTECTED PATH: %s"):format(edit.protected))
  end
  local body = vim.split(diff or "", "\n", { plain = true })
  if body[#body] == "" then
    table.remove(body)
  end
  vim.list_extend(lines, body)
  return lines
end

local function win_valid(win)
  return win ~= nil and api.nvim_win_is_valid(win)
end

--- Closes the diff split (its scratch buffer is wiped with it).
function M.close()
  if win_valid(st.win) and #api.nvim_list_wins() > 1 then
    pcall(api.nvim_win_close, st.win, true)
  end
  if st.buf and api.nvim_buf_is_valid(st.buf) then
    pcall(api.nvim_buf_delete, st.buf, { force = true })
  end
  st.win, st.buf = nil, nil
  -- Neovim gives the freed rows to a neighbour (the input window under the
  -- chat, whatever its 'winfixheight'): the chat gets its height back.
  if st.heights then
    require("mino.chat").restore_heights(st.heights)
    st.heights = nil
  end
end

--- A read-only scratch buffer named after the edit's path, `filetype=diff`.
local function scratch(edit, lines)
  local buf = api.nvim_create_buf(false, true)
  -- Another buffer may hold the name (a :MinoDiff of the same file): the name is only a label.
  if not pcall(api.nvim_buf_set_name, buf, "mino://diff/" .. edit.path) then
    pcall(api.nvim_buf_set_name, buf, ("mino://diff/%s (%d)"):format(edit.path, buf))
  end
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].filetype = "diff"
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  vim.keymap.set("n", "q", M.close, { buffer = buf, desc = "Close the Mino diff" })
  return buf
end

--- Shows `lines` in the diff split (replacing what it showed) without moving
--- the cursor: the question that follows must find focus where it was.
--- `menu_rows`: the screen rows at the bottom the question's menu will cover
--- (Neovim's own vim.ui.select draws there); a split above ends above them.
local function show(edit, lines, menu_rows)
  M.close()
  st.heights = require("mino.chat").heights()
  local buf = scratch(edit, lines)
  local c = config()
  local position = c.position or "above"
  local opts = { split = position, win = -1 }
  if position == "below" or position == "above" then
    local most = math.floor(vim.o.lines * (c.height or 0.4))
    if position == "above" and menu_rows then
      -- Its rows, its status line and the tab line stay clear of the menu.
      most = math.min(most, vim.o.lines - menu_rows - 2)
    end
    opts.height = math.max(3, math.min(#lines, most))
  end
  local ok, win = pcall(api.nvim_open_win, buf, false, opts)
  if not ok then
    pcall(api.nvim_buf_delete, buf, { force = true })
    error(win)
  end
  vim.wo[win].wrap = false
  vim.wo[win].foldenable = false
  vim.wo[win].number = false
  st.win, st.buf = win, buf
  return buf
end

-- ------------------------------------------------------------ the edit's life

--- An edit's approval request arrived: it waits for a decision.
function M.requested(req)
  if is_edit(req) then
    st.pending[key(req.turnId, req.callId)] = req
  end
end

--- Draws the diff of `req` in its split; called right before its approval
--- question is asked.
function M.show_request(req, menu_rows)
  if not is_edit(req) then
    return
  end
  -- Asked again (a refused rule, a dismissed reason): it waits again.
  st.pending[key(req.turnId, req.callId)] = req
  show(req.edit, M.lines(req.edit, req.edit.diff, "proposed, waiting for your decision"), menu_rows)
end

--- The person decided about `req` (or it can no longer be decided): the
--- split closes unless `diff.close_after_decision` is false.
function M.decided(req)
  local k = key(req.turnId, req.callId)
  if not st.pending[k] then
    return
  end
  st.pending[k] = nil
  st.last = { key = k, edit = req.edit, diff = req.edit.diff, applied = false }
  if config().close_after_decision ~= false then
    M.close()
  end
end

--- Every pending edit of a turn that ended (nil: of every turn, the server stopped).
function M.turn_ended(turn_id)
  local closed = false
  for k, req in pairs(st.pending) do
    if turn_id == nil or req.turnId == turn_id then
      st.pending[k] = nil
      st.last = { key = k, edit = req.edit, diff = req.edit.diff, applied = false }
      closed = true
    end
  end
  if closed and config().close_after_decision ~= false then
    M.close()
  end
end

--- A result with an applied diff: what :MinoDiff shows once nothing waits.
--- Its edit is the request's when that was seen here, else (approved by a
--- rule) one built from the result's summary `<tool> <path>`.
function M.applied(p)
  if type(p.diff) ~= "string" then
    return
  end
  local k = key(p.turnId, p.callId)
  local edit = st.last and st.last.key == k and st.last.edit or nil
  if not edit then
    local tool, path = tostring(p.command or ""):match("^(%S+)%s+(.+)$")
    edit = { tool = tool or "edit", path = path or "?" }
  end
  st.last = { key = k, edit = edit, diff = p.diff, applied = true }
end

--- :MinoDiff: the diff of the edit waiting for a decision (the newest), else
--- of the last edit decided or applied. Returns false when there is none.
function M.reopen()
  local newest
  for _, req in pairs(st.pending) do
    if not newest or (req.seq or 0) > (newest.seq or 0) then
      newest = req
    end
  end
  if newest then
    M.show_request(newest)
    return true
  end
  local last = st.last
  if not last then
    return false
  end
  show(last.edit, M.lines(last.edit, last.diff, last.applied and "applied to the file" or "proposed (not applied)"))
  return true
end

--- `gd` in the chat: shows the ````diff block the cursor is in (a request's
--- or a result's, live or from the history). Returns false outside one.
function M.show_at_cursor()
  local buf = api.nvim_get_current_buf()
  local row = api.nvim_win_get_cursor(0)[1]
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  local open_at
  for i = row, 1, -1 do
    if lines[i] == M.FENCE_OPEN then
      open_at = i
      break
    elseif lines[i] == M.FENCE_CLOSE and i ~= row then
      return false
    end
  end
  if not open_at then
    return false
  end
  local body = {}
  for i = open_at + 1, #lines do
    if lines[i] == M.FENCE_CLOSE then
      break
    end
    table.insert(body, lines[i])
  end
  local path = "?"
  for _, l in ipairs(body) do
    local p = l:match("^%+%+%+ b/(.+)$") or l:match("^%-%-%- a/(.+)$")
    if p then
      path = p
      break
    end
  end
  local edit = { tool = "diff of", path = path }
  show(edit, M.lines(edit, table.concat(body, "\n"), "from the chat"))
  return true
end

function M.win()
  return win_valid(st.win) and st.win or nil
end

function M.buf()
  return st.buf and api.nvim_buf_is_valid(st.buf) and st.buf or nil
end

-- ------------------------------------------------------------ folds in the chat

--- The chat buffer writes each diff in a fence of four backticks
--- ("````diff" … "````"), which no other block there uses: those fences are
--- the chat window's folds.
M.FENCE_OPEN = "````diff"
M.FENCE_CLOSE = "````"

--- `lines` of a diff as a foldable fenced block of the chat buffer.
function M.fence(diff)
  local out = { M.FENCE_OPEN }
  local body = vim.split(diff or "", "\n", { plain = true })
  if body[#body] == "" then
    table.remove(body)
  end
  vim.list_extend(out, body)
  table.insert(out, M.FENCE_CLOSE)
  return out
end

--- 'foldexpr' of the chat window: a diff fence is a fold (closed at first),
--- and so is a read's line with its output (mino.reads).
function M.foldexpr(lnum)
  lnum = lnum or vim.v.lnum
  local line = vim.fn.getline(lnum)
  if line == M.FENCE_OPEN then
    return ">1"
  elseif line == M.FENCE_CLOSE then
    return "<1"
  end
  local reads = require("mino.reads")
  if reads.starts_fold(line, vim.fn.getline(lnum + 1)) then
    return ">1"
  elseif reads.closes_fold(line) then
    return "<1"
  end
  return "="
end

--- Makes the diffs and reads of the chat window `win` foldable (zo opens
--- one, zc closes it).
function M.fold_window(win)
  vim.wo[win].foldmethod = "expr"
  vim.wo[win].foldexpr = "v:lua.require'mino.diff'.foldexpr()"
  vim.wo[win].foldtext = "v:lua.require'mino.reads'.foldtext()"
  vim.wo[win].foldlevel = 0
  vim.wo[win].foldenable = true
end

function M._reset()
  M.close()
  st.heights = nil
  st.pending = {}
  st.last = nil
end

return M
