/**
 * Reviewing an edit before approving it: `vscode.diff` between the file on
 * disk and a read-only virtual document (`mino-proposed:`) holding the
 * proposed content. The proposed content is built from what the person is
 * asked to approve: the request's unified diff applied to the file's text as
 * read when the request arrived, never re-read later. When the diff does not
 * apply to that text, the review shows the diff itself (a read-only `diff`
 * document) and says why.
 */
import * as path from 'node:path';
import { applyPatch, parsePatch } from 'diff';
import * as vscode from 'vscode';
import { Notification, type ApprovalRequest, type EditView } from './protocol';
import type { MinoServer } from './server';

/** The scheme of the read-only documents a review opens. */
export const PROPOSED_SCHEME = 'mino-proposed';
/** Reviews kept (the newest); older cards' "Review diff" says it is gone. */
export const MAX_REVIEWS = 32;

/** What a review shows, built once when the request arrives. */
export type PreparedReview =
  /** `before`: the file's text when the request arrived ('' for a new file). */
  | { kind: 'proposed'; before: string; proposed: string }
  /** The diff could not be applied: the review shows the diff, saying why. */
  | { kind: 'diffOnly'; reason: string };

interface Review {
  turnId: string;
  callId: string;
  /** The request's session directory: a relative `edit.path` is inside it. */
  directory: string;
  edit: EditView;
  /** Settled with what the review shows; started when the request arrived. */
  prepared: Promise<PreparedReview>;
  /** No decision was sent yet (its call has not started, its turn not ended). */
  pending: boolean;
  /** The hunks the person keeps (0-based, ascending) when some were rejected; undefined: all. */
  kept?: number[];
}

/** The hunks kept of one review changed in the diff editor (the card follows). */
export interface KeptChange {
  turnId: string;
  callId: string;
  /** null: every hunk kept. */
  kept: number[] | null;
}

/** The three documents of a review, told apart by the URI's `side`. */
type Side = 'before' | 'after' | 'diff';
/** The `side` of a restored card's recorded diff (not a review: nothing is pending). */
const RECORDED_SIDE = 'recorded';

/**
 * Where a restored card's edit was recorded: the session, the turn, and which
 * of the turn's calls with that id it is (models repeat ids), 0 for the first.
 */
export interface RecordedAt {
  sessionId: string;
  turnId: string;
  callId: string;
  occurrence: number;
}

/** Names a recorded diff, in the map and in its document's URI (one document per call, never another call's). */
const recordedQuery = (at: RecordedAt) =>
  new URLSearchParams({ session: at.sessionId, turn: at.turnId, call: at.callId, occurrence: String(at.occurrence), side: RECORDED_SIDE }).toString();

const reviewKey = (turnId: string, callId: string) => `${turnId}\n${callId}`;

export class EditReviews implements vscode.TextDocumentContentProvider, vscode.CodeLensProvider, vscode.Disposable {
  /** Newest last; at most MAX_REVIEWS. */
  private readonly reviews = new Map<string, Review>();
  /** The edits (as `mino/history` recorded them) of restored cards opened, by recordedQuery; newest last, at most MAX_REVIEWS. */
  private readonly recorded = new Map<string, EditView>();
  private readonly disposables: vscode.Disposable[] = [];
  private sessionId: string | undefined;
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  /** A proposed document's content changed (hunks kept or rejected): VS Code reads it again. */
  readonly onDidChange = this.changed.event;
  private readonly lensesChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensesChanged.event;
  private readonly keptChanged = new vscode.EventEmitter<KeptChange>();
  /** Hunks kept or rejected from the diff editor's code lenses. */
  readonly onDidChangeKept = this.keptChanged.event;

  constructor(private readonly server: MinoServer) {
    this.disposables.push(
      this.changed,
      this.lensesChanged,
      this.keptChanged,
      vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, this),
      // Above each hunk of the proposed side: keep or reject it (the card's checkboxes follow).
      vscode.languages.registerCodeLensProvider({ scheme: PROPOSED_SCHEME }, this),
      server.onNotification(({ method, params }) => {
        if (method === Notification.approvalRequest) this.onApprovalRequest(params as ApprovalRequest);
        else if (method === Notification.toolStarted || method === Notification.toolResult) this.settle(params.turnId, params.callId);
        else if (method === Notification.turnEnded) this.settle(params.turnId);
      }),
      // Turn ids repeat from one session to the next: another session's reviews are not this one's.
      server.onDidChangeSession((session) => {
        if (this.sessionId !== undefined && this.sessionId !== session.sessionId) this.reviews.clear();
        this.sessionId = session.sessionId;
      }),
      // A stopped server answers no pending request.
      server.onDidChangeState((state) => {
        if (state !== 'ready') this.settle();
      }),
    );
  }

  /** Captures the file now (the diff was made from its content at this moment) and prepares the review. */
  onApprovalRequest(p: ApprovalRequest): void {
    if (!p.edit || typeof p.edit.diff !== 'string') return;
    const key = reviewKey(p.turnId, p.callId);
    this.reviews.delete(key);
    const file = this.filePath(p.directory, p.edit.path);
    this.reviews.set(key, {
      turnId: p.turnId,
      callId: p.callId,
      directory: p.directory,
      edit: p.edit,
      prepared: prepareReview(p.edit, file),
      pending: true,
    });
    for (const old of this.reviews.keys()) {
      if (this.reviews.size <= MAX_REVIEWS) break;
      this.reviews.delete(old);
    }
  }

  /** The call (or every call of the turn, or of the server) no longer waits for a decision. */
  private settle(turnId?: string, callId?: string): void {
    for (const r of this.reviews.values()) {
      if ((turnId === undefined || r.turnId === turnId) && (callId === undefined || r.callId === callId)) r.pending = false;
    }
  }

  /** The newest edit still waiting for the person's decision. */
  pending(): { turnId: string; callId: string } | undefined {
    const waiting = [...this.reviews.values()].filter((r) => r.pending);
    const last = waiting[waiting.length - 1];
    return last && { turnId: last.turnId, callId: last.callId };
  }

  /**
   * Opens the review of (turnId, callId), or of the pending edit when none is
   * named (Mino: Review Pending Edit). Opening it decides nothing.
   */
  async open(turnId?: string, callId?: string, acceptedHunks?: number[]): Promise<void> {
    const fromCard = turnId !== undefined && callId !== undefined;
    const which = fromCard ? { turnId, callId } : this.pending();
    if (!which) {
      void vscode.window.showInformationMessage('Mino: no edit is waiting for your approval.');
      return;
    }
    const review = this.reviews.get(reviewKey(which.turnId, which.callId));
    if (!review) {
      void vscode.window.showInformationMessage(
        'Mino: this edit can no longer be reviewed here (only the newest edits of the open session are kept); its card shows the diff.',
      );
      return;
    }
    // The card says which hunks it keeps (none named: all).
    if (fromCard && review.pending) this.setKept(which.turnId, which.callId, acceptedHunks, 'card');
    const prepared = await review.prepared;
    const { edit } = review;
    // Some hunks rejected: the right side is the kept hunks alone, as the server would write them.
    const kept = prepared.kind === 'proposed' && review.kept ? keptHunks(edit, prepared.before, review.kept) : undefined;
    if (prepared.kind === 'diffOnly') {
      const opened = await vscode.workspace.openTextDocument(this.uri(review, 'diff'));
      const doc = await vscode.languages.setTextDocumentLanguage(opened, 'diff');
      await vscode.window.showTextDocument(doc, { preview: true });
      void vscode.window.showWarningMessage(`Mino: showing the diff of ${edit.path} instead of the proposed file: ${prepared.reason}`);
      return;
    }
    // The file on disk, unless it changed since the request arrived: then the
    // text the diff was made from, so the review shows exactly the proposed change.
    let left = this.uri(review, 'before');
    let note = '';
    if (!edit.newFile) {
      const file = this.filePath(review.directory, edit.path);
      const now = await readText(file).catch(() => undefined);
      if (now === prepared.before) left = vscode.Uri.file(file);
      else note = ', as it was when proposed';
    }
    const right = this.uri(review, 'after');
    const part = kept ? `, ${kept.accepted.length} of ${kept.of} hunks kept` : '';
    const title = `${path.basename(edit.path)} (${edit.newFile ? 'new file' : 'on disk' + note}) ↔ proposed by Mino${part}`;
    await vscode.commands.executeCommand('vscode.diff', left, right, title, { preview: true });
  }

  /**
   * Opens the diff a restored edit card shows, as the session recorded it
   * (the file as it was when proposed is not kept, so there is nothing to
   * compare side by side): a read-only `diff` document named after the path.
   * It decides nothing; the call is long settled.
   */
  async openRecorded(at: RecordedAt, edit: EditView): Promise<void> {
    const query = recordedQuery(at);
    this.recorded.delete(query);
    this.recorded.set(query, edit);
    for (const old of this.recorded.keys()) {
      if (this.recorded.size <= MAX_REVIEWS) break;
      this.recorded.delete(old);
    }
    const uri = vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: '/' + edit.path.replace(/^\/+/, '') + '.diff', query });
    const opened = await vscode.workspace.openTextDocument(uri);
    const doc = await vscode.languages.setTextDocumentLanguage(opened, 'diff');
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  /** The content of a `mino-proposed:` document (read-only: no file system backs the scheme). */
  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const query = new URLSearchParams(uri.query);
    if (query.get('side') === RECORDED_SIDE) {
      const at = { sessionId: query.get('session') ?? '', turnId: query.get('turn') ?? '', callId: query.get('call') ?? '', occurrence: Number(query.get('occurrence')) };
      return this.recorded.get(recordedQuery(at))?.diff ?? '';
    }
    const review = this.reviews.get(reviewKey(query.get('turn') ?? '', query.get('call') ?? ''));
    if (!review) return '';
    const prepared = await review.prepared;
    const side = query.get('side') as Side;
    if (prepared.kind === 'proposed') {
      if (side === 'after' && review.kept) return keptHunks(review.edit, prepared.before, review.kept)?.proposed ?? prepared.proposed;
      return side === 'before' ? prepared.before : side === 'after' ? prepared.proposed : review.edit.diff;
    }
    if (side !== 'diff') return '';
    return (
      `# Mino could not build the proposed content of ${review.edit.path}: ${prepared.reason}\n` +
      '# Below is the diff you are asked to approve, exactly as Mino proposed it.\n' +
      review.edit.diff
    );
  }

  /** `mino-proposed:/<path>?…`: the path keeps the tab's name and language; the query names the review. */
  uri(review: Review, side: Side): vscode.Uri {
    const query = new URLSearchParams({ turn: review.turnId, call: review.callId, side }).toString();
    const shown = review.edit.path.replace(/^\/+/, '');
    return vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: '/' + shown + (side === 'diff' ? '.diff' : ''), query });
  }

  /**
   * The hunks kept of a pending edit (undefined: all). `from` the card: the
   * diff editor follows; from the editor's lenses: the card is told too.
   * Keeping or rejecting decides nothing: Approve in the card sends the kept ones.
   */
  setKept(turnId: string, callId: string, kept: number[] | undefined, from: 'card' | 'editor'): void {
    const review = this.reviews.get(reviewKey(turnId, callId));
    if (!review || !review.pending) return;
    const of = hunkCount(review.edit);
    const normal = kept && [...new Set(kept)].filter((i) => Number.isInteger(i) && i >= 0 && i < of).sort((a, b) => a - b);
    review.kept = normal && normal.length < of ? normal : undefined;
    this.changed.fire(this.uri(review, 'after'));
    this.lensesChanged.fire();
    if (from === 'editor') this.keptChanged.fire({ turnId, callId, kept: review.kept ?? null });
  }

  /** A lens's click: keep (or reject) hunk `index` of the pending edit. */
  toggleHunk(turnId: string, callId: string, index: number, keep: boolean): void {
    const review = this.reviews.get(reviewKey(turnId, callId));
    if (!review) return;
    const all = Array.from({ length: hunkCount(review.edit) }, (_, i) => i);
    const kept = new Set(review.kept ?? all);
    if (keep) kept.add(index);
    else kept.delete(index);
    this.setKept(turnId, callId, [...kept], 'editor');
  }

  /**
   * The proposed side of a pending edit of two hunks or more: above each
   * hunk (where it is, or would be when rejected), "Reject hunk i of n" or
   * "Keep hunk i of n".
   */
  async provideCodeLenses(document: vscode.TextDocument): Promise<vscode.CodeLens[]> {
    const query = new URLSearchParams(document.uri.query);
    if (query.get('side') !== 'after') return [];
    const review = this.reviews.get(reviewKey(query.get('turn') ?? '', query.get('call') ?? ''));
    if (!review || !review.pending || (await review.prepared).kind !== 'proposed') return [];
    let patch;
    try {
      [patch] = parsePatch(review.edit.diff);
    } catch {
      return [];
    }
    const hunks = patch?.hunks ?? [];
    if (hunks.length < 2) return [];
    const kept = new Set(review.kept ?? hunks.map((_, i) => i));
    const lenses: vscode.CodeLens[] = [];
    // Where each hunk starts in the document as shown: its old start, moved by what the kept hunks before it changed.
    let shift = 0;
    for (const [i, hunk] of hunks.entries()) {
      const line = Math.max(0, hunk.oldStart - 1 + shift + (hunk.oldLines === 0 ? 1 : 0));
      const range = new vscode.Range(line, 0, line, 0);
      const keep = kept.has(i);
      lenses.push(new vscode.CodeLens(range, {
        title: keep ? `Mino: reject hunk ${i + 1} of ${hunks.length}` : `Mino: keep hunk ${i + 1} of ${hunks.length} (rejected)`,
        command: keep ? 'mino.rejectHunk' : 'mino.keepHunk',
        arguments: [review.turnId, review.callId, i],
        tooltip: keep ? 'Leave this hunk out of what Approve writes' : 'Put this hunk back into what Approve writes',
      }));
      if (keep) shift += hunk.newLines - hunk.oldLines;
    }
    return lenses;
  }

  private filePath(directory: string, editPath: string): string {
    return path.isAbsolute(editPath) ? editPath : path.join(directory || vscode.workspace.workspaceFolders?.[0]?.uri.fsPath || '', editPath);
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
    this.reviews.clear();
    this.recorded.clear();
  }
}

async function readText(file: string): Promise<string> {
  const bytes = await vscode.workspace.fs.readFile(vscode.Uri.file(file));
  return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
}

/** Applies the edit's diff to the file's text as read now (a new file: ''). */
export async function prepareReview(edit: EditView, file: string): Promise<PreparedReview> {
  let before = '';
  if (!edit.newFile) {
    try {
      before = await readText(file);
    } catch (e) {
      return { kind: 'diffOnly', reason: `${file} could not be read as UTF-8 text (${(e as Error).message ?? e})` };
    }
  }
  return buildProposed(edit, before);
}

/** The proposed content: `edit.diff` applied to `before` with no fuzz, and exactly `edit.size` bytes long. */
export function buildProposed(edit: EditView, before: string): PreparedReview {
  let proposed: string | false;
  try {
    proposed = applyPatch(before, edit.diff);
  } catch (e) {
    return { kind: 'diffOnly', reason: `the diff could not be read (${(e as Error).message ?? e})` };
  }
  if (proposed === false) {
    return {
      kind: 'diffOnly',
      reason: `the diff does not apply to ${edit.path} as it was read when Mino asked (it may have changed since the diff was made)`,
    };
  }
  const size = Buffer.byteLength(proposed, 'utf8');
  if (size !== edit.size) {
    return { kind: 'diffOnly', reason: `applying the diff gives ${size} bytes where Mino says the file will have ${edit.size}` };
  }
  return { kind: 'proposed', before, proposed };
}

/**
 * The proposed content with only the hunks `accepted` (0-based, in the diff's
 * order) applied to `before`: what the server writes for an edit approved in
 * part. Undefined when every hunk is kept (the whole proposal), none is, or
 * the kept hunks do not apply.
 */
export function keptHunks(edit: EditView, before: string, accepted: number[]): { proposed: string; accepted: number[]; of: number } | undefined {
  let patch;
  try {
    [patch] = parsePatch(edit.diff);
  } catch {
    return undefined;
  }
  if (!patch) return undefined;
  const of = patch.hunks.length;
  const keep = [...new Set(accepted)].filter((i) => Number.isInteger(i) && i >= 0 && i < of).sort((a, b) => a - b);
  if (keep.length === 0 || keep.length === of) return undefined;
  // Later hunks' line numbers still count the dropped hunks' lines: jsdiff
  // finds each hunk at its place (no fuzz), shifted by what the kept ones before it changed.
  let shift = 0;
  const hunks = [];
  let at = 0;
  for (const [i, hunk] of patch.hunks.entries()) {
    if (keep[at] === i) {
      hunks.push({ ...hunk, newStart: hunk.oldStart + shift });
      shift += hunk.newLines - hunk.oldLines;
      at++;
    }
  }
  const proposed = applyPatch(before, { ...patch, hunks });
  return proposed === false ? undefined : { proposed, accepted: keep, of };
}

/** How many hunks an edit's diff has (its `@@` headers). */
function hunkCount(edit: EditView): number {
  return (edit.diff.match(/^@@ /gm) ?? []).length;
}
