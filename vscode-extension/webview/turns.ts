// The transcript's turns: the question, the answer as it streams (taken
// back on a retry), notices inside the turn, its status and usage, and the
// links that act on an ended turn.
import { TURN_STATUS, type CompactionEnded, type CompactionStarted, type Retrying, type TokenUsage, type TurnStatus } from '../src/generated/protocol';
import { announce } from './announce';
import { h, transcript } from './dom';
import { formatUsage } from './format';
import { linkButton } from './host';
import { questionImages, takeSentImages, type QuestionImage } from './questionImages';
import { endKeeper, scrollToEnd } from './scroll';
import { dirtySegments, newSegment, resetSegment, scheduleRender, type Segment } from './segments';
import { TURN_LABELS } from './statusLabels';

const RETRYING_NOTICE = 'Connection to the model failed; retrying…';
const COMPACTING_NOTICE = 'Compacting the conversation…';

/**
 * The text of the model's current response (since mino/turnStarted or the
 * turn's last mino/toolResult): where it starts in `text` and in each
 * segment it was written to, so that mino/retrying can take it back.
 */
interface ResponseText {
  start: number;
  parts: { seg: Segment; start: number }[];
}

export interface Turn {
  el: HTMLElement;
  body: HTMLElement;
  segment: Segment | null;
  statusEl: HTMLElement;
  text: string;
  response: ResponseText | null;
  retryNotice: HTMLElement | null;
  compactionNotice?: HTMLElement;
}

export const turns = new Map<string, Turn>();

export function announceTurnEnd(turn: Turn, status: TurnStatus, reason?: string) {
  // Block by block from the DOM (not innerText: off-screen chunks are not laid out).
  const answer = [...turn.body.querySelectorAll('.md-chunk > *, .md-tail > *')]
    .map((el) => (el.textContent || '').trim())
    .filter(Boolean)
    .join('\n');
  if (status === TURN_STATUS.completed) announce(answer ? 'Mino answered: ' + answer : 'Mino finished.');
  else announce('Turn ' + (TURN_LABELS[status] || status) + (reason ? ': ' + reason : '.') + (answer ? ' ' + answer : ''));
}

export function createTurn(turnId: string, inputText: string, images?: QuestionImage[] | null): Turn {
  const el = h('article', 'turn');
  el.dataset.turnId = turnId;
  const user = h('div', 'msg user');
  user.appendChild(h('div', 'who', 'You'));
  user.appendChild(h('div', 'text', inputText));
  const shown = images || takeSentImages(turnId);
  if (shown && shown.length) user.appendChild(questionImages(shown));
  const assistant = h('div', 'msg assistant');
  assistant.appendChild(h('div', 'who', 'Mino'));
  const body = h('div', 'body');
  assistant.appendChild(body);
  const statusLine = h('div', 'turn-status');
  el.append(user, assistant, statusLine);
  transcript.appendChild(el);
  endKeeper.observe(el);
  const turn: Turn = { el, body, segment: null, statusEl: statusLine, text: '', response: null, retryNotice: null };
  turns.set(turnId, turn);
  return turn;
}

/**
 * An ended turn's "Rewind to here": the host asks for the plan and
 * confirms it (Cancel is the default) before anything is written. And
 * "Fork from here": the host continues in a new session holding the turns
 * up to this one; it writes no file, so it asks nothing, and only a click
 * (or a key on the focused link) triggers it, never focus by default.
 */
export function addTurnActions(turn: Turn, turnId: string) {
  if (turn.el.querySelector('.turn-actions')) return;
  const actions = h('div', 'turn-actions');
  const rewind = linkButton('Rewind to here', { type: 'rewind', turnId }, 'rewind-turn');
  rewind.title = "Undo Mino's edits of this turn and every later one (you see the plan first)";
  actions.appendChild(rewind);
  const fork = linkButton('Fork from here', { type: 'fork', turnId }, 'fork-turn');
  fork.title = 'Continue in a new session holding the conversation up to this turn; this session is kept as it is';
  actions.append(' ', fork);
  turn.el.querySelector('.msg.user')?.appendChild(actions);
}

/** A turn a rewind took back: still shown, marked, and no longer in the model's context. */
export function markRewound(turn: Turn) {
  turn.el.classList.add('rewound');
  turn.el.querySelector('.turn-actions')?.remove();
  const note = h('div', 'turn-notice rewound-note', "Rewound: Mino's edits were undone; this turn is no longer in the model's context.");
  turn.el.insertBefore(note, turn.el.firstChild);
}

export function getTurn(turnId: string): Turn {
  return turns.get(turnId) || createTurn(turnId, '');
}

export function appendText(turn: Turn, delta: string) {
  if (!turn.segment) turn.segment = newSegment(turn.body);
  const response = turn.response || (turn.response = { start: turn.text.length, parts: [] });
  const seg = turn.segment;
  if (!response.parts.some((p) => p.seg === seg)) {
    response.parts.push({ seg, start: seg.source.length });
  }
  seg.source += delta;
  turn.text += delta;
  scheduleRender(seg);
}

/** A new model response begins (mino/turnStarted, mino/toolResult). */
export function startResponse(turn: Turn) {
  turn.response = null;
}

/**
 * mino/retrying: the text of the current response is void (the retried
 * response streams it again); take it back and say why.
 */
export function retrying(p: Retrying) {
  const turn = getTurn(p.turnId);
  const response = turn.response;
  if (response) {
    for (const part of response.parts) {
      const kept = part.seg.source.slice(0, part.start);
      if (kept) {
        part.seg.source = kept;
        resetSegment(part.seg);
      } else {
        part.seg.el.remove();
        dirtySegments.delete(part.seg);
        if (turn.segment === part.seg) turn.segment = null;
      }
    }
    turn.text = turn.text.slice(0, response.start);
    turn.response = null;
  }
  // One notice per turn, moved below what is left; the retried text follows it.
  const notice = turn.retryNotice || h('div', 'turn-notice retrying');
  notice.setAttribute('role', 'status');
  notice.textContent = RETRYING_NOTICE + (p.attempt > 1 ? ' (attempt ' + p.attempt + ')' : '');
  notice.title = p.reason || '';
  turn.retryNotice = notice;
  turn.body.appendChild(notice);
  turn.segment = null;
  scrollToEnd();
}

/**
 * mino/compactionStarted/Ended inside a turn (automatic, or after
 * context_length_exceeded): one notice in the transcript, saying first that
 * the summary is being made, then what it did.
 */
export function compactionNotice(p: CompactionStarted | CompactionEnded, ended: boolean) {
  const turn = getTurn(p.turnId as string);
  const notice = turn.compactionNotice || h('div', 'turn-notice compaction');
  notice.setAttribute('role', 'status');
  if (!ended) {
    notice.textContent = COMPACTING_NOTICE;
  } else if ('compacted' in p && p.compacted) {
    const turns = (n: number) => (n === 1 ? '1 turn' : n + ' turns');
    const kept = p.keptTurns > 0 ? '; ' + turns(p.keptTurns) + ' still sent as they were' : '';
    notice.textContent = 'Compacted: ' + turns(p.summarizedTurns) + ' summarised by the model' + kept +
      '. Later requests send the summary instead.';
  } else {
    notice.textContent = 'Not compacted: ' + (('reason' in p && p.reason) || 'the server gave no reason') + '.';
  }
  turn.compactionNotice = notice;
  turn.body.appendChild(notice);
  turn.segment = null;
  if (ended) announce(notice.textContent);
  scrollToEnd();
}

export function setTurnStatus(turn: Turn, status: TurnStatus | null, reason?: string) {
  turn.el.dataset.status = status || 'running';
  turn.statusEl.textContent = '';
  if (!status) return;
  if (status !== TURN_STATUS.completed || reason) {
    const label = TURN_LABELS[status] || status;
    turn.statusEl.textContent = 'Turn ' + label + (reason ? ': ' + reason : '');
    turn.statusEl.className = 'turn-status ' + status;
  }
}

/** The turn's tokens, after it (mino/turnEnded, mino/history). */
export function showTurnUsage(turn: Turn, usage: TokenUsage | null | undefined) {
  const text = formatUsage(usage);
  let el = turn.el.querySelector('.turn-usage');
  if (!text) {
    if (el) el.remove();
    return;
  }
  if (!el) {
    el = h('div', 'turn-usage');
    turn.el.appendChild(el);
  }
  el.textContent = text;
}
