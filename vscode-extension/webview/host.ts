// The one channel to the extension host: postMessage, in the shapes of
// src/messages.ts (its answers arrive as window messages, read in main.ts).
import type { WebviewMessage } from '../src/messages';
import { h } from './dom';

// What VS Code gives a webview's script (https://code.visualstudio.com/api/extension-guides/webview).
declare function acquireVsCodeApi(): {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
};

const vscode = acquireVsCodeApi();

export function post(msg: WebviewMessage) {
  vscode.postMessage(msg);
}

/** A button that looks like a link and sends `msg` when clicked; it decides nothing by itself. */
export function linkButton(label: string, msg: WebviewMessage, className?: string): HTMLButtonElement {
  const b = h('button', 'link' + (className ? ' ' + className : ''), label);
  b.type = 'button';
  b.addEventListener('click', () => post(msg));
  return b;
}
