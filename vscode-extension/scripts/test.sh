#!/usr/bin/env bash
# npm test: every test of the extension.
#   1. protocol layer against the real mino-server and mino-mock-model binaries
#   2. the webview in Debian's chromium (installed here when missing)
#   3. the extension host glue against a mocked `vscode` module
# Env: MINO_SERVER_BIN, MINO_MOCK_BIN (default ../target/debug/...), CHROMIUM_BIN,
#      MINO_SKIP_BUILD=1 (do not run cargo for missing binaries),
#      MINO_TYPECHECKED=1 (the caller ran tsc over tsconfig.test.json already:
#      scripts/test's tidy suite does).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p test-output

export MINO_SERVER_BIN="${MINO_SERVER_BIN:-../target/debug/mino-server}"
export MINO_MOCK_BIN="${MINO_MOCK_BIN:-../target/debug/mino-mock-model}"
if { [ ! -x "$MINO_SERVER_BIN" ] || [ ! -x "$MINO_MOCK_BIN" ]; } && [ "${MINO_SKIP_BUILD:-0}" != "1" ]; then
  if command -v cargo >/dev/null 2>&1 && [ -f ../Cargo.toml ]; then
    echo "test.sh: building mino-server and mino-mock-model" >&2
    (cd .. && cargo build -p mino-server -p mino-mock-model)
  fi
fi

if [ "${MINO_SKIP_WEBVIEW:-0}" != "1" ]; then
  set +e
  bash scripts/ensure-chromium.sh
  rc=$?
  set -e
  if [ "$rc" != "0" ]; then
    echo "test.sh: SKIPPING the webview tests: chromium is not installed and could not be installed (apt-get install -y chromium)" >&2
    export MINO_SKIP_WEBVIEW=1
  fi
fi

if [ "${MINO_TYPECHECKED:-0}" != "1" ]; then
  npx tsc -p tsconfig.test.json
fi
set +e
npx vitest run --reporter=default --reporter=json --outputFile.json=test-output/vitest.json "$@"
rc=$?
set -e
node -e '
const r = require("./test-output/vitest.json");
const skipped = r.numPendingTests + (r.numTodoTests || 0);
console.log(`vscode-extension: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped`);
' || true
exit $rc
