// How sizes, token counts and long values are written for the person.
import type { TokenUsage } from '../src/generated/protocol';

export function formatBytes(n: unknown): string {
  if (typeof n !== 'number') return String(n);
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return n / (1024 * 1024) + ' MiB';
  if (n >= 1024 && n % 1024 === 0) return n / 1024 + ' KiB';
  return n + ' bytes';
}

/** `s` on one line (newlines and tabs shown, not kept), at most `max` characters. */
export function oneLine(s: unknown, max: number): string {
  const flat = String(s).replace(/\n/g, '\\n').replace(/\t/g, ' ');
  return flat.length > max ? flat.slice(0, max - 1) + '…' : flat;
}

const numberFormat = new Intl.NumberFormat('en-US');

/** `1,234 tokens (1,000 in, 234 out)`; empty without usage. */
export function formatUsage(u: TokenUsage | null | undefined): string {
  if (!u || typeof u.totalTokens !== 'number') return '';
  const n = (x: number) => numberFormat.format(x);
  let detail = n(u.inputTokens) + ' in';
  if (typeof u.cachedInputTokens === 'number' && u.cachedInputTokens > 0) detail += ' (' + n(u.cachedInputTokens) + ' cached)';
  detail += ', ' + n(u.outputTokens) + ' out';
  return n(u.totalTokens) + ' tokens (' + detail + ')';
}

/** An image's size, rounded: `12.5 KiB`. */
export function imageSize(n: number): string {
  if (n < 1024) return n + ' B';
  if (n < 1024 * 1024) return (n / 1024).toFixed(1).replace(/\.0$/, '') + ' KiB';
  return (n / (1024 * 1024)).toFixed(1).replace(/\.0$/, '') + ' MiB';
}
