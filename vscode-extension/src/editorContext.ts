/**
 * Editor context for a question: the active file, its selection, or files
 * picked by name, read through the VS Code API.
 */
import * as vscode from 'vscode';
import type { ContextItem, ContextSource, Mention } from './messages';

/**
 * The largest file or selection added to a question. The server refuses a
 * question over 1 MiB; this leaves room for the question and a few files.
 */
export const CONTEXT_MAX_BYTES = 256 * 1024;
/** How many workspace files the picker lists. */
const PICK_MAX_FILES = 5000;
const PICK_EXCLUDE = '**/{node_modules,.git,target,out,dist}/**';

export type ContextRead = { items: ContextItem[] } | { message: string };

function tooLarge(what: string, bytes: number): string {
  return `${what} is ${Math.ceil(bytes / 1024)} KiB; at most ${CONTEXT_MAX_BYTES / 1024} KiB can be added to a question. Select the part that matters and add the selection.`;
}

export async function readContext(source: ContextSource, file?: string): Promise<ContextRead> {
  if (source === 'pick') return pickFiles();
  if (source === 'file') return readWorkspaceFile(file);
  const editor = vscode.window.activeTextEditor;
  if (!editor) return { message: 'No editor is active: open a file first.' };
  const doc = editor.document;
  const path = vscode.workspace.asRelativePath(doc.uri, false);
  if (source === 'activeFile') {
    const text = doc.getText();
    const bytes = Buffer.byteLength(text);
    if (bytes > CONTEXT_MAX_BYTES) return { message: tooLarge(path, bytes) };
    return { items: [{ path, language: doc.languageId, text }] };
  }
  const selection = editor.selection;
  if (selection.isEmpty) return { message: `Nothing is selected in ${path}: select the lines to add first.` };
  const text = doc.getText(selection);
  const bytes = Buffer.byteLength(text);
  if (bytes > CONTEXT_MAX_BYTES) return { message: tooLarge(`The selection in ${path}`, bytes) };
  return {
    items: [{ path, language: doc.languageId, text, startLine: selection.start.line + 1, endLine: selection.end.line + 1 }],
  };
}

async function pickFiles(): Promise<ContextRead> {
  const uris = await vscode.workspace.findFiles('**/*', PICK_EXCLUDE, PICK_MAX_FILES);
  if (uris.length === 0) return { message: 'No files found in the workspace.' };
  const picks = uris
    .map((uri) => ({ label: vscode.workspace.asRelativePath(uri, false), uri }))
    .sort((a, b) => a.label.localeCompare(b.label));
  const chosen = await vscode.window.showQuickPick(picks, {
    canPickMany: true,
    matchOnDescription: true,
    title: 'Mino: add files to the question',
    placeHolder: 'Type a file name',
  });
  if (!chosen || chosen.length === 0) return { items: [] };
  const items: ContextItem[] = [];
  for (const { label, uri } of chosen) {
    const read = await readFileItem(label, uri);
    if ('message' in read) return read;
    items.push(read.item);
  }
  return { items };
}

async function readFileItem(label: string, uri: vscode.Uri): Promise<{ item: ContextItem } | { message: string }> {
  const stat = await vscode.workspace.fs.stat(uri);
  if (stat.size > CONTEXT_MAX_BYTES) return { message: tooLarge(label, stat.size) };
  const bytes = await vscode.workspace.fs.readFile(uri);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return { message: `${label} is not UTF-8 text and cannot be added to a question.` };
  }
  if (text.includes('\0')) return { message: `${label} is a binary file and cannot be added to a question.` };
  return { item: { path: label, language: languageOf(label), text } };
}

/**
 * A file chosen from the input's `@` menu, by its workspace-relative path:
 * only one the workspace lists (never a path the view made up that leads
 * outside it).
 */
async function readWorkspaceFile(file: string | undefined): Promise<ContextRead> {
  const uri = file === undefined ? undefined : (await workspaceFiles(true)).find((u) => vscode.workspace.asRelativePath(u, false) === file);
  if (!uri) return { message: `${file ?? 'The file'} is not a file of the workspace: choose one the @ menu offers.` };
  try {
    const read = await readFileItem(file!, uri);
    return 'message' in read ? read : { items: [read.item] };
  } catch (e) {
    return { message: `${file} could not be read (${(e as Error).message ?? e}).` };
  }
}

/** The `@` menu shows at most this many choices. */
export const MENTION_MAX = 20;
/** The workspace's files are listed again after this long (files come and go). */
const FILE_LIST_TTL_MS = 5000;
let fileList: { at: number; uris: Promise<vscode.Uri[]> } | undefined;

/** The workspace's files, listed again when `fresh` or when the last list is old. */
function workspaceFiles(fresh = false): Promise<vscode.Uri[]> {
  const now = Date.now();
  if (fresh || !fileList || now - fileList.at > FILE_LIST_TTL_MS) {
    fileList = { at: now, uris: Promise.resolve(vscode.workspace.findFiles('**/*', PICK_EXCLUDE, PICK_MAX_FILES)) };
  }
  return fileList.uris;
}

/**
 * The `@` menu for `query`: the editor's selection and the active file
 * first (when there is one and the query names it), then the workspace's
 * files whose path holds the query (case-insensitive), those whose name
 * starts with it first, then shorter paths.
 */
export async function mentions(query: string): Promise<Mention[]> {
  const q = query.toLowerCase();
  const out: Mention[] = [];
  const editor = vscode.window.activeTextEditor;
  if (editor) {
    const path = vscode.workspace.asRelativePath(editor.document.uri, false);
    const named = (word: string) => word.startsWith(q) || path.toLowerCase().includes(q);
    const selection = editor.selection;
    if (!selection.isEmpty && named('selection')) {
      const lines = selection.start.line === selection.end.line ? `${selection.start.line + 1}` : `${selection.start.line + 1}-${selection.end.line + 1}`;
      out.push({ kind: 'selection', label: `Selection: ${path}:${lines}`, path });
    }
    if (named('file')) out.push({ kind: 'activeFile', label: `Active file: ${path}`, path });
  }
  // A new `@` (nothing typed after it yet) lists the files afresh; the keys after it reuse that list.
  const files = (await workspaceFiles(query === ''))
    .map((uri) => vscode.workspace.asRelativePath(uri, false))
    .filter((p) => p.toLowerCase().includes(q));
  const name = (p: string) => p.slice(p.lastIndexOf('/') + 1).toLowerCase();
  files.sort((a, b) => Number(name(b).startsWith(q)) - Number(name(a).startsWith(q)) || a.length - b.length || a.localeCompare(b));
  for (const path of files) {
    if (out.length >= MENTION_MAX) break;
    out.push({ kind: 'file', label: path, path });
  }
  return out;
}

/** A fence info string from the file name (VS Code's language id is known only for open documents). */
function languageOf(path: string): string {
  const ext = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase() ?? '';
  const byExt: Record<string, string> = {
    ts: 'typescript', tsx: 'typescript', js: 'javascript', mjs: 'javascript', cjs: 'javascript', jsx: 'javascript',
    rs: 'rust', py: 'python', go: 'go', java: 'java', c: 'c', h: 'c', cc: 'cpp', cpp: 'cpp', hpp: 'cpp',
    cs: 'csharp', rb: 'ruby', php: 'php', sh: 'bash', bash: 'bash', zsh: 'bash', lua: 'lua', json: 'json',
    yml: 'yaml', yaml: 'yaml', toml: 'toml', md: 'markdown', html: 'html', css: 'css', sql: 'sql', kt: 'kotlin',
    swift: 'swift', xml: 'xml',
  };
  return byExt[ext] ?? '';
}
