// Following the end of the transcript: new content stays in sight until the
// person scrolls up, and each animation frame first renders what changed
// (segments.ts hands in that work) and then pins the end.
import { transcript } from './dom';

let frameRequested = false;
let scrollRequested = false;
/** Whether the transcript follows new content (the person has not scrolled up). */
let followEnd = true;
/** The rendering an animation frame does before it follows the end. */
let renderDirty: () => void = () => {};

/** Follows the end of the transcript at the next frame, unless the person scrolled up. */
export function scrollToEnd(force?: boolean) {
  scrollRequested = true;
  if (force) followEnd = true;
  requestFrame();
}

/** The transcript follows new content again (a new history opens at its end). */
export function followEndAgain() {
  followEnd = true;
}

/** What each frame renders before following the end. */
export function setFrameRenderer(render: () => void) {
  renderDirty = render;
}

// Only the person stops the following, by scrolling up: off-screen turns
// have estimated heights (content-visibility) that change as they are laid
// out, which moves the scroll position too, and must not count. A wheel,
// touch, key or pointer on the transcript marks the scroll events that
// follow (briefly, or while a scrollbar is dragged) as theirs.
const USER_SCROLL_MS = 400;
let userScrollUntil = 0;
let pointerScrolling = false;
let lastScrollTop = 0;
const atEnd = () => transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 48;
const markUserScroll = () => (userScrollUntil = performance.now() + USER_SCROLL_MS);
transcript.addEventListener('wheel', markUserScroll, { passive: true });
transcript.addEventListener('touchmove', markUserScroll, { passive: true });
// Keys scroll the transcript, or move focus into it (Tab), which scrolls too.
document.addEventListener('keydown', (e) => {
  if (['ArrowUp', 'ArrowDown', 'PageUp', 'PageDown', 'Home', 'End', ' ', 'Tab'].includes(e.key)) markUserScroll();
}, true);
transcript.addEventListener('pointerdown', () => (pointerScrolling = true));
window.addEventListener('pointerup', () => {
  pointerScrolling = false;
  markUserScroll();
});
transcript.addEventListener('scroll', () => {
  const top = transcript.scrollTop;
  const byPerson = pointerScrolling || performance.now() < userScrollUntil;
  if (atEnd()) followEnd = true;
  else if (byPerson && top < lastScrollTop) followEnd = false;
  lastScrollTop = top;
}, { passive: true });
// While following, the end stays in sight whatever changes size: a turn
// laid out for the first time, a card's output, the gate or composer
// above or below the transcript.
export const endKeeper = new ResizeObserver(() => {
  if (followEnd) pinEnd();
});
endKeeper.observe(transcript);
function pinEnd() {
  transcript.scrollTop = transcript.scrollHeight;
  lastScrollTop = transcript.scrollTop;
}

function requestFrame() {
  if (frameRequested) return;
  frameRequested = true;
  requestAnimationFrame(flushRender);
}

/** Renders what changed and follows the end; once per animation frame. */
function flushRender() {
  frameRequested = false;
  renderDirty();
  if (scrollRequested && followEnd) {
    pinEnd();
    // Off-screen turns have estimated heights (content-visibility): settle at the real end.
    requestAnimationFrame(() => {
      if (followEnd) pinEnd();
    });
  }
  scrollRequested = false;
}
