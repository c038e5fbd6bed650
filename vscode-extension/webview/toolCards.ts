// What a tool call card shows of its call: the facts the approval showed,
// who let it run, its live output, its result and the evidence of a result
// that is unknown.
import { TOOL_STATUS, type ApprovalMode, type ApprovedBy, type Evidence, type Limits, type SandboxMode, type ToolOutput, type ToolStarted, type ToolStatus } from '../src/generated/protocol';
import { createCard, openCard, setCardStatus, type Card } from './cards';
import { h, metaRow } from './dom';
import { showEditResult } from './edits';
import { formatBytes } from './format';
import { scrollToEnd } from './scroll';
import { approvalModeLabel, sandboxLabel, statusLabel } from './statusLabels';
import { getTurn } from './turns';

/** The facts of a call an approval request carries, and those a history call recorded. */
export interface CallFactsView {
  directory?: string;
  environment?: { [key in string]: string };
  limits?: Limits;
  sandbox?: SandboxMode;
  approvalMode?: ApprovalMode;
}

/** A result to show: a live `mino/toolResult`, or a history call's result with its call's facts. */
export interface ShownResult {
  turnId?: string;
  callId: string;
  command?: string;
  tool?: string;
  status: ToolStatus;
  output: string;
  exitCode?: number;
  diff?: string;
  evidence?: Evidence;
}

/**
 * What the approval showed about a call: directory, environment, limits,
 * sandbox, approval mode. Live (mino/approvalRequest) all are there; from
 * history (mino/history's call), those the session recorded.
 */
export function callFacts(p: CallFactsView): HTMLElement {
  const dl = h('dl', 'tool-meta');
  if (typeof p.directory === 'string') metaRow(dl, 'Directory', p.directory);
  if (p.environment && typeof p.environment === 'object') {
    const env = p.environment;
    const names = Object.keys(env).sort();
    // Collapsed; each variable is a row whose value wraps below its name when
    // the panel is narrow (see .env-table in main.css).
    const details = h('details', 'env');
    details.appendChild(h('summary', null, names.length + ' variable' + (names.length === 1 ? '' : 's')));
    const table = h('table', 'env-table');
    for (const name of names) {
      const tr = h('tr');
      const th = h('th', null, name);
      th.setAttribute('scope', 'row');
      tr.appendChild(th);
      tr.appendChild(h('td', null, env[name]));
      table.appendChild(tr);
    }
    details.appendChild(table);
    metaRow(dl, 'Environment', details, 'env-row');
  }
  if (p.limits && typeof p.limits === 'object') {
    metaRow(
      dl,
      'Limits',
      'timeout ' + p.limits.timeoutSeconds + ' s, output ' + formatBytes(p.limits.outputLimitBytes),
    );
  }
  if (p.sandbox) metaRow(dl, 'Sandbox', sandboxLabel(p.sandbox), 'sandbox-row');
  if (p.approvalMode) metaRow(dl, 'Approval mode', approvalModeLabel(p.approvalMode), 'approval-mode-row');
  return dl;
}

export function toolStarted(p: ToolStarted) {
  const turn = getTurn(p.turnId);
  const card = openCard(p.turnId, p.callId) || createCard(turn, p.turnId, p.callId, p.command);
  card.actions.hidden = true;
  card.actionError.hidden = true;
  setCardStatus(card, 'running');
  showApprovedBy(card, p.approvedBy, p.sandbox);
}

/**
 * Who let the call run, when it was not the person's own answer in this
 * card: a rule (named by its command), or the sandbox (sandboxed-auto).
 */
export function showApprovedBy(card: Card, approvedBy: ApprovedBy | undefined, sandbox: SandboxMode | undefined) {
  if (!approvedBy || typeof approvedBy.kind !== 'string') return;
  let text = '';
  if (approvedBy.kind === 'rule' && approvedBy.rule && typeof (approvedBy.rule.command ?? approvedBy.rule.pattern) === 'string') {
    const rule = approvedBy.rule;
    text = 'approved by rule `' + (rule.command ?? rule.pattern) + '`';
    card.approvedBy.title = (rule.kind === 'exact' ? 'Exactly this command' : rule.kind === 'path' ? 'Edits of files matching this' : 'Commands starting with this') +
      (rule.scope === 'workspace' ? ', for this workspace' : ', for this session') + (rule.id ? ' (rule ' + rule.id + ')' : '');
  } else if (approvedBy.kind === 'sandbox') {
    text = 'approved automatically in the sandbox' + (sandbox && sandbox !== 'off' ? ' (' + sandbox + ')' : '');
  } else {
    return;
  }
  card.approvedBy.textContent = text;
  card.approvedBy.hidden = false;
}

export function toolOutput(p: ToolOutput) {
  const card = openCard(p.turnId, p.callId);
  if (!card) return;
  card.output.hidden = false;
  card.liveOutput = true;
  const span = h('span', p.stream === 'stderr' ? 'stderr' : 'stdout', p.chunk);
  card.output.appendChild(span);
  card.output.scrollTop = card.output.scrollHeight;
  scrollToEnd();
}

/** Returns the card that now shows this result. */
export function toolResult(p: ShownResult, turnId?: string): Card {
  const id = (turnId || p.turnId) as string;
  const card = openCard(id, p.callId) || createCard(getTurn(id), id, p.callId, p.command || '');
  card.done = true;
  card.actions.hidden = true;
  setCardStatus(card, p.status);
  // An edit's applied diff is shown as hunks, not as text.
  if (!showEditResult(card, p) && !card.liveOutput && p.output) {
    card.output.textContent = p.output;
    card.output.hidden = false;
  }
  card.result.hidden = false;
  card.result.textContent =
    'Result: ' + (p.status === TOOL_STATUS.unknown ? 'unknown, the command may have run' : statusLabel(p.status)) +
    (typeof p.exitCode === 'number' ? ' (exit code ' + p.exitCode + ')' : '');
  card.result.className = 'tool-result ' + p.status;
  showEvidence(card, p.status, p.evidence);
  return card;
}

/**
 * What the command supervisor recorded about a call whose result is unknown
 * (mino/recovery, mino/history). Shown beside the result, which stays unknown.
 */
export function showEvidence(card: Card, status: ToolStatus, evidence: Evidence | undefined) {
  if (status !== TOOL_STATUS.unknown || !evidence || typeof evidence.summary !== 'string' || !evidence.summary) return;
  card.evidence.textContent = 'Evidence: ' + evidence.summary;
  card.evidence.hidden = false;
}
