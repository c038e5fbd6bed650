/**
 * The chat webview (webview/*.ts bundled, media/main.css, the HTML from
 * src/webviewHtml.ts) in Debian's chromium through playwright-core, with a
 * stubbed `acquireVsCodeApi` that records what the view posts.
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ACKNOWLEDGEMENT_QUESTION } from '../src/protocol';
import { renderChatHtml } from '../src/webviewHtml';
import {
  deliver,
  launchChromium,
  newWebviewPage,
  OUT,
  requireChromium,
  SKIP_WEBVIEW as skip,
  startWebviewHost,
  type PageProbe,
  type WebviewHost,
} from './browser';

requireChromium();

let webHost: WebviewHost;
let browser: Browser;
let page: Page;
let probe: PageProbe;

beforeAll(async () => {
  if (skip) return;
  webHost = await startWebviewHost();
  const origin = webHost.origin;
  webHost.html = renderChatHtml({
    cspSource: origin,
    scriptUri: `${origin}/dist/webview.js`,
    styleUri: `${origin}/dist/webview.css`,
  });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await webHost?.close();
});

beforeEach(async () => {
  if (skip) return;
  ({ page, probe } = await newWebviewPage(browser));
  await page.goto(`${webHost.origin}/`);
  await page.waitForFunction(() => (window as any).__posted.some((m: any) => m.type === 'ready'));
});

afterEach(async () => {
  await page?.context().close();
});

async function host(msg: unknown): Promise<void> {
  await deliver(page, msg);
}

async function notify(method: string, params: unknown): Promise<void> {
  await host({ type: 'notification', method, params });
}

async function posted(): Promise<any[]> {
  return page.evaluate(() => (window as any).__posted);
}

function approvalRequest(turnId: string, callId: string, command: string, seq: number) {
  return {
    turnId, seq, callId, command, directory: '/home/me/project',
    environment: { HOME: '/home/me', PATH: '/usr/bin:/bin' },
    limits: { timeoutSeconds: 120, outputLimitBytes: 65536 },
  };
}

async function ready(): Promise<void> {
  await host({ type: 'server', state: 'ready' });
  await host({ type: 'history', history: { sessionId: 's1', turns: [] } });
}

describe.skipIf(skip)('chat webview in chromium', () => {
  it('loads under the strict CSP without errors and posts ready', async () => {
    expect(await posted()).toEqual([{ type: 'ready' }]);
    expect(probe.cspViolations).toEqual([]);
    expect(probe.pageErrors).toEqual([]);
    // The stylesheet applied (theme variables through CSS).
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(bg).toBe('rgb(24, 24, 24)');
  });

  it('sends on Enter, keeps Shift+Enter as a new line, and renders streamed text', async () => {
    await ready();
    const input = page.locator('#input');
    await input.click();
    await input.pressSequentially('Add milk');
    await input.press('Shift+Enter');
    await input.pressSequentially('to shopping.txt.');
    expect(await input.inputValue()).toBe('Add milk\nto shopping.txt.');
    await input.press('Enter');
    expect((await posted()).filter((m) => m.type === 'send')).toEqual([
      { type: 'send', text: 'Add milk\nto shopping.txt.' },
    ]);
    // Cleared once the server accepted it.
    await host({ type: 'sent', turnId: 't1' });
    expect(await input.inputValue()).toBe('');

    await notify('mino/turnStarted', { turnId: 't1', seq: 0, input: 'Add milk\nto shopping.txt.' });
    for (const [i, d] of ['I', ' will', ' add', ' it.'].entries()) {
      await notify('mino/textDelta', { turnId: 't1', seq: i + 1, delta: d });
      // Rendered at the next animation frame.
      await expect.poll(() => page.locator('[data-turn-id="t1"] .assistant-text').first().textContent()).toBe(
        ['I', ' will', ' add', ' it.'].slice(0, i + 1).join(''),
      );
    }
    await expect.poll(() => page.locator('#cancel').isVisible()).toBe(true);
    await page.locator('#cancel').click();
    expect((await posted()).filter((m) => m.type === 'cancel')).toEqual([{ type: 'cancel', turnId: 't1' }]);
    await notify('mino/turnEnded', { turnId: 't1', seq: 6, status: 'completed', text: 'I will add it.' });
    expect(await page.locator('#cancel').isVisible()).toBe(false);
    expect(await page.locator('[data-turn-id="t1"] .msg.user .text').textContent()).toBe('Add milk\nto shopping.txt.');
  });

  it('drops the text of a retried response and shows a retrying notice', async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 'r1', seq: 0, input: 'Say hello.' });
    await notify('mino/textDelta', { turnId: 'r1', seq: 1, delta: 'Hel' });
    const texts = () => page.locator('[data-turn-id="r1"] .assistant-text').allTextContents();
    await expect.poll(texts).toEqual(['Hel']);
    await notify('mino/retrying', {
      turnId: 'r1', seq: 2, attempt: 1, delayMs: 200, reason: 'The model stream was cut off',
    });
    // The void text is gone at once; the notice says why.
    expect(await texts()).toEqual([]);
    const notice = page.locator('[data-turn-id="r1"] .turn-notice.retrying');
    expect(await notice.textContent()).toBe('Connection to the model failed; retrying…');
    await notify('mino/textDelta', { turnId: 'r1', seq: 3, delta: 'Hello' });
    await notify('mino/turnEnded', { turnId: 'r1', seq: 4, status: 'completed', text: 'Hello' });
    expect((await texts()).join('')).toBe('Hello');
    const body = await page.locator('[data-turn-id="r1"] .msg.assistant .body').innerText();
    expect(body).not.toContain('HelHello');
    expect(body.split('Hello')).toHaveLength(2);
    expect(await notice.isVisible()).toBe(true);
    expect(probe.pageErrors).toEqual([]);
  });

  it('shows a compaction during a turn as a notice and in the progress line', async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 'k1', seq: 0, input: 'Capital of Italy?' });
    await notify('mino/compactionStarted', { turnId: 'k1', seq: 1, trigger: 'auto' });
    const notice = page.locator('[data-turn-id="k1"] .turn-notice.compaction');
    expect(await notice.textContent()).toBe('Compacting the conversation…');
    expect(await page.locator('#progress').innerText()).toBe('Compacting the conversation…');
    await notify('mino/compactionEnded', {
      turnId: 'k1', seq: 2, trigger: 'auto', compacted: true, summarizedTurns: 3, keptTurns: 0, throughTurnId: 't3',
    });
    expect(await notice.textContent()).toBe('Compacted: 3 turns summarised by the model. Later requests send the summary instead.');
    expect(await page.locator('#progress').innerText()).toBe('Mino is thinking…');
    await notify('mino/textDelta', { turnId: 'k1', seq: 3, delta: 'Rome.' });
    await notify('mino/turnEnded', { turnId: 'k1', seq: 4, status: 'completed', text: 'Rome.' });
    expect(await page.locator('[data-turn-id="k1"] .assistant-text').allTextContents()).toEqual(['Rome.']);
    expect(await notice.count()).toBe(1);
    expect(probe.pageErrors).toEqual([]);
  });

  it('keeps the text of earlier responses when a later response is retried', async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 'r2', seq: 0, input: 'List files.' });
    await notify('mino/textDelta', { turnId: 'r2', seq: 1, delta: 'Let me look.' });
    await notify('mino/toolStarted', { turnId: 'r2', seq: 2, callId: 'c1', command: 'ls' });
    await notify('mino/toolResult', { turnId: 'r2', seq: 3, callId: 'c1', status: 'success', output: 'a.txt\n', exitCode: 0 });
    await notify('mino/textDelta', { turnId: 'r2', seq: 4, delta: 'There is a' });
    await notify('mino/retrying', { turnId: 'r2', seq: 5, attempt: 1, delayMs: 200, reason: 'cut' });
    await notify('mino/textDelta', { turnId: 'r2', seq: 6, delta: 'There is a.txt.' });
    await notify('mino/retrying', { turnId: 'r2', seq: 7, attempt: 2, delayMs: 400, reason: 'cut' });
    await notify('mino/textDelta', { turnId: 'r2', seq: 8, delta: 'There is a.txt.' });
    await notify('mino/turnEnded', { turnId: 'r2', seq: 9, status: 'completed', text: 'Let me look.\n\nThere is a.txt.' });
    expect(await page.locator('[data-turn-id="r2"] .assistant-text').allTextContents()).toEqual([
      'Let me look.',
      'There is a.txt.',
    ]);
    const notices = page.locator('[data-turn-id="r2"] .turn-notice.retrying');
    expect(await notices.count()).toBe(1);
    expect(await notices.textContent()).toBe('Connection to the model failed; retrying… (attempt 2)');
  });

  it('shows an approval card whose buttons post approve and deny, then live output and the result', async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 't2', seq: 0, input: 'Add milk to shopping.txt.' });
    const approval = (callId: string, command: string, seq: number) => ({
      turnId: 't2', seq, callId, command, directory: '/home/me/project',
      environment: { HOME: '/home/me', PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' },
      limits: { timeoutSeconds: 120, outputLimitBytes: 65536 },
    });
    await notify('mino/approvalRequest', approval('call_1', 'echo milk >> shopping.txt', 1));
    const card = page.locator('.tool-card[data-call-id="call_1"]');
    await expect.poll(() => card.locator('.tool-command').textContent()).toBe('echo milk >> shopping.txt');
    const meta = await card.locator('.tool-meta').innerText();
    expect(meta).toContain('/home/me/project');
    expect(meta).toContain('3 variables');
    expect(meta).toContain('timeout 120 s, output 64 KiB');
    await card.locator('details.env summary').click();
    expect(await card.locator('.env-table').innerText()).toContain('PATH');
    expect(await card.locator('.badge').textContent()).toBe('waiting for approval');

    await card.getByRole('button', { name: 'Approve' }).click();
    expect((await posted()).filter((m) => m.type === 'approval')).toEqual([
      { type: 'approval', turnId: 't2', callId: 'call_1', decision: 'approve' },
    ]);
    expect(await card.getByRole('button', { name: 'Approve' }).isDisabled()).toBe(true);

    await notify('mino/toolStarted', { turnId: 't2', seq: 2, callId: 'call_1', command: 'echo milk >> shopping.txt' });
    await notify('mino/toolOutput', { turnId: 't2', seq: 3, callId: 'call_1', stream: 'stdout', chunk: 'appending…\n' });
    expect(await card.locator('.tool-output').textContent()).toBe('appending…\n');
    await notify('mino/toolResult', { turnId: 't2', seq: 4, callId: 'call_1', status: 'success', output: 'appending…\n', exitCode: 0 });
    expect(await card.locator('.tool-result').textContent()).toBe('Result: succeeded (exit code 0)');

    await notify('mino/approvalRequest', approval('call_2', 'rm -rf /', 5));
    const card2 = page.locator('.tool-card[data-call-id="call_2"]');
    await card2.getByRole('button', { name: 'Deny', exact: true }).click();
    expect((await posted()).filter((m) => m.type === 'approval')).toEqual([
      { type: 'approval', turnId: 't2', callId: 'call_1', decision: 'approve' },
      { type: 'approval', turnId: 't2', callId: 'call_2', decision: 'deny' },
    ]);
    await notify('mino/toolResult', { turnId: 't2', seq: 6, callId: 'call_2', status: 'refused', output: 'The user denied this command.' });
    expect(await card2.locator('.tool-result').textContent()).toBe('Result: denied');
    await notify('mino/textDelta', { turnId: 't2', seq: 7, delta: 'Milk is on the list.' });
    await notify('mino/turnEnded', { turnId: 't2', seq: 8, status: 'completed' });
    await page.screenshot({ path: path.join(OUT, 'webview-approval.png'), fullPage: true });
  });

  it("an MCP call's approval card shows the server, the tool, the arguments as indented and bounded JSON, and the annotations as the server's claims; it takes no focus and Deny answers it", async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 'm1', seq: 0, input: 'Read the notes.' });
    const args = JSON.stringify({ path: 'notes.txt', padding: 'x'.repeat(5000) });
    await notify('mino/approvalRequest', {
      turnId: 'm1', seq: 1, callId: 'call_1', command: 'mcp fs/read_text_file ' + args, directory: '/home/me/project',
      environment: {}, limits: { timeoutSeconds: 120, outputLimitBytes: 65536 }, approvalMode: 'rules', sandbox: 'off',
      mcp: { server: 'fs', tool: 'read_text_file', arguments: args, annotations: { readOnlyHint: true, destructiveHint: false, title: 'Read File' } },
    });
    const card = page.locator('.tool-card[data-call-id="call_1"]');
    await expect.poll(() => card.locator('dd.mcp-server').textContent()).toBe('fs');
    expect(await card.locator('.tool-name').textContent()).toBe('mcp');
    expect(await card.locator('dd.mcp-tool').textContent()).toBe('read_text_file');
    const shown = (await card.locator('pre.mcp-arguments').textContent())!;
    expect(shown.startsWith('{\n  "path": "notes.txt",\n  "padding": "xxx')).toBe(true);
    expect(shown).toContain('(1042 more characters not shown)');
    expect(shown.length).toBeLessThan(4100);
    expect(await card.locator('dd.mcp-annotations').textContent()).toBe('the server says: titled "Read File", read-only, not destructive');
    expect(await card.locator('.mcp-note').textContent()).toContain("the server's own claims");
    // Not a command: no environment or directory rows.
    expect(await card.locator('details.env').count()).toBe(0);
    expect(await card.locator('.question').textContent()).toBe('Call this MCP tool?');
    expect(await card.getAttribute('aria-label')).toBe('Mino asks to call the tool read_text_file of the MCP server fs');
    // Without a suggested rule no rule can be made from it, and nothing in the card has the focus.
    expect(await card.getByRole('button', { name: 'Allow this tool or its server for session…' }).isDisabled()).toBe(true);
    expect(await page.evaluate(() => document.activeElement?.closest('.tool-card') ?? null)).toBeNull();
    await page.keyboard.press('Enter');
    await page.keyboard.press('Space');
    expect((await posted()).filter((m) => m.type === 'approval')).toEqual([]);
    await card.getByRole('button', { name: 'Deny', exact: true }).click();
    expect((await posted()).filter((m) => m.type === 'approval')).toEqual([
      { type: 'approval', turnId: 'm1', callId: 'call_1', decision: 'deny' },
    ]);
  });

  it("an MCP call's rule is this tool or every tool of its server: this tool is the default, keys typed before answer nothing, and the server's rule is posted as `server/*`", async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 'm2', seq: 0, input: 'Read the notes.' });
    const args = JSON.stringify({ path: 'notes.txt' });
    await notify('mino/approvalRequest', {
      turnId: 'm2', seq: 1, callId: 'call_1', command: 'mcp fs/read_text_file ' + args, directory: '/home/me/project',
      environment: {}, limits: { timeoutSeconds: 120, outputLimitBytes: 65536 }, approvalMode: 'rules', sandbox: 'off',
      suggestedRule: { kind: 'mcp', tool: 'fs/read_text_file' },
      mcp: { server: 'fs', tool: 'read_text_file', arguments: args, annotations: { readOnlyHint: true } },
    });
    const card = page.locator('.tool-card[data-call-id="call_1"]');
    const open = card.getByRole('button', { name: 'Allow this tool or its server for session…' });
    await expect.poll(() => open.isDisabled()).toBe(false);
    expect(await card.getByRole('button', { name: 'Always allow this tool or its server in workspace…' }).isDisabled()).toBe(false);
    expect(await page.evaluate(() => document.activeElement?.closest('.tool-card') ?? null)).toBeNull();
    await page.keyboard.press('Enter');
    await page.keyboard.press('Space');
    expect((await posted()).filter((m) => m.type === 'approval')).toEqual([]);
    await open.click();
    const form = card.locator('.answer-form.allowSession');
    const radios = form.locator('input.mcp-rule-tool');
    expect(await radios.count()).toBe(2);
    expect(await radios.nth(0).isChecked()).toBe(true);
    expect(await form.textContent()).toContain('every tool of the MCP server fs');
    // Enter in the form confirms nothing: only its confirm button does.
    await page.keyboard.press('Enter');
    expect((await posted()).filter((m) => m.type === 'approval')).toEqual([]);
    await radios.nth(1).check();
    await form.getByRole('button', { name: 'Allow for session' }).click();
    expect((await posted()).filter((m) => m.type === 'approval')).toEqual([
      { type: 'approval', turnId: 'm2', callId: 'call_1', decision: 'allowSession', rule: { kind: 'mcp', tool: 'fs/*' } },
    ]);
  });

  it('an ended turn offers Rewind to here and Fork from here (each posting its message, never on Enter); a rewound turn is marked and offers neither', async () => {
    await host({ type: 'server', state: 'ready' });
    await host({ type: 'history', history: { sessionId: 's1', turns: [
      { turnId: 'r1', input: 'Write a.txt', status: 'completed', text: 'Done.', calls: [] },
      { turnId: 'r2', input: 'Write b.txt', status: 'completed', text: 'Done.', calls: [], rewound: true },
    ] } });
    const first = page.locator('[data-turn-id="r1"]');
    const second = page.locator('[data-turn-id="r2"]');
    await expect.poll(() => first.getByRole('button', { name: 'Rewind to here' }).count()).toBe(1);
    expect(await second.getByRole('button', { name: 'Rewind to here' }).count()).toBe(0);
    expect(await second.locator('.rewound-note').textContent()).toContain("no longer in the model's context");
    await first.getByRole('button', { name: 'Rewind to here' }).click();
    expect((await posted()).filter((m) => m.type === 'rewind')).toEqual([{ type: 'rewind', turnId: 'r1' }]);
    // Beside it, Fork from here; Enter in the input never reaches it (it takes no default focus).
    expect((await posted()).filter((m) => m.type === 'fork')).toEqual([]);
    await page.locator('textarea').first().focus();
    await page.keyboard.press('Enter');
    expect((await posted()).filter((m) => m.type === 'fork')).toEqual([]);
    await first.getByRole('button', { name: 'Fork from here' }).click();
    expect((await posted()).filter((m) => m.type === 'fork')).toEqual([{ type: 'fork', turnId: 'r1' }]);
    expect(await second.getByRole('button', { name: 'Fork from here' }).count()).toBe(0);
    // A live turn offers it once it has ended.
    await notify('mino/turnStarted', { turnId: 'r3', seq: 0, input: 'More' });
    expect(await page.locator('[data-turn-id="r3"] .rewind-turn').count()).toBe(0);
    await notify('mino/turnEnded', { turnId: 'r3', seq: 1, status: 'completed' });
    await expect.poll(() => page.locator('[data-turn-id="r3"] .rewind-turn').count()).toBe(1);
  });

  it('an MCP server that failed or exited is a notice naming it, why and that its tools are missing, with Restart; starting and ready follow', async () => {
    await ready();
    const reason = 'MCP server `ghost`: command `ghost-mcp` not found (looked in PATH=/usr/bin)';
    await notify('mino/mcp/status', { sessionId: 's1', server: 'fs', state: 'starting' });
    await notify('mino/mcp/status', { sessionId: 's1', server: 'ghost', state: 'failed', reason });
    const notice = page.locator('.notice.mcp-notice');
    await expect.poll(() => notice.count()).toBe(1);
    expect(await notice.locator('.mcp-notice-text').textContent()).toBe(
      'MCP server ghost did not start: ' + reason + '. Its tools are missing until it is restarted.',
    );
    expect(await notice.getAttribute('role')).toBe('alert');
    await notice.getByRole('button', { name: 'Restart the MCP server ghost' }).click();
    expect((await posted()).filter((m) => m.type === 'mcpRestart')).toEqual([{ type: 'mcpRestart', server: 'ghost' }]);
    await notify('mino/mcp/status', { sessionId: 's1', server: 'ghost', state: 'starting' });
    await expect.poll(() => notice.textContent()).toBe('MCP server ghost is starting…');
    expect(await notice.getByRole('button').count()).toBe(0);
    await notify('mino/mcp/status', { sessionId: 's1', server: 'ghost', state: 'ready', tools: ['mcp__ghost__echo'] });
    await expect.poll(() => notice.count()).toBe(0);
    await notify('mino/mcp/status', { sessionId: 's1', server: 'fs', state: 'ready', tools: [] });
    await notify('mino/mcp/status', { sessionId: 's1', server: 'fs', state: 'exited', reason: 'the connection closed' });
    await expect.poll(() => notice.locator('.mcp-notice-text').textContent()).toBe(
      'MCP server fs stopped: the connection closed. Its tools are missing until it is restarted.',
    );
    // One notice per server, replaced in place.
    await notify('mino/mcp/status', { sessionId: 's1', server: 'fs', state: 'exited', reason: 'again' });
    await expect.poll(() => notice.count()).toBe(1);
  });

  it('a repeated call id (later response or later turn) gets its own card showing its own command, never the earlier call\'s', async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 't1', seq: 0, input: 'List files.' });
    await notify('mino/approvalRequest', approvalRequest('t1', 'call_0', 'ls', 1));
    await page.locator('.tool-card[data-call-id="call_0"]').getByRole('button', { name: 'Approve' }).click();
    await notify('mino/toolStarted', { turnId: 't1', seq: 2, callId: 'call_0', command: 'ls' });
    await notify('mino/toolResult', { turnId: 't1', seq: 3, callId: 'call_0', status: 'success', output: 'a\n', exitCode: 0 });
    // The next response of the same turn numbers its call call_0 again.
    await notify('mino/approvalRequest', approvalRequest('t1', 'call_0', 'rm -rf build', 4));
    const waiting = page.locator('.tool-card[data-status="waiting"]');
    await expect.poll(() => waiting.count()).toBe(1);
    expect(await waiting.locator('.tool-command').textContent()).toBe('rm -rf build');
    expect(await page.locator('.tool-card[data-status="success"] .tool-command').textContent()).toBe('ls');
    await waiting.getByRole('button', { name: 'Deny', exact: true }).click();
    await notify('mino/toolResult', { turnId: 't1', seq: 5, callId: 'call_0', status: 'refused', output: 'denied' });
    // A second call with the same id in one response is answered without running.
    await notify('mino/toolResult', { turnId: 't1', seq: 6, callId: 'call_0', status: 'failed', output: 'Not run: repeated id' });
    await notify('mino/turnEnded', { turnId: 't1', seq: 7, status: 'completed' });
    expect(await page.locator('.tool-card .badge').allTextContents()).toEqual(['succeeded', 'denied', 'failed']);

    // A later turn reuses call_0: its card is in that turn and shows its command.
    await notify('mino/turnStarted', { turnId: 't2', seq: 8, input: 'Clean.' });
    await notify('mino/approvalRequest', approvalRequest('t2', 'call_0', 'git clean -fdx', 9));
    const card = page.locator('.turn').last().locator('.tool-card[data-status="waiting"]');
    expect(await card.locator('.tool-command').textContent()).toBe('git clean -fdx');
    await card.getByRole('button', { name: 'Approve' }).click();
    expect((await posted()).filter((m) => m.type === 'approval').at(-1)).toEqual(
      { type: 'approval', turnId: 't2', callId: 'call_0', decision: 'approve' },
    );
    expect(await page.locator('.tool-card .badge').allTextContents()).toEqual(['succeeded', 'denied', 'failed', 'approved']);
  });

  it('blocks the input behind the acknowledgement gate until Yes is clicked', async () => {
    await ready();
    const recovery = {
      sessionId: 's1',
      turns: [
        {
          turnId: 't9',
          status: 'interrupted',
          calls: [
            { callId: 'c1', command: 'echo milk >> shopping.txt; kill -9 $PPID', result: { status: 'unknown', output: 'Execution was started but its result was not saved.' } },
            { callId: 'c2', command: 'cat shopping.txt', result: { status: 'not_executed', output: '' } },
          ],
        },
      ],
      acknowledgementRequired: true,
      unacknowledgedTurnIds: ['t9'],
      repairs: [],
    };
    await host({
      type: 'history',
      history: {
        sessionId: 's1',
        turns: [{
          turnId: 't9', input: 'Add milk to shopping.txt.', text: '', status: 'interrupted',
          calls: recovery.turns[0].calls, notices: ['Mino runtime notice: the previous turn ended with status interrupted.'],
        }],
      },
    });
    await notify('mino/recovery', recovery);

    const gate = page.locator('#ack-gate');
    expect(await gate.isVisible()).toBe(true);
    expect(await gate.locator('#ack-question').textContent()).toBe(ACKNOWLEDGEMENT_QUESTION);
    expect(await gate.locator('.ack-call code').allTextContents()).toEqual(['echo milk >> shopping.txt; kill -9 $PPID']);
    // not_executed is a notice only, not part of the question.
    expect(await page.locator('#notices').innerText()).toContain('Not executed (never started): cat shopping.txt');
    expect(await page.locator('#input').isDisabled()).toBe(true);
    expect(await page.locator('#send').isDisabled()).toBe(true);
    // The gate answers the unknown result only: no rule, allow or deny, is offered there.
    expect(await gate.getByRole('button').allTextContents()).not.toContainEqual(expect.stringMatching(/for session|workspace/));
    await page.screenshot({ path: path.join(OUT, 'webview-ack-gate.png'), fullPage: true });

    // Typing and Enter do nothing while gated.
    await page.locator('#input').press('Enter', { timeout: 1000 }).catch(() => undefined);
    await page.keyboard.press('Enter');
    expect((await posted()).filter((m) => m.type === 'send' || m.type === 'acknowledge')).toEqual([]);

    // A click that no deliberate act caused (not focused, no key pressed on it) does not answer.
    await page.evaluate(() => (document.getElementById('ack-yes') as HTMLButtonElement).click());
    expect((await posted()).filter((m) => m.type === 'acknowledge')).toEqual([]);

    await gate.getByRole('button', { name: /Yes/ }).click();
    expect((await posted()).filter((m) => m.type === 'acknowledge')).toEqual([{ type: 'acknowledge', turnIds: ['t9'] }]);
    // Still blocked until the host confirms the acknowledgement was saved.
    expect(await page.locator('#input').isDisabled()).toBe(true);
    await host({ type: 'acknowledged', turnIds: ['t9'] });
    expect(await gate.isVisible()).toBe(false);
    expect(await page.locator('#input').isDisabled()).toBe(false);

    await page.locator('#input').fill('Is milk on the list now?');
    await page.locator('#input').press('Enter');
    expect((await posted()).filter((m) => m.type === 'send')).toEqual([{ type: 'send', text: 'Is milk on the list now?' }]);
    await page.screenshot({ path: path.join(OUT, 'webview-after-ack.png'), fullPage: true });
  });

  it('renders restored history and a crashed server with a restart button', async () => {
    await host({ type: 'server', state: 'ready' });
    await host({
      type: 'history',
      history: {
        sessionId: 's1',
        turns: [{
          turnId: 'h1', input: 'List files', text: 'Here they are.', status: 'completed', notices: [],
          calls: [{ callId: 'k1', command: 'ls', result: { status: 'success', output: 'a.txt\n', exitCode: 0 } }],
        }],
      },
    });
    expect(await page.locator('[data-turn-id="h1"] .tool-output').textContent()).toBe('a.txt\n');
    expect(await page.locator('[data-turn-id="h1"] .tool-result').textContent()).toBe('Result: succeeded (exit code 0)');
    await host({ type: 'server', state: 'crashed' });
    expect(await page.locator('#status').innerText()).toContain('Mino server stopped unexpectedly.');
    await page.locator('#status').getByRole('button', { name: 'Restart' }).click();
    expect((await posted()).filter((m) => m.type === 'restart')).toEqual([{ type: 'restart' }]);
    expect(probe.cspViolations).toEqual([]);
    expect(probe.pageErrors).toEqual([]);
  });
  it('an arriving approval card takes no focus: Enter and Space typed for the composer answer nothing; Tab to Approve, then Enter or Space, answers', async () => {
    await ready();
    const input = page.locator('#input');
    await input.click();
    await input.pressSequentially('Clean the build.');
    await input.press('Enter');
    await host({ type: 'sent', turnId: 'k1' });
    await notify('mino/turnStarted', { turnId: 'k1', seq: 0, input: 'Clean the build.' });
    // The person goes on typing a follow-up while the turn runs.
    await input.pressSequentially('and then');
    await notify('mino/approvalRequest', approvalRequest('k1', 'call_k', 'rm -rf build', 1));
    const card = page.locator('.tool-card[data-call-id="call_k"]');
    expect(await card.locator('.badge').textContent()).toBe('waiting for approval');

    // Enter and Space typed for the composer answer nothing: the card did not take focus.
    await page.keyboard.press('Enter');
    await page.keyboard.press(' ');
    await page.keyboard.press('Enter');
    const approvals = async () => (await posted()).filter((m) => m.type === 'approval');
    expect(await approvals()).toEqual([]);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('input');
    expect(await card.locator('.badge').textContent()).toBe('waiting for approval');
    expect(await input.inputValue()).toBe('and then ');
    // Announced with its command.
    expect(await page.getByRole('group', { name: 'Mino asks to run: rm -rf build' }).count()).toBe(1);
    const approve = card.getByRole('button', { name: 'Approve' });
    expect(await approve.getAttribute('aria-describedby')).toBeTruthy();

    // Moving to the buttons deliberately: Shift+Tab reaches Deny first, then Approve.
    await page.keyboard.press('Shift+Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Deny');
    await page.keyboard.press('Shift+Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Approve');
    expect(await approvals()).toEqual([]);
    await page.keyboard.press('Enter');
    expect(await approvals()).toEqual([{ type: 'approval', turnId: 'k1', callId: 'call_k', decision: 'approve' }]);

    // Space works the same way, on a second card; typing Space in the composer first answers nothing.
    await notify('mino/toolResult', { turnId: 'k1', seq: 2, callId: 'call_k', status: 'success', output: '', exitCode: 0 });
    await input.focus();
    await notify('mino/approvalRequest', approvalRequest('k1', 'call_s', 'make', 3));
    await page.keyboard.press(' ');
    expect(await approvals()).toHaveLength(1);
    const approveS = page.locator('.tool-card[data-call-id="call_s"]').getByRole('button', { name: 'Approve' });
    await approveS.focus();
    await page.keyboard.press(' ');
    expect(await approvals()).toEqual([
      { type: 'approval', turnId: 'k1', callId: 'call_k', decision: 'approve' },
      { type: 'approval', turnId: 'k1', callId: 'call_s', decision: 'approve' },
    ]);
    expect(probe.pageErrors).toEqual([]);
  });

  it('after a keyboard answer focus returns to the input, with no new line or question from the key; the next card still takes no focus', async () => {
    await ready();
    const input = page.locator('#input');
    await input.click();
    await input.fill('Clean the build.');
    await input.press('Enter');
    await host({ type: 'sent', turnId: 'kf' });
    await notify('mino/turnStarted', { turnId: 'kf', seq: 0, input: 'Clean the build.' });
    await input.pressSequentially('and then');
    const approvals = async () => (await posted()).filter((m) => m.type === 'approval');
    const sends = async () => (await posted()).filter((m) => m.type === 'send');
    const focused = () => page.evaluate(() => document.activeElement?.id);

    // Enter on Approve (reached with Shift+Tab).
    await notify('mino/approvalRequest', approvalRequest('kf', 'call_1', 'make', 1));
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Shift+Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Approve');
    await page.keyboard.press('Enter');
    expect(await approvals()).toEqual([{ type: 'approval', turnId: 'kf', callId: 'call_1', decision: 'approve' }]);
    expect(await focused()).toBe('input');
    expect(await input.inputValue()).toBe('and then');
    await page.keyboard.type(' rebuild');
    expect(await input.inputValue()).toBe('and then rebuild');

    // Space on Deny.
    await notify('mino/toolResult', { turnId: 'kf', seq: 2, callId: 'call_1', status: 'success', output: '', exitCode: 0 });
    await notify('mino/approvalRequest', approvalRequest('kf', 'call_2', 'rm -rf build', 3));
    expect(await focused()).toBe('input');
    await page.keyboard.press('Shift+Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Deny');
    await page.keyboard.press(' ');
    expect((await approvals()).at(-1)).toEqual({ type: 'approval', turnId: 'kf', callId: 'call_2', decision: 'deny' });
    expect(await focused()).toBe('input');
    expect(await input.inputValue()).toBe('and then rebuild');

    // A rule form's confirm, pressed with Enter.
    await notify('mino/toolResult', { turnId: 'kf', seq: 4, callId: 'call_2', status: 'refused', output: '' });
    await notify('mino/approvalRequest', { ...approvalRequest('kf', 'call_3', 'cargo test', 5), approvalMode: 'rules', sandbox: 'off', suggestedRule: { kind: 'prefix', command: 'cargo test' } });
    const card = page.locator('.tool-card[data-call-id="call_3"]');
    await card.getByRole('button', { name: 'Allow for session…' }).click();
    await card.locator('.confirm-answer').focus();
    await page.keyboard.press('Enter');
    expect((await approvals()).at(-1)).toMatchObject({ callId: 'call_3', decision: 'allowSession' });
    expect(await focused()).toBe('input');

    // Typed ahead into the returned focus while the next card arrives: nothing is answered or sent.
    await notify('mino/toolResult', { turnId: 'kf', seq: 6, callId: 'call_3', status: 'success', output: '', exitCode: 0 });
    const before = (await approvals()).length;
    await notify('mino/approvalRequest', approvalRequest('kf', 'call_4', 'make install', 7));
    await page.keyboard.press('Enter');
    await page.keyboard.press(' ');
    expect(await approvals()).toHaveLength(before);
    expect(await sends()).toHaveLength(1);
    expect(await focused()).toBe('input');
    expect(await page.locator('.tool-card[data-call-id="call_4"] .badge').textContent()).toBe('waiting for approval');
  });

  it('a click that did not come from a key pressed on the button itself does not approve', async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 'k2', seq: 0, input: 'Go.' });
    await page.locator('#input').focus();
    await notify('mino/approvalRequest', approvalRequest('k2', 'call_p', 'rm -rf build', 1));
    // A keyboard-style click (detail 0) while the button is not focused, and one
    // while Enter is held since before (keydown on the composer): neither answers.
    await page.evaluate(() => (document.querySelector('.tool-card[data-call-id="call_p"] .approve') as HTMLButtonElement).click());
    await page.keyboard.down('Enter');
    await page.evaluate(() => {
      const b = document.querySelector('.tool-card[data-call-id="call_p"] .approve') as HTMLButtonElement;
      b.focus();
      b.click();
    });
    await page.keyboard.up('Enter');
    expect((await posted()).filter((m) => m.type === 'approval')).toEqual([]);
    expect(await page.locator('.tool-card[data-call-id="call_p"] .badge').textContent()).toBe('waiting for approval');
  });

  it('keeps a refused question in the input with the error, and clears it only once the server accepted it', async () => {
    await ready();
    const input = page.locator('#input');
    await input.fill('   x'.repeat(3));
    await input.press('Enter');
    const sends = async () => (await posted()).filter((m) => m.type === 'send');
    expect(await sends()).toHaveLength(1);
    // Waiting for the server: the question is still there and cannot be edited.
    expect(await input.inputValue()).toBe('   x   x   x');
    expect(await input.evaluate((e) => (e as HTMLTextAreaElement).readOnly)).toBe(true);

    for (const [code, message] of [
      [-32602, 'invalid params: text is longer than 1 MiB'],
      [-32011, 'a turn is already in progress'],
    ] as const) {
      await host({ type: 'error', request: 'send', code, message });
      expect(await input.inputValue()).toBe('   x   x   x');
      expect(await input.evaluate((e) => (e as HTMLTextAreaElement).readOnly)).toBe(false);
      expect(await page.locator('#composer-error').isVisible()).toBe(true);
      expect(await page.locator('#composer-error').textContent()).toBe(message);
      // Try again: the same text is sent again.
      await input.press('Enter');
    }
    expect((await sends()).map((m) => m.text)).toEqual(['   x   x   x', '   x   x   x', '   x   x   x']);
    expect(await page.locator('#composer-error').isVisible()).toBe(false);

    // Acknowledgement required: the gate opens, the question stays for later.
    await host({ type: 'error', request: 'send', code: -32010, message: 'Acknowledge unknown tool results before continuing' });
    expect(await page.locator('#ack-gate').isVisible()).toBe(true);
    expect(await input.inputValue()).toBe('   x   x   x');
    await host({ type: 'acknowledged', turnIds: [] });
    await input.press('Enter');
    expect(await sends()).toHaveLength(4);
    await host({ type: 'sent', turnId: 'q1' });
    expect(await input.inputValue()).toBe('');
    expect(await page.locator('#composer-error').isVisible()).toBe(false);
  });

  it('a server crash keeps the transcript, shows the running card did not finish, and offers Restart', async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 'c1', seq: 0, input: 'Build it.' });
    await notify('mino/textDelta', { turnId: 'c1', seq: 1, delta: 'Building.' });
    await notify('mino/approvalRequest', approvalRequest('c1', 'call_b', 'make all', 2));
    await page.locator('.tool-card[data-call-id="call_b"]').getByRole('button', { name: 'Approve' }).click();
    await notify('mino/toolStarted', { turnId: 'c1', seq: 3, callId: 'call_b', command: 'make all' });
    await notify('mino/toolOutput', { turnId: 'c1', seq: 4, callId: 'call_b', stream: 'stdout', chunk: 'cc -c a.c\n' });
    await notify('mino/approvalRequest', approvalRequest('c1', 'call_w', 'make install', 5));

    await host({ type: 'server', state: 'crashed', message: 'Mino server stopped unexpectedly.' });
    const turn = page.locator('[data-turn-id="c1"]');
    expect(await turn.locator('.msg.user .text').textContent()).toBe('Build it.');
    expect(await turn.locator('.assistant-text').first().textContent()).toBe('Building.');
    const running = turn.locator('.tool-card[data-call-id="call_b"]');
    expect(await running.locator('.tool-output').textContent()).toBe('cc -c a.c\n');
    expect(await running.locator('.badge').textContent()).toBe('did not finish');
    expect(await running.locator('.tool-result').textContent()).toContain('it may have run');
    const waiting = turn.locator('.tool-card[data-call-id="call_w"]');
    expect(await waiting.locator('.badge').textContent()).toBe('did not finish');
    expect(await waiting.locator('.tool-result').textContent()).toContain('it did not run');
    expect(await waiting.getByRole('button', { name: 'Approve' }).isVisible()).toBe(false);
    expect(await turn.locator('.turn-status').textContent()).toContain('did not finish');
    expect(await page.locator('#status').innerText()).toContain('Mino server stopped unexpectedly.');
    await page.screenshot({ path: path.join(OUT, 'webview-crash.png'), fullPage: true });
    await page.locator('#status').getByRole('button', { name: 'Restart' }).click();
    expect((await posted()).filter((m) => m.type === 'restart')).toEqual([{ type: 'restart' }]);
  });

  it('an approval whose answer is lost with the connection is never offered again: the card says the command may have run', async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 'x1', seq: 0, input: 'Add milk.' });
    await notify('mino/approvalRequest', approvalRequest('x1', 'call_m', 'echo milk >> shopping.txt', 1));
    const card = page.locator('.tool-card[data-call-id="call_m"]');
    await card.getByRole('button', { name: 'Approve' }).click();
    // The server ran the command and died before its answer was read: the
    // request fails with the connection's code, in either order with the crash.
    const lost = { type: 'error', request: 'approval', turnId: 'x1', callId: 'call_m', code: -32097, message: 'Pending response rejected since connection got disposed' };
    await host(lost);
    expect(await card.locator('.badge').textContent()).toBe('approved');
    expect(await card.getByRole('button', { name: 'Approve' }).isEnabled()).toBe(false);
    await host({ type: 'server', state: 'crashed', message: 'Mino server stopped unexpectedly.' });
    await host(lost);
    expect(await card.locator('.badge').textContent()).toBe('did not finish');
    expect(await card.locator('.tool-result').textContent()).toContain('it may have run');
    expect(await card.getByRole('button', { name: 'Approve' }).isVisible()).toBe(false);

    // A refusal the server sent (not -32012) decided nothing: the card asks again.
    await host({ type: 'server', state: 'ready' });
    await notify('mino/turnStarted', { turnId: 'x2', seq: 0, input: 'Again.' });
    await notify('mino/approvalRequest', approvalRequest('x2', 'call_n', 'ls', 1));
    const again = page.locator('.tool-card[data-call-id="call_n"]');
    await again.getByRole('button', { name: 'Deny', exact: true }).click();
    await host({ type: 'error', request: 'approval', turnId: 'x2', callId: 'call_n', code: -32602, message: 'invalid params' });
    expect(await again.locator('.badge').textContent()).toBe('waiting for approval');
    expect(await again.getByRole('button', { name: 'Approve' }).isEnabled()).toBe(true);
  });

  it('a missing server binary is shown as not found with the setting that fixes it, not as stopped unexpectedly', async () => {
    const message = 'mino-server not found at /opt/nowhere/mino-server. Set mino.serverPath to the mino-server binary ' +
      '(`cargo build -p mino-server` builds target/debug/mino-server) or put mino-server on PATH.';
    await host({ type: 'server', state: 'failed', message, fixSetting: 'mino.serverPath' });
    const status = await page.locator('#status').innerText();
    expect(status).toContain('mino-server not found at /opt/nowhere/mino-server');
    expect(status).toContain('mino.serverPath');
    expect(status).not.toContain('stopped unexpectedly');
    await page.locator('#status').getByRole('button', { name: 'Open settings' }).click();
    expect((await posted()).filter((m) => m.type === 'openSettings')).toEqual([{ type: 'openSettings' }]);
    expect(await page.locator('#send').isDisabled()).toBe(true);
  });

  it('shows the evidence summary beside an unknown result; the result stays unknown and the gate stays', async () => {
    await ready();
    const summary = 'the command exited 0 after Mino stopped; last output: milk';
    const evidence = {
      outcome: 'exited', exitCode: 0, pid: 4242, startedAt: '2026-11-30T21:00:00Z', endedAt: '2026-11-30T21:00:01Z',
      outputTail: 'milk\n', summary,
    };
    const unknown = { status: 'unknown', output: 'Execution was started but its result was not saved.' };
    const calls = [{ callId: 'e1', command: 'echo milk >> shopping.txt', result: unknown, evidence }];
    await host({
      type: 'history',
      history: {
        sessionId: 's1',
        turns: [{ turnId: 'ev1', input: 'Add milk.', text: '', status: 'interrupted', calls, notices: [] }],
      },
    });
    await notify('mino/recovery', {
      sessionId: 's1',
      turns: [{ turnId: 'ev1', status: 'interrupted', calls }],
      acknowledgementRequired: true,
      unacknowledgedTurnIds: ['ev1'],
      repairs: [],
    });
    const card = page.locator('.tool-card[data-call-id="e1"]');
    expect(await card.locator('.badge').textContent()).toBe('result unknown');
    expect(await card.locator('.tool-result').textContent()).toBe('Result: unknown, the command may have run');
    expect(await card.locator('.tool-evidence').textContent()).toBe(`Evidence: ${summary}`);
    expect(await page.locator('#ack-gate').isVisible()).toBe(true);
    expect(await page.locator('#ack-gate .ack-evidence').textContent()).toBe(`Evidence: ${summary}`);
    expect(await page.locator('#input').isDisabled()).toBe(true);
    await page.screenshot({ path: path.join(OUT, 'webview-evidence.png'), fullPage: true });

    // Evidence that arrives only with mino/recovery (a card without it in history) is shown too.
    await host({
      type: 'history',
      history: {
        sessionId: 's1',
        turns: [{ turnId: 'ev1', input: 'Add milk.', text: '', status: 'interrupted', calls: [{ ...calls[0], evidence: undefined }], notices: [] }],
      },
    });
    expect(await card.locator('.tool-evidence').isVisible()).toBe(false);
    await notify('mino/recovery', {
      sessionId: 's1', turns: [{ turnId: 'ev1', status: 'interrupted', calls }],
      acknowledgementRequired: true, unacknowledgedTurnIds: ['ev1'], repairs: [],
    });
    expect(await card.locator('.tool-evidence').textContent()).toBe(`Evidence: ${summary}`);
    expect(await card.locator('.badge').textContent()).toBe('result unknown');
  });
});

const MARKDOWN_ANSWER = [
  '## Plan',
  '',
  'Run the **build** first, then `cargo test`.',
  '',
  '```rust',
  'fn main() {',
  '    println!("hi");',
  '}',
  '```',
  '',
  '| crate | tests |',
  '|:------|------:|',
  '| mino-core | 120 |',
  '| mino-server | 48 |',
  '',
].join('\n');

describe.skipIf(skip)('sessions in the panel', () => {
  async function openSession(sessionId: string, title: string | null): Promise<void> {
    await host({ type: 'session', session: { sessionId, title } });
  }

  it('the header names the session ("New chat" until it has a title); Rename asks the host; a rename keeps the transcript', async () => {
    await ready();
    expect(await page.locator('#session-header').isVisible()).toBe(false);
    await openSession('s1', null);
    expect(await page.locator('#session-title').textContent()).toBe('New chat');
    await notify('mino/turnStarted', { sessionId: 's1', turnId: 'h1', seq: 0, input: 'Fix the build.' });
    await page.locator('#session-header').getByRole('button', { name: 'Rename this session' }).click();
    expect((await posted()).filter((m) => m.type === 'renameSession')).toEqual([{ type: 'renameSession' }]);
    await openSession('s1', 'Build fixes');
    expect(await page.locator('#session-title').textContent()).toBe('Build fixes');
    expect(await page.locator('[data-turn-id="h1"]').count()).toBe(1);
    expect(probe.pageErrors).toEqual([]);
  });

  it('a switch clears the transcript, then rebuilds it from the history and mino/recovery that follow, with the gate as at startup', async () => {
    await ready();
    await openSession('s1', 'First');
    await host({ type: 'history', history: { sessionId: 's1', turns: [{
      turnId: 'a1', input: 'Old question', text: 'Old answer', status: 'completed', notices: [], calls: [],
    }] } });
    await notify('mino/recovery', { sessionId: 's1', turns: [], acknowledgementRequired: false, unacknowledgedTurnIds: [], repairs: ['cut a torn line'] });
    expect(await page.locator('#notices').innerText()).toContain('cut a torn line');

    await openSession('s2', 'Second');
    // The old session's transcript and notices are gone at once.
    expect(await page.locator('[data-turn-id="a1"]').count()).toBe(0);
    expect(await page.locator('#notices').innerText()).toBe('');
    expect(await page.locator('#session-title').textContent()).toBe('Second');
    const calls = [{ callId: 'u1', command: 'echo milk >> shopping.txt', result: { status: 'unknown', output: '' } }];
    await host({ type: 'history', history: { sessionId: 's2', turns: [{
      turnId: 'b1', input: 'Add milk.', text: '', status: 'interrupted', notices: [], calls,
    }] } });
    await notify('mino/recovery', {
      sessionId: 's2', turns: [{ turnId: 'b1', status: 'interrupted', calls }],
      acknowledgementRequired: true, unacknowledgedTurnIds: ['b1'], repairs: [],
    });
    expect(await page.locator('[data-turn-id="b1"]').count()).toBe(1);
    expect(await page.locator('#ack-gate').isVisible()).toBe(true);
    expect(await page.locator('#ack-calls code').allTextContents()).toEqual(['echo milk >> shopping.txt']);
    expect(await page.locator('#input').isDisabled()).toBe(true);
    // A stray Enter does not acknowledge; a deliberate click does, for this session's turn.
    await page.keyboard.press('Enter');
    expect((await posted()).filter((m) => m.type === 'acknowledge')).toEqual([]);
    await page.locator('#ack-gate').getByRole('button', { name: /Yes/ }).click();
    expect((await posted()).filter((m) => m.type === 'acknowledge')).toEqual([{ type: 'acknowledge', turnIds: ['b1'] }]);

    // Switching away from a gated session closes its gate; the next session has none.
    await openSession('s3', null);
    expect(await page.locator('#ack-gate').isVisible()).toBe(false);
    await host({ type: 'history', history: { sessionId: 's3', turns: [] } });
    await notify('mino/recovery', { sessionId: 's3', turns: [], acknowledgementRequired: false, unacknowledgedTurnIds: [], repairs: [] });
    expect(await page.locator('#input').isDisabled()).toBe(false);
    expect(await page.locator('#session-title').textContent()).toBe('New chat');
    expect(probe.pageErrors).toEqual([]);
  });

  it('the header shows the approval mode in force (and the sandbox, when there is one), follows each change, and a click asks the host for Set Approval Mode', async () => {
    await page.setViewportSize({ width: 300, height: 700 });
    await ready();
    await openSession('s1', 'A rather long session title that has to give way');
    await host({ type: 'model', model: 'gpt-5.1' });
    const mode = page.locator('#session-mode');
    expect(await mode.isVisible()).toBe(false);
    await host({ type: 'modes', approvalMode: 'ask', sandbox: 'off' });
    expect(await mode.textContent()).toBe('Mode: ask');
    expect(await mode.getAttribute('title')).toContain('ask for every command');
    await host({ type: 'modes', approvalMode: 'sandboxed-auto', sandbox: 'workspace-write' });
    expect(await mode.textContent()).toBe('Mode: sandboxed-auto');
    expect(await page.locator('#session-sandbox').textContent()).toBe('sandbox workspace-write');
    expect(await mode.getAttribute('title')).toContain('run sandboxed commands without asking; sandbox workspace-write');
    // In a narrow panel the mode is shown whole (the title gives way); nothing scrolls sideways.
    const box = (await mode.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(300);
    expect(await mode.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(300);
    await page.screenshot({ path: path.join(OUT, 'webview-header-mode.png') });
    await host({ type: 'modes', approvalMode: 'rules', sandbox: 'off' });
    expect(await mode.textContent()).toBe('Mode: rules');
    expect(await page.locator('#session-sandbox').isVisible()).toBe(false);
    await mode.click();
    expect((await posted()).filter((m) => m.type === 'setApprovalMode')).toEqual([{ type: 'setApprovalMode' }]);
    expect(probe.pageErrors).toEqual([]);
  });

  it('the header shows plan mode and the AGENTS.md files in force, from history and as mino/instructionsChanged changes them', async () => {
    await ready();
    await openSession('s1', 'Planning');
    await host({ type: 'modes', approvalMode: 'plan', sandbox: 'off' });
    const mode = page.locator('#session-mode');
    expect(await mode.textContent()).toBe('Mode: plan');
    expect(await mode.getAttribute('title')).toContain('plan mode: commands and edits are refused');
    const instructions = page.locator('#session-instructions');
    const root = { path: '/repo/AGENTS.md', size: 40000, truncated: true, given: 32768, sha256: 'a'.repeat(64) };
    const app = { path: '/repo/app/AGENTS.md', size: 12, truncated: false, given: 12, sha256: 'b'.repeat(64) };
    await host({ type: 'history', history: { sessionId: 's1', turns: [], hasMore: false, instructionFiles: [root, app] } });
    expect(await instructions.isVisible()).toBe(true);
    expect(await instructions.textContent()).toBe('2 AGENTS.md (cut)');
    const tip = (await instructions.getAttribute('title'))!;
    expect(tip).toContain('/repo/AGENTS.md (40000 bytes, only the first 32768 given)');
    expect(tip.indexOf('/repo/AGENTS.md')).toBeLessThan(tip.indexOf('/repo/app/AGENTS.md'));
    await host({ type: 'notification', method: 'mino/instructionsChanged', params: { sessionId: 's1', files: [app] } });
    expect(await instructions.textContent()).toBe('AGENTS.md');
    await host({ type: 'notification', method: 'mino/instructionsChanged', params: { sessionId: 's1', files: [] } });
    expect(await instructions.isVisible()).toBe(false);
    expect(probe.pageErrors).toEqual([]);
  });

  it('ignores notifications of a session other than the current one', async () => {
    await ready();
    await openSession('s1', 'Current');
    await notify('mino/turnStarted', { sessionId: 'old', turnId: 'f1', seq: 0, input: 'From the old session' });
    await notify('mino/approvalRequest', { ...approvalRequest('f1', 'call_f', 'rm -rf build', 1), sessionId: 'old' });
    await notify('mino/recovery', {
      sessionId: 'old', turns: [{ turnId: 'f0', status: 'interrupted', calls: [{ callId: 'c', command: 'make', result: { status: 'unknown', output: '' } }] }],
      acknowledgementRequired: true, unacknowledgedTurnIds: ['f0'], repairs: [],
    });
    expect(await page.locator('[data-turn-id="f1"]').count()).toBe(0);
    expect(await page.locator('.tool-card').count()).toBe(0);
    expect(await page.locator('#ack-gate').isVisible()).toBe(false);
    expect(await page.locator('#progress').isVisible()).toBe(false);
    // The current session's notifications are shown.
    await notify('mino/turnStarted', { sessionId: 's1', turnId: 'g1', seq: 0, input: 'From this session' });
    expect(await page.locator('[data-turn-id="g1"] .msg.user .text').textContent()).toBe('From this session');
  });
});

describe.skipIf(skip)('approval rules in the card', () => {
  function ruleRequest(turnId: string, callId: string, command: string, suggested: string | null) {
    return {
      ...approvalRequest(turnId, callId, command, 1),
      sandbox: 'workspace-write',
      approvalMode: 'rules',
      ...(suggested ? { suggestedRule: { kind: 'prefix', command: suggested } } : {}),
    };
  }
  const approvals = async () => (await posted()).filter((m) => m.type === 'approval');

  it('shows the sandbox and approval mode; Allow for session… opens a form whose rule is prefilled and editable, sent as edited; the confirm button never takes focus and typed-ahead Enter or Space confirms nothing', async () => {
    await ready();
    const input = page.locator('#input');
    await input.click();
    await notify('mino/turnStarted', { turnId: 'r1', seq: 0, input: 'Run the tests.' });
    await input.pressSequentially('next');
    await notify('mino/approvalRequest', ruleRequest('r1', 'call_r', 'npm test -- --watch=false', 'npm test'));
    const card = page.locator('.tool-card[data-call-id="call_r"]');
    const meta = await card.locator('.tool-meta').innerText();
    expect(meta).toContain('workspace-write');
    expect(meta).toContain('ask unless a rule allows it');
    // Nothing in the card took focus on arrival.
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('input');

    await card.getByRole('button', { name: 'Allow for session…' }).click();
    const form = card.locator('.answer-form');
    const field = form.locator('input.rule-command');
    expect(await field.inputValue()).toBe('npm test');
    expect(await form.getByRole('radio', { name: 'commands starting with' }).isChecked()).toBe(true);
    // The person just chose the form: its text field has focus, never the confirm button.
    expect(await page.evaluate(() => document.activeElement?.className)).toBe('rule-command');
    const confirm = form.getByRole('button', { name: 'Allow for session', exact: true });
    expect(await confirm.evaluate((b) => b === document.activeElement)).toBe(false);

    // Space typed ahead goes into the text field and confirms nothing.
    await page.keyboard.press(' ');
    expect(await approvals()).toEqual([]);
    expect(await field.inputValue()).toBe('npm test ');
    // Nor does Enter in the text field (typed ahead, or to "submit").
    await page.keyboard.press('Enter');
    await field.fill('npm run test');
    await field.press('Enter');
    expect(await approvals()).toEqual([]);
    // Nor does a click while Enter or Space is held from the field.
    for (const key of ['Enter', ' ']) {
      await field.focus();
      await page.keyboard.down(key);
      await confirm.evaluate((b: HTMLButtonElement) => { b.focus(); b.click(); });
      // Released back in the field, as a key typed for it would be.
      await field.focus();
      await page.keyboard.up(key);
      expect(await approvals(), `a click while ${JSON.stringify(key)} is held`).toEqual([]);
    }
    // The held Space was typed into the field, where the person typed it.
    expect(await field.inputValue()).toBe('npm run test ');
    await field.fill('npm run test');

    // An edited rule stays as written when the kind changes.
    await form.getByRole('radio', { name: 'exactly this command' }).check();
    expect(await field.inputValue()).toBe('npm run test');
    await form.getByRole('radio', { name: 'commands starting with' }).check();
    // Enter pressed on the confirm button itself, after moving there, confirms.
    await field.focus();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Allow for session');
    await page.keyboard.press('Enter');
    expect(await approvals()).toEqual([{
      type: 'approval', turnId: 'r1', callId: 'call_r', decision: 'allowSession', rule: { kind: 'prefix', command: 'npm run test' },
    }]);
    expect(await card.locator('.badge').textContent()).toBe('approved');
    expect(await field.isDisabled()).toBe(true);
    expect(probe.pageErrors).toEqual([]);
  });

  it('Always allow in workspace… as an exact rule; a refusal (-32602) is shown in the card, which stays answerable', async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 'w1', seq: 0, input: 'Format.' });
    await notify('mino/approvalRequest', ruleRequest('w1', 'call_w', 'cargo fmt --all', 'cargo fmt'));
    const card = page.locator('.tool-card[data-call-id="call_w"]');
    await card.getByRole('button', { name: 'Always allow in workspace…' }).click();
    const form = card.locator('.answer-form');
    // The untouched prefill follows the kind.
    await form.getByRole('radio', { name: 'exactly this command' }).check();
    expect(await form.locator('input.rule-command').inputValue()).toBe('cargo fmt --all');
    await form.getByRole('button', { name: 'Always allow', exact: true }).click();
    expect(await approvals()).toEqual([{
      type: 'approval', turnId: 'w1', callId: 'call_w', decision: 'allowWorkspace', rule: { kind: 'exact', command: 'cargo fmt --all' },
    }]);

    const refusal = 'invalid params: a rule for `bash` would allow any command: state the command it runs instead';
    await host({ type: 'error', request: 'approval', turnId: 'w1', callId: 'call_w', code: -32602, message: refusal });
    expect(await card.locator('.card-error').textContent()).toBe(refusal);
    expect(await card.locator('.badge').textContent()).toBe('waiting for approval');
    expect(await form.locator('input.rule-command').isEnabled()).toBe(true);
    expect(await card.getByRole('button', { name: 'Approve' }).isEnabled()).toBe(true);
    // An empty rule is not sent.
    await form.locator('input.rule-command').fill('  ');
    await form.getByRole('button', { name: 'Always allow', exact: true }).click();
    expect(await form.locator('.answer-form-error').textContent()).toBe('Enter the command the rule allows.');
    expect(await approvals()).toHaveLength(1);
    // A command that is not one plain command has no suggestion: no rule can cover it.
    await notify('mino/approvalRequest', ruleRequest('w1', 'call_x', 'ls | wc -l', null));
    const card2 = page.locator('.tool-card[data-call-id="call_x"]');
    expect(await card2.getByRole('button', { name: 'Allow for session…' }).isDisabled()).toBe(true);
    expect(await card2.getByRole('button', { name: 'Always allow in workspace…' }).isDisabled()).toBe(true);
    expect(await card2.locator('.no-rule-note').textContent()).toContain('not one plain command');
    expect(await card2.getByRole('button', { name: 'Deny with reason…' }).isEnabled()).toBe(true);
    // It stays so after a refused answer re-enables the card.
    await card2.getByRole('button', { name: 'Deny', exact: true }).click();
    await host({ type: 'error', request: 'approval', turnId: 'w1', callId: 'call_x', code: -32602, message: 'refused' });
    expect(await card2.getByRole('button', { name: 'Approve' }).isEnabled()).toBe(true);
    expect(await card2.getByRole('button', { name: 'Allow for session…' }).isDisabled()).toBe(true);
  });

  it('an edit offers a path rule: the form shows the pattern prefilled and editable, without kinds; Enter in it confirms nothing; an edit outside the workspace offers none', async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 'p1', seq: 0, input: 'Edit.' });
    const edit = { tool: 'edit_file', path: 'src/a.rs', newFile: false, size: 3, diff: '', leavesWorkspace: false };
    await notify('mino/approvalRequest', {
      ...ruleRequest('p1', 'call_p', 'edit_file src/a.rs', null), edit, suggestedRule: { kind: 'path', pattern: 'src/a.rs' },
    });
    const card = page.locator('.tool-card[data-call-id="call_p"]');
    await card.getByRole('button', { name: 'Allow for session…' }).click();
    const form = card.locator('.answer-form');
    const field = form.locator('input.rule-pattern');
    expect(await field.inputValue()).toBe('src/a.rs');
    expect(await form.getByRole('radio').count()).toBe(0);
    await field.fill('src/*.rs');
    await field.press('Enter');
    expect(await approvals()).toEqual([]);
    await form.getByRole('button', { name: 'Allow for session', exact: true }).click();
    expect(await approvals()).toEqual([{
      type: 'approval', turnId: 'p1', callId: 'call_p', decision: 'allowSession', rule: { kind: 'path', pattern: 'src/*.rs' },
    }]);
    await notify('mino/approvalRequest', {
      ...ruleRequest('p1', 'call_o', 'edit_file ../x', null), edit: { ...edit, path: '/elsewhere/x', leavesWorkspace: true },
    });
    const outside = page.locator('.tool-card[data-call-id="call_o"]');
    expect(await outside.getByRole('button', { name: 'Always allow in workspace…' }).isDisabled()).toBe(true);
    expect(await outside.locator('.no-rule-note').textContent()).toContain('outside the workspace');
  });

  it('under the ask mode the rule form says the rule applies to later commands only once the mode is rules; a server without approval modes offers no rules', async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 'q1', seq: 0, input: 'Test.' });
    await notify('mino/approvalRequest', { ...ruleRequest('q1', 'call_q', 'npm test', 'npm test'), approvalMode: 'ask' });
    const card = page.locator('.tool-card[data-call-id="call_q"]');
    await card.getByRole('button', { name: 'Allow for session…' }).click();
    expect(await card.locator('.answer-form-note').textContent()).toContain('only once the mode is rules');
    await notify('mino/approvalRequest', approvalRequest('q1', 'call_o', 'ls', 2));
    const old = page.locator('.tool-card[data-call-id="call_o"]');
    expect(await old.getByRole('button', { name: 'Allow for session…' }).count()).toBe(0);
    expect(await old.getByRole('button', { name: 'Deny with reason…' }).count()).toBe(1);
  });

  it("under the ask mode the rule form offers Change the approval mode…, which asks the host for Set Approval Mode and answers nothing; under rules it is not offered", async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 'm1', seq: 0, input: 'Test.' });
    await notify('mino/approvalRequest', { ...ruleRequest('m1', 'call_m', 'npm test', 'npm test'), approvalMode: 'ask' });
    const card = page.locator('.tool-card[data-call-id="call_m"]');
    await card.getByRole('button', { name: 'Allow for session…' }).click();
    const change = card.locator('.answer-form').getByRole('button', { name: 'Change the approval mode…' });
    expect(await change.isVisible()).toBe(true);
    // The rule field has the focus, not the way to another mode.
    expect(await page.evaluate(() => document.activeElement?.classList.contains('rule-command'))).toBe(true);
    await change.click();
    expect((await posted()).filter((m) => m.type === 'setApprovalMode')).toEqual([{ type: 'setApprovalMode' }]);
    expect(await approvals()).toEqual([]);
    // The form stays open: the rule is still to be confirmed or not.
    expect(await card.locator('.answer-form').count()).toBe(1);

    await notify('mino/approvalRequest', ruleRequest('m1', 'call_r', 'npm run lint', 'npm run'));
    const underRules = page.locator('.tool-card[data-call-id="call_r"]');
    await underRules.getByRole('button', { name: 'Allow for session…' }).click();
    expect(await underRules.getByRole('button', { name: 'Change the approval mode…' }).count()).toBe(0);
    expect(probe.pageErrors).toEqual([]);
  });

  it('Deny with reason… sends the reason; Enter or Space typed ahead, in the field or held during a click, does not; Escape leaves the form without cancelling the turn', async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 'd1', seq: 0, input: 'Clean.' });
    await notify('mino/approvalRequest', ruleRequest('d1', 'call_d', 'rm -rf build', 'rm'));
    const card = page.locator('.tool-card[data-call-id="call_d"]');
    await card.getByRole('button', { name: 'Deny with reason…' }).click();
    const reason = card.locator('input.deny-reason');
    expect(await page.evaluate(() => document.activeElement?.className)).toBe('deny-reason');
    await page.keyboard.press('Escape');
    expect(await card.locator('.answer-form').count()).toBe(0);
    expect((await posted()).filter((m) => m.type === 'cancel')).toEqual([]);

    await card.getByRole('button', { name: 'Deny with reason…' }).click();
    // Space and Enter typed ahead go into the reason field and confirm nothing.
    await page.keyboard.press(' ');
    await page.keyboard.press('Enter');
    expect(await approvals()).toEqual([]);
    expect(await reason.inputValue()).toBe(' ');
    await reason.fill('');
    await reason.pressSequentially('build/ holds my release artefacts');
    await reason.press('Enter');
    expect(await approvals()).toEqual([]);
    const confirm = card.locator('.answer-form').getByRole('button', { name: 'Deny', exact: true });
    // A click while Enter or Space is held from the field confirms nothing.
    for (const key of ['Enter', ' ']) {
      await reason.focus();
      await page.keyboard.down(key);
      await confirm.evaluate((b: HTMLButtonElement) => { b.focus(); b.click(); });
      await reason.focus();
      await page.keyboard.up(key);
      expect(await approvals(), `a click while ${JSON.stringify(key)} is held`).toEqual([]);
    }
    // The held Space was typed into the field, where the person typed it.
    expect(await reason.inputValue()).toBe('build/ holds my release artefacts ');
    await confirm.click();
    expect(await approvals()).toEqual([{
      type: 'approval', turnId: 'd1', callId: 'call_d', decision: 'deny', reason: 'build/ holds my release artefacts',
    }]);
    expect(await card.locator('.badge').textContent()).toBe('denying…');
  });

  it('Deny for session… opens the rule form prefilled and editable and sends denySession, never an approval; its confirm never takes focus and typed-ahead Enter or Space confirms nothing; Deny stays first', async () => {
    await ready();
    const input = page.locator('#input');
    await input.click();
    await notify('mino/turnStarted', { turnId: 'ds1', seq: 0, input: 'Publish.' });
    await input.pressSequentially('meanwhile');
    await notify('mino/approvalRequest', ruleRequest('ds1', 'call_ds', 'git push --force origin main', 'git push'));
    const card = page.locator('.tool-card[data-call-id="call_ds"]');
    // Typed ahead for the composer: the card took no focus, nothing is answered or opened.
    await page.keyboard.press('Enter');
    await page.keyboard.press(' ');
    expect(await approvals()).toEqual([]);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('input');
    expect(await card.locator('.answer-form').count()).toBe(0);
    // Shift+Tab from the input still reaches plain Deny first: declining stays the default.
    await page.keyboard.press('Shift+Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Deny');
    // The deny-rule choices sit beside the allow ones, in that order.
    expect(await card.locator('.more-actions button').allTextContents()).toEqual([
      'Allow for session…', 'Always allow in workspace…', 'Deny for session…', 'Deny for workspace…', 'Deny with reason…',
    ]);

    await card.getByRole('button', { name: 'Deny for session…' }).click();
    const form = card.locator('.answer-form');
    expect(await form.locator('.answer-form-title').textContent()).toBe('Deny, and refuse without asking for the rest of this session:');
    const field = form.locator('input.rule-command');
    expect(await field.inputValue()).toBe('git push');
    expect(await field.getAttribute('aria-label')).toBe('Command the rule denies');
    expect(await page.evaluate(() => document.activeElement?.className)).toBe('rule-command');
    const confirm = form.getByRole('button', { name: 'Deny for session', exact: true });
    expect(await confirm.evaluate((b) => b === document.activeElement)).toBe(false);
    // Enter and Space typed into the field, or held from it during a click, confirm nothing.
    await page.keyboard.press(' ');
    await page.keyboard.press('Enter');
    expect(await approvals()).toEqual([]);
    await field.fill('git push --force');
    await field.press('Enter');
    for (const key of ['Enter', ' ']) {
      await field.focus();
      await page.keyboard.down(key);
      await confirm.evaluate((b: HTMLButtonElement) => { b.focus(); b.click(); });
      await field.focus();
      await page.keyboard.up(key);
      expect(await approvals(), `a click while ${JSON.stringify(key)} is held`).toEqual([]);
    }
    await field.fill('git push --force');
    // The untouched prefill follows the kind; this one was edited and stays.
    await form.getByRole('radio', { name: 'exactly this command' }).check();
    expect(await field.inputValue()).toBe('git push --force');
    await form.getByRole('radio', { name: 'commands starting with' }).check();
    await confirm.click();
    expect(await approvals()).toEqual([{
      type: 'approval', turnId: 'ds1', callId: 'call_ds', decision: 'denySession', rule: { kind: 'prefix', command: 'git push --force' },
    }]);
    // Denied, never approved.
    expect(await card.locator('.badge').textContent()).toBe('denying…');
    expect(await card.getByRole('button', { name: 'Approve' }).isDisabled()).toBe(true);

    // Deny for workspace…, an exact rule from the untouched prefill.
    await notify('mino/toolResult', { turnId: 'ds1', seq: 2, callId: 'call_ds', status: 'refused', output: 'Denied.' });
    await notify('mino/approvalRequest', ruleRequest('ds1', 'call_dw', 'rm -rf target', 'rm'));
    const card2 = page.locator('.tool-card[data-call-id="call_dw"]');
    await card2.getByRole('button', { name: 'Deny for workspace…' }).click();
    const form2 = card2.locator('.answer-form');
    expect(await form2.locator('.answer-form-title').textContent()).toContain('always refuse in this workspace');
    await form2.getByRole('radio', { name: 'exactly this command' }).check();
    expect(await form2.locator('input.rule-command').inputValue()).toBe('rm -rf target');
    // An empty rule is not sent.
    await form2.locator('input.rule-command').fill(' ');
    await form2.getByRole('button', { name: 'Deny for workspace', exact: true }).click();
    expect(await form2.locator('.answer-form-error').textContent()).toBe('Enter the command the rule denies.');
    await form2.locator('input.rule-command').fill('rm -rf target');
    await form2.getByRole('button', { name: 'Deny for workspace', exact: true }).click();
    expect((await approvals()).at(-1)).toEqual({
      type: 'approval', turnId: 'ds1', callId: 'call_dw', decision: 'denyWorkspace', rule: { kind: 'exact', command: 'rm -rf target' },
    });
    expect(await card2.locator('.badge').textContent()).toBe('denying…');
    // A refusal of the rule (-32602) leaves the card answerable, still not approved.
    await host({ type: 'error', request: 'approval', turnId: 'ds1', callId: 'call_dw', code: -32602, message: 'refused' });
    expect(await card2.locator('.badge').textContent()).toBe('waiting for approval');
    expect((await approvals()).filter((m) => m.decision !== 'denySession' && m.decision !== 'denyWorkspace')).toEqual([]);

    // A later call the rule refuses comes as a result alone: its card shows the command the result names and the refusal naming the rule.
    await notify('mino/toolResult', { turnId: 'ds1', seq: 4, callId: 'call_again', command: 'git push --force origin main',
      status: 'refused', output: 'Denied by a rule the user set: prefix "git push --force"' });
    const refused = page.locator('.tool-card[data-call-id="call_again"]');
    expect(await refused.locator('.badge').textContent()).toBe('denied');
    expect(await refused.locator('.tool-command').isVisible()).toBe(true);
    expect(await refused.locator('.tool-command').textContent()).toBe('git push --force origin main');
    expect(await refused.locator('.tool-output').textContent()).toBe('Denied by a rule the user set: prefix "git push --force"');
    expect(await refused.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    // The same call restored from history looks the same.
    await host({ type: 'history', history: { sessionId: 's1', turns: [{ turnId: 'dh1', input: 'Push.', text: '', notices: [], status: 'completed',
      calls: [{ callId: 'call_again', command: 'git push --force origin main',
        result: { status: 'refused', output: 'Denied by a rule the user set: prefix "git push --force"' } }] }] } });
    const restored = page.locator('.turn').filter({ hasText: 'Push.' }).locator('.tool-card[data-call-id="call_again"]');
    expect(await restored.locator('.badge').textContent()).toBe('denied');
    expect(await restored.locator('.tool-command').textContent()).toBe('git push --force origin main');
    expect(await restored.locator('.tool-output').textContent()).toBe('Denied by a rule the user set: prefix "git push --force"');
    // A result naming no command (a call not on record) hides the empty box.
    await notify('mino/toolResult', { turnId: 'ds1', seq: 5, callId: 'call_nameless', status: 'failed', output: 'Unknown tool.' });
    expect(await page.locator('.tool-card[data-call-id="call_nameless"] .tool-command').isHidden()).toBe(true);
    expect(probe.pageErrors).toEqual([]);
  });

  it('the deny-rule choices follow the allow ones: a path rule for an edit, none for a path leaving the workspace, a command that is not plain or a server without approval modes', async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 'dp1', seq: 0, input: 'Edit.' });
    const edit = { tool: 'edit_file', path: 'secrets/key.txt', newFile: false, size: 3, diff: '', leavesWorkspace: false };
    await notify('mino/approvalRequest', {
      ...ruleRequest('dp1', 'call_p', 'edit_file secrets/key.txt', null), edit, suggestedRule: { kind: 'path', pattern: 'secrets/key.txt' },
    });
    const card = page.locator('.tool-card[data-call-id="call_p"]');
    await card.getByRole('button', { name: 'Deny for session…' }).click();
    const form = card.locator('.answer-form');
    const field = form.locator('input.rule-pattern');
    expect(await field.inputValue()).toBe('secrets/key.txt');
    expect(await form.getByRole('radio').count()).toBe(0);
    await field.fill('secrets/**');
    await field.press('Enter');
    expect(await approvals()).toEqual([]);
    await form.getByRole('button', { name: 'Deny for session', exact: true }).click();
    expect(await approvals()).toEqual([{
      type: 'approval', turnId: 'dp1', callId: 'call_p', decision: 'denySession', rule: { kind: 'path', pattern: 'secrets/**' },
    }]);
    // A path leaving the workspace has no suggested rule: no deny rule either.
    await notify('mino/approvalRequest', {
      ...ruleRequest('dp1', 'call_o', 'edit_file /etc/hosts', null), edit: { ...edit, path: '/etc/hosts', leavesWorkspace: true },
    });
    const outside = page.locator('.tool-card[data-call-id="call_o"]');
    expect(await outside.getByRole('button', { name: 'Deny for session…' }).isDisabled()).toBe(true);
    expect(await outside.getByRole('button', { name: 'Deny for workspace…' }).isDisabled()).toBe(true);
    expect(await outside.getByRole('button', { name: 'Deny', exact: true }).isEnabled()).toBe(true);
    // Nor a command that is not one plain command.
    await notify('mino/approvalRequest', ruleRequest('dp1', 'call_x', 'ls | wc -l', null));
    const pipe = page.locator('.tool-card[data-call-id="call_x"]');
    expect(await pipe.getByRole('button', { name: 'Deny for workspace…' }).isDisabled()).toBe(true);
    // A server without approval modes offers no rules at all.
    await notify('mino/approvalRequest', approvalRequest('dp1', 'call_n', 'ls', 5));
    const old = page.locator('.tool-card[data-call-id="call_n"]');
    expect(await old.getByRole('button', { name: 'Deny for session…' }).count()).toBe(0);
    expect(await old.getByRole('button', { name: 'Deny for workspace…' }).count()).toBe(0);
    // Under the ask mode the form says the rule waits for the rules mode.
    await notify('mino/approvalRequest', { ...ruleRequest('dp1', 'call_q', 'npm publish', 'npm publish'), approvalMode: 'ask' });
    const ask = page.locator('.tool-card[data-call-id="call_q"]');
    await ask.getByRole('button', { name: 'Deny for session…' }).click();
    expect(await ask.locator('.answer-form-note').textContent()).toBe(
      'The approval mode is ask: this command is denied now and the rule is kept, but later commands use it only once the mode is rules.');
    expect(probe.pageErrors).toEqual([]);
  });

  it('tool cards say a rule or the sandbox approved them, live and from history', async () => {
    await ready();
    await host({ type: 'history', history: { sessionId: 's1', turns: [{
      turnId: 'p0', input: 'Test it.', text: '', status: 'completed', notices: [],
      calls: [
        { callId: 'h1', command: 'npm test', result: { status: 'success', output: '', exitCode: 0 }, sandbox: 'off',
          approvedBy: { kind: 'rule', rule: { id: 'r1', kind: 'prefix', command: 'npm test', scope: 'workspace' } } },
        { callId: 'h2', command: 'ls', result: { status: 'success', output: '', exitCode: 0 }, sandbox: 'read-only',
          approvedBy: { kind: 'sandbox' } },
        { callId: 'h3', command: 'make', result: { status: 'success', output: '', exitCode: 0 }, sandbox: 'off',
          approvedBy: { kind: 'user' } },
      ],
    }] } });
    expect(await page.locator('.tool-card[data-call-id="h1"] .tool-approved-by').textContent()).toBe('approved by rule `npm test`');
    expect(await page.locator('.tool-card[data-call-id="h2"] .tool-approved-by').textContent()).toBe('approved automatically in the sandbox (read-only)');
    expect(await page.locator('.tool-card[data-call-id="h3"] .tool-approved-by').isVisible()).toBe(false);

    await notify('mino/turnStarted', { turnId: 'p1', seq: 0, input: 'Again.' });
    await notify('mino/toolStarted', {
      turnId: 'p1', seq: 1, callId: 'l1', command: 'npm test -- --ci', sandbox: 'workspace-write',
      approvedBy: { kind: 'rule', rule: { id: 'r2', kind: 'prefix', command: 'npm test', scope: 'session' } },
    });
    const live = page.locator('.tool-card[data-call-id="l1"]');
    expect(await live.locator('.tool-approved-by').textContent()).toBe('approved by rule `npm test`');
    expect(await live.locator('.badge').textContent()).toBe('running');
  });

  it('restores a turn from its items in the order it happened (text, card, text, notice), cards with the directory, environment and limits shown live, a cancelled turn\'s partial text, and usage', async () => {
    await ready();
    const notice = 'Mino runtime notice: the previous turn ended with status cancelled. Tool results above are retained; no command was automatically retried.';
    const call = {
      callId: 'k1', command: 'ls', result: { status: 'success', output: 'a.txt\n', exitCode: 0 },
      approvedBy: { kind: 'user' }, sandbox: 'off', directory: '/home/me/project',
      environment: { HOME: '/home/me', PATH: '/usr/bin:/bin' }, limits: { timeoutSeconds: 120, outputLimitBytes: 65536 },
    };
    await host({ type: 'history', history: {
      sessionId: 's1', usage: { inputTokens: 3000, outputTokens: 456, totalTokens: 3456 },
      turns: [{
        turnId: 'o1', input: 'Look around', text: 'Let me look.', status: 'cancelled', reason: 'Cancelled by the user.',
        notices: [notice], calls: [call], usage: { inputTokens: 1000, outputTokens: 234, totalTokens: 1234, cachedInputTokens: 800 },
        items: [
          { type: 'text', text: 'Let me look.' },
          { type: 'call', call },
          { type: 'text', text: 'Half of the answ' },
          { type: 'notice', text: notice },
        ],
      }],
    } });
    const order = await page.locator('[data-turn-id="o1"] .body > *').evaluateAll((els) => els.map((e) => {
      const el = e as HTMLElement;
      if (el.classList.contains('tool-card')) return 'card ' + el.dataset.callId;
      if (el.classList.contains('turn-notice')) return 'notice';
      return 'text ' + (el.textContent || '').trim();
    }));
    expect(order).toEqual(['text Let me look.', 'card k1', 'text Half of the answ', 'notice']);
    const restored = page.locator('.tool-card[data-call-id="k1"]');
    expect(await restored.locator('.tool-meta dt').allTextContents()).toEqual(['Directory', 'Environment', 'Limits', 'Sandbox']);
    expect(await restored.locator('.tool-meta').textContent()).toContain('timeout 120 s, output 64 KiB');
    expect(await page.locator('[data-turn-id="o1"] .turn-usage').textContent()).toBe('1,234 tokens (1,000 in (800 cached), 234 out)');
    expect(await page.locator('#session-usage').textContent()).toBe('Session: 3,456 tokens (3,000 in, 456 out)');

    // The same facts live: the restored card shows what the approval card showed.
    await notify('mino/turnStarted', { turnId: 'o2', seq: 0, input: 'Again' });
    await notify('mino/approvalRequest', { ...approvalRequest('o2', 'k2', 'ls', 1), sandbox: 'off' });
    const live = page.locator('.tool-card[data-call-id="k2"]');
    expect(await live.locator('.tool-meta').textContent()).toBe(await restored.locator('.tool-meta').textContent());
    await notify('mino/turnEnded', {
      turnId: 'o2', seq: 2, status: 'completed', usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
      sessionUsage: { inputTokens: 3010, outputTokens: 461, totalTokens: 3471 },
    });
    expect(await page.locator('[data-turn-id="o2"] .turn-usage').textContent()).toBe('15 tokens (10 in, 5 out)');
    expect(await page.locator('#session-usage').textContent()).toBe('Session: 3,471 tokens (3,010 in, 461 out)');
  });

  it('restores history from a server without items as before: text, then cards, then notices', async () => {
    await ready();
    await host({ type: 'history', history: { sessionId: 's1', turns: [{
      turnId: 'q1', input: 'List', text: 'Listed.', status: 'interrupted', notices: ['Interrupted.'],
      calls: [{ callId: 'c1', command: 'ls', result: { status: 'success', output: '', exitCode: 0 } }],
    }] } });
    const classes = await page.locator('[data-turn-id="q1"] .body > *').evaluateAll((els) =>
      els.map((e) => (e.classList.contains('tool-card') ? 'card' : e.classList.contains('turn-notice') ? 'notice' : 'text')));
    expect(classes).toEqual(['text', 'card', 'notice']);
    expect(await page.locator('.tool-card[data-call-id="c1"] .tool-meta dt').count()).toBe(0);
    expect(await page.locator('#session-usage').isVisible()).toBe(false);
  });
});

describe.skipIf(skip)('answers as markdown', () => {
  it('renders headings, bold, inline code, highlighted code blocks and tables from streamed text', async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 'm1', seq: 0, input: 'How do I test?' });
    let seq = 1;
    for (let i = 0; i < MARKDOWN_ANSWER.length; i += 7) {
      await notify('mino/textDelta', { turnId: 'm1', seq: seq++, delta: MARKDOWN_ANSWER.slice(i, i + 7) });
    }
    await notify('mino/turnEnded', { turnId: 'm1', seq, status: 'completed', text: MARKDOWN_ANSWER });
    const answer = page.locator('[data-turn-id="m1"] .assistant-text');
    expect(await answer.locator('h2').textContent()).toBe('Plan');
    expect(await answer.locator('strong').textContent()).toBe('build');
    expect(await answer.locator('p code').textContent()).toBe('cargo test');
    const code = answer.locator('.code-block pre code');
    expect(await code.textContent()).toBe('fn main() {\n    println!("hi");\n}\n');
    expect(await code.getAttribute('class')).toContain('language-rust');
    // Highlighted: keywords and strings are spans coloured from the theme.
    expect(await code.locator('.hljs-keyword').first().textContent()).toBe('fn');
    const stringColour = await code.locator('.hljs-string').first().evaluate((e) => getComputedStyle(e).color);
    expect(stringColour).toBe('rgb(206, 145, 120)');
    expect(await answer.locator('.code-lang').textContent()).toBe('rust');
    expect(await answer.locator('table th').allTextContents()).toEqual(['crate', 'tests']);
    expect(await answer.locator('table td').allTextContents()).toEqual(['mino-core', '120', 'mino-server', '48']);
    // Alignment as classes (the CSP refuses inline styles), and it applies.
    expect(await answer.locator('table td').nth(1).getAttribute('class')).toBe('align-right');
    expect(await answer.locator('table td').nth(1).evaluate((e) => getComputedStyle(e).textAlign)).toBe('right');
    expect(await answer.locator('[style]').count()).toBe(0);
    // Nothing raw is left over.
    const text = await answer.innerText();
    expect(text).not.toContain('##');
    expect(text).not.toContain('**');
    expect(text).not.toContain('```');
    expect(text).not.toContain('|:---');
    expect(probe.cspViolations).toEqual([]);
    expect(probe.pageErrors).toEqual([]);
  });

  it('model text with <script>, onerror or javascript: links is shown, never run or kept as markup', async () => {
    await ready();
    const evil = [
      'Look: <script>window.__pwned = "script"</script>',
      '',
      '<img src=x onerror="window.__pwned = \'onerror\'">',
      '',
      '[click](javascript:window.__pwned=1) and <a href="javascript:alert(1)">a</a>',
      '',
      '<svg onload="window.__pwned = \'svg\'"></svg>',
      '',
      '![tracker](https://example.invalid/pixel.png)',
    ].join('\n');
    await notify('mino/turnStarted', { turnId: 'x1', seq: 0, input: 'Hi' });
    await notify('mino/textDelta', { turnId: 'x1', seq: 1, delta: evil });
    await notify('mino/turnEnded', { turnId: 'x1', seq: 2, status: 'completed', text: evil });
    const answer = page.locator('[data-turn-id="x1"] .assistant-text');
    expect(await page.evaluate(() => (window as any).__pwned)).toBeUndefined();
    expect(await answer.locator('script, img, svg, iframe, [onerror], [onload]').count()).toBe(0);
    expect(await answer.evaluate((e) => [...e.querySelectorAll('a')].map((a) => a.getAttribute('href')))).toEqual(
      ['https://example.invalid/pixel.png'],
    );
    // The person still sees what the model wrote.
    expect(await answer.innerText()).toContain('<script>window.__pwned = "script"</script>');
    expect(probe.cspViolations).toEqual([]);
    expect(probe.pageErrors).toEqual([]);
  });

  it("a code block's Copy and Insert post its code to the host", async () => {
    await ready();
    const answer = 'Try:\n\n```sh\ncargo build --locked\ncargo test\n```\n\nand\n\n```\nplain `text`\n```\n';
    await notify('mino/turnStarted', { turnId: 'k9', seq: 0, input: 'Build?' });
    await notify('mino/textDelta', { turnId: 'k9', seq: 1, delta: answer });
    await notify('mino/turnEnded', { turnId: 'k9', seq: 2, status: 'completed', text: answer });
    const blocks = page.locator('[data-turn-id="k9"] .code-block');
    expect(await blocks.count()).toBe(2);
    await blocks.nth(0).getByRole('button', { name: 'Copy code' }).click();
    await blocks.nth(0).getByRole('button', { name: 'Insert code at the cursor' }).click();
    await blocks.nth(1).getByRole('button', { name: 'Insert code at the cursor' }).click();
    expect((await posted()).filter((m) => m.type === 'copy' || m.type === 'insert')).toEqual([
      { type: 'copy', text: 'cargo build --locked\ncargo test' },
      { type: 'insert', text: 'cargo build --locked\ncargo test' },
      { type: 'insert', text: 'plain `text`' },
    ]);
    expect(await blocks.nth(0).locator('.code-copy').textContent()).toBe('Copied');
  });

  it('a long streamed answer renders only its newest part per frame and ends identical to a full render', async () => {
    await ready();
    const para = (i: number) => `Paragraph ${i} with **bold** and \`code\`.\n\n`;
    const fence = '```js\nconst a = 1;\n\nconst b = 2;\n```\n\n';
    let full = '';
    for (let i = 0; i < 120; i++) full += para(i) + (i % 10 === 0 ? fence : '');
    await notify('mino/turnStarted', { turnId: 'L1', seq: 0, input: 'Long' });
    await page.evaluate((text) => {
      for (let i = 0; i < text.length; i += 5) {
        window.dispatchEvent(new MessageEvent('message', {
          data: { type: 'notification', method: 'mino/textDelta', params: { turnId: 'L1', seq: i, delta: text.slice(i, i + 5) } },
        }));
      }
    }, full);
    // Settled blocks were frozen: the re-rendered tail is a small part of the answer.
    await expect.poll(() => page.locator('[data-turn-id="L1"] .md-frozen > .md-chunk').count()).toBeGreaterThan(0);
    await notify('mino/turnEnded', { turnId: 'L1', seq: 99999, status: 'completed', text: full });
    const streamed = await page.locator('[data-turn-id="L1"] .assistant-text').textContent();
    await host({ type: 'history', history: { sessionId: 's1', turns: [
      { turnId: 'L1', input: 'Long', text: full, status: 'completed', calls: [], notices: [] },
    ] } });
    const whole = await page.locator('[data-turn-id="L1"] .assistant-text').textContent();
    expect(streamed!.replace(/\s+/g, '')).toBe(whole!.replace(/\s+/g, ''));
    expect(await page.locator('[data-turn-id="L1"] .code-block').count()).toBe(12);
  });
});

describe.skipIf(skip)('progress, announcements and focus', () => {
  it('says what Mino is doing through a turn: sending, thinking, writing, waiting for approval, running with a ticking clock', async () => {
    // A page of its own with a controlled clock: the elapsed time ticks without waiting.
    await page.context().close();
    ({ page, probe } = await newWebviewPage(browser));
    await page.clock.install({ time: new Date('2026-11-30T21:00:00Z') });
    await page.goto(`${webHost.origin}/`);
    await page.waitForFunction(() => (window as any).__posted.some((m: any) => m.type === 'ready'));
    await ready();
    const progressText = () => page.locator('#progress').innerText();
    expect(await page.locator('#progress').isVisible()).toBe(false);

    await page.locator('#input').fill('Build it.');
    await page.locator('#input').press('Enter');
    expect(await progressText()).toBe('Sending your question…');
    await host({ type: 'sent', turnId: 'p1' });
    expect(await progressText()).toBe('Mino is thinking…');
    await notify('mino/turnStarted', { turnId: 'p1', seq: 0, input: 'Build it.' });
    expect(await progressText()).toBe('Mino is thinking…');
    await notify('mino/textDelta', { turnId: 'p1', seq: 1, delta: 'Building.' });
    expect(await progressText()).toBe('Mino is writing…');
    await notify('mino/approvalRequest', approvalRequest('p1', 'call_m', 'make all', 2));
    expect(await progressText()).toBe('Waiting for your approval to run: make all');
    await page.locator('.tool-card[data-call-id="call_m"]').getByRole('button', { name: 'Approve' }).click();
    await notify('mino/toolStarted', { turnId: 'p1', seq: 3, callId: 'call_m', command: 'make all' });
    expect(await progressText()).toBe('Running make all · 0 s');
    await page.clock.runFor(3000);
    expect(await progressText()).toBe('Running make all · 3 s');
    await page.clock.runFor(62_000);
    expect(await progressText()).toBe('Running make all · 1 min 05 s');
    await notify('mino/toolResult', { turnId: 'p1', seq: 4, callId: 'call_m', status: 'success', output: '', exitCode: 0 });
    expect(await progressText()).toBe('Mino is thinking…');
    await notify('mino/textDelta', { turnId: 'p1', seq: 5, delta: 'Done.' });
    expect(await progressText()).toBe('Mino is writing…');
    await notify('mino/turnEnded', { turnId: 'p1', seq: 6, status: 'completed' });
    expect(await page.locator('#progress').isVisible()).toBe(false);
    // The ticking line is not a live region; the announcer is.
    expect(await page.locator('#progress').getAttribute('aria-live')).toBeNull();
  });

  it('announces completed answers and approval cards through a polite live region, not every streamed chunk', async () => {
    await ready();
    expect(await page.locator('#transcript').getAttribute('aria-live')).toBeNull();
    const announcer = page.locator('#announcer');
    expect(await announcer.getAttribute('aria-live')).toBe('polite');
    const heard: string[] = [];
    await page.exposeFunction('__heard', (t: string) => heard.push(t));
    await page.evaluate(() => {
      const el = document.getElementById('announcer')!;
      new MutationObserver(() => (window as any).__heard(el.textContent)).observe(el, { childList: true, characterData: true, subtree: true });
    });
    await notify('mino/turnStarted', { turnId: 'a1', seq: 0, input: 'Hi' });
    for (const [i, d] of ['Hel', 'lo, ', '**world**.'].entries()) {
      await notify('mino/textDelta', { turnId: 'a1', seq: i + 1, delta: d });
    }
    await notify('mino/approvalRequest', approvalRequest('a1', 'call_a', 'rm -rf build', 4));
    await notify('mino/toolResult', { turnId: 'a1', seq: 5, callId: 'call_a', status: 'refused', output: '' });
    await notify('mino/textDelta', { turnId: 'a1', seq: 6, delta: 'Skipped.' });
    await notify('mino/turnEnded', { turnId: 'a1', seq: 7, status: 'completed' });
    await expect.poll(() => heard.length).toBe(3);
    expect(heard).toEqual([
      'Mino asks to run: rm -rf build. Approve or Deny in its card.',
      'Command rm -rf build: denied.',
      'Mino answered: Hello, world.\nSkipped.',
    ]);
    // The card never took focus.
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('input');
  });

  it('focuses the input when the panel opens and after an acknowledgement', async () => {
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('input');
    await ready();
    await notify('mino/recovery', {
      sessionId: 's1',
      turns: [{ turnId: 'g1', status: 'interrupted', calls: [{ callId: 'c', command: 'make', result: { status: 'unknown', output: '' } }] }],
      acknowledgementRequired: true, unacknowledgedTurnIds: ['g1'], repairs: [],
    });
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('ack-gate');
    await page.locator('#ack-yes').click();
    await host({ type: 'acknowledged', turnIds: ['g1'] });
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('input');
  });
});

describe.skipIf(skip)('editor context', () => {
  it('shows added files and selections as removable chips and sends them in the question as fenced blocks with their path', async () => {
    await ready();
    await page.getByRole('button', { name: '+ Selection' }).click();
    await page.getByRole('button', { name: '+ File', exact: true }).click();
    await page.getByRole('button', { name: '+ Files…' }).click();
    expect((await posted()).filter((m) => m.type === 'addContext')).toEqual([
      { type: 'addContext', source: 'selection' },
      { type: 'addContext', source: 'activeFile' },
      { type: 'addContext', source: 'pick' },
    ]);
    await host({ type: 'context', items: [
      { path: 'src/app.ts', language: 'typescript', text: 'const b = 1;\n', startLine: 2, endLine: 2 },
      { path: 'README.md', language: 'markdown', text: 'Use ```sh blocks```' },
      { path: 'notes.txt', language: '', text: 'remove me' },
    ] });
    const chips = page.locator('#chips .chip');
    expect(await chips.locator('.chip-label').allTextContents()).toEqual(['src/app.ts:2', 'README.md', 'notes.txt']);
    await page.getByRole('button', { name: 'Remove notes.txt' }).click();
    expect(await chips.locator('.chip-label').allTextContents()).toEqual(['src/app.ts:2', 'README.md']);

    await page.locator('#input').fill('Why is b 1?');
    await page.locator('#input').press('Enter');
    const question = [
      'Why is b 1?',
      '',
      'Context: src/app.ts, lines 2-2',
      '```typescript',
      'const b = 1;',
      '```',
      '',
      'Context: README.md',
      '````markdown',
      'Use ```sh blocks```',
      '````',
    ].join('\n');
    expect((await posted()).filter((m) => m.type === 'send')).toEqual([{ type: 'send', text: question }]);
    // Accepted: the chips went with the question, which the transcript shows as asked.
    await host({ type: 'sent', turnId: 'ctx1' });
    expect(await chips.count()).toBe(0);
    await notify('mino/turnStarted', { turnId: 'ctx1', seq: 0, input: question });
    expect(await page.locator('[data-turn-id="ctx1"] .msg.user .text').textContent()).toBe(question);
  });

  it('@ in the input offers the selection, the active file and workspace files; Enter or a click adds one as a chip and sends nothing; Escape only closes the menu', async () => {
    await ready();
    const input = page.locator('#input');
    await input.click();
    const queries = async () => (await posted()).filter((m) => m.type === 'mentions').map((m) => m.query);
    const adds = async () => (await posted()).filter((m) => m.type === 'addContext');
    const files = [
      { kind: 'selection', label: 'Selection: src/main.rs:3-9', path: 'src/main.rs' },
      { kind: 'activeFile', label: 'Active file: src/main.rs', path: 'src/main.rs' },
      { kind: 'file', label: 'src/main.rs', path: 'src/main.rs' },
      { kind: 'file', label: 'docs/manual.md', path: 'docs/manual.md' },
    ];
    await input.pressSequentially('Explain @ma');
    expect(await queries()).toEqual(['', 'm', 'ma']);
    // A late answer to an earlier query is not shown.
    await host({ type: 'mentions', query: 'm', items: files });
    expect(await page.locator('#mentions').isVisible()).toBe(false);
    await host({ type: 'mentions', query: 'ma', items: files.slice(2) });
    const options = page.locator('#mentions [role="option"]');
    expect(await options.allTextContents()).toEqual(['src/main.rs', 'docs/manual.md']);
    expect(await input.getAttribute('aria-expanded')).toBe('true');
    expect(await options.nth(0).getAttribute('aria-selected')).toBe('true');
    await page.keyboard.press('ArrowDown');
    expect(await options.nth(1).getAttribute('aria-selected')).toBe('true');
    await page.keyboard.press('Enter');
    // Chosen: the @word leaves the text, the file is asked for, nothing is sent.
    expect(await adds()).toEqual([{ type: 'addContext', source: 'file', path: 'docs/manual.md' }]);
    expect(await input.inputValue()).toBe('Explain ');
    expect((await posted()).filter((m) => m.type === 'send')).toEqual([]);
    expect(await page.locator('#mentions').isVisible()).toBe(false);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('input');
    await host({ type: 'context', items: [{ path: 'docs/manual.md', language: 'markdown', text: '# Manual\n' }] });
    expect(await page.locator('#chips .chip-label').allTextContents()).toEqual(['docs/manual.md']);

    // The selection, by a click.
    await input.pressSequentially('and @');
    await host({ type: 'mentions', query: '', items: files });
    await page.locator('#mentions [role="option"]', { hasText: 'Selection: src/main.rs:3-9' }).click();
    expect((await adds()).at(-1)).toEqual({ type: 'addContext', source: 'selection' });
    expect(await input.inputValue()).toBe('Explain and ');
    await host({ type: 'context', items: [{ path: 'src/main.rs', language: 'rust', text: 'fn main() {}\n', startLine: 3, endLine: 9 }] });
    expect(await page.locator('#chips .chip-label').allTextContents()).toEqual(['docs/manual.md', 'src/main.rs:3-9']);

    // Escape closes the menu and leaves the text; it does not cancel the running turn.
    await notify('mino/turnStarted', { turnId: 'm1', seq: 0, input: 'earlier' });
    await input.pressSequentially('@do');
    await host({ type: 'mentions', query: 'do', items: files.slice(3) });
    expect(await page.locator('#mentions').isVisible()).toBe(true);
    await page.keyboard.press('Escape');
    expect(await page.locator('#mentions').isVisible()).toBe(false);
    expect(await input.inputValue()).toBe('Explain and @do');
    expect((await posted()).filter((m) => m.type === 'cancel')).toEqual([]);
    // An e-mail address is not a mention.
    await notify('mino/turnEnded', { turnId: 'm1', seq: 1, status: 'completed' });
    await input.fill('');
    await input.pressSequentially('mail me@example.org');
    expect((await queries()).at(-1)).toBe('do');

    // Sent: the question carries both as fenced blocks, as Add Selection does.
    await input.fill('Explain these');
    await input.press('Enter');
    const sent = (await posted()).filter((m) => m.type === 'send').at(-1);
    expect(sent.text).toContain('Context: docs/manual.md\n```markdown\n# Manual\n```');
    expect(sent.text).toContain('Context: src/main.rs, lines 3-9\n```rust\nfn main() {}\n```');
  });

  it('a refused question keeps its chips; a context error is shown below the input', async () => {
    await ready();
    await host({ type: 'context', items: [{ path: 'a.rs', language: 'rust', text: 'fn a() {}' }] });
    await page.locator('#input').fill('Explain');
    await page.locator('#input').press('Enter');
    await host({ type: 'error', request: 'send', code: -32011, message: 'a turn is already in progress' });
    expect(await page.locator('#chips .chip').count()).toBe(1);
    await host({ type: 'error', request: 'addContext', message: 'Nothing is selected in a.rs: select the lines to add first.' });
    expect(await page.locator('#composer-error').textContent()).toBe('Nothing is selected in a.rs: select the lines to add first.');
  });
});

describe.skipIf(skip)('narrow panels', () => {
  const env = {
    HOME: '/home/me',
    PATH: '/home/me/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/snap/bin',
    MINO_VERY_LONG_ENVIRONMENT_VARIABLE_NAME_FOR_SETTINGS: 'on',
    LS_COLORS: 'rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:cd=40;33;01:or=40;31;01'.repeat(3),
    LANG: 'C.UTF-8',
  };

  for (const width of [300, 420]) {
    it(`keeps every environment name and value readable at ${width} px`, async () => {
      await page.setViewportSize({ width, height: 900 });
      await ready();
      await notify('mino/turnStarted', { turnId: 'n1', seq: 0, input: 'Go' });
      await notify('mino/approvalRequest', {
        turnId: 'n1', seq: 1, callId: 'call_n', command: 'env | sort', directory: '/home/me/projects/with/a/rather/long/path/to/it',
        environment: env, limits: { timeoutSeconds: 120, outputLimitBytes: 65536 },
      });
      const card = page.locator('.tool-card[data-call-id="call_n"]');
      await card.locator('details.env summary').click();
      const measured = await card.evaluate((cardEl) => {
        // Width of one character of the table's font.
        const probe = document.createElement('span');
        probe.textContent = '0'.repeat(10);
        cardEl.querySelector('.env-table th')!.appendChild(probe);
        const ch = probe.getBoundingClientRect().width / 10;
        const line = probe.getBoundingClientRect().height;
        probe.remove();
        const names = [...cardEl.querySelectorAll('.env-table th')].map((th) => ({
          text: th.textContent || '',
          height: th.getBoundingClientRect().height,
        }));
        const cells = [...cardEl.querySelectorAll('.env-table th, .env-table td, .tool-meta dd')].map((c) => ({
          text: (c.textContent || '').slice(0, 20),
          width: c.getBoundingClientRect().width,
          right: c.getBoundingClientRect().right,
        }));
        const card = cardEl.getBoundingClientRect();
        return { ch, line, names, cells, cardWidth: card.width, cardRight: card.right, scrollWidth: document.documentElement.scrollWidth };
      });
      for (const cell of measured.cells) {
        // At least a few characters wide (or the whole of a shorter name/value).
        expect(cell.width, `${cell.text} at ${width} px`).toBeGreaterThanOrEqual(Math.min(12, cell.text.length) * measured.ch - 1);
        // Inside the card, which is inside the panel: nothing to scroll sideways for.
        expect(cell.right, `${cell.text} at ${width} px`).toBeLessThanOrEqual(measured.cardRight + 1);
      }
      // A name that fits the card is on one line, not broken mid-word.
      for (const name of measured.names) {
        if (name.text.length * measured.ch < measured.cardWidth - 40) {
          expect(name.height, `${name.text} at ${width} px`).toBeLessThan(measured.line * 1.5);
        }
      }
      expect(measured.cardRight).toBeLessThanOrEqual(width);
      expect(measured.scrollWidth).toBeLessThanOrEqual(width);
      await page.screenshot({ path: path.join(OUT, `webview-env-${width}.png`), fullPage: true });
    });
  }
});

describe.skipIf(skip)('screenshots of the panel', () => {
  // Light and dark theme, side-panel and wide widths: test-output/screenshots/ (see README).
  for (const theme of ['light', 'dark'] as const) {
    for (const width of [320, 800]) {
      it(`${theme} theme at ${width} px`, async () => {
        await page.context().close();
        ({ page, probe } = await newWebviewPage(browser, { width, height: 1000 }));
        await page.goto(`${webHost.origin}/?theme=${theme}`);
        await page.waitForFunction(() => (window as any).__posted.some((m: any) => m.type === 'ready'));
        await ready();
        await host({ type: 'history', history: { sessionId: 's1', turns: [{
          turnId: 'sh0', input: 'How do I run the tests?', text: MARKDOWN_ANSWER, status: 'completed', notices: [],
          calls: [{ callId: 'sc0', command: 'cargo test -p mino-core', result: { status: 'success', output: 'test result: ok. 120 passed\n', exitCode: 0 } }],
        }] } });
        await notify('mino/turnStarted', { turnId: 'sh1', seq: 0, input: 'Clean the build directory.' });
        await notify('mino/textDelta', { turnId: 'sh1', seq: 1, delta: 'I will remove `build/` with **rm**:' });
        await host({ type: 'session', session: { sessionId: 's1', title: 'How do I run the tests?' } });
        await host({ type: 'modes', approvalMode: 'rules', sandbox: 'workspace-write' });
        await notify('mino/approvalRequest', {
          ...approvalRequest('sh1', 'sc1', 'rm -rf build', 2),
          environment: { HOME: '/home/me', LANG: 'C.UTF-8', PATH: '/home/me/.cargo/bin:/usr/local/bin:/usr/bin:/bin' },
          sandbox: 'workspace-write', approvalMode: 'rules', suggestedRule: { kind: 'prefix', command: 'rm -rf' },
        });
        await page.locator('.tool-card[data-call-id="sc1"] details.env summary').click();
        await host({ type: 'context', items: [{ path: 'src/build.rs', language: 'rust', text: 'fn main() {}', startLine: 1, endLine: 12 }] });
        await page.locator('#input').fill('and then rebuild');
        await expect.poll(() => page.locator('#progress').innerText()).toContain('Waiting for your approval');
        // Colours follow the theme.
        const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
        expect(bg).toBe(theme === 'light' ? 'rgb(248, 248, 248)' : 'rgb(24, 24, 24)');
        const file = path.join(OUT, 'screenshots', `panel-${theme}-${width}.png`);
        mkdirSync(path.dirname(file), { recursive: true });
        await page.screenshot({ path: file });
        // The same card with its rule form open (the session header above).
        await page.locator('.tool-card[data-call-id="sc1"] details.env summary').click();
        await page.locator('.tool-card[data-call-id="sc1"]').getByRole('button', { name: 'Allow for session…' }).click();
        await page.locator('.tool-card[data-call-id="sc1"] .answer-form').scrollIntoViewIfNeeded();
        await page.screenshot({ path: path.join(OUT, 'screenshots', `rule-form-${theme}-${width}.png`) });
        expect(probe.cspViolations).toEqual([]);
        expect(probe.pageErrors).toEqual([]);
      });
    }
  }
});

describe.skipIf(skip)('long histories', () => {
  it('renders older turns of a long history when they come near the screen', async () => {
    await ready();
    const turns = Array.from({ length: 200 }, (_, i) => ({
      turnId: `lh${i}`, input: `Question ${i}`, text: `## Answer ${i}\n\nSome **bold** text.`, status: 'completed', calls: [], notices: [],
    }));
    await host({ type: 'history', history: { sessionId: 's1', turns } });
    const first = page.locator('[data-turn-id="lh0"] .assistant-text');
    const last = page.locator('[data-turn-id="lh199"] .assistant-text');
    // The newest is rendered at once; the oldest shows its text as written until it is near.
    expect(await last.locator('h2').textContent()).toBe('Answer 199');
    expect(await first.locator('h2').count()).toBe(0);
    expect(await first.textContent()).toBe('## Answer 0\n\nSome **bold** text.');
    // The person scrolls to the top.
    await page.locator('#transcript').hover();
    await expect.poll(async () => {
      await page.mouse.wheel(0, -100000);
      return first.locator('h2').count();
    }).toBe(1);
    expect(await first.locator('strong').textContent()).toBe('bold');
  });
});

describe.skipIf(skip)('edits in the card', () => {
  const MILK_DIFF = '--- a/shopping.txt\n+++ b/shopping.txt\n@@ -1,3 +1,4 @@\n bread\n butter\n+milk\n jam\n';
  /** Two hunks: a changed line near the top, two lines added further down. */
  const TWO_HUNKS = [
    '--- a/src/lib.rs', '+++ b/src/lib.rs',
    '@@ -1,4 +1,4 @@', ' //! Shopping lists.', '-pub fn total(items: &[u32]) -> u32 {', '+pub fn total(items: &[u64]) -> u64 {', '     items.iter().sum()', ' }',
    '@@ -20,3 +20,5 @@', ' fn empty_list() {', '     assert_eq!(total(&[]), 0);', ' }', '+', '+// Prices are in cents.', '',
  ].join('\n');

  function editRequest(turnId: string, callId: string, seq: number, edit: Record<string, unknown>) {
    return {
      sessionId: 's1', turnId, seq, callId, command: `${edit.tool ?? 'edit_file'} ${edit.path}`, directory: '/home/me/project',
      environment: {}, limits: { timeoutSeconds: 0, outputLimitBytes: 0 }, sandbox: 'off', approvalMode: 'ask',
      edit: { tool: 'edit_file', newFile: false, leavesWorkspace: false, ...edit },
    };
  }

  /** Each row of the card's hunks: [old no., new no., sign, text] (a hunk header as one cell). */
  async function hunkRows(card: ReturnType<Page['locator']>): Promise<string[][]> {
    return card.locator('.diff-table tr').evaluateAll((rows) =>
      // A header's "Keep" checkbox (an edit waiting, of several hunks) is not part of its text.
      rows.map((r) => [...r.querySelectorAll('td')].map((td) => (td.querySelector('.hunk-header-text') ?? td).textContent ?? '')));
  }

  it('an edit card shows the tool, path, new file or not, size and the hunks with line numbers, instead of directory, environment and limits', async () => {
    await ready();
    await notify('mino/turnStarted', { sessionId: 's1', turnId: 'e1', seq: 0, input: 'Add milk.' });
    await notify('mino/approvalRequest', editRequest('e1', 'call_e', 1, { path: 'shopping.txt', size: 22, diff: MILK_DIFF }));
    const card = page.locator('.tool-card[data-call-id="call_e"]');
    expect(await card.locator('.tool-name').textContent()).toBe('edit_file');
    expect(await card.locator('.tool-command').textContent()).toBe('edit_file shopping.txt');
    const meta = await card.locator('.tool-meta').innerText();
    expect(meta).toMatch(/Path\s+shopping\.txt/);
    expect(meta).toMatch(/File\s+existing file \(changed\)/);
    expect(meta).toMatch(/Size after\s+22 bytes/);
    expect(meta).not.toContain('Environment');
    expect(meta).not.toContain('Limits');
    expect(await card.locator('.edit-warning').count()).toBe(0);
    expect(await card.locator('.question').textContent()).toBe('Apply this edit?');
    expect(await card.locator('.edit-diff-label').textContent()).toBe('Proposed change');
    expect(await hunkRows(card)).toEqual([
      ['@@ -1,3 +1,4 @@'],
      ['1', '1', '', 'bread'],
      ['2', '2', '', 'butter'],
      ['', '3', '+', 'milk'],
      ['3', '4', '', 'jam'],
    ]);
    // Coloured by kind: the added line has the inserted-line background.
    const added = card.locator('.diff-line.add');
    expect(await added.evaluate((el) => getComputedStyle(el).backgroundColor)).not.toBe(
      await card.locator('.diff-line.ctx').first().evaluate((el) => getComputedStyle(el).backgroundColor),
    );
    expect(await page.getByRole('group', { name: 'Mino asks to edit: shopping.txt' }).count()).toBe(1);

    // A new file; the second hunk's numbering follows its header.
    await notify('mino/toolResult', { sessionId: 's1', turnId: 'e1', seq: 2, callId: 'call_e', status: 'refused', output: 'The user denied this edit.' });
    await notify('mino/approvalRequest', editRequest('e1', 'call_w', 3, {
      tool: 'write_file', path: 'notes.txt', newFile: true, size: 5, diff: '--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+milk\n',
    }));
    const card2 = page.locator('.tool-card[data-call-id="call_w"]');
    expect(await card2.locator('.tool-name').textContent()).toBe('write_file');
    expect(await card2.locator('.tool-meta').innerText()).toMatch(/File\s+new file \(created\)/);
    expect(await card2.locator('.question').textContent()).toBe('Create this file?');
    expect(await hunkRows(card2)).toEqual([['@@ -0,0 +1 @@'], ['', '1', '+', 'milk']]);
    await notify('mino/toolResult', { sessionId: 's1', turnId: 'e1', seq: 4, callId: 'call_w', status: 'refused', output: 'Denied.' });
    await notify('mino/approvalRequest', editRequest('e1', 'call_l', 5, { path: '/src/lib.rs', size: 600, diff: TWO_HUNKS }));
    const rows = await hunkRows(page.locator('.tool-card[data-call-id="call_l"]'));
    expect(rows[6]).toEqual(['@@ -20,3 +20,5 @@']);
    expect(rows[7]).toEqual(['20', '20', '', 'fn empty_list() {']);
    expect(rows.at(-1)).toEqual(['', '24', '+', '// Prices are in cents.']);
    expect(probe.pageErrors).toEqual([]);
  });

  it('an edit that leaves the workspace says so prominently, with the absolute path, in the card and its announcement', async () => {
    await ready();
    await notify('mino/turnStarted', { sessionId: 's1', turnId: 'e2', seq: 0, input: 'Fix my shell.' });
    await notify('mino/approvalRequest', editRequest('e2', 'call_o', 1, {
      path: '/home/me/.bashrc', size: 30, leavesWorkspace: true,
      diff: '--- a/home/me/.bashrc\n+++ b/home/me/.bashrc\n@@ -1 +1,2 @@\n export EDITOR=vi\n+alias ll="ls -l"\n',
    }));
    const card = page.locator('.tool-card[data-call-id="call_o"]');
    const warning = card.locator('.edit-warning');
    expect(await warning.textContent()).toBe('Writes outside the workspace: /home/me/.bashrc');
    // First in the card's edit section, in bold.
    expect(await card.locator('.edit-view > *').first().getAttribute('class')).toBe('edit-warning');
    expect(await warning.evaluate((el) => getComputedStyle(el).fontWeight)).toBe('600');
    expect(await page.getByRole('group', { name: 'Mino asks to edit: /home/me/.bashrc (outside the workspace)' }).count()).toBe(1);
    expect(await page.locator('#announcer').textContent()).toContain('outside the workspace');
  });

  it('hunks can be dropped before approving: Approve then sends the kept ones, Review diff shows them, a rule is not offered, nothing typed ahead toggles them', async () => {
    await ready();
    const input = page.locator('#input');
    await input.click();
    await notify('mino/turnStarted', { sessionId: 's1', turnId: 'h1', seq: 0, input: 'Use u64.' });
    await notify('mino/approvalRequest', { ...editRequest('h1', 'call_h', 1, { path: 'src/lib.rs', size: 600, diff: TWO_HUNKS }), approvalMode: 'rules', suggestedRule: { kind: 'path', pattern: 'src/lib.rs' } });
    const card = page.locator('.tool-card[data-call-id="call_h"]');
    const boxes = card.locator('.hunk-keep-box');
    expect(await boxes.count()).toBe(2);
    expect(await boxes.evaluateAll((b) => b.map((x) => (x as HTMLInputElement).checked))).toEqual([true, true]);
    const answers = async () => (await posted()).filter((m) => m.type === 'approval' || m.type === 'reviewEdit');
    // Keys typed for the input toggle nothing: no checkbox took focus.
    await page.keyboard.press(' ');
    await page.keyboard.press('Enter');
    expect(await boxes.evaluateAll((b) => b.map((x) => (x as HTMLInputElement).checked))).toEqual([true, true]);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('input');

    // Drop the second hunk.
    await card.getByRole('checkbox', { name: /Keep hunk 2 of 2/ }).click();
    expect(await card.locator('.question').textContent()).toBe('Apply 1 of 2 hunks of this edit?');
    expect(await card.locator('.hunk-note').textContent()).toContain('the others are rejected');
    // The rejected hunk stays in sight, struck through.
    expect(await card.locator('tr.rejected').count()).toBe(6);
    mkdirSync(path.join(OUT, 'screenshots'), { recursive: true });
    await card.screenshot({ path: path.join(OUT, 'screenshots', 'edit-hunks.png') });
    // A rule would cover the whole edit: not offered while hunks are dropped.
    expect(await card.getByRole('button', { name: 'Allow for session…' }).isDisabled()).toBe(true);
    await card.getByRole('button', { name: 'Review diff' }).click();
    expect(await answers()).toEqual([{ type: 'reviewEdit', turnId: 'h1', callId: 'call_h', acceptedHunks: [0] }]);
    // None kept: Approve cannot be pressed, Deny can.
    await card.getByRole('checkbox', { name: /Keep hunk 1 of 2/ }).click();
    expect(await card.getByRole('button', { name: 'Approve' }).isDisabled()).toBe(true);
    expect(await card.locator('.hunk-note').textContent()).toBe('No hunk kept: Deny to write nothing.');
    await card.getByRole('checkbox', { name: /Keep hunk 2 of 2/ }).click();
    expect(await card.getByRole('button', { name: 'Approve' }).isDisabled()).toBe(false);
    await card.getByRole('button', { name: 'Approve' }).click();
    expect((await answers()).at(-1)).toEqual({ type: 'approval', turnId: 'h1', callId: 'call_h', decision: 'approve', acceptedHunks: [1] });
    // Answered: the choice is over.
    expect(await boxes.evaluateAll((b) => b.map((x) => (x as HTMLInputElement).disabled))).toEqual([true, true]);

    // Keeping every hunk approves the whole edit, as before.
    await notify('mino/toolResult', { sessionId: 's1', turnId: 'h1', seq: 2, callId: 'call_h', status: 'success', output: 'Edited.', diff: TWO_HUNKS });
    await notify('mino/approvalRequest', editRequest('h1', 'call_w', 3, { path: 'src/lib.rs', size: 600, diff: TWO_HUNKS }));
    const whole = page.locator('.tool-card[data-call-id="call_w"]');
    await whole.getByRole('checkbox', { name: /Keep hunk 1 of 2/ }).click();
    await whole.getByRole('checkbox', { name: /Keep hunk 1 of 2/ }).click();
    expect(await whole.locator('.question').textContent()).toBe('Apply this edit?');
    await whole.getByRole('button', { name: 'Approve' }).click();
    expect((await answers()).at(-1)).toEqual({ type: 'approval', turnId: 'h1', callId: 'call_w', decision: 'approve' });
    // A one-hunk edit has nothing to drop.
    await notify('mino/toolResult', { sessionId: 's1', turnId: 'h1', seq: 4, callId: 'call_w', status: 'success', output: 'Edited.', diff: TWO_HUNKS });
    await notify('mino/approvalRequest', editRequest('h1', 'call_m', 5, { path: 'shopping.txt', size: 22, diff: MILK_DIFF }));
    expect(await page.locator('.tool-card[data-call-id="call_m"] .hunk-keep-box').count()).toBe(0);
    expect(probe.pageErrors).toEqual([]);
  });

  it("the card's Keep checkboxes and the diff editor's lenses stay one choice: a toggle posts hunksKept, a hunks message sets the checkboxes", async () => {
    await ready();
    await notify('mino/turnStarted', { sessionId: 's1', turnId: 'h2', seq: 0, input: 'Use u64.' });
    await notify('mino/approvalRequest', editRequest('h2', 'call_k', 1, { path: 'src/lib.rs', size: 600, diff: TWO_HUNKS }));
    const card = page.locator('.tool-card[data-call-id="call_k"]');
    const checked = () => card.locator('.hunk-keep-box').evaluateAll((b) => b.map((x) => (x as HTMLInputElement).checked));
    await card.getByRole('checkbox', { name: /Keep hunk 1 of 2/ }).click();
    expect((await posted()).filter((m) => m.type === 'hunksKept')).toEqual([{ type: 'hunksKept', turnId: 'h2', callId: 'call_k', kept: [1] }]);
    // Kept again from the diff editor.
    await host({ type: 'hunks', turnId: 'h2', callId: 'call_k', kept: null });
    expect(await checked()).toEqual([true, true]);
    expect(await card.locator('.question').textContent()).toBe('Apply this edit?');
    // Rejected there: the card says so, and Approve sends the kept one.
    await host({ type: 'hunks', turnId: 'h2', callId: 'call_k', kept: [0] });
    expect(await checked()).toEqual([true, false]);
    expect(await card.locator('.question').textContent()).toBe('Apply 1 of 2 hunks of this edit?');
    await card.getByRole('button', { name: 'Approve' }).click();
    expect((await posted()).filter((m) => m.type === 'approval')).toEqual([{ type: 'approval', turnId: 'h2', callId: 'call_k', decision: 'approve', acceptedHunks: [0] }]);
    // Answered: a late message changes nothing.
    await host({ type: 'hunks', turnId: 'h2', callId: 'call_k', kept: null });
    expect(await checked()).toEqual([true, false]);
  });

  it('Review diff posts reviewEdit and never approves; keys typed ahead for the input press neither it nor Approve', async () => {
    await ready();
    const input = page.locator('#input');
    await input.click();
    await notify('mino/turnStarted', { sessionId: 's1', turnId: 'e3', seq: 0, input: 'Add milk.' });
    await input.pressSequentially('and eggs');
    await notify('mino/approvalRequest', editRequest('e3', 'call_r', 1, { path: 'shopping.txt', size: 22, diff: MILK_DIFF }));
    const card = page.locator('.tool-card[data-call-id="call_r"]');
    const review = card.getByRole('button', { name: 'Review diff' });
    expect(await review.count()).toBe(1);
    const answers = async () => (await posted()).filter((m) => m.type === 'approval' || m.type === 'reviewEdit');

    // Typed ahead: the card took no focus, nothing is pressed.
    await page.keyboard.press('Enter');
    await page.keyboard.press(' ');
    expect(await answers()).toEqual([]);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('input');
    // A keyboard-style click that did not start on the button does nothing either.
    await review.evaluate((b) => (b as HTMLButtonElement).click());
    expect(await answers()).toEqual([]);

    await review.click();
    expect(await answers()).toEqual([{ type: 'reviewEdit', turnId: 'e3', callId: 'call_r' }]);
    // Still waiting: reviewing is not approving.
    expect(await card.locator('.badge').textContent()).toBe('waiting for approval');
    expect(await card.getByRole('button', { name: 'Approve' }).isDisabled()).toBe(false);
    // By keyboard, on purpose: Tab to it and Enter.
    await review.focus();
    await page.keyboard.press('Enter');
    expect(await answers()).toEqual([
      { type: 'reviewEdit', turnId: 'e3', callId: 'call_r' },
      { type: 'reviewEdit', turnId: 'e3', callId: 'call_r' },
    ]);
    // Shift+Tab from the input still reaches Deny first.
    await input.focus();
    await page.keyboard.press('Shift+Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Deny');
    expect(probe.pageErrors).toEqual([]);
  });

  it('the result card shows the applied diff as hunks and what was done, live and from history; Review diff stays', async () => {
    await ready();
    await notify('mino/turnStarted', { sessionId: 's1', turnId: 'e4', seq: 0, input: 'Add milk.' });
    await notify('mino/approvalRequest', editRequest('e4', 'call_a', 1, { path: 'shopping.txt', size: 22, diff: MILK_DIFF }));
    const card = page.locator('.tool-card[data-call-id="call_a"]');
    await card.getByRole('button', { name: 'Approve' }).click();
    await notify('mino/toolStarted', { sessionId: 's1', turnId: 'e4', seq: 2, callId: 'call_a', command: 'edit_file shopping.txt', approvedBy: { kind: 'user' }, sandbox: 'off' });
    const output = 'Edited shopping.txt: replaced 1 occurrence of old_text.\n\n' + MILK_DIFF;
    await notify('mino/toolResult', { sessionId: 's1', turnId: 'e4', seq: 3, callId: 'call_a', status: 'success', output, diff: MILK_DIFF });
    expect(await card.locator('.tool-result').textContent()).toBe('Result: succeeded');
    expect(await card.locator('.tool-output').textContent()).toBe('Edited shopping.txt: replaced 1 occurrence of old_text.');
    expect(await card.locator('.edit-diff-label').textContent()).toBe('Applied change');
    expect(await card.locator('.edit-diff').count()).toBe(1);
    expect(await hunkRows(card)).toContainEqual(['', '3', '+', 'milk']);
    expect(await card.getByRole('button', { name: 'Review diff' }).count()).toBe(1);

    // From history: the applied diff, named by its tool.
    await host({ type: 'history', history: { sessionId: 's1', turns: [{
      turnId: 'h1', input: 'Add milk.', text: 'Done.', status: 'completed', notices: [],
      calls: [{ callId: 'call_h', command: 'edit_file shopping.txt', tool: 'edit_file', approvedBy: { kind: 'user' }, sandbox: 'off',
        result: { status: 'success', output, diff: MILK_DIFF } }],
    }] } });
    const restored = page.locator('.tool-card[data-call-id="call_h"]');
    expect(await restored.locator('.tool-name').textContent()).toBe('edit_file');
    expect(await restored.locator('.edit-diff-label').textContent()).toBe('Applied change');
    expect(await hunkRows(restored)).toContainEqual(['', '3', '+', 'milk']);
    expect(await restored.locator('.tool-output').textContent()).not.toContain('+++');
    expect(probe.pageErrors).toEqual([]);
  });

  it('a restored edit card offers Review diff of the recorded diff (posting reviewRecordedEdit, never an approval); an edit never written offers none', async () => {
    await ready();
    const input = page.locator('#input');
    await input.click();
    await input.pressSequentially('more');
    const output = 'Edited shopping.txt: replaced 1 occurrence of old_text.\n\n' + MILK_DIFF;
    const written = (callId: string) => ({
      callId, command: 'edit_file shopping.txt', tool: 'edit_file', approvedBy: { kind: 'user' }, sandbox: 'off',
      edit: { tool: 'edit_file', path: 'shopping.txt', newFile: false, size: 22, leavesWorkspace: false, diff: MILK_DIFF },
      result: { status: 'success', output, diff: MILK_DIFF },
    });
    await host({ type: 'history', history: { sessionId: 's1', hasMore: false, turns: [{
      turnId: 'h2', input: 'Add milk twice.', text: 'Done.', status: 'completed', notices: [],
      calls: [
        written('call_h'),
        // The same id again later in the turn (models reuse ids).
        written('call_h'),
        { callId: 'call_n', command: 'edit_file shopping.txt', tool: 'edit_file', approvedBy: { kind: 'user' }, sandbox: 'off',
          edit: { tool: 'edit_file', path: 'shopping.txt', newFile: false, size: 22, leavesWorkspace: false, diff: '' },
          result: { status: 'error', output: 'old_text was not found' } },
        { callId: 'call_d', command: 'edit_file shopping.txt', tool: 'edit_file',
          result: { status: 'refused', output: 'The user denied this edit.' } },
      ],
    }] } });
    const restored = page.locator('.tool-card[data-call-id="call_h"]');
    expect(await restored.count()).toBe(2);
    expect(await restored.first().locator('.edit-diff-label').textContent()).toBe('Applied change');
    expect(await hunkRows(restored.first())).toContainEqual(['', '3', '+', 'milk']);
    const review = restored.first().getByRole('button', { name: 'Review diff' });
    expect(await review.count()).toBe(1);
    // Nothing to approve on a restored card.
    expect(await restored.first().getByRole('button', { name: 'Approve' }).count()).toBe(0);
    // No Review diff where no diff was written: a failed edit, a denied one.
    expect(await page.locator('.tool-card[data-call-id="call_n"]').getByRole('button', { name: 'Review diff' }).count()).toBe(0);
    expect(await page.locator('.tool-card[data-call-id="call_d"]').getByRole('button', { name: 'Review diff' }).count()).toBe(0);

    const reviews = async () => (await posted()).filter((m) => m.type === 'approval' || m.type.startsWith('review'));
    // Keys typed for the input press nothing; a click no key or pointer on it caused does nothing.
    await input.focus();
    await page.keyboard.press('Enter');
    await page.keyboard.press(' ');
    await review.evaluate((b) => (b as HTMLButtonElement).click());
    expect(await reviews()).toEqual([]);
    await review.click();
    await restored.nth(1).getByRole('button', { name: 'Review diff' }).click();
    expect(await reviews()).toEqual([
      { type: 'reviewRecordedEdit', turnId: 'h2', callId: 'call_h', occurrence: 0 },
      { type: 'reviewRecordedEdit', turnId: 'h2', callId: 'call_h', occurrence: 1 },
    ]);
    expect(await restored.first().locator('.badge').textContent()).toBe('succeeded');
    expect(probe.pageErrors).toEqual([]);
  });
});

describe.skipIf(skip)('screenshots of an edit card', () => {
  // Light and dark theme, side-panel and wide widths: test-output/screenshots/ (see README).
  const DIFF = [
    '--- a/src/shopping.rs', '+++ b/src/shopping.rs',
    '@@ -3,7 +3,8 @@', ' pub struct Item {', '     pub name: String,', '-    pub price: u32,', '+    pub price_cents: u64,', '+    pub quantity: u32,', ' }',
    ' ', ' impl Item {', '@@ -14,4 +15,4 @@', '     pub fn total(&self) -> u64 {', '-        self.price as u64', '+        self.price_cents * u64::from(self.quantity)', '     }', ' }', '',
  ].join('\n');
  for (const theme of ['light', 'dark'] as const) {
    for (const width of [320, 800]) {
      it(`${theme} theme at ${width} px`, async () => {
        await page.context().close();
        ({ page, probe } = await newWebviewPage(browser, { width, height: 900 }));
        await page.goto(`${webHost.origin}/?theme=${theme}`);
        await page.waitForFunction(() => (window as any).__posted.some((m: any) => m.type === 'ready'));
        await ready();
        await host({ type: 'session', session: { sessionId: 's1', title: 'Prices in cents' } });
        await notify('mino/turnStarted', { sessionId: 's1', turnId: 'sc1', seq: 0, input: 'Keep prices in cents, with a quantity.' });
        await notify('mino/textDelta', { sessionId: 's1', turnId: 'sc1', seq: 1, delta: 'I will change `Item` in **src/shopping.rs**:' });
        await notify('mino/approvalRequest', {
          sessionId: 's1', turnId: 'sc1', seq: 2, callId: 'e1', command: 'edit_file src/shopping.rs', directory: '/home/me/shop',
          environment: {}, limits: { timeoutSeconds: 0, outputLimitBytes: 0 }, sandbox: 'off', approvalMode: 'rules',
          suggestedRule: { kind: 'path', pattern: 'src/shopping.rs' },
          edit: { tool: 'edit_file', path: 'src/shopping.rs', newFile: false, size: 1432, diff: DIFF, leavesWorkspace: false },
        });
        await page.locator('#input').fill('and a test');
        const file = path.join(OUT, 'screenshots', `edit-card-${theme}-${width}.png`);
        mkdirSync(path.dirname(file), { recursive: true });
        await page.screenshot({ path: file });
        // The same kind of card for a file outside the workspace.
        await notify('mino/toolResult', { sessionId: 's1', turnId: 'sc1', seq: 3, callId: 'e1', status: 'success',
          output: 'Edited src/shopping.rs: replaced 2 occurrences of old_text.\n\n' + DIFF, diff: DIFF });
        await notify('mino/approvalRequest', {
          sessionId: 's1', turnId: 'sc1', seq: 4, callId: 'e2', command: 'write_file ../notes/prices.md', directory: '/home/me/shop',
          environment: {}, limits: { timeoutSeconds: 0, outputLimitBytes: 0 }, sandbox: 'off', approvalMode: 'rules',
          edit: { tool: 'write_file', path: '/home/me/notes/prices.md', newFile: true, size: 38, leavesWorkspace: true,
            diff: '--- /dev/null\n+++ b/home/me/notes/prices.md\n@@ -0,0 +1,2 @@\n+# Prices\n+All prices are in cents.\n' },
        });
        await page.locator('.tool-card[data-call-id="e2"]').scrollIntoViewIfNeeded();
        await page.screenshot({ path: path.join(OUT, 'screenshots', `edit-outside-${theme}-${width}.png`) });
        expect(probe.cspViolations).toEqual([]);
        expect(probe.pageErrors).toEqual([]);
      });
    }
  }
});

describe.skipIf(skip)('following the conversation', () => {
  const longTurns = (n: number) => Array.from({ length: n }, (_, i) => ({
    turnId: `fh${i}`, input: `Question ${i}`, text: `## Answer ${i}\n\n` + 'A line of the answer.\n\n'.repeat(6), status: 'completed', calls: [], notices: [],
  }));

  /** Where the transcript stands: at its end, and whether `selector` is inside its visible part. */
  async function view(selector: string) {
    return page.evaluate((sel) => {
      const t = document.getElementById('transcript')!;
      const el = document.querySelector(sel);
      const box = t.getBoundingClientRect();
      const r = el?.getBoundingClientRect();
      return {
        atEnd: t.scrollHeight - t.scrollTop - t.clientHeight < 4,
        visible: !!r && r.bottom > box.top && r.top < box.bottom,
        scrollTop: t.scrollTop,
      };
    }, selector);
  }

  /**
   * Types and sends a question as the person does; once the turn starts, the
   * question is in sight; then plays the server's answer to it (which may be
   * long enough to push the question off the top: the end is followed).
   */
  async function ask(turnId: string, question: string, deltas: string[]) {
    await page.locator('#input').fill(question);
    await page.locator('#input').press('Enter');
    await host({ type: 'sent', turnId });
    await notify('mino/turnStarted', { turnId, seq: 0, input: question });
    await expect.poll(() => view(`[data-turn-id="${turnId}"] .msg.user`)).toMatchObject({ visible: true });
    for (const [i, delta] of deltas.entries()) await notify('mino/textDelta', { turnId, seq: i + 1, delta });
  }

  const paragraphs = (n: number, word: string) => Array.from({ length: n }, (_, i) => `${word} paragraph ${i}.\n\n`);

  it('a question sent after opening a long session is scrolled to, and its answer followed to the end', async () => {
    await ready();
    await host({ type: 'history', history: { sessionId: 's1', turns: longTurns(200) } });
    await expect.poll(async () => (await view('[data-turn-id="fh199"]')).atEnd).toBe(true);
    await ask('fn1', 'One more question', paragraphs(30, 'Long'));
    await expect.poll(async () => (await view('[data-turn-id="fn1"]')).atEnd).toBe(true);
  });

  it('stops following when the person scrolls up, and follows again once they are back at the end', async () => {
    await ready();
    await host({ type: 'history', history: { sessionId: 's1', turns: longTurns(20) } });
    await ask('fs1', 'Explain it', paragraphs(20, 'First'));
    await expect.poll(async () => (await view('[data-turn-id="fs1"]')).atEnd).toBe(true);
    // The person scrolls up to read.
    await page.locator('#transcript').hover();
    await page.mouse.wheel(0, -1500);
    await expect.poll(async () => (await view('#transcript')).atEnd).toBe(false);
    const readingAt = (await view('#transcript')).scrollTop;
    for (const [i, delta] of paragraphs(10, 'More').entries()) await notify('mino/textDelta', { turnId: 'fs1', seq: 100 + i, delta });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    expect((await view('#transcript')).scrollTop).toBe(readingAt);
    // Back at the end: the answer is followed again.
    await page.mouse.wheel(0, 100000);
    await expect.poll(async () => (await view('#transcript')).atEnd).toBe(true);
    for (const [i, delta] of paragraphs(10, 'Last').entries()) await notify('mino/textDelta', { turnId: 'fs1', seq: 200 + i, delta });
    await expect.poll(async () => (await view('#transcript')).atEnd).toBe(true);
    await expect.poll(() => view('[data-turn-id="fs1"] .assistant-text p:last-child')).toMatchObject({ visible: true });
  });

  it('a question sent while the person had scrolled up is scrolled to', async () => {
    await ready();
    await host({ type: 'history', history: { sessionId: 's1', turns: longTurns(30) } });
    await page.locator('#transcript').hover();
    await page.mouse.wheel(0, -3000);
    await expect.poll(async () => (await view('#transcript')).atEnd).toBe(false);
    await ask('fu1', 'And now?', paragraphs(8, 'Answer'));
    await expect.poll(async () => (await view('#transcript')).atEnd).toBe(true);
  });

  it('after a reload, the history opens at its end and a new question is followed', async () => {
    await ready();
    await host({ type: 'history', history: { sessionId: 's1', turns: longTurns(60) } });
    await page.reload();
    await page.waitForFunction(() => (window as any).__posted.some((m: any) => m.type === 'ready'));
    await host({ type: 'server', state: 'ready' });
    await host({ type: 'history', history: { sessionId: 's1', turns: longTurns(60) } });
    await expect.poll(async () => (await view('[data-turn-id="fh59"]')).atEnd).toBe(true);
    await ask('fr1', 'After the reload', paragraphs(20, 'Reloaded'));
    await expect.poll(async () => (await view('#transcript')).atEnd).toBe(true);
  });

  it('after acknowledging a recovery, a new question is scrolled to and followed', async () => {
    await ready();
    const turns = longTurns(40);
    turns.push({ turnId: 'fg1', input: 'Deploy', text: '', status: 'interrupted', calls: [
      { callId: 'c1', command: 'make deploy', result: { status: 'unknown', output: '' } },
    ] as any, notices: [] });
    await host({ type: 'history', history: { sessionId: 's1', turns } });
    await notify('mino/recovery', {
      sessionId: 's1',
      turns: [{ turnId: 'fg1', status: 'interrupted', calls: [{ callId: 'c1', command: 'make deploy', result: { status: 'unknown', output: '' } }] }],
      acknowledgementRequired: true, unacknowledgedTurnIds: ['fg1'], repairs: [],
    });
    await page.locator('#ack-yes').click();
    await host({ type: 'acknowledged', turnIds: ['fg1'] });
    await ask('fa1', 'Did it deploy?', paragraphs(20, 'Checked'));
    await expect.poll(async () => (await view('#transcript')).atEnd).toBe(true);
  });
});

describe.skipIf(skip)('a 200 px side bar', () => {
  /**
   * Every element of `selector` inside the panel: none reaches past the
   * right edge of its card or the panel, and no text is cut inside its box
   * (a button's or label's content wider than the box, hidden by overflow).
   */
  async function overflowing(selector: string, width: number) {
    return page.evaluate(({ sel, width }) => {
      const bad: string[] = [];
      for (const root of document.querySelectorAll(sel)) {
        const rootBox = root.getBoundingClientRect();
        for (const el of [root, ...root.querySelectorAll('*')] as HTMLElement[]) {
          const r = el.getBoundingClientRect();
          if (r.width === 0 && r.height === 0) continue;
          const name = `${el.tagName.toLowerCase()}.${el.className} "${(el.textContent || '').slice(0, 30)}"`;
          if (r.right > Math.min(rootBox.right, width) + 1) bad.push(`${name} ends at ${Math.round(r.right)} (card ${Math.round(rootBox.right)})`);
          const style = getComputedStyle(el);
          const clips = style.overflowX !== 'visible' || style.textOverflow === 'ellipsis';
          // A scrolling code box (the command, output, diff) may scroll, and a text field scrolls what
          // is typed in it (all of it editable); labels and buttons may not clip.
          const scrolls = ['PRE', 'CODE', 'TABLE', 'INPUT'].includes(el.tagName) || el.closest('pre, .diff-hunks, .env-table');
          // A header's title or a chip's label may give way to an ellipsis when it says all of it on hover.
          const titled = el.closest('[title]')?.getAttribute('title')?.includes((el.textContent || '').trim());
          if (clips && !scrolls && !titled && el.scrollWidth > el.clientWidth + 1) bad.push(`${name} clips its text (${el.scrollWidth} > ${el.clientWidth})`);
        }
      }
      if (document.documentElement.scrollWidth > width) bad.push(`the page scrolls sideways (${document.documentElement.scrollWidth} > ${width})`);
      return bad;
    }, { sel: selector, width });
  }

  it('the approval card, its rule forms and an edit card fit: nothing overflows or is cut (screenshots)', async () => {
    const width = 200;
    await page.setViewportSize({ width, height: 1400 });
    await ready();
    await host({ type: 'session', session: { sessionId: 's1', title: 'A rather long session title for a narrow bar' } });
    await host({ type: 'modes', approvalMode: 'ask', sandbox: 'workspace-write' });
    await host({ type: 'model', model: 'gpt-5.1-codex-mini' });
    await notify('mino/turnStarted', { turnId: 'w1', seq: 0, input: 'Clean the build directory.' });
    await notify('mino/approvalRequest', {
      ...approvalRequest('w1', 'wc1', 'rm -rf build/intermediate-artifacts', 1),
      sandbox: 'workspace-write', approvalMode: 'ask', suggestedRule: { kind: 'prefix', command: 'rm -rf' },
    });
    const card = page.locator('.tool-card[data-call-id="wc1"]');
    expect(await overflowing('.tool-card', width)).toEqual([]);
    // Each fact's value is below its label, across the card, not squeezed into a column beside it.
    const squeezed = await card.evaluate((c) => {
      const inner = c.getBoundingClientRect().width - 20;
      return [...c.querySelectorAll('.tool-meta dd')]
        .filter((dd) => dd.getBoundingClientRect().width < inner * 0.8)
        .map((dd) => (dd.textContent || '').slice(0, 30));
    });
    expect(squeezed).toEqual([]);
    const dir = path.join(OUT, 'screenshots');
    mkdirSync(dir, { recursive: true });
    await page.screenshot({ path: path.join(dir, 'panel-200-card.png'), fullPage: true });
    for (const choice of ['Allow for session…', 'Always allow in workspace…', 'Deny for session…', 'Deny for workspace…', 'Deny with reason…']) {
      await card.getByRole('button', { name: choice }).click();
      expect(await overflowing('.tool-card', width), choice).toEqual([]);
    }
    await card.getByRole('button', { name: 'Allow for session…' }).click();
    await page.screenshot({ path: path.join(dir, 'panel-200-rule-form.png'), fullPage: true });

    await notify('mino/approvalRequest', {
      turnId: 'w1', seq: 2, callId: 'wc2', command: 'edit_file src/components/navigation/sidebar.tsx', directory: '/home/me/project',
      environment: {}, limits: { timeoutSeconds: 0, outputLimitBytes: 0 }, sandbox: 'off', approvalMode: 'rules',
      suggestedRule: { kind: 'path', pattern: 'src/components/navigation/sidebar.tsx' },
      edit: {
        tool: 'edit_file', path: 'src/components/navigation/sidebar.tsx', newFile: false, size: 2048, leavesWorkspace: false,
        diff: '--- a/src/components/navigation/sidebar.tsx\n+++ b/src/components/navigation/sidebar.tsx\n@@ -1,3 +1,3 @@\n import x from "y";\n-const width = 300;\n+const width = 200;\n export default x;\n',
      },
    });
    const edit = page.locator('.tool-card[data-call-id="wc2"]');
    await edit.getByRole('button', { name: 'Always allow in workspace…' }).click();
    expect(await overflowing('.tool-card', width)).toEqual([]);
    expect(await overflowing('#session-header', width)).toEqual([]);
    expect(await overflowing('#composer', width)).toEqual([]);
    await edit.scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(dir, 'panel-200-edit.png'), fullPage: true });
  });
});

describe.skipIf(skip)('reads in the transcript', () => {
  const read = { tool: 'read_file', path: 'src/main.rs', leavesWorkspace: false };
  const done = { ...read, summary: 'lines 1-2 of 2 (16 bytes)' };
  const output = '1\tfn main() {\n2\t}\n';
  const search = { tool: 'search', path: '.', pattern: 'fn (main', leavesWorkspace: false };
  const searchOutput = 'Not a valid regular expression: unclosed group\nat offset 3';

  /** What a read row shows and holds, without the ids it was given. */
  async function rowShape(turnId: string) {
    return page.locator(`[data-turn-id="${turnId}"] .read-row`).evaluateAll((rows) => rows.map((el) => {
      const row = el as HTMLElement;
      const toggle = row.querySelector('.read-toggle') as HTMLElement;
      const out = row.querySelector('.read-output') as HTMLElement;
      return {
        text: toggle.textContent, title: toggle.title, label: toggle.getAttribute('aria-label'),
        expanded: toggle.getAttribute('aria-expanded'), controls: toggle.getAttribute('aria-controls') === out.id,
        status: row.dataset.status, tool: row.dataset.tool, output: out.textContent, hidden: out.hidden,
      };
    }));
  }

  it('a read inside the workspace is one row, not a card; a click or Enter opens its output and closes it; history restores the same row', async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 't1', seq: 0, input: 'Read main.rs.' });
    await notify('mino/toolStarted', {
      turnId: 't1', seq: 1, callId: 'call_1', command: 'read_file src/main.rs',
      approvedBy: { kind: 'workspace' }, sandbox: 'off', tool: 'read_file', read,
    });
    const row = page.locator('[data-turn-id="t1"] .read-row').first();
    const toggle = row.locator('.read-toggle');
    await expect.poll(() => toggle.textContent()).toBe('read src/main.rs · reading…');
    expect(await page.locator('.tool-card').count()).toBe(0);
    await notify('mino/toolResult', {
      turnId: 't1', seq: 2, callId: 'call_1', command: 'read_file src/main.rs', status: 'success', output,
      tool: 'read_file', read: done,
    });
    await notify('mino/toolResult', {
      turnId: 't1', seq: 3, callId: 'call_2', command: 'search fn (main', status: 'failed', output: searchOutput,
      tool: 'search', read: search,
    });
    await notify('mino/textDelta', { turnId: 't1', seq: 4, delta: 'It prints nothing.' });
    await notify('mino/turnEnded', { turnId: 't1', seq: 5, status: 'completed' });
    expect(await toggle.textContent()).toBe('read src/main.rs · lines 1-2 of 2 (16 bytes)');
    const second = page.locator('[data-turn-id="t1"] .read-row').nth(1);
    expect(await second.locator('.read-toggle').textContent()).toBe(
      'search /fn (main/ · failed: Not a valid regular expression: unclosed group');
    expect(await page.locator('.tool-card').count()).toBe(0);
    // One line each, and the output hidden until asked for.
    const lineHeight = await toggle.evaluate((el) => parseFloat(getComputedStyle(el).lineHeight) || 20);
    for (const r of [row, second]) {
      const box = await r.boundingBox();
      expect(box!.height).toBeLessThan(lineHeight * 1.8);
      expect(await r.locator('.read-output').isVisible()).toBe(false);
    }
    // The answer's text follows the rows, below them.
    const order = await page.locator('[data-turn-id="t1"] .body > *').evaluateAll((els) => els.map((e) => e.className));
    expect(order.slice(0, 2)).toEqual(['read-row', 'read-row']);
    expect(order[2]).toContain('assistant-text');

    await toggle.click();
    expect(await row.locator('.read-output').isVisible()).toBe(true);
    expect(await row.locator('.read-output').textContent()).toBe(output);
    expect(await toggle.getAttribute('aria-expanded')).toBe('true');
    await toggle.click();
    expect(await row.locator('.read-output').isVisible()).toBe(false);
    await toggle.focus();
    await page.keyboard.press('Enter');
    expect(await row.locator('.read-output').isVisible()).toBe(true);
    await page.keyboard.press(' ');
    expect(await row.locator('.read-output').isVisible()).toBe(false);
    // Opening a read decides nothing and asks the host for nothing.
    expect((await posted()).filter((m) => m.type !== 'ready')).toEqual([]);
    const live = await rowShape('t1');
    expect(live.map((r) => r.hidden)).toEqual([true, true]);

    await host({
      type: 'history',
      history: {
        sessionId: 's1',
        turns: [{
          turnId: 't1', input: 'Read main.rs.', text: 'It prints nothing.', status: 'completed', notices: [],
          calls: [],
          items: [
            { type: 'call', call: { callId: 'call_1', command: 'read_file src/main.rs', tool: 'read_file', read: done,
              approvedBy: { kind: 'workspace' }, sandbox: 'off', result: { status: 'success', output } } },
            { type: 'call', call: { callId: 'call_2', command: 'search fn (main', tool: 'search', read: search,
              result: { status: 'failed', output: searchOutput } } },
            { type: 'text', text: 'It prints nothing.' },
          ],
        }],
      },
    });
    expect(await page.locator('.tool-card').count()).toBe(0);
    expect(await rowShape('t1')).toEqual(live);
    await page.locator('[data-turn-id="t1"] .read-toggle').first().click();
    expect(await page.locator('[data-turn-id="t1"] .read-output').first().textContent()).toBe(output);
    expect(probe.pageErrors).toEqual([]);
    await page.screenshot({ path: path.join(OUT, 'webview-reads.png'), fullPage: true });
  });

  it('a read outside the workspace asks in an approval card naming the path, with no rule offered; its result stays in that card, live and restored', async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 't2', seq: 0, input: 'Read /etc/hosts.' });
    const outside = { tool: 'read_file', path: '/etc/hosts', leavesWorkspace: true };
    await notify('mino/approvalRequest', {
      turnId: 't2', seq: 1, callId: 'call_9', command: 'read_file /etc/hosts', directory: '/home/me/project',
      environment: {}, limits: { timeoutSeconds: 0, outputLimitBytes: 0 }, sandbox: 'off', approvalMode: 'rules', read: outside,
    });
    const card = page.locator('.tool-card[data-call-id="call_9"]');
    await expect.poll(() => card.locator('.read-outside').textContent()).toBe('Reads outside the workspace: /etc/hosts');
    expect(await card.locator('.tool-name').textContent()).toBe('read_file');
    expect(await card.locator('.question').textContent()).toBe('Allow this read?');
    expect(await card.locator('.no-rule-note').textContent()).toBe('No rule can cover this read: its path is outside the workspace.');
    expect(await card.locator('.env').count()).toBe(0);
    expect(await page.locator('.read-row').count()).toBe(0);
    await card.getByRole('button', { name: 'Approve' }).click();
    expect((await posted()).filter((m) => m.type === 'approval')).toEqual([
      { type: 'approval', turnId: 't2', callId: 'call_9', decision: 'approve' },
    ]);
    await notify('mino/toolStarted', {
      turnId: 't2', seq: 2, callId: 'call_9', command: 'read_file /etc/hosts', approvedBy: { kind: 'user' }, sandbox: 'off',
      tool: 'read_file', read: outside,
    });
    await notify('mino/toolResult', {
      turnId: 't2', seq: 3, callId: 'call_9', command: 'read_file /etc/hosts', status: 'success', output: '1\t127.0.0.1 localhost\n',
      tool: 'read_file', read: { ...outside, summary: 'lines 1-1 of 1 (20 bytes)' },
    });
    expect(await card.locator('.tool-result').textContent()).toBe('Result: succeeded');
    expect(await card.locator('.tool-output').textContent()).toBe('1\t127.0.0.1 localhost\n');
    expect(await page.locator('.read-row').count()).toBe(0);

    await host({
      type: 'history',
      history: {
        sessionId: 's1',
        turns: [{
          turnId: 't2', input: 'Read /etc/hosts.', text: '', status: 'completed', notices: [], calls: [],
          items: [{ type: 'call', call: { callId: 'call_9', command: 'read_file /etc/hosts', tool: 'read_file',
            read: { ...outside, summary: 'lines 1-1 of 1 (20 bytes)' }, approvedBy: { kind: 'user' }, sandbox: 'off',
            directory: '/home/me/project', result: { status: 'success', output: '1\t127.0.0.1 localhost\n' } } }],
        }],
      },
    });
    const restored = page.locator('.tool-card[data-call-id="call_9"]');
    expect(await restored.locator('.read-outside').textContent()).toBe('Reads outside the workspace: /etc/hosts');
    expect(await restored.locator('.tool-result').textContent()).toBe('Result: succeeded');
    expect(await page.locator('.read-row').count()).toBe(0);
  });

  it('a read still running when the server stops says it did not finish; an unavailable one says its result is unavailable', async () => {
    await ready();
    await notify('mino/turnStarted', { turnId: 't3', seq: 0, input: 'Search.' });
    await notify('mino/toolStarted', {
      turnId: 't3', seq: 1, callId: 'call_1', command: 'search todo', approvedBy: { kind: 'workspace' }, sandbox: 'off',
      tool: 'search', read: { tool: 'search', path: 'src', pattern: 'todo', leavesWorkspace: false },
    });
    await host({ type: 'server', state: 'crashed' });
    const toggle = page.locator('[data-turn-id="t3"] .read-toggle');
    expect(await toggle.textContent()).toBe('search /todo/ in src · did not finish: the Mino server stopped (a read changes nothing)');
    await host({ type: 'server', state: 'ready' });
    await host({
      type: 'history',
      history: {
        sessionId: 's1',
        turns: [{
          turnId: 't3', input: 'Search.', text: '', status: 'interrupted', notices: [], calls: [],
          items: [{ type: 'call', call: { callId: 'call_1', command: 'search todo', tool: 'search',
            read: { tool: 'search', path: 'src', pattern: 'todo', leavesWorkspace: false }, approvedBy: { kind: 'workspace' },
            result: { status: 'unavailable', output: 'The read was started but its result was not saved.' } } }],
        }],
      },
    });
    expect(await page.locator('[data-turn-id="t3"] .read-toggle').textContent()).toBe(
      'search /todo/ in src · result unavailable: Mino stopped before it was saved');
    expect(await page.locator('#ack-gate').isVisible()).toBe(false);
  });
});

describe.skipIf(skip)('images in questions', () => {
  // A 1×1 PNG.
  const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
  const PNG_SIZE = Buffer.from(PNG, 'base64').length;
  const SHA = 'ab'.repeat(32);

  type FakeFile = { name: string; type: string; base64?: string; text?: string; size?: number };

  /** Pastes (`paste` on the input) or drops (`drop` on the composer) these files. */
  async function give(how: 'paste' | 'drop', files: FakeFile[]): Promise<void> {
    await page.evaluate(({ how, files }) => {
      const dt = new DataTransfer();
      for (const f of files) {
        let bytes: Uint8Array;
        if (f.base64 !== undefined) bytes = Uint8Array.from(atob(f.base64), (c) => c.charCodeAt(0));
        else if (f.text !== undefined) bytes = new TextEncoder().encode(f.text);
        else {
          bytes = new Uint8Array(f.size ?? 0);
          bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
        }
        dt.items.add(new File([bytes as BlobPart], f.name, { type: f.type }));
      }
      if (how === 'paste') {
        document.getElementById('input')!.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
      } else {
        document.getElementById('composer')!.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
      }
    }, { how, files });
  }

  const chipNames = () => page.locator('#image-chips .image-chip .chip-label').allTextContents();
  const sends = async () => (await posted()).filter((m) => m.type === 'send');

  it('a pasted PNG becomes a chip with its name and size, and Send posts it with the exact base64', async () => {
    await ready();
    const input = page.locator('#input');
    await input.fill('What is this?');
    await give('paste', [{ name: 'cat.png', type: 'image/png', base64: PNG }]);
    await expect.poll(chipNames).toEqual(['cat.png']);
    expect(await page.locator('#image-chips .image-size').textContent()).toBe(`${PNG_SIZE} B`);
    expect(await page.locator('#image-chips img').getAttribute('src')).toBe(`data:image/png;base64,${PNG}`);
    expect(await input.inputValue()).toBe('What is this?');
    await input.press('Enter');
    expect(await sends()).toEqual([
      { type: 'send', text: 'What is this?', images: [{ data: PNG, mimeType: 'image/png', name: 'cat.png' }] },
    ]);
    await host({ type: 'sent', turnId: 't1' });
    expect(await chipNames()).toEqual([]);
    expect(await input.inputValue()).toBe('');
    // The turn shows the image it was asked with.
    await notify('mino/turnStarted', { turnId: 't1', seq: 0, input: 'What is this?' });
    expect(await page.locator('[data-turn-id="t1"] .question-image img').getAttribute('src')).toBe(`data:image/png;base64,${PNG}`);
    expect(probe.cspViolations).toEqual([]);
    expect(probe.pageErrors).toEqual([]);
  });

  it('a dropped image becomes a chip; × removes it; images alone can be sent', async () => {
    await ready();
    await give('drop', [{ name: 'a.png', type: 'image/png', base64: PNG }, { name: 'b.png', type: 'image/png', base64: PNG }]);
    await expect.poll(chipNames).toEqual(['a.png', 'b.png']);
    await page.locator('#image-chips .chip-remove').first().click();
    expect(await chipNames()).toEqual(['b.png']);
    await page.locator('#input').press('Enter');
    expect(await sends()).toEqual([{ type: 'send', text: '', images: [{ data: PNG, mimeType: 'image/png', name: 'b.png' }] }]);
  });

  it('a file that is not an image and one too large are refused by name; the text and the other images stay', async () => {
    await ready();
    const input = page.locator('#input');
    await input.fill('Look at these');
    await give('paste', [{ name: 'cat.png', type: 'image/png', base64: PNG }]);
    await expect.poll(chipNames).toEqual(['cat.png']);
    await give('drop', [
      { name: 'notes.txt', type: 'text/plain', text: 'milk, eggs' },
      { name: 'huge.png', type: 'image/png', size: 20 * 1024 * 1024 + 1 },
    ]);
    const error = page.locator('#composer-error');
    await expect.poll(() => error.isVisible()).toBe(true);
    const text = (await error.textContent()) ?? '';
    expect(text).toContain('huge.png is 20 MiB; an image may be at most 20 MiB');
    expect(text).toContain('notes.txt is not an image Mino can send; PNG, JPEG, GIF and WebP are accepted.');
    expect(await chipNames()).toEqual(['cat.png']);
    expect(await input.inputValue()).toBe('Look at these');
    // A PNG named and typed as something else is told by its bytes.
    await give('paste', [{ name: 'shot', type: '', base64: PNG }]);
    await expect.poll(chipNames).toEqual(['cat.png', 'shot']);
  });

  it('a ninth image is refused by name; the eight stay', async () => {
    await ready();
    await give('paste', Array.from({ length: 9 }, (_, i) => ({ name: `p${i + 1}.png`, type: 'image/png', base64: PNG })));
    await expect.poll(async () => (await chipNames()).length).toBe(8);
    expect(await chipNames()).toEqual(Array.from({ length: 8 }, (_, i) => `p${i + 1}.png`));
    expect(await page.locator('#composer-error').textContent()).toBe('p9.png was not added: a question may carry at most 8 images.');
    await give('paste', [{ name: 'p10.png', type: 'image/png', base64: PNG }]);
    await expect.poll(() => page.locator('#composer-error').textContent()).toBe('p10.png was not added: a question may carry at most 8 images.');
    expect((await chipNames()).length).toBe(8);
  });

  it('a refused question keeps its text and images, with the reason shown', async () => {
    await ready();
    const input = page.locator('#input');
    await input.fill('What is this?');
    await give('paste', [{ name: 'cat.png', type: 'image/png', base64: PNG }]);
    await expect.poll(chipNames).toEqual(['cat.png']);
    await input.press('Enter');
    const message = 'image 1 (cat.png) is declared image/jpeg but its bytes are png';
    await host({ type: 'error', request: 'send', code: -32602, message });
    expect(await input.inputValue()).toBe('What is this?');
    expect(await chipNames()).toEqual(['cat.png']);
    expect(await page.locator('#composer-error').textContent()).toBe(message);
    // Sent again with the same image.
    await input.press('Enter');
    const all = await sends();
    expect(all).toHaveLength(2);
    expect(all[1]).toEqual(all[0]);
    expect(all[1].images).toEqual([{ data: PNG, mimeType: 'image/png', name: 'cat.png' }]);
  });

  it('history shows a question\'s images as thumbnails from mino/image, an unavailable one by name, size and why', async () => {
    await host({ type: 'server', state: 'ready' });
    await host({
      type: 'history',
      history: {
        sessionId: 's1',
        turns: [{
          turnId: 'h1', input: 'What is this?', text: 'A cat.', status: 'completed', calls: [], notices: [],
          images: [
            { sha256: SHA, mimeType: 'image/png', size: PNG_SIZE, name: 'cat.png' },
            { sha256: 'cd'.repeat(32), mimeType: 'image/jpeg', size: 2048, name: 'gone.jpg', unavailable: 'the kept file is missing' },
          ],
        }],
      },
    });
    const figures = page.locator('[data-turn-id="h1"] .question-image');
    expect(await figures.count()).toBe(2);
    // Only the available one is asked for.
    expect((await posted()).filter((m) => m.type === 'image')).toEqual([{ type: 'image', sha256: SHA }]);
    expect(await figures.nth(0).locator('figcaption').textContent()).toBe(`cat.png · ${PNG_SIZE} B`);
    expect(await figures.nth(1).locator('.image-missing').textContent()).toBe('Image unavailable: the kept file is missing');
    expect(await figures.nth(1).locator('figcaption').textContent()).toBe('gone.jpg · 2 KiB');
    expect(await figures.nth(1).locator('img').count()).toBe(0);
    await host({ type: 'image', sha256: SHA, mimeType: 'image/png', data: PNG });
    expect(await figures.nth(0).locator('img').getAttribute('src')).toBe(`data:image/png;base64,${PNG}`);
    // Rendering the history again uses the bytes already had.
    await host({ type: 'history', history: { sessionId: 's1', turns: [{ turnId: 'h1', input: 'What is this?', text: '', status: 'completed', calls: [], notices: [], images: [{ sha256: SHA, mimeType: 'image/png', size: PNG_SIZE, name: 'cat.png' }] }] } });
    expect((await posted()).filter((m) => m.type === 'image')).toHaveLength(1);
    expect(await page.locator('[data-turn-id="h1"] .question-image img').getAttribute('src')).toBe(`data:image/png;base64,${PNG}`);
    // An image the server cannot give says why.
    const h2 = { sessionId: 's1', turns: [{ turnId: 'h2', input: 'x', text: '', status: 'completed', calls: [], notices: [], images: [{ sha256: 'ef'.repeat(32), mimeType: 'image/png', size: 10, name: 'changed.png' }] }] };
    await host({ type: 'history', history: h2 });
    await host({ type: 'image', sha256: 'ef'.repeat(32), error: 'its kept file no longer holds those bytes' });
    expect(await page.locator('[data-turn-id="h2"] .image-missing').textContent()).toBe('Image unavailable: its kept file no longer holds those bytes');
    // A failure is not kept: the next rendering asks again.
    await host({ type: 'history', history: h2 });
    expect((await posted()).filter((m) => m.type === 'image' && m.sha256 === 'ef'.repeat(32))).toHaveLength(2);
    expect(probe.cspViolations).toEqual([]);
    expect(probe.pageErrors).toEqual([]);
  });
});
