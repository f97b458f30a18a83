"""Where the mcp-lock binary is."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import List, Union

from .errors import McpLockError

__all__ = ["ENV_VAR", "find_binary"]

ENV_VAR = "MCP_LOCK_BIN"
"""Names the binary to run, ahead of the one installed beside this interpreter."""

_EXE = "mcp-lock.exe" if sys.platform == "win32" else "mcp-lock"

_INSTALL_HINT = (
    "install it with `pip install mcp-lock` (the wheel carries the binary), "
    "`cargo install mcp-lock`, or name one with binary= or $MCP_LOCK_BIN"
)


def find_binary(binary: Union[str, "os.PathLike[str]", None] = None) -> str:
    """The mcp-lock executable to run, as an absolute path.

    In order: ``binary`` if given, ``$MCP_LOCK_BIN``, the ``mcp-lock`` the wheel
    installed into this interpreter's scripts directory (or the user scheme's, for
    ``pip install --user``), then ``mcp-lock`` on
    ``PATH``. A binary that was named (argument or variable) but is missing is an
    error, never replaced by another one.

    Raises:
        McpLockError: no binary was found, with how to install one.
    """
    named = os.fspath(binary) if binary is not None else os.environ.get(ENV_VAR) or None
    if named is not None:
        found = shutil.which(named) if os.sep not in named else named
        if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
            source = "binary=" if binary is not None else f"${ENV_VAR}"
            raise McpLockError(f"mcp-lock binary {named!r} (from {source}) is not an executable file")
        # Absolute: mcp-lock runs in the project directory, not here.
        return os.path.abspath(found)
    for scripts in _scripts_dirs():
        beside = Path(scripts) / _EXE
        if beside.is_file() and os.access(beside, os.X_OK):
            return str(beside)
    on_path = shutil.which("mcp-lock")
    if on_path is not None:
        return os.path.abspath(on_path)
    raise McpLockError(f"no mcp-lock binary found; {_INSTALL_HINT}")


def _scripts_dirs() -> List[str]:
    """Where pip puts a wheel's scripts for this interpreter: its own scheme, then the user's."""
    dirs: List[str] = []
    for scheme in (None, f"{os.name}_user"):
        try:
            path = sysconfig.get_path("scripts") if scheme is None else sysconfig.get_path("scripts", scheme)
        except KeyError:
            continue
        if path and path not in dirs:
            dirs.append(path)
    return dirs
