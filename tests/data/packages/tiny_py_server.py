"""A tiny stdio MCP server (standard library only): one tool, and its own
distribution version in serverInfo and in the tool's answer. The tool definitions do
not depend on the version."""

import json
import sys
from importlib.metadata import version as dist_version

VERSION = dist_version("tiny-py")
TOOLS = [
    {
        "name": "version",
        "description": "Says which release of this server is running",
        "inputSchema": {"type": "object", "properties": {}},
    }
]


def send(message):
    message["jsonrpc"] = "2.0"
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main():
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("id") is None:
            continue
        mid, method, params = msg["id"], msg.get("method"), msg.get("params") or {}
        if method == "initialize":
            send({"id": mid, "result": {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "tiny-py", "version": VERSION},
            }})
        elif method == "tools/list":
            send({"id": mid, "result": {"tools": TOOLS}})
        elif method == "tools/call" and params.get("name") == "version":
            send({"id": mid, "result": {"content": [{"type": "text", "text": "tiny-py " + VERSION}]}})
        elif method == "ping":
            send({"id": mid, "result": {}})
        else:
            send({"id": mid, "error": {"code": -32601, "message": "method not found: %s" % method}})
