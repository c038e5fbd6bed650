--- Context attached to a question: `#buffer` in the question (the buffer you
--- were in before the chat), `#buffer:{name}` or `#buffer:{number}` (another
--- buffer), each optionally with `:{from}-{to}` (those lines), and
--- :[range]MinoSend. The question sent holds each attachment as a fenced
--- block after its text, headed by what it is; the chat (live and in the
--- history) shows one line per attachment instead of its content.
local M = {}

local api = vim.api

--- An attachment larger than this is refused (the question stays in the
--- input): the server takes questions up to 1 MiB, and a model's context is
--- better spent on the part that matters.
M.MAX_ATTACHMENT_BYTES = 256 * 1024

--- The last buffer entered that can be attached (not Mino's own).
local origin = nil

local function attachable(buf)
  if not (buf and api.nvim_buf_is_valid(buf)) then
    return false
  end
  local bt = vim.bo[buf].buftype
  if bt == "terminal" or bt == "prompt" or bt == "quickfix" then
    return false
  end
  return not vim.startswith(api.nvim_buf_get_name(buf), "mino://")
end

--- Follows the buffers you enter, so `#buffer` means the one you came from.
function M.track()
  M.note(api.nvim_get_current_buf())
  api.nvim_create_autocmd("BufEnter", {
    group = api.nvim_create_augroup("mino.context", { clear = true }),
    callback = function(ev)
      M.note(ev.buf)
    end,
  })
end

function M.note(buf)
  if attachable(buf) then
    origin = buf
  end
end

--- The buffer `#buffer` stands for, or nil.
function M.origin()
  if attachable(origin) then
    return origin
  end
  return nil
end

--- How a buffer is named in an attachment: its path relative to the current
--- directory, else `[No Name] (buffer N)`.
function M.buffer_label(buf)
  local name = api.nvim_buf_get_name(buf)
  if name == "" then
    return ("[No Name] (buffer %d)"):format(buf)
  end
  return vim.fn.fnamemodify(name, ":.")
end

--- The `#buffer` references in `text`, in order: { token, spec } with `spec`
--- the part after `#buffer:` (nil for the plain `#buffer`). A reference starts
--- the text or follows a space or an opening bracket; trailing punctuation is
--- not part of it.
function M.references(text)
  local refs = {}
  local init = 1
  while true do
    local s, e = text:find("#buffer", init, true)
    if not s then
      break
    end
    local before = s == 1 and " " or text:sub(s - 1, s - 1)
    if before:match("[%s%(%[]") then
      local after = text:sub(e + 1, e + 1)
      if after == ":" then
        local spec = text:sub(e + 2):match("^%S+")
        spec = spec and (spec:gsub("[%.,;!?%)%]]+$", "")) or nil
        if spec and spec ~= "" then
          table.insert(refs, { token = "#buffer:" .. spec, spec = spec })
        end
      elseif after == "" or after:match("[%s%.,;!?%)%]]") then
        table.insert(refs, { token = "#buffer" })
      end
    end
    init = e + 1
  end
  return refs
end

--- `{name}`, `{name}:{from}-{to}` or `{from}-{to}` -> name (nil: the origin), range.
local function parse_spec(spec)
  if not spec then
    return nil, nil
  end
  local a, b = spec:match("^(%d+)%-(%d+)$")
  if a then
    return nil, { tonumber(a), tonumber(b) }
  end
  local name, from, to = spec:match("^(.+):(%d+)%-(%d+)$")
  if name then
    return name, { tonumber(from), tonumber(to) }
  end
  return spec, nil
end

--- The buffer `name` names: a buffer number, a path (relative or full), else
--- the one buffer whose path ends with it (whole components). Returns nil and why otherwise.
local function find_buffer(name)
  local n = tonumber(name)
  if n then
    if api.nvim_buf_is_valid(n) and attachable(n) then
      return n
    end
    return nil, ("#buffer:%s: there is no buffer %d that can be attached (:ls lists the buffers)"):format(name, n)
  end
  local full = vim.fn.fnamemodify(name, ":p")
  local candidates = {}
  for _, buf in ipairs(api.nvim_list_bufs()) do
    local bn = api.nvim_buf_get_name(buf)
    if bn ~= "" and attachable(buf) and vim.bo[buf].buflisted then
      if bn == full or vim.fn.fnamemodify(bn, ":.") == name then
        return buf
      end
      -- Whole path components only: "a.rs" is not the end of "data.rs".
      if bn:sub(-#name) == name and bn:sub(-#name - 1, -#name - 1) == "/" then
        table.insert(candidates, buf)
      end
    end
  end
  if #candidates == 1 then
    return candidates[1]
  elseif #candidates == 0 then
    return nil, ("#buffer:%s names no open buffer (:ls lists them; a buffer number works too, #buffer:3)"):format(name)
  end
  local names = vim.tbl_map(M.buffer_label, vim.list_slice(candidates, 1, 5))
  return nil, ("#buffer:%s matches %d buffers (%s): write more of its path, or its number"):format(name, #candidates,
    table.concat(names, ", "))
end

--- 'omnifunc' of the input buffer (<C-x><C-o>): completes `#buffer` and,
--- after `#buffer:`, the paths of the listed buffers that can be attached.
function M.omnifunc(findstart, base)
  if findstart == 1 then
    local line = api.nvim_get_current_line():sub(1, api.nvim_win_get_cursor(0)[2])
    local start = line:find("#[%w:%._/%-~]*$")
    return start and start - 1 or -3
  end
  local items = {}
  if ("#buffer"):sub(1, #base) == base then
    table.insert(items, { word = "#buffer", menu = "the buffer you came from" })
  end
  if vim.startswith(base, "#buffer:") or ("#buffer:"):sub(1, #base) == base then
    local typed = base:sub(#"#buffer:" + 1)
    for _, buf in ipairs(api.nvim_list_bufs()) do
      if attachable(buf) and vim.bo[buf].buflisted and api.nvim_buf_get_name(buf) ~= "" then
        local label = M.buffer_label(buf)
        if not label:find("%s") and vim.startswith(label, typed) then
          table.insert(items, { word = "#buffer:" .. label, menu = ("%d lines"):format(api.nvim_buf_line_count(buf)) })
        end
      end
    end
  end
  return items
end

--- The reference to lines `from`-`to` of `buf` that :MinoSend writes: by
--- path when the path names it alone, else by number.
function M.reference(buf, from, to)
  local label = M.buffer_label(buf)
  local by = tostring(buf)
  if api.nvim_buf_get_name(buf) ~= "" and not label:find("%s") and find_buffer(label) == buf then
    by = label
  end
  local range = from and (":%d-%d"):format(from, to) or ""
  return "#buffer:" .. by .. range
end

local HEADER = "[#buffer %s, lines %d-%d of %d]"
local HEADER_PATTERN = "^%[#buffer (.+), lines (%d+)%-(%d+) of (%d+)%]$"

--- Lines `range` (all without one) of `buf` as an attachment, or nil and why.
local function attachment(buf, range, token)
  if not api.nvim_buf_is_loaded(buf) then
    pcall(vim.fn.bufload, buf)
  end
  local count = api.nvim_buf_line_count(buf)
  local from, to = 1, count
  if range then
    from, to = math.min(range[1], range[2]), math.max(range[1], range[2])
    if from < 1 or to > count then
      return nil, ("%s: %s has %d lines, so lines %d-%d cannot be attached"):format(token, M.buffer_label(buf), count,
        from, to)
    end
  end
  local lines = api.nvim_buf_get_lines(buf, from - 1, to, false)
  local body = table.concat(lines, "\n")
  if #body > M.MAX_ATTACHMENT_BYTES then
    return nil, ("%s: lines %d-%d of %s are %d bytes, more than the %d Mino attaches; attach the part that matters "
      .. "(select it and :'<,'>MinoSend, or #buffer:NAME:FROM-TO) or ask Mino to read the file"):format(token, from, to,
      M.buffer_label(buf), #body, M.MAX_ATTACHMENT_BYTES)
  end
  local longest = 2
  for run in body:gmatch("`+") do
    longest = math.max(longest, #run)
  end
  local fence = ("`"):rep(longest + 1)
  local text = table.concat({
    HEADER:format(M.buffer_label(buf), from, to, count),
    fence .. (vim.bo[buf].filetype or ""),
    body,
    fence,
  }, "\n")
  return { buf = buf, label = M.buffer_label(buf), from = from, to = to, total = count, bytes = #body, text = text }
end

--- The question as sent: `text`, then each buffer it references (once).
--- Returns the text and the attachments, or nil and why (nothing is sent).
function M.expand(text)
  local refs = M.references(text)
  if #refs == 0 then
    return text, {}
  end
  local seen, attached = {}, {}
  for _, r in ipairs(refs) do
    local name, range = parse_spec(r.spec)
    local buf, err
    if name then
      buf, err = find_buffer(name)
    else
      buf = M.origin()
      if not buf then
        err = r.token .. ": there is no buffer to attach yet (open a file, or name one: #buffer:NAME)"
      end
    end
    if not buf then
      return nil, err
    end
    local key = ("%d:%s"):format(buf, range and (range[1] .. "-" .. range[2]) or "all")
    if not seen[key] then
      seen[key] = true
      local a, why = attachment(buf, range, r.token)
      if not a then
        return nil, why
      end
      table.insert(attached, a)
    end
  end
  local parts = { text }
  for _, a in ipairs(attached) do
    table.insert(parts, a.text)
  end
  return table.concat(parts, "\n\n"), attached
end

--- How the chat shows an attachment.
function M.summary_line(label, from, to, total)
  local lines = to - from + 1
  return ("_Attached %s, lines %d–%d of %d (%d line%s)_"):format(
    require("mino.chat").code_span(label), from, to, total, lines, lines == 1 and "" or "s")
end

--- A sent question as the chat shows it: each attachment block (its header
--- line and the fenced block under it) replaced by its summary line.
function M.display(text)
  local lines = vim.split(text or "", "\n", { plain = true })
  local out = {}
  local i = 1
  while i <= #lines do
    local label, from, to, total = lines[i]:match(HEADER_PATTERN)
    local fence = label and lines[i + 1] and lines[i + 1]:match("^(```+)")
    local close
    if fence then
      for j = i + 2, #lines do
        if lines[j] == fence then
          close = j
          break
        end
      end
    end
    if close then
      table.insert(out, M.summary_line(label, tonumber(from), tonumber(to), tonumber(total)))
      i = close + 1
    else
      table.insert(out, lines[i])
      i = i + 1
    end
  end
  return table.concat(out, "\n")
end

return M
