// Markdown for the chat webview: markdown-it (raw HTML off, so model text
// never becomes markup), highlight.js for fenced code, and DOMPurify over the
// result as a second line of defence. Bundled into dist/webview.js by
// scripts/build.mjs; nothing is loaded from the network.
import MarkdownIt, { type Token } from 'markdown-it';
import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/common';

const md = new MarkdownIt({
  // Model text is text: `<script>` or `<img onerror=…>` shows as written.
  html: false,
  linkify: false,
  typographer: false,
});
// Images would be remote loads the CSP refuses; a link to the image is shown instead.
md.disable('image');

/** Highlighted HTML of `code` in `lang`, or '' when the language is not known. */
function highlight(code: string, lang: string): string {
  if (!lang || !hljs.getLanguage(lang)) return '';
  try {
    return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
  } catch {
    return '';
  }
}

// A fenced block with its language and the Copy / Insert buttons (handled by
// delegation in codeBlocks.ts, which reads the code's text back from the DOM).
md.renderer.rules.fence = (tokens, idx) => {
  const token = tokens[idx];
  const info = token.info ? md.utils.unescapeAll(token.info).trim() : '';
  const lang = info.split(/\s+/)[0] || '';
  const body = highlight(token.content, lang) || md.utils.escapeHtml(token.content);
  const langLabel = md.utils.escapeHtml(lang || 'text');
  const langClass = lang ? ' language-' + md.utils.escapeHtml(lang.replace(/[^\w-]/g, '')) : '';
  return (
    '<div class="code-block">' +
    '<div class="code-head"><span class="code-lang">' + langLabel + '</span>' +
    '<span class="code-actions">' +
    '<button type="button" class="code-copy" aria-label="Copy code">Copy</button>' +
    '<button type="button" class="code-insert" aria-label="Insert code at the cursor">Insert</button>' +
    '</span></div>' +
    '<pre><code class="hljs' + langClass + '">' + body + '</code></pre></div>\n'
  );
};
md.renderer.rules.code_block = md.renderer.rules.fence;

// Tables scroll sideways in their own box instead of squeezing the panel.
md.renderer.rules.table_open = () => '<div class="table-wrap"><table>\n';
md.renderer.rules.table_close = () => '</table></div>\n';

// Column alignment as a class: the CSP refuses inline style attributes.
md.core.ruler.push('mino_align_classes', (state) => {
  const visit = (tokens: Token[]) => {
    for (const t of tokens) {
      if ((t.type === 'th_open' || t.type === 'td_open') && t.attrs) {
        const style = String(t.attrGet('style') || '');
        t.attrs = t.attrs.filter((a) => a[0] !== 'style');
        const m = /text-align:\s*(left|right|center)/.exec(style);
        if (m) t.attrJoin('class', 'align-' + m[1]);
      }
      if (t.children) visit(t.children);
    }
  };
  visit(state.tokens);
});

const PURIFY_CONFIG = {
  FORBID_TAGS: ['style', 'form', 'input', 'textarea', 'select', 'img', 'iframe', 'object', 'embed'],
  FORBID_ATTR: ['style'],
};

const PURIFY_TO_FRAGMENT = { ...PURIFY_CONFIG, RETURN_DOM_FRAGMENT: true as const };

/** `source` rendered and sanitised, as nodes ready to insert (parsed once). */
export function renderMarkdown(source: string): DocumentFragment {
  // Trimmed: the newline after the last block would be text of its own.
  return DOMPurify.sanitize(md.render(source).trim(), PURIFY_TO_FRAGMENT);
}

/**
 * Where a streamed message may be cut so that what comes before it renders
 * the same on its own: the start of a line that follows a blank line, outside
 * a code fence, and that does not continue a list or an indented block.
 * Scans whole lines from `scan.pos`; `scan` carries the state between calls.
 */
export interface SplitScan {
  pos: number;
  inFence: string | null;
  prevBlank: boolean;
  safe: number;
}

export function newSplitScan(): SplitScan {
  return { pos: 0, inFence: null, prevBlank: false, safe: 0 };
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const CONTINUES = /^(\s|[-*+] |\d+[.)] |>)/;

/** Advances `scan` over the complete lines of `source`; returns the last safe cut. */
export function advanceSplitScan(scan: SplitScan, source: string): number {
  for (;;) {
    const end = source.indexOf('\n', scan.pos);
    if (end < 0) break;
    const line = source.slice(scan.pos, end);
    const fence = FENCE.exec(line);
    if (scan.inFence) {
      if (fence && fence[1][0] === scan.inFence[0] && fence[1].length >= scan.inFence.length && !line.slice(fence[0].length).trim()) {
        scan.inFence = null;
      }
      scan.prevBlank = false;
    } else {
      const blank = line.trim() === '';
      if (!blank && scan.prevBlank && !CONTINUES.test(line)) scan.safe = scan.pos;
      if (fence) scan.inFence = fence[1];
      scan.prevBlank = blank;
    }
    scan.pos = end + 1;
  }
  return scan.safe;
}
