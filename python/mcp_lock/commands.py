"""`mcp-lock verify` and `mcp-lock check-listing`, run as a subprocess and read back
as a :class:`~mcp_lock.report.Report`."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, List, Mapping, Optional, Sequence, Union

from .binary import find_binary
from .errors import McpLockError
from .report import Report

__all__ = ["check_listing", "verify"]

PathArg = Union[str, "os.PathLike[str]"]
Classes = Union[str, Sequence[str], None]

# Exit codes that come with a report: 0 pass, 1 drift the policy fails, 3 incomplete
# or unverifiable. Anything else (2: usage, config, lock or input error) has none.
_REPORTED = (0, 1, 3)


def verify(
    servers: Union[str, Sequence[str], None] = None,
    *,
    project_dir: PathArg = ".",
    client: Optional[str] = None,
    config: Optional[PathArg] = None,
    lock: Optional[PathArg] = None,
    policy: Optional[PathArg] = None,
    fail: Classes = None,
    warn: Classes = None,
    allow: Classes = None,
    exact: bool = False,
    offline: bool = False,
    binary: Optional[PathArg] = None,
    timeout: Optional[float] = None,
) -> Report:
    """Checks live servers against the lock: ``mcp-lock verify --format json``.

    Args:
        servers: the servers to verify, by config name (one name or several);
            every server in the config when ``None``.
        project_dir: where mcp-lock runs, so where it finds the config, ``mcp.lock``
            and ``mcp-lock.toml``; relative paths below are read from there.
        client: list servers as this client profile sees them (``--client``);
            every profile the lock pins when ``None``.
        config, lock, policy: ``--config``, ``--lock``, ``--policy``.
        fail, warn, allow: change classes (a comma-separated string or a
            sequence) whose policy action this run overrides.
        exact: fail on every difference from the pins (``--exact``).
        offline: skip registry look-ups for package pins (``--offline``).
        binary: the mcp-lock executable (see :func:`~mcp_lock.find_binary`).
        timeout: longest time for one server, in seconds (``--timeout``).

    Returns:
        The report, whatever the verdicts: check ``report.passed`` or
        ``report.exit_code`` (0 pass, 1 drift the policy fails, 3 incomplete or
        unverifiable).

    Raises:
        McpLockError: a usage, config or lock error (exit code 2), or no report.
    """
    args: List[str] = ["verify"]
    if offline:
        args.append("--offline")
    if timeout is not None:
        args += ["--timeout", str(timeout)]
    args += _common(client, config, lock, policy, fail, warn, allow, exact)
    # After `--`, a name that starts with `-` is a name, never a flag.
    args.append("--")
    if isinstance(servers, str):
        args.append(servers)
    elif servers is not None:
        args.extend(servers)
    return _run(args, project_dir=project_dir, binary=binary, stdin=None)


def check_listing(
    server: str,
    listing: Union[str, bytes, Any],
    *,
    client: Optional[str] = None,
    project_dir: PathArg = ".",
    config: Optional[PathArg] = None,
    lock: Optional[PathArg] = None,
    policy: Optional[PathArg] = None,
    fail: Classes = None,
    warn: Classes = None,
    allow: Classes = None,
    exact: bool = False,
    binary: Optional[PathArg] = None,
    handshake: Optional[Mapping[str, Any]] = None,
) -> Report:
    """Judges what a client received from ``server`` against the lock, as verify
    would, without connecting: ``mcp-lock check-listing SERVER --format json``.

    Args:
        server: the server the listing came from, by config name.
        listing: what the client received, sent on mcp-lock's standard input.
            JSON text (``str`` or ``bytes``: one document, or one per line), or a
            JSON value: a list page (``{"tools": [...], "nextCursor": ...}``, or
            ``prompts``, ``resourceTemplates``, ``resources``), a JSON-RPC answer
            holding one, the session the client saw (``protocolVersion``,
            ``serverInfo``, ``instructions``, ``capabilities``), one object with
            several of these, or a list of them in order. Pages of a kind are
            joined in order; a last page with a ``nextCursor`` means a page is
            missing and the verdict is ``incomplete``.
        client: the client profile the listing was received under (wins over
            ``handshake``); when ``None``, the pinned profile ``handshake`` matches,
            else the one the lock pins the server with.
        handshake: what the client declared when it connected (``--handshake``):
            the ``initialize`` params it sent (``protocolVersion``,
            ``capabilities``, ``clientInfo``) or its whole ``initialize`` (or
            ``server/discover``) request. The listing is judged under the pinned
            profile whose recorded capabilities equal the declared ones; when none
            does, against every approved definition (as the guard judges such a
            client), and ``missing_profile`` names the closest pinned profile, the
            difference and the command that pins the client.
        Other arguments: as for :func:`verify`.

    Returns:
        The report, with one entry in ``servers``.

    Raises:
        McpLockError: a usage, config, lock or input error (exit code 2), or a
            ``listing`` value that is not JSON (``inf`` or ``nan``, an object that
            is not a ``dict``, ``list``, ``str``, number, bool or ``None``).
    """
    if isinstance(listing, bytes):
        data = listing
    elif isinstance(listing, str):
        data = listing.encode("utf-8")
    else:
        data = encode_json(listing)
    args = ["check-listing"]
    args += _common(client, config, lock, policy, fail, warn, allow, exact)
    if handshake is not None:
        args += ["--handshake", encode_json(dict(handshake)).decode("ascii")]
    args += ["--", server]
    return _run(args, project_dir=project_dir, binary=binary, stdin=data)


def encode_json(value: Any) -> bytes:
    """``value`` as JSON text for mcp-lock's input.

    ASCII escapes keep every string as the server sent it. A value JSON cannot carry
    (``inf``, ``nan``: Python's ``json`` and the SDK read ``1e999`` as ``inf``; an
    object of another type; nesting deeper than Python recurses) raises
    :class:`McpLockError`, never writes ``Infinity``.
    """
    try:
        return json.dumps(value, ensure_ascii=True, allow_nan=False).encode("ascii")
    except RecursionError as e:
        raise McpLockError(f"the listing is nested too deep to write as JSON: {e}") from e
    except ValueError as e:  # inf or nan (allow_nan=False), or a value holding itself
        raise McpLockError(
            f"the listing cannot be written as JSON: {e} (JSON has no inf or nan; 1e999 reads as inf)"
        ) from e
    except TypeError as e:
        raise McpLockError(f"the listing holds a value that is not JSON: {e}") from e


def _common(
    client: Optional[str],
    config: Optional[PathArg],
    lock: Optional[PathArg],
    policy: Optional[PathArg],
    fail: Classes,
    warn: Classes,
    allow: Classes,
    exact: bool,
) -> List[str]:
    # --quiet: no progress or summary lines, so stderr holds only warnings and errors.
    args = ["--format", "json", "--quiet", "--color", "never"]
    if client is not None:
        args += ["--client", client]
    for flag, path in (("--config", config), ("--lock", lock), ("--policy", policy)):
        if path is not None:
            args += [flag, os.fspath(path)]
    for flag, classes in (("--fail", fail), ("--warn", warn), ("--allow", allow)):
        if classes is not None:
            joined = classes if isinstance(classes, str) else ",".join(classes)
            if joined:
                args += [flag, joined]
    if exact:
        args.append("--exact")
    return args


def _run(
    args: List[str],
    *,
    project_dir: PathArg,
    binary: Optional[PathArg],
    stdin: Optional[bytes],
) -> Report:
    exe = find_binary(binary)
    try:
        done = subprocess.run(
            [exe, *args],
            cwd=os.fspath(project_dir),
            input=stdin if stdin is not None else b"",
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            check=False,
        )
    except OSError as e:
        raise McpLockError(f"cannot run {exe}: {e}") from e
    stderr = done.stderr.decode("utf-8", "replace")
    code = done.returncode
    if code not in _REPORTED:
        raise McpLockError(_error_line(stderr, code), code, stderr)
    try:
        document = json.loads(done.stdout)
    except ValueError as e:
        raise McpLockError(
            f"mcp-lock {args[0]} exited {code} without a JSON report ({e}): {_error_line(stderr, code)}",
            code,
            stderr,
        ) from e
    if not isinstance(document, dict) or "servers" not in document:
        raise McpLockError(f"mcp-lock {args[0]} wrote JSON that is not a report", code, stderr)
    report = Report.from_json(document, stderr=stderr)
    if report.exit_code != code:
        # The process's code is what the run means; the document said otherwise.
        raise McpLockError(f"mcp-lock {args[0]} exited {code} but its report says {report.exit_code}", code, stderr)
    return report


def _error_line(stderr: str, code: int) -> str:
    """The line mcp-lock printed for its error, without ``error:``."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("error:"):
            return line[len("error:") :].strip()
    if lines:
        return lines[-1]
    if code < 0:
        return f"mcp-lock was killed by signal {-code}"
    return f"mcp-lock exited {code} and said nothing"
