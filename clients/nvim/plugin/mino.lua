-- Mino: commands only; everything else loads lazily from lua/mino.
if vim.g.loaded_mino then
  return
end
vim.g.loaded_mino = true

if vim.fn.has("nvim-0.10") ~= 1 then
  vim.notify("mino.nvim needs Neovim 0.10 or newer", vim.log.levels.ERROR)
  return
end

local function mino()
  return require("mino")
end

vim.api.nvim_create_user_command("Mino", function(cmd)
  mino().open({ question = cmd.args ~= "" and cmd.args or nil })
end, { nargs = "*", desc = "Open the Mino chat buffer; with text, ask Mino" })

vim.api.nvim_create_user_command("MinoSend", function(cmd)
  mino().send_range({ range = cmd.range, line1 = cmd.line1, line2 = cmd.line2, question = cmd.args })
end, {
  range = true,
  nargs = "*",
  desc = "Attach lines of this buffer (a range, e.g. the visual selection; all without one) to a Mino question",
})

vim.api.nvim_create_user_command("MinoImage", function(cmd)
  mino().attach_image(cmd.args, { clear = cmd.bang })
end, {
  nargs = "?",
  bang = true,
  complete = "file",
  desc = "Attach an image file to the next Mino question (! drops the attached ones)",
})

vim.api.nvim_create_user_command("MinoCancel", function()
  mino().cancel()
end, { desc = "Cancel Mino's running turn" })

vim.api.nvim_create_user_command("MinoAcknowledge", function()
  mino().acknowledge()
end, { desc = "Acknowledge unknown tool results of recovered turns" })

vim.api.nvim_create_user_command("MinoNew", function()
  mino().new_session()
end, { desc = "Start a new Mino chat (a new session) in this workspace" })

vim.api.nvim_create_user_command("MinoSessions", function()
  mino().pick_session()
end, { desc = "Pick a Mino session of this workspace (or any folder) to continue" })

vim.api.nvim_create_user_command("MinoRename", function(cmd)
  mino().rename_session(cmd.args ~= "" and cmd.args or nil)
end, { nargs = "*", desc = "Rename the open Mino session" })

vim.api.nvim_create_user_command("MinoDelete", function()
  mino().delete_session()
end, { desc = "Move a Mino session of this workspace to Mino's trash" })

vim.api.nvim_create_user_command("MinoCompact", function()
  mino().compact()
end, { desc = "Have the model summarise Mino's conversation so far" })

vim.api.nvim_create_user_command("MinoRules", function()
  mino().rules()
end, { desc = "List Mino's approval rules and revoke one" })

vim.api.nvim_create_user_command("MinoModel", function(cmd)
  mino().choose_model(cmd.args)
end, { nargs = "?", desc = "Choose the model of the open Mino session (a list without a name)" })

vim.api.nvim_create_user_command("MinoMode", function(cmd)
  mino().choose_mode(cmd.args)
end, {
  nargs = "?",
  complete = function()
    return require("mino.protocol").approval_modes
  end,
  desc = "Set the approval mode of the running Mino server (plan: nothing runs; a list without a name)",
})

vim.api.nvim_create_user_command("MinoMcp", function(cmd)
  mino().mcp(cmd.args)
end, {
  nargs = "*",
  complete = function(arg_lead, cmd_line)
    return mino().mcp_complete(arg_lead, cmd_line)
  end,
  desc = "List the MCP servers of the open Mino session and their states; :MinoMcp restart NAME restarts one",
})

vim.api.nvim_create_user_command("MinoRewind", function(cmd)
  mino().rewind(cmd.args ~= "" and cmd.args or nil)
end, {
  nargs = "?",
  desc = "Undo Mino's edits of a turn and every later one (the plan is shown and confirmed first; without a turn, pick one)",
})

vim.api.nvim_create_user_command("MinoFork", function(cmd)
  mino().fork(cmd.args ~= "" and cmd.args or nil)
end, {
  nargs = "?",
  desc = "Continue in a new session holding this one up to a turn (the last without one); this one is kept",
})

vim.api.nvim_create_user_command("MinoDiff", function()
  mino().show_diff()
end, { desc = "Show the diff of the edit waiting for approval, else of the last edit" })

vim.api.nvim_create_user_command("MinoRestart", function()
  mino().restart()
end, { desc = "Restart mino-server" })

vim.api.nvim_create_user_command("MinoStop", function()
  mino().stop()
end, { desc = "Stop mino-server" })

vim.api.nvim_create_user_command("MinoLog", function()
  vim.cmd.split(vim.fn.fnameescape(mino().log_path()))
end, { desc = "Open mino-server's log" })
