// Notices above the transcript: what the view or the server wants the
// person to know (recovery, repairs, errors), and the MCP servers whose
// tools are missing, each with its Restart.
import type { McpStatusNotification } from '../src/generated/protocol';
import { announce } from './announce';
import { h, notices } from './dom';
import { linkButton } from './host';

type NoticeKind = 'info' | 'warning' | 'error';

export function addNotice(text: string, kind?: NoticeKind): HTMLElement {
  const n = h('div', 'notice ' + (kind || 'info'), text);
  n.setAttribute('role', kind === 'error' ? 'alert' : 'note');
  notices.appendChild(n);
  return n;
}

/** The notice of the MCP server `server`, if one is shown. */
function mcpNotice(server: string): HTMLElement | undefined {
  return [...notices.querySelectorAll<HTMLElement>('.mcp-notice')].find((n) => n.dataset.mcpServer === server);
}

/**
 * mino/mcp/status: a server that failed to start or exited is a notice
 * naming it, why, and that its tools are missing, with Restart; one
 * starting again says so; ready takes the notice away.
 */
export function onMcpStatus(p: McpStatusNotification) {
  if (!p || typeof p.server !== 'string') return;
  const old = mcpNotice(p.server);
  if (p.state === 'ready') {
    if (old) {
      old.remove();
      announce('MCP server ' + p.server + ' is ready; its tools are back.');
    }
    return;
  }
  if (p.state === 'starting') {
    // Only a restart of a server that was shown as gone is worth a line.
    if (old) old.replaceWith(mcpNoticeElement(p.server, 'info', 'MCP server ' + p.server + ' is starting…', false));
    return;
  }
  if (p.state !== 'failed' && p.state !== 'exited') return;
  const what = p.state === 'failed' ? 'did not start' : 'stopped';
  const why = typeof p.reason === 'string' && p.reason ? ': ' + p.reason : '';
  const text = 'MCP server ' + p.server + ' ' + what + why + '. Its tools are missing until it is restarted.';
  const n = mcpNoticeElement(p.server, 'warning', text, true);
  if (old) old.replaceWith(n);
  else notices.appendChild(n);
  announce(text);
}

function mcpNoticeElement(server: string, kind: 'info' | 'warning', text: string, restartable: boolean): HTMLElement {
  const n = h('div', 'notice mcp-notice ' + kind);
  n.dataset.mcpServer = server;
  n.setAttribute('role', kind === 'warning' ? 'alert' : 'status');
  n.appendChild(h('span', 'mcp-notice-text', text));
  if (restartable) {
    const b = linkButton('Restart', { type: 'mcpRestart', server }, 'mcp-restart');
    b.setAttribute('aria-label', 'Restart the MCP server ' + server);
    n.append(' ', b);
  }
  return n;
}
