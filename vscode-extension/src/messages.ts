/**
 * Messages between the chat webview (media/main.js) and the extension host.
 * Types only; media/main.js follows the same shapes.
 */
import type { Decision, HistoryResult, NotificationMethod } from './protocol';

/** Webview → host. */
export type WebviewMessage =
  | { type: 'ready' }
  | { type: 'send'; text: string }
  | { type: 'approval'; callId: string; decision: Decision }
  | { type: 'acknowledge'; turnIds: string[] }
  | { type: 'cancel'; turnId?: string }
  | { type: 'restart' }
  | { type: 'showLog' };

export type ServerState = 'starting' | 'ready' | 'stopped' | 'crashed';

/** Host → webview. */
export type HostMessage =
  /** Replace the transcript with this history (null: nothing to show yet). */
  | { type: 'history'; history: HistoryResult | null }
  /** A Mino notification, forwarded as received. */
  | { type: 'notification'; method: NotificationMethod; params: unknown }
  | { type: 'acknowledged'; turnIds: string[] }
  /** A request failed; `request` names what the user tried (send, approval, …). */
  | { type: 'error'; request: string; message: string; code?: number; callId?: string }
  | { type: 'server'; state: ServerState; message?: string }
  /** Focus the input; `clear` empties it first (Mino: New Question). */
  | { type: 'focus'; clear?: boolean };
