#!/usr/bin/env bash
# Install a pinned OpenAI Codex CLI into .tools/codex/ of this project, once.
#
# The host tests (tests/test_hosts_codex_cli.py) read back the MCP server we write with the
# real `codex mcp list/get --json`. The CLI is cached: when .tools/codex already holds this
# exact version, nothing is downloaded. Prints the binary's path on stdout (last line).
# Override the pin with CODEX_CLI_VERSION=x.y.z (e.g. to test a newer release).
set -euo pipefail

VERSION="${CODEX_CLI_VERSION:-0.171.0}"   # `npm view @openai/codex version` when pinned
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PREFIX="$ROOT/.tools/codex"
BIN="$PREFIX/node_modules/.bin/codex"
STAMP="$PREFIX/node_modules/@openai/codex/package.json"

installed_version() {
  [ -f "$STAMP" ] || return 1
  # package.json's "version"; node is present whenever npm is.
  node -e 'process.stdout.write(require(process.argv[1]).version)' "$STAMP"
}

if [ -x "$BIN" ] && [ "$(installed_version || true)" = "$VERSION" ]; then
  echo "codex $VERSION already installed" >&2
  echo "$BIN"
  exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
  echo "npm is required to install the Codex CLI (install Node.js >= 16)" >&2
  exit 1
fi

mkdir -p "$PREFIX"
# A private package.json keeps npm from walking up into anything else.
[ -f "$PREFIX/package.json" ] || echo '{"private": true}' > "$PREFIX/package.json"
echo "installing @openai/codex@$VERSION into $PREFIX" >&2
npm install --prefix "$PREFIX" --no-audit --no-fund --no-save --loglevel=error \
  "@openai/codex@$VERSION" >&2

if [ ! -x "$BIN" ]; then
  echo "the Codex CLI was not installed at $BIN" >&2
  exit 1
fi
echo "$BIN"
