// @ts-check
// Mino chat webview. Talks to the extension host only through postMessage
// (see src/messages.ts for the message shapes). Builds the DOM with
// textContent only: model and command output is never parsed as HTML.
(function () {
  'use strict';

  // eslint-disable-next-line no-undef
  const vscode = acquireVsCodeApi();

  const ACK_QUESTION = 'Do you understand that these commands may already have run?';
  const RECOVERED_NOTICE = 'An interrupted tool turn was recovered without executing commands.';
  const RETRYING_NOTICE = 'Connection to the model failed; retrying…';

  const STATUS_LABELS = {
    success: 'succeeded',
    failed: 'failed',
    refused: 'denied',
    timed_out: 'timed out',
    cancelled: 'cancelled',
    not_executed: 'not executed',
    unknown: 'result unknown',
    waiting: 'waiting for approval',
    approved: 'approved',
    denied: 'denying…',
    running: 'running',
    unfinished: 'did not finish',
  };
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
  $('ack-question').textContent = ACK_QUESTION;

  /** @type {Map<string, Turn>} */
  const turns = new Map();
  /** @type {Map<string, Card>} callId → card */
  const cards = new Map();
  const state = {
    /** @type {string | null} */ runningTurnId: null,
    /** @type {string[] | null} turns awaiting acknowledgement */ gateTurnIds: null,
    ackPending: false,
    /** @type {string | null} the question sent and not yet accepted; it stays in the input */
    pendingQuestion: null,
    server: 'starting',
  };
  /** Gives each card's elements ids of their own, for aria-describedby. */
  let nextElementId = 0;

  /**
   * @typedef {{ el: HTMLElement, body: HTMLElement, segment: HTMLElement | null,
   *   statusEl: HTMLElement, text: string, response: ResponseText | null,
   *   retryNotice: HTMLElement | null }} Turn
   * The text of the model's current response (since mino/turnStarted or the
   * turn's last mino/toolResult): where it starts in `text` and in each
   * segment it was written to, so that mino/retrying can take it back.
   * @typedef {{ start: number, parts: { el: HTMLElement, start: number }[] }} ResponseText
   * @typedef {{ el: HTMLElement, badge: HTMLElement, command: HTMLElement, actions: HTMLElement,
   *   output: HTMLElement, result: HTMLElement, evidence: HTMLElement, liveOutput: boolean }} Card
   */

  // ------------------------------------------------------------ helpers

  function h(tag, className, text) {
    const el = document.createElement(tag);
    if (className) el.className = className;
    if (text !== undefined && text !== null) el.textContent = String(text);
    return el;
  }

  function scrollToEnd() {
    transcript.scrollTop = transcript.scrollHeight;
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
    else input.placeholder = 'Ask Mino… (Enter to send, Shift+Enter for a new line)';
  }

  // ------------------------------------------------------------ turns

  /** @returns {Turn} */
  function createTurn(turnId, inputText) {
    const el = h('article', 'turn');
    el.dataset.turnId = turnId;
    const user = h('div', 'msg user');
    user.appendChild(h('div', 'who', 'You'));
    user.appendChild(h('div', 'text', inputText));
    const assistant = h('div', 'msg assistant');
    assistant.appendChild(h('div', 'who', 'Mino'));
    const body = h('div', 'body');
    assistant.appendChild(body);
    const statusLine = h('div', 'turn-status');
    el.append(user, assistant, statusLine);
    transcript.appendChild(el);
    const turn = { el, body, segment: null, statusEl: statusLine, text: '', response: null, retryNotice: null };
    turns.set(turnId, turn);
    return turn;
  }

  function getTurn(turnId) {
    return turns.get(turnId) || createTurn(turnId, '');
  }

  function appendText(turn, delta) {
    if (!turn.segment) {
      turn.segment = h('div', 'text assistant-text');
      turn.body.appendChild(turn.segment);
    }
    const response = turn.response || (turn.response = { start: turn.text.length, parts: [] });
    const seg = turn.segment;
    if (!response.parts.some((p) => p.el === seg)) {
      response.parts.push({ el: seg, start: (seg.textContent || '').length });
    }
    seg.textContent += delta;
    turn.text += delta;
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
        const kept = (part.el.textContent || '').slice(0, part.start);
        if (kept) {
          part.el.textContent = kept;
        } else {
          part.el.remove();
          if (turn.segment === part.el) turn.segment = null;
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

  function setTurnStatus(turn, status, reason) {
    turn.el.dataset.status = status || 'running';
    turn.statusEl.textContent = '';
    if (!status) return;
    if (status !== 'completed' || reason) {
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
    for (const card of cards.values()) {
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
  }

  // ------------------------------------------------------------ tool cards

  function metaRow(dl, label, value) {
    dl.appendChild(h('dt', null, label));
    const dd = h('dd');
    if (value instanceof Node) dd.appendChild(value);
    else dd.textContent = value;
    dl.appendChild(dd);
  }

  /** @returns {Card} */
  function createCard(turn, callId, command) {
    const el = h('div', 'tool-card');
    el.dataset.callId = callId;
    const head = h('div', 'tool-head');
    head.appendChild(h('span', 'tool-name', 'bash'));
    const badge = h('span', 'badge');
    head.appendChild(badge);
    el.appendChild(head);
    const commandEl = h('pre', 'tool-command', command);
    commandEl.id = 'mino-el-' + nextElementId++;
    el.appendChild(commandEl);
    const actions = h('div', 'tool-actions');
    actions.hidden = true;
    const output = h('pre', 'tool-output');
    output.hidden = true;
    const result = h('div', 'tool-result');
    result.hidden = true;
    const evidence = h('div', 'tool-evidence');
    evidence.hidden = true;
    el.append(actions, output, result, evidence);
    turn.body.appendChild(el);
    // Text after a tool call starts a new segment below the card.
    turn.segment = null;
    const card = { el, badge, command: commandEl, actions, output, result, evidence, liveOutput: false };
    cards.set(callId, card);
    return card;
  }

  function setCardStatus(card, status) {
    card.el.dataset.status = status;
    card.badge.textContent = STATUS_LABELS[status] || status;
    card.badge.className = 'badge ' + status;
  }

  function showApproval(p) {
    const turn = getTurn(p.turnId);
    const card = cards.get(p.callId) || createCard(turn, p.callId, p.command);
    const dl = h('dl', 'tool-meta');
    metaRow(dl, 'Directory', p.directory);
    const env = p.environment || {};
    const names = Object.keys(env).sort();
    const details = h('details', 'env');
    details.appendChild(h('summary', null, names.length + ' variable' + (names.length === 1 ? '' : 's')));
    const table = h('table', 'env-table');
    for (const name of names) {
      const tr = h('tr');
      tr.appendChild(h('th', null, name));
      tr.appendChild(h('td', null, env[name]));
      table.appendChild(tr);
    }
    details.appendChild(table);
    metaRow(dl, 'Environment', details);
    const limits = p.limits || {};
    metaRow(
      dl,
      'Limits',
      'timeout ' + limits.timeoutSeconds + ' s, output ' + formatBytes(limits.outputLimitBytes),
    );
    card.el.insertBefore(dl, card.actions);

    card.actions.textContent = '';
    const question = h('span', 'question', 'Run this command?');
    question.id = 'mino-el-' + nextElementId++;
    const approve = deliberateButton('primary approve', 'Approve', () => decide(card, p.turnId, p.callId, 'approve'));
    const deny = deliberateButton('secondary deny', 'Deny', () => decide(card, p.turnId, p.callId, 'deny'));
    for (const b of [approve, deny]) b.setAttribute('aria-describedby', question.id + ' ' + card.command.id);
    card.actions.append(question, approve, deny);
    card.actions.hidden = false;
    // Announced with its command; never focused (see deliberateButton).
    card.el.setAttribute('role', 'group');
    card.el.setAttribute('aria-label', 'Mino asks to run: ' + p.command);
    setCardStatus(card, 'waiting');
    scrollToEnd();
  }

  function decide(card, turnId, callId, decision) {
    for (const b of card.actions.querySelectorAll('button')) /** @type {HTMLButtonElement} */ (b).disabled = true;
    setCardStatus(card, decision === 'approve' ? 'approved' : 'denied');
    post({ type: 'approval', turnId, callId, decision });
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
    const card = cards.get(p.callId) || createCard(turn, p.callId, p.command);
    card.actions.hidden = true;
    setCardStatus(card, 'running');
  }

  function toolOutput(p) {
    const card = cards.get(p.callId);
    if (!card) return;
    card.output.hidden = false;
    card.liveOutput = true;
    const span = h('span', p.stream === 'stderr' ? 'stderr' : 'stdout', p.chunk);
    card.output.appendChild(span);
    card.output.scrollTop = card.output.scrollHeight;
    scrollToEnd();
  }

  function toolResult(p, turnId) {
    let card = cards.get(p.callId);
    if (!card) card = createCard(getTurn(turnId || p.turnId), p.callId, p.command || '');
    card.actions.hidden = true;
    setCardStatus(card, p.status);
    if (!card.liveOutput && p.output) {
      card.output.textContent = p.output;
      card.output.hidden = false;
    }
    card.result.hidden = false;
    card.result.textContent =
      'Result: ' + (p.status === 'unknown' ? 'unknown, the command may have run' : STATUS_LABELS[p.status] || p.status) +
      (typeof p.exitCode === 'number' ? ' (exit code ' + p.exitCode + ')' : '');
    card.result.className = 'tool-result ' + p.status;
    showEvidence(card, p.status, p.evidence);
  }

  /**
   * What the command supervisor recorded about a call whose result is unknown
   * (mino/recovery, mino/history). Shown beside the result, which stays unknown.
   */
  function showEvidence(card, status, evidence) {
    if (status !== 'unknown' || !evidence || typeof evidence.summary !== 'string' || !evidence.summary) return;
    card.evidence.textContent = 'Evidence: ' + evidence.summary;
    card.evidence.hidden = false;
  }

  // ------------------------------------------------------------ history & notifications

  function renderHistory(history) {
    transcript.textContent = '';
    turns.clear();
    cards.clear();
    state.runningTurnId = null;
    if (!history) return updateComposer();
    for (const t of history.turns) {
      const turn = createTurn(t.turnId, t.input);
      if (t.text) appendText(turn, t.text);
      // History text is settled: a later mino/retrying voids only live text.
      startResponse(turn);
      for (const c of t.calls) {
        const card = createCard(turn, c.callId, c.command);
        if (c.result) toolResult(Object.assign({ callId: c.callId, command: c.command, evidence: c.evidence }, c.result), t.turnId);
        else setCardStatus(card, 'running');
        // History carries one output per call; live output flag stays off.
        card.liveOutput = false;
      }
      for (const n of t.notices || []) turn.body.appendChild(h('div', 'turn-notice', n));
      setTurnStatus(turn, t.status, t.reason);
      if (!t.status) state.runningTurnId = t.turnId;
    }
    updateComposer();
    scrollToEnd();
  }

  function onRecovery(r) {
    if (r.turns && r.turns.length > 0 && !r.acknowledgementRequired) {
      addNotice(RECOVERED_NOTICE, 'info');
    }
    for (const t of r.turns || []) {
      for (const c of t.calls) {
        if (c.result.status === 'not_executed') {
          addNotice('Not executed (never started): ' + c.command, 'info');
        }
        const card = cards.get(c.callId);
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
        if (c.result.status !== 'unknown') continue;
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
    switch (method) {
      case 'mino/recovery':
        return onRecovery(p);
      case 'mino/turnStarted': {
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
        updateComposer();
        return scrollToEnd();
      }
      case 'mino/textDelta':
        appendText(getTurn(p.turnId), p.delta);
        return scrollToEnd();
      case 'mino/retrying':
        return retrying(p);
      case 'mino/approvalRequest':
        return showApproval(p);
      case 'mino/toolStarted':
        return toolStarted(p);
      case 'mino/toolOutput':
        return toolOutput(p);
      case 'mino/toolResult':
        startResponse(getTurn(p.turnId));
        return toolResult(p);
      case 'mino/turnEnded': {
        const turn = getTurn(p.turnId);
        // The final text is authoritative if the deltas missed anything.
        if (typeof p.text === 'string' && p.text !== turn.text && p.text.startsWith(turn.text)) {
          appendText(turn, p.text.slice(turn.text.length));
        }
        setTurnStatus(turn, p.status, p.reason);
        for (const card of cards.values()) {
          if (card.el.closest('.turn') === turn.el && card.el.dataset.status === 'waiting') {
            card.actions.hidden = true;
          }
        }
        if (state.runningTurnId === p.turnId) state.runningTurnId = null;
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
        return closeGate();
      case 'sent':
        return onSent();
      case 'error':
        return onError(msg);
      case 'server':
        return onServer(msg);
      case 'focus':
        if (msg.clear) input.value = '';
        if (!input.disabled) input.focus();
        return;
    }
  });

  function onError(msg) {
    if (msg.request === 'send') {
      // The question was refused: it stays in the input, the reason below it.
      state.pendingQuestion = null;
      showComposerError(msg.message);
      if (msg.code === -32010 && state.gateTurnIds === null) {
        // The server still requires an acknowledgement the view did not know of.
        openGate({ turns: [], unacknowledgedTurnIds: [] });
      }
    } else {
      addNotice(msg.message, 'error');
    }
    if (msg.request === 'acknowledge') {
      state.ackPending = false;
      gateYes.disabled = false;
    } else if (msg.request === 'approval' && msg.callId) {
      const card = cards.get(msg.callId);
      if (card && msg.code !== -32012) {
        for (const b of card.actions.querySelectorAll('button')) /** @type {HTMLButtonElement} */ (b).disabled = false;
        setCardStatus(card, 'waiting');
      }
    }
    updateComposer();
  }

  function linkButton(label, msg) {
    const b = h('button', 'link', label);
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
    if (!text.trim() || sendBtn.disabled) return;
    state.pendingQuestion = text;
    showComposerError(null);
    updateComposer();
    post({ type: 'send', text });
  }

  function onSent() {
    if (state.pendingQuestion !== null && input.value === state.pendingQuestion) input.value = '';
    state.pendingQuestion = null;
    updateComposer();
  }

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
  post({ type: 'ready' });
})();
