#!/usr/bin/env bash
# Installs code-server (the browser build of VS Code) for the real-VS-Code
# suite, once per version, into a cache shared by every checkout:
#   ${MINO_TEST_CACHE:-~/.cache/mino-test}/code-server/<version>
# Prints that directory on stdout as its last line; progress goes to stderr.
#
# Why not `npm install code-server`: its postinstall refuses to run as root
# without unsafe-perm, and @vscode/ripgrep's postinstall downloads a binary
# from GitHub. So: unpack the package, install its dependencies and VS Code's
# with --ignore-scripts, rebuild only the native modules, and put Debian's
# `rg` where @vscode/ripgrep expects its binary. The native modules need a C++
# toolchain and gssapi.h (Debian's libkrb5-dev), installed here when missing.
set -euo pipefail

version="${CODE_SERVER_VERSION:-4.100.3}"
cache="${MINO_TEST_CACHE:-$HOME/.cache/mino-test}/code-server"
dest="$cache/$version"
if [ -f "$dest/.installed" ]; then
  echo "$dest"
  exit 0
fi

log() { printf 'install-code-server: %s\n' "$*" >&2; }

apt_install() {
  log "installing Debian packages: $*"
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@") >&2
  else
    (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@") >&2
  fi
}

missing=()
[ -f /usr/include/gssapi/gssapi.h ] || missing+=(libkrb5-dev)
command -v rg >/dev/null 2>&1 || missing+=(ripgrep)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" != 20 ]; then
  log "code-server $version runs on Node 20; this is Node $node_major (set CODE_SERVER_VERSION to one built for it)"
  exit 1
fi

started=$(date +%s)
mkdir -p "$cache"
work=$(mktemp -d "$cache/.install-$version.XXXXXX")
trap 'rm -rf "$work"' EXIT
npm_quiet=(--no-audit --no-fund --loglevel=error)
# node-pty's install script runs `npx node-gyp`, which would stop to ask.
export npm_config_yes=true

log "downloading code-server@$version"
(cd "$work" && npm pack "code-server@$version" "${npm_quiet[@]}" >/dev/null)
tar -xzf "$work/code-server-$version.tgz" -C "$work"
pkg="$work/package"

log "installing its dependencies (scripts off)"
(cd "$pkg" && npm install --omit=dev --ignore-scripts "${npm_quiet[@]}") >&2
(cd "$pkg/lib/vscode" && npm install --omit=dev --ignore-scripts "${npm_quiet[@]}") >&2
(cd "$pkg/lib/vscode/extensions" && npm install --omit=dev --ignore-scripts "${npm_quiet[@]}") >&2

log "building the native modules"
(cd "$pkg" && npm rebuild argon2 "${npm_quiet[@]}") >&2
(cd "$pkg/lib/vscode" && npm rebuild kerberos node-pty @parcel/watcher @vscode/spdlog native-watchdog @vscode/deviceid "${npm_quiet[@]}") >&2

# What postinstall.sh would do, minus the downloads.
rgdir="$pkg/lib/vscode/node_modules/@vscode/ripgrep/bin"
mkdir -p "$rgdir"
ln -sf "$(command -v rg)" "$rgdir/rg"
ln -sfn node_modules "$pkg/lib/vscode/node_modules.asar"

rm -rf "$dest"
mv "$pkg" "$dest"
elapsed=$(( $(date +%s) - started ))
echo "$elapsed" > "$dest/.install-seconds"
touch "$dest/.installed"
log "installed code-server $version in ${elapsed}s at $dest"
echo "$dest"
