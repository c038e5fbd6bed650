/**
 * Webview benchmark (not a test): `npm run bench`. Renders a 1,000-turn
 * history and streams 100,000 deltas into the production bundle in Debian's
 * chromium, and prints timings and frame figures (docs/performance.md).
 */
import { renderChatHtml } from '../src/webviewHtml';
import { launchChromium, newWebviewPage, startWebviewHost } from './browser';

const HISTORY_TURNS = 1000;
const STREAM_DELTAS = 100_000;
const RUNS = 5;

function answer(i: number): string {
  let text = `### Step ${i}\n\nThe **build** of part ${i} needs \`cargo test -p mino-core\` and a look at the logs.\n\n`;
  text += '- read the failing test\n- fix the cause\n- run it again\n\n';
  if (i % 5 === 0) text += '```rust\nfn main() {\n    let x = 42;\n    println!("{x}");\n}\n```\n\n';
  if (i % 7 === 0) text += '| crate | tests |\n|---|---:|\n| core | 120 |\n| server | 48 |\n\n';
  return text + `That is all for step ${i}.`;
}

function history() {
  const turns = [];
  for (let i = 0; i < HISTORY_TURNS; i++) {
    turns.push({
      turnId: `t${i}`,
      input: `Question ${i}: what should I do next?`,
      text: answer(i),
      status: 'completed',
      notices: [],
      calls: i % 3 === 0
        ? [{ callId: `c${i}`, command: `cargo test -p mino-core test_${i}`, result: { status: 'success', output: 'ok\n', exitCode: 0 } }]
        : [],
    });
  }
  return { sessionId: 'bench', turns };
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

async function main(): Promise<void> {
  const host = await startWebviewHost();
  host.html = renderChatHtml({
    cspSource: host.origin,
    scriptUri: `${host.origin}/dist/webview.js`,
    styleUri: `${host.origin}/dist/webview.css`,
  });
  const browser = await launchChromium();
  try {
    // ---------------------------------------------------------- history
    const h = history();
    const chars = h.turns.reduce((n, t) => n + t.text.length + t.input.length, 0);
    const times: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const { page } = await newWebviewPage(browser);
      await page.goto(`${host.origin}/`);
      await page.waitForFunction(() => (window as any).__posted.some((m: any) => m.type === 'ready'));
      await page.evaluate(() => window.dispatchEvent(new MessageEvent('message', { data: { type: 'server', state: 'ready' } })));
      // Script, style and layout of the whole transcript, until the next frame is painted.
      const ms = await page.evaluate((history) => new Promise<number>((resolve) => {
        const t0 = performance.now();
        window.dispatchEvent(new MessageEvent('message', { data: { type: 'history', history } }));
        void document.getElementById('transcript')!.scrollHeight;
        requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - t0), 0));
      }), h);
      const count = await page.locator('.turn').count();
      if (count !== HISTORY_TURNS) throw new Error(`rendered ${count} turns`);
      times.push(ms);
      await page.context().close();
    }
    console.log(`history: ${HISTORY_TURNS} turns (${(chars / 1024).toFixed(0)} KiB of text), ${RUNS} runs: ` +
      `median ${percentile(times, 50).toFixed(0)} ms, max ${Math.max(...times).toFixed(0)} ms (to the next painted frame)`);

    // ---------------------------------------------------------- stream
    const { page } = await newWebviewPage(browser);
    await page.goto(`${host.origin}/`);
    await page.waitForFunction(() => (window as any).__posted.some((m: any) => m.type === 'ready'));
    const result = await page.evaluate(async ({ deltas, text }) => {
      const send = (data: unknown) => window.dispatchEvent(new MessageEvent('message', { data }));
      send({ type: 'server', state: 'ready' });
      send({ type: 'history', history: { sessionId: 'bench', turns: [] } });
      send({ type: 'notification', method: 'mino/turnStarted', params: { turnId: 's1', seq: 0, input: 'Stream' } });
      const frames: number[] = [];
      const longTasks: number[] = [];
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) longTasks.push(e.duration);
      }).observe({ type: 'longtask', buffered: false } as PerformanceObserverInit);
      let last = performance.now();
      let running = true;
      const tick = (t: number) => {
        frames.push(t - last);
        last = t;
        if (running) requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
      // Every delta is a task of its own, as VS Code delivers each postMessage.
      const size = Math.ceil(text.length / deltas);
      const t0 = performance.now();
      await new Promise<void>((resolve) => {
        let i = 0;
        const channel = new MessageChannel();
        channel.port1.onmessage = () => {
          send({ type: 'notification', method: 'mino/textDelta', params: { turnId: 's1', seq: i + 1, delta: text.slice(i * size, (i + 1) * size) } });
          i++;
          if (i < deltas) channel.port2.postMessage(0);
          else resolve();
        };
        channel.port2.postMessage(0);
      });
      send({ type: 'notification', method: 'mino/turnEnded', params: { turnId: 's1', seq: deltas + 1, status: 'completed' } });
      const total = performance.now() - t0;
      await new Promise((r) => requestAnimationFrame(() => r(undefined)));
      running = false;
      const rendered = document.querySelector('[data-turn-id="s1"] .assistant-text')!.textContent!.length;
      return { total, frames: frames.slice(1), longTasks, rendered, chars: text.length };
    }, { deltas: STREAM_DELTAS, text: Array.from({ length: 2400 }, (_, i) => answer(i) + '\n\n').join('').slice(0, STREAM_DELTAS * 8) });
    const f = result.frames;
    console.log(`stream: ${STREAM_DELTAS} deltas (${(result.chars / 1024).toFixed(0)} KiB) in ${(result.total / 1000).toFixed(2)} s ` +
      `(${Math.round(STREAM_DELTAS / (result.total / 1000))} deltas/s); ${f.length} frames: ` +
      `median ${percentile(f, 50).toFixed(1)} ms, p95 ${percentile(f, 95).toFixed(1)} ms, p99 ${percentile(f, 99).toFixed(1)} ms, ` +
      `max ${Math.max(...f).toFixed(1)} ms; frames over 50 ms: ${f.filter((x) => x > 50).length}; ` +
      `long tasks: ${result.longTasks.length} (longest ${result.longTasks.length ? Math.max(...result.longTasks).toFixed(0) : 0} ms); ` +
      `rendered ${result.rendered} characters`);
  } finally {
    await browser.close();
    await host.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
