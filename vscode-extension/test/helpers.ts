/**
 * Runs the real `mino-server` and `mino-mock-model` binaries for the protocol tests.
 */
import { execFileSync, spawn, type ChildProcess, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from 'vscode-jsonrpc/node';
import { MinoConnection, type InitializationOptions, type NotificationMethod } from '../src/protocol';

export const EXT_DIR = path.resolve(__dirname, '..');
export const SERVER_BIN = path.resolve(EXT_DIR, process.env.MINO_SERVER_BIN ?? '../target/debug/mino-server');
export const MOCK_BIN = path.resolve(EXT_DIR, process.env.MINO_MOCK_BIN ?? '../target/debug/mino-mock-model');

export function missingBinaries(): string[] {
  return [SERVER_BIN, MOCK_BIN].filter((p) => !existsSync(p));
}

let probed: Record<string, number> | undefined;

/**
 * What the server binary answers to a newer request or decision (asked once,
 * synchronously, so that `it.skipIf` can use it): the error code, or 0 when
 * it answered. See test/probe-server.cjs.
 */
function probeServer(): Record<string, number> {
  if (!probed) {
    try {
      probed = JSON.parse(
        execFileSync(process.execPath, [path.join(__dirname, 'probe-server.cjs'), SERVER_BIN], { encoding: 'utf8', timeout: 30000 }),
      ) as Record<string, number>;
    } catch {
      probed = {};
    }
  }
  return probed;
}

/** Whether the server has `method` (it does not answer "method not found"). */
export function serverHas(method: string): boolean {
  const code = probeServer()[method];
  return code !== undefined && code !== -32601;
}

/** Whether `mino/approval` takes `decision` (a server without it refuses the params). */
export function serverTakesDecision(decision: 'allowSession'): boolean {
  const code = probeServer()[decision];
  return code !== undefined && code !== -32602;
}

export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(tmpdir(), `mino-vscode-${prefix}-`));
}

// ---------------------------------------------------------------- mock model

export type Reply =
  | { type: 'text'; deltas: string[]; delay_ms?: number }
  | { type: 'calls'; text?: string[]; calls: { call_id: string; command: string }[]; delay_ms?: number }
  | { type: 'stall'; deltas?: string[]; stall_ms?: number }
  | Record<string, unknown>;

export interface RecordedRequest {
  body: any;
  authorization: string | null;
  path: string;
}

export class MockModel {
  private constructor(
    private readonly proc: ChildProcessWithoutNullStreams,
    readonly baseUrl: string,
  ) {}

  static async start(): Promise<MockModel> {
    const proc = spawn(MOCK_BIN, [], { stdio: ['pipe', 'pipe', 'pipe'] });
    proc.stderr.on('data', () => undefined);
    const baseUrl = await new Promise<string>((resolve, reject) => {
      const rl = createInterface({ input: proc.stdout });
      const timer = setTimeout(() => reject(new Error('mock model did not start')), 15000);
      rl.on('line', (line) => {
        const m = /^listening (\S+)/.exec(line);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      proc.on('exit', (code) => reject(new Error(`mock model exited with ${code}`)));
    });
    return new MockModel(proc, baseUrl);
  }

  /** http://127.0.0.1:PORT, without the /v1 of the base URL. */
  private get origin(): string {
    return new URL(this.baseUrl).origin;
  }

  async script(replies: Reply[]): Promise<void> {
    const res = await fetch(`${this.origin}/_mock/script`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(replies),
    });
    if (!res.ok) throw new Error(`/_mock/script: ${res.status} ${await res.text()}`);
  }

  async reset(): Promise<void> {
    const res = await fetch(`${this.origin}/_mock/reset`, { method: 'POST' });
    if (!res.ok) throw new Error(`/_mock/reset: ${res.status}`);
  }

  async requests(): Promise<RecordedRequest[]> {
    const res = await fetch(`${this.origin}/_mock/requests`);
    return (await res.json()) as RecordedRequest[];
  }

  stop(): void {
    this.proc.stdin.end();
    this.proc.kill('SIGTERM');
  }
}

// ---------------------------------------------------------------- server

export interface Received {
  method: NotificationMethod;
  params: any;
}

export interface ServerOptions {
  home: string;
  cwd: string;
  baseUrl: string;
  initializationOptions?: InitializationOptions;
}

/** One `mino-server` process with a connection, its notifications and stderr. */
export class ServerSession {
  readonly received: Received[] = [];
  stderr = '';
  readonly exited: Promise<number | null>;
  initializeResult: any;
  private waiters: { pred: (r: Received) => boolean; resolve: (r: Received) => void }[] = [];

  private constructor(
    readonly proc: ChildProcess,
    readonly connection: MessageConnection,
    readonly mino: MinoConnection,
  ) {
    this.exited = new Promise((resolve) => proc.on('exit', (code) => resolve(code)));
    mino.onAny((method, params) => {
      const r = { method, params };
      this.received.push(r);
      this.waiters = this.waiters.filter((w) => {
        if (w.pred(r)) {
          w.resolve(r);
          return false;
        }
        return true;
      });
    });
  }

  static async start(opts: ServerOptions): Promise<ServerSession> {
    const proc = spawn(SERVER_BIN, [], {
      cwd: opts.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: {
        ...process.env,
        MINO_HOME: opts.home,
        OPENAI_API_KEY: 'sk-test-vscode',
        OPENAI_BASE_URL: opts.baseUrl,
        MINO_MODEL: 'mock-model',
        RUST_LOG: process.env.RUST_LOG ?? 'info',
      },
    });
    const connection = createMessageConnection(
      new StreamMessageReader(proc.stdout!),
      new StreamMessageWriter(proc.stdin!),
    );
    // Subscribe before `initialized`, as the extension does.
    const mino = new MinoConnection(connection);
    const session = new ServerSession(proc, connection, mino);
    proc.stderr!.on('data', (d) => (session.stderr += d.toString()));
    connection.onError(() => undefined);
    proc.stdin!.on('error', () => undefined);
    connection.listen();
    try {
      session.initializeResult = await connection.sendRequest('initialize', {
        processId: process.pid,
        clientInfo: { name: 'mino-vscode-tests' },
        rootUri: null,
        capabilities: {},
        initializationOptions: opts.initializationOptions ?? { cwd: opts.cwd },
      });
    } catch (e) {
      proc.stdin!.end();
      const timer = setTimeout(() => proc.kill('SIGKILL'), 3000);
      await session.exited;
      clearTimeout(timer);
      connection.dispose();
      throw e;
    }
    await connection.sendNotification('initialized', {});
    return session;
  }

  /** Resolves with the first notification (already received or future) matching. */
  waitFor(
    method: NotificationMethod,
    pred: (params: any) => boolean = () => true,
    timeoutMs = 15000,
  ): Promise<any> {
    const match = (r: Received) => r.method === method && pred(r.params);
    const found = this.received.find(match);
    if (found) return Promise.resolve(found.params);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(
          new Error(
            `timed out waiting for ${method}; received: ${JSON.stringify(this.received.map((r) => r.method))}\nstderr:\n${this.stderr.slice(-2000)}`,
          ),
        );
      }, timeoutMs);
      this.waiters.push({
        pred: match,
        resolve: (r) => {
          clearTimeout(timer);
          resolve(r.params);
        },
      });
    });
  }

  of(method: NotificationMethod, turnId?: string): any[] {
    return this.received
      .filter((r) => r.method === method && (turnId === undefined || r.params.turnId === turnId))
      .map((r) => r.params);
  }

  /** LSP shutdown + exit; kills the process if it does not go. */
  async stop(): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      try {
        await withTimeout(this.connection.sendRequest('shutdown'), 3000);
        await this.connection.sendNotification('exit');
      } catch {
        // fall through to kill
      }
      const gone = await Promise.race([this.exited.then(() => true), sleep(3000).then(() => false)]);
      if (!gone) this.proc.kill('SIGKILL');
    }
    this.mino.dispose();
    this.connection.dispose();
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return Promise.race([
    p,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms)),
  ]);
}
