// Generated from server/protocol (mino-protocol) by `cargo run -p mino-protocol --bin mino-protocol-gen`.
// Do not edit: change the crate and run that command.
/* eslint-disable */

// ---------------------------------------------------------------- types

export type AcknowledgeParams = { 
/**
 * Turns to acknowledge; absent means every pending one.
 */
turnIds?: Array<string>, };

export type AcknowledgeResult = { acknowledged: Array<string>, };

export type ApprovalParams = { 
/**
 * The turn of the call, as in its `mino/approvalRequest`: call ids
 * repeat across turns, so the pair names the call.
 */
turnId: string, callId: string, decision: Decision, };

export type ApprovalRequest = { turnId: string, seq: number, callId: string, command: string, directory: string, 
/**
 * The complete environment the command will get (names and values).
 */
environment: { [key in string]: string }, limits: Limits, 
/**
 * An edit call's proposal; absent for a command. For an edit, `command`
 * is the summary `<tool> <path as the model gave it>`, `environment`
 * is empty and `limits` are zero (nothing runs).
 */
edit?: EditView, };

export type CancelParams = { turnId: string, };

export type ChatParams = { text: string, };

export type ChatResult = { turnId: string, };

/**
 * The person's decision on a call, in `mino/approval`.
 */
export type Decision = "approve" | "deny";

/**
 * Which file-edit tool a call is.
 */
export type EditToolName = "edit_file" | "write_file";

/**
 * What the person approves for an `edit_file` / `write_file` call.
 */
export type EditView = { tool: EditToolName, 
/**
 * Where the edit writes: relative to the session's directory when
 * inside it, else absolute (every symbolic link resolved).
 */
path: string, 
/**
 * The file does not exist yet; `write_file` creates it.
 */
newFile: boolean, 
/**
 * Size in bytes of the file's content after the edit.
 */
size: number, 
/**
 * The unified diff from the file's content now to the content after.
 */
diff: string, 
/**
 * The path is outside the session's directory: show it prominently.
 */
leavesWorkspace: boolean, };

/**
 * The `{}` result of methods that only acknowledge.
 */
export type EmptyResult = Record<symbol, never>;

/**
 * What the command's supervisor recorded about a call whose result Mino
 * never saved. Present only beside an `unknown` result; the result stays
 * `unknown` and acknowledgement is still required.
 */
export type Evidence = { outcome: EvidenceOutcome, exitCode?: number, pid: number, 
/**
 * RFC 3339.
 */
startedAt: string, endedAt?: string, 
/**
 * The last bytes of the command's output, at most its output limit.
 */
outputTail: string, 
/**
 * One sentence to show beside the unknown result, e.g. "the command
 * exited 0 after Mino stopped; last output: done".
 */
summary: string, };

/**
 * How a supervised command ended, as its supervisor saw it.
 */
export type EvidenceOutcome = "exited" | "signalled" | "stopped_when_mino_stopped" | "timed_out";

export type HistoryCall = { callId: string, 
/**
 * The command; for an edit call, the summary `<tool> <path>`.
 */
command: string, 
/**
 * The edit tool of an edit call; absent for a command.
 */
tool?: EditToolName, 
/**
 * `None` only while the call is still in flight.
 */
result: ToolResultView | null, 
/**
 * What the command's supervisor saw; only beside an `unknown` result.
 */
evidence?: Evidence, };

/**
 * Paging: without `limit` every turn (before `beforeTurnId`, if given);
 * with it, the newest `limit` turns before `beforeTurnId` (or the end),
 * oldest first.
 */
export type HistoryParams = { limit?: number, beforeTurnId?: string, };

export type HistoryResult = { sessionId: string, turns: Array<HistoryTurn>, 
/**
 * Whether older turns exist before the first one returned.
 */
hasMore: boolean, };

export type HistoryTurn = { turnId: string, input: string, 
/**
 * The assistant's text, all responses of the turn joined.
 */
text: string, calls: Array<HistoryCall>, 
/**
 * `None` while the turn is still running.
 */
status: TurnStatus | null, reason?: string, 
/**
 * Runtime notices shown with the turn (e.g. that it was interrupted).
 */
notices: Array<string>, };

/**
 * `initializationOptions` of the LSP `initialize` request.
 */
export type InitializationOptions = { 
/**
 * Directory bash commands run in; defaults to the server's working directory.
 */
cwd?: string, 
/**
 * Session to open; `None` opens the most recent one, or a new one if there is none.
 */
session?: string, 
/**
 * Start a new session even if others exist.
 */
newSession?: boolean, };

export type Limits = { timeoutSeconds: number, outputLimitBytes: number, };

export type OutputStream = "stdout" | "stderr";

export type RecoveredCallView = { callId: string, 
/**
 * The command; for an edit call, the summary `<tool> <path>`.
 */
command: string, 
/**
 * The edit tool of an edit call; absent for a command.
 */
tool?: EditToolName, result: ToolResultView, 
/**
 * What the command's supervisor saw; only beside an `unknown` result.
 */
evidence?: Evidence, };

export type RecoveredTurnView = { turnId: string, status: TurnStatus, calls: Array<RecoveredCallView>, };

export type RecoveryNotification = { sessionId: string, 
/**
 * Turns closed by this open's recovery, and earlier recovered turns still
 * awaiting acknowledgement.
 */
turns: Array<RecoveredTurnView>, acknowledgementRequired: boolean, unacknowledgedTurnIds: Array<string>, 
/**
 * Repairs made to the file while opening it (a torn last line cut off).
 */
repairs: Array<string>, };

/**
 * The model request failed in a retryable way (network, 5xx, 429, a cut
 * stream) and is sent again after `delayMs`. Text streamed since the
 * model's current response began (since `turnStarted` or the last
 * `toolResult`) is void: the retried response streams it again.
 */
export type Retrying = { turnId: string, seq: number, attempt: number, delayMs: number, reason: string, };

/**
 * What the server adds to `InitializeResult.capabilities.experimental.mino`.
 */
export type ServerCapabilities = { sessionId: string, journalPath: string, cwd: string, model: string, };

export type TextDelta = { turnId: string, seq: number, delta: string, };

export type ToolOutput = { turnId: string, seq: number, callId: string, stream: OutputStream, chunk: string, };

export type ToolResult = { turnId: string, seq: number, callId: string, status: ToolStatus, output: string, exitCode?: number, 
/**
 * The diff an edit call wrote (its whole diff; `output` holds it cut
 * at 64 KiB); only on a `success` result of an edit.
 */
diff?: string, };

export type ToolResultView = { status: ToolStatus, output: string, exitCode?: number, 
/**
 * The diff an edit call wrote, as its saved result holds it (cut at
 * 64 KiB with a note); only on a `success` result of an edit.
 */
diff?: string, };

export type ToolStarted = { turnId: string, seq: number, callId: string, command: string, };

/**
 * How a tool call ended (`mino_core::ToolStatus` on the wire).
 */
export type ToolStatus = "success" | "failed" | "refused" | "timed_out" | "cancelled" | "not_executed" | "unknown" | "applied" | "not_applied";

export type TurnEnded = { turnId: string, seq: number, status: TurnStatus, reason?: string, text?: string, };

/**
 * Any notification a turn emits, tagged by its method name; handy for
 * clients that read them from one stream.
 */
export type TurnNotification = { "method": "mino/turnStarted", "params": TurnStarted } | { "method": "mino/textDelta", "params": TextDelta } | { "method": "mino/retrying", "params": Retrying } | { "method": "mino/approvalRequest", "params": ApprovalRequest } | { "method": "mino/toolStarted", "params": ToolStarted } | { "method": "mino/toolOutput", "params": ToolOutput } | { "method": "mino/toolResult", "params": ToolResult } | { "method": "mino/turnEnded", "params": TurnEnded };

export type TurnStarted = { turnId: string, seq: number, input: string, };

/**
 * How a turn ended (`mino_core::TurnStatus` on the wire).
 */
export type TurnStatus = "completed" | "failed" | "cancelled" | "interrupted";

// ---------------------------------------------------------------- methods

/** Client-to-server requests. */
export const Method = {
  chat: 'mino/chat',
  approval: 'mino/approval',
  acknowledge: 'mino/acknowledge',
  cancel: 'mino/cancel',
  history: 'mino/history',
} as const;

/** Server-to-client notifications. */
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
export const TURN_NOTIFICATIONS = ['mino/turnStarted', 'mino/textDelta', 'mino/retrying', 'mino/approvalRequest', 'mino/toolStarted', 'mino/toolOutput', 'mino/toolResult', 'mino/turnEnded'] as const;

/** Each request method's params and result. */
export interface RequestMap {
  'mino/chat': { params: ChatParams; result: ChatResult };
  'mino/approval': { params: ApprovalParams; result: EmptyResult };
  'mino/acknowledge': { params: AcknowledgeParams; result: AcknowledgeResult };
  'mino/cancel': { params: CancelParams; result: EmptyResult };
  'mino/history': { params: HistoryParams; result: HistoryResult };
}

/** Each notification method's params. */
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

// ---------------------------------------------------------------- vocabulary

export const TURN_STATUSES: readonly TurnStatus[] = ['completed', 'failed', 'cancelled', 'interrupted'] as const;
export const TOOL_STATUSES: readonly ToolStatus[] = ['success', 'failed', 'refused', 'timed_out', 'cancelled', 'not_executed', 'unknown', 'applied', 'not_applied'] as const;
export const DECISIONS: readonly Decision[] = ['approve', 'deny'] as const;
export const EVIDENCE_OUTCOMES: readonly EvidenceOutcome[] = ['exited', 'signalled', 'stopped_when_mino_stopped', 'timed_out'] as const;
export const OUTPUT_STREAMS: readonly OutputStream[] = ['stdout', 'stderr'] as const;

/** Mino's own JSON-RPC error codes. */
export const ErrorCode = {
  acknowledgementRequired: -32010,
  turnInProgress: -32011,
  noPendingApproval: -32012,
  journalFailure: -32013,
  unknownTurn: -32014,
  sessionUnavailable: -32015,
} as const;

export const ACKNOWLEDGEMENT_REQUIRED_MESSAGE = "Acknowledge unknown tool results before continuing";
export const ACKNOWLEDGEMENT_QUESTION = "Do you understand that these commands may already have run?";
