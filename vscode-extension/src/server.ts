/**
 * Starts and supervises `mino-server` through `vscode-languageclient`, and
 * keeps the session state a freshly opened view needs (recovery, running turn).
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import which from 'which';
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  RevealOutputChannelOn,
  TransportKind,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import {
  ErrorCode,
  isRpcError,
  MinoConnection,
  Notification,
  type InitializationOptions,
  type McpServerStatus,
  type MinoServerCapabilities,
  type NotificationMethod,
  type RecoveryNotification,
  type SessionInfo,
  type SettingsResult,
  type SettingsUpdateParams,
} from './protocol';
import type { ServerState, ViewSession } from './messages';
import { errorMessage } from './errors';
import { readModeSettings, startRefusal, type ModeSettings } from './modeSettings';

// Where every room of the extension has found it.
export { errorMessage };

export const API_KEY_SECRET = 'mino.openaiApiKey';
export const CRASH_MESSAGE = 'Mino server stopped unexpectedly.';
export const SERVER_PATH_SETTING = 'mino.serverPath';

/** Why the server is not running, for the view: what happened and which setting fixes it. */
export interface StateDetail {
  message?: string;
  fixSetting?: string;
}

export type LocatedServer = { found: true; command: string } | { found: false; message: string };

/**
 * Finds the binary `mino.serverPath` names before anything is spawned, so that a
 * wrong path is reported as such rather than as a server that "stopped".
 * A bare name is looked up on `envPath`; a path is taken from `cwd` (where the
 * server is started), so the absolute result means the same to the spawn.
 */
export function locateServer(setting: string, cwd: string | undefined, envPath: string | undefined): LocatedServer {
  const isBareName = !setting.includes('/') && !setting.includes(path.sep);
  if (isBareName) {
    const found = which.sync(setting, { path: envPath ?? '', nothrow: true });
    if (found) return { found: true, command: found };
    return { found: false, message: serverNotFound(`${setting} (looked up on PATH)`) };
  }
  const absolute = path.resolve(cwd ?? process.cwd(), setting);
  const found = which.sync(absolute, { nothrow: true });
  if (found) return { found: true, command: found };
  if (existsSync(absolute)) {
    return { found: false, message: `mino-server at ${absolute} is not an executable file. ${HOW_TO_FIX_SERVER_PATH}` };
  }
  return { found: false, message: serverNotFound(absolute) };
}

const HOW_TO_FIX_SERVER_PATH =
  `Set ${SERVER_PATH_SETTING} to the mino-server binary (\`cargo build -p mino-server\` builds ` +
  'target/debug/mino-server) or put mino-server on PATH.';

function serverNotFound(where: string): string {
  return `mino-server not found at ${where}. ${HOW_TO_FIX_SERVER_PATH}`;
}

export interface MinoServerDeps {
  context: vscode.ExtensionContext;
  output: vscode.LogOutputChannel;
}

export class MinoServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private conn: MinoConnection | undefined;
  private stopping = false;
  private _state: ServerState = 'stopped';
  private _detail: StateDetail = {};
  private _recovery: RecoveryNotification | undefined;
  private _runningTurnId: string | undefined;
  private _session: ViewSession | undefined;
  /** A switch (mino/sessions/open or new) is in flight: its mino/recovery may arrive before its result. */
  private switching = false;
  private readonly sessionEmitter = new vscode.EventEmitter<ViewSession>();
  /** The current session's model (`capabilities.experimental.mino.model`, then each choice or switch). */
  private _model: string | undefined;
  private readonly modelEmitter = new vscode.EventEmitter<string>();
  /** The approval mode and sandbox in force (`initialize`'s capabilities, then each `mino/settings/update`). */
  private _modes: SettingsResult | undefined;
  private readonly modesEmitter = new vscode.EventEmitter<SettingsResult>();
  /** The current session's MCP servers as last reported (`mino/mcp/status`, `mino/mcp/restart`), by name. */
  private readonly _mcp = new Map<string, McpServerStatus>();
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private readonly notificationEmitter = new vscode.EventEmitter<{ method: NotificationMethod; params: any }>();

  /** Fires on every state change. */
  readonly onDidChangeState = this.stateEmitter.event;
  /** Every Mino notification of the current server, in arrival order. */
  readonly onNotification = this.notificationEmitter.event;
  /** Fires when the current session changes (a switch) or is renamed. */
  readonly onDidChangeSession = this.sessionEmitter.event;
  /** Fires when the current session's model is known to have changed. */
  readonly onDidChangeModel = this.modelEmitter.event;
  /** Fires when the server reports another approval mode or sandbox in force. */
  readonly onDidChangeModes = this.modesEmitter.event;

  constructor(private readonly deps: MinoServerDeps) {}

  get state(): ServerState {
    return this._state;
  }

  /** Resolves once the server is not `starting` (at once when it is not). */
  whenStarted(): Promise<void> {
    if (this._state !== 'starting') return Promise.resolve();
    return new Promise((resolve) => {
      const sub = this.onDidChangeState((state) => {
        if (state === 'starting') return;
        sub.dispose();
        resolve();
      });
    });
  }

  /** Why the server is `crashed` or `failed`; empty otherwise. */
  get stateDetail(): StateDetail {
    return this._detail;
  }

  /** The connection of the running server; undefined unless `state` is `ready`. */
  get connection(): MinoConnection | undefined {
    return this._state === 'ready' ? this.conn : undefined;
  }

  /** The last `mino/recovery` of the current server, with acknowledgements applied. */
  get recovery(): RecoveryNotification | undefined {
    return this._recovery;
  }

  get runningTurnId(): string | undefined {
    return this._runningTurnId;
  }

  /** The session this server has open (from `initialize`, then each switch). */
  get session(): ViewSession | undefined {
    return this._session;
  }

  /**
   * Makes another session current: `{sessionId}` opens it, `{cwd}` starts a new
   * one. The server refuses while a turn runs (-32011) or for a held session
   * (-32015); the error is thrown and nothing here changes. On success the old
   * session's recovery and running turn are forgotten: the new session's
   * `mino/recovery` follows.
   */
  async switchSession(target: { sessionId: string } | { cwd?: string }): Promise<SessionInfo> {
    const conn = this.connection;
    if (!conn) throw new Error('Mino server is not running.');
    this.switching = true;
    let info: SessionInfo;
    try {
      info = 'sessionId' in target ? await conn.openSession(target.sessionId) : await conn.newSession(target.cwd);
    } finally {
      this.switching = false;
    }
    if (this._recovery?.sessionId !== info.sessionId) this._recovery = undefined;
    this._runningTurnId = undefined;
    // MCP servers are the session's: the new one reports its own.
    this._mcp.clear();
    this.setSession({ sessionId: info.sessionId, title: info.title ?? null });
    void this.refreshModel();
    return info;
  }

  /** The current session's MCP servers as last reported, in name order. */
  get mcpStatuses(): McpServerStatus[] {
    return [...this._mcp.values()].sort((a, b) => (a.server < b.server ? -1 : a.server > b.server ? 1 : 0));
  }

  /**
   * Restarts the current session's MCP server `server`; its state in the
   * answer is shown as a `mino/mcp/status` would be (the view's notice follows).
   */
  async restartMcp(server: string): Promise<McpServerStatus> {
    const conn = this.connection;
    if (!conn) throw new Error('Mino server is not running.');
    const status = await conn.restartMcp(server);
    this.noteMcp(status);
    const sessionId = this._session?.sessionId;
    this.notificationEmitter.fire({ method: Notification.mcpStatus, params: { ...(sessionId ? { sessionId } : {}), ...status } });
    return status;
  }

  private noteMcp(status: McpServerStatus): void {
    const { server, state, tools, reason } = status;
    this._mcp.set(server, { server, state, ...(tools ? { tools } : {}), ...(reason ? { reason } : {}) });
  }

  /** The current session's model, once known. */
  get model(): string | undefined {
    return this._model;
  }

  /** Chooses the current session's model; the server refuses while a turn runs (-32011). */
  async selectModel(model: string): Promise<string> {
    const conn = this.connection;
    if (!conn) throw new Error('Mino server is not running.');
    const chosen = await conn.selectModel(model);
    this.noteModel(chosen.model);
    return chosen.model;
  }

  private noteModel(model: string): void {
    if (this._model === model) return;
    this._model = model;
    this.modelEmitter.fire(model);
  }

  /** After a switch: the new session's model (its own choice, else the configured one). */
  private async refreshModel(): Promise<void> {
    const conn = this.connection;
    if (!conn) return;
    try {
      this.noteModel((await conn.listModels()).current);
    } catch (e) {
      this.deps.output.appendLine(`mino/models/list failed: ${errorMessage(e)}`);
    }
  }

  /** The approval mode and sandbox the server says are in force; undefined until it has said. */
  get modes(): SettingsResult | undefined {
    return this._modes;
  }

  /**
   * Changes the approval mode and/or sandbox of the running server. A refusal
   * (a sandbox this machine cannot enforce: -32602) is thrown and nothing
   * changes here; on success the server's answer is what is in force.
   */
  async updateModes(params: SettingsUpdateParams): Promise<SettingsResult> {
    const conn = this.connection;
    if (!conn) throw new Error('Mino server is not running.');
    const result = await conn.updateSettings(params);
    this.noteModes(result);
    return result;
  }

  private noteModes(modes: SettingsResult): void {
    const old = this._modes;
    this._modes = modes;
    if (old && old.approvalMode === modes.approvalMode && old.sandbox === modes.sandbox) return;
    this.modesEmitter.fire(modes);
  }

  /** Renames a session (the current one's header follows). */
  async renameSession(sessionId: string, title: string): Promise<void> {
    const conn = this.connection;
    if (!conn) throw new Error('Mino server is not running.');
    await conn.renameSession(sessionId, title);
    if (this._session?.sessionId === sessionId) this.setSession({ sessionId, title: title.trim() });
  }

  /** Records the server's title of the current session (it names a session after its first question). */
  noteTitle(title: string | null): void {
    const s = this._session;
    if (s && s.title !== title) this.setSession({ ...s, title });
  }

  private setSession(session: ViewSession): void {
    this._session = session;
    this.sessionEmitter.fire(session);
  }

  /**
   * Whether a notification belongs to the current session. Every notification
   * names its session; one for another session (a late one from before a
   * switch) must not touch this view. A switch's own `mino/recovery` may come
   * before the switch's result and names the new session.
   */
  private isForCurrentSession(method: NotificationMethod, params: any): boolean {
    const sessionId = params?.sessionId;
    if (typeof sessionId !== 'string' || !this._session) return true;
    if (sessionId === this._session.sessionId) return true;
    return method === Notification.recovery && this.switching;
  }

  /** Records turns acknowledged through `mino/acknowledge`. */
  markAcknowledged(turnIds: string[]): void {
    const r = this._recovery;
    if (!r) return;
    const left = r.unacknowledgedTurnIds.filter((id) => !turnIds.includes(id));
    this._recovery = { ...r, unacknowledgedTurnIds: left, acknowledgementRequired: left.length > 0 };
  }

  private setState(state: ServerState, detail: StateDetail = {}): void {
    this._state = state;
    this._detail = detail;
    this.stateEmitter.fire(state);
  }

  /**
   * `session` opens that session (a restart goes back to the one that was
   * current, which is also the one whose recovery matters); `newSession` a
   * fresh one; neither, the server's choice for the workspace.
   */
  async start(options: { newSession?: boolean; session?: string } = {}): Promise<void> {
    if (this.client) return;
    this.stopping = false;
    this._recovery = undefined;
    this._runningTurnId = undefined;
    this._session = undefined;
    this._modes = undefined;
    this._mcp.clear();
    this.setState('starting');

    const config = vscode.workspace.getConfiguration('mino');
    const serverPath = config.get<string>('serverPath') || 'mino-server';
    const model = config.get<string>('model') || '';
    const baseUrl = config.get<string>('baseUrl') || '';
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;

    const env: NodeJS.ProcessEnv = { ...process.env };
    if (!env.OPENAI_API_KEY) {
      const key = await this.deps.context.secrets.get(API_KEY_SECRET);
      if (key) env.OPENAI_API_KEY = key;
    }
    if (model) env.MINO_MODEL = model;
    if (baseUrl) env.OPENAI_BASE_URL = baseUrl;

    const located = locateServer(serverPath, cwd, env.PATH);
    if (!located.found) {
      this.failToStart(located.message, SERVER_PATH_SETTING);
      return;
    }
    const modes = readModeSettings();
    if ('message' in modes) {
      this.failToStart(modes.message, modes.setting);
      return;
    }

    const serverOptions: ServerOptions = {
      command: located.command,
      args: [],
      // The library appends `--stdio` for this transport; mino-server accepts it as a no-op.
      transport: TransportKind.stdio,
      options: { cwd, env },
    };
    const initializationOptions: InitializationOptions = cwd ? { cwd } : {};
    if (options.newSession) initializationOptions.newSession = true;
    else if (options.session) initializationOptions.session = options.session;
    Object.assign(initializationOptions, startModes(modes));
    const clientOptions: LanguageClientOptions = {
      // Mino is not a language server: no documents are synchronised.
      documentSelector: [],
      initializationOptions,
      outputChannel: this.deps.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue, handled: true }),
        closed: () => {
          // While starting, start() reports the failure itself.
          if (!this.stopping && this.client === client && this._state === 'ready') this.onCrash();
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
      initializationFailedHandler: (error) => {
        this.deps.output.appendLine(`mino-server failed to initialize: ${String(error)}`);
        return false;
      },
    };

    const client = new LanguageClient('mino', 'Mino', serverOptions, clientOptions);
    this.client = client;
    // Subscribe before `initialized` is sent: mino/recovery follows it at once.
    const conn = new MinoConnection(client);
    this.conn = conn;
    conn.onAny((method, params) => {
      if (this.client !== client) return;
      if (!this.isForCurrentSession(method, params)) {
        this.deps.output.appendLine(`ignored ${method} for session ${params.sessionId}: not the current session`);
        return;
      }
      if (method === Notification.recovery) this._recovery = params as RecoveryNotification;
      if (method === Notification.turnStarted) this._runningTurnId = params.turnId;
      if (method === Notification.turnEnded && this._runningTurnId === params.turnId) this._runningTurnId = undefined;
      if (method === Notification.mcpStatus && typeof params?.server === 'string') this.noteMcp(params as McpServerStatus);
      this.notificationEmitter.fire({ method, params });
    });

    try {
      await client.start();
    } catch (e) {
      if (this.client === client) {
        this.client = undefined;
        this.conn = undefined;
        conn.dispose();
        void client.dispose().catch(() => undefined);
        // -32015: the session is locked by another Mino, damaged, or newer.
        const sessionUnavailable =
          isRpcError(e, ErrorCode.sessionUnavailable) ||
          isRpcError((e as { cause?: unknown })?.cause, ErrorCode.sessionUnavailable);
        const refusal = startRefusal(e, modes);
        if (/\bENOENT\b/.test(errorMessage(e)) && !existsSync(located.command)) {
          // Removed between the check above and the spawn. (A missing cwd is ENOENT too.)
          this.failToStart(serverNotFound(located.command), SERVER_PATH_SETTING);
        } else if (refusal) {
          this.failToStart(refusal.message, refusal.setting);
        } else if (sessionUnavailable) {
          this.failToStart(`Mino server could not be started (${located.command}): ${errorMessage(e)}`, undefined, [
            'Start New Session', 'Restart', 'Show Log',
          ]);
        } else {
          this.failToStart(`Mino server could not be started (${located.command}): ${errorMessage(e)}`, 'mino.');
        }
      }
      return;
    }
    if (this.client !== client) return;
    // The session `initialize` opened (`capabilities.experimental.mino`).
    const caps = (client.initializeResult?.capabilities?.experimental as { mino?: Partial<MinoServerCapabilities> } | undefined)?.mino;
    if (caps && typeof caps.sessionId === 'string') {
      this._session = { sessionId: caps.sessionId, title: typeof caps.title === 'string' ? caps.title : null };
    }
    if (caps && typeof caps.model === 'string') this._model = caps.model;
    if (caps && typeof caps.approvalMode === 'string' && typeof caps.sandbox === 'string') {
      this._modes = { approvalMode: caps.approvalMode, sandbox: caps.sandbox, sandboxSupport: caps.sandboxSupport ?? '' };
    }
    this.setState('ready');
  }

  /** The server could not be started: say why in the view and in an error message. */
  private failToStart(message: string, fixSetting?: string, actions = ['Restart', 'Open Settings', 'Show Log']): void {
    this.deps.output.appendLine(message);
    this.setState('failed', { message, fixSetting });
    void vscode.window.showErrorMessage(message, ...actions).then((choice) => this.handleChoice(choice));
  }

  private onCrash(): void {
    const client = this.client;
    this.client = undefined;
    this.conn?.dispose();
    this.conn = undefined;
    this._runningTurnId = undefined;
    // Said in the view and by a status bar item (serverNotice.ts), both gone
    // once the server is back: a notification toast could not be taken back.
    this.setState('crashed', { message: CRASH_MESSAGE });
    void client?.dispose().catch(() => undefined);
  }

  private handleChoice(choice: string | undefined): void {
    if (choice === 'Restart') void this.restart();
    else if (choice === 'Start New Session') void this.restart({ newSession: true });
    else if (choice === 'Show Log') this.deps.output.show(true);
    else if (choice === 'Open Settings') this.openSettings();
  }

  /** Opens the settings at the one that fixes the last start failure (all of Mino's otherwise). */
  openSettings(): void {
    void vscode.commands.executeCommand('workbench.action.openSettings', this._detail.fixSetting ?? 'mino.');
  }

  async stop(): Promise<void> {
    const client = this.client;
    if (!client) return;
    this.stopping = true;
    this.client = undefined;
    this.conn?.dispose();
    this.conn = undefined;
    this._runningTurnId = undefined;
    try {
      await client.stop(2000);
    } catch (e) {
      this.deps.output.appendLine(`stopping mino-server: ${errorMessage(e)}`);
    }
    this.setState('stopped');
  }

  /**
   * Stops the server (if running) and starts it again on the session that was
   * current (after a switch, the workspace's most recent one may be another);
   * `newSession` opens a fresh session.
   */
  async restart(options: { newSession?: boolean } = {}): Promise<void> {
    const session = options.newSession ? undefined : this._session?.sessionId;
    await this.stop();
    await this.start(session ? { ...options, session } : options);
  }

  dispose(): void {
    void this.stop();
    this.stateEmitter.dispose();
    this.notificationEmitter.dispose();
    this.sessionEmitter.dispose();
    this.modesEmitter.dispose();
  }
}

/**
 * What `initialize` is sent of the settings: the approval mode always; the
 * sandbox only when it names one, so that `off` leaves the server's own
 * default (`MINO_SANDBOX`) in place rather than weakening it.
 */
function startModes(modes: ModeSettings): Pick<InitializationOptions, 'approvalMode' | 'sandbox'> {
  return modes.sandbox === 'off' ? { approvalMode: modes.approvalMode } : { approvalMode: modes.approvalMode, sandbox: modes.sandbox };
}

