// The ACP front door as an editor sees it: the official SDK's client over
// stdio, the real mino-server and supervisor, the mock model.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  KILL_SERVER, acp, agentText, freshDirs, initialize, prompt, startMockModel, startServer, writeTranscript,
} from "./harness.mjs";

const UNKNOWN_OUTPUT =
  "Execution was started but its result was not saved. The operation may have happened. Do not automatically retry it.";
const ACKNOWLEDGE = "I understand these commands may already have run";

const option = (params, kind) => params.options.find((o) => o.kind === kind).optionId;
const selected = (optionId) => ({ outcome: { outcome: "selected", optionId } });

test("initialize answers protocol version 1 with honest capabilities", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([]);
  const server = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("no permission expected") });
  try {
    const init = await initialize(server.agent);
    assert.equal(init.protocolVersion, 1);
    assert.equal(init.agentCapabilities.loadSession, true);
    assert.deepEqual(init.agentCapabilities.promptCapabilities, { image: false, audio: false, embeddedContext: true });
    assert.equal(init.agentInfo.name, "mino-server");
    const created = await server.agent.request(acp.methods.agent.session.new, {
      cwd: dirs.workspace,
      mcpServers: [{ name: "github", command: "github-mcp", args: [], env: [] }],
    });
    await server.waitFor((u) => agentText(u).includes("github"));
    assert.match(agentText(server.updates), /Mino does not connect to MCP servers yet.*github/);
    assert.ok(created.sessionId);
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("milk story: SIGKILL mid-command, session/load shows the unknown call, the gate asks before the model", async () => {
  const dirs = freshDirs();
  const command = `echo milk >> shopping.txt && ${KILL_SERVER}`;
  const mock = await startMockModel([
    { type: "calls", text: ["I'll add it."], calls: [{ call_id: "call_1", command }] },
    { type: "text", deltas: ["Milk is on the list ", "(I checked: it ran once)."] },
  ]);

  // 1. The approved command kills the server between tool_start and tool_result.
  const first = startServer({
    ...dirs,
    baseUrl: mock.baseUrl,
    onPermission: (params) => {
      assert.equal(params.toolCall.title, command);
      assert.deepEqual(params.options.map((o) => o.kind), ["allow_once", "reject_once"]);
      return selected(option(params, "allow_once"));
    },
  });
  await initialize(first.agent);
  const { sessionId } = await first.agent.request(acp.methods.agent.session.new, { cwd: dirs.workspace, mcpServers: [] });
  const killed = prompt(first.agent, sessionId, "Add milk to shopping.txt.").then(
    () => "answered",
    () => "connection lost",
  );
  const { signal } = await first.exited;
  assert.equal(signal, "SIGKILL");
  assert.equal(await killed, "connection lost");
  const started = first.updates.map((u) => u.update).filter((u) => u.sessionUpdate === "tool_call_update");
  assert.ok(started.some((u) => u.status === "in_progress"), "the call was shown running before the kill");
  assert.equal(readFileSync(join(dirs.workspace, "shopping.txt"), "utf8"), "milk\n");

  // 2. A new server loads the session: the call is failed, "Result unknown".
  const answers = [];
  const second = startServer({
    ...dirs,
    baseUrl: mock.baseUrl,
    onPermission: (params) => answers.shift()(params),
  });
  await initialize(second.agent);
  await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: dirs.workspace, mcpServers: [] });
  const replayed = second.updates.map((u) => u.update);
  assert.equal(replayed[0].sessionUpdate, "user_message_chunk");
  assert.equal(replayed[0].content.text, "Add milk to shopping.txt.");
  assert.equal(agentText(second.updates).startsWith("I'll add it."), true);
  const call = replayed.find((u) => u.sessionUpdate === "tool_call");
  assert.equal(call.kind, "execute");
  assert.equal(call.status, "failed");
  assert.equal(call.title, `Result unknown: ${command}`);
  assert.deepEqual(call.content, [{ type: "content", content: { type: "text", text: UNKNOWN_OUTPUT } }]);
  assert.deepEqual(call.rawOutput, { minoResult: "unknown" });
  assert.equal(call._meta.minoStatus, "unknown");
  assert.match(agentText(second.updates), /Mino runtime notice: the previous turn ended with status interrupted/);
  const requestsBefore = (await mock.requests()).length;
  assert.equal(requestsBefore, 1);

  // 3. The gate: cancel while it asks → cancelled; "Not now" → refusal; neither reaches the model.
  answers.push(async (params) => {
    assert.equal(params.toolCall.toolCallId, call.toolCallId);
    assert.deepEqual(params.options, [
      { optionId: "acknowledge", name: ACKNOWLEDGE, kind: "allow_once" },
      { optionId: "not-now", name: "Not now", kind: "reject_once" },
    ]);
    await second.agent.notify(acp.methods.agent.session.cancel, { sessionId });
    return { outcome: { outcome: "cancelled" } };
  });
  const cancelled = await prompt(second.agent, sessionId, "Is milk on the list now?");
  assert.equal(cancelled.stopReason, "cancelled");
  answers.push((params) => selected(option(params, "reject_once")));
  const refused = await prompt(second.agent, sessionId, "Is milk on the list now?");
  assert.equal(refused.stopReason, "refusal");
  assert.equal((await mock.requests()).length, requestsBefore, "nothing was sent to the model");

  // 4. "I understand…" → acknowledged, the prompt goes to the model; nothing is re-run.
  answers.push((params) => selected(option(params, "allow_once")));
  const updatesBefore = second.updates.length;
  const answered = await prompt(second.agent, sessionId, "Is milk on the list now?");
  assert.equal(answered.stopReason, "end_turn");
  assert.equal(agentText(second.updates.slice(updatesBefore)), "Milk is on the list (I checked: it ran once).");
  const requests = await mock.requests();
  assert.equal(requests.length, requestsBefore + 1);
  const input = JSON.stringify(requests.at(-1).body.input);
  assert.ok(input.includes(UNKNOWN_OUTPUT), "the model hears the unknown result");
  assert.equal(input.split("Is milk on the list now?").length - 1, 1, "the refused questions were never recorded");
  assert.equal(readFileSync(join(dirs.workspace, "shopping.txt"), "utf8"), "milk\n", "nothing ran again");
  await second.stop();
  mock.stop();

  const file = writeTranscript(
    "acp-session.jsonl",
    [...first.transcript, { direction: "note", message: "mino-server was killed (SIGKILL); a new one is started" }, ...second.transcript],
    [[sessionId, "SESSION_ID"], [dirs.base, "/tmp/mino-acp"]],
  );
  assert.ok(existsSync(file));
});

test("session/cancel during a permission request: the turn ends cancelled and the command never runs", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([{ type: "calls", calls: [{ call_id: "call_1", command: "touch ran.txt" }] }]);
  let sessionId;
  const server = startServer({
    ...dirs,
    baseUrl: mock.baseUrl,
    onPermission: async () => {
      await server.agent.notify(acp.methods.agent.session.cancel, { sessionId });
      return { outcome: { outcome: "cancelled" } };
    },
  });
  try {
    await initialize(server.agent);
    ({ sessionId } = await server.agent.request(acp.methods.agent.session.new, { cwd: dirs.workspace, mcpServers: [] }));
    const answer = await prompt(server.agent, sessionId, "Touch ran.txt.");
    assert.equal(answer.stopReason, "cancelled");
    assert.equal(existsSync(join(dirs.workspace, "ran.txt")), false);
    const last = server.updates.map((u) => u.update).filter((u) => u.sessionUpdate === "tool_call_update").at(-1);
    assert.equal(last.status, "failed");
    assert.equal(last.rawOutput.minoResult, "not_executed");
    assert.match(last.title, /^Not executed: touch ran.txt$/);
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("an approved command streams tool_call, in_progress and completed with its output", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([
    { type: "calls", calls: [{ call_id: "call_1", command: "echo hello" }] },
    { type: "text", deltas: ["It said hello."] },
  ]);
  const server = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: (p) => selected(option(p, "allow_once")) });
  try {
    await initialize(server.agent);
    const { sessionId } = await server.agent.request(acp.methods.agent.session.new, { cwd: dirs.workspace, mcpServers: [] });
    const answer = await prompt(server.agent, sessionId, "Say hello.");
    assert.equal(answer.stopReason, "end_turn");
    const tool = server.updates.map((u) => u.update).filter((u) => u.sessionUpdate.startsWith("tool_call"));
    // `pending` is ACP's default status, left out on the wire.
    assert.deepEqual(tool.map((u) => [u.sessionUpdate, u.status ?? "pending"]), [
      ["tool_call", "pending"],
      ["tool_call_update", "in_progress"],
      ["tool_call_update", "completed"],
    ]);
    assert.equal(tool[0].title, "echo hello");
    assert.equal(tool[0].kind, "execute");
    assert.equal(tool[2].content[0].content.text.trim(), "hello");
    assert.equal(agentText(server.updates), "It said hello.");
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("allow_always grants a session rule: a later command it covers runs without a question", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([
    { type: "calls", calls: [{ call_id: "call_1", command: "echo hello" }] },
    { type: "calls", calls: [{ call_id: "call_2", command: "echo hello again" }] },
    { type: "text", deltas: ["Said twice."] },
  ]);
  const asked = [];
  const server = startServer({
    ...dirs,
    baseUrl: mock.baseUrl,
    onPermission: (params) => {
      asked.push(params);
      return selected(option(params, "allow_always"));
    },
  });
  try {
    await initialize(server.agent);
    const { sessionId } = await server.agent.request(acp.methods.agent.session.new, { cwd: dirs.workspace, mcpServers: [] });
    const answer = await prompt(server.agent, sessionId, "Say hello twice.");
    assert.equal(answer.stopReason, "end_turn");
    assert.equal(asked.length, 1, "the second command was allowed by the rule");
    assert.deepEqual(asked[0].options.map((o) => o.kind), ["allow_once", "allow_always", "reject_once", "reject_always"]);
    assert.equal(option(asked[0], "allow_always"), "allow-always");
    const tool = server.updates.map((u) => u.update).filter((u) => u.sessionUpdate.startsWith("tool_call"));
    assert.deepEqual(tool.map((u) => [u.sessionUpdate, u.status ?? "pending"]), [
      ["tool_call", "pending"],
      ["tool_call_update", "in_progress"],
      ["tool_call_update", "completed"],
      ["tool_call", "in_progress"],
      ["tool_call_update", "completed"],
    ]);
    assert.equal(tool[3].title, "echo hello again");
  } finally {
    await server.stop();
    mock.stop();
  }
});
