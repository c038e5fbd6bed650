/**
 * `mino.approvalMode` and `mino.sandbox` as the settings hold them, read when
 * the server starts (`server.ts`) and when they change (`approvalMode.ts`): a
 * leaf both import, so neither imports the other back.
 */
import * as vscode from 'vscode';
import { ErrorCodes } from 'vscode-jsonrpc';
import { errorMessage } from './errors';
import { APPROVAL_MODES, SANDBOX_MODES, isRpcError, type ApprovalMode, type SandboxMode } from './protocol';

export const APPROVAL_MODE_SETTING = 'mino.approvalMode';
export const SANDBOX_SETTING = 'mino.sandbox';
export interface ModeSettings {
  approvalMode: ApprovalMode;
  sandbox: SandboxMode;
}

/**
 * `mino.approvalMode` and `mino.sandbox` as the settings hold them, or which
 * one holds a value the server would not take (settings.json is edited by hand).
 */
export function readModeSettings(): ModeSettings | { message: string; setting: string } {
  const config = vscode.workspace.getConfiguration('mino');
  const approvalMode = config.get<string>('approvalMode') ?? 'ask';
  const sandbox = config.get<string>('sandbox') ?? 'off';
  if (!(APPROVAL_MODES as string[]).includes(approvalMode)) {
    return { message: badSetting(APPROVAL_MODE_SETTING, approvalMode, APPROVAL_MODES), setting: APPROVAL_MODE_SETTING };
  }
  if (!(SANDBOX_MODES as string[]).includes(sandbox)) {
    return { message: badSetting(SANDBOX_SETTING, sandbox, SANDBOX_MODES), setting: SANDBOX_SETTING };
  }
  return { approvalMode: approvalMode as ApprovalMode, sandbox: sandbox as SandboxMode };
}

function badSetting(setting: string, value: string, allowed: readonly string[]): string {
  return `Mino: ${setting} is ${JSON.stringify(value)}, which Mino does not know. Set it to one of: ${allowed.join(', ')}.`;
}

/**
 * Whether a failed start is the server refusing the sandbox `mino.sandbox`
 * asked for (-32602: this machine cannot enforce it); the message says so and
 * names the setting that fixes it.
 */
export function startRefusal(e: unknown, modes: ModeSettings): { message: string; setting: string } | undefined {
  if (modes.sandbox === 'off') return undefined;
  const error = isRpcError(e, ErrorCodes.InvalidParams) ? e : (e as { cause?: unknown })?.cause;
  if (!isRpcError(error, ErrorCodes.InvalidParams)) return undefined;
  return {
    message: `Mino server refused the sandbox ${modes.sandbox} (${SANDBOX_SETTING}): ${errorMessage(error)}`,
    setting: SANDBOX_SETTING,
  };
}
