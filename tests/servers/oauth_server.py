"""A real OAuth-protected MCP server on loopback for the login tests: fastmcp's
in-memory authorization server (dynamic registration, auto-approval, refresh-token
rotation) in front of one tool.

Usage: python oauth_server.py [--token-lifetime SECONDS] [--log PATH] [--scopes A,B]
                              [--step-up-scope S]
Listens on 127.0.0.1 on a free port, written to $MCP_LOCK_PORT_FILE once bound.
Every request line (method, path, whether it carried a bearer token) goes to --log.
With --step-up-scope S the server, as resource server, answers 403
`insufficient_scope` (asking for the --scopes and S) to a valid token without S; the
401 challenge still names the --scopes only, so a client must step up to reach it.
"""

import argparse
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


class Log:
    def __init__(self, inner):
        self.inner = inner

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and args.log:
            headers = dict(scope["headers"])
            given = headers.get(b"authorization", b"").decode()
            with open(args.log, "a") as f:
                f.write(f"{scope['method']} {scope['path']} auth={given or '-'}\n")
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
