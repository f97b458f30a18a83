#!/usr/bin/env bash
# Builds the book (book.toml: README.md is the front door, docs/ the mdBook) and checks
# every relative link and #anchor in README.md and docs/. Fails on an mdbook warning, a
# link to a file that does not exist, an anchor no heading of its page makes, and a
# page of docs/ that SUMMARY.md leaves out. http(s) links are never fetched.
#
# mdbook is installed once from crates.io into a cache folder (MCP_LOCK_MDBOOK names
# another binary); the book is written to target/book (or DIR).
#
#   scripts/check-book.sh [DIR]
#   scripts/check-book.sh --install-only   only get mdbook (to start it in the background)
set -euo pipefail
cd "$(dirname "$0")/.."

mdbook_version=0.5.4
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mcp-lock"
install_only=
if [[ "${1:-}" == --install-only ]]; then
  install_only=1
  shift
fi
out="${1:-$PWD/target/book}"

mdbook="${MCP_LOCK_MDBOOK:-$cache/mdbook/bin/mdbook}"
if ! "$mdbook" --version 2>/dev/null | grep -qx "mdbook v$mdbook_version"; then
  echo "check-book: installing mdbook $mdbook_version into $cache/mdbook" >&2
  cargo install mdbook --version "$mdbook_version" --locked --no-default-features \
    --quiet --root "$cache/mdbook"
  mdbook="$cache/mdbook/bin/mdbook"
fi
if [[ -n "$install_only" ]]; then
  exit 0
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$mdbook" build --dest-dir "$out" >"$log" 2>&1; then
  cat "$log" >&2
  echo "check-book: mdbook build failed" >&2
  exit 1
fi
if grep -E 'WARN|ERROR' "$log" >&2; then
  echo "check-book: mdbook build warned (above)" >&2
  exit 1
fi

python3 - "$out" <<'PY'
"""Every relative link of README.md and docs/ leads to a file that exists, and every
#anchor to a heading: on a book page, an id of its rendered HTML; elsewhere, the
anchor GitHub makes of a heading."""
import html.parser
import os
import re
import sys

out = sys.argv[1]
root = os.getcwd()
docs = os.path.join(root, "docs")


def markdown_files():
    yield os.path.join(root, "README.md")
    for base, _, names in os.walk(docs):
        for name in sorted(names):
            if name.endswith(".md"):
                yield os.path.join(base, name)


def prose(text):
    """The text outside fenced code blocks and inline code, line numbers kept."""
    lines, fence = [], None
    for line in text.split("\n"):
        opener = re.match(r"\s*(```+|~~~+)", line)
        if fence:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
                fence = None
            lines.append("")
        elif opener:
            fence = opener.group(1)
            lines.append("")
        else:
            lines.append(re.sub(r"(`+).*?\1", "", line))
    return lines


def github_anchors(path):
    """The ids GitHub gives a Markdown file's headings (inline code kept as text)."""
    seen, ids, fence = {}, set(), None
    for line in open(path, encoding="utf-8").read().split("\n"):
        opener = re.match(r"\s*(```+|~~~+)", line)
        if opener:
            fence = None if fence else opener.group(1)
            continue
        if fence:
            continue
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        ids.add(slug if n == 0 else f"{slug}-{n}")
    return ids


class Ids(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)


anchor_cache = {}


def anchors_of(path):
    if path not in anchor_cache:
        rel = os.path.relpath(path, docs)
        if not rel.startswith("..") and path.endswith(".md"):
            # A book page is read on GitHub too: its anchor must be both the id
            # mdbook rendered and the one GitHub makes.
            page = os.path.join(out, rel[: -len(".md")] + ".html")
            parser = Ids()
            parser.feed(open(page, encoding="utf-8").read())
            anchor_cache[path] = parser.ids & github_anchors(path)
        elif path.endswith(".md"):
            anchor_cache[path] = github_anchors(path)
        else:
            anchor_cache[path] = None
    return anchor_cache[path]


link = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
problems = []
for path in markdown_files():
    rel_path = os.path.relpath(path, root)
    for number, line in enumerate(prose(open(path, encoding="utf-8").read()), 1):
        for m in link.finditer(line):
            target = m.group(1)
            if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                continue  # http(s), mailto: never fetched
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            where = f"{rel_path}:{number}: {target}"
            if not os.path.exists(dest):
                problems.append(f"{where}: no such file")
                continue
            if not anchor:
                continue
            ids = anchors_of(dest)
            if ids is None:
                problems.append(f"{where}: an anchor into a file that is not Markdown")
            elif anchor not in ids:
                problems.append(f"{where}: no heading makes #{anchor}")

summary = open(os.path.join(docs, "SUMMARY.md"), encoding="utf-8").read()
listed = set(re.findall(r"\]\(([^)#]+\.md)\)", summary))
for base, _, names in os.walk(docs):
    for name in names:
        rel = os.path.relpath(os.path.join(base, name), docs)
        if name.endswith(".md") and name != "SUMMARY.md" and rel not in listed:
            problems.append(f"docs/{rel}: not in docs/SUMMARY.md, so not in the book")

for problem in problems:
    print(f"check-book: {problem}", file=sys.stderr)
if problems:
    sys.exit(1)
print(f"check-book: the book builds into {os.path.relpath(out, root)}; every relative link and anchor resolves", file=sys.stderr)
PY
