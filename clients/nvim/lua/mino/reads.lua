--- Reads (read_file, list_files, search) in the chat: one line each, live and
--- restored from history alike, with what the read returned in a fold under
--- it. The fold is closed at first, so a read takes one line of the window;
--- zo opens it, zc closes it again.
local M = {}
local P = require("mino.protocol")

--- The longest path or pattern a read's line shows whole.
local PART_SHOWN = 80
--- The longest outcome (summary, or a failure's first line) shown whole.
local OUTCOME_SHOWN = 120

--- Every read's line starts with this (the fold's first line).
M.MARK = "▸ "
--- The output's fence: four backticks (or more, when the output holds a run
--- of four) and `text`, which no other block of the chat uses.
M.FENCE_INFO = "text"

local function is_nil(v)
  return v == nil or v == vim.NIL
end

--- A call's `read` when it is a well-formed one.
function M.of(p)
  local r = type(p) == "table" and p.read or nil
  if type(r) == "table" and type(r.tool) == "string" and type(r.path) == "string" then
    return r
  end
  return nil
end

local function one_line(s, max)
  local flat = tostring(s):gsub("\n", "\\n"):gsub("\t", " ")
  if vim.fn.strchars(flat) > max then
    flat = vim.fn.strcharpart(flat, 0, max - 1) .. "…"
  end
  return flat
end

local function code(s)
  return require("mino.chat").code_span(one_line(s, PART_SHOWN))
end

--- What a read asked for: read `src/main.rs`, list `*.rs` in `src`,
--- search `/fn main/` (`in DIR` unless it searched the session's directory).
function M.what(read)
  local here = read.path == "" or read.path == "."
  local within = here and "" or (" in " .. code(read.path))
  local pattern = type(read.pattern) == "string" and read.pattern or nil
  if read.tool == "read_file" then
    local lines = ""
    if type(read.endLine) == "number" then
      lines = (" (lines %d-%d)"):format(type(read.startLine) == "number" and read.startLine or 1, read.endLine)
    elseif type(read.startLine) == "number" then
      lines = (" (from line %d)"):format(read.startLine)
    end
    return "read " .. code(read.path) .. lines
  elseif read.tool == "list_files" then
    if pattern then
      return "list " .. code(pattern) .. within
    end
    return "list " .. code(read.path)
  elseif read.tool == "search" then
    return "search " .. code("/" .. (pattern or "") .. "/") .. within
  end
  return read.tool .. " " .. code(read.path)
end

--- What a read did: the server's summary, or why it did not (`result` nil
--- while it runs).
function M.outcome(read, result)
  if type(result) ~= "table" then
    return "pending"
  end
  local first = vim.trim((vim.split(result.output or "", "\n", { plain = true })[1] or ""))
  first = one_line(first, OUTCOME_SHOWN)
  if result.status == P.tool_status.success then
    return type(read.summary) == "string" and one_line(read.summary, OUTCOME_SHOWN) or first
  elseif result.status == P.tool_status.unavailable then
    return "result unavailable: Mino stopped before it was saved"
  end
  return first ~= "" and (tostring(result.status) .. ": " .. first) or tostring(result.status)
end

--- The read's line: `▸ read `src/main.rs` · lines 1-200 of 812 (31,204 bytes)`.
function M.line(read, result)
  local outside = read.leavesWorkspace and " · outside the session's directory" or ""
  return M.MARK .. M.what(read) .. " · " .. M.outcome(read, result) .. outside
end

--- A fence of backticks longer than any run of them the output starts a line with.
local function fence_for(lines)
  local longest = 3
  for _, l in ipairs(lines) do
    local run = l:match("^%s*(`+)")
    if run and #run > longest then
      longest = #run
    end
  end
  return ("`"):rep(longest + 1)
end

--- The chat lines of a read: a blank line, its line, then its output in a
--- fence the chat window folds (closed).
function M.lines(read, result)
  local lines = { "", M.line(read, result) }
  if type(result) ~= "table" then
    return lines
  end
  local body = vim.split(is_nil(result.output) and "" or tostring(result.output), "\n", { plain = true })
  if #body > 1 and body[#body] == "" then
    table.remove(body)
  end
  if #body == 1 and body[1] == "" then
    body = { "(no output)" }
  end
  local fence = fence_for(body)
  table.insert(lines, fence .. M.FENCE_INFO)
  vim.list_extend(lines, body)
  table.insert(lines, fence)
  return lines
end

--- Whether `line` starts a read's fold: a read's line followed (`next_line`)
--- by the output's fence.
function M.starts_fold(line, next_line)
  return vim.startswith(line, M.MARK) and next_line ~= nil and next_line:match("^````+" .. M.FENCE_INFO .. "$") ~= nil
end

--- Whether `line` closes a read's output fence (or a diff's).
function M.closes_fold(line)
  return line:match("^````+$") ~= nil
end

--- 'foldtext' of the chat window: a read's fold shows its line and how many
--- lines it holds; any other fold (a diff) as Neovim shows it.
function M.foldtext()
  local first = vim.fn.getline(vim.v.foldstart)
  if vim.startswith(first, M.MARK) then
    return ("%s  [%d lines: zo]"):format(first, vim.v.foldend - vim.v.foldstart - 2)
  end
  return vim.fn.foldtext()
end

return M
