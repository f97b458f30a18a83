"""mcp-lock for agents on the official MCP Python SDK (the ``mcp`` package).

* :func:`check_session`: after ``await session.initialize()``, list what the server
  offers over that session and have mcp-lock judge it against the lock, as
  ``verify`` would judge a listing of its own: refuse to go on when it fails.
* :func:`guarded`: the ``StdioServerParameters`` that start a server behind
  ``mcp-lock guard``, which enforces the lock for the whole session.

The definitions are sent to mcp-lock exactly as the server sent them. The lock pins
a hash of each definition's JSON, and the SDK's models drop members they do not
know (``Tool`` ignores extra fields), so a listing rebuilt from ``list_tools()``'s
models would not hash as pinned. The pages are therefore asked for through the
session's own ``send_request`` with a result type that keeps every member as
received, after the SDK has checked the result against the negotiated protocol
version, and the tools the SDK leaves out of ``list_tools()`` (a 2026-07-28 tool
with an invalid ``x-mcp-header``) are left out here too.

Needs the SDK: ``pip install 'mcp-lock[mcp]'``. Importing :mod:`mcp_lock` alone
never imports it.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Set, cast

from .binary import find_binary
from .commands import Classes, PathArg, check_listing
from .report import Report

try:
    import anyio.to_thread
    import mcp.types as _types
    from pydantic import BaseModel, ConfigDict
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("mcp_lock.sdk needs the MCP Python SDK: pip install 'mcp-lock[mcp]' (or pip install mcp)") from e

if TYPE_CHECKING:
    from mcp import ClientSession, StdioServerParameters

__all__ = ["check_session", "guarded", "session_listing"]

MAX_PAGES = 500
"""Pages of one kind read before the listing is taken as incomplete (verify's default)."""

# (list method, member of the result, capability that offers it)
_TOOLS = ("tools/list", "tools", "tools")
_PROMPTS = ("prompts/list", "prompts", "prompts")
_TEMPLATES = ("resources/templates/list", "resourceTemplates", "resources")
_RESOURCES = ("resources/list", "resources", "resources")

_REQUEST_TYPES = {
    "tools/list": "ListToolsRequest",
    "prompts/list": "ListPromptsRequest",
    "resources/templates/list": "ListResourceTemplatesRequest",
    "resources/list": "ListResourcesRequest",
}


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
    binary: Optional[PathArg] = None,
) -> Report:
    """Checks what the server offers over ``session`` against the lock.

    Lists every page of ``tools/list``, and of ``prompts/list`` and
    ``resources/templates/list`` when the server declared those capabilities (and of
    ``resources/list`` with ``resources=True``), then sends those pages and the
    session (``protocolVersion``, ``serverInfo``, ``instructions``, ``capabilities``)
    to ``mcp-lock check-listing SERVER``. The comparison, classes, policy and verdicts
    are ``verify``'s.

    A listing that stopped early (a page request failed, a cursor came back, more
    than ``max_pages`` pages) is judged ``incomplete`` (exit code 3), never passed;
    why it stopped is in ``report.listing_errors``.

    Args:
        session: a ``ClientSession`` after ``await session.initialize()`` (an
            ``mcp.Client`` is taken through its ``session``).
        server: the server's name in the project's client config.
        init_result: the initialize (or discover) result, when the session does not
            keep it (mcp 1.x). A ``dict`` of the result as received is used as is.
        client: the client profile this session is judged under; the one the lock
            pins the server with when ``None``.
        resources: also list and judge resources (when ``[surface]`` pins them).
        max_pages: pages of one kind read before the kind is taken as incomplete.
        Other arguments: as for :func:`mcp_lock.check_listing`.

    Returns:
        The report: ``report.passed`` is false when the policy fails a change or the
        listing is incomplete.

    Raises:
        McpLockError: a usage, config or lock error (an unknown server, no lock).
    """
    problems: List[str] = []
    documents = await session_listing(
        session, init_result=init_result, resources=resources, max_pages=max_pages, problems=problems
    )
    run = functools.partial(
        check_listing,
        server,
        documents,
        client=client,
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
    return dataclasses.replace(report, listing_errors=problems)


async def session_listing(
    session: ClientSession,
    *,
    init_result: Any = None,
    resources: bool = False,
    max_pages: int = MAX_PAGES,
    problems: Optional[List[str]] = None,
) -> List[Dict[str, Any]]:
    """What :func:`check_session` sends to mcp-lock: the session as the client saw it,
    then every list page in order, each definition exactly as received.

    A kind whose listing stopped early (a page request failed, the server repeated a
    cursor, more than ``max_pages`` pages) ends with a page naming a ``nextCursor``,
    so mcp-lock judges it incomplete: the last page received, or, when not even the
    first arrived, an empty page naming the cursor ``""``. Why each stopped is
    appended to ``problems``.

    The documents are ``check-listing``'s input format; write them to a file to check
    them later with ``mcp-lock check-listing SERVER FILE``.
    """
    session = _client_session(session)
    problems = [] if problems is None else problems
    seen = _session_document(session, init_result)
    documents: List[Dict[str, Any]] = [seen] if seen else []
    capabilities = seen.get("capabilities")
    declared = capabilities if isinstance(capabilities, dict) else {}
    kinds = [_TOOLS, _PROMPTS, _TEMPLATES] + ([_RESOURCES] if resources else [])
    for kind in kinds:
        method, member, capability = kind
        # Tools are always asked for; the others only when declared, as verify does.
        if kind is not _TOOLS and declared.get(capability) is None:
            continue
        documents.extend(await _pages(session, method, member, max_pages, problems))
    return documents


async def _pages(session: Any, method: str, member: str, max_pages: int, problems: List[str]) -> List[Dict[str, Any]]:
    pages: List[Dict[str, Any]] = []
    cursors: Set[str] = set()
    cursor: Optional[str] = None
    while True:
        try:
            result = await session.send_request(_request(method, cursor), _AsReceived)
        except Exception as e:  # the SDK's error, a timeout, a closed connection
            at = "" if cursor is None else f" (cursor {cursor!r})"
            problems.append(f"{method}{at}: {e or type(e).__name__}")
            if not pages:
                pages.append({member: [], "nextCursor": ""})
            return pages
        received = dict(result.model_extra or {})
        items = received.get(member)
        page: Dict[str, Any] = {member: items}
        if member == "tools" and isinstance(items, list):
            page[member] = _offered_tools(session, items)
        next_cursor = received.get("nextCursor")
        if next_cursor is not None:
            page["nextCursor"] = next_cursor
        pages.append(page)
        if not isinstance(next_cursor, str):
            return pages
        if next_cursor in cursors:
            problems.append(f"{method}: the server repeated the cursor {next_cursor!r}")
            return pages
        if len(pages) >= max_pages:
            problems.append(f"{method}: more than {max_pages} pages")
            return pages
        cursors.add(next_cursor)
        cursor = next_cursor


def _request(method: str, cursor: Optional[str]) -> Any:
    """The SDK's request for one page (mcp 2.x takes it as is, 1.x wrapped)."""
    data: Dict[str, Any] = {"method": method}
    if cursor is not None:
        data["params"] = {"cursor": cursor}
    request = getattr(_types, _REQUEST_TYPES[method]).model_validate(data)
    wrapper = getattr(_types, "ClientRequest", None)
    if isinstance(wrapper, type) and issubclass(wrapper, BaseModel):
        return cast(Any, wrapper)(request)  # mcp 1.x: ClientRequest is a RootModel
    return request


def _offered_tools(session: Any, tools: List[Any]) -> List[Any]:
    """The tools ``list_tools()`` would offer: on a 2026-07-28 session, the SDK
    drops a tool whose ``x-mcp-header`` marks are invalid (as mcp-lock does)."""
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


def _session_document(session: Any, init_result: Any) -> Dict[str, Any]:
    """``protocolVersion``, ``serverInfo``, ``instructions`` and ``capabilities`` as
    the session saw them; what neither the result nor the session has is left out
    (mcp-lock then takes the pinned value)."""
    result = init_result
    if result is None:
        result = getattr(session, "initialize_result", None) or getattr(session, "discover_result", None)
    given = _dump(result)
    given = given if isinstance(given, dict) else {}
    seen: Dict[str, Any] = {}
    version = given.get("protocolVersion") or getattr(session, "protocol_version", None)
    if isinstance(version, str):
        seen["protocolVersion"] = version
    info = given.get("serverInfo")
    if info is None:
        info = _dump(getattr(session, "server_info", None))
    if info is not None:
        seen["serverInfo"] = info
    capabilities = given.get("capabilities")
    if capabilities is None:
        capabilities = _dump(getattr(session, "server_capabilities", None))
    if capabilities is None and callable(getattr(session, "get_server_capabilities", None)):
        capabilities = _dump(session.get_server_capabilities())  # mcp 1.x
    if capabilities is not None:
        seen["capabilities"] = capabilities
    if result is not None:
        # The session saw the result: no instructions in it means none.
        seen["instructions"] = given.get("instructions")
    elif hasattr(session, "instructions"):
        seen["instructions"] = session.instructions
    return seen


def _dump(value: Any) -> Any:
    """An SDK model as the JSON it was read from: wire names, only members that were set."""
    if value is None or isinstance(value, Mapping):
        return dict(value) if isinstance(value, Mapping) else None
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
