#!/usr/bin/env python3
"""How long reading the client configs takes as they grow, measured in one run.

Every command reads every config first (`guard` too), so this is a floor under all of
them. For each N (default 10,000, 100,000 and 300,000) a `.mcp.json` of N servers
(`"sNNN": {"command": "x"}`, as a generated file would have them) is read by
`mcp-lock servers --format json`, which reads the configs and prints one row per entry
with the line it is on, and by `mcp-lock verify`, which reads them and stops at the
missing lock (exit 2) before contacting anything. The figure is CPU seconds
(user + system, from wait4), since wall time on a loaded machine says more about the
load than about mcp-lock; wall time is shown beside it. Also timed: a Continue YAML
file nested 100,000 deep, refused before the YAML parser runs.

Goal (issue 26): reading 100,000 servers under a second of CPU; growth linear in N
(the last column: CPU per 1,000 servers stays flat).

Usage: python3 benches/config_scale.py [N,...] [--rounds R] [--bin PATH]
  (needs `cargo build --release --bin mcp-lock`)
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target/release/mcp-lock")


def timed(argv, cwd, expect):
    """(wall seconds, CPU seconds) of one run."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != expect:
        sys.exit(f"{' '.join(argv)}: exit {code}, expected {expect}\n{err.decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sizes", nargs="?", default="10000,100000,300000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bin", default=BIN)
    args = ap.parse_args()
    if not os.path.exists(args.bin):
        sys.exit(f"{args.bin} not found; run `cargo build --release --bin mcp-lock`")
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        for n in sizes:
            d = os.path.join(tmp, f"n{n}")
            os.makedirs(d)
            servers = {f"s{i}": {"command": "x"} for i in range(n)}
            with open(os.path.join(d, ".mcp.json"), "w") as f:
                json.dump({"mcpServers": servers}, f)
            size = os.path.getsize(os.path.join(d, ".mcp.json"))
            cases.append((f"servers  N={n:>7} ({size / 1e6:.1f} MB)", n, d,
                          [args.bin, "servers", "--format", "json"], 0))
            cases.append((f"verify   N={n:>7} ({size / 1e6:.1f} MB)", n, d, [args.bin, "verify"], 2))
        deep = os.path.join(tmp, "deep")
        os.makedirs(os.path.join(deep, ".continue/mcpServers"))
        with open(os.path.join(deep, ".continue/mcpServers/deep.yaml"), "w") as f:
            f.write("mcpServers:\n  - name: deep\n    args: " + "[" * 100_000 + "]" * 100_000 + "\n")
        cases.append(("yaml nested 100,000 deep (refused)", None, deep, [args.bin, "servers"], 2))
        results = {c[0]: [] for c in cases}
        for _ in range(args.rounds):
            for label, _, cwd, argv, expect in cases:
                results[label].append(timed(argv, cwd, expect))
        print(f"{'case':<40} {'CPU s':>8} {'wall s':>8} {'CPU ms/1k servers':>18}")
        for label, n, _, _, _ in cases:
            cpu = statistics.median(r[1] for r in results[label])
            wall = statistics.median(r[0] for r in results[label])
            per = f"{cpu * 1e6 / n:.1f}" if n else "-"
            print(f"{label:<40} {cpu:>8.2f} {wall:>8.2f} {per:>18}")


if __name__ == "__main__":
    main()
