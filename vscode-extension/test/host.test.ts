/**
 * Extension host glue with a mocked `vscode` module and a fake language client
 * (see vitest.config.ts aliases).
 */
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
// The same modules the source gets for `vscode` and `vscode-languageclient/node` (vitest aliases).
import * as fake from './mocks/vscode';
import { clients, CloseAction, LanguageClient, RpcFailure } from './mocks/languageclient';
import { activate, deactivate, type MinoExtensionApi } from '../src/extension';
import { API_KEY_SECRET } from '../src/server';

const pkg = JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'));

const flush = () => new Promise((r) => setTimeout(r, 0));

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await flush();
}

let api: MinoExtensionApi;
let context: ReturnType<typeof fake.createExtensionContext>;
/** The view resolved in beforeEach (which starts the server). */
let firstView: fake.FakeWebviewView;
/** An executable file standing in for mino-server: the fake client never runs it, but it must be found. */
let serverBin: string;

beforeAll(() => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mino-vscode-host-'));
  serverBin = path.join(dir, 'mino-server');
  writeFileSync(serverBin, '#!/bin/sh\nexit 0\n');
  chmodSync(serverBin, 0o755);
});

function client(): LanguageClient {
  return clients[clients.length - 1];
}

function openView() {
  const view = fake.createFakeWebviewView();
  fake.mock.viewProviders.get('mino.chat')!.provider.resolveWebviewView(view, {}, {});
  return view;
}

beforeEach(async () => {
  fake.mock.reset();
  clients.length = 0;
  delete process.env.OPENAI_API_KEY;
  fake.mock.config.set('mino.serverPath', serverBin);
  context = fake.createExtensionContext();
  api = activate(context as any);
  firstView = openView();
  await settle();
});

afterEach(async () => {
  await deactivate();
  for (const d of context.subscriptions) d.dispose();
});

describe('activation', () => {
  it('registers the chat view and every contributed command', () => {
    expect([...fake.mock.viewProviders.keys()]).toEqual(['mino.chat']);
    const contributed = pkg.contributes.commands.map((c: { command: string }) => c.command).sort();
    expect(contributed).toEqual(
      ['mino.cancelTurn', 'mino.newQuestion', 'mino.open', 'mino.restartServer', 'mino.setApiKey', 'mino.showServerLog'],
    );
    expect([...fake.mock.commands.keys()].sort()).toEqual(contributed);
    // The view is contributed into its own activity-bar container, with an icon.
    const container = pkg.contributes.viewsContainers.activitybar[0];
    expect(container.icon).toMatch(/^media\/.+\.svg$/);
    expect(pkg.contributes.views[container.id][0]).toMatchObject({ type: 'webview', id: 'mino.chat' });
    // No plain API key setting.
    expect(Object.keys(pkg.contributes.configuration.properties).sort()).toEqual(
      ['mino.baseUrl', 'mino.model', 'mino.serverPath'],
    );
  });

  it('starts mino-server through a LanguageClient with an empty selector and the workspace as cwd', async () => {
    fake.mock.config.set('mino.serverPath', serverBin);
    fake.mock.config.set('mino.model', 'gpt-test');
    fake.mock.config.set('mino.baseUrl', 'http://127.0.0.1:9/v1');
    await context.secrets.store(API_KEY_SECRET, 'sk-from-secret-storage');
    await api.server.restart();

    const c = client();
    expect(c.started).toBe(true);
    expect(c.clientOptions.documentSelector).toEqual([]);
    expect(c.clientOptions.initializationOptions).toEqual({ cwd: '/tmp/mino-workspace' });
    expect(c.serverOptions.command).toBe(serverBin);
    expect(c.serverOptions.options.cwd).toBe('/tmp/mino-workspace');
    const env = c.serverOptions.options.env;
    expect(env.MINO_MODEL).toBe('gpt-test');
    expect(env.OPENAI_BASE_URL).toBe('http://127.0.0.1:9/v1');
    expect(env.OPENAI_API_KEY).toBe('sk-from-secret-storage');
    // Every Mino notification is subscribed before start (recovery follows `initialized`).
    for (const m of ['mino/recovery', 'mino/turnStarted', 'mino/textDelta', 'mino/retrying', 'mino/approvalRequest',
      'mino/toolStarted', 'mino/toolOutput', 'mino/toolResult', 'mino/turnEnded']) {
      expect(c.notificationHandlers.get(m)?.length, m).toBeGreaterThan(0);
    }
    expect(api.server.state).toBe('ready');
  });

  it('prefers OPENAI_API_KEY from the environment', async () => {
    process.env.OPENAI_API_KEY = 'sk-from-env';
    await context.secrets.store(API_KEY_SECRET, 'sk-from-secret-storage');
    await api.server.restart();
    expect(client().serverOptions.options.env.OPENAI_API_KEY).toBe('sk-from-env');
  });

  it('mino.setApiKey stores the key in SecretStorage', async () => {
    fake.mock.inputBoxValue = 'sk-typed';
    await fake.commands.executeCommand('mino.setApiKey');
    expect(context.secretValues.get(API_KEY_SECRET)).toBe('sk-typed');
  });
});

describe('webview messages reach the right requests', () => {
  it('serves a webview with a strict CSP and local resources only', () => {
    const view = openView();
    const html = view.webview.html;
    const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)![1];
    expect(csp).toContain("default-src 'none'");
    const nonce = /script-src 'nonce-([A-Za-z0-9]+)'/.exec(csp)![1];
    expect(html).toContain(`<script nonce="${nonce}" src="vscode-webview://`);
    expect(html).not.toMatch(/https?:\/\//);
    expect(view.webview.options).toMatchObject({ enableScripts: true });
  });

  it('ready → history; send → mino/chat; approval → mino/approval; cancel → mino/cancel', async () => {
    const c = client();
    c.replies.set('mino/history', { sessionId: 's1', turns: [] });
    c.replies.set('mino/chat', { turnId: 't1' });
    const view = openView();

    view.webview.receive({ type: 'ready' });
    await settle();
    expect(c.requests.map((r) => r.method)).toContain('mino/history');
    expect(view.webview.posted).toContainEqual({ type: 'server', state: 'ready' });
    expect(view.webview.posted).toContainEqual({ type: 'history', history: { sessionId: 's1', turns: [] } });

    view.webview.receive({ type: 'send', text: 'Hello\nworld' });
    await settle();
    expect(c.requests).toContainEqual({ method: 'mino/chat', params: { text: 'Hello\nworld' } });
    // Accepted: the view may clear its input now.
    expect(view.webview.posted).toContainEqual({ type: 'sent', turnId: 't1' });

    // Notifications are forwarded to the view as they come.
    c.notify('mino/turnStarted', { turnId: 't1', seq: 0, input: 'Hello\nworld' });
    c.notify('mino/textDelta', { turnId: 't1', seq: 1, delta: 'Hi' });
    expect(view.webview.posted).toContainEqual({
      type: 'notification', method: 'mino/textDelta', params: { turnId: 't1', seq: 1, delta: 'Hi' },
    });
    expect(api.server.runningTurnId).toBe('t1');

    view.webview.receive({ type: 'approval', turnId: 't1', callId: 'call_1', decision: 'approve' });
    view.webview.receive({ type: 'approval', turnId: 't1', callId: 'call_2', decision: 'deny' });
    view.webview.receive({ type: 'cancel', turnId: 't1' });
    await settle();
    // Contract A: the decision names the call and its turn, exactly as the card's request did.
    const approvals = c.requests.filter((r) => r.method === 'mino/approval');
    expect(approvals).toEqual([
      { method: 'mino/approval', params: { turnId: 't1', callId: 'call_1', decision: 'approve' } },
      { method: 'mino/approval', params: { turnId: 't1', callId: 'call_2', decision: 'deny' } },
    ]);
    expect(c.requests).toContainEqual({ method: 'mino/cancel', params: { turnId: 't1' } });

    // The palette command cancels the running turn too.
    c.requests.length = 0;
    await fake.commands.executeCommand('mino.cancelTurn');
    expect(c.requests).toEqual([{ method: 'mino/cancel', params: { turnId: 't1' } }]);

    c.notify('mino/turnEnded', { turnId: 't1', seq: 2, status: 'cancelled' });
    expect(api.server.runningTurnId).toBeUndefined();
  });

  it('recovery is shown to the view and acknowledge calls mino/acknowledge', async () => {
    const c = client();
    c.replies.set('mino/history', { sessionId: 's1', turns: [] });
    c.replies.set('mino/acknowledge', { acknowledged: ['t9'] });
    const recovery = {
      sessionId: 's1',
      turns: [{ turnId: 't9', status: 'interrupted', calls: [{ callId: 'c', command: 'echo milk >> shopping.txt', result: { status: 'unknown', output: '' } }] }],
      acknowledgementRequired: true,
      unacknowledgedTurnIds: ['t9'],
      repairs: [],
    };
    // Recovery arrives before the view is opened; the view gets it on ready.
    c.notify('mino/recovery', recovery);
    const view = openView();
    view.webview.receive({ type: 'ready' });
    await settle();
    expect(view.webview.posted).toContainEqual({ type: 'notification', method: 'mino/recovery', params: recovery });

    // A refused chat surfaces the server's error with its code, and is not reported as sent.
    c.replies.set('mino/chat', () => new RpcFailure(-32010, 'Acknowledge unknown tool results before continuing'));
    view.webview.receive({ type: 'send', text: 'Is milk on the list?' });
    await settle();
    expect(view.webview.posted).toContainEqual(
      expect.objectContaining({ type: 'error', request: 'send', code: -32010, message: 'Acknowledge unknown tool results before continuing' }),
    );
    expect(view.webview.posted.filter((m: any) => m.type === 'sent')).toEqual([]);

    view.webview.receive({ type: 'acknowledge', turnIds: ['t9'] });
    await settle();
    expect(c.requests).toContainEqual({ method: 'mino/acknowledge', params: { turnIds: ['t9'] } });
    expect(view.webview.posted).toContainEqual({ type: 'acknowledged', turnIds: ['t9'] });
    expect(api.server.recovery?.acknowledgementRequired).toBe(false);
  });

  it('a server crash shows an error with a Restart action that restarts the server', async () => {
    const c = client();
    const history = {
      sessionId: 's1',
      turns: [{ turnId: 't1', input: 'Build it.', text: '', status: null, notices: [], calls: [{ callId: 'call_b', command: 'make', result: null }] }],
    };
    c.replies.set('mino/history', history);
    const view = openView();
    view.webview.receive({ type: 'ready' });
    await settle();
    expect(view.webview.posted).toContainEqual({ type: 'history', history });
    const postedBeforeCrash = view.webview.posted.length;
    const first = client();
    fake.mock.nextChoice = 'Restart';
    const action = first.crash() as { action: CloseAction; handled: boolean };
    expect(action).toEqual({ action: CloseAction.DoNotRestart, handled: true });
    expect(api.server.state).not.toBe('ready');
    expect(fake.mock.errorMessages[0]).toEqual({ message: 'Mino server stopped unexpectedly.', items: ['Restart', 'Show Log'] });
    await settle();
    // The view keeps the transcript it shows: nothing replaces it until the restarted server's history.
    const afterCrash = view.webview.posted.slice(postedBeforeCrash) as any[];
    expect(afterCrash.filter((m) => m.type === 'history' && m.history === null)).toEqual([]);
    expect(view.webview.posted).toContainEqual({ type: 'server', state: 'crashed', message: 'Mino server stopped unexpectedly.' });
    expect(afterCrash.findIndex((m) => m.type === 'history')).toBeGreaterThan(
      afterCrash.findIndex((m) => m.type === 'server' && m.state === 'ready'),
    );
    await settle();
    await settle();
    expect(clients.length).toBe(2);
    expect(client()).not.toBe(first);
    expect(client().started).toBe(true);
    expect(api.server.state).toBe('ready');
  });

  it('a session held by another Mino (-32015) offers a new session', async () => {
    await api.server.stop();
    const failing = new RpcFailure(-32015, 'The session could not be opened: it is open in another Mino process');
    const origStart = LanguageClient.prototype.start;
    LanguageClient.prototype.start = async function (this: LanguageClient) {
      if (clients.indexOf(this) === clients.length - 1 && clients.length === 2) throw failing;
      return origStart.call(this);
    };
    try {
      fake.mock.nextChoice = 'Start New Session';
      await api.server.start();
      expect(api.server.state).toBe('failed');
      expect(fake.mock.errorMessages).toHaveLength(1);
      expect(fake.mock.errorMessages[0].message).toContain('another Mino process');
      expect(fake.mock.errorMessages[0].items).toEqual(['Start New Session', 'Restart', 'Show Log']);
      await settle();
      await settle();
      expect(clients).toHaveLength(3);
      expect(client().clientOptions.initializationOptions).toEqual({ cwd: '/tmp/mino-workspace', newSession: true });
      expect(api.server.state).toBe('ready');
    } finally {
      LanguageClient.prototype.start = origStart;
    }
  });

  it('restart and show-log buttons in the view reach the server and the output channel', async () => {
    const view = openView();
    view.webview.receive({ type: 'showLog' });
    await settle();
    expect(fake.mock.outputChannels.find((o) => o.name === 'Mino Server')!.shown).toBe(1);
    view.webview.receive({ type: 'restart' });
    await settle();
    expect(clients.length).toBe(2);
    expect(clients[0].stopped).toBe(true);
  });

  it('mino.newQuestion opens the view and focuses a cleared input', async () => {
    const view = openView();
    await fake.commands.executeCommand('mino.newQuestion');
    expect(fake.mock.executed.map((e) => e.command)).toContain('workbench.view.extension.mino');
    expect(view.webview.posted).toContainEqual({ type: 'focus', clear: true });
  });

  it('a missing server binary is reported as not found at its path, with the setting that fixes it', async () => {
    const view = openView();
    view.webview.receive({ type: 'ready' });
    await settle();
    const missing = path.join(path.dirname(serverBin), 'nowhere', 'mino-server');
    fake.mock.config.set('mino.serverPath', missing);
    await api.server.restart();
    await settle();
    expect(api.server.state).toBe('failed');
    // Nothing was spawned for it.
    expect(clients).toHaveLength(1);
    const expected = `mino-server not found at ${missing}.`;
    expect(fake.mock.errorMessages).toHaveLength(1);
    expect(fake.mock.errorMessages[0].message).toContain(expected);
    expect(fake.mock.errorMessages[0].message).toContain('mino.serverPath');
    expect(fake.mock.errorMessages[0].items).toContain('Open Settings');
    const shown = view.webview.posted.filter((m: any) => m.type === 'server').pop() as any;
    expect(shown.state).toBe('failed');
    expect(shown.message).toContain(expected);
    expect(shown.message).toContain('Set mino.serverPath');
    expect(shown.message).not.toContain('stopped unexpectedly');
    expect(shown.fixSetting).toBe('mino.serverPath');
    // "Open settings" in the view opens that setting.
    view.webview.receive({ type: 'openSettings' });
    expect(fake.mock.executed).toContainEqual({ command: 'workbench.action.openSettings', args: ['mino.serverPath'] });

    // A bare name that is not on PATH, and a file that is not executable, say so too.
    fake.mock.config.set('mino.serverPath', 'mino-server-not-installed');
    await api.server.restart();
    expect(api.server.stateDetail.message).toContain('mino-server not found at mino-server-not-installed (looked up on PATH)');
    const notExecutable = path.join(path.dirname(serverBin), 'not-executable');
    writeFileSync(notExecutable, '');
    fake.mock.config.set('mino.serverPath', notExecutable);
    await api.server.restart();
    expect(api.server.stateDetail.message).toContain(`mino-server at ${notExecutable} is not an executable file`);
    expect(clients).toHaveLength(1);

    // Fixed: a restart starts it.
    fake.mock.config.set('mino.serverPath', serverBin);
    await api.server.restart();
    expect(api.server.state).toBe('ready');
    expect(clients).toHaveLength(2);
  });

  it('a question the server refuses is reported with its code and not as sent', async () => {
    const c = client();
    const view = openView();
    for (const [code, message] of [
      [-32602, 'invalid params: text is empty'],
      [-32011, 'a turn is already in progress'],
    ] as const) {
      c.replies.set('mino/chat', () => new RpcFailure(code, message));
      view.webview.receive({ type: 'send', text: ' ' });
      await settle();
      expect(view.webview.posted).toContainEqual(expect.objectContaining({ type: 'error', request: 'send', code, message }));
    }
    expect(view.webview.posted.filter((m: any) => m.type === 'sent')).toEqual([]);
  });
});

describe('activation on the view, title-bar actions and keybindings', () => {
  it('activation starts no server until the view is first shown', async () => {
    expect(pkg.activationEvents).toEqual(['onView:mino.chat']);
    // A fresh activation, as VS Code does when the view is about to be shown.
    await deactivate();
    for (const d of context.subscriptions.splice(0)) d.dispose();
    fake.mock.reset();
    clients.length = 0;
    fake.mock.config.set('mino.serverPath', serverBin);
    context = fake.createExtensionContext();
    api = activate(context as any);
    await settle();
    expect(clients).toHaveLength(0);
    expect(api.server.state).toBe('stopped');

    const view = openView();
    await settle();
    expect(clients).toHaveLength(1);
    expect(client().started).toBe(true);
    expect(api.server.state).toBe('ready');
    // Shown again later: the same server, and the input is focused.
    view.setVisible(false);
    view.setVisible(true);
    await settle();
    expect(clients).toHaveLength(1);
    expect(view.webview.posted).toContainEqual({ type: 'focus' });
  });

  it('New Question and Cancel are in the view title bar and have keybindings; Cancel shows only while a turn runs', async () => {
    const title = pkg.contributes.menus['view/title'] as { command: string; when: string; group: string }[];
    const newQuestion = title.find((m) => m.command === 'mino.newQuestion')!;
    const cancel = title.find((m) => m.command === 'mino.cancelTurn')!;
    expect(newQuestion.when).toBe('view == mino.chat');
    expect(newQuestion.group).toMatch(/^navigation/);
    expect(cancel.when).toBe('view == mino.chat && mino.turnRunning');
    expect(cancel.group).toMatch(/^navigation/);
    const commands = pkg.contributes.commands as { command: string; icon?: string }[];
    for (const id of ['mino.newQuestion', 'mino.cancelTurn']) {
      expect(commands.find((c) => c.command === id)!.icon, id).toMatch(/^\$\(.+\)$/);
      const binding = (pkg.contributes.keybindings as { command: string; key: string; mac: string }[]).find((k) => k.command === id);
      expect(binding?.key, id).toBeTruthy();
      expect(binding?.mac, id).toBeTruthy();
    }

    const c = client();
    c.notify('mino/turnStarted', { turnId: 't1', seq: 0, input: 'Go' });
    expect(fake.mock.contextKeys.at(-1)).toEqual(['mino.turnRunning', true]);
    c.notify('mino/turnEnded', { turnId: 't1', seq: 1, status: 'completed' });
    expect(fake.mock.contextKeys.at(-1)).toEqual(['mino.turnRunning', false]);
  });
});

describe('code blocks and editor context', () => {
  function editorWith(text: string, from: [number, number], to: [number, number], languageId = 'typescript') {
    const doc = new fake.FakeDocument(fake.Uri.file('/tmp/mino-workspace/src/app.ts'), text, languageId);
    const editor = new fake.FakeEditor(
      doc,
      new fake.Selection(new fake.Position(from[0], from[1]), new fake.Position(to[0], to[1])),
    );
    fake.mock.activeTextEditor = editor;
    return editor;
  }

  it('Copy puts the code on the clipboard; Insert replaces the selection of the active editor', async () => {
    firstView.webview.receive({ type: 'copy', text: 'cargo build --locked' });
    await settle();
    expect(fake.mock.clipboard).toBe('cargo build --locked');

    // No editor: the view is told why nothing was inserted.
    firstView.webview.receive({ type: 'insert', text: 'let x = 1;' });
    await settle();
    expect(firstView.webview.posted).toContainEqual(expect.objectContaining({ type: 'error', request: 'insert' }));

    const editor = editorWith('const a = 0;\nconst b = 1;\n', [1, 0], [1, 12]);
    firstView.webview.receive({ type: 'insert', text: 'let x = 1;' });
    await settle();
    expect(editor.edits).toEqual([{ selection: editor.selection, text: 'let x = 1;' }]);
  });

  it('adds the active file, the selection, and files picked by name, read through the editor API', async () => {
    const posted = () => firstView.webview.posted.filter((m: any) => m.type === 'context' || (m.type === 'error' && m.request === 'addContext'));
    firstView.webview.receive({ type: 'addContext', source: 'activeFile' });
    await settle();
    expect(posted().at(-1)).toMatchObject({ type: 'error', message: expect.stringContaining('No editor is active') });

    editorWith('const a = 0;\nconst b = 1;\nconst c = 2;\n', [1, 0], [2, 5]);
    firstView.webview.receive({ type: 'addContext', source: 'activeFile' });
    await settle();
    expect(posted().at(-1)).toEqual({
      type: 'context',
      items: [{ path: 'src/app.ts', language: 'typescript', text: 'const a = 0;\nconst b = 1;\nconst c = 2;\n' }],
    });
    firstView.webview.receive({ type: 'addContext', source: 'selection' });
    await settle();
    expect(posted().at(-1)).toEqual({
      type: 'context',
      items: [{ path: 'src/app.ts', language: 'typescript', text: 'const b = 1;\nconst', startLine: 2, endLine: 3 }],
    });
    // An empty selection says what to do.
    editorWith('x\n', [0, 1], [0, 1]);
    firstView.webview.receive({ type: 'addContext', source: 'selection' });
    await settle();
    expect(posted().at(-1)).toMatchObject({ type: 'error', message: expect.stringContaining('Nothing is selected in src/app.ts') });

    fake.mock.files.set('/tmp/mino-workspace/README.md', '# Hello\n');
    fake.mock.files.set('/tmp/mino-workspace/src/lib.rs', 'fn main() {}\n');
    fake.mock.files.set('/tmp/mino-workspace/big.txt', 'x'.repeat(300 * 1024));
    fake.mock.quickPickChoice = ['src/lib.rs', 'README.md'];
    firstView.webview.receive({ type: 'addContext', source: 'pick' });
    await settle();
    expect(fake.mock.quickPickItems.map((i) => i.label)).toEqual(['big.txt', 'README.md', 'src/lib.rs']);
    expect(posted().at(-1)).toEqual({
      type: 'context',
      items: [
        { path: 'README.md', language: 'markdown', text: '# Hello\n' },
        { path: 'src/lib.rs', language: 'rust', text: 'fn main() {}\n' },
      ],
    });
    // A file over the bound is refused with the reason and what to do instead.
    fake.mock.quickPickChoice = ['big.txt'];
    firstView.webview.receive({ type: 'addContext', source: 'pick' });
    await settle();
    expect(posted().at(-1)).toMatchObject({ type: 'error', message: expect.stringContaining('big.txt is 300 KiB; at most 256 KiB') });
  });
});

describe('the bundle', () => {
  it('dist/extension.js (what the .vsix ships) loads with only `vscode` external and activates', async () => {
    const bundle = path.join(__dirname, '..', 'dist', 'extension.js');
    await deactivate();
    for (const d of context.subscriptions.splice(0)) d.dispose();
    fake.mock.reset();
    // Node's own require, as VS Code loads the extension; `vscode` is the mock.
    const Module = createRequire(__filename)('node:module');
    const load = Module._load;
    // The real vscode-languageclient subclasses parts of the API the mock leaves out.
    const api = new Proxy(fake as Record<string | symbol, unknown>, {
      get: (target, key) => (key in target ? target[key] : class {}),
    });
    Module._load = function (request: string, ...rest: unknown[]) {
      if (request === 'vscode') return api;
      return load.call(this, request, ...rest);
    };
    try {
      const ext = createRequire(__filename)(bundle);
      context = fake.createExtensionContext();
      const bundled = ext.activate(context);
      expect([...fake.mock.viewProviders.keys()]).toEqual(['mino.chat']);
      expect([...fake.mock.commands.keys()].sort()).toEqual(
        ['mino.cancelTurn', 'mino.newQuestion', 'mino.open', 'mino.restartServer', 'mino.setApiKey', 'mino.showServerLog'],
      );
      expect(bundled.server.state).toBe('stopped');
      await ext.deactivate();
    } finally {
      Module._load = load;
    }
  });
});
