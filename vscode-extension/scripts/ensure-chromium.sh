#!/usr/bin/env bash
# Makes sure Debian's chromium is installed for the webview tests.
# Prints MINO_SKIP_WEBVIEW=1 guidance and exits 3 only when it cannot be installed.
set -u
CHROMIUM_BIN="${CHROMIUM_BIN:-/usr/bin/chromium}"
if [ -x "$CHROMIUM_BIN" ]; then
  exit 0
fi
echo "ensure-chromium: $CHROMIUM_BIN not found; installing Debian's chromium" >&2
SUDO=""
if [ "$(id -u)" != "0" ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  else
    echo "ensure-chromium: not root and no passwordless sudo; cannot install chromium" >&2
    exit 3
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: apt-get not available; cannot install chromium" >&2
  exit 3
fi
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y --no-install-recommends chromium >/dev/null 2>&1; then
  $SUDO apt-get update >/dev/null 2>&1 || true
  if ! $SUDO apt-get install -y --no-install-recommends chromium; then
    echo "ensure-chromium: apt-get install chromium failed" >&2
    exit 3
  fi
fi
if [ -x "$CHROMIUM_BIN" ]; then
  echo "ensure-chromium: installed $("$CHROMIUM_BIN" --version 2>/dev/null | head -1)" >&2
  exit 0
fi
echo "ensure-chromium: chromium installed but $CHROMIUM_BIN is missing" >&2
exit 3
