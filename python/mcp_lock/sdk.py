"""mcp-lock for agents on the official MCP Python SDK (the ``mcp`` package).

* :func:`check_session`: after ``init = await session.initialize()``, list what the
  server offers over that session and have mcp-lock judge it against the lock, as
  ``verify`` would judge a listing of its own: refuse to go on when it fails, and
  plan with the definitions that were judged (:func:`judged_tools`).
* :func:`guarded`: the ``StdioServerParameters`` that start a server behind
  ``mcp-lock guard``, which enforces the lock for the whole session (the check is of
  one moment; the guard keeps judging every later listing and call).

The definitions are sent to mcp-lock exactly as the server sent them. The lock pins
a hash of each definition's JSON, and the SDK's models drop members they do not
know (``Tool`` ignores extra fields), so a listing rebuilt from ``list_tools()``'s
models would not hash as pinned. The pages are therefore asked for through the
session's own ``send_request`` with a result type that keeps every member as
received, after the SDK has checked the result against the negotiated protocol
version. Tools with an invalid ``x-mcp-header`` mark are left out only where
mcp-lock's own client leaves them out: a 2026-07-28 session over Streamable HTTP.

Needs the SDK: ``pip install 'mcp-lock[mcp]'``. Importing :mod:`mcp_lock` alone
never imports it.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Set, Tuple, Union, cast

from .binary import find_binary
from .commands import Classes, PathArg, check_listing, encode_json
from .errors import McpLockError
from .report import Report

try:
    import anyio
    import anyio.to_thread
    import mcp.types as _types
    from pydantic import BaseModel, ConfigDict
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("mcp_lock.sdk needs the MCP Python SDK: pip install 'mcp-lock[mcp]' (or pip install mcp)") from e

if TYPE_CHECKING:
    from mcp import ClientSession, StdioServerParameters

__all__ = ["check_session", "declared_handshake", "guarded", "judged_tools", "session_listing"]

MAX_PAGES = 500
"""Pages of one kind read before the listing is taken as incomplete (verify's default)."""

REQUEST_TIMEOUT = 30.0
"""Longest wait for one page, in seconds (verify's ``--request-timeout``)."""

TIMEOUT = 120.0
"""Longest time for the whole listing, in seconds (verify's ``--timeout``)."""

STREAMABLE_HTTP = "streamable-http"
"""The ``transport`` of a session over Streamable HTTP."""

_SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"

# (list method, member of the result, capability that offers it)
_Kind = Tuple[str, str, str]
_TOOLS: _Kind = ("tools/list", "tools", "tools")
_PROMPTS: _Kind = ("prompts/list", "prompts", "prompts")
_TEMPLATES: _Kind = ("resources/templates/list", "resourceTemplates", "resources")
_RESOURCES: _Kind = ("resources/list", "resources", "resources")

_REQUEST_TYPES = {
    "tools/list": "ListToolsRequest",
    "prompts/list": "ListPromptsRequest",
    "resources/templates/list": "ListResourceTemplatesRequest",
    "resources/list": "ListResourcesRequest",
}

# mcp 1.x wraps every request in a ClientRequest RootModel, and reads timeouts as
# timedelta; 2.x takes the request itself and seconds.
_WRAPPER = getattr(_types, "ClientRequest", None)
_SDK_1X = isinstance(_WRAPPER, type) and issubclass(_WRAPPER, BaseModel)


class _AsReceived(BaseModel):
    """A result type that keeps every member of the answer as the SDK decoded it."""

    model_config = ConfigDict(extra="allow")


async def check_session(
    session: ClientSession,
    server: str,
    *,
    init_result: Any = None,
    client: Optional[str] = None,
    project_dir: PathArg = ".",
    config: Optional[PathArg] = None,
    lock: Optional[PathArg] = None,
    policy: Optional[PathArg] = None,
    fail: Classes = None,
    warn: Classes = None,
    allow: Classes = None,
    exact: bool = False,
    resources: bool = False,
    max_pages: int = MAX_PAGES,
    request_timeout: Optional[float] = REQUEST_TIMEOUT,
    timeout: Optional[float] = TIMEOUT,
    transport: Optional[str] = None,
    binary: Optional[PathArg] = None,
    handshake: Optional[Mapping[str, Any]] = None,
) -> Report:
    """Checks what the server offers over ``session`` against the lock.

    Lists every page of ``tools/list``, and of ``prompts/list`` and
    ``resources/templates/list`` when the server declared those capabilities (and of
    ``resources/list`` with ``resources=True``), then sends those pages and the
    session (``protocolVersion``, ``serverInfo``, ``instructions``, ``capabilities``)
    to ``mcp-lock check-listing SERVER``. The comparison, classes, policy and verdicts
    are ``verify``'s.

    A listing that stopped early (a page request failed or timed out, a page had no
    list, a cursor came back, more than ``max_pages`` pages, ``timeout`` passed) is
    judged ``incomplete`` (exit code 3), never passed; why it stopped is in
    ``report.listing_errors``. So is a session whose initialize result is not known
    (mcp 1.x without ``init_result``): its instructions and serverInfo are then not
    judged.

    This judges the listing at this moment. A server can change what it offers later
    in the session; :func:`guarded` keeps enforcing the lock for the whole session.

    Args:
        session: a ``ClientSession`` after ``await session.initialize()`` (an
            ``mcp.Client`` is taken through its ``session``).
        server: the server's name in the project's client config.
        init_result: the initialize (or discover) result, when the session does not
            keep it (mcp 1.x: ``init_result=await session.initialize()``). A ``dict``
            of the result as received is used as is.
        client: the client profile this session is judged under; when ``None``,
            the pinned profile whose capabilities equal those this session
            declared (see ``handshake``), else the one the lock pins the server
            with.
        handshake: the ``initialize`` params this session sent
            (``protocolVersion``, ``capabilities``, ``clientInfo``). Read from the
            session when ``None`` (:func:`declared_handshake`: mcp 2.x keeps what
            it declares); give it for a session that does not (mcp 1.x). A
            declaration no pinned profile matches is judged against every approved
            definition, as the guard judges it, ``missing_profile`` naming the
            closest pinned profile and what pins it.
        resources: also list and judge resources (when ``[surface]`` pins them).
        max_pages: pages of one kind read before the kind is taken as incomplete.
        request_timeout: longest wait for one page, in seconds (``None``: the
            session's own read timeout).
        timeout: longest time for the whole listing, in seconds (``None``: no bound).
        transport: how the session reaches the server: ``"stdio"``,
            ``"streamable-http"`` or ``"sse"``. On a 2026-07-28 session over
            Streamable HTTP, tools with an invalid ``x-mcp-header`` mark are left
            out, as mcp-lock's client leaves them out. Taken from an ``mcp.Client``
            given a URL; otherwise not Streamable HTTP unless named.
        Other arguments: as for :func:`mcp_lock.check_listing`.

    Returns:
        The report: ``report.passed`` is false when the policy fails a change or the
        listing is incomplete. ``report.listing`` holds the documents judged; give
        the agent :func:`judged_tools` of it rather than listing again.

    Raises:
        McpLockError: a usage, config or lock error (an unknown server, no lock), or
            a session that is not JSON.
    """
    problems: List[str] = []
    documents = await session_listing(
        session,
        init_result=init_result,
        resources=resources,
        max_pages=max_pages,
        request_timeout=request_timeout,
        timeout=timeout,
        transport=transport,
        problems=problems,
    )
    if handshake is None:
        handshake = declared_handshake(session)
    run = functools.partial(
        check_listing,
        server,
        documents,
        client=client,
        handshake=handshake,
        project_dir=project_dir,
        config=config,
        lock=lock,
        policy=policy,
        fail=fail,
        warn=warn,
        allow=allow,
        exact=exact,
        binary=binary,
    )
    report = await anyio.to_thread.run_sync(run)
    return dataclasses.replace(report, listing_errors=problems, listing=documents)


def declared_handshake(session: Any) -> Optional[Dict[str, Any]]:
    """What ``session`` declared when it connected, as ``initialize`` params: the
    capabilities it sent (built from its callbacks: roots, sampling, elicitation,
    extensions), its ``clientInfo``, and the protocol version it negotiated.

    ``None`` when the session does not say: before ``initialize()``/``discover()``,
    or an SDK that keeps no such record (mcp 1.x); ``check_session`` then judges
    the listing under the profile the lock pins the server with.
    """
    session = _client_session(session)
    build = getattr(session, "_build_capabilities", None)
    version = getattr(session, "protocol_version", None)
    if not callable(build) or not isinstance(version, str):
        return None
    # initialize() builds the capabilities for the newest handshake version it asks
    # for; server/discover for the version negotiated.
    asked = version
    if getattr(session, "initialize_result", None) is not None:
        try:
            from mcp_types.version import LATEST_HANDSHAKE_VERSION

            asked = LATEST_HANDSHAKE_VERSION
        except ImportError:  # pragma: no cover - depends on the SDK
            pass
    capabilities = build(asked)
    dump = getattr(capabilities, "model_dump", None)
    if dump is None:
        return None
    declared: Dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": dump(by_alias=True, mode="json", exclude_none=True),
    }
    info = getattr(session, "_client_info", None)
    if info is not None and callable(getattr(info, "model_dump", None)):
        declared["clientInfo"] = info.model_dump(by_alias=True, mode="json", exclude_none=True)
    return declared


def judged_tools(report: Report) -> List[Any]:
    """The tools :func:`check_session` judged, as the SDK's ``Tool`` models: what the
    agent should plan with once ``report.passed``.

    Built from ``report.listing``, the definitions this session received and
    mcp-lock judged. Calling ``list_tools()`` again instead would ask the server a
    second time, and it may answer otherwise. Tools the project's (or the user's) tool
    rules deny to this host are left out, as the guard hides them.
    """
    denied = {d.name for server in report.servers for d in server.denied if d.kind == "tool"}
    return [
        _types.Tool.model_validate(tool)
        for document in report.listing
        if isinstance(document.get("tools"), list)
        for tool in document["tools"]
        if not (isinstance(tool, dict) and tool.get("name") in denied)
    ]


async def session_listing(
    session: ClientSession,
    *,
    init_result: Any = None,
    resources: bool = False,
    max_pages: int = MAX_PAGES,
    request_timeout: Optional[float] = REQUEST_TIMEOUT,
    timeout: Optional[float] = TIMEOUT,
    transport: Optional[str] = None,
    problems: Optional[List[str]] = None,
) -> List[Dict[str, Any]]:
    """What :func:`check_session` sends to mcp-lock: the session as the client saw it,
    then every list page in order, each definition exactly as received.

    A kind whose listing stopped early (a page request failed or timed out, a page
    without its list or with a number JSON cannot carry, the server repeated a
    cursor, more than ``max_pages`` pages, ``timeout`` passed) ends with a page
    naming a ``nextCursor``, so mcp-lock judges it incomplete: the last page
    received, or, when not even the first arrived, an empty page naming the cursor
    ``""``. A declared kind whose first page is answered -32601 (method not found)
    is an empty listing instead, as verify reads it. Why each stopped is appended to ``problems``, and so is a session whose
    instructions and serverInfo cannot be known.

    The documents are ``check-listing``'s input format; write them to a file to check
    them later with ``mcp-lock check-listing SERVER FILE``.
    """
    given = session
    session = _client_session(session)
    problems = [] if problems is None else problems
    if transport is None:
        transport = _transport_of(given)
    seen = _session_document(session, init_result, problems)
    documents: List[Dict[str, Any]] = [seen] if seen else []
    capabilities = seen.get("capabilities")
    declared = capabilities if isinstance(capabilities, dict) else {}
    kinds = [_TOOLS, _PROMPTS, _TEMPLATES] + ([_RESOURCES] if resources else [])
    # Tools are always asked for; the others only when declared, as verify does.
    kinds = [kind for kind in kinds if kind is _TOOLS or declared.get(kind[2]) is not None]
    read_timeout = _read_timeout(session, request_timeout)
    marks = transport == STREAMABLE_HTTP
    listing: Optional[_Listing] = None
    with anyio.move_on_after(timeout) as scope:
        for kind in kinds:
            listing = _Listing(kind)
            await listing.run(session, max_pages, read_timeout, marks, problems)
            documents.extend(listing.pages)
            listing = None
    if scope.cancelled_caught and listing is not None:
        method = listing.kind[0]
        problems.append(f"{method}{listing.at()}: no complete listing within the timeout of {timeout:g} s")
        listing.cut()
        documents.extend(listing.pages)
    return documents


class _Listing:
    """The pages of one kind, read so far."""

    def __init__(self, kind: _Kind) -> None:
        self.kind = kind
        self.pages: List[Dict[str, Any]] = []
        self.cursor: Optional[str] = None

    def at(self) -> str:
        return "" if self.cursor is None else f" (cursor {self.cursor!r})"

    def cut(self) -> None:
        """Ends the kind as incomplete: its last page names a page that is missing."""
        last = self.pages[-1] if self.pages else None
        if last is None or not isinstance(last.get("nextCursor"), str):
            self.pages.append({self.kind[1]: [], "nextCursor": ""})

    async def run(self, session: Any, max_pages: int, read_timeout: Any, marks: bool, problems: List[str]) -> None:
        method, member, _ = self.kind
        cursors: Set[str] = set()

        def stop(why: str) -> None:
            problems.append(f"{method}{self.at()}: {why}")
            self.cut()

        while True:
            request = _request(method, self.cursor)
            try:
                if read_timeout is None:
                    result = await session.send_request(request, _AsReceived)
                else:
                    result = await session.send_request(request, _AsReceived, request_read_timeout_seconds=read_timeout)
            except Exception as e:  # the SDK's error, a read timeout, a closed connection
                if not self.pages and method != "tools/list" and _error_code(e) == -32601:
                    # Declared, but no such list (method not found on the first
                    # page): none of this kind, as verify reads it.
                    self.pages.append({member: []})
                    return None
                return stop(str(e) or type(e).__name__)
            received = dict(result.model_extra or {})
            items = received.get(member)
            if not isinstance(items, list):
                return stop(f'the answer has no "{member}" array')
            if marks and member == "tools":
                items = _offered_tools(session, items)
            page: Dict[str, Any] = {member: items}
            next_cursor = received.get("nextCursor")
            if next_cursor is not None and not isinstance(next_cursor, str):
                return stop('"nextCursor" is not a string')
            if next_cursor is not None:
                page["nextCursor"] = next_cursor
            try:
                encode_json(page)
            except McpLockError as e:
                return stop(e.message)
            self.pages.append(page)
            if next_cursor is None:
                return None
            if next_cursor in cursors:
                problems.append(f"{method}: the server repeated the cursor {next_cursor!r}")
                return None
            if len(self.pages) >= max_pages:
                problems.append(f"{method}: more than {max_pages} pages")
                return None
            cursors.add(next_cursor)
            self.cursor = next_cursor


def _error_code(error: BaseException) -> Optional[int]:
    """The JSON-RPC error code of the SDK's McpError, else None."""
    code = getattr(getattr(error, "error", None), "code", None)
    return code if isinstance(code, int) else None


def _request(method: str, cursor: Optional[str]) -> Any:
    """The SDK's request for one page (mcp 2.x takes it as is, 1.x wrapped)."""
    data: Dict[str, Any] = {"method": method}
    if cursor is not None:
        data["params"] = {"cursor": cursor}
    request = getattr(_types, _REQUEST_TYPES[method]).model_validate(data)
    if _SDK_1X:
        return cast(Any, _WRAPPER)(request)  # a RootModel
    return request


def _read_timeout(session: Any, seconds: Optional[float]) -> Union[float, timedelta, None]:
    """``seconds`` as this session's ``send_request`` takes its read timeout: a float
    (mcp 2.x) or a ``timedelta`` (mcp 1.x, and sessions declaring one)."""
    if seconds is None:
        return None
    try:
        parameter = inspect.signature(session.send_request).parameters.get("request_read_timeout_seconds")
    except (TypeError, ValueError):
        parameter = None
    annotation = (
        "" if parameter is None or parameter.annotation is inspect.Parameter.empty else str(parameter.annotation)
    )
    if "timedelta" in annotation or (_SDK_1X and "float" not in annotation):
        return timedelta(seconds=seconds)
    return float(seconds)


def _offered_tools(session: Any, tools: List[Any]) -> List[Any]:
    """The tools a 2026-07-28 client over Streamable HTTP offers: without those whose
    ``x-mcp-header`` marks are invalid (as mcp-lock's client, and the SDK's
    ``list_tools()``, leave them out)."""
    try:
        from mcp.shared.inbound import find_invalid_x_mcp_header
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS
    except ImportError:  # mcp 1.x has no such era
        return tools
    if getattr(session, "protocol_version", None) not in MODERN_PROTOCOL_VERSIONS:
        return tools
    return [
        tool
        for tool in tools
        if not (isinstance(tool, dict) and find_invalid_x_mcp_header(tool.get("inputSchema")) is not None)
    ]


def _client_session(session: Any) -> Any:
    """The ``ClientSession`` itself, from an ``mcp.Client`` too."""
    if hasattr(session, "send_request"):
        return session
    inner = getattr(session, "session", None)
    if inner is not None and hasattr(inner, "send_request"):
        return inner
    raise TypeError(f"not an MCP ClientSession: {type(session).__name__}")


def _transport_of(session: Any) -> Optional[str]:
    """The transport when it can be told: an ``mcp.Client`` given a URL connects over
    Streamable HTTP."""
    if not hasattr(session, "send_request") and isinstance(getattr(session, "server", None), str):
        return STREAMABLE_HTTP
    return None


def _session_document(session: Any, init_result: Any, problems: List[str]) -> Dict[str, Any]:
    """``protocolVersion``, ``serverInfo``, ``instructions`` and ``capabilities`` as
    the session saw them.

    From the initialize (or discover) result when it is known, every member given,
    ``null`` where the server sent none (as mcp-lock's client reads it), so a change
    or a removal is judged. Without one (mcp 1.x keeps none) only the version and
    capabilities the session keeps are given; mcp-lock then takes the pinned
    instructions and serverInfo, and ``problems`` says they were not judged.
    """
    result = init_result
    if result is None:
        result = getattr(session, "initialize_result", None) or getattr(session, "discover_result", None)
    version = getattr(session, "protocol_version", None)
    seen: Dict[str, Any] = {}
    if result is None:
        if isinstance(version, str):
            seen["protocolVersion"] = version
        capabilities = _dump(getattr(session, "server_capabilities", None))
        if capabilities is None and callable(getattr(session, "get_server_capabilities", None)):
            capabilities = _dump(session.get_server_capabilities())  # mcp 1.x
        if capabilities is not None:
            seen["capabilities"] = capabilities
        problems.append(
            "session: the instructions and serverInfo could not be judged: this SDK session keeps no "
            "initialize result; pass init_result=await session.initialize()"
        )
        return seen
    given = _dump(result)
    if isinstance(given, dict) and "jsonrpc" in given and isinstance(given.get("result"), dict):
        given = given["result"]  # a JSON-RPC answer as received
    if not isinstance(given, dict):
        raise TypeError(f"init_result is not an initialize or discover result: {type(result).__name__}")
    # A discover result names no version: the one the session negotiated.
    version = given.get("protocolVersion", version)
    if isinstance(version, str):
        seen["protocolVersion"] = version
    info = given.get("serverInfo")
    meta = given.get("_meta")
    if info is None and isinstance(meta, dict):
        info = meta.get(_SERVER_INFO_META)  # where a discover result carries it
    seen["serverInfo"] = info
    capabilities = given.get("capabilities")
    seen["capabilities"] = {} if capabilities is None else capabilities
    seen["instructions"] = given.get("instructions")
    return seen


def _dump(value: Any) -> Any:
    """An SDK model as the JSON it was read from (wire names, only members that were
    set); a mapping as a ``dict``; anything else as it is."""
    if isinstance(value, Mapping):
        return dict(value)
    dump = getattr(value, "model_dump", None)
    if dump is None:
        return value
    return dump(by_alias=True, mode="json", exclude_unset=True)


def guarded(
    params: StdioServerParameters,
    server: str,
    *,
    project_dir: Optional[PathArg] = None,
    binary: Optional[PathArg] = None,
    lock: Optional[PathArg] = None,
    config: Optional[PathArg] = None,
    policy: Optional[PathArg] = None,
    exact: bool = False,
    keep_command: bool = False,
) -> StdioServerParameters:
    """Parameters that start ``server`` behind ``mcp-lock guard``.

    The guard starts the server from the project's client config entry for
    ``server`` (the launch ``verify`` checked and the lock pins), proxies the whole
    session and enforces the lock on it: drifted or unpinned tools are hidden and
    calls to them answered by the guard. ``params``' ``env`` and encoding are kept;
    its ``command`` and ``args`` are used only with ``keep_command=True``, which
    starts them instead of the config's entry (``guard SERVER -- COMMAND...``),
    still judged against ``server``'s pins.

    Args:
        params: how the agent would start the server.
        server: the server's name in the project's client config.
        project_dir: the project (its config, ``mcp.lock``); the guard runs there.
            Defaults to ``params.cwd``, else the current directory.
        binary: the mcp-lock executable (see :func:`mcp_lock.find_binary`).
        lock, config, policy: ``--lock``, ``--config``, ``--policy``.
        exact: serve only tools whose definitions are exactly pinned.
        keep_command: start ``params.command`` and ``params.args`` under the guard.

    Raises:
        McpLockError: no mcp-lock binary was found.
    """
    project = Path(os.fspath(project_dir or params.cwd or os.getcwd())).resolve()
    args: List[str] = ["guard", server]
    for flag, path in (("--lock", lock), ("--config", config), ("--policy", policy)):
        if path is not None:
            args += [flag, os.fspath(path)]
    if exact:
        args.append("--exact")
    if keep_command:
        args += ["--", params.command, *params.args]
    return params.model_copy(update={"command": find_binary(binary), "args": args, "cwd": str(project)})
