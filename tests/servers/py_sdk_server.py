#!/usr/bin/env python3
"""Python MCP SDK (mcp==2.3.0) server fixture for mcp-lock tests.

Built on the SDK's low-level `Server` (the high-level `MCPServer` cannot
paginate). Serves three fixed tools, paginates `tools/list` with opaque
cursors, and speaks both protocol eras:

* the handshake era (`initialize`, protocol versions 2024-11-05 .. 2025-11-25)
* the 2026-07-28 era (`server/discover`, per-request `params._meta` envelope,
  `MCP-Protocol-Version` / `Mcp-Method` headers)

The SDK serves both eras by default; nothing here disables either. Over HTTP
the session manager picks the era per request from the `MCP-Protocol-Version`
header (absent or a handshake version -> handshake era, anything else -> the
2026 single-exchange path), so stateful mode (the SDK default, chosen here)
serves both: the handshake era gets real sessions (`Mcp-Session-Id`, DELETE),
the 2026 era never touches the session table. Over stdio the first request
decides the era of the whole connection.

`--legacy-only` makes the fixture answer like a server that only knows the
handshake era, modelled on mcp 1.x (checked against mcp 1.30.0). The SDK has
no switch for this, so the fixture does it itself:
  * stdio runs the SDK's handshake-only loop (`serve_loop`), not the dual-era one;
  * `server/discover` is unregistered, and any request method the handshake era
    does not define is answered -32602 "Invalid request parameters" (data ""),
    as mcp 1.x does, before or after `initialize`;
  * over HTTP every request goes to the handshake-era transport (no 2026
    routing), with mcp 1.x's version-header gate: a request on a live session
    (or any request when --stateless) whose `MCP-Protocol-Version` is not a
    handshake version gets 400 "Bad Request: Unsupported protocol version: ...";
  * transport-level JSON-RPC errors carry `"id":"server-error"` as in mcp 1.x
    (mcp 2.3.0 sends `"id":null`).

Run it with the test venv's interpreter:
    ~/.cache/mcp-lock/test-servers/venv/bin/python tests/servers/py_sdk_server.py ...

Usage:
    py_sdk_server.py [--transport stdio|http] [--port N] [--port-file PATH]
                     [--page-size N] [--stateless] [--json-response]
                     [--legacy-only]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import signal
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.methods import CLIENT_REQUESTS
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

SERVER_NAME = "py-sdk-fixture"
SERVER_VERSION = "1.0.0"
INSTRUCTIONS = "Python SDK fixture for mcp-lock tests."

# Fixed tool definitions, in wire (camelCase) form. Order is the listing order.
TOOL_DEFS: list[dict[str, Any]] = [
    {
        "name": "py_echo",
        "title": "Python Echo",
        "description": "Echoes the given text back unchanged.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "Text to echo back."}},
            "required": ["text"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "py_add",
        "description": "Adds two integers and returns their sum.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"sum": {"type": "integer"}},
            "required": ["sum"],
        },
    },
    {
        "name": "py_ping",
        "inputSchema": {"type": "object"},
    },
]

TOOLS: list[types.Tool] = [types.Tool.model_validate(t, by_name=False) for t in TOOL_DEFS]

CURSOR_PREFIX = "py-sdk-fixture:offset:"


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"{CURSOR_PREFIX}{offset}".encode()).decode("ascii")


def decode_cursor(cursor: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("utf-8")
        if not raw.startswith(CURSOR_PREFIX):
            raise ValueError(raw)
        offset = int(raw[len(CURSOR_PREFIX) :])
        if offset < 0 or offset >= len(TOOLS):
            raise ValueError(offset)
        return offset
    except (ValueError, UnicodeError) as exc:
        raise MCPError(code=types.INVALID_PARAMS, message="Invalid cursor", data=cursor) from exc


def build_server(page_size: int, legacy_only: bool) -> Server[Any]:
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        cursor = params.cursor if params is not None else None
        start = 0 if cursor is None else decode_cursor(cursor)
        end = start + page_size
        next_cursor = encode_cursor(end) if end < len(TOOLS) else None
        return types.ListToolsResult(tools=TOOLS[start:end], next_cursor=next_cursor)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        if params.name == "py_echo":
            text = str(args.get("text", ""))
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
        if params.name == "py_add":
            total = int(args.get("a", 0)) + int(args.get("b", 0))
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=json.dumps({"sum": total}))],
                structured_content={"sum": total},
            )
        if params.name == "py_ping":
            return types.CallToolResult(content=[types.TextContent(type="text", text="pong")])
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")

    server: Server[Any] = Server(
        SERVER_NAME,
        version=SERVER_VERSION,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    if legacy_only:
        # A handshake-only server has no `server/discover` (the SDK registers it
        # unconditionally).
        server._request_handlers.pop("server/discover", None)
        server.middleware.insert(0, legacy_unknown_method_middleware)
    return server


# Request methods a handshake-era (<= 2025-11-25) client may send.
HANDSHAKE_METHODS = frozenset(
    method for (method, version) in CLIENT_REQUESTS if version in HANDSHAKE_PROTOCOL_VERSIONS
)


async def legacy_unknown_method_middleware(ctx: Any, call_next: Any) -> Any:
    """Answer a request for a method the handshake era lacks the way mcp 1.x does.

    mcp 1.x validates every inbound request against its fixed request union
    first, so an unknown method (e.g. `server/discover`) gets -32602
    "Invalid request parameters" with data "" - not -32601 - before or after
    `initialize`. mcp 2.3.0 would answer -32601 "Method not found".
    """
    if ctx.request_id is not None and ctx.method not in HANDSHAKE_METHODS:
        raise MCPError(code=types.INVALID_PARAMS, message="Invalid request parameters", data="")
    return await call_next(ctx)


class LegacyOnlySessionManager(StreamableHTTPSessionManager):
    """Session manager without the 2026 single-exchange path.

    Every request goes to the handshake-era transport. Mirrors the version-header
    gate of handshake-only SDK releases (mcp 1.x `_validate_protocol_version`),
    which ran after session validation: a request that carries a known session
    id but an `MCP-Protocol-Version` outside the handshake versions gets 400.
    """

    async def _handle_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._route(scope, receive, _legacy_error_ids(send))

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._task_group is None:
            raise RuntimeError("Task group is not initialized. Make sure to use run().")
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        pv = headers.get(MCP_PROTOCOL_VERSION_HEADER)
        sid = headers.get(MCP_SESSION_ID_HEADER)
        if (
            pv is not None
            and pv not in HANDSHAKE_PROTOCOL_VERSIONS
            and (self.stateless or (sid is not None and sid in self._server_instances))
        ):
            body = types.JSONRPCError(
                jsonrpc="2.0",
                id=None,
                error=types.ErrorData(
                    code=types.INVALID_REQUEST,
                    message=f"Bad Request: Unsupported protocol version: {pv}. "
                    f"Supported versions: {', '.join(HANDSHAKE_PROTOCOL_VERSIONS)}",
                ),
            )
            resp_headers = {MCP_SESSION_ID_HEADER: sid} if (sid and not self.stateless) else None
            await Response(
                body.model_dump_json(by_alias=True, exclude_unset=True),
                status_code=400,
                media_type="application/json",
                headers=resp_headers,
            )(scope, receive, send)
            return
        if self.stateless:
            await self._handle_stateless_request(pv, scope, receive, send)
        else:
            await self._handle_stateful_request(scope, receive, send)


def _legacy_error_ids(send: Send) -> Send:
    """Give transport-level JSON-RPC errors the id mcp 1.x used: "server-error".

    mcp 2.3.0 sends `"id":null` on errors that answer no particular request
    (missing/unknown session, 406, ...); mcp 1.x sent `"id":"server-error"`.
    Only non-2xx `application/json` bodies are touched.
    """
    held: dict[str, Any] = {}

    async def wrapped(message: Any) -> None:
        if message["type"] == "http.response.start":
            headers = dict(message.get("headers", []))
            if message["status"] >= 400 and headers.get(b"content-type", b"").startswith(b"application/json"):
                held["start"] = message
                held["body"] = b""
                return
        elif message["type"] == "http.response.body" and "start" in held:
            held["body"] += message.get("body", b"")
            if message.get("more_body", False):
                return
            body = held["body"].replace(b'"id":null', b'"id":"server-error"', 1)
            start = held.pop("start")
            start["headers"] = [(k, v) for k, v in start["headers"] if k != b"content-length"] + [
                (b"content-length", str(len(body)).encode())
            ]
            await send(start)
            await send({"type": "http.response.body", "body": body})
            return
        await send(message)

    return wrapped


def write_port_file(path: str, port: int) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".port-", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(f"{port}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class FixtureUvicornServer(uvicorn.Server):
    """uvicorn server that reports its bound port once it is listening."""

    def __init__(self, config: uvicorn.Config, port_file: str | None) -> None:
        super().__init__(config)
        self.port_file = port_file

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn re-raises a captured SIGTERM/SIGINT after its graceful
        # shutdown (exit status 143/130); a fixture asked to stop has stopped
        # cleanly, so exit 0 instead.
        with super().capture_signals():
            try:
                yield
            finally:
                self._captured_signals.clear()

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets=sockets)
        if not self.started:
            return
        port = self.servers[0].sockets[0].getsockname()[1]
        if self.port_file:
            write_port_file(self.port_file, port)
        print(f"py_sdk_server: listening on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)


def build_http_app(server: Server[Any], args: argparse.Namespace) -> Any:
    if not args.legacy_only:
        return server.streamable_http_app(
            streamable_http_path="/mcp",
            stateless_http=args.stateless,
            json_response=args.json_response,
            host="127.0.0.1",
        )
    # Same app as `streamable_http_app` builds (route, DNS-rebinding protection
    # for 127.0.0.1), but on the handshake-only session manager.
    manager = LegacyOnlySessionManager(
        app=server,
        json_response=args.json_response,
        stateless=args.stateless,
        security_settings=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        ),
    )
    return Starlette(
        routes=[Route("/mcp", endpoint=StreamableHTTPASGIApp(manager))],
        lifespan=lambda _app: manager.run(),
    )


def serve_http(server: Server[Any], args: argparse.Namespace) -> int:
    app = build_http_app(server, args)
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        lifespan="on",
        access_log=False,
        # Do not wait forever for open SSE streams (e.g. a GET stream) on SIGTERM.
        timeout_graceful_shutdown=2,
    )
    uv = FixtureUvicornServer(config, args.port_file)
    uv.run()
    return 0


async def run_stdio(server: Server[Any], legacy_only: bool) -> None:
    async def watch_sigterm() -> None:
        # The SDK reads stdin in a worker thread that cancellation cannot
        # interrupt, so a graceful cancel would hang until stdin closes. Every
        # response is written whole before the next read, so just leave.
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for _ in signals:
                sys.stderr.flush()
                os._exit(0)

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch_sigterm)
        async with stdio_server() as (read_stream, write_stream):
            if legacy_only:
                async with server.lifespan(server) as state:
                    await serve_loop(
                        server,
                        read_stream,
                        write_stream,
                        lifespan_state=state,
                        init_options=server.create_initialization_options(),
                    )
            else:
                await server.run(read_stream, write_stream, server.create_initialization_options())
        tg.cancel_scope.cancel()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transport", choices=["stdio", "http"], default="http")
    parser.add_argument("--port", type=int, default=0, help="HTTP port on 127.0.0.1 (0 = any free port)")
    parser.add_argument("--port-file", default=None, help="write the bound port here once listening")
    parser.add_argument("--page-size", type=int, default=2, help="tools/list page size (default 2)")
    parser.add_argument("--stateless", action="store_true", help="HTTP: SDK stateless mode (no Mcp-Session-Id)")
    parser.add_argument("--json-response", action="store_true", help="HTTP: JSON bodies instead of SSE")
    parser.add_argument("--legacy-only", action="store_true", help="answer like a handshake-era-only server")
    args = parser.parse_args(argv)
    if args.page_size < 1:
        parser.error("--page-size must be >= 1")

    server = build_server(args.page_size, args.legacy_only)
    if args.transport == "stdio":
        anyio.run(run_stdio, server, args.legacy_only)
        return 0
    return serve_http(server, args)


if __name__ == "__main__":
    sys.exit(main())
