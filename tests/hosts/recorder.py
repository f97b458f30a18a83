#!/usr/bin/env python3
"""A recording stdio MCP server for the host tests: `recorder.py LOG -- CMD ARGS...`.

Starts CMD, forwards every line both ways unchanged, and appends each message the
host sends (one JSON-RPC message a line) to LOG, so a test can read the host's real
handshake. Ends when the host closes its end or CMD ends.
"""

import subprocess
import sys
import threading

log_path = sys.argv[1]
cmd = sys.argv[sys.argv.index("--") + 1:]
child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def down():
    for line in iter(child.stdout.readline, b""):
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    sys.stdout.buffer.close()


threading.Thread(target=down, daemon=True).start()
with open(log_path, "ab", buffering=0) as log:
    for line in iter(sys.stdin.buffer.readline, b""):
        log.write(line if line.endswith(b"\n") else line + b"\n")
        try:
            child.stdin.write(line)
            child.stdin.flush()
        except BrokenPipeError:
            break
try:
    child.stdin.close()
except BrokenPipeError:
    pass
child.wait()
