#!/usr/bin/env python3
"""What `mcp-lock hook claude-code` costs Claude Code per PreToolUse call, in one run.

A temporary project pins the fixture server (release build; with `--many N`, N more
tools), launched as `npx -y bench-mcp@1.0.0` by a stand-in npx (an exact registry
version: what SessionStart may reuse; a script or binary run from a path is verified
at every start), approves it in `.claude/settings.local.json`, and sends the hook one
SessionStart (which verifies and keeps the session's record). Then each PreToolUse
payload is sent as Claude Code sends it, a new process per call, timed from spawn to
exit:

- pass:    mcp__bench__read_ticket with valid arguments (no answer)
- deny:    the same tool with arguments the pinned schema refuses
- unknown: a tool the lock does not pin
- other:   Bash (not an MCP tool: answered before anything is read)

against a baseline of spawning `mcp-lock --version` (the process alone) in the same
interleaved rounds.

SessionStart itself is timed too, interleaved, `--starts` times each way:

- start cold:   the reuse file (.mcp-lock/hook-reuse.json) removed first, so the
                server is started, listed and compared with the lock
- start reused: nothing the reuse is keyed on changed since the last start, so the
                last start's verification is taken (no server is started) The machine is shared and noisy: compare the per-call figures
with the baseline of the same run. Goal (informational): every PreToolUse case within
tens of milliseconds (p95 under 50 ms) at 1,000 pinned tools.

With `--rules N`, the project's mcp-lock.toml holds tool rules, which PreToolUse reads
again on every MCP call (to check the argument rules, and that the rules are the ones
the session started with): N `[tools] deny` globs that match none of the calls, and an
argument rule on read_ticket's `id` (`pattern = "^T-"`) that `pass` keeps; `unknown`
is then denied by a deny glob.

Usage: python3 benches/hook_speed.py [CALLS] [--many N,...] [--rounds R] [--starts S] [--rules N]
  CALLS   calls per case per size (default 200)
  --many  extra pinned tools, one project per size (default 0,1000,9997: 10,000 tools,
          the most a listing may hold by default)
  --rounds interleaved rounds (default 5)
  --starts SessionStarts timed cold and reused each, per size (default 10)
  --debug  the debug build (quicker to build; slower, so compare within a run)
(builds the release binary and fixture itself)
"""

import argparse
import http.server
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target/release/mcp-lock")
FIXTURE = os.path.join(ROOT, "target/release/examples/fixture_server")
REGISTRY_PORT = 9


def build(debug):
    global BIN, FIXTURE
    if debug:
        BIN = os.path.join(ROOT, "target/debug/mcp-lock")
        FIXTURE = os.path.join(ROOT, "target/debug/examples/fixture_server")
    subprocess.run(
        ["cargo", "build", "--quiet"] + ([] if debug else ["--release"])
        + ["--bin", "mcp-lock", "--example", "fixture_server"],
        cwd=ROOT, check=True)


def project(many, home, rules):
    dir = tempfile.mkdtemp(prefix="mcp-lock-hook-bench-")
    if rules:
        globs = ", ".join(json.dumps(f"bench/never_{i}_*") for i in range(rules))
        with open(os.path.join(dir, "mcp-lock.toml"), "w") as f:
            f.write(f'[tools]\ndeny = [{globs}, "bench/nope"]\n'
                    '[tools.arguments."bench/read_ticket"]\nid = { pattern = "^T-" }\n')
    args = ["--revision", "a", "--page-size", "500"]
    if many:
        args += ["--many", str(many)]
    # Launched as a registry package at an exact version (`npx -y bench-mcp@1.0.0`),
    # the kind of launch whose verification a later SessionStart may reuse; a stand-in
    # npx on PATH starts the fixture, and npm's registry is a packument on loopback.
    bin_dir = os.path.join(home, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    npx = os.path.join(bin_dir, "npx")
    with open(npx, "w") as f:
        f.write("#!/bin/sh\nexec " + " ".join(shlex.quote(a) for a in [FIXTURE] + args) + "\n")
    os.chmod(npx, 0o755)
    with open(os.path.join(dir, ".mcp.json"), "w") as f:
        json.dump({"mcpServers": {"bench": {"command": "npx", "args": ["-y", "bench-mcp@1.0.0"]}}}, f)
    os.makedirs(os.path.join(dir, ".claude"))
    with open(os.path.join(dir, ".claude/settings.local.json"), "w") as f:
        json.dump({"enabledMcpjsonServers": ["bench"]}, f)
    env = environment(dir, home)
    done = subprocess.run([BIN, "update", "--yes", "--quiet"], cwd=dir, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True)
    if done.returncode != 0:
        sys.exit(f"update exited {done.returncode}: {done.stderr.decode()}")
    return dir


def registry():
    """A registry on loopback that knows one package, bench-mcp 1.0.0 (its packument
    only: the stand-in npx never downloads it). Returns its port."""
    day = 86400
    created = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - 400 * day))
    released = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - 100 * day))
    body = json.dumps({
        "name": "bench-mcp", "dist-tags": {"latest": "1.0.0"},
        "time": {"created": created, "1.0.0": released},
        "versions": {"1.0.0": {"name": "bench-mcp", "version": "1.0.0", "dist": {
            "integrity": "sha512-" + "Q" * 86 + "==",
            "tarball": "http://127.0.0.1:9/bench-mcp-1.0.0.tgz"}}},
    }).encode()

    class Packument(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            found = self.path.rstrip("/") == "/bench-mcp"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body) if found else 2))
            self.end_headers()
            self.wfile.write(body if found else b"{}")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Packument)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def environment(dir, home):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "CLAUDE_"))}
    env.update(HOME=home, XDG_CACHE_HOME=os.path.join(home, "cache"), CLAUDE_PROJECT_DIR=dir,
               PATH=os.path.join(home, "bin") + os.pathsep + os.environ.get("PATH", ""),
               npm_config_registry=f"http://127.0.0.1:{REGISTRY_PORT}/")
    return env


def payload(event, **more):
    base = {"session_id": "bench-session", "transcript_path": "/dev/null",
            "cwd": "", "hook_event_name": event}
    base.update(more)
    return json.dumps(base).encode()


def timed(argv, data, dir, env):
    start = time.perf_counter_ns()
    done = subprocess.run(argv, input=data, cwd=dir, env=env, capture_output=True)
    elapsed = (time.perf_counter_ns() - start) / 1e6
    if done.returncode != 0:
        sys.exit(f"{argv} exited {done.returncode}: {done.stderr.decode()}")
    return elapsed, done.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("calls", nargs="?", type=int, default=200)
    parser.add_argument("--many", default="0,1000,9997")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--debug", action="store_true")
    parser.add_argument("--rules", type=int, default=0)
    opts = parser.parse_args()
    build(opts.debug)
    global REGISTRY_PORT
    REGISTRY_PORT = registry()
    home = tempfile.mkdtemp(prefix="mcp-lock-hook-bench-home-")
    cases = {
        "pass": payload("PreToolUse", tool_name="mcp__bench__read_ticket", tool_input={"id": "T-1"}),
        "deny": payload("PreToolUse", tool_name="mcp__bench__read_ticket", tool_input={"id": 5}),
        "unknown": payload("PreToolUse", tool_name="mcp__bench__nope", tool_input={}),
        "other": payload("PreToolUse", tool_name="Bash", tool_input={"command": "ls"}),
    }
    # A call left to Claude Code gets an answer with no decision in it.
    no_decision = b'{"hookSpecificOutput":{"hookEventName":"PreToolUse"}}\n'
    expect = {"pass": no_decision, "deny": b'"deny"', "unknown": b'"deny"', "other": no_decision}
    print(f"{'tools':>6} {'case':<9} {'p50 ms':>8} {'p95 ms':>8} {'vs --version p50':>17}")
    for many in [int(n) for n in opts.many.split(",")]:
        dir = project(many, home, opts.rules)
        env = environment(dir, home)
        ms, out = timed([BIN, "hook", "claude-code"], payload("SessionStart", source="startup"), dir, env)
        if b"1 of 1 match" not in out:
            sys.exit(f"SessionStart did not verify: {out!r}")
        start_ms = ms
        reuse = os.path.join(dir, ".mcp-lock", "hook-reuse.json")
        starts = {"cold": [], "reused": []}
        for _ in range(opts.starts):
            for kind in ("cold", "reused"):
                if kind == "cold" and os.path.exists(reuse):
                    os.remove(reuse)
                ms, out = timed([BIN, "hook", "claude-code"], payload("SessionStart", source="startup"), dir, env)
                if b"1 of 1 match" not in out:
                    sys.exit(f"SessionStart ({kind}) did not verify: {out!r}")
                if not os.path.exists(reuse):
                    sys.exit("SessionStart kept no reuse file")
                starts[kind].append(ms)
        times = {name: [] for name in list(cases) + ["baseline"]}
        per_round = max(1, opts.calls // opts.rounds)
        for _ in range(opts.rounds):
            for _ in range(per_round):
                times["baseline"].append(timed([BIN, "--version"], b"", dir, env)[0])
            for name, data in cases.items():
                for _ in range(per_round):
                    ms, out = timed([BIN, "hook", "claude-code"], data, dir, env)
                    if (expect[name] == no_decision and out != no_decision) or expect[name] not in out:
                        sys.exit(f"{name}: unexpected answer {out[:200]!r}")
                    times[name].append(ms)
        base = statistics.median(times["baseline"])
        tools = many + 3
        print(f"{tools:>6} {'start':<9} {start_ms:>8.1f} {'':>8} {'(first SessionStart)':>17}")
        for kind, t in starts.items():
            t = sorted(t)
            p95 = t[max(0, int(len(t) * 0.95) - 1)]
            print(f"{tools:>6} {'start ' + kind:<9} {statistics.median(t):>8.1f} {p95:>8.1f} {'(SessionStart)':>17}")
        for name in list(cases) + ["baseline"]:
            t = sorted(times[name])
            p50 = statistics.median(t)
            p95 = t[int(len(t) * 0.95) - 1]
            label = "--version" if name == "baseline" else name
            print(f"{tools:>6} {label:<9} {p50:>8.2f} {p95:>8.2f} {p50 / base:>16.2f}x")


if __name__ == "__main__":
    main()
