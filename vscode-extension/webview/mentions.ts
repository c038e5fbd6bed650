// `@` typed at the start of a word opens a menu of what can be added: the
// editor's selection, the active file, the workspace's files whose path
// holds what follows the `@` (the host lists them). Arrow keys move, Enter
// or Tab adds the highlighted one as a chip (the `@word` leaves the text),
// Escape closes the menu. Adding context decides nothing and sends nothing.

import type { Mention } from '../src/messages';
import { $, focusInput, h, input } from './dom';
import { post } from './host';

const mentionList = $('mentions');
/** The menu open for the `@word` at `start`: its choices and the highlighted one. */
let mention: { start: number; query: string; items: Mention[]; active: number } | null = null;

/** The `@word` just before the caret, if the caret ends one. */
function mentionAtCaret(): { start: number; query: string } | null {
  if (input.selectionStart !== input.selectionEnd) return null;
  const before = input.value.slice(0, input.selectionStart as number);
  const m = /(?:^|\s)@([^\s@]*)$/.exec(before);
  return m ? { start: before.length - m[1].length - 1, query: m[1] } : null;
}

function updateMention() {
  const at = mentionAtCaret();
  if (!at) return closeMentions();
  if (mention && mention.start === at.start && mention.query === at.query) return;
  mention = { start: at.start, query: at.query, items: mention && mention.start === at.start ? mention.items : [], active: 0 };
  post({ type: 'mentions', query: at.query });
}

export function showMentions(query: string, items: Mention[]) {
  // Only the answer for what is typed now.
  if (!mention || mention.query !== query) return;
  mention.items = items;
  mention.active = 0;
  renderMentions();
}

function renderMentions() {
  mentionList.textContent = '';
  if (!mention || mention.items.length === 0) {
    mentionList.hidden = true;
    input.setAttribute('aria-expanded', 'false');
    input.removeAttribute('aria-activedescendant');
    return;
  }
  const active = mention.active;
  mention.items.forEach((item, i) => {
    const li = h('li', 'mention ' + item.kind, item.label);
    li.id = 'mention-' + i;
    li.setAttribute('role', 'option');
    li.setAttribute('aria-selected', String(i === active));
    li.title = item.kind === 'file' ? 'Add ' + item.path + ' to the question' : item.label;
    // Keeps focus in the input.
    li.addEventListener('mousedown', (e) => e.preventDefault());
    li.addEventListener('click', () => pickMention(i));
    mentionList.appendChild(li);
  });
  mentionList.hidden = false;
  input.setAttribute('aria-expanded', 'true');
  input.setAttribute('aria-activedescendant', 'mention-' + mention.active);
  mentionList.children[mention.active]?.scrollIntoView({ block: 'nearest' });
}

function closeMentions() {
  mention = null;
  renderMentions();
}

function pickMention(i: number) {
  if (!mention) return;
  const item = mention.items[i];
  if (!item) return;
  // The `@word` was a way to choose, not part of the question.
  const end = input.selectionStart as number;
  input.value = input.value.slice(0, mention.start) + input.value.slice(end);
  input.setSelectionRange(mention.start, mention.start);
  closeMentions();
  if (item.kind === 'file') post({ type: 'addContext', source: 'file', path: item.path });
  else post({ type: 'addContext', source: item.kind });
  focusInput();
}

/** The menu's keys; true when the key was the menu's. */
export function mentionKey(e: KeyboardEvent): boolean {
  if (!mention || mentionList.hidden || e.isComposing) return false;
  const n = mention.items.length;
  if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
    mention.active = (mention.active + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
    renderMentions();
  } else if ((e.key === 'Enter' && !e.shiftKey) || e.key === 'Tab') {
    pickMention(mention.active);
  } else if (e.key === 'Escape') {
    // Closes the menu only: the view's Escape (cancel the turn) is not reached.
    e.stopPropagation();
    closeMentions();
  } else {
    return false;
  }
  e.preventDefault();
  return true;
}

input.addEventListener('input', updateMention);
input.addEventListener('click', updateMention);
input.addEventListener('blur', () => closeMentions());
