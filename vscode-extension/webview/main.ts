// Mino chat webview, the entry scripts/build.mjs bundles into
// dist/webview.js. Talks to the extension host only through postMessage
// (host.ts; the shapes are src/messages.ts): each message the host sends is
// handed here to the part of the view it is about. Builds the DOM with
// textContent, except the model's answers: those are markdown rendered by
// markdown.ts (raw HTML off, then sanitised).
import type { HostMessage, ViewSession } from '../src/messages';
import { closeGate } from './ackGate';
import { announce } from './announce';
import './codeBlocks';
import { onSent } from './composer';
import { clearImages } from './composerImages';
import { updateComposer } from './composerStatus';
import { addContextItems, renderChips } from './contextChips';
import { focusInput, input, notices } from './dom';
import { onHunks } from './edits';
import { renderHistory } from './history';
import { post } from './host';
import { showMentions } from './mentions';
import { addNotice } from './notices';
import { onNotification } from './notifications';
import { setProgress } from './progress';
import { onImage } from './questionImages';
import { onError } from './requestErrors';
import { onServer } from './serverStatus';
import { NEW_CHAT_TITLE, onModel, onModes, showSessionTitle } from './sessionHeader';
import { state } from './viewState';

window.addEventListener('message', (event: MessageEvent<HostMessage>) => {
  const msg = event.data;
  if (!msg || typeof msg.type !== 'string') return;
  switch (msg.type) {
    case 'history':
      return renderHistory(msg.history);
    case 'notification':
      return onNotification(msg.method, msg.params);
    case 'acknowledged':
      addNotice('Acknowledged: the commands above may already have run.', 'info');
      closeGate();
      // Back to the question; the gate that had focus is gone.
      return focusInput();
    case 'sent':
      return onSent(msg.turnId);
    case 'image':
      return onImage(msg);
    case 'error':
      return onError(msg);
    case 'server':
      return onServer(msg);
    case 'focus':
      if (msg.clear) {
        input.value = '';
        clearImages();
      }
      return focusInput();
    case 'context':
      return addContextItems(msg.items || []);
    case 'mentions':
      return showMentions(msg.query, msg.items || []);
    case 'hunks':
      return onHunks(msg);
    case 'session':
      return onSession(msg.session);
    case 'model':
      return onModel(msg.model);
    case 'modes':
      return onModes(msg.approvalMode, msg.sandbox);
    default:
      // Host and view ship together: a message the host adds is a type
      // error here until the view handles it (at run time, one from
      // elsewhere is ignored as before).
      msg satisfies never;
  }
});

/**
 * The current session, for the header. Another session than the one shown
 * is a switch: the transcript, notices and gate of the old one go; the
 * history and mino/recovery that follow rebuild them (the gate exactly as
 * at startup).
 */
function onSession(session: ViewSession) {
  if (!session || typeof session.sessionId !== 'string') return;
  const switched = state.sessionId !== null && state.sessionId !== session.sessionId;
  state.sessionId = session.sessionId;
  showSessionTitle(session.title);
  if (!switched) return;
  notices.textContent = '';
  closeGate();
  state.pendingQuestion = null;
  renderHistory(null);
  setProgress('idle');
  announce('Opened ' + (session.title || NEW_CHAT_TITLE) + '.');
}

updateComposer();
setProgress('idle');
renderChips();
// The panel opened: ready for a question.
focusInput();
post({ type: 'ready' });
