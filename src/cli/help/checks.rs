//! Help for the commands that pin and check: update, upgrade, verify, scan, diff,
//! outdated, check-call, check-listing and hash.

use mcp_lock::verdict::exit_codes::ExitCode;

use super::{After, classes_by_default_action};

pub fn update() -> String {
    After::examples(&[
        (
            "mcp-lock update",
            "review and approve every change, one by one",
        ),
        ("mcp-lock update memory", "only the server named memory"),
        (
            "mcp-lock update --dry-run",
            "show what would change, write nothing",
        ),
        (
            "mcp-lock update --yes",
            "accept everything (first pin in a script)",
        ),
        (
            "mcp-lock update --client vscode",
            "pin what VS Code's agent is offered",
        ),
        (
            "mcp-lock update --protocol 2025-11-25",
            "pin what an agent on 2025-11-25 sees",
        ),
        (
            "mcp-lock update --accept additive,cosmetic",
            "accept those classes unasked",
        ),
    ])
    .para(
        "At each change: y accepts it, n keeps the old pin, a accepts this and all \
         remaining, q (or Ctrl-D) rejects this and all remaining (changes already \
         accepted, by you or by --accept and the policy file, are still written).",
    )
    .para(
        "Without a terminal and without --yes, only the changes the policy accepts \
         (--accept, update.accept in mcp-lock.toml) are written; the rest are shown, and \
         if any is left the exit code is 4.",
    )
    .para(
        "Every definition to be pinned (a first pin, each added or changed one) is \
         screened first (docs/screening.md) and its findings shown above it. --yes never \
         pins one with a finding the policy fails (screen-high by default): it is left \
         unpinned, or at its old pin, named in one line, and the exit code is 4.",
    )
    .codes(&[
        (
            ExitCode::Success,
            "written, or nothing to change (also --dry-run)",
        ),
        (ExitCode::Usage, "usage, config, policy or lock error"),
        (
            ExitCode::Unverified,
            "some server could not be listed: its pins stay",
        ),
        (
            ExitCode::ApprovalNeeded,
            "changes need approval and there is no terminal",
        ),
        (ExitCode::Interrupted, "interrupted: nothing was written"),
    ])
    .docs("update")
}

pub fn verify() -> String {
    After::examples(&[
        ("mcp-lock verify", "every server in the config"),
        ("mcp-lock verify github memory", "only these"),
        ("mcp-lock verify --format json > report.json", ""),
        ("mcp-lock verify --format sarif > mcp-lock.sarif", ""),
        (
            "mcp-lock verify --format github",
            "annotations in a GitHub Actions log",
        ),
        (
            "mcp-lock verify --warn semantic",
            "let rewordings through, with a warning",
        ),
        (
            "mcp-lock verify --client vscode",
            "only what the vscode profile is offered",
        ),
        (
            "mcp-lock verify --exact",
            "fail on any difference from the pins",
        ),
        (
            "mcp-lock verify --format markdown >> \"$GITHUB_STEP_SUMMARY\"",
            "",
        ),
        (
            "mcp-lock verify --no-connect",
            "offline, in milliseconds (pre-commit)",
        ),
    ])
    .para(
        "Each server is checked under every client profile the lock pins it with. \
         Verdicts: converged (matches the lock), stale (differs), incomplete (listing did \
         not finish), unverifiable (could not connect).",
    )
    .para(
        "Each difference has a class, and the policy (mcp-lock.toml, then \
         --fail/--warn/--allow) says whether it fails the run. A changed definition is \
         authority, breaking, semantic, additive or cosmetic; a definition added, removed \
         or renamed is tool-added, prompt-removed, renamed and so on; what a stdio entry \
         launches is checked too (package-changed, dependency-changed, package-floating, \
         closure-unpinned, launch-changed); definitions the tool rules deny to a host are \
         tool-denied (docs/tool-rules.md).",
    )
    .para(&classes_by_default_action())
    .para(
        "With --no-connect no server is started and no request made: the lock is read, \
         every configured server must be pinned with the launch (command, args, env names, \
         URL, header names) the config has, and the lock must pin no server the config \
         dropped. Listings are not checked (marked skipped in the output); exit 1 then \
         means a server not pinned, launched differently or dropped from the config.",
    )
    .codes(&[
        (ExitCode::Success, "nothing the policy fails"),
        (ExitCode::Drift, "a change the policy fails"),
        (ExitCode::Usage, "usage, config, policy or lock error"),
        (
            ExitCode::Unverified,
            "nothing failed, but a server incomplete or unverifiable",
        ),
        (ExitCode::Interrupted, "interrupted"),
    ])
    .docs("verify")
}

pub fn scan() -> String {
    After::examples(&[
        ("mcp-lock scan", "every server in the config"),
        ("mcp-lock scan github slack", "only these"),
        ("mcp-lock scan --format json > scan.json", ""),
        ("mcp-lock scan --format sarif > scan.sarif", ""),
        (
            "mcp-lock scan --fail screen-medium",
            "fail on medium findings too",
        ),
    ])
    .para(
        "Lists each server as verify does (same config discovery, client profiles, \
         --client) and screens every tool, prompt and resource template it lists, pinned \
         or not, with the other servers' tool names (from the lock and the listings) for \
         shadowing. Each finding has a rule id, a severity, the JSON pointer of the string \
         and a quote of it (invisible characters escaped). Nothing is written.",
    )
    .para(
        "screen-high fails by default, screen-medium and screen-low warn ([verify] in \
         mcp-lock.toml, --fail/--warn/--allow); findings a team accepted are named in \
         [screen] accept as \"SERVER/NAME:RULE-ID\" (docs/screening.md).",
    )
    .codes(&[
        (ExitCode::Success, "no finding the policy fails"),
        (ExitCode::Drift, "a finding the policy fails"),
        (ExitCode::Usage, "usage, config, policy or lock error"),
        (
            ExitCode::Unverified,
            "nothing failed, but some server could not be listed",
        ),
        (ExitCode::Interrupted, "interrupted"),
    ])
    .docs("scan")
}

pub fn diff() -> String {
    After::examples(&[
        ("mcp-lock diff", "the lock against live servers"),
        ("mcp-lock diff github", "only the server named github"),
        (
            "mcp-lock diff --from main.lock",
            "main's lock against this one",
        ),
        ("mcp-lock diff --from <(git show origin/main:mcp.lock)", ""),
        (
            "mcp-lock diff --from old.lock --to new.lock --format json",
            "",
        ),
    ])
    .codes(&[
        (ExitCode::Success, "no differences"),
        (ExitCode::Drift, "differences"),
        (ExitCode::Usage, "usage, config or lock error"),
        (
            ExitCode::Unverified,
            "no differences, but some server could not be checked",
        ),
        (ExitCode::Interrupted, "interrupted"),
    ])
    .docs("diff")
}

pub fn outdated() -> String {
    After::examples(&[
        (
            "mcp-lock outdated",
            "every server pinned to an npm/PyPI package",
        ),
        ("mcp-lock outdated github memory", "only these"),
        ("mcp-lock outdated --min-release-age 36h", ""),
        (
            "mcp-lock outdated --format markdown >> \"$GITHUB_STEP_SUMMARY\"",
            "",
        ),
    ])
    .para(
        "For each server the lock pins to a package it asks the registry the pin was \
         resolved from (the entry's --registry or --index-url, its environment, .npmrc, \
         ...) and shows the pinned version, the candidate, and newer releases held back. \
         A server named that is not pinned to a registry package is shown as such.",
    )
    .para(
        "The cooldown: a release is proposed only once it has been published for at least \
         min-release-age ([upgrade] min-release-age in mcp-lock.toml, default 7d; \"0\" \
         turns it off), so a compromised release has time to be found and pulled before a \
         pin moves to it. A newer release still inside the cooldown, or whose publish time \
         the registry does not give, is listed as held back. A deprecated (npm) or yanked \
         (PyPI) release is never the candidate; prereleases are proposed only when the pin \
         is a prerelease.",
    )
    .para("Nothing is written: `mcp-lock upgrade` moves pins.")
    .codes(&[
        (ExitCode::Success, "checked (outdated or not)"),
        (ExitCode::Usage, "usage, config, policy or lock error"),
        (ExitCode::Unverified, "some registry could not be asked"),
        (ExitCode::Interrupted, "interrupted"),
    ])
    .docs("outdated")
}

pub fn upgrade() -> String {
    After::examples(&[
        (
            "mcp-lock upgrade",
            "every server pinned to an npm/PyPI package",
        ),
        (
            "mcp-lock upgrade github --dry-run",
            "what the next release changes",
        ),
        ("mcp-lock upgrade github --to 2.3.0", "exactly this release"),
        (
            "mcp-lock upgrade --yes",
            "every candidate and all of its changes",
        ),
        (
            "mcp-lock upgrade --accept package-changed,additive,cosmetic",
            "",
        ),
    ])
    .para(
        "For each server it finds the candidate as `mcp-lock outdated` does (the newest \
         release past the cooldown, [upgrade] min-release-age in mcp-lock.toml, never a \
         deprecated or yanked one unless --to names it), installs it with its dependency \
         closure into a scratch cache, lists it under every client profile the lock pins, \
         and shows each difference from the pins and the package move.",
    )
    .para(
        "Then, as `mcp-lock update`: each change is approved at the terminal (y, n, a, q; \
         Ctrl-D quits as q does), or by --yes or --accept. A server moves only when its \
         package change is approved: then the config's version argument (where the config \
         names a version), the lock and mcp.closure.lock are written together, crash-safe; \
         rejected tool changes stay pinned as they were (verify reports them).",
    )
    .codes(&[
        (
            ExitCode::Success,
            "done, or nothing to upgrade (also --dry-run)",
        ),
        (
            ExitCode::Drift,
            "the --to version is not listed, or inside the cooldown",
        ),
        (ExitCode::Usage, "usage, config or lock error"),
        (
            ExitCode::Unverified,
            "a registry or the candidate could not be reached",
        ),
        (
            ExitCode::ApprovalNeeded,
            "changes need approval and there is no terminal",
        ),
        (ExitCode::Interrupted, "interrupted"),
    ])
    .docs("upgrade")
}

pub fn check_call() -> String {
    After::examples(&[
        (
            "mcp-lock check-call github create_issue --args '{\"title\": \"Bug\"}'",
            "",
        ),
        (
            "mcp-lock check-call deploy deploy_preview --args @call.json",
            "",
        ),
        (
            "mcp-lock check-call deploy deploy_preview --args - --format json",
            "",
        ),
    ])
    .para(
        "Checks the arguments against the pinned and the live input schema, and compares \
         the live definition with its pin (classified, with the policy's verdict). The tool \
         rules (docs/tool-rules.md) are applied first: a tool denied to the host, or an \
         argument rule broken, is refused whatever the contract says.",
    )
    .codes(&[
        (
            ExitCode::Success,
            "valid under both, the contract unchanged (or allowed)",
        ),
        (
            ExitCode::Drift,
            "the contract changed as the policy fails; or no such pin",
        ),
        (ExitCode::Usage, "usage, config or lock error"),
        (ExitCode::Unverified, "the server could not be checked"),
        (
            ExitCode::InvalidArguments,
            "the contract holds but the arguments do not fit",
        ),
        (ExitCode::Denied, "the tool rules deny the call"),
        (ExitCode::Interrupted, "interrupted"),
    ])
    .docs("check-call")
}

pub fn check_listing() -> String {
    After::examples(&[
        ("mcp-lock check-listing github tools.json", ""),
        (
            "agent-dump-listing | mcp-lock check-listing github --client claude-code",
            "",
        ),
        ("mcp-lock check-listing github page1.json page2.json", ""),
        (
            "mcp-lock check-listing github tools.json --handshake @initialize.json",
            "",
        ),
    ])
    .para(
        "The input (FILEs, or standard input when none or -) is one JSON document or one \
         per line. Each is a list page ({\"tools\": [...], \"nextCursor\": ...}, or \
         prompts, resourceTemplates, resources), a JSON-RPC answer holding one, the session \
         as the client saw it (protocolVersion, serverInfo, instructions, capabilities: the \
         initialize result), one object with several of these, or an array of them in \
         order. Pages of a kind are joined in order; a last page with a nextCursor means a \
         page is missing, and the verdict is incomplete. Kinds and session members not \
         given are not judged.",
    )
    .para(
        "The profile is --client's, else the pinned one whose recorded capabilities equal \
         those --handshake declares (the guard's match), else the one the lock pins the \
         server with. A handshake no pinned profile matches is judged as the guard judges \
         that client, against every approved definition (a tool none approves is added), \
         with a warning line; the report's missing_profile names the closest profile, the \
         difference and the command that pins it.",
    )
    .para("The comparison, classes, policy and report formats are verify's.")
    .codes(&[
        (ExitCode::Success, "nothing the policy fails"),
        (ExitCode::Drift, "a change the policy fails"),
        (ExitCode::Usage, "usage, config, lock or input error"),
        (ExitCode::Unverified, "the listing is incomplete"),
    ])
    .docs("check-listing")
}

pub fn hash() -> String {
    After::examples(&[
        ("mcp-lock hash tool.json", "one definition (an object)"),
        (
            "mcp-lock hash page1.json page2.json",
            "a listing over several pages",
        ),
        (
            "curl ... | mcp-lock hash -",
            "a tools/list result or JSON-RPC answer",
        ),
    ])
    .para(
        "Prints each tool's hash then the set hash (tool definition hash, version 1: \
         SHA-256 of the RFC 8785 canonical form).",
    )
    .codes(&[
        (ExitCode::Success, "hashed"),
        (
            ExitCode::Drift,
            "a definition cannot be pinned, or a JSON-RPC error answer",
        ),
        (ExitCode::Usage, "unreadable input or a file named twice"),
    ])
    .docs("hash")
}
