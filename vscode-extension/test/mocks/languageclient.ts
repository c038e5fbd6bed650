/**
 * Stand-in for `vscode-languageclient/node`: records the options a
 * `LanguageClient` was built with and the requests sent through it, and lets a
 * test play the server (answer requests, send notifications, crash).
 */
export enum TransportKind { stdio = 0, ipc = 1, pipe = 2, socket = 3 }
export enum ErrorAction { Continue = 1, Shutdown = 2 }
export enum CloseAction { DoNotRestart = 1, Restart = 2 }
export enum RevealOutputChannelOn { Debug = 0, Info = 1, Warn = 2, Error = 3, Never = 4 }

import { spawn, type ChildProcess } from 'node:child_process';
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from 'vscode-jsonrpc/node';

export type ServerOptions = any;

/**
 * `fake`: requests are answered from `replies` and notifications come from
 * `notify()`. `process`: the client really spawns `serverOptions.command` and
 * speaks to it over stdio as vscode-languageclient does (initialize with the
 * client's initializationOptions, initialized, shutdown/exit, `closed()` on exit).
 */
export const settings = {
  mode: 'fake' as 'fake' | 'process',
  /** Makes the next client's `start()` fail with this (as `initialize` refusing does); used once. */
  nextStartError: undefined as Error | undefined,
};
export type LanguageClientOptions = any;

type Handler = (params: any) => any;

export const clients: LanguageClient[] = [];

export class LanguageClient {
  readonly requests: { method: string; params: unknown }[] = [];
  readonly notificationHandlers = new Map<string, Handler[]>();
  /** method → reply (a value, or a function of params); throw an Error-like {code,message} to fail. */
  readonly replies = new Map<string, unknown>();
  started = false;
  stopped = false;
  /** Set to make `start()` fail. */
  startError: Error | undefined;
  /** What `initialize` answered (fake: a session `s1` without a title). */
  initializeResult: any = {
    capabilities: { experimental: { mino: {
      sessionId: 's1', journalPath: '/tmp/s1.jsonl', cwd: '/tmp/mino-workspace', model: 'mock', title: null,
      approvalMode: 'ask', sandbox: 'off', sandboxSupport: 'read-only and workspace-write can be enforced',
    } } },
  };

  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: ServerOptions,
    readonly clientOptions: LanguageClientOptions,
  ) {
    clients.push(this);
    this.startError = settings.nextStartError;
    settings.nextStartError = undefined;
  }

  proc: ChildProcess | undefined;
  connection: MessageConnection | undefined;
  stderr = '';

  async start(): Promise<void> {
    if (this.startError) throw this.startError;
    if (settings.mode === 'process') await this.startProcess();
    this.started = true;
  }

  private async startProcess(): Promise<void> {
    const { command, args, options } = this.serverOptions;
    const proc = spawn(command, args ?? [], { cwd: options?.cwd, env: options?.env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc = proc;
    proc.stderr!.on('data', (d) => {
      this.stderr += d.toString();
      this.clientOptions.outputChannel?.append(d.toString());
    });
    proc.stdin!.on('error', () => undefined);
    const connection = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
    this.connection = connection;
    connection.onError(() => undefined);
    for (const [method, handlers] of this.notificationHandlers) {
      connection.onNotification(method, (params: unknown) => {
        for (const h of this.notificationHandlers.get(method) ?? handlers) h(params);
      });
    }
    proc.on('exit', () => {
      connection.dispose();
      if (!this.stopped) this.clientOptions.errorHandler.closed();
    });
    connection.listen();
    this.initializeResult = await connection.sendRequest('initialize', {
      processId: process.pid,
      rootUri: null,
      capabilities: {},
      initializationOptions: this.clientOptions.initializationOptions,
    });
    await connection.sendNotification('initialized', {});
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const { connection, proc } = this;
    if (connection && proc && proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.on('exit', r));
      try {
        await Promise.race([connection.sendRequest('shutdown'), new Promise((r) => setTimeout(r, 2000))]);
        await connection.sendNotification('exit');
      } catch {
        // killed below
      }
      const timer = setTimeout(() => proc.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    }
  }

  async dispose(): Promise<void> {
    await this.stop();
  }

  onNotification(method: string, handler: Handler) {
    const list = this.notificationHandlers.get(method) ?? [];
    list.push(handler);
    this.notificationHandlers.set(method, list);
    return {
      dispose: () => {
        const l = this.notificationHandlers.get(method) ?? [];
        this.notificationHandlers.set(method, l.filter((h) => h !== handler));
      },
    };
  }

  async sendRequest(method: string, params?: unknown): Promise<unknown> {
    this.requests.push({ method, params });
    if (this.connection) return this.connection.sendRequest(method, params);
    const reply = this.replies.get(method);
    const value = typeof reply === 'function' ? (reply as Handler)(params) : reply;
    if (value instanceof RpcFailure) throw value;
    return value ?? {};
  }

  // ------------------------------------------------------------ test side

  /** Deliver a notification as if the server sent it. */
  notify(method: string, params: unknown): void {
    for (const h of this.notificationHandlers.get(method) ?? []) h(params);
  }

  /** Simulate the server process dying. */
  crash(): unknown {
    return this.clientOptions.errorHandler.closed();
  }
}

export class RpcFailure extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}
