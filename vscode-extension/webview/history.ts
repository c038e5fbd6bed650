// A session's history (mino/history) as the transcript: each turn as its
// live view left it, the older ones rendered only when they come near.
import type { HistoryCall, HistoryItem, HistoryResult, HistoryTurn } from '../src/generated/protocol';
import { cardKey, cards, createCard, setCardStatus } from './cards';
import { updateComposer } from './composerStatus';
import { h, transcript } from './dom';
import { editOf, showEditDiff } from './edits';
import { post } from './host';
import { setProgress } from './progress';
import { historyRead, isRowRead, readOf, readRows, showReadProposal } from './reads';
import { endKeeper, followEndAgain, scrollToEnd } from './scroll';
import { dirtySegments, EAGER_HISTORY_TURNS, lazyObserver, renderLater, renderNow } from './segments';
import { showInstructions, showSessionUsage } from './sessionHeader';
import { callFacts, showApprovedBy, toolResult } from './toolCards';
import { addTurnActions, appendText, createTurn, markRewound, setTurnStatus, showTurnUsage, startResponse, turns, type Turn } from './turns';
import { state } from './viewState';

export function renderHistory(history: HistoryResult | null) {
  showInstructions((history && history.instructionFiles) || []);
  transcript.textContent = '';
  lazyObserver.disconnect();
  endKeeper.disconnect();
  endKeeper.observe(transcript);
  turns.clear();
  cards.clear();
  readRows.clear();
  dirtySegments.clear();
  state.runningTurnId = null;
  followEndAgain();
  showSessionUsage(null);
  if (!history) return updateComposer();
  history.turns.forEach((t, index) => {
    const turn = createTurn(t.turnId, t.input, Array.isArray(t.images) ? t.images : null);
    // Older turns are rendered when they come near the screen; until then
    // their text is there as written.
    const lazy = index < history.turns.length - EAGER_HISTORY_TURNS;
    for (const item of historyItems(t)) {
      if (item.type === 'text' && typeof item.text === 'string' && item.text) {
        appendText(turn, item.text);
        if (lazy && turn.segment) renderLater(turn.segment);
        // History text is settled: a later mino/retrying voids only live text.
        startResponse(turn);
      } else if (item.type === 'call' && item.call && isRowRead(item.call)) {
        historyRead(turn, t.turnId, item.call);
      } else if (item.type === 'call' && item.call) {
        historyCard(turn, t.turnId, item.call);
      } else if (item.type === 'notice' && typeof item.text === 'string') {
        turn.body.appendChild(h('div', 'turn-notice', item.text));
        turn.segment = null;
      }
    }
    startResponse(turn);
    setTurnStatus(turn, t.status, t.reason);
    showTurnUsage(turn, t.usage);
    if (t.rewound) markRewound(turn);
    else if (t.status) addTurnActions(turn, t.turnId);
    if (!t.status) state.runningTurnId = t.turnId;
  });
  showSessionUsage(history.usage);
  renderNow();
  setProgress(state.runningTurnId ? 'thinking' : 'idle');
  updateComposer();
  // Whatever the emptied transcript's scroll events said, a new history opens at its end.
  scrollToEnd(true);
}

/**
 * A history turn's content in the order it happened (`items`); from a
 * server without them, its text, then its calls, then its notices.
 */
function historyItems(t: HistoryTurn): HistoryItem[] {
  if (Array.isArray(t.items)) return t.items;
  return [
    { type: 'text', text: t.text },
    ...(t.calls || []).map((call) => ({ type: 'call' as const, call })),
    ...(t.notices || []).map((text) => ({ type: 'notice' as const, text })),
  ];
}

/** A call from history, as its card looked live: facts, result, who approved it. */
function historyCard(turn: Turn, turnId: string, c: HistoryCall) {
  const card = createCard(turn, turnId, c.callId, c.command);
  const read = readOf(c);
  if (read) showReadProposal(card, c, read);
  else card.el.insertBefore(callFacts(c), card.actions);
  if (c.result) toolResult({ callId: c.callId, command: c.command, tool: c.tool, evidence: c.evidence, ...c.result }, turnId);
  else setCardStatus(card, 'running');
  showApprovedBy(card, c.approvedBy, c.sandbox);
  // An edit written in an earlier view: its Review diff shows the recorded
  // diff (the file as it was when proposed is not kept). It decides nothing.
  // A model may repeat a call id within a turn: `occurrence` names which of them.
  const edit = editOf(c);
  if (edit && edit.diff) {
    const occurrence = (cards.get(cardKey(turnId, c.callId)) || []).indexOf(card);
    showEditDiff(card, 'Applied change', edit.diff, () => post({ type: 'reviewRecordedEdit', turnId, callId: c.callId, occurrence }));
  }
  // History carries one output per call; live output flag stays off.
  card.liveOutput = false;
  return card;
}
