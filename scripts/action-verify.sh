#!/usr/bin/env bash
# The steps of the mcp-lock GitHub Action (action.yml), runnable anywhere: verify
# writes a Markdown summary to $GITHUB_STEP_SUMMARY and, when asked, a SARIF log;
# the exit code is verify's. Inputs come as environment variables, as action.yml
# passes them:
#   MCP_LOCK           the binary [default: mcp-lock on PATH]
#   INPUT_ARGS         more arguments for verify, split on whitespace (servers,
#                      --client, --warn semantic, --config PATH, ...)
#   INPUT_SUMMARY      true|false: Markdown to $GITHUB_STEP_SUMMARY [default: true]
#   INPUT_SARIF        true|false: write a SARIF log [default: false]
#   INPUT_SARIF_FILE   where [default: mcp-lock.sarif]
#   INPUT_WORKING_DIRECTORY  where to run [default: .]
# Outputs (to $GITHUB_OUTPUT when set): exit-code, sarif-file.
set -uo pipefail

bin="${MCP_LOCK:-mcp-lock}"
summary="${INPUT_SUMMARY:-true}"
sarif="${INPUT_SARIF:-false}"
sarif_file="${INPUT_SARIF_FILE:-mcp-lock.sarif}"
read -r -a args <<<"${INPUT_ARGS:-}"

for flag in "$summary" "$sarif"; do
  case "$flag" in
    true | false) ;;
    *)
      echo "mcp-lock action: summary and sarif take true or false, not '$flag'" >&2
      exit 2
      ;;
  esac
done
cd "${INPUT_WORKING_DIRECTORY:-.}" || exit 2

# Each format is one verify run. The first run that fails decides the exit code, so
# a server that flakes between runs cannot turn a failure into a pass.
code=0
record() {
  if [ "$code" -eq 0 ]; then
    code=$1
  fi
}

if [ "$summary" = true ]; then
  if [ -z "${GITHUB_STEP_SUMMARY:-}" ]; then
    echo "mcp-lock action: GITHUB_STEP_SUMMARY is not set; the summary goes to the log only" >&2
  fi
  # The log shows the same Markdown the summary gets.
  "$bin" verify --format markdown "${args[@]}" | tee -a "${GITHUB_STEP_SUMMARY:-/dev/null}"
  status=${PIPESTATUS[0]}
  record "$status"
  if [ "$status" -eq 2 ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    # A usage, config or lock error stops verify before any report.
    printf '## mcp-lock: verify stopped with exit code 2\n\nA usage, config or lock error; the job log says which.\n' >>"$GITHUB_STEP_SUMMARY"
  fi
fi

if [ "$sarif" = true ]; then
  # --quiet: the Markdown run already showed progress in the log.
  "$bin" --quiet verify --format sarif "${args[@]}" >"$sarif_file"
  record $?
  if [ ! -s "$sarif_file" ]; then
    # verify stopped before any report (usage, config or lock error): upload-sarif
    # still needs a valid log, and the job fails on the exit code below.
    printf '%s\n' '{"$schema":"https://json.schemastore.org/sarif-2.1.0.json","version":"2.1.0","runs":[{"tool":{"driver":{"name":"mcp-lock"}},"results":[]}]}' >"$sarif_file"
  fi
fi

if [ "$summary" = false ] && [ "$sarif" = false ]; then
  "$bin" verify "${args[@]}"
  record $?
fi

if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "exit-code=$code"
    if [ "$sarif" = true ]; then
      echo "sarif-file=$sarif_file"
    fi
  } >>"$GITHUB_OUTPUT"
fi
exit "$code"
