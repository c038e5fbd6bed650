// Files and selections the person adds (read by the host through the VS Code
// API) are shown as chips and sent as part of the question, each as a fenced
// block under a line naming its path, so they are in the history as asked.

import type { ContextItem, ContextSource } from '../src/messages';
import { showComposerError } from './composerStatus';
import { $, focusInput, h } from './dom';
import { post } from './host';

/** What is added to the question being written, in the order added. */
export const contextItems: ContextItem[] = [];
const chips = $('chips');

function contextLabel(item: ContextItem): string {
  if (item.startLine === undefined) return item.path;
  return item.path + ':' + item.startLine + (item.endLine !== undefined && item.endLine !== item.startLine ? '-' + item.endLine : '');
}

/** The fence is longer than any run of backticks in the text, so the text cannot close it. */
function fenceFor(text: string): string {
  let longest = 0;
  for (const m of text.matchAll(/`+/g)) longest = Math.max(longest, m[0].length);
  return '`'.repeat(Math.max(3, longest + 1));
}

/** The question as sent: the text, then each item as a fenced block under a line naming it. */
export function questionWithContext(question: string, items: ContextItem[]): string {
  if (items.length === 0) return question;
  const blocks = items.map((item) => {
    const fence = fenceFor(item.text);
    const body = item.text.endsWith('\n') ? item.text : item.text + '\n';
    const where = item.startLine === undefined ? '' : ', lines ' + item.startLine + '-' + (item.endLine ?? item.startLine);
    return 'Context: ' + item.path + where + '\n' + fence + (item.language || '') + '\n' + body + fence;
  });
  return question + '\n\n' + blocks.join('\n\n');
}

export function addContextItems(items: ContextItem[]) {
  for (const item of items) {
    if (!item || typeof item.path !== 'string' || typeof item.text !== 'string') continue;
    // The same file or range twice would only repeat it.
    const label = contextLabel(item);
    if (contextItems.some((c) => contextLabel(c) === label)) continue;
    contextItems.push(item);
  }
  showComposerError(null);
  renderChips();
}

export function renderChips() {
  chips.textContent = '';
  contextItems.forEach((item, i) => {
    const label = contextLabel(item);
    const chip = h('li', 'chip');
    chip.title = label;
    chip.appendChild(h('span', 'chip-label', label));
    const remove = h('button', 'chip-remove', '×');
    remove.type = 'button';
    remove.setAttribute('aria-label', 'Remove ' + label);
    remove.addEventListener('click', () => {
      contextItems.splice(i, 1);
      renderChips();
      focusInput();
    });
    chip.appendChild(remove);
    chips.appendChild(chip);
  });
  chips.hidden = contextItems.length === 0;
}

/** The question was accepted: its context went with it. */
export function contextSent() {
  contextItems.length = 0;
  renderChips();
}

const CONTEXT_BUTTONS: [string, ContextSource][] = [['add-file', 'activeFile'], ['add-selection', 'selection'], ['add-files', 'pick']];
for (const [id, source] of CONTEXT_BUTTONS) {
  $(id).addEventListener('click', () => post({ type: 'addContext', source }));
}
