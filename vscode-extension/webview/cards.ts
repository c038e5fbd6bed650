// Tool call cards: one per call, found by (turn, call) as the server pairs
// its records with calls, and the badge that says where the call is.
import type { EditView } from '../src/generated/protocol';
import { h, nextId } from './dom';
import { statusLabel, type CardStatus } from './statusLabels';
import type { Turn } from './turns';

/**
 * `hunks`: an edit waiting for approval whose diff has two hunks or more, and those the person keeps.
 */
export interface Card {
  el: HTMLElement;
  badge: HTMLElement;
  command: HTMLElement;
  actions: HTMLElement;
  output: HTMLElement;
  result: HTMLElement;
  evidence: HTMLElement;
  approvedBy: HTMLElement;
  actionError: HTMLElement;
  liveOutput: boolean;
  done: boolean;
  hunks: { count: number; kept: Set<number> } | null;
  edit: EditView | null;
}

/**
 * (turnId, callId) → that call's cards, oldest first. Models reuse call ids
 * (a later response, or a later turn, numbers its calls call_0, … again), so
 * a notification is about the newest card of its (turn, call) still without
 * a result, as the server pairs records with calls; a call id alone could
 * show one command in a card whose Approve runs another.
 */
export const cards = new Map<string, Card[]>();
export const cardKey = (turnId: string, callId: string) => turnId + '\n' + callId;
/** The card of (turnId, callId) still waiting for its result, if any. */
export function openCard(turnId: string, callId: string): Card | undefined {
  const list = cards.get(cardKey(turnId, callId));
  const card = list && list[list.length - 1];
  return card && !card.done ? card : undefined;
}
export function allCards(): Card[] {
  return [...cards.values()].flat();
}

export function createCard(turn: Turn, turnId: string, callId: string, command: string): Card {
  const el = h('div', 'tool-card');
  el.dataset.callId = callId;
  const head = h('div', 'tool-head');
  head.appendChild(h('span', 'tool-name', 'bash'));
  const badge = h('span', 'badge');
  head.appendChild(badge);
  el.appendChild(head);
  const commandEl = h('pre', 'tool-command', command);
  commandEl.id = 'mino-el-' + nextId();
  // A card made from a result alone (a call a deny rule refused before
  // anything was asked) shows the command the result names, and its output
  // names the rule; a result without one (a call not on record) hides the
  // empty box.
  commandEl.hidden = !command;
  el.appendChild(commandEl);
  const actions = h('div', 'tool-actions');
  actions.hidden = true;
  const output = h('pre', 'tool-output');
  output.hidden = true;
  const result = h('div', 'tool-result');
  result.hidden = true;
  const evidence = h('div', 'tool-evidence');
  evidence.hidden = true;
  const approvedBy = h('div', 'tool-approved-by');
  approvedBy.hidden = true;
  // A refusal of the card's answer (e.g. a rule the server will not keep), shown where it was given.
  const actionError = h('div', 'card-error');
  actionError.setAttribute('role', 'alert');
  actionError.hidden = true;
  el.append(actions, actionError, approvedBy, output, result, evidence);
  turn.body.appendChild(el);
  // Text after a tool call starts a new segment below the card.
  turn.segment = null;
  const card: Card = { el, badge, command: commandEl, actions, output, result, evidence, approvedBy, actionError, liveOutput: false, done: false, hunks: null, edit: null };
  const key = cardKey(turnId, callId);
  cards.set(key, [...(cards.get(key) || []), card]);
  return card;
}

export function setCardStatus(card: Card, status: CardStatus) {
  card.el.dataset.status = status;
  // Dropping hunks means something only while the edit waits for its answer.
  for (const box of card.el.querySelectorAll<HTMLInputElement>('.hunk-keep-box')) box.disabled = status !== 'waiting';
  card.badge.textContent = statusLabel(status);
  card.badge.className = 'badge ' + status;
}

export function setCardControlsDisabled(card: Card, disabled: boolean) {
  for (const control of card.actions.querySelectorAll<HTMLButtonElement | HTMLInputElement>('button, input')) {
    control.disabled = disabled || control.dataset.keepDisabled === 'true';
  }
}
