// What the composer allows now (gated, server not ready, a question being
// sent, a turn running), and why the last question or attachment was refused.
import { cancelBtn, composerError, form, input, sendBtn } from './dom';
import { state } from './viewState';

export function updateComposer() {
  const gated = state.gateTurnIds !== null;
  const ready = state.server === 'ready';
  const sending = state.pendingQuestion !== null;
  input.disabled = gated;
  // While the server has not yet answered, the question must not change under it.
  input.readOnly = sending;
  form.classList.toggle('gated', gated);
  sendBtn.disabled = gated || !ready || sending || state.runningTurnId !== null;
  cancelBtn.hidden = state.runningTurnId === null;
  if (gated) input.placeholder = 'Answer the question above to continue.';
  else if (!ready) input.placeholder = 'Mino server is not running.';
  else input.placeholder = 'Ask Mino… (Enter to send, Shift+Enter for a new line, @ to add a file, paste or drop images)';
}

export function showComposerError(message: string | null) {
  composerError.textContent = message || '';
  composerError.hidden = !message;
}
