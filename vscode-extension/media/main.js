// @ts-check
// Mino chat webview. Talks to the extension host only through postMessage
// (see src/messages.ts for the message shapes). Builds the DOM with
// textContent, except the model's answers: those are markdown rendered by
// markdown.js (raw HTML off, then sanitised). Bundled by scripts/build.mjs.
import { DECISION, ErrorCode, Notification, TOOL_STATUS, TURN_STATUS } from '../src/generated/protocol';
import { advanceSplitScan, newSplitScan, renderMarkdown } from './markdown.js';

(function () {
  'use strict';

  // eslint-disable-next-line no-undef
  const vscode = acquireVsCodeApi();

  const ACK_QUESTION = 'Do you understand that these commands may already have run?';
  const RECOVERED_NOTICE = 'An interrupted tool turn was recovered without executing commands.';
  const RETRYING_NOTICE = 'Connection to the model failed; retrying…';
  const COMPACTING_NOTICE = 'Compacting the conversation…';

  // Typed by the protocol's vocabulary, so a status it adds is a type error
  // here until it has a label.
  /** @type {Record<import('../src/generated/protocol').ToolStatus, string>} */
  const RESULT_LABELS = {
    success: 'succeeded',
    failed: 'failed',
    refused: 'denied',
    timed_out: 'timed out',
    cancelled: 'cancelled',
    not_executed: 'not executed',
    unknown: 'result unknown',
    applied: 'applied',
    not_applied: 'not applied',
    unavailable: 'result unavailable',
  };
  /**
   * A card's badge: its result's label, or where the call is before it has one.
   * @type {Record<string, string>}
   */
  const STATUS_LABELS = {
    ...RESULT_LABELS,
    waiting: 'waiting for approval',
    approved: 'approved',
    denied: 'denying…',
    running: 'running',
    unfinished: 'did not finish',
  };
  /** @type {Record<import('../src/generated/protocol').TurnStatus, string>} */
  const TURN_LABELS = {
    completed: 'completed',
    failed: 'failed',
    cancelled: 'cancelled',
    interrupted: 'interrupted',
  };

  const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
  const transcript = $('transcript');
  const notices = $('notices');
  const statusEl = $('status');
  const gate = $('ack-gate');
  const gateCalls = $('ack-calls');
  const gateYes = /** @type {HTMLButtonElement} */ ($('ack-yes'));
  const form = /** @type {HTMLFormElement} */ ($('composer'));
  const input = /** @type {HTMLTextAreaElement} */ ($('input'));
  const sendBtn = /** @type {HTMLButtonElement} */ ($('send'));
  const cancelBtn = /** @type {HTMLButtonElement} */ ($('cancel'));
  const composerError = $('composer-error');
  const sessionHeader = $('session-header');
  const sessionInstructions = $('session-instructions');
  const sessionTitle = $('session-title');
  const sessionUsage = $('session-usage');
  const sessionModel = /** @type {HTMLButtonElement} */ ($('session-model'));
  const sessionMode = /** @type {HTMLButtonElement} */ ($('session-mode'));
  const sessionSandbox = $('session-sandbox');
  $('ack-question').textContent = ACK_QUESTION;
  const NEW_CHAT_TITLE = 'New chat';

  /** @type {Map<string, Turn>} */
  const turns = new Map();
  /**
   * (turnId, callId) → that call's cards, oldest first. Models reuse call ids
   * (a later response, or a later turn, numbers its calls call_0, … again), so
   * a notification is about the newest card of its (turn, call) still without
   * a result, as the server pairs records with calls; a call id alone could
   * show one command in a card whose Approve runs another.
   * @type {Map<string, Card[]>}
   */
  const cards = new Map();
  const cardKey = (turnId, callId) => turnId + '\n' + callId;
  /** The card of (turnId, callId) still waiting for its result, if any. */
  function openCard(turnId, callId) {
    const list = cards.get(cardKey(turnId, callId));
    const card = list && list[list.length - 1];
    return card && !card.done ? card : undefined;
  }
  function allCards() {
    return [...cards.values()].flat();
  }
  const state = {
    /** @type {string | null} */ runningTurnId: null,
    /** @type {string[] | null} turns awaiting acknowledgement */ gateTurnIds: null,
    ackPending: false,
    /** @type {string | null} the question sent and not yet accepted; it stays in the input */
    pendingQuestion: null,
    server: 'starting',
    /** @type {string | null} the session shown; notifications of another are ignored */
    sessionId: null,
  };
  /** Gives each card's elements ids of their own, for aria-describedby. */
  let nextElementId = 0;

  /**
   * @typedef {{ el: HTMLElement, body: HTMLElement, segment: Segment | null,
   *   statusEl: HTMLElement, text: string, response: ResponseText | null,
   *   retryNotice: HTMLElement | null, compactionNotice?: HTMLElement }} Turn
   * The text of the model's current response (since mino/turnStarted or the
   * turn's last mino/toolResult): where it starts in `text` and in each
   * segment it was written to, so that mino/retrying can take it back.
   * @typedef {{ start: number, parts: { seg: Segment, start: number }[] }} ResponseText
   * A run of the model's text between tool cards, rendered as markdown. While
   * it streams, the part before `frozenLen` is rendered once into `frozen`
   * (cut where markdown.js says it renders the same alone); only `tail` is
   * rendered again, at most once per animation frame.
   * @typedef {{ el: HTMLElement, frozen: HTMLElement, tail: HTMLElement, source: string,
   *   frozenLen: number, scan: import('./markdown.js').SplitScan }} Segment
   * @typedef {{ el: HTMLElement, badge: HTMLElement, command: HTMLElement, actions: HTMLElement,
   *   output: HTMLElement, result: HTMLElement, evidence: HTMLElement, approvedBy: HTMLElement,
   *   actionError: HTMLElement, liveOutput: boolean, done: boolean,
   *   hunks: { count: number, kept: Set<number> } | null, edit: any }} Card
   * `hunks`: an edit waiting for approval whose diff has two hunks or more, and those the person keeps.
   */

  // ------------------------------------------------------------ helpers

  function h(tag, className, text) {
    const el = document.createElement(tag);
    if (className) el.className = className;
    if (text !== undefined && text !== null) el.textContent = String(text);
    return el;
  }

  /** Follows the end of the transcript at the next frame, unless the person scrolled up. */
  function scrollToEnd(force) {
    scrollRequested = true;
    if (force) followEnd = true;
    requestFrame();
  }

  function post(msg) {
    vscode.postMessage(msg);
  }

  function addNotice(text, kind) {
    const n = h('div', 'notice ' + (kind || 'info'), text);
    n.setAttribute('role', kind === 'error' ? 'alert' : 'note');
    notices.appendChild(n);
    return n;
  }

  function updateComposer() {
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

  // ------------------------------------------------------------ progress

  // What Mino is doing now, shown above the composer. Not a live region: the
  // running command's clock ticks every second; the announcer below says what
  // matters once.
  const progressEl = $('progress');
  const progressText = $('progress-text');
  /** @type {{ kind: string, command: string, since: number, timer: number | undefined }} */
  /** @type {{ kind: string, command: string, since: number, timer: ReturnType<typeof setInterval> | undefined }} */
  const progress = { kind: 'idle', command: '', since: 0, timer: undefined };

  function formatElapsed(ms) {
    const s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return s + ' s';
    return Math.floor(s / 60) + ' min ' + String(s % 60).padStart(2, '0') + ' s';
  }

  function progressLabel() {
    switch (progress.kind) {
      case 'sending': return 'Sending your question…';
      case 'thinking': return 'Mino is thinking…';
      case 'streaming': return 'Mino is writing…';
      case 'retrying': return 'Connection to the model failed; retrying…';
      case 'compacting': return 'Compacting the conversation…';
      case 'approval': return 'Waiting for your approval to run: ' + progress.command;
      case 'running': return 'Running ' + progress.command + ' · ' + formatElapsed(Date.now() - progress.since);
      default: return '';
    }
  }

  /** kind: idle | sending | thinking | streaming | retrying | compacting | approval | running */
  function setProgress(kind, command) {
    if (progress.timer !== undefined) clearInterval(progress.timer);
    progress.timer = undefined;
    progress.kind = kind;
    progress.command = command || '';
    progress.since = Date.now();
    if (kind === 'running') {
      progress.timer = setInterval(() => (progressText.textContent = progressLabel()), 1000);
    }
    progressEl.dataset.kind = kind;
    progressEl.hidden = kind === 'idle';
    progressText.textContent = progressLabel();
  }

  // ------------------------------------------------------------ announcements

  // The transcript is not a live region (a screen reader would read every
  // streamed chunk). Completed answers, approval cards and results are
  // announced here once, politely.
  const announcer = $('announcer');
  const ANNOUNCE_MAX_CHARS = 1500;

  function announce(text) {
    const t = text.length > ANNOUNCE_MAX_CHARS ? text.slice(0, ANNOUNCE_MAX_CHARS) + '…' : text;
    // The same words twice in a row would not be read again.
    announcer.textContent = announcer.textContent === t ? t + '\u00a0' : t;
  }

  function announceTurnEnd(turn, status, reason) {
    // Block by block from the DOM (not innerText: off-screen chunks are not laid out).
    const answer = [...turn.body.querySelectorAll('.md-chunk > *, .md-tail > *')]
      .map((el) => (el.textContent || '').trim())
      .filter(Boolean)
      .join('\n');
    if (status === TURN_STATUS.completed) announce(answer ? 'Mino answered: ' + answer : 'Mino finished.');
    else announce('Turn ' + (TURN_LABELS[status] || status) + (reason ? ': ' + reason : '.') + (answer ? ' ' + answer : ''));
  }

  // ------------------------------------------------------------ turns

  /** @returns {Turn} */
  function createTurn(turnId, inputText, images) {
    const el = h('article', 'turn');
    el.dataset.turnId = turnId;
    const user = h('div', 'msg user');
    user.appendChild(h('div', 'who', 'You'));
    user.appendChild(h('div', 'text', inputText));
    const shown = images || takeSentImages(turnId);
    if (shown && shown.length) user.appendChild(questionImages(shown));
    const assistant = h('div', 'msg assistant');
    assistant.appendChild(h('div', 'who', 'Mino'));
    const body = h('div', 'body');
    assistant.appendChild(body);
    const statusLine = h('div', 'turn-status');
    el.append(user, assistant, statusLine);
    transcript.appendChild(el);
    endKeeper.observe(el);
    const turn = { el, body, segment: null, statusEl: statusLine, text: '', response: null, retryNotice: null };
    turns.set(turnId, turn);
    return turn;
  }

  /**
   * An ended turn's "Rewind to here": the host asks for the plan and
   * confirms it (Cancel is the default) before anything is written. And
   * "Fork from here": the host continues in a new session holding the turns
   * up to this one; it writes no file, so it asks nothing, and only a click
   * (or a key on the focused link) triggers it, never focus by default.
   */
  function addTurnActions(turn, turnId) {
    if (turn.el.querySelector('.turn-actions')) return;
    const actions = h('div', 'turn-actions');
    const rewind = linkButton('Rewind to here', { type: 'rewind', turnId }, 'rewind-turn');
    rewind.title = "Undo Mino's edits of this turn and every later one (you see the plan first)";
    actions.appendChild(rewind);
    const fork = linkButton('Fork from here', { type: 'fork', turnId }, 'fork-turn');
    fork.title = 'Continue in a new session holding the conversation up to this turn; this session is kept as it is';
    actions.append(' ', fork);
    turn.el.querySelector('.msg.user')?.appendChild(actions);
  }

  /** A turn a rewind took back: still shown, marked, and no longer in the model's context. */
  function markRewound(turn) {
    turn.el.classList.add('rewound');
    turn.el.querySelector('.turn-actions')?.remove();
    const note = h('div', 'turn-notice rewound-note', "Rewound: Mino's edits were undone; this turn is no longer in the model's context.");
    turn.el.insertBefore(note, turn.el.firstChild);
  }

  function getTurn(turnId) {
    return turns.get(turnId) || createTurn(turnId, '');
  }

  /** @returns {Segment} */
  function newSegment(turn) {
    const el = h('div', 'text assistant-text markdown');
    const frozen = h('div', 'md-frozen');
    const tail = h('div', 'md-tail');
    el.append(frozen, tail);
    turn.body.appendChild(el);
    return { el, frozen, tail, source: '', frozenLen: 0, scan: newSplitScan() };
  }

  function appendText(turn, delta) {
    if (!turn.segment) turn.segment = newSegment(turn);
    const response = turn.response || (turn.response = { start: turn.text.length, parts: [] });
    const seg = turn.segment;
    if (!response.parts.some((p) => p.seg === seg)) {
      response.parts.push({ seg, start: seg.source.length });
    }
    seg.source += delta;
    turn.text += delta;
    scheduleRender(seg);
  }

  // ------------------------------------------------------------ rendering

  /** Segments whose text changed since they were last rendered. */
  const dirtySegments = new Set();
  let frameRequested = false;
  let scrollRequested = false;
  /** Whether the transcript follows new content (the person has not scrolled up). */
  let followEnd = true;
  /** Blocks smaller than this stay in the re-rendered tail. */
  const FREEZE_MIN_CHARS = 2048;
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
  const endKeeper = new ResizeObserver(() => {
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

  function scheduleRender(seg) {
    dirtySegments.add(seg);
    scrollToEnd();
  }

  /** Renders what changed and follows the end; once per animation frame. */
  function flushRender() {
    frameRequested = false;
    for (const seg of dirtySegments) renderSegment(seg);
    dirtySegments.clear();
    if (scrollRequested && followEnd) {
      pinEnd();
      // Off-screen turns have estimated heights (content-visibility): settle at the real end.
      requestAnimationFrame(() => {
        if (followEnd) pinEnd();
      });
    }
    scrollRequested = false;
  }

  /** Renders only this segment: new settled blocks once, then the tail. */
  function renderSegment(seg) {
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
  function resetSegment(seg) {
    seg.frozen.textContent = '';
    seg.tail.textContent = '';
    seg.frozenLen = 0;
    seg.scan = newSplitScan();
    dirtySegments.add(seg);
  }

  /** Turns of a restored history rendered at once; older ones as they come near the screen. */
  const EAGER_HISTORY_TURNS = 40;
  const lazySegments = new WeakMap();
  const lazyObserver = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      const seg = lazySegments.get(entry.target);
      lazyObserver.unobserve(entry.target);
      lazySegments.delete(entry.target);
      if (seg) renderSegment(seg);
    }
  }, { root: transcript, rootMargin: '1500px 0px' });

  /** Shows the segment's text as written and renders it once it nears the viewport. */
  function renderLater(seg) {
    dirtySegments.delete(seg);
    seg.tail.textContent = seg.source;
    seg.el.classList.add('md-pending');
    lazySegments.set(seg.el, seg);
    lazyObserver.observe(seg.el);
  }

  /** Renders pending text now (a turn ended; history was replaced). */
  function renderNow() {
    for (const seg of dirtySegments) renderSegment(seg);
    dirtySegments.clear();
  }

  /** A new model response begins (mino/turnStarted, mino/toolResult). */
  function startResponse(turn) {
    turn.response = null;
  }

  /**
   * mino/retrying: the text of the current response is void (the retried
   * response streams it again); take it back and say why.
   */
  function retrying(p) {
    const turn = getTurn(p.turnId);
    const response = turn.response;
    if (response) {
      for (const part of response.parts) {
        const kept = part.seg.source.slice(0, part.start);
        if (kept) {
          part.seg.source = kept;
          resetSegment(part.seg);
        } else {
          part.seg.el.remove();
          dirtySegments.delete(part.seg);
          if (turn.segment === part.seg) turn.segment = null;
        }
      }
      turn.text = turn.text.slice(0, response.start);
      turn.response = null;
    }
    // One notice per turn, moved below what is left; the retried text follows it.
    const notice = turn.retryNotice || h('div', 'turn-notice retrying');
    notice.setAttribute('role', 'status');
    notice.textContent = RETRYING_NOTICE + (p.attempt > 1 ? ' (attempt ' + p.attempt + ')' : '');
    notice.title = p.reason || '';
    turn.retryNotice = notice;
    turn.body.appendChild(notice);
    turn.segment = null;
    scrollToEnd();
  }

  /**
   * mino/compactionStarted/Ended inside a turn (automatic, or after
   * context_length_exceeded): one notice in the transcript, saying first that
   * the summary is being made, then what it did.
   */
  function compactionNotice(p, ended) {
    const turn = getTurn(p.turnId);
    const notice = turn.compactionNotice || h('div', 'turn-notice compaction');
    notice.setAttribute('role', 'status');
    if (!ended) {
      notice.textContent = COMPACTING_NOTICE;
    } else if (p.compacted) {
      const turns = (n) => (n === 1 ? '1 turn' : n + ' turns');
      const kept = p.keptTurns > 0 ? '; ' + turns(p.keptTurns) + ' still sent as they were' : '';
      notice.textContent = 'Compacted: ' + turns(p.summarizedTurns) + ' summarised by the model' + kept +
        '. Later requests send the summary instead.';
    } else {
      notice.textContent = 'Not compacted: ' + (p.reason || 'the server gave no reason') + '.';
    }
    turn.compactionNotice = notice;
    turn.body.appendChild(notice);
    turn.segment = null;
    if (ended) announce(notice.textContent);
    scrollToEnd();
  }

  function setTurnStatus(turn, status, reason) {
    turn.el.dataset.status = status || 'running';
    turn.statusEl.textContent = '';
    if (!status) return;
    if (status !== TURN_STATUS.completed || reason) {
      const label = TURN_LABELS[status] || status;
      turn.statusEl.textContent = 'Turn ' + label + (reason ? ': ' + reason : '');
      turn.statusEl.className = 'turn-status ' + status;
    }
  }

  /**
   * The server stopped: turns and cards still shown as running did not finish
   * here. Their outcome is what the restarted server's recovery reports.
   */
  function markUnfinished() {
    for (const turn of turns.values()) {
      const status = turn.el.dataset.status;
      if (status && status !== 'running') continue;
      turn.el.dataset.status = 'unfinished';
      turn.statusEl.textContent = 'Turn did not finish: the Mino server stopped. Restart it to see what was recorded.';
      turn.statusEl.className = 'turn-status unfinished';
    }
    for (const card of allCards()) {
      const status = card.el.dataset.status;
      let why;
      if (status === 'running' || status === 'approved') why = 'the Mino server stopped while this command was running or about to run; it may have run.';
      else if (status === 'waiting' || status === 'denied') why = 'the Mino server stopped before this command was approved; it did not run.';
      else continue;
      card.actions.hidden = true;
      setCardStatus(card, 'unfinished');
      card.result.hidden = false;
      card.result.textContent = 'Did not finish: ' + why;
      card.result.className = 'tool-result unfinished';
    }
    markReadsUnfinished();
  }

  // ------------------------------------------------------------ tool cards

  function metaRow(dl, label, value, className) {
    dl.appendChild(h('dt', className, label));
    const dd = h('dd', className);
    if (value instanceof Node) dd.appendChild(value);
    else dd.textContent = value;
    dl.appendChild(dd);
  }

  /** @returns {Card} */
  function createCard(turn, turnId, callId, command) {
    const el = h('div', 'tool-card');
    el.dataset.callId = callId;
    const head = h('div', 'tool-head');
    head.appendChild(h('span', 'tool-name', 'bash'));
    const badge = h('span', 'badge');
    head.appendChild(badge);
    el.appendChild(head);
    const commandEl = h('pre', 'tool-command', command);
    commandEl.id = 'mino-el-' + nextElementId++;
    // A card made from a result alone (a call a deny rule refused before
    // anything was asked) shows the command the result names, and its output
    // names the rule; a result without one (a call not on record) hides the
    // empty box.
    commandEl.hidden = !command;
    el.appendChild(commandEl);
    const actions = h('div', 'tool-actions');
    actions.hidden = true;
    const output = h('pre', 'tool-output');
    output.hidden = true;
    const result = h('div', 'tool-result');
    result.hidden = true;
    const evidence = h('div', 'tool-evidence');
    evidence.hidden = true;
    const approvedBy = h('div', 'tool-approved-by');
    approvedBy.hidden = true;
    // A refusal of the card's answer (e.g. a rule the server will not keep), shown where it was given.
    const actionError = h('div', 'card-error');
    actionError.setAttribute('role', 'alert');
    actionError.hidden = true;
    el.append(actions, actionError, approvedBy, output, result, evidence);
    turn.body.appendChild(el);
    // Text after a tool call starts a new segment below the card.
    turn.segment = null;
    const card = { el, badge, command: commandEl, actions, output, result, evidence, approvedBy, actionError, liveOutput: false, done: false, hunks: null, edit: null };
    const key = cardKey(turnId, callId);
    cards.set(key, [...(cards.get(key) || []), card]);
    return card;
  }

  function setCardStatus(card, status) {
    card.el.dataset.status = status;
    // Dropping hunks means something only while the edit waits for its answer.
    for (const box of card.el.querySelectorAll('.hunk-keep-box')) /** @type {HTMLInputElement} */ (box).disabled = status !== 'waiting';
    card.badge.textContent = STATUS_LABELS[status] || status;
    card.badge.className = 'badge ' + status;
  }

  /**
   * What the approval showed about a call: directory, environment, limits,
   * sandbox, approval mode. Live (mino/approvalRequest) all are there; from
   * history (mino/history's call), those the session recorded.
   */
  function callFacts(p) {
    const dl = h('dl', 'tool-meta');
    if (typeof p.directory === 'string') metaRow(dl, 'Directory', p.directory);
    if (p.environment && typeof p.environment === 'object') {
      const env = p.environment;
      const names = Object.keys(env).sort();
      // Collapsed; each variable is a row whose value wraps below its name when
      // the panel is narrow (see .env-table in main.css).
      const details = h('details', 'env');
      details.appendChild(h('summary', null, names.length + ' variable' + (names.length === 1 ? '' : 's')));
      const table = h('table', 'env-table');
      for (const name of names) {
        const tr = h('tr');
        const th = h('th', null, name);
        th.setAttribute('scope', 'row');
        tr.appendChild(th);
        tr.appendChild(h('td', null, env[name]));
        table.appendChild(tr);
      }
      details.appendChild(table);
      metaRow(dl, 'Environment', details, 'env-row');
    }
    if (p.limits && typeof p.limits === 'object') {
      metaRow(
        dl,
        'Limits',
        'timeout ' + p.limits.timeoutSeconds + ' s, output ' + formatBytes(p.limits.outputLimitBytes),
      );
    }
    if (p.sandbox) metaRow(dl, 'Sandbox', SANDBOX_LABELS[p.sandbox] || p.sandbox, 'sandbox-row');
    if (p.approvalMode) metaRow(dl, 'Approval mode', APPROVAL_MODE_LABELS[p.approvalMode] || p.approvalMode, 'approval-mode-row');
    return dl;
  }

  function showApproval(p) {
    const turn = getTurn(p.turnId);
    const card = openCard(p.turnId, p.callId) || createCard(turn, p.turnId, p.callId, p.command);
    // The command asked about is the one shown, whatever the card held.
    card.command.textContent = p.command;
    card.command.hidden = false;
    // An edit shows its file and hunks instead of a command's directory, environment and limits.
    const edit = editOf(p);
    const read = readOf(p);
    const mcp = mcpOf(p);
    if (edit) showEditProposal(card, p, edit);
    else if (read) showReadProposal(card, p, read);
    else if (mcp) showMcpProposal(card, p, mcp);
    else card.el.insertBefore(callFacts(p), card.actions);
    card.el.querySelectorAll('.deny-in-reach').forEach((n) => n.remove());
    if (!edit && Array.isArray(p.denyRules) && p.denyRules.length > 0) {
      const names = p.denyRules.map((r) => (r && (r.command || r.pattern)) || '').filter((n) => n).join(', ');
      const note = h('div', 'edit-warning deny-in-reach', 'May reach a program a deny rule refuses (' + names + '): it asks instead of running by itself.');
      note.setAttribute('role', 'note');
      card.el.insertBefore(note, card.actions);
    }

    card.actions.textContent = '';
    card.actionError.hidden = true;
    const question = h('span', 'question', edit ? (edit.newFile ? 'Create this file?' : 'Apply this edit?') : read ? 'Allow this read?' : mcp ? 'Call this MCP tool?' : 'Run this command?');
    question.id = 'mino-el-' + nextElementId++;
    const approve = deliberateButton('primary approve', 'Approve', () => {
      const kept = keptHunks(card);
      decide(card, p.turnId, p.callId, DECISION.approve, kept ? { acceptedHunks: kept } : undefined);
    });
    const deny = deliberateButton('secondary deny', 'Deny', () => decide(card, p.turnId, p.callId, DECISION.deny));
    // The choices that open a form come before Approve and Deny in the DOM
    // (shown below them), so Shift+Tab from the input still reaches Deny first.
    const more = h('div', 'more-actions');
    // Rules exist only where the server reports an approval mode. A command
    // that is not one plain command, or an edit outside the workspace, has no
    // suggested rule: no rule can cover it. An edit's rule is a path rule.
    const rulesOffered = typeof p.approvalMode === 'string';
    const suggested = p.suggestedRule && (p.suggestedRule.kind === 'path' ? p.suggestedRule.pattern : p.suggestedRule.kind === 'mcp' ? p.suggestedRule.tool : p.suggestedRule.command);
    const ruleable = rulesOffered && typeof suggested === 'string';
    // The rule choices, allow and deny alike, are offered only where a rule
    // can cover the call (the same suggestion prefills both).
    // An MCP call's rule is for this tool or every tool of its server (chosen in the form).
    const choices = mcp
      ? [
          [DECISION.allowSession, 'Allow this tool or its server for session…'],
          [DECISION.allowWorkspace, 'Always allow this tool or its server in workspace…'],
          [DECISION.denySession, 'Deny for session…'],
          [DECISION.denyWorkspace, 'Deny for workspace…'],
          ['denyReason', 'Deny with reason…'],
        ]
      : [
          [DECISION.allowSession, 'Allow for session…'],
          [DECISION.allowWorkspace, 'Always allow in workspace…'],
          [DECISION.denySession, 'Deny for session…'],
          [DECISION.denyWorkspace, 'Deny for workspace…'],
          ['denyReason', 'Deny with reason…'],
        ];
    for (const [choice, label] of choices) {
      const isRule = choice !== 'denyReason';
      if (isRule && !rulesOffered) continue;
      const b = deliberateButton('secondary open-form ' + choice, label, () => openAnswerForm(card, p, choice));
      b.dataset.choice = choice;
      b.setAttribute('aria-describedby', question.id + ' ' + card.command.id);
      if (isRule && !ruleable) {
        b.disabled = true;
        b.dataset.keepDisabled = 'true';
        b.dataset.ruleless = 'true';
      }
      more.appendChild(b);
    }
    if (rulesOffered && !ruleable) {
      more.appendChild(h('span', 'no-rule-note', mcp
        ? 'No rule can name this MCP tool: its call is asked about.'
        : read
        ? 'No rule can cover this read: its path is outside the workspace.'
        : p.edit
        ? 'No rule can cover this edit: its file is outside the workspace.'
        : 'No rule can cover this command: it is not one plain command.'));
    }
    for (const b of [approve, deny]) b.setAttribute('aria-describedby', question.id + ' ' + card.command.id);
    card.actions.append(question, more, approve, deny);
    card.actions.hidden = false;
    // Announced with its command; never focused (see deliberateButton).
    card.el.setAttribute('role', 'group');
    const asks = edit
      ? editAsks(edit)
      : read
      ? 'Mino asks to read outside the workspace: ' + read.path
      : mcp
      ? 'Mino asks to call the tool ' + mcp.tool + ' of the MCP server ' + mcp.server
      : 'Mino asks to run: ' + p.command;
    card.el.setAttribute('aria-label', asks);
    announce(asks + '. Approve or Deny in its card.');
    setCardStatus(card, 'waiting');
    scrollToEnd();
  }

  /** The decisions that refuse the call (with or without a rule). */
  const DENYING = new Set([DECISION.deny, DECISION.denySession, DECISION.denyWorkspace]);

  /** `extra`: the `reason` of a deny, the `rule` of allowSession/allowWorkspace/denySession/denyWorkspace. */
  function decide(card, turnId, callId, decision, extra) {
    // The person answered from the card (its buttons are disabled now, which
    // would drop focus on the page): back to the question they were writing.
    if (card.el.contains(document.activeElement)) focusInputOnceKeysUp();
    setCardControlsDisabled(card, true);
    card.actionError.hidden = true;
    setCardStatus(card, DENYING.has(decision) ? 'denied' : 'approved');
    post(Object.assign({ type: 'approval', turnId, callId, decision }, extra || {}));
  }

  function setCardControlsDisabled(card, disabled) {
    for (const c of card.actions.querySelectorAll('button, input')) {
      const control = /** @type {HTMLInputElement} */ (c);
      control.disabled = disabled || control.dataset.keepDisabled === 'true';
    }
  }

  const SANDBOX_LABELS = {
    off: 'off: the command runs with your permissions',
    'read-only': 'read-only: no writes, no network',
    'workspace-write': 'workspace-write: writes only in the workspace and a temporary folder, no network',
  };
  const APPROVAL_MODE_LABELS = {
    ask: 'ask for every command',
    rules: 'ask unless a rule allows it',
    'sandboxed-auto': 'run sandboxed commands without asking',
    plan: 'plan mode: commands and edits are refused, the model plans',
  };

  /** What each rule choice's form says and its confirm button reads. */
  const RULE_FORMS = {
    allowSession: { title: 'Allow without asking, for the rest of this session:', confirm: 'Allow for session', verb: 'allows' },
    allowWorkspace: { title: 'Always allow in this workspace (kept in its rules file):', confirm: 'Always allow', verb: 'allows' },
    denySession: { title: 'Deny, and refuse without asking for the rest of this session:', confirm: 'Deny for session', verb: 'denies' },
    denyWorkspace: { title: 'Deny, and always refuse in this workspace (kept in its rules file):', confirm: 'Deny for workspace', verb: 'denies' },
  };

  /**
   * The inline form of "Allow for session…", "Always allow in workspace…",
   * "Deny for session…", "Deny for workspace…" or "Deny with reason…": the
   * rule (prefilled with the server's suggestion, editable, prefix or exact)
   * or the reason. A deny rule's form denies the call: it never approves.
   * The person just chose it, so its text field takes focus; its confirm
   * button never does, and only a deliberate click (or Enter/Space pressed on
   * it) confirms. Enter in the text field confirms nothing.
   */
  function openAnswerForm(card, p, choice) {
    const old = card.actions.querySelector('.answer-form');
    if (old) old.remove();
    for (const b of card.actions.querySelectorAll('.open-form')) b.setAttribute('aria-expanded', String(b === card.actions.querySelector('.open-form.' + choice)));
    const isDeny = choice === 'denyReason';
    const ruleForm = RULE_FORMS[choice];
    const denies = isDeny || DENYING.has(choice);
    const formEl = h('div', 'answer-form ' + choice);
    formEl.setAttribute('role', 'group');
    const titleId = 'mino-el-' + nextElementId++;
    const heading = h('div', 'answer-form-title', isDeny ? 'Deny, and tell Mino why:' : ruleForm.title);
    heading.id = titleId;
    formEl.setAttribute('aria-labelledby', titleId);
    formEl.appendChild(heading);
    const error = h('div', 'answer-form-error');
    error.setAttribute('role', 'alert');
    error.hidden = true;
    /** @type {HTMLInputElement} */
    let field;
    /** @type {() => Record<string, unknown> | null} */
    let answer;
    if (isDeny) {
      field = /** @type {HTMLInputElement} */ (h('input', 'deny-reason'));
      field.type = 'text';
      field.placeholder = 'Reason (Mino reads it)';
      field.setAttribute('aria-label', 'Reason for denying');
      formEl.appendChild(field);
      answer = () => {
        const reason = field.value.trim();
        return reason ? { reason } : {};
      };
    } else if (p.suggestedRule.kind === 'mcp') {
      // An MCP rule: this tool (`server/tool`, the narrower and the default) or every tool of its server (`server/*`).
      const tool = String(p.suggestedRule.tool);
      const server = tool.split('/')[0];
      const kinds = h('div', 'rule-kinds mcp-rule-kinds');
      kinds.setAttribute('role', 'radiogroup');
      kinds.setAttribute('aria-label', 'What the rule ' + ruleForm.verb);
      const group = 'mino-rule-kind-' + nextElementId++;
      /** @type {HTMLInputElement[]} */
      const radios = [];
      for (const [value, label] of [[tool, 'this tool (' + tool + ')'], [server + '/*', 'every tool of the MCP server ' + server]]) {
        const lab = h('label', 'rule-kind');
        const radio = /** @type {HTMLInputElement} */ (h('input', 'mcp-rule-tool'));
        radio.type = 'radio';
        radio.name = group;
        radio.value = value;
        radio.checked = value === tool;
        radios.push(radio);
        lab.append(radio, ' ' + label);
        kinds.appendChild(lab);
      }
      formEl.appendChild(kinds);
      field = radios[0];
      if (p.approvalMode === 'ask') {
        formEl.appendChild(h('div', 'answer-form-note', 'The approval mode is ask: this call ' +
          (denies ? 'is denied' : 'is made') + ' now and the rule is kept, but later calls use it only once the mode is rules.'));
        formEl.appendChild(linkButton('Change the approval mode…', { type: 'setApprovalMode' }, 'answer-form-mode'));
      }
      answer = () => {
        const picked = radios.find((r) => r.checked);
        return { rule: { kind: 'mcp', tool: picked ? picked.value : tool } };
      };
    } else if (p.suggestedRule.kind === 'path') {
      // A path rule: a glob relative to the session's directory, no kinds to choose.
      field = /** @type {HTMLInputElement} */ (h('input', 'rule-command rule-pattern'));
      field.type = 'text';
      field.value = p.suggestedRule.pattern;
      field.spellcheck = false;
      field.setAttribute('aria-label', 'Files the rule ' + ruleForm.verb + ' edits of (a glob such as src/**/*.rs)');
      formEl.appendChild(field);
      answer = () => {
        const pattern = field.value.trim();
        if (!pattern) {
          error.textContent = 'Enter the files the rule ' + ruleForm.verb + ' (a glob such as src/**/*.rs).';
          error.hidden = false;
          return null;
        }
        return { rule: { kind: 'path', pattern } };
      };
    } else {
      const prefill = { prefix: p.suggestedRule.command, exact: p.command };
      let kind = 'prefix';
      const kinds = h('div', 'rule-kinds');
      kinds.setAttribute('role', 'radiogroup');
      kinds.setAttribute('aria-label', 'Rule kind');
      const radios = [];
      const group = 'mino-rule-kind-' + nextElementId++;
      for (const [value, label] of [['prefix', 'commands starting with'], ['exact', 'exactly this command']]) {
        const lab = h('label', 'rule-kind');
        const radio = /** @type {HTMLInputElement} */ (h('input'));
        radio.type = 'radio';
        radio.name = group;
        radio.value = value;
        radio.checked = value === kind;
        radio.addEventListener('change', () => {
          if (!radio.checked) return;
          // An untouched prefill follows the kind; an edited rule stays as written.
          if (field.value === prefill[kind]) field.value = prefill[value];
          kind = value;
        });
        radios.push(radio);
        lab.append(radio, ' ' + label);
        kinds.appendChild(lab);
      }
      formEl.appendChild(kinds);
      field = /** @type {HTMLInputElement} */ (h('input', 'rule-command'));
      field.type = 'text';
      field.value = prefill[kind];
      field.spellcheck = false;
      field.setAttribute('aria-label', 'Command the rule ' + ruleForm.verb);
      formEl.appendChild(field);
      if (p.approvalMode === 'ask') {
        formEl.appendChild(h('div', 'answer-form-note', 'The approval mode is ask: this command ' +
          (denies ? 'is denied' : 'runs') + ' now and the rule is kept, but later commands use it only once the mode is rules.'));
        // The way to that mode: Set Approval Mode, which asks (it never switches by itself).
        formEl.appendChild(linkButton('Change the approval mode…', { type: 'setApprovalMode' }, 'answer-form-mode'));
      }
      answer = () => {
        const command = field.value.trim();
        if (!command) {
          error.textContent = 'Enter the command the rule ' + ruleForm.verb + '.';
          error.hidden = false;
          return null;
        }
        return { rule: { kind, command } };
      };
    }
    field.addEventListener('input', () => (error.hidden = true));
    formEl.appendChild(error);
    const confirmLabel = isDeny ? 'Deny' : ruleForm.confirm;
    const confirm = deliberateButton((denies ? 'secondary' : 'primary') + ' confirm-answer', confirmLabel, () => {
      const extra = answer();
      if (extra === null) return;
      decide(card, p.turnId, p.callId, isDeny ? DECISION.deny : choice, extra);
    });
    confirm.setAttribute('aria-describedby', titleId + ' ' + card.command.id);
    const back = /** @type {HTMLButtonElement} */ (h('button', 'secondary close-form', 'Back'));
    back.type = 'button';
    const close = () => {
      formEl.remove();
      const opener = /** @type {HTMLElement | null} */ (card.actions.querySelector('.open-form.' + choice));
      opener?.setAttribute('aria-expanded', 'false');
      opener?.focus({ preventScroll: true });
    };
    back.addEventListener('click', close);
    // Escape leaves the form (not the turn: the view's Escape cancels a running turn).
    formEl.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.stopPropagation();
        close();
      }
    });
    const buttons = h('div', 'answer-form-buttons');
    buttons.append(confirm, back);
    formEl.appendChild(buttons);
    card.actions.appendChild(formEl);
    field.focus({ preventScroll: true });
    scrollToEnd();
  }

  // ------------------------------------------------------------ deliberate answers
  //
  // A prompt that lets something act (an approval card, the acknowledgement's
  // Yes) appears while the person may be typing. Its button never takes focus,
  // and only a deliberate act answers it: a pointer click, or Enter/Space whose
  // press began on the button itself (so the person moved focus there after the
  // prompt appeared). A key typed for the composer, or held down since before,
  // never reaches it.

  /** Enter and Space presses in progress, seen before any element or default action. */
  const activationKeysDown = new Set();
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
  function focusInputOnceKeysUp() {
    if (activationKeysDown.size === 0) return focusInput();
    const onUp = () => {
      if (activationKeysDown.size > 0) return;
      document.removeEventListener('keyup', onUp, true);
      focusInput();
    };
    // After the capture listener above has forgotten the key.
    document.addEventListener('keyup', onUp, true);
  }

  function deliberateButton(className, label, onAnswer) {
    const button = /** @type {HTMLButtonElement} */ (h('button', className, label));
    button.type = 'button';
    onDeliberateClick(button, onAnswer);
    return button;
  }

  /** Calls `onAnswer` for a click on `button` that is a deliberate act (see above). */
  function onDeliberateClick(button, onAnswer) {
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

  function formatBytes(n) {
    if (typeof n !== 'number') return String(n);
    if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return n / (1024 * 1024) + ' MiB';
    if (n >= 1024 && n % 1024 === 0) return n / 1024 + ' KiB';
    return n + ' bytes';
  }

  function toolStarted(p) {
    const turn = getTurn(p.turnId);
    const card = openCard(p.turnId, p.callId) || createCard(turn, p.turnId, p.callId, p.command);
    card.actions.hidden = true;
    card.actionError.hidden = true;
    setCardStatus(card, 'running');
    showApprovedBy(card, p.approvedBy, p.sandbox);
  }

  /**
   * Who let the call run, when it was not the person's own answer in this
   * card: a rule (named by its command), or the sandbox (sandboxed-auto).
   */
  function showApprovedBy(card, approvedBy, sandbox) {
    if (!approvedBy || typeof approvedBy.kind !== 'string') return;
    let text = '';
    if (approvedBy.kind === 'rule' && approvedBy.rule && typeof (approvedBy.rule.command ?? approvedBy.rule.pattern) === 'string') {
      const rule = approvedBy.rule;
      text = 'approved by rule `' + (rule.command ?? rule.pattern) + '`';
      card.approvedBy.title = (rule.kind === 'exact' ? 'Exactly this command' : rule.kind === 'path' ? 'Edits of files matching this' : 'Commands starting with this') +
        (rule.scope === 'workspace' ? ', for this workspace' : ', for this session') + (rule.id ? ' (rule ' + rule.id + ')' : '');
    } else if (approvedBy.kind === 'sandbox') {
      text = 'approved automatically in the sandbox' + (sandbox && sandbox !== 'off' ? ' (' + sandbox + ')' : '');
    } else {
      return;
    }
    card.approvedBy.textContent = text;
    card.approvedBy.hidden = false;
  }

  function toolOutput(p) {
    const card = openCard(p.turnId, p.callId);
    if (!card) return;
    card.output.hidden = false;
    card.liveOutput = true;
    const span = h('span', p.stream === 'stderr' ? 'stderr' : 'stdout', p.chunk);
    card.output.appendChild(span);
    card.output.scrollTop = card.output.scrollHeight;
    scrollToEnd();
  }

  /** @returns {Card} the card that now shows this result */
  function toolResult(p, turnId) {
    const id = turnId || p.turnId;
    const card = openCard(id, p.callId) || createCard(getTurn(id), id, p.callId, p.command || '');
    card.done = true;
    card.actions.hidden = true;
    setCardStatus(card, p.status);
    // An edit's applied diff is shown as hunks, not as text.
    if (!showEditResult(card, p) && !card.liveOutput && p.output) {
      card.output.textContent = p.output;
      card.output.hidden = false;
    }
    card.result.hidden = false;
    card.result.textContent =
      'Result: ' + (p.status === TOOL_STATUS.unknown ? 'unknown, the command may have run' : STATUS_LABELS[p.status] || p.status) +
      (typeof p.exitCode === 'number' ? ' (exit code ' + p.exitCode + ')' : '');
    card.result.className = 'tool-result ' + p.status;
    showEvidence(card, p.status, p.evidence);
    return card;
  }

  /**
   * What the command supervisor recorded about a call whose result is unknown
   * (mino/recovery, mino/history). Shown beside the result, which stays unknown.
   */
  function showEvidence(card, status, evidence) {
    if (status !== TOOL_STATUS.unknown || !evidence || typeof evidence.summary !== 'string' || !evidence.summary) return;
    card.evidence.textContent = 'Evidence: ' + evidence.summary;
    card.evidence.hidden = false;
  }

  // ------------------------------------------------------------ edits
  //
  // An edit_file / write_file call's card shows its file (path, new or not,
  // size, a prominent warning when it leaves the workspace) and its hunks;
  // "Review diff" asks the host to open VS Code's diff editor. The result
  // replaces the proposed hunks with the applied diff.

  /** Hunk lines drawn in a card at most; "Review diff" shows a longer diff whole. */
  const MAX_DIFF_LINES_SHOWN = 2000;

  /** The request's or result's `edit`, when it is a well-formed one. */
  function editOf(p) {
    const e = p && p.edit;
    return e && typeof e.path === 'string' && typeof e.diff === 'string' ? e : null;
  }

  function editAsks(edit) {
    return 'Mino asks to ' + (edit.newFile ? 'create' : 'edit') + ': ' + edit.path + (edit.leavesWorkspace ? ' (outside the workspace)' : '');
  }

  /**
   * A unified diff as hunks: `{header, lines: [{kind, text, oldNo?, newNo?}]}`.
   * The `---`/`+++` header is left out; "\ No newline at end of file" is kept
   * as a note line.
   */
  function parseHunks(diff) {
    /** @type {{ header: string, lines: { kind: string, text: string, oldNo?: number, newNo?: number }[] }[]} */
    const hunks = [];
    /** @type {{ header: string, lines: { kind: string, text: string, oldNo?: number, newNo?: number }[] } | null} */
    let hunk = null;
    let oldNo = 0;
    let newNo = 0;
    const lines = diff.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    for (const line of lines) {
      const m = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
      if (m) {
        oldNo = Number(m[1]);
        newNo = Number(m[2]);
        // A hunk starting at line 0 (an empty side) has no lines on that side.
        if (oldNo === 0) oldNo = 1;
        if (newNo === 0) newNo = 1;
        hunk = { header: line, lines: [] };
        hunks.push(hunk);
      } else if (!hunk) {
        continue;
      } else if (line.startsWith('+')) {
        hunk.lines.push({ kind: 'add', text: line.slice(1), newNo: newNo++ });
      } else if (line.startsWith('-')) {
        hunk.lines.push({ kind: 'del', text: line.slice(1), oldNo: oldNo++ });
      } else if (line.startsWith('\\')) {
        hunk.lines.push({ kind: 'note', text: line });
      } else {
        hunk.lines.push({ kind: 'ctx', text: line.slice(1), oldNo: oldNo++, newNo: newNo++ });
      }
    }
    return hunks;
  }

  /**
   * The hunks of `diff` as a table: old and new line numbers, the sign, the
   * text. With `choice` (an edit waiting for approval, of two hunks or more),
   * each hunk's header has a "Keep" checkbox, checked at first; `choice.onChange`
   * hears every toggle. A checkbox decides nothing: it only narrows what
   * Approve approves.
   */
  function renderDiff(diff, choice) {
    const box = h('div', 'diff-hunks');
    const hunks = parseHunks(diff);
    if (!hunks.length) {
      box.appendChild(h('div', 'diff-empty', 'No changed lines.'));
      return box;
    }
    const table = h('table', 'diff-table');
    let shown = 0;
    let total = 0;
    for (const hunk of hunks) total += hunk.lines.length + 1;
    for (const [index, hunk] of hunks.entries()) {
      if (shown >= MAX_DIFF_LINES_SHOWN) break;
      const head = h('tr', 'diff-hunk-header');
      const th = h('td', null, hunk.header);
      th.colSpan = 4;
      if (choice && hunks.length > 1) {
        const label = h('label', 'hunk-keep');
        const box = /** @type {HTMLInputElement} */ (h('input', 'hunk-keep-box'));
        box.type = 'checkbox';
        box.checked = true;
        box.dataset.hunk = String(index);
        box.setAttribute('aria-label', 'Keep hunk ' + (index + 1) + ' of ' + hunks.length + ' (' + hunk.header + ')');
        box.addEventListener('change', () => choice.onChange(index, box.checked));
        label.append(box, ' Keep');
        th.textContent = '';
        const row = h('div', 'hunk-header-row');
        row.append(label, h('span', 'hunk-header-text', hunk.header));
        th.appendChild(row);
        head.classList.add('selectable');
      }
      head.appendChild(th);
      head.dataset.hunk = String(index);
      table.appendChild(head);
      shown++;
      for (const line of hunk.lines) {
        if (shown >= MAX_DIFF_LINES_SHOWN) break;
        const tr = h('tr', 'diff-line ' + line.kind);
        tr.dataset.hunk = String(index);
        tr.append(
          h('td', 'diff-no old', line.oldNo === undefined ? '' : line.oldNo),
          h('td', 'diff-no new', line.newNo === undefined ? '' : line.newNo),
          h('td', 'diff-sign', line.kind === 'add' ? '+' : line.kind === 'del' ? '-' : ''),
          h('td', 'diff-text', line.text),
        );
        table.appendChild(tr);
        shown++;
      }
    }
    box.appendChild(table);
    if (shown < total) box.appendChild(h('div', 'diff-more', (total - shown) + ' more lines not shown here: Review diff shows the whole change.'));
    return box;
  }

  /** The card's edit section (created on first use), before its actions. */
  function editSection(card) {
    const found = /** @type {HTMLElement | null} */ (card.el.querySelector('.edit-view'));
    if (found) return found;
    const section = h('div', 'edit-view');
    card.el.insertBefore(section, card.actions);
    return section;
  }

  /** Shows the diff `diff` in the card's edit section under `label`, replacing the one shown. */
  function showEditDiff(card, label, diff, review, choice) {
    const section = editSection(card);
    const old = section.querySelector('.edit-diff');
    if (old) old.remove();
    const box = h('div', 'edit-diff');
    const bar = h('div', 'edit-diff-bar');
    bar.appendChild(h('span', 'edit-diff-label', label));
    // Opening the diff editor decides nothing, and like every card button it
    // never takes focus and answers only a deliberate click or key.
    const keep = /** @type {HTMLElement | null} */ (old && old.querySelector('.review-diff'));
    if (keep) bar.appendChild(keep);
    else if (review) bar.appendChild(deliberateButton('secondary review-diff', 'Review diff', review));
    box.append(bar, renderDiff(diff, choice));
    section.appendChild(box);
  }

  /** The approval card of an edit: where it writes, what it becomes, the hunks. */
  function showEditProposal(card, p, edit) {
    const name = card.el.querySelector('.tool-name');
    if (name && typeof edit.tool === 'string') name.textContent = edit.tool;
    const section = editSection(card);
    section.textContent = '';
    if (edit.leavesWorkspace) {
      const warning = h('div', 'edit-warning', 'Writes outside the workspace: ' + edit.path);
      warning.setAttribute('role', 'note');
      section.appendChild(warning);
    }
    if (typeof edit.protected === 'string') {
      // Asked whatever rule or mode is in force; the server says why.
      const warning = h('div', 'edit-warning edit-protected', 'Protected path: ' + edit.protected);
      warning.setAttribute('role', 'note');
      section.appendChild(warning);
    }
    const dl = h('dl', 'tool-meta');
    metaRow(dl, 'Path', edit.path, 'edit-path');
    metaRow(dl, 'File', edit.newFile ? 'new file (created)' : 'existing file (changed)', 'edit-file');
    metaRow(dl, 'Size after', formatBytes(edit.size), 'edit-size');
    if (p.approvalMode) metaRow(dl, 'Approval mode', APPROVAL_MODE_LABELS[p.approvalMode] || p.approvalMode, 'approval-mode-row');
    section.appendChild(dl);
    // Hunks the person may drop before approving: Approve then approves the kept ones alone.
    const count = parseHunks(edit.diff).length;
    card.hunks = count > 1 ? { count, kept: new Set(Array.from({ length: count }, (_, i) => i)) } : null;
    const review = () => {
      const kept = keptHunks(card);
      post(Object.assign({ type: 'reviewEdit', turnId: p.turnId, callId: p.callId }, kept ? { acceptedHunks: kept } : {}));
    };
    const choice = card.hunks ? { onChange: (index, keep) => {
      if (!card.hunks) return;
      if (keep) card.hunks.kept.add(index);
      else card.hunks.kept.delete(index);
      showHunkChoice(card, edit);
      // The diff editor, if open, shows the kept hunks alone too.
      const kept = keptHunks(card);
      post(Object.assign({ type: 'hunksKept', turnId: p.turnId, callId: p.callId }, kept ? { kept } : {}));
    } } : undefined;
    card.edit = edit;
    showEditDiff(card, 'Proposed change', edit.diff, review, choice);
  }

  /** Hunks kept or rejected in the diff editor (its lenses): the card's checkboxes follow. */
  function onHunks(msg) {
    const card = openCard(msg.turnId, msg.callId);
    if (!card || !card.hunks || !card.edit || card.el.dataset.status !== 'waiting') return;
    const hunks = card.hunks;
    const kept = Array.isArray(msg.kept) ? msg.kept : Array.from({ length: hunks.count }, (_, i) => i);
    hunks.kept = new Set(kept.filter((i) => Number.isInteger(i) && i >= 0 && i < hunks.count));
    for (const b of card.el.querySelectorAll('.hunk-keep-box')) {
      const box = /** @type {HTMLInputElement} */ (b);
      box.checked = hunks.kept.has(Number(box.dataset.hunk));
    }
    showHunkChoice(card, card.edit);
  }

  /** The kept hunks (ascending) when some were dropped; null when the whole edit is kept. */
  function keptHunks(card) {
    if (!card.hunks || card.hunks.kept.size === card.hunks.count) return null;
    return [...card.hunks.kept].sort((a, b) => a - b);
  }

  /** The card's question and Approve say how much of the edit Approve writes. */
  function showHunkChoice(card, edit) {
    if (!card.hunks) return;
    const { count, kept } = card.hunks;
    const question = card.actions.querySelector('.question');
    const approve = /** @type {HTMLButtonElement | null} */ (card.actions.querySelector('.approve'));
    let note = card.actions.querySelector('.hunk-note');
    if (!note) {
      note = h('span', 'hunk-note');
      note.setAttribute('role', 'status');
      card.actions.insertBefore(note, card.actions.querySelector('.more-actions'));
    }
    const rulesOffered = card.actions.querySelectorAll('.open-form');
    // A rejected hunk stays in sight, struck through.
    for (const tr of card.el.querySelectorAll('.edit-diff tr[data-hunk]')) {
      tr.classList.toggle('rejected', !kept.has(Number(/** @type {HTMLElement} */ (tr).dataset.hunk)));
    }
    if (kept.size === count) {
      if (question) question.textContent = edit.newFile ? 'Create this file?' : 'Apply this edit?';
      note.textContent = '';
      note.hidden = true;
    } else {
      if (question) question.textContent = 'Apply ' + kept.size + ' of ' + count + ' hunks of this edit?';
      note.textContent = kept.size === 0
        ? 'No hunk kept: Deny to write nothing.'
        : 'Approve writes the kept hunks alone; the others are rejected. A rule always covers the whole edit.';
      note.hidden = false;
    }
    if (approve) {
      approve.dataset.keepDisabled = kept.size === 0 ? 'true' : '';
      approve.disabled = kept.size === 0 || card.el.dataset.status !== 'waiting';
    }
    // A rule approves whole edits: offered only while the whole edit is kept.
    for (const b of rulesOffered) {
      const button = /** @type {HTMLButtonElement} */ (b);
      if (!button.classList.contains(DECISION.allowSession) && !button.classList.contains(DECISION.allowWorkspace)) continue;
      if (button.dataset.ruleless === 'true') continue;
      button.disabled = kept.size !== count || card.el.dataset.status !== 'waiting';
      button.dataset.keepDisabled = kept.size !== count ? 'true' : '';
    }
  }

  /**
   * A result that carries the applied diff (an edit's success): the card
   * shows what was done and the applied hunks instead of the diff as text.
   */
  function showEditResult(card, p) {
    if (typeof p.diff !== 'string') return false;
    if (typeof p.tool === 'string') {
      const name = card.el.querySelector('.tool-name');
      if (name) name.textContent = p.tool;
    }
    const summary = typeof p.output === 'string' ? p.output.split('\n\n')[0] : '';
    card.output.textContent = summary;
    card.output.hidden = !summary;
    showEditDiff(card, 'Applied change', p.diff, null);
    return true;
  }

  // ------------------------------------------------------------ reads
  //
  // A read (read_file, list_files, search) inside the workspace asks nothing:
  // it is one row, "read src/main.rs · lines 1-200 of 812", which a click (or
  // Enter or Space on it) opens to show its output, and closes again. Live and
  // restored from history it is the same row. A read that asks (its path
  // leaves the workspace) is an approval card like any call.

  /**
   * @typedef {{ el: HTMLElement, toggle: HTMLButtonElement, what: HTMLElement, outcome: HTMLElement,
   *   output: HTMLElement, done: boolean }} ReadRow
   */
  /** (turnId, callId) → that call's rows, oldest first (call ids repeat, as for cards). @type {Map<string, ReadRow[]>} */
  const readRows = new Map();
  /** The longest path or pattern a row shows whole (its title shows all of it). */
  const READ_PART_SHOWN = 80;

  /** The `read` of a request, start, result or history call, when it is a well-formed one. */
  function readOf(p) {
    const r = p && p.read;
    return r && typeof r.tool === 'string' && typeof r.path === 'string' ? r : null;
  }

  /** A read shown as a row: one that asked nothing (its path stays in the workspace). */
  function isRowRead(p) {
    const read = readOf(p);
    return !!read && !read.leavesWorkspace;
  }

  function oneLine(s, max) {
    const flat = String(s).replace(/\n/g, '\\n').replace(/\t/g, ' ');
    return flat.length > max ? flat.slice(0, max - 1) + '…' : flat;
  }

  /** What a read asked for: `read src/main.rs`, `list *.rs in src`, `search /fn main/`. */
  function readWhat(read) {
    const here = !read.path || read.path === '.';
    const path = oneLine(read.path, READ_PART_SHOWN);
    const within = here ? '' : ' in ' + path;
    const pattern = typeof read.pattern === 'string' ? oneLine(read.pattern, READ_PART_SHOWN) : null;
    if (read.tool === 'read_file') {
      let lines = '';
      if (typeof read.endLine === 'number') lines = ' (lines ' + (read.startLine ?? 1) + '-' + read.endLine + ')';
      else if (typeof read.startLine === 'number') lines = ' (from line ' + read.startLine + ')';
      return 'read ' + path + lines;
    }
    if (read.tool === 'list_files') return pattern !== null ? 'list ' + pattern + within : 'list ' + (here ? '.' : path);
    if (read.tool === 'search') return 'search /' + (pattern ?? '') + '/' + within;
    return read.tool + ' ' + path;
  }

  /** What a read did, after its `what`: the server's summary, or why it did not. */
  function readOutcome(read, status, output) {
    const first = oneLine((typeof output === 'string' ? output.split('\n')[0] : '').trim(), 120);
    if (status === undefined || status === null) return 'reading…';
    if (status === TOOL_STATUS.success) return typeof read.summary === 'string' ? oneLine(read.summary, 120) : first;
    if (status === TOOL_STATUS.unavailable) return 'result unavailable: Mino stopped before it was saved';
    const label = STATUS_LABELS[status] || status;
    return first ? label + ': ' + first : label;
  }

  /** @returns {ReadRow} */
  function createReadRow(turn, turnId, callId, read) {
    const el = h('div', 'read-row');
    el.dataset.callId = callId;
    el.dataset.tool = read.tool;
    const toggle = /** @type {HTMLButtonElement} */ (h('button', 'read-toggle'));
    toggle.type = 'button';
    toggle.setAttribute('aria-expanded', 'false');
    const output = h('pre', 'read-output');
    output.id = 'mino-el-' + nextElementId++;
    output.hidden = true;
    toggle.setAttribute('aria-controls', output.id);
    const what = h('span', 'read-what', readWhat(read));
    const outcome = h('span', 'read-outcome');
    toggle.append(h('span', 'read-chevron'), what, h('span', 'read-sep', ' · '), outcome);
    // Opening a row shows what was read; it decides nothing.
    toggle.addEventListener('click', () => setReadExpanded(row, toggle.getAttribute('aria-expanded') !== 'true'));
    el.append(toggle, output);
    turn.body.appendChild(el);
    // Text after a read starts a new segment below it.
    turn.segment = null;
    const row = { el, toggle, what, outcome, output, done: false };
    const key = cardKey(turnId, callId);
    readRows.set(key, [...(readRows.get(key) || []), row]);
    return row;
  }

  function setReadExpanded(row, expanded) {
    row.toggle.setAttribute('aria-expanded', String(expanded));
    row.output.hidden = !expanded;
    row.el.classList.toggle('expanded', expanded);
    if (expanded) scrollToEnd();
  }

  /** The row of (turnId, callId) still waiting for its result, if any. */
  function openReadRow(turnId, callId) {
    const list = readRows.get(cardKey(turnId, callId));
    const row = list && list[list.length - 1];
    return row && !row.done ? row : undefined;
  }

  function setReadStatus(row, read, status, output) {
    row.el.dataset.status = status || 'running';
    row.outcome.textContent = readOutcome(read, status, output);
    const line = row.what.textContent + ' · ' + row.outcome.textContent;
    row.toggle.title = line + (status ? '. Click to show or hide what it returned.' : '');
    row.toggle.setAttribute('aria-label', line);
  }

  /** mino/toolStarted of a read inside the workspace: its row, reading. */
  function readStarted(p) {
    const read = /** @type {any} */ (readOf(p));
    const row = openReadRow(p.turnId, p.callId) || createReadRow(getTurn(p.turnId), p.turnId, p.callId, read);
    setReadStatus(row, read, null, '');
    scrollToEnd();
    return row;
  }

  /** A read's result (live or from history): the row's outcome, and its output for when it is opened. */
  function readResult(p, turnId) {
    const id = turnId || p.turnId;
    const read = /** @type {any} */ (readOf(p));
    const row = openReadRow(id, p.callId) || createReadRow(getTurn(id), id, p.callId, read);
    row.done = true;
    row.what.textContent = readWhat(read);
    setReadStatus(row, read, p.status, p.output);
    row.output.textContent = typeof p.output === 'string' && p.output ? p.output : '(no output)';
    scrollToEnd();
    return row;
  }

  /** A read from history: the row its live turn showed (closed). */
  function historyRead(turn, turnId, c) {
    const read = /** @type {any} */ (readOf(c));
    if (c.result) return readResult(Object.assign({ callId: c.callId, read }, c.result), turnId);
    const row = createReadRow(turn, turnId, c.callId, read);
    setReadStatus(row, read, null, '');
    return row;
  }

  /** The server stopped: a read still shown as reading did not finish here (it changed nothing). */
  function markReadsUnfinished() {
    for (const row of [...readRows.values()].flat()) {
      if (row.done) continue;
      row.done = true;
      row.el.dataset.status = 'unfinished';
      row.outcome.textContent = 'did not finish: the Mino server stopped (a read changes nothing)';
    }
  }

  /**
   * The approval card of a read whose path leaves the workspace: what it
   * would read, prominently, instead of a command's directory, environment
   * and limits. Nothing about the file is known before the approval.
   */
  function showReadProposal(card, p, read) {
    const name = card.el.querySelector('.tool-name');
    if (name) name.textContent = read.tool;
    card.el.querySelectorAll('.read-view').forEach((n) => n.remove());
    const section = h('div', 'read-view');
    const warning = h('div', 'edit-warning read-outside', 'Reads outside the workspace: ' + read.path);
    warning.setAttribute('role', 'note');
    section.appendChild(warning);
    const dl = h('dl', 'tool-meta');
    metaRow(dl, 'Path', read.path, 'read-path');
    if (typeof read.pattern === 'string') metaRow(dl, read.tool === 'search' ? 'Regular expression' : 'Pattern', read.pattern, 'read-pattern');
    if (typeof read.endLine === 'number') metaRow(dl, 'Lines', (read.startLine ?? 1) + '-' + read.endLine, 'read-lines');
    if (p.approvalMode) metaRow(dl, 'Approval mode', APPROVAL_MODE_LABELS[p.approvalMode] || p.approvalMode, 'approval-mode-row');
    section.appendChild(dl);
    section.appendChild(h('div', 'read-note', 'Mino sees what this reads only if you approve.'));
    card.el.insertBefore(section, card.actions);
  }

  // ------------------------------------------------------------ MCP

  /** The `mcp` of an approval request, when it is a well-formed one. */
  function mcpOf(p) {
    const m = p && p.mcp;
    return m && typeof m.server === 'string' && typeof m.tool === 'string' && typeof m.arguments === 'string' ? m : null;
  }

  /** At most this many characters of a call's arguments are shown (the rest is counted). */
  const MCP_ARGUMENTS_SHOWN = 4000;

  /** The arguments as indented JSON (as sent when they do not parse), cut to MCP_ARGUMENTS_SHOWN. */
  function mcpArguments(text) {
    let pretty = text;
    try {
      pretty = JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      // Shown as the model sent them.
    }
    if (pretty.length <= MCP_ARGUMENTS_SHOWN) return pretty;
    const left = pretty.length - MCP_ARGUMENTS_SHOWN;
    return pretty.slice(0, MCP_ARGUMENTS_SHOWN) + '\n… (' + left + ' more character' + (left === 1 ? '' : 's') + ' not shown)';
  }

  const MCP_HINTS = [
    ['readOnlyHint', 'read-only', 'not read-only'],
    ['destructiveHint', 'destructive', 'not destructive'],
    ['idempotentHint', 'idempotent', 'not idempotent'],
    ['openWorldHint', 'reaches the outside world', 'closed world'],
  ];

  /** The tool's annotations as the server's claims: "the server says: read-only, not destructive". */
  function mcpClaims(annotations) {
    if (!annotations || typeof annotations !== 'object') return null;
    const claims = [];
    if (typeof annotations.title === 'string' && annotations.title) claims.push('titled "' + annotations.title + '"');
    for (const [key, yes, no] of MCP_HINTS) {
      if (annotations[key] === true) claims.push(yes);
      else if (annotations[key] === false) claims.push(no);
    }
    return claims.length ? 'the server says: ' + claims.join(', ') : null;
  }

  /**
   * The approval card of an MCP tool call: the server, the tool, the
   * arguments it would be sent, and the tool's annotations labelled as the
   * server's claims (they never answer for the person: the card asks anyway).
   */
  function showMcpProposal(card, p, mcp) {
    const name = card.el.querySelector('.tool-name');
    if (name) name.textContent = 'mcp';
    card.el.querySelectorAll('.mcp-view').forEach((n) => n.remove());
    const section = h('div', 'mcp-view');
    const dl = h('dl', 'tool-meta');
    metaRow(dl, 'Server', mcp.server, 'mcp-server');
    metaRow(dl, 'Tool', mcp.tool, 'mcp-tool');
    metaRow(dl, 'Arguments', h('pre', 'mcp-arguments', mcpArguments(mcp.arguments)), 'mcp-arguments-row');
    const claims = mcpClaims(mcp.annotations);
    if (claims) metaRow(dl, 'Annotations', claims, 'mcp-annotations');
    if (p.limits && typeof p.limits === 'object') {
      metaRow(dl, 'Limits', 'timeout ' + p.limits.timeoutSeconds + ' s, output ' + formatBytes(p.limits.outputLimitBytes));
    }
    if (p.approvalMode) metaRow(dl, 'Approval mode', APPROVAL_MODE_LABELS[p.approvalMode] || p.approvalMode, 'approval-mode-row');
    section.appendChild(dl);
    if (claims) section.appendChild(h('div', 'mcp-note', "Annotations are the server's own claims; Mino does not check them and asks whatever they say."));
    card.el.insertBefore(section, card.actions);
  }

  /** The notice of the MCP server `server`, if one is shown. */
  function mcpNotice(server) {
    return [...notices.querySelectorAll('.mcp-notice')].find((n) => /** @type {HTMLElement} */ (n).dataset.mcpServer === server);
  }

  /**
   * mino/mcp/status: a server that failed to start or exited is a notice
   * naming it, why, and that its tools are missing, with Restart; one
   * starting again says so; ready takes the notice away.
   */
  function onMcpStatus(p) {
    if (!p || typeof p.server !== 'string') return;
    const old = mcpNotice(p.server);
    if (p.state === 'ready') {
      if (old) {
        old.remove();
        announce('MCP server ' + p.server + ' is ready; its tools are back.');
      }
      return;
    }
    if (p.state === 'starting') {
      // Only a restart of a server that was shown as gone is worth a line.
      if (old) old.replaceWith(mcpNoticeElement(p.server, 'info', 'MCP server ' + p.server + ' is starting…', false));
      return;
    }
    if (p.state !== 'failed' && p.state !== 'exited') return;
    const what = p.state === 'failed' ? 'did not start' : 'stopped';
    const why = typeof p.reason === 'string' && p.reason ? ': ' + p.reason : '';
    const text = 'MCP server ' + p.server + ' ' + what + why + '. Its tools are missing until it is restarted.';
    const n = mcpNoticeElement(p.server, 'warning', text, true);
    if (old) old.replaceWith(n);
    else notices.appendChild(n);
    announce(text);
  }

  function mcpNoticeElement(server, kind, text, restartable) {
    const n = h('div', 'notice mcp-notice ' + kind);
    n.dataset.mcpServer = server;
    n.setAttribute('role', kind === 'warning' ? 'alert' : 'status');
    n.appendChild(h('span', 'mcp-notice-text', text));
    if (restartable) {
      const b = linkButton('Restart', { type: 'mcpRestart', server }, 'mcp-restart');
      b.setAttribute('aria-label', 'Restart the MCP server ' + server);
      n.append(' ', b);
    }
    return n;
  }

  // ------------------------------------------------------------ history & notifications

  function renderHistory(history) {
    showInstructions((history && history.instructionFiles) || []);
    transcript.textContent = '';
    lazyObserver.disconnect();
    endKeeper.disconnect();
    endKeeper.observe(transcript);
    turns.clear();
    cards.clear();
    readRows.clear();
    dirtySegments.clear();
    state.runningTurnId = null;
    followEnd = true;
    showSessionUsage(null);
    if (!history) return updateComposer();
    history.turns.forEach((t, index) => {
      const turn = createTurn(t.turnId, t.input, Array.isArray(t.images) ? t.images : null);
      // Older turns are rendered when they come near the screen; until then
      // their text is there as written.
      const lazy = index < history.turns.length - EAGER_HISTORY_TURNS;
      for (const item of historyItems(t)) {
        if (item.type === 'text' && typeof item.text === 'string' && item.text) {
          appendText(turn, item.text);
          if (lazy && turn.segment) renderLater(turn.segment);
          // History text is settled: a later mino/retrying voids only live text.
          startResponse(turn);
        } else if (item.type === 'call' && item.call && isRowRead(item.call)) {
          historyRead(turn, t.turnId, item.call);
        } else if (item.type === 'call' && item.call) {
          historyCard(turn, t.turnId, item.call);
        } else if (item.type === 'notice' && typeof item.text === 'string') {
          turn.body.appendChild(h('div', 'turn-notice', item.text));
          turn.segment = null;
        }
      }
      startResponse(turn);
      setTurnStatus(turn, t.status, t.reason);
      showTurnUsage(turn, t.usage);
      if (t.rewound) markRewound(turn);
      else if (t.status) addTurnActions(turn, t.turnId);
      if (!t.status) state.runningTurnId = t.turnId;
    });
    showSessionUsage(history.usage);
    renderNow();
    setProgress(state.runningTurnId ? 'thinking' : 'idle');
    updateComposer();
    // Whatever the emptied transcript's scroll events said, a new history opens at its end.
    scrollToEnd(true);
  }

  /**
   * A history turn's content in the order it happened (`items`); from a
   * server without them, its text, then its calls, then its notices.
   */
  function historyItems(t) {
    if (Array.isArray(t.items)) return t.items;
    return [
      { type: 'text', text: t.text },
      ...(t.calls || []).map((call) => ({ type: 'call', call })),
      ...(t.notices || []).map((text) => ({ type: 'notice', text })),
    ];
  }

  /** A call from history, as its card looked live: facts, result, who approved it. */
  function historyCard(turn, turnId, c) {
    const card = createCard(turn, turnId, c.callId, c.command);
    const read = readOf(c);
    if (read) showReadProposal(card, c, read);
    else card.el.insertBefore(callFacts(c), card.actions);
    if (c.result) toolResult(Object.assign({ callId: c.callId, command: c.command, tool: c.tool, evidence: c.evidence }, c.result), turnId);
    else setCardStatus(card, 'running');
    showApprovedBy(card, c.approvedBy, c.sandbox);
    // An edit written in an earlier view: its Review diff shows the recorded
    // diff (the file as it was when proposed is not kept). It decides nothing.
    // A model may repeat a call id within a turn: `occurrence` names which of them.
    const edit = editOf(c);
    if (edit && edit.diff) {
      const occurrence = (cards.get(cardKey(turnId, c.callId)) || []).indexOf(card);
      showEditDiff(card, 'Applied change', edit.diff, () => post({ type: 'reviewRecordedEdit', turnId, callId: c.callId, occurrence }));
    }
    // History carries one output per call; live output flag stays off.
    card.liveOutput = false;
    return card;
  }

  const numberFormat = new Intl.NumberFormat('en-US');

  /** `1,234 tokens (1,000 in, 234 out)`; empty without usage. */
  function formatUsage(u) {
    if (!u || typeof u.totalTokens !== 'number') return '';
    const n = (x) => numberFormat.format(x);
    let detail = n(u.inputTokens) + ' in';
    if (typeof u.cachedInputTokens === 'number' && u.cachedInputTokens > 0) detail += ' (' + n(u.cachedInputTokens) + ' cached)';
    detail += ', ' + n(u.outputTokens) + ' out';
    return n(u.totalTokens) + ' tokens (' + detail + ')';
  }

  /** The turn's tokens, after it (mino/turnEnded, mino/history). */
  function showTurnUsage(turn, usage) {
    const text = formatUsage(usage);
    let el = turn.el.querySelector('.turn-usage');
    if (!text) {
      if (el) el.remove();
      return;
    }
    if (!el) {
      el = h('div', 'turn-usage');
      turn.el.appendChild(el);
    }
    el.textContent = text;
  }

  /** The session's tokens so far, in the panel header. */
  function showSessionUsage(usage) {
    const text = formatUsage(usage);
    sessionUsage.textContent = text ? 'Session: ' + text : '';
    sessionUsage.hidden = !text;
  }

  function onRecovery(r) {
    if (r.turns && r.turns.length > 0 && !r.acknowledgementRequired) {
      addNotice(RECOVERED_NOTICE, 'info');
    }
    for (const t of r.turns || []) {
      // The k-th call with an id is that id's k-th card in the turn.
      const seen = new Map();
      for (const c of t.calls) {
        if (c.result.status === TOOL_STATUS.not_executed) {
          addNotice('Not executed (never started): ' + c.command, 'info');
        }
        const k = seen.get(c.callId) || 0;
        seen.set(c.callId, k + 1);
        const card = (cards.get(cardKey(t.turnId, c.callId)) || [])[k];
        if (card) showEvidence(card, c.result.status, c.evidence);
      }
    }
    for (const repair of r.repairs || []) addNotice('Repaired: ' + repair, 'warning');
    if (r.acknowledgementRequired) openGate(r);
    else closeGate();
  }

  function openGate(r) {
    gateCalls.textContent = '';
    const pending = new Set(r.unacknowledgedTurnIds || []);
    for (const t of r.turns || []) {
      if (pending.size && !pending.has(t.turnId)) continue;
      for (const c of t.calls) {
        if (c.result.status !== TOOL_STATUS.unknown) continue;
        const li = h('li', 'ack-call');
        li.appendChild(h('code', null, c.command));
        li.appendChild(h('span', 'badge unknown', 'result unknown'));
        if (c.evidence && c.evidence.summary) li.appendChild(h('span', 'ack-evidence', 'Evidence: ' + c.evidence.summary));
        gateCalls.appendChild(li);
      }
    }
    state.gateTurnIds = [...pending];
    state.ackPending = false;
    gateYes.disabled = false;
    gate.hidden = false;
    updateComposer();
    // Focus the question, not the Yes button: a stray Enter must not acknowledge.
    gate.focus({ preventScroll: true });
  }

  function closeGate() {
    state.gateTurnIds = null;
    state.ackPending = false;
    gate.hidden = true;
    updateComposer();
  }

  onDeliberateClick(gateYes, () => {
    if (state.gateTurnIds === null || state.ackPending) return;
    state.ackPending = true;
    gateYes.disabled = true;
    post({ type: 'acknowledge', turnIds: state.gateTurnIds });
  });

  function onNotification(method, p) {
    // Every notification names its session: one for another session (late,
    // from before a switch) must not touch this transcript.
    if (p && typeof p.sessionId === 'string' && state.sessionId !== null && p.sessionId !== state.sessionId) return;
    switch (method) {
      case Notification.recovery:
        return onRecovery(p);
      case Notification.turnStarted: {
        const existing = turns.get(p.turnId);
        if (existing) {
          const userText = existing.el.querySelector('.msg.user .text');
          if (userText && !userText.textContent) userText.textContent = p.input;
        } else {
          createTurn(p.turnId, p.input);
        }
        startResponse(getTurn(p.turnId));
        setTurnStatus(getTurn(p.turnId), null);
        state.runningTurnId = p.turnId;
        setProgress('thinking');
        updateComposer();
        // A new question: shown and followed, wherever the person had scrolled to.
        return scrollToEnd(true);
      }
      case Notification.textDelta:
        appendText(getTurn(p.turnId), p.delta);
        if (progress.kind !== 'streaming') setProgress('streaming');
        return;
      case Notification.retrying:
        setProgress('retrying');
        return retrying(p);
      // Only a compaction inside a turn is shown here; "Compact Conversation"
      // reports its own outcome.
      case Notification.compactionStarted:
        if (!p.turnId) return;
        setProgress('compacting');
        return compactionNotice(p, false);
      case Notification.compactionEnded:
        if (!p.turnId) return;
        // The turn's request follows.
        setProgress('thinking');
        return compactionNotice(p, true);
      case Notification.instructionsChanged:
        return showInstructions(p.files);
      case Notification.mcpStatus:
        return onMcpStatus(p);
      case Notification.approvalRequest:
        setProgress('approval', p.command);
        return showApproval(p);
      case Notification.toolStarted:
        // A read that asked nothing is a row; one that asked has its card.
        if (readOf(p) && !openCard(p.turnId, p.callId)) {
          setProgress('running', readWhat(readOf(p)));
          return readStarted(p);
        }
        setProgress('running', p.command);
        return toolStarted(p);
      case Notification.toolOutput:
        return toolOutput(p);
      case Notification.toolResult:
        if (readOf(p) && !openCard(p.turnId, p.callId)) {
          startResponse(getTurn(p.turnId));
          setProgress('thinking');
          const row = readResult(p);
          announce(row.toggle.getAttribute('aria-label') + '.');
          return;
        }
        startResponse(getTurn(p.turnId));
        // The result goes back to the model: a new request is on its way.
        setProgress('thinking');
        announce('Command ' + toolResult(p).command.textContent + ': ' + (STATUS_LABELS[p.status] || p.status) + '.');
        return;
      case Notification.turnEnded: {
        const turn = getTurn(p.turnId);
        // The final text is authoritative if the deltas missed anything.
        if (typeof p.text === 'string' && p.text !== turn.text && p.text.startsWith(turn.text)) {
          appendText(turn, p.text.slice(turn.text.length));
        }
        renderNow();
        setTurnStatus(turn, p.status, p.reason);
        showTurnUsage(turn, p.usage);
        addTurnActions(turn, p.turnId);
        if (p.sessionUsage) showSessionUsage(p.sessionUsage);
        for (const card of allCards()) {
          if (card.el.closest('.turn') === turn.el && card.el.dataset.status === 'waiting') {
            card.actions.hidden = true;
          }
        }
        if (state.runningTurnId === p.turnId) state.runningTurnId = null;
        if (state.runningTurnId === null) setProgress('idle');
        announceTurnEnd(turn, p.status, p.reason);
        updateComposer();
        return scrollToEnd();
      }
    }
  }

  // ------------------------------------------------------------ host messages

  window.addEventListener('message', (event) => {
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
    }
  });

  /**
   * The current session, for the header. Another session than the one shown
   * is a switch: the transcript, notices and gate of the old one go; the
   * history and mino/recovery that follow rebuild them (the gate exactly as
   * at startup).
   */
  function onSession(session) {
    if (!session || typeof session.sessionId !== 'string') return;
    const switched = state.sessionId !== null && state.sessionId !== session.sessionId;
    state.sessionId = session.sessionId;
    sessionTitle.textContent = session.title || NEW_CHAT_TITLE;
    sessionTitle.title = session.title || NEW_CHAT_TITLE;
    sessionHeader.hidden = false;
    if (!switched) return;
    notices.textContent = '';
    closeGate();
    state.pendingQuestion = null;
    renderHistory(null);
    setProgress('idle');
    announce('Opened ' + (session.title || NEW_CHAT_TITLE) + '.');
  }

  /** The current session's model, in the header; a click offers the others. */
  function onModel(model) {
    if (typeof model !== 'string') return;
    sessionModel.textContent = model;
    sessionModel.hidden = false;
  }

  /**
   * The approval mode in force (and the sandbox, when there is one), in the
   * header, so that whether commands will ask is always in sight; a click
   * opens Set Approval Mode.
   */
  function onModes(approvalMode, sandbox) {
    if (typeof approvalMode !== 'string' || typeof sandbox !== 'string') return;
    // The mode never gives way in a narrow panel; the sandbox beside it may.
    sessionMode.textContent = 'Mode: ' + approvalMode;
    sessionSandbox.textContent = 'sandbox ' + sandbox;
    sessionSandbox.hidden = sandbox === 'off';
    sessionMode.dataset.mode = approvalMode;
    const meaning = APPROVAL_MODE_LABELS[approvalMode] || approvalMode;
    sessionMode.title = 'Approval mode ' + approvalMode + ': ' + meaning + '; sandbox ' + sandbox + '. Click to change the approval mode.';
    sessionMode.setAttribute('aria-label', 'Approval mode ' + approvalMode + ' (' + meaning + '), sandbox ' + sandbox + ': change the approval mode');
    sessionMode.hidden = false;
  }

  /**
   * The project's instruction files (AGENTS.md) the model is given, for the
   * header: how many and what was cut, each file's path in the tooltip.
   */
  function showInstructions(files) {
    if (!Array.isArray(files)) return;
    sessionInstructions.hidden = files.length === 0;
    if (files.length === 0) return;
    const cut = files.some((f) => f.truncated);
    sessionInstructions.textContent = (files.length === 1 ? 'AGENTS.md' : files.length + ' AGENTS.md') + (cut ? ' (cut)' : '');
    const lines = files.map((f) => f.path + ' (' + f.size + ' bytes' + (f.truncated ? ', only the first ' + f.given + ' given' : '') + ')');
    sessionInstructions.title = 'The project\'s instructions given to the model, farther first:\n' + lines.join('\n');
    sessionInstructions.setAttribute('aria-label', 'Instructions in force: ' + lines.join('; '));
  }

  $('session-rename').addEventListener('click', () => post({ type: 'renameSession' }));
  sessionMode.addEventListener('click', () => post({ type: 'setApprovalMode' }));
  sessionModel.addEventListener('click', () => post({ type: 'chooseModel' }));

  function focusInput() {
    if (!input.disabled) input.focus({ preventScroll: true });
  }

  function onError(msg) {
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

  function linkButton(label, msg, className) {
    const b = h('button', 'link' + (className ? ' ' + className : ''), label);
    b.type = 'button';
    b.addEventListener('click', () => post(msg));
    return b;
  }

  const DEFAULT_STOP_MESSAGES = {
    stopped: 'Mino server stopped.',
    crashed: 'Mino server stopped unexpectedly.',
    failed: 'Mino server could not be started.',
  };

  function onServer(msg) {
    state.server = msg.state;
    statusEl.textContent = '';
    statusEl.className = 'status ' + msg.state;
    if (msg.state === 'starting') statusEl.textContent = 'Starting Mino…';
    if (msg.state === 'stopped' || msg.state === 'crashed' || msg.state === 'failed') {
      statusEl.appendChild(h('span', 'status-message', msg.message || DEFAULT_STOP_MESSAGES[msg.state]));
      if (msg.fixSetting) statusEl.append(' ', linkButton('Open settings', { type: 'openSettings' }));
      statusEl.append(' ', linkButton('Restart', { type: 'restart' }), ' ', linkButton('Show log', { type: 'showLog' }));
      // The transcript stays: after a crash it shows what was running.
      markUnfinished();
      state.runningTurnId = null;
      state.pendingQuestion = null;
      setProgress('idle');
    }
    if (msg.state === 'starting' || msg.state === 'ready') {
      // A (re)started server replays recovery; stale notices go.
      notices.textContent = '';
      if (msg.state === 'starting') closeGate();
    }
    updateComposer();
  }

  // ------------------------------------------------------------ composer

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

  function onSent(turnId) {
    if (state.pendingQuestion !== null && input.value === state.pendingQuestion) input.value = '';
    state.pendingQuestion = null;
    // The context went with the question.
    contextItems.length = 0;
    renderChips();
    imagesSent(turnId);
    if (progress.kind === 'sending') setProgress('thinking');
    updateComposer();
  }

  // ------------------------------------------------------------ editor context
  //
  // Files and selections the person adds (read by the host through the VS Code
  // API) are shown as chips and sent as part of the question, each as a fenced
  // block under a line naming its path, so they are in the history as asked.

  /** @typedef {{ path: string, language: string, text: string, startLine?: number, endLine?: number }} ContextItem */
  /** @type {ContextItem[]} */
  const contextItems = [];
  const chips = $('chips');

  function contextLabel(item) {
    if (item.startLine === undefined) return item.path;
    return item.path + ':' + item.startLine + (item.endLine !== undefined && item.endLine !== item.startLine ? '-' + item.endLine : '');
  }

  /** The fence is longer than any run of backticks in the text, so the text cannot close it. */
  function fenceFor(text) {
    let longest = 0;
    for (const m of text.matchAll(/`+/g)) longest = Math.max(longest, m[0].length);
    return '`'.repeat(Math.max(3, longest + 1));
  }

  function questionWithContext(question, items) {
    if (items.length === 0) return question;
    const blocks = items.map((item) => {
      const fence = fenceFor(item.text);
      const body = item.text.endsWith('\n') ? item.text : item.text + '\n';
      const where = item.startLine === undefined ? '' : ', lines ' + item.startLine + '-' + (item.endLine ?? item.startLine);
      return 'Context: ' + item.path + where + '\n' + fence + (item.language || '') + '\n' + body + fence;
    });
    return question + '\n\n' + blocks.join('\n\n');
  }

  function addContextItems(items) {
    for (const item of items) {
      if (!item || typeof item.path !== 'string' || typeof item.text !== 'string') continue;
      // The same file or range twice would only repeat it.
      const label = contextLabel(item);
      if (contextItems.some((c) => contextLabel(c) === label)) continue;
      contextItems.push(item);
    }
    showComposerError(null);
    renderChips();
  }

  function renderChips() {
    chips.textContent = '';
    contextItems.forEach((item, i) => {
      const label = contextLabel(item);
      const chip = h('li', 'chip');
      chip.title = label;
      chip.appendChild(h('span', 'chip-label', label));
      const remove = /** @type {HTMLButtonElement} */ (h('button', 'chip-remove', '×'));
      remove.type = 'button';
      remove.setAttribute('aria-label', 'Remove ' + label);
      remove.addEventListener('click', () => {
        contextItems.splice(i, 1);
        renderChips();
        focusInput();
      });
      chip.appendChild(remove);
      chips.appendChild(chip);
    });
    chips.hidden = contextItems.length === 0;
  }

  for (const [id, source] of [['add-file', 'activeFile'], ['add-selection', 'selection'], ['add-files', 'pick']]) {
    $(id).addEventListener('click', () => post({ type: 'addContext', source }));
  }

  // ------------------------------------------------------------ images
  //
  // Images pasted (clipboard) or dropped (files) into the composer are read
  // here as base64 and shown as thumbnail chips above the input; they go with
  // the question as `mino/chat` `images`. The bounds are the server's, so a
  // refused image is refused here by name before anything is sent; the text
  // and the other attachments stay. History shows a question's images as
  // thumbnails, their bytes asked for by SHA-256 (`mino/image`, through the host).

  // The server's bounds (server/protocol/src/lib.rs; they are not in the generated types):
  /** `MAX_IMAGES`: the most images one question carries. */
  const MAX_IMAGES = 8;
  /** `MAX_IMAGE_BYTES`: the largest image (20 MiB). */
  const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
  /** `MAX_QUESTION_IMAGE_BYTES`: the most image bytes of one question together (32 MiB). */
  const MAX_QUESTION_IMAGE_BYTES = 32 * 1024 * 1024;

  /** @typedef {{ name: string, mimeType: string, size: number, data: string }} ImageItem */
  /** @type {ImageItem[]} */
  const imageItems = [];
  const imageChips = $('image-chips');
  /** Images read but not yet added (reading is asynchronous): counted against the bounds. */
  let imagesReading = 0;
  /** turnId → the images sent with its question, until its turn is shown. */
  const sentImages = new Map();
  /** sha256 → a `data:` URL, or `{ error }`, as the host answered; `null` while asked (bytes are kept, errors asked again). */
  const historyImageData = new Map();

  function imageSize(n) {
    if (n < 1024) return n + ' B';
    if (n < 1024 * 1024) return (n / 1024).toFixed(1).replace(/\.0$/, '') + ' KiB';
    return (n / (1024 * 1024)).toFixed(1).replace(/\.0$/, '') + ' MiB';
  }

  /** The type the first bytes say (the server tells images the same way), or null. */
  function sniffImageType(bytes) {
    const starts = (sig, at = 0) => sig.every((b, i) => bytes[at + i] === b);
    if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
    if (starts([0xff, 0xd8, 0xff])) return 'image/jpeg';
    if (starts([0x47, 0x49, 0x46, 0x38])) return 'image/gif';
    if (starts([0x52, 0x49, 0x46, 0x46]) && starts([0x57, 0x45, 0x42, 0x50], 8)) return 'image/webp';
    return null;
  }

  function bytesToBase64(bytes) {
    let binary = '';
    const step = 0x8000;
    for (let i = 0; i < bytes.length; i += step) {
      binary += String.fromCharCode.apply(null, /** @type {any} */ (bytes.subarray(i, i + step)));
    }
    return btoa(binary);
  }

  function imageBytesTotal() {
    return imageItems.reduce((sum, item) => sum + item.size, 0);
  }

  /**
   * Adds pasted or dropped files as images, each checked against the
   * server's bounds; the refused ones are named with why, below the input.
   * @param {File[]} files
   */
  async function addImageFiles(files) {
    const refused = [];
    let reserved = 0;
    const reading = [];
    for (const file of files) {
      const name = file.name || 'pasted image';
      if (imageItems.length + imagesReading + reading.length >= MAX_IMAGES) {
        refused.push(name + ' was not added: a question may carry at most ' + MAX_IMAGES + ' images.');
      } else if (file.size > MAX_IMAGE_BYTES) {
        refused.push(name + ' is ' + imageSize(file.size) + '; an image may be at most 20 MiB: scale it down or crop it.');
      } else if (imageBytesTotal() + reserved + file.size > MAX_QUESTION_IMAGE_BYTES) {
        refused.push(name + ' was not added: the images of a question may be at most 32 MiB together.');
      } else {
        reserved += file.size;
        reading.push(file);
      }
    }
    imagesReading += reading.length;
    try {
      for (const file of reading) {
        const name = file.name || 'pasted image';
        let bytes;
        try {
          bytes = new Uint8Array(await file.arrayBuffer());
        } catch {
          refused.push(name + ' could not be read.');
          continue;
        } finally {
          imagesReading--;
        }
        const mimeType = sniffImageType(bytes);
        if (!mimeType) {
          refused.push(name + ' is not an image Mino can send; PNG, JPEG, GIF and WebP are accepted.');
          continue;
        }
        imageItems.push({ name: file.name || 'pasted.' + mimeType.slice('image/'.length), mimeType, size: bytes.length, data: bytesToBase64(bytes) });
      }
    } finally {
      renderImageChips();
      showComposerError(refused.length ? refused.join('\n') : null);
    }
  }

  function renderImageChips() {
    imageChips.textContent = '';
    imageItems.forEach((item, i) => {
      const label = item.name + ' (' + imageSize(item.size) + ')';
      const chip = h('li', 'chip image-chip');
      chip.title = label;
      const img = /** @type {HTMLImageElement} */ (h('img', 'image-thumb'));
      img.src = 'data:' + item.mimeType + ';base64,' + item.data;
      img.alt = '';
      chip.appendChild(img);
      chip.appendChild(h('span', 'chip-label', item.name));
      chip.appendChild(h('span', 'image-size', imageSize(item.size)));
      const remove = /** @type {HTMLButtonElement} */ (h('button', 'chip-remove', '×'));
      remove.type = 'button';
      remove.setAttribute('aria-label', 'Remove ' + label);
      remove.addEventListener('click', () => {
        if (state.pendingQuestion !== null) return;
        imageItems.splice(i, 1);
        renderImageChips();
        focusInput();
      });
      chip.appendChild(remove);
      imageChips.appendChild(chip);
    });
    imageChips.hidden = imageItems.length === 0;
  }

  /** Mino: New Question: a fresh question has no images (not while one is being sent). */
  function clearImages() {
    if (state.pendingQuestion !== null) return;
    imageItems.length = 0;
    renderImageChips();
  }

  /** The question's images as `mino/chat` takes them. */
  function chatImages() {
    return imageItems.map((item) => ({ data: item.data, mimeType: item.mimeType, name: item.name }));
  }

  /** The question was accepted: its images leave the input for its turn. */
  function imagesSent(turnId) {
    if (imageItems.length === 0) return;
    const shown = imageItems.map((item) => ({ name: item.name, mimeType: item.mimeType, size: item.size, dataUrl: 'data:' + item.mimeType + ';base64,' + item.data }));
    imageItems.length = 0;
    renderImageChips();
    const turn = typeof turnId === 'string' ? turns.get(turnId) : undefined;
    if (turn) {
      const user = turn.el.querySelector('.msg.user');
      if (user && !user.querySelector('.question-images')) user.appendChild(questionImages(shown));
    } else if (typeof turnId === 'string') {
      sentImages.set(turnId, shown);
    }
  }

  function takeSentImages(turnId) {
    const shown = sentImages.get(turnId);
    sentImages.delete(turnId);
    return shown || null;
  }

  /**
   * A question's images as thumbnails: sent ones with their bytes, history
   * ones (`HistoryImage`) asked for by SHA-256, an unavailable one as its
   * name, size and why.
   */
  function questionImages(images) {
    const list = h('div', 'question-images');
    for (const image of images) {
      if (!image || typeof image !== 'object') continue;
      const name = typeof image.name === 'string' && image.name ? image.name : 'image';
      const size = typeof image.size === 'number' ? imageSize(image.size) : '';
      const fig = h('figure', 'question-image');
      fig.title = name + (size ? ' (' + size + ')' : '');
      if (typeof image.unavailable === 'string') {
        fig.classList.add('image-unavailable');
        fig.appendChild(h('span', 'image-missing', 'Image unavailable: ' + image.unavailable));
      } else {
        const img = /** @type {HTMLImageElement} */ (h('img', 'image-thumb'));
        img.alt = name;
        if (typeof image.dataUrl === 'string') img.src = image.dataUrl;
        else if (typeof image.sha256 === 'string') {
          img.dataset.sha256 = image.sha256;
          requestHistoryImage(image.sha256, img, fig);
        }
        fig.appendChild(img);
      }
      fig.appendChild(h('figcaption', 'image-caption', name + (size ? ' · ' + size : '')));
      list.appendChild(fig);
    }
    return list;
  }

  function requestHistoryImage(sha256, img, fig) {
    const known = historyImageData.get(sha256);
    if (typeof known === 'string') img.src = known;
    // Not yet answered: the answer fills every thumbnail of it. One that
    // failed is asked for again (the server may be back).
    else if (known === undefined || (known && known.error)) {
      historyImageData.set(sha256, null);
      post({ type: 'image', sha256 });
    }
  }

  function showImageError(fig, message) {
    if (!fig || fig.querySelector('.image-missing')) return;
    fig.classList.add('image-unavailable');
    const img = fig.querySelector('img');
    if (img) img.remove();
    fig.prepend(h('span', 'image-missing', 'Image unavailable: ' + message));
  }

  /** The host's answer to an `image` request: every thumbnail of that image is filled (or says why not). */
  function onImage(msg) {
    if (typeof msg.sha256 !== 'string') return;
    const ok = typeof msg.data === 'string' && /^image\/(png|jpeg|gif|webp)$/.test(String(msg.mimeType));
    const value = ok ? 'data:' + msg.mimeType + ';base64,' + msg.data : { error: msg.error || 'the server did not give it' };
    historyImageData.set(msg.sha256, value);
    for (const img of transcript.querySelectorAll('img.image-thumb')) {
      if (/** @type {HTMLElement} */ (img).dataset.sha256 !== msg.sha256) continue;
      if (typeof value === 'string') /** @type {HTMLImageElement} */ (img).src = value;
      else showImageError(img.closest('figure'), value.error);
    }
  }

  /** @param {DataTransfer | null} dt */
  function imageFilesOf(dt) {
    if (!dt) return [];
    const files = [];
    if (dt.items && dt.items.length) {
      for (const item of dt.items) {
        if (item.kind !== 'file') continue;
        const file = item.getAsFile();
        if (file) files.push(file);
      }
    } else if (dt.files) {
      files.push(...dt.files);
    }
    return files;
  }

  function canAddImages() {
    return !input.disabled && state.pendingQuestion === null;
  }

  input.addEventListener('paste', (event) => {
    const files = imageFilesOf(event.clipboardData);
    // Pasted text is the textarea's own business.
    if (files.length === 0) return;
    event.preventDefault();
    if (canAddImages()) void addImageFiles(files);
  });

  const hasFiles = (event) => !!event.dataTransfer && Array.from(event.dataTransfer.types || []).includes('Files');
  form.addEventListener('dragover', (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault();
    if (event.dataTransfer) event.dataTransfer.dropEffect = canAddImages() ? 'copy' : 'none';
    form.classList.add('dropping');
  });
  form.addEventListener('dragleave', () => form.classList.remove('dropping'));
  form.addEventListener('drop', (event) => {
    form.classList.remove('dropping');
    if (!hasFiles(event)) return;
    event.preventDefault();
    if (canAddImages()) void addImageFiles(imageFilesOf(event.dataTransfer));
  });

  // ------------------------------------------------------------ @ mentions
  //
  // `@` typed at the start of a word opens a menu of what can be added: the
  // editor's selection, the active file, the workspace's files whose path
  // holds what follows the `@` (the host lists them). Arrow keys move, Enter
  // or Tab adds the highlighted one as a chip (the `@word` leaves the text),
  // Escape closes the menu. Adding context decides nothing and sends nothing.

  const mentionList = $('mentions');
  /** @type {{ start: number, query: string, items: any[], active: number } | null} */
  let mention = null;

  /** The `@word` just before the caret, if the caret ends one. */
  function mentionAtCaret() {
    if (input.selectionStart !== input.selectionEnd) return null;
    const before = input.value.slice(0, input.selectionStart);
    const m = /(?:^|\s)@([^\s@]*)$/.exec(before);
    return m ? { start: before.length - m[1].length - 1, query: m[1] } : null;
  }

  function updateMention() {
    const at = mentionAtCaret();
    if (!at) return closeMentions();
    if (mention && mention.start === at.start && mention.query === at.query) return;
    mention = { start: at.start, query: at.query, items: mention && mention.start === at.start ? mention.items : [], active: 0 };
    post({ type: 'mentions', query: at.query });
  }

  function showMentions(query, items) {
    // Only the answer for what is typed now.
    if (!mention || mention.query !== query) return;
    mention.items = items;
    mention.active = 0;
    renderMentions();
  }

  function renderMentions() {
    mentionList.textContent = '';
    if (!mention || mention.items.length === 0) {
      mentionList.hidden = true;
      input.setAttribute('aria-expanded', 'false');
      input.removeAttribute('aria-activedescendant');
      return;
    }
    const active = mention.active;
    mention.items.forEach((item, i) => {
      const li = h('li', 'mention ' + item.kind, item.label);
      li.id = 'mention-' + i;
      li.setAttribute('role', 'option');
      li.setAttribute('aria-selected', String(i === active));
      li.title = item.kind === 'file' ? 'Add ' + item.path + ' to the question' : item.label;
      // Keeps focus in the input.
      li.addEventListener('mousedown', (e) => e.preventDefault());
      li.addEventListener('click', () => pickMention(i));
      mentionList.appendChild(li);
    });
    mentionList.hidden = false;
    input.setAttribute('aria-expanded', 'true');
    input.setAttribute('aria-activedescendant', 'mention-' + mention.active);
    mentionList.children[mention.active]?.scrollIntoView({ block: 'nearest' });
  }

  function closeMentions() {
    mention = null;
    renderMentions();
  }

  function pickMention(i) {
    if (!mention) return;
    const item = mention.items[i];
    if (!item) return;
    // The `@word` was a way to choose, not part of the question.
    const end = input.selectionStart;
    input.value = input.value.slice(0, mention.start) + input.value.slice(end);
    input.setSelectionRange(mention.start, mention.start);
    closeMentions();
    if (item.kind === 'file') post({ type: 'addContext', source: 'file', path: item.path });
    else post({ type: 'addContext', source: item.kind });
    focusInput();
  }

  /** The menu's keys; true when the key was the menu's. */
  function mentionKey(e) {
    if (!mention || mentionList.hidden || e.isComposing) return false;
    const n = mention.items.length;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      mention.active = (mention.active + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
      renderMentions();
    } else if ((e.key === 'Enter' && !e.shiftKey) || e.key === 'Tab') {
      pickMention(mention.active);
    } else if (e.key === 'Escape') {
      // Closes the menu only: the view's Escape (cancel the turn) is not reached.
      e.stopPropagation();
      closeMentions();
    } else {
      return false;
    }
    e.preventDefault();
    return true;
  }

  input.addEventListener('input', updateMention);
  input.addEventListener('click', updateMention);
  input.addEventListener('blur', () => closeMentions());

  // ------------------------------------------------------------ code blocks

  /** The code of the block `button` belongs to, as the model wrote it. */
  function codeOf(button) {
    const code = button.closest('.code-block')?.querySelector('pre code');
    return (code?.textContent || '').replace(/\n$/, '');
  }

  transcript.addEventListener('click', (e) => {
    const target = /** @type {HTMLElement} */ (e.target);
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

  function showComposerError(message) {
    composerError.textContent = message || '';
    composerError.hidden = !message;
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

  updateComposer();
  setProgress('idle');
  renderChips();
  // The panel opened: ready for a question.
  focusInput();
  post({ type: 'ready' });
})();
