// The README's snippets that add Mino to Zed, CodeCompanion.nvim and
// avante.nvim: each parses, and each starts `mino-server --acp`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import luaparse from "luaparse";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const readme = readFileSync(join(root, "README.md"), "utf8");
const section = readme.slice(readme.indexOf("## Use Mino from an ACP editor"), readme.indexOf("## Run every test"));
const blocks = (lang) => [...section.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]);

/** Every string literal in a Lua syntax tree, in order. */
function strings(node, out = []) {
  if (node && typeof node === "object") {
    if (node.type === "StringLiteral") out.push(node.raw.slice(1, -1));
    for (const value of Object.values(node)) strings(value, out);
  }
  return out;
}

/** The keys of the table fields in a Lua syntax tree. */
function keys(node, out = []) {
  if (node && typeof node === "object") {
    if (node.type === "TableKeyString") out.push(node.key.name);
    for (const value of Object.values(node)) keys(value, out);
  }
  return out;
}

test("the Zed settings snippet is JSON naming a custom agent server that runs mino-server --acp", () => {
  const [zed] = blocks("json");
  const settings = JSON.parse(zed);
  const mino = settings.agent_servers.Mino;
  assert.equal(mino.type, "custom");
  assert.match(mino.command, /\/mino-server$/);
  assert.deepEqual(mino.args, ["--acp"]);
});

test("the CodeCompanion.nvim and avante.nvim snippets are Lua that runs mino-server --acp", () => {
  const [codecompanion, avante] = blocks("lua");
  assert.ok(codecompanion && avante, "two Lua snippets");
  const cc = luaparse.parse(codecompanion, { luaVersion: "5.1" });
  assert.ok(keys(cc).includes("acp") && keys(cc).includes("commands"), "an ACP adapter with commands");
  assert.ok(strings(cc).includes("--acp"));
  assert.ok(strings(cc).some((s) => s.endsWith("/mino-server")));
  const av = luaparse.parse(avante, { luaVersion: "5.1" });
  assert.ok(keys(av).includes("acp_providers"));
  assert.ok(strings(av).includes("--acp"));
  assert.ok(strings(av).some((s) => s.endsWith("/mino-server")));
  assert.throws(() => luaparse.parse("acp = { mino = { ", { luaVersion: "5.1" }), "the parser refuses broken Lua");
});
