"""A stdio MCP server (standard library only) whose definitions carry what the SDK's
models do not keep: members no schema names, on the tool, its annotations and its
input schema, numbers written as 1.50 and 1e3, -0.0, text outside ASCII. A listing
rebuilt from the SDK's models would not hash as pinned; one sent as received does.

Run: python odd_server.py [--modern] [--tools-null] [--infinity]

    --modern      speak only the 2026-07-28 era (server/discover; initialize is
                  refused with -32022), and list a third tool, "marked", whose
                  x-mcp-header mark is invalid (on an object-typed property): a
                  client over Streamable HTTP leaves it out, one over stdio keeps it
    --tools-null  answer tools/list with {"tools": null}
    --infinity    write the odd tool's maximum as 1e999, which Python reads as inf
"""

import json
import sys

MODERN = "2026-07-28"

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

MARKED_TOOL = {
    "name": "marked",
    "inputSchema": {
        "type": "object",
        "properties": {"filter": {"type": "object", "x-mcp-header": "Filter"}},
    },
}

SERVER_INFO = {"name": "odd-server", "version": "1.0.0"}
INSTRUCTIONS = "Odd server for mcp-lock's Python tests."


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request_id: object, result_text: str) -> None:
    sys.stdout.write('{"jsonrpc": "2.0", "id": %s, "result": %s}\n' % (json.dumps(request_id), result_text))
    sys.stdout.flush()


def error(request_id: object, code: int, message: str, data: object = None) -> None:
    body: dict = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    send({"jsonrpc": "2.0", "id": request_id, "error": body})


def tools_page(modern: bool, tools_null: bool, infinity: bool) -> str:
    if tools_null:
        return '{"tools": null}'
    # One line on the wire; the text stays as written, numbers and all.
    page = TOOLS_PAGE.replace("\n", "")
    if infinity:
        page = page.replace('"maximum": 1e3', '"maximum": 1e999')
    if modern:
        page = (
            page[: page.rindex("]")]
            + ", "
            + json.dumps(MARKED_TOOL)
            + '], "resultType": "complete", "ttlMs": 60000, "cacheScope": "public"}'
        )
    return page


def main() -> None:
    modern = "--modern" in sys.argv[1:]
    tools_null = "--tools-null" in sys.argv[1:]
    infinity = "--infinity" in sys.argv[1:]
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method = message.get("method")
        if "id" not in message or method is None:
            continue
        params = message.get("params") or {}
        if method == "initialize" and modern:
            error(message["id"], -32022, "Unsupported protocol version", {"supported": [MODERN]})
        elif method == "initialize":
            version = params.get("protocolVersion", "2025-11-25")
            result = {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": SERVER_INFO,
                "instructions": INSTRUCTIONS,
            }
            answer(message["id"], json.dumps(result))
        elif method == "server/discover" and modern:
            requested = (params.get("_meta") or {}).get("io.modelcontextprotocol/protocolVersion")
            if requested != MODERN:
                error(message["id"], -32022, "Unsupported protocol version", {"supported": [MODERN]})
                continue
            result = {
                "resultType": "complete",
                "supportedVersions": [MODERN],
                "capabilities": {"tools": {"listChanged": False}},
                "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO},
                "instructions": INSTRUCTIONS,
                "ttlMs": 60000,
                "cacheScope": "public",
            }
            answer(message["id"], json.dumps(result))
        elif method == "tools/list":
            answer(message["id"], tools_page(modern, tools_null, infinity))
        elif method == "ping":
            answer(message["id"], "{}")
        else:
            error(message["id"], -32601, f"method not found: {method}")


if __name__ == "__main__":
    main()
