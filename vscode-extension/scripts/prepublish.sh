#!/usr/bin/env bash
# vsce package's prepublish step: type-check, then the production bundle.
# MINO_TYPECHECKED=1: the caller ran tsc over the same sources already
# (scripts/test's tidy suite does), so only the bundle is built.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${MINO_TYPECHECKED:-0}" != "1" ]; then
  npx tsc -p . --noEmit
fi
node scripts/build.mjs --production
