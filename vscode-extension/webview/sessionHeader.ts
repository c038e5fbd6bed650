// The panel's header: the session's title and tokens, its model, the
// approval mode and sandbox in force, and the instruction files the model
// is given; its buttons ask the host (rename, choose a model, set the mode).
import type { InstructionFile, TokenUsage } from '../src/generated/protocol';
import { $, sessionHeader, sessionInstructions, sessionMode, sessionModel, sessionSandbox, sessionTitle, sessionUsage } from './dom';
import { formatUsage } from './format';
import { post } from './host';
import { approvalModeLabel } from './statusLabels';

export const NEW_CHAT_TITLE = 'New chat';

/** The session's title (`null` until the first question), and the header shown. */
export function showSessionTitle(title: string | null) {
  sessionTitle.textContent = title || NEW_CHAT_TITLE;
  sessionTitle.title = title || NEW_CHAT_TITLE;
  sessionHeader.hidden = false;
}

/** The session's tokens so far, in the panel header. */
export function showSessionUsage(usage: TokenUsage | null | undefined) {
  const text = formatUsage(usage);
  sessionUsage.textContent = text ? 'Session: ' + text : '';
  sessionUsage.hidden = !text;
}

/** The current session's model, in the header; a click offers the others. */
export function onModel(model: unknown) {
  if (typeof model !== 'string') return;
  sessionModel.textContent = model;
  sessionModel.hidden = false;
}

/**
 * The approval mode in force (and the sandbox, when there is one), in the
 * header, so that whether commands will ask is always in sight; a click
 * opens Set Approval Mode.
 */
export function onModes(approvalMode: unknown, sandbox: unknown) {
  if (typeof approvalMode !== 'string' || typeof sandbox !== 'string') return;
  // The mode never gives way in a narrow panel; the sandbox beside it may.
  sessionMode.textContent = 'Mode: ' + approvalMode;
  sessionSandbox.textContent = 'sandbox ' + sandbox;
  sessionSandbox.hidden = sandbox === 'off';
  sessionMode.dataset.mode = approvalMode;
  const meaning = approvalModeLabel(approvalMode);
  sessionMode.title = 'Approval mode ' + approvalMode + ': ' + meaning + '; sandbox ' + sandbox + '. Click to change the approval mode.';
  sessionMode.setAttribute('aria-label', 'Approval mode ' + approvalMode + ' (' + meaning + '), sandbox ' + sandbox + ': change the approval mode');
  sessionMode.hidden = false;
}

/**
 * The project's instruction files (AGENTS.md) the model is given, for the
 * header: how many and what was cut, each file's path in the tooltip.
 */
export function showInstructions(files: InstructionFile[] | undefined) {
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
