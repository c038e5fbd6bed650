// The model's text between tool cards, rendered as markdown while it
// streams: the settled part once, only the tail again, at most once per
// animation frame; restored history far from the screen renders when it
// comes near.
import { h, transcript } from './dom';
import { advanceSplitScan, newSplitScan, renderMarkdown, type SplitScan } from './markdown';
import { scrollToEnd, setFrameRenderer } from './scroll';

/**
 * A run of the model's text between tool cards, rendered as markdown. While
 * it streams, the part before `frozenLen` is rendered once into `frozen`
 * (cut where markdown.ts says it renders the same alone); only `tail` is
 * rendered again, at most once per animation frame.
 */
export interface Segment {
  el: HTMLElement;
  frozen: HTMLElement;
  tail: HTMLElement;
  source: string;
  frozenLen: number;
  scan: SplitScan;
}

/** A new segment at the end of `body` (a turn's answer). */
export function newSegment(body: HTMLElement): Segment {
  const el = h('div', 'text assistant-text markdown');
  const frozen = h('div', 'md-frozen');
  const tail = h('div', 'md-tail');
  el.append(frozen, tail);
  body.appendChild(el);
  return { el, frozen, tail, source: '', frozenLen: 0, scan: newSplitScan() };
}

/** Segments whose text changed since they were last rendered. */
export const dirtySegments = new Set<Segment>();

/** Blocks smaller than this stay in the re-rendered tail. */
const FREEZE_MIN_CHARS = 2048;

export function scheduleRender(seg: Segment) {
  dirtySegments.add(seg);
  scrollToEnd();
}

/** Renders only this segment: new settled blocks once, then the tail. */
function renderSegment(seg: Segment) {
  seg.el.classList.remove('md-pending');
  const safe = advanceSplitScan(seg.scan, seg.source);
  if (safe - seg.frozenLen >= FREEZE_MIN_CHARS) {
    // A chunk of its own: off screen, the browser skips its layout and paint (main.css).
    const chunk = h('div', 'md-chunk');
    chunk.appendChild(renderMarkdown(seg.source.slice(seg.frozenLen, safe)));
    seg.frozen.appendChild(chunk);
    seg.frozenLen = safe;
  }
  seg.tail.replaceChildren(renderMarkdown(seg.source.slice(seg.frozenLen)));
}

/** Renders the segment afresh (its text was taken back, or is settled history). */
export function resetSegment(seg: Segment) {
  seg.frozen.textContent = '';
  seg.tail.textContent = '';
  seg.frozenLen = 0;
  seg.scan = newSplitScan();
  dirtySegments.add(seg);
}

/** Turns of a restored history rendered at once; older ones as they come near the screen. */
export const EAGER_HISTORY_TURNS = 40;
const lazySegments = new WeakMap<Element, Segment>();
export const lazyObserver = new IntersectionObserver((entries) => {
  for (const entry of entries) {
    if (!entry.isIntersecting) continue;
    const seg = lazySegments.get(entry.target);
    lazyObserver.unobserve(entry.target);
    lazySegments.delete(entry.target);
    if (seg) renderSegment(seg);
  }
}, { root: transcript, rootMargin: '1500px 0px' });

/** Shows the segment's text as written and renders it once it nears the viewport. */
export function renderLater(seg: Segment) {
  dirtySegments.delete(seg);
  seg.tail.textContent = seg.source;
  seg.el.classList.add('md-pending');
  lazySegments.set(seg.el, seg);
  lazyObserver.observe(seg.el);
}

/** Renders pending text now (a turn ended; history was replaced). */
export function renderNow() {
  for (const seg of dirtySegments) renderSegment(seg);
  dirtySegments.clear();
}

setFrameRenderer(renderNow);
