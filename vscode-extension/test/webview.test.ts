/**
 * The chat webview (media/main.js, media/main.css, the HTML from
 * src/webviewHtml.ts) in Debian's chromium through playwright-core, with a
 * stubbed `acquireVsCodeApi` that records what the view posts.
 */
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
    scriptUri: `${origin}/media/main.js`,
    styleUri: `${origin}/media/main.css`,
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
    expect(await input.inputValue()).toBe('');

    await notify('mino/turnStarted', { turnId: 't1', seq: 0, input: 'Add milk\nto shopping.txt.' });
    for (const [i, d] of ['I', ' will', ' add', ' it.'].entries()) {
      await notify('mino/textDelta', { turnId: 't1', seq: i + 1, delta: d });
      expect(await page.locator('[data-turn-id="t1"] .assistant-text').first().textContent()).toBe(
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
    expect(await texts()).toEqual(['Hel']);
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
      { type: 'approval', callId: 'call_1', decision: 'approve' },
    ]);
    expect(await card.getByRole('button', { name: 'Approve' }).isDisabled()).toBe(true);

    await notify('mino/toolStarted', { turnId: 't2', seq: 2, callId: 'call_1', command: 'echo milk >> shopping.txt' });
    await notify('mino/toolOutput', { turnId: 't2', seq: 3, callId: 'call_1', stream: 'stdout', chunk: 'appending…\n' });
    expect(await card.locator('.tool-output').textContent()).toBe('appending…\n');
    await notify('mino/toolResult', { turnId: 't2', seq: 4, callId: 'call_1', status: 'success', output: 'appending…\n', exitCode: 0 });
    expect(await card.locator('.tool-result').textContent()).toBe('Result: succeeded (exit code 0)');

    await notify('mino/approvalRequest', approval('call_2', 'rm -rf /', 5));
    const card2 = page.locator('.tool-card[data-call-id="call_2"]');
    await card2.getByRole('button', { name: 'Deny' }).click();
    expect((await posted()).filter((m) => m.type === 'approval')).toEqual([
      { type: 'approval', callId: 'call_1', decision: 'approve' },
      { type: 'approval', callId: 'call_2', decision: 'deny' },
    ]);
    await notify('mino/toolResult', { turnId: 't2', seq: 6, callId: 'call_2', status: 'refused', output: 'The user denied this command.' });
    expect(await card2.locator('.tool-result').textContent()).toBe('Result: denied');
    await notify('mino/textDelta', { turnId: 't2', seq: 7, delta: 'Milk is on the list.' });
    await notify('mino/turnEnded', { turnId: 't2', seq: 8, status: 'completed' });
    await page.screenshot({ path: path.join(OUT, 'webview-approval.png'), fullPage: true });
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
    await page.screenshot({ path: path.join(OUT, 'webview-ack-gate.png'), fullPage: true });

    // Typing and Enter do nothing while gated.
    await page.locator('#input').press('Enter', { timeout: 1000 }).catch(() => undefined);
    await page.keyboard.press('Enter');
    expect((await posted()).filter((m) => m.type === 'send' || m.type === 'acknowledge')).toEqual([]);

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
});
