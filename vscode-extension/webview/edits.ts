// An edit_file / write_file call's card shows its file (path, new or not,
// size, a prominent warning when it leaves the workspace) and its hunks;
// "Review diff" asks the host to open VS Code's diff editor. The result
// replaces the proposed hunks with the applied diff.
import { DECISION, type ApprovalRequest, type EditView } from '../src/generated/protocol';
import type { HostMessage } from '../src/messages';
import { openCard, type Card } from './cards';
import { deliberateButton } from './deliberate';
import { h, metaRow } from './dom';
import { formatBytes } from './format';
import { post } from './host';
import { approvalModeLabel } from './statusLabels';

interface DiffLine {
  kind: 'add' | 'del' | 'ctx' | 'note';
  text: string;
  oldNo?: number;
  newNo?: number;
}

interface Hunk {
  header: string;
  lines: DiffLine[];
}

/** The Keep checkboxes of an edit waiting for approval: `onChange` hears every toggle. */
interface HunkChoice {
  onChange(index: number, keep: boolean): void;
}

/** Hunk lines drawn in a card at most; "Review diff" shows a longer diff whole. */
const MAX_DIFF_LINES_SHOWN = 2000;

/** The request's or result's `edit`, when it is a well-formed one. */
export function editOf(p: { edit?: EditView } | null | undefined): EditView | null {
  const e = p && p.edit;
  return e && typeof e.path === 'string' && typeof e.diff === 'string' ? e : null;
}

export function editAsks(edit: EditView): string {
  return 'Mino asks to ' + (edit.newFile ? 'create' : 'edit') + ': ' + edit.path + (edit.leavesWorkspace ? ' (outside the workspace)' : '');
}

/**
 * A unified diff as hunks: `{header, lines: [{kind, text, oldNo?, newNo?}]}`.
 * The `---`/`+++` header is left out; "\ No newline at end of file" is kept
 * as a note line.
 */
function parseHunks(diff: string): Hunk[] {
  const hunks: Hunk[] = [];
  let hunk: Hunk | null = null;
  let oldNo = 0;
  let newNo = 0;
  const lines = diff.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  for (const line of lines) {
    const m = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (m) {
      oldNo = Number(m[1]);
      newNo = Number(m[2]);
      // A hunk starting at line 0 (an empty side) has no lines on that side.
      if (oldNo === 0) oldNo = 1;
      if (newNo === 0) newNo = 1;
      hunk = { header: line, lines: [] };
      hunks.push(hunk);
    } else if (!hunk) {
      continue;
    } else if (line.startsWith('+')) {
      hunk.lines.push({ kind: 'add', text: line.slice(1), newNo: newNo++ });
    } else if (line.startsWith('-')) {
      hunk.lines.push({ kind: 'del', text: line.slice(1), oldNo: oldNo++ });
    } else if (line.startsWith('\\')) {
      hunk.lines.push({ kind: 'note', text: line });
    } else {
      hunk.lines.push({ kind: 'ctx', text: line.slice(1), oldNo: oldNo++, newNo: newNo++ });
    }
  }
  return hunks;
}

/**
 * The hunks of `diff` as a table: old and new line numbers, the sign, the
 * text. With `choice` (an edit waiting for approval, of two hunks or more),
 * each hunk's header has a "Keep" checkbox, checked at first; `choice.onChange`
 * hears every toggle. A checkbox decides nothing: it only narrows what
 * Approve approves.
 */
function renderDiff(diff: string, choice?: HunkChoice): HTMLElement {
  const box = h('div', 'diff-hunks');
  const hunks = parseHunks(diff);
  if (!hunks.length) {
    box.appendChild(h('div', 'diff-empty', 'No changed lines.'));
    return box;
  }
  const table = h('table', 'diff-table');
  let shown = 0;
  let total = 0;
  for (const hunk of hunks) total += hunk.lines.length + 1;
  for (const [index, hunk] of hunks.entries()) {
    if (shown >= MAX_DIFF_LINES_SHOWN) break;
    const head = h('tr', 'diff-hunk-header');
    const th = h('td', null, hunk.header);
    th.colSpan = 4;
    if (choice && hunks.length > 1) {
      const label = h('label', 'hunk-keep');
      const box = h('input', 'hunk-keep-box');
      box.type = 'checkbox';
      box.checked = true;
      box.dataset.hunk = String(index);
      box.setAttribute('aria-label', 'Keep hunk ' + (index + 1) + ' of ' + hunks.length + ' (' + hunk.header + ')');
      box.addEventListener('change', () => choice.onChange(index, box.checked));
      label.append(box, ' Keep');
      th.textContent = '';
      const row = h('div', 'hunk-header-row');
      row.append(label, h('span', 'hunk-header-text', hunk.header));
      th.appendChild(row);
      head.classList.add('selectable');
    }
    head.appendChild(th);
    head.dataset.hunk = String(index);
    table.appendChild(head);
    shown++;
    for (const line of hunk.lines) {
      if (shown >= MAX_DIFF_LINES_SHOWN) break;
      const tr = h('tr', 'diff-line ' + line.kind);
      tr.dataset.hunk = String(index);
      tr.append(
        h('td', 'diff-no old', line.oldNo === undefined ? '' : line.oldNo),
        h('td', 'diff-no new', line.newNo === undefined ? '' : line.newNo),
        h('td', 'diff-sign', line.kind === 'add' ? '+' : line.kind === 'del' ? '-' : ''),
        h('td', 'diff-text', line.text),
      );
      table.appendChild(tr);
      shown++;
    }
  }
  box.appendChild(table);
  if (shown < total) box.appendChild(h('div', 'diff-more', (total - shown) + ' more lines not shown here: Review diff shows the whole change.'));
  return box;
}

/** The card's edit section (created on first use), before its actions. */
function editSection(card: Card): HTMLElement {
  const found = card.el.querySelector<HTMLElement>('.edit-view');
  if (found) return found;
  const section = h('div', 'edit-view');
  card.el.insertBefore(section, card.actions);
  return section;
}

/** Shows the diff `diff` in the card's edit section under `label`, replacing the one shown. */
export function showEditDiff(card: Card, label: string, diff: string, review: (() => void) | null, choice?: HunkChoice) {
  const section = editSection(card);
  const old = section.querySelector('.edit-diff');
  if (old) old.remove();
  const box = h('div', 'edit-diff');
  const bar = h('div', 'edit-diff-bar');
  bar.appendChild(h('span', 'edit-diff-label', label));
  // Opening the diff editor decides nothing, and like every card button it
  // never takes focus and answers only a deliberate click or key.
  const keep = old && old.querySelector<HTMLElement>('.review-diff');
  if (keep) bar.appendChild(keep);
  else if (review) bar.appendChild(deliberateButton('secondary review-diff', 'Review diff', review));
  box.append(bar, renderDiff(diff, choice));
  section.appendChild(box);
}

/** The approval card of an edit: where it writes, what it becomes, the hunks. */
export function showEditProposal(card: Card, p: ApprovalRequest, edit: EditView) {
  const name = card.el.querySelector('.tool-name');
  if (name && typeof edit.tool === 'string') name.textContent = edit.tool;
  const section = editSection(card);
  section.textContent = '';
  if (edit.leavesWorkspace) {
    const warning = h('div', 'edit-warning', 'Writes outside the workspace: ' + edit.path);
    warning.setAttribute('role', 'note');
    section.appendChild(warning);
  }
  if (typeof edit.protected === 'string') {
    // Asked whatever rule or mode is in force; the server says why.
    const warning = h('div', 'edit-warning edit-protected', 'Protected path: ' + edit.protected);
    warning.setAttribute('role', 'note');
    section.appendChild(warning);
  }
  const dl = h('dl', 'tool-meta');
  metaRow(dl, 'Path', edit.path, 'edit-path');
  metaRow(dl, 'File', edit.newFile ? 'new file (created)' : 'existing file (changed)', 'edit-file');
  metaRow(dl, 'Size after', formatBytes(edit.size), 'edit-size');
  if (p.approvalMode) metaRow(dl, 'Approval mode', approvalModeLabel(p.approvalMode), 'approval-mode-row');
  section.appendChild(dl);
  // Hunks the person may drop before approving: Approve then approves the kept ones alone.
  const count = parseHunks(edit.diff).length;
  card.hunks = count > 1 ? { count, kept: new Set(Array.from({ length: count }, (_, i) => i)) } : null;
  const review = () => {
    const kept = keptHunks(card);
    post({ type: 'reviewEdit', turnId: p.turnId, callId: p.callId, ...(kept ? { acceptedHunks: kept } : {}) });
  };
  const choice: HunkChoice | undefined = card.hunks ? { onChange: (index, keep) => {
    if (!card.hunks) return;
    if (keep) card.hunks.kept.add(index);
    else card.hunks.kept.delete(index);
    showHunkChoice(card, edit);
    // The diff editor, if open, shows the kept hunks alone too.
    const kept = keptHunks(card);
    post({ type: 'hunksKept', turnId: p.turnId, callId: p.callId, ...(kept ? { kept } : {}) });
  } } : undefined;
  card.edit = edit;
  showEditDiff(card, 'Proposed change', edit.diff, review, choice);
}

/** Hunks kept or rejected in the diff editor (its lenses): the card's checkboxes follow. */
export function onHunks(msg: Extract<HostMessage, { type: 'hunks' }>) {
  const card = openCard(msg.turnId, msg.callId);
  if (!card || !card.hunks || !card.edit || card.el.dataset.status !== 'waiting') return;
  const hunks = card.hunks;
  const kept = Array.isArray(msg.kept) ? msg.kept : Array.from({ length: hunks.count }, (_, i) => i);
  hunks.kept = new Set(kept.filter((i: number) => Number.isInteger(i) && i >= 0 && i < hunks.count));
  for (const box of card.el.querySelectorAll<HTMLInputElement>('.hunk-keep-box')) {
    box.checked = hunks.kept.has(Number(box.dataset.hunk));
  }
  showHunkChoice(card, card.edit);
}

/** The kept hunks (ascending) when some were dropped; null when the whole edit is kept. */
export function keptHunks(card: Card): number[] | null {
  if (!card.hunks || card.hunks.kept.size === card.hunks.count) return null;
  return [...card.hunks.kept].sort((a, b) => a - b);
}

/** The card's question and Approve say how much of the edit Approve writes. */
function showHunkChoice(card: Card, edit: EditView) {
  if (!card.hunks) return;
  const { count, kept } = card.hunks;
  const question = card.actions.querySelector('.question');
  const approve = card.actions.querySelector<HTMLButtonElement>('.approve');
  let note = card.actions.querySelector<HTMLElement>('.hunk-note');
  if (!note) {
    note = h('span', 'hunk-note');
    note.setAttribute('role', 'status');
    card.actions.insertBefore(note, card.actions.querySelector('.more-actions'));
  }
  const rulesOffered = card.actions.querySelectorAll<HTMLButtonElement>('.open-form');
  // A rejected hunk stays in sight, struck through.
  for (const tr of card.el.querySelectorAll<HTMLElement>('.edit-diff tr[data-hunk]')) {
    tr.classList.toggle('rejected', !kept.has(Number(tr.dataset.hunk)));
  }
  if (kept.size === count) {
    if (question) question.textContent = edit.newFile ? 'Create this file?' : 'Apply this edit?';
    note.textContent = '';
    note.hidden = true;
  } else {
    if (question) question.textContent = 'Apply ' + kept.size + ' of ' + count + ' hunks of this edit?';
    note.textContent = kept.size === 0
      ? 'No hunk kept: Deny to write nothing.'
      : 'Approve writes the kept hunks alone; the others are rejected. A rule always covers the whole edit.';
    note.hidden = false;
  }
  if (approve) {
    approve.dataset.keepDisabled = kept.size === 0 ? 'true' : '';
    approve.disabled = kept.size === 0 || card.el.dataset.status !== 'waiting';
  }
  // A rule approves whole edits: offered only while the whole edit is kept.
  for (const button of rulesOffered) {
    if (!button.classList.contains(DECISION.allowSession) && !button.classList.contains(DECISION.allowWorkspace)) continue;
    if (button.dataset.ruleless === 'true') continue;
    button.disabled = kept.size !== count || card.el.dataset.status !== 'waiting';
    button.dataset.keepDisabled = kept.size !== count ? 'true' : '';
  }
}

/**
 * A result that carries the applied diff (an edit's success): the card
 * shows what was done and the applied hunks instead of the diff as text.
 */
export function showEditResult(card: Card, p: { diff?: string; tool?: string; output?: string }): boolean {
  if (typeof p.diff !== 'string') return false;
  if (typeof p.tool === 'string') {
    const name = card.el.querySelector('.tool-name');
    if (name) name.textContent = p.tool;
  }
  const summary = typeof p.output === 'string' ? p.output.split('\n\n')[0] : '';
  card.output.textContent = summary;
  card.output.hidden = !summary;
  showEditDiff(card, 'Applied change', p.diff, null);
  return true;
}
