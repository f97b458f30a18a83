#!/usr/bin/env python3
"""What `mcp-lock guard` adds to tools/call round trips, measured in one run.

The same fixture server (release build) is talked to two ways at once: directly over
its stdio pipes, and through `mcp-lock guard bench` (started in a temporary project
whose mcp.lock pins the fixture; the audit log stays on, at its default
.mcp-lock/audit.jsonl, as in real use). Both get the same handshake (initialize,
notifications/initialized, tools/list) and warm-up calls, and the same client code
(raw os.write, reads straight from the pipe's fd) sends them
tools/call read_ticket {"id": "T-1"}:

1. Latency: sequential round trips, each timed with perf_counter_ns from before the
   write to the end of the answer's line. p50 and p99 direct and via the guard, what
   the guard adds (difference of the percentiles, and the median over rounds of the
   per-round p50 differences).
2. Throughput: a pipelined burst, WINDOW requests in flight (a new one written as each
   answer arrives, several per write), in calls per second; guard / direct.

The machine is shared and noisy, so both are measured in interleaved rounds (direct
then guard, guard then direct, ...) and only ratios from this one run are compared.
Goals (informational; the exit code is 0 unless something broke): p50 added under
100 us, guard throughput at least 90% of direct.

With --compare BIN, a second guard (another build of mcp-lock, say the one before a
change) runs beside the first in the same interleaved rounds, sharing its audit log,
and both are reported against direct.

Usage: python3 benches/guard_speed.py [CALLS] [--burst M] [--window K] [--rounds R] [--cpus L] [--compare BIN]
  CALLS    sequential round trips per path (default 5000)
  --burst  pipelined calls per path (default 20000)
  --window requests in flight in the burst (default 64)
  --rounds interleaved rounds each measurement is split into (default 10)
  --warmup calls (sequential, then pipelined) before measuring (default 500)
  --cpus   pin everything to these CPUs, e.g. 0: takes the scheduler's placement (and,
           in a VM, the cost of waking an idle vCPU) out of the latency figures
  --compare another mcp-lock binary to run as a second guard, reported as "other"
(builds the release binary and fixture itself)
"""

import argparse
import glob
import json
import math
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target/release/mcp-lock")
FIXTURE = os.path.join(ROOT, "target/release/examples/fixture_server")
TIMEOUT_S = 10
CALL = (b'{"jsonrpc":"2.0","id":%d,"method":"tools/call",'
        b'"params":{"name":"read_ticket","arguments":{"id":"T-1"}}}\n')


class Broke(Exception):
    pass


class Peer:
    """One MCP server process behind pipes, spoken to with as little client overhead
    as Python allows: pre-formatted requests, os.write, os.read into a byte buffer."""

    def __init__(self, name, argv, cwd, stderr_path):
        self.name = name
        self.stderr_path = stderr_path
        self.stderr = open(stderr_path, "wb")
        self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, bufsize=0)
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        self.poll = select.poll()
        self.poll.register(self.rfd, select.POLLIN)
        self.buf = b""
        self.next_id = 100

    def fail(self, what):
        try:
            with open(self.stderr_path, "rb") as f:
                tail = f.read()[-2000:].decode(errors="replace")
        except OSError:
            tail = ""
        raise Broke(f"{self.name}: {what}" + (f"\n--- its stderr ---\n{tail}" if tail else ""))

    def fill(self):
        """Reads what the pipe has, waiting at most TIMEOUT_S."""
        if not self.poll.poll(TIMEOUT_S * 1000):
            self.fail(f"no answer within {TIMEOUT_S} s")
        chunk = os.read(self.rfd, 1 << 16)
        if not chunk:
            self.fail(f"closed its output (exit status {self.proc.poll()})")
        self.buf += chunk

    def read_line(self):
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 1:]
                return line
            self.fill()

    def send(self, msg):
        os.write(self.wfd, (json.dumps(msg) + "\n").encode())

    def request(self, method, params):
        self.next_id += 1
        rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            msg = json.loads(self.read_line())
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    self.fail(f"{method} answered with an error: {msg['error']}")
                return msg["result"]

    def handshake(self):
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "guard-bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        names = [t["name"] for t in self.request("tools/list", {})["tools"]]
        if "read_ticket" not in names:
            self.fail(f"read_ticket not listed: {names}")

    def check_answer(self, line, rid):
        msg = json.loads(line)
        result = msg.get("result") or {}
        if msg.get("id") != rid or result.get("isError") or \
                result.get("structuredContent") != {"title": "Ticket T-1"}:
            self.fail(f"unexpected answer to call {rid}: {line[:300]!r}")

    def latency(self, calls):
        """Nanoseconds per sequential round trip. Timed: write + reading the line;
        checking the answer happens outside the timed part."""
        times = []
        clock, write, read_line = time.perf_counter_ns, os.write, self.read_line
        wfd = self.wfd
        for _ in range(calls):
            self.next_id += 1
            rid = self.next_id
            req = CALL % rid
            t0 = clock()
            write(wfd, req)
            line = read_line()
            t1 = clock()
            times.append(t1 - t0)
            self.check_answer(line, rid)
        return times

    def burst(self, calls, window):
        """Calls per second with `window` requests in flight; answers are counted by
        their newlines, the last one is checked in full."""
        first = self.next_id + 1
        self.next_id += calls
        sent = answered = 0
        tail = b""
        errors = 0
        poll, rfd, wfd = self.poll, self.rfd, self.wfd
        t0 = time.perf_counter_ns()
        n = min(window, calls)
        os.write(wfd, b"".join(CALL % (first + i) for i in range(n)))
        sent = n
        while answered < calls:
            if not poll.poll(TIMEOUT_S * 1000):
                self.fail(f"burst stalled: {answered}/{calls} answered within {TIMEOUT_S} s")
            chunk = os.read(rfd, 1 << 16)
            if not chunk:
                self.fail(f"closed its output mid-burst (exit status {self.proc.poll()})")
            got = chunk.count(b"\n")
            errors += chunk.count(b'"isError":true') + chunk.count(b'"error":')
            answered += got
            n = min(got, calls - sent)
            if n:
                os.write(wfd, b"".join(CALL % (first + sent + i) for i in range(n)))
                sent += n
            tail = (tail + chunk)[-4096:]
        elapsed = time.perf_counter_ns() - t0
        if errors:
            self.fail(f"{errors} error answers in the burst")
        last = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]
        self.check_answer(last, first + calls - 1)
        return calls / (elapsed / 1e9)

    def usage(self):
        """CPU microseconds and (voluntary, involuntary) context switches so far of
        this process's own threads (not its children: for a guard, not the server)."""
        cpu = vol = invol = 0
        for task in glob.glob(f"/proc/{self.proc.pid}/task/*"):
            try:
                with open(f"{task}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"{task}/status") as f:
                    status = dict(line.split(":", 1) for line in f if ":" in line)
            except OSError:  # a thread that ended meanwhile
                continue
            cpu += int(fields[11]) + int(fields[12])
            vol += int(status["voluntary_ctxt_switches"])
            invol += int(status["nonvoluntary_ctxt_switches"])
        return [cpu * 1e6 / os.sysconf("SC_CLK_TCK"), vol, invol]

    def close(self):
        """Closes stdin and waits for this process (and only it) to exit."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.stderr.close()


def pct(values, p):
    """Nearest-rank percentile of a list."""
    s = sorted(values)
    return s[min(len(s), max(1, math.ceil(p / 100 * len(s)))) - 1]


def split(total, rounds):
    base, extra = divmod(total, rounds)
    return [base + (1 if i < extra else 0) for i in range(rounds)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("calls", nargs="?", type=int, default=5000)
    ap.add_argument("--burst", type=int, default=20000)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--cpus", help="pin this script and both servers to these CPUs (e.g. 0 or 0,1); "
                    "default: unpinned, as in real use")
    ap.add_argument("--compare", metavar="BIN",
                    help="another mcp-lock binary, run as a second guard in the same rounds")
    args = ap.parse_args()
    if min(args.calls, args.burst) < args.rounds or args.rounds < 1 or args.window < 1:
        ap.error("CALLS and --burst must be at least --rounds (and --rounds, --window at least 1)")

    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "mcp-lock",
                    "--example", "fixture_server"], cwd=ROOT, check=True)
    if args.cpus:
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})  # children inherit it
    load = os.getloadavg()[0]
    project = tempfile.mkdtemp(prefix="guard-bench-")
    peers = []
    try:
        with open(os.path.join(project, ".mcp.json"), "w") as f:
            json.dump({"mcpServers": {"bench": {"command": FIXTURE, "args": []}}}, f)
        pinned = subprocess.run([BIN, "update", "--yes"], cwd=project, capture_output=True, text=True)
        if pinned.returncode != 0:
            raise Broke(f"mcp-lock update --yes exited {pinned.returncode}:\n{pinned.stderr}")

        direct = Peer("direct", [FIXTURE], project, os.path.join(project, "direct.stderr"))
        peers.append(direct)
        guard = Peer("guard", [BIN, "guard", "bench"], project, os.path.join(project, "guard.stderr"))
        peers.append(guard)
        if args.compare:
            other = Peer("other", [os.path.abspath(args.compare), "guard", "bench"], project,
                         os.path.join(project, "other.stderr"))
            peers.append(other)
        for peer in peers:
            peer.handshake()
            peer.latency(args.warmup)
            peer.burst(args.warmup, args.window)

        names = [peer.name for peer in peers]
        # Each round in another order: direct first, then a guard first, and so on.
        order = lambda r: (peers[r % len(peers):] + peers[:r % len(peers)])[::1 if r % 2 == 0 else -1]
        lat = {name: [] for name in names}
        round_p50 = {name: [] for name in names}
        # What each process itself spent per call (CPU, context switches), by phase.
        cost = {(name, phase): [0.0, 0, 0] for name in names for phase in ("seq", "burst")}

        def measured(peer, phase, run):
            before = peer.usage()
            result = run()
            after = peer.usage()
            for i in range(3):
                cost[(peer.name, phase)][i] += after[i] - before[i]
            return result

        for r, n in enumerate(split(args.calls, args.rounds)):
            for peer in order(r):
                t = measured(peer, "seq", lambda: peer.latency(n))
                lat[peer.name] += t
                round_p50[peer.name].append(statistics.median(t))

        rate = {name: [] for name in names}
        for r, n in enumerate(split(args.burst, args.rounds)):
            for peer in order(r):
                rate[peer.name].append(measured(peer, "burst", lambda: peer.burst(n, args.window)))

        for peer in peers:
            peer.close()
        # The log rotates by size (audit.1.jsonl, ...): count every file of it.
        audit_lines = 0
        for audit_path in glob.glob(os.path.join(project, ".mcp-lock/audit*.jsonl")):
            with open(audit_path, "rb") as f:
                audit_lines += f.read().count(b"\n")
        expected_calls = (len(peers) - 1) * (2 * args.warmup + args.calls + args.burst)
        if audit_lines < expected_calls:
            raise Broke(f"the audit log has {audit_lines} lines for {expected_calls} calls")
    except Broke as e:
        sys.exit(f"guard_speed: {e}")
    finally:
        for peer in peers:
            if peer.proc.poll() is None:
                peer.close()
        shutil.rmtree(project, ignore_errors=True)

    us = lambda ns: ns / 1000
    guards = [n for n in names if n != "direct"]
    label = {"guard": "via guard", "other": "via other"}
    d50, d99 = pct(lat["direct"], 50), pct(lat["direct"], 99)
    # Throughput: total calls over total time per path, and the median per-round ratio.
    per = split(args.burst, args.rounds)
    total = lambda rates: sum(per) / sum(n / x for n, x in zip(per, rates))
    td = total(rate["direct"])

    cpus = f"pinned to CPUs {args.cpus}" if args.cpus else f"unpinned on {os.cpu_count()} CPUs"
    print(f"tools/call read_ticket, fixture server (release), {args.rounds} interleaved rounds, "
          f"guard audit log on; {cpus}, load average {load:.2f} at start")
    if args.compare:
        print(f"guard: {BIN}; other: {os.path.abspath(args.compare)}")
    print(f"latency: {args.calls} sequential round trips per path (after {args.warmup} warm-up)")
    print(f"  {'':<16} {'p50 us':>9} {'p99 us':>9}")
    print(f"  {'direct':<16} {us(d50):>9.1f} {us(d99):>9.1f}")
    for g in guards:
        g50, g99 = pct(lat[g], 50), pct(lat[g], 99)
        diffs = [a - b for a, b in zip(round_p50[g], round_p50["direct"])]
        print(f"  {label[g]:<16} {us(g50):>9.1f} {us(g99):>9.1f}")
        print(f"  {'added':<16} {us(g50 - d50):>+9.1f} {us(g99 - d99):>+9.1f}"
              f"   (per-round p50 differences: median {us(statistics.median(diffs)):+.1f}, "
              f"range {us(min(diffs)):+.1f}..{us(max(diffs)):+.1f} us)")
    print(f"throughput: {args.burst} pipelined calls per path, {args.window} in flight")
    print(f"  {'direct':<16} {td:>9.0f} calls/s")
    for g in guards:
        tg = total(rate[g])
        ratio_rounds = statistics.median(a / b for a, b in zip(rate[g], rate["direct"]))
        print(f"  {label[g]:<16} {tg:>9.0f} calls/s   {g}/direct {tg / td:.3f}"
              f"   (median per-round ratio: {ratio_rounds:.3f})")
    print("cost per call of each process's own threads (direct: the server; a guard: the guard "
          "alone), CPU at the kernel's clock-tick resolution")
    print(f"  {'':<16} {'seq CPU us':>10} {'switches':>14} {'burst CPU us':>13} {'switches':>14}")
    for name in names:
        cells = []
        for phase, calls in (("seq", args.calls), ("burst", args.burst)):
            c, v, i = cost[(name, phase)]
            cells.append(f"{c / calls:>10.1f} {v / calls:>6.2f}v+{i / calls:.2f}i")
        print(f"  {label.get(name, name):<16} {cells[0]} {cells[1]:>28}")
    print(f"audit log: {audit_lines} lines for {expected_calls} guarded calls (+ listing entries)")
    g50 = pct(lat["guard"], 50)
    tg = total(rate["guard"])
    goal_lat = g50 - d50 < 100_000
    goal_thr = tg / td >= 0.90
    print(f"goal p50 added < 100 us:          {'PASS' if goal_lat else 'MISS'} ({us(g50 - d50):+.1f} us)")
    print(f"goal throughput >= 90% of direct: {'PASS' if goal_thr else 'MISS'} ({100 * tg / td:.1f}%)")

if __name__ == "__main__":
    main()
