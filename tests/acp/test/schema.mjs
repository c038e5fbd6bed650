// Every message mino-server sends is checked against the official ACP v1
// schema: the zod schemas the SDK generates from it (dist/v1/schema/zod.gen.js,
// not exported by the package, so imported by path). The union schemas there
// accept any extension message, so each message is checked by its method
// (a response by the method of the request it answers).
// The package's entry is dist/v1/stable/acp.js; the schemas are beside it.
const z = await import(new URL("../schema/zod.gen.js", import.meta.resolve("@agentclientprotocol/sdk")).href);
// `session/fork` is in the SDK's unstable v1 schema only (beside the stable one).
const unstable = await import(new URL("../unstable/schema/zod.gen.js", import.meta.resolve("@agentclientprotocol/sdk")).href);

/** The agent's requests and notifications, by method. */
const AGENT_SENDS = {
  "session/update": z.zSessionNotification,
  "session/request_permission": z.zRequestPermissionRequest,
  "elicitation/create": z.zCreateElicitationRequest,
  "fs/read_text_file": z.zReadTextFileRequest,
  "fs/write_text_file": z.zWriteTextFileRequest,
  "terminal/create": z.zCreateTerminalRequest,
  "terminal/output": z.zTerminalOutputRequest,
  "terminal/release": z.zReleaseTerminalRequest,
  "terminal/wait_for_exit": z.zWaitForTerminalExitRequest,
  "terminal/kill": z.zKillTerminalRequest,
  // Protocol-level cancellation (v1 "Cancellation"): the crate sends it when
  // Mino drops a question it asked (a gate question a cancel won over).
  "$/cancel_request": z.zCancelRequestNotification,
};
/** The agent's answers, by the method of the client's request. */
const AGENT_ANSWERS = {
  initialize: z.zInitializeResponse,
  "session/new": z.zNewSessionResponse,
  "session/load": z.zLoadSessionResponse,
  "session/list": z.zListSessionsResponse,
  "session/resume": z.zResumeSessionResponse,
  "session/close": z.zCloseSessionResponse,
  "session/set_mode": z.zSetSessionModeResponse,
  "session/set_config_option": z.zSetSessionConfigOptionResponse,
  "session/prompt": z.zPromptResponse,
  "session/fork": unstable.zForkSessionResponse,
};

/**
 * A checker for one connection: `sent(message)` records a client request's
 * method; `check(message)` returns what is wrong with an agent message
 * (`null` when the schema accepts it).
 */
export function schemaChecker() {
  const asked = new Map();
  return {
    sent(message) {
      if (message && message.method && message.id !== undefined) asked.set(message.id, message.method);
    },
    check(message) {
      if (message?.jsonrpc !== "2.0") return `not JSON-RPC 2.0: ${JSON.stringify(message)}`;
      let schema;
      let what;
      let value;
      if (message.method !== undefined) {
        schema = AGENT_SENDS[message.method];
        what = message.method;
        value = message.params;
        if (!schema) return `${what} is not a method the ACP v1 schema has for the agent to send`;
      } else if (message.error !== undefined) {
        schema = z.zError;
        what = `error answer to ${asked.get(message.id) ?? `request ${message.id}`}`;
        value = message.error;
      } else {
        what = asked.get(message.id);
        schema = AGENT_ANSWERS[what];
        value = message.result;
        if (!schema) return `an answer to ${what ?? `unknown request ${message.id}`}, which the schema has no answer for`;
      }
      const parsed = schema.safeParse(value);
      return parsed.success ? null : `${what} fails the ACP v1 schema: ${parsed.error.message}\n${JSON.stringify(message)}`;
    },
  };
}

/** Every schema failure of every connection since the last `takeSchemaFailures()`. */
const failures = [];
export const recordSchemaFailure = (failure) => failures.push(failure);
export const takeSchemaFailures = () => failures.splice(0);
