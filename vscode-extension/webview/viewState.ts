// What the view knows of the conversation as a whole, read and changed by
// the composer, the gate, the notifications and the host's messages.
import type { ServerState } from '../src/messages';

export const state = {
  runningTurnId: null as string | null,
  /** Turns awaiting acknowledgement; null while no acknowledgement is asked for. */
  gateTurnIds: null as string[] | null,
  ackPending: false,
  /** The question sent and not yet accepted; it stays in the input. */
  pendingQuestion: null as string | null,
  server: 'starting' as ServerState,
  /** The session shown; notifications of another are ignored. */
  sessionId: null as string | null,
};
