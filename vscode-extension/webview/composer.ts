// The composer: the question is sent with its context and images, stays in
// the input until the server accepts it, and Enter sends while Escape
// cancels the running turn.
import { showComposerError, updateComposer } from './composerStatus';
import { chatImages, imageItems, imagesSent } from './composerImages';
import { contextItems, contextSent, questionWithContext } from './contextChips';
import { cancelBtn, form, input, sendBtn } from './dom';
import { post } from './host';
import { mentionKey } from './mentions';
import { progress, setProgress } from './progress';
import { scrollToEnd } from './scroll';
import { state } from './viewState';

/**
 * The question stays in the input until the server accepted it ('sent'); a
 * refused one (empty, too long, acknowledgement required, turn in progress)
 * stays there with the reason below it.
 */
function send() {
  const text = input.value;
  if ((!text.trim() && imageItems.length === 0) || sendBtn.disabled) return;
  state.pendingQuestion = text;
  showComposerError(null);
  updateComposer();
  setProgress('sending');
  // The person asked: their question and its answer are what they look at now.
  scrollToEnd(true);
  const images = chatImages();
  post({ type: 'send', text: questionWithContext(text, contextItems), ...(images.length ? { images } : {}) });
}

export function onSent(turnId: string) {
  if (state.pendingQuestion !== null && input.value === state.pendingQuestion) input.value = '';
  state.pendingQuestion = null;
  // The context went with the question.
  contextSent();
  imagesSent(turnId);
  if (progress.kind === 'sending') setProgress('thinking');
  updateComposer();
}

// The reason belongs to the question as it was; editing it starts afresh.
input.addEventListener('input', () => showComposerError(null));

form.addEventListener('submit', (e) => {
  e.preventDefault();
  send();
});

input.addEventListener('keydown', (e) => {
  if (mentionKey(e)) return;
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  }
});

cancelBtn.addEventListener('click', () => {
  if (state.runningTurnId) post({ type: 'cancel', turnId: state.runningTurnId });
});

document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && state.runningTurnId) {
    post({ type: 'cancel', turnId: state.runningTurnId });
  }
});
