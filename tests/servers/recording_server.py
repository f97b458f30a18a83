#!/usr/bin/env python3
"""A stdio MCP server that records every line a client sends it.

Usage: recording_server.py LOG

Appends each line received to LOG (as received), and answers just enough for a host
to finish its start-up: `server/discover` with -32601 (as a handshake-era server
does, so a host that tries it first falls back to `initialize`), `initialize` with
the version asked for, `tools/list` with one tool, `ping`; any other request with
-32601. Notifications are recorded and not answered. Used by tests/profiles.rs and
scripts/capture-handshake.py.
"""

import json
import sys


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: recording_server.py LOG\n")
        return 2
    with open(sys.argv[1], "a", encoding="utf-8") as log:
        for line in sys.stdin:
            log.write(line if line.endswith("\n") else line + "\n")
            log.flush()
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict) or "id" not in message or "method" not in message:
                continue
            method = message["method"]
            params = message.get("params") if isinstance(message.get("params"), dict) else {}
            if method == "initialize":
                result = {
                    "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "recording-server", "version": "1.0.0"},
                }
            elif method == "tools/list":
                result = {
                    "tools": [
                        {
                            "name": "echo",
                            "description": "Returns its text.",
                            "inputSchema": {
                                "type": "object",
                                "properties": {"text": {"type": "string"}},
                            },
                        }
                    ]
                }
            elif method == "ping":
                result = {}
            else:
                answer = {"code": -32601, "message": "Method not found: " + str(method)}
                send({"jsonrpc": "2.0", "id": message["id"], "error": answer})
                continue
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})
    return 0


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
