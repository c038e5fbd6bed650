// A read (read_file, list_files, search) inside the workspace asks nothing:
// it is one row, "read src/main.rs · lines 1-200 of 812", which a click (or
// Enter or Space on it) opens to show its output, and closes again. Live and
// restored from history it is the same row. A read that asks (its path
// leaves the workspace) is an approval card like any call.
import { TOOL_STATUS, type ApprovalRequest, type HistoryCall, type ReadView, type ToolStarted, type ToolStatus } from '../src/generated/protocol';
import { cardKey, type Card } from './cards';
import { h, metaRow, nextId } from './dom';
import { oneLine } from './format';
import { scrollToEnd } from './scroll';
import { approvalModeLabel, statusLabel } from './statusLabels';
import { getTurn, type Turn } from './turns';

interface ReadRow {
  el: HTMLElement;
  toggle: HTMLButtonElement;
  what: HTMLElement;
  outcome: HTMLElement;
  output: HTMLElement;
  done: boolean;
}

/** A read's result to show: a live `mino/toolResult`, or a history call's result with its read. */
interface ReadResult {
  turnId?: string;
  callId: string;
  read?: ReadView;
  status: ToolStatus;
  output: string;
}

/** (turnId, callId) → that call's rows, oldest first (call ids repeat, as for cards). */
export const readRows = new Map<string, ReadRow[]>();
/** The longest path or pattern a row shows whole (its title shows all of it). */
const READ_PART_SHOWN = 80;

/** The `read` of a request, start, result or history call, when it is a well-formed one. */
export function readOf(p: { read?: ReadView } | null | undefined): ReadView | null {
  const r = p && p.read;
  return r && typeof r.tool === 'string' && typeof r.path === 'string' ? r : null;
}

/** A read shown as a row: one that asked nothing (its path stays in the workspace). */
export function isRowRead(p: { read?: ReadView }): boolean {
  const read = readOf(p);
  return !!read && !read.leavesWorkspace;
}


/** What a read asked for: `read src/main.rs`, `list *.rs in src`, `search /fn main/`. */
export function readWhat(read: ReadView): string {
  const here = !read.path || read.path === '.';
  const path = oneLine(read.path, READ_PART_SHOWN);
  const within = here ? '' : ' in ' + path;
  const pattern = typeof read.pattern === 'string' ? oneLine(read.pattern, READ_PART_SHOWN) : null;
  if (read.tool === 'read_file') {
    let lines = '';
    if (typeof read.endLine === 'number') lines = ' (lines ' + (read.startLine ?? 1) + '-' + read.endLine + ')';
    else if (typeof read.startLine === 'number') lines = ' (from line ' + read.startLine + ')';
    return 'read ' + path + lines;
  }
  if (read.tool === 'list_files') return pattern !== null ? 'list ' + pattern + within : 'list ' + (here ? '.' : path);
  if (read.tool === 'search') return 'search /' + (pattern ?? '') + '/' + within;
  return read.tool + ' ' + path;
}

/** What a read did, after its `what`: the server's summary, or why it did not. */
function readOutcome(read: ReadView, status: ToolStatus | null, output: string): string {
  const first = oneLine((typeof output === 'string' ? output.split('\n')[0] : '').trim(), 120);
  if (status === undefined || status === null) return 'reading…';
  if (status === TOOL_STATUS.success) return typeof read.summary === 'string' ? oneLine(read.summary, 120) : first;
  if (status === TOOL_STATUS.unavailable) return 'result unavailable: Mino stopped before it was saved';
  const label = statusLabel(status);
  return first ? label + ': ' + first : label;
}

function createReadRow(turn: Turn, turnId: string, callId: string, read: ReadView): ReadRow {
  const el = h('div', 'read-row');
  el.dataset.callId = callId;
  el.dataset.tool = read.tool;
  const toggle = h('button', 'read-toggle');
  toggle.type = 'button';
  toggle.setAttribute('aria-expanded', 'false');
  const output = h('pre', 'read-output');
  output.id = 'mino-el-' + nextId();
  output.hidden = true;
  toggle.setAttribute('aria-controls', output.id);
  const what = h('span', 'read-what', readWhat(read));
  const outcome = h('span', 'read-outcome');
  toggle.append(h('span', 'read-chevron'), what, h('span', 'read-sep', ' · '), outcome);
  // Opening a row shows what was read; it decides nothing.
  toggle.addEventListener('click', () => setReadExpanded(row, toggle.getAttribute('aria-expanded') !== 'true'));
  el.append(toggle, output);
  turn.body.appendChild(el);
  // Text after a read starts a new segment below it.
  turn.segment = null;
  const row: ReadRow = { el, toggle, what, outcome, output, done: false };
  const key = cardKey(turnId, callId);
  readRows.set(key, [...(readRows.get(key) || []), row]);
  return row;
}

function setReadExpanded(row: ReadRow, expanded: boolean) {
  row.toggle.setAttribute('aria-expanded', String(expanded));
  row.output.hidden = !expanded;
  row.el.classList.toggle('expanded', expanded);
  if (expanded) scrollToEnd();
}

/** The row of (turnId, callId) still waiting for its result, if any. */
function openReadRow(turnId: string, callId: string): ReadRow | undefined {
  const list = readRows.get(cardKey(turnId, callId));
  const row = list && list[list.length - 1];
  return row && !row.done ? row : undefined;
}

function setReadStatus(row: ReadRow, read: ReadView, status: ToolStatus | null, output: string) {
  row.el.dataset.status = status || 'running';
  row.outcome.textContent = readOutcome(read, status, output);
  const line = row.what.textContent + ' · ' + row.outcome.textContent;
  row.toggle.title = line + (status ? '. Click to show or hide what it returned.' : '');
  row.toggle.setAttribute('aria-label', line);
}

/** mino/toolStarted of a read inside the workspace: its row, reading. */
export function readStarted(p: ToolStarted): ReadRow {
  const read = readOf(p) as ReadView;
  const row = openReadRow(p.turnId, p.callId) || createReadRow(getTurn(p.turnId), p.turnId, p.callId, read);
  setReadStatus(row, read, null, '');
  scrollToEnd();
  return row;
}

/** A read's result (live or from history): the row's outcome, and its output for when it is opened. */
export function readResult(p: ReadResult, turnId?: string): ReadRow {
  const id = (turnId || p.turnId) as string;
  const read = readOf(p) as ReadView;
  const row = openReadRow(id, p.callId) || createReadRow(getTurn(id), id, p.callId, read);
  row.done = true;
  row.what.textContent = readWhat(read);
  setReadStatus(row, read, p.status, p.output);
  row.output.textContent = typeof p.output === 'string' && p.output ? p.output : '(no output)';
  scrollToEnd();
  return row;
}

/** A read from history: the row its live turn showed (closed). */
export function historyRead(turn: Turn, turnId: string, c: HistoryCall): ReadRow {
  const read = readOf(c) as ReadView;
  if (c.result) return readResult({ callId: c.callId, read, ...c.result }, turnId);
  const row = createReadRow(turn, turnId, c.callId, read);
  setReadStatus(row, read, null, '');
  return row;
}

/** The server stopped: a read still shown as reading did not finish here (it changed nothing). */
export function markReadsUnfinished() {
  for (const row of [...readRows.values()].flat()) {
    if (row.done) continue;
    row.done = true;
    row.el.dataset.status = 'unfinished';
    row.outcome.textContent = 'did not finish: the Mino server stopped (a read changes nothing)';
  }
}

/**
 * The approval card of a read whose path leaves the workspace: what it
 * would read, prominently, instead of a command's directory, environment
 * and limits. Nothing about the file is known before the approval.
 */
export function showReadProposal(card: Card, p: Pick<ApprovalRequest, 'approvalMode'> | HistoryCall, read: ReadView) {
  const name = card.el.querySelector('.tool-name');
  if (name) name.textContent = read.tool;
  card.el.querySelectorAll('.read-view').forEach((n) => n.remove());
  const section = h('div', 'read-view');
  const warning = h('div', 'edit-warning read-outside', 'Reads outside the workspace: ' + read.path);
  warning.setAttribute('role', 'note');
  section.appendChild(warning);
  const dl = h('dl', 'tool-meta');
  metaRow(dl, 'Path', read.path, 'read-path');
  if (typeof read.pattern === 'string') metaRow(dl, read.tool === 'search' ? 'Regular expression' : 'Pattern', read.pattern, 'read-pattern');
  if (typeof read.endLine === 'number') metaRow(dl, 'Lines', (read.startLine ?? 1) + '-' + read.endLine, 'read-lines');
  if ('approvalMode' in p && p.approvalMode) metaRow(dl, 'Approval mode', approvalModeLabel(p.approvalMode), 'approval-mode-row');
  section.appendChild(dl);
  section.appendChild(h('div', 'read-note', 'Mino sees what this reads only if you approve.'));
  card.el.insertBefore(section, card.actions);
}
