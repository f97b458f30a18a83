"""Drives mcp_lock's Python API through the real MCP Python SDK for tests/dist_python.rs,
and prints what happened as one JSON object on stdout (the Rust test asserts on it).

    sdk_driver.py session SERVER PROJECT [OPTIONS] -- COMMAND [ARGS...]
        connect to COMMAND with the SDK, then check_session(session, SERVER); options:
        --client P, --request-timeout S, --timeout S, --transport T (check_session's),
        --discover (open the session with server/discover, not initialize),
        --init-result (pass the initialize or discover result as init_result),
        --like-1x (check an mcp 1.x-like session: see LikeMcp1),
        --list-tools (also report the names the SDK's list_tools() offers),
        --declare roots,elicitation,sampling (give the session those callbacks, so it
        declares those capabilities; the handshake check_session passes is reported)
    sdk_driver.py listing SERVER PROJECT --drop-last-page -- COMMAND [ARGS...]
        session_listing(), the last tools page left out, then check_listing()
    sdk_driver.py models SERVER PROJECT -- COMMAND [ARGS...]
        the tools as sent (session_listing) against the SDK's list_tools() models, and
        the report a listing rebuilt from those models would get
    sdk_driver.py guarded SERVER PROJECT [--keep-command] -- COMMAND [ARGS...]
        connect through guarded(params, SERVER) and list the tools the agent is offered
    sdk_driver.py verify PROJECT [SERVER...]
        mcp_lock.verify()
    sdk_driver.py infinity SERVER PROJECT
        check_listing() of a listing holding float("inf")

A SERVER written =NAME is NAME, so that it may start with "-". Every report is
printed whole (``raw``) with the typed view beside it; an McpLockError is printed as
{"error": ..., "exit_code": ...}.
"""

import argparse
import dataclasses
import json
import sys
from datetime import timedelta
from typing import Any, Awaitable, Callable, Dict, List, Optional

import anyio
import mcp.types as mcp_types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import mcp_lock
from mcp_lock.sdk import check_session, declared_handshake, guarded, judged_tools, session_listing


class LikeMcp1:
    """What an mcp 1.x ClientSession offers check_session, made from a 2.x one: its
    send_request takes the read timeout as a timedelta (a float fails, as in 1.x) and
    checks the answer against result_type alone, without 2.x's check against the
    negotiated protocol version; get_server_capabilities(). It keeps no initialize or
    discover result, protocol version, serverInfo or instructions."""

    def __init__(self, session: ClientSession) -> None:
        self._session = session

    async def send_request(
        self,
        request: Any,
        result_type: Any,
        request_read_timeout_seconds: Optional[timedelta] = None,
        metadata: Any = None,
        progress_callback: Any = None,
    ) -> Any:
        options: Any = {}
        if request_read_timeout_seconds is not None:
            options["timeout"] = request_read_timeout_seconds.total_seconds()
        data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        raw = await self._session._dispatcher.send_raw_request(data["method"], data.get("params"), options)
        return result_type.model_validate(raw)

    def get_server_capabilities(self) -> Any:
        return self._session.server_capabilities


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
                "missing_profile": dataclasses.asdict(s.missing_profile) if s.missing_profile else None,
                "denied": [{"kind": d.kind, "name": d.name, "rule": d.rule} for d in s.denied],
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
    return {"report": report.raw, "typed": typed(report), "stderr": report.stderr}


async def _refuse(*_: Any) -> Any:
    """A client callback that answers every server request with an error (nobody is
    there to answer it in a test)."""
    return mcp_types.ErrorData(code=-1, message="not answered in this test")


def callbacks(declare: str) -> Dict[str, Any]:
    """The ClientSession callbacks that make it declare these capabilities."""
    names = {"roots": "list_roots_callback", "elicitation": "elicitation_callback", "sampling": "sampling_callback"}
    return {names[c]: _refuse for c in declare.split(",") if c}


async def connected(
    command: List[str],
    body: Callable[[ClientSession, Any], Awaitable[Dict[str, Any]]],
    discover: bool = False,
    declare: str = "",
) -> Dict[str, Any]:
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, **callbacks(declare)) as session:
            opened = await (session.discover() if discover else session.initialize())
            return await body(session, opened)


async def run(args: argparse.Namespace) -> Dict[str, Any]:
    if args.what == "session":

        async def body(session: ClientSession, opened: Any) -> Dict[str, Any]:
            options: Dict[str, Any] = {"project_dir": args.project, "client": args.client}
            for name in ("request_timeout", "timeout", "transport"):
                if getattr(args, name) is not None:
                    options[name] = getattr(args, name)
            if args.init_result:
                options["init_result"] = opened
            checked: Any = LikeMcp1(session) if args.like_1x else session
            try:
                report = await check_session(checked, args.server, **options)
            except mcp_lock.McpLockError as e:
                return {"error": e.message, "exit_code": e.exit_code}
            result = {
                "report": report.raw,
                "typed": typed(report),
                "listing": report.listing,
                "judged": [t.name for t in judged_tools(report)],
                "declared": declared_handshake(session),
            }
            if args.list_tools:
                result["offered"] = [t.name for t in (await session.list_tools()).tools]
            return result

        return await connected(args.command, body, discover=args.discover, declare=args.declare)

    if args.what == "listing":

        async def body(session: ClientSession, opened: Any) -> Dict[str, Any]:
            documents = await session_listing(session)
            tool_pages = [i for i, d in enumerate(documents) if "tools" in d]
            sent = [d for i, d in enumerate(documents) if not (args.drop_last_page and i == tool_pages[-1])]
            result = report_or_error(lambda: mcp_lock.check_listing(args.server, sent, project_dir=args.project))
            result["pages_received"] = len(tool_pages)
            result["pages_sent"] = sum(1 for d in sent if "tools" in d)
            return result

        return await connected(args.command, body)

    if args.what == "models":

        async def body(session: ClientSession, opened: Any) -> Dict[str, Any]:
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

    if args.what == "infinity":
        listing = {"tools": [{"name": "odd", "inputSchema": {"type": "object", "maximum": float("inf")}}]}
        return report_or_error(lambda: mcp_lock.check_listing(args.server, listing, project_dir=args.project))

    raise SystemExit(f"unknown: {args.what}")


def plain_name(name: str) -> str:
    """A server name from the command line: =NAME is NAME."""
    return name.removeprefix("=")


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
        p.add_argument("--request-timeout", type=float)
        p.add_argument("--timeout", type=float)
        p.add_argument("--transport")
        p.add_argument("--discover", action="store_true")
        p.add_argument("--init-result", action="store_true")
        p.add_argument("--like-1x", action="store_true")
        p.add_argument("--list-tools", action="store_true")
        p.add_argument("--declare", default="")
    p = sub.add_parser("infinity")
    p.add_argument("server")
    p.add_argument("project")
    p = sub.add_parser("verify")
    p.add_argument("project")
    p.add_argument("servers", nargs="*")
    args = parser.parse_args(argv)
    args.command = command
    if getattr(args, "server", None) is not None:
        args.server = plain_name(args.server)
    if getattr(args, "servers", None):
        args.servers = [plain_name(name) for name in args.servers]
    emit(anyio.run(run, args))


if __name__ == "__main__":
    main()
