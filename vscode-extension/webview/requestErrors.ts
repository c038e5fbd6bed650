// A request the view made that failed: the composer, the gate or the card
// it came from says why, and stays answerable only when nothing happened.
import { ErrorCode } from '../src/generated/protocol';
import type { HostMessage } from '../src/messages';
import { openGate } from './ackGate';
import { openCard, setCardControlsDisabled, setCardStatus } from './cards';
import { showComposerError, updateComposer } from './composerStatus';
import { gateYes } from './dom';
import { addNotice } from './notices';
import { setProgress } from './progress';
import { state } from './viewState';

export function onError(msg: Extract<HostMessage, { type: 'error' }>) {
  if (msg.request === 'send') {
    // The question was refused: it stays in the input, the reason below it.
    state.pendingQuestion = null;
    setProgress('idle');
    showComposerError(msg.message);
    if (msg.code === ErrorCode.acknowledgementRequired && state.gateTurnIds === null) {
      // The server still requires an acknowledgement the view did not know of.
      openGate({ turns: [], unacknowledgedTurnIds: [] });
    }
  } else if (msg.request === 'addContext') {
    showComposerError(msg.message);
  } else if (msg.request === 'image') {
    // A thumbnail that cannot be had says so itself (onImage); nothing else changes.
  } else if (msg.request !== 'approval' || !(msg.callId && msg.turnId && openCard(msg.turnId, msg.callId))) {
    // An approval's error is shown in its card (below).
    addNotice(msg.message, 'error');
  }
  if (msg.request === 'acknowledge') {
    state.ackPending = false;
    gateYes.disabled = false;
  } else if (msg.request === 'approval' && msg.callId && msg.turnId) {
    const card = openCard(msg.turnId, msg.callId);
    // Only an error the server sent says the decision changed nothing; a
    // lost connection (no code, or the JSON-RPC library's -32099..-32096)
    // may have come after the command started, so the card keeps the
    // decision and never offers Approve again.
    const code = msg.code;
    const answeredByServer = typeof code === 'number' && !(code >= -32099 && code <= -32096);
    if (card && answeredByServer && code !== ErrorCode.noPendingApproval && card.el.dataset.status !== 'unfinished') {
      // Nothing ran and the request is still pending (e.g. -32602, a rule the
      // server refuses): the card says why and stays answerable.
      setCardControlsDisabled(card, false);
      setCardStatus(card, 'waiting');
      card.actionError.textContent = msg.message;
      card.actionError.hidden = false;
    }
  }
  updateComposer();
}
