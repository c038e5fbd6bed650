// What a card, a row or a turn says of its status, and how the approval
// mode and the sandbox read to the person. Typed by the protocol's
// vocabulary, so a status it adds is a type error here until it has a label.
import type { ApprovalMode, SandboxMode, ToolStatus, TurnStatus } from '../src/generated/protocol';

export const RESULT_LABELS: Record<ToolStatus, string> = {
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

/** Where a card's call is before it has a result (shown in its badge and `data-status`). */
export type CallProgress = 'waiting' | 'approved' | 'denied' | 'running' | 'unfinished';
export type CardStatus = ToolStatus | CallProgress;

/** A card's badge: its result's label, or where the call is before it has one. */
export const STATUS_LABELS: Record<CardStatus, string> = {
  ...RESULT_LABELS,
  waiting: 'waiting for approval',
  approved: 'approved',
  denied: 'denying…',
  running: 'running',
  unfinished: 'did not finish',
};

/** The label of `status`, or the word itself for one this view does not know (from a newer server). */
export function statusLabel(status: string): string {
  return (STATUS_LABELS as Record<string, string>)[status] || status;
}

export const TURN_LABELS: Record<TurnStatus, string> = {
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
  interrupted: 'interrupted',
};

export const SANDBOX_LABELS: Record<SandboxMode, string> = {
  off: 'off: the command runs with your permissions',
  'read-only': 'read-only: no writes, no network',
  'workspace-write': 'workspace-write: writes only in the workspace and a temporary folder, no network',
};

export const APPROVAL_MODE_LABELS: Record<ApprovalMode, string> = {
  ask: 'ask for every command',
  rules: 'ask unless a rule allows it',
  'sandboxed-auto': 'run sandboxed commands without asking',
  plan: 'plan mode: commands and edits are refused, the model plans',
};

/** The meaning of an approval mode, or the word itself for one this view does not know. */
export function approvalModeLabel(mode: string): string {
  return (APPROVAL_MODE_LABELS as Record<string, string>)[mode] || mode;
}

export function sandboxLabel(sandbox: string): string {
  return (SANDBOX_LABELS as Record<string, string>)[sandbox] || sandbox;
}
