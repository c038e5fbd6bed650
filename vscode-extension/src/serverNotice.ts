/**
 * The notice that the server stopped unexpectedly, outside the view: a status
 * bar item that restarts it when clicked. Unlike a notification toast (which
 * an extension cannot take back) it goes away as soon as the server starts
 * again, however it was restarted.
 */
import * as vscode from 'vscode';
import { CRASH_MESSAGE, type MinoServer } from './server';

export const STOPPED_NOTICE_ID = 'mino.serverStopped';

export class ServerStoppedNotice implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly subscription: vscode.Disposable;

  constructor(server: MinoServer) {
    this.item = vscode.window.createStatusBarItem(STOPPED_NOTICE_ID, vscode.StatusBarAlignment.Left, 100);
    this.item.name = 'Mino server stopped';
    this.item.text = '$(error) Mino stopped';
    this.item.tooltip = `${CRASH_MESSAGE} Click to restart it.`;
    this.item.command = 'mino.restartServer';
    this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
    this.item.accessibilityInformation = { label: `${CRASH_MESSAGE} Restart the Mino server.`, role: 'button' };
    this.subscription = server.onDidChangeState((state) => {
      if (state === 'crashed') this.item.show();
      else this.item.hide();
    });
  }

  dispose(): void {
    this.subscription.dispose();
    this.item.dispose();
  }
}
