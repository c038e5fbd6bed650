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
import { clients, CloseAction, LanguageClient, RpcFailure, settings } from './mocks/languageclient';
import { activate, deactivate, type MinoExtensionApi } from '../src/extension';
import { API_KEY_SECRET } from '../src/server';
import { ALL_FOLDERS_LABEL, HELD_MARK, relativeTime, WAITING_MARK } from '../src/sessions';
import { buildProposed, PROPOSED_SCHEME } from '../src/editReview';
import { APPROVAL_MODE_DESCRIPTIONS, APPROVAL_MODES, KEEP_MODE_LABEL, LIVE_SETTINGS, RESTART_SETTINGS, SANDBOX_MODES } from '../src/approvalMode';

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
      ['mino.addSelection', 'mino.cancelTurn', 'mino.chooseModel', 'mino.compact', 'mino.keepHunk', 'mino.mcpServers', 'mino.newChat', 'mino.newQuestion', 'mino.open', 'mino.rejectHunk', 'mino.renameSession', 'mino.restartServer', 'mino.reviewPendingEdit', 'mino.rules', 'mino.sessions', 'mino.setApiKey', 'mino.setApprovalMode', 'mino.showServerLog'],
    );
    expect([...fake.mock.commands.keys()].sort()).toEqual(contributed);
    // The view is contributed into its own activity-bar container, with an icon.
    const container = pkg.contributes.viewsContainers.activitybar[0];
    expect(container.icon).toMatch(/^media\/.+\.svg$/);
    expect(pkg.contributes.views[container.id][0]).toMatchObject({ type: 'webview', id: 'mino.chat' });
    // No plain API key setting.
    expect(Object.keys(pkg.contributes.configuration.properties).sort()).toEqual(
      ['mino.approvalMode', 'mino.baseUrl', 'mino.model', 'mino.sandbox', 'mino.serverPath'],
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
    // The first start lets the server choose the workspace's session; a restart goes back to the current one.
    expect(clients[0].clientOptions.initializationOptions).toEqual({ cwd: '/tmp/mino-workspace', approvalMode: 'ask' });
    expect(c.clientOptions.initializationOptions).toEqual({ cwd: '/tmp/mino-workspace', session: 's1', approvalMode: 'ask' });
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

  it('send with images → mino/chat images; image → mino/image, its bytes or its error back to the view', async () => {
    const c = client();
    c.replies.set('mino/history', { sessionId: 's1', turns: [] });
    c.replies.set('mino/chat', { turnId: 't1' });
    const view = openView();
    view.webview.receive({ type: 'ready' });
    await settle();

    const images = [{ data: 'iVBORw0KGgo=', mimeType: 'image/png', name: 'cat.png' }];
    view.webview.receive({ type: 'send', text: 'What is this?', images });
    await settle();
    expect(c.requests).toContainEqual({ method: 'mino/chat', params: { text: 'What is this?', images } });
    expect(view.webview.posted).toContainEqual({ type: 'sent', turnId: 't1' });

    // A refused question is reported as refused (the view keeps its text and images).
    c.replies.set('mino/chat', () => new RpcFailure(-32602, 'image 1 (cat.png) is not an image Mino can send (text)'));
    view.webview.receive({ type: 'send', text: '', images });
    await settle();
    expect(view.webview.posted).toContainEqual(
      expect.objectContaining({ type: 'error', request: 'send', code: -32602, message: 'image 1 (cat.png) is not an image Mino can send (text)' }),
    );

    const sha = 'ab'.repeat(32);
    c.replies.set('mino/image', { mimeType: 'image/png', data: 'iVBORw0KGgo=' });
    view.webview.receive({ type: 'image', sha256: sha });
    await settle();
    expect(c.requests).toContainEqual({ method: 'mino/image', params: { sha256: sha } });
    expect(view.webview.posted).toContainEqual({ type: 'image', sha256: sha, mimeType: 'image/png', data: 'iVBORw0KGgo=' });

    c.replies.set('mino/image', () => new RpcFailure(-32013, 'its kept file is missing'));
    view.webview.receive({ type: 'image', sha256: 'cd'.repeat(32) });
    await settle();
    expect(view.webview.posted).toContainEqual(expect.objectContaining({ type: 'image', sha256: 'cd'.repeat(32), error: expect.stringContaining('its kept file is missing') }));

    // Only a SHA-256 reaches the server.
    c.requests.length = 0;
    view.webview.receive({ type: 'image', sha256: '../../etc/passwd' });
    await settle();
    expect(c.requests.filter((r) => r.method === 'mino/image')).toEqual([]);

    // Without a server the thumbnail says so (and is asked for again later).
    await api.server.stop();
    view.webview.receive({ type: 'image', sha256: sha });
    await settle();
    expect(view.webview.posted).toContainEqual({ type: 'image', sha256: sha, error: 'Mino server is not running.' });
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

  /** The status bar item saying the server stopped unexpectedly. */
  function stoppedNotice(): fake.FakeStatusBarItem {
    const item = fake.mock.statusBarItems.find((i) => i.id === 'mino.serverStopped');
    expect(item, 'the stopped notice exists').toBeDefined();
    return item!;
  }

  it('a server crash shows a stopped notice whose click restarts the server', async () => {
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
    expect(stoppedNotice().visible).toBe(false);
    const action = first.crash() as { action: CloseAction; handled: boolean };
    expect(action).toEqual({ action: CloseAction.DoNotRestart, handled: true });
    expect(api.server.state).not.toBe('ready');
    const notice = stoppedNotice();
    expect(notice).toMatchObject({ visible: true, command: 'mino.restartServer' });
    expect(notice.tooltip).toContain('Mino server stopped unexpectedly.');
    // No toast: one could not be taken back once the server is running again.
    expect(fake.mock.errorMessages).toEqual([]);
    await settle();
    // The view keeps the transcript it shows: nothing replaces it until the restarted server's history.
    const afterCrash = view.webview.posted.slice(postedBeforeCrash) as any[];
    expect(afterCrash.filter((m) => m.type === 'history' && m.history === null)).toEqual([]);
    expect(view.webview.posted).toContainEqual({ type: 'server', state: 'crashed', message: 'Mino server stopped unexpectedly.' });
    await fake.commands.executeCommand(notice.command!);
    await settle();
    await settle();
    const afterRestart = view.webview.posted.slice(postedBeforeCrash) as any[];
    expect(afterRestart.findIndex((m) => m.type === 'history')).toBeGreaterThan(
      afterRestart.findIndex((m) => m.type === 'server' && m.state === 'ready'),
    );
    expect(clients.length).toBe(2);
    expect(client()).not.toBe(first);
    expect(client().started).toBe(true);
    expect(api.server.state).toBe('ready');
    expect(notice.visible).toBe(false);
  });

  it('the stopped notice goes away once the server is back, however it was restarted (the view\'s Restart, the command)', async () => {
    const view = openView();
    view.webview.receive({ type: 'ready' });
    await settle();
    client().crash();
    await settle();
    expect(stoppedNotice().visible).toBe(true);
    expect(view.webview.posted).toContainEqual({ type: 'server', state: 'crashed', message: 'Mino server stopped unexpectedly.' });
    // The view's Restart link.
    view.webview.receive({ type: 'restart' });
    await settle();
    await settle();
    expect(api.server.state).toBe('ready');
    expect(stoppedNotice().visible).toBe(false);
    expect((view.webview.posted as any[]).filter((m) => m.type === 'server').at(-1)).toEqual({ type: 'server', state: 'ready' });
    // Again, then Mino: Restart Server from the palette.
    client().crash();
    await settle();
    expect(stoppedNotice().visible).toBe(true);
    await fake.commands.executeCommand('mino.restartServer');
    await settle();
    await settle();
    expect(api.server.state).toBe('ready');
    expect(stoppedNotice().visible).toBe(false);
    expect(fake.mock.errorMessages).toEqual([]);
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
      expect(client().clientOptions.initializationOptions).toEqual({ cwd: '/tmp/mino-workspace', newSession: true, approvalMode: 'ask' });
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
    // From the editor (palette, context menu, Ctrl+Alt+A): the same chip.
    await fake.commands.executeCommand('mino.addSelection');
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

  it("the input's @ menu: the selection and active file, then workspace files matching the query, best first; a chosen file is read as a chip, only one the workspace lists", async () => {
    const menu = () => firstView.webview.posted.filter((m: any) => m.type === 'mentions').at(-1) as any;
    const posted = () => firstView.webview.posted.filter((m: any) => m.type === 'context' || (m.type === 'error' && m.request === 'addContext'));
    fake.mock.files.set('/tmp/mino-workspace/src/main.rs', 'fn main() {}\n');
    fake.mock.files.set('/tmp/mino-workspace/docs/manual.md', '# Manual\n');
    fake.mock.files.set('/tmp/mino-workspace/src/commands/make.rs', 'pub fn make() {}\n');
    editorWith('const a = 0;\nconst b = 1;\nconst c = 2;\n', [1, 0], [2, 5]);
    firstView.webview.receive({ type: 'mentions', query: '' });
    await settle();
    expect(menu().items.slice(0, 2)).toEqual([
      { kind: 'selection', label: 'Selection: src/app.ts:2-3', path: 'src/app.ts' },
      { kind: 'activeFile', label: 'Active file: src/app.ts', path: 'src/app.ts' },
    ]);
    firstView.webview.receive({ type: 'mentions', query: 'MA' });
    await settle();
    // Case-insensitive; a name starting with the query first, then shorter paths; the editor's entries do not match.
    expect(menu()).toEqual({ type: 'mentions', query: 'MA', items: [
      { kind: 'file', label: 'src/main.rs', path: 'src/main.rs' },
      { kind: 'file', label: 'docs/manual.md', path: 'docs/manual.md' },
      { kind: 'file', label: 'src/commands/make.rs', path: 'src/commands/make.rs' },
    ] });
    // A name starting with the query comes before a path that only holds it.
    fake.mock.files.set('/tmp/mino-workspace/a/roman.txt', 'x\n');
    firstView.webview.receive({ type: 'mentions', query: '' });
    firstView.webview.receive({ type: 'mentions', query: 'man' });
    await settle();
    expect(menu().items.map((i: any) => i.path)).toEqual(['docs/manual.md', 'a/roman.txt', 'src/commands/make.rs']);
    firstView.webview.receive({ type: 'mentions', query: 'sel' });
    await settle();
    expect(menu().items.map((i: any) => i.kind)).toEqual(['selection']);

    firstView.webview.receive({ type: 'addContext', source: 'file', path: 'docs/manual.md' });
    await settle();
    expect(posted().at(-1)).toEqual({ type: 'context', items: [{ path: 'docs/manual.md', language: 'markdown', text: '# Manual\n' }] });
    // Only a file the workspace lists: never a path the view made up.
    firstView.webview.receive({ type: 'addContext', source: 'file', path: '../../etc/passwd' });
    await settle();
    expect(posted().at(-1)).toMatchObject({ type: 'error', message: expect.stringContaining('is not a file of the workspace') });
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
        ['mino.addSelection', 'mino.cancelTurn', 'mino.chooseModel', 'mino.compact', 'mino.keepHunk', 'mino.mcpServers', 'mino.newChat', 'mino.newQuestion', 'mino.open', 'mino.rejectHunk', 'mino.renameSession', 'mino.restartServer', 'mino.reviewPendingEdit', 'mino.rules', 'mino.sessions', 'mino.setApiKey', 'mino.setApprovalMode', 'mino.showServerLog'],
      );
      expect(bundled.server.state).toBe('stopped');
      await ext.deactivate();
    } finally {
      Module._load = load;
    }
  });
});

describe('sessions: title bar, quick pick, switch, rename, delete', () => {
  const HOUR = 3600_000;
  const now = Date.now();
  function entry(sessionId: string, title: string | null, extra: Record<string, unknown> = {}) {
    return {
      sessionId, cwd: '/tmp/mino-workspace', title,
      createdAt: new Date(now - 5 * HOUR).toISOString(), lastActiveAt: new Date(now - 2 * HOUR).toISOString(),
      turns: 3, heldElsewhere: false, acknowledgementRequired: false, current: false, ...extra,
    };
  }
  const workspaceSessions = [
    entry('s1', null, { current: true, turns: 0, lastActiveAt: new Date(now).toISOString() }),
    entry('s2', 'Add milk to the list', {
      acknowledgementRequired: true, turns: 1,
      usage: { inputTokens: 1200, outputTokens: 34, totalTokens: 1234 },
    }),
    entry('s3', 'Release notes', { heldElsewhere: true }),
    entry('s4', 'Old refactor'),
  ];
  const otherFolder = entry('s9', 'Elsewhere', { cwd: '/home/me/other' });

  function serveSessions(c: LanguageClient) {
    c.replies.set('mino/sessions/list', (p: any) => ({
      sessions: p.scope === 'all' ? [...workspaceSessions, otherFolder] : workspaceSessions,
    }));
    c.replies.set('mino/history', (/* current */) => ({ sessionId: api.server.session?.sessionId, turns: [], hasMore: false }));
  }

  /** Runs `mino.sessions` and returns its quick pick once the list is in. */
  async function openSessionsPick() {
    const running = fake.commands.executeCommand('mino.sessions');
    await settle();
    const pick = fake.mock.quickPicks.at(-1)!;
    expect(pick.shown).toBe(true);
    return { pick, running };
  }

  it('New Chat and Sessions are in the view title bar with keybindings; Rename and Rules in its overflow', () => {
    const title = pkg.contributes.menus['view/title'] as { command: string; when: string; group: string }[];
    const commands = pkg.contributes.commands as { command: string; title: string; icon?: string }[];
    const bindings = pkg.contributes.keybindings as { command: string; key: string; mac: string }[];
    for (const id of ['mino.newChat', 'mino.sessions']) {
      const item = title.find((m) => m.command === id)!;
      expect(item.when, id).toBe('view == mino.chat');
      expect(item.group, id).toMatch(/^navigation@/);
      expect(commands.find((c) => c.command === id)!.icon, id).toMatch(/^\$\(.+\)$/);
      const binding = bindings.find((k) => k.command === id);
      expect(binding?.key, id).toBeTruthy();
      expect(binding?.mac, id).toBeTruthy();
    }
    expect(commands.find((c) => c.command === 'mino.newChat')!.title).toBe('New Chat');
    expect(commands.find((c) => c.command === 'mino.sessions')!.title).toBe('Sessions');
    for (const id of ['mino.renameSession', 'mino.rules']) {
      expect(title.find((m) => m.command === id)!.group, id).not.toMatch(/^navigation/);
    }
    // Keybindings are unique.
    const keys = bindings.map((b) => b.key);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('lists this workspace\'s sessions with title, time, turns and marks; a button deletes all but the current and held ones; "Show sessions of all folders" lists every folder\'s', async () => {
    const c = client();
    serveSessions(c);
    const { pick, running } = await openSessionsPick();
    expect(c.requests.filter((r) => r.method === 'mino/sessions/list')).toEqual([{ method: 'mino/sessions/list', params: { scope: 'workspace' } }]);
    const items = pick.items as any[];
    expect(items.map((i) => i.label)).toEqual(['New chat', 'Add milk to the list', 'Release notes', 'Old refactor', ALL_FOLDERS_LABEL]);
    // The session's tokens, summed by the server; none reported: none shown.
    expect(items[1].description).toBe('2 h ago · 1 turn · 1,234 tokens');
    expect(items[3].description).toBe('2 h ago · 3 turns');
    expect(items[1].detail).toContain(WAITING_MARK);
    expect(items[2].detail).toContain(HELD_MARK);
    expect(items[3].detail).toBeUndefined();
    // No delete for the current session or one another Mino holds.
    expect(items.map((i) => (i.buttons ?? []).length)).toEqual([0, 1, 0, 1, 0]);
    expect(items[1].buttons[0].iconPath).toEqual(new fake.ThemeIcon('trash'));

    pick.accept(ALL_FOLDERS_LABEL);
    await settle();
    expect(c.requests.filter((r) => r.method === 'mino/sessions/list').at(-1)).toEqual({ method: 'mino/sessions/list', params: { scope: 'all' } });
    const all = pick.items as any[];
    expect(all.map((i) => i.label)).toContain('Elsewhere');
    expect(all.find((i) => i.label === 'Elsewhere').detail).toContain('/home/me/other');
    expect(all.map((i) => i.label)).not.toContain(ALL_FOLDERS_LABEL);
    pick.hide();
    await running;
    expect(pick.disposed).toBe(true);
  });

  it('choosing a session opens it: the view is told, rebuilt from its history, then its recovery (the gate); the old session\'s notifications are ignored', async () => {
    const c = client();
    serveSessions(c);
    // The current session had an acknowledgement due.
    c.notify('mino/recovery', {
      sessionId: 's1', turns: [{ turnId: 'o1', status: 'interrupted', calls: [] }],
      acknowledgementRequired: true, unacknowledgedTurnIds: ['o1'], repairs: [],
    });
    firstView.webview.receive({ type: 'ready' });
    await settle();
    expect(firstView.webview.posted).toContainEqual({ type: 'session', session: { sessionId: 's1', title: null } });
    c.replies.set('mino/sessions/open', (p: any) => ({ sessionId: p.sessionId, journalPath: '/tmp/s2.jsonl', cwd: '/tmp/mino-workspace', title: 'Add milk to the list' }));
    const { pick, running } = await openSessionsPick();
    const before = firstView.webview.posted.length;
    pick.accept('Add milk to the list');
    await running;
    await settle();
    expect(c.requests.filter((r) => r.method === 'mino/sessions/open')).toEqual([{ method: 'mino/sessions/open', params: { sessionId: 's2' } }]);
    expect(api.server.session).toEqual({ sessionId: 's2', title: 'Add milk to the list' });
    const after = firstView.webview.posted.slice(before) as any[];
    expect(after[0]).toEqual({ type: 'session', session: { sessionId: 's2', title: 'Add milk to the list' } });
    expect(after).toContainEqual({ type: 'history', history: { sessionId: 's2', turns: [], hasMore: false } });
    // The old session's recovery is not shown for the new one.
    expect(after.filter((m) => m.type === 'notification' && m.method === 'mino/recovery')).toEqual([]);
    expect(api.server.recovery).toBeUndefined();

    const recovery = {
      sessionId: 's2', turns: [{ turnId: 'm1', status: 'interrupted', calls: [{ callId: 'c', command: 'echo milk >> shopping.txt', result: { status: 'unknown', output: '' } }] }],
      acknowledgementRequired: true, unacknowledgedTurnIds: ['m1'], repairs: [],
    };
    c.notify('mino/recovery', recovery);
    await settle();
    const last = firstView.webview.posted.slice(before) as any[];
    expect(last.filter((m) => m.type === 'notification' && m.method === 'mino/recovery')).toEqual([
      { type: 'notification', method: 'mino/recovery', params: recovery },
    ]);
    // Late notifications of the old session reach neither the view nor the server state.
    const count = firstView.webview.posted.length;
    c.notify('mino/turnStarted', { sessionId: 's1', turnId: 'late', seq: 9, input: 'old' });
    c.notify('mino/recovery', { sessionId: 's1', turns: [], acknowledgementRequired: false, unacknowledgedTurnIds: [], repairs: [] });
    await settle();
    expect(firstView.webview.posted.length).toBe(count);
    expect(api.server.runningTurnId).toBeUndefined();
    expect(api.server.recovery).toEqual(recovery);
    // The new session's are.
    c.notify('mino/turnStarted', { sessionId: 's2', turnId: 'n1', seq: 0, input: 'new' });
    expect(api.server.runningTurnId).toBe('n1');
  });

  it('after a switch, a crash\'s Restart reopens the session that was current, not the workspace\'s default', async () => {
    const c = client();
    serveSessions(c);
    c.replies.set('mino/sessions/open', (p: any) => ({ sessionId: p.sessionId, journalPath: '/tmp/s4.jsonl', cwd: '/tmp/mino-workspace', title: 'Old refactor' }));
    const { pick, running } = await openSessionsPick();
    pick.accept('Old refactor');
    await running;
    c.crash();
    await fake.commands.executeCommand('mino.restartServer');
    await settle();
    await settle();
    expect(clients).toHaveLength(2);
    expect(client().clientOptions.initializationOptions).toEqual({ cwd: '/tmp/mino-workspace', session: 's4', approvalMode: 'ask' });
  });

  it('a held session (-32015) or a running turn (-32011) refuses the switch: the server\'s message is shown and nothing changes', async () => {
    const c = client();
    serveSessions(c);
    firstView.webview.receive({ type: 'ready' });
    await settle();
    for (const [code, message] of [
      [-32015, 'session s3 is open in another Mino process (pid 4242); close it there or open another session'],
      [-32011, 'a turn is in progress; cancel it or wait for it to end'],
    ] as const) {
      c.replies.set('mino/sessions/open', () => new RpcFailure(code, message));
      fake.mock.errorMessages.length = 0;
      const before = firstView.webview.posted.length;
      const { pick, running } = await openSessionsPick();
      pick.accept('Release notes');
      await running;
      await settle();
      expect(fake.mock.errorMessages).toHaveLength(1);
      expect(fake.mock.errorMessages[0].message).toContain(message);
      expect(api.server.session).toEqual({ sessionId: 's1', title: null });
      expect((firstView.webview.posted.slice(before) as any[]).filter((m) => m.type === 'session' || m.type === 'history')).toEqual([]);
    }
    // New Chat is refused the same way.
    c.replies.set('mino/sessions/new', () => new RpcFailure(-32011, 'a turn is in progress'));
    fake.mock.errorMessages.length = 0;
    await fake.commands.executeCommand('mino.newChat');
    expect(fake.mock.errorMessages[0].message).toContain('a turn is in progress');
    expect(api.server.session?.sessionId).toBe('s1');
  });

  it('New Chat run before the view was ever shown waits for the server the view starts', async () => {
    await deactivate();
    for (const d of context.subscriptions.splice(0)) d.dispose();
    fake.mock.reset();
    clients.length = 0;
    fake.mock.config.set('mino.serverPath', serverBin);
    context = fake.createExtensionContext();
    api = activate(context as any);
    // VS Code shows the view on the command's focus request: that starts the server, which takes a while.
    fake.mock.commands.set('mino.chat.focus', () => void openView());
    const origStart = LanguageClient.prototype.start;
    LanguageClient.prototype.start = async function (this: LanguageClient) {
      await new Promise((r) => setTimeout(r, 20));
      return origStart.call(this);
    };
    try {
      await fake.commands.executeCommand('mino.newChat');
    } finally {
      LanguageClient.prototype.start = origStart;
    }
    expect(fake.mock.errorMessages).toEqual([]);
    expect(client().requests.filter((r) => r.method === 'mino/sessions/new')).toHaveLength(1);
  });

  it('New Chat opens a new session of this workspace (the server\'s default) and focuses a cleared input', async () => {
    const c = client();
    serveSessions(c);
    c.replies.set('mino/sessions/new', { sessionId: 's7', journalPath: '/tmp/s7.jsonl', cwd: '/tmp/mino-workspace', title: null });
    firstView.webview.receive({ type: 'ready' });
    await settle();
    await fake.commands.executeCommand('mino.newChat');
    await settle();
    expect(c.requests.filter((r) => r.method === 'mino/sessions/new')).toEqual([{ method: 'mino/sessions/new', params: {} }]);
    expect(firstView.webview.posted).toContainEqual({ type: 'session', session: { sessionId: 's7', title: null } });
    expect(firstView.webview.posted).toContainEqual({ type: 'history', history: { sessionId: 's7', turns: [], hasMore: false } });
    expect(firstView.webview.posted).toContainEqual({ type: 'focus', clear: true });
  });

  it('delete asks in a modal whose default is Cancel; only Delete trashes the session, and the list is read again', async () => {
    const c = client();
    serveSessions(c);
    c.replies.set('mino/sessions/delete', { trashedTo: '/tmp/home/trash/s4' });
    const { pick, running } = await openSessionsPick();
    pick.triggerButton('Old refactor');
    await settle();
    expect(fake.mock.warningMessages).toHaveLength(1);
    const asked = fake.mock.warningMessages[0];
    expect(asked.message).toContain('Old refactor');
    expect(asked.options).toMatchObject({ modal: true });
    expect(asked.items.map((i) => i.title)).toEqual(['Cancel', 'Delete']);
    expect(asked.items[0].isCloseAffordance).toBe(true);
    expect(c.requests.filter((r) => r.method === 'mino/sessions/delete')).toEqual([]);

    const lists = c.requests.filter((r) => r.method === 'mino/sessions/list').length;
    fake.mock.warningChoice = 'Delete';
    pick.triggerButton('Old refactor');
    await settle();
    expect(c.requests.filter((r) => r.method === 'mino/sessions/delete')).toEqual([{ method: 'mino/sessions/delete', params: { sessionId: 's4' } }]);
    expect(c.requests.filter((r) => r.method === 'mino/sessions/list').length).toBe(lists + 1);
    pick.hide();
    await running;
  });

  it('Rename asks for a title prefilled with the current one and the header follows; an untitled session takes the server\'s title after its first turn', async () => {
    const c = client();
    serveSessions(c);
    firstView.webview.receive({ type: 'ready' });
    await settle();
    // The server named the session after the first question.
    c.replies.set('mino/sessions/list', { sessions: [entry('s1', 'Fix the build', { current: true })] });
    c.notify('mino/turnStarted', { sessionId: 's1', turnId: 't1', seq: 0, input: 'Fix the build\nplease' });
    c.notify('mino/turnEnded', { sessionId: 's1', turnId: 't1', seq: 1, status: 'completed' });
    await settle();
    expect(firstView.webview.posted.at(-1)).toEqual({ type: 'session', session: { sessionId: 's1', title: 'Fix the build' } });

    fake.mock.inputBoxValue = '  Build fixes  ';
    // The header's Rename goes through the command.
    firstView.webview.receive({ type: 'renameSession' });
    await settle();
    expect(fake.mock.inputBoxOptions.at(-1)).toMatchObject({ value: 'Fix the build' });
    expect(fake.mock.inputBoxOptions.at(-1).validateInput('   ')).toBeTruthy();
    expect(fake.mock.inputBoxOptions.at(-1).validateInput('x'.repeat(201))).toBeTruthy();
    expect(fake.mock.inputBoxOptions.at(-1).validateInput('ok')).toBeUndefined();
    expect(c.requests.filter((r) => r.method === 'mino/sessions/rename')).toEqual([
      { method: 'mino/sessions/rename', params: { sessionId: 's1', title: 'Build fixes' } },
    ]);
    expect(firstView.webview.posted.at(-1)).toEqual({ type: 'session', session: { sessionId: 's1', title: 'Build fixes' } });
    // Dismissed: nothing is sent.
    fake.mock.inputBoxValue = undefined;
    await fake.commands.executeCommand('mino.renameSession');
    expect(c.requests.filter((r) => r.method === 'mino/sessions/rename')).toHaveLength(1);
  });

  it('relative times', () => {
    const t = Date.parse('2026-12-01T12:00:00Z');
    expect(relativeTime('2026-12-01T11:59:40Z', t)).toBe('just now');
    expect(relativeTime('2026-12-01T11:55:00Z', t)).toBe('5 min ago');
    expect(relativeTime('2026-11-30T11:00:00Z', t)).toBe('yesterday');
    expect(relativeTime('2026-11-20T12:00:00Z', t)).toBe('11 days ago');
    expect(relativeTime('2026-01-02T12:00:00Z', t)).toBe('2026-01-02');
  });
});

describe('approval rules: decisions and the Rules quick pick', () => {
  it('a rule decision or a reasoned deny from the card reaches mino/approval as the person wrote it', async () => {
    const c = client();
    firstView.webview.receive({ type: 'approval', turnId: 't1', callId: 'a', decision: 'allowSession', rule: { kind: 'prefix', command: 'npm run test' } });
    firstView.webview.receive({ type: 'approval', turnId: 't1', callId: 'b', decision: 'allowWorkspace', rule: { kind: 'exact', command: 'cargo fmt --all' } });
    firstView.webview.receive({ type: 'approval', turnId: 't1', callId: 'c', decision: 'deny', reason: 'not on main' });
    firstView.webview.receive({ type: 'approval', turnId: 't1', callId: 'e', decision: 'denySession', rule: { kind: 'prefix', command: 'git push' } });
    firstView.webview.receive({ type: 'approval', turnId: 't1', callId: 'f', decision: 'denyWorkspace', rule: { kind: 'path', pattern: 'secrets/**' } });
    await settle();
    expect(c.requests.filter((r) => r.method === 'mino/approval').map((r) => r.params)).toEqual([
      { turnId: 't1', callId: 'a', decision: 'allowSession', rule: { kind: 'prefix', command: 'npm run test' } },
      { turnId: 't1', callId: 'b', decision: 'allowWorkspace', rule: { kind: 'exact', command: 'cargo fmt --all' } },
      { turnId: 't1', callId: 'c', decision: 'deny', reason: 'not on main' },
      // A deny rule travels with its decision, as the person edited it.
      { turnId: 't1', callId: 'e', decision: 'denySession', rule: { kind: 'prefix', command: 'git push' } },
      { turnId: 't1', callId: 'f', decision: 'denyWorkspace', rule: { kind: 'path', pattern: 'secrets/**' } },
    ]);
    // A refused rule comes back to the card with its code.
    c.replies.set('mino/approval', () => new RpcFailure(-32602, 'a rule for `bash` would allow any command'));
    firstView.webview.receive({ type: 'approval', turnId: 't1', callId: 'd', decision: 'allowSession', rule: { kind: 'prefix', command: 'bash' } });
    await settle();
    expect(firstView.webview.posted).toContainEqual({
      type: 'error', request: 'approval', code: -32602, message: 'a rule for `bash` would allow any command', turnId: 't1', callId: 'd',
    });
  });

  it('Compact Conversation sends mino/compact and says in one message what happened', async () => {
    const c = client();
    c.replies.set('mino/compact', () => ({ compacted: true, summarizedTurns: 3, keptTurns: 1, throughTurnId: 'turn-4' }));
    await fake.commands.executeCommand('mino.compact');
    c.replies.set('mino/compact', () => ({ compacted: false, summarizedTurns: 0, keptTurns: 0, reason: 'nothing to compact: no turn has ended since the last compaction' }));
    await fake.commands.executeCommand('mino.compact');
    c.replies.set('mino/compact', () => new RpcFailure(-32011, 'turn turn-5 is still running; wait for it to end or cancel it'));
    await fake.commands.executeCommand('mino.compact');
    expect(c.requests.filter((r) => r.method === 'mino/compact')).toHaveLength(3);
    expect(fake.mock.infoMessages.map((m) => m.message).slice(-2)).toEqual([
      'Mino: compacted, 3 turn(s) summarised by the model; 1 with unknown, not executed or recovered results still sent as they were. Every turn stays in the history.',
      'Mino: not compacted: nothing to compact: no turn has ended since the last compaction.',
    ]);
    expect(fake.mock.errorMessages.at(-1)!.message).toContain('turn turn-5 is still running');
  });

  it('Rules lists the rules (and an unreadable workspace file) with a button that revokes one', async () => {
    const c = client();
    let rules = [
      { id: 'r1', kind: 'prefix', command: 'npm test', scope: 'workspace' },
      { id: 'r2', kind: 'exact', command: 'cargo fmt --all', scope: 'session' },
    ];
    c.replies.set('mino/rules/list', () => ({
      rules, workspaceFile: '/tmp/mino-workspace/.mino/rules.json', workspaceFileError: 'line 3: expected a rule',
    }));
    c.replies.set('mino/rules/revoke', (p: any) => {
      rules = rules.filter((r) => r.id !== p.id);
      return {};
    });
    const running = fake.commands.executeCommand('mino.rules');
    await settle();
    const pick = fake.mock.quickPicks.at(-1)!;
    const items = pick.items as any[];
    expect(items[0].label).toContain('/tmp/mino-workspace/.mino/rules.json could not be read');
    expect(items[0].detail).toBe('line 3: expected a rule');
    expect(items.slice(1).map((i) => [i.label, i.description])).toEqual([
      ['npm test', 'commands starting with this · this workspace'],
      ['cargo fmt --all', 'exactly this command · this session'],
    ]);
    pick.triggerButton('npm test');
    await settle();
    expect(c.requests.filter((r) => r.method === 'mino/rules/revoke')).toEqual([{ method: 'mino/rules/revoke', params: { id: 'r1' } }]);
    expect((pick.items as any[]).map((i) => i.label)).not.toContain('npm test');
    pick.hide();
    await running;
  });
});

describe('models: Choose Model and the header', () => {
  it('Choose Model (title bar, palette) lists the models with the current one marked; choosing one selects it and the header shows it; a running turn refuses', async () => {
    const title = pkg.contributes.menus['view/title'] as { command: string; when: string; group: string }[];
    expect(title.find((m) => m.command === 'mino.chooseModel')!.group).toMatch(/^navigation@/);
    const commands = pkg.contributes.commands as { command: string; title: string }[];
    expect(commands.find((c) => c.command === 'mino.chooseModel')!.title).toBe('Choose Model');

    const c = client();
    firstView.webview.receive({ type: 'ready' });
    await settle();
    // The model `initialize` named is in the header.
    expect(firstView.webview.posted).toContainEqual({ type: 'model', model: 'mock' });
    c.replies.set('mino/models/list', {
      models: [{ id: 'mock' }, { id: 'mock-large', contextWindow: 32768 }],
      current: 'mock',
      source: 'service',
    });
    c.replies.set('mino/models/select', (p: any) => ({ model: p.model }));

    // The header's model goes through the command.
    firstView.webview.receive({ type: 'chooseModel' });
    await settle();
    const pick = fake.mock.quickPicks.at(-1)!;
    expect((pick.items as any[]).map((i) => [i.label, i.description])).toEqual([
      ['mock', '$(check) current'],
      ['mock-large', '32768 tokens'],
      ['$(edit) Another model…', undefined],
    ]);
    expect(pick.placeholder).toContain('the service offers');
    pick.accept('mock-large');
    await settle();
    expect(c.requests.filter((r) => r.method === 'mino/models/select')).toEqual([
      { method: 'mino/models/select', params: { model: 'mock-large' } },
    ]);
    expect(firstView.webview.posted.at(-1)).toEqual({ type: 'model', model: 'mock-large' });

    // The current one chosen again: nothing is sent.
    const again = fake.commands.executeCommand('mino.chooseModel');
    await settle();
    fake.mock.quickPicks.at(-1)!.accept('mock');
    await again;
    expect(c.requests.filter((r) => r.method === 'mino/models/select')).toHaveLength(1);

    // While a turn runs the server refuses, and the person is told why.
    c.replies.set('mino/models/select', () => new RpcFailure(-32011, 'turn t1 is still running'));
    const refused = fake.commands.executeCommand('mino.chooseModel');
    await settle();
    fake.mock.quickPicks.at(-1)!.accept('mock-large');
    await refused;
    await settle();
    expect(fake.mock.errorMessages.at(-1)!.message).toContain('turn t1 is still running');
    expect(fake.mock.errorMessages.at(-1)!.message).toContain('Cancel the running turn');
    expect(firstView.webview.posted.filter((m: any) => m.type === 'model').at(-1)).toEqual({ type: 'model', model: 'mock-large' });
  });
});

describe('edit review: the diff editor and its read-only proposed document', () => {
  const WS = '/tmp/mino-workspace';
  const SHOPPING = 'bread\nbutter\njam\n';
  const MILK_DIFF = '--- a/shopping.txt\n+++ b/shopping.txt\n@@ -1,3 +1,4 @@\n bread\n butter\n+milk\n jam\n';

  function editRequest(callId: string, edit: Record<string, unknown>) {
    return {
      sessionId: 's1', turnId: 't1', seq: 1, callId, command: `edit_file ${edit.path}`, directory: WS,
      environment: {}, limits: { timeoutSeconds: 0, outputLimitBytes: 0 }, sandbox: 'off', approvalMode: 'ask',
      edit: { tool: 'edit_file', newFile: false, leavesWorkspace: false, ...edit },
    };
  }

  /** The last `vscode.diff` call: [left, right, title, options]. */
  function lastDiff(): any[] {
    const call = fake.mock.executed.filter((e) => e.command === 'vscode.diff').at(-1);
    expect(call, 'vscode.diff was called').toBeTruthy();
    return call!.args;
  }

  /** What VS Code would show for `uri`: the registered provider's content (no file system backs the scheme). */
  async function contentOf(uri: any): Promise<string> {
    return (await fake.workspace.openTextDocument(uri)).getText();
  }

  it('the proposed document holds the diff applied to the file as it was when asked; vscode.diff opens file ↔ proposed; a later change on disk changes nothing', async () => {
    fake.mock.files.set(`${WS}/shopping.txt`, SHOPPING);
    client().notify('mino/approvalRequest', editRequest('call_e', { path: 'shopping.txt', size: 22, diff: MILK_DIFF }));
    await settle();
    await fake.commands.executeCommand('mino.reviewPendingEdit');
    const [left, right, title, options] = lastDiff();
    // The left side is the file itself; the right a read-only virtual document.
    expect(left.scheme).toBe('file');
    expect(left.fsPath).toBe(`${WS}/shopping.txt`);
    expect(right.scheme).toBe(PROPOSED_SCHEME);
    expect(right.fsPath).toBe('/shopping.txt');
    expect(await contentOf(right)).toBe('bread\nbutter\nmilk\njam\n');
    expect(title).toContain('shopping.txt');
    expect(options).toMatchObject({ preview: true });
    // Read-only: only a content provider serves the scheme (VS Code never writes to one).
    expect([...fake.mock.contentProviders.keys()]).toEqual([PROPOSED_SCHEME]);
    expect(fake.workspace).not.toHaveProperty('registerFileSystemProvider');

    // The file changes on disk after the request arrived: the proposed content is still
    // what was approved, and the left side is the text the diff was made from.
    fake.mock.files.set(`${WS}/shopping.txt`, 'eggs\n');
    await fake.commands.executeCommand('mino.reviewPendingEdit');
    const [left2, right2, title2] = lastDiff();
    expect(left2.scheme).toBe(PROPOSED_SCHEME);
    expect(await contentOf(left2)).toBe(SHOPPING);
    expect(await contentOf(right2)).toBe('bread\nbutter\nmilk\njam\n');
    expect(title2).toContain('as it was when proposed');
    // Reviewing decided nothing.
    expect(client().requests.filter((r) => r.method === 'mino/approval')).toEqual([]);
  });

  it('an edit with hunks dropped in the card: Review diff shows the kept hunks alone, and Approve sends them as acceptedHunks', async () => {
    const before = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
    const after = before.replace('line 2\n', 'line two\n').replace('line 15\n', 'line fifteen\n').replace('line 28\n', 'line 28\nline 28b\n');
    // The diff mino-server proposes (three hunks), as `diff -U3` writes it.
    const diff = [
      '--- a/notes.txt', '+++ b/notes.txt',
      '@@ -1,5 +1,5 @@', ' line 1', '-line 2', '+line two', ' line 3', ' line 4', ' line 5',
      '@@ -12,7 +12,7 @@', ' line 12', ' line 13', ' line 14', '-line 15', '+line fifteen', ' line 16', ' line 17', ' line 18',
      '@@ -25,6 +25,7 @@', ' line 25', ' line 26', ' line 27', ' line 28', '+line 28b', ' line 29', ' line 30', '',
    ].join('\n');
    fake.mock.files.set(`${WS}/notes.txt`, before);
    client().notify('mino/approvalRequest', editRequest('call_n', { path: 'notes.txt', size: Buffer.byteLength(after), diff }));
    await settle();
    // Whole: the proposal.
    firstView.webview.receive({ type: 'reviewEdit', turnId: 't1', callId: 'call_n' });
    await settle();
    expect(await contentOf(lastDiff()[1])).toBe(after);
    // The first and last hunks kept: the middle one is not in the proposed side; line numbers after it still match.
    firstView.webview.receive({ type: 'reviewEdit', turnId: 't1', callId: 'call_n', acceptedHunks: [0, 2] });
    await settle();
    const [, right, title] = lastDiff();
    expect(await contentOf(right)).toBe(before.replace('line 2\n', 'line two\n').replace('line 28\n', 'line 28\nline 28b\n'));
    expect(title).toContain('2 of 3 hunks kept');
    // Only the middle one.
    firstView.webview.receive({ type: 'reviewEdit', turnId: 't1', callId: 'call_n', acceptedHunks: [1] });
    await settle();
    expect(await contentOf(lastDiff()[1])).toBe(before.replace('line 15\n', 'line fifteen\n'));
    expect(client().requests.filter((r) => r.method === 'mino/approval')).toEqual([]);


    // In the diff editor: a lens above each hunk keeps or rejects it; the card follows.
    const lenses = async () => {
      const provider = fake.mock.codeLensProviders[0].provider;
      const doc = await fake.workspace.openTextDocument(lastDiff()[1]);
      return ((await provider.provideCodeLenses(doc)) as any[]).map((l) => [l.range.startLine, l.command.title, l.command.command, l.command.arguments]);
    };
    firstView.webview.receive({ type: 'reviewEdit', turnId: 't1', callId: 'call_n' });
    await settle();
    expect(await lenses()).toEqual([
      [0, 'Mino: reject hunk 1 of 3', 'mino.rejectHunk', ['t1', 'call_n', 0]],
      [11, 'Mino: reject hunk 2 of 3', 'mino.rejectHunk', ['t1', 'call_n', 1]],
      [24, 'Mino: reject hunk 3 of 3', 'mino.rejectHunk', ['t1', 'call_n', 2]],
    ]);
    const toCard = () => firstView.webview.posted.filter((m: any) => m.type === 'hunks');
    await fake.commands.executeCommand('mino.rejectHunk', 't1', 'call_n', 2);
    await settle();
    expect(toCard()).toEqual([{ type: 'hunks', turnId: 't1', callId: 'call_n', kept: [0, 1] }]);
    expect(await contentOf(lastDiff()[1])).toBe(before.replace('line 2\n', 'line two\n').replace('line 15\n', 'line fifteen\n'));
    expect((await lenses())[2]).toEqual([24, 'Mino: keep hunk 3 of 3 (rejected)', 'mino.keepHunk', ['t1', 'call_n', 2]]);
    await fake.commands.executeCommand('mino.keepHunk', 't1', 'call_n', 2);
    await settle();
    expect(toCard().at(-1)).toEqual({ type: 'hunks', turnId: 't1', callId: 'call_n', kept: null });
    // The card's checkboxes tell the editor (and are not echoed back).
    firstView.webview.receive({ type: 'hunksKept', turnId: 't1', callId: 'call_n', kept: [1] });
    await settle();
    expect(await contentOf(lastDiff()[1])).toBe(before.replace('line 15\n', 'line fifteen\n'));
    expect((await lenses()).map((l) => l[1])).toEqual(['Mino: keep hunk 1 of 3 (rejected)', 'Mino: reject hunk 2 of 3', 'Mino: keep hunk 3 of 3 (rejected)']);
    expect(toCard()).toHaveLength(2);
    // A lens decides nothing.
    expect(client().requests.filter((r) => r.method === 'mino/approval')).toEqual([]);

    firstView.webview.receive({ type: 'approval', turnId: 't1', callId: 'call_n', decision: 'approve', acceptedHunks: [0, 2] });
    await settle();
    expect(client().requests.filter((r) => r.method === 'mino/approval').map((r) => r.params)).toEqual([
      { turnId: 't1', callId: 'call_n', decision: 'approve', acceptedHunks: [0, 2] },
    ]);
    // Answered: no lens is offered any more.
    client().notify('mino/toolStarted', { sessionId: 's1', turnId: 't1', seq: 2, callId: 'call_n', command: 'edit_file notes.txt', approvedBy: { kind: 'user' }, sandbox: 'off' });
    await settle();
    expect(await lenses()).toEqual([]);
  });

  it('builds the proposed content of a CRLF file and of one without a final newline; a size other than the request\'s is refused', () => {
    const crlf = { tool: 'edit_file' as const, path: 'x.txt', newFile: false, leavesWorkspace: false, size: 12,
      diff: '--- a/x.txt\n+++ b/x.txt\n@@ -1,3 +1,4 @@\n a\r\n b\r\n+m\r\n c\r\n' };
    expect(buildProposed(crlf, 'a\r\nb\r\nc\r\n')).toEqual({ kind: 'proposed', before: 'a\r\nb\r\nc\r\n', proposed: 'a\r\nb\r\nm\r\nc\r\n' });
    const noFinalNewline = { ...crlf, size: 6,
      diff: '--- a/x.txt\n+++ b/x.txt\n@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+ce\n\\ No newline at end of file\n' };
    expect(buildProposed(noFinalNewline, 'a\nb')).toMatchObject({ kind: 'proposed', proposed: 'a\nb\nce' });
    expect(buildProposed({ ...crlf, size: 13 }, 'a\r\nb\r\nc\r\n')).toMatchObject({ kind: 'diffOnly', reason: expect.stringContaining('gives 12 bytes where Mino says the file will have 13') });
  });

  it('a new file is compared with an empty document', async () => {
    client().notify('mino/approvalRequest', editRequest('call_n', {
      tool: 'write_file', path: 'notes.txt', newFile: true, size: 5, diff: '--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+milk\n',
    }));
    await settle();
    await fake.commands.executeCommand('mino.reviewPendingEdit');
    const [left, right, title] = lastDiff();
    expect(left.scheme).toBe(PROPOSED_SCHEME);
    expect(await contentOf(left)).toBe('');
    expect(await contentOf(right)).toBe('milk\n');
    expect(title).toContain('new file');
  });

  it('a diff that does not apply to the file as read is shown as a read-only diff document saying why', async () => {
    // The file already differs from what the diff was made from when the request arrives.
    fake.mock.files.set(`${WS}/shopping.txt`, 'bread\nmargarine\njam\n');
    client().notify('mino/approvalRequest', editRequest('call_x', { path: 'shopping.txt', size: 22, diff: MILK_DIFF }));
    await settle();
    await fake.commands.executeCommand('mino.reviewPendingEdit');
    expect(fake.mock.executed.filter((e) => e.command === 'vscode.diff')).toEqual([]);
    const shown = fake.mock.shownDocuments.at(-1)!;
    expect(shown.document.languageId).toBe('diff');
    expect(shown.document.uri.scheme).toBe(PROPOSED_SCHEME);
    const text = shown.document.getText();
    expect(text).toContain('does not apply to shopping.txt');
    expect(text.endsWith(MILK_DIFF)).toBe(true);
    expect(fake.mock.warningMessages.at(-1)!.message).toContain('does not apply');
  });

  it("a restored card's Review diff opens the diff the history recorded as a read-only diff document named after the path; it sends no decision", async () => {
    const c = client();
    const recorded = (callId: string, diff: string) => ({
      callId, command: 'edit_file shopping.txt', tool: 'edit_file', approvedBy: { kind: 'user' }, sandbox: 'off',
      edit: { tool: 'edit_file', path: 'shopping.txt', newFile: false, size: 22, leavesWorkspace: false, diff },
      result: diff ? { status: 'success', output: 'Edited shopping.txt.', diff } : { status: 'error', output: 'not found' },
    });
    const EGGS_DIFF = MILK_DIFF.replace('+milk', '+eggs');
    c.replies.set('mino/history', { sessionId: 's1', hasMore: false, turns: [{
      turnId: 't7', input: 'Add milk.', text: '', status: 'completed', notices: [],
      calls: [recorded('call_h', MILK_DIFF), recorded('call_h', EGGS_DIFF), recorded('call_e', '')],
    }] });
    firstView.webview.receive({ type: 'ready' });
    await settle();
    // The file on disk now holds something else: the document is what was recorded, not the file.
    fake.mock.files.set(`${WS}/shopping.txt`, 'eggs\n');
    firstView.webview.receive({ type: 'reviewRecordedEdit', turnId: 't7', callId: 'call_h', occurrence: 0 });
    await settle();
    const shown = fake.mock.shownDocuments.at(-1)!;
    expect(shown.document.languageId).toBe('diff');
    expect(shown.document.uri.scheme).toBe(PROPOSED_SCHEME);
    expect(shown.document.uri.path).toBe('/shopping.txt.diff');
    expect(shown.document.getText()).toBe(MILK_DIFF);
    // The second call of the same id shows its own diff.
    firstView.webview.receive({ type: 'reviewRecordedEdit', turnId: 't7', callId: 'call_h', occurrence: 1 });
    await settle();
    expect(fake.mock.shownDocuments.at(-1)!.document.getText()).toBe(EGGS_DIFF);
    // Each call its own document: VS Code keeps a document per URI.
    expect(fake.mock.shownDocuments.at(-1)!.document.uri.toString()).not.toBe(shown.document.uri.toString());
    // Read-only: served by the content provider alone; no diff editor, no decision.
    expect([...fake.mock.contentProviders.keys()]).toEqual([PROPOSED_SCHEME]);
    expect(fake.mock.executed.filter((e) => e.command === 'vscode.diff')).toEqual([]);
    expect(c.requests.filter((r) => r.method === 'mino/approval')).toEqual([]);
    // A call with no recorded diff (or one the view was never sent) opens nothing and says why.
    const opened = fake.mock.shownDocuments.length;
    firstView.webview.receive({ type: 'reviewRecordedEdit', turnId: 't7', callId: 'call_e', occurrence: 0 });
    firstView.webview.receive({ type: 'reviewRecordedEdit', turnId: 't8', callId: 'call_h', occurrence: 0 });
    await settle();
    expect(fake.mock.shownDocuments).toHaveLength(opened);
    expect(fake.mock.infoMessages.at(-1)!.message).toContain('no recorded diff of this edit');
  });

  it("a card's Review diff opens that call's review and sends no decision; the palette command finds no pending edit once the call started", async () => {
    fake.mock.files.set(`${WS}/shopping.txt`, SHOPPING);
    const c = client();
    c.notify('mino/approvalRequest', editRequest('call_c', { path: 'shopping.txt', size: 22, diff: MILK_DIFF }));
    await settle();
    firstView.webview.receive({ type: 'reviewEdit', turnId: 't1', callId: 'call_c' });
    await settle();
    const [, right] = lastDiff();
    expect(await contentOf(right)).toBe('bread\nbutter\nmilk\njam\n');
    expect(c.requests.filter((r) => r.method === 'mino/approval')).toEqual([]);

    c.notify('mino/toolStarted', { sessionId: 's1', turnId: 't1', seq: 2, callId: 'call_c', command: 'edit_file shopping.txt', approvedBy: { kind: 'user' }, sandbox: 'off' });
    const before = fake.mock.executed.filter((e) => e.command === 'vscode.diff').length;
    await fake.commands.executeCommand('mino.reviewPendingEdit');
    expect(fake.mock.executed.filter((e) => e.command === 'vscode.diff')).toHaveLength(before);
    expect(fake.mock.infoMessages.at(-1)!.message).toContain('no edit is waiting for your approval');
    // The card's own button still opens it after the decision.
    firstView.webview.receive({ type: 'reviewEdit', turnId: 't1', callId: 'call_c' });
    await settle();
    expect(fake.mock.executed.filter((e) => e.command === 'vscode.diff')).toHaveLength(before + 1);
  });
});

describe('approval mode and sandbox: settings, Set Approval Mode, the header', () => {
  /** The server's answer to mino/settings/update: what it was asked, over what is in force. */
  function acceptSettings(c: LanguageClient, inForce = { approvalMode: 'ask', sandbox: 'off' }) {
    c.replies.set('mino/settings/update', (p: any) => {
      Object.assign(inForce, p);
      return { ...inForce, sandboxSupport: 'read-only and workspace-write can be enforced' };
    });
  }
  const settingsRequests = (c: LanguageClient) => c.requests.filter((r) => r.method === 'mino/settings/update').map((r) => r.params);
  const postedModes = (view: fake.FakeWebviewView) => view.webview.posted.filter((m: any) => m.type === 'modes');
  const REFUSAL = 'the sandbox mode workspace-write cannot be enforced here: Landlock is not available in this kernel';

  it('both settings are contributed with every mode the protocol lists, described, defaulting to ask and off; each is applied live, every other setting asks for a restart', () => {
    const props = pkg.contributes.configuration.properties;
    expect(props['mino.approvalMode']).toMatchObject({ type: 'string', enum: APPROVAL_MODES, default: 'ask' });
    expect(props['mino.sandbox']).toMatchObject({ type: 'string', enum: SANDBOX_MODES, default: 'off' });
    expect(APPROVAL_MODES).toEqual(['ask', 'rules', 'sandboxed-auto', 'plan']);
    expect(SANDBOX_MODES).toEqual(['off', 'read-only', 'workspace-write']);
    for (const key of ['mino.approvalMode', 'mino.sandbox']) {
      expect(props[key].enumDescriptions, key).toHaveLength(props[key].enum.length);
      expect(props[key].markdownDescription, key).toBeTruthy();
    }
    expect([...LIVE_SETTINGS, ...RESTART_SETTINGS].sort()).toEqual(Object.keys(props).sort());
  });

  it('the settings go to initialize: the approval mode always, the sandbox when it names one; a value Mino does not know fails the start naming the setting', async () => {
    fake.mock.config.set('mino.approvalMode', 'rules');
    fake.mock.config.set('mino.sandbox', 'workspace-write');
    await api.server.restart();
    expect(client().clientOptions.initializationOptions).toEqual({
      cwd: '/tmp/mino-workspace', session: 's1', approvalMode: 'rules', sandbox: 'workspace-write',
    });

    fake.mock.config.set('mino.approvalMode', 'yolo');
    const before = clients.length;
    await api.server.restart();
    expect(clients).toHaveLength(before);
    expect(api.server.state).toBe('failed');
    expect(api.server.stateDetail.fixSetting).toBe('mino.approvalMode');
    expect(fake.mock.errorMessages.at(-1)!.message).toBe(
      'Mino: mino.approvalMode is "yolo", which Mino does not know. Set it to one of: ask, rules, sandboxed-auto, plan.');
  });

  it('a sandbox the machine cannot enforce, refused by initialize, is named with the setting that fixes it', async () => {
    fake.mock.config.set('mino.sandbox', 'workspace-write');
    settings.nextStartError = new RpcFailure(-32602, REFUSAL);
    await api.server.restart();
    expect(api.server.state).toBe('failed');
    expect(api.server.stateDetail).toEqual({
      message: `Mino server refused the sandbox workspace-write (mino.sandbox): ${REFUSAL}`,
      fixSetting: 'mino.sandbox',
    });
    expect(fake.mock.errorMessages.at(-1)!.message).toContain('refused the sandbox workspace-write (mino.sandbox)');
  });

  it('a change of either setting is sent with mino/settings/update (no restart); the header follows the answer; a refusal names what was refused and why, and claims nothing', async () => {
    const c = client();
    firstView.webview.receive({ type: 'ready' });
    await settle();
    // initialize said: ask, off.
    expect(postedModes(firstView).at(-1)).toEqual({ type: 'modes', approvalMode: 'ask', sandbox: 'off' });
    acceptSettings(c);

    fake.mock.changeConfig({ 'mino.approvalMode': 'rules' });
    await settle();
    expect(settingsRequests(c)).toEqual([{ approvalMode: 'rules' }]);
    expect(clients).toHaveLength(1);
    expect(fake.mock.infoMessages.filter((m) => m.items.includes('Restart'))).toEqual([]);
    expect(postedModes(firstView).at(-1)).toEqual({ type: 'modes', approvalMode: 'rules', sandbox: 'off' });
    expect(api.server.modes).toMatchObject({ approvalMode: 'rules', sandbox: 'off' });

    // A sandbox this machine cannot enforce: refused, said so, nothing claimed.
    c.replies.set('mino/settings/update', () => new RpcFailure(-32602, REFUSAL));
    const shown = postedModes(firstView).length;
    fake.mock.changeConfig({ 'mino.sandbox': 'workspace-write' });
    await settle();
    expect(settingsRequests(c).at(-1)).toEqual({ sandbox: 'workspace-write' });
    expect(fake.mock.errorMessages.at(-1)).toEqual({
      message: `Mino refused the sandbox workspace-write (from the setting mino.sandbox): ${REFUSAL} Still in force: approval mode rules, sandbox off.`,
      items: ['Open Settings'],
    });
    expect(postedModes(firstView)).toHaveLength(shown);
    expect(api.server.modes).toMatchObject({ approvalMode: 'rules', sandbox: 'off' });

    // A setting read only at start still offers the restart.
    fake.mock.changeConfig({ 'mino.model': 'gpt-other' });
    await settle();
    expect(fake.mock.infoMessages.at(-1)!.items).toEqual(['Restart']);
    expect(settingsRequests(c)).toHaveLength(2);
  });

  it('a change made while the server is starting reaches it once it is ready', async () => {
    await api.server.stop();
    const starting = api.server.start();
    expect(api.server.state).toBe('starting');
    fake.mock.changeConfig({ 'mino.approvalMode': 'rules' });
    await starting;
    await settle();
    expect(api.server.state).toBe('ready');
    expect(settingsRequests(client())).toEqual([{ approvalMode: 'rules' }]);
  });

  it('Set Approval Mode (palette, title bar, header): every mode described, plan among them, the current marked, ask focused whatever is current; Enter without moving never loosens', async () => {
    const commands = pkg.contributes.commands as { command: string; title: string; category: string }[];
    expect(commands.find((m) => m.command === 'mino.setApprovalMode')).toMatchObject({ title: 'Set Approval Mode', category: 'Mino' });
    const title = pkg.contributes.menus['view/title'] as { command: string; when: string; group: string }[];
    expect(title.find((m) => m.command === 'mino.setApprovalMode')).toMatchObject({ when: 'view == mino.chat' });

    const c = client();
    acceptSettings(c);
    // The header's mode goes through the command.
    firstView.webview.receive({ type: 'setApprovalMode' });
    await settle();
    let pick = fake.mock.quickPicks.at(-1)!;
    expect((pick.items as any[]).map((i) => [i.label, i.description, i.detail])).toEqual([
      ['ask', '$(check) current', APPROVAL_MODE_DESCRIPTIONS.ask],
      ['rules', undefined, APPROVAL_MODE_DESCRIPTIONS.rules],
      ['sandboxed-auto', undefined, APPROVAL_MODE_DESCRIPTIONS['sandboxed-auto']],
      ['plan', undefined, APPROVAL_MODE_DESCRIPTIONS.plan],
    ]);
    expect(APPROVAL_MODE_DESCRIPTIONS.ask).toContain('every command and edit asks');
    expect(APPROVAL_MODE_DESCRIPTIONS.plan).toContain('Commands and edits are refused');
    expect((pick.activeItems as any[]).map((i) => i.label)).toEqual(['ask']);
    pick.acceptFocused();
    await settle();
    expect(settingsRequests(c)).toEqual([]);

    // Moving to rules and accepting it.
    let running = fake.commands.executeCommand('mino.setApprovalMode');
    await settle();
    fake.mock.quickPicks.at(-1)!.accept('rules');
    await running;
    expect(settingsRequests(c)).toEqual([{ approvalMode: 'rules' }]);
    expect(firstView.webview.posted.at(-1)).toEqual({ type: 'modes', approvalMode: 'rules', sandbox: 'off' });

    // Now rules is current and marked, but the focus is still on ask.
    running = fake.commands.executeCommand('mino.setApprovalMode');
    await settle();
    pick = fake.mock.quickPicks.at(-1)!;
    expect((pick.items as any[]).map((i) => i.description)).toEqual([undefined, '$(check) current', undefined, undefined]);
    expect((pick.activeItems as any[]).map((i) => i.label)).toEqual(['ask']);
    expect(pick.placeholder).toContain('approval mode rules, sandbox off');
    pick.hide();
    await running;
    expect(settingsRequests(c)).toHaveLength(1);
  });

  it('sandboxed-auto without a sandbox asks which one ("Keep the current mode" focused); with one chosen both are sent; a refusal names them and why, and the header keeps what is in force', async () => {
    const c = client();
    acceptSettings(c);
    const choose = async (mode: string, then: (sandboxPick: fake.FakeQuickPick<any>) => void) => {
      const running = fake.commands.executeCommand('mino.setApprovalMode');
      await settle();
      fake.mock.quickPicks.at(-1)!.accept(mode);
      await settle();
      then(fake.mock.quickPicks.at(-1)!);
      await running;
      await settle();
    };

    // Enter in the sandbox question keeps the mode: nothing is sent.
    await choose('sandboxed-auto', (sandboxPick) => {
      expect((sandboxPick.items as any[]).map((i) => i.label)).toEqual([KEEP_MODE_LABEL, 'read-only', 'workspace-write']);
      expect((sandboxPick.activeItems as any[]).map((i) => i.label)).toEqual([KEEP_MODE_LABEL]);
      expect(sandboxPick.title).toContain('needs a sandbox');
      expect(sandboxPick.placeholder).toContain('read-only and workspace-write can be enforced');
      sandboxPick.acceptFocused();
    });
    expect(settingsRequests(c)).toEqual([]);

    // The machine cannot enforce it: refused, said so; the header is not changed.
    c.replies.set('mino/settings/update', () => new RpcFailure(-32602, REFUSAL));
    firstView.webview.receive({ type: 'ready' });
    await settle();
    const shown = postedModes(firstView).length;
    await choose('sandboxed-auto', (sandboxPick) => sandboxPick.accept('workspace-write'));
    expect(settingsRequests(c)).toEqual([{ approvalMode: 'sandboxed-auto', sandbox: 'workspace-write' }]);
    expect(fake.mock.errorMessages.at(-1)).toEqual({
      message: `Mino refused the approval mode sandboxed-auto with the sandbox workspace-write: ${REFUSAL} Still in force: approval mode ask, sandbox off.`,
      items: [],
    });
    expect(postedModes(firstView)).toHaveLength(shown);

    // Accepted: both in force and shown.
    acceptSettings(c);
    await choose('sandboxed-auto', (sandboxPick) => sandboxPick.accept('read-only'));
    expect(settingsRequests(c).at(-1)).toEqual({ approvalMode: 'sandboxed-auto', sandbox: 'read-only' });
    expect(postedModes(firstView).at(-1)).toEqual({ type: 'modes', approvalMode: 'sandboxed-auto', sandbox: 'read-only' });
  });

  it('plan is chosen like any mode (moved to, never focused): sent alone, and the header shows it', async () => {
    const c = client();
    acceptSettings(c);
    const running = fake.commands.executeCommand('mino.setApprovalMode');
    await settle();
    const pick = fake.mock.quickPicks.at(-1)!;
    expect((pick.activeItems as any[]).map((i) => i.label)).toEqual(['ask']);
    pick.accept('plan');
    await running;
    await settle();
    expect(settingsRequests(c)).toEqual([{ approvalMode: 'plan' }]);
    expect(postedModes(firstView).at(-1)).toEqual({ type: 'modes', approvalMode: 'plan', sandbox: 'off' });
  });
});

describe('MCP servers: the view notice, its Restart and Mino: MCP Servers', () => {
  const failed = {
    sessionId: 's1', server: 'ghost', state: 'failed', reason: 'MCP server `ghost`: command `ghost-mcp` not found (looked in PATH=/usr/bin)',
  };

  it('a failed server reaches the view, also one opened later; its Restart calls mino/mcp/restart and the answer follows', async () => {
    const c = client();
    c.replies.set('mino/history', { sessionId: 's1', turns: [] });
    c.notify('mino/mcp/status', { sessionId: 's1', server: 'fs', state: 'starting' });
    c.notify('mino/mcp/status', failed);
    await settle();
    expect(firstView.webview.posted).toContainEqual({ type: 'notification', method: 'mino/mcp/status', params: failed });
    expect(api.server.mcpStatuses.map((s) => [s.server, s.state])).toEqual([['fs', 'starting'], ['ghost', 'failed']]);

    // A view opened after the notification is told on ready.
    const view = openView();
    view.webview.receive({ type: 'ready' });
    await settle();
    expect(view.webview.posted).toContainEqual({
      type: 'notification', method: 'mino/mcp/status',
      params: { sessionId: 's1', server: 'ghost', state: 'failed', reason: failed.reason },
    });

    c.replies.set('mino/mcp/restart', (p: any) => ({ server: p.server, state: 'ready', tools: ['mcp__ghost__echo'] }));
    view.webview.receive({ type: 'mcpRestart', server: 'ghost' });
    await settle();
    expect(c.requests.filter((r) => r.method === 'mino/mcp/restart')).toEqual([{ method: 'mino/mcp/restart', params: { server: 'ghost' } }]);
    expect(view.webview.posted).toContainEqual({
      type: 'notification', method: 'mino/mcp/status',
      params: { sessionId: 's1', server: 'ghost', state: 'ready', tools: ['mcp__ghost__echo'] },
    });

    // A refusal (an unknown name) is said in the view, naming the server.
    c.replies.set('mino/mcp/restart', () => new RpcFailure(-32602, 'no MCP server `nope`; configured: fs, ghost'));
    view.webview.receive({ type: 'mcpRestart', server: 'nope' });
    await settle();
    expect(view.webview.posted).toContainEqual(expect.objectContaining({
      type: 'error', request: 'mcpRestart', message: expect.stringContaining('Could not restart the MCP server nope: no MCP server `nope`'),
    }));
  });

  it('Mino: MCP Servers lists each server with its state, why, and its tools; choosing one or its button restarts it', async () => {
    expect(pkg.contributes.commands.map((c: any) => c.command)).toContain('mino.mcpServers');
    const c = client();
    let ghost: any = { server: 'ghost', state: 'failed', reason: failed.reason };
    c.replies.set('mino/mcp/list', () => ({
      servers: [{ server: 'fs', state: 'ready', tools: ['mcp__fs__read_text_file', 'mcp__fs__list_directory'] }, ghost],
    }));
    c.replies.set('mino/mcp/restart', (p: any) => {
      ghost = { server: p.server, state: 'ready', tools: ['mcp__ghost__echo'] };
      return ghost;
    });
    const running = fake.commands.executeCommand('mino.mcpServers');
    await settle();
    const pick = fake.mock.quickPicks.at(-1)!;
    expect(pick.title).toBe('Mino: MCP Servers');
    expect((pick.items as any[]).map((i) => [i.label, i.description, i.detail])).toEqual([
      ['fs', '$(check) ready', '2 tools: mcp__fs__read_text_file, mcp__fs__list_directory'],
      ['ghost', '$(error) failed to start: its tools are missing', failed.reason],
    ]);
    pick.accept('ghost');
    await settle();
    expect(c.requests.filter((r) => r.method === 'mino/mcp/restart')).toEqual([{ method: 'mino/mcp/restart', params: { server: 'ghost' } }]);
    expect(fake.mock.infoMessages.map((m) => m.message)).toContain('Mino: MCP server ghost is ready.');
    // Listed again after the restart.
    expect((pick.items as any[]).find((i) => i.label === 'ghost').description).toBe('$(check) ready');
    pick.triggerButton('fs');
    await settle();
    expect(c.requests.filter((r) => r.method === 'mino/mcp/restart').map((r: any) => r.params.server)).toEqual(['ghost', 'fs']);
    pick.hide();
    await running;
  });

  it('a switch forgets the old session\'s MCP servers', async () => {
    const c = client();
    c.notify('mino/mcp/status', failed);
    await settle();
    expect(api.server.mcpStatuses).toHaveLength(1);
    c.replies.set('mino/sessions/open', { sessionId: 's2', title: null, cwd: '/tmp/mino-workspace', journalPath: '/tmp/j' });
    c.replies.set('mino/models/list', { models: [], current: 'm' });
    await api.server.switchSession({ sessionId: 's2' });
    expect(api.server.mcpStatuses).toEqual([]);
  });
});

describe('rewind: Rewind to here', () => {
  const plan = {
    turnId: 't1', turns: ['t1', 't2'], digest: 'sha256:abc',
    files: [{ path: '/w/new.txt', action: 'remove' }, { path: '/w/list.txt', action: 'restore' }],
    conflicts: [{ path: '/w/notes.txt', why: 'changed since Mino wrote it' }],
    commands: [{ turnId: 't2', callId: 'c1', command: 'npm install' }],
  };

  it('shows the plan in a modal whose default is Cancel; Cancel or Escape writes nothing; Rewind sends the digest, says the outcome and reloads the history', async () => {
    const c = client();
    c.replies.set('mino/history', { sessionId: 's1', turns: [] });
    c.replies.set('mino/rewind/plan', plan);
    c.replies.set('mino/rewind', {
      turnId: 't1', turns: ['t1', 't2'], conflicts: plan.conflicts, commands: plan.commands,
      files: [{ path: '/w/new.txt', outcome: 'removed' }, { path: '/w/list.txt', outcome: 'restored' }],
    });
    fake.mock.warningChoice = undefined;
    firstView.webview.receive({ type: 'rewind', turnId: 't1' });
    await settle();
    expect(c.requests.filter((r) => r.method === 'mino/rewind/plan')).toEqual([{ method: 'mino/rewind/plan', params: { turnId: 't1' } }]);
    const asked = fake.mock.warningMessages.at(-1)!;
    expect(asked.options.modal).toBe(true);
    expect(asked.items.map((i: any) => i.title)).toEqual(['Cancel', 'Rewind']);
    expect(asked.items[0].isCloseAffordance).toBe(true);
    expect(asked.options.detail).toContain('/w/new.txt (created by Mino: removed)');
    expect(asked.options.detail).toContain('/w/list.txt');
    expect(asked.options.detail).toContain('Conflicts, left as they are (changed since Mino wrote them):\n  /w/notes.txt: changed since Mino wrote it');
    expect(asked.options.detail).toContain('Commands that ran: Mino cannot undo their effects:\n  npm install');
    expect(c.requests.filter((r) => r.method === 'mino/rewind')).toEqual([]);

    fake.mock.warningChoice = 'Rewind';
    const historyBefore = c.requests.filter((r) => r.method === 'mino/history').length;
    firstView.webview.receive({ type: 'rewind', turnId: 't1' });
    await settle();
    expect(c.requests.filter((r) => r.method === 'mino/rewind')).toEqual([{ method: 'mino/rewind', params: { turnId: 't1', digest: 'sha256:abc' } }]);
    expect(fake.mock.infoMessages.at(-1)!.message).toBe(
      'Mino: rewound 2 turns; 2 of 2 files put back. /w/new.txt: removed; /w/list.txt: restored. Left as they are: /w/notes.txt. Not undone (commands): npm install.',
    );
    expect(c.requests.filter((r) => r.method === 'mino/history').length).toBe(historyBefore + 1);
  });

  it('Fork from here forks the current session through the turn and opens the fork, asking nothing; a refusal is said and opens nothing', async () => {
    const c = client();
    c.replies.set('mino/sessions/open', { sessionId: 's1', title: 'Add milk', cwd: '/tmp/mino-workspace', journalPath: '/tmp/j1' });
    c.replies.set('mino/models/list', { models: [], current: 'm' });
    await api.server.switchSession({ sessionId: 's1' });
    c.replies.set('mino/sessions/open', { sessionId: 's2', title: 'Add milk', cwd: '/tmp/mino-workspace', journalPath: '/tmp/j2' });
    c.replies.set('mino/sessions/fork', {
      sessionId: 's2', journalPath: '/tmp/j2', cwd: '/tmp/mino-workspace', title: 'Add milk',
      forkedFrom: { sessionId: 's1', turnId: 't1' }, turns: 1,
    });
    const asked = fake.mock.warningMessages.length;
    const opened = c.requests.filter((r) => r.method === 'mino/sessions/open').length;
    firstView.webview.receive({ type: 'fork', turnId: 't1' });
    await settle();
    expect(c.requests.filter((r) => r.method === 'mino/sessions/fork')).toEqual([
      { method: 'mino/sessions/fork', params: { sessionId: 's1', turnId: 't1' } },
    ]);
    expect(c.requests.filter((r) => r.method === 'mino/sessions/open').slice(opened)).toEqual([
      { method: 'mino/sessions/open', params: { sessionId: 's2' } },
    ]);
    expect(fake.mock.warningMessages.length).toBe(asked);
    expect(fake.mock.infoMessages.at(-1)!.message).toContain('forked 1 turn (through t1) into a new session');
    expect(api.server.session?.sessionId).toBe('s2');

    c.replies.set('mino/sessions/fork', () => new RpcFailure(-32014, 'no turn t9 in session s2'));
    const before = c.requests.filter((r) => r.method === 'mino/sessions/open').length;
    firstView.webview.receive({ type: 'fork', turnId: 't9' });
    await settle();
    expect(fake.mock.errorMessages.at(-1)!.message).toContain('cannot fork from this turn: no turn t9 in session s2');
    expect(c.requests.filter((r) => r.method === 'mino/sessions/open').length).toBe(before);
  });

  it('a plan that changed since it was shown (-32016) is refused by the server and said so; nothing is claimed', async () => {
    const c = client();
    c.replies.set('mino/rewind/plan', plan);
    c.replies.set('mino/rewind', () => new RpcFailure(-32016, 'the plan changed'));
    fake.mock.warningChoice = 'Rewind';
    firstView.webview.receive({ type: 'rewind', turnId: 't1' });
    await settle();
    expect(fake.mock.errorMessages.at(-1)!.message).toContain('Something changed since the plan was shown; nothing was written.');
    expect(fake.mock.infoMessages.filter((m) => m.message.includes('rewound'))).toEqual([]);
  });
});
