// What VS Code gives a webview's script: the one way it talks to the
// extension host (https://code.visualstudio.com/api/extension-guides/webview).
// For the type check of media/*.js only (tsconfig.webview.json).
declare function acquireVsCodeApi(): {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
};
