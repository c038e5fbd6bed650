/**
 * The `mino.chat` webview view: renders media/main.js and turns its messages
 * into Mino requests.
 */
import * as vscode from 'vscode';
import type { HostMessage, WebviewMessage } from './messages';
import { isRpcError, type HistoryResult, type RecoveryNotification } from './protocol';
import { errorMessage, type MinoServer } from './server';
import { renderChatHtml } from './webviewHtml';

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly viewType = 'mino.chat';

  private view: vscode.WebviewView | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private syncGeneration = 0;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly server: MinoServer,
    private readonly output: vscode.OutputChannel,
  ) {
    this.disposables.push(
      server.onDidChangeState(() => void this.sync()),
      server.onNotification(({ method, params }) => {
        // Recovery re-syncs the whole view (history, then the gate) so that a
        // view opened later shows the same thing.
        if (method === 'mino/recovery') void this.sync();
        else this.post({ type: 'notification', method, params });
      }),
    );
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    view.webview.html = renderChatHtml({
      cspSource: view.webview.cspSource,
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'main.js')).toString(),
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'main.css')).toString(),
    });
    this.disposables.push(
      view.webview.onDidReceiveMessage((msg: WebviewMessage) => void this.handleMessage(msg)),
      view.onDidDispose(() => {
        if (this.view === view) this.view = undefined;
      }),
    );
  }

  /** Reveals the view and focuses the input; `clear` empties it first. */
  focusInput(clear = false): void {
    this.view?.show?.(false);
    this.post({ type: 'focus', clear });
  }

  post(msg: HostMessage): void {
    void this.view?.webview.postMessage(msg);
  }

  /**
   * Sends the view everything it needs: server state, history, pending recovery.
   * Without a running server there is no history to ask for, and the view keeps
   * the transcript it shows: after a crash it is what the person needs to see.
   */
  async sync(): Promise<void> {
    if (!this.view) return;
    const generation = ++this.syncGeneration;
    const state = this.server.state;
    const conn = this.server.connection;
    let history: HistoryResult | undefined;
    if (conn) {
      try {
        history = await conn.history();
      } catch (e) {
        this.output.appendLine(`mino/history failed: ${errorMessage(e)}`);
      }
    }
    if (generation !== this.syncGeneration) return;
    const { message, fixSetting } = this.server.stateDetail;
    this.post({ type: 'server', state, ...(message ? { message } : {}), ...(fixSetting ? { fixSetting } : {}) });
    if (history) this.post({ type: 'history', history });
    const recovery: RecoveryNotification | undefined = this.server.recovery;
    if (recovery && state === 'ready') {
      this.post({ type: 'notification', method: 'mino/recovery', params: recovery });
    }
  }

  async handleMessage(msg: WebviewMessage): Promise<void> {
    switch (msg.type) {
      case 'ready':
        return this.sync();
      case 'restart':
        return this.server.restart();
      case 'showLog':
        return this.output.show(true);
      case 'openSettings':
        return this.server.openSettings();
    }
    const conn = this.server.connection;
    if (!conn) {
      this.post({ type: 'error', request: msg.type, message: 'Mino server is not running.' });
      return;
    }
    try {
      switch (msg.type) {
        case 'send': {
          // The view keeps the question in its input until this says it was accepted.
          const { turnId } = await conn.chat(msg.text);
          this.post({ type: 'sent', turnId });
          return;
        }
        case 'approval':
          await conn.decide(msg.turnId, msg.callId, msg.decision);
          return;
        case 'acknowledge': {
          const result = await conn.acknowledge(msg.turnIds.length ? msg.turnIds : undefined);
          this.server.markAcknowledged(result.acknowledged);
          this.post({ type: 'acknowledged', turnIds: result.acknowledged });
          return;
        }
        case 'cancel': {
          const turnId = msg.turnId ?? this.server.runningTurnId;
          if (turnId) await conn.cancel(turnId);
          return;
        }
      }
    } catch (e) {
      this.post({
        type: 'error',
        request: msg.type,
        message: errorMessage(e),
        code: isRpcError(e) ? e.code : undefined,
        callId: msg.type === 'approval' ? msg.callId : undefined,
      });
    }
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}
