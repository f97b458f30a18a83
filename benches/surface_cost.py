#!/usr/bin/env python3
"""What listing prompts and resource templates adds to `mcp-lock verify`.

Pins the real @modelcontextprotocol/server-everything 2026.8.31 (installed by
scripts/install-test-servers.sh) in a temporary project, then verifies it in
alternating rounds with the default surface (tools, prompts, resource templates) and
with `[surface] prompts = false, resource-templates = false` (tools only), and
reports the server's elapsed time from the JSON report (spawn to last page) and the
whole process's wall time. Builds the release binary first.

    python3 benches/surface_cost.py [ROUNDS]
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 6
PER_ROUND = 5


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    binary = os.path.join(ROOT, "target", "release", "mcp-lock")
    cache = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    servers = os.environ.get("MCP_LOCK_TEST_SERVERS", os.path.join(cache, "mcp-lock", "test-servers"))
    main_js = os.path.join(
        servers, "npm", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"
    )
    if not os.path.exists(main_js):
        sys.exit(f"server-everything is not installed in {servers}; run scripts/install-test-servers.sh")
    with tempfile.TemporaryDirectory() as project:
        with open(os.path.join(project, ".mcp.json"), "w") as f:
            json.dump({"mcpServers": {"everything": {"command": "node", "args": [main_js]}}}, f)
        subprocess.run([binary, "update", "--yes"], cwd=project, check=True, capture_output=True)
        policy = os.path.join(project, "mcp-lock.toml")
        results = {"tools, prompts, templates": ([], []), "tools only": ([], [])}
        for _ in range(ROUNDS):
            for mode, (elapsed, wall) in results.items():
                if mode == "tools only":
                    with open(policy, "w") as f:
                        f.write("[surface]\nprompts = false\nresource-templates = false\n")
                elif os.path.exists(policy):
                    os.remove(policy)
                for _ in range(PER_ROUND):
                    started = time.perf_counter()
                    out = subprocess.run(
                        [binary, "verify", "--format", "json"], cwd=project, capture_output=True, text=True
                    )
                    wall.append((time.perf_counter() - started) * 1000)
                    doc = json.loads(out.stdout)
                    assert doc["servers"][0]["verdict"] == "converged", out.stdout
                    elapsed.append(doc["servers"][0]["elapsed_ms"])
        print(f"verify of server-everything 2026.8.31, {ROUNDS} alternating rounds of {PER_ROUND}; "
              f"load average {os.getloadavg()[0]:.2f}")
        print(f"{'':28}{'server ms (p50)':>16}{'wall ms (p50)':>15}")
        medians = {}
        for mode, (elapsed, wall) in results.items():
            medians[mode] = (statistics.median(elapsed), statistics.median(wall))
            print(f"  {mode:26}{medians[mode][0]:>16.1f}{medians[mode][1]:>15.1f}")
        (a, b), (c, d) = medians["tools, prompts, templates"], medians["tools only"]
        print(f"  {'added by the extra kinds':26}{a - c:>+16.1f}{b - d:>+15.1f}")


if __name__ == "__main__":
    main()
