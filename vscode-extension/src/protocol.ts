/**
 * Mino's wire contract (see server/protocol/src/lib.rs and docs/protocol.md) and a
 * typed wrapper around a JSON-RPC connection.
 *
 * This module depends only on `vscode-jsonrpc`, never on `vscode`: the extension
 * wraps its `LanguageClient` with it, and the Node tests wrap a plain
 * `MessageConnection` to the real `mino-server` binary.
 */
import type { Disposable, MessageConnection } from 'vscode-jsonrpc';

// ---------------------------------------------------------------- names

export const Method = {
  chat: 'mino/chat',
  approval: 'mino/approval',
  acknowledge: 'mino/acknowledge',
  cancel: 'mino/cancel',
  history: 'mino/history',
} as const;

export const Notification = {
  recovery: 'mino/recovery',
  turnStarted: 'mino/turnStarted',
  textDelta: 'mino/textDelta',
  retrying: 'mino/retrying',
  approvalRequest: 'mino/approvalRequest',
  toolStarted: 'mino/toolStarted',
  toolOutput: 'mino/toolOutput',
  toolResult: 'mino/toolResult',
  turnEnded: 'mino/turnEnded',
} as const;

/** Every notification a turn emits, in the order a turn emits them. */
export const TURN_NOTIFICATIONS = [
  Notification.turnStarted,
  Notification.textDelta,
  Notification.retrying,
  Notification.approvalRequest,
  Notification.toolStarted,
  Notification.toolOutput,
  Notification.toolResult,
  Notification.turnEnded,
] as const;

export const ErrorCode = {
  acknowledgementRequired: -32010,
  turnInProgress: -32011,
  noPendingApproval: -32012,
  journalFailure: -32013,
  unknownTurn: -32014,
  sessionUnavailable: -32015,
} as const;

/** Fixed by the specification. */
export const ACKNOWLEDGEMENT_REQUIRED_MESSAGE = 'Acknowledge unknown tool results before continuing';
/** The question asked before an unknown result is acknowledged (spec, chapter 04). */
export const ACKNOWLEDGEMENT_QUESTION = 'Do you understand that these commands may already have run?';

// ---------------------------------------------------------------- vocabulary

export type TurnStatus = 'completed' | 'failed' | 'cancelled' | 'interrupted';
export type ToolStatus =
  | 'success'
  | 'failed'
  | 'refused'
  | 'timed_out'
  | 'cancelled'
  | 'not_executed'
  | 'unknown';
export type Decision = 'approve' | 'deny';

export interface InitializationOptions {
  cwd?: string;
  session?: string;
  newSession?: boolean;
}

export interface MinoServerCapabilities {
  sessionId: string;
  journalPath: string;
  cwd: string;
  model: string;
}

export interface ToolResultView {
  status: ToolStatus;
  output: string;
  exitCode?: number;
}

export interface Limits {
  timeoutSeconds: number;
  outputLimitBytes: number;
}

// ---------------------------------------------------------------- requests

export interface ChatParams { text: string }
export interface ChatResult { turnId: string }
/** The decision names the call and its turn: a decision for any other call is refused (-32012). */
export interface ApprovalParams { turnId: string; callId: string; decision: Decision }
export interface AcknowledgeParams { turnIds?: string[] }
export interface AcknowledgeResult { acknowledged: string[] }
export interface CancelParams { turnId: string }
export type EmptyResult = Record<string, never>;

/**
 * What the command supervisor recorded about a call whose result is `unknown`.
 * Shown beside the unknown result; the result stays `unknown` and the
 * acknowledgement gate still applies.
 */
export interface CallEvidence {
  outcome: 'exited' | 'signalled' | 'stopped_when_mino_stopped' | 'timed_out';
  exitCode?: number;
  pid: number;
  /** RFC 3339. */
  startedAt: string;
  endedAt?: string;
  outputTail: string;
  /** One sentence for the person, e.g. "the command exited 0 after Mino stopped; last output: …". */
  summary: string;
}

export interface HistoryCall {
  callId: string;
  command: string;
  result: ToolResultView | null;
  evidence?: CallEvidence;
}

export interface HistoryTurn {
  turnId: string;
  input: string;
  text: string;
  calls: HistoryCall[];
  /** `null` while the turn is still running. */
  status: TurnStatus | null;
  reason?: string;
  notices: string[];
}

export interface HistoryResult {
  sessionId: string;
  turns: HistoryTurn[];
}

// ---------------------------------------------------------------- notifications

export interface RecoveredCallView {
  callId: string;
  command: string;
  result: ToolResultView;
  evidence?: CallEvidence;
}

export interface RecoveredTurnView {
  turnId: string;
  status: TurnStatus;
  calls: RecoveredCallView[];
}

export interface RecoveryNotification {
  sessionId: string;
  turns: RecoveredTurnView[];
  acknowledgementRequired: boolean;
  unacknowledgedTurnIds: string[];
  repairs: string[];
}

export interface TurnStarted { turnId: string; seq: number; input: string }
export interface TextDelta { turnId: string; seq: number; delta: string }
/**
 * The model request failed in a retryable way and is sent again after
 * `delayMs`; `attempt` counts retries from 1. Text streamed since the model's
 * current response began (since `mino/turnStarted` or the turn's last
 * `mino/toolResult`) is void: the retried response streams it again.
 */
export interface Retrying { turnId: string; seq: number; attempt: number; delayMs: number; reason: string }
export interface ApprovalRequest {
  turnId: string;
  seq: number;
  callId: string;
  command: string;
  directory: string;
  environment: Record<string, string>;
  limits: Limits;
}
export interface ToolStarted { turnId: string; seq: number; callId: string; command: string }
export interface ToolOutput {
  turnId: string;
  seq: number;
  callId: string;
  stream: 'stdout' | 'stderr';
  chunk: string;
}
export interface ToolResult {
  turnId: string;
  seq: number;
  callId: string;
  status: ToolStatus;
  output: string;
  exitCode?: number;
}
export interface TurnEnded {
  turnId: string;
  seq: number;
  status: TurnStatus;
  reason?: string;
  text?: string;
}

export interface NotificationMap {
  'mino/recovery': RecoveryNotification;
  'mino/turnStarted': TurnStarted;
  'mino/textDelta': TextDelta;
  'mino/retrying': Retrying;
  'mino/approvalRequest': ApprovalRequest;
  'mino/toolStarted': ToolStarted;
  'mino/toolOutput': ToolOutput;
  'mino/toolResult': ToolResult;
  'mino/turnEnded': TurnEnded;
}
export type NotificationMethod = keyof NotificationMap;
export const ALL_NOTIFICATIONS = Object.values(Notification) as NotificationMethod[];

// ---------------------------------------------------------------- connection

/**
 * The part of a JSON-RPC endpoint that Mino needs. Both a `vscode-jsonrpc`
 * `MessageConnection` and a `vscode-languageclient` `LanguageClient` have it.
 */
export interface RpcEndpoint {
  sendRequest<R>(method: string, params?: unknown): Promise<R>;
  onNotification(method: string, handler: (params: any) => void): Disposable;
}

/** A JSON-RPC error as both vscode-jsonrpc and the language client report it. */
export interface RpcError extends Error {
  code?: number;
  data?: unknown;
}

export function isRpcError(e: unknown, code?: number): e is RpcError {
  return (
    typeof e === 'object' &&
    e !== null &&
    typeof (e as RpcError).code === 'number' &&
    (code === undefined || (e as RpcError).code === code)
  );
}

type Listener<T> = (value: T) => void;

/**
 * Typed requests and notification events of one Mino session.
 *
 * Notifications are subscribed to when the object is constructed, so build it
 * before the LSP `initialized` notification is sent: `mino/recovery` is sent
 * right after it and would otherwise be lost.
 */
export class MinoConnection implements Disposable {
  private readonly listeners = new Map<string, Set<Listener<any>>>();
  private readonly anyListeners = new Set<(method: NotificationMethod, params: any) => void>();
  private readonly subscriptions: Disposable[] = [];

  constructor(private readonly endpoint: RpcEndpoint | MessageConnection) {
    for (const method of ALL_NOTIFICATIONS) {
      this.subscriptions.push(
        (this.endpoint as RpcEndpoint).onNotification(method, (params: unknown) =>
          this.dispatch(method, params),
        ),
      );
    }
  }

  // ------------------------------------------------------------ requests

  /** Starts a turn; its progress and end arrive as notifications. */
  chat(text: string): Promise<ChatResult> {
    return this.request<ChatResult>(Method.chat, { text } satisfies ChatParams);
  }

  approve(turnId: string, callId: string): Promise<EmptyResult> {
    return this.decide(turnId, callId, 'approve');
  }

  deny(turnId: string, callId: string): Promise<EmptyResult> {
    return this.decide(turnId, callId, 'deny');
  }

  /** Answers the `mino/approvalRequest` of `callId` in `turnId`. */
  decide(turnId: string, callId: string, decision: Decision): Promise<EmptyResult> {
    return this.request<EmptyResult>(Method.approval, { turnId, callId, decision } satisfies ApprovalParams);
  }

  /** Acknowledges unknown tool results; no `turnIds` means every pending one. */
  acknowledge(turnIds?: string[]): Promise<AcknowledgeResult> {
    const params: AcknowledgeParams = turnIds ? { turnIds } : {};
    return this.request<AcknowledgeResult>(Method.acknowledge, params);
  }

  cancel(turnId: string): Promise<EmptyResult> {
    return this.request<EmptyResult>(Method.cancel, { turnId } satisfies CancelParams);
  }

  history(): Promise<HistoryResult> {
    return this.request<HistoryResult>(Method.history, {});
  }

  private request<R>(method: string, params: unknown): Promise<R> {
    return (this.endpoint as RpcEndpoint).sendRequest<R>(method, params);
  }

  // ------------------------------------------------------------ events

  /** Subscribes to one notification. */
  on<M extends NotificationMethod>(method: M, listener: Listener<NotificationMap[M]>): Disposable {
    let set = this.listeners.get(method);
    if (!set) {
      set = new Set();
      this.listeners.set(method, set);
    }
    set.add(listener);
    return { dispose: () => set!.delete(listener) };
  }

  /** Subscribes to every Mino notification, in arrival order. */
  onAny(listener: (method: NotificationMethod, params: any) => void): Disposable {
    this.anyListeners.add(listener);
    return { dispose: () => this.anyListeners.delete(listener) };
  }

  onRecovery(l: Listener<RecoveryNotification>): Disposable { return this.on(Notification.recovery, l); }
  onTurnStarted(l: Listener<TurnStarted>): Disposable { return this.on(Notification.turnStarted, l); }
  onTextDelta(l: Listener<TextDelta>): Disposable { return this.on(Notification.textDelta, l); }
  onRetrying(l: Listener<Retrying>): Disposable { return this.on(Notification.retrying, l); }
  onApprovalRequest(l: Listener<ApprovalRequest>): Disposable { return this.on(Notification.approvalRequest, l); }
  onToolStarted(l: Listener<ToolStarted>): Disposable { return this.on(Notification.toolStarted, l); }
  onToolOutput(l: Listener<ToolOutput>): Disposable { return this.on(Notification.toolOutput, l); }
  onToolResult(l: Listener<ToolResult>): Disposable { return this.on(Notification.toolResult, l); }
  onTurnEnded(l: Listener<TurnEnded>): Disposable { return this.on(Notification.turnEnded, l); }

  private dispatch(method: NotificationMethod, params: unknown): void {
    for (const l of [...this.anyListeners]) safeCall(() => l(method, params));
    const set = this.listeners.get(method);
    if (set) for (const l of [...set]) safeCall(() => l(params));
  }

  dispose(): void {
    for (const s of this.subscriptions.splice(0)) s.dispose();
    this.listeners.clear();
    this.anyListeners.clear();
  }
}

function safeCall(f: () => void): void {
  try {
    f();
  } catch (e) {
    // A faulty listener must not stop the others or the connection's reader.
    console.error('mino: notification listener failed', e);
  }
}
