import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const __dirname = path.dirname(fileURLToPath(import.meta.url));

export default defineConfig({
  resolve: {
    alias: {
      // The extension host glue is tested against mocks (no VS Code can be downloaded here).
      vscode: path.resolve(__dirname, 'test/mocks/vscode.ts'),
      'vscode-languageclient/node': path.resolve(__dirname, 'test/mocks/languageclient.ts'),
    },
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60000,
    hookTimeout: 60000,
    // The protocol tests start processes; keep files from competing for the mock model.
    fileParallelism: false,
    pool: 'forks',
  },
});
