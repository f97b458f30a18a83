"""The JSON report of `mcp-lock verify` and `check-listing`, as typed objects.

Built from ``--format json`` (report_version 2, docs/json-report.md). Every object
keeps the JSON it was built from in ``raw``, so a member added to the report later
is still reachable before this module names it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional

__all__ = [
    "Change",
    "Finding",
    "MissingProfile",
    "PackageCheck",
    "Report",
    "ServerChange",
    "ServerResult",
    "Summary",
]


def _raw() -> Any:
    """The field holding an object's source JSON: not shown, not compared."""
    return dataclasses.field(default_factory=dict, repr=False, compare=False)


def _str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _list(value: Any) -> List[Any]:
    return list(value) if isinstance(value, list) else []


@dataclass(frozen=True)
class Denied:
    """A definition the tool rules deny to the report's host: pinned, never served."""

    kind: str
    """``tool``, ``prompt`` or ``resource_template``."""
    name: str
    """Its key, as the lock keys it (a template's ``uriTemplate``)."""
    rule: str
    """The rule as its file says it, e.g. ``[tools] deny "github/delete_*"``."""
    source: str
    """The file that holds the rule."""
    action: str
    """What the policy's ``tool-denied`` rule does with it (``allow``: a note)."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Denied:
        return cls(
            kind=str(data.get("kind", "")),
            name=str(data.get("name", "")),
            rule=str(data.get("rule", "")),
            source=str(data.get("source", "")),
            action=str(data.get("action") or "allow"),
        )


@dataclass(frozen=True)
class Finding:
    """One reason a definition changed: a class, where, the values there, and why."""

    cls: str
    """``authority``, ``breaking``, ``semantic``, ``additive`` or ``cosmetic`` (``class`` in the JSON)."""
    pointer: str
    """RFC 6901 pointer into the definition; ``""`` for the whole definition."""
    before: Any
    """The pinned value there (``None`` when absent)."""
    after: Any
    """The live value there (``None`` when absent)."""
    reason: str
    """One line."""
    instructs_model: bool = False
    """A description that newly tells the model what to do."""
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        return cls(
            cls=str(data.get("class", "")),
            pointer=str(data.get("pointer", "")),
            before=data.get("before"),
            after=data.get("after"),
            reason=str(data.get("reason", "")),
            instructs_model=data.get("instructs_model") is True,
            raw=data,
        )


@dataclass(frozen=True)
class Change:
    """A definition added, removed, changed or renamed since the lock pinned it."""

    kind: str
    """``tool``, ``prompt``, ``resource_template`` or ``resource``."""
    tool: str
    """The definition's key: a tool's or prompt's name, a template's uriTemplate, a resource's uri."""
    change: str
    """``added``, ``removed``, ``changed`` or ``renamed``."""
    cls: Optional[str]
    """The worst class among the findings (``class`` in the JSON)."""
    action: Optional[str]
    """What the policy does with it: ``fail``, ``warn`` or ``allow``."""
    parts: List[str]
    """For ``changed``: which of description, inputSchema, outputSchema, annotations, other differ."""
    findings: List[Finding]
    """Worst first."""
    pinned_hash: Optional[str]
    live_hash: Optional[str]
    problem: Optional[str] = None
    """Why the live definition can never match a pin, if it cannot."""
    renamed_from: Optional[str] = None
    """For ``renamed``: the old key."""
    raw: Mapping[str, Any] = _raw()

    @property
    def name(self) -> str:
        """The definition's key (the JSON calls it ``tool`` for every kind)."""
        return self.tool

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Change:
        return cls(
            kind=str(data.get("kind", "tool")),
            tool=str(data.get("tool", "")),
            change=str(data.get("change", "")),
            cls=_str(data.get("class")),
            action=_str(data.get("action")),
            parts=[str(p) for p in _list(data.get("parts"))],
            findings=[Finding.from_json(f) for f in _list(data.get("findings"))],
            pinned_hash=_str(data.get("pinned_hash")),
            live_hash=_str(data.get("live_hash")),
            problem=_str(data.get("problem")),
            renamed_from=_str(data.get("renamed_from")),
            raw=data,
        )


@dataclass(frozen=True)
class ServerChange:
    """A difference in what the server says about itself (instructions, identity, ...)."""

    field: str
    """``instructions``, ``server_identity``, ``server_info``, ``protocol_version``, ``launch``, ..."""
    pinned: Any
    live: Any
    drift: bool
    """A drift makes the server stale; otherwise it is a note."""
    cls: Optional[str]
    """``semantic``, ``authority``, ``breaking``, or ``None`` for a note (``class`` in the JSON)."""
    action: Optional[str]
    rule: Optional[str] = None
    """``launch-changed`` for a launch that may be another server; ``None`` otherwise."""
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ServerChange:
        return cls(
            field=str(data.get("field", "")),
            pinned=data.get("pinned"),
            live=data.get("live"),
            drift=data.get("drift") is True,
            cls=_str(data.get("class")),
            action=_str(data.get("action")),
            rule=_str(data.get("rule")),
            raw=data,
        )


@dataclass(frozen=True)
class PackageCheck:
    """What a pinned stdio server's entry launches, against the lock's package pin."""

    status: str
    """``pinned``, ``changed``, ``floating``, ``not_pinned_yet``, ``unrecognised``, ``skipped`` or ``unverifiable``."""
    kind: Optional[str]
    """``npm``, ``pypi``, ``oci``, ``script`` or ``unrecognised``."""
    launcher: Optional[str]
    pinned: Optional[str]
    live: Optional[str]
    message: Optional[str]
    action: Optional[str]
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PackageCheck:
        return cls(
            status=str(data.get("status", "")),
            kind=_str(data.get("kind")),
            launcher=_str(data.get("launcher")),
            pinned=_str(data.get("pinned")),
            live=_str(data.get("live")),
            message=_str(data.get("message")),
            action=_str(data.get("action")),
            raw=data,
        )


@dataclass(frozen=True)
class MissingProfile:
    """The client declared capabilities no profile the lock pins the server under has
    (``check-listing --handshake``): the listing was judged against every approved
    definition, and the server is stale."""

    closest: str
    """The pinned profile with the fewest differences."""
    difference: List[str]
    """JSON pointers from the closest profile's capabilities to the declared ones:
    ``+/sampling`` declared and not pinned, ``-/roots`` the reverse, ``~/x`` another value."""
    profile: Optional[str]
    """A known profile (built in, or in mcp-lock.toml) with the declared capabilities."""
    pin_with: str
    """What pins the client: a command, or what to define first."""
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MissingProfile:
        return cls(
            closest=str(data.get("closest", "")),
            difference=[str(d) for d in _list(data.get("difference"))],
            profile=_str(data.get("profile")),
            pin_with=str(data.get("pin_with", "")),
            raw=data,
        )


@dataclass(frozen=True)
class ServerResult:
    """One server under one client profile: its verdict and everything that changed."""

    name: str
    """The server's name in the client config."""
    profile: str
    """The client profile it was listed (or received) under."""
    verdict: str
    """``converged``, ``stale``, ``incomplete`` or ``unverifiable``."""
    transport: str
    """``stdio``, ``streamable-http`` or ``sse``."""
    action: str
    """The most serious policy action among its changes (``allow`` when none)."""
    error: Optional[str]
    """Why it is not converged, when there is one line to say."""
    changes: List[Change]
    """Definitions added, removed, changed or renamed (none when incomplete or unverifiable)."""
    server_changes: List[ServerChange]
    pinned: bool
    """Whether the lock pins this server."""
    profile_pinned: bool
    """Whether the lock pins it under this profile."""
    tools: Optional[int]
    """Tools in the listing; ``None`` unless it was read completely."""
    prompts: Optional[int] = None
    resource_templates: Optional[int] = None
    resources: Optional[int] = None
    not_pinned_yet: List[str] = dataclasses.field(default_factory=list)
    """Kinds the server lists that the lock does not pin yet (a notice)."""
    not_implemented: List[str] = dataclasses.field(default_factory=list)
    """Kinds the server declares but whose list it answered with -32601 (method not
    found): listed, and pinned, as none (a notice)."""
    package: Optional[PackageCheck] = None
    missing_profile: Optional[MissingProfile] = None
    """The declared handshake matches no pinned profile (``check_session``, ``check_listing(handshake=...)``)."""
    denied: List[Denied] = dataclasses.field(default_factory=list)
    """Definitions the tool rules deny to this host (still pinned, never to be used)."""
    stderr: List[str] = dataclasses.field(default_factory=list)
    """The server's last stderr lines when it failed."""
    elapsed_ms: Optional[int] = None
    raw: Mapping[str, Any] = _raw()

    @property
    def converged(self) -> bool:
        """The listing matches the lock exactly."""
        return self.verdict == "converged"

    @property
    def failed(self) -> List[Change]:
        """The changes the policy fails."""
        return [c for c in self.changes if c.action == "fail"]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ServerResult:
        package = data.get("package")
        missing = data.get("missing_profile")
        return cls(
            name=str(data.get("name", "")),
            profile=str(data.get("profile", "")),
            verdict=str(data.get("verdict", "")),
            transport=str(data.get("transport", "")),
            action=str(data.get("action") or "allow"),
            error=_str(data.get("error")),
            changes=[Change.from_json(c) for c in _list(data.get("changes"))],
            server_changes=[ServerChange.from_json(c) for c in _list(data.get("server_changes"))],
            pinned=data.get("pinned") is True,
            profile_pinned=data.get("profile_pinned") is True,
            tools=_int(data.get("tools")),
            prompts=_int(data.get("prompts")),
            resource_templates=_int(data.get("resource_templates")),
            resources=_int(data.get("resources")),
            not_pinned_yet=[str(k) for k in _list(data.get("not_pinned_yet"))],
            not_implemented=[str(k) for k in _list(data.get("not_implemented"))],
            package=PackageCheck.from_json(package) if isinstance(package, dict) else None,
            missing_profile=MissingProfile.from_json(missing) if isinstance(missing, dict) else None,
            denied=[Denied.from_json(d) for d in _list(data.get("denied")) if isinstance(d, dict)],
            stderr=[str(line) for line in _list(data.get("stderr"))],
            elapsed_ms=_int(data.get("elapsed_ms")),
            raw=data,
        )


@dataclass(frozen=True)
class Summary:
    """Servers per verdict and changes per policy action."""

    converged: int = 0
    stale: int = 0
    incomplete: int = 0
    unverifiable: int = 0
    fail: int = 0
    warn: int = 0
    allow: int = 0

    @classmethod
    def from_json(cls, data: Any) -> Summary:
        if not isinstance(data, dict):
            return cls()
        names = ("converged", "stale", "incomplete", "unverifiable", "fail", "warn", "allow")
        return cls(**{n: _int(data.get(n)) or 0 for n in names})


@dataclass(frozen=True)
class Report:
    """A whole report: one run of ``mcp-lock verify`` or ``check-listing``.

    ``exit_code`` is mcp-lock's own: 0 nothing the policy fails, 1 a change the
    policy fails, 3 nothing failed but a listing was incomplete or unverifiable.
    """

    exit_code: int
    summary: Summary
    servers: List[ServerResult]
    lock: Optional[str]
    """The lock's path as mcp-lock was given it."""
    report_version: int
    raw: Dict[str, Any] = _raw()
    """The whole JSON document."""
    stderr: str = dataclasses.field(default="", repr=False, compare=False)
    """What mcp-lock wrote on stderr (warnings)."""
    listing_errors: List[str] = dataclasses.field(default_factory=list, compare=False)
    """From :func:`mcp_lock.sdk.check_session`: why a listing stopped early (a page
    request that failed, a repeated cursor, a page without its array, the time
    bounds), each with the SDK's error, and what could not be judged (a session
    whose initialize result is not known)."""
    listing: List[Dict[str, Any]] = dataclasses.field(default_factory=list, repr=False, compare=False)
    """From :func:`mcp_lock.sdk.check_session`: the documents judged, as sent to
    ``check-listing`` (the session, then every page in order, each definition as
    received). Hand the agent these definitions (:func:`mcp_lock.sdk.judged_tools`),
    not a second ``list_tools()``, which the server may answer otherwise."""

    @property
    def passed(self) -> bool:
        """Nothing the policy fails, every listing was checked (exit code 0), and
        nothing the session received went unjudged (no ``listing_errors``: a session
        whose instructions could not be known does not pass)."""
        return self.exit_code == 0 and not self.listing_errors

    def server(self, name: str, profile: Optional[str] = None) -> ServerResult:
        """The result for a server (and profile); ``KeyError`` when the report has none."""
        for result in self.servers:
            if result.name == name and (profile is None or result.profile == profile):
                return result
        raise KeyError(name if profile is None else f"{name} [{profile}]")

    @classmethod
    def from_json(cls, data: Dict[str, Any], *, stderr: str = "") -> Report:
        """Builds a report from the parsed JSON document."""
        return cls(
            exit_code=_int(data.get("exit_code")) or 0,
            summary=Summary.from_json(data.get("summary")),
            servers=[ServerResult.from_json(s) for s in _list(data.get("servers"))],
            lock=_str(data.get("lock")),
            report_version=_int(data.get("report_version")) or 0,
            raw=data,
            stderr=stderr,
        )
