--- :checkhealth mino
local M = {}

local health = vim.health

local function env(name)
  local mino = require("mino")
  local v = (mino.config.cmd_env or {})[name]
  if v ~= nil and v ~= "" then
    return tostring(v), "setup({cmd_env})"
  end
  v = vim.env[name]
  if v ~= nil and v ~= "" then
    return v, "environment"
  end
  return nil
end

function M.check()
  local mino = require("mino")

  health.start("Neovim")
  if vim.fn.has("nvim-0.10") == 1 then
    local v = vim.version()
    health.ok(("Neovim %d.%d.%d"):format(v.major, v.minor, v.patch))
  else
    health.error("mino.nvim needs Neovim 0.10 or newer")
  end

  health.start("mino-server")
  local exe, why = mino.server_binary()
  if not exe then
    health.error(why, { "Build it with `cargo build -p mino-server`, or set server_path in require('mino').setup()" })
  else
    local ok, res = pcall(function()
      return vim.system({ exe, "--version" }, { text = true }):wait(5000)
    end)
    if not ok then
      health.error(("%s: cannot run --version: %s"):format(exe, res))
    elseif res.code ~= 0 then
      health.error(("%s --version exited %s: %s"):format(exe, tostring(res.code), vim.trim(res.stderr or "")))
    else
      health.ok(("found %s: %s"):format(exe, vim.trim(res.stdout or "")))
    end
  end
  local client = mino.client()
  if client then
    local caps = mino.state.capabilities or {}
    health.ok(("running (client %d, session %s, model %s)"):format(client.id, caps.sessionId or "?", caps.model or "?"))
  else
    health.info("not running (it starts with :Mino)")
  end
  health.info("server log: " .. mino.log_path())

  health.start("Environment")
  local home, from = env("MINO_HOME")
  if home then
    local exists = vim.fn.isdirectory(home) == 1
    health.ok(("MINO_HOME=%s (from %s)%s"):format(home, from, exists and "" or "; does not exist yet, the server creates it"))
  else
    local default = vim.fs.joinpath(vim.env.HOME or "~", ".mino")
    health.info("MINO_HOME is not set; sessions go to " .. default)
  end
  local key = env("OPENAI_API_KEY")
  local base, base_from = env("OPENAI_BASE_URL")
  if key then
    health.ok("OPENAI_API_KEY is set")
  end
  if base then
    health.ok(("OPENAI_BASE_URL=%s (from %s)"):format(base, base_from))
  end
  if not key and not base then
    health.error("neither OPENAI_API_KEY nor OPENAI_BASE_URL is set", {
      "export OPENAI_API_KEY, or pass it in require('mino').setup({ cmd_env = { OPENAI_API_KEY = ... } })",
    })
  end
  local model = env("MINO_MODEL")
  if model then
    health.info("MINO_MODEL=" .. model)
  end
end

return M
