// A prompt that lets something act (an approval card, the acknowledgement's
// Yes) appears while the person may be typing. Its button never takes focus,
// and only a deliberate act answers it: a pointer click, or Enter/Space whose
// press began on the button itself (so the person moved focus there after the
// prompt appeared). A key typed for the composer, or held down since before,
// never reaches it.
import { focusInput, h } from './dom';

/** Enter and Space presses in progress, seen before any element or default action. */
const activationKeysDown = new Set<string>();
document.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' || e.key === ' ') activationKeysDown.add(e.key);
}, true);
document.addEventListener('keyup', (e) => activationKeysDown.delete(e.key), true);
// Keys released while the view has no focus send no keyup here.
window.addEventListener('blur', () => activationKeysDown.clear());

/**
 * Focuses the input, but only once no Enter or Space is held: Enter answers
 * on its keydown, and the rest of that press (its character, a repeat)
 * must not land in the input as a new line or a question.
 */
export function focusInputOnceKeysUp() {
  if (activationKeysDown.size === 0) return focusInput();
  const onUp = () => {
    if (activationKeysDown.size > 0) return;
    document.removeEventListener('keyup', onUp, true);
    focusInput();
  };
  // After the capture listener above has forgotten the key.
  document.addEventListener('keyup', onUp, true);
}

/** A button that acts only on a deliberate click or key (see above); it never takes focus by itself. */
export function deliberateButton(className: string, label: string, onAnswer: () => void): HTMLButtonElement {
  const button = h('button', className, label);
  button.type = 'button';
  onDeliberateClick(button, onAnswer);
  return button;
}

/** Calls `onAnswer` for a click on `button` that is a deliberate act (see above). */
export function onDeliberateClick(button: HTMLButtonElement, onAnswer: () => void) {
  // Set by a fresh (non-repeated) Enter/Space keydown on this button; the
  // click it causes (on keydown for Enter, on keyup for Space) consumes it.
  let pressBeganHere = false;
  button.addEventListener('keydown', (e) => {
    pressBeganHere = (e.key === 'Enter' || e.key === ' ') && !e.repeat;
  });
  button.addEventListener('blur', () => (pressBeganHere = false));
  button.addEventListener('click', (e) => {
    const byPointer = e.detail > 0;
    const byKey = pressBeganHere;
    // A screen reader's default action: no key of ours, focus moved here.
    const byAssistiveTech = e.detail === 0 && !byKey && document.activeElement === button && activationKeysDown.size === 0;
    pressBeganHere = false;
    if (byPointer || byKey || byAssistiveTech) onAnswer();
  });
}
