//! Help for the commands around an agent's session: guard, wrap, unwrap, hook, login,
//! logout, servers, profiles, audit, completions and man.

use mcp_lock::verdict::exit_codes::ExitCode;

use super::After;

pub fn guard() -> String {
    After::examples(&[
        (
            "mcp-lock guard github",
            "start the server named github in the config",
        ),
        (
            "mcp-lock guard github -- npx -y @modelcontextprotocol/server-github",
            "",
        ),
        (
            "mcp-lock guard linear",
            "a remote (Streamable HTTP or SSE) entry",
        ),
        (
            "mcp-lock guard github --on-drift fail",
            "refuse a drifted listing whole",
        ),
    ])
    .para(
        "Put it where the agent launches the server, e.g. in .mcp.json (`mcp-lock wrap` \
         rewrites a config that way, `mcp-lock unwrap` undoes it):",
    )
    .verbatim(r#""github": {"command": "mcp-lock", "args": ["guard", "github"]}"#)
    .para(
        "The guard speaks stdio to the agent; the server may be a stdio command (the \
         config's, or the one after --) or a remote Streamable HTTP or SSE server, reached \
         with its headers and login tokens.",
    )
    .para(
        "The agent's own handshake picks the client profile it is judged under (the pinned \
         profile with the same capabilities; a client matching none is told once, with the \
         difference). Every tools/list page the agent receives is judged as `mcp-lock \
         verify` judges it, under the same policy: what verify passes is served (an \
         additive or cosmetic change as the approved definition), what it fails is hidden \
         (or, with --on-drift fail, the listing is refused); --exact hides every \
         difference.",
    )
    .para(
        "A call to a hidden tool, a call before a checked listing, or a call whose \
         arguments do not fit the input schema the agent was given is answered by the \
         guard with a tool error (error_code STALE_TOOL_SCHEMA, UNPINNED_TOOL, \
         SERVER_IDENTITY_CHANGED, INVALID_ARGUMENTS or LISTING_NOT_VERIFIED; \
         side_effect_started: false) and never reaches the server. What the tool rules of \
         mcp-lock.toml (and the user's own file) deny to the agent's host is hidden too, \
         and its call refused with TOOL_DENIED (PROMPT_DENIED, RESOURCE_TEMPLATE_DENIED), \
         naming the rule and its file; a call that breaks an argument rule is refused with \
         ARGUMENT_DENIED.",
    )
    .para(
        "After notifications/tools/list_changed, calls wait for the next complete listing. \
         Every decision is appended to the audit log (JSON lines). When the lock changes on \
         disk (mcp-lock update), the new pins apply at once.",
    )
    .codes(&[
        (ExitCode::Success, "the agent closed the session"),
        (
            ExitCode::ServerExited,
            "the server exited first, or its launch was refused",
        ),
        (ExitCode::Usage, "usage, config or lock error"),
        (ExitCode::Interrupted, "interrupted: the server was stopped"),
    ])
    .docs("guard")
}

pub fn wrap() -> String {
    After::examples(&[
        (
            "mcp-lock wrap",
            "every stdio server in the discovered configs",
        ),
        (
            "mcp-lock wrap github --dry-run",
            "show the change, write nothing",
        ),
        ("mcp-lock --user claude-code wrap", "the user's own servers"),
        (
            "mcp-lock --config ~/.config/Claude/claude_desktop_config.json \\",
            "",
        ),
        ("    --lock ~/proj/mcp.lock wrap", ""),
    ])
    .para(
        "The config is saved to FILE.mcp-lock.bak first. Wrapping twice changes nothing; \
         `mcp-lock unwrap` undoes it byte for byte. A remote entry (in an mcpServers \
         config) becomes `mcp-lock guard NAME --lock LOCK --config \
         FILE.mcp-lock.remote.json`: its URL and header templates move to that file, never \
         into the wrapped entry.",
    )
    .codes(&[
        (
            ExitCode::Success,
            "written (or nothing to change, or --dry-run)",
        ),
        (ExitCode::Usage, "usage or config error: nothing written"),
    ])
    .docs("wrap")
}

pub fn unwrap() -> String {
    After::examples(&[
        ("mcp-lock unwrap", "every wrapped server in the configs"),
        (
            "mcp-lock unwrap github --dry-run",
            "show the change, write nothing",
        ),
    ])
    .para(
        "Each entry still exactly as wrap left it gets its original bytes back from the \
         backup wrap made (FILE.mcp-lock.bak), so a config nobody edited since is restored \
         byte for byte and the backup removed; an entry edited since is undone in place.",
    )
    .codes(&[
        (
            ExitCode::Success,
            "written (or nothing to change, or --dry-run)",
        ),
        (ExitCode::Usage, "usage or config error: nothing written"),
    ])
    .docs("unwrap")
}

pub fn login() -> String {
    After::examples(&[
        (
            "mcp-lock login linear",
            "opens the browser, waits for the callback",
        ),
        (
            "mcp-lock login linear --no-browser",
            "prints the address; paste where it ends",
        ),
    ])
    .para(
        "Follows the MCP authorization spec: discovery from the server's 401, a client \
         (the entry's \"oauth\": {\"clientId\": ...}, else a Client ID Metadata Document \
         where the server supports them and one is named, else one registered on the fly), \
         PKCE, and a callback on 127.0.0.1. An entry with \"grant\": \"client_credentials\" \
         gets tokens by itself: login only checks that one can be had.",
    )
    .para(
        "Tokens are cached per server URL and issuer in $XDG_CONFIG_HOME/mcp-lock/oauth/ \
         (else ~/.config/mcp-lock/oauth/), files 0600; update, verify, diff, check-call and \
         guard use them and refresh them. The lock records only that OAuth was used and by \
         which issuer.",
    )
    .codes(&[
        (ExitCode::Success, "logged in"),
        (ExitCode::Usage, "usage or config error"),
        (ExitCode::Unverified, "the login failed"),
        (ExitCode::Interrupted, "interrupted"),
    ])
    .docs("login")
}

pub fn logout() -> String {
    After::examples(&[("mcp-lock logout linear", "forget linear's tokens")])
        .codes(&[
            (
                ExitCode::Success,
                "removed (or there was nothing to remove)",
            ),
            (ExitCode::Usage, "usage or config error"),
        ])
        .docs("logout")
}

pub fn servers() -> String {
    After::examples(&[
        ("mcp-lock servers", "a table of every server found"),
        ("mcp-lock servers --format json", "the same, for scripts"),
        (
            "mcp-lock --user codex servers",
            "the user's own Codex servers",
        ),
    ])
    .para(
        "Nothing is started: this reads the configs and the lock only. Skipped entries \
         (disabled: true, enabled: false) are listed with why.",
    )
    .codes(&[
        (ExitCode::Success, "listed"),
        (ExitCode::Usage, "usage, config or lock error"),
    ])
    .docs("servers")
}

pub fn profiles() -> String {
    After::examples(&[
        ("mcp-lock profiles", "every profile, built-in and defined"),
        (
            "mcp-lock profiles claude-code --format json",
            "one profile, for scripts",
        ),
    ])
    .para(
        "The built-in profiles and their sources are in docs/profiles.md; a project \
         defines its own in mcp-lock.toml ([profile.NAME]).",
    )
    .codes(&[
        (ExitCode::Success, "shown"),
        (
            ExitCode::Usage,
            "an unknown profile or an unreadable mcp-lock.toml",
        ),
    ])
    .docs("profiles")
}

pub fn audit() -> String {
    After::examples(&[
        (
            "mcp-lock audit verify",
            "is the project's log whole and unaltered?",
        ),
        ("mcp-lock audit show", "one summary per guard session"),
    ])
    .para(
        "The guard appends every decision to the audit log, .mcp-lock/audit.jsonl beside the lock.",
    )
    .docs("audit")
}

pub fn audit_verify() -> String {
    After::examples(&[
        (
            "mcp-lock audit verify",
            "the project's log and its rotated files",
        ),
        (
            "mcp-lock audit verify --allowed-signers .mcp-lock/allowed_signers",
            "",
        ),
        (
            "mcp-lock audit verify old/audit.1.jsonl old/audit.jsonl --format json",
            "",
        ),
    ])
    .para(
        "FILEs are checked as one chain, in the order given. The first break is reported \
         by file and line: edited, deleted, inserted, reordered, unchained, cut_short, \
         start_missing, bad_signature, unsigned. The chain cannot show entries cut off the \
         end of the log, nor a log rewritten from its first line: signed checkpoints can \
         (docs/audit.md).",
    )
    .codes(&[
        (ExitCode::Success, "intact"),
        (
            ExitCode::Drift,
            "broken (or a signature missing or invalid)",
        ),
        (ExitCode::Usage, "usage: no log, an unreadable file"),
    ])
    .docs("audit")
}

pub fn audit_show() -> String {
    After::examples(&[
        ("mcp-lock audit show", "every session in the project's log"),
        (
            "mcp-lock audit show --since 2026-12-01",
            "sessions that ended on or after it",
        ),
        ("mcp-lock audit show --server deploy --format markdown", ""),
        (
            "mcp-lock audit show --format json | jq '.sessions[].refusals'",
            "",
        ),
    ])
    .codes(&[
        (ExitCode::Success, "shown"),
        (ExitCode::Usage, "usage: no log, an unreadable file"),
    ])
    .docs("audit")
}

/// The hooks of a Claude Code settings file that run `mcp-lock hook claude-code`:
/// valid JSON, each line short enough that clap never wraps it.
pub const CLAUDE_CODE_HOOKS: &str = r#"{
  "hooks": {
    "SessionStart": [
      {"hooks": [{"type": "command",
                  "command": "mcp-lock hook claude-code"}]}
    ],
    "PreToolUse": [
      {"matcher": "mcp__.*",
       "hooks": [{"type": "command",
                  "command": "mcp-lock hook claude-code"}]}
    ],
    "SessionEnd": [
      {"hooks": [{"type": "command",
                  "command": "mcp-lock hook claude-code"}]}
    ]
  }
}"#;

pub fn hook() -> String {
    After::examples(&[
        (
            "mcp-lock hook claude-code < session-start.json",
            "verify, as at SessionStart",
        ),
        (
            "mcp-lock hook claude-code < pre-tool-use.json",
            "judge one planned call",
        ),
    ])
    .para(
        "Claude Code runs it through the mcp-lock plugin (plugins/claude-code; in Claude \
         Code: /plugin marketplace add with this repository, then /plugin install \
         mcp-lock@mcp-lock), or from the hooks of its settings (.claude/settings.json):",
    )
    .verbatim(CLAUDE_CODE_HOOKS)
    .para(
        "It reads the hook's JSON on standard input. At SessionStart it verifies every \
         server Claude Code starts for the project (CLAUDE_PROJECT_DIR, else the current \
         directory) under the claude-code client profile: the project's against mcp.lock, \
         the user's own (user and local scope in ~/.claude.json) against the lock \
         `mcp-lock --user claude-code update` keeps. It keeps what it found for the \
         session, reuses the last start's verification of a server whose lock, config, \
         settings and launched package (an exact registry version or image digest) did not \
         change (.mcp-lock/hook-reuse.json), and tells the model and the user which servers \
         and tools did not verify.",
    )
    .para(
        "At PreToolUse a call to mcp__<server>__<tool> is refused when no lock pins the \
         tool, when the lock refuses the tool (as the guard would: a drifted tool is \
         refused, its unchanged siblings served), when its server could not be verified, \
         when the arguments do not fit the pinned input schema, when the tool rules \
         (mcp-lock.toml and the user's own file, read at SessionStart) deny the tool to \
         claude-code or its arguments break an argument rule, or when the name could be \
         another server's too; any other call gets an answer with no decision, so Claude \
         Code's own permissions still decide. PreToolUse never verifies: a server or lock \
         not verified at session start is refused until the next one.",
    )
    .para(
        "Whatever the hook cannot judge (unreadable input, a lock gone mid-session, rule \
         files changed or unreadable mid-session, 20 s passed; 120 s at SessionStart) \
         refuses an MCP call. A project with no mcp.lock (nor a lock of the user's own for \
         it) is left alone. It judges calls, not what Claude Code listed: use `mcp-lock \
         wrap` (the guard) to enforce the listing too.",
    )
    .codes(&[(
        ExitCode::Success,
        "always; the hook JSON on standard output when there is something to say",
    )])
    .docs("hook")
}

pub fn completions() -> String {
    After::examples(&[
        ("mcp-lock completions bash \\", ""),
        (
            "    > ~/.local/share/bash-completion/completions/mcp-lock",
            "",
        ),
        ("mcp-lock completions zsh > ~/.zfunc/_mcp-lock", ""),
        (
            "mcp-lock completions fish > ~/.config/fish/completions/mcp-lock.fish",
            "",
        ),
    ])
    .codes(&[
        (ExitCode::Success, "printed"),
        (ExitCode::Usage, "an unknown shell"),
    ])
    .docs("completions")
}

pub fn man() -> String {
    After::examples(&[
        ("mcp-lock man > ~/.local/share/man/man1/mcp-lock.1", ""),
        (
            "mcp-lock man verify > ~/.local/share/man/man1/mcp-lock-verify.1",
            "",
        ),
        ("mcp-lock man | man -l -", ""),
    ])
    .codes(&[
        (ExitCode::Success, "printed"),
        (ExitCode::Usage, "an unknown subcommand"),
    ])
    .docs("man")
}
