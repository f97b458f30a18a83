#!/usr/bin/env python3
"""A small stdio MCP server for the host tests: `toolserver.py TOOLS_JSON`.

Lists the tools in TOOLS_JSON (read at each tools/list, so a test changes them between
sessions by editing that file) and answers a call with `called NAME: ARGS` as text.
Speaks the handshake era only: `server/discover` gets -32601, as a server of that era
answers, and `initialize` agrees to the client's version.
"""

import json
import sys

tools_path = sys.argv[1]


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if not isinstance(msg, dict) or "method" not in msg or "id" not in msg:
        continue
    method, mid, params = msg["method"], msg["id"], msg.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "host-test-tools", "version": "1.0.0"}}})
    elif method == "tools/list":
        with open(tools_path) as f:
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": json.load(f)}})
    elif method == "tools/call":
        text = "called %s: %s" % (params.get("name"), json.dumps(params.get("arguments") or {}, sort_keys=True))
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}]}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "method not found: " + method}})
