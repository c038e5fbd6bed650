/**
 * Mino: MCP Servers — the current session's MCP servers and their states in a
 * quick pick; choosing one (or its button) restarts it through
 * `mino/mcp/restart`.
 */
import * as vscode from 'vscode';
import type { McpServerStatus } from './protocol';
import { errorMessage, type MinoServer } from './server';
import { connectionOrSay } from './sessions';

export const MCP_STATE_LABELS: Record<McpServerStatus['state'], string> = {
  starting: '$(loading~spin) starting',
  ready: '$(check) ready',
  failed: '$(error) failed to start: its tools are missing',
  exited: '$(warning) exited: its tools are missing',
};

interface McpItem extends vscode.QuickPickItem {
  status: McpServerStatus;
}

function item(status: McpServerStatus): McpItem {
  const tools = status.tools ?? [];
  return {
    label: status.server,
    description: MCP_STATE_LABELS[status.state] ?? status.state,
    detail: status.reason ?? (status.state === 'ready' ? `${tools.length} tool${tools.length === 1 ? '' : 's'}: ${tools.join(', ')}` : undefined),
    buttons: [{ iconPath: new vscode.ThemeIcon('debug-restart'), tooltip: `Restart ${status.server}` }],
    status,
  };
}

export async function showMcpServers(server: MinoServer): Promise<void> {
  const conn = await connectionOrSay(server);
  if (!conn) return;
  const pick = vscode.window.createQuickPick<McpItem>();
  pick.title = 'Mino: MCP Servers';
  const load = async () => {
    pick.busy = true;
    try {
      const { servers } = await conn.listMcp();
      pick.items = servers.map(item);
      pick.placeholder = servers.length
        ? 'Choose a server to restart it'
        : 'No MCP servers: add them to config.toml under [mcp_servers.NAME]';
    } catch (e) {
      pick.hide();
      void vscode.window.showErrorMessage(`Mino: could not list the MCP servers: ${errorMessage(e)}`);
    } finally {
      pick.busy = false;
    }
  };
  const restart = async (name: string) => {
    pick.busy = true;
    try {
      const status = await server.restartMcp(name);
      if (status.state === 'ready') void vscode.window.showInformationMessage(`Mino: MCP server ${name} is ready.`);
      else void vscode.window.showWarningMessage(`Mino: MCP server ${name} is ${status.state}${status.reason ? `: ${status.reason}` : ''}.`);
    } catch (e) {
      void vscode.window.showErrorMessage(`Mino: could not restart the MCP server ${name}: ${errorMessage(e)}`);
    }
    await load();
  };
  const done = new Promise<void>((resolve) => {
    pick.onDidHide(() => {
      pick.dispose();
      resolve();
    });
  });
  pick.onDidTriggerItemButton(({ item: chosen }) => void restart(chosen.status.server));
  pick.onDidAccept(() => {
    const chosen = pick.selectedItems[0];
    if (chosen) void restart(chosen.status.server);
  });
  pick.show();
  await load();
  await done;
}
