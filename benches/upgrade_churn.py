#!/usr/bin/env python3
"""How often the default policy stops a real upgrade of a popular MCP server.

For each server (npm packages that list their tools over stdio without credentials or
network; dummy API keys where one is needed to start), takes its last N releases
(prereleases and deprecated releases skipped) and installs each into a bench cache
(`npm install --ignore-scripts`; releases already there are reused). Then, for every
consecutive pair (old, new), in a fresh temporary project with a temporary HOME:
writes a `.mcp.json` whose stdio entry launches the release through a symlink
`<tmp>/current -> <release dir>`, pins the old release with `mcp-lock update --yes`,
repoints the symlink at the new release and runs `mcp-lock verify --format json
--offline`. The launch in the config is the same for both, so what is measured is the
contract (tools, prompts, resource templates, instructions, server identity); what the
package check says about the release that moved under the symlink is recorded apart
and does not count as a stop. A server that declares `resources` but answers
`resources/templates/list` with "method not found" is pinned with resource templates
turned off for it in `mcp-lock.toml` (what a user would have to do), and its pairs say
so.

Per pair it prints one line, `server old -> new: classes...; STOP|pass`, then the stop
rate (pairs whose contract changes include one the default policy fails, over the pairs
measured) and a tally of the classes and rules found. Installing is the only step that
talks to the registry; the servers run locally over stdio.

    python3 benches/upgrade_churn.py [--servers a,b,...] [--releases N] [--bin PATH]
                                     [--json FILE] [--cache DIR] [--jobs N]
"""

import argparse
import collections
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name -> package, arguments after the launch ({dir}: a directory inside the project
# that stays the same for both releases), environment (dummy values), bin to run when
# the package has several.
SERVERS = {
    "memory": {"pkg": "@modelcontextprotocol/server-memory", "env": {"MEMORY_FILE_PATH": "{dir}/memory.json"}},
    "filesystem": {"pkg": "@modelcontextprotocol/server-filesystem", "args": ["{dir}"]},
    "everything": {"pkg": "@modelcontextprotocol/server-everything", "args": ["stdio"]},
    "sequential-thinking": {"pkg": "@modelcontextprotocol/server-sequential-thinking"},
    "github": {"pkg": "@modelcontextprotocol/server-github",
               "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "bench-dummy-token"}},
    "playwright": {"pkg": "@playwright/mcp"},
    "context7": {"pkg": "@upstash/context7-mcp"},
    "tavily": {"pkg": "tavily-mcp", "env": {"TAVILY_API_KEY": "tvly-bench-dummy"}},
    "firecrawl": {"pkg": "firecrawl-mcp", "env": {"FIRECRAWL_API_KEY": "fc-bench-dummy"}},
    "exa": {"pkg": "exa-mcp-server", "env": {"EXA_API_KEY": "bench-dummy"}},
    "kubernetes": {"pkg": "mcp-server-kubernetes"},
    "notion": {"pkg": "@notionhq/notion-mcp-server", "env": {"NOTION_TOKEN": "ntn_bench_dummy"}},
    "chrome-devtools": {"pkg": "chrome-devtools-mcp", "bin": "chrome-devtools-mcp"},
    "playwright-ea": {"pkg": "@executeautomation/playwright-mcp-server"},
    "browsermcp": {"pkg": "@browsermcp/mcp"},
    "puppeteer": {"pkg": "@modelcontextprotocol/server-puppeteer"},
    "slack": {"pkg": "@modelcontextprotocol/server-slack",
              "env": {"SLACK_BOT_TOKEN": "xoxb-bench-dummy", "SLACK_TEAM_ID": "T00000000"}},
}


def semver_key(v):
    core = re.match(r"(\d+)\.(\d+)\.(\d+)", v)
    return tuple(int(x) for x in core.groups()) if core else (0, 0, 0)


def releases(pkg, n):
    """The last n releases: no prereleases (the range leaves them out), none deprecated."""
    out = subprocess.run(["npm", "view", f"{pkg}@>=0.0.0", "version", "deprecated", "--json"],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0 or not out.stdout.strip():
        raise RuntimeError(f"npm view {pkg}: {out.stderr.strip()[-300:]}")
    doc = json.loads(out.stdout)
    items = doc if isinstance(doc, list) else [doc]
    versions = []
    for item in items:
        if isinstance(item, str):
            versions.append(item)
        elif isinstance(item, dict) and not item.get("deprecated"):
            versions.append(item["version"])
    versions = sorted(set(v for v in versions if "-" not in v), key=semver_key)
    return versions[-n:]


def install(cache, pkg, version):
    """Install pkg@version into the cache (once); return its directory."""
    target = os.path.join(cache, pkg.replace("/", "+"), version)
    manifest = os.path.join(target, "node_modules", *pkg.split("/"), "package.json")
    if os.path.exists(manifest):
        return target
    partial = target + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    out = subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--silent",
                          "--prefix", partial, f"{pkg}@{version}"],
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"npm install {pkg}@{version}: {out.stderr.strip()[-300:]}")
    os.rename(partial, target)
    return target


def bin_name(release_dir, pkg, wanted):
    with open(os.path.join(release_dir, "node_modules", *pkg.split("/"), "package.json")) as f:
        manifest = json.load(f)
    bins = manifest.get("bin")
    if isinstance(bins, str):
        return manifest["name"].split("/")[-1]
    if wanted and wanted in bins:
        return wanted
    return sorted(bins)[0] if len(bins) == 1 else sorted(bins, key=len)[0]


def labels(server):
    """(label, action) for every change and drift in one server's report entry."""
    found = []
    for change in server.get("changes") or []:
        kind = change["kind"].replace("_", "-")
        if change["change"] in ("added", "removed"):
            label = f"{kind}-{change['change']}"
        elif change["change"] == "renamed":
            label = "renamed"
        else:
            label = change["class"] if kind == "tool" else f"{kind}:{change['class']}"
        found.append((label, change["action"]))
    for drift in server.get("server_changes") or []:
        if drift.get("drift"):
            found.append((f"{drift['field']}:{drift.get('rule') or drift.get('class')}", drift.get("action")))
    return found


def run_pair(binary, name, spec, pkg, old_dir, new_dir, timeout):
    with tempfile.TemporaryDirectory(prefix="churn-") as tmp:
        home = os.path.join(tmp, "home")
        project = os.path.join(tmp, "project")
        data = os.path.join(tmp, "data")
        for d in (home, project, data):
            os.mkdir(d)
        current = os.path.join(tmp, "current")
        os.symlink(old_dir, current)
        old_bin = bin_name(old_dir, pkg, spec.get("bin"))
        new_bin = bin_name(new_dir, pkg, spec.get("bin"))
        fill = lambda s: s.replace("{dir}", data)
        entry = {"command": os.path.join(current, "node_modules", ".bin", old_bin),
                 "args": [fill(a) for a in spec.get("args", [])]}
        if spec.get("env"):
            entry["env"] = {k: fill(v) for k, v in spec["env"].items()}

        def write_config():
            with open(os.path.join(project, ".mcp.json"), "w") as f:
                json.dump({"mcpServers": {name: entry}}, f, indent=2)

        write_config()
        env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_LOCK_")}
        env.update({"HOME": home, "XDG_CONFIG_HOME": os.path.join(home, ".config"),
                    "XDG_CACHE_HOME": os.path.join(home, ".cache"),
                    "XDG_DATA_HOME": os.path.join(home, ".local", "share"), "NO_COLOR": "1"})
        result = {"server": name, "package": pkg, "old": os.path.basename(old_dir),
                  "new": os.path.basename(new_dir)}
        update = [binary, "update", "--yes", "--quiet", "--timeout", str(timeout)]
        up = subprocess.run(update, cwd=project, env=env, capture_output=True, text=True, timeout=timeout + 60)
        if up.returncode == 3 and "resources/templates/list" in up.stderr and "-32601" in up.stderr:
            # The server declares `resources` but answers resources/templates/list with
            # "method not found" (older SDKs): mcp-lock calls that incomplete, and a user
            # would turn the surface off for it in mcp-lock.toml. So does the bench, and
            # says so.
            with open(os.path.join(project, "mcp-lock.toml"), "w") as f:
                f.write(f'[surface.server."{name}"]\nresource-templates = false\n')
            result["templates_off"] = True
            up = subprocess.run(update, cwd=project, env=env, capture_output=True, text=True,
                                timeout=timeout + 60)
        if up.returncode != 0:
            result["error"] = f"update of the old release exited {up.returncode}: {up.stderr.strip()[-400:]}"
            return result
        os.remove(current)
        os.symlink(new_dir, current)
        if new_bin != old_bin:
            entry["command"] = os.path.join(current, "node_modules", ".bin", new_bin)
            write_config()
            result["bin_renamed"] = [old_bin, new_bin]
        started = time.perf_counter()
        ver = subprocess.run([binary, "verify", "--format", "json", "--offline", "--timeout", str(timeout)],
                             cwd=project, env=env, capture_output=True, text=True, timeout=timeout + 60)
        result["verify_ms"] = round((time.perf_counter() - started) * 1000)
        result["exit_code"] = ver.returncode
        try:
            report = json.loads(ver.stdout)
        except json.JSONDecodeError:
            result["error"] = f"verify exited {ver.returncode} without a report: {ver.stderr.strip()[-400:]}"
            return result
        servers = report["servers"]
        result["verdicts"] = [s["verdict"] for s in servers]
        if any(s["verdict"] in ("incomplete", "unverifiable") for s in servers):
            result["error"] = "; ".join(f"{s['verdict']}: {s.get('error')}" for s in servers)
            result["report"] = servers
            return result
        found = [l for s in servers for l in labels(s)]
        result["labels"] = [label for label, _ in found]
        result["failing"] = sorted({label for label, action in found if action == "fail"})
        result["stop"] = bool(result["failing"])
        result["package"] = [s.get("package") for s in servers if s.get("package")]
        result["changes"] = [c for s in servers for c in s.get("changes") or []]
        result["server_changes"] = [c for s in servers for c in s.get("server_changes") or []]
        return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", help="comma-separated names (default: all): " + ", ".join(SERVERS))
    ap.add_argument("--releases", type=int, default=8, help="releases per server (default 8)")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mcp-lock"))
    ap.add_argument("--json", help="write the raw results here")
    ap.add_argument("--cache", default=os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                                                   "mcp-lock", "bench", "upgrade-churn"))
    ap.add_argument("--jobs", type=int, default=3, help="npm installs at once (default 3)")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per server listing (default 60)")
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"{args.bin} is not an executable; run `cargo build --release` or pass --bin")
    names = args.servers.split(",") if args.servers else list(SERVERS)
    unknown = [n for n in names if n not in SERVERS]
    if unknown:
        sys.exit(f"unknown servers: {', '.join(unknown)} (known: {', '.join(SERVERS)})")
    started = time.perf_counter()

    plan, skipped = {}, {}
    for name in names:
        try:
            versions = releases(SERVERS[name]["pkg"], args.releases)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            skipped[name] = str(e)
            continue
        if len(versions) < 2:
            skipped[name] = f"fewer than two releases ({', '.join(versions)})"
            continue
        plan[name] = versions
    dirs = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        jobs = {pool.submit(install, args.cache, SERVERS[n]["pkg"], v): (n, v) for n, vs in plan.items() for v in vs}
        for job in concurrent.futures.as_completed(jobs):
            n, v = jobs[job]
            try:
                dirs[(n, v)] = job.result()
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"  {n}@{v}: install failed: {e}", file=sys.stderr)
    installed_s = time.perf_counter() - started
    print(f"installed {len(dirs)} releases of {len(plan)} servers in {installed_s:.0f} s "
          f"(cache {args.cache})", file=sys.stderr)

    results = []
    for name, versions in plan.items():
        versions = [v for v in versions if (name, v) in dirs]
        for old, new in zip(versions, versions[1:]):
            try:
                r = run_pair(args.bin, name, SERVERS[name], SERVERS[name]["pkg"],
                             dirs[(name, old)], dirs[(name, new)], args.timeout)
            except subprocess.TimeoutExpired as e:
                r = {"server": name, "package": SERVERS[name]["pkg"], "old": old, "new": new,
                     "error": f"timed out: {e.cmd[1]}"}
            results.append(r)
            if "error" in r:
                line = f"ERROR ({r['error'][:200]})"
            else:
                classes = ", ".join(f"{l} x{c}" if c > 1 else l
                                    for l, c in collections.Counter(r["labels"]).items()) or "no change"
                pkg = "; ".join(f"package {p['status']}" for p in r["package"] if p.get("status") != "pinned")
                line = f"{classes}; {'STOP (' + ', '.join(r['failing']) + ')' if r['stop'] else 'pass'}"
                if pkg:
                    line += f"  [{pkg}]"
                if r.get("templates_off"):
                    line += "  [resource-templates off]"
            print(f"{name} {old} -> {new}: {line}", flush=True)

    measured = [r for r in results if "error" not in r]
    stopped = [r for r in measured if r["stop"]]
    tally_pairs = collections.Counter(l for r in measured for l in set(r["labels"]))
    tally_stops = collections.Counter(l for r in stopped for l in r["failing"])
    elapsed = time.perf_counter() - started
    print()
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    errors = [r for r in results if "error" in r]
    print(f"servers: {len({r['server'] for r in measured})}; pairs measured: {len(measured)}"
          f" ({len(errors)} could not be measured)")
    off = sorted({r["server"] for r in results if r.get("templates_off")})
    if off:
        print(f"resource templates not pinned (resources/templates/list: method not found): {', '.join(off)}")
    if measured:
        print(f"stop rate under the default policy: {len(stopped)}/{len(measured)} = "
              f"{100 * len(stopped) / len(measured):.0f}%")
        print(f"pairs with no contract change: {sum(1 for r in measured if not r['labels'])}")
        print("classes and rules (pairs where found; pairs where they alone or with others fail):")
        for label, count in tally_pairs.most_common():
            print(f"  {label:32} {count:4}  {tally_stops.get(label, 0):4}")
    print(f"elapsed {elapsed:.0f} s (installing {installed_s:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"releases": args.releases, "plan": plan, "skipped": skipped, "results": results,
                       "stop_rate": len(stopped) / len(measured) if measured else None,
                       "elapsed_s": round(elapsed)}, f, indent=2)


if __name__ == "__main__":
    main()
