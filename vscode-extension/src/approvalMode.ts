/**
 * The approval mode and the sandbox in VS Code: the settings `mino.approvalMode`
 * and `mino.sandbox` (sent to `initialize`, and applied to a running server with
 * `mino/settings/update`), and the Mino: Set Approval Mode quick pick.
 *
 * Choosing a mode that lets commands run without asking is a deliberate act:
 * the quick pick always opens on `ask`, so an Enter typed ahead (or pressed
 * without looking) never makes Mino more permissive.
 */
import * as vscode from 'vscode';
import { ErrorCodes } from 'vscode-jsonrpc';
import { APPROVAL_MODES, SANDBOX_MODES, isRpcError, type ApprovalMode, type SandboxMode, type SettingsResult, type SettingsUpdateParams } from './protocol';
import { APPROVAL_MODE_SETTING, SANDBOX_SETTING, readModeSettings, type ModeSettings } from './modeSettings';
import { errorMessage, type MinoServer } from './server';
import { connectionOrSay, CURRENT_MARK } from './sessions';

export { APPROVAL_MODE_SETTING, SANDBOX_SETTING, readModeSettings, startRefusal, type ModeSettings } from './modeSettings';

/** The settings applied to a running server without a restart (every other `mino.*` setting needs one). */
export const LIVE_SETTINGS = [APPROVAL_MODE_SETTING, SANDBOX_SETTING] as const;
/** The settings read only when the server starts. */
export const RESTART_SETTINGS = ['mino.serverPath', 'mino.model', 'mino.baseUrl'] as const;

/** What each approval mode lets run without asking (docs/protocol.md, "Approval modes"). */
export const APPROVAL_MODE_DESCRIPTIONS: Record<ApprovalMode, string> = {
  ask: 'Nothing runs without asking: every command and edit asks. Rules are kept but not applied.',
  rules: 'Commands and edits your allow rules cover run without asking; deny rules refuse; everything else asks.',
  'sandboxed-auto': 'As rules, and any other command runs without asking inside the sandbox (needs a sandbox).',
  plan: 'Plan mode: nothing runs. Commands and edits are refused without asking; the model plans. Choose another mode to leave it.',
};

/** What each sandbox mode lets a command touch (docs/protocol.md, "Sandbox modes"). */
export const SANDBOX_DESCRIPTIONS: Record<SandboxMode, string> = {
  off: 'Commands run with your permissions.',
  'read-only': 'Commands write nowhere and have no network.',
  'workspace-write': 'Commands write only in the workspace and the temporary directory; no network.',
};

/**
 * The protocol crate's order, the quick pick's: `ask` first (it has the
 * focus), then the modes that let more run without asking, then `plan`, which
 * runs nothing.
 */
export { APPROVAL_MODES, SANDBOX_MODES };

/** "the approval mode rules", "the approval mode sandboxed-auto with the sandbox workspace-write". */
function describeChange(params: SettingsUpdateParams): string {
  const parts: string[] = [];
  if (params.approvalMode) parts.push(`the approval mode ${params.approvalMode}`);
  if (params.sandbox) parts.push(`the sandbox ${params.sandbox}`);
  return parts.join(' with ');
}

/** What the header and messages say is in force. */
export function describeModes(modes: Pick<SettingsResult, 'approvalMode' | 'sandbox'>): string {
  return `approval mode ${modes.approvalMode}, sandbox ${modes.sandbox}`;
}

type ModeItem = vscode.QuickPickItem & { mode: ApprovalMode };
type SandboxItem = vscode.QuickPickItem & { sandbox?: SandboxMode };

export const KEEP_MODE_LABEL = '$(close) Keep the current mode';

export class ApprovalModeCommands {
  constructor(private readonly server: MinoServer) {}

  /**
   * Mino: Set Approval Mode — every mode, the current one marked, `ask`
   * focused. `sandboxed-auto` without a sandbox asks which sandbox first.
   * Only the server's answer changes what the panel shows.
   */
  async setApprovalMode(): Promise<void> {
    if (!(await connectionOrSay(this.server))) return;
    const current = this.server.modes;
    const mode = await this.pickMode(current);
    if (!mode) return;
    const params: SettingsUpdateParams = { approvalMode: mode };
    if (mode === 'sandboxed-auto' && (current?.sandbox ?? 'off') === 'off') {
      const sandbox = await this.pickSandbox(current?.sandboxSupport);
      if (!sandbox) return;
      params.sandbox = sandbox;
    } else if (mode === current?.approvalMode) {
      return;
    }
    await this.apply(params);
  }

  private pickMode(current: SettingsResult | undefined): Promise<ApprovalMode | undefined> {
    const items: ModeItem[] = APPROVAL_MODES.map((mode) => ({
      label: mode,
      description: mode === current?.approvalMode ? CURRENT_MARK : undefined,
      detail: APPROVAL_MODE_DESCRIPTIONS[mode],
      mode,
    }));
    return pickOne(items, {
      title: 'Mino: Approval mode — what runs without asking',
      placeholder: current
        ? `Now: ${describeModes(current)}. Move to a mode and press Enter to choose it.`
        : 'Move to a mode and press Enter to choose it.',
    }).then((item) => item?.mode);
  }

  /** Which sandbox `sandboxed-auto` runs commands in; "Keep the current mode" (focused) changes nothing. */
  private pickSandbox(support: string | undefined): Promise<SandboxMode | undefined> {
    const items: SandboxItem[] = [
      { label: KEEP_MODE_LABEL, detail: 'sandboxed-auto approves nothing without a sandbox.' },
      ...SANDBOX_MODES.filter((s) => s !== 'off').map((sandbox) => ({ label: sandbox, detail: SANDBOX_DESCRIPTIONS[sandbox], sandbox })),
    ];
    return pickOne(items, {
      title: 'Mino: sandboxed-auto needs a sandbox — which one should commands run in without asking?',
      placeholder: support ? `This machine: ${support}` : 'Choose the sandbox commands run in.',
    }).then((item) => item?.sandbox);
  }

  /**
   * A setting changed while the server runs: the changed one(s) go to the
   * server. `mino.sandbox` set back to `off` is sent as such (the person asked
   * for it); a refusal says what was refused, why, and what is still in force.
   */
  async applySettingsChange(changed: { approvalMode: boolean; sandbox: boolean }): Promise<void> {
    // A server still starting may have read the settings before this change: it gets it once ready.
    await this.server.whenStarted();
    if (!this.server.connection) return; // the next start reads the settings
    const modes = readModeSettings();
    if ('message' in modes) {
      void vscode.window.showErrorMessage(modes.message, 'Open Settings').then((choice) => {
        if (choice === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', modes.setting);
      });
      return;
    }
    const params: SettingsUpdateParams = {};
    if (changed.approvalMode) params.approvalMode = modes.approvalMode;
    if (changed.sandbox) params.sandbox = modes.sandbox;
    await this.apply(params, changed.sandbox ? SANDBOX_SETTING : APPROVAL_MODE_SETTING);
  }

  /** Sends the change; on a refusal nothing is claimed: the error names it, why, and what is still in force. */
  private async apply(params: SettingsUpdateParams, setting?: string): Promise<void> {
    try {
      await this.server.updateModes(params);
    } catch (e) {
      const still = this.server.modes ? ` Still in force: ${describeModes(this.server.modes)}.` : '';
      const from = setting ? ` (from the setting ${setting})` : '';
      const choice = await vscode.window.showErrorMessage(
        `Mino refused ${describeChange(params)}${from}: ${errorMessage(e)}${still}`,
        ...(setting ? ['Open Settings'] : []),
      );
      if (choice === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', setting);
    }
  }
}

/** A quick pick whose first item has the focus; resolves to the accepted item, undefined when dismissed. */
function pickOne<T extends vscode.QuickPickItem>(items: T[], options: { title: string; placeholder: string }): Promise<T | undefined> {
  const pick = vscode.window.createQuickPick<T>();
  pick.title = options.title;
  pick.placeholder = options.placeholder;
  pick.matchOnDetail = true;
  pick.items = items;
  // The least permissive choice, whatever is current: more is only ever chosen by moving to it.
  pick.activeItems = items.slice(0, 1);
  return new Promise((resolve) => {
    let accepted: T | undefined;
    pick.onDidAccept(() => {
      accepted = pick.selectedItems[0];
      if (accepted) pick.hide();
    });
    pick.onDidHide(() => {
      pick.dispose();
      resolve(accepted);
    });
    pick.show();
  });
}
