#!/usr/bin/env python3
"""Remote and many-server verify times, measured in one run.

1. HTTP: the real server-everything over Streamable HTTP (on loopback). Per round, a
   bare client in this script does the same round trips verify does (POST
   initialize, POST notifications/initialized, POST tools/list, DELETE, answers read
   from SSE) on a fresh connection; then `mcp-lock verify` runs as a process (wall
   time, and its own elapsed time from the JSON report).
2. Many servers: 20 fixture servers (10 stdio, 10 Streamable HTTP) whose initialize
   takes 0..380 ms (20 ms apart), verified together with the default --jobs vs the
   slowest of them verified alone.

3. Guard over HTTP: per-call round trip of `tools/call echo` to server-everything over
   Streamable HTTP, from a client in this script straight to the server (keep-alive,
   in its session) vs through `mcp-lock guard` (stdio in, HTTP out); p50 and p99 of
   CALLS calls each, interleaved in blocks of 20.

Rounds are interleaved so machine noise hits every measurement alike; medians shown.

Usage: python3 benches/remote_speed.py [ROUNDS] [CALLS]
(needs scripts/install-test-servers.sh; builds the release binary and fixture)
"""

import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 7
CALLS = int(sys.argv[2]) if len(sys.argv) > 2 else 400
SERVERS_DIR = os.environ.get("MCP_LOCK_TEST_SERVERS") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mcp-lock/test-servers"
)
BIN = os.path.join(ROOT, "target/release/mcp-lock")
FIXTURE = os.path.join(ROOT, "target/release/examples/fixture_server")


def wait_for_port(path, proc):
    for _ in range(1500):
        if os.path.exists(path):
            text = open(path).read().strip()
            if text:
                return int(text)
        if proc.poll() is not None:
            sys.exit(f"server exited early: {proc.args}")
        time.sleep(0.02)
    sys.exit(f"server did not listen: {proc.args}")


def start(args, env_port_file=False, flag_port_file=False, tmp=None):
    port_file = os.path.join(tmp, f"port-{len(os.listdir(tmp))}")
    env = dict(os.environ)
    if env_port_file:
        env["MCP_LOCK_PORT_FILE"] = port_file
    if flag_port_file:
        args = [*args, "--port-file", port_file]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL)
    return proc, wait_for_port(port_file, proc)


def read_sse_answer(response):
    """The first JSON-RPC answer in an SSE (or JSON) body."""
    if "json" in (response.getheader("content-type") or ""):
        return json.loads(response.read())
    data = []
    while True:
        line = response.readline()
        if not line:
            raise RuntimeError("stream ended")
        line = line.decode().rstrip("\r\n")
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
        elif line == "":
            if data and "".join(data):
                message = json.loads("\n".join(data))
                if "id" in message and "method" not in message:
                    return message
            data = []


def bare_http(port):
    """Seconds for initialize, initialized, tools/list and DELETE, as verify does them."""
    start_t = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port)
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    def post(body, extra):
        conn.request("POST", "/mcp", json.dumps(body), {**headers, **extra})
        return conn.getresponse()

    r = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mcp-lock", "version": "0.1.0"}}}, {})
    session = r.getheader("mcp-session-id")
    read_sse_answer(r)
    r.read()  # the server ends the stream after the answer
    extra = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, extra).read()
    r = post({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}, extra)
    tools = read_sse_answer(r)["result"]["tools"]
    r.read()
    assert len(tools) == 13, len(tools)
    conn.request("DELETE", "/mcp", headers=extra)
    conn.getresponse().read()
    conn.close()
    return time.perf_counter() - start_t


class DirectHttp:
    """One Streamable HTTP session straight to the server, on a kept-alive connection."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port)
        self.headers = {"Accept": "application/json, text/event-stream",
                        "Content-Type": "application/json"}
        r = self.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}})
        self.headers["Mcp-Session-Id"] = r.getheader("mcp-session-id")
        self.headers["MCP-Protocol-Version"] = "2025-11-25"
        read_sse_answer(r)
        r.read()
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}).read()
        self.next_id = 2

    def post(self, body):
        self.conn.request("POST", "/mcp", json.dumps(body), self.headers)
        return self.conn.getresponse()

    def call(self):
        rid = self.next_id
        self.next_id += 1
        t = time.perf_counter()
        r = self.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                       "params": {"name": "echo", "arguments": {"message": "hi"}}})
        answer = read_sse_answer(r)
        elapsed = time.perf_counter() - t
        r.read()
        assert answer["id"] == rid and "result" in answer, answer
        return elapsed

    def close(self):
        self.conn.request("DELETE", "/mcp", headers=self.headers)
        self.conn.getresponse().read()
        self.conn.close()


class GuardedHttp:
    """The same session through `mcp-lock guard` over stdio."""

    def __init__(self, project, name):
        self.proc = subprocess.Popen([BIN, "guard", name], cwd=project, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 1
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        cursor = None
        while True:
            result = self.request("tools/list", {"cursor": cursor} if cursor else {})["result"]
            cursor = result.get("nextCursor")
            if not cursor:
                break

    def send(self, msg):
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                sys.exit("the guard ended")
            message = json.loads(line)
            if message.get("id") == rid and "method" not in message:
                return message

    def call(self):
        t = time.perf_counter()
        answer = self.request("tools/call", {"name": "echo", "arguments": {"message": "hi"}})
        elapsed = time.perf_counter() - t
        assert "result" in answer and not answer["result"].get("isError"), answer
        return elapsed

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def pct(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def verify(project, *names):
    start_t = time.perf_counter()
    jobs = ["--jobs", os.environ["JOBS"]] if os.environ.get("JOBS") else []
    out = subprocess.run([BIN, "verify", "--format", "json", *jobs, *names], cwd=project,
                         capture_output=True, text=True)
    wall = time.perf_counter() - start_t
    if out.returncode != 0:
        sys.exit(f"verify failed ({out.returncode}): {out.stdout}\n{out.stderr}")
    doc = json.loads(out.stdout)
    return wall, max(s["elapsed_ms"] for s in doc["servers"]) / 1000


def write_config(project, servers):
    with open(os.path.join(project, ".mcp.json"), "w") as f:
        json.dump({"mcpServers": servers}, f)


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet", "--example", "fixture_server"],
                   cwd=ROOT, check=True)
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    everything = os.path.join(SERVERS_DIR, "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
    preload = os.path.join(ROOT, "tests/servers/loopback-listen.cjs")
    procs = []
    with tempfile.TemporaryDirectory() as tmp:
        ports = os.path.join(tmp, "ports")
        os.mkdir(ports)
        try:
            proc, port = start(["node", "--require", preload, everything, "streamableHttp"],
                               env_port_file=True, tmp=ports)
            procs.append(proc)
            http_project = os.path.join(tmp, "http")
            os.mkdir(http_project)
            write_config(http_project, {"everything-http": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}})
            subprocess.run([BIN, "update", "--yes"], cwd=http_project, check=True, capture_output=True)

            many = os.path.join(tmp, "many")
            os.mkdir(many)
            servers = {}
            for i in range(20):
                delay = str(i * 20)
                if i % 2 == 0:
                    servers[f"stdio-{i:02}"] = {"command": FIXTURE, "args": ["--delay-initialize", delay]}
                else:
                    proc, p = start([FIXTURE, "--http", "--delay-initialize", delay], flag_port_file=True, tmp=ports)
                    procs.append(proc)
                    servers[f"http-{i:02}"] = {"type": "http", "url": f"http://127.0.0.1:{p}/mcp"}
            slowest = max(servers, key=lambda n: int(n.split("-")[1]))
            write_config(many, servers)
            subprocess.run([BIN, "update", "--yes"], cwd=many, check=True, capture_output=True)

            bare, wall, inside, all20, alone = [], [], [], [], []
            for _ in range(ROUNDS):
                bare.append(bare_http(port))
                w, e = verify(http_project)
                wall.append(w)
                inside.append(e)
                all20.append(verify(many)[0])
                alone.append(verify(many, slowest)[0])

            direct_calls, guard_calls = [], []
            direct = DirectHttp(port)
            guarded = GuardedHttp(http_project, "everything-http")
            for _ in range(max(1, CALLS // 20)):
                direct_calls.extend(direct.call() for _ in range(20))
                guard_calls.extend(guarded.call() for _ in range(20))
            direct.close()
            guarded.close()
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait()

    med = statistics.median
    print(f"{ROUNDS} rounds, medians")
    print("server-everything over Streamable HTTP (initialize, initialized, tools/list, DELETE):")
    print(f"  bare client round trips      {med(bare):.3f} s")
    print(f"  mcp-lock verify (inside)     {med(inside):.3f} s   (its own connect -> last page)")
    print(f"  mcp-lock verify (wall)       {med(wall):.3f} s   (process start to exit)")
    print(f"20 fixture servers (10 stdio, 10 HTTP; initialize 0..380 ms):")
    print(f"  all 20 together              {med(all20):.3f} s")
    print(f"  slowest ({slowest}) alone      {med(alone):.3f} s")
    print(f"  ratio                        {med(all20) / med(alone):.2f}x   (goal: under 1.5x)")
    ms = lambda v: v * 1000
    print(f"tools/call echo to server-everything over Streamable HTTP, {len(direct_calls)} calls each:")
    print(f"  {'':<28} {'p50 ms':>8} {'p99 ms':>8}")
    print(f"  {'direct HTTP':<28} {ms(pct(direct_calls, 50)):>8.2f} {ms(pct(direct_calls, 99)):>8.2f}")
    print(f"  {'through mcp-lock guard':<28} {ms(pct(guard_calls, 50)):>8.2f} {ms(pct(guard_calls, 99)):>8.2f}")
    print(f"  added at p50                 {ms(pct(guard_calls, 50) - pct(direct_calls, 50)):+.2f} ms")


if __name__ == "__main__":
    main()
