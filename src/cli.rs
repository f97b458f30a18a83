//! The command line, clap derive only. Everything it does lives in the library.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const ABOUT: &str = "Pin the tool definitions of your MCP servers in mcp.lock, verify them in CI, approve every change";

const EXAMPLES: &str = "\
Examples:
  mcp-lock update              pin every server in .mcp.json, asking before each change
  mcp-lock verify              check live servers against mcp.lock (CI, agent start-up)
  mcp-lock verify github --format json
  mcp-lock hash tools.json     hash tool definitions the way the lock does

Exit codes: 0 converged, 1 stale (drift), 2 usage/config/lock error,
3 a server could not be verified, 4 changes need approval (no terminal), 130 interrupted.";

#[derive(Debug, Parser)]
#[command(name = "mcp-lock", version, about = ABOUT, after_help = EXAMPLES)]
pub struct Cli {
    /// Read servers from this client config (.mcp.json, .vscode/mcp.json, .cursor/mcp.json
    /// or Claude Desktop's) instead of discovering them in the current directory
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// The lock file [default: mcp.lock in the current directory]
    #[arg(long, global = true, value_name = "PATH")]
    pub lock: Option<PathBuf>,

    /// When to use colour
    #[arg(long, global = true, value_enum, default_value_t = ColorWhen::Auto, value_name = "WHEN")]
    pub color: ColorWhen,

    #[command(subcommand)]
    pub command: Command,
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
  mcp-lock update --protocol 2025-11-25
                                  pin what an agent on 2025-11-25 sees

At each change: y accepts it, n keeps the old pin, a accepts this and all remaining,
q rejects this and all remaining (changes already accepted are still written).
Without a terminal and without --yes nothing is written and the exit code is 4.")]
    Update(UpdateArgs),

    /// Check live servers against mcp.lock; exit non-zero on drift
    #[command(after_help = "\
Examples:
  mcp-lock verify                       every server in the config
  mcp-lock verify github memory         only these
  mcp-lock verify --format json > report.json

Verdicts: converged (matches the lock), stale (differs), incomplete (listing did
not finish), unverifiable (could not connect). Exit codes: 0 all converged,
1 any stale, 3 none stale but some incomplete or unverifiable, 2 usage, config
or lock error.")]
    Verify(VerifyArgs),

    /// Print the hash of tool definitions: a definition, a listing or a tools/list result
    #[command(after_help = "\
Examples:
  mcp-lock hash tool.json             one definition (an object)
  mcp-lock hash page1.json page2.json a listing over several pages
  curl ... | mcp-lock hash -          a whole tools/list result or JSON-RPC answer

Prints each tool's hash then the set hash (tool definition hash, version 1:
SHA-256 of the RFC 8785 canonical form). Exit codes: 0 hashed, 1 some definition
has no hash (repeated member name, no name), 2 unreadable input.")]
    Hash(HashArgs),

    /// Print a shell completion script
    #[command(after_help = "\
Examples:
  mcp-lock completions bash > ~/.local/share/bash-completion/completions/mcp-lock
  mcp-lock completions zsh > ~/.zfunc/_mcp-lock")]
    Completions {
        /// The shell to complete for
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Args)]
pub struct ConnectArgs {
    /// Longest time for one server, from start to the last page, in seconds
    #[arg(long, value_name = "SECS", default_value_t = 120.0)]
    pub timeout: f64,

    /// Longest wait for any one answer from a server, in seconds
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub request_timeout: f64,

    /// Servers contacted at once
    #[arg(long, short = 'j', value_name = "N", default_value_t = 16)]
    pub jobs: usize,

    /// A listing with more pages than this stops as incomplete
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub max_pages: usize,

    /// A listing with more tools than this stops as incomplete
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub max_tools: usize,

    /// Largest single message (stdio line, HTTP body or SSE event) accepted from a
    /// server, in bytes
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_message_bytes: usize,

    /// How long to wait for an answer to the 2026-07-28 `server/discover` probe before
    /// taking a server for a handshake-era one, in seconds
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub probe_timeout: f64,

    /// Follow HTTP redirects (and legacy SSE endpoints) to another origin; by default
    /// only same-origin redirects are followed
    #[arg(long)]
    pub allow_redirects: bool,
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

    /// Pin with this protocol version instead of the newest the server speaks (e.g.
    /// 2025-11-25, the version your agent uses); verify then asks for the same
    #[arg(long, value_name = "VERSION", value_parser = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"])]
    pub protocol: Option<String>,

    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Servers to verify, by config name [default: all]
    #[arg(value_name = "SERVER")]
    pub servers: Vec<String>,

    /// Output format
    #[arg(long, value_enum, default_value_t = VerifyFormat::Human)]
    pub format: VerifyFormat,

    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum VerifyFormat {
    Human,
    Json,
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
