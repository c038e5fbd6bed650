// The acknowledgement gate: after a recovery whose commands' results are
// unknown, nothing more is asked until the person says they understand
// those commands may already have run. Its Yes never takes focus and
// answers only a deliberate act (deliberate.ts).
import { ACKNOWLEDGEMENT_QUESTION, TOOL_STATUS, type RecoveryNotification } from '../src/generated/protocol';
import { updateComposer } from './composerStatus';
import { onDeliberateClick } from './deliberate';
import { $, gate, gateCalls, gateYes, h } from './dom';
import { post } from './host';
import { state } from './viewState';

$('ack-question').textContent = ACKNOWLEDGEMENT_QUESTION;

export function openGate(r: Pick<RecoveryNotification, 'turns' | 'unacknowledgedTurnIds'>) {
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

export function closeGate() {
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
