/**
 * Starts and supervises `mino-server` through `vscode-languageclient`, and
 * keeps the session state a freshly opened view needs (recovery, running turn).
 */
import * as vscode from 'vscode';
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
  type InitializationOptions,
  type NotificationMethod,
  type RecoveryNotification,
} from './protocol';
import type { ServerState } from './messages';

export const API_KEY_SECRET = 'mino.openaiApiKey';

export interface MinoServerDeps {
  context: vscode.ExtensionContext;
  output: vscode.LogOutputChannel;
}

export class MinoServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private conn: MinoConnection | undefined;
  private stopping = false;
  private _state: ServerState = 'stopped';
  private _recovery: RecoveryNotification | undefined;
  private _runningTurnId: string | undefined;
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private readonly notificationEmitter = new vscode.EventEmitter<{ method: NotificationMethod; params: any }>();

  /** Fires on every state change. */
  readonly onDidChangeState = this.stateEmitter.event;
  /** Every Mino notification of the current server, in arrival order. */
  readonly onNotification = this.notificationEmitter.event;

  constructor(private readonly deps: MinoServerDeps) {}

  get state(): ServerState {
    return this._state;
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

  /** Records turns acknowledged through `mino/acknowledge`. */
  markAcknowledged(turnIds: string[]): void {
    const r = this._recovery;
    if (!r) return;
    const left = r.unacknowledgedTurnIds.filter((id) => !turnIds.includes(id));
    this._recovery = { ...r, unacknowledgedTurnIds: left, acknowledgementRequired: left.length > 0 };
  }

  private setState(state: ServerState): void {
    this._state = state;
    this.stateEmitter.fire(state);
  }

  async start(options: { newSession?: boolean } = {}): Promise<void> {
    if (this.client) return;
    this.stopping = false;
    this._recovery = undefined;
    this._runningTurnId = undefined;
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

    const serverOptions: ServerOptions = {
      command: serverPath,
      args: [],
      transport: TransportKind.stdio,
      options: { cwd, env },
    };
    const initializationOptions: InitializationOptions = cwd ? { cwd } : {};
    if (options.newSession) initializationOptions.newSession = true;
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
      if (method === 'mino/recovery') this._recovery = params as RecoveryNotification;
      if (method === 'mino/turnStarted') this._runningTurnId = params.turnId;
      if (method === 'mino/turnEnded' && this._runningTurnId === params.turnId) this._runningTurnId = undefined;
      this.notificationEmitter.fire({ method, params });
    });

    try {
      await client.start();
    } catch (e) {
      if (this.client === client) {
        this.client = undefined;
        this.conn = undefined;
        conn.dispose();
        this.setState('crashed');
        void client.dispose().catch(() => undefined);
        const message = `Mino server could not be started (${serverPath}): ${errorMessage(e)}`;
        this.deps.output.appendLine(message);
        // -32015: the session is locked by another Mino, damaged, or newer.
        const actions = isRpcError(e, ErrorCode.sessionUnavailable) || isRpcError((e as { cause?: unknown })?.cause, ErrorCode.sessionUnavailable)
          ? ['Start New Session', 'Restart', 'Show Log']
          : ['Restart', 'Open Settings', 'Show Log'];
        void vscode.window
          .showErrorMessage(message, ...actions)
          .then((choice) => this.handleChoice(choice));
      }
      return;
    }
    if (this.client === client) this.setState('ready');
  }

  private onCrash(): void {
    const client = this.client;
    this.client = undefined;
    this.conn?.dispose();
    this.conn = undefined;
    this._runningTurnId = undefined;
    this.setState('crashed');
    void client?.dispose().catch(() => undefined);
    void vscode.window
      .showErrorMessage('Mino server stopped unexpectedly.', 'Restart', 'Show Log')
      .then((choice) => this.handleChoice(choice));
  }

  private handleChoice(choice: string | undefined): void {
    if (choice === 'Restart') void this.restart();
    else if (choice === 'Start New Session') void this.restart({ newSession: true });
    else if (choice === 'Show Log') this.deps.output.show(true);
    else if (choice === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'mino.');
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

  /** Stops the server (if running) and starts it again; `newSession` opens a fresh session. */
  async restart(options: { newSession?: boolean } = {}): Promise<void> {
    await this.stop();
    await this.start(options);
  }

  dispose(): void {
    void this.stop();
    this.stateEmitter.dispose();
    this.notificationEmitter.dispose();
  }
}

export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}
