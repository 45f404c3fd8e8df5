#!/usr/bin/env bash
# Every library tool through the MCP Inspector CLI, over streamable HTTP, with a bearer token.
#
# Builds a small library (one PDF book, one EPUB book, from the test builders) in a temporary
# data dir, makes a random token and its SHA-256 digest (the token file holds only the digest),
# starts `book-agent serve @all --token-file ...` on 127.0.0.1, then calls tools/list and every
# tool with `npx @modelcontextprotocol/inspector --cli URL --transport http --header
# "Authorization: Bearer ..." --method tools/call ...`, each call's arguments taken from the
# previous answers (a search hit -> read_entry, locate_source -> read_source, ...). Last, it
# checks that a missing and a wrong token are refused (the Inspector's exit code 3).
# Loopback only; the server is stopped on exit. Prints one line per call and a closing
# "N passed, N failed" line; exits 1 when any call failed.
#
# Needs node/npx (the npm registry reaches the pinned Inspector: INSPECTOR_VERSION to change it)
# and the project's Python (PYTHON, default .venv/bin/python). The token appears on the
# Inspector's command line (--header), visible to this machine's process list for the few
# seconds of the run: it is made for this run and dies with its server.
set -euo pipefail

VERSION="${INSPECTOR_VERSION:-2.12.0}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
WORK="$(mktemp -d)"
SERVER_PID=""

cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

command -v npx >/dev/null || { echo "npx is required (Node.js)" >&2; exit 1; }

# 1. A library of two books, a token and the token file (its digest only).
PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" "$PY" - "$WORK" <<'PYEOF'
import hashlib, secrets, sys
from pathlib import Path
from book_agent import BookAgent
from tests.support.package_builder import build_package

work = Path(sys.argv[1])
with BookAgent(work / "data") as agent:
    agent.init(build_package(work / "packages" / "pdf-book", book_id="pdf-book", kind="pdf"))
    agent.init(build_package(work / "packages" / "epub-book", book_id="epub-book", kind="epub"))
token = secrets.token_urlsafe(32)
(work / "token").write_text(token)
(work / "tokens").write_text(hashlib.sha256(token.encode()).hexdigest() + "\n")
PYEOF
chmod 600 "$WORK/token"

# 2. The server, on loopback, with the token file.
PORT="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
URL="http://127.0.0.1:$PORT/mcp"
PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" "$PY" -m book_agent --data-dir "$WORK/data" serve @all \
  --host 127.0.0.1 --port "$PORT" --token-file "$WORK/tokens" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 150); do
  if "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
       "http://127.0.0.1:$PORT/health" 2>/dev/null; then
    break
  fi
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
  sleep 0.2
done
TOKEN="$(cat "$WORK/token")"

# 3. The Inspector (fetched once by npx, then cached).
inspector() {
  timeout 120 npx -y "@modelcontextprotocol/inspector@$VERSION" --cli "$URL" --transport http "$@"
}
echo "MCP Inspector $VERSION -> $URL (book-agent serve @all, --token-file)"

PASSED=0
FAILED=0
# field FILE EXPR: a value from a tools/call answer (EXPR over `d`, its structured content)
field() {
  "$PY" -c 'import json, sys
answer = json.load(open(sys.argv[1]))
d = answer.get("structuredContent") or json.loads(answer["content"][0]["text"])
print(json.dumps(eval(sys.argv[2], {"d": d})))' "$1" "$2"
}
# call NAME [--tool-arg k=v ...]: one tools/call with the token; the answer goes to $WORK/NAME.json
call() {
  local name="$1"; shift
  local code=0
  inspector --header "Authorization: Bearer $TOKEN" --method tools/call --tool-name "$name" "$@" \
    >"$WORK/$name.json" 2>"$WORK/$name.err" || code=$?
  local summary
  summary="$("$PY" -c 'import json, sys
try:
    a = json.load(open(sys.argv[1]))
except Exception as exc:
    print(f"no JSON answer ({exc})"); sys.exit()
d = a.get("structuredContent") or {}
kind = "image+" if any(c.get("type") == "image" for c in a.get("content", [])) else ""
print(("isError " if a.get("isError") else "ok ") + kind + "keys=" + ",".join(sorted(d)[:8]))' "$WORK/$name.json")"
  if [ "$code" -eq 0 ] && [[ "$summary" == ok* ]]; then
    PASSED=$((PASSED + 1)); printf '  %-14s exit %s  %s\n' "$name" "$code" "$summary"
  else
    FAILED=$((FAILED + 1)); printf '  %-14s exit %s  %s  FAILED: %s\n' "$name" "$code" "$summary" \
      "$(tail -c 300 "$WORK/$name.err")"
  fi
}

code=0
inspector --header "Authorization: Bearer $TOKEN" --method tools/list >"$WORK/tools.json" 2>"$WORK/tools.err" || code=$?
TOOLS="$("$PY" -c 'import json, sys; print(" ".join(sorted(t["name"] for t in json.load(open(sys.argv[1]))["tools"])))' \
  "$WORK/tools.json" 2>/dev/null || true)"
if [ "$code" -eq 0 ] && [ -n "$TOOLS" ]; then
  PASSED=$((PASSED + 1)); printf '  %-14s exit %s  %s\n' "tools/list" "$code" "$TOOLS"
else
  FAILED=$((FAILED + 1)); printf '  %-14s exit %s  FAILED\n' "tools/list" "$code"
fi

call list_books
call search --tool-arg query="diagram supply chain" --tool-arg top_k=4 --tool-arg 'books=["pdf-book"]'
HIT="$(field "$WORK/search.json" 'd["hits"][0]')"
BOOK="$(field "$WORK/search.json" 'd["hits"][0]["book_id"]' | tr -d '"')"
RECORD="$(field "$WORK/search.json" 'd["hits"][0]["record_id"]' | tr -d '"')"
PAGE="$(field "$WORK/search.json" 'd["hits"][0]["source_locator"]["page_index"]')"
call read_entry --tool-arg book_id="$BOOK" --tool-arg record_id="$RECORD"
call read_markdown --tool-arg book_id="$BOOK" --tool-arg record_id="$RECORD" --tool-arg context_chars=120
call get_skill --tool-arg book_id="$BOOK"
call locate_source --tool-arg book_id="$BOOK" --tool-arg "hit=$HIT"
LOCATOR="$(field "$WORK/locate_source.json" '{k: v for k, v in d.items() if k not in ("verification",)}')"
call read_source --tool-arg book_id="$BOOK" --tool-arg "locator=$LOCATOR" --tool-arg max_chars=400
call render_page --tool-arg book_id="$BOOK" --tool-arg page_index="$PAGE" --tool-arg dpi=72 --tool-arg include_image=true
call status --tool-arg book_id="$BOOK"

# 4. Refusals: no token, a wrong token (the Inspector exits 3: the server answered 401).
for how in "none" "wrong"; do
  code=0
  if [ "$how" = none ]; then
    inspector --method tools/list >/dev/null 2>"$WORK/denied.err" || code=$?
  else
    inspector --header "Authorization: Bearer not-$TOKEN" --method tools/list >/dev/null 2>"$WORK/denied.err" || code=$?
  fi
  if [ "$code" -eq 3 ]; then
    PASSED=$((PASSED + 1)); printf '  %-14s exit %s  refused (auth_required)\n' "token:$how" "$code"
  else
    FAILED=$((FAILED + 1)); printf '  %-14s exit %s  FAILED: expected exit 3\n' "token:$how" "$code"
  fi
done

if grep -q -- "$TOKEN" "$WORK/server.log"; then
  FAILED=$((FAILED + 1)); echo "  the token appears in the server log: FAILED"
fi
echo "inspector: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
