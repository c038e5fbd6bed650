/**
 * The whole extension without VS Code: activate() with a mocked `vscode`
 * module, a language client that really spawns the real `mino-server`
 * (test/mocks/languageclient.ts in `process` mode) against the mock model,
 * and the webview the provider serves, running in chromium. The chapter-04
 * story end to end: approve a command that kills the server, see the crash
 * (the conversation stays), restart from the view, acknowledge the unknown
 * result, ask again.
 */
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activate, deactivate } from '../src/extension';
import { ACKNOWLEDGEMENT_QUESTION } from '../src/protocol';
import { APPROVAL_MODES } from '../src/generated/protocol';
import { ALL_FOLDERS_LABEL } from '../src/sessions';
import {
  deliver,
  launchChromium,
  newWebviewPage,
  OUT,
  requireChromium,
  SKIP_WEBVIEW,
  startWebviewHost,
  type PageProbe,
  type WebviewHost,
} from './browser';
import { missingBinaries, MockModel, SERVER_BIN, serverHas, serverTakesDecision, tempDir } from './helpers';
import { clients, settings } from './mocks/languageclient';
import * as fake from './mocks/vscode';

requireChromium();
const missing = missingBinaries();
if (missing.length > 0) throw new Error(`missing binaries: ${missing.join(', ')}`);

let mock: MockModel;
let webHost: WebviewHost;
let browser: Browser;
let page: Page;
let probe: PageProbe;
let context: ReturnType<typeof fake.createExtensionContext>;
const savedEnv = { ...process.env };

beforeAll(async () => {
  if (SKIP_WEBVIEW) return;
  mock = await MockModel.start();
  webHost = await startWebviewHost();
  browser = await launchChromium();
});

afterAll(async () => {
  await deactivate();
  for (const d of context?.subscriptions ?? []) d.dispose();
  settings.mode = 'fake';
  process.env = savedEnv;
  await browser?.close();
  await webHost?.close();
  mock?.stop();
});

describe.skipIf(SKIP_WEBVIEW)('extension + real mino-server + webview in chromium', () => {
  it('crash, restart from the view, acknowledgement gate, then chat again', async () => {
    const home = tempDir('e2e-home');
    const cwd = tempDir('e2e-cwd');
    fake.mock.reset();
    clients.length = 0;
    settings.mode = 'process';
    process.env.MINO_HOME = home;
    process.env.OPENAI_API_KEY = 'sk-e2e';
    process.env.RUST_LOG = 'info';
    fake.mock.workspaceFolder = cwd;
    fake.mock.config.set('mino.serverPath', SERVER_BIN);
    fake.mock.config.set('mino.baseUrl', mock.baseUrl);
    fake.mock.config.set('mino.model', 'mock-model');
    await mock.script([
      { type: 'calls', text: ['I', ' will', ' append', ' it.'], calls: [{ call_id: 'call_milk', command: "echo milk >> shopping.txt; kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)" }] },
    ]);

    // Activate, open the view in chromium, bridge both directions.
    context = fake.createExtensionContext();
    const api = activate(context as any);
    ({ page, probe } = await newWebviewPage(browser));
    const view = fake.createFakeWebviewView({
      cspSource: webHost.origin,
      asWebviewUri: (u) => ({ toString: () => `${webHost.origin}/dist/${path.basename(u.fsPath)}` }),
      onPost: (m) => void deliver(page, m).catch(() => undefined),
    });
    await page.exposeFunction('__toHost', (m: unknown) => view.webview.receive(m));
    fake.mock.viewProviders.get('mino.chat')!.provider.resolveWebviewView(view, {}, {});
    webHost.html = view.webview.html;
    await page.goto(`${webHost.origin}/`);

    const input = page.locator('#input');
    await expect.poll(() => api.server.state, { timeout: 15000 }).toBe('ready');
    await expect.poll(() => page.locator('#send').isDisabled()).toBe(false);

    // 1. Ask; the model wants to append; approve.
    await input.fill('Add milk to shopping.txt.');
    await input.press('Enter');
    const card = page.locator('.tool-card[data-call-id="call_milk"]');
    await expect.poll(() => card.getByRole('button', { name: 'Approve' }).isVisible(), { timeout: 15000 }).toBe(true);
    expect(await page.locator('.assistant-text').first().textContent()).toBe('I will append it.');
    expect(await card.locator('.tool-meta').innerText()).toContain(cwd);
    await card.getByRole('button', { name: 'Approve' }).click();

    // 2. The command kills the server: the crash is visible, with a restart action.
    await expect.poll(() => api.server.state, { timeout: 15000 }).toBe('crashed');
    const notice = fake.mock.statusBarItems.find((i) => i.id === 'mino.serverStopped')!;
    expect(notice).toMatchObject({ visible: true, command: 'mino.restartServer' });
    expect(readFileSync(path.join(cwd, 'shopping.txt'), 'utf8')).toBe('milk\n');
    await expect.poll(() => page.locator('#status').innerText()).toContain('stopped unexpectedly');
    // The conversation stays on screen; the card says its command did not finish.
    await expect.poll(() => card.locator('.badge').textContent()).toBe('did not finish');
    expect(await card.locator('.tool-command').textContent()).toBe("echo milk >> shopping.txt; kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)");
    expect(await page.locator('.turn').first().locator('.msg.user .text').textContent()).toBe('Add milk to shopping.txt.');
    expect(await page.locator('.assistant-text').first().textContent()).toBe('I will append it.');
    await page.screenshot({ path: path.join(OUT, 'e2e-crash.png'), fullPage: true });
    await page.locator('#status').getByRole('button', { name: 'Restart' }).click();

    // 3. The restarted server reports the unknown result: the gate blocks the input.
    await expect.poll(() => api.server.state, { timeout: 15000 }).toBe('ready');
    // The stopped notice went with the crash it told of.
    expect(notice.visible).toBe(false);
    await expect.poll(() => page.locator('#status').innerText()).not.toContain('stopped unexpectedly');
    const gate = page.locator('#ack-gate');
    await expect.poll(() => gate.isVisible(), { timeout: 15000 }).toBe(true);
    expect(await page.locator('#ack-question').textContent()).toBe(ACKNOWLEDGEMENT_QUESTION);
    expect(await gate.locator('.ack-call code').allTextContents()).toEqual(["echo milk >> shopping.txt; kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)"]);
    expect(await input.isDisabled()).toBe(true);
    // The restored history shows the interrupted turn.
    await expect.poll(() => page.locator('.tool-card[data-call-id="call_milk"] .badge').textContent()).toBe('result unknown');
    await page.screenshot({ path: path.join(OUT, 'e2e-ack-gate.png'), fullPage: true });

    // 4. Yes → mino/acknowledge → the input opens; the next question reaches the model.
    await gate.getByRole('button', { name: /Yes/ }).click();
    await expect.poll(() => gate.isVisible()).toBe(false);
    expect(await input.isDisabled()).toBe(false);
    await mock.script([{ type: 'text', deltas: ['The', ' earlier', ' append', ' may', ' have', ' run.'] }]);
    await input.fill('Is milk on the list now?');
    await input.press('Enter');
    const answer = page.locator('.turn').last().locator('.assistant-text');
    await expect.poll(() => answer.textContent(), { timeout: 15000 }).toBe('The earlier append may have run.');
    const requests = await mock.requests();
    const last = requests[requests.length - 1].body.input as any[];
    expect(last.find((i) => i.type === 'function_call_output')?.call_id).toBe('call_milk');
    expect(readFileSync(path.join(cwd, 'shopping.txt'), 'utf8')).toBe('milk\n');
    await page.screenshot({ path: path.join(OUT, 'e2e-after-ack.png'), fullPage: true });

    expect(probe.cspViolations).toEqual([]);
    expect(probe.pageErrors).toEqual([]);
  });
});

/** A fresh activation on a new home and workspace, the view in a new page; returns the API once the server is ready. */
async function launchFresh() {
  await deactivate();
  for (const d of context?.subscriptions.splice(0) ?? []) d.dispose();
  const home = tempDir('e2e-home');
  const cwd = tempDir('e2e-cwd');
  fake.mock.reset();
  clients.length = 0;
  settings.mode = 'process';
  process.env.MINO_HOME = home;
  process.env.OPENAI_API_KEY = 'sk-e2e';
  fake.mock.workspaceFolder = cwd;
  fake.mock.config.set('mino.serverPath', SERVER_BIN);
  fake.mock.config.set('mino.baseUrl', mock.baseUrl);
  fake.mock.config.set('mino.model', 'mock-model');
  context = fake.createExtensionContext();
  const api = activate(context as any);
  await page?.context().close();
  ({ page, probe } = await newWebviewPage(browser));
  const view = fake.createFakeWebviewView({
    cspSource: webHost.origin,
    asWebviewUri: (u) => ({ toString: () => `${webHost.origin}/dist/${path.basename(u.fsPath)}` }),
    onPost: (m) => void deliver(page, m).catch(() => undefined),
  });
  await page.exposeFunction('__toHost', (m: unknown) => view.webview.receive(m));
  fake.mock.viewProviders.get('mino.chat')!.provider.resolveWebviewView(view, {}, {});
  webHost.html = view.webview.html;
  await page.goto(`${webHost.origin}/`);
  await expect.poll(() => api.server.state, { timeout: 15000 }).toBe('ready');
  return { api, cwd, home };
}

const NO_SESSIONS = 'the mino-server binary has no mino/sessions/* yet';
describe.skipIf(SKIP_WEBVIEW || !serverHas('mino/sessions/list'))(
  `sessions through the extension, the real server and the webview${serverHas('mino/sessions/list') ? '' : ` (skipped: ${NO_SESSIONS})`}`,
  () => {
    it('New Chat empties the panel and names it after its first question; Sessions reopens the first chat with its history', async () => {
      await launchFresh();
      const input = page.locator('#input');
      const title = page.locator('#session-title');
      await expect.poll(() => title.textContent()).toBe('New chat');

      const ask = async (question: string, answer: string) => {
        await mock.script([{ type: 'text', deltas: [answer] }]);
        await expect.poll(() => page.locator('#send').isDisabled()).toBe(false);
        await input.fill(question);
        await input.press('Enter');
        await expect.poll(() => page.locator('.turn').last().locator('.assistant-text').textContent(), { timeout: 15000 }).toBe(answer);
      };
      await ask('Plan the release', 'Here is the plan.');
      // The server named the session after the question.
      await expect.poll(() => title.textContent(), { timeout: 15000 }).toBe('Plan the release');

      await fake.commands.executeCommand('mino.newChat');
      await expect.poll(() => title.textContent()).toBe('New chat');
      expect(await page.locator('.turn').count()).toBe(0);
      await ask('Write the notes', 'Notes written.');
      await expect.poll(() => title.textContent(), { timeout: 15000 }).toBe('Write the notes');

      const running = fake.commands.executeCommand('mino.sessions');
      await expect.poll(() => (fake.mock.quickPicks.at(-1)?.items ?? []).length, { timeout: 15000 }).toBeGreaterThan(0);
      const pick = fake.mock.quickPicks.at(-1)!;
      // Newest first, to the second: two chats of the same second may come in either order.
      expect(pick.items.map((i: any) => i.label).sort()).toEqual(['Write the notes', 'Plan the release', ALL_FOLDERS_LABEL].sort());
      expect(pick.items.at(-1)!.label).toBe(ALL_FOLDERS_LABEL);
      pick.accept('Plan the release');
      await running;
      await expect.poll(() => title.textContent(), { timeout: 15000 }).toBe('Plan the release');
      await expect.poll(() => page.locator('.turn .msg.user .text').allTextContents(), { timeout: 15000 }).toEqual(['Plan the release']);
      await page.screenshot({ path: path.join(OUT, 'e2e-sessions.png'), fullPage: true });
      expect(probe.cspViolations).toEqual([]);
      expect(probe.pageErrors).toEqual([]);
    });
  },
);

const NO_RULES = 'the mino-server binary does not take allowSession yet';
const hasRules = serverTakesDecision('allowSession') && serverHas('mino/rules/list');
describe.skipIf(SKIP_WEBVIEW || !hasRules)(
  `approval rules through the extension, the real server and the webview${hasRules ? '' : ` (skipped: ${NO_RULES})`}`,
  () => {
    it('Allow for session… with an edited rule runs the command and keeps the rule (listed by Rules); Deny with reason… reaches the model', async () => {
      await mock.script([
        { type: 'calls', calls: [{ call_id: 'call_e', command: 'echo rule-e2e' }] },
        { type: 'calls', calls: [{ call_id: 'call_n', command: 'echo never > never.txt' }] },
        { type: 'text', deltas: ['Understood.'] },
      ]);
      const { cwd } = await launchFresh();
      const input = page.locator('#input');
      await expect.poll(() => page.locator('#send').isDisabled()).toBe(false);
      await input.fill('Echo something.');
      await input.press('Enter');
      const card = page.locator('.tool-card[data-call-id="call_e"]');
      await expect.poll(() => card.getByRole('button', { name: 'Allow for session…' }).isVisible(), { timeout: 15000 }).toBe(true);
      expect(await card.locator('.tool-meta').innerText()).toContain('Sandbox');
      await card.getByRole('button', { name: 'Allow for session…' }).click();
      const field = card.locator('input.rule-command');
      expect('echo rule-e2e'.startsWith(await field.inputValue())).toBe(true);
      await field.fill('echo');
      await card.locator('.answer-form').getByRole('button', { name: 'Allow for session', exact: true }).click();
      await expect.poll(() => card.locator('.badge').textContent(), { timeout: 15000 }).toBe('succeeded');

      const deny = page.locator('.tool-card[data-call-id="call_n"]');
      await expect.poll(() => deny.getByRole('button', { name: 'Deny with reason…' }).isVisible(), { timeout: 15000 }).toBe(true);
      await deny.getByRole('button', { name: 'Deny with reason…' }).click();
      await deny.locator('input.deny-reason').fill('no files today');
      await deny.locator('.answer-form').getByRole('button', { name: 'Deny', exact: true }).click();
      await expect.poll(() => deny.locator('.badge').textContent(), { timeout: 15000 }).toBe('denied');
      await expect.poll(() => page.locator('.turn').last().locator('.assistant-text').last().textContent(), { timeout: 15000 }).toBe('Understood.');
      const requests = await mock.requests();
      const outputs = (requests[requests.length - 1].body.input as any[]).filter((i) => i.type === 'function_call_output');
      expect(String(outputs.find((o) => o.call_id === 'call_n')?.output)).toContain('Denied by the user: no files today');
      expect(existsSync(path.join(cwd, 'never.txt'))).toBe(false);

      // The rule is listed by Mino: Rules, as edited.
      const running = fake.commands.executeCommand('mino.rules');
      await expect.poll(() => (fake.mock.quickPicks.at(-1)?.items ?? []).length, { timeout: 15000 }).toBeGreaterThan(0);
      const pick = fake.mock.quickPicks.at(-1)!;
      expect(pick.items.map((i: any) => [i.label, i.description])).toContainEqual(['echo', 'commands starting with this · this session']);
      pick.hide();
      await running;
      await page.screenshot({ path: path.join(OUT, 'e2e-rules.png'), fullPage: true });
      expect(probe.cspViolations).toEqual([]);
      expect(probe.pageErrors).toEqual([]);
    });
  },
);

describe.skipIf(SKIP_WEBVIEW)('deny rules through the extension, the real server and the webview', () => {
  it('Deny for session… in the card denies the command, and the same command asked again is refused by the rule without a question', async () => {
    await mock.script([
      { type: 'calls', calls: [{ call_id: 'call_1', command: 'touch leaked.txt' }] },
      { type: 'calls', calls: [{ call_id: 'call_2', command: 'touch leaked.txt' }] },
      { type: 'text', deltas: ['Not written.'] },
    ]);
    const { api, cwd } = await launchFresh();
    // Rules apply in the `rules` approval mode: the setting, changed while the server runs.
    fake.mock.changeConfig({ 'mino.approvalMode': 'rules' });
    await expect.poll(() => page.locator('#session-mode').textContent(), { timeout: 15000 }).toBe('Mode: rules');
    const input = page.locator('#input');
    await expect.poll(() => page.locator('#send').isDisabled()).toBe(false);
    await input.fill('Leave a note.');
    await input.press('Enter');
    const card = page.locator('.tool-card[data-call-id="call_1"]');
    await expect.poll(() => card.getByRole('button', { name: 'Deny for session…' }).isVisible(), { timeout: 15000 }).toBe(true);
    await card.getByRole('button', { name: 'Deny for session…' }).click();
    const field = card.locator('input.rule-command');
    // Prefilled with the server's suggestion (the command's first words), edited here to the whole command.
    expect('touch leaked.txt'.startsWith(await field.inputValue())).toBe(true);
    await field.fill('touch leaked.txt');
    await card.locator('.answer-form').getByRole('button', { name: 'Deny for session', exact: true }).click();
    await expect.poll(() => card.locator('.badge').textContent(), { timeout: 15000 }).toBe('denied');

    // The second, identical call is refused by the rule: no card waits for an answer.
    const second = page.locator('.tool-card[data-call-id="call_2"]');
    await expect.poll(() => second.locator('.badge').textContent(), { timeout: 15000 }).toBe('denied');
    await expect.poll(() => page.locator('.turn').last().locator('.assistant-text').last().textContent(), { timeout: 15000 }).toBe('Not written.');
    expect(await second.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    expect(await second.locator('.tool-output').textContent()).toBe('Denied by a rule the user set: prefix "touch leaked.txt"');
    // The server's mino/toolResult names the refused command: the card shows it live.
    expect(await second.locator('.tool-command').textContent()).toBe('touch leaked.txt');
    expect(await page.locator('.tool-card[data-status="waiting"]').count()).toBe(0);
    expect(existsSync(path.join(cwd, 'leaked.txt'))).toBe(false);
    const requests = await mock.requests();
    const outputs = (requests[requests.length - 1].body.input as any[]).filter((i) => i.type === 'function_call_output');
    expect(String(outputs.find((o) => o.call_id === 'call_2')?.output)).toContain('Denied by a rule the user set');

    // The rule is a session deny rule, listed by Mino: Rules.
    const rules = await api.server.connection!.listRules();
    expect(rules.rules.map((r: any) => [r.kind, r.command, r.scope, r.effect])).toEqual([['prefix', 'touch leaked.txt', 'session', 'deny']]);
    await page.screenshot({ path: path.join(OUT, 'e2e-deny-rule.png'), fullPage: true });
    expect(probe.cspViolations).toEqual([]);
    expect(probe.pageErrors).toEqual([]);
  });
});

describe.skipIf(SKIP_WEBVIEW)('the approval mode through the extension, the real server and the webview', () => {
  it('the header says ask; after rules is chosen with Set Approval Mode, Allow for session… in the card makes the same command run again without a question', async () => {
    await mock.script([
      { type: 'calls', calls: [{ call_id: 'call_1', command: 'echo mode-e2e' }] },
      { type: 'calls', calls: [{ call_id: 'call_2', command: 'echo mode-e2e' }] },
      { type: 'text', deltas: ['Echoed twice.'] },
    ]);
    const { api } = await launchFresh();
    const mode = page.locator('#session-mode');
    await expect.poll(() => mode.textContent(), { timeout: 15000 }).toBe('Mode: ask');

    // Mino: Set Approval Mode, from the header: the pick opens on ask; rules is chosen by moving to it.
    await mode.click();
    await expect.poll(() => (fake.mock.quickPicks.at(-1)?.items ?? []).length, { timeout: 15000 }).toBe(APPROVAL_MODES.length);
    const pick = fake.mock.quickPicks.at(-1)!;
    expect((pick.activeItems as any[]).map((i) => i.label)).toEqual(['ask']);
    pick.accept('rules');
    await expect.poll(() => mode.textContent(), { timeout: 15000 }).toBe('Mode: rules');
    expect(api.server.modes).toMatchObject({ approvalMode: 'rules', sandbox: 'off' });

    const input = page.locator('#input');
    await expect.poll(() => page.locator('#send').isDisabled()).toBe(false);
    await input.fill('Echo it twice.');
    await input.press('Enter');
    const first = page.locator('.tool-card[data-call-id="call_1"]');
    await expect.poll(() => first.getByRole('button', { name: 'Allow for session…' }).isVisible(), { timeout: 15000 }).toBe(true);
    await first.getByRole('button', { name: 'Allow for session…' }).click();
    // Under rules the form has no "only once the mode is rules" note.
    expect(await first.locator('.answer-form-note').count()).toBe(0);
    expect('echo mode-e2e'.startsWith(await first.locator('input.rule-command').inputValue())).toBe(true);
    await first.locator('.answer-form').getByRole('button', { name: 'Allow for session', exact: true }).click();
    await expect.poll(() => first.locator('.badge').textContent(), { timeout: 15000 }).toBe('succeeded');

    // The same command again: the rule approves it, no card waits for an answer.
    const second = page.locator('.tool-card[data-call-id="call_2"]');
    await expect.poll(() => second.locator('.badge').textContent(), { timeout: 15000 }).toBe('succeeded');
    await expect.poll(() => page.locator('.turn').last().locator('.assistant-text').last().textContent(), { timeout: 15000 }).toBe('Echoed twice.');
    expect(await second.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    expect(await second.locator('.tool-approved-by').textContent()).toMatch(/^approved by rule/);
    expect(await second.locator('.tool-output').textContent()).toBe('mode-e2e\n');
    await page.screenshot({ path: path.join(OUT, 'e2e-approval-mode.png'), fullPage: true });
    expect(probe.cspViolations).toEqual([]);
    expect(probe.pageErrors).toEqual([]);
  });
});

describe.skipIf(SKIP_WEBVIEW)('an edit through the extension, the real server and the webview', () => {
  it("the card shows the server's hunks; Review diff opens vscode.diff whose proposed side is the server's diff applied to the file (no final newline kept); Approve writes exactly that; reloaded, the restored card's Review diff opens the recorded diff read-only", async () => {
    await mock.script([
      { type: 'named_call', call_id: 'call_edit', name: 'edit_file',
        arguments: JSON.stringify({ path: 'shopping.txt', old_text: 'jam', new_text: 'jam\nmilk' }) },
      { type: 'text', deltas: ['Milk added.'] },
    ]);
    const { api, cwd } = await launchFresh();
    // The file has no final newline: the diff carries "\ No newline at end of file".
    const file = path.join(realpathSync(cwd), 'shopping.txt');
    writeFileSync(file, 'bread\nbutter\njam');
    // The mocked workspace.fs reads what the extension reads through VS Code.
    fake.mock.files.set(file, 'bread\nbutter\njam');
    await expect.poll(() => page.locator('#send').isDisabled()).toBe(false);
    await page.locator('#input').fill('Add milk.');
    await page.locator('#input').press('Enter');
    const card = page.locator('.tool-card[data-call-id="call_edit"]');
    await expect.poll(() => card.getByRole('button', { name: 'Review diff' }).isVisible(), { timeout: 15000 }).toBe(true);
    expect(await card.locator('.tool-name').textContent()).toBe('edit_file');
    expect(await card.locator('.diff-line.add .diff-text').allTextContents()).toEqual(['jam', 'milk']);

    await card.getByRole('button', { name: 'Review diff' }).click();
    await expect.poll(() => fake.mock.executed.filter((e) => e.command === 'vscode.diff').length, { timeout: 15000 }).toBe(1);
    const [left, right] = fake.mock.executed.find((e) => e.command === 'vscode.diff')!.args as any[];
    expect(left.fsPath).toBe(file);
    expect((await fake.workspace.openTextDocument(right)).getText()).toBe('bread\nbutter\njam\nmilk');
    expect(await card.locator('.badge').textContent()).toBe('waiting for approval');

    await card.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => card.locator('.badge').textContent(), { timeout: 15000 }).toBe('succeeded');
    expect(readFileSync(file, 'utf8')).toBe('bread\nbutter\njam\nmilk');
    expect(await card.locator('.edit-diff-label').textContent()).toBe('Applied change');
    await expect.poll(() => page.locator('.turn').last().locator('.assistant-text').last().textContent(), { timeout: 15000 }).toBe('Milk added.');
    await page.screenshot({ path: path.join(OUT, 'e2e-edit.png'), fullPage: true });

    // The view loads again: the card is restored from the server's history, and
    // its Review diff opens the diff the session recorded, read-only, deciding nothing.
    await page.reload();
    const restored = page.locator('.tool-card[data-call-id="call_edit"]');
    await expect.poll(() => restored.getByRole('button', { name: 'Review diff' }).isVisible(), { timeout: 15000 }).toBe(true);
    expect(await restored.locator('.edit-diff-label').textContent()).toBe('Applied change');
    const history = await api.server.connection!.history();
    const recorded = history.turns.at(-1)!.calls.find((c) => c.callId === 'call_edit')!.edit!.diff;
    expect(recorded).toContain('+milk');
    const shownBefore = fake.mock.shownDocuments.length;
    await restored.getByRole('button', { name: 'Review diff' }).click();
    await expect.poll(() => fake.mock.shownDocuments.length, { timeout: 15000 }).toBe(shownBefore + 1);
    const shown = fake.mock.shownDocuments.at(-1)!.document;
    expect(shown.languageId).toBe('diff');
    expect(shown.uri.path).toBe('/shopping.txt.diff');
    expect(shown.getText()).toBe(recorded);
    expect(await restored.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe('bread\nbutter\njam\nmilk');
    expect(probe.cspViolations).toEqual([]);
    expect(probe.pageErrors).toEqual([]);
  });

  it('an edit of three hunks with the middle one dropped in the card: Review diff shows the other two, Approve writes only them', async () => {
    const before = Array.from({ length: 40 }, (_, i) => (i % 18 === 2 ? `line ${i + 1} TODO` : `line ${i + 1}`)).join('\n') + '\n';
    await mock.script([
      { type: 'named_call', call_id: 'call_todo', name: 'edit_file',
        arguments: JSON.stringify({ path: 'notes.txt', old_text: 'TODO', new_text: 'DONE', replace_all: true }) },
      { type: 'text', deltas: ['Two are done.'] },
    ]);
    const { cwd } = await launchFresh();
    const file = path.join(realpathSync(cwd), 'notes.txt');
    writeFileSync(file, before);
    fake.mock.files.set(file, before);
    await expect.poll(() => page.locator('#send').isDisabled()).toBe(false);
    await page.locator('#input').fill('Mark the TODOs done.');
    await page.locator('#input').press('Enter');
    const card = page.locator('.tool-card[data-call-id="call_todo"]');
    await expect.poll(() => card.locator('.hunk-keep-box').count(), { timeout: 15000 }).toBe(3);
    await card.getByRole('checkbox', { name: /Keep hunk 2 of 3/ }).click();
    const kept = before.replace('line 3 TODO', 'line 3 DONE').replace('line 39 TODO', 'line 39 DONE');

    await card.getByRole('button', { name: 'Review diff' }).click();
    await expect.poll(() => fake.mock.executed.filter((e) => e.command === 'vscode.diff').length, { timeout: 15000 }).toBeGreaterThan(0);
    const [, right, title] = fake.mock.executed.filter((e) => e.command === 'vscode.diff').at(-1)!.args as any[];
    expect((await fake.workspace.openTextDocument(right)).getText()).toBe(kept);
    expect(title).toContain('2 of 3 hunks kept');

    await card.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => card.locator('.badge').textContent(), { timeout: 15000 }).toBe('succeeded');
    expect(readFileSync(file, 'utf8')).toBe(kept);
    // The card shows what was written: two hunks.
    expect(await card.locator('.diff-hunk-header').count()).toBe(2);
    await page.screenshot({ path: path.join(OUT, 'e2e-edit-hunks.png'), fullPage: true });
    expect(probe.pageErrors).toEqual([]);
  });
});

describe.skipIf(SKIP_WEBVIEW)('reads through the extension, the real server and the webview', () => {
  it('a read inside the workspace asks nothing and is one row that opens to what it returned; reloaded, history shows the same row', async () => {
    await mock.script([
      { type: 'named_call', call_id: 'call_read', name: 'read_file', arguments: JSON.stringify({ path: 'notes.txt' }) },
      { type: 'named_call', call_id: 'call_search', name: 'search', arguments: JSON.stringify({ pattern: 'alp+ha' }) },
      { type: 'text', deltas: ['They say alpha.'] },
    ]);
    const { cwd } = await launchFresh();
    writeFileSync(path.join(cwd, 'notes.txt'), 'alpha\nbeta-line\n');
    await expect.poll(() => page.locator('#send').isDisabled()).toBe(false);
    await page.locator('#input').fill('What do my notes say?');
    await page.locator('#input').press('Enter');
    await expect.poll(() => page.locator('.turn').last().locator('.assistant-text').last().textContent(), { timeout: 15000 }).toBe('They say alpha.');
    const rows = page.locator('.read-row');
    expect(await rows.count()).toBe(2);
    expect(await page.locator('.tool-card').count()).toBe(0);
    const toggles = rows.locator('.read-toggle');
    const live = await toggles.allTextContents();
    expect(live[0]).toMatch(/^read notes\.txt · lines 1-2 of 2/);
    expect(live[1]).toMatch(/^search \/alp\+ha\/ · 1 match/);
    expect(await rows.first().locator('.read-output').isVisible()).toBe(false);
    await toggles.first().click();
    expect(await rows.first().locator('.read-output').textContent()).toContain('beta-line');
    expect((await mock.requests()).at(-1)!.body.input.some((i: any) => i.type === 'function_call_output' && String(i.output).includes('beta-line'))).toBe(true);

    await page.reload();
    await expect.poll(() => page.locator('.read-row').count(), { timeout: 15000 }).toBe(2);
    expect(await page.locator('.read-row .read-toggle').allTextContents()).toEqual(live);
    expect(await page.locator('.tool-card').count()).toBe(0);
    await page.locator('.read-row .read-toggle').nth(1).click();
    expect(await page.locator('.read-row .read-output').nth(1).textContent()).toContain('notes.txt:1:alpha');
    await page.screenshot({ path: path.join(OUT, 'e2e-reads.png'), fullPage: true });
    expect(probe.cspViolations).toEqual([]);
    expect(probe.pageErrors).toEqual([]);
  });
});
