"""A real OAuth-protected MCP server on loopback for the login tests: fastmcp's
in-memory authorization server (dynamic registration, auto-approval, refresh-token
rotation) in front of one tool.

Usage: python oauth_server.py [--token-lifetime SECONDS] [--log PATH] [--scopes A,B]
                              [--step-up-scope S] [--hang-file PATH] [--mode MODE]...
                              [--token-padding BYTES]
Listens on 127.0.0.1 on a free port, written to $MCP_LOCK_PORT_FILE once bound.
Every request line (method, path, whether it carried a bearer token) goes to --log.
With --step-up-scope S the server, as resource server, answers 403
`insufficient_scope` (asking for the --scopes and S) to a valid token without S; the
401 challenge still names the --scopes only, so a client must step up to reach it.

Hostile variants, for the robustness tests:
  --hang-file PATH     while PATH exists, a request to a path listed in it (one a
                       line) is accepted and never answered
  --mode huge-expiry   token responses say expires_in = 2^64-1
  --mode odd-scope     token responses grant a scope with terminal escapes in it
  --mode bad-scheme    the authorization server metadata's authorization_endpoint
                       is a javascript: address
  --mode no-resource   the protected resource metadata has no `resource`
  --token-padding N    token responses carry N bytes of padding
"""

import argparse
import asyncio
import json
import os
import socket

import uvicorn
from fastmcp import FastMCP
from fastmcp.server.auth.auth import ClientRegistrationOptions
from fastmcp.server.auth.providers import in_memory
from fastmcp.server.auth.providers.in_memory import InMemoryOAuthProvider

parser = argparse.ArgumentParser()
parser.add_argument("--token-lifetime", type=int, default=3600)
parser.add_argument("--log")
parser.add_argument("--scopes", default="mcp:read")
parser.add_argument("--step-up-scope")
parser.add_argument("--hang-file")
parser.add_argument("--mode", action="append", default=[])
parser.add_argument("--token-padding", type=int, default=0)
args = parser.parse_args()
in_memory.DEFAULT_ACCESS_TOKEN_EXPIRY_SECONDS = args.token_lifetime

sock = socket.socket()
sock.bind(("127.0.0.1", 0))
# Listening before the port is announced: early connections wait in the backlog.
sock.listen(128)
port = sock.getsockname()[1]
base = f"http://127.0.0.1:{port}"
scopes = args.scopes.split(",")
# A client may ask for the step-up scope; the challenge does not name it.
grantable = scopes + ([args.step_up_scope] if args.step_up_scope else [])

auth = InMemoryOAuthProvider(
    base_url=base,
    client_registration_options=ClientRegistrationOptions(
        enabled=True, valid_scopes=grantable, default_scopes=grantable
    ),
    required_scopes=scopes,
)
mcp = FastMCP("oauth-fixture", auth=auth)


@mcp.tool
def whoami() -> str:
    """Says which client the token was issued to."""
    return "an authorized client"


app = mcp.http_app(path="/mcp")


def hung(path):
    if not args.hang_file or not os.path.exists(args.hang_file):
        return False
    with open(args.hang_file) as f:
        return path in f.read().split()


def change_token(doc):
    if "access_token" not in doc:
        return doc
    if "huge-expiry" in args.mode:
        doc["expires_in"] = 2**64 - 1
    if "odd-scope" in args.mode:
        doc["scope"] = doc.get("scope", "mcp:read") + " \x1b[2J\u202eevil"
    if args.token_padding:
        doc["padding"] = "x" * args.token_padding
    return doc


def change_server_metadata(doc):
    if "bad-scheme" in args.mode:
        doc["authorization_endpoint"] = "javascript:alert(document.cookie)//"
    return doc


def change_resource_metadata(doc):
    if "no-resource" in args.mode:
        doc.pop("resource", None)
    return doc


def rewriter(path):
    if path == "/token":
        return change_token
    if path.startswith("/.well-known/oauth-authorization-server"):
        return change_server_metadata
    if path.startswith("/.well-known/oauth-protected-resource"):
        return change_resource_metadata
    return None


async def rewritten(inner, change, scope, receive, send):
    """Runs `inner` and sends its JSON answer as `change` makes it."""
    start = {}
    chunks = []

    async def capture(message):
        if message["type"] == "http.response.start":
            start.update(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body"):
            return
        body = b"".join(chunks)
        try:
            body = json.dumps(change(json.loads(body))).encode()
        except ValueError:
            pass
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    await inner(scope, receive, capture)


class Log:
    def __init__(self, inner):
        self.inner = inner

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and args.log:
            headers = dict(scope["headers"])
            given = headers.get(b"authorization", b"").decode()
            with open(args.log, "a") as f:
                f.write(f"{scope['method']} {scope['path']} auth={given or '-'}\n")
        if scope["type"] == "http" and hung(scope["path"]):
            await asyncio.sleep(3600)
            return
        change = rewriter(scope["path"]) if scope["type"] == "http" else None
        if change is not None and (args.mode or args.token_padding):
            await rewritten(self.inner, change, scope, receive, send)
            return
        if scope["type"] == "http" and args.step_up_scope and scope["path"] == "/mcp":
            headers = dict(scope["headers"])
            bearer = headers.get(b"authorization", b"").decode().removeprefix("Bearer ")
            known = auth.access_tokens.get(bearer)
            if known is not None and args.step_up_scope not in known.scopes:
                wanted = " ".join(grantable)
                challenge = f'Bearer error="insufficient_scope", scope="{wanted}"'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 403,
                        "headers": [
                            (b"www-authenticate", challenge.encode()),
                            (b"content-length", b"0"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
        await self.inner(scope, receive, send)


port_file = os.environ.get("MCP_LOCK_PORT_FILE")
config = uvicorn.Config(Log(app), log_level="warning")
server = uvicorn.Server(config)
if port_file:
    with open(port_file + ".tmp", "w") as f:
        f.write(str(port))
    os.replace(port_file + ".tmp", port_file)
server.run(sockets=[sock])
