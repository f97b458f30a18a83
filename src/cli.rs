//! The command line, clap derive only. Everything it does lives in the library.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use mcp_lock::verdict::policy::{Rule, parse_accept_rule, parse_rule};

const ABOUT: &str = "Pin the tool definitions of your MCP servers in mcp.lock, verify them in CI, approve every change";

const EXAMPLES: &str = "\
Examples:
  mcp-lock update              pin every server in .mcp.json, asking before each change
  mcp-lock verify              check live servers against mcp.lock (CI, agent start-up)
  mcp-lock verify github --format json
  mcp-lock diff --from old.lock   what changed between two locks, classified
  mcp-lock hash tools.json     hash tool definitions the way the lock does
  mcp-lock guard github        run a server behind a proxy that enforces the lock
  mcp-lock wrap                make every stdio server in .mcp.json launch through guard
  mcp-lock outdated            newer releases of pinned npm/PyPI packages, with a cooldown
  mcp-lock check-call github create_issue --args '{\"title\": \"Bug\"}'

Exit codes: 0 converged (or drift the policy allows), 1 drift the policy fails,
2 usage/config/lock error, 3 a server could not be verified, 4 changes need approval
(no terminal), 5 check-call: arguments do not fit, 6 check-call: the tool rules
deny the call, 130 interrupted.";

#[derive(Debug, Parser)]
#[command(name = "mcp-lock", version, about = ABOUT, after_help = EXAMPLES)]
pub struct Cli {
    /// Read servers from this client config (any client's shape, told from its content)
    /// instead of discovering them in the current directory
    #[arg(long, global = true, value_name = "PATH", conflicts_with = "user")]
    pub config: Option<PathBuf>,

    /// Read servers from this client's user-level config (~/.claude.json,
    /// ~/.codex/config.toml, ...): the user's own servers, not the project's
    #[arg(long, global = true, value_name = "CLIENT", value_parser = clap::builder::PossibleValuesParser::new(mcp_lock::servers::config::USER_CLIENTS))]
    pub user: Option<String>,

    /// The lock file [default: mcp.lock in the current directory]
    #[arg(long, global = true, value_name = "PATH")]
    pub lock: Option<PathBuf>,

    /// The policy file [default: mcp-lock.toml beside the lock, if there is one]
    #[arg(long, global = true, value_name = "PATH")]
    pub policy: Option<PathBuf>,

    /// When to use colour
    #[arg(long, global = true, value_enum, default_value_t = ColorWhen::Auto, value_name = "WHEN")]
    pub color: ColorWhen,

    /// No progress, status or summary lines on stderr: only errors, warnings and the
    /// report itself
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum HookHost {
    ClaudeCode,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every tool of every server and move pins in mcp.lock, after approval
    #[command(after_help = "\
Examples:
  mcp-lock update                 review and approve every change, one by one
  mcp-lock update memory          only the server named memory
  mcp-lock update --dry-run       show what would change, write nothing
  mcp-lock update --yes           accept everything (first pin in a script)
  mcp-lock update --client vscode pin what VS Code's agent is offered (also:
                                  claude-code, cursor, codex, gemini-cli, bare)
  mcp-lock update --protocol 2025-11-25
                                  pin what an agent on 2025-11-25 sees
  mcp-lock update --accept additive,cosmetic
                                  accept those classes unasked, review the rest

At each change: y accepts it, n keeps the old pin, a accepts this and all remaining,
q rejects this and all remaining (changes already accepted, by you or by --accept and
the policy file, are still written).
Without a terminal and without --yes, only the changes the policy accepts (--accept,
update.accept in mcp-lock.toml) are written; the rest are shown, and if any is left
the exit code is 4.
Every definition to be pinned (a first pin, each added or changed one) is screened
first (docs/screening.md) and its findings shown above it. --yes never pins one with
a finding the policy fails (screen-high by default): it is left unpinned, or at its
old pin, named in one line, and the exit code is 4.")]
    Update(UpdateArgs),

    /// Check live servers against mcp.lock; exit non-zero on drift
    #[command(after_help = "\
Examples:
  mcp-lock verify                       every server in the config
  mcp-lock verify github memory         only these
  mcp-lock verify --format json > report.json
  mcp-lock verify --format sarif > mcp-lock.sarif
  mcp-lock verify --format github      annotations in a GitHub Actions log
  mcp-lock verify --warn semantic      let reworded descriptions through, with a warning
  mcp-lock verify --client vscode      only what the vscode client profile is offered
  mcp-lock verify --exact              fail on any difference from the pins
  mcp-lock verify --format markdown >> \"$GITHUB_STEP_SUMMARY\"
  mcp-lock verify --no-connect         offline, in milliseconds (a pre-commit hook)

Each server is checked under every client profile the lock pins it with.
Verdicts: converged (matches the lock), stale (differs), incomplete (listing did
not finish), unverifiable (could not connect). Each change is classed authority,
breaking, semantic, additive or cosmetic (or tool-added, tool-removed), and the
policy (mcp-lock.toml, then --fail/--warn/--allow) says whether it fails the run.
What a stdio entry launches is checked too: package-changed and dependency-changed
fail by default; package-floating (a wrapped entry's spec floats) and
closure-unpinned (an npm/PyPI entry whose dependency closure could not be pinned, so
it is resolved afresh at every launch) warn. Definitions the tool rules deny to a
host are listed (tool-denied, a note by default; docs/tool-rules.md).
With --no-connect no server is started and no request made: the lock is read, every
configured server must be pinned with the launch (command, args, env names, URL,
header names) the config has, and the lock must pin no server the config dropped.
Listings are not checked (marked skipped in the output).
Exit codes: 0 nothing the policy fails, 1 a change the policy fails, 3 nothing
failed but some server incomplete or unverifiable, 2 usage, config or lock error.
With --no-connect: 0 all pinned as configured, 1 a server not pinned, launched
differently or dropped from the config, 2 usage, config or lock error.")]
    Verify(VerifyArgs),

    /// Screen every live definition of the project's servers for poisoning: text
    /// that instructs the model, invisible characters, shadowing, exfiltration
    #[command(after_help = "\
Examples:
  mcp-lock scan                         every server in the config
  mcp-lock scan github slack            only these
  mcp-lock scan --format json > scan.json
  mcp-lock scan --format sarif > scan.sarif
  mcp-lock scan --fail screen-medium    fail on medium findings too

Lists each server as verify does (same config discovery, client profiles, --client)
and screens every tool, prompt and resource template it lists, pinned or not, with
the other servers' tool names (from the lock and the listings) for shadowing. Each
finding has a rule id, a severity, the JSON pointer of the string and a quote of it
(invisible characters escaped). screen-high fails by default, screen-medium and
screen-low warn ([verify] in mcp-lock.toml, --fail/--warn/--allow); findings a team
accepted are named in [screen] accept as \"SERVER/NAME:RULE-ID\" (docs/screening.md).
Nothing is written.
Exit codes: 0 no finding the policy fails, 1 a finding the policy fails, 2 usage,
config, policy or lock error, 3 nothing failed but some server could not be listed.")]
    Scan(ScanArgs),

    /// Show what changed, classified: between the lock and live servers, or between
    /// two lock files
    #[command(after_help = "\
Examples:
  mcp-lock diff                              the lock against live servers
  mcp-lock diff github                       only the server named github
  mcp-lock diff --from main.lock             main's lock against this one
  mcp-lock diff --from <(git show origin/main:mcp.lock)
  mcp-lock diff --from old.lock --to new.lock --format json

Exit codes: 0 no differences, 1 differences, 2 usage, config or lock error,
3 no differences found but some server could not be checked.")]
    Diff(DiffArgs),

    /// Show which pinned npm and PyPI packages have newer releases, and which of them
    /// the cooldown (min-release-age) still holds back
    #[command(after_help = "\
Examples:
  mcp-lock outdated                       every server pinned to an npm or PyPI package
  mcp-lock outdated github memory         only these (others are shown as not a
                                          registry package)
  mcp-lock outdated --min-release-age 36h
  mcp-lock outdated --format markdown >> \"$GITHUB_STEP_SUMMARY\"

For each server the lock pins to a package it asks the registry the pin was resolved
from (the entry's --registry or --index-url, its environment, .npmrc, ...) and shows
the pinned version, the candidate, and newer releases held back.
The cooldown: a release is proposed only once it has been published for at least
min-release-age ([upgrade] min-release-age in mcp-lock.toml, default 7d; \"0\" turns
it off), so a compromised release has time to be found and pulled before a pin moves
to it. A newer release still inside the cooldown, or whose publish time the registry
does not give, is listed as held back. A deprecated (npm) or yanked (PyPI) release is
never the candidate; prereleases are proposed only when the pin is a prerelease.
Nothing is written: `mcp-lock update` moves pins.
Exit codes: 0 checked (outdated or not), 3 some registry could not be asked,
2 usage, config, policy or lock error.")]
    Outdated(OutdatedArgs),

    /// Move npm and PyPI servers to a newer release, after reviewing its tools
    #[command(after_help = "\
Examples:
  mcp-lock upgrade                      every server pinned to an npm or PyPI package
  mcp-lock upgrade github --dry-run     show what the next release changes, write nothing
  mcp-lock upgrade github --to 2.3.0    exactly this release (even a deprecated one)
  mcp-lock upgrade --yes                take every candidate and all of its changes

For each server it finds the candidate as `mcp-lock outdated` does (the newest release
past the cooldown, [upgrade] min-release-age in mcp-lock.toml, never a deprecated or
yanked one unless --to names it), installs it with its dependency closure into a
scratch cache, lists it under every client profile the lock pins, and shows each
difference from the pins and the package move. Then, as `mcp-lock update`: each change
is approved at the terminal, or by --yes or --accept. A server moves only when its
package change is approved: then the config's version argument (where the config
names a version), the lock and mcp.closure.lock are written together, crash-safe;
rejected tool changes stay pinned as they were (verify reports them).
Exit codes: 0 done, or nothing to upgrade (also --dry-run), 1 the --to version cannot
be taken (not listed, or inside the cooldown), 2 usage, config or lock error, 3 a
registry or the candidate could not be reached or listed, 4 changes need approval and
there is no terminal (nothing of a server is written unless its package change is
accepted), 130 interrupted.")]
    Upgrade(UpgradeArgs),

    /// Run a stdio server behind a proxy that enforces the lock for a whole agent session
    #[command(after_help = "\
Put it where the agent launches the server, e.g. in .mcp.json:
  \"github\": {\"command\": \"mcp-lock\", \"args\": [\"guard\", \"github\"]}
(`mcp-lock wrap` rewrites a config that way, `mcp-lock unwrap` undoes it).

Examples:
  mcp-lock guard github                 start the server named github in the config
  mcp-lock guard github -- npx -y @modelcontextprotocol/server-github
                                        start this command, check it against github's pins

The agent's own handshake picks the client profile it is judged under (the pinned
profile with the same capabilities; a client matching none is told once, with the
difference). Every tools/list page the agent receives is judged as `mcp-lock verify`
judges it, under the same policy: what verify passes is served (an additive or
cosmetic change as the approved definition), what it fails is hidden (or, with
--on-drift fail, the listing is refused); --exact hides every difference. A call to a
hidden tool, a call before a checked listing, or a call whose arguments do not fit
the input schema the agent was given is answered by the guard with a tool error
(error_code STALE_TOOL_SCHEMA, UNPINNED_TOOL, SERVER_IDENTITY_CHANGED,
INVALID_ARGUMENTS or LISTING_NOT_VERIFIED; side_effect_started: false) and never
reaches the server. What the tool rules of mcp-lock.toml (and the user's own file)
deny to the agent's host is hidden too, and its call refused with TOOL_DENIED
(PROMPT_DENIED, RESOURCE_TEMPLATE_DENIED), naming the rule and its file; a call that
breaks an argument rule is refused with ARGUMENT_DENIED.
After notifications/tools/list_changed, calls wait for the next complete listing.
Every decision is appended to the audit log (JSON lines). When the lock changes on
disk (mcp-lock update), the new pins apply at once.

Exit codes: 0 the agent closed the session, 1 the server exited first,
2 usage, config or lock error, 130 interrupted.")]
    Guard(GuardArgs),

    /// Rewrite a client config so its servers launch through `mcp-lock guard`
    #[command(after_help = "\
Examples:
  mcp-lock wrap                     every stdio server in the discovered configs
  mcp-lock wrap github --dry-run    show the change, write nothing
  mcp-lock --config ~/.config/Claude/claude_desktop_config.json --lock ~/proj/mcp.lock wrap

The config is saved to FILE.mcp-lock.bak first. Wrapping twice changes nothing;
`mcp-lock unwrap` undoes it byte for byte. A remote entry (in an mcpServers config)
becomes `mcp-lock guard NAME --lock LOCK --config FILE.mcp-lock.remote.json`: its URL
and header templates move to that file, never into the wrapped entry.")]
    Wrap(WrapArgs),

    /// Undo `mcp-lock wrap`: servers launch directly again
    #[command(after_help = "\
Examples:
  mcp-lock unwrap                   every wrapped server in the discovered configs
  mcp-lock unwrap github --dry-run

Each entry still exactly as wrap left it gets its original bytes back from the
backup wrap made (FILE.mcp-lock.bak), so a config nobody edited since is restored
byte for byte and the backup removed; an entry edited since is undone in place.")]
    Unwrap(WrapArgs),

    /// Would a call an agent already planned still be valid, and mean the same, under
    /// the live contract?
    #[command(
        name = "check-call",
        after_help = "\
Examples:
  mcp-lock check-call github create_issue --args '{\"title\": \"Bug\"}'
  mcp-lock check-call deploy deploy_preview --args @call.json --format json

Checks the arguments against the pinned and the live input schema, and compares
the live definition with its pin (classified, with the policy's verdict). The tool
rules (docs/tool-rules.md) are applied first: a tool denied to the host, or an
argument rule broken, is refused whatever the contract says.
Exit codes: 0 valid under both and the contract unchanged (or changed only in ways
the policy allows), 1 the contract changed in a way the policy fails (or the tool
is gone or not pinned), 5 the contract holds but the arguments do not fit it,
6 the tool rules deny the call, 3 the server could not be checked, 2 usage, config
or lock error."
    )]
    CheckCall(CheckCallArgs),

    /// Judge a listing a client already received (from the agent's own session)
    /// against mcp.lock, as verify would, without connecting
    #[command(
        name = "check-listing",
        after_help = "\
Examples:
  mcp-lock check-listing github tools.json
  agent-dump-listing | mcp-lock check-listing github --client claude-code --format json
  mcp-lock check-listing github page1.json page2.json
  mcp-lock check-listing github tools.json --handshake @initialize-params.json

The input (FILEs, or standard input when none or -) is one JSON document or one per
line. Each is a list page ({\"tools\": [...], \"nextCursor\": ...}, or prompts,
resourceTemplates, resources), a JSON-RPC answer holding one, the session as the
client saw it (protocolVersion, serverInfo, instructions, capabilities: the
initialize result), one object with several of these, or an array of them in order.
Pages of a kind are joined in order; a last page with a nextCursor means a page is
missing, and the verdict is incomplete. Kinds and session members not given are not
judged. The profile is --client's, else the pinned one whose recorded capabilities
equal those --handshake declares (the guard's match), else the one the lock pins the
server with. A handshake no pinned profile matches is judged as the guard judges that
client, against every approved definition (a tool none approves is added), with a
warning line; the report's missing_profile names the closest profile, the difference
and the command that pins it. The comparison, classes, policy, report formats and exit
codes are verify's: 0 nothing the policy fails, 1 a change the policy fails, 3 the
listing is incomplete, 2 usage, config, lock or input error."
    )]
    CheckListing(CheckListingArgs),

    /// Log in to a remote server that asks for OAuth, and cache its tokens
    #[command(after_help = "\
Examples:
  mcp-lock login linear                    opens the browser, waits for the callback
  mcp-lock login linear --no-browser       prints the address; paste back where it ends

Follows the MCP authorization spec: discovery from the server's 401, a client (the
entry's \"oauth\": {\"clientId\": ...}, else a Client ID Metadata Document where the
server supports them and one is named, else one registered on the fly), PKCE, and a
callback on 127.0.0.1. An entry with \"grant\": \"client_credentials\" gets tokens
by itself: login only checks that one can be had. Tokens are cached per server URL and issuer in
$XDG_CONFIG_HOME/mcp-lock/oauth/ (else ~/.config/mcp-lock/oauth/), files 0600;
update, verify, diff, check-call and guard use them and refresh them. The lock
records only that OAuth was used and by which issuer.
Exit codes: 0 logged in, 2 usage or config error, 3 the login failed.")]
    Login(LoginArgs),

    /// Forget the tokens `mcp-lock login` cached for a server
    #[command(after_help = "\
Examples:
  mcp-lock logout linear

Exit codes: 0 removed (or there was nothing to remove), 2 usage or config error.")]
    Logout(LogoutArgs),

    /// A remote server as a stdio stream, for `mcp-lock guard` (internal)
    #[command(name = "remote-bridge", hide = true)]
    RemoteBridge(RemoteBridgeArgs),

    /// List every server the client configs define: where, how, under which client
    /// profiles, and whether the lock pins it
    #[command(after_help = "\
Examples:
  mcp-lock servers                 a table of every server found
  mcp-lock servers --format json   the same, for scripts

Nothing is started: this reads the configs and the lock only. Skipped entries
(disabled: true, enabled: false) are listed with why.")]
    Servers(ServersArgs),

    /// Show the client profiles: what mcp-lock sends when it connects as each host
    #[command(after_help = "\
Examples:
  mcp-lock profiles                          every profile, built-in and defined
  mcp-lock profiles claude-code --format json  one profile, for scripts

The built-in profiles and their sources are in docs/profiles.md; a project defines
its own in mcp-lock.toml ([profile.NAME]). Exit codes: 0 shown, 2 an unknown profile
or an unreadable mcp-lock.toml.")]
    Profiles(ProfilesArgs),

    /// Print the hash of tool definitions: a definition, a listing or a tools/list result
    #[command(after_help = "\
Examples:
  mcp-lock hash tool.json             one definition (an object)
  mcp-lock hash page1.json page2.json a listing over several pages
  curl ... | mcp-lock hash -          a whole tools/list result or JSON-RPC answer

Prints each tool's hash then the set hash (tool definition hash, version 1:
SHA-256 of the RFC 8785 canonical form). Exit codes: 0 hashed, 1 some definition
cannot be pinned (no hash: a repeated member name; no string name) or the input is
a JSON-RPC error answer, 2 unreadable input or a file named twice.")]
    Hash(HashArgs),

    /// Check the guard's audit log (its chain and signed checkpoints), or show what
    /// each session did
    #[command(subcommand)]
    Audit(AuditCommand),

    /// Answer a coding agent's hooks from the lock: Claude Code's SessionStart verifies
    /// the project's servers once, and PreToolUse refuses calls the lock does not allow
    #[command(after_help = "\
Claude Code runs it through the mcp-lock plugin (plugins/claude-code), or from the
hooks of its settings:
  \"SessionStart\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"mcp-lock hook claude-code\"}]}],
  \"PreToolUse\": [{\"matcher\": \"mcp__.*\", \"hooks\": [{\"type\": \"command\", \"command\": \"mcp-lock hook claude-code\"}]}],
  \"SessionEnd\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"mcp-lock hook claude-code\"}]}]

It reads the hook's JSON on standard input. At SessionStart it verifies every server
Claude Code starts for the project (CLAUDE_PROJECT_DIR, else the current directory)
under the claude-code client profile: the project's against mcp.lock, the user's own
(user and local scope in ~/.claude.json) against the lock `mcp-lock --user
claude-code update` keeps. It keeps what it found for the session, reuses the last
start's verification of a server whose lock, config, settings and launched package
(an exact registry version or image digest) did not change
(.mcp-lock/hook-reuse.json), and tells the model and the
user which servers and tools did not verify. At PreToolUse a call to
mcp__<server>__<tool> is refused when no lock pins the tool, when the lock refuses
the tool (as the guard would: a drifted tool is refused, its unchanged siblings
served), when its server could not be verified, when the arguments do not fit the
pinned input schema, when the tool rules (mcp-lock.toml and the user's own file, read
at SessionStart) deny the tool to claude-code or its arguments break an argument
rule, or when the name could be another server's too; any other call gets an answer
with no decision,
so Claude Code's own permissions still decide. PreToolUse never verifies: a server or
lock not verified at session start is refused until the next one. Whatever the hook
cannot judge (unreadable input, a lock gone mid-session, rule files changed or
unreadable mid-session, 20 s passed; 120 s at SessionStart) refuses an MCP call. A project with no mcp.lock (nor a lock of the
user's own for it) is left alone. It judges calls, not what Claude Code listed: use `mcp-lock
wrap` (the guard) to enforce the listing too.
Exit code: 0, with Claude Code's hook JSON on standard output when it has something
to say.")]
    Hook {
        /// The agent whose hook this is
        #[arg(value_enum)]
        host: HookHost,
    },

    /// Print a shell completion script
    #[command(after_help = "\
Examples:
  mcp-lock completions bash > ~/.local/share/bash-completion/completions/mcp-lock
  mcp-lock completions zsh > ~/.zfunc/_mcp-lock")]
    Completions {
        /// The shell to complete for
        shell: clap_complete::Shell,
    },

    /// Print the man page (roff), generated from these definitions
    #[command(after_help = "\
Examples:
  mcp-lock man > ~/.local/share/man/man1/mcp-lock.1
  mcp-lock man verify > ~/.local/share/man/man1/mcp-lock-verify.1
  mcp-lock man | man -l -")]
    Man {
        /// A subcommand's own page (mcp-lock-SUBCOMMAND(1)) [default: mcp-lock(1)]
        #[arg(value_name = "SUBCOMMAND")]
        subcommand: Option<String>,
    },
}

/// Below this no server's first answer fits.
const MIN_MESSAGE_BYTES: usize = 1024;

/// A count of at least `MIN`. A smaller one cannot work, and is refused (exit 2)
/// rather than quietly raised.
fn at_least<const MIN: usize>(text: &str) -> Result<usize, String> {
    let n: usize = text
        .parse()
        .map_err(|_| format!("{text:?} is not a whole number"))?;
    if n < MIN {
        return Err(format!("must be at least {MIN}"));
    }
    Ok(n)
}

#[derive(Debug, Args)]
pub struct ConnectArgs {
    /// Longest time for one server, from start to the last page, in seconds
    #[arg(long, value_name = "SECS", default_value_t = 120.0)]
    pub timeout: f64,

    /// Longest wait for any one answer from a server, in seconds
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub request_timeout: f64,

    /// Servers contacted at once [default: twice the machine's cores, at least 4]
    ///
    /// Started in waves this size: each server's timeouts run from its own start, so
    /// a server waiting for a turn is not timed out. More servers at once than the
    /// cores can start only makes each start slower.
    #[arg(long, short = 'j', value_name = "N", value_parser = at_least::<1>)]
    pub jobs: Option<usize>,

    /// A listing with more pages than this stops as incomplete
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = at_least::<1>)]
    pub max_pages: usize,

    /// A listing with more tools than this stops as incomplete
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = at_least::<1>)]
    pub max_tools: usize,

    /// Largest single message (stdio line, HTTP body or SSE event) accepted from a
    /// server, in bytes (at least 1024)
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024 * 1024, value_parser = at_least::<MIN_MESSAGE_BYTES>)]
    pub max_message_bytes: usize,

    /// How long to wait for an answer to the 2026-07-28 `server/discover` probe before
    /// taking a server for a handshake-era one, in seconds
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub probe_timeout: f64,

    /// Follow HTTP redirects (and legacy SSE endpoints) to another origin; by default
    /// only same-origin redirects are followed
    #[arg(long)]
    pub allow_redirects: bool,

    /// List servers as this client profile sees them: claude-code, vscode, cursor,
    /// codex, gemini-cli, bare, or one defined in mcp-lock.toml [default: verify
    /// checks every profile the lock pins; update pins the profiles mcp-lock.toml
    /// names, else the host whose config file defines the server]
    #[arg(long, value_name = "PROFILE")]
    pub client: Option<String>,
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// Servers to update, by config name [default: all]
    #[arg(value_name = "SERVER")]
    pub servers: Vec<String>,

    /// Accept every change without asking
    #[arg(long, short = 'y', conflicts_with = "dry_run")]
    pub yes: bool,

    /// Show what would change; write nothing
    #[arg(long)]
    pub dry_run: bool,

    /// For a scheduled job that proposes the lock in a pull request (the GitHub
    /// Action's `update-pr` mode): accept every change as --yes does, recorded as
    /// `approved = "pull-request"` (merging approves it), and when the lock moved write
    /// the pull request's title.txt, labels.txt and body.md into DIR
    /// (docs/pull-requests.md)
    #[arg(long, value_name = "DIR", conflicts_with_all = ["dry_run", "yes"])]
    pub pull_request: Option<std::path::PathBuf>,

    /// Pin with this protocol version instead of the newest the server speaks (e.g.
    /// 2025-11-25, the version your agent uses); verify then asks for the same
    #[arg(long, value_name = "VERSION", value_parser = mcp_lock::servers::client::PROTOCOL_VERSIONS)]
    pub protocol: Option<String>,

    /// Accept changes of these classes without asking (comma-separated: authority,
    /// breaking, semantic, additive, cosmetic, tool-added, tool-removed); adds to the
    /// policy file's `update.accept`
    #[arg(long, value_name = "CLASSES", value_delimiter = ',', value_parser = parse_accept_rule)]
    pub accept: Vec<Rule>,

    /// Contact the named remote servers even where their URL is on another origin
    /// than the lock pins, sending them their headers and login token: you approve
    /// the move (without it such a server is not contacted and its pins stay)
    #[arg(long, requires = "servers")]
    pub approve_origin: bool,

    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Debug, Args)]
pub struct UpgradeArgs {
    /// Servers to upgrade, by config name [default: every server pinned to an npm or
    /// PyPI package]
    #[arg(value_name = "SERVER")]
    pub servers: Vec<String>,

    /// Move to exactly this version (name one server); a deprecated or yanked
    /// release is taken, and flagged
    #[arg(long, value_name = "VERSION")]
    pub to: Option<String>,

    /// Accept every change without asking
    #[arg(long, short = 'y', conflicts_with = "dry_run")]
    pub yes: bool,

    /// Show the candidate's differences; write nothing
    #[arg(long)]
    pub dry_run: bool,

    /// Accept changes of these classes without asking (as `update --accept`;
    /// `package-changed` accepts the package move)
    #[arg(long, value_name = "CLASSES", value_delimiter = ',', value_parser = parse_accept_rule)]
    pub accept: Vec<Rule>,

    /// The cooldown: take only releases published at least this long ago (7d, 36h,
    /// 90m; 0 for none) [default: [upgrade] min-release-age of mcp-lock.toml, else 7d]
    #[arg(long, value_name = "DURATION", value_parser = mcp_lock::servers::package::releases::parse_age)]
    pub min_release_age: Option<std::time::Duration>,

    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Servers to verify, by config name [default: all]
    #[arg(value_name = "SERVER")]
    pub servers: Vec<String>,

    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,

    /// Check offline: start no server and make no request; the lock against the
    /// config only (human, json or markdown output)
    #[arg(long)]
    pub no_connect: bool,

    /// Skip registry look-ups: package checks that need the npm registry or the
    /// PyPI index are reported as skipped (local scripts are still hashed);
    /// --no-connect implies it
    #[arg(long)]
    pub offline: bool,

    #[command(flatten)]
    pub policy: PolicyArgs,

    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Servers to scan, by config name [default: all]
    #[arg(value_name = "SERVER")]
    pub servers: Vec<String>,

    /// Output format
    #[arg(long, value_enum, default_value_t = ScanFormat::Text)]
    pub format: ScanFormat,

    #[command(flatten)]
    pub policy: PolicyArgs,

    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScanFormat {
    /// For people; colour on a terminal
    Text,
    /// One JSON document: the findings of every server
    Json,
    /// SARIF 2.1.0, one result per finding
    Sarif,
}

/// Per-class overrides of the policy file.
#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// Fail the run on changes of these classes (comma-separated)
    #[arg(long, value_name = "CLASSES", value_delimiter = ',', value_parser = parse_rule)]
    pub fail: Vec<Rule>,

    /// Only warn about changes of these classes
    #[arg(long, value_name = "CLASSES", value_delimiter = ',', value_parser = parse_rule)]
    pub warn: Vec<Rule>,

    /// Report changes of these classes without failing or warning
    #[arg(long, value_name = "CLASSES", value_delimiter = ',', value_parser = parse_rule)]
    pub allow: Vec<Rule>,

    /// Fail on every difference from the pins, whatever the classes' actions (the
    /// guard's `--exact` hides the same tools)
    #[arg(long)]
    pub exact: bool,
}

#[derive(Debug, Args)]
pub struct CheckListingArgs {
    /// The server the listing came from, by config name
    #[arg(value_name = "SERVER")]
    pub server: String,

    /// Files holding what the client received [default: standard input]
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// The client profile the listing was received under [default: the pinned profile
    /// --handshake matches, else the one the lock pins the server with]; wins over
    /// --handshake
    #[arg(long, value_name = "PROFILE")]
    pub client: Option<String>,

    /// What the client declared when it connected: the initialize params it sent
    /// ({"protocolVersion", "capabilities", "clientInfo"}) or its whole initialize
    /// (or server/discover) request, as JSON or @FILE. The listing is judged under the
    /// pinned profile with those capabilities, as the guard matches a client; none:
    /// stale, exit 1, with the closest profile and what would pin it
    #[arg(long, value_name = "JSON")]
    pub handshake: Option<String>,

    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,

    /// A listing with more pages of one kind than this stops as incomplete (as verify)
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = at_least::<1>)]
    pub max_pages: usize,

    /// A listing with more tools (or prompts, ...) than this stops as incomplete (as
    /// verify)
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = at_least::<1>)]
    pub max_tools: usize,

    /// Largest single document (one page or message) read, in bytes (at least 1024);
    /// a larger one stops the listing as incomplete (as verify)
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024 * 1024, value_parser = at_least::<MIN_MESSAGE_BYTES>)]
    pub max_message_bytes: usize,

    #[command(flatten)]
    pub policy: PolicyArgs,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Servers to compare, by config name [default: all]
    #[arg(value_name = "SERVER")]
    pub servers: Vec<String>,

    /// Compare this lock file with --to instead of with live servers
    #[arg(long, value_name = "LOCK")]
    pub from: Option<PathBuf>,

    /// The newer lock file [default: the lock]
    #[arg(long, value_name = "LOCK", requires = "from")]
    pub to: Option<PathBuf>,

    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,

    #[command(flatten)]
    pub policy: PolicyArgs,

    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// For people; colour on a terminal
    Human,
    /// One JSON document (docs/json-report.md)
    Json,
    /// SARIF 2.1.0, results pointing at lines of the lock
    Sarif,
    /// JUnit XML, one test case per tool
    Junit,
    /// GitHub Actions workflow commands (::error file=mcp.lock,line=N::...)
    Github,
    /// GitHub-flavoured Markdown: a table of findings per server, for job summaries
    /// and pull-request comments
    Markdown,
}

#[derive(Debug, Args)]
pub struct GuardArgs {
    /// The server, by config name; its pins in the lock are enforced
    #[arg(value_name = "SERVER", allow_hyphen_values = true)]
    pub server: String,

    /// Start this command instead of the config's entry (what `wrap` writes)
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,

    /// Append decisions here, one JSON object a line [default: .mcp-lock/audit.jsonl
    /// beside the lock]
    #[arg(long, value_name = "PATH")]
    pub audit_log: Option<PathBuf>,

    /// What to do with a listing that holds a drifted or unpinned tool: hide those tools,
    /// or answer the whole listing with an error
    #[arg(long, value_enum, default_value_t = OnDrift::Hide, value_name = "WHAT")]
    pub on_drift: OnDrift,

    /// Largest single message accepted from either side, in bytes (at least 1024)
    #[arg(long, value_name = "BYTES", default_value_t = 64 * 1024 * 1024, value_parser = at_least::<MIN_MESSAGE_BYTES>)]
    pub max_message_bytes: usize,

    /// Serve only tools whose definitions are exactly pinned: every difference is
    /// hidden, whatever the policy's actions (verify's `--exact` fails the same)
    #[arg(long)]
    pub exact: bool,

    /// Install the pinned dependency closure with its install scripts run (npm
    /// lifecycle scripts, PyPI source builds); off unless this or `[closure]
    /// allow-scripts` in mcp-lock.toml names the server
    #[arg(long)]
    pub allow_scripts: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnDrift {
    /// Leave drifted and unpinned tools out of the listing the agent sees
    Hide,
    /// Answer the listing with an error naming the drifted tools
    Fail,
}

#[derive(Debug, Args)]
pub struct WrapArgs {
    /// Servers to change, by config name [default: all stdio servers]
    #[arg(value_name = "SERVER")]
    pub servers: Vec<String>,

    /// Show the change; write nothing
    #[arg(long)]
    pub dry_run: bool,

    /// The command wrapped entries launch (wrap only)
    #[arg(long, value_name = "PATH", default_value = "mcp-lock")]
    pub guard_command: String,
}

#[derive(Debug, Args)]
pub struct CheckCallArgs {
    /// The server, by config name
    #[arg(value_name = "SERVER")]
    pub server: String,

    /// The tool the call is for
    #[arg(value_name = "TOOL")]
    pub tool: String,

    /// The call's arguments: a JSON object, @FILE to read one, or - for standard input
    #[arg(long, value_name = "JSON")]
    pub args: String,

    /// Output format
    #[arg(long, value_enum, default_value_t = CallFormat::Human)]
    pub format: CallFormat,

    #[command(flatten)]
    pub policy: PolicyArgs,

    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CallFormat {
    /// For people
    Human,
    /// One JSON document (docs/json-report.md)
    Json,
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The remote server, by config name
    #[arg(value_name = "SERVER")]
    pub server: String,

    /// Do not open a browser: print the address, then read the address the browser
    /// ended on from standard input (the callback listener still works too)
    #[arg(long)]
    pub no_browser: bool,

    /// The callback listener's port on 127.0.0.1 [default: any free port]
    #[arg(long, value_name = "PORT")]
    pub callback_port: Option<u16>,

    /// How long to wait for the login, in seconds
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub timeout: u64,
}

#[derive(Debug, Args)]
pub struct RemoteBridgeArgs {
    /// The remote server, by config name
    #[arg(value_name = "SERVER")]
    pub server: String,

    /// The transport the lock pinned (an http entry may be a legacy HTTP+SSE server)
    #[arg(long, value_name = "TRANSPORT")]
    pub transport: Option<String>,

    /// A protocol version a pinned profile used (repeatable)
    #[arg(long = "pinned-version", value_name = "VERSION")]
    pub pinned_versions: Vec<String>,

    /// Largest single message accepted from the server, in bytes
    #[arg(long, value_name = "BYTES", default_value_t = 64 * 1024 * 1024)]
    pub max_message_bytes: usize,
}

#[derive(Debug, Args)]
pub struct LogoutArgs {
    /// The remote server, by config name
    #[arg(value_name = "SERVER")]
    pub server: String,
}

#[derive(Debug, Args)]
pub struct OutdatedArgs {
    /// Servers to check, by lock name [default: every server pinned to an npm or
    /// PyPI package]
    #[arg(value_name = "SERVER")]
    pub servers: Vec<String>,

    /// Output format
    #[arg(long, value_enum, default_value_t = OutdatedFormat::Text)]
    pub format: OutdatedFormat,

    /// The cooldown: propose only releases published at least this long ago (7d,
    /// 36h, 90m; 0 for none) [default: [upgrade] min-release-age of mcp-lock.toml,
    /// else 7d]
    #[arg(long, value_name = "DURATION", value_parser = mcp_lock::servers::package::releases::parse_age)]
    pub min_release_age: Option<std::time::Duration>,

    /// Follow a registry's redirect to another origin; by default only same-origin
    /// redirects are followed
    #[arg(long)]
    pub allow_redirects: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutdatedFormat {
    /// A table for people; colour on a terminal
    Text,
    /// One JSON document (docs/outdated.md)
    Json,
    /// A GitHub-flavoured Markdown table, for pull-request comments and job summaries
    Markdown,
}

#[derive(Debug, Args)]
pub struct ServersArgs {
    /// Output format
    #[arg(long, value_enum, default_value_t = CallFormat::Human)]
    pub format: CallFormat,
}

#[derive(Debug, Args)]
pub struct ProfilesArgs {
    /// Only this profile
    #[arg(value_name = "NAME")]
    pub name: Option<String>,

    /// Output format
    #[arg(long, value_enum, default_value_t = CallFormat::Human)]
    pub format: CallFormat,
}

#[derive(Debug, Args)]
pub struct HashArgs {
    /// Files to read, `-` for standard input [default: standard input]
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Output format
    #[arg(long, value_enum, default_value_t = HashFormat::Text)]
    pub format: HashFormat,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum HashFormat {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Check that the audit log is whole and unaltered: every entry chained to the
    /// one before it, every signed checkpoint valid
    #[command(after_help = "\
Examples:
  mcp-lock audit verify                      the project's log (.mcp-lock/audit.jsonl
                                             beside the lock, and its rotated files)
  mcp-lock audit verify --allowed-signers .mcp-lock/allowed_signers
  mcp-lock audit verify old/audit.1.jsonl old/audit.jsonl --format json

FILEs are checked as one chain, in the order given. The first break is reported by
file and line: edited, deleted, inserted, reordered, unchained, cut_short,
start_missing, bad_signature, unsigned. The chain cannot show entries cut off the
end of the log, nor a log rewritten from its first line: signed checkpoints can
(README, \"The audit log\").
Exit codes: 0 intact, 1 broken (or, with --allowed-signers, a signature missing or
invalid), 2 usage: no log, an unreadable file.")]
    Verify(AuditVerifyArgs),

    /// One summary per guard session: its client, what it was shown and hidden, its
    /// calls and refusals, drift found mid-session
    #[command(after_help = "\
Examples:
  mcp-lock audit show                          every session in the project's log
  mcp-lock audit show --since 2026-12-01       sessions that ended on or after it
  mcp-lock audit show --server deploy --format markdown >> \"$GITHUB_STEP_SUMMARY\"
  mcp-lock audit show --format json | jq '.sessions[].refusals'

Exit codes: 0 shown, 2 usage: no log, an unreadable file.")]
    Show(AuditShowArgs),
}

#[derive(Args, Debug)]
pub struct AuditVerifyArgs {
    /// Log files, oldest first [default: the project's log and its rotated files]
    pub files: Vec<PathBuf>,
    /// An ssh-keygen allowed-signers file: every signed checkpoint must verify
    /// against it, and at least one must be signed
    #[arg(long, value_name = "FILE")]
    pub allowed_signers: Option<PathBuf>,
    /// The namespace checkpoints were signed under
    #[arg(long, default_value = "mcp-lock-audit")]
    pub namespace: String,
    #[arg(long, value_enum, default_value_t = AuditFormat::Text)]
    pub format: AuditFormat,
}

#[derive(Args, Debug)]
pub struct AuditShowArgs {
    /// Log files, oldest first [default: the project's log and its rotated files]
    pub files: Vec<PathBuf>,
    /// Only sessions that ended at or after this time (RFC 3339 in UTC, or a date)
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only this server's sessions
    #[arg(long, value_name = "SERVER")]
    pub server: Option<String>,
    #[arg(long, value_enum, default_value_t = AuditFormat::Text)]
    pub format: AuditFormat,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditFormat {
    Text,
    Json,
    Markdown,
}
