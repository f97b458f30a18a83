"""An MCP server and its authorization server on loopback, in the shapes real ones
take that a client gets wrong (each one a scenario of the MCP conformance suite, here
for mcp-lock's own tests). Standard library only.

Usage: python auth_variants.py --mode MODE [--log PATH]
Listens on 127.0.0.1 on a free port, written to $MCP_LOCK_PORT_FILE once bound. Every
request goes to --log as one JSON line: method, path, the form or JSON-RPC method, the
Authorization scheme, Last-Event-ID and a time in milliseconds.

Modes:
  basic          the registration answers a secret with client_secret_basic, and the
                 token endpoint takes only an Authorization: Basic header
  list-401       initialize is let through; tools/list and tools/call need a token
                 (tools/call one with scope mcp:write too: 403 insufficient_scope)
  root-prm       resource metadata only at /.well-known/oauth-protected-resource,
                 naming the origin as its resource; the challenge names none
  legacy-meta    no resource metadata (2025-03-26): authorization server metadata at
                 the origin, with issuer <origin>/oauth
  legacy-none    no resource metadata and no authorization server metadata: the
                 default endpoints /authorize, /token, /register
  cimd           the authorization server supports Client ID Metadata Documents and
                 offers no registration
  cc             client credentials only: client "ci-bot" with secret "s3cret" by
                 Basic, or a JWT assertion (its claims are checked, not its signature)
  sse-resume     no authorization; a tools/call answer's stream closes after an event
                 with an id and retry: 300, and the answer comes on a GET with
                 Last-Event-ID
  version-retry  no authorization, the 2026-07-28 era; the first request is refused
                 with -32022 naming 2026-07-28
"""

import argparse
import base64
import json
import os
import secrets
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--mode", required=True)
parser.add_argument("--log")
args = parser.parse_args()
MODE = args.mode

sock = socket.socket()
sock.bind(("127.0.0.1", 0))
sock.listen(64)
PORT = sock.getsockname()[1]
ORIGIN = f"http://127.0.0.1:{PORT}"
MCP = f"{ORIGIN}/mcp"
ISSUER = f"{ORIGIN}/oauth" if MODE == "legacy-meta" else ORIGIN

tokens = {}  # access token -> granted scopes
codes = {}  # code -> scope
refresh = {}  # refresh token -> scope
clients = {}  # client id -> secret
lock = threading.Lock()
pending_call = {}  # the tools/call whose stream closed before its answer
refused_once = []

TOOL = {
    "name": "whoami",
    "description": "Says who the caller is.",
    "inputSchema": {"type": "object", "properties": {}},
}


def log(entry):
    if args.log:
        entry["ms"] = int(time.time() * 1000)
        with lock, open(args.log, "a") as f:
            f.write(json.dumps(entry) + "\n")


def as_metadata():
    meta = {
        "issuer": ISSUER,
        "authorization_endpoint": f"{ORIGIN}/authorize",
        "token_endpoint": f"{ORIGIN}/token",
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
    }
    if MODE not in ("cimd", "cc"):
        meta["registration_endpoint"] = f"{ORIGIN}/register"
    if MODE == "cimd":
        meta["client_id_metadata_document_supported"] = True
    if MODE == "cc":
        meta["grant_types_supported"] = ["client_credentials"]
        meta["token_endpoint_auth_methods_supported"] = ["client_secret_basic", "private_key_jwt"]
    return meta


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def send(self, status, body=None, headers=None, kind="application/json"):
        data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if body is not None:
            self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n).decode() if n else ""

    def scheme(self):
        return (self.headers.get("Authorization") or "").split(" ")[0] or None

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        log({"method": "GET", "path": url.path, "query": query,
             "last_event_id": self.headers.get("Last-Event-ID")})
        if url.path == "/.well-known/oauth-protected-resource/mcp":
            if MODE in ("root-prm", "legacy-meta", "legacy-none"):
                return self.send(404, {"error": "not found"})
            return self.send(200, {"resource": MCP, "authorization_servers": [ISSUER],
                                   "scopes_supported": ["mcp:read"]})
        if url.path == "/.well-known/oauth-protected-resource":
            if MODE == "root-prm":
                return self.send(200, {"resource": ORIGIN, "authorization_servers": [ISSUER]})
            return self.send(404, {"error": "not found"})
        if url.path.startswith("/.well-known/oauth-authorization-server"):
            if MODE == "legacy-none":
                return self.send(404, {"error": "not found"})
            return self.send(200, as_metadata())
        if url.path.startswith("/.well-known/openid-configuration"):
            return self.send(404, {"error": "not found"})
        if url.path == "/authorize":
            code = secrets.token_urlsafe(12)
            codes[code] = query.get("scope", "")
            target = query["redirect_uri"] + "?" + urllib.parse.urlencode(
                {"code": code, "state": query.get("state", "")})
            return self.send(302, headers={"Location": target})
        if url.path == "/mcp" and self.headers.get("Last-Event-ID") is None:
            # No standing event stream is offered.
            return self.send(405, {"error": "no GET stream"})
        if url.path == "/mcp" and MODE == "sse-resume":
            # The resumed stream: the answer of the call whose stream was cut.
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            call = None
            if self.headers.get("Last-Event-ID") == "e-1":
                call = pending_call.pop("call", None)
            if call is not None:
                answer = {"jsonrpc": "2.0", "id": call,
                          "result": {"content": [{"type": "text", "text": "resumed"}]}}
                self.wfile.write(f"id: e-2\ndata: {json.dumps(answer)}\n\n".encode())
                self.wfile.flush()
            time.sleep(0.5)
            self.close_connection = True
            return
        return self.send(404, {"error": "not found"})

    def do_DELETE(self):
        self.send(200, {})

    def do_POST(self):
        url = urllib.parse.urlparse(self.path)
        text = self.body()
        if url.path == "/register":
            registration = json.loads(text)
            client_id = "c-" + secrets.token_hex(4)
            answer = {"client_id": client_id, **registration}
            if MODE == "basic":
                clients[client_id] = "sec-" + secrets.token_hex(8)
                answer.update(client_secret=clients[client_id],
                              token_endpoint_auth_method="client_secret_basic")
            log({"method": "POST", "path": url.path, "client_id": client_id})
            return self.send(201, answer)
        if url.path == "/token":
            return self.token(dict(urllib.parse.parse_qsl(text)))
        if url.path == "/mcp":
            return self.mcp(json.loads(text))
        return self.send(404, {"error": "not found"})

    def token(self, form):
        log({"method": "POST", "path": "/token", "form": {k: v for k, v in form.items()
             if k not in ("client_secret", "client_assertion", "code_verifier")},
             "auth": self.scheme(), "assertion": form.get("client_assertion") is not None})
        basic = None
        if self.scheme() == "Basic":
            user, _, password = base64.b64decode(self.headers["Authorization"][6:]).decode().partition(":")
            basic = (urllib.parse.unquote(user), urllib.parse.unquote(password))
        if MODE == "basic" and (basic is None or clients.get(basic[0]) != basic[1]):
            return self.send(401, {"error": "invalid_client",
                                   "error_description": "Missing or invalid Authorization header"})
        if MODE == "cc":
            if form.get("grant_type") != "client_credentials":
                return self.send(400, {"error": "unsupported_grant_type"})
            if form.get("client_assertion"):
                claims = json.loads(base64.urlsafe_b64decode(
                    form["client_assertion"].split(".")[1] + "=="))
                if not (claims.get("iss") == claims.get("sub") == "ci-bot" and claims.get("aud") == ISSUER):
                    return self.send(401, {"error": "invalid_client", "error_description": "bad assertion"})
            elif basic != ("ci-bot", "s3cret"):
                return self.send(401, {"error": "invalid_client"})
            scope = form.get("scope", "")
        elif form.get("grant_type") == "refresh_token":
            scope = refresh.pop(form.get("refresh_token", ""), None)
            if scope is None:
                return self.send(400, {"error": "invalid_grant"})
        else:
            scope = codes.pop(form.get("code", ""), None)
            if scope is None:
                return self.send(400, {"error": "invalid_grant"})
        token = "at-" + secrets.token_hex(8)
        tokens[token] = set(scope.split())
        answer = {"access_token": token, "token_type": "Bearer", "expires_in": 3600}
        if MODE != "cc":
            answer["refresh_token"] = "rt-" + secrets.token_hex(8)
            refresh[answer["refresh_token"]] = scope
        if scope:
            answer["scope"] = scope
        return self.send(200, answer)

    def mcp(self, message):
        method = message.get("method")
        log({"method": "POST", "path": "/mcp", "rpc": method, "auth": self.scheme()})
        if MODE == "version-retry" and not refused_once:
            refused_once.append(True)
            return self.send(400, {"jsonrpc": "2.0", "id": message.get("id"), "error": {
                "code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": ["2026-07-28"]}}})
        needs_token = MODE not in ("sse-resume", "version-retry") and not (
            MODE == "list-401" and (method == "initialize" or method.startswith("notifications/")))
        if needs_token:
            token = (self.headers.get("Authorization") or "")[7:]
            challenge = 'Bearer scope="mcp:read"'
            if MODE not in ("root-prm", "legacy-meta", "legacy-none"):
                challenge += f', resource_metadata="{ORIGIN}/.well-known/oauth-protected-resource/mcp"'
            if token not in tokens:
                return self.send(401, {"error": "invalid_token"}, {"WWW-Authenticate": challenge})
            if MODE == "list-401" and method == "tools/call" and "mcp:write" not in tokens[token]:
                return self.send(403, {"error": "insufficient_scope"}, {"WWW-Authenticate":
                    f'Bearer error="insufficient_scope", scope="mcp:read mcp:write", '
                    f'resource_metadata="{ORIGIN}/.well-known/oauth-protected-resource/mcp"'})
        if "id" not in message:
            return self.send(202)
        answer = {"jsonrpc": "2.0", "id": message["id"]}
        if method == "initialize":
            answer["result"] = {"protocolVersion": message["params"]["protocolVersion"],
                                "capabilities": {"tools": {}},
                                "serverInfo": {"name": "auth-variants", "version": "1"}}
        elif method == "server/discover":
            answer["result"] = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                                "serverInfo": {"name": "auth-variants", "version": "1"}}
        elif method == "tools/list":
            answer["result"] = {"tools": [TOOL]}
        elif method == "tools/call" and MODE == "sse-resume":
            pending_call["call"] = message["id"]
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b"id: e-1\nretry: 300\ndata: \n\n")
            self.wfile.flush()
            self.close_connection = True
            log({"method": "POST", "path": "/mcp", "closed_stream": True})
            return
        elif method == "tools/call":
            answer["result"] = {"content": [{"type": "text", "text": "an authorized client"}]}
        else:
            answer["error"] = {"code": -32601, "message": "Method not found"}
        return self.send(200, answer)


server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler, bind_and_activate=False)
server.socket = sock
port_file = os.environ.get("MCP_LOCK_PORT_FILE")
if port_file:
    with open(port_file + ".tmp", "w") as f:
        f.write(str(PORT))
    os.replace(port_file + ".tmp", port_file)
server.serve_forever()
