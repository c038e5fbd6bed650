// The packaged extension in real VS Code: code-server (installed by
// install-code-server.sh) on a port of its own choosing, the real mino-server
// and the mock model, driven through Debian's chromium with playwright-core.
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(here, '../../..');
export const OUT = path.resolve(here, '../test-output');
export const SERVER_BIN = path.resolve(ROOT, process.env.MINO_SERVER_BIN ?? 'target/debug/mino-server');
export const MOCK_BIN = path.resolve(ROOT, process.env.MINO_MOCK_BIN ?? 'target/debug/mino-mock-model');
export const VSIX = path.resolve(ROOT, process.env.MINO_VSIX ?? 'vscode-extension/mino-vscode.vsix');
export const CODE_SERVER = process.env.CODE_SERVER_DIR;
const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
/** Long enough for a debug server on a busy 2-core machine; every wait ends on an event first. */
export const TIMEOUT = 60_000;

/** Resolves with the first line of `stream` that `re` matches (its match), or rejects on exit or timeout. */
function waitForLine(proc, stream, re, what) {
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: stream });
    const timer = setTimeout(() => reject(new Error(`${what}: no line matching ${re} within ${TIMEOUT} ms`)), TIMEOUT);
    rl.on('line', (line) => {
      const m = re.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}) before printing ${re}`));
    });
  });
}

export class MockModel {
  constructor(proc, baseUrl) {
    this.proc = proc;
    this.baseUrl = baseUrl;
    this.origin = new URL(baseUrl).origin;
  }

  static async start() {
    const proc = spawn(MOCK_BIN, [], { stdio: ['pipe', 'pipe', 'ignore'] });
    const m = await waitForLine(proc, proc.stdout, /^listening (\S+)/, 'mino-mock-model');
    return new MockModel(proc, m[1]);
  }

  async script(replies) {
    const res = await fetch(`${this.origin}/_mock/script`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(replies),
    });
    if (!res.ok) throw new Error(`/_mock/script: ${res.status} ${await res.text()}`);
  }

  async requests() {
    return (await fetch(`${this.origin}/_mock/requests`)).json();
  }

  stop() {
    this.proc.stdin.end();
    this.proc.kill('SIGTERM');
  }
}

/**
 * One code-server with the packaged extension installed, a workspace folder,
 * a MINO_HOME, and a chromium page on it.
 */
export class Editor {
  static async launch({ mock, name, home, workspace, settings = {} }) {
    const base = mkdtempSync(path.join(tmpdir(), `mino-vscode-real-${name}-`));
    const dirs = {
      base,
      home: home ?? path.join(base, 'mino-home'),
      workspace: workspace ?? path.join(base, 'workspace'),
      userData: path.join(base, 'user-data'),
      extensions: path.join(base, 'extensions'),
      config: path.join(base, 'config'),
    };
    for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
    mkdirSync(path.join(dirs.userData, 'User'), { recursive: true });
    writeFileSync(
      path.join(dirs.userData, 'User', 'settings.json'),
      JSON.stringify({
        'mino.serverPath': SERVER_BIN,
        'mino.baseUrl': mock.baseUrl,
        'mino.model': 'mock-model',
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'security.workspace.trust.enabled': false,
        'extensions.autoCheckUpdates': false,
        'extensions.autoUpdate': false,
        'telemetry.telemetryLevel': 'off',
        // VS Code's port forwarding finds ports by scanning processes; when
        // a scan is slow (a busy machine: the Rust tests beside this suite)
        // it switches itself to "hybrid" by writing this file, and from that
        // write on the extension host read mino.serverPath as unset, so the
        // restart after the crash test's SIGKILL looked for mino-server on
        // PATH. Every failed run had that write; no passing run had it.
        'remote.autoForwardPorts': false,
        'remote.autoForwardPortsSource': 'hybrid',
        ...settings,
      }, null, 2),
    );
    const env = {
      ...process.env,
      // code-server writes its config.yaml here (else ~/.config/code-server).
      XDG_CONFIG_HOME: dirs.config,
      XDG_DATA_HOME: path.join(base, 'data'),
      // Inherited by the extension host, hence by mino-server.
      MINO_HOME: dirs.home,
      OPENAI_API_KEY: 'sk-test-vscode-real',
      RUST_LOG: 'info',
    };
    const entry = path.join(CODE_SERVER, 'out/node/entry.js');
    const common = ['--user-data-dir', dirs.userData, '--extensions-dir', dirs.extensions];
    execFileSync(process.execPath, [entry, ...common, '--install-extension', VSIX], { env, stdio: 'pipe' });
    const proc = spawn(process.execPath, [
      entry, ...common,
      '--auth', 'none',
      '--bind-addr', '127.0.0.1:0',
      '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust',
      '--disable-getting-started-override',
      dirs.workspace,
    ], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    proc.stdout.on('data', (d) => (log += d));
    proc.stderr.on('data', (d) => (log += d));
    // Port 0: the kernel picks a free port, code-server says which.
    const m = await waitForLine(proc, proc.stdout, /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+)/, 'code-server');
    const editor = new Editor(proc, m[1], dirs, () => log);
    await editor.open();
    return editor;
  }

  constructor(proc, url, dirs, log) {
    this.proc = proc;
    this.url = url;
    this.dirs = dirs;
    this.log = log;
    this.shots = 0;
  }

  async open() {
    this.browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
        '--no-first-run', '--disable-sync', '--disable-dev-shm-usage'],
    });
    this.page = await this.browser.newPage({ viewport: { width: 1400, height: 900 } });
    this.page.setDefaultTimeout(TIMEOUT);
    await this.page.goto(`${this.url}/?folder=${encodeURIComponent(this.dirs.workspace)}`);
    await this.page.locator('.monaco-workbench').waitFor();
  }

  /** Runs a command from the palette (F1), by its title. */
  async command(title) {
    const page = this.page;
    await page.locator('.monaco-workbench').click({ position: { x: 700, y: 5 } }).catch(() => undefined);
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor();
    await input.fill(`>${title}`);
    await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().waitFor();
    await input.press('Enter');
  }

  /**
   * Opens the Mino view and returns the frame that holds its webview: a
   * webview view is an iframe (VS Code's host page) holding another (ours).
   */
  async openView() {
    // The activity bar's Mino item: what a person clicks.
    await this.page.locator('.activitybar .action-item a[aria-label^="Mino"]').click();
    return this.viewFrame();
  }

  async viewFrame() {
    const deadline = Date.now() + TIMEOUT;
    for (;;) {
      for (const frame of this.page.frames()) {
        if (frame.isDetached()) continue;
        try {
          if (await frame.locator('#input').count()) return frame;
        } catch {
          // A frame that navigated while asked: look again.
        }
      }
      if (Date.now() > deadline) throw new Error('no frame holds the Mino view\'s input');
      await this.page.waitForEvent('framenavigated', { timeout: 1000 }).catch(() => undefined);
    }
  }

  async shot(name) {
    mkdirSync(OUT, { recursive: true });
    this.shots += 1;
    await this.page.screenshot({ path: path.join(OUT, `${name}.png`) });
  }

  /**
   * The mino-server processes this code-server's extension host started,
   * not their command supervisors (`mino-server --supervise`, the same binary
   * with the same MINO_HOME): process ids are not in the order processes
   * were started once they wrap around, as they do in a test run that
   * starts tens of thousands of processes.
   */
  serverPids() {
    const pids = [];
    for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
      try {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
        const supervisor = cmd.includes('--supervise');
        if (cmd[0] === SERVER_BIN && !supervisor && env.includes(`MINO_HOME=${this.dirs.home}`)) pids.push(Number(pid));
      } catch {
        // Gone meanwhile, or not ours to read.
      }
    }
    return pids;
  }

  journals() {
    const dir = path.join(this.dirs.home, 'sessions');
    if (!existsSync(dir)) return [];
    return readdirSync(dir).filter((f) => f.endsWith('.jsonl')).map((f) => path.join(dir, f));
  }

  async close() {
    await this.browser?.close().catch(() => undefined);
    this.proc.kill('SIGTERM');
    await new Promise((resolve) => {
      if (this.proc.exitCode !== null) return resolve();
      this.proc.once('exit', resolve);
      setTimeout(() => {
        this.proc.kill('SIGKILL');
        resolve();
      }, 10_000).unref();
    });
  }
}

/** Journal records of one session file. */
export function records(file) {
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => {
    try {
      return JSON.parse(l);
    } catch {
      return {};
    }
  });
}
