#!/usr/bin/env python3
"""Drives mcp-lock as the client of one MCP conformance suite scenario.

The suite runs `adapter.py <server URL>` with MCP_CONFORMANCE_SCENARIO (and, where a
scenario hands out credentials, MCP_CONFORMANCE_CONTEXT) set. This script does what a
new user would: a project whose `.mcp.json` names the server, `mcp-lock login
--no-browser` where the scenario needs authorization (playing the browser: it follows
the authorization address without redirects and delivers the redirect to mcp-lock's
own loopback callback), `update --yes`, `verify`, then an agent session through
`mcp-lock guard` that lists the tools and makes the call the scenario expects.

MCP_LOCK names the binary. The adapter exits non-zero when any step fails, with the
step's output on stderr, so the suite's table says what went wrong.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import urllib.parse
import urllib.request

SCENARIO = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
CONTEXT = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
PROTOCOL = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or "2025-11-25"
MCP_LOCK = os.environ.get("MCP_LOCK", "mcp-lock")
STEP_SECONDS = 25
# The first protocol revision without the initialize handshake.
MODERN = "2026-07-28"
# An agent session that ended on a call needing more scope than the login got.
STEP_UP = 3

CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
# Scenarios whose client logs in by itself (machine to machine), with no person.
CLIENT_CREDENTIALS = {"auth/client-credentials-basic", "auth/client-credentials-jwt"}


def log(text):
    print(f"adapter: {text}", file=sys.stderr, flush=True)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def play_browser(address):
    """Opens the authorization address as a browser would and follows its answer's
    redirect to the callback (the suite's authorization servers approve at once)."""
    opener = urllib.request.build_opener(NoRedirect)
    try:
        response = opener.open(address, timeout=10)
        location = response.headers.get("Location")
    except urllib.error.HTTPError as e:
        location = e.headers.get("Location")
        if not location:
            raise RuntimeError(f"the authorization address answered HTTP {e.code}")
    if not location:
        raise RuntimeError("the authorization address gave no redirect")
    location = urllib.parse.urljoin(address, location)
    log(f"browser: redirected to {location.split('?')[0]}")
    with urllib.request.urlopen(location, timeout=10) as callback:
        callback.read()


def run(args, env, cwd, input_text=None):
    log("$ mcp-lock " + " ".join(args))
    done = subprocess.run(
        [MCP_LOCK, *args],
        cwd=cwd,
        env=env,
        input=input_text,
        capture_output=True,
        text=True,
        timeout=STEP_SECONDS,
    )
    for line in (done.stdout + done.stderr).splitlines():
        log(f"  {line}")
    return done.returncode, done.stdout + done.stderr


def login(env, cwd):
    """`mcp-lock login conf --no-browser`, answering every address it prints."""
    log("$ mcp-lock login conf --no-browser")
    child = subprocess.Popen(
        [MCP_LOCK, "login", "conf", "--no-browser", "--timeout", "20"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Stdin stays open (an end of input would be an empty paste); the browser's
    # redirect reaches the callback listener instead.
    errors = []
    timer = threading.Timer(STEP_SECONDS, child.kill)
    timer.start()
    want_address = False
    for line in child.stderr:
        log(f"  {line.rstrip()}")
        if line.startswith("Open this address"):
            want_address = True
        elif want_address and line.strip():
            want_address = False
            try:
                play_browser(line.strip())
            except Exception as e:  # noqa: BLE001 - reported, and the login fails
                errors.append(str(e))
                child.kill()
    timer.cancel()
    for line in child.stdout:
        log(f"  {line.rstrip()}")
    child.stdin.close()
    status = child.wait()
    if errors:
        log("browser: " + "; ".join(errors))
        return 1
    return status


def the_call(tools):
    """The call the suite's own example client makes in this scenario, or None."""
    if SCENARIO == "json-schema-ref-no-deref" or not tools:
        # Its server answers tools/list only: a conformant client just lists.
        return None
    if SCENARIO == "json-schema-2020-12-preservation":
        # The schema the agent received, echoed back: the server diffs it against
        # the one it listed, so any keyword lost on the way shows.
        focal = next(t for t in tools if t["name"] == "json_schema_2020_12_tool")
        return "json_schema_echo", {"schema": focal["inputSchema"]}
    tool = tools[0]
    return tool["name"], arguments_for(tool)


def arguments_for(tool):
    """Arguments fitting the tool's input schema, as the suite's own client sends."""
    schema = tool.get("inputSchema") or {}
    out = {}
    numbers = iter([2, 3, 4, 5])
    for name, prop in (schema.get("properties") or {}).items():
        kind = prop.get("type") if isinstance(prop, dict) else None
        if kind in ("number", "integer"):
            out[name] = next(numbers, 1)
        elif kind == "string":
            out[name] = "conformance"
        elif kind == "boolean":
            out[name] = True
    return out


def agent_session(env, cwd):
    """An agent through `mcp-lock guard conf`: initialize, list, call the first tool."""
    log("$ mcp-lock guard conf  (an agent session)")
    child = subprocess.Popen(
        [MCP_LOCK, "guard", "conf"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    stderr_lines = []
    threading.Thread(
        target=lambda: stderr_lines.extend(child.stderr), daemon=True
    ).start()
    answers = {}
    got = threading.Condition()

    def read():
        for line in child.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            with got:
                if "id" in message and "method" not in message:
                    answers[message["id"]] = message
                    got.notify_all()

    threading.Thread(target=read, daemon=True).start()

    def request(id_, method, params):
        child.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
            + "\n"
        )
        child.stdin.flush()
        with got:
            if not got.wait_for(lambda: id_ in answers, timeout=STEP_SECONDS):
                raise RuntimeError(f"no answer to {method} through the guard")
        answer = answers[id_]
        if "error" in answer:
            raise RuntimeError(f"{method} through the guard: {answer['error']}")
        return answer["result"]

    if PROTOCOL >= MODERN:
        return modern_session(child, request, stderr_lines)
    try:
        request(
            1,
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "conformance-agent", "version": "1.0.0"},
            },
        )
        child.stdin.write(
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
        )
        child.stdin.flush()
        tools = request(2, "tools/list", {}).get("tools", [])
        log(f"  listed {len(tools)} tool(s) through the guard")
        call = the_call(tools)
        if call:
            result = request(3, "tools/call", {"name": call[0], "arguments": call[1]})
            log(f"  called {call[0]}: isError={result.get('isError', False)}")
        return 0
    except (RuntimeError, BrokenPipeError) as e:
        log(str(e))
        return STEP_UP if "mcp-lock login" in str(e) else 1
    finally:
        end(child, stderr_lines)


def modern_session(child, request, stderr_lines):
    """The 2026-07-28 era: no handshake; `_meta` on every request."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientInfo": {"name": "conformance-agent", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    ids = iter(range(1, 1000))

    def ask(method, params):
        return request(next(ids), method, {**params, "_meta": meta})

    def call(name, arguments, **more):
        result = ask("tools/call", {"name": name, "arguments": arguments, **more})
        log(f"  called {name}: isError={result.get('isError', False)}")
        return result

    try:
        discovered = ask("server/discover", {})
        tools = ask("tools/list", {}).get("tools", [])
        log(f"  listed {len(tools)} tool(s) through the guard")
        if SCENARIO == "sep-2322-client-request-state":
            multi_round_trip(call)
        elif CONTEXT.get("toolCalls"):
            # The calls the scenario hands out, with its arguments.
            for c in CONTEXT["toolCalls"]:
                call(c["name"], c["arguments"])
        elif SCENARIO.startswith("http-"):
            # Everything the agent was offered: each tool, prompt and resource.
            for tool in tools:
                call(tool["name"], arguments_for(tool))
            capabilities = discovered.get("capabilities", {})
            if "prompts" in capabilities:
                for prompt in ask("prompts/list", {}).get("prompts", []):
                    ask("prompts/get", {"name": prompt["name"], "arguments": {}})
            if "resources" in capabilities:
                for resource in ask("resources/list", {}).get("resources", []):
                    ask("resources/read", {"uri": resource["uri"]})
        else:
            the = the_call(tools)
            if the:
                call(*the)
        return 0
    except (RuntimeError, BrokenPipeError) as e:
        log(str(e))
        return STEP_UP if "mcp-lock login" in str(e) else 1
    finally:
        end(child, stderr_lines)


def multi_round_trip(call):
    """SEP-2322 as the suite's example client does it: answer an input-required
    result by calling again (a new id) with `inputResponses` and the `requestState`
    echoed unchanged; an unrelated call in between carries neither."""

    def responses(result):
        return {
            key: {"action": "accept", "content": {"confirmed": True}}
            for key, asked in (result.get("inputRequests") or {}).items()
            if asked.get("method") == "elicitation/create"
        }

    first = call("test_mrtr_echo_state", {})
    if first.get("resultType") == "input_required":
        call("test_mrtr_unrelated", {})
        more = {"inputResponses": responses(first)}
        if "requestState" in first:
            more["requestState"] = first["requestState"]
        call("test_mrtr_echo_state", {}, **more)
    second = call("test_mrtr_no_state", {})
    if second.get("resultType") == "input_required":
        call("test_mrtr_no_state", {}, inputResponses=responses(second))
    call("test_mrtr_no_result_type", {})


def end(child, stderr_lines):
    try:
        child.stdin.close()
    except BrokenPipeError:
        pass
    try:
        child.wait(timeout=10)
    except subprocess.TimeoutExpired:
        log("  the guard did not end within 10 s of its input closing; killed")
        child.kill()
        child.wait()
    for line in stderr_lines:
        log(f"  guard: {line.rstrip()}")


def entry(url):
    server = {"type": "http", "url": url}
    if SCENARIO in CLIENT_CREDENTIALS:
        oauth = {"grant": "client_credentials", "clientId": CONTEXT["client_id"]}
        if "client_secret" in CONTEXT:
            oauth["clientSecret"] = "${CONFORMANCE_CLIENT_SECRET}"
        if "private_key_pem" in CONTEXT:
            oauth["privateKey"] = "${CONFORMANCE_PRIVATE_KEY}"
            if CONTEXT.get("signing_algorithm"):
                oauth["signingAlgorithm"] = CONTEXT["signing_algorithm"]
        server["oauth"] = oauth
    elif "client_id" in CONTEXT:
        server["oauth"] = {"clientId": CONTEXT["client_id"]}
        if "client_secret" in CONTEXT:
            server["oauth"]["clientSecret"] = "${CONFORMANCE_CLIENT_SECRET}"
    else:
        # The address the suite's own client gives as its Client ID Metadata
        # Document; used only where an authorization server supports them.
        server["oauth"] = {"clientMetadataUrl": CLIENT_METADATA_URL}
    return {"mcpServers": {"conf": server}}


def main():
    if len(sys.argv) != 2:
        print("usage: adapter.py <server URL>", file=sys.stderr)
        return 2
    url = sys.argv[1]
    log(f"scenario {SCENARIO or '?'} at {url} (protocol {PROTOCOL})")
    with tempfile.TemporaryDirectory(prefix="mcp-lock-conformance-") as scratch:
        project = os.path.join(scratch, "project")
        home = os.path.join(scratch, "home")
        os.makedirs(project)
        os.makedirs(home)
        with open(os.path.join(project, ".mcp.json"), "w") as f:
            json.dump(entry(url), f, indent=2)
        if PROTOCOL >= MODERN:
            # A client of the sessionless era: the profile that speaks it.
            with open(os.path.join(project, "mcp-lock.toml"), "w") as f:
                f.write('[profiles]\npin = ["bare"]\n')
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith("XDG_") and key not in ("CI",)
        }
        env.update(HOME=home, NO_COLOR="1", CI="true")
        if "client_secret" in CONTEXT:
            env["CONFORMANCE_CLIENT_SECRET"] = CONTEXT["client_secret"]
        if "private_key_pem" in CONTEXT:
            env["CONFORMANCE_PRIVATE_KEY"] = CONTEXT["private_key_pem"]
        # As a new user would: update, and when it says to log in, log in and again.
        status, said = run(["update", "--yes"], env, project)
        for _ in range(2):
            if status == 0 or "mcp-lock login" not in said:
                break
            if login(env, project) != 0:
                return 1
            status, said = run(["update", "--yes"], env, project)
        if status != 0 or "could not be checked" in said:
            return 1
        if run(["verify"], env, project)[0] != 0:
            return 1
        status = agent_session(env, project)
        if status == STEP_UP:
            # As a person would: log in again when the guard says a call needs more
            # scope, then run the session again.
            if login(env, project) != 0:
                return 1
            status = agent_session(env, project)
        return 1 if status else 0


if __name__ == "__main__":
    sys.exit(main())
