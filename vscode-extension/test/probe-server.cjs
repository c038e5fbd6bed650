// Asks a mino-server binary which of the newer requests and decisions it
// answers, so that tests of them run only against a server that has them.
// Usage: node test/probe-server.cjs <mino-server>; prints one JSON object:
// { "<method or decision>": <error code, or 0 when answered> }.
'use strict';
const { spawn } = require('node:child_process');
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const path = require('node:path');
const { createMessageConnection, StreamMessageReader, StreamMessageWriter } = require('vscode-jsonrpc/node');

async function main() {
  const dir = mkdtempSync(path.join(tmpdir(), 'mino-vscode-probe-'));
  const proc = spawn(path.resolve(process.argv[2]), [], {
    cwd: dir,
    stdio: ['pipe', 'pipe', 'ignore'],
    env: { ...process.env, MINO_HOME: path.join(dir, 'home'), OPENAI_API_KEY: 'sk-probe', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' },
  });
  const conn = createMessageConnection(new StreamMessageReader(proc.stdout), new StreamMessageWriter(proc.stdin));
  conn.onError(() => undefined);
  proc.stdin.on('error', () => undefined);
  conn.listen();
  const answer = (method, params) => conn.sendRequest(method, params).then(() => 0, (e) => (typeof e.code === 'number' ? e.code : -1));
  const found = {};
  try {
    await conn.sendRequest('initialize', { processId: process.pid, rootUri: null, capabilities: {}, initializationOptions: { cwd: dir } });
    await conn.sendNotification('initialized', {});
    found['mino/sessions/list'] = await answer('mino/sessions/list', {});
    found['mino/rules/list'] = await answer('mino/rules/list', {});
    // No such call: a server that knows the decision says so (-32012/-32014);
    // one that does not refuses the params (-32602).
    found.allowSession = await answer('mino/approval', {
      turnId: 'probe', callId: 'probe', decision: 'allowSession', rule: { kind: 'prefix', command: 'ls' },
    });
    await Promise.race([conn.sendRequest('shutdown'), new Promise((r) => setTimeout(r, 2000))]);
    await conn.sendNotification('exit');
  } finally {
    setTimeout(() => proc.kill('SIGKILL'), 3000).unref();
    proc.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  process.stdout.write(JSON.stringify(found) + '\n');
  conn.dispose();
}

main().catch((e) => {
  process.stderr.write(String(e) + '\n');
  process.exit(1);
});
