#!/usr/bin/env python3
"""How long a host waits for a server's answered `initialize` through `mcp-lock guard`,
next to the server started directly, measured in one run.

Real servers from the test-server cache (scripts/install-test-servers.sh):

  memory-script   node .../server-memory/dist/index.js: a pinned local script (the
                  guard hashes it and runs it from the bytes it checked)
  memory-closure  npx -y @modelcontextprotocol/server-memory@2026.8.31, pinned with its
                  whole dependency closure (mcp.closure.lock) from a verdaccio on
                  127.0.0.1; the guard runs it from the closure cache. "direct" is the
                  very command the guard starts (read from the audit log), so what is
                  compared is the guard's own cost, not npx's
  time-venv       .../venv/bin/mcp-server-time, a Python server (its script pinned)

Each project is set up as a host has it: an entry wrapped as `mcp-lock guard NAME --
CMD...`, pinned with `mcp-lock update --yes`; the first two launches of each guard
(the first installs a closure) happen before timing. Then in N interleaved rounds (direct then guard,
guard then direct, ...) each path is spawned, `initialize` is written at once (as a host
does), and the time from just before the spawn to the end of the answer's line is taken
(perf_counter_ns); then stdin is closed and the process reaped. p50/p90 for direct and
guarded, and what the guard adds (difference of the p50s, and the median of the per-round
differences). The servers here speak no 2026-07-28 `server/discover`, so only
`initialize` is timed.

--load starts 2 busy loops (as many as the machine has cores, by default) for the whole
run and ends them by PID at the end: the figures under contention. --compare BIN runs
another mcp-lock (say the build before a change) as a third path in the same rounds.

Goal (informational; the exit code is 0 unless something broke): added p50 within 20 ms,
quiet and loaded.

Usage: python3 benches/startup_speed.py [--rounds N] [--load [K]] [--servers a,b]
                                        [--bin BIN] [--compare BIN] [--no-build]
"""

import argparse
import json
import os
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target/release/mcp-lock")
SERVERS = os.path.join(os.path.expanduser("~"), ".cache/mcp-lock/test-servers")
TIMEOUT_S = 30
INIT = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        b'"2025-11-25","capabilities":{},"clientInfo":{"name":"startup-bench","version":"0"}}}\n')


class Broke(Exception):
    pass


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s) + 0.5) - 1))]


def first_answer(argv, cwd, env, stderr_path):
    """Nanoseconds from spawn to the end of the initialize answer's line; the process
    is then told to stop (stdin closed) and reaped."""
    with open(stderr_path, "ab") as err:
        t0 = time.perf_counter_ns()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, bufsize=0)
        try:
            os.write(proc.stdin.fileno(), INIT)
            fd = proc.stdout.fileno()
            poll = select.poll()
            poll.register(fd, select.POLLIN)
            buf = b""
            while True:
                i = buf.find(b"\n")
                if i >= 0:
                    line, buf = buf[:i], buf[i + 1:]
                    t1 = time.perf_counter_ns()
                    msg = json.loads(line)
                    if msg.get("id") == 1 and "method" not in msg:
                        if "result" not in msg:
                            raise Broke(f"{argv[0]}: initialize failed: {line[:300]!r}")
                        return t1 - t0
                    continue
                if not poll.poll(TIMEOUT_S * 1000):
                    raise Broke(f"{' '.join(argv[:3])}: no answer within {TIMEOUT_S} s "
                                f"(stderr in {stderr_path})")
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise Broke(f"{' '.join(argv[:3])}: exited ({proc.wait()}) before answering; "
                                f"stderr: {open(stderr_path, 'rb').read()[-1500:].decode(errors='replace')}")
                buf += chunk
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()


class Verdaccio:
    """A private npm registry on 127.0.0.1 with server-memory's closure published."""

    def __init__(self, work):
        self.dir = os.path.join(work, "verdaccio")
        os.makedirs(self.dir)
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.url = f"http://127.0.0.1:{self.port}/"
        with open(os.path.join(self.dir, "config.yaml"), "w") as f:
            f.write(f"storage: {self.dir}/storage\n"
                    f"auth:\n  htpasswd:\n    file: {self.dir}/htpasswd\n    max_users: 10\n"
                    f"    algorithm: sha1\nuplinks: {{}}\n"
                    f"packages:\n  '**':\n    access: $all\n    publish: $authenticated\n"
                    f"log: {{ type: stdout, format: pretty, level: warn }}\nmax_body_size: 100mb\n")
        log = open(os.path.join(self.dir, "log"), "wb")
        self.proc = subprocess.Popen(
            [os.path.join(SERVERS, "verdaccio/node_modules/.bin/verdaccio"), "--config",
             os.path.join(self.dir, "config.yaml"), "--listen", f"127.0.0.1:{self.port}"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(self.url + "-/ping", timeout=2).read()
                break
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise Broke("verdaccio did not start")
                time.sleep(0.2)
        publish = os.path.join(ROOT, "tests/data/packages/npm-publish.mjs")
        out = subprocess.run(["node", publish, "adduser", self.url, "tester", "secret-password"],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise Broke(f"adduser: {out.stderr}")
        token = out.stdout.strip()
        packs = os.path.join(SERVERS, "packs")
        files = sorted(os.path.join(packs, "deps", f) for f in os.listdir(os.path.join(packs, "deps")))
        files.append(os.path.join(packs, "modelcontextprotocol-server-memory-2026.8.31.tgz"))
        out = subprocess.run(["node", publish, "publish", self.url, token] + files,
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise Broke(f"publish: {out.stderr}")
        with open(os.path.join(self.dir, "run.npmrc"), "w") as f:
            f.write(f"registry={self.url}\n")

    def env(self, work):
        return {"npm_config_registry": self.url,
                "npm_config_cache": os.path.join(work, "npm-cache"),
                "npm_config_userconfig": os.path.join(self.dir, "run.npmrc"),
                "npm_config_update_notifier": "false",
                "npm_config_audit": "false", "npm_config_fund": "false"}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def setup(name, work, bins, registry):
    """A project pinning one server; returns (project dir, env, direct argv, guard argvs)."""
    project = os.path.join(work, name)
    os.makedirs(project)
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ)
    # Closure cache and key of the bench's own, not the user's.
    env.update({"XDG_CACHE_HOME": os.path.join(home, "cache"),
                "XDG_CONFIG_HOME": os.path.join(home, "config")})
    memory = os.path.join(SERVERS, "npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js")
    if name == "memory-script":
        inner = ["node", memory]
        env["MEMORY_FILE_PATH"] = os.path.join(project, "memory.jsonl")
    elif name == "memory-closure":
        inner = ["npx", "-y", "@modelcontextprotocol/server-memory@2026.8.31"]
        env["MEMORY_FILE_PATH"] = os.path.join(project, "memory.jsonl")
        env.update(registry.env(work))
    elif name == "time-venv":
        inner = [os.path.join(SERVERS, "venv/bin/mcp-server-time"), "--local-timezone", "UTC"]
    else:
        raise Broke(f"unknown server {name}")
    entry = {"command": "mcp-lock", "args": ["guard", name, "--"] + inner}
    if "MEMORY_FILE_PATH" in env:
        entry["env"] = {"MEMORY_FILE_PATH": env["MEMORY_FILE_PATH"]}
    with open(os.path.join(project, ".mcp.json"), "w") as f:
        json.dump({"mcpServers": {name: entry}}, f)
    out = subprocess.run([bins[0], "update", "--yes", "--timeout", "180"], cwd=project, env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise Broke(f"{name}: mcp-lock update exited {out.returncode}:\n{out.stderr}")
    guards = [[b, "guard", name, "--"] + inner for b in bins]
    # Each guard binary keeps a closure cache of its own (another build may lay it out
    # otherwise); the first's is the one "direct" runs from.
    envs = [dict(env, XDG_CACHE_HOME=os.path.join(home, f"cache-{i}")) for i in range(len(bins))]
    # The first launches (which install a closure, then record what a later launch
    # need not read again once its files are past the 2 s racy window) are not timed.
    for g, e in zip(guards, envs):
        first_answer(g, project, e, os.path.join(work, f"{name}.first.stderr"))
    time.sleep(2.1)
    for g, e in zip(guards, envs):
        first_answer(g, project, e, os.path.join(work, f"{name}.first.stderr"))
    direct = inner
    if name == "memory-closure":
        # What the guard itself starts: the closure cache's program.
        started = None
        with open(os.path.join(project, ".mcp-lock/audit.jsonl")) as f:
            for line in f:
                rec = json.loads(line)
                if rec.get("decision") == "started":
                    started = [rec["command"]] + rec["args"]
        if not started or "closures" not in " ".join(started):
            raise Broke(f"{name}: the guard did not start the closure cache's program: {started}")
        direct = started
    return project, [env] + envs, direct, guards


def busy_loops(k):
    return [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(k)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--load", nargs="?", type=int, const=os.cpu_count(), default=0,
                    metavar="K", help="K busy loops during the run (default: one per core)")
    ap.add_argument("--servers", default="memory-script,memory-closure,time-venv")
    ap.add_argument("--bin", default=BIN, help="the mcp-lock measured (default: release build)")
    ap.add_argument("--compare", metavar="BIN", help="another mcp-lock, a third path in the rounds")
    ap.add_argument("--no-build", action="store_true", help="do not build the release binary")
    args = ap.parse_args()
    if args.rounds < 2:
        ap.error("--rounds must be at least 2")
    if not os.path.isdir(os.path.join(SERVERS, "npm/node_modules")):
        sys.exit(f"startup_speed: the test servers are not installed in {SERVERS}; "
                 "run scripts/install-test-servers.sh")
    if not args.no_build and args.bin == BIN:
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "mcp-lock"],
                       cwd=ROOT, check=True)
    bins = [os.path.abspath(args.bin)] + ([os.path.abspath(args.compare)] if args.compare else [])
    names = ["direct", "guard"] + (["other"] if args.compare else [])
    servers = [s for s in args.servers.split(",") if s]
    work = tempfile.mkdtemp(prefix="startup-bench-")
    registry = None
    loops = []
    results = {}
    try:
        if "memory-closure" in servers:
            registry = Verdaccio(work)
        setups = {s: setup(s, work, bins, registry) for s in servers}
        load = os.getloadavg()[0]
        loops = busy_loops(args.load)
        if loops:
            time.sleep(1)
        for s in servers:
            project, envs, direct, guards = setups[s]
            paths = [direct] + guards
            times = {n: [] for n in names}
            for r in range(args.rounds):
                order = list(range(len(paths)))
                order = order[r % len(order):] + order[:r % len(order)]
                if r % 2:
                    order.reverse()
                for i in order:
                    times[names[i]].append(
                        first_answer(paths[i], project, envs[i], os.path.join(work, f"{s}.{names[i]}.stderr")))
            results[s] = times
    except Broke as e:
        sys.exit(f"startup_speed: {e}")
    finally:
        for p in loops:
            p.kill()
            p.wait()
        if registry:
            registry.stop()
        shutil.rmtree(work, ignore_errors=True)

    ms = lambda ns: ns / 1e6
    print(f"spawn -> answered initialize, {args.rounds} interleaved rounds; "
          f"{'%d busy loops' % args.load if args.load else 'quiet'} on {os.cpu_count()} CPUs, "
          f"load average {load:.2f} at start; guard {bins[0]}"
          + (f", other {bins[1]}" if args.compare else ""))
    print(f"{'server':<16}{'path':<8}{'p50 ms':>9}{'p90 ms':>9}{'added p50':>11}{'added p90':>11}"
          f"{'round med':>11}")
    for s, times in results.items():
        d = times["direct"]
        for n in names:
            t = times[n]
            row = f"{s:<16}{n:<8}{ms(pct(t, 50)):>9.1f}{ms(pct(t, 90)):>9.1f}"
            if n != "direct":
                per_round = statistics.median(a - b for a, b in zip(t, d))
                row += (f"{ms(pct(t, 50) - pct(d, 50)):>+11.1f}{ms(pct(t, 90) - pct(d, 90)):>+11.1f}"
                        f"{ms(per_round):>+11.1f}")
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
