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
  $('ack-question').textContent = ACK_QUESTION;

  /** @type {Map<string, Turn>} */
  const turns = new Map();
  /** @type {Map<string, Card>} callId → card */
  const cards = new Map();
  const state = {
    /** @type {string | null} */ runningTurnId: null,
    /** @type {string[] | null} turns awaiting acknowledgement */ gateTurnIds: null,
    ackPending: false,
    sending: false,
    server: 'starting',
  };

  /**
   * @typedef {{ el: HTMLElement, body: HTMLElement, segment: HTMLElement | null,
   *   statusEl: HTMLElement, text: string, response: ResponseText | null,
   *   retryNotice: HTMLElement | null }} Turn
   * The text of the model's current response (since mino/turnStarted or the
   * turn's last mino/toolResult): where it starts in `text` and in each
   * segment it was written to, so that mino/retrying can take it back.
   * @typedef {{ start: number, parts: { el: HTMLElement, start: number }[] }} ResponseText
   * @typedef {{ el: HTMLElement, badge: HTMLElement, actions: HTMLElement,
   *   output: HTMLElement, result: HTMLElement, liveOutput: boolean }} Card
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
    input.disabled = gated;
    form.classList.toggle('gated', gated);
    sendBtn.disabled = gated || !ready || state.sending || state.runningTurnId !== null;
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
    el.appendChild(h('pre', 'tool-command', command));
    const actions = h('div', 'tool-actions');
    actions.hidden = true;
    const output = h('pre', 'tool-output');
    output.hidden = true;
    const result = h('div', 'tool-result');
    result.hidden = true;
    el.append(actions, output, result);
    turn.body.appendChild(el);
    // Text after a tool call starts a new segment below the card.
    turn.segment = null;
    const card = { el, badge, actions, output, result, liveOutput: false };
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
    const approve = h('button', 'primary approve', 'Approve');
    approve.type = 'button';
    const deny = h('button', 'secondary deny', 'Deny');
    deny.type = 'button';
    approve.addEventListener('click', () => decide(card, p.callId, 'approve'));
    deny.addEventListener('click', () => decide(card, p.callId, 'deny'));
    card.actions.append(h('span', 'question', 'Run this command?'), approve, deny);
    card.actions.hidden = false;
    setCardStatus(card, 'waiting');
    approve.focus({ preventScroll: true });
    scrollToEnd();
  }

  function decide(card, callId, decision) {
    for (const b of card.actions.querySelectorAll('button')) /** @type {HTMLButtonElement} */ (b).disabled = true;
    setCardStatus(card, decision === 'approve' ? 'approved' : 'denied');
    post({ type: 'approval', callId, decision });
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
        if (c.result) toolResult(Object.assign({ callId: c.callId, command: c.command }, c.result), t.turnId);
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

  gateYes.addEventListener('click', () => {
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
        state.sending = false;
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
        state.sending = false;
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
    addNotice(msg.message, 'error');
    if (msg.request === 'send') {
      state.sending = false;
      if (msg.code === -32010 && state.gateTurnIds === null) {
        // The server still requires an acknowledgement the view did not know of.
        openGate({ turns: [], unacknowledgedTurnIds: [] });
      }
    } else if (msg.request === 'acknowledge') {
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

  function onServer(msg) {
    state.server = msg.state;
    statusEl.textContent = '';
    statusEl.className = 'status ' + msg.state;
    if (msg.state === 'starting') statusEl.textContent = 'Starting Mino…';
    if (msg.state === 'stopped' || msg.state === 'crashed') {
      statusEl.appendChild(h('span', null, msg.message || (msg.state === 'crashed' ? 'Mino server stopped unexpectedly.' : 'Mino server stopped.')));
      const restart = h('button', 'link', 'Restart');
      restart.type = 'button';
      restart.addEventListener('click', () => post({ type: 'restart' }));
      const log = h('button', 'link', 'Show log');
      log.type = 'button';
      log.addEventListener('click', () => post({ type: 'showLog' }));
      statusEl.append(' ', restart, ' ', log);
      state.runningTurnId = null;
      state.sending = false;
    }
    if (msg.state === 'starting' || msg.state === 'ready') {
      // A (re)started server replays recovery; stale notices go.
      notices.textContent = '';
      if (msg.state === 'starting') closeGate();
    }
    updateComposer();
  }

  // ------------------------------------------------------------ composer

  function send() {
    const text = input.value;
    if (!text.trim() || sendBtn.disabled) return;
    state.sending = true;
    input.value = '';
    updateComposer();
    post({ type: 'send', text });
  }

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
