#!/usr/bin/env python3
"""Peak memory (max RSS) of mcp-lock against a server with one huge tool.

The server (written by this script, stdio, Python) serves one tool `big` whose
inputSchema has N properties (default 1,000,000: an 11.9 MB message), and a second
server `tiny` serves one small tool. Each case runs the release binary under
`/usr/bin/time -v` and reports its "Maximum resident set size":

  update      first pin of both servers (`update --yes`)
  verify      `verify` with nothing changed
  drift       `verify` after one of the 1,000,000 properties changed type
  guard-list  `guard big`: initialize, tools/list, close
  guard-big   `guard big`: initialize, tools/list, one tools/call, close
  guard-tiny  `guard tiny` with the same lock (which is mostly `big`'s pins)

Measured on the 2-core CI machine (peak RSS, 1,000,000 properties, a 20.9 MB lock),
before issue 11 #10 and after it:
  update 343 -> 113 MB, verify 372 -> 148 MB, drift 893 -> 248 MB,
  guard-list 439 -> 150 MB, guard-big 1004 -> 150 MB, guard-tiny 155 -> 27 MB.
(drift was 465 MB before the classifier left out the properties both sides share.)
What drift still costs above verify is the classifier's index of both property maps
while it looks for the unchanged ones, and the findings.

Usage: python3 benches/memory.py [PROPERTIES] [BINARY] [CASE,...]
  (default BINARY: target/release/mcp-lock; build it with `cargo build --release`;
   needs /usr/bin/time: `apt-get install time`)
"""

import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROPERTIES = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
BINARY = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.join(ROOT, "target/release/mcp-lock")
CASES = sys.argv[3].split(",") if len(sys.argv) > 3 else None

SERVER = r'''
import json, sys
tool_file, revision_file = sys.argv[1], sys.argv[2]
def tools():
    if tool_file == "tiny":
        return '[{"name":"ping","description":"Answers pong.","inputSchema":{"type":"object"}}]'
    name = "big-b.json" if open(revision_file).read().strip() == "b" else "big-a.json"
    with open(tool_file.replace("big-a.json", name)) as f:
        return "[" + f.read() + "]"
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if "id" not in msg or "method" not in msg:
        continue
    head = '{"jsonrpc":"2.0","id":' + json.dumps(msg["id"]) + ','
    method = msg["method"]
    if method == "initialize":
        body = '"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"mem","version":"1"}}'
    elif method == "tools/list":
        body = '"result":{"tools":' + tools() + '}'
    elif method == "tools/call":
        body = '"result":{"content":[{"type":"text","text":"done"}]}'
    elif method == "ping":
        body = '"result":{}'
    else:
        body = '"error":{"code":-32601,"message":"method not found"}'
    sys.stdout.write(head + body + "}\n")
    sys.stdout.flush()
'''


def big_tool(changed):
    props = ",".join(
        ('"p0":{"type":"string"}' if changed and i == 0 else f'"p{i}":{{}}') for i in range(PROPERTIES)
    )
    return '{"name":"big","description":"One tool, many inputs.","inputSchema":{"type":"object","properties":{' + props + "}}}"


def peak_kb(args, cwd, session=None):
    """Peak RSS in kB of one run, its exit code and stderr. `session` is a list of
    JSON-RPC messages sent one at a time, each request waiting for its answer."""
    proc = subprocess.Popen(
        ["/usr/bin/time", "-v", BINARY, *args], cwd=cwd, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    answers = []
    for message in session or []:
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()
        while "id" in message:
            answer = json.loads(proc.stdout.readline())
            if answer.get("id") == message["id"]:
                answers.append(answer)
                break
    proc.stdin.close()
    proc.stdin = None
    out, err = proc.communicate()
    err = err.decode(errors="replace")
    if os.environ.get("MEMORY_BENCH_SHOW"):
        print(json.dumps(answers)[-1500:], out.decode(errors="replace")[-1500:], err[-2500:])
    match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    if not match:
        sys.exit(f"no RSS figure for {args}:\n{err}")
    return int(match.group(1)), proc.returncode, err


def guard_session(tool, arguments):
    """initialize, tools/list, then one call of `tool`."""
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
    ]


def main():
    if not os.path.exists(BINARY):
        sys.exit(f"{BINARY} not found; run `cargo build --release` first")
    with tempfile.TemporaryDirectory() as project:
        with open(os.path.join(project, "big-a.json"), "w") as f:
            f.write(big_tool(False))
        with open(os.path.join(project, "big-b.json"), "w") as f:
            f.write(big_tool(True))
        message = os.path.getsize(os.path.join(project, "big-a.json")) + 90
        revision = os.path.join(project, "revision")
        with open(revision, "w") as f:
            f.write("a")
        server = os.path.join(project, "server.py")
        with open(server, "w") as f:
            f.write(SERVER)
        entry = lambda tool: {"command": sys.executable, "args": [server, tool, revision]}
        with open(os.path.join(project, ".mcp.json"), "w") as f:
            json.dump({"mcpServers": {"big": entry(os.path.join(project, "big-a.json")), "tiny": entry("tiny")}}, f)
        timeout = ["--timeout", "600", "--request-timeout", "600", "--max-message-bytes", str(64 << 20)]
        print(f"one tool with {PROPERTIES:,} properties: a {message / 1e6:.1f} MB tools/list answer; binary {BINARY}")
        results = []

        def case(name, args, session=None, expect=(0,)):
            if CASES and name not in CASES and name != "update":
                return
            kb, code, err = peak_kb(args, project, session)
            if code not in expect:
                sys.exit(f"{name}: exit {code}, expected {expect}:\n{err[-3000:]}")
            results.append((name, kb))
            print(f"{name:<11} {kb / 1024:8.0f} MB  ({kb * 1024 / message:5.1f}x the message)  mcp-lock {' '.join(args)}", flush=True)

        case("update", ["update", "--yes", *timeout])
        lock = os.path.getsize(os.path.join(project, "mcp.lock"))
        print(f"{'':<11} lock: {lock / 1e6:.1f} MB")
        case("verify", ["verify", *timeout])
        with open(revision, "w") as f:
            f.write("b")
        case("drift", ["verify", *timeout], expect=(1,))
        with open(revision, "w") as f:
            f.write("a")
        limit = ["--max-message-bytes", str(64 << 20)]
        case("guard-list", ["guard", "big", *limit], session=guard_session("big", {"p1": "x"})[:3])
        case("guard-big", ["guard", "big", *limit], session=guard_session("big", {"p1": "x"}))
        case("guard-tiny", ["guard", "tiny", *limit], session=guard_session("ping", {}))


if __name__ == "__main__":
    main()
