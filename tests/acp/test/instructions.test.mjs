// The project's instruction files (AGENTS.md) shown to the person on the
// ACP door: named when a session opens, and again when they change.
import { afterEach, test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { acp, agentText, freshDirs, initialize, prompt, startMockModel, startServer } from "./harness.mjs";
import { takeSchemaFailures } from "./schema.mjs";

afterEach(() => assert.deepEqual(takeSchemaFailures(), [], "every message Mino sends passes the ACP v1 schema"));

test("the AGENTS.md the model follows is named when the session opens and when it changes", async () => {
  const dirs = freshDirs();
  const agents = join(dirs.workspace, "AGENTS.md");
  writeFileSync(agents, "Answer in French.\n");
  const mock = await startMockModel([{ type: "text", deltas: ["D'accord."] }]);
  const server = startServer({ ...dirs, baseUrl: mock.baseUrl, onPermission: () => assert.fail("nothing to approve") });
  try {
    await initialize(server.agent);
    const { sessionId } = await server.agent.request(acp.methods.agent.session.new, { cwd: dirs.workspace, mcpServers: [] });
    await server.waitFor((u) => agentText(u).includes("AGENTS.md"));
    assert.equal(agentText(server.updates), `[Mino: the model follows the project's instructions in ${agents} (18 bytes).]`);

    const from = server.updates.length;
    writeFileSync(agents, "Answer in French, briefly.\n");
    assert.equal((await prompt(server.agent, sessionId, "Hello?")).stopReason, "end_turn");
    const said = agentText(server.updates.slice(from));
    assert.match(said, new RegExp(`the model follows the project's instructions in ${agents.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} \\(27 bytes\\)`));
    assert.match(said, /D'accord\.$/);
    assert.match(JSON.stringify((await mock.requests())[0].body), /briefly/);
  } finally {
    await server.stop();
    mock.stop();
  }
});
