// The page's elements (the HTML of src/webviewHtml.ts), found once, and the
// few ways every part of the view builds its own: always with textContent,
// so nothing the model or a file says becomes markup.

/** The element with `id`: the page always has it (a missing one is a bug of the page, not of the data). */
export const $ = (id: string): HTMLElement => document.getElementById(id) as HTMLElement;
export const transcript = $('transcript');
export const notices = $('notices');
export const statusEl = $('status');
export const gate = $('ack-gate');
export const gateCalls = $('ack-calls');
export const gateYes = $('ack-yes') as HTMLButtonElement;
export const form = $('composer') as HTMLFormElement;
export const input = $('input') as HTMLTextAreaElement;
export const sendBtn = $('send') as HTMLButtonElement;
export const cancelBtn = $('cancel') as HTMLButtonElement;
export const composerError = $('composer-error');
export const sessionHeader = $('session-header');
export const sessionInstructions = $('session-instructions');
export const sessionTitle = $('session-title');
export const sessionUsage = $('session-usage');
export const sessionModel = $('session-model') as HTMLButtonElement;
export const sessionMode = $('session-mode') as HTMLButtonElement;
export const sessionSandbox = $('session-sandbox');

/** Gives each card's elements ids of their own, for aria-describedby. */
let nextElementId = 0;
export function nextId(): number {
  return nextElementId++;
}

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string | null, text?: string | number | null): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined && text !== null) el.textContent = String(text);
  return el;
}

/** One `dt`/`dd` pair of a card's facts. */
export function metaRow(dl: HTMLElement, label: string, value: string | Node, className?: string) {
  dl.appendChild(h('dt', className, label));
  const dd = h('dd', className);
  if (value instanceof Node) dd.appendChild(value);
  else dd.textContent = value;
  dl.appendChild(dd);
}

export function focusInput() {
  if (!input.disabled) input.focus({ preventScroll: true });
}
