// npm run bench: bundles test/bench.ts (with test/browser.ts) and runs it in node.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
await build({
  absWorkingDir: root,
  entryPoints: ['test/bench.ts'],
  outfile: 'out/bench.cjs',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: ['playwright-core'],
  logLevel: 'warning',
});
const run = spawnSync(process.execPath, [join(root, 'out/bench.cjs')], { stdio: 'inherit', cwd: root });
process.exit(run.status ?? 1);
