/**
 * Mino's wire contract (see server/protocol/src/lib.rs and docs/protocol.md) and a
 * typed wrapper around a JSON-RPC connection.
 *
 * This module depends only on `vscode-jsonrpc`, never on `vscode`: the extension
 * wraps its `LanguageClient` with it, and the Node tests wrap a plain
 * `MessageConnection` to the real `mino-server` binary.
 */
import type { Disposable, MessageConnection } from 'vscode-jsonrpc';

// ---------------------------------------------------------------- contract

// Every wire type, method name, status, error code and fixed message is
// generated from the Rust crate `mino-protocol` (see ./generated/protocol.ts
// for the command); nothing here restates them.
export * from './generated/protocol';
import type {
  AcknowledgeParams,
  AcknowledgeResult,
  ApprovalParams,
  ApprovalRequest,
  ChatImage,
  ChatResult,
  ImageResult,
  CompactResult,
  Decision,
  EmptyResult,
  Evidence,
  HistoryResult,
  McpListResult,
  McpServerStatus,
  ModelsListResult,
  ModelsSelectResult,
  NotificationMap,
  RequestMap,
  RecoveryNotification,
  Retrying,
  RewindPlanResult,
  RewindResult,
  RulesListResult,
  ServerCapabilities,
  SessionInfo,
  SessionsForkResult,
  SessionsDeleteResult,
  SessionsListParams,
  SessionsListResult,
  SettingsResult,
  SettingsUpdateParams,
  TextDelta,
  ToolOutput,
  ToolResult,
  ToolStarted,
  TurnEnded,
  TurnStarted,
} from './generated/protocol';
import { DECISION, Method, Notification } from './generated/protocol';

/** What the server reports under `capabilities.experimental.mino`. */
export type MinoServerCapabilities = ServerCapabilities;
/**
 * What the command supervisor recorded about a call whose result is `unknown`.
 * Shown beside the unknown result; the result stays `unknown` and the
 * acknowledgement gate still applies.
 */
export type CallEvidence = Evidence;

export type NotificationMethod = keyof NotificationMap;

/** What goes with a decision: `reason` only with deny, `rule` with allowSession/allowWorkspace/denySession/denyWorkspace. */
export type DecisionDetails = Pick<ApprovalParams, 'reason' | 'rule' | 'acceptedHunks'>;
/** The decisions that grant a rule (allow or deny) and so carry one. */
export const RULE_DECISIONS: ReadonlySet<Decision> = new Set<Decision>([DECISION.allowSession, DECISION.allowWorkspace, DECISION.denySession, DECISION.denyWorkspace]);
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
  chat(text: string, images?: ChatImage[]): Promise<ChatResult> {
    return this.request(Method.chat, images && images.length ? { text, images } : { text });
  }

  /** The bytes (base64) of an image a question of the current session carried. */
  image(sha256: string): Promise<ImageResult> {
    return this.request(Method.image, { sha256 });
  }

  approve(turnId: string, callId: string): Promise<EmptyResult> {
    return this.decide(turnId, callId, DECISION.approve);
  }

  deny(turnId: string, callId: string): Promise<EmptyResult> {
    return this.decide(turnId, callId, DECISION.deny);
  }

  /**
   * Answers the `mino/approvalRequest` of `callId` in `turnId`; `details`
   * carries the reason of a deny or the rule of an allowSession/allowWorkspace/denySession/denyWorkspace.
   */
  decide(turnId: string, callId: string, decision: Decision, details: DecisionDetails = {}): Promise<EmptyResult> {
    const params: ApprovalParams = { turnId, callId, decision };
    if (decision === DECISION.deny && details.reason) params.reason = details.reason;
    if (RULE_DECISIONS.has(decision) && details.rule) params.rule = details.rule;
    // An edit approved in part: the hunks of its diff kept (the server writes those alone).
    if (decision === DECISION.approve && details.acceptedHunks) params.acceptedHunks = details.acceptedHunks;
    return this.request(Method.approval, params);
  }

  /** This workspace's sessions (or every folder's), newest first. */
  listSessions(params: SessionsListParams = {}): Promise<SessionsListResult> {
    return this.request(Method.sessionsList, params);
  }

  /** Makes a new session current; a `mino/recovery` for it follows. */
  newSession(cwd?: string): Promise<SessionInfo> {
    return this.request(Method.sessionsNew, cwd ? { cwd } : {});
  }

  /** Makes `sessionId` current; a `mino/recovery` for it follows. */
  /** A new session holding `sessionId`'s history up to and including `turnId`; not made current. */
  forkSession(sessionId: string, turnId: string): Promise<SessionsForkResult> {
    return this.request(Method.sessionsFork, { sessionId, turnId });
  }

  openSession(sessionId: string): Promise<SessionInfo> {
    return this.request(Method.sessionsOpen, { sessionId });
  }

  renameSession(sessionId: string, title: string): Promise<EmptyResult> {
    return this.request(Method.sessionsRename, { sessionId, title });
  }

  /** Moves the session's files to the trash of `$MINO_HOME`. */
  deleteSession(sessionId: string): Promise<SessionsDeleteResult> {
    return this.request(Method.sessionsDelete, { sessionId });
  }

  /** Has the model summarise the conversation; answers once the summary is saved (or why not). */
  compact(): Promise<CompactResult> {
    return this.request(Method.compact, {});
  }

  listRules(): Promise<RulesListResult> {
    return this.request(Method.rulesList, {});
  }

  revokeRule(id: string): Promise<EmptyResult> {
    return this.request(Method.rulesRevoke, { id });
  }

  /** The models to choose from (the service's list, else the configured ones) and the session's current one. */
  listModels(): Promise<ModelsListResult> {
    return this.request(Method.modelsList, {});
  }

  /** The current session's model from its next turn on (kept when the session is reopened). */
  selectModel(model: string): Promise<ModelsSelectResult> {
    return this.request(Method.modelsSelect, { model });
  }

  /**
   * Changes the approval mode and/or the sandbox for the calls asked about
   * from then on; answers the settings in force. A sandbox this machine cannot
   * enforce is refused (-32602, naming what is missing) and nothing changes.
   */
  updateSettings(params: SettingsUpdateParams): Promise<SettingsResult> {
    return this.request(Method.settingsUpdate, params);
  }

  /** Acknowledges unknown tool results; no `turnIds` means every pending one. */
  acknowledge(turnIds?: string[]): Promise<AcknowledgeResult> {
    const params: AcknowledgeParams = turnIds ? { turnIds } : {};
    return this.request(Method.acknowledge, params);
  }

  cancel(turnId: string): Promise<EmptyResult> {
    return this.request(Method.cancel, { turnId });
  }

  history(): Promise<HistoryResult> {
    return this.request(Method.history, {});
  }

  /** What rewinding `turnId` (and every later turn) would put back, and what it cannot; writes nothing. */
  rewindPlan(turnId: string): Promise<RewindPlanResult> {
    return this.request(Method.rewindPlan, { turnId });
  }

  /** Carries out the plan whose `digest` the person confirmed (-32016 when it changed since). */
  rewind(turnId: string, digest: string): Promise<RewindResult> {
    return this.request(Method.rewind, { turnId, digest });
  }

  /** The current session's MCP servers and their states, in name order. */
  listMcp(): Promise<McpListResult> {
    return this.request(Method.mcpList, {});
  }

  /** Stops the MCP server `server` (if it runs) and starts it again; answers its state then. */
  restartMcp(server: string): Promise<McpServerStatus> {
    return this.request(Method.mcpRestart, { server });
  }

  /** Sends `method` with the params the protocol binds to it, typed by its bound result. */
  private request<M extends keyof RequestMap>(
    method: M,
    params: RequestMap[M]['params'],
  ): Promise<RequestMap[M]['result']> {
    return (this.endpoint as RpcEndpoint).sendRequest<RequestMap[M]['result']>(method, params);
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
