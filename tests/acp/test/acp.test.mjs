// The ACP front door as an editor sees it: the official SDK's client over
// stdio, the real mino-server and supervisor, the mock model.
import { afterEach, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  KILL_SERVER, acp, agentText, freshDirs, initialize, prompt, startMockModel, startServer, writeTranscript,
} from "./harness.mjs";
import { schemaChecker, takeSchemaFailures } from "./schema.mjs";

// Every message Mino sent during a test passes the official ACP v1 schema.
afterEach(() => assert.deepEqual(takeSchemaFailures(), [], "every message Mino sends passes the ACP v1 schema"));

test("the schema check fails a message the ACP v1 schema rejects, and passes one it accepts", () => {
  const checker = schemaChecker();
  const update = (u) => ({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update: u } });
  assert.equal(checker.check(update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } })), null);
  assert.match(checker.check(update({ sessionUpdate: "tool_call", title: "no id" })), /session\/update fails the ACP v1 schema/);
  assert.match(checker.check({ jsonrpc: "2.0", method: "mino/made_up", params: {} }), /not a method the ACP v1 schema has/);
  checker.sent({ jsonrpc: "2.0", id: 7, method: "session/prompt", params: {} });
  assert.equal(checker.check({ jsonrpc: "2.0", id: 7, result: { stopReason: "end_turn" } }), null);
  checker.sent({ jsonrpc: "2.0", id: 8, method: "session/prompt", params: {} });
  assert.match(checker.check({ jsonrpc: "2.0", id: 8, result: { stopReason: "declined" } }), /session\/prompt fails/);
});

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
    assert.deepEqual(init.agentCapabilities.promptCapabilities, { image: true, audio: false, embeddedContext: true });
    assert.equal(init.agentInfo.name, "mino-server");
    const created = await server.agent.request(acp.methods.agent.session.new, {
      cwd: dirs.workspace,
      mcpServers: [{ name: "github", command: "github-mcp", args: [], env: [] }],
    });
    // A server that cannot start is said, never dropped silently.
    await server.waitFor((u) => agentText(u).includes("github"));
    assert.match(agentText(server.updates), /MCP server `github` failed to start: .*github-mcp.*Its tools are missing/);
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
  // The supervisor outlives the server and leaves what it saw beside the journal.
  await evidenceOnFile(dirs.home);

  // 2. A new server loads the session: the call is failed, "Result unknown",
  // with the supervisor's evidence beside the unknown result.
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
  assert.deepEqual(call.content[0], { type: "content", content: { type: "text", text: UNKNOWN_OUTPUT } });
  assert.match(call.content[1].content.text, /^What Mino's supervisor saw: the command (exited 0|was stopped when Mino stopped)/);
  assert.equal(call.rawOutput.minoResult, "unknown");
  assert.match(call.rawOutput.supervisor.outcome, /^(exited|stopped_when_mino_stopped)$/);
  assert.equal(call._meta.minoStatus, "unknown");
  assert.match(agentText(second.updates), /Mino runtime notice: the previous turn ended with status interrupted/);
  const requestsBefore = (await mock.requests()).length;
  assert.equal(requestsBefore, 1);

  // 3. The gate, as editors show it: its own call (kind `other`, never the
  // command's `execute`), a title asking for an acknowledgement, the
  // explanation and the supervisor's evidence in its content, the declines
  // first. Cancel while it asks → cancelled; "Not now" → end_turn with a
  // message that the conversation waits; neither reaches the model.
  answers.push(async (params) => {
    const gate = params.toolCall;
    assert.notEqual(gate.toolCallId, call.toolCallId, "the gate is not the command's call");
    assert.equal(gate.kind, "other");
    assert.equal(gate.title, `Acknowledge before Mino goes on: the result of \`${command}\` is unknown`);
    const explained = gate.content[0].content.text;
    assert.ok(explained.includes(command) && explained.includes(UNKNOWN_OUTPUT), explained);
    assert.match(explained, /What Mino's supervisor saw: the command/);
    assert.match(explained, /Acknowledging runs nothing/);
    assert.deepEqual(params.options, [
      { optionId: "not-now", name: "Not now", kind: "reject_once" },
      { optionId: "check-first", name: "Not yet: I will check what happened first", kind: "reject_once" },
      { optionId: "acknowledge", name: ACKNOWLEDGE, kind: "allow_once" },
    ]);
    const announced = second.updates.map((u) => u.update).filter((u) => u.toolCallId === gate.toolCallId);
    assert.equal(announced[0].sessionUpdate, "tool_call", "the gate's call is announced before it asks");
    await second.agent.notify(acp.methods.agent.session.cancel, { sessionId });
    return { outcome: { outcome: "cancelled" } };
  });
  const cancelledFrom = second.updates.length;
  const cancelled = await prompt(second.agent, sessionId, "Is milk on the list now?");
  assert.equal(cancelled.stopReason, "cancelled");
  // The gate's call is closed too: no client keeps it pending.
  const gateCancelled = second.updates.slice(cancelledFrom).map((u) => u.update).filter((u) => u.sessionUpdate === "tool_call_update");
  assert.equal(gateCancelled.length, 1, "the cancelled gate's call is closed");
  assert.equal(gateCancelled[0].status, "failed");
  assert.match(gateCancelled[0].title, /^Cancelled, not acknowledged: the result of `.*` is unknown$/);
  answers.push((params) => selected("not-now"));
  const declinedFrom = second.updates.length;
  const refused = await prompt(second.agent, sessionId, "Is milk on the list now?");
  assert.equal(refused.stopReason, "end_turn", "the person declined: not the agent's refusal");
  assert.match(agentText(second.updates.slice(declinedFrom)), /Nothing was sent to the model: the conversation waits until you acknowledge/);
  const gateEnd = second.updates.slice(declinedFrom).map((u) => u.update).find((u) => u.sessionUpdate === "tool_call_update");
  assert.equal(gateEnd.status, "failed");
  assert.match(gateEnd.title, /^Not acknowledged yet/);
  answers.push((params) => selected("check-first"));
  assert.equal((await prompt(second.agent, sessionId, "Is milk on the list now?")).stopReason, "end_turn");
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

test("a client advertising form elicitation gets the gate as a form: decline ends the turn, cancel cancels, only the explicit choice opens it", async () => {
  const dirs = freshDirs();
  const command = `echo milk >> shopping.txt && ${KILL_SERVER}`;
  const mock = await startMockModel([
    { type: "calls", text: ["I'll add it."], calls: [{ call_id: "call_1", command }] },
    { type: "text", deltas: ["Milk is on the list."] },
  ]);
  const first = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: (params) => selected(option(params, "allow_once")) });
  await initialize(first.agent);
  const { sessionId } = await first.agent.request(acp.methods.agent.session.new, { cwd: dirs.workspace, mcpServers: [] });
  prompt(first.agent, sessionId, "Add milk to shopping.txt.").catch(() => {});
  assert.equal((await first.exited).signal, "SIGKILL");

  const answers = [];
  const second = startServer({
    ...dirs,
    baseUrl: mock.baseUrl,
    onPermission: () => assert.fail("a client with form elicitation is asked through elicitation/create"),
    onElicitation: (params) => answers.shift()(params),
  });
  await initialize(second.agent, { elicitation: { form: {} } });
  await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: dirs.workspace, mcpServers: [] });
  const call = second.updates.map((u) => u.update).find((u) => u.sessionUpdate === "tool_call");
  const requestsBefore = (await mock.requests()).length;
  const acks = () => journalKinds(dirs.home).filter((k) => k === "recovery_ack").length;

  // Declined → end_turn; cancelled → cancelled; accepted without the explicit choice → end_turn.
  answers.push((params) => {
    assert.equal(params.mode, "form");
    assert.equal(params.sessionId, sessionId);
    assert.equal(params.toolCallId, `${call.toolCallId.split("/")[0]}/acknowledge`, "the gate's own call");
    assert.ok(params.message.includes(command) && params.message.includes(UNKNOWN_OUTPUT));
    assert.deepEqual(params.requestedSchema.required, ["answer"]);
    assert.deepEqual(params.requestedSchema.properties.answer.oneOf, [
      { const: "acknowledge", title: ACKNOWLEDGE },
      { const: "not-now", title: "Not now" },
    ]);
    assert.equal(params.requestedSchema.properties.answer.default, undefined, "no default answer");
    return { action: "decline" };
  });
  assert.equal((await prompt(second.agent, sessionId, "Is milk on the list now?")).stopReason, "end_turn");
  answers.push(() => ({ action: "cancel" }));
  assert.equal((await prompt(second.agent, sessionId, "Is milk on the list now?")).stopReason, "cancelled");
  answers.push(() => ({ action: "accept", content: { answer: "not-now" } }));
  assert.equal((await prompt(second.agent, sessionId, "Is milk on the list now?")).stopReason, "end_turn");
  answers.push(() => ({ action: "accept", content: {} }));
  assert.equal((await prompt(second.agent, sessionId, "Is milk on the list now?")).stopReason, "end_turn");
  assert.equal((await mock.requests()).length, requestsBefore, "nothing was sent to the model");
  assert.equal(acks(), 0, "nothing was acknowledged");

  // The explicit choice → the recovery_ack is on file and the prompt goes on.
  answers.push(() => ({ action: "accept", content: { answer: "acknowledge" } }));
  const answered = await prompt(second.agent, sessionId, "Is milk on the list now?");
  assert.equal(answered.stopReason, "end_turn");
  assert.equal(acks(), 1);
  const requests = await mock.requests();
  assert.equal(requests.length, requestsBefore + 1);
  const input = JSON.stringify(requests.at(-1).body.input);
  assert.equal(input.split("Is milk on the list now?").length - 1, 1, "the refused questions were never recorded");
  assert.equal(readFileSync(join(dirs.workspace, "shopping.txt"), "utf8"), "milk\n", "nothing ran again");
  await second.stop();
  mock.stop();
});

/** The record kinds of every journal under `home`, in file order. */
/** Resolves once the supervisor's evidence record of a call is on file under `home`. */
async function evidenceOnFile(home) {
  for (;;) {
    const found = readdirSync(home, { recursive: true }).some((f) => /\.evidence\/turn-\d+\.call-\d+\.json$/.test(String(f)));
    if (found) return;
    await new Promise((ok) => setImmediate(ok));
  }
}

function journalKinds(home) {
  return readdirSync(home, { recursive: true })
    .filter((f) => String(f).endsWith(".jsonl"))
    .flatMap((f) => readFileSync(join(home, String(f)), "utf8").split("\n").filter(Boolean))
    .map((line) => JSON.parse(line).kind);
}

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
    const tool = server.updates
      .map((u) => u.update)
      .filter((u) => u.sessionUpdate.startsWith("tool_call") && (u.sessionUpdate === "tool_call" || u.status));
    // `pending` is ACP's default status, left out on the wire. (Live output
    // updates carry content only; see the live output test.)
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

const contentText = (update) => (update.content ?? []).filter((c) => c.type === "content").map((c) => c.content.text).join("");

test("an edit asks with kind edit and the whole file's diff, is applied, and loads with its diff", async () => {
  const dirs = freshDirs();
  const file = join(dirs.workspace, "shopping.txt");
  writeFileSync(file, "bread\nbutter\n");
  const args = JSON.stringify({ path: "shopping.txt", old_text: "butter\n", new_text: "butter\nmilk\n" });
  const mock = await startMockModel([
    { type: "named_call", call_id: "call_1", name: "edit_file", arguments: args },
    { type: "text", deltas: ["Milk added."] },
  ]);
  const asked = [];
  const server = startServer({
    ...dirs,
    baseUrl: mock.baseUrl,
    onPermission: (params) => {
      asked.push(params);
      return selected(option(params, "allow_once"));
    },
  });
  const diff = { type: "diff", path: file, oldText: "bread\nbutter\n", newText: "bread\nbutter\nmilk\n" };
  let sessionId;
  try {
    await initialize(server.agent);
    ({ sessionId } = await server.agent.request(acp.methods.agent.session.new, { cwd: dirs.workspace, mcpServers: [] }));
    const answer = await prompt(server.agent, sessionId, "Add milk after butter.");
    assert.equal(answer.stopReason, "end_turn");
    assert.equal(asked.length, 1);
    const question = asked[0].toolCall;
    assert.equal(question.kind, "edit");
    assert.equal(question.title, "edit_file shopping.txt");
    assert.deepEqual(question.content, [diff]);
    assert.deepEqual(question.locations, [{ path: file }]);
    assert.deepEqual(asked[0].options.map((o) => o.name), [
      "Apply this edit",
      "Do not apply it",
      "Always allow edits of `shopping.txt` in this session",
      "Always refuse edits of `shopping.txt` in this session",
    ]);
    const tool = server.updates.map((u) => u.update).filter((u) => u.sessionUpdate.startsWith("tool_call"));
    assert.equal(tool[0].sessionUpdate, "tool_call");
    assert.equal(tool[0].kind, "edit");
    assert.deepEqual(tool[0].content, [diff]);
    const result = tool.at(-1);
    assert.equal(result.status, "completed");
    assert.equal(result.kind, "edit");
    assert.deepEqual(result.content[0], diff);
    assert.match(contentText(result), /^Edited .*shopping\.txt/);
    assert.deepEqual(result.locations, [{ path: file }]);
    assert.equal(readFileSync(file, "utf8"), "bread\nbutter\nmilk\n");
  } finally {
    await server.stop();
  }

  // Loaded from the journal: the call's own old_text → new_text.
  const loaded = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("no permission expected") });
  try {
    await initialize(loaded.agent);
    await loaded.agent.request(acp.methods.agent.session.load, { sessionId, cwd: dirs.workspace, mcpServers: [] });
    const call = loaded.updates.map((u) => u.update).find((u) => u.sessionUpdate === "tool_call");
    assert.equal(call.kind, "edit");
    assert.equal(call.status, "completed");
    assert.deepEqual(call.content[0], { type: "diff", path: file, oldText: "butter\n", newText: "butter\nmilk\n" });
    assert.deepEqual(call.locations, [{ path: file }]);
  } finally {
    await loaded.stop();
    mock.stop();
  }
});

test("session/list is advertised and lists Mino's sessions with titles, a cwd filter and cursor paging", async () => {
  const dirs = freshDirs();
  const other = join(dirs.base, "other");
  mkdirSync(other);
  const mock = await startMockModel([{ type: "text", deltas: ["Noted."] }]);
  const server = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("no permission expected") });
  try {
    const init = await initialize(server.agent);
    assert.deepEqual(init.agentCapabilities.sessionCapabilities, { list: {}, resume: {}, close: {}, fork: {} });
    const newSession = (cwd) => server.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    const { sessionId: titled } = await newSession(dirs.workspace);
    assert.equal((await prompt(server.agent, titled, "Plan the garden\nwith details")).stopReason, "end_turn");
    const { sessionId: elsewhere } = await newSession(other);
    const list = (params) => server.agent.request(acp.methods.agent.session.list, params);

    const mine = await list({ cwd: dirs.workspace });
    assert.deepEqual(mine.sessions.map((s) => s.sessionId), [titled]);
    assert.equal(mine.sessions[0].title, "Plan the garden");
    assert.equal(mine.sessions[0].cwd, dirs.workspace);
    assert.ok(!Number.isNaN(Date.parse(mine.sessions[0].updatedAt)), mine.sessions[0].updatedAt);
    assert.equal(mine.sessions[0]._meta.mino.turns, 1);
    assert.equal(mine.nextCursor, undefined);
    const all = await list({});
    assert.deepEqual(new Set(all.sessions.map((s) => s.sessionId)), new Set([titled, elsewhere]));

    // 50 a page: 51 more sessions in `other` make two pages there.
    for (let i = 0; i < 51; i++) await newSession(other);
    const first = await list({ cwd: other });
    assert.equal(first.sessions.length, 50);
    assert.ok(first.nextCursor);
    const second = await list({ cwd: other, cursor: first.nextCursor });
    assert.equal(second.sessions.length, 2);
    assert.equal(second.nextCursor, undefined);
    const ids = new Set([...first.sessions, ...second.sessions].map((s) => s.sessionId));
    assert.equal(ids.size, 52);
    assert.ok(ids.has(elsewhere));
    await assert.rejects(list({ cwd: "relative/dir" }), /absolute/);
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("a command's output is shown live, before its result", async () => {
  const dirs = freshDirs();
  // Prints, then waits for the test to see that output live, then prints again.
  const command = "echo one; while [ ! -e go ]; do sleep 0.05; done; echo two";
  const mock = await startMockModel([
    { type: "calls", calls: [{ call_id: "call_1", command }] },
    { type: "text", deltas: ["Both printed."] },
  ]);
  const server = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: (p) => selected(option(p, "allow_once")) });
  try {
    await initialize(server.agent);
    const { sessionId } = await server.agent.request(acp.methods.agent.session.new, { cwd: dirs.workspace, mcpServers: [] });
    const answered = prompt(server.agent, sessionId, "Print twice.");
    const live = (u) => u.update.sessionUpdate === "tool_call_update" && !u.update.status && contentText(u.update).includes("one");
    await server.waitFor((updates) => updates.some(live));
    const shown = server.updates.find(live).update;
    assert.equal(contentText(shown), "one\n", "the first line, shown while the command still runs");
    writeFileSync(join(dirs.workspace, "go"), "");
    assert.equal((await answered).stopReason, "end_turn");
    const result = server.updates.map((u) => u.update).filter((u) => u.sessionUpdate === "tool_call_update").at(-1);
    assert.equal(result.status, "completed");
    assert.equal(contentText(result), "one\ntwo\n");
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("a line over 8 MiB is answered with an error naming the bound, and the next request is served", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([]);
  const server = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("no permission expected") });
  try {
    await initialize(server.agent);
    const huge = JSON.stringify({
      jsonrpc: "2.0",
      id: "huge",
      method: "session/new",
      params: { cwd: dirs.workspace, mcpServers: [], _meta: { padding: "x".repeat(9 * 1024 * 1024) } },
    });
    await new Promise((ok, fail) => server.child.stdin.write(huge + "\n", (e) => (e ? fail(e) : ok())));
    const created = await server.agent.request(acp.methods.agent.session.new, { cwd: dirs.workspace, mcpServers: [] });
    assert.ok(created.sessionId, "the server read on");
    const errors = server.transcript.filter((t) => t.direction === "agent→client" && t.message.error).map((t) => t.message);
    assert.equal(errors.length, 1);
    assert.equal(errors[0].id, null);
    assert.equal(errors[0].error.code, -32600);
    assert.match(errors[0].error.message, /at most 8388608 bytes \(8 MiB\) per line/);
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
    assert.deepEqual(asked[0].options.map((o) => o.kind), ["allow_once", "reject_once", "allow_always", "reject_always"]);
    assert.equal(option(asked[0], "allow_always"), "allow-always");
    // Status changes only (live output updates carry content alone).
    const tool = server.updates
      .map((u) => u.update)
      .filter((u) => u.sessionUpdate.startsWith("tool_call") && (u.sessionUpdate === "tool_call" || u.status));
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

/** Every journal record under `home`, in file order. */
function journalRecords(home) {
  return readdirSync(home, { recursive: true })
    .filter((f) => String(f).endsWith(".jsonl"))
    .flatMap((f) => readFileSync(join(home, String(f)), "utf8").split("\n").filter(Boolean))
    .map((line) => JSON.parse(line));
}

const newSession = (server, cwd) => server.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
const setModel = (server, sessionId, value) =>
  server.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: "model", value });
/** The agent's text sent since `from` (an index into `updates`). */
/**
 * The models a session opened with: the answer's, or, when the service's list
 * missed the opening's 300 ms wait (a busy machine), the `config_option_update`
 * that follows with it.
 */
async function offeredAtOpen(server, created) {
  const answered = created.configOptions[0].options.map((o) => o.value);
  if (answered.length > 1) return answered;
  const isUpdate = (n) => n.sessionId === created.sessionId && n.update.sessionUpdate === "config_option_update";
  await server.waitFor((u) => u.some(isUpdate));
  return server.updates.find(isUpdate).update.configOptions[0].options.map((o) => o.value);
}
const textSince = (server, from) => agentText(server.updates.slice(from));
/** The text of every model request's input so far. */
const inputs = async (mock) => (await mock.requests()).map((r) => JSON.stringify(r.body.input ?? r.body.messages));

test("the model is a session config option: the service's models offered, the one chosen asked next and kept on load", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([
    { type: "calls", calls: [{ call_id: "call_1", command: "echo hi" }] },
    { type: "text", deltas: ["Said hi."] },
    { type: "text", deltas: ["From the large model."] },
  ]);
  let sessionId;
  let refusedWhileRunning;
  const server = startServer({
    ...dirs,
    baseUrl: mock.baseUrl,
    // Choosing a model while the turn waits on this approval is refused.
    onPermission: async (params) => {
      refusedWhileRunning = await setModel(server, sessionId, "mock-model-large").then(
        () => null,
        (e) => e,
      );
      return selected(option(params, "allow_once"));
    },
  });
  try {
    await initialize(server.agent);
    const created = await newSession(server, dirs.workspace);
    sessionId = created.sessionId;
    assert.deepEqual(created.configOptions.map((o) => [o.id, o.type, o.category, o.currentValue]), [
      ["model", "select", "model", "mock-model"],
      ["mode", "select", "mode", "rules"],
      ["sandbox", "select", "mode", "off"],
    ]);
    assert.deepEqual(await offeredAtOpen(server, created), ["mock-model", "mock-model-large"]);

    for (const value of ["no-such-model", "", "x".repeat(100000)]) {
      await assert.rejects(setModel(server, sessionId, value), (e) => {
        assert.equal(e.code, -32602);
        assert.match(e.message, /choose one of: mock-model, mock-model-large$/);
        assert.ok(e.message.length < 400, "a huge value is not echoed whole");
        return true;
      });
    }
    assert.equal((await prompt(server.agent, sessionId, "Say hi.")).stopReason, "end_turn");
    assert.equal(refusedWhileRunning?.code, -32602, "a model choice during a turn is refused");
    assert.match(refusedWhileRunning.message, /the model was not changed: turn turn-1 is still running/);

    const chosen = await setModel(server, sessionId, "mock-model-large");
    assert.equal(chosen.configOptions[0].currentValue, "mock-model-large");
    assert.equal((await prompt(server.agent, sessionId, "Again.")).stopReason, "end_turn");
    assert.deepEqual((await mock.requests()).map((r) => r.body.model), ["mock-model", "mock-model", "mock-model-large"]);
    assert.deepEqual(
      journalRecords(dirs.home).filter((r) => r.kind === "model").map((r) => r.model),
      ["mock-model-large"],
      "one choice journaled: the refused ones wrote nothing",
    );
  } finally {
    await server.stop();
  }

  // A later server loads the session with the model it chose.
  const again = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("nothing asks") });
  try {
    await initialize(again.agent);
    const loaded = await again.agent.request(acp.methods.agent.session.load, {
      sessionId,
      cwd: dirs.workspace,
      mcpServers: [],
    });
    assert.equal(loaded.configOptions[0].currentValue, "mock-model-large");
    await again.waitFor((u) => u.some((n) => n.update.sessionUpdate === "available_commands_update"));
  } finally {
    await again.stop();
    mock.stop();
  }
});

test("/compact summarises the conversation on demand: a compaction record, and the next request starts with the summary", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([
    { type: "text", deltas: ["Paris."] },
    { type: "text", deltas: ["They asked for the capital of France: Paris."] },
    { type: "text", deltas: ["Rome."] },
  ]);
  const server = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("nothing asks") });
  try {
    await initialize(server.agent);
    const { sessionId } = await newSession(server, dirs.workspace);
    await server.waitFor((u) => u.some((n) => n.update.sessionUpdate === "available_commands_update"));
    const commands = server.updates.find((n) => n.update.sessionUpdate === "available_commands_update");
    assert.deepEqual(commands.update.availableCommands.map((c) => c.name), ["compact", "rules", "revoke", "mode", "sandbox", "rewind"]);

    // On an empty session: nothing to compact, no model request.
    let from = server.updates.length;
    assert.equal((await prompt(server.agent, sessionId, "/compact")).stopReason, "end_turn");
    assert.match(textSince(server, from), /^\[Mino: the conversation was not compacted: nothing to compact/);
    assert.equal((await mock.requests()).length, 0);

    assert.equal((await prompt(server.agent, sessionId, "Capital of France?")).stopReason, "end_turn");
    from = server.updates.length;
    assert.equal((await prompt(server.agent, sessionId, "/compact")).stopReason, "end_turn");
    assert.equal(
      textSince(server, from),
      "[Mino: the conversation was compacted (1 earlier turns summarised); the model now reads the summary instead of them.]",
    );
    const compactions = journalRecords(dirs.home).filter((r) => r.kind === "compaction");
    assert.deepEqual(compactions.map((r) => [r.through_turn_id, r.summary]), [
      ["turn-1", "They asked for the capital of France: Paris."],
    ]);

    assert.equal((await prompt(server.agent, sessionId, "Capital of Italy?")).stopReason, "end_turn");
    const requests = await mock.requests();
    assert.equal(requests.length, 3);
    const next = requests[2].body.input;
    assert.match(JSON.stringify(next[0]), /Mino runtime notice: the earlier conversation was compacted/);
    assert.match(JSON.stringify(next[0]), /They asked for the capital of France: Paris\./);
    assert.ok(!JSON.stringify(next).includes("Capital of France?"), "the summarised turn is not sent again");
    assert.ok(!(await inputs(mock)).some((i) => i.includes("/compact")), "the command never reached the model");
    assert.deepEqual(
      journalRecords(dirs.home).filter((r) => r.kind === "user").map((r) => r.text),
      ["Capital of France?", "Capital of Italy?"],
      "a command is no user turn",
    );
    from = server.updates.length;
    assert.equal((await prompt(server.agent, sessionId, "/compact now")).stopReason, "end_turn");
    assert.match(textSince(server, from), /\/compact takes nothing after it, so nothing was done/);
    assert.equal((await mock.requests()).length, 3);
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("session/cancel during /compact answers cancelled at once: no compaction record, and the next request holds the old turns", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([
    { type: "text", deltas: ["Paris."] },
    // The summary request: the model starts and then goes silent.
    { type: "stall", deltas: ["They asked"] },
    { type: "text", deltas: ["Rome."] },
  ]);
  const server = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("nothing asks") });
  try {
    await initialize(server.agent);
    const { sessionId } = await newSession(server, dirs.workspace);
    assert.equal((await prompt(server.agent, sessionId, "Capital of France?")).stopReason, "end_turn");
    const from = server.updates.length;
    const compacting = prompt(server.agent, sessionId, "/compact");
    await mock.waitForRequests(2);
    await server.agent.notify(acp.methods.agent.session.cancel, { sessionId });
    assert.equal((await compacting).stopReason, "cancelled");
    assert.equal(
      textSince(server, from),
      "[Mino: the conversation was not compacted: cancelled; the conversation was left as it was]",
    );
    assert.deepEqual(journalRecords(dirs.home).filter((r) => r.kind === "compaction"), []);

    // The session is free, and its next request still holds the old turn.
    assert.equal((await prompt(server.agent, sessionId, "Capital of Italy?")).stopReason, "end_turn");
    const requests = await mock.requests();
    assert.equal(requests.length, 3);
    const next = JSON.stringify(requests[2].body.input);
    assert.ok(next.includes("Capital of France?") && next.includes("Paris."), next);
    assert.ok(!next.includes("earlier conversation was compacted"), next);
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("a model service hanging on its list does not hold up session/new: configured models first, the service's list as a config_option_update", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([]);
  await mock.holdModels(true);
  const server = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("nothing asks") });
  try {
    await initialize(server.agent);
    const created = await newSession(server, dirs.workspace);
    // Answered while the service's list is still held unanswered at the mock.
    assert.ok((await mock.modelsWaiting()) >= 1, "the list request still waits at the model service");
    assert.deepEqual(created.configOptions[0].options.map((o) => o.value), ["mock-model"]);
    assert.equal(created.configOptions[0].currentValue, "mock-model");

    await mock.holdModels(false);
    await server.waitFor((u) => u.some((n) => n.update.sessionUpdate === "config_option_update"));
    const update = server.updates.find((n) => n.update.sessionUpdate === "config_option_update");
    assert.equal(update.sessionId, created.sessionId);
    // The full set, as ACP sends it: the modes as they were.
    assert.deepEqual(update.update.configOptions.map((o) => [o.id, o.currentValue]), [
      ["model", "mock-model"],
      ["mode", "rules"],
      ["sandbox", "off"],
    ]);
    assert.deepEqual(update.update.configOptions[0].options.map((o) => o.value), ["mock-model", "mock-model-large"]);
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("/rules lists a rule granted with allow_always; /revoke removes it, so the same command asks again", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([
    { type: "calls", calls: [{ call_id: "call_1", command: "echo hello" }] },
    { type: "text", deltas: ["Said."] },
    { type: "calls", calls: [{ call_id: "call_1", command: "echo hello" }] },
    { type: "text", deltas: ["Said again."] },
  ]);
  const asked = [];
  const server = startServer({
    ...dirs,
    baseUrl: mock.baseUrl,
    onPermission: (params) => {
      asked.push(params);
      return selected(option(params, asked.length === 1 ? "allow_always" : "allow_once"));
    },
  });
  const command = async (text) => {
    const from = server.updates.length;
    assert.equal((await prompt(server.agent, sessionId, text)).stopReason, "end_turn");
    return textSince(server, from);
  };
  let sessionId;
  try {
    await initialize(server.agent);
    sessionId = (await newSession(server, dirs.workspace)).sessionId;
    assert.match(await command("/rules"), /^No approval rules are in force in this session/);
    assert.equal((await prompt(server.agent, sessionId, "Say hello.")).stopReason, "end_turn");
    assert.equal(asked.length, 1);

    const listed = await command("/rules");
    const [, id] = /`(rule-[0-9a-f]+)`: allow prefix "echo hello" \(this session\)/.exec(listed) ?? [];
    assert.ok(id, listed);
    const granted = journalRecords(dirs.home).filter((r) => r.kind === "rule");
    assert.deepEqual(granted.map((r) => r.rule.id), [id]);

    // Hostile: no id, an unknown id, a huge id: each says so, lists the rules, revokes nothing.
    assert.match(await command("/revoke"), new RegExp(`say which rule to revoke: /revoke <rule-id>[^]*\`${id}\``));
    assert.match(await command("/revoke rule-0000"), new RegExp(`no rule with id \`rule-0000\`[^]*\`${id}\``));
    const huge = await command(`/revoke ${"r".repeat(200000)}`);
    assert.match(huge, /\(200000 bytes\)/);
    assert.ok(huge.length < 1000, "a huge id is not echoed whole");
    assert.equal(journalRecords(dirs.home).filter((r) => r.kind === "rule_revoke").length, 0);

    assert.match(await command(`/revoke ${id}`), new RegExp(`^Revoked rule \`${id}\` \\(prefix "echo hello"\\)`));
    assert.deepEqual(journalRecords(dirs.home).filter((r) => r.kind === "rule_revoke").map((r) => r.id), [id]);
    assert.match(await command("/rules"), /^No approval rules are in force/);

    assert.equal((await prompt(server.agent, sessionId, "Say hello again.")).stopReason, "end_turn");
    assert.equal(asked.length, 2, "the revoked rule no longer answers for the person");
    assert.equal(asked[1].toolCall.title, "echo hello");
    const sent = await inputs(mock);
    assert.ok(!sent.some((i) => i.includes("/rules") || i.includes("/revoke")), "no command reached the model");
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("an unknown /word is a prompt like any other: it goes to the model", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([{ type: "text", deltas: ["There is no /foo here."] }]);
  const server = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("nothing asks") });
  try {
    await initialize(server.agent);
    const { sessionId } = await newSession(server, dirs.workspace);
    const from = server.updates.length;
    assert.equal((await prompt(server.agent, sessionId, "/foo bar")).stopReason, "end_turn");
    assert.equal(textSince(server, from), "There is no /foo here.");
    const sent = await inputs(mock);
    assert.equal(sent.length, 1);
    assert.ok(sent[0].includes("/foo bar"), sent[0]);
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("session/load of a session Mino does not have answers -32002, one open in another Mino -32602, each saying what to do", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([]);
  const first = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("nothing asks") });
  const second = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("nothing asks") });
  try {
    await initialize(first.agent);
    await initialize(second.agent);
    const missing = "0f0f0f0f-0000-4000-8000-000000000000";
    await assert.rejects(
      second.agent.request(acp.methods.agent.session.load, { sessionId: missing, cwd: dirs.workspace, mcpServers: [] }),
      (e) => {
        assert.equal(e.code, -32002, JSON.stringify(e));
        assert.match(e.message, new RegExp(`session ${missing} does not exist.*session/list.*session/new`));
        assert.deepEqual(e.data, { sessionId: missing });
        return true;
      },
    );
    const { sessionId } = await newSession(first, dirs.workspace);
    await assert.rejects(
      second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: dirs.workspace, mcpServers: [] }),
      (e) => {
        assert.equal(e.code, -32602, JSON.stringify(e));
        assert.match(e.message, /is open in another Mino process; close it there first/);
        return true;
      },
    );
  } finally {
    await first.stop();
    await second.stop();
    mock.stop();
  }
});

test("a text block and a resource_link reach the model with a space between them, not run together", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([{ type: "text", deltas: ["Read."] }]);
  const server = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("nothing asks") });
  try {
    await initialize(server.agent);
    const { sessionId } = await newSession(server, dirs.workspace);
    const answer = await server.agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [
        { type: "text", text: "Read these" },
        { type: "resource_link", name: "notes.md", uri: "file:///tmp/notes.md" },
      ],
    });
    assert.equal(answer.stopReason, "end_turn");
    const sent = await inputs(mock);
    assert.ok(sent[0].includes("Read these [notes.md](file:///tmp/notes.md)"), sent[0]);
  } finally {
    await server.stop();
    mock.stop();
  }
});

/** The protocol's approval and sandbox modes (server/protocol: `ApprovalMode::ALL`, `SandboxMode::ALL`). */
const APPROVAL_MODES = ["ask", "rules", "sandboxed-auto", "plan"];
const SANDBOX_MODES = ["off", "read-only", "workspace-write"];
const ofKind = (server, from, kind) => server.updates.slice(from).map((u) => u.update).filter((u) => u.sessionUpdate === kind);
const optionValue = (options, id) => options.find((o) => o.id === id).currentValue;

test("the approval mode and the sandbox are config options (category mode) and classic modes; every change is told, and the next call follows it", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([
    { type: "calls", calls: [{ call_id: "call_1", command: "echo sandboxed > proof.txt" }] },
    { type: "text", deltas: ["Done."] },
  ]);
  const server = startServer({
    ...dirs,
    baseUrl: mock.baseUrl,
    onPermission: () => assert.fail("sandboxed-auto with a sandbox runs the command without asking"),
  });
  try {
    await initialize(server.agent);
    const created = await newSession(server, dirs.workspace);
    const { sessionId } = created;
    const mode = created.configOptions.find((o) => o.id === "mode");
    assert.equal(mode.category, "mode");
    assert.deepEqual(mode.options.map((o) => o.value), APPROVAL_MODES);
    assert.equal(mode.currentValue, "rules");
    const sandbox = created.configOptions.find((o) => o.id === "sandbox");
    assert.equal(sandbox.category, "mode");
    assert.deepEqual(sandbox.options.map((o) => o.value), SANDBOX_MODES);
    assert.equal(created.modes.currentModeId, "rules");
    assert.deepEqual(created.modes.availableModes.map((m) => m.id), APPROVAL_MODES);

    // Through session/set_config_option: the answer holds every option, and
    // a config_option_update and a current_mode_update tell the change.
    let from = server.updates.length;
    const asked = await server.agent.request(acp.methods.agent.session.setConfigOption, {
      sessionId,
      configId: "mode",
      value: "ask",
    });
    assert.deepEqual(asked.configOptions.map((o) => o.id), ["model", "mode", "sandbox"]);
    assert.equal(optionValue(asked.configOptions, "mode"), "ask");
    await server.waitFor(() => ofKind(server, from, "current_mode_update").length === 1);
    assert.equal(ofKind(server, from, "current_mode_update")[0].currentModeId, "ask");
    assert.equal(optionValue(ofKind(server, from, "config_option_update")[0].configOptions, "mode"), "ask");

    // A value that is none of the modes is refused, naming them; nothing changes.
    await assert.rejects(
      server.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: "mode", value: "yolo" }),
      (e) => e.code === -32602 && /choose one of: ask, rules, sandboxed-auto, plan/.test(e.message),
    );
    await assert.rejects(
      server.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "yolo" }),
      (e) => e.code === -32602 && /choose one of/.test(e.message),
    );

    // Through the classic session/set_mode.
    from = server.updates.length;
    await server.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "sandboxed-auto" });
    // Both updates are told, the config options first: wait for the second.
    await server.waitFor(() => ofKind(server, from, "current_mode_update").length === 1);
    assert.equal(optionValue(ofKind(server, from, "config_option_update")[0].configOptions, "mode"), "sandboxed-auto");
    assert.equal(ofKind(server, from, "current_mode_update")[0].currentModeId, "sandboxed-auto");

    // Through the /sandbox command: its message says so, and the update tells the editor.
    from = server.updates.length;
    assert.equal((await prompt(server.agent, sessionId, "/sandbox workspace-write")).stopReason, "end_turn");
    await server.waitFor(() => ofKind(server, from, "config_option_update").length === 1);
    assert.match(textSince(server, from), /Approval mode is now sandboxed-auto, sandbox workspace-write/);
    assert.equal(optionValue(ofKind(server, from, "config_option_update")[0].configOptions, "sandbox"), "workspace-write");
    assert.equal((await mock.requests()).length, 0, "a command is no prompt for the model");

    // The next command runs in the sandbox without asking (onPermission fails the test).
    from = server.updates.length;
    assert.equal((await prompt(server.agent, sessionId, "Write the proof.")).stopReason, "end_turn");
    const result = ofKind(server, from, "tool_call_update").at(-1);
    assert.equal(result.status, "completed");
    assert.equal(readFileSync(join(dirs.workspace, "proof.txt"), "utf8"), "sandboxed\n");
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("session/close lets the session go (another Mino can open it); session/resume opens it without replaying it", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([
    { type: "text", deltas: ["First answer."] },
    { type: "text", deltas: ["Second answer."] },
  ]);
  const first = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("nothing asks") });
  const second = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("nothing asks") });
  try {
    const init = await initialize(first.agent);
    assert.deepEqual(init.agentCapabilities.sessionCapabilities, { list: {}, resume: {}, close: {}, fork: {} });
    await initialize(second.agent);
    const { sessionId } = await newSession(first, dirs.workspace);
    assert.equal((await prompt(first.agent, sessionId, "Remember the first question.")).stopReason, "end_turn");

    // Open in the first server: the second cannot resume it.
    const resume = () => second.agent.request(acp.methods.agent.session.resume, { sessionId, cwd: dirs.workspace, mcpServers: [] });
    await assert.rejects(resume(), (e) => e.code === -32602 && /open in another Mino process/.test(e.message));

    assert.deepEqual(await first.agent.request(acp.methods.agent.session.close, { sessionId }), {});
    await assert.rejects(prompt(first.agent, sessionId, "Still there?"), (e) => e.code === -32602 && /not open here/.test(e.message));
    await assert.rejects(
      first.agent.request(acp.methods.agent.session.close, { sessionId }),
      (e) => e.code === -32602,
      "closing a session that is not open is refused",
    );

    const from = second.updates.length;
    const resumed = await resume();
    assert.deepEqual(resumed.configOptions.map((o) => o.id), ["model", "mode", "sandbox"]);
    assert.equal(resumed.modes.currentModeId, "rules");
    await second.waitFor(() => ofKind(second, from, "available_commands_update").length === 1);
    assert.deepEqual(ofKind(second, from, "user_message_chunk"), [], "resume replays nothing");
    assert.equal(textSince(second, from), "", "resume replays nothing");
    assert.equal((await prompt(second.agent, sessionId, "And now?")).stopReason, "end_turn");
    const requests = await mock.requests();
    assert.equal(requests.length, 2);
    const input = JSON.stringify(requests[1].body.input);
    assert.ok(input.includes("Remember the first question.") && input.includes("First answer."), "the conversation goes on");
  } finally {
    await first.stop();
    await second.stop();
    mock.stop();
  }
});

test("usage_update after each response: the tokens the service reported, against the model's context window", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([
    { type: "calls", text: ["Let me look."], calls: [{ call_id: "call_1", command: "echo hi" }] },
    { type: "text", deltas: ["It said hi."] },
  ]);
  const server = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: (params) => selected(option(params, "allow_once")) });
  try {
    await initialize(server.agent);
    const { sessionId } = await newSession(server, dirs.workspace);
    assert.equal((await prompt(server.agent, sessionId, "Say hi.")).stopReason, "end_turn");
    const kinds = server.updates.map((u) => u.update.sessionUpdate);
    const usages = server.updates.map((u) => u.update).filter((u) => u.sessionUpdate === "usage_update");
    assert.equal(usages.length, 2, "one per response");
    // The first response's usage comes before its call runs, the second's after the call's result.
    assert.ok(kinds.indexOf("usage_update") < kinds.indexOf("tool_call"));
    assert.ok(kinds.lastIndexOf("usage_update") > kinds.lastIndexOf("tool_call_update"));
    for (const usage of usages) {
      const mino = usage._meta.mino;
      assert.ok(mino.inputTokens > 0 && mino.outputTokens > 0, JSON.stringify(usage));
      assert.equal(usage.used, mino.inputTokens + mino.outputTokens);
      assert.equal(usage.size, 128000, "the default context window: neither the configuration nor the mock names one");
      assert.equal(mino.turnId, "turn-1");
    }
    assert.ok(usages[1].used > usages[0].used, "the second request holds the first response and the call's output");
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("with fs/read_text_file offered, an edit is made to the editor's unsaved text, as the person sees it", async () => {
  const dirs = freshDirs();
  const file = join(dirs.workspace, "shopping.txt");
  writeFileSync(file, "bread\nbutter\n");
  // The editor holds the file with a line the person typed and did not save.
  const unsaved = "bread\nbutter\neggs\n";
  const args = JSON.stringify({ path: "shopping.txt", old_text: "butter\n", new_text: "butter\nmilk\n" });
  const mock = await startMockModel([
    { type: "named_call", call_id: "call_1", name: "edit_file", arguments: args },
    { type: "text", deltas: ["Milk added."] },
  ]);
  const asked = [];
  const reads = [];
  const server = startServer({
    ...dirs,
    baseUrl: mock.baseUrl,
    onPermission: (params) => {
      asked.push(params);
      return selected(option(params, "allow_once"));
    },
    onReadTextFile: (params) => {
      reads.push(params);
      return { content: unsaved };
    },
  });
  try {
    await initialize(server.agent, { fs: { readTextFile: true, writeTextFile: false } });
    const { sessionId } = await newSession(server, dirs.workspace);
    assert.equal((await prompt(server.agent, sessionId, "Add milk after butter.")).stopReason, "end_turn");
    assert.deepEqual(reads.map((r) => [r.sessionId, r.path]), [[sessionId, file]]);
    const question = asked[0].toolCall;
    assert.deepEqual(question.content, [{ type: "diff", path: file, oldText: unsaved, newText: "bread\nbutter\nmilk\neggs\n" }]);
    assert.equal(question.rawInput.fromEditor, true);
    assert.equal(readFileSync(file, "utf8"), "bread\nbutter\nmilk\neggs\n", "the edit of what the person saw, and their line");
    const result = ofKind(server, 0, "tool_call_update").at(-1);
    assert.equal(result.status, "completed");
    assert.match(contentText(result), /open in the person's editor with unsaved changes/);
    const input = JSON.stringify((await mock.requests()).at(-1).body.input);
    assert.match(input, /unsaved changes: the edit was made to the editor's text/, "the model is told too");
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("with fs/read_text_file offered, read_file reads a file open in the editor as the person sees it, unasked", async () => {
  const dirs = freshDirs();
  const file = join(dirs.workspace, "shopping.txt");
  writeFileSync(file, "bread\nbutter\n");
  const unsaved = "bread\nbutter\neggs\n";
  const mock = await startMockModel([
    { type: "named_call", call_id: "call_1", name: "read_file", arguments: JSON.stringify({ path: "shopping.txt" }) },
    { type: "text", deltas: ["Eggs are on it."] },
  ]);
  const asked = [];
  const reads = [];
  const server = startServer({
    ...dirs,
    baseUrl: mock.baseUrl,
    onPermission: (params) => {
      asked.push(params);
      return selected(option(params, "reject_once"));
    },
    onReadTextFile: (params) => {
      reads.push(params);
      return { content: unsaved };
    },
  });
  try {
    await initialize(server.agent, { fs: { readTextFile: true, writeTextFile: false } });
    const { sessionId } = await newSession(server, dirs.workspace);
    assert.equal((await prompt(server.agent, sessionId, "Is there eggs on the list?")).stopReason, "end_turn");
    assert.equal(asked.length, 0, "a read inside the workspace never asks");
    assert.deepEqual(reads.map((r) => [r.sessionId, r.path]), [[sessionId, file]]);
    const input = JSON.stringify((await mock.requests()).at(-1).body.input);
    assert.match(input, /lines 1-3 of 3 \(18 bytes\); as open in the editor, with changes not saved to disk/);
    assert.match(input, /eggs/, "the model reads the person's unsaved line");
    assert.equal(readFileSync(file, "utf8"), "bread\nbutter\n", "a read writes nothing");
  } finally {
    await server.stop();
    mock.stop();
  }
});

// Images: an `image` block reaches the model as an `input_image` with the
// exact bytes; what is not an image is refused by name and nothing is sent.
test("an image block reaches the model with its exact bytes and session/load replays it; a block that is not an image is refused by name", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([{ type: "text", deltas: ["A red dot."] }]);
  const server = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("nothing asks") });
  try {
    await initialize(server.agent);
    const { sessionId } = await newSession(server, dirs.workspace);
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from("red dot pixels")]);
    const notImage = await server.agent
      .request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [
          { type: "text", text: "What is this?" },
          { type: "image", data: Buffer.from("plain words").toString("base64"), mimeType: "image/png" },
        ],
      })
      .then(() => assert.fail("refused"), (e) => e);
    assert.equal(notImage.code, -32602);
    assert.match(notImage.message, /image 1 is not an image Mino can send \(text\); PNG, JPEG, GIF and WebP are accepted/);
    assert.equal((await mock.requests()).length, 0, "nothing reached the model");

    const answer = await server.agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [
        { type: "text", text: "What is this?" },
        { type: "image", data: png.toString("base64"), mimeType: "image/png", uri: "file:///w/dot.png" },
      ],
    });
    assert.equal(answer.stopReason, "end_turn");
    const [request] = await mock.requests();
    const user = request.body.input.find((i) => i.role === "user");
    const image = user.content.find((p) => p.type === "input_image");
    assert.equal(image.image_url, `data:image/png;base64,${png.toString("base64")}`);
    assert.deepEqual(user.content[0], { type: "input_text", text: "What is this?" });
    await server.stop();

    // session/load replays the question with its image, as it was sent.
    const again = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("nothing asks") });
    try {
      await initialize(again.agent);
      await again.agent.request(acp.methods.agent.session.load, { sessionId, cwd: dirs.workspace, mcpServers: [] });
      const asked = again.updates.map((u) => u.update).filter((u) => u.sessionUpdate === "user_message_chunk");
      assert.deepEqual(asked.map((u) => u.content), [
        { type: "text", text: "What is this?" },
        { type: "image", data: png.toString("base64"), mimeType: "image/png" },
      ]);
    } finally {
      await again.stop();
    }
  } finally {
    await server.stop();
    mock.stop();
  }
});
