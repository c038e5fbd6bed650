/**
 * Messages between the chat webview (webview/) and the extension host.
 * Types only; the webview's modules and the host both import them, so the
 * compiler holds each side to the same shapes.
 */
import type { ApprovalMode, ChatImage, Decision, HistoryResult, NotificationMethod, RuleSpec, SandboxMode } from './protocol';

/** Webview → host. */
export type WebviewMessage =
  | { type: 'ready' }
  /** `images`: pasted or dropped into the input, passed as `mino/chat` `images` (absent: none). */
  | { type: 'send'; text: string; images?: ChatImage[] }
  /** A history thumbnail needs the bytes of the image `sha256` (`mino/image`). */
  | { type: 'image'; sha256: string }
  /**
   * The answer to one approval card: `turnId` and `callId` of its `mino/approvalRequest`;
   * `reason` with a deny, `rule` (as the person edited it) with allowSession/allowWorkspace/denySession/denyWorkspace.
   */
  | { type: 'approval'; turnId: string; callId: string; decision: Decision; reason?: string; rule?: RuleSpec; acceptedHunks?: number[] }
  /**
   * An edit card's "Review diff": open the diff editor on that call's proposed content (decides nothing);
   * `acceptedHunks`: the hunks still kept in the card when some were dropped (0-based), shown alone.
   */
  | { type: 'reviewEdit'; turnId: string; callId: string; acceptedHunks?: number[] }
  /**
   * A restored edit card's "Review diff": open the diff the session recorded
   * for that call (from the history the host sent) as a read-only document.
   * `occurrence`: which of the turn's calls with that id (models may repeat one), 0 for the first.
   */
  | { type: 'reviewRecordedEdit'; turnId: string; callId: string; occurrence: number }
  /** The header's Rename: the host asks for the new title. */
  | { type: 'renameSession' }
  /** The header's model was clicked: Mino: Choose Model. */
  | { type: 'chooseModel' }
  /** The header's approval mode or a rule form's "Change the approval mode…": Mino: Set Approval Mode (which asks). */
  | { type: 'setApprovalMode' }
  | { type: 'acknowledge'; turnIds: string[] }
  | { type: 'cancel'; turnId?: string }
  | { type: 'restart' }
  /** A turn's "Rewind to here": the plan, a confirmation (Cancel the default), then `mino/rewind`. */
  | { type: 'rewind'; turnId: string }
  /** A turn's "Fork from here": `mino/sessions/fork` through it, then the fork opened. */
  | { type: 'fork'; turnId: string }
  /** An MCP server notice's Restart: `mino/mcp/restart` for that server. */
  | { type: 'mcpRestart'; server: string }
  | { type: 'showLog' }
  /** Opens the settings at `mino.serverPath` (after "mino-server not found"). */
  | { type: 'openSettings' }
  /** A code block's Copy: onto the clipboard. */
  | { type: 'copy'; text: string }
  /** A code block's Insert: at the cursor(s) of the active editor. */
  | { type: 'insert'; text: string }
  /** Read editor context for the question: the active file, its selection, or files picked by name. */
  | { type: 'addContext'; source: ContextSource; path?: string }
  /** An edit card's Keep checkboxes changed: the hunks kept (absent: all), for the diff editor. */
  | { type: 'hunksKept'; turnId: string; callId: string; kept?: number[] }
  /** `@` typed in the input: what can be added whose name matches `query` (the text after the `@`). */
  | { type: 'mentions'; query: string };

/** `file`: the workspace file `path` (chosen from the input's `@` menu). */
export type ContextSource = 'activeFile' | 'selection' | 'pick' | 'file';

/**
 * One choice of the input's `@` menu: the editor's selection, the active
 * file, or a workspace file (`path`, relative to the workspace).
 */
export interface Mention {
  kind: 'selection' | 'activeFile' | 'file';
  /** What the menu shows. */
  label: string;
  path: string;
}

/**
 * A file or selection added to the question. The view sends it as part of the
 * question text: a line naming `path` (and the lines), then a fenced block.
 */
export interface ContextItem {
  /** Workspace-relative when inside the workspace. */
  path: string;
  /** VS Code language id, used as the fence's info string. */
  language: string;
  text: string;
  /** 1-based, for a selection. */
  startLine?: number;
  endLine?: number;
}

/**
 * `crashed`: the running server stopped unexpectedly. `failed`: it could not be
 * started (binary not found, initialize refused); the `server` message says why.
 */
export type ServerState = 'starting' | 'ready' | 'stopped' | 'crashed' | 'failed';

/** Host → webview. */
export type HostMessage =
  /** Replace the transcript with this history (null: nothing to show yet). */
  | { type: 'history'; history: HistoryResult | null }
  /** A Mino notification, forwarded as received. */
  | { type: 'notification'; method: NotificationMethod; params: unknown }
  | { type: 'acknowledged'; turnIds: string[] }
  /** The bytes of a history image the view asked for, or why they cannot be had. */
  | { type: 'image'; sha256: string; mimeType?: string; data?: string; error?: string }
  /** The server accepted the question of the last `send` (the view clears its input only now). */
  | { type: 'sent'; turnId: string }
  /** A request failed; `request` names what the user tried (send, approval, …). */
  | { type: 'error'; request: string; message: string; code?: number; turnId?: string; callId?: string }
  /** `message` says why the server is not running (for `failed`, how to fix it). */
  | { type: 'server'; state: ServerState; message?: string; fixSetting?: string }
  /** Focus the input; `clear` empties it first (Mino: New Question). */
  | { type: 'focus'; clear?: boolean }
  /** Editor context read for an `addContext`: shown as chips above the input. */
  | { type: 'context'; items: ContextItem[] }
  /** Hunks kept or rejected in the diff editor: the card's checkboxes follow (null: all kept). */
  | { type: 'hunks'; turnId: string; callId: string; kept: number[] | null }
  /** The `@` menu's choices for `query` (best first, at most MENTION_MAX). */
  | { type: 'mentions'; query: string; items: Mention[] }
  /**
   * The current session, for the header. A different `sessionId` from the one
   * shown means a switch: the view drops the transcript, notices and gate, and
   * rebuilds them from the `history` and `mino/recovery` that follow.
   */
  | { type: 'session'; session: ViewSession }
  /** The current session's model, for the header. */
  | { type: 'model'; model: string }
  /** The approval mode and sandbox in force, as the server reported them, for the header. */
  | { type: 'modes'; approvalMode: ApprovalMode; sandbox: SandboxMode };

/** What the view shows of the current session. */
export interface ViewSession {
  sessionId: string;
  /** `null` until the first question (shown as "New chat"). */
  title: string | null;
}
