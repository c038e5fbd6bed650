/**
 * "Rewind to here": the plan of `mino/rewind/plan` (files put back, conflicts
 * left as they are, commands whose effects cannot be undone) in a modal whose
 * default is Cancel; only Rewind sends `mino/rewind` with the plan's digest.
 */
import * as vscode from 'vscode';
import { ErrorCode, isRpcError, type RewindPlanResult, type RewindResult } from './protocol';
import { errorMessage, type MinoServer } from './server';
import { connectionOrSay } from './sessions';

/** At most this many lines of each list are shown in the modal (the rest are counted). */
export const REWIND_LIST_SHOWN = 20;

function list(title: string, lines: string[]): string[] {
  if (!lines.length) return [];
  const shown = lines.slice(0, REWIND_LIST_SHOWN).map((l) => `  ${l}`);
  if (lines.length > REWIND_LIST_SHOWN) shown.push(`  … and ${lines.length - REWIND_LIST_SHOWN} more`);
  return [title, ...shown];
}

/** The plan as the modal's detail. */
export function planText(plan: RewindPlanResult): string {
  const parts = [
    ...list('Files put back as they were before:', plan.files.map((f) => (f.action === 'remove' ? `${f.path} (created by Mino: removed)` : f.path))),
    ...list('Conflicts, left as they are (changed since Mino wrote them):', plan.conflicts.map((c) => `${c.path}: ${c.why}`)),
    ...list('Commands that ran: Mino cannot undo their effects:', plan.commands.map((c) => c.command)),
  ];
  if (!plan.files.length) parts.unshift('No file to put back.');
  parts.push('', `${plan.turns.length} turn${plan.turns.length === 1 ? '' : 's'} will be marked rewound and leave the model's context.`);
  return parts.join('\n');
}

const OUTCOME_LABELS: Record<string, string> = {
  restored: 'restored',
  removed: 'removed',
  notRestored: 'NOT restored',
  conflict: 'left as it is (changed since the plan)',
  changed: 'changed (neither before nor what Mino wrote)',
};

/** What the rewind did, in one message. */
export function outcomeText(result: RewindResult): string {
  const done = result.files.filter((f) => f.outcome === 'restored' || f.outcome === 'removed').length;
  const lines = result.files.map((f) => `${f.path}: ${OUTCOME_LABELS[f.outcome] ?? f.outcome}${f.why ? ` (${f.why})` : ''}`);
  let text = `Mino: rewound ${result.turns.length} turn${result.turns.length === 1 ? '' : 's'}; ${done} of ${result.files.length} file${result.files.length === 1 ? '' : 's'} put back.`;
  if (lines.length) text += ` ${lines.join('; ')}.`;
  if (result.conflicts.length) text += ` Left as they are: ${result.conflicts.map((c) => c.path).join(', ')}.`;
  if (result.commands.length) text += ` Not undone (commands): ${result.commands.map((c) => c.command).join(', ')}.`;
  return text;
}

/**
 * "Fork from here": `mino/sessions/fork` of the current session through
 * `turnId`, then the fork becomes current (as opening a session does, so the
 * view shows its history). Nothing on disk is acted on, so nothing is asked.
 * Returns true when the fork is open.
 */
export async function forkTurn(server: MinoServer, turnId: string): Promise<boolean> {
  const conn = await connectionOrSay(server);
  const sessionId = server.session?.sessionId;
  if (!conn || !sessionId) return false;
  try {
    const forked = await conn.forkSession(sessionId, turnId);
    await server.switchSession({ sessionId: forked.sessionId });
    void vscode.window.showInformationMessage(
      `Mino: forked ${forked.turns} turn${forked.turns === 1 ? '' : 's'} (through ${turnId}) into a new session; the first one is kept in Mino: Sessions.`,
    );
    return true;
  } catch (e) {
    void vscode.window.showErrorMessage(`Mino: cannot fork from this turn: ${errorMessage(e)}`);
    return false;
  }
}

/** Returns true when a rewind was carried out (the view then reloads the history). */
export async function rewindTurn(server: MinoServer, turnId: string): Promise<boolean> {
  const conn = await connectionOrSay(server);
  if (!conn) return false;
  let plan: RewindPlanResult;
  try {
    plan = await conn.rewindPlan(turnId);
  } catch (e) {
    void vscode.window.showErrorMessage(`Mino: cannot rewind this turn: ${errorMessage(e)}`);
    return false;
  }
  const cancel: vscode.MessageItem = { title: 'Cancel', isCloseAffordance: true };
  const rewind: vscode.MessageItem = { title: 'Rewind' };
  const choice = await vscode.window.showWarningMessage(
    `Rewind to this turn? Mino puts back ${plan.files.length} file${plan.files.length === 1 ? '' : 's'}.`,
    { modal: true, detail: planText(plan) },
    // First, so that Enter and Escape both change nothing.
    cancel,
    rewind,
  );
  if (choice !== rewind) return false;
  try {
    const result = await conn.rewind(turnId, plan.digest);
    const text = outcomeText(result);
    const complete = result.files.every((f) => f.outcome === 'restored' || f.outcome === 'removed');
    if (complete) void vscode.window.showInformationMessage(text);
    else void vscode.window.showWarningMessage(text);
    return true;
  } catch (e) {
    const why = isRpcError(e, ErrorCode.rewindPlanChanged) ? ' Something changed since the plan was shown; nothing was written. Rewind again to see the new plan.' : '';
    void vscode.window.showErrorMessage(`Mino: the rewind was refused: ${errorMessage(e)}${why}`);
    return false;
  }
}
