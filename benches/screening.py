#!/usr/bin/env python3
"""Screening, measured: precision on the real servers the tests install, recall on the
poisoned corpus (tests/corpus/screening/).

    python3 benches/screening.py [--bin PATH] [--skip-real] [--skip-corpus]

Real servers: the 22 popular servers of tests/servers/popular_servers.rs and the 4 of
tests/servers/real_servers.rs, configured as those tests configure them (installed by
scripts/install-test-servers.sh), in one project; `mcp-lock scan --format json`
screens every definition with the others' tool names. Printed: definitions screened,
findings by severity, and every finding (server/name, rule, pointer, quote).

Corpus: each case is served by a small stdio MCP server (this script, run with
--serve FILE), with the servers its `context` names beside it, and scanned; a case
counts as found when every expected (rule, pointer, quote) is among the findings.
Printed: recall by rule and overall, and each benign near-miss's findings.
"""

import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus" / "screening"
CACHE = Path(os.environ.get("MCP_LOCK_TEST_SERVERS", Path.home() / ".cache/mcp-lock/test-servers"))
REFUSING_PROXY = "http://127.0.0.1:9"
PATIENT = ["--timeout", "600", "--request-timeout", "300"]


def serve(path):
    """A legacy-era stdio MCP server listing the definitions in PATH
    ({"tools": [...], "prompts": [...], "resourceTemplates": [...]})."""
    items = json.loads(Path(path).read_text())
    lists = {
        "tools/list": ("tools", items.get("tools", [])),
        "prompts/list": ("prompts", items.get("prompts", [])),
        "resources/templates/list": ("resourceTemplates", items.get("resourceTemplates", [])),
        "resources/list": ("resources", []),
    }
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "id" not in msg:
            continue
        method = msg.get("method")
        if method == "initialize":
            result = {
                "protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
                "serverInfo": {"name": "corpus", "version": "1"},
            }
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        elif method in lists:
            key, value = lists[method]
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {key: value}}
        elif method == "ping":
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {}}
        else:
            reply = {"jsonrpc": "2.0", "id": msg["id"],
                     "error": {"code": -32601, "message": "Method not found"}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def scan(binary, project):
    run = subprocess.run([binary, "scan", "--format", "json", *PATIENT], cwd=project,
                         capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    try:
        return json.loads(run.stdout), run.returncode
    except ValueError:
        sys.exit(f"scan gave no JSON (exit {run.returncode}): {run.stderr[-2000:]}")


def real_servers(project):
    pop = CACHE / "popular"
    npm = lambda b, env=None: {"command": str(pop / "npm/node_modules/.bin" / b), "env": env or {}}
    py = lambda v, s, args=(), env=None: {"command": str(pop / v / "bin" / s), "args": list(args), "env": env or {}}
    official = lambda pkg, *extra: {
        "command": "node",
        "args": [str(CACHE / "npm/node_modules/@modelcontextprotocol" / pkg / "dist/index.js"), *extra]}
    repo = project / "repo"
    subprocess.run(["git", "init", "--quiet", str(repo)], check=True)
    proxy = {"HTTPS_PROXY": REFUSING_PROXY, "HTTP_PROXY": REFUSING_PROXY}
    postgres = npm("mcp-server-postgres")
    postgres["args"] = ["postgresql://127.0.0.1:9/mydb"]
    memory = official("server-memory")
    memory["env"] = {"MEMORY_FILE_PATH": str(project / "memory.jsonl")}
    return {
        "sequential-thinking": npm("mcp-server-sequential-thinking"),
        "fetch": py("venv", "mcp-server-fetch"),
        "git": py("venv", "mcp-server-git", ["--repository", str(repo)]),
        "github": npm("mcp-server-github", {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_dummy"}),
        "slack": npm("mcp-server-slack", {"SLACK_BOT_TOKEN": "xoxb-dummy", "SLACK_TEAM_ID": "T00000000"}),
        "brave-search": npm("brave-search-mcp-server", {"BRAVE_API_KEY": "dummy"}),
        "playwright": npm("playwright-mcp"),
        "chrome-devtools": npm("chrome-devtools-mcp", {"CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS": "1",
                                                       "CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS": "1"}),
        "context7": npm("context7-mcp"),
        "notion": npm("notion-mcp-server", {"NOTION_TOKEN": "ntn_dummy"}),
        "tavily": npm("tavily-mcp", {"TAVILY_API_KEY": "tvly-dummy"}),
        "firecrawl": npm("firecrawl-mcp", {"FIRECRAWL_API_KEY": "fc-dummy"}),
        "exa": npm("exa-mcp-server", {"EXA_API_KEY": "dummy"}),
        "desktop-commander": npm("desktop-commander", {"DESKTOP_COMMANDER_DISABLE_TELEMETRY": "1",
                                                       "DC_FLAG_URL": REFUSING_PROXY + "/flags.json", **proxy}),
        "duckduckgo": py("venv", "duckduckgo-mcp-server"),
        "aws-documentation": py("venv-aws", "awslabs.aws-documentation-mcp-server", [],
                                {"FASTMCP_LOG_LEVEL": "ERROR", "AWS_DOCUMENTATION_PARTITION": "aws"}),
        "serena": py("venv-serena", "serena", ["start-mcp-server", "--context", "claude-code", "--project",
                                               str(project), "--enable-web-dashboard", "false",
                                               "--open-web-dashboard", "false"], proxy),
        "postgres": postgres,
        "puppeteer": npm("mcp-server-puppeteer"),
        "playwright-executeautomation": npm("playwright-mcp-server"),
        "browsermcp": npm("mcp-server-browsermcp"),
        "kubernetes": npm("mcp-server-kubernetes"),
        "everything": official("server-everything", "stdio"),
        "filesystem": official("server-filesystem", str(project)),
        "memory": memory,
        "time": {"command": str(CACHE / "venv/bin/mcp-server-time"), "args": ["--local-timezone", "UTC"]},
    }


def precision(binary):
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / ".mcp.json").write_text(json.dumps({"mcpServers": real_servers(project)}))
        doc, code = scan(binary, project)
    servers = doc["servers"]
    screened = sum(s["screened"] for s in servers)
    listed = sum(1 for s in servers if s["listed"])
    by = Counter()
    flagged = set()
    print(f"Real servers: {listed}/{len(servers)} listed, {screened} definitions screened (scan exit {code})")
    for s in servers:
        if s.get("error"):
            print(f"  {s['name']}: not listed: {s['error']}")
        for item in s["items"]:
            for f in item["findings"]:
                by[f["severity"]] += 1
                flagged.add((s["name"], item["name"]))
                print(f"  {f['severity']:<6} {s['name']}/{item['name']} {f['rule']} {f['pointer']}: {f['quote']}")
    print(f"  findings: high {by['high']}, medium {by['medium']}, low {by['low']}; "
          f"definitions flagged: {len(flagged)} of {screened}")


def recall(binary):
    cases = sorted(CORPUS.glob("*.json"))
    per_rule = defaultdict(lambda: [0, 0])
    found_cases = 0
    poisoned = 0
    benign_high = 0
    for path in cases:
        case = json.loads(path.read_text())
        key = {"tool": "tools", "prompt": "prompts", "resource-template": "resourceTemplates"}[case["kind"]]
        with tempfile.TemporaryDirectory() as tmp:
            project = Path(tmp)
            servers = {}
            stub = lambda t: {"name": t, "description": "A tool.", "inputSchema": {"type": "object"}}
            own = {key: [case["definition"]]}
            # The case's own server's other tools (context under its own name) are listed beside it.
            own.setdefault("tools", []).extend(
                stub(t) for t in case["context"].get(case["server"], []) if t != case["definition"].get("name"))
            for name, items in [(case["server"], own)] + [
                (n, {"tools": [stub(t) for t in tools]})
                for n, tools in case["context"].items() if n != case["server"]
            ]:
                listing = project / f"{name}.json"
                listing.write_text(json.dumps(items))
                servers[name] = {"command": sys.executable, "args": [__file__, "--serve", str(listing)]}
            (project / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
            doc, _ = scan(binary, project)
        findings = [f for s in doc["servers"] if s["name"] == case["server"]
                    for i in s["items"] for f in i["findings"]]
        if case.get("benign"):
            high = [f for f in findings if f["severity"] == "high"]
            benign_high += bool(high)
            shown = ", ".join(f"{f['rule']} ({f['severity']})" for f in findings) or "nothing"
            print(f"  benign {path.stem}: {shown}")
            continue
        poisoned += 1
        all_found = True
        for e in case["expect"]:
            hit = any(f["rule"] == e["rule"] and f["pointer"] == e["pointer"] and e["quote"] in f["quote"]
                      for f in findings)
            per_rule[e["rule"]][0] += hit
            per_rule[e["rule"]][1] += 1
            all_found &= hit
            if not hit:
                print(f"  MISSED {path.stem}: {e['rule']} at {e['pointer']}")
        found_cases += all_found
    print(f"Corpus: {found_cases}/{poisoned} poisoned definitions found with every expected finding; "
          f"{benign_high} benign near-misses flagged high")
    for rule, (hit, total) in sorted(per_rule.items()):
        print(f"  {rule:<22} {hit}/{total}")
    hits = sum(h for h, _ in per_rule.values())
    total = sum(t for _, t in per_rule.values())
    print(f"  {'all expected findings':<22} {hits}/{total} ({100.0 * hits / max(total, 1):.1f}%)")


def main():
    args = sys.argv[1:]
    if args[:1] == ["--serve"]:
        return serve(args[1])
    binary = str(ROOT / "target/release/mcp-lock")
    if "--bin" in args:
        binary = args[args.index("--bin") + 1]
    if not Path(binary).exists():
        binary = str(ROOT / "target/debug/mcp-lock")
    binary = str(Path(binary).resolve())
    if "--skip-real" not in args:
        precision(binary)
    if "--skip-corpus" not in args:
        recall(binary)


if __name__ == "__main__":
    main()
