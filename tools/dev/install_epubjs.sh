#!/usr/bin/env bash
# Install pinned epub.js and jsdom into .tools/epubjs/ of this project, once.
#
# The CFI tests (tests/integration/test_epubjs_cfi.py) resolve the EPUB CFIs we write with
# epub.js itself, the library most web reading systems run, in a jsdom XHTML document: an
# implementation independent of ours. Cached: nothing is downloaded when .tools/epubjs already
# holds these versions. EPUBJS_PREFIX overrides the folder. Prints the node_modules path (last line).
set -euo pipefail

EPUBJS="${EPUBJS_VERSION:-0.3.93}"   # `npm view epubjs version` when pinned
JSDOM="${JSDOM_VERSION:-24.1.3}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PREFIX="${EPUBJS_PREFIX:-$ROOT/.tools/epubjs}"
MODULES="$PREFIX/node_modules"

installed() {
  node -e 'process.stdout.write(require(process.argv[1] + "/epubjs/package.json").version + " " +
                                require(process.argv[1] + "/jsdom/package.json").version)' "$MODULES" 2>/dev/null
}

if [ "$(installed || true)" = "$EPUBJS $JSDOM" ]; then
  echo "epubjs $EPUBJS and jsdom $JSDOM already installed" >&2
  echo "$MODULES"
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is required to install epub.js (install Node.js >= 18)" >&2
  exit 1
fi
mkdir -p "$PREFIX"
[ -f "$PREFIX/package.json" ] || echo '{"private": true}' > "$PREFIX/package.json"
echo "installing epubjs@$EPUBJS and jsdom@$JSDOM into $PREFIX" >&2
npm install --prefix "$PREFIX" --no-audit --no-fund --no-save --loglevel=error "epubjs@$EPUBJS" "jsdom@$JSDOM" >&2
if [ "$(installed || true)" != "$EPUBJS $JSDOM" ]; then
  echo "epub.js was not installed in $MODULES" >&2
  exit 1
fi
echo "$MODULES"
