"""``python -m mcp_lock ARGS``: the mcp-lock binary this package would run, with ARGS."""

from __future__ import annotations

import os
import subprocess
import sys

from .binary import find_binary
from .errors import McpLockError


def main() -> int:
    try:
        exe = find_binary()
    except McpLockError as e:
        print(f"error: {e.message}", file=sys.stderr)
        return 2
    if os.name == "posix":
        os.execv(exe, [exe, *sys.argv[1:]])
    return subprocess.call([exe, *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
