#!/usr/bin/env bash
# Installs the real MCP servers the integration tests run, at pinned versions, into a
# cache folder (default: $XDG_CACHE_HOME/mcp-lock/test-servers). Idempotent: a second
# run with the same versions does nothing. Prints the folder on its last line.
set -euo pipefail

dir="${MCP_LOCK_TEST_SERVERS:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-lock/test-servers}"
npm_pkgs=(
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/server-memory@2026.8.31"
  # An older release under another name, for real drift between two releases.
  "server-filesystem-2025.7.1@npm:@modelcontextprotocol/server-filesystem@2025.7.1"
)
pip_pkgs=("mcp-server-time==2026.10.19" "mcp==2.3.0")
stamp="$dir/.installed-$(printf '%s\n' "${npm_pkgs[@]}" "${pip_pkgs[@]}" | sha256sum | cut -c1-16)"

if [ -f "$stamp" ]; then
  echo "test servers already installed in $dir" >&2
  echo "$dir"
  exit 0
fi

mkdir -p "$dir/npm"
echo "installing npm servers into $dir/npm" >&2
npm install --silent --no-audit --no-fund --prefix "$dir/npm" "${npm_pkgs[@]}" >&2
echo "installing PyPI servers into $dir/venv" >&2
python3 -m venv "$dir/venv"
"$dir/venv/bin/pip" install --quiet --disable-pip-version-check "${pip_pkgs[@]}" >&2
touch "$stamp"
echo "$dir"
