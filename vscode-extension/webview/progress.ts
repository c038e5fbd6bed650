// What Mino is doing now, shown above the composer. Not a live region: the
// running command's clock ticks every second; the announcer says what
// matters once.
import { $ } from './dom';

export type ProgressKind = 'idle' | 'sending' | 'thinking' | 'streaming' | 'retrying' | 'compacting' | 'approval' | 'running';

const progressEl = $('progress');
const progressText = $('progress-text');
export const progress = {
  kind: 'idle' as ProgressKind,
  command: '',
  since: 0,
  timer: undefined as ReturnType<typeof setInterval> | undefined,
};

function formatElapsed(ms: number) {
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

export function setProgress(kind: ProgressKind, command?: string) {
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
