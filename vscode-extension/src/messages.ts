/**
 * Messages between the chat webview (media/main.js) and the extension host.
 * Types only; media/main.js follows the same shapes.
 */
import type { Decision, HistoryResult, NotificationMethod } from './protocol';

/** Webview → host. */
export type WebviewMessage =
  | { type: 'ready' }
  | { type: 'send'; text: string }
  /** The answer to one approval card: `turnId` and `callId` of its `mino/approvalRequest`. */
  | { type: 'approval'; turnId: string; callId: string; decision: Decision }
  | { type: 'acknowledge'; turnIds: string[] }
  | { type: 'cancel'; turnId?: string }
  | { type: 'restart' }
  | { type: 'showLog' }
  /** Opens the settings at `mino.serverPath` (after "mino-server not found"). */
  | { type: 'openSettings' };

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
  /** The server accepted the question of the last `send` (the view clears its input only now). */
  | { type: 'sent'; turnId: string }
  /** A request failed; `request` names what the user tried (send, approval, …). */
  | { type: 'error'; request: string; message: string; code?: number; callId?: string }
  /** `message` says why the server is not running (for `failed`, how to fix it). */
  | { type: 'server'; state: ServerState; message?: string; fixSetting?: string }
  /** Focus the input; `clear` empties it first (Mino: New Question). */
  | { type: 'focus'; clear?: boolean };
