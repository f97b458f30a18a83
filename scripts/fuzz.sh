#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers, the classifier and the guard (cargo-fuzz,
# libFuzzer). Needs a nightly toolchain and cargo-fuzz; see docs/development.md "Fuzzing".
#
#   scripts/fuzz.sh [TARGET|all] [--time SECONDS | --runs N] [--dev] [-- LIBFUZZER-ARGS...]
#
# --dev builds without optimisation (debug assertions on): a fraction of the build
# time for a slower search, what the CI smoke run uses; campaigns leave it off.
# --build only builds the targets (for the chosen profile) and runs none.
# Each target runs for SECONDS (default 60) or N executions, starting from
# fuzz/corpus/TARGET, which is (re)seeded first from the test fixtures (tests/data,
# tests/corpus, the mcp-lock.toml examples of README.md and docs/, ../shared/conformance when
# present) and the committed seeds in fuzz/seeds/TARGET. What libFuzzer adds to the
# corpus is kept between runs (fuzz/corpus is not committed). Crash inputs land in
# fuzz/artifacts/TARGET; turn each fixed one into a test in
# tests/library/fuzz_regressions.rs.
# Exit status: 0 when no target crashed, 1 when one did, 2 when the tools are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(json_roundtrip listing sse lock config classify guard)
target=all
limit=(-max_total_time=60)
profile=(-O)
build_only=
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --time) limit=(-max_total_time="${2:?--time needs SECONDS}"); shift 2 ;;
    --runs) limit=(-runs="${2:?--runs needs N}"); shift 2 ;;
    --dev) profile=(--dev); shift ;;
    --build) build_only=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) target="$1"; shift ;;
  esac
done
if [[ "$target" == all ]]; then
  selected=("${TARGETS[@]}")
elif [[ " ${TARGETS[*]} " == *" $target "* ]]; then
  selected=("$target")
else
  echo "fuzz: unknown target $target (one of: ${TARGETS[*]}, all)" >&2
  exit 2
fi

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz: no nightly toolchain (rustup toolchain install nightly)" >&2
  exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz: cargo-fuzz is not installed (cargo install --locked cargo-fuzz)" >&2
  exit 2
fi

# Seeds: one file per input, in the layout each target reads (see the comment at the
# top of its file under fuzz/fuzz_targets/).
seed() {
  local name="$1" dir="fuzz/corpus/$1"
  mkdir -p "$dir"
  if [[ -d "fuzz/seeds/$name" ]]; then
    cp fuzz/seeds/"$name"/* "$dir"/
  fi
  python3 - "$name" "$dir" <<'PY'
import glob, hashlib, json, os, re, sys

name, out = sys.argv[1], sys.argv[2]

def put(data: bytes):
    path = os.path.join(out, "seed-" + hashlib.sha1(data).hexdigest()[:16])
    with open(path, "wb") as f:
        f.write(data)

def compact(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()

def json_files():
    files = glob.glob("tests/data/*.json") + glob.glob("tests/corpus/*.json")
    files += glob.glob("tests/data/configs/*.json") + glob.glob("../shared/conformance/*.json")
    return sorted(files)

def texts(node):
    """The raw JSON texts the hash vectors give as `input` strings, exactly as sent."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "input" and isinstance(value, str):
                yield value
            else:
                yield from texts(value)
    elif isinstance(node, list):
        for item in node:
            yield from texts(item)

if name in ("json_roundtrip", "listing"):
    for path in json_files():
        data = open(path, "rb").read()
        if len(data) <= 64 * 1024:
            put(data)
        try:
            doc = json.load(open(path, encoding="utf-8"))
        except ValueError:
            continue
        for text in texts(doc):
            put(text.encode("utf-8", "surrogatepass"))
        for key in ("before", "after"):
            if isinstance(doc, dict) and isinstance(doc.get(key), dict):
                put(compact(doc[key]))
elif name == "classify":
    for path in sorted(glob.glob("tests/corpus/*.json")):
        doc = json.load(open(path, encoding="utf-8"))
        if isinstance(doc, dict) and "before" in doc and "after" in doc:
            put(b"\x00" + compact(doc["before"]) + b"\x00" + compact(doc["after"]))
elif name == "lock":
    for path in ["mcp.lock.example", "tests/data/mcp.lock.v1"]:
        if os.path.exists(path):
            put(b"\x00" + open(path, "rb").read())
elif name == "config":
    places = [".mcp.json", ".vscode/mcp.json", "User/settings.json", ".cursor/mcp.json",
              "home/.claude.json", ".gemini/settings.json", ".zed/settings.json",
              "opencode.jsonc", ".codex/config.toml", "goose/config.yaml",
              ".continue/mcpServers/servers.yaml", "mcp-servers", "mcp_settings.json"]
    by_file = {"claude-code.mcp.json": 0, "vscode.mcp.json": 1, "cursor.mcp.json": 3,
               "claude.json": 4, "gemini.settings.json": 5, "zed.settings.json": 6,
               "opencode.jsonc": 7, "codex.config.toml": 8, "goose.config.yaml": 9,
               "continue.yaml": 10, "cline_mcp_settings.json": 12}
    for path in sorted(glob.glob("tests/data/configs/*")):
        data = open(path, "rb").read()
        index = by_file.get(os.path.basename(path), 0)
        put(bytes([index]) + data)
        put(bytes([11]) + data)  # no extension: the format is told from the text
    pages = ["README.md"] + sorted(glob.glob("docs/*.md"))
    for page in pages:
        for block in re.findall(r"```toml\n(.*?)```", open(page, encoding="utf-8").read(), re.S):
            put(bytes([len(places)]) + block.encode())
PY
}

# The fuzz build (every dependency under AddressSanitizer) is kept in a cache folder
# outside the checkout, so a fresh clone (CI) rebuilds only mcp-lock itself.
# MCP_LOCK_FUZZ_TARGET_DIR chooses another place.
target_dir="${MCP_LOCK_FUZZ_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-lock/fuzz-target}"

if [[ -n "$build_only" ]]; then
  exec cargo +nightly fuzz build "${profile[@]}" --target-dir "$target_dir"
fi

# Inputs are kept small: every target reads whole documents, and bigger inputs only
# slow the search down.
max_len=65536
status=0
for t in "${selected[@]}"; do
  seed "$t"
  mkdir -p "fuzz/artifacts/$t"
  echo "fuzz: $t (${limit[*]})" >&2
  quiet=()
  if [[ "$t" == guard ]]; then
    # The guard says every refusal on stderr: closing it triples the speed. A crash
    # input still lands in fuzz/artifacts; run it again to see the panic message:
    # cargo +nightly fuzz run -O --target-dir "$target_dir" guard fuzz/artifacts/guard/crash-...
    quiet=(-close_fd_mask=2)
  fi
  if ! cargo +nightly fuzz run "${profile[@]}" --target-dir "$target_dir" "$t" "fuzz/corpus/$t" -- \
      "${limit[@]}" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 "${quiet[@]}" "${extra[@]}"; then
    echo "fuzz: $t failed; the input is in fuzz/artifacts/$t" >&2
    status=1
  fi
done
exit "$status"
