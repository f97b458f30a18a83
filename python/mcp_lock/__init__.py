"""mcp-lock from Python: verify MCP servers against ``mcp.lock``, or check the listing
an agent's own session received, and read the report as typed objects.

The wheel carries the ``mcp-lock`` binary; this package runs it and parses its JSON
report (docs/json-report.md). Only the standard library is needed; the MCP Python
SDK integration is in :mod:`mcp_lock.sdk` (``pip install 'mcp-lock[mcp]'``).

    >>> import mcp_lock
    >>> report = mcp_lock.verify(project_dir="path/to/project")
    >>> report.passed, [(s.name, s.verdict) for s in report.servers]
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version

from .binary import find_binary
from .commands import check_listing, verify
from .errors import McpLockError
from .report import Change, Denied, Finding, MissingProfile, PackageCheck, Report, ServerChange, ServerResult, Summary

__all__ = [
    "Change",
    "Denied",
    "Finding",
    "McpLockError",
    "MissingProfile",
    "PackageCheck",
    "Report",
    "ServerChange",
    "ServerResult",
    "Summary",
    "__version__",
    "check_listing",
    "find_binary",
    "verify",
]


def _version() -> str:
    try:
        return _distribution_version("mcp-lock")
    except PackageNotFoundError:
        return "unknown"


__version__ = _version()
"""The installed distribution's version (the crate's), or ``unknown`` from a source tree."""
