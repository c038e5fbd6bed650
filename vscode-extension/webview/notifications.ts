// Mino's notifications (forwarded by the host as received), each to the
// part of the view it is about, once it is known to be of the session shown.
import { Notification, TOOL_STATUS, type NotificationMap, type ReadView, type RecoveryNotification } from '../src/generated/protocol';
import type { NotificationMethod } from '../src/protocol';
import { closeGate, openGate } from './ackGate';
import { announce } from './announce';
import { showApproval } from './approvals';
import { allCards, cardKey, cards, openCard, type Card } from './cards';
import { updateComposer } from './composerStatus';
import { addNotice, onMcpStatus } from './notices';
import { progress, setProgress } from './progress';
import { readOf, readResult, readStarted, readWhat } from './reads';
import { scrollToEnd } from './scroll';
import { renderNow } from './segments';
import { showInstructions, showSessionUsage } from './sessionHeader';
import { statusLabel } from './statusLabels';
import { showEvidence, toolOutput, toolResult, toolStarted } from './toolCards';
import { addTurnActions, announceTurnEnd, appendText, compactionNotice, createTurn, getTurn, retrying, setTurnStatus, showTurnUsage, startResponse, turns } from './turns';
import { state } from './viewState';

/** A notification with its params, as the protocol pairs them: `switch (n.method)` knows `n.params`. */
type AnyNotification = { [M in NotificationMethod]: { method: M; params: NotificationMap[M] } }[NotificationMethod];

const RECOVERED_NOTICE = 'An interrupted tool turn was recovered without executing commands.';

function onRecovery(r: RecoveryNotification) {
  if (r.turns && r.turns.length > 0 && !r.acknowledgementRequired) {
    addNotice(RECOVERED_NOTICE, 'info');
  }
  for (const t of r.turns || []) {
    // The k-th call with an id is that id's k-th card in the turn.
    const seen = new Map<string, number>();
    for (const c of t.calls) {
      if (c.result.status === TOOL_STATUS.not_executed) {
        addNotice('Not executed (never started): ' + c.command, 'info');
      }
      const k = seen.get(c.callId) || 0;
      seen.set(c.callId, k + 1);
      const card: Card | undefined = (cards.get(cardKey(t.turnId, c.callId)) || [])[k];
      if (card) showEvidence(card, c.result.status, c.evidence);
    }
  }
  for (const repair of r.repairs || []) addNotice('Repaired: ' + repair, 'warning');
  if (r.acknowledgementRequired) openGate(r);
  else closeGate();
}

export function onNotification(method: NotificationMethod, params: unknown) {
  const p = params as { sessionId?: unknown } | null;
  // Every notification names its session: one for another session (late,
  // from before a switch) must not touch this transcript.
  if (p && typeof p.sessionId === 'string' && state.sessionId !== null && p.sessionId !== state.sessionId) return;
  const n = { method, params } as AnyNotification;
  switch (n.method) {
    case Notification.recovery:
      return onRecovery(n.params);
    case Notification.turnStarted: {
      const existing = turns.get(n.params.turnId);
      if (existing) {
        const userText = existing.el.querySelector('.msg.user .text');
        if (userText && !userText.textContent) userText.textContent = n.params.input;
      } else {
        createTurn(n.params.turnId, n.params.input);
      }
      startResponse(getTurn(n.params.turnId));
      setTurnStatus(getTurn(n.params.turnId), null);
      state.runningTurnId = n.params.turnId;
      setProgress('thinking');
      updateComposer();
      // A new question: shown and followed, wherever the person had scrolled to.
      return scrollToEnd(true);
    }
    case Notification.textDelta:
      appendText(getTurn(n.params.turnId), n.params.delta);
      if (progress.kind !== 'streaming') setProgress('streaming');
      return;
    case Notification.retrying:
      setProgress('retrying');
      return retrying(n.params);
    // Only a compaction inside a turn is shown here; "Compact Conversation"
    // reports its own outcome.
    case Notification.compactionStarted:
      if (!n.params.turnId) return;
      setProgress('compacting');
      return compactionNotice(n.params, false);
    case Notification.compactionEnded:
      if (!n.params.turnId) return;
      // The turn's request follows.
      setProgress('thinking');
      return compactionNotice(n.params, true);
    case Notification.instructionsChanged:
      return showInstructions(n.params.files);
    case Notification.mcpStatus:
      return onMcpStatus(n.params);
    case Notification.approvalRequest:
      setProgress('approval', n.params.command);
      return showApproval(n.params);
    case Notification.toolStarted:
      // A read that asked nothing is a row; one that asked has its card.
      if (readOf(n.params) && !openCard(n.params.turnId, n.params.callId)) {
        setProgress('running', readWhat(readOf(n.params) as ReadView));
        return readStarted(n.params);
      }
      setProgress('running', n.params.command);
      return toolStarted(n.params);
    case Notification.toolOutput:
      return toolOutput(n.params);
    case Notification.toolResult:
      if (readOf(n.params) && !openCard(n.params.turnId, n.params.callId)) {
        startResponse(getTurn(n.params.turnId));
        setProgress('thinking');
        const row = readResult(n.params);
        announce(row.toggle.getAttribute('aria-label') + '.');
        return;
      }
      startResponse(getTurn(n.params.turnId));
      // The result goes back to the model: a new request is on its way.
      setProgress('thinking');
      announce('Command ' + toolResult(n.params).command.textContent + ': ' + statusLabel(n.params.status) + '.');
      return;
    case Notification.turnEnded: {
      const turn = getTurn(n.params.turnId);
      // The final text is authoritative if the deltas missed anything.
      if (typeof n.params.text === 'string' && n.params.text !== turn.text && n.params.text.startsWith(turn.text)) {
        appendText(turn, n.params.text.slice(turn.text.length));
      }
      renderNow();
      setTurnStatus(turn, n.params.status, n.params.reason);
      showTurnUsage(turn, n.params.usage);
      addTurnActions(turn, n.params.turnId);
      if (n.params.sessionUsage) showSessionUsage(n.params.sessionUsage);
      for (const card of allCards()) {
        if (card.el.closest('.turn') === turn.el && card.el.dataset.status === 'waiting') {
          card.actions.hidden = true;
        }
      }
      if (state.runningTurnId === n.params.turnId) state.runningTurnId = null;
      if (state.runningTurnId === null) setProgress('idle');
      announceTurnEnd(turn, n.params.status, n.params.reason);
      updateComposer();
      return scrollToEnd();
    }
    default:
      // A notification the protocol adds is a type error here until the
      // view decides what it shows of it (an empty case to show nothing).
      n satisfies never;
  }
}
