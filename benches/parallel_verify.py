#!/usr/bin/env python3
"""verify of a six-server project against the CPU bound, measured in one run.

The project: four npm servers (server-everything, its 2025.7.1 release,
server-filesystem, server-memory), mcp-server-time and the Python SDK fixture
(tests/servers/py_sdk_server.py), all installed by scripts/install-test-servers.sh.
Each round runs `mcp-lock verify` (all servers at once, the default --jobs) and
reads the wall time and the CPU seconds of mcp-lock and every server it started
(getrusage of the reaped children). The CPU bound is that CPU time over the cores:
no schedule can finish sooner. Reported: wall, bound, and wall / bound (goal <= 1.10).
`-j 1` (one server at a time) is shown for comparison.

Usage: python3 benches/parallel_verify.py [ROUNDS] [BINARY]
  (default BINARY: target/release/mcp-lock)
"""

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
BINARY = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.join(ROOT, "target/release/mcp-lock")
SERVERS_DIR = os.environ.get("MCP_LOCK_TEST_SERVERS") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mcp-lock/test-servers"
)


def servers(project):
    modules = os.path.join(SERVERS_DIR, "npm/node_modules")

    def npm(package, *extra):
        return {"command": "node", "args": [os.path.join(modules, package, "dist/index.js"), *extra]}

    memory = npm("@modelcontextprotocol/server-memory")
    memory["env"] = {"MEMORY_FILE_PATH": os.path.join(project, "memory.jsonl")}
    venv = os.path.join(SERVERS_DIR, "venv/bin")
    return {
        "everything": npm("@modelcontextprotocol/server-everything", "stdio"),
        "everything-2025": npm("server-everything-2025.7.1", "stdio"),
        "filesystem": npm("@modelcontextprotocol/server-filesystem", project),
        "memory": memory,
        "time": {"command": os.path.join(venv, "mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "python-sdk": {"command": os.path.join(venv, "python"),
                       "args": [os.path.join(ROOT, "tests/servers/py_sdk_server.py"), "--transport", "stdio"]},
    }


def run(args, cwd):
    """Wall seconds and CPU seconds (user + system) of mcp-lock and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([BINARY, *args], cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"mcp-lock {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main():
    if not os.path.exists(BINARY):
        sys.exit(f"{BINARY} not found; run `cargo build --release` first")
    cores = os.cpu_count()
    with tempfile.TemporaryDirectory() as project:
        with open(os.path.join(project, ".mcp.json"), "w") as f:
            json.dump({"mcpServers": servers(project)}, f)
        run(["update", "--yes"], project)
        rows = {"verify": [], "verify -j 1": []}
        for _ in range(ROUNDS):
            rows["verify"].append(run(["verify"], project))
            rows["verify -j 1"].append(run(["verify", "-j", "1"], project))
        load = os.getloadavg()
        print(f"six servers, {ROUNDS} rounds, {cores} cores, load average {load[0]:.2f}; binary {BINARY}")
        for name, runs in rows.items():
            wall = statistics.median(w for w, _ in runs)
            bound = statistics.median(c for _, c in runs) / cores
            ratios = [w / (c / cores) for w, c in runs]
            print(f"  {name:<12} wall {wall:5.2f} s   CPU bound {bound:5.2f} s   "
                  f"wall/bound {statistics.median(ratios):4.2f} (range {min(ratios):.2f}..{max(ratios):.2f})")


if __name__ == "__main__":
    main()
