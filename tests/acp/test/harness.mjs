// Drives `mino-server --acp` over real stdio with the official ACP TypeScript
// SDK, against `mino-mock-model` (the only thing mocked: the model's HTTP wire).
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { Readable, Writable } from "node:stream";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import * as acp from "@agentclientprotocol/sdk";
import { recordSchemaFailure, schemaChecker } from "./schema.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const serverBin = process.env.MINO_SERVER_BIN || join(root, "target/debug/mino-server");
const mockBin = process.env.MINO_MOCK_MODEL_BIN || join(root, "target/debug/mino-mock-model");
export const outputDir = join(root, "tests/acp/test-output");

/** The command that kills `mino-server` from inside an approved command
 * (commands run under a supervisor, so the server is the parent of $PPID);
 * the same as `mino_e2e::KILL_SERVER`. */
export const KILL_SERVER = "kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)";

/** Starts the mock model with `script`; resolves once it listens. */
export async function startMockModel(script) {
  const dir = mkdtempSync(join(tmpdir(), "mino-acp-mock-"));
  const file = join(dir, "script.json");
  writeFileSync(file, JSON.stringify(script));
  const child = spawn(mockBin, ["--script", file], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout });
  const baseUrl = await new Promise((ok, fail) => {
    child.once("exit", (code) => fail(new Error(`mino-mock-model exited (${code}) before listening`)));
    lines.once("line", (line) => {
      const m = /^listening (\S+)$/.exec(line);
      m ? ok(m[1]) : fail(new Error(`unexpected first line from mino-mock-model: ${line}`));
    });
  });
  return {
    baseUrl,
    /** Every request the model received so far. */
    async requests() {
      const res = await fetch(new URL("/_mock/requests", baseUrl.replace(/\/v1\/?$/, "/")));
      return res.json();
    },
    /** Resolves once the model has received `n` requests (each is recorded before it is answered). */
    async waitForRequests(n) {
      for (;;) {
        const requests = await this.requests();
        if (requests.length >= n) return requests;
        await new Promise((ok) => setImmediate(ok));
      }
    },
    /** `true`: `GET /v1/models` is held unanswered (a service hanging on its list); `false` answers it. */
    async holdModels(held) {
      await fetch(new URL("/_mock/models/hold", baseUrl.replace(/\/v1\/?$/, "/")), {
        method: "POST",
        body: JSON.stringify(held),
      });
    },
    /** How many `GET /v1/models` are held now with their client still waiting. */
    async modelsWaiting() {
      const res = await fetch(new URL("/_mock/models/waiting", baseUrl.replace(/\/v1\/?$/, "/")));
      return (await res.json()).waiting;
    },
    stop() {
      child.stdin.end();
      child.kill();
    },
  };
}

/** A workspace and a Mino home, fresh for each test. */
export function freshDirs() {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "mino-acp-")));
  const workspace = join(base, "workspace");
  const home = join(base, "home");
  mkdirSync(workspace);
  mkdirSync(home);
  return { base, workspace, home };
}

/**
 * Starts `mino-server --acp` and connects an SDK client to it.
 * `onPermission(params)` answers `session/request_permission`;
 * `onElicitation(params)`, if given, answers `elicitation/create`;
 * `onReadTextFile(params)`, if given, answers `fs/read_text_file`;
 * `terminals` (see `childTerminals`), if given, answers `terminal/*`;
 * `env` is added to the server's environment.
 * Every message both ways is kept in `transcript` (direction, message); each
 * the server sends is checked against the ACP v1 schema (./schema.mjs), and
 * the failures fail the test that saw them.
 */
export function startServer({ home, workspace, baseUrl, onPermission, onElicitation, onReadTextFile, terminals, env = {} }) {
  const child = spawn(serverBin, ["--acp"], {
    cwd: workspace,
    env: {
      ...process.env,
      MINO_HOME: home,
      OPENAI_API_KEY: "test-key",
      OPENAI_BASE_URL: baseUrl,
      MINO_MODEL: "mock-model",
      RUST_LOG: process.env.RUST_LOG || "warn",
      ...env,
    },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise((ok) => child.once("exit", (code, signal) => ok({ code, signal })));
  const transcript = [];
  const updates = [];
  const waiters = [];
  // The `session/update`s read off the wire so far. The SDK hands a
  // notification to its handler later than it resolves a response read
  // after it, so each request's answer below waits until every update the
  // agent wrote before that answer is in `updates`: a test reads what
  // Mino sent, in Mino's order.
  let seenUpdates = 0;
  const schema = schemaChecker();
  const record = (direction) =>
    new TransformStream({
      transform(message, controller) {
        transcript.push({ direction, message });
        if (direction === "client→agent") schema.sent(message);
        else {
          if (message && message.method === acp.methods.client.session.update) seenUpdates++;
          const wrong = schema.check(message);
          if (wrong) recordSchemaFailure(wrong);
        }
        controller.enqueue(message);
      },
    });
  // Resolves once `count` updates have reached the handler below.
  const dispatched = (count) =>
    new Promise((ok) => {
      const check = () => {
        if (updates.length >= count) {
          waiters.splice(waiters.indexOf(check), 1);
          ok();
        }
      };
      waiters.push(check);
      check();
    });
  // The same holds for the agent's requests: the SDK can run a request's
  // handler before the handler of an update the agent wrote before it (each
  // message is validated and dispatched on its own), so a permission
  // handler looking for the call the agent just announced could miss it.
  // Each request handler first waits for the updates read before it.
  const inOrder =
    (handler) =>
    async (...args) => {
      await dispatched(seenUpdates);
      return handler(...args);
    };
  const raw = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const toServer = record("client→agent");
  toServer.readable.pipeTo(raw.writable).catch(() => {});
  const stream = { writable: toServer.writable, readable: raw.readable.pipeThrough(record("agent→client")) };
  const app = acp
    .client({ name: "mino-acp-tests" })
    .onRequest(
      acp.methods.client.session.requestPermission,
      inOrder(async ({ params }) => onPermission(params)),
    )
    .onRequest(acp.methods.client.elicitation.create, inOrder(async ({ params }) => {
      if (!onElicitation) throw new Error("this client did not expect elicitation/create");
      return onElicitation(params);
    }))
    .onRequest(acp.methods.client.fs.readTextFile, inOrder(async ({ params }) => {
      if (!onReadTextFile) throw new Error("this client did not offer fs/read_text_file");
      return onReadTextFile(params);
    }))
    .onRequest(acp.methods.client.terminal.create, inOrder(async ({ params }) => offered(terminals).create(params)))
    .onRequest(acp.methods.client.terminal.output, inOrder(async ({ params }) => offered(terminals).output(params)))
    .onRequest(acp.methods.client.terminal.waitForExit, inOrder(async ({ params }) => offered(terminals).waitForExit(params)))
    .onRequest(acp.methods.client.terminal.kill, inOrder(async ({ params }) => offered(terminals).kill(params)))
    .onRequest(acp.methods.client.terminal.release, inOrder(async ({ params }) => offered(terminals).release(params)))
    .onNotification(acp.methods.client.session.update, async ({ params }) => {
      updates.push(params);
      for (const w of [...waiters]) w();
    });
  const connection = app.connect(stream);
  const agent = connection.agent;
  const request = agent.request.bind(agent);
  agent.request = async (...args) => {
    try {
      return await request(...args);
    } finally {
      await dispatched(seenUpdates);
    }
  };
  return {
    agent,
    child,
    exited,
    transcript,
    updates,
    /** Resolves once `predicate(updates)` holds (checked on every update). */
    waitFor(predicate) {
      return new Promise((ok) => {
        const check = () => {
          if (predicate(updates)) {
            waiters.splice(waiters.indexOf(check), 1);
            ok();
          }
        };
        waiters.push(check);
        check();
      });
    },
    async stop() {
      connection.close();
      child.stdin.end();
      await exited;
    },
  };
}

function offered(terminals) {
  if (!terminals) throw new Error("this client did not offer terminal/*");
  return terminals;
}

/**
 * `terminal/*` as an editor implements them: `terminal/create` spawns the
 * given program with node's child_process, in the editor's environment
 * (plus `editorEnv`, a variable of the editor's own that a command must not
 * see) and the request's; its output is kept per terminal. With
 * `failCreate`, `terminal/create` answers an error. `requests` keeps every
 * request, in order, as [method, params].
 */
export function childTerminals({ failCreate = false, editorEnv = {} } = {}) {
  const byId = new Map();
  const requests = [];
  const waiters = [];
  const changed = () => {
    for (const w of [...waiters]) w();
  };
  const terminal = (terminalId) => {
    const t = byId.get(terminalId);
    if (!t) throw new Error(`no terminal ${terminalId}`);
    return t;
  };
  return {
    requests,
    byId,
    async create(params) {
      requests.push(["create", params]);
      if (failCreate) throw new Error("this editor cannot open a terminal now");
      const terminalId = `term-${byId.size + 1}`;
      const env = { ...process.env, ...editorEnv, ...Object.fromEntries((params.env ?? []).map((e) => [e.name, e.value])) };
      const child = spawn(params.command, params.args ?? [], { cwd: params.cwd, env, stdio: ["ignore", "pipe", "pipe"] });
      const t = { child, output: "", exitStatus: null, released: false };
      t.exited = new Promise((ok) =>
        child.once("exit", (exitCode, signal) => {
          t.exitStatus = { exitCode, signal };
          changed();
          ok(t.exitStatus);
        }),
      );
      for (const stream of [child.stdout, child.stderr])
        stream.on("data", (d) => {
          t.output += d;
          changed();
        });
      byId.set(terminalId, t);
      changed();
      return { terminalId };
    },
    async output({ terminalId }) {
      requests.push(["output", { terminalId }]);
      const t = terminal(terminalId);
      return { output: t.output, truncated: false, exitStatus: t.exitStatus ?? undefined };
    },
    async waitForExit({ terminalId }) {
      requests.push(["waitForExit", { terminalId }]);
      return terminal(terminalId).exited;
    },
    async kill({ terminalId }) {
      requests.push(["kill", { terminalId }]);
      terminal(terminalId).child.kill("SIGKILL");
      return {};
    },
    async release({ terminalId }) {
      requests.push(["release", { terminalId }]);
      const t = terminal(terminalId);
      if (!t.exitStatus) t.child.kill("SIGKILL");
      t.released = true;
      changed();
      return {};
    },
    /** Resolves once `predicate()` holds (checked on each terminal event). */
    waitFor(predicate) {
      return new Promise((ok) => {
        const check = () => {
          if (predicate()) {
            waiters.splice(waiters.indexOf(check), 1);
            ok();
          }
        };
        waiters.push(check);
        check();
      });
    },
  };
}

/** `initialize` as an editor sends it (`capabilities` added to the client's). */
export function initialize(agent, capabilities = {}) {
  return agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, ...capabilities },
    clientInfo: { name: "mino-acp-tests", version: "1" },
  });
}

export function prompt(agent, sessionId, text) {
  return agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
}

/** The text of the agent message chunks among `updates`. */
export function agentText(updates) {
  return updates
    .filter((u) => u.update.sessionUpdate === "agent_message_chunk")
    .map((u) => u.update.content.text)
    .join("");
}

/**
 * The transcript as JSON lines, with what differs between runs and machines
 * replaced: `replacements` (session id, temporary paths), the request ids the
 * server draws at random (numbered in order instead) and the commands'
 * environment (the machine's PATH, HOME…).
 */
export function writeTranscript(name, transcript, replacements) {
  mkdirSync(outputDir, { recursive: true });
  const machineEnvironment = (key, value) =>
    key === "environment" && value && typeof value === "object" ? { "…": "the environment commands run with" } : value;
  let text =
    transcript
      .map(({ direction, message }) => JSON.stringify(JSON.parse(JSON.stringify({ direction, message }), machineEnvironment)))
      .join("\n") + "\n";
  for (const [from, to] of replacements) text = text.split(from).join(to);
  const ids = new Map();
  text = text.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (uuid) => {
    if (!ids.has(uuid)) ids.set(uuid, `agent-request-${ids.size + 1}`);
    return ids.get(uuid);
  });
  const file = join(outputDir, name);
  writeFileSync(file, text);
  return file;
}

export { acp };
