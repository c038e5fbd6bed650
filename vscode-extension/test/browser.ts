/**
 * Debian's chromium through playwright-core, and a loopback HTTP server that
 * plays the webview's resource origin.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const EXT = path.resolve(__dirname, '..');
export const OUT = path.join(EXT, 'test-output');
export const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
export const SKIP_WEBVIEW = process.env.MINO_SKIP_WEBVIEW === '1';

export function requireChromium(): void {
  if (!SKIP_WEBVIEW && !existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} not found: run scripts/ensure-chromium.sh (apt-get install -y chromium)`);
  }
}

// VS Code's default dark theme variables, enough for a faithful screenshot.
export const DARK_THEME_CSS = `
:root {
  --vscode-font-family: system-ui, sans-serif; --vscode-font-size: 13px; --vscode-font-weight: normal;
  --vscode-editor-font-family: monospace; --vscode-editor-font-size: 12px;
  --vscode-foreground: #cccccc; --vscode-descriptionForeground: #9d9d9d; --vscode-errorForeground: #f85149;
  --vscode-sideBar-background: #181818; --vscode-editor-background: #1f1f1f;
  --vscode-button-background: #0078d4; --vscode-button-foreground: #ffffff; --vscode-button-hoverBackground: #026ec1;
  --vscode-button-secondaryBackground: #313131; --vscode-button-secondaryForeground: #cccccc;
  --vscode-input-background: #313131; --vscode-input-foreground: #cccccc; --vscode-input-border: #3c3c3c;
  --vscode-input-placeholderForeground: #989898; --vscode-focusBorder: #0078d4;
  --vscode-textLink-foreground: #4daafc; --vscode-textBlockQuote-background: #2b2b2b;
  --vscode-textCodeBlock-background: #2b2b2b; --vscode-editorWidget-background: #202020;
  --vscode-panel-border: #2b2b2b; --vscode-badge-background: #616161; --vscode-badge-foreground: #f8f8f8;
  --vscode-editorWarning-foreground: #cca700; --vscode-inputValidation-warningBackground: #352a05;
  --vscode-inputValidation-warningBorder: #b89500; --vscode-inputValidation-errorBackground: #5a1d1d;
  --vscode-testing-iconPassed: #73c991;
  --vscode-widget-border: #313131; --vscode-toolbar-hoverBackground: rgba(90, 93, 94, 0.31);
  --vscode-textPreformat-foreground: #d0d0d0; --vscode-textPreformat-background: #3c3c3c;
  --vscode-debugTokenExpression-string: #ce9178; --vscode-debugTokenExpression-number: #b5cea8;
  --vscode-debugTokenExpression-boolean: #4e94ce; --vscode-debugTokenExpression-name: #c586c0;
  --vscode-symbolIcon-functionForeground: #b180d7; --vscode-symbolIcon-classForeground: #ee9d28;
  --vscode-symbolIcon-keywordForeground: #569cd6; --vscode-editorLineNumber-foreground: #6e7681;
  --vscode-textSeparator-foreground: rgba(255, 255, 255, 0.18);
}`;

// VS Code's default light theme ("Light Modern") variables.
export const LIGHT_THEME_CSS = `
:root {
  --vscode-font-family: system-ui, sans-serif; --vscode-font-size: 13px; --vscode-font-weight: normal;
  --vscode-editor-font-family: monospace; --vscode-editor-font-size: 12px;
  --vscode-foreground: #3b3b3b; --vscode-descriptionForeground: #3b3b3b; --vscode-errorForeground: #f85149;
  --vscode-sideBar-background: #f8f8f8; --vscode-editor-background: #ffffff;
  --vscode-button-background: #005fb8; --vscode-button-foreground: #ffffff; --vscode-button-hoverBackground: #0258a8;
  --vscode-button-secondaryBackground: #e5e5e5; --vscode-button-secondaryForeground: #3b3b3b;
  --vscode-input-background: #ffffff; --vscode-input-foreground: #3b3b3b; --vscode-input-border: #cecece;
  --vscode-input-placeholderForeground: #767676; --vscode-focusBorder: #005fb8;
  --vscode-textLink-foreground: #005fb8; --vscode-textBlockQuote-background: #f8f8f8;
  --vscode-textCodeBlock-background: #f2f2f2; --vscode-editorWidget-background: #f8f8f8;
  --vscode-panel-border: #e5e5e5; --vscode-badge-background: #cccccc; --vscode-badge-foreground: #3b3b3b;
  --vscode-editorWarning-foreground: #bf8803; --vscode-inputValidation-warningBackground: #f6f5d2;
  --vscode-inputValidation-warningBorder: #b89500; --vscode-inputValidation-errorBackground: #f2dede;
  --vscode-testing-iconPassed: #388a34;
  --vscode-widget-border: #e5e5e5; --vscode-toolbar-hoverBackground: rgba(184, 184, 184, 0.31);
  --vscode-textPreformat-foreground: #3b3b3b; --vscode-textPreformat-background: rgba(0, 0, 0, 0.1);
  --vscode-debugTokenExpression-string: #a31515; --vscode-debugTokenExpression-number: #098658;
  --vscode-debugTokenExpression-boolean: #0000ff; --vscode-debugTokenExpression-name: #af00db;
  --vscode-symbolIcon-functionForeground: #652d90; --vscode-symbolIcon-classForeground: #d67e00;
  --vscode-symbolIcon-keywordForeground: #0000ff; --vscode-editorLineNumber-foreground: #6e7681;
  --vscode-textSeparator-foreground: rgba(0, 0, 0, 0.18);
}`;

export interface WebviewHost {
  origin: string;
  /** The HTML served at `/`; set before loading the page. */
  html: string;
  close(): Promise<void>;
}

/**
 * Serves `html` at `/` (with the theme stylesheet added, as VS Code injects its
 * theme variables), `/media/*` from the extension, on 127.0.0.1.
 */
export async function startWebviewHost(): Promise<WebviewHost> {
  let origin = '';
  const host: WebviewHost = {
    origin: '',
    html: '',
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/') {
      // `/?theme=light` plays VS Code's light theme (its variables and body class), as VS Code injects them.
      const light = url.searchParams.get('theme') === 'light';
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(
        host.html
          .replace('</head>', `<link rel="stylesheet" href="${origin}/theme.css${light ? '?light' : ''}"></head>`)
          .replace('<body>', `<body class="${light ? 'vscode-light' : 'vscode-dark'}">`),
      );
    } else if (url.pathname === '/theme.css') {
      res.setHeader('content-type', 'text/css');
      res.end(url.search === '?light' ? LIGHT_THEME_CSS : DARK_THEME_CSS);
    } else if (/^\/(media|dist)\/[\w.-]+$/.test(url.pathname) && existsSync(path.join(EXT, url.pathname))) {
      const type = url.pathname.endsWith('.js') ? 'text/javascript' : url.pathname.endsWith('.css') ? 'text/css' : 'image/svg+xml';
      res.setHeader('content-type', type);
      res.end(readFileSync(path.join(EXT, url.pathname)));
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  host.origin = origin;
  return host;
}

export async function launchChromium(): Promise<Browser> {
  mkdirSync(OUT, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--no-first-run', '--disable-sync',
    ],
  });
}

export interface PageProbe {
  cspViolations: string[];
  pageErrors: string[];
}

/** A page whose `acquireVsCodeApi().postMessage` records into `window.__posted`. */
export async function newWebviewPage(
  browser: Browser,
  viewport = { width: 420, height: 760 },
): Promise<{ page: Page; probe: PageProbe }> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const probe: PageProbe = { cspViolations: [], pageErrors: [] };
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) probe.cspViolations.push(m.text());
  });
  page.on('pageerror', (e) => probe.pageErrors.push(String(e)));
  await page.addInitScript(() => {
    const w = window as any;
    w.__posted = [];
    let state: unknown;
    w.acquireVsCodeApi = () => ({
      postMessage: (m: unknown) => {
        w.__posted.push(m);
        if (typeof w.__toHost === 'function') w.__toHost(m);
      },
      getState: () => state,
      setState: (s: unknown) => (state = s),
    });
  });
  return { page, probe };
}

/** Delivers a host message to the page as VS Code does (a `message` event). */
export async function deliver(page: Page, msg: unknown): Promise<void> {
  await page.evaluate((m) => window.dispatchEvent(new MessageEvent('message', { data: m })), msg);
}
