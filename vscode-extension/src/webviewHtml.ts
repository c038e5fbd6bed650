/**
 * The chat webview's HTML. Kept free of the `vscode` module so that the
 * webview test can load exactly the page the extension serves.
 */
import { randomBytes } from 'node:crypto';
import { ACKNOWLEDGEMENT_QUESTION } from './generated/protocol';

export interface WebviewHtmlOptions {
  /** `webview.cspSource`: the origin local resources are served from. */
  cspSource: string;
  /** URI of dist/webview.js (webview/main.ts bundled) as the webview sees it. */
  scriptUri: string;
  /** URI of dist/webview.css (media/main.css bundled) as the webview sees it. */
  styleUri: string;
  /** Per-load nonce; a fresh one when omitted. */
  nonce?: string;
}

export function makeNonce(): string {
  return randomBytes(18).toString('base64').replace(/[^A-Za-z0-9]/g, '');
}

/**
 * Strict Content-Security-Policy: nothing by default, styles and images only
 * from the extension's own files, scripts only with this load's nonce, no
 * remote origins, no inline styles.
 */
export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `style-src ${cspSource}`,
    `img-src ${cspSource} data:`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
    "connect-src 'none'",
    "frame-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
  ].join('; ');
}

function escapeAttr(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function renderChatHtml(opts: WebviewHtmlOptions): string {
  const nonce = opts.nonce ?? makeNonce();
  const csp = contentSecurityPolicy(opts.cspSource, nonce);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeAttr(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeAttr(opts.styleUri)}">
<title>Mino</title>
</head>
<body>
<div id="app">
  <header id="session-header" class="session-header" hidden>
    <h1 id="session-title" class="session-title">New chat</h1>
    <span id="session-usage" class="session-usage" hidden></span>
    <button id="session-model" type="button" class="session-model" title="The model this session asks; choose another" aria-label="Choose the model" hidden></button>
    <button id="session-mode" type="button" class="session-mode" title="Which commands run without asking; change the approval mode" hidden></button>
    <span id="session-sandbox" class="session-sandbox" hidden></span>
    <span id="session-instructions" class="session-instructions" hidden></span>
    <button id="session-rename" type="button" class="icon-button" title="Rename this session" aria-label="Rename this session">Rename</button>
  </header>
  <div id="status" class="status" role="status" aria-live="polite"></div>
  <div id="notices" class="notices" aria-live="polite"></div>
  <main id="transcript" class="transcript" aria-label="Conversation"></main>
  <div id="announcer" class="visually-hidden" aria-live="polite" aria-atomic="true"></div>
  <section id="ack-gate" class="ack-gate" hidden tabindex="-1" role="alertdialog" aria-labelledby="ack-title" aria-describedby="ack-question">
    <h2 id="ack-title">An interrupted tool turn was recovered without executing commands.</h2>
    <p class="ack-explain">A previous command started, but its result is unknown. It may have changed files or external systems. Mino has not rerun it. Review those effects before continuing.</p>
    <ul id="ack-calls" class="ack-calls"></ul>
    <p class="ack-question" id="ack-question">${ACKNOWLEDGEMENT_QUESTION}</p>
    <div class="ack-actions">
      <button id="ack-yes" type="button" class="primary">Yes, I understand</button>
    </div>
  </section>
  <div id="progress" class="progress" hidden><span class="progress-dot" aria-hidden="true"></span><span id="progress-text"></span></div>
  <form id="composer" class="composer" autocomplete="off">
    <ul id="chips" class="chips" aria-label="Added to the question" hidden></ul>
    <ul id="image-chips" class="chips image-chips" aria-label="Images of the question" hidden></ul>
    <ul id="mentions" class="mentions" role="listbox" aria-label="Add to the question: files and the selection" hidden></ul>
    <textarea id="input" rows="3" placeholder="Ask Mino… (Enter to send, Shift+Enter for a new line, @ to add a file, paste or drop images)" aria-label="Question" aria-describedby="composer-error" aria-autocomplete="list" aria-controls="mentions" aria-expanded="false"></textarea>
    <div id="composer-error" class="composer-error" role="alert" hidden></div>
    <div class="composer-actions">
      <!-- After the input in tab order: Shift+Tab from the input reaches the newest approval card. -->
      <div class="context-bar" role="group" aria-label="Add to the question">
        <button id="add-file" type="button" class="context-add" title="Add the active editor's file to the question">+ File</button>
        <button id="add-selection" type="button" class="context-add" title="Add the active editor's selection to the question">+ Selection</button>
        <button id="add-files" type="button" class="context-add" title="Add files of the workspace by name">+ Files…</button>
      </div>
      <span class="send-actions">
        <button id="cancel" type="button" class="secondary" hidden>Cancel</button>
        <button id="send" type="submit" class="primary">Send</button>
      </span>
    </div>
  </form>
</div>
<script nonce="${nonce}" src="${escapeAttr(opts.scriptUri)}"></script>
</body>
</html>`;
}
