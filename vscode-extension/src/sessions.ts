/**
 * Sessions and approval rules in VS Code's own UI: the Sessions quick pick
 * (open, delete, every folder's), New Chat, Rename, and the Rules quick pick
 * (revoke). The view follows through `MinoServer.onDidChangeSession`.
 */
import * as vscode from 'vscode';
import {
  ErrorCode,
  isRpcError,
  type ListScope,
  type MinoConnection,
  type ModelEntry,
  type RuleView,
  type SessionEntry,
} from './protocol';
import { errorMessage, type MinoServer } from './server';

export const NEW_CHAT_TITLE = 'New chat';
export const WAITING_MARK = '$(warning) waiting for acknowledgement';
export const HELD_MARK = '$(lock) open elsewhere';
export const CURRENT_MARK = '$(check) current';
export const ALL_FOLDERS_LABEL = '$(folder-library) Show sessions of all folders';
export const MORE_LABEL = '$(ellipsis) More sessions…';
export const OTHER_MODEL_LABEL = '$(edit) Another model…';

/** "just now", "5 min ago", "3 h ago", "2 days ago", else the date. */
export function relativeTime(iso: string, now = Date.now()): string {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return iso;
  const minutes = Math.floor((now - then) / 60000);
  if (minutes < 1) return 'just now';
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  const days = Math.floor(hours / 24);
  if (days < 30) return days === 1 ? 'yesterday' : `${days} days ago`;
  return new Date(then).toISOString().slice(0, 10);
}

interface SessionPickItem extends vscode.QuickPickItem {
  entry?: SessionEntry;
  action?: 'all' | 'more';
}

const DELETE_BUTTON_TOOLTIP = 'Delete session';

/** The session's tokens, `12,345 tokens`; empty when the server reported none. */
export function tokens(entry: SessionEntry): string {
  return entry.usage ? `${entry.usage.totalTokens.toLocaleString('en-US')} tokens` : '';
}

export function sessionItem(entry: SessionEntry, scope: ListScope, now = Date.now()): SessionPickItem {
  const turns = `${entry.turns} turn${entry.turns === 1 ? '' : 's'}`;
  const marks = [
    entry.current ? CURRENT_MARK : '',
    entry.acknowledgementRequired ? WAITING_MARK : '',
    entry.heldElsewhere ? HELD_MARK : '',
  ].filter(Boolean);
  const detail = [...marks, scope === 'all' ? entry.cwd : ''].filter(Boolean).join('  ·  ');
  return {
    label: entry.title ?? NEW_CHAT_TITLE,
    description: [relativeTime(entry.lastActiveAt, now), turns, tokens(entry)].filter(Boolean).join(' · '),
    ...(detail ? { detail } : {}),
    // The server refuses to trash the current session or one another Mino holds.
    buttons: entry.current || entry.heldElsewhere ? [] : [{ iconPath: new vscode.ThemeIcon('trash'), tooltip: DELETE_BUTTON_TOOLTIP }],
    entry,
  };
}

/**
 * The connection, once a server that is starting (the command opened the
 * view, which starts it) is ready; else undefined, and the person is told.
 */
export async function connectionOrSay(server: MinoServer): Promise<MinoConnection | undefined> {
  await server.whenStarted();
  const conn = server.connection;
  if (!conn) void vscode.window.showErrorMessage('Mino: the server is not running. Open the Mino view to start it.');
  return conn;
}

export class SessionCommands {
  constructor(
    private readonly server: MinoServer,
    private readonly output: vscode.OutputChannel,
  ) {}

  private connectionOrSay(): Promise<MinoConnection | undefined> {
    return connectionOrSay(this.server);
  }

  /** Mino: New Chat — a new session in this workspace becomes current. */
  async newChat(): Promise<boolean> {
    if (!(await this.connectionOrSay())) return false;
    // Without `cwd` the server starts it in its workspace (this folder).
    return this.switchTo({}, 'start a new chat');
  }

  /** Opens `sessionId`; a refusal (turn running, held elsewhere) is shown and changes nothing. */
  async open(sessionId: string): Promise<boolean> {
    if (!(await this.connectionOrSay())) return false;
    return this.switchTo({ sessionId }, 'open the session');
  }

  private async switchTo(target: { sessionId: string } | { cwd?: string }, what: string): Promise<boolean> {
    try {
      await this.server.switchSession(target);
      return true;
    } catch (e) {
      // -32011 (a turn is running) and -32015 (held, missing, unreadable) say what to do.
      const why = isRpcError(e, ErrorCode.turnInProgress) ? ' Cancel the running turn or wait for it to end first.' : '';
      void vscode.window.showErrorMessage(`Mino: could not ${what}: ${errorMessage(e)}${why}`);
      return false;
    }
  }

  /** Mino: Sessions — this workspace's sessions (or every folder's) in a quick pick. */
  async showSessions(): Promise<void> {
    const conn = await this.connectionOrSay();
    if (!conn) return;
    const pick = vscode.window.createQuickPick<SessionPickItem>();
    pick.title = 'Mino: Sessions';
    pick.matchOnDescription = true;
    pick.matchOnDetail = true;
    let scope: ListScope = 'workspace';
    let entries: SessionEntry[] = [];
    let nextCursor: string | undefined;

    const render = () => {
      const now = Date.now();
      const items: SessionPickItem[] = entries.map((e) => sessionItem(e, scope, now));
      if (nextCursor) items.push({ label: MORE_LABEL, action: 'more', alwaysShow: true });
      if (scope === 'workspace') items.push({ label: ALL_FOLDERS_LABEL, action: 'all', alwaysShow: true });
      pick.items = items;
      pick.placeholder = scope === 'workspace'
        ? (entries.length ? 'Open a session of this folder' : 'No sessions in this folder yet')
        : 'Open a session of any folder (its commands run in its own folder)';
    };
    const load = async (more = false) => {
      pick.busy = true;
      try {
        const result = await conn.listSessions({ scope, ...(more && nextCursor ? { cursor: nextCursor } : {}) });
        entries = more ? [...entries, ...result.sessions] : result.sessions;
        nextCursor = result.nextCursor;
        render();
      } catch (e) {
        pick.hide();
        void vscode.window.showErrorMessage(`Mino: could not list the sessions: ${errorMessage(e)}`);
      } finally {
        pick.busy = false;
      }
    };

    const done = new Promise<void>((resolve) => {
      pick.onDidHide(() => {
        pick.dispose();
        resolve();
      });
    });
    pick.onDidAccept(async () => {
      const item = pick.selectedItems[0];
      if (!item) return;
      if (item.action === 'all') {
        scope = 'all';
        return load();
      }
      if (item.action === 'more') return load(true);
      const entry = item.entry;
      if (!entry) return;
      pick.hide();
      if (entry.current) return;
      // A held one is asked for anyway: the server's refusal says where it is open.
      await this.open(entry.sessionId);
    });
    pick.onDidTriggerItemButton(async ({ item }) => {
      const entry = item.entry;
      if (!entry) return;
      if (await this.confirmAndDelete(entry)) await load();
    });
    pick.show();
    await load();
    await done;
  }

  /** A modal question whose default is Cancel; true when the session was trashed. */
  async confirmAndDelete(entry: SessionEntry): Promise<boolean> {
    const conn = await this.connectionOrSay();
    if (!conn) return false;
    const cancel: vscode.MessageItem = { title: 'Cancel', isCloseAffordance: true };
    const remove: vscode.MessageItem = { title: 'Delete' };
    const choice = await vscode.window.showWarningMessage(
      `Delete the Mino session "${entry.title ?? NEW_CHAT_TITLE}"?`,
      {
        modal: true,
        detail: `Its ${entry.turns} turn${entry.turns === 1 ? '' : 's'} and journal are moved to the trash folder of Mino's home.`,
      },
      // First, so that Enter and Escape both keep the session.
      cancel,
      remove,
    );
    if (choice !== remove) return false;
    try {
      const { trashedTo } = await conn.deleteSession(entry.sessionId);
      this.output.appendLine(`session ${entry.sessionId} moved to ${trashedTo}`);
      return true;
    } catch (e) {
      void vscode.window.showErrorMessage(`Mino: could not delete the session: ${errorMessage(e)}`);
      return false;
    }
  }

  /** Mino: Compact Conversation — one message saying what happened. */
  async compact(): Promise<void> {
    const conn = await this.connectionOrSay();
    if (!conn) return;
    try {
      const r = await conn.compact();
      const kept = r.keptTurns ? `; ${r.keptTurns} with unknown, not executed or recovered results still sent as they were` : '';
      void vscode.window.showInformationMessage(
        r.compacted
          ? `Mino: compacted, ${r.summarizedTurns} turn(s) summarised by the model${kept}. Every turn stays in the history.`
          : `Mino: not compacted: ${r.reason ?? 'the server gave no reason'}.`,
      );
    } catch (e) {
      void vscode.window.showErrorMessage(`Mino: could not compact the conversation: ${errorMessage(e)}`);
    }
  }

  /** Mino: Rename Session — the current session's title, from an input box. */
  async renameCurrent(): Promise<void> {
    if (!(await this.connectionOrSay())) return;
    const session = this.server.session;
    if (!session) return;
    const title = await vscode.window.showInputBox({
      title: 'Mino: Rename session',
      prompt: 'The title shown in the panel and in the Sessions list (1 to 200 characters).',
      value: session.title ?? '',
      validateInput: (v) => (v.trim().length === 0 ? 'Enter a title.' : v.trim().length > 200 ? 'At most 200 characters.' : undefined),
    });
    if (title === undefined || !title.trim()) return;
    try {
      await this.server.renameSession(session.sessionId, title.trim());
    } catch (e) {
      void vscode.window.showErrorMessage(`Mino: could not rename the session: ${errorMessage(e)}`);
    }
  }

  /**
   * The server names a session after its first question: after a turn of an
   * untitled session, the header takes the title the server recorded.
   */
  async refreshTitle(): Promise<void> {
    const conn = this.server.connection;
    const session = this.server.session;
    if (!conn || !session || session.title !== null) return;
    try {
      const { sessions } = await conn.listSessions({ scope: 'workspace' });
      const current = sessions.find((s) => s.sessionId === session.sessionId);
      if (current && current.title !== null) this.server.noteTitle(current.title);
    } catch (e) {
      this.output.appendLine(`mino/sessions/list failed: ${errorMessage(e)}`);
    }
  }

  /**
   * Mino: Choose Model — the models the service lists (else the configured
   * ones), the current one marked; the one accepted becomes the session's
   * model from its next question on. "Another model…" takes a name the list
   * does not have.
   */
  async chooseModel(): Promise<void> {
    const conn = await this.connectionOrSay();
    if (!conn) return;
    type ModelItem = vscode.QuickPickItem & { model?: ModelEntry; current?: boolean };
    const pick = vscode.window.createQuickPick<ModelItem>();
    pick.title = 'Mino: Choose the model of this session';
    pick.busy = true;
    const done = new Promise<string | undefined>((resolve) => {
      // Hiding the pick fires onDidHide; an accepted item decides, not that.
      let accepted = false;
      pick.onDidAccept(async () => {
        const item = pick.selectedItems[0];
        if (!item) return;
        accepted = true;
        pick.hide();
        if (item.model) return resolve(item.current ? undefined : item.model.id);
        const typed = await vscode.window.showInputBox({
          title: 'Mino: Model name',
          prompt: 'A model the service serves, as its requests name it.',
          validateInput: (v) => (v.trim() ? undefined : 'Enter a model name.'),
        });
        resolve(typed?.trim() || undefined);
      });
      pick.onDidHide(() => {
        pick.dispose();
        if (!accepted) resolve(undefined);
      });
    });
    pick.show();
    try {
      const list = await conn.listModels();
      const items: ModelItem[] = list.models.map((m) => ({
        label: m.id,
        description: [m.id === list.current ? CURRENT_MARK : '', m.contextWindow ? `${m.contextWindow} tokens` : '']
          .filter(Boolean)
          .join('  ·  '),
        model: m,
        current: m.id === list.current,
      }));
      items.push({ label: OTHER_MODEL_LABEL, alwaysShow: true });
      pick.items = items;
      pick.placeholder =
        list.source === 'service'
          ? `The models the service offers (current: ${list.current})`
          : `The configured models: the service gave no list (current: ${list.current})`;
    } catch (e) {
      pick.hide();
      void vscode.window.showErrorMessage(`Mino: could not list the models: ${errorMessage(e)}`);
    } finally {
      pick.busy = false;
    }
    const model = await done;
    if (!model) return;
    try {
      await this.server.selectModel(model);
    } catch (e) {
      const why = isRpcError(e, ErrorCode.turnInProgress) ? ' Cancel the running turn or wait for it to end first.' : '';
      void vscode.window.showErrorMessage(`Mino: could not choose the model: ${errorMessage(e)}${why}`);
    }
  }

  /** Mino: Rules — the approval rules in force, each with a revoke button. */
  async showRules(): Promise<void> {
    const conn = await this.connectionOrSay();
    if (!conn) return;
    type RuleItem = vscode.QuickPickItem & { rule?: RuleView };
    const pick = vscode.window.createQuickPick<RuleItem>();
    pick.title = 'Mino: Approval rules';
    const load = async () => {
      pick.busy = true;
      try {
        const result = await conn.listRules();
        const items: RuleItem[] = [];
        if (result.workspaceFileError) {
          items.push({
            label: `$(error) ${result.workspaceFile} could not be read`,
            detail: result.workspaceFileError,
            alwaysShow: true,
          });
        }
        for (const rule of result.rules) {
          items.push({
            label: rule.command ?? rule.pattern ?? '',
            description: `${rule.kind === 'prefix' ? 'commands starting with this' : rule.kind === 'path' ? 'edits of files matching this' : 'exactly this command'}${rule.effect === 'deny' ? ' (denied)' : ''} · ${
              rule.scope === 'workspace' ? 'this workspace' : 'this session'
            }`,
            detail: rule.scope === 'workspace' ? result.workspaceFile : undefined,
            buttons: [{ iconPath: new vscode.ThemeIcon('trash'), tooltip: 'Revoke rule' }],
            rule,
          });
        }
        pick.items = items;
        pick.placeholder = result.rules.length
          ? 'Commands that run without asking (the trash button revokes a rule)'
          : 'No rules: every command asks for approval';
      } catch (e) {
        pick.hide();
        void vscode.window.showErrorMessage(`Mino: could not list the rules: ${errorMessage(e)}`);
      } finally {
        pick.busy = false;
      }
    };
    const done = new Promise<void>((resolve) => {
      pick.onDidHide(() => {
        pick.dispose();
        resolve();
      });
    });
    pick.onDidTriggerItemButton(async ({ item }) => {
      if (!item.rule) return;
      try {
        await conn.revokeRule(item.rule.id);
      } catch (e) {
        void vscode.window.showErrorMessage(`Mino: could not revoke the rule: ${errorMessage(e)}`);
      }
      await load();
    });
    pick.onDidAccept(() => pick.hide());
    pick.show();
    await load();
    await done;
  }
}
