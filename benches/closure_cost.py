#!/usr/bin/env python3
"""What closure pins cost: resolving the real server-memory closure (99 npm packages)
at `update` and `verify`, and installing it into, then checking it against, the
closure cache when the guard starts.

Starts a verdaccio npm registry (no uplink) and a pypiserver index on loopback (both
installed by scripts/install-test-servers.sh), publishes server-memory 2026.8.31 and
its dependencies from the packed tarballs in the test-servers cache (packs/) and the
tiny PyPI server (tests/data/packages/make_wheel.py), then measures, in alternating
rounds, with a temporary HOME and npm/uv caches of its own:

  1. `update --yes` of a project launching server-memory with `npx -y` (locks removed
     first, so every run pins from nothing), against the same update where npm is not
     on the PATH mcp-lock sees (node and npx are, so the server still runs; the
     closure is then left unpinned), and `npm install --package-lock-only` alone in a
     scratch directory, the resolution update runs;
  2. `verify` of that entry (closure re-resolved) against `verify --offline`, with
     the package check's `package.elapsed_ms` from `--format json`;
  3. spawn to the answer of `initialize` for `mcp-lock guard memory -- npx -y ...`:
     first start with empty npm and closure caches, first start with npm's cache warm
     (the closure cache emptied: `npm ci` from cached tarballs), warm start (the
     cached tree checked file by file against its manifest); against `npx -y ...`
     run directly, with npm's cache empty and warm;
  4. the same for `uvx tiny-py==1.0.0` (a venv installed by uv; warm start against
     `uvx` direct with a warm uv cache).

Prints median (min-max) per case and the differences; `--json FILE` keeps every run.
Builds the release binary first.

    python3 benches/closure_cost.py [ROUNDS] [--json FILE]
"""

import argparse
import glob
import json
import os
import selectors
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
DATA = os.path.join(ROOT, "tests", "data", "packages")
MEMORY = "@modelcontextprotocol/server-memory@2026.8.31"
TINY_PY = "tiny-py==1.0.0"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "closure-bench", "version": "1"}}}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url, proc, what):
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{what} exited before listening")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"{what} did not listen within 60 s")


def timed(args, **kw):
    """Runs to the end; (ms, CompletedProcess)."""
    started = time.perf_counter()
    out = subprocess.run(args, capture_output=True, text=True, **kw)
    return (time.perf_counter() - started) * 1000, out


def must(out, what):
    if out.returncode != 0:
        sys.exit(f"{what} failed ({out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out


def until_initialized(args, cwd, env, log):
    """Spawns `args` as an MCP server over stdio, sends initialize at once and times
    the spawn to its answer. Then closes stdin and ends the process group."""
    started = time.perf_counter()
    proc = subprocess.Popen(args, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=log, start_new_session=True)
    try:
        proc.stdin.write((json.dumps(INIT) + "\n").encode())
        proc.stdin.flush()
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        buf = b""
        deadline = started + 180
        while True:
            left = deadline - time.perf_counter()
            if left <= 0 or not sel.select(left):
                sys.exit(f"no answer to initialize from {' '.join(args)} within 180 s")
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                sys.exit(f"{' '.join(args)} closed stdout before answering initialize "
                         f"(exit {proc.wait()}); see the log")
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if msg.get("id") == 1:
                    ms = (time.perf_counter() - started) * 1000
                    if "result" not in msg:
                        sys.exit(f"initialize refused by {' '.join(args)}: {msg}")
                    return ms
    finally:
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        # The whole group: npx leaves the server as its child.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def path_without(tool, path, into):
    """A directory of links to every program on `path` (first found wins) but `tool`."""
    os.makedirs(into)
    for d in path.split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            target = os.path.join(d, name)
            link = os.path.join(into, name)
            if name == tool or os.path.lexists(link) or not os.access(target, os.X_OK):
                continue
            os.symlink(os.path.realpath(target), link)
    return into


def name_of(spec):
    return spec.rsplit("@", 1)[0]


def summary(xs):
    return f"{statistics.median(xs):7.0f} ({min(xs):.0f}-{max(xs):.0f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rounds", nargs="?", type=int, default=5)
    ap.add_argument("--json", help="write every run's figures here")
    opts = ap.parse_args()
    begun = time.time()
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    binary = os.path.join(ROOT, "target", "release", "mcp-lock")
    cache = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    servers = os.environ.get("MCP_LOCK_TEST_SERVERS", os.path.join(cache, "mcp-lock", "test-servers"))
    verdaccio = os.path.join(servers, "verdaccio", "node_modules", ".bin", "verdaccio")
    venv = os.path.join(servers, "venv", "bin")
    packs = os.path.join(servers, "packs")
    memory_tgz = os.path.join(packs, "modelcontextprotocol-server-memory-2026.8.31.tgz")
    if not (os.path.exists(verdaccio) and os.path.exists(os.path.join(venv, "pypi-server"))
            and os.path.exists(memory_tgz)):
        sys.exit(f"verdaccio, pypiserver or the server-memory packs are not in {servers}; "
                 "run scripts/install-test-servers.sh")
    procs = []
    with tempfile.TemporaryDirectory(prefix="closure-bench-") as work:
        try:
            npm_port, pypi_port = free_port(), free_port()
            registry = f"http://127.0.0.1:{npm_port}/"
            with open(os.path.join(work, "config.yaml"), "w") as f:
                f.write(
                    f"storage: {work}/storage\n"
                    f"auth:\n  htpasswd:\n    file: {work}/htpasswd\n    max_users: 10\n    algorithm: sha1\n"
                    "uplinks: {}\npackages:\n  '**':\n    access: $all\n    publish: $authenticated\n"
                    "log: { type: stdout, format: pretty, level: warn }\nmax_body_size: 100mb\n"
                )
            log = open(os.path.join(work, "log"), "w")
            procs.append(subprocess.Popen(
                [verdaccio, "--config", f"{work}/config.yaml", "--listen", f"127.0.0.1:{npm_port}"],
                stdout=log, stderr=log, stdin=subprocess.DEVNULL))
            os.mkdir(os.path.join(work, "pkgs"))
            subprocess.run([os.path.join(venv, "python"), os.path.join(DATA, "make_wheel.py"),
                            os.path.join(work, "pkgs"), "1.0.0"], check=True, capture_output=True)
            procs.append(subprocess.Popen(
                [os.path.join(venv, "pypi-server"), "run", "-i", "127.0.0.1", "-p", str(pypi_port),
                 "--disable-fallback", os.path.join(work, "pkgs")],
                stdout=log, stderr=log, stdin=subprocess.DEVNULL))
            wait_for(f"{registry}-/ping", procs[0], "verdaccio")
            wait_for(f"http://127.0.0.1:{pypi_port}/simple/", procs[1], "pypiserver")
            token = subprocess.run(
                ["node", os.path.join(DATA, "npm-publish.mjs"), "adduser", registry, "bench", "bench-password"],
                check=True, capture_output=True, text=True).stdout.strip()
            tarballs = sorted(glob.glob(os.path.join(packs, "deps", "*.tgz"))) + [memory_tgz]
            subprocess.run(["node", os.path.join(DATA, "npm-publish.mjs"), "publish", registry, token]
                           + tarballs, check=True, capture_output=True)
            run_rc = os.path.join(work, "run.npmrc")
            with open(run_rc, "w") as f:
                f.write(f"registry={registry}\n")

            home = os.path.join(work, "home")
            os.mkdir(home)
            npm_cache = os.path.join(work, "npm-cache")
            base = {k: v for k, v in os.environ.items()
                    if not k.startswith(("npm_config_", "UV_", "XDG_"))}
            path = os.pathsep.join([os.path.dirname(binary), venv, base.get("PATH", "")])
            env = {
                **base,
                "HOME": home,
                "PATH": path,
                "npm_config_registry": registry,
                "npm_config_cache": npm_cache,
                "npm_config_userconfig": run_rc,
                "npm_config_update_notifier": "false",
                "npm_config_audit": "false",
                "npm_config_fund": "false",
                "UV_INDEX_URL": f"http://127.0.0.1:{pypi_port}/simple/",
                "UV_CACHE_DIR": os.path.join(work, "uv-cache"),
                "UV_TOOL_DIR": os.path.join(work, "uv-tools"),
                "UV_NO_CONFIG": "1",
                "UV_PYTHON": os.path.join(venv, "python"),
                "UV_PYTHON_DOWNLOADS": "never",
                "MEMORY_FILE_PATH": os.path.join(work, "memory.jsonl"),
            }
            no_npm = {**env, "PATH": path_without("npm", path, os.path.join(work, "no-npm-bin"))}
            closures = os.path.join(home, ".cache", "mcp-lock", "closures")
            guard_log = open(os.path.join(work, "guard.log"), "w")

            def project(name, servers_config):
                d = os.path.join(work, name)
                os.mkdir(d)
                with open(os.path.join(d, ".mcp.json"), "w") as f:
                    json.dump({"mcpServers": servers_config}, f)
                return d

            npx = ["npx", "-y", MEMORY]
            uvx = ["uvx", TINY_PY]
            plain = project("plain", {"memory": {"command": "npx", "args": ["-y", MEMORY]}})
            wrapped = project("wrapped", {
                "memory": {"command": "mcp-lock", "args": ["guard", "memory", "--"] + npx},
                "tiny": {"command": "mcp-lock", "args": ["guard", "tiny", "--"] + uvx},
            })
            update = [binary, "update", "--yes", "--timeout", "180", "--request-timeout", "120"]

            def fresh_update(env_):
                for f in ("mcp.lock", "mcp.closure.lock"):
                    if os.path.exists(os.path.join(plain, f)):
                        os.remove(os.path.join(plain, f))
                ms, out = timed(update, cwd=plain, env=env_)
                must(out, "update")
                return ms, out

            # Warm npm's and uv's caches and the closure cache, and pin both projects;
            # check that the closure is pinned with npm and not without.
            _, out = fresh_update(no_npm)
            with open(os.path.join(plain, "mcp.lock")) as f:
                if "closure" in f.read():
                    sys.exit("update without npm on PATH still pinned a closure")
            _, out = fresh_update(env)
            with open(os.path.join(plain, "mcp.closure.lock")) as f:
                packages = f.read().count("[[server.package]]")
            must(subprocess.run(update, cwd=wrapped, env=env, capture_output=True, text=True), "update (wrapped)")
            must(subprocess.run([binary, "verify"], cwd=wrapped, env=env, capture_output=True, text=True),
                 "verify (wrapped)")
            scratch = os.path.join(work, "scratch")
            name, version = name_of(MEMORY), MEMORY.rsplit("@", 1)[1]

            def lock_only():
                shutil.rmtree(scratch, ignore_errors=True)
                os.mkdir(scratch)
                with open(os.path.join(scratch, "package.json"), "w") as f:
                    json.dump({"name": "mcp-lock-resolve", "version": "0.0.0", "private": True,
                               "dependencies": {name: version}}, f)
                ms, out = timed(["npm", "install", "--package-lock-only", "--ignore-scripts", "--no-audit",
                                 "--no-fund", "--omit-lockfile-registry-resolved", "--lockfile-version=3",
                                 f"--registry={registry}"], cwd=scratch, env=env)
                must(out, "npm install --package-lock-only")
                return ms

            def verify(offline):
                ms, out = timed([binary, "verify", "--format", "json"] + (["--offline"] if offline else []),
                                cwd=plain, env=env)
                must(out, "verify")
                (server,) = json.loads(out.stdout)["servers"]
                want = "skipped" if offline else "pinned"
                if server["package"]["status"] != want or not (
                        offline or "closure is the pinned one" in server["package"]["message"]):
                    sys.exit(f"verify: package {server['package']} (wanted {want}, the closure resolved)")
                return ms, server["package"].get("elapsed_ms")

            def guard(server, command, clear_closures=False, cold_npm=False):
                if clear_closures:
                    shutil.rmtree(closures, ignore_errors=True)
                e = env
                if cold_npm:
                    cold = os.path.join(work, "npm-cache-cold")
                    shutil.rmtree(cold, ignore_errors=True)
                    e = {**env, "npm_config_cache": cold}
                return until_initialized([binary, "guard", server, "--"] + command, wrapped, e, guard_log)

            def direct(command, cold_npm=False):
                e = env
                if cold_npm:
                    cold = os.path.join(work, "npm-cache-cold")
                    shutil.rmtree(cold, ignore_errors=True)
                    e = {**env, "npm_config_cache": cold}
                return until_initialized(command, wrapped, e, guard_log)

            # Warm each start path once.
            guard("memory", npx)
            direct(npx)
            guard("tiny", uvx)
            direct(uvx)
            # What the guard's warm start checks: the installed tree's files and bytes.
            (tree,) = glob.glob(os.path.join(closures, "npm-*[!k]"))
            files = size = 0
            for d, _, names in os.walk(tree):
                for n in names:
                    files += 1
                    size += os.lstat(os.path.join(d, n)).st_size
            ci_dir = os.path.join(work, "ci")
            # The same server run straight from the cached trees (no guard, no launcher):
            # what the guard's warm start costs over the server's own start.
            pkg_dir = os.path.join(tree, "node_modules", *name_of(MEMORY).split("/"))
            with open(os.path.join(pkg_dir, "package.json")) as f:
                bins = json.load(f)["bin"]
            node_direct = ["node", os.path.join(pkg_dir, bins if isinstance(bins, str) else next(iter(bins.values())))]
            (py_tree,) = glob.glob(os.path.join(closures, "pypi-*[!k]"))
            py_direct = [os.path.join(py_tree, "venv", "bin", "tiny-py")]

            def npm_ci(*extra):
                """`npm ci` as the guard runs it, alone, from the cached lockfile."""
                shutil.rmtree(ci_dir, ignore_errors=True)
                os.mkdir(ci_dir)
                for f in ("package.json", "package-lock.json"):
                    shutil.copy(os.path.join(tree, f), ci_dir)
                ms, out = timed(["npm", "ci", "--no-audit", "--no-fund", "--no-update-notifier",
                                 "--ignore-scripts", f"--registry={registry}", *extra], cwd=ci_dir, env=env)
                must(out, "npm ci")
                return ms

            cases = {
                # Without npm first: verify needs the closure the other pins.
                "update, npm not on PATH": lambda: fresh_update(no_npm)[0],
                "update": lambda: fresh_update(env)[0],
                "npm install --package-lock-only": lock_only,
                "verify": lambda: verify(False),
                "verify --offline": lambda: verify(True),
                "guard npx, npm+closure caches empty": lambda: guard("memory", npx, True, True),
                "npx direct, npm cache empty": lambda: direct(npx, True),
                "guard npx, closure cache empty": lambda: guard("memory", npx, True),
                "npm ci alone": npm_ci,
                "npm ci --prefer-offline alone": lambda: npm_ci("--prefer-offline"),
                "guard npx, warm": lambda: guard("memory", npx),
                "npx direct, warm": lambda: direct(npx),
                "node on the cached tree, direct": lambda: direct(node_direct),
                "guard uvx, closure cache empty": lambda: guard("tiny", uvx, True),
                "guard uvx, warm": lambda: guard("tiny", uvx),
                "uvx direct, warm": lambda: direct(uvx),
                "venv script on the cached tree, direct": lambda: direct(py_direct),
            }
            raw = {k: [] for k in cases}
            check_ms = {"verify": [], "verify --offline": []}
            for r in range(opts.rounds):
                for k, fn in cases.items():
                    v = fn()
                    if isinstance(v, tuple):
                        v, elapsed = v
                        check_ms[k].append(elapsed)
                    raw[k].append(v)
                print(f"  round {r + 1}/{opts.rounds} done", file=sys.stderr)

            med = {k: statistics.median(v) for k, v in raw.items()}
            print(f"closure pins, server-memory 2026.8.31 ({packages} packages in its closure) and tiny-py "
                  f"1.0.0, loopback registries, {opts.rounds} alternating rounds; "
                  f"load average {os.getloadavg()[0]:.2f}; ms, median (min-max)")
            print(f"the installed closure: {files} files, {size / 1e6:.1f} MB, checked at each guard start")
            sections = [
                ("1. update --yes, npx -y server-memory (locks removed first)",
                 ["update", "update, npm not on PATH", "npm install --package-lock-only"]),
                ("2. verify of the unwrapped entry", ["verify", "verify --offline"]),
                ("3. spawn to initialize answered, server-memory",
                 ["guard npx, npm+closure caches empty", "npx direct, npm cache empty",
                  "guard npx, closure cache empty", "npm ci alone", "npm ci --prefer-offline alone",
                  "guard npx, warm", "npx direct, warm", "node on the cached tree, direct"]),
                ("4. spawn to initialize answered, tiny-py",
                 ["guard uvx, closure cache empty", "guard uvx, warm", "uvx direct, warm",
                  "venv script on the cached tree, direct"]),
            ]
            for title, keys in sections:
                print(title)
                for k in keys:
                    extra = ""
                    if k in check_ms:
                        c = [x for x in check_ms[k] if x is not None]
                        if c:
                            extra = f"   package.elapsed_ms {summary(c).strip()}"
                    print(f"  {k:38} {summary(raw[k])}{extra}")
            print("differences of medians")
            for what, a, b in [
                ("closure resolution adds to update", "update", "update, npm not on PATH"),
                ("online checks add to verify", "verify", "verify --offline"),
                ("guard cold start over npx cold", "guard npx, npm+closure caches empty",
                 "npx direct, npm cache empty"),
                ("npm ci into the closure cache (over warm)", "guard npx, closure cache empty",
                 "guard npx, warm"),
                ("guard warm start over npx warm", "guard npx, warm", "npx direct, warm"),
                ("guard warm start over the bare server", "guard npx, warm", "node on the cached tree, direct"),
                ("uv venv install (over warm guard)", "guard uvx, closure cache empty", "guard uvx, warm"),
                ("guard warm start over uvx warm", "guard uvx, warm", "uvx direct, warm"),
                ("guard warm start over the bare server", "guard uvx, warm",
                 "venv script on the cached tree, direct"),
            ]:
                d = med[a] - med[b]
                print(f"  {what:42} {d:+7.0f} ms  ({med[a] / med[b]:.2f}x)  [{a} - {b}]")
            print(f"elapsed {time.time() - begun:.0f} s", file=sys.stderr)
            if opts.json:
                with open(opts.json, "w") as f:
                    json.dump({"rounds": opts.rounds, "closure_packages": packages,
                               "closure_files": files, "closure_bytes": size,
                               "load_average": os.getloadavg()[0], "ms": raw,
                               "package_elapsed_ms": check_ms}, f, indent=1)
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    main()
