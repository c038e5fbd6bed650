/**
 * A small stand-in for the `vscode` module: just what the extension uses, with
 * records the host-glue tests can inspect. Aliased in vitest.config.ts.
 */
export interface Disposable { dispose(): unknown }

type Listener<T> = (e: T) => unknown;

export class EventEmitter<T> {
  private listeners = new Set<Listener<T>>();
  event = (listener: Listener<T>): Disposable => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
  dispose(): void {
    this.listeners.clear();
  }
}

export class Uri {
  constructor(readonly scheme: string, readonly fsPath: string, readonly query = '') {}
  static file(p: string): Uri {
    return new Uri('file', p);
  }
  static from(c: { scheme: string; path: string; query?: string }): Uri {
    return new Uri(c.scheme, c.path, c.query ?? '');
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, [base.fsPath, ...parts].join('/').replace(/\/+/g, '/'));
  }
  get path(): string {
    return this.fsPath;
  }
  toString(): string {
    return `${this.scheme}://${this.fsPath}` + (this.query ? `?${this.query}` : '');
  }
}

// ---------------------------------------------------------------- records

export interface FakeWebview {
  options: unknown;
  html: string;
  cspSource: string;
  posted: unknown[];
  asWebviewUri(u: Uri): Uri;
  postMessage(m: unknown): Promise<boolean>;
  onDidReceiveMessage(l: Listener<unknown>): Disposable;
  /** Test helper: deliver a message as if the webview script posted it. */
  receive(m: unknown): void;
}

export interface FakeWebviewView {
  webview: FakeWebview;
  visible: boolean;
  show(preserveFocus?: boolean): void;
  onDidDispose(l: Listener<void>): Disposable;
  onDidChangeVisibility(l: Listener<void>): Disposable;
  /** Test helper: hide or show the view as VS Code does. */
  setVisible(visible: boolean): void;
}

export class ThemeIcon {
  constructor(readonly id: string) {}
}

/** A quick pick built with `createQuickPick`; the test plays the person. */
export class ThemeColor {
  constructor(readonly id: string) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

/** window.createStatusBarItem: what it shows and whether it is shown. */
export class FakeStatusBarItem {
  name = '';
  text = '';
  tooltip: string | undefined;
  command: string | undefined;
  backgroundColor: ThemeColor | undefined;
  accessibilityInformation: unknown;
  visible = false;
  disposed = false;
  constructor(readonly id: string, readonly alignment: StatusBarAlignment, readonly priority?: number) {}
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
  }
  dispose(): void {
    this.visible = false;
    this.disposed = true;
  }
}

export class FakeQuickPick<T extends { label: string }> {
  items: readonly T[] = [];
  selectedItems: readonly T[] = [];
  /** The focused item: what Enter accepts (VS Code focuses the first item unless told otherwise). */
  activeItems: readonly T[] = [];
  title: string | undefined;
  placeholder: string | undefined;
  busy = false;
  matchOnDescription = false;
  matchOnDetail = false;
  shown = false;
  disposed = false;
  private readonly acceptEmitter = new EventEmitter<void>();
  private readonly buttonEmitter = new EventEmitter<{ item: T; button: unknown }>();
  private readonly hideEmitter = new EventEmitter<void>();
  readonly onDidAccept = this.acceptEmitter.event;
  readonly onDidTriggerItemButton = this.buttonEmitter.event;
  readonly onDidHide = this.hideEmitter.event;
  show(): void {
    this.shown = true;
  }
  hide(): void {
    if (!this.shown) return;
    this.shown = false;
    this.hideEmitter.fire();
  }
  dispose(): void {
    this.disposed = true;
  }
  /** Test helper: the item whose label is `label`. */
  item(label: string): T {
    const found = this.items.find((i) => i.label === label);
    if (!found) throw new Error(`no quick pick item ${label}; items: ${this.items.map((i) => i.label).join(', ')}`);
    return found;
  }
  /** Test helper: choose the item labelled `label` (Enter on it). */
  accept(label: string): void {
    this.selectedItems = [this.item(label)];
    this.acceptEmitter.fire();
  }
  /** Test helper: Enter as it is pressed, on whatever item has the focus (typed ahead, or without looking). */
  acceptFocused(): void {
    const focused = this.activeItems.length ? this.activeItems : this.items.slice(0, 1);
    this.selectedItems = focused.slice(0, 1);
    this.acceptEmitter.fire();
  }
  /** Test helper: click the first button of the item labelled `label`. */
  triggerButton(label: string): void {
    const item = this.item(label) as T & { buttons?: unknown[] };
    this.buttonEmitter.fire({ item, button: item.buttons?.[0] });
  }
}

export class Position {
  constructor(readonly line: number, readonly character: number) {}
}

export class Selection {
  constructor(readonly start: Position, readonly end: Position) {}
  get isEmpty(): boolean {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
}

/** A text document held as lines; `getText(range)` as VS Code computes it. */
export class FakeDocument {
  constructor(readonly uri: Uri, public text: string, readonly languageId: string) {}
  getText(range?: Selection): string {
    if (!range) return this.text;
    const offset = (p: Position) => {
      const lines = this.text.split('\n');
      return lines.slice(0, p.line).reduce((n, l) => n + l.length + 1, 0) + p.character;
    };
    return this.text.slice(offset(range.start), offset(range.end));
  }
}

/** An editor whose `edit` applies replacements to its document and records them. */
export class FakeEditor {
  readonly edits: { selection: Selection; text: string }[] = [];
  selections: Selection[];
  constructor(readonly document: FakeDocument, public selection: Selection) {
    this.selections = [selection];
  }
  async edit(callback: (builder: { replace(s: Selection, t: string): void; insert(p: Position, t: string): void }) => void): Promise<boolean> {
    callback({
      replace: (selection, text) => this.edits.push({ selection, text }),
      insert: (p, text) => this.edits.push({ selection: new Selection(p, p), text }),
    });
    return true;
  }
}

export const mock = {
  commands: new Map<string, (...args: any[]) => any>(),
  executed: [] as { command: string; args: unknown[] }[],
  viewProviders: new Map<string, { provider: any; options: unknown }>(),
  errorMessages: [] as { message: string; items: string[] }[],
  statusBarItems: [] as FakeStatusBarItem[],
  /** languages.registerCodeLensProvider. */
  codeLensProviders: [] as { selector: unknown; provider: any }[],
  infoMessages: [] as { message: string; items: string[] }[],
  /** What showErrorMessage/showInformationMessage resolve to. */
  nextChoice: undefined as string | undefined,
  config: new Map<string, unknown>(),
  outputChannels: [] as { name: string; lines: string[]; shown: number }[],
  workspaceFolder: '/tmp/mino-workspace' as string | undefined,
  inputBoxValue: undefined as string | undefined,
  clipboard: '',
  activeTextEditor: undefined as FakeEditor | undefined,
  /** Workspace files (absolute path → content) for findFiles / fs. */
  files: new Map<string, string>(),
  /** What showQuickPick resolves to: the labels to choose. */
  quickPickChoice: undefined as string[] | undefined,
  quickPickItems: [] as { label: string }[],
  /** Every `setContext` key and value, in order. */
  contextKeys: [] as [string, unknown][],
  quickPicks: [] as FakeQuickPick<any>[],
  warningMessages: [] as { message: string; options: any; items: any[] }[],
  /** The title of the item showWarningMessage resolves to (undefined: dismissed). */
  warningChoice: undefined as string | undefined,
  inputBoxOptions: [] as any[],
  /** TextDocumentContentProviders by scheme (workspace.registerTextDocumentContentProvider). */
  contentProviders: new Map<string, { provideTextDocumentContent(uri: Uri): string | Promise<string> }>(),
  /** Documents shown with window.showTextDocument, with their options. */
  shownDocuments: [] as { document: FakeDocument; options: unknown }[],
  /** Listeners of workspace.onDidChangeConfiguration. */
  configListeners: new Set<Listener<{ affectsConfiguration(section: string): boolean }>>(),
  /** Test helper: set settings as the Settings editor does, then fire onDidChangeConfiguration for them. */
  changeConfig(values: Record<string, unknown>): void {
    for (const [key, value] of Object.entries(values)) this.config.set(key, value);
    const keys = Object.keys(values);
    const event = { affectsConfiguration: (section: string) => keys.some((k) => k === section || k.startsWith(section + '.')) };
    for (const l of [...this.configListeners]) l(event);
  },
  reset(): void {
    this.commands.clear();
    this.executed.length = 0;
    this.viewProviders.clear();
    this.errorMessages.length = 0;
    this.statusBarItems.length = 0;
    this.codeLensProviders.length = 0;
    this.infoMessages.length = 0;
    this.nextChoice = undefined;
    this.config.clear();
    this.outputChannels.length = 0;
    this.workspaceFolder = '/tmp/mino-workspace';
    this.inputBoxValue = undefined;
    this.clipboard = '';
    this.activeTextEditor = undefined;
    this.files.clear();
    this.quickPickChoice = undefined;
    this.quickPickItems = [];
    this.contextKeys.length = 0;
    this.quickPicks.length = 0;
    this.warningMessages.length = 0;
    this.warningChoice = undefined;
    this.inputBoxOptions.length = 0;
    this.contentProviders.clear();
    this.shownDocuments.length = 0;
    this.configListeners.clear();
  },
};

export interface FakeWebviewOptions {
  cspSource?: string;
  asWebviewUri?: (u: Uri) => { toString(): string };
  /** Called for every message the host posts (after recording it). */
  onPost?: (m: unknown) => void;
}

export function createFakeWebviewView(opts: FakeWebviewOptions = {}): FakeWebviewView {
  const receivers = new Set<Listener<unknown>>();
  const webview: FakeWebview = {
    options: undefined,
    html: '',
    cspSource: opts.cspSource ?? 'vscode-webview://fake',
    posted: [],
    asWebviewUri: (opts.asWebviewUri as FakeWebview['asWebviewUri']) ?? ((u: Uri) => new Uri('vscode-webview', u.fsPath)),
    postMessage: async (m: unknown) => {
      webview.posted.push(m);
      opts.onPost?.(m);
      return true;
    },
    onDidReceiveMessage: (l) => {
      receivers.add(l);
      return { dispose: () => receivers.delete(l) };
    },
    receive: (m) => {
      for (const l of receivers) l(m);
    },
  };
  const visibility = new EventEmitter<void>();
  const view: FakeWebviewView = {
    webview,
    visible: true,
    show: () => undefined,
    onDidDispose: () => ({ dispose: () => undefined }),
    onDidChangeVisibility: visibility.event,
    setVisible: (visible) => {
      view.visible = visible;
      visibility.fire();
    },
  };
  return view;
}

// ---------------------------------------------------------------- namespaces

export const commands = {
  registerCommand(id: string, fn: (...args: any[]) => any): Disposable {
    if (mock.commands.has(id)) throw new Error(`command ${id} already registered`);
    mock.commands.set(id, fn);
    return { dispose: () => mock.commands.delete(id) };
  },
  async executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    mock.executed.push({ command, args });
    if (command === 'setContext') mock.contextKeys.push([args[0] as string, args[1]]);
    const fn = mock.commands.get(command);
    return fn ? fn(...args) : undefined;
  },
};

function makeOutputChannel(name: string) {
  const record = { name, lines: [] as string[], shown: 0 };
  mock.outputChannels.push(record);
  const log = (m: string) => record.lines.push(m);
  return {
    name,
    logLevel: 2,
    onDidChangeLogLevel: () => ({ dispose: () => undefined }),
    append: log,
    appendLine: log,
    replace: log,
    clear: () => (record.lines.length = 0),
    show: () => void record.shown++,
    hide: () => undefined,
    dispose: () => undefined,
    trace: log,
    debug: log,
    info: log,
    warn: log,
    error: (m: string | Error) => log(String(m)),
  };
}

export const window = {
  createOutputChannel: (name: string) => makeOutputChannel(name),
  createStatusBarItem(id: string, alignment: StatusBarAlignment, priority?: number): FakeStatusBarItem {
    const item = new FakeStatusBarItem(id, alignment, priority);
    mock.statusBarItems.push(item);
    return item;
  },
  registerWebviewViewProvider(viewType: string, provider: any, options?: unknown): Disposable {
    mock.viewProviders.set(viewType, { provider, options });
    return { dispose: () => mock.viewProviders.delete(viewType) };
  },
  async showErrorMessage(message: string, ...items: string[]): Promise<string | undefined> {
    mock.errorMessages.push({ message, items });
    return mock.nextChoice;
  },
  async showInformationMessage(message: string, ...items: string[]): Promise<string | undefined> {
    mock.infoMessages.push({ message, items });
    return mock.nextChoice;
  },
  async showInputBox(options?: unknown): Promise<string | undefined> {
    mock.inputBoxOptions.push(options);
    return mock.inputBoxValue;
  },
  async showWarningMessage(message: string, ...rest: any[]): Promise<any> {
    const options = rest.length && typeof rest[0] === 'object' && !('title' in rest[0]) ? rest.shift() : undefined;
    mock.warningMessages.push({ message, options, items: rest });
    return rest.find((i) => (typeof i === 'string' ? i : i.title) === mock.warningChoice);
  },
  createQuickPick<T extends { label: string }>(): FakeQuickPick<T> {
    const pick = new FakeQuickPick<T>();
    mock.quickPicks.push(pick);
    return pick;
  },
  get activeTextEditor() {
    return mock.activeTextEditor;
  },
  async showTextDocument(document: FakeDocument, options?: unknown): Promise<unknown> {
    mock.shownDocuments.push({ document, options });
    return {};
  },
  async showQuickPick<T extends { label: string }>(items: T[]): Promise<T[] | undefined> {
    mock.quickPickItems = items;
    const choice = mock.quickPickChoice;
    return choice ? items.filter((i) => choice.includes(i.label)) : undefined;
  },
};

export const env = {
  clipboard: {
    async writeText(text: string): Promise<void> {
      mock.clipboard = text;
    },
    async readText(): Promise<string> {
      return mock.clipboard;
    },
  },
};

function relative(uri: Uri): string {
  const root = mock.workspaceFolder;
  return root && uri.fsPath.startsWith(root + '/') ? uri.fsPath.slice(root.length + 1) : uri.fsPath;
}

export const workspace = {
  get workspaceFolders() {
    return mock.workspaceFolder ? [{ uri: Uri.file(mock.workspaceFolder), name: 'ws', index: 0 }] : undefined;
  },
  getConfiguration(section: string) {
    return {
      get: <T>(key: string, def?: T): T | undefined =>
        (mock.config.has(`${section}.${key}`) ? mock.config.get(`${section}.${key}`) : def) as T | undefined,
    };
  },
  onDidChangeConfiguration: (l: Listener<{ affectsConfiguration(section: string): boolean }>): Disposable => {
    mock.configListeners.add(l);
    return { dispose: () => mock.configListeners.delete(l) };
  },
  registerTextDocumentContentProvider(scheme: string, provider: { provideTextDocumentContent(uri: Uri): string | Promise<string> }): Disposable {
    mock.contentProviders.set(scheme, provider);
    return { dispose: () => mock.contentProviders.delete(scheme) };
  },
  /** A document of a registered scheme, read from its provider (as VS Code does: read-only). */
  async openTextDocument(uri: Uri): Promise<FakeDocument> {
    const provider = mock.contentProviders.get(uri.scheme);
    if (!provider) throw new Error(`no provider for ${uri.scheme}`);
    return new FakeDocument(uri, await provider.provideTextDocumentContent(uri), 'plaintext');
  },
  asRelativePath: (uri: Uri) => relative(uri),
  async findFiles(): Promise<Uri[]> {
    return [...mock.files.keys()].map((p) => Uri.file(p));
  },
  fs: {
    async stat(uri: Uri) {
      const text = mock.files.get(uri.fsPath);
      if (text === undefined) throw new Error(`ENOENT ${uri.fsPath}`);
      return { size: Buffer.byteLength(text) };
    },
    async readFile(uri: Uri): Promise<Uint8Array> {
      const text = mock.files.get(uri.fsPath);
      if (text === undefined) throw new Error(`ENOENT ${uri.fsPath}`);
      return new TextEncoder().encode(text);
    },
  },
};

export class Range {
  constructor(readonly startLine: number, readonly startCharacter: number, readonly endLine: number, readonly endCharacter: number) {}
}

export class CodeLens {
  constructor(readonly range: Range, readonly command?: { title: string; command: string; arguments?: unknown[]; tooltip?: string }) {}
}

export const languages = {
  registerCodeLensProvider(selector: unknown, provider: { provideCodeLenses(doc: FakeDocument): CodeLens[] | Promise<CodeLens[]>; onDidChangeCodeLenses?: unknown }): Disposable {
    mock.codeLensProviders.push({ selector, provider });
    return { dispose: () => mock.codeLensProviders.splice(mock.codeLensProviders.findIndex((p) => p.provider === provider), 1) };
  },
  async setTextDocumentLanguage(document: FakeDocument, languageId: string): Promise<FakeDocument> {
    return new FakeDocument(document.uri, document.text, languageId);
  },
};

export function createExtensionContext() {
  const secrets = new Map<string, string>();
  return {
    subscriptions: [] as Disposable[],
    extensionUri: Uri.file('/ext/mino'),
    secrets: {
      get: async (k: string) => secrets.get(k),
      store: async (k: string, v: string) => void secrets.set(k, v),
      delete: async (k: string) => void secrets.delete(k),
      onDidChange: () => ({ dispose: () => undefined }),
    },
    secretValues: secrets,
  };
}
