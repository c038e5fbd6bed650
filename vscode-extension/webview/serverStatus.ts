// The Mino server's state above the transcript (starting, stopped, crashed,
// could not start) with the ways back, and what a stop leaves unfinished.
import type { HostMessage } from '../src/messages';
import { closeGate } from './ackGate';
import { allCards, setCardStatus } from './cards';
import { updateComposer } from './composerStatus';
import { h, notices, statusEl } from './dom';
import { linkButton } from './host';
import { setProgress } from './progress';
import { markReadsUnfinished } from './reads';
import { turns } from './turns';
import { state } from './viewState';

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
    let why: string;
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

const DEFAULT_STOP_MESSAGES = {
  stopped: 'Mino server stopped.',
  crashed: 'Mino server stopped unexpectedly.',
  failed: 'Mino server could not be started.',
};

export function onServer(msg: Extract<HostMessage, { type: 'server' }>) {
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
