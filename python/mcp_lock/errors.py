"""The one exception mcp_lock raises."""

from __future__ import annotations

from typing import Optional

__all__ = ["McpLockError"]


class McpLockError(Exception):
    """mcp-lock could not produce a report.

    A usage, config or lock error (exit code 2: an unknown server, no config, a
    missing or corrupt lock, input that is not a listing), any other exit code
    without a report, or no mcp-lock binary at all (``exit_code`` is ``None``).
    ``message`` is the one line mcp-lock printed on stderr, without its
    ``error:`` prefix; ``stderr`` is everything it printed there.
    """

    def __init__(self, message: str, exit_code: Optional[int] = None, stderr: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.stderr = stderr

    def __repr__(self) -> str:
        return f"McpLockError({self.message!r}, exit_code={self.exit_code!r})"
