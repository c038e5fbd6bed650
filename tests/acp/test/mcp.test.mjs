// MCP servers an editor passes in `session/new` (`mcpServers`), driven by
// the official ACP TypeScript SDK against the real `mino-server --acp`,
// with a real MCP server written with the official Python SDK
// (tests/mcp-servers/mino_test_server.py; scripts/test installs it and sets
// MINO_TEST_MCP_PYTHON and MINO_TEST_MCP_SERVER_PY).
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { afterEach, test } from "node:test";
import assert from "node:assert/strict";
import { acp, agentText, freshDirs, initialize, prompt, startMockModel, startServer } from "./harness.mjs";
import { takeSchemaFailures } from "./schema.mjs";

afterEach(() => assert.deepEqual(takeSchemaFailures(), [], "every message Mino sends passes the ACP v1 schema"));

const option = (params, kind) => params.options.find((o) => o.kind === kind).optionId;
const selected = (optionId) => ({ outcome: { outcome: "selected", optionId } });

const python = process.env.MINO_TEST_MCP_PYTHON;
const script = process.env.MINO_TEST_MCP_SERVER_PY;
// In CI, scripts/test sets both: a run without them is broken, not skipped.
const skip = !python || !script ? (process.env.CI ? false : "MINO_TEST_MCP_PYTHON and MINO_TEST_MCP_SERVER_PY are unset (scripts/test sets them)") : false;

test("an editor's stdio MCP server passed in session/new gives the model its tools: a call asks, runs and its answer reaches the model", { skip }, async () => {
  assert.ok(python && script, "CI is set but the MCP test server is not: run through scripts/test");
  const dirs = freshDirs();
  const mock = await startMockModel([
    { type: "named_call", call_id: "call_1", name: "mcp__py__echo", arguments: JSON.stringify({ text: "milk and bread" }) },
    { type: "text", deltas: ["The server said it."] },
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
  try {
    const init = await initialize(server.agent);
    assert.deepEqual(init.agentCapabilities.mcpCapabilities, { http: true, sse: false });
    const { sessionId } = await server.agent.request(acp.methods.agent.session.new, {
      cwd: dirs.workspace,
      mcpServers: [{ name: "py", command: python, args: [script, "--transport", "stdio"], env: [] }],
    });
    // Prompted at once, as editors do: the turn's first request waits for
    // the server's start, so its tools are offered.
    const answer = await prompt(server.agent, sessionId, "Ask the server to echo.");
    assert.equal(answer.stopReason, "end_turn");
    const requests = await mock.requests();
    const offered = (requests[0].body.tools ?? []).map((t) => t.name ?? t.function?.name);
    assert.ok(offered.includes("mcp__py__echo"), `the first request offers the server's tools: ${offered}`);
    // The call asked like any other, naming the server and the tool.
    assert.equal(asked.length, 1);
    assert.match(asked[0].toolCall.title, /py\/echo/);
    const done = server.updates
      .map((u) => u.update)
      .find((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed");
    assert.ok(done, "the call completed");
    // The server's answer reached the model as the call's output.
    const output = JSON.stringify(requests[1].body.input ?? requests[1].body.messages);
    assert.match(output, /milk and bread/);
    assert.equal(agentText(server.updates).trim().endsWith("The server said it."), true, agentText(server.updates));
  } finally {
    await server.stop();
    mock.stop();
  }
});

test("an MCP call's options list the decline first; allow-always-server grants every tool of the server for the session, so the next call of another tool asks nothing", { skip }, async () => {
  assert.ok(python && script, "CI is set but the MCP test server is not: run through scripts/test");
  const dirs = freshDirs();
  const mock = await startMockModel([
    { type: "named_call", call_id: "call_1", name: "mcp__py__echo", arguments: JSON.stringify({ text: "first" }) },
    { type: "named_call", call_id: "call_2", name: "mcp__py__big", arguments: JSON.stringify({ bytes: 5 }) },
    { type: "text", deltas: ["Both ran."] },
  ]);
  const asked = [];
  const server = startServer({
    ...dirs,
    baseUrl: mock.baseUrl,
    onPermission: (params) => {
      asked.push(params);
      return selected("allow-always-server");
    },
  });
  try {
    await initialize(server.agent);
    const { sessionId } = await server.agent.request(acp.methods.agent.session.new, {
      cwd: dirs.workspace,
      mcpServers: [{ name: "py", command: python, args: [script, "--transport", "stdio"], env: [] }],
    });
    const answer = await prompt(server.agent, sessionId, "Use the server twice.");
    assert.equal(answer.stopReason, "end_turn");
    assert.equal(asked.length, 1, "only the first call asked: the server's rule covered the second");
    const kinds = asked[0].options.map((o) => [o.optionId, o.kind]);
    assert.deepEqual(kinds, [
      ["reject", "reject_once"],
      ["allow", "allow_once"],
      ["allow-always", "allow_always"],
      ["allow-always-server", "allow_always"],
      ["reject-always", "reject_always"],
      ["reject-always-server", "reject_always"],
    ]);
    assert.match(asked[0].options[2].name, /py\/echo/);
    assert.match(asked[0].options[3].name, /every tool of the MCP server `py`/);
    const completed = server.updates
      .map((u) => u.update)
      .filter((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed");
    assert.equal(completed.length, 2, "both calls ran");
    const requests = await mock.requests();
    assert.match(JSON.stringify(requests[2].body.input), /xxxxx/, "the second call's answer reached the model");
  } finally {
    await server.stop();
    mock.stop();
  }
});

// The Python SDK's server over streamable HTTP on a free loopback port: it
// prints its URL as its first line on stdout.
async function startHttpServer() {
  const child = spawn(python, [script, "--transport", "http", "--port", "0"], { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stderr.on("data", (chunk) => (log += chunk));
  const lines = createInterface({ input: child.stdout });
  const url = await new Promise((resolve, reject) => {
    lines.once("line", (line) => resolve(line.trim()));
    child.once("exit", (code) => reject(new Error(`the MCP server exited (${code}) before printing its URL:\n${log}`)));
  });
  return { url, log: () => log, stop: () => child.kill("SIGKILL") };
}

test("an editor's http MCP server passed in session/new gives its tools and an sse one is reported not started", { skip }, async () => {
  assert.ok(python && script, "CI is set but the MCP test server is not: run through scripts/test");
  const remote = await startHttpServer();
  const dirs = freshDirs();
  const mock = await startMockModel([
    { type: "named_call", call_id: "call_1", name: "mcp__web__echo", arguments: JSON.stringify({ text: "over http" }) },
    { type: "text", deltas: ["Done."] },
  ]);
  const server = startServer({
    ...dirs,
    baseUrl: mock.baseUrl,
    onPermission: (params) => selected(option(params, "allow_once")),
  });
  try {
    const init = await initialize(server.agent);
    assert.equal(init.agentCapabilities.mcpCapabilities.http, true);
    const { sessionId } = await server.agent.request(acp.methods.agent.session.new, {
      cwd: dirs.workspace,
      mcpServers: [
        { type: "http", name: "web", url: remote.url, headers: [{ name: "X-Mino-Test", value: "1" }] },
        { type: "sse", name: "old", url: remote.url, headers: [] },
      ],
    });
    const answer = await prompt(server.agent, sessionId, "Ask the server to echo.");
    assert.equal(answer.stopReason, "end_turn");
    const requests = await mock.requests();
    const offered = (requests[0].body.tools ?? []).map((t) => t.name ?? t.function?.name);
    assert.ok(offered.includes("mcp__web__echo"), `the first request offers the HTTP server's tools: ${offered}`);
    assert.match(JSON.stringify(requests[1].body.input ?? requests[1].body.messages), /over http/);
    assert.match(remote.log(), /CallToolRequest/);
    // The sse entry is not started, and the person is told which and why.
    assert.match(agentText(server.updates), /`old` failed to start: its transport `sse` is not supported/);
  } finally {
    await server.stop();
    mock.stop();
    remote.stop();
  }
});
