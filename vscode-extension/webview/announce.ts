// The transcript is not a live region (a screen reader would read every
// streamed chunk). Completed answers, approval cards and results are
// announced here once, politely.
import { $ } from './dom';

const announcer = $('announcer');
const ANNOUNCE_MAX_CHARS = 1500;

export function announce(text: string) {
  const t = text.length > ANNOUNCE_MAX_CHARS ? text.slice(0, ANNOUNCE_MAX_CHARS) + '…' : text;
  // The same words twice in a row would not be read again.
  announcer.textContent = announcer.textContent === t ? t + '\u00a0' : t;
}
