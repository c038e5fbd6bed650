/**
 * Mino for VS Code: activation, commands and the chat view.
 */
import * as vscode from 'vscode';
import { APPROVAL_MODE_SETTING, ApprovalModeCommands, RESTART_SETTINGS, SANDBOX_SETTING } from './approvalMode';
import { ChatViewProvider } from './chatViewProvider';
import { EditReviews } from './editReview';
import { showMcpServers } from './mcpServers';
import { Notification } from './protocol';
import { API_KEY_SECRET, MinoServer } from './server';
import { ServerStoppedNotice } from './serverNotice';
import { SessionCommands } from './sessions';

export interface MinoExtensionApi {
  server: MinoServer;
  view: ChatViewProvider;
  sessions: SessionCommands;
  edits: EditReviews;
  modes: ApprovalModeCommands;
}

let server: MinoServer | undefined;

export function activate(context: vscode.ExtensionContext): MinoExtensionApi {
  const output = vscode.window.createOutputChannel('Mino Server', { log: true });
  server = new MinoServer({ context, output });
  const s = server;
  const edits = new EditReviews(s);
  const view = new ChatViewProvider(context.extensionUri, s, output, edits);
  const sessions = new SessionCommands(s, output);
  const modes = new ApprovalModeCommands(s);

  context.subscriptions.push(
    output,
    s,
    new ServerStoppedNotice(s),
    view,
    edits,
    vscode.window.registerWebviewViewProvider(ChatViewProvider.viewType, view, {
      webviewOptions: { retainContextWhenHidden: true },
    }),
    vscode.commands.registerCommand('mino.open', () => openView()),
    // From the editor: the selection becomes a chip of the question being written.
    vscode.commands.registerCommand('mino.addSelection', async () => {
      await openView();
      await view.addContext('selection');
      view.focusInput();
    }),
    vscode.commands.registerCommand('mino.newQuestion', async () => {
      await openView();
      view.focusInput(true);
    }),
    vscode.commands.registerCommand('mino.cancelTurn', async () => {
      const turnId = s.runningTurnId;
      const conn = s.connection;
      if (!turnId || !conn) {
        void vscode.window.showInformationMessage('Mino: no turn is running.');
        return;
      }
      try {
        await conn.cancel(turnId);
      } catch (e) {
        void vscode.window.showErrorMessage(`Mino: could not cancel the turn: ${String((e as Error).message ?? e)}`);
      }
    }),
    vscode.commands.registerCommand('mino.newChat', async () => {
      await openView();
      if (await sessions.newChat()) view.focusInput(true);
    }),
    vscode.commands.registerCommand('mino.sessions', async () => {
      await openView();
      await sessions.showSessions();
    }),
    vscode.commands.registerCommand('mino.renameSession', () => sessions.renameCurrent()),
    vscode.commands.registerCommand('mino.rules', () => sessions.showRules()),
    vscode.commands.registerCommand('mino.chooseModel', () => sessions.chooseModel()),
    vscode.commands.registerCommand('mino.setApprovalMode', () => modes.setApprovalMode()),
    // From the palette: the edit waiting for approval; from a card's Review diff: that card's edit.
    vscode.commands.registerCommand('mino.reviewPendingEdit', (turnId?: string, callId?: string, acceptedHunks?: number[]) =>
      edits.open(turnId, callId, acceptedHunks),
    ),
    // The diff editor's lenses above each hunk of a pending edit.
    vscode.commands.registerCommand('mino.keepHunk', (turnId: string, callId: string, index: number) => edits.toggleHunk(turnId, callId, index, true)),
    vscode.commands.registerCommand('mino.rejectHunk', (turnId: string, callId: string, index: number) => edits.toggleHunk(turnId, callId, index, false)),
    vscode.commands.registerCommand('mino.compact', () => sessions.compact()),
    vscode.commands.registerCommand('mino.mcpServers', () => showMcpServers(s)),
    vscode.commands.registerCommand('mino.showServerLog', () => output.show(true)),
    vscode.commands.registerCommand('mino.restartServer', () => s.restart()),
    vscode.commands.registerCommand('mino.setApiKey', async () => {
      const key = await vscode.window.showInputBox({
        title: 'Mino: OpenAI API key',
        prompt: 'Stored in VS Code SecretStorage. OPENAI_API_KEY in the environment takes precedence.',
        password: true,
        ignoreFocusOut: true,
      });
      if (key === undefined) return;
      if (key === '') await context.secrets.delete(API_KEY_SECRET);
      else await context.secrets.store(API_KEY_SECRET, key);
      const choice = await vscode.window.showInformationMessage(
        'Mino: API key saved. Restart the server to use it?',
        'Restart',
      );
      if (choice === 'Restart') await s.restart();
    }),
    // Shows Cancel in the view's title bar (and enables its keybinding) while a turn runs.
    s.onNotification(({ method }) => {
      if (method === Notification.turnStarted || method === Notification.turnEnded) setTurnRunning(s.runningTurnId !== undefined);
      // The server names an untitled session after its first question.
      if (method === Notification.turnEnded) void sessions.refreshTitle();
    }),
    s.onDidChangeState(() => setTurnRunning(s.runningTurnId !== undefined)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      // The approval mode and sandbox apply to the running server at once.
      const approvalMode = e.affectsConfiguration(APPROVAL_MODE_SETTING);
      const sandbox = e.affectsConfiguration(SANDBOX_SETTING);
      if (approvalMode || sandbox) void modes.applySettingsChange({ approvalMode, sandbox });
      if (RESTART_SETTINGS.some((setting) => e.affectsConfiguration(setting))) {
        void vscode.window
          .showInformationMessage('Mino settings changed. Restart the server to apply them?', 'Restart')
          .then((choice) => (choice === 'Restart' ? s.restart() : undefined));
      }
    }),
  );

  // The server starts when the view is first shown (ChatViewProvider.resolveWebviewView)
  // or a command needs it; activation alone starts nothing.
  return { server: s, view, sessions, edits, modes };
}

/** Context key for `when` clauses in package.json. */
export const TURN_RUNNING_CONTEXT = 'mino.turnRunning';
let turnRunning: boolean | undefined;

function setTurnRunning(running: boolean): void {
  if (turnRunning === running) return;
  turnRunning = running;
  void vscode.commands.executeCommand('setContext', TURN_RUNNING_CONTEXT, running);
}

async function openView(): Promise<void> {
  await vscode.commands.executeCommand('workbench.view.extension.mino');
  await vscode.commands.executeCommand(`${ChatViewProvider.viewType}.focus`);
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
  turnRunning = undefined;
}
