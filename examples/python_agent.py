#!/usr/bin/env python3
"""An agent on the MCP Python SDK that refuses to work with tools that drifted from
mcp.lock.

It starts a server from the project's .mcp.json as a host would, behind
`mcp-lock guard` (which keeps enforcing the lock for the whole session), opens an SDK
session, and before planning with anything the server offers, has mcp-lock judge
the listing this very session received (``mcp_lock.sdk.check_session``). When the
policy fails a change, or the listing could not be read whole, it says what changed
and exits with mcp-lock's exit code; otherwise it plans with the tool definitions
that were judged (``judged_tools``), never with a second ``list_tools()``, which the
server could answer otherwise.

Try it on the bundled demo (README, "Quick start"):

    cargo build --bin mcp-lock --example fixture_server
    (cd examples/demo && ../../target/debug/mcp-lock update --yes)
    pip install 'mcp-lock[mcp]'      # or, from this checkout:
                                     # PYTHONPATH=python MCP_LOCK_BIN=target/debug/mcp-lock
    python examples/python_agent.py  # examples/demo, server "demo": starts
    # change "a" to "b" in examples/demo/.mcp.json, run it again: it refuses (exit 1)

Options: --project DIR (default: examples/demo beside this file), --server NAME
(default: demo), --no-guard (start the server directly: the check at start-up is then
all that is judged; a server that changes later in the session goes unnoticed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Dict, List

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import mcp_lock
from mcp_lock.sdk import check_session, guarded, judged_tools


def show(text: object) -> str:
    """Server text made safe for a terminal: control, bidi and invisible characters escaped."""
    return "".join(c if c.isprintable() else f"\\u{{{ord(c):x}}}" for c in str(text))


def server_params(project: Path, name: str) -> StdioServerParameters:
    """The server's launch from the project's .mcp.json, as a host would read it."""
    config = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))
    entry = config["mcpServers"][name]
    command = entry["command"]
    if os.sep in command and not os.path.isabs(command):
        command = str((project / command).resolve())
    # A value with a ${VARIABLE} is for the host to expand; this example leaves it out.
    env: Dict[str, str] = {k: v for k, v in entry.get("env", {}).items() if "${" not in v}
    return StdioServerParameters(command=command, args=entry.get("args", []), env=env or None, cwd=project)


def refusal(report: mcp_lock.Report) -> List[str]:
    """What to tell the user about a report that did not pass."""
    lines = []
    for server in report.servers:
        if server.verdict in ("incomplete", "unverifiable"):
            lines.append(f"  {show(server.name)}: {server.verdict}: {show(server.error or '')}")
        for change in server.failed:
            lines.append(f"  {show(server.name)}/{show(change.tool)}: {change.change} ({change.cls or 'unpinned'})")
            for finding in change.findings:
                lines.append(f"    {show(finding.pointer) or '(whole)'} {show(finding.reason)}")
        for drift in server.server_changes:
            if drift.action == "fail":
                lines.append(f"  {show(server.name)}: {drift.field} changed ({drift.cls})")
    return lines


async def run(project: Path, name: str, guard: bool) -> int:
    params = server_params(project, name)
    if guard:
        params = guarded(params, name, project_dir=project)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            try:
                report = await check_session(session, name, init_result=init, project_dir=project)
            except mcp_lock.McpLockError as e:
                print(f"agent: cannot check {name} against mcp.lock: {e.message}", file=sys.stderr)
                return 2
            if not report.passed:
                print(f"agent: refusing to go on: {name} differs from what mcp.lock approved", file=sys.stderr)
                for line in refusal(report):
                    print(line, file=sys.stderr)
                for problem in report.listing_errors:
                    print(f"  {show(problem)}", file=sys.stderr)
                print("agent: review with `mcp-lock diff`, approve with `mcp-lock update`", file=sys.stderr)
                return report.exit_code
            for problem in report.listing_errors:
                print(f"agent: warning: {show(problem)}", file=sys.stderr)
            # The definitions that were judged, not a second list_tools().
            tools = judged_tools(report)
            names = ", ".join(show(t.name) for t in tools)
            print(f"agent: {name} matches mcp.lock ({report.servers[0].verdict}); planning with: {names}")
            return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, default=Path(__file__).resolve().parent / "demo")
    parser.add_argument("--server", default="demo")
    parser.add_argument(
        "--no-guard",
        action="store_true",
        help="start the server directly, not behind mcp-lock guard (only the start-up check is judged)",
    )
    args = parser.parse_args()
    return anyio.run(run, args.project.resolve(), args.server, not args.no_guard)


if __name__ == "__main__":
    sys.exit(main())
