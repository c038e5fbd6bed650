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

/**
 * When a command may run without the person's answer.
 */
export type ApprovalMode = "ask" | "rules" | "sandboxed-auto" | "plan";

export type ApprovalParams = { 
/**
 * The turn of the call, as in its `mino/approvalRequest`: call ids
 * repeat across turns, so the pair names the call.
 */
turnId: string, callId: string, decision: Decision, 
/**
 * Only with `deny`: the model reads "Denied by the user: <reason>".
 */
reason?: string, 
/**
 * Required with `allowSession`/`allowWorkspace`/`denySession`/`denyWorkspace`: the rule to grant.
 */
rule?: RuleSpec, 
/**
 * Only with `approve`, for an edit: the hunks of its proposed diff
 * (`mino/approvalRequest`'s `edit.diff`) the person accepted, as
 * 0-based indices in the diff's order (its `@@` headers). The server
 * writes those hunks alone, applied to the content the proposal was
 * made from; the others are rejected. Absent: the whole edit.
 */
acceptedHunks?: Array<number>, };

export type ApprovalRequest = { turnId: string, seq: number, 
/**
 * The session the turn belongs to.
 */
sessionId: string, callId: string, command: string, directory: string, 
/**
 * The complete environment the command will get (names and values).
 */
environment: { [key in string]: string }, limits: Limits, 
/**
 * The sandbox the command will run in if approved.
 */
sandbox: SandboxMode, approvalMode: ApprovalMode, 
/**
 * The rule to offer for "allow/deny for session/workspace": a
 * command's first words as a prefix rule (absent when the command is
 * not one plain command), an edit's path (relative to the session's
 * directory) as a path rule (absent when the path leaves the workspace).
 */
suggestedRule?: RuleSpec, 
/**
 * An edit call's proposal; absent for a command. For an edit, `command`
 * is the summary `<tool> <path as the model gave it>`, `environment`
 * is empty and `limits` are zero (nothing runs).
 */
edit?: EditView, 
/**
 * A read call whose path leaves the workspace: what it would read.
 * `command` is its summary (`read_file /etc/hosts`), `environment` is
 * empty and `limits` are zero; nothing about the file is revealed
 * before the approval. Absent for commands and edits.
 */
read?: ReadView, 
/**
 * Deny rules this command might reach although none matches it (it runs
 * another command through a wrapper such as `env`, has a substitution,
 * a redirection or an expansion the rules cannot see through, or names a
 * denied program by its path): why it is asked about instead of running
 * without asking, whatever the mode. Absent when there are none.
 */
denyRules?: Array<RuleView>, 
/**
 * An MCP tool call: the server, the tool, the arguments and the
 * tool's annotations. `command` is its summary (`mcp fs/read_file
 * {"path":"a"}`), `environment` is empty and `limits` are the call's
 * time limit and output bound. Absent for other calls.
 */
mcp?: McpView, };

/**
 * Who approved a call; `rule` with `kind: "rule"` (the first rule that
 * covered it).
 */
export type ApprovedBy = { kind: ApproverKind, rule?: RuleView, };

/**
 * Who approved a call.
 */
export type ApproverKind = "user" | "rule" | "sandbox" | "workspace";

export type CancelParams = { turnId: string, };

/**
 * One image of a question: exactly one of `data` (the bytes, base64) and
 * `path` (a file the server reads: absolute, or relative to the session's
 * directory).
 */
export type ChatImage = { data?: string, path?: string, 
/**
 * The type the client believes it is (`image/png`, …); when given, it
 * must agree with the bytes.
 */
mimeType?: string, 
/**
 * What to call it in history (a file name); a `path`'s file name by default.
 */
name?: string, };

export type ChatParams = { text: string, 
/**
 * The question's images (at most 8, each at most 20 MiB, 32 MiB
 * together; PNG, JPEG, GIF or WebP, told by their bytes). `text` may be
 * empty when there is at least one.
 */
images?: Array<ChatImage>, };

export type ChatResult = { turnId: string, };

/**
 * `mino/compact` takes no params (`{}`).
 */
export type CompactParams = Record<symbol, never>;

/**
 * What `mino/compact` did.
 */
export type CompactResult = { 
/**
 * A `compaction` record was saved: later requests start with the summary.
 */
compacted: boolean, 
/**
 * Turns newly summarised.
 */
summarizedTurns: number, 
/**
 * Turns the summary covers that are still sent verbatim after it
 * (their results are `unknown`, `not_executed` or recovered).
 */
keptTurns: number, 
/**
 * The last turn the summary covers (when compacted).
 */
throughTurnId?: string, 
/**
 * Why nothing changed (when not compacted).
 */
reason?: string, };

export type CompactionEnded = { seq: number, sessionId: string, trigger: CompactionTrigger, turnId?: string, 
/**
 * The summary request's tokens (also counted in the session's).
 */
usage?: TokenUsage, 
/**
 * A `compaction` record was saved: later requests start with the summary.
 */
compacted: boolean, 
/**
 * Turns newly summarised.
 */
summarizedTurns: number, 
/**
 * Turns the summary covers that are still sent verbatim after it
 * (their results are `unknown`, `not_executed` or recovered).
 */
keptTurns: number, 
/**
 * The last turn the summary covers (when compacted).
 */
throughTurnId?: string, 
/**
 * Why nothing changed (when not compacted).
 */
reason?: string, };

export type CompactionStarted = { seq: number, sessionId: string, trigger: CompactionTrigger, 
/**
 * The turn it runs in (`auto`, `contextLengthExceeded`); absent for `manual`.
 */
turnId?: string, };

/**
 * What started a compaction (`mino_core::compaction::Trigger`).
 */
export type CompactionTrigger = "manual" | "auto" | "contextLengthExceeded";

/**
 * The person's decision on a call, in `mino/approval`.
 */
export type Decision = "approve" | "deny" | "allowSession" | "allowWorkspace" | "denySession" | "denyWorkspace";

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
leavesWorkspace: boolean, 
/**
 * Why the path is protected (`.git`, `.vscode`, `.envrc`, `.nvim.lua`,
 * Mino's home): a program runs what it holds outside any sandbox, or it
 * decides what Mino runs. Such an edit is asked about whatever rule or
 * mode is in force (and no rule is suggested); show this sentence on the
 * card. Absent for an ordinary path.
 */
protected?: string, };

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

export type ForkedFrom = { sessionId: string, turnId: string | null, };

export type HistoryCall = { callId: string, 
/**
 * The command; for an edit call, the summary `<tool> <path>`.
 */
command: string, 
/**
 * The tool of an edit or read call; absent for a `bash` command.
 */
tool?: ToolName, 
/**
 * A read call's path, pattern, lines and (with a `success` result)
 * one-line summary; absent for a command or an edit.
 */
read?: ReadView, 
/**
 * `None` only while the call is still in flight.
 */
result: ToolResultView | null, 
/**
 * What the command's supervisor saw; only beside an `unknown` result.
 */
evidence?: Evidence, 
/**
 * Who approved it; absent when it was not approved.
 */
approvedBy?: ApprovedBy, 
/**
 * The sandbox mode it ran in; absent when it never started.
 */
sandbox?: SandboxMode, 
/**
 * The directory it ran in (or, never started, the one its approval
 * showed). Absent in sessions written before it was journaled.
 */
directory?: string, 
/**
 * The environment its approval showed; absent for an edit and in
 * sessions written before it was journaled.
 */
environment?: { [key in string]: string }, 
/**
 * The limits its approval showed; absent as `environment`.
 */
limits?: Limits, 
/**
 * An edit call's proposal, as `mino/approvalRequest` showed it, from
 * its recorded start: `diff` is the diff it wrote (from its `success`
 * result), empty when it was not written. Absent for a command and
 * for an edit that never started.
 */
edit?: EditView, };

/**
 * An image a question carried, as history shows it.
 */
export type HistoryImage = { 
/**
 * Lowercase hex SHA-256 of its bytes: what `mino/image` takes.
 */
sha256: string, mimeType: string, size: number, name?: string, 
/**
 * Why the kept file cannot be sent (missing, changed); absent when it can.
 */
unavailable?: string, };

/**
 * One piece of a turn's content (`HistoryTurn::items`).
 */
export type HistoryItem = { "type": "text", text: string, } | { "type": "call", call: HistoryCall, } | { "type": "notice", text: string, };

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
hasMore: boolean, 
/**
 * The tokens of every turn of the session (not only those returned);
 * absent when the model service reported none.
 */
usage?: TokenUsage, 
/**
 * The project's `AGENTS.md` files the next request is built with,
 * farther first (read when asked).
 */
instructionFiles: Array<InstructionFile>, };

export type HistoryTurn = { turnId: string, input: string, 
/**
 * The images the question carried, in order.
 */
images?: Array<HistoryImage>, 
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
notices: Array<string>, 
/**
 * A rewind took this turn back: shown in history, no longer in the model's context.
 */
rewound?: boolean, 
/**
 * The tokens of the turn's responses; absent when none were reported.
 */
usage?: TokenUsage, 
/**
 * The turn's content in the order it happened: each response's text
 * and calls as they came, the text streamed of a response that never
 * finished (a cancelled or failed turn), then the notices. What a
 * client showed live, to rebuild it exactly. (`text`, `calls` and
 * `notices` hold the same, grouped, for older clients; the partial text
 * is only here.)
 */
items: Array<HistoryItem>, };

export type ImageParams = { sha256: string, };

export type ImageResult = { mimeType: string, 
/**
 * The bytes, base64.
 */
data: string, };

/**
 * `initializationOptions` of the LSP `initialize` request.
 */
export type InitializationOptions = { 
/**
 * Directory bash commands run in; defaults to the server's working directory.
 */
cwd?: string, 
/**
 * Session to open by id, from any workspace; `None` opens the most
 * recently active session of `cwd` that no other process holds, or a new one.
 */
session?: string, 
/**
 * Start a new session even if others exist.
 */
newSession?: boolean, 
/**
 * The approval mode to start in (default `ask`).
 */
approvalMode?: ApprovalMode, 
/**
 * The sandbox mode to start in (default `MINO_SANDBOX`, else `off`).
 */
sandbox?: SandboxMode, };

/**
 * One of the project's instruction files (`AGENTS.md`) the model is given.
 */
export type InstructionFile = { 
/**
 * Absolute.
 */
path: string, 
/**
 * The file's size in bytes.
 */
size: number, 
/**
 * Whether only part of it (its first `given` bytes) is given to the
 * model: at most 32 KiB of one file, 128 KiB of all, spent from the
 * nearest file up.
 */
truncated: boolean, 
/**
 * The bytes of it given to the model.
 */
given: number, 
/**
 * sha256 of those bytes (64 lowercase hex digits), as the journal's
 * `response` records name it.
 */
sha256: string, };

/**
 * The project's instruction files in force changed: a file was added,
 * removed, cut differently or edited. The next model request is built from
 * these.
 */
export type InstructionsChanged = { sessionId: string, 
/**
 * Farther first; empty when none is left.
 */
files: Array<InstructionFile>, };

export type Limits = { timeoutSeconds: number, outputLimitBytes: number, };

/**
 * Which sessions `mino/sessions/list` shows.
 */
export type ListScope = "workspace" | "all";

/**
 * An MCP tool's annotations (the server's claims about it).
 */
export type McpAnnotations = { title?: string, readOnlyHint?: boolean, destructiveHint?: boolean, idempotentHint?: boolean, openWorldHint?: boolean, };

export type McpListParams = Record<symbol, never>;

export type McpListResult = { 
/**
 * In name order.
 */
servers: Array<McpServerStatus>, };

export type McpRestartParams = { server: string, };

/**
 * One MCP server's state.
 */
export type McpServerStatus = { server: string, state: McpState, 
/**
 * `ready`: the names its tools are offered under (`mcp__<server>__<tool>`).
 */
tools?: Array<string>, 
/**
 * `failed`, `exited`: why, in a sentence.
 */
reason?: string, };

/**
 * An MCP server's state.
 */
export type McpState = "starting" | "ready" | "failed" | "exited";

/**
 * `mino/mcp/status`'s params.
 */
export type McpStatusNotification = { sessionId: string, server: string, state: McpState, 
/**
 * `ready`: the names its tools are offered under (`mcp__<server>__<tool>`).
 */
tools?: Array<string>, 
/**
 * `failed`, `exited`: why, in a sentence.
 */
reason?: string, };

/**
 * What an MCP tool call would send.
 */
export type McpView = { server: string, tool: string, 
/**
 * The arguments as the model sent them (JSON text).
 */
arguments: string, 
/**
 * The tool's annotations as its server states them: hints, shown and
 * never used to skip the approval.
 */
annotations?: McpAnnotations, };

/**
 * One model a person can choose.
 */
export type ModelEntry = { 
/**
 * The name requests give it.
 */
id: string, 
/**
 * Its context window in tokens, when the service or the configuration says.
 */
contextWindow?: number, };

/**
 * Where `mino/models/list` found its models.
 */
export type ModelSource = "service" | "config";

export type ModelsListParams = Record<symbol, never>;

export type ModelsListResult = { 
/**
 * Always includes `current`.
 */
models: Array<ModelEntry>, 
/**
 * The current session's model.
 */
current: string, source: ModelSource, };

export type ModelsSelectParams = { model: string, };

export type ModelsSelectResult = { 
/**
 * The session's model now (the name, trimmed).
 */
model: string, };

export type OutputStream = "stdout" | "stderr";

/**
 * Which read-only tool a call is.
 */
export type ReadToolName = "read_file" | "list_files" | "search";

/**
 * A read-only call (`read_file`, `list_files`, `search`): what it reads,
 * enough for a one-line summary such as
 * `read_file src/main.rs (lines 1-200 of 812)`.
 */
export type ReadView = { tool: ReadToolName, 
/**
 * The file (`read_file`) or the directory searched or listed, as the
 * model gave it (`.` for the session's directory).
 */
path: string, 
/**
 * `list_files`: the glob; `search`: the regular expression.
 */
pattern?: string, 
/**
 * `read_file`: the first line asked for (1-based); absent: line 1.
 */
startLine?: number, 
/**
 * `read_file`: the last line asked for (inclusive); absent: as many as the bounds allow.
 */
endLine?: number, 
/**
 * The path is outside the session's directory, or resolves outside it
 * (`..`, a symbolic link): the read asked first. Show it prominently.
 */
leavesWorkspace: boolean, 
/**
 * What the read returned, in one line: `lines 1-200 of 812 (31,204
 * bytes)`, `48 files`, `12 matches in 5 files`, with what was left
 * out; the first line of the result's `output`. Only on a `success`
 * result (`mino/toolResult`, and calls in `mino/history` and
 * `mino/recovery`).
 */
summary?: string, 
/**
 * The output was cut at a bound (lines, bytes, matches, files); the
 * output says what was left out. Only beside `summary`.
 */
truncated?: boolean, };

export type RecoveredCallView = { callId: string, 
/**
 * The command; for an edit call, the summary `<tool> <path>`.
 */
command: string, 
/**
 * The tool of an edit or read call; absent for a `bash` command.
 */
tool?: ToolName, 
/**
 * A read call's path, pattern, lines and (with a `success` result)
 * one-line summary; absent for a command or an edit.
 */
read?: ReadView, result: ToolResultView, 
/**
 * What the command's supervisor saw; only beside an `unknown` result.
 */
evidence?: Evidence, 
/**
 * Who approved it; absent when it was not approved.
 */
approvedBy?: ApprovedBy, 
/**
 * The sandbox mode it ran in; absent when it never started.
 */
sandbox?: SandboxMode, };

export type RecoveredRewind = { turnId: string, 
/**
 * What each planned file's bytes proved: `restored`/`removed`,
 * `notRestored` (still what Mino wrote), `changed` (neither).
 */
files: Array<RewindFileOutcome>, conflicts: Array<RewindConflict>, commands: Array<RewindCommand>, };

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
repairs: Array<string>, 
/**
 * A rewind Mino stopped during, closed by this open from what each
 * planned file holds now (recovery writes no file).
 */
rewind?: RecoveredRewind, };

/**
 * The model request failed in a retryable way (network, 5xx, 429, a cut
 * stream) and is sent again after `delayMs`. Text streamed since the
 * model's current response began (since `turnStarted` or the last
 * `toolResult`) is void: the retried response streams it again.
 */
export type Retrying = { turnId: string, seq: number, 
/**
 * The session the turn belongs to.
 */
sessionId: string, attempt: number, delayMs: number, reason: string, };

export type RewindAction = "restore" | "remove";

export type RewindCommand = { turnId: string, callId: string, 
/**
 * A command that ran in a rewound turn: its effects are not undone.
 */
command: string, };

export type RewindConflict = { path: string, 
/**
 * Why it is left as it is (changed since Mino wrote it, missing, before-content not kept…).
 */
why: string, };

export type RewindFile = { 
/**
 * Absolute, every symbolic link resolved (as the edit records name it).
 */
path: string, action: RewindAction, };

export type RewindFileOutcome = { path: string, outcome: RewindOutcome, why?: string, };

export type RewindOutcome = "restored" | "removed" | "notRestored" | "conflict" | "changed";

export type RewindParams = { turnId: string, 
/**
 * The `digest` of the plan the person confirmed.
 */
digest: string, };

export type RewindPlanParams = { 
/**
 * The first turn to rewind; every later turn is rewound with it.
 */
turnId: string, };

export type RewindPlanResult = { turnId: string, 
/**
 * The turns rewound, oldest first.
 */
turns: Array<string>, 
/**
 * The files put back, newest change first.
 */
files: Array<RewindFile>, conflicts: Array<RewindConflict>, commands: Array<RewindCommand>, 
/**
 * What `mino/rewind` must be given to carry out exactly this plan.
 */
digest: string, };

export type RewindResult = { turnId: string, turns: Array<string>, files: Array<RewindFileOutcome>, conflicts: Array<RewindConflict>, commands: Array<RewindCommand>, };

/**
 * What a rule does to the calls it covers (absent = `allow`).
 */
export type RuleEffect = "allow" | "deny";

/**
 * How a rule compares a command's words, or (`path`) an edit's path.
 */
export type RuleKind = "exact" | "prefix" | "path" | "mcp";

/**
 * Where a rule holds.
 */
export type RuleScope = "session" | "workspace";

/**
 * A rule as a client asks for it (and as the server suggests it):
 * `{kind: "exact" | "prefix", command}`, `{kind: "path", pattern}` or
 * `{kind: "mcp", tool}`.
 */
export type RuleSpec = { kind: RuleKind, 
/**
 * The command (`exact`, `prefix`).
 */
command?: string, 
/**
 * The glob (`path`).
 */
pattern?: string, 
/**
 * `server/tool`, or `server/*` for every tool of the server (`mcp`).
 */
tool?: string, };

/**
 * A rule in force: `command` for a command rule, `pattern` for a path
 * rule, `tool` for an MCP rule, `effect` only on a deny rule.
 */
export type RuleView = { id: string, kind: RuleKind, command?: string, pattern?: string, tool?: string, scope: RuleScope, effect?: RuleEffect, };

export type RulesListParams = Record<symbol, never>;

export type RulesListResult = { rules: Array<RuleView>, 
/**
 * The workspace rules file's path (it may not exist yet).
 */
workspaceFile: string, 
/**
 * Why none of the file's rules apply (it names the line), when so.
 */
workspaceFileError?: string, };

export type RulesRevokeParams = { id: string, };

/**
 * What a command may touch (`mino_core::sandbox::SandboxMode`).
 */
export type SandboxMode = "off" | "read-only" | "workspace-write";

/**
 * What the server adds to `InitializeResult.capabilities.experimental.mino`.
 */
export type ServerCapabilities = { sessionId: string, journalPath: string, cwd: string, model: string, 
/**
 * The session's title: renamed, else its first question's first line;
 * `null` before the first question.
 */
title: string | null, approvalMode: ApprovalMode, sandbox: SandboxMode, 
/**
 * One line saying what this machine's sandbox enforces.
 */
sandboxSupport: string, 
/**
 * Set when Mino's home (`$MINO_HOME`) lies inside the workspace (Mino
 * started in `~` with the default `~/.mino`): a sentence saying so and
 * what protects it. Show it once at start-up.
 */
homeInWorkspace?: string, 
/**
 * The project's `AGENTS.md` files in force, farther first. Show them
 * in the banner or header; `mino/instructionsChanged` says when they
 * change.
 */
instructionFiles: Array<InstructionFile>, };

/**
 * One session in a list.
 */
export type SessionEntry = { sessionId: string, 
/**
 * The directory the session was created for; its commands run there.
 */
cwd: string, title: string | null, 
/**
 * RFC 3339.
 */
createdAt: string, 
/**
 * RFC 3339: when its journal was last written.
 */
lastActiveAt: string, turns: number, 
/**
 * Another Mino process holds it: it cannot be opened or deleted here.
 */
heldElsewhere: boolean, 
/**
 * Opening it shows an unknown result to acknowledge before chatting.
 */
acknowledgementRequired: boolean, 
/**
 * It is this server's current session.
 */
current: boolean, 
/**
 * The session's tokens, summed over its responses; absent when none
 * were reported, or when its last turn ended in a Mino that did not
 * record the sum (see docs/journal.md, "Listing").
 */
usage?: TokenUsage, };

/**
 * The session now current, after `mino/sessions/new` or `mino/sessions/open`.
 */
export type SessionInfo = { sessionId: string, journalPath: string, cwd: string, title: string | null, };

export type SessionsDeleteParams = { sessionId: string, };

export type SessionsDeleteResult = { 
/**
 * The directory under `$MINO_HOME/trash/` now holding the session's files.
 */
trashedTo: string, };

export type SessionsForkParams = { 
/**
 * The session to fork: the current one or any other not held by another process.
 */
sessionId: string, 
/**
 * The last turn the fork holds (an ended turn, not rewound).
 */
turnId: string, };

/**
 * The fork made: a session like any other, not made current (open it with
 * `mino/sessions/open`). The forked session is unchanged.
 */
export type SessionsForkResult = { sessionId: string, journalPath: string, cwd: string, title: string | null, 
/**
 * The session and turn it was forked from.
 */
forkedFrom: ForkedFrom, 
/**
 * How many turns the fork holds (those up to and including `turnId`).
 */
turns: number, };

export type SessionsListParams = { 
/**
 * Default `workspace`.
 */
scope?: ListScope, 
/**
 * At most this many sessions (1..=500, default 50).
 */
limit?: number, 
/**
 * A previous page's `nextCursor`.
 */
cursor?: string, };

export type SessionsListResult = { 
/**
 * Newest (last active) first.
 */
sessions: Array<SessionEntry>, 
/**
 * Present when more sessions follow: pass it as `cursor`.
 */
nextCursor?: string, };

export type SessionsNewParams = { 
/**
 * The directory the new session's commands run in; default the workspace.
 */
cwd?: string, };

export type SessionsOpenParams = { sessionId: string, };

export type SessionsRenameParams = { sessionId: string, 
/**
 * 1 to 200 characters after trimming, one line.
 */
title: string, };

export type SettingsResult = { approvalMode: ApprovalMode, sandbox: SandboxMode, 
/**
 * One line saying what this machine's sandbox enforces.
 */
sandboxSupport: string, };

export type SettingsUpdateParams = { approvalMode?: ApprovalMode, sandbox?: SandboxMode, };

export type TextDelta = { turnId: string, seq: number, 
/**
 * The session the turn belongs to.
 */
sessionId: string, delta: string, };

/**
 * Tokens the model service reported, summed over responses.
 */
export type TokenUsage = { inputTokens: number, outputTokens: number, totalTokens: number, 
/**
 * Input tokens served from the service's prompt cache, when it said.
 */
cachedInputTokens?: number, 
/**
 * Output tokens spent on reasoning, when it said.
 */
reasoningTokens?: number, };

/**
 * Which tool a call is, where a call names one (`tool` of
 * `mino/toolStarted`, `mino/toolResult`, `mino/history` and
 * `mino/recovery` calls). A `bash` command has no `tool`, as before
 * the read tools existed.
 */
export type ToolName = "edit_file" | "write_file" | "read_file" | "list_files" | "search";

export type ToolOutput = { turnId: string, seq: number, 
/**
 * The session the turn belongs to.
 */
sessionId: string, callId: string, stream: OutputStream, chunk: string, };

export type ToolResult = { turnId: string, seq: number, 
/**
 * The session the turn belongs to.
 */
sessionId: string, callId: string, 
/**
 * The call's command, as `mino/approvalRequest`, `mino/toolStarted`
 * and `mino/history` show it (for an edit call the summary
 * `<tool> <path>`). A call refused by a deny rule, or one that failed
 * before anyone was asked (arguments that could not be read, an
 * unknown tool), has no request or start: this is the only place the
 * live view learns its command. When the arguments could not be read
 * it is the arguments as the model sent them, as `mino/history` shows
 * them; absent only when the call is not on record.
 */
command?: string, status: ToolStatus, output: string, exitCode?: number, 
/**
 * The diff an edit call wrote (its whole diff; `output` holds it cut
 * at 64 KiB); only on a `success` result of an edit.
 */
diff?: string, 
/**
 * The tool of an edit or read call; absent for a `bash` command (and
 * when the call is not on record).
 */
tool?: ToolName, 
/**
 * A read call's path, pattern, lines and (on `success`) one-line summary.
 */
read?: ReadView, };

export type ToolResultView = { status: ToolStatus, output: string, exitCode?: number, 
/**
 * The diff an edit call wrote, as its saved result holds it (cut at
 * 64 KiB with a note); only on a `success` result of an edit.
 */
diff?: string, };

export type ToolStarted = { turnId: string, seq: number, 
/**
 * The session the turn belongs to.
 */
sessionId: string, callId: string, command: string, approvedBy: ApprovedBy, 
/**
 * The sandbox mode the command runs in.
 */
sandbox: SandboxMode, 
/**
 * The tool of an edit or read call; absent for a `bash` command.
 */
tool?: ToolName, 
/**
 * A read call's path, pattern and lines (no summary yet).
 */
read?: ReadView, };

/**
 * How a tool call ended (`mino_core::ToolStatus` on the wire).
 */
export type ToolStatus = "success" | "failed" | "refused" | "timed_out" | "cancelled" | "not_executed" | "unknown" | "applied" | "not_applied" | "unavailable";

export type TurnEnded = { turnId: string, seq: number, 
/**
 * The session the turn belongs to.
 */
sessionId: string, status: TurnStatus, reason?: string, text?: string, 
/**
 * The tokens of this turn's responses; absent when none were reported.
 */
usage?: TokenUsage, 
/**
 * The session's tokens so far, this turn included.
 */
sessionUsage?: TokenUsage, };

/**
 * Any notification a turn emits, tagged by its method name; handy for
 * clients that read them from one stream.
 */
export type TurnNotification = { "method": "mino/turnStarted", "params": TurnStarted } | { "method": "mino/textDelta", "params": TextDelta } | { "method": "mino/retrying", "params": Retrying } | { "method": "mino/approvalRequest", "params": ApprovalRequest } | { "method": "mino/toolStarted", "params": ToolStarted } | { "method": "mino/toolOutput", "params": ToolOutput } | { "method": "mino/toolResult", "params": ToolResult } | { "method": "mino/turnEnded", "params": TurnEnded };

export type TurnStarted = { turnId: string, seq: number, 
/**
 * The session the turn belongs to.
 */
sessionId: string, input: string, };

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
  image: 'mino/image',
  sessionsList: 'mino/sessions/list',
  sessionsNew: 'mino/sessions/new',
  sessionsOpen: 'mino/sessions/open',
  sessionsRename: 'mino/sessions/rename',
  sessionsDelete: 'mino/sessions/delete',
  sessionsFork: 'mino/sessions/fork',
  rulesList: 'mino/rules/list',
  rulesRevoke: 'mino/rules/revoke',
  settingsUpdate: 'mino/settings/update',
  compact: 'mino/compact',
  modelsList: 'mino/models/list',
  modelsSelect: 'mino/models/select',
  mcpList: 'mino/mcp/list',
  mcpRestart: 'mino/mcp/restart',
  rewindPlan: 'mino/rewind/plan',
  rewind: 'mino/rewind',
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
  compactionStarted: 'mino/compactionStarted',
  compactionEnded: 'mino/compactionEnded',
  instructionsChanged: 'mino/instructionsChanged',
  mcpStatus: 'mino/mcp/status',
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
  'mino/image': { params: ImageParams; result: ImageResult };
  'mino/sessions/list': { params: SessionsListParams; result: SessionsListResult };
  'mino/sessions/new': { params: SessionsNewParams; result: SessionInfo };
  'mino/sessions/open': { params: SessionsOpenParams; result: SessionInfo };
  'mino/sessions/rename': { params: SessionsRenameParams; result: EmptyResult };
  'mino/sessions/delete': { params: SessionsDeleteParams; result: SessionsDeleteResult };
  'mino/sessions/fork': { params: SessionsForkParams; result: SessionsForkResult };
  'mino/rules/list': { params: RulesListParams; result: RulesListResult };
  'mino/rules/revoke': { params: RulesRevokeParams; result: EmptyResult };
  'mino/settings/update': { params: SettingsUpdateParams; result: SettingsResult };
  'mino/compact': { params: CompactParams; result: CompactResult };
  'mino/models/list': { params: ModelsListParams; result: ModelsListResult };
  'mino/models/select': { params: ModelsSelectParams; result: ModelsSelectResult };
  'mino/mcp/list': { params: McpListParams; result: McpListResult };
  'mino/mcp/restart': { params: McpRestartParams; result: McpServerStatus };
  'mino/rewind/plan': { params: RewindPlanParams; result: RewindPlanResult };
  'mino/rewind': { params: RewindParams; result: RewindResult };
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
  'mino/compactionStarted': CompactionStarted;
  'mino/compactionEnded': CompactionEnded;
  'mino/instructionsChanged': InstructionsChanged;
  'mino/mcp/status': McpStatusNotification;
}

// ---------------------------------------------------------------- vocabulary

export const TURN_STATUSES: readonly TurnStatus[] = ['completed', 'failed', 'cancelled', 'interrupted'] as const;
export const TOOL_STATUSES: readonly ToolStatus[] = ['success', 'failed', 'refused', 'timed_out', 'cancelled', 'not_executed', 'unknown', 'applied', 'not_applied', 'unavailable'] as const;
export const TOOL_NAMES: readonly ToolName[] = ['edit_file', 'write_file', 'read_file', 'list_files', 'search'] as const;
export const READ_TOOLS: readonly ToolName[] = ['read_file', 'list_files', 'search'] as const;
export const DECISIONS: readonly Decision[] = ['approve', 'deny', 'allowSession', 'allowWorkspace', 'denySession', 'denyWorkspace'] as const;
export const EVIDENCE_OUTCOMES: readonly EvidenceOutcome[] = ['exited', 'signalled', 'stopped_when_mino_stopped', 'timed_out'] as const;
export const OUTPUT_STREAMS: readonly OutputStream[] = ['stdout', 'stderr'] as const;
export const APPROVAL_MODES: readonly ApprovalMode[] = ['ask', 'rules', 'sandboxed-auto', 'plan'] as const;
export const SANDBOX_MODES: readonly SandboxMode[] = ['off', 'read-only', 'workspace-write'] as const;
export const TURN_STATUS = { completed: 'completed', failed: 'failed', cancelled: 'cancelled', interrupted: 'interrupted' } as const satisfies Record<string, TurnStatus>;
export const TOOL_STATUS = { success: 'success', failed: 'failed', refused: 'refused', timed_out: 'timed_out', cancelled: 'cancelled', not_executed: 'not_executed', unknown: 'unknown', applied: 'applied', not_applied: 'not_applied', unavailable: 'unavailable' } as const satisfies Record<string, ToolStatus>;
export const DECISION = { approve: 'approve', deny: 'deny', allowSession: 'allowSession', allowWorkspace: 'allowWorkspace', denySession: 'denySession', denyWorkspace: 'denyWorkspace' } as const satisfies Record<string, Decision>;

/** Mino's own JSON-RPC error codes. */
export const ErrorCode = {
  acknowledgementRequired: -32010,
  turnInProgress: -32011,
  noPendingApproval: -32012,
  journalFailure: -32013,
  unknownTurn: -32014,
  sessionUnavailable: -32015,
  rewindPlanChanged: -32016,
} as const;

/** JSON-RPC's own error codes, and the two of the language-server lifecycle. */
export const JsonRpcCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  serverNotInitialized: -32002,
  requestCancelled: -32800,
} as const;

export const ACKNOWLEDGEMENT_REQUIRED_MESSAGE = "Acknowledge unknown tool results before continuing";
export const ACKNOWLEDGEMENT_QUESTION = "Do you understand that these commands may already have run?";
