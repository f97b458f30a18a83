#!/usr/bin/env bash
# The update-pr mode of the mcp-lock GitHub Action (action.yml), runnable anywhere:
# runs `mcp-lock update --pull-request` with the project's policy and leaves the new
# lock in the work tree, for the pull request step (peter-evans/create-pull-request)
# to commit to its branch. The title, labels and body it writes go to the step's
# outputs; the body file is kept outside the work tree, so only the lock is committed.
# Inputs come as environment variables, as action.yml passes them:
#   MCP_LOCK           the binary [default: mcp-lock on PATH]
#   INPUT_ARGS         more arguments for update, split on whitespace (servers,
#                      --config PATH, --lock PATH, --policy PATH, --accept ...)
#   INPUT_WORKING_DIRECTORY  where to run [default: .]
#   INPUT_REVIEW_DIR   where title.txt, labels.txt, body.md go
#                      [default: $RUNNER_TEMP/mcp-lock-review, else a new temporary dir]
# Outputs (to $GITHUB_OUTPUT when set, else printed): changed (true when the lock
# moved), exit-code (update's), title, labels (comma-separated), body-path, and
# add-paths (the lock and its companion where the repository has them, relative to
# the repository, one a line).
# Exits 0 when update ran (whatever it found: exit-code says), 2 when the inputs are
# wrong, so the pull request step still runs; the action fails afterwards on exit-code.
set -uo pipefail

bin="${MCP_LOCK:-mcp-lock}"
read -r -a args <<<"${INPUT_ARGS:-}"
cd "${INPUT_WORKING_DIRECTORY:-.}" || exit 2

if [ -n "${INPUT_REVIEW_DIR:-}" ]; then
  review="$INPUT_REVIEW_DIR"
elif [ -n "${RUNNER_TEMP:-}" ]; then
  review="$RUNNER_TEMP/mcp-lock-review"
else
  review="$(mktemp -d)/mcp-lock-review"
fi
top=$(git rev-parse --show-toplevel 2>/dev/null) || {
  echo "mcp-lock action: $(pwd) is not in a git repository; update-pr mode needs a checkout" >&2
  exit 2
}
case "$(realpath -m "$review")/" in
  "$top"/*)
    echo "mcp-lock action: the review directory $review is inside the repository; its files would be committed" >&2
    exit 2
    ;;
esac

"$bin" update --pull-request "$review" "${args[@]}"
code=$?

output() {
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    local delimiter="mcp_lock_$RANDOM$RANDOM$RANDOM"
    printf '%s<<%s\n%s\n%s\n' "$1" "$delimiter" "$2" "$delimiter" >>"$GITHUB_OUTPUT"
  else
    printf '%s=%s\n' "$1" "$2"
  fi
}

output exit-code "$code"
if [ ! -f "$review/paths.txt" ]; then
  # update stopped before it judged anything (a usage, config or lock error).
  output changed false
  exit 0
fi

# The pull request commits only the lock and its companion: add-paths names those
# the repository has (on disk or tracked), changed or not, so a run that moved
# nothing gives the pull request step nothing to commit, and it closes any open one.
paths=()
moved=false
while IFS= read -r path; do
  [ -n "$path" ] || continue
  rel=$(realpath -m --relative-to="$top" "$path")
  if [ -e "$top/$rel" ] || git -C "$top" ls-files --error-unmatch -- "$rel" >/dev/null 2>&1; then
    paths+=("$rel")
    if [ -n "$(git -C "$top" status --porcelain -- "$rel")" ]; then
      moved=true
    fi
  fi
done <"$review/paths.txt"
if [ "$moved" = true ] && [ ! -f "$review/body.md" ]; then
  # Never a pull request without its review: the step is skipped.
  output changed false
  echo "mcp-lock action: the lock differs from the checkout but update wrote no review; no pull request" >&2
  exit 0
fi
if [ ${#paths[@]} -gt 0 ]; then
  output add-paths "$(printf '%s\n' "${paths[@]}")"
fi
if [ "$moved" != true ]; then
  output changed false
  echo "mcp-lock action: the lock did not move; no pull request to open or update" >&2
  exit 0
fi
output changed true
output title "$(head -n 1 "$review/title.txt")"
output labels "$(paste -sd, "$review/labels.txt")"
output body-path "$review/body.md"
exit 0
