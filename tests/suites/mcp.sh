#!/bin/bash
# tests/suites/mcp.sh — `fluebox mcp`, the sandbox as an MCP server on stdio
# (docs/mcp.md): tests/mcp/raw.mjs drives it with raw JSON-RPC lines (version
# negotiation, malformed and hostile input, a flood of calls, cancellation,
# the end of the connection), tests/mcp/sdk.mjs with the official MCP
# TypeScript SDK's client (@modelcontextprotocol/sdk from the npm registry,
# installed here into a cache directory) over its stdio transport: the tools,
# isolation through them, state across calls, nothing left after close.
# Runs with the normal build, again with the ASan/UBSan build (FB_ASAN; its
# reports go to files and a report is a failure), and as the unprivileged
# user fbtest. Prints ok/not ok lines.
# Environment: FB, FB_ASAN, T; MCP_SDK_VERSION (default below), MCP_SDK_DIR
# (a directory to install it into or find it in).
# timeout: 1200
set -u
cd "$(dirname "$0")/../.."
: "${FB:=$(pwd)/fluebox}"
: "${T:=$(mktemp -d /tmp/fbmcp.XXXXXX)}"
. tests/lib.sh
command -v node >/dev/null 2>&1 || skip_all "missing: node"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || skip_all "missing: node 18 or later (this is node $major)"
command -v npm >/dev/null 2>&1 || skip_all "missing: npm"
export FB

# The SDK, a pinned version (the one these tests were written against),
# installed once into a cache directory.
VER=${MCP_SDK_VERSION:-1.32.2}
SDK=${MCP_SDK_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/fluebox-tests/mcp-sdk-$VER}
if [ ! -f "$SDK/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
  mkdir -p "$SDK"
  if ! timeout 300 npm install --prefix "$SDK" --no-audit --no-fund --no-save --no-update-notifier \
      "@modelcontextprotocol/sdk@$VER" > "$T/npm.log" 2>&1; then
    echo "ok - MCP SDK client tests # SKIP the npm registry did not give @modelcontextprotocol/sdk@$VER: $(tail -n 2 "$T/npm.log" | tr '\n' ' ' | head -c 200)"
    SDK=""
  fi
fi

run_all() { # PREFIX FB
  local prefix=$1 fb=$2
  FB=$fb sub_suite -p "$prefix" "raw JSON-RPC tests" 400 node tests/mcp/raw.mjs
  if [ -n "$SDK" ]; then
    FB=$fb MCP_SDK_DIR=$SDK sub_suite -p "$prefix" "MCP SDK client tests" 300 node tests/mcp/sdk.mjs
  fi
}

run_all "" "$FB"
if [ -n "${FB_ASAN:-}" ] && [ -x "$FB_ASAN" ]; then
  sanitizer_logs
  FB_MCP_ASAN=1 run_all "asan: " "$FB_ASAN"
  no_sanitizer_reports "asan: no sanitizer report from fluebox mcp or its server"
  unset ASAN_OPTIONS UBSAN_OPTIONS
fi

# Again as an unprivileged user: a rootless sandbox behind the MCP server.
if [ "$(id -u)" = 0 ] && id fbtest >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1; then
  home=$(mktemp -d /tmp/fbmcp-home.XXXXXX)
  if [ -n "$SDK" ]; then cp -r "$SDK" "$home/sdk"; fi
  chown -R fbtest "$home"
  as_fbtest=(setpriv --reuid=fbtest --regid=fbtest --init-groups --reset-env --
    env PATH="$PATH" HOME="$home" T="$home" FB="$FB" MCP_SDK_DIR="$home/sdk")
  sub_suite -p "fbtest: " "raw JSON-RPC tests" 400 "${as_fbtest[@]}" node tests/mcp/raw.mjs
  if [ -n "$SDK" ]; then
    sub_suite -p "fbtest: " "MCP SDK client tests" 300 "${as_fbtest[@]}" node tests/mcp/sdk.mjs
  fi
  rm -rf "$home"
elif [ "$(id -u)" = 0 ]; then
  skip_missing "MCP tests as fbtest" setpriv
fi
no_leftovers "nothing of fluebox left behind (process, cgroup, mount)"
