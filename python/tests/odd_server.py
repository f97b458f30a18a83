"""A stdio MCP server (standard library only) whose definitions carry what the SDK's
models do not keep: members no schema names, on the tool, its annotations and its
input schema, numbers written as 1.50 and 1e3, -0.0, text outside ASCII. A listing
rebuilt from the SDK's models would not hash as pinned; one sent as received does.

Run: python odd_server.py
"""

import json
import sys

TOOLS_PAGE = """{"tools": [
  {"name": "odd", "title": "Odd \\u00e9t\\u00e9",
   "description": "Caf\\u00e9 \\u2615 \\u2014 a tool whose definition the SDK's models would trim.",
   "inputSchema": {"type": "object",
                   "properties": {"n": {"type": "number", "minimum": 1.50, "maximum": 1e3, "default": -0.0}},
                   "x-vendor-extension": {"nested": [1, 2.0, "three"]}},
   "annotations": {"readOnlyHint": true, "costHint": "high"},
   "x-unknown-member": {"kept": true},
   "_meta": {"com.example/flag": null}},
  {"name": "plain", "inputSchema": {"type": "object"}}
]}"""


def answer(request_id: object, result_text: str) -> None:
    sys.stdout.write('{"jsonrpc": "2.0", "id": %s, "result": %s}\n' % (json.dumps(request_id), result_text))
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method = message.get("method")
        if "id" not in message or method is None:
            continue
        if method == "initialize":
            version = message.get("params", {}).get("protocolVersion", "2025-11-25")
            answer(
                message["id"],
                json.dumps(
                    {
                        "protocolVersion": version,
                        "capabilities": {"tools": {"listChanged": False}},
                        "serverInfo": {"name": "odd-server", "version": "1.0.0"},
                        "instructions": "Odd server for mcp-lock's Python tests.",
                    }
                ),
            )
        elif method == "tools/list":
            # One line on the wire; the text stays as written, numbers and all.
            answer(message["id"], TOOLS_PAGE.replace("\n", ""))
        elif method == "ping":
            answer(message["id"], "{}")
        else:
            error = {"code": -32601, "message": f"method not found: {method}"}
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
