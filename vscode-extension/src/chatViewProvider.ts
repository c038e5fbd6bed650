/**
 * The `mino.chat` webview view: renders the webview (webview/main.ts) and turns its messages
 * into Mino requests.
 */
import * as vscode from 'vscode';
import type { ContextSource, HostMessage, ViewSession, WebviewMessage } from './messages';
import { mentions, readContext } from './editorContext';
import type { EditReviews } from './editReview';
import { isRpcError, Notification, type EditView, type HistoryResult, type RecoveryNotification } from './protocol';
import { errorMessage, type MinoServer } from './server';
import { forkTurn, rewindTurn } from './rewind';
import { renderChatHtml } from './webviewHtml';

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly viewType = 'mino.chat';

  private view: vscode.WebviewView | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private syncGeneration = 0;
  /** The session the view was last told about. */
  private shownSessionId: string | undefined;
  /** The history last sent to the view: a restored edit card's Review diff shows what it recorded. */
  private shownHistory: HistoryResult | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly server: MinoServer,
    private readonly output: vscode.OutputChannel,
    private readonly edits: EditReviews,
  ) {
    this.disposables.push(
      server.onDidChangeState(() => void this.sync()),
      server.onNotification(({ method, params }) => {
        // Recovery re-syncs the whole view (history, then the gate) so that a
        // view opened later shows the same thing.
        if (method === Notification.recovery) void this.sync();
        else this.post({ type: 'notification', method, params });
      }),
      // A switch rebuilds the view from the new session's history (its
      // mino/recovery, which follows, syncs again with the gate); a rename
      // only changes the header.
      server.onDidChangeSession((session) => {
        const switched = this.shownSessionId !== undefined && this.shownSessionId !== session.sessionId;
        this.postSession(session);
        if (switched) void this.sync();
      }),
      server.onDidChangeModel((model) => this.post({ type: 'model', model })),
      edits.onDidChangeKept(({ turnId, callId, kept }) => this.post({ type: 'hunks', turnId, callId, kept })),
      server.onDidChangeModes(({ approvalMode, sandbox }) => this.post({ type: 'modes', approvalMode, sandbox })),
    );
  }

  /**
   * The view is shown for the first time: serve the page and start the server
   * (the extension activates on this view, so nothing runs before it is opened).
   */
  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    // The webview bundle (scripts/build.mjs): webview/main.ts with its modules and libraries, media/main.css.
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    view.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    view.webview.html = renderChatHtml({
      cspSource: view.webview.cspSource,
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.js')).toString(),
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.css')).toString(),
    });
    this.disposables.push(
      view.webview.onDidReceiveMessage((msg: WebviewMessage) => void this.handleMessage(msg)),
      view.onDidDispose(() => {
        if (this.view === view) this.view = undefined;
      }),
      // Shown again (the page itself focuses its input when it loads).
      view.onDidChangeVisibility(() => {
        if (view.visible) this.post({ type: 'focus' });
      }),
    );
    if (this.server.state === 'stopped') void this.server.start();
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
    const session = this.server.session;
    if (session && state === 'ready') this.postSession(session);
    const model = this.server.model;
    if (model && state === 'ready') this.post({ type: 'model', model });
    const modes = this.server.modes;
    if (modes && state === 'ready') this.post({ type: 'modes', approvalMode: modes.approvalMode, sandbox: modes.sandbox });
    if (history) {
      this.shownHistory = history;
      this.post({ type: 'history', history });
    }
    const recovery: RecoveryNotification | undefined = this.server.recovery;
    if (recovery && state === 'ready') {
      this.post({ type: 'notification', method: Notification.recovery, params: recovery });
    }
    // A view opened (or re-synced) after an MCP server failed still says so.
    if (state === 'ready') {
      const sessionId = this.server.session?.sessionId;
      for (const status of this.server.mcpStatuses) {
        this.post({ type: 'notification', method: Notification.mcpStatus, params: { ...(sessionId ? { sessionId } : {}), ...status } });
      }
    }
  }

  private postSession(session: ViewSession): void {
    if (!this.view) return;
    this.shownSessionId = session.sessionId;
    this.post({ type: 'session', session });
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
      case 'copy':
        return vscode.env.clipboard.writeText(msg.text);
      case 'insert':
        return this.insertAtCursor(msg.text);
      case 'addContext':
        return this.addContext(msg.source, msg.path);
      case 'hunksKept':
        return this.edits.setKept(msg.turnId, msg.callId, msg.kept, 'card');
      case 'mentions':
        this.post({ type: 'mentions', query: msg.query, items: await mentions(msg.query) });
        return;
      case 'renameSession':
        await vscode.commands.executeCommand('mino.renameSession');
        return;
      case 'chooseModel':
        await vscode.commands.executeCommand('mino.chooseModel');
        return;
      case 'setApprovalMode':
        await vscode.commands.executeCommand('mino.setApprovalMode');
        return;
      case 'reviewEdit':
        await vscode.commands.executeCommand('mino.reviewPendingEdit', msg.turnId, msg.callId, msg.acceptedHunks);
        return;
      case 'reviewRecordedEdit':
        return this.reviewRecordedEdit(msg.turnId, msg.callId, msg.occurrence);
      case 'mcpRestart':
        return this.restartMcp(msg.server);
      case 'rewind':
        if (typeof msg.turnId === 'string' && (await rewindTurn(this.server, msg.turnId))) await this.sync();
        return;
      case 'fork':
        if (typeof msg.turnId === 'string') await forkTurn(this.server, msg.turnId);
        return;
    }
    const conn = this.server.connection;
    if (!conn && msg.type === 'image') {
      this.post({ type: 'image', sha256: msg.sha256, error: 'Mino server is not running.' });
      return;
    }
    if (!conn) {
      this.post({ type: 'error', request: msg.type, message: 'Mino server is not running.' });
      return;
    }
    try {
      switch (msg.type) {
        case 'send': {
          // The view keeps the question in its input until this says it was accepted.
          const { turnId } = await conn.chat(msg.text, msg.images);
          this.post({ type: 'sent', turnId });
          return;
        }
        case 'image': {
          // Only a SHA-256 in hex goes to the server; the answer is shown as an <img>, nothing more.
          if (typeof msg.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(msg.sha256)) return;
          try {
            const { mimeType, data } = await conn.image(msg.sha256);
            this.post({ type: 'image', sha256: msg.sha256, mimeType, data });
          } catch (e) {
            this.post({ type: 'image', sha256: msg.sha256, error: errorMessage(e) });
          }
          return;
        }
        case 'approval':
          await conn.decide(msg.turnId, msg.callId, msg.decision, { reason: msg.reason, rule: msg.rule, acceptedHunks: msg.acceptedHunks });
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
        turnId: msg.type === 'approval' ? msg.turnId : undefined,
        callId: msg.type === 'approval' ? msg.callId : undefined,
      });
    }
  }

  /** An MCP notice's Restart; a refusal (no such server, server not running) is said in the view. */
  private async restartMcp(server: string): Promise<void> {
    if (typeof server !== 'string' || !server) return;
    try {
      await this.server.restartMcp(server);
    } catch (e) {
      this.post({ type: 'error', request: 'mcpRestart', message: `Could not restart the MCP server ${server}: ${errorMessage(e)}` });
    }
  }

  /**
   * Opens the diff the session recorded for a restored edit card's call,
   * taken from the history the view was sent (never from the view's message).
   */
  private async reviewRecordedEdit(turnId: string, callId: string, occurrence: number): Promise<void> {
    const history = this.shownHistory;
    const edit = history && recordedEdit(history, turnId, callId, occurrence);
    if (!history || !edit) {
      void vscode.window.showInformationMessage('Mino: no recorded diff of this edit is shown here; reopen the session to see it.');
      return;
    }
    await this.edits.openRecorded({ sessionId: history.sessionId, turnId, callId, occurrence }, edit);
  }

  /** Inserts `text` at every cursor of the active editor, replacing what is selected. */
  private async insertAtCursor(text: string): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      this.post({ type: 'error', request: 'insert', message: 'No editor is active: open a file to insert the code into.' });
      return;
    }
    const done = await editor.edit((edit) => {
      for (const selection of editor.selections) edit.replace(selection, text);
    });
    if (!done) this.post({ type: 'error', request: 'insert', message: 'The code could not be inserted into the editor.' });
  }

  /** Adds the active file, the selection or picked files to the question being written (as chips). */
  async addContext(source: ContextSource, path?: string): Promise<void> {
    const read = await readContext(source, path);
    if ('message' in read) this.post({ type: 'error', request: 'addContext', message: read.message });
    else if (read.items.length) this.post({ type: 'context', items: read.items });
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}

/**
 * The edit the `occurrence`-th call `callId` of a history's turn recorded as
 * written, if any (an edit never written has an empty diff).
 */
function recordedEdit(history: HistoryResult, turnId: string, callId: string, occurrence: number): EditView | undefined {
  const turn = history.turns.find((t) => t.turnId === turnId);
  const call = turn?.calls.filter((c) => c.callId === callId)[occurrence];
  return call?.edit && call.edit.diff ? call.edit : undefined;
}
