// Commands in the editor's own terminal (`terminal/*`): the client runs
// what Mino asks in its terminal, which is Mino's own supervisor, so the
// sandbox, the environment, the limits and the evidence stay Mino's. The
// client here spawns the given program with node's child_process, as an
// editor would.
import { afterEach, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { acp, childTerminals, freshDirs, initialize, prompt, startMockModel, startServer } from "./harness.mjs";
import { takeSchemaFailures } from "./schema.mjs";

afterEach(() => assert.deepEqual(takeSchemaFailures(), [], "every message Mino sends passes the ACP v1 schema"));

const option = (params, kind) => params.options.find((o) => o.kind === kind).optionId;
const allowOnce = (params) => ({ outcome: { outcome: "selected", optionId: option(params, "allow_once") } });
const newSession = (server, cwd) => server.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
const toolUpdates = (server) =>
  server.updates.map((u) => u.update).filter((u) => u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update");
const lastInput = async (mock) => JSON.stringify((await mock.requests()).at(-1).body.input);

/** Processes whose command line is exactly `argv` (checked in /proc). */
function processesRunning(argv) {
  const wanted = argv.join("\0") + "\0";
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, "utf8") === wanted;
      } catch {
        return false;
      }
    });
}

async function until(predicate) {
  while (!predicate()) await new Promise((ok) => setTimeout(ok, 20));
}

test("with terminal offered, an approved command runs in the editor's terminal under Mino's supervisor; its output reaches the model and the editor's environment stays out", async () => {
  const dirs = freshDirs();
  const command = "echo hello-from-the-terminal; env | sort";
  const mock = await startMockModel([
    { type: "calls", calls: [{ call_id: "call_1", command }] },
    { type: "text", deltas: ["It said hello."] },
  ]);
  const terminals = childTerminals({ editorEnv: { EDITOR_SECRET: "s3cret-of-the-editor" } });
  const server = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: allowOnce, terminals });
  try {
    await initialize(server.agent, { terminal: true });
    const { sessionId } = await newSession(server, dirs.workspace);
    assert.equal((await prompt(server.agent, sessionId, "Say hello.")).stopReason, "end_turn");

    // The editor was asked to run Mino's supervisor, never `bash -c <command>`.
    const [method, create] = terminals.requests[0];
    assert.equal(method, "create");
    assert.match(create.command, /mino-server$/);
    assert.deepEqual(create.args.slice(0, 2), ["--supervise", "--connect"]);
    assert.ok(!JSON.stringify(create).includes("hello-from-the-terminal"), "the command travels in the spec, not the terminal's args");
    assert.deepEqual(create.env.map((e) => e.name), ["MINO_SUPERVISOR_TOKEN"]);
    assert.equal(create.cwd, dirs.workspace);

    // The tool call embeds the terminal, started only after in_progress
    // (tool_start synced); the result is Mino's own, with the output.
    const updates = toolUpdates(server);
    const running = updates.findIndex((u) => u.status === "in_progress");
    const embedded = updates.findIndex((u) => (u.content ?? []).some((c) => c.type === "terminal"));
    assert.ok(running >= 0 && embedded > running, "the terminal is shown once the call is running");
    const result = updates.at(-1);
    assert.equal(result.status, "completed");
    assert.deepEqual(result.content[0], { type: "terminal", terminalId: "term-1" });
    assert.match(result.content[1].content.text, /^hello-from-the-terminal$/m);
    const input = await lastInput(mock);
    assert.match(input, /hello-from-the-terminal/);
    // The command got Mino's allowlist, not the editor's environment nor the token.
    assert.doesNotMatch(input, /EDITOR_SECRET|s3cret-of-the-editor|MINO_SUPERVISOR_TOKEN/);

    // The editor's terminal showed the command and its output; then it was
    // waited for and released (no terminal/output needed for the result).
    const shown = terminals.byId.get("term-1");
    await terminals.waitFor(() => shown.released);
    assert.match(shown.output, /^\$ echo hello-from-the-terminal; env \| sort\n/);
    assert.match(shown.output, /^hello-from-the-terminal$/m);
    assert.deepEqual(shown.exitStatus, { exitCode: 0, signal: null });
    assert.deepEqual(terminals.requests.map(([m]) => m), ["create", "waitForExit", "release"]);
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("in the editor's terminal the sandbox still applies: a write outside the workspace is refused", async () => {
  const dirs = freshDirs();
  // The command's temporary directory is its own, so that the base
  // directory is outside everything the sandbox lets it write.
  const tmp = join(dirs.base, "tmp");
  mkdirSync(tmp);
  const outside = join(dirs.base, "outside.txt");
  const mock = await startMockModel([
    { type: "calls", calls: [{ call_id: "call_1", command: `echo escaped > ${outside}` }] },
    { type: "text", deltas: ["Refused."] },
  ]);
  const terminals = childTerminals();
  const server = startServer({
    ...dirs,
    baseUrl: mock.baseUrl,
    onPermission: allowOnce,
    terminals,
    env: { TMPDIR: tmp, XDG_RUNTIME_DIR: "" },
  });
  try {
    await initialize(server.agent, { terminal: true });
    const { sessionId } = await newSession(server, dirs.workspace);
    await server.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: "sandbox", value: "workspace-write" });
    assert.equal((await prompt(server.agent, sessionId, "Write outside.")).stopReason, "end_turn");
    assert.equal(terminals.requests[0][0], "create", "it ran in the editor's terminal");
    const result = toolUpdates(server).at(-1);
    assert.equal(result.status, "failed");
    assert.equal(result.content[0].type, "terminal");
    assert.equal(existsSync(outside), false, "nothing was written outside the workspace");
    assert.match(await lastInput(mock), /Permission denied|Read-only|sandbox/i);
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("session/cancel during a command in the editor's terminal stops it: cancelled, the terminal killed, nothing left running", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([{ type: "calls", calls: [{ call_id: "call_1", command: "echo started; sleep 31.7" }] }]);
  const terminals = childTerminals();
  const server = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: allowOnce, terminals });
  try {
    await initialize(server.agent, { terminal: true });
    const { sessionId } = await newSession(server, dirs.workspace);
    const answer = prompt(server.agent, sessionId, "Wait a while.");
    await terminals.waitFor(() => terminals.byId.get("term-1")?.output.includes("started\n"));
    await until(() => processesRunning(["sleep", "31.7"]).length === 1);
    await server.agent.notify(acp.methods.agent.session.cancel, { sessionId });
    assert.equal((await answer).stopReason, "cancelled");
    const result = toolUpdates(server).at(-1);
    assert.equal(result.rawOutput.minoResult, "cancelled");
    assert.match(result.content[1].content.text, /\[cancelled; the command's process group was killed\]/);
    const shown = terminals.byId.get("term-1");
    await terminals.waitFor(() => shown.released);
    assert.ok(terminals.requests.some(([m]) => m === "kill"), "terminal/kill on cancel");
    assert.deepEqual(processesRunning(["sleep", "31.7"]), [], "nothing of the command is left");
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("terminal/create failing: Mino runs the command itself, as without a terminal, and the call says so", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([
    { type: "calls", calls: [{ call_id: "call_1", command: "echo ran-anyway" }] },
    { type: "text", deltas: ["Done."] },
  ]);
  const terminals = childTerminals({ failCreate: true });
  const server = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: allowOnce, terminals });
  try {
    await initialize(server.agent, { terminal: true });
    const { sessionId } = await newSession(server, dirs.workspace);
    assert.equal((await prompt(server.agent, sessionId, "Run it.")).stopReason, "end_turn");
    assert.deepEqual(terminals.requests.map(([m]) => m), ["create"]);
    const result = toolUpdates(server).at(-1);
    assert.equal(result.status, "completed");
    assert.ok(!result.content.some((c) => c.type === "terminal"));
    assert.match(result.content[0].content.text, /the editor's terminal could not be used \(terminal\/create failed: .*\); Mino ran the command itself/);
    assert.match(result.content[1].content.text, /^ran-anyway$/m);
    assert.match(await lastInput(mock), /ran-anyway/);
    assert.doesNotMatch(await lastInput(mock), /terminal could not be used/, "the note is the person's, not the model's");
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("SIGKILL of mino-server during a command in the editor's terminal: after restart the result is unknown with the supervisor's evidence, and nothing is left running", async () => {
  const dirs = freshDirs();
  const command = "echo started; sleep 32.9";
  const mock = await startMockModel([{ type: "calls", calls: [{ call_id: "call_1", command }] }]);
  const terminals = childTerminals();
  const first = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: allowOnce, terminals });
  await initialize(first.agent, { terminal: true });
  const { sessionId } = await newSession(first, dirs.workspace);
  prompt(first.agent, sessionId, "Wait a while.").catch(() => {});
  await terminals.waitFor(() => terminals.byId.get("term-1")?.output.includes("started\n"));
  await until(() => processesRunning(["sleep", "32.9"]).length === 1);
  first.child.kill("SIGKILL");
  await first.exited;

  // The supervisor in the editor's terminal saw its connection end: it
  // stopped the command, left its evidence and exited.
  const shown = terminals.byId.get("term-1");
  await shown.exited;
  assert.deepEqual(processesRunning(["sleep", "32.9"]), [], "nothing of the command is left");
  assert.match(shown.output, /\[stopped because Mino stopped; the command's process group was killed\]/);
  await until(() =>
    readdirSync(dirs.home, { recursive: true }).some((f) => /\.evidence\/turn-\d+\.call-\d+\.json$/.test(String(f))),
  );

  const second = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("nothing is asked on load") });
  try {
    await initialize(second.agent, { terminal: true });
    await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: dirs.workspace, mcpServers: [] });
    const call = second.updates.map((u) => u.update).find((u) => u.sessionUpdate === "tool_call");
    assert.equal(call.rawOutput.minoResult, "unknown");
    assert.equal(call.status, "failed");
    assert.match(call.content[1].content.text, /^What Mino's supervisor saw: the command was stopped when Mino stopped/);
    assert.equal(call.rawOutput.supervisor.outcome, "stopped_when_mino_stopped");
    assert.equal((await mock.requests()).length, 1, "recovery asked the model nothing and ran nothing");
  } finally {
    await second.stop();
    mock.stop();
  }
});
