// An MCP tool call's approval card: the server, the tool, its arguments,
// and the tool's annotations as the server's own claims.
import type { ApprovalRequest, McpAnnotations, McpView } from '../src/generated/protocol';
import type { Card } from './cards';
import { h, metaRow } from './dom';
import { formatBytes } from './format';
import { approvalModeLabel } from './statusLabels';

/** The `mcp` of an approval request, when it is a well-formed one. */
export function mcpOf(p: { mcp?: McpView } | null | undefined): McpView | null {
  const m = p && p.mcp;
  return m && typeof m.server === 'string' && typeof m.tool === 'string' && typeof m.arguments === 'string' ? m : null;
}

/** At most this many characters of a call's arguments are shown (the rest is counted). */
const MCP_ARGUMENTS_SHOWN = 4000;

/** The arguments as indented JSON (as sent when they do not parse), cut to MCP_ARGUMENTS_SHOWN. */
function mcpArguments(text: string): string {
  let pretty = text;
  try {
    pretty = JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    // Shown as the model sent them.
  }
  if (pretty.length <= MCP_ARGUMENTS_SHOWN) return pretty;
  const left = pretty.length - MCP_ARGUMENTS_SHOWN;
  return pretty.slice(0, MCP_ARGUMENTS_SHOWN) + '\n… (' + left + ' more character' + (left === 1 ? '' : 's') + ' not shown)';
}

const MCP_HINTS: [keyof McpAnnotations, string, string][] = [
  ['readOnlyHint', 'read-only', 'not read-only'],
  ['destructiveHint', 'destructive', 'not destructive'],
  ['idempotentHint', 'idempotent', 'not idempotent'],
  ['openWorldHint', 'reaches the outside world', 'closed world'],
];

/** The tool's annotations as the server's claims: "the server says: read-only, not destructive". */
function mcpClaims(annotations: McpAnnotations | undefined): string | null {
  if (!annotations || typeof annotations !== 'object') return null;
  const claims: string[] = [];
  if (typeof annotations.title === 'string' && annotations.title) claims.push('titled "' + annotations.title + '"');
  for (const [key, yes, no] of MCP_HINTS) {
    if (annotations[key] === true) claims.push(yes);
    else if (annotations[key] === false) claims.push(no);
  }
  return claims.length ? 'the server says: ' + claims.join(', ') : null;
}

/**
 * The approval card of an MCP tool call: the server, the tool, the
 * arguments it would be sent, and the tool's annotations labelled as the
 * server's claims (they never answer for the person: the card asks anyway).
 */
export function showMcpProposal(card: Card, p: ApprovalRequest, mcp: McpView) {
  const name = card.el.querySelector('.tool-name');
  if (name) name.textContent = 'mcp';
  card.el.querySelectorAll('.mcp-view').forEach((n) => n.remove());
  const section = h('div', 'mcp-view');
  const dl = h('dl', 'tool-meta');
  metaRow(dl, 'Server', mcp.server, 'mcp-server');
  metaRow(dl, 'Tool', mcp.tool, 'mcp-tool');
  metaRow(dl, 'Arguments', h('pre', 'mcp-arguments', mcpArguments(mcp.arguments)), 'mcp-arguments-row');
  const claims = mcpClaims(mcp.annotations);
  if (claims) metaRow(dl, 'Annotations', claims, 'mcp-annotations');
  if (p.limits && typeof p.limits === 'object') {
    metaRow(dl, 'Limits', 'timeout ' + p.limits.timeoutSeconds + ' s, output ' + formatBytes(p.limits.outputLimitBytes));
  }
  if (p.approvalMode) metaRow(dl, 'Approval mode', approvalModeLabel(p.approvalMode), 'approval-mode-row');
  section.appendChild(dl);
  if (claims) section.appendChild(h('div', 'mcp-note', "Annotations are the server's own claims; Mino does not check them and asks whatever they say."));
  card.el.insertBefore(section, card.actions);
}
