// Bundles the extension with esbuild:
//   src/extension.ts -> dist/extension.js  (the host, CommonJS; `vscode` stays external)
//   webview/main.ts  -> dist/webview.js    (the webview's modules, with markdown-it, DOMPurify, highlight.js)
//   media/main.css   -> dist/webview.css
// `--production` minifies and drops source maps (what `npm run package` ships).
import { build } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const production = process.argv.includes('--production');
const common = {
  bundle: true,
  minify: production,
  sourcemap: production ? false : 'linked',
  legalComments: production ? 'linked' : 'inline',
  logLevel: 'warning',
  absWorkingDir: root,
};

await Promise.all([
  build({
    ...common,
    entryPoints: ['src/extension.ts'],
    outfile: 'dist/extension.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['vscode'],
  }),
  build({
    ...common,
    entryPoints: { webview: 'webview/main.ts' },
    tsconfig: 'tsconfig.webview.json',
    outdir: 'dist',
    platform: 'browser',
    format: 'iife',
    // VS Code 1.91's webviews run Chromium 122.
    target: 'chrome122',
  }),
  build({
    ...common,
    entryPoints: { webview: 'media/main.css' },
    outdir: 'dist',
    target: 'chrome122',
  }),
]);
