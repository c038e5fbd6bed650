#!/usr/bin/env bash
# The real-VS-Code suite: installs code-server once (install-code-server.sh,
# cached by version), makes sure Debian's chromium is there, then runs
# test/vscode-real.test.mjs (or, with --bench, bench.mjs) against the packaged
# vscode-extension/mino-vscode.vsix, target/debug/mino-server and
# target/debug/mino-mock-model. Screenshots land in test-output/.
# Env: MINO_VSIX, MINO_SERVER_BIN, MINO_MOCK_BIN, CHROMIUM_BIN, CODE_SERVER_VERSION, MINO_TEST_CACHE.
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd ../.. && pwd)
mkdir -p test-output

for f in "${MINO_VSIX:-$root/vscode-extension/mino-vscode.vsix}" "${MINO_SERVER_BIN:-$root/target/debug/mino-server}" \
  "${MINO_MOCK_BIN:-$root/target/debug/mino-mock-model}"; do
  if [ ! -e "$f" ]; then
    echo "vscode-real: $f is missing: run 'scripts/test vscode-real' (it builds the binaries and packages the extension)" >&2
    echo "vscode-real: 0 passed, 1 failed"
    exit 1
  fi
done

bash "$root/vscode-extension/scripts/ensure-chromium.sh" >&2
CODE_SERVER_DIR=$(bash ./install-code-server.sh | tail -n 1)
export CODE_SERVER_DIR
echo "code-server $(basename "$CODE_SERVER_DIR") at $CODE_SERVER_DIR (first install took $(cat "$CODE_SERVER_DIR/.install-seconds" 2>/dev/null || echo '?') s)"

if [ "${1:-}" = "--bench" ]; then
  exec node bench.mjs
fi

set +e
node --test --test-concurrency=1 --test-timeout=600000 \
  --test-reporter=tap --test-reporter-destination=stdout \
  --test-reporter=spec --test-reporter-destination=test-output/spec.txt \
  test/vscode-real.test.mjs | tee test-output/results.tap
rc=${PIPESTATUS[0]}
set -e
pass=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' test-output/results.tap | tail -n 1)
fail=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' test-output/results.tap | tail -n 1)
[ "$rc" = 0 ] || [ "${fail:-0}" != 0 ] || fail=1
echo "vscode-real: ${pass:-0} passed, ${fail:-0} failed"
exit "$rc"
