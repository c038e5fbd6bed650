// `session/fork` and `/rewind` over ACP, driven by the official SDK's client
// against the real mino-server --acp and the mock model.
import { afterEach, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { acp, agentText, freshDirs, initialize, prompt, startMockModel, startServer } from "./harness.mjs";
import { takeSchemaFailures } from "./schema.mjs";
// `session/fork` is unstable in ACP v1: the SDK names it in its unstable entry.
import * as unstable from "@agentclientprotocol/sdk/unstable";

afterEach(() => assert.deepEqual(takeSchemaFailures(), [], "every message Mino sends passes the ACP v1 schema"));

const LIST = "bread\nbutter\njam\n";
const EDITED = "bread\nbutter\nmilk\njam\n";
const addMilk = {
  type: "named_call",
  call_id: "call_1",
  name: "edit_file",
  arguments: JSON.stringify({ path: "shopping.txt", old_text: "butter\n", new_text: "butter\nmilk\n" }),
};
const option = (params, kind) => params.options.find((o) => o.kind === kind).optionId;
const selected = (optionId) => ({ outcome: { outcome: "selected", optionId } });
const textSince = (server, from) => agentText(server.updates.slice(from));
const sessionFiles = (home) =>
  readdirSync(join(home, "sessions")).filter((f) => f.endsWith(".jsonl")).map((f) => join(home, "sessions", f));
const userTexts = (body) =>
  body.input.filter((i) => i.role === "user").flatMap((i) => i.content.map((c) => c.text));

test("session/fork is advertised; the fork holds the conversation so far, the model hears only it, and the old session's file is unchanged", async () => {
  const dirs = freshDirs();
  const mock = await startMockModel([
    { type: "text", deltas: ["Paris."] },
    { type: "text", deltas: ["Lyon is second."] },
    { type: "text", deltas: ["Rome."] },
  ]);
  const server = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("nothing asks") });
  try {
    const init = await initialize(server.agent);
    assert.deepEqual(init.agentCapabilities.sessionCapabilities.fork, {});
    const { sessionId } = await server.agent.request(acp.methods.agent.session.new, { cwd: dirs.workspace, mcpServers: [] });
    assert.equal((await prompt(server.agent, sessionId, "Capital of France?")).stopReason, "end_turn");
    const [oldFile] = sessionFiles(dirs.home);
    const before = readFileSync(oldFile);

    const forked = await server.agent.request(unstable.methods.agent.session.fork, {
      sessionId,
      cwd: dirs.workspace,
      mcpServers: [],
    });
    assert.ok(forked.sessionId && forked.sessionId !== sessionId);
    assert.deepEqual(readFileSync(oldFile), before, "the old session's file is unchanged");
    const forkFile = sessionFiles(dirs.home).find((f) => f.includes(forked.sessionId));
    const header = JSON.parse(readFileSync(forkFile, "utf8").split("\n")[0]);
    assert.deepEqual(header.forked_from, { session_id: sessionId, turn_id: "turn-1" });

    // Both go on apart: the old one asks about Lyon, the fork about Rome.
    assert.equal((await prompt(server.agent, sessionId, "And the second city?")).stopReason, "end_turn");
    assert.equal((await prompt(server.agent, forked.sessionId, "Capital of Italy?")).stopReason, "end_turn");
    const requests = await mock.requests();
    assert.deepEqual(userTexts(requests[2].body), ["Capital of France?", "Capital of Italy?"]);
    assert.ok(!JSON.stringify(requests[2].body).includes("second city"), "the old session's later turn is not the fork's");
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("/rewind shows the plan and asks with the rejecting option first: declined writes nothing, allowed puts the file back", async () => {
  const dirs = freshDirs();
  const file = join(dirs.workspace, "shopping.txt");
  writeFileSync(file, LIST);
  const mock = await startMockModel([addMilk, { type: "text", deltas: ["Milk added."] }]);
  const asked = [];
  let answer = "allow_once";
  const server = startServer({
    ...dirs,
    baseUrl: mock.baseUrl,
    onPermission: (params) => {
      asked.push(params);
      return selected(option(params, answer));
    },
  });
  try {
    await initialize(server.agent);
    const { sessionId } = await server.agent.request(acp.methods.agent.session.new, { cwd: dirs.workspace, mcpServers: [] });
    await prompt(server.agent, sessionId, "Add milk after butter.");
    assert.equal(readFileSync(file, "utf8"), EDITED);
    const commands = server.updates.find((n) => n.update.sessionUpdate === "available_commands_update");
    assert.ok(commands.update.availableCommands.some((c) => c.name === "rewind"));

    // Declined: the plan was shown, nothing written, no rewind on file.
    answer = "reject_once";
    let from = server.updates.length;
    assert.equal((await prompt(server.agent, sessionId, "/rewind")).stopReason, "end_turn");
    const question = asked.at(-1);
    assert.deepEqual(question.options.map((o) => o.kind), ["reject_once", "allow_once"], "declining is first");
    assert.match(textSince(server, from), /Rewind 1 turn\(s\) \(turn-1\):\n- put back: `.*shopping\.txt`/);
    assert.match(textSince(server, from), /Nothing was changed\./);
    assert.equal(readFileSync(file, "utf8"), EDITED);
    const kinds = () => sessionFiles(dirs.home).flatMap((f) => readFileSync(f, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l).kind));
    assert.ok(!kinds().includes("rewind"));

    // Allowed: the file is put back and the outcome said.
    answer = "allow_once";
    from = server.updates.length;
    assert.equal((await prompt(server.agent, sessionId, "/rewind 1")).stopReason, "end_turn");
    assert.equal(readFileSync(file, "utf8"), LIST);
    assert.match(textSince(server, from), /- put back: `.*shopping\.txt`\nRewound 1 turn\(s\)/);
    assert.ok(kinds().includes("rewind_end"));
    const closed = server.updates.map((u) => u.update).filter((u) => u.sessionUpdate === "tool_call_update").at(-1);
    assert.equal(closed.status, "completed");

    // Nothing left to rewind, and a bad count, are said; neither asks.
    const questions = asked.length;
    from = server.updates.length;
    await prompt(server.agent, sessionId, "/rewind");
    assert.match(textSince(server, from), /nothing to rewind that far/);
    from = server.updates.length;
    await prompt(server.agent, sessionId, "/rewind lots");
    assert.match(textSince(server, from), /\/rewind takes a number of turns/);
    assert.equal(asked.length, questions);
    assert.equal((await mock.requests()).length, 2, "no command reached the model");
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("/rewind cancelled by the editor while it asks writes nothing", async () => {
  const dirs = freshDirs();
  const file = join(dirs.workspace, "shopping.txt");
  writeFileSync(file, LIST);
  const mock = await startMockModel([addMilk, { type: "text", deltas: ["Milk added."] }]);
  let rewinding = false;
  const server = startServer({
    ...dirs,
    baseUrl: mock.baseUrl,
    onPermission: (params) => (rewinding ? { outcome: { outcome: "cancelled" } } : selected(option(params, "allow_once"))),
  });
  try {
    await initialize(server.agent);
    const { sessionId } = await server.agent.request(acp.methods.agent.session.new, { cwd: dirs.workspace, mcpServers: [] });
    await prompt(server.agent, sessionId, "Add milk after butter.");
    rewinding = true;
    const from = server.updates.length;
    await prompt(server.agent, sessionId, "/rewind");
    assert.match(textSince(server, from), /Nothing was changed\./);
    assert.equal(readFileSync(file, "utf8"), EDITED);
  } finally {
    await server.stop();
    mock.stop();
  }
});
