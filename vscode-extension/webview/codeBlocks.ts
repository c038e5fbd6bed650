// A code block's Copy and Insert (markdown.ts draws them): handled once for
// the whole transcript, reading the code's text back from the DOM.
import { transcript } from './dom';
import { post } from './host';

/** The code of the block `button` belongs to, as the model wrote it. */
function codeOf(button: Element): string {
  const code = button.closest('.code-block')?.querySelector('pre code');
  return (code?.textContent || '').replace(/\n$/, '');
}

transcript.addEventListener('click', (e) => {
  const target = e.target as HTMLElement;
  const button = target.closest && target.closest('.code-copy, .code-insert');
  if (!button) return;
  const text = codeOf(button);
  if (button.classList.contains('code-copy')) {
    post({ type: 'copy', text });
    button.textContent = 'Copied';
    setTimeout(() => (button.textContent = 'Copy'), 1500);
  } else {
    post({ type: 'insert', text });
  }
});
