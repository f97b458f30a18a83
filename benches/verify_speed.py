#!/usr/bin/env python3
"""How long `mcp-lock verify` takes against the real MCP servers, measured in one run.

Reports, per server: the server's own spawn -> tools/list time with a bare client
(this script speaks JSON-RPC itself), `mcp-lock verify SERVER` wall time, and what
verify adds over the bare time; then all four servers verified together against the
slowest alone. Rounds are interleaved so machine noise hits every measurement alike.

Usage: python3 benches/verify_speed.py [ROUNDS]   (needs scripts/install-test-servers.sh)
"""

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 7
SERVERS_DIR = os.environ.get("MCP_LOCK_TEST_SERVERS") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mcp-lock/test-servers"
)


def npm(pkg, *extra):
    main = os.path.join(SERVERS_DIR, "npm/node_modules/@modelcontextprotocol", pkg, "dist/index.js")
    return {"command": "node", "args": [main, *extra]}


def servers(project):
    memory = npm("server-memory")
    memory["env"] = {"MEMORY_FILE_PATH": os.path.join(project, "memory.jsonl")}
    return {
        "everything": npm("server-everything", "stdio"),
        "filesystem": npm("server-filesystem", project),
        "memory": memory,
        "time": {"command": os.path.join(SERVERS_DIR, "venv/bin/mcp-server-time"), "args": ["--local-timezone", "UTC"]},
    }


def bare_list(entry):
    """Seconds from spawn to the tools/list answer, with a minimal client."""
    env = dict(os.environ, **entry.get("env", {}))
    start = time.perf_counter()
    proc = subprocess.Popen(
        [entry["command"], *entry["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, env=env, start_new_session=True,
    )

    def send(msg):
        proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()

    def wait_for(id_):
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("id") == id_ and "method" not in msg:
                return msg
        raise RuntimeError("server closed its output")

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
    wait_for(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    wait_for(2)
    elapsed = time.perf_counter() - start
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return elapsed


def bare_all(entries):
    """Seconds for the bare client to list every server at once: what the machine
    itself needs to start them side by side."""
    from concurrent.futures import ThreadPoolExecutor
    start = time.perf_counter()
    with ThreadPoolExecutor(len(entries)) as pool:
        list(pool.map(bare_list, entries.values()))
    return time.perf_counter() - start


def timed(cmd, cwd):
    start = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {out.returncode}")
    return elapsed, json.loads(out.stdout)


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    exe = os.path.join(ROOT, "target/release/mcp-lock")
    with tempfile.TemporaryDirectory() as project:
        entries = servers(project)
        with open(os.path.join(project, ".mcp.json"), "w") as f:
            json.dump({"mcpServers": entries}, f)
        subprocess.run([exe, "update", "--yes"], cwd=project, check=True, stderr=subprocess.DEVNULL)
        bare = {n: [] for n in entries}
        alone = {n: [] for n in entries}
        inner = {n: [] for n in entries}
        together = []
        bare_together = []
        for _ in range(ROUNDS):
            for name, entry in entries.items():
                bare[name].append(bare_list(entry))
                wall, doc = timed([exe, "verify", "--format", "json", name], project)
                alone[name].append(wall)
                inner[name].append(doc["servers"][0]["elapsed_ms"] / 1000)
            wall, doc = timed([exe, "verify", "--format", "json"], project)
            assert doc["exit_code"] == 0, doc
            together.append(wall)
            bare_together.append(bare_all(entries))
    med = statistics.median
    print(f"rounds: {ROUNDS} (medians, seconds)")
    print(f"{'server':<12} {'bare list':>10} {'verify':>10} {'added':>10} {'spawn->list in verify':>22}")
    for name in entries:
        b, a, i = med(bare[name]), med(alone[name]), med(inner[name])
        print(f"{name:<12} {b:>10.3f} {a:>10.3f} {a - b:>+10.3f} {i:>22.3f}")
    slowest = max(entries, key=lambda n: med(alone[n]))
    t = med(together)
    bt = med(bare_together)
    print(f"all four together: {t:.3f}s; slowest alone ({slowest}): {med(alone[slowest]):.3f}s; "
          f"ratio {t / med(alone[slowest]):.2f}x; sum of the four alone: {sum(med(alone[n]) for n in entries):.3f}s")
    print(f"bare client, all four at once: {bt:.3f}s (the machine's own cost of starting them side by side); "
          f"verify together / bare together: {t / bt:.2f}x")


if __name__ == "__main__":
    main()
