#!/usr/bin/env python3
"""Peak memory (max RSS) and time of `mcp-lock audit verify` and `audit show` on a
large audit log.

Writes a chained log of N entries (default 1,000,000, about 170 MB) the way the guard
writes one: sessions of 100 entries (session_started, a tools/list, 96 calls, some
refused, client_closed, a session_end checkpoint), each line's `prev` the SHA-256 of
the line before. Then runs each case under `/usr/bin/time -v` and reports its
"Maximum resident set size" and elapsed time:

  verify        audit verify --format json
  show-text     audit show
  show-json     audit show --format json
  show-md       audit show --format markdown

Measured on the shared 2-core machine (debug build, 1,000,000 entries, 255 MB), before
issue 40 item 11 and after it (peak RSS): verify 465 -> 25 MiB, show-text 506 -> 26 MiB,
show-json 506 -> 25 MiB, show-md 506 -> 25 MiB. CPU time is unchanged (100,000
entries: verify 5.6 s user before and after); wall time on that machine is mostly
waiting for a core.

Usage: python3 benches/audit_log.py [ENTRIES] [BINARY] [CASE,...]
  (default BINARY: target/release/mcp-lock; needs /usr/bin/time: `apt-get install time`)
"""

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENTRIES = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
BINARY = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.join(ROOT, "target/release/mcp-lock")
CASES = sys.argv[3].split(",") if len(sys.argv) > 3 else None

GENESIS = "0" * 64


def entries(n):
    """Yields (event, members) for n entries, sessions of 100."""
    i = 0
    session = 0
    while i < n:
        sid = f"{session:016x}"
        body = [("session_started", {"decision": "started", "log_format": 2, "pid": 1000 + session,
                                     "command": "node", "args": ["server.js"]}),
                ("tools/list", {"decision": "served", "kind": "tool", "first_page": True,
                                "complete": True, "shown": 3, "hidden": []})]
        for c in range(96):
            if c % 10 == 9:
                body.append(("tools/call", {"tool": "deploy_preview", "decision": "refused",
                                            "error_code": "STALE_TOOL_SCHEMA"}))
            else:
                body.append(("tools/call", {"tool": f"read_ticket_{c % 7}", "decision": "forwarded",
                                            "duration_ms": 3}))
        body.append(("client_closed", {"reason": "the client closed the session"}))
        body.append(("checkpoint", {"decision": "chain_head", "reason": "session_end",
                                    "signature": None}))
        for event, members in body:
            if i >= n:
                return
            yield sid, event, members
            i += 1
        session += 1


def write_log(path, n):
    prev = GENESIS
    with open(path, "wb") as out:
        for seq, (sid, event, members) in enumerate(entries(n), start=1):
            head = {"seq": seq, "prev": prev, "time": f"2026-12-01T{(seq // 3600) % 24:02}:{(seq // 60) % 60:02}:{seq % 60:02}.000Z",
                    "server": "deploy", "session": sid, "event": event}
            head.update(members)
            line = json.dumps(head, separators=(",", ":")).encode()
            out.write(line + b"\n")
            prev = hashlib.sha256(line).hexdigest()


def measure(args, cwd):
    run = subprocess.run(["/usr/bin/time", "-v", BINARY] + args, cwd=cwd,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", run.stderr)
    user = re.search(r"User time \(seconds\): (\S+)", run.stderr)
    wall = f"{wall.group(1) if wall else '?'} wall, {user.group(1) if user else '?'} s user"
    return run.returncode, int(rss.group(1)) // 1024 if rss else -1, wall


def main():
    cases = {
        "verify": ["audit", "verify", "--format", "json"],
        "show-text": ["audit", "show"],
        "show-json": ["audit", "show", "--format", "json"],
        "show-md": ["audit", "show", "--format", "markdown"],
    }
    with tempfile.TemporaryDirectory() as project:
        os.makedirs(os.path.join(project, ".mcp-lock"))
        log = os.path.join(project, ".mcp-lock", "audit.jsonl")
        write_log(log, ENTRIES)
        size = os.path.getsize(log)
        print(f"{ENTRIES} entries, {size / 1e6:.0f} MB, {BINARY}")
        for name, args in cases.items():
            if CASES and name not in CASES:
                continue
            code, rss, wall = measure(args, project)
            print(f"  {name:10} exit {code}  peak {rss} MiB  {wall}")


if __name__ == "__main__":
    main()
