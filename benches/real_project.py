#!/usr/bin/env python3
"""verify of a project of ~25 popular real MCP servers, against a bare SDK listing.

The project: npm and PyPI servers that list without an account, each configured as
its README says (`npx -y PKG`, `uvx PKG`) with dummy keys in `env`, browser downloads
skipped (PUPPETEER_SKIP_DOWNLOAD, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD). It uses the real
npm and PyPI registries (a bench, not a test). Everything it keeps (HOME, npm's and
uv's caches, mcp-lock's caches and config, the project) lives in a folder of its own,
default ~/.cache/mcp-lock/bench-real-project (--dir), kept between runs so the
downloads are made once.

Measured in each round, interleaved, at the same concurrency N (--jobs):
  sdk              the Python SDK (`mcp` 2.3.0 of the test venv) starts every server,
                   N at a time, initializes and lists its tools
  verify cold      `mcp-lock verify -j N` with mcp-lock's own caches emptied (its
                   registry documents and recorded closure resolutions; npm's and uv's
                   caches stay warm, as for the SDK listing)
  verify           `mcp-lock verify -j N`, caches as the previous run left them
  verify --offline `mcp-lock verify -j N --offline`
Reported: median (min-max) seconds, the ratio of the median to the SDK listing's,
and the most servers any round found `unverifiable` (the SDK listing: servers that
failed). `--compare BIN` runs another build (say, main's, copied aside) in the same
rounds, so before and after are measured under the same load. Goal: verify within
1.3x of the SDK listing, zero servers unverifiable.

Usage: python3 benches/real_project.py [--rounds R] [--jobs N[,M...]] [--bin BIN]
                                        [--compare BIN] [--servers a,b] [--dir DIR]
  --jobs     the concurrency of the SDK listing and of verify (default: mcp-lock's
             default, twice the cores, at least 4); several values are measured in turn
  --bin      the mcp-lock measured (default target/release/mcp-lock); it pins the lock
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVERS_DIR = os.environ.get("MCP_LOCK_TEST_SERVERS") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mcp-lock/test-servers"
)
VENV = os.path.join(SERVERS_DIR, "venv/bin")


def npx(package, *args, env=None):
    entry = {"command": "npx", "args": ["-y", package, *args]}
    if env:
        entry["env"] = env
    return entry


def uvx(package, *args, env=None):
    entry = {"command": "uvx", "args": [package, *args]}
    if env:
        entry["env"] = env
    return entry


def servers(project):
    """The project's servers, as their READMEs configure them (dummy keys)."""
    return {
        "filesystem": npx("@modelcontextprotocol/server-filesystem", project),
        "memory": npx("@modelcontextprotocol/server-memory"),
        "everything": npx("@modelcontextprotocol/server-everything"),
        "sequential-thinking": npx("@modelcontextprotocol/server-sequential-thinking"),
        "github": npx("@modelcontextprotocol/server-github",
                      env={"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_dummy"}),
        "slack": npx("@modelcontextprotocol/server-slack",
                     env={"SLACK_BOT_TOKEN": "xoxb-dummy", "SLACK_TEAM_ID": "T00000000"}),
        "brave-search": npx("@modelcontextprotocol/server-brave-search", env={"BRAVE_API_KEY": "dummy"}),
        "playwright": npx("@playwright/mcp@latest"),
        "chrome-devtools": npx("chrome-devtools-mcp@latest"),
        "context7": npx("@upstash/context7-mcp"),
        "notion": npx("@notionhq/notion-mcp-server", env={"NOTION_TOKEN": "ntn_dummy"}),
        "tavily": npx("tavily-mcp@latest", env={"TAVILY_API_KEY": "tvly-dummy"}),
        "firecrawl": npx("firecrawl-mcp", env={"FIRECRAWL_API_KEY": "fc-dummy"}),
        "exa": npx("exa-mcp-server", env={"EXA_API_KEY": "dummy"}),
        "desktop-commander": npx("@wonderwhy-er/desktop-commander@latest"),
        "postgres": npx("@modelcontextprotocol/server-postgres", "postgresql://localhost/mydb"),
        "puppeteer": npx("@modelcontextprotocol/server-puppeteer"),
        "kubernetes": npx("mcp-server-kubernetes"),
        "browsermcp": npx("@browsermcp/mcp@latest"),
        "playwright-ea": npx("@executeautomation/playwright-mcp-server"),
        "time": uvx("mcp-server-time"),
        "fetch": uvx("mcp-server-fetch"),
        "git": uvx("mcp-server-git"),
        "duckduckgo": uvx("duckduckgo-mcp-server"),
        "aws-documentation": uvx("awslabs.aws-documentation-mcp-server@latest",
                                 env={"FASTMCP_LOG_LEVEL": "ERROR"}),
    }


# Servers that declare resource templates but answer their list with -32601: listed
# without them, so every server pins with the builds before issue 42 too.
NO_TEMPLATES = ["postgres", "puppeteer", "playwright-ea", "browsermcp", "kubernetes"]

SDK_LISTING = r'''
import json, os, sys, time
import anyio
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client

servers, jobs, cwd = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

async def one(name, spec, gate, out):
    async with gate:
        try:
            with anyio.fail_after(120):
                params = StdioServerParameters(command=spec["command"], args=spec.get("args", []),
                                               env={**os.environ, **spec.get("env", {})}, cwd=cwd)
                with open(os.devnull, "w") as devnull:
                    async with stdio_client(params, errlog=devnull) as (read, write):
                        async with ClientSession(read, write) as session:
                            await session.initialize()
                            tools, cursor = 0, None
                            while True:
                                page = await session.list_tools(
                                    params=None if cursor is None else types.PaginatedRequestParams(cursor=cursor))
                                tools += len(page.tools)
                                cursor = getattr(page, "next_cursor", None)
                                if not cursor:
                                    break
                            out[name] = tools
        except BaseException as e:  # noqa: BLE001 - a failed server is counted, not fatal
            while isinstance(e, BaseExceptionGroup) and e.exceptions:
                e = e.exceptions[0]
            out[name] = f"error: {type(e).__name__}: {e}"[:300]

async def main():
    gate, out = anyio.Semaphore(jobs), {}
    async with anyio.create_task_group() as tg:
        for name, spec in servers.items():
            tg.start_soon(one, name, spec, gate, out)
    print(json.dumps(out))

anyio.run(main)
'''


class Bench:
    def __init__(self, folder, names):
        self.folder = folder
        self.project = os.path.join(folder, "project")
        self.cache = os.path.join(folder, "cache")
        os.makedirs(self.project, exist_ok=True)
        home = os.path.join(folder, "home")
        os.makedirs(home, exist_ok=True)
        self.env = {
            **os.environ,
            "HOME": home,
            "XDG_CACHE_HOME": self.cache,
            "XDG_CONFIG_HOME": os.path.join(folder, "config"),
            "npm_config_cache": os.path.join(folder, "npm-cache"),
            "npm_config_update_notifier": "false",
            "npm_config_fund": "false",
            "npm_config_audit": "false",
            "UV_CACHE_DIR": os.path.join(folder, "uv-cache"),
            "UV_TOOL_DIR": os.path.join(folder, "uv-tools"),
            "PUPPETEER_SKIP_DOWNLOAD": "1",
            "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
            "PATH": VENV + os.pathsep + os.environ.get("PATH", ""),
        }
        for name in ("CARGO_HOME", "RUSTUP_HOME"):
            self.env.pop(name, None)
        every = servers(self.project)
        self.servers = {k: v for k, v in every.items() if not names or k in names}
        with open(os.path.join(self.project, ".mcp.json"), "w") as f:
            json.dump({"mcpServers": self.servers}, f, indent=2)
        with open(os.path.join(self.project, "mcp-lock.toml"), "w") as f:
            for name in NO_TEMPLATES:
                if name in self.servers:
                    f.write(f"[surface.server.{name}]\nresource-templates = false\n\n")

    def sdk(self, jobs):
        start = time.perf_counter()
        done = subprocess.run([os.path.join(VENV, "python"), "-c", SDK_LISTING,
                               json.dumps(self.servers), str(jobs), self.project],
                              cwd=self.project, env=self.env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        try:
            out = json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            sys.exit(f"the SDK listing printed no result:\n{done.stderr[-3000:]}")
        failed = {k: v for k, v in out.items() if not isinstance(v, int)}
        return wall, len(failed), failed

    def mcp_lock(self, binary, args, timeout=900):
        start = time.perf_counter()
        done = subprocess.run([binary, *args], cwd=self.project, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        return time.perf_counter() - start, done

    def verify(self, binary, jobs, *extra):
        wall, done = self.mcp_lock(binary, ["verify", "-j", str(jobs), "--format", "json", *extra])
        try:
            doc = json.loads(done.stdout)
        except ValueError:
            sys.exit(f"verify {' '.join(extra)} gave no JSON (exit {done.returncode}):\n{done.stderr[-3000:]}")
        bad = {s["name"]: s.get("error") for s in doc["servers"] if s["verdict"] == "unverifiable"}
        return wall, len(bad), bad

    def empty_own_caches(self):
        for sub in ("registry", "resolutions"):
            shutil.rmtree(os.path.join(self.cache, "mcp-lock", sub), ignore_errors=True)


def show(values):
    med = statistics.median(values)
    return med, f"{med:6.1f} ({min(values):.1f}-{max(values):.1f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", default="")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/mcp-lock"))
    ap.add_argument("--compare", metavar="BIN")
    ap.add_argument("--servers", default="")
    ap.add_argument("--dir", default=os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mcp-lock/bench-real-project"))
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    for b in [binary] + ([args.compare] if args.compare else []):
        if not os.path.exists(b):
            sys.exit(f"{b} not found; run `cargo build --release --bin mcp-lock` first")
    cores = os.cpu_count()
    jobs_list = [int(j) for j in args.jobs.split(",") if j] or [max(4, 2 * cores)]
    names = [n for n in args.servers.split(",") if n]
    bench = Bench(os.path.abspath(args.dir), names)
    bins = {"this": binary}
    if args.compare:
        bins = {"other": os.path.abspath(args.compare), **bins}

    # Downloads once (npx and uvx caches), then the lock.
    wall, failed, why = bench.sdk(max(jobs_list))
    print(f"warm-up SDK listing of {len(bench.servers)} servers: {wall:.1f} s, {failed} failed {why or ''}",
          flush=True)
    wall, done = bench.mcp_lock(binary, ["update", "--yes", "-j", str(max(jobs_list))])
    print(f"update --yes: {wall:.1f} s, exit {done.returncode}", flush=True)
    if done.returncode not in (0, 3):
        sys.exit(done.stderr[-3000:])

    rows = {}
    def add(case, jobs, result):
        wall, bad, why = result
        row = rows.setdefault((jobs, case), {"walls": [], "bad": 0, "why": {}})
        row["walls"].append(wall)
        row["bad"] = max(row["bad"], bad)
        row["why"].update(why)

    for r in range(args.rounds):
        for jobs in jobs_list:
            add("sdk listing", jobs, bench.sdk(jobs))
            for label, b in bins.items():
                bench.empty_own_caches()
                add(f"{label} verify cold", jobs, bench.verify(b, jobs))
                add(f"{label} verify", jobs, bench.verify(b, jobs))
                add(f"{label} verify --offline", jobs, bench.verify(b, jobs, "--offline"))
        print(f"round {r + 1}/{args.rounds} done", flush=True)

    load = os.getloadavg()
    print(f"\n{len(bench.servers)} servers, {args.rounds} rounds, {cores} cores, load average "
          f"{load[0]:.2f}; this: {binary}" + (f"; other: {bins['other']}" if args.compare else ""))
    print(f"{'case':<28} {'jobs':>4} {'seconds median (min-max)':>26} {'x sdk':>6} {'unverifiable':>12}")
    for jobs in jobs_list:
        base = statistics.median(rows[(jobs, "sdk listing")]["walls"])
        for (j, case), row in rows.items():
            if j != jobs:
                continue
            med, text = show(row["walls"])
            print(f"{case:<28} {jobs:>4} {text:>26} {med / base:6.2f} {row['bad']:>12}")
    for (jobs, case), row in rows.items():
        for name, why in row["why"].items():
            print(f"  {case} -j {jobs}: {name}: {str(why)[:200]}")


if __name__ == "__main__":
    main()
