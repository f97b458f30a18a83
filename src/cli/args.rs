//! The arguments and options of each subcommand.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use mcp_lock::verdict::policy::{Rule, parse_accept_rule, parse_rule};

use super::help::{accept_help, class_help};
use super::{MIN_MESSAGE_BYTES, at_least};

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

    /// Accept changes of these classes without asking (comma-separated; every class
    /// but the screening ones); adds to the policy file's `update.accept`
    #[arg(long, value_name = "CLASSES", value_delimiter = ',', value_parser = parse_accept_rule,
          long_help = accept_help("Accept changes of these classes without asking (comma-separated); adds to the policy file's `update.accept`"))]
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
    #[arg(long, value_name = "CLASSES", value_delimiter = ',', value_parser = parse_accept_rule,
          long_help = accept_help("Accept changes of these classes without asking (comma-separated, as `update --accept`; `package-changed` accepts the package move)"))]
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
    #[arg(long, value_name = "CLASSES", value_delimiter = ',', value_parser = parse_rule, long_help = class_help("Fail the run on changes of these classes"))]
    pub fail: Vec<Rule>,

    /// Only warn about changes of these classes
    #[arg(long, value_name = "CLASSES", value_delimiter = ',', value_parser = parse_rule, long_help = class_help("Only warn about changes of these classes"))]
    pub warn: Vec<Rule>,

    /// Report changes of these classes without failing or warning
    #[arg(long, value_name = "CLASSES", value_delimiter = ',', value_parser = parse_rule, long_help = class_help("Report changes of these classes without failing or warning"))]
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
