#!/usr/bin/env python3
"""How mcp-lock scales with the number of tools a server lists, measured in one run.

A stdio fixture server (examples/fixture_server, `--many`) lists N tools, 500 per
page. For each N (default 1,000, 10,000 and 50,000):

  bare      a minimal Python client lists every page (spawn -> last page): the floor
  update    `update --yes`, the first pin
  verify    `verify` with nothing changed
  drift     `verify --format F` after revision b changed 13 of the N tools, for every
            format F (human, json, sarif, junit, github, markdown)
  diff      `diff` against the live server, and `diff --from old --to new` of two locks

Each is timed (wall seconds) and its peak RSS read from wait4(2); the idle baseline is
the peak RSS of `mcp-lock --version`. The figures printed are the ratios the goals of
issue 17 are stated in: verify / bare listing (goal <= 2 at 10k) and peak memory above
the baseline / the listing's bytes (goal <= 8 at N >= 10k). Rounds are interleaved
(every case once, then again) and the median is shown.

Usage: python3 benches/scale.py [N,...] [--rounds R] [--bin PATH] [--compare PATH]
  --bin measures another build of mcp-lock; --compare runs a second build (say, one
  copied aside before a change) in the same rounds, case by case, so before and after
  are measured under the same load.
  (needs `cargo build --release --bin mcp-lock --example fixture_server`)
"""

import argparse
import json
import os
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target/release/mcp-lock")
FIXTURE = os.path.join(ROOT, "target/release/examples/fixture_server")
PAGE = 500
FORMATS = ["human", "json", "sarif", "junit", "github", "markdown"]
# Lets update and verify accept the largest N (the default refuses more than 10,000).
LIMITS = ["--max-tools", "1000000", "--timeout", "600", "--request-timeout", "600"]


def timed(argv, cwd, expect=(0,)):
    """(seconds, peak RSS kB, stdout) of one run, RSS from wait4."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    # Drain the pipes without reaping, then wait4 for this child's own rusage.
    out = bytearray()
    err = bytearray()
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    open_pipes = 2
    while open_pipes:
        for key, _ in sel.select():
            chunk = os.read(key.fileobj.fileno(), 1 << 16)
            if chunk:
                key.data.extend(chunk)
            else:
                sel.unregister(key.fileobj)
                open_pipes -= 1
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in expect:
        sys.exit(f"{' '.join(argv)}: exit {proc.returncode}, expected {expect}\n{err.decode()[-3000:]}")
    return elapsed, usage.ru_maxrss, bytes(out)


def bare_listing(argv):
    """Seconds from spawn to the last page, and the listing's bytes (every page's
    result line as sent), with a minimal client."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)

    def send(msg):
        proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()

    def answer(id_):
        for line in proc.stdout:
            msg = json.loads(line)
            if msg.get("id") == id_ and "method" not in msg:
                return msg, len(line)
        raise RuntimeError("fixture closed its output")

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
    answer(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    cursor, id_, size, tools = None, 2, 0, 0
    while True:
        params = {"cursor": cursor} if cursor else {}
        send({"jsonrpc": "2.0", "id": id_, "method": "tools/list", "params": params})
        msg, n = answer(id_)
        size += n
        tools += len(msg["result"]["tools"])
        cursor = msg["result"].get("nextCursor")
        id_ += 1
        if not cursor:
            break
    elapsed = time.perf_counter() - start
    proc.stdin.close()
    proc.wait()
    return elapsed, size, tools


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="?", default="1000,10000,50000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bin", default=BIN, help="the mcp-lock binary to measure")
    parser.add_argument("--compare", help="a second mcp-lock binary, measured in the same rounds")
    args = parser.parse_args()
    bins = {"new": os.path.abspath(args.bin)}
    if args.compare:
        bins = {"old": os.path.abspath(args.compare), **bins}
    for path in (*bins.values(), FIXTURE):
        if not os.path.exists(path):
            sys.exit(f"{path} not found; run `cargo build --release --bin mcp-lock --example fixture_server`")
    sizes = [int(n) for n in args.sizes.split(",")]
    load = os.getloadavg()
    for label, path in bins.items():
        print(f"{label}: {path}")
    print(f"{os.cpu_count()} CPUs; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        idle = {}
        for label, path in bins.items():
            _, idle[label], _ = timed([path, "--version"], tmp)
            print(f"{label} idle baseline (mcp-lock --version): {idle[label] / 1024:.1f} MB peak RSS")
        print(f"\n{'N':>7} {'build':<5} {'case':<16} {'seconds':>8} {'peak MB':>8} {'ratio':>22}")
        for n in sizes:
            measure(n, tmp, bins, idle, args.rounds)
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


def measure(n, tmp, bins, idle, rounds):
    projects = {label: setup(n, os.path.join(tmp, f"n{n}-{label}")) for label in bins}
    cases = {}

    def record(label, name, seconds, kb):
        cases.setdefault((label, name), []).append((seconds, kb))

    listing_bytes = 0
    for _ in range(rounds):
        for label, binary in bins.items():
            project, fixture, revision, lock = projects[label]
            with open(revision, "w") as f:
                f.write("a")
            seconds, listing_bytes, tools = bare_listing(fixture)
            assert tools == n, f"listed {tools} tools, expected {n}"
            record("bare", "bare listing", seconds, 0)
            if os.path.exists(lock):
                os.remove(lock)
            s, kb, _ = timed([binary, "update", "--yes", *LIMITS], project)
            record(label, "update", s, kb)
            s, kb, _ = timed([binary, "verify", *LIMITS], project)
            record(label, "verify", s, kb)
            shutil.copy(lock, lock + ".a")
            with open(revision, "w") as f:
                f.write("b")
            for fmt in FORMATS:
                s, kb, out = timed([binary, "verify", "--format", fmt, *LIMITS], project, expect=(1,))
                record(label, f"drift {fmt}", s, kb)
            s, kb, _ = timed([binary, "diff", *LIMITS], project, expect=(0, 1))
            record(label, "diff live", s, kb)
            s, kb, _ = timed([binary, "update", "--yes", *LIMITS], project, expect=(0, 1))
            shutil.copy(lock, lock + ".b")
            s, kb, _ = timed([binary, "diff", "--from", lock + ".a", "--to", lock + ".b"], project,
                             expect=(0, 1))
            record(label, "diff two locks", s, kb)

    bare = statistics.median(s for s, _ in cases[("bare", "bare listing")])
    lock = next(iter(projects.values()))[3]
    lock_mb = os.path.getsize(lock + ".a") / 1e6
    print(f"{n:>7} {'':<5} {'listing':<16} {'':>8} {'':>8}   {listing_bytes / 1e6:.1f} MB sent, lock {lock_mb:.1f} MB")
    print(f"{n:>7} {'':<5} {'bare listing':<16} {bare:8.2f}")
    names = [name for label, name in cases if label == "new"]
    for name in names:
        for label in bins:
            runs = cases[(label, name)]
            seconds = statistics.median(s for s, _ in runs)
            kb = max(k for _, k in runs)
            above = max(kb - idle[label], 0) * 1024 / listing_bytes
            print(f"{n:>7} {label:<5} {name:<16} {seconds:8.2f} {kb / 1024:8.1f}   "
                  f"{seconds / bare:5.2f}x bare, mem {above:4.1f}x")
    print(flush=True)


def setup(n, project):
    """A project whose one server lists n tools: (dir, fixture argv, revision file, lock)."""
    os.makedirs(project)
    revision = os.path.join(project, "revision")
    with open(revision, "w") as f:
        f.write("a")
    # The fixture names three tools of its own; --many adds the rest.
    fixture = [FIXTURE, "--many", str(n - 3), "--page-size", str(PAGE), "--revision-file", revision]
    with open(os.path.join(project, ".mcp.json"), "w") as f:
        json.dump({"mcpServers": {"bulk": {"command": fixture[0], "args": fixture[1:]}}}, f)
    with open(os.path.join(project, "mcp-lock.toml"), "w") as f:
        f.write('[profiles]\npin = ["bare"]\n')
    return project, fixture, revision, os.path.join(project, "mcp.lock")


if __name__ == "__main__":
    main()
