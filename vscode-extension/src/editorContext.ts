/**
 * Editor context for a question: the active file, its selection, or files
 * picked by name, read through the VS Code API.
 */
import * as vscode from 'vscode';
import type { ContextItem, ContextSource } from './messages';

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

export async function readContext(source: ContextSource): Promise<ContextRead> {
  if (source === 'pick') return pickFiles();
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
    items.push({ path: label, language: languageOf(label), text });
  }
  return { items };
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
