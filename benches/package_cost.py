#!/usr/bin/env python3
"""What the package checks add to `mcp-lock verify` for a six-server project.

Starts a verdaccio npm registry (no uplink) and a pypiserver index on loopback (both
installed by scripts/install-test-servers.sh), publishes four tiny npm MCP servers
and two tiny PyPI ones (tests/data/packages/), pins a project that launches them with
`npx -y NAME` and `uvx NAME`, then runs `verify` and `verify --offline` in
alternating rounds and reports each run's wall time and the slowest server's package
check (`package.elapsed_ms`). The difference in wall time is what the registry
look-ups cost: they run concurrently with the servers' listings. Builds the
release binary first.

    python3 benches/package_cost.py [ROUNDS]
"""

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "packages")
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
NPM = ["tiny-mcp-a", "tiny-mcp-b", "tiny-mcp-c", "tiny-mcp-d"]
PYPI = ["tiny-py-a", "tiny-py-b"]


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


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    binary = os.path.join(ROOT, "target", "release", "mcp-lock")
    cache = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    servers = os.environ.get("MCP_LOCK_TEST_SERVERS", os.path.join(cache, "mcp-lock", "test-servers"))
    verdaccio = os.path.join(servers, "verdaccio", "node_modules", ".bin", "verdaccio")
    venv = os.path.join(servers, "venv", "bin")
    if not (os.path.exists(verdaccio) and os.path.exists(os.path.join(venv, "pypi-server"))):
        sys.exit(f"verdaccio and pypiserver are not installed in {servers}; run scripts/install-test-servers.sh")
    procs = []
    with tempfile.TemporaryDirectory() as work:
        try:
            npm_port, pypi_port = free_port(), free_port()
            registry = f"http://127.0.0.1:{npm_port}/"
            with open(os.path.join(work, "config.yaml"), "w") as f:
                f.write(
                    f"storage: {work}/storage\n"
                    f"auth:\n  htpasswd:\n    file: {work}/htpasswd\n    max_users: 10\n    algorithm: sha1\n"
                    "uplinks: {}\npackages:\n  '**':\n    access: $all\n    publish: $authenticated\n"
                    "log: { type: stdout, format: pretty, level: warn }\n"
                )
            log = open(os.path.join(work, "log"), "w")
            procs.append(subprocess.Popen(
                [verdaccio, "--config", f"{work}/config.yaml", "--listen", f"127.0.0.1:{npm_port}"],
                stdout=log, stderr=log, stdin=subprocess.DEVNULL))
            os.mkdir(os.path.join(work, "pkgs"))
            for name in PYPI:
                subprocess.run([os.path.join(venv, "python"), os.path.join(DATA, "make_wheel.py"),
                                os.path.join(work, "pkgs"), "1.0.0", name], check=True, capture_output=True)
            procs.append(subprocess.Popen(
                [os.path.join(venv, "pypi-server"), "run", "-i", "127.0.0.1", "-p", str(pypi_port),
                 "--disable-fallback", os.path.join(work, "pkgs")],
                stdout=log, stderr=log, stdin=subprocess.DEVNULL))
            wait_for(f"{registry}-/ping", procs[0], "verdaccio")
            wait_for(f"http://127.0.0.1:{pypi_port}/simple/", procs[1], "pypiserver")
            token = subprocess.run(
                ["node", os.path.join(DATA, "npm-publish.mjs"), "adduser", registry, "bench", "bench-password"],
                check=True, capture_output=True, text=True).stdout.strip()
            publish_rc = os.path.join(work, "publish.npmrc")
            with open(publish_rc, "w") as f:
                f.write(f"registry={registry}\n//127.0.0.1:{npm_port}/:_authToken={token}\n")
            run_rc = os.path.join(work, "run.npmrc")
            with open(run_rc, "w") as f:
                f.write(f"registry={registry}\n")
            for name in NPM:
                pkg = os.path.join(work, name)
                os.mkdir(pkg)
                shutil.copy(os.path.join(DATA, "tiny-mcp", "server.js"), pkg)
                with open(os.path.join(DATA, "tiny-mcp", "package.json")) as f:
                    manifest = json.load(f)
                manifest["name"] = name
                manifest["bin"] = {name: "server.js"}
                with open(os.path.join(pkg, "package.json"), "w") as f:
                    json.dump(manifest, f)
                subprocess.run(["npm", "publish", pkg, "--userconfig", publish_rc, "--registry", registry],
                               check=True, capture_output=True,
                               env={**os.environ, "npm_config_cache": os.path.join(work, "publish-cache")})
            env = {
                **os.environ,
                "npm_config_registry": registry,
                "npm_config_cache": os.path.join(work, "npm-cache"),
                "npm_config_userconfig": run_rc,
                "npm_config_update_notifier": "false",
                "UV_INDEX_URL": f"http://127.0.0.1:{pypi_port}/simple/",
                "UV_CACHE_DIR": os.path.join(work, "uv-cache"),
                "UV_TOOL_DIR": os.path.join(work, "uv-tools"),
                "UV_NO_CONFIG": "1",
                "UV_PYTHON": os.path.join(venv, "python"),
                "UV_PYTHON_DOWNLOADS": "never",
                "PATH": venv + os.pathsep + os.environ.get("PATH", ""),
            }
            project = os.path.join(work, "project")
            os.mkdir(project)
            config = {name: {"command": "npx", "args": ["-y", name]} for name in NPM}
            config.update({name: {"command": "uvx", "args": [name]} for name in PYPI})
            with open(os.path.join(project, ".mcp.json"), "w") as f:
                json.dump({"mcpServers": config}, f)
            subprocess.run([binary, "update", "--yes"], cwd=project, env=env, check=True, capture_output=True)
            # Warm the npx and uv caches, so every measured run starts from the same place.
            subprocess.run([binary, "verify"], cwd=project, env=env, check=True, capture_output=True)
            results = {"verify": [], "verify --offline": []}
            checks = {"verify": [], "verify --offline": []}
            for _ in range(ROUNDS):
                for mode, times in results.items():
                    args = [binary, "verify", "--format", "json"] + (["--offline"] if "offline" in mode else [])
                    started = time.perf_counter()
                    out = subprocess.run(args, cwd=project, env=env, capture_output=True, text=True)
                    times.append((time.perf_counter() - started) * 1000)
                    doc = json.loads(out.stdout)
                    want = "skipped" if "offline" in mode else "pinned"
                    statuses = {s["name"]: s["package"]["status"] for s in doc["servers"]}
                    assert out.returncode == 0 and set(statuses.values()) == {want}, out.stdout
                    # The slowest server's package check (they run at once).
                    checks[mode].append(max(s["package"]["elapsed_ms"] for s in doc["servers"]))
            print(f"verify of six servers (4 npx, 2 uvx) against loopback registries, "
                  f"{ROUNDS} alternating rounds; load average {os.getloadavg()[0]:.2f}")
            for mode, times in results.items():
                print(f"  {mode:18} median {statistics.median(times):7.0f} ms  "
                      f"(runs: {', '.join(f'{t:.0f}' for t in times)}); slowest package check: median "
                      f"{statistics.median(checks[mode]):.0f} ms (runs: {', '.join(str(c) for c in checks[mode])})")
            extra = statistics.median(results["verify"]) - statistics.median(results["verify --offline"])
            print(f"  package look-ups add {extra:.0f} ms to the median wall time")
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    main()
