"""Drives mcp_lock's Python API through the real MCP Python SDK for tests/dist_python.rs,
and prints what happened as one JSON object on stdout (the Rust test asserts on it).

    sdk_driver.py session SERVER PROJECT [--client P] -- COMMAND [ARGS...]
        connect to COMMAND with the SDK, then check_session(session, SERVER)
    sdk_driver.py listing SERVER PROJECT --drop-last-page -- COMMAND [ARGS...]
        session_listing(), the last tools page left out, then check_listing()
    sdk_driver.py models SERVER PROJECT -- COMMAND [ARGS...]
        the tools as sent (session_listing) against the SDK's list_tools() models, and
        the report a listing rebuilt from those models would get
    sdk_driver.py guarded SERVER PROJECT [--keep-command] -- COMMAND [ARGS...]
        connect through guarded(params, SERVER) and list the tools the agent is offered
    sdk_driver.py verify PROJECT [SERVER...]
        mcp_lock.verify()

Every report is printed whole (``raw``) with the typed view beside it; an
McpLockError is printed as {"error": ..., "exit_code": ...}.
"""

import argparse
import json
import sys
from typing import Any, Awaitable, Callable, Dict, List

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import mcp_lock
from mcp_lock.sdk import check_session, guarded, session_listing


def typed(report: mcp_lock.Report) -> Dict[str, Any]:
    """The typed objects as plain JSON, to check them against the raw report."""
    return {
        "exit_code": report.exit_code,
        "passed": report.passed,
        "summary": vars(report.summary),
        "listing_errors": report.listing_errors,
        "servers": [
            {
                "name": s.name,
                "profile": s.profile,
                "verdict": s.verdict,
                "error": s.error,
                "tools": s.tools,
                "prompts": s.prompts,
                "resource_templates": s.resource_templates,
                "changes": [
                    {
                        "kind": c.kind,
                        "tool": c.tool,
                        "change": c.change,
                        "class": c.cls,
                        "action": c.action,
                        "findings": [{"class": f.cls, "pointer": f.pointer, "reason": f.reason} for f in c.findings],
                    }
                    for c in s.changes
                ],
                "server_changes": [
                    {"field": c.field, "drift": c.drift, "class": c.cls, "action": c.action} for c in s.server_changes
                ],
            }
            for s in report.servers
        ],
    }


def emit(value: Dict[str, Any]) -> None:
    value["module"] = mcp_lock.__file__
    value["version"] = mcp_lock.__version__
    try:
        value["binary"] = mcp_lock.find_binary()
    except mcp_lock.McpLockError as e:
        value["binary"] = None
        value["binary_error"] = e.message
    json.dump(value, sys.stdout)
    sys.stdout.write("\n")


def report_or_error(call: Any) -> Dict[str, Any]:
    try:
        report = call()
    except mcp_lock.McpLockError as e:
        return {"error": e.message, "exit_code": e.exit_code, "stderr": e.stderr}
    return {"report": report.raw, "typed": typed(report)}


async def connected(command: List[str], body: Callable[[ClientSession], Awaitable[Dict[str, Any]]]) -> Dict[str, Any]:
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)


async def run(args: argparse.Namespace) -> Dict[str, Any]:
    if args.what == "session":

        async def body(session: ClientSession) -> Dict[str, Any]:
            try:
                report = await check_session(session, args.server, project_dir=args.project, client=args.client)
            except mcp_lock.McpLockError as e:
                return {"error": e.message, "exit_code": e.exit_code}
            return {"report": report.raw, "typed": typed(report)}

        return await connected(args.command, body)

    if args.what == "listing":

        async def body(session: ClientSession) -> Dict[str, Any]:
            documents = await session_listing(session)
            tool_pages = [i for i, d in enumerate(documents) if "tools" in d]
            sent = [d for i, d in enumerate(documents) if not (args.drop_last_page and i == tool_pages[-1])]
            result = report_or_error(lambda: mcp_lock.check_listing(args.server, sent, project_dir=args.project))
            result["pages_received"] = len(tool_pages)
            result["pages_sent"] = sum(1 for d in sent if "tools" in d)
            return result

        return await connected(args.command, body)

    if args.what == "models":

        async def body(session: ClientSession) -> Dict[str, Any]:
            documents = await session_listing(session)
            sent = [t for d in documents if "tools" in d for t in d["tools"]]
            listed = await session.list_tools()
            models = [t.model_dump(by_alias=True, mode="json", exclude_unset=True) for t in listed.tools]
            rebuilt = [d for d in documents if "tools" not in d] + [{"tools": models}]
            result = report_or_error(lambda: mcp_lock.check_listing(args.server, rebuilt, project_dir=args.project))
            result.update({"sent": sent, "models": models})
            return result

        return await connected(args.command, body)

    if args.what == "guarded":
        plain = StdioServerParameters(command=args.command[0], args=args.command[1:])
        params = guarded(plain, args.server, project_dir=args.project, keep_command=args.keep_command)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
                offered = [t.name for t in listed.tools]
        return {"command": params.command, "args": params.args, "cwd": str(params.cwd), "offered": offered}

    if args.what == "verify":
        return report_or_error(lambda: mcp_lock.verify(args.servers or None, project_dir=args.project))

    raise SystemExit(f"unknown: {args.what}")


def main() -> None:
    argv = sys.argv[1:]
    command: List[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, command = argv[:at], argv[at + 1 :]
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="what", required=True)
    for name in ("session", "listing", "guarded", "models"):
        p = sub.add_parser(name)
        p.add_argument("server")
        p.add_argument("project")
        p.add_argument("--client")
        p.add_argument("--drop-last-page", action="store_true")
        p.add_argument("--keep-command", action="store_true")
    p = sub.add_parser("verify")
    p.add_argument("project")
    p.add_argument("servers", nargs="*")
    args = parser.parse_args(argv)
    args.command = command
    emit(anyio.run(run, args))


if __name__ == "__main__":
    main()
