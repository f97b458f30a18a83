//! The command line, clap derive only. Everything it does lives in the library.

use std::path::PathBuf;

mod args;
mod help;

use clap::{Parser, Subcommand, ValueEnum};

pub use args::*;

#[derive(Debug, Parser)]
#[command(name = "mcp-lock", version, about = help::ABOUT, after_help = help::top())]
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
    #[command(after_help = help::update())]
    Update(UpdateArgs),

    /// Check live servers against mcp.lock; exit non-zero on drift
    #[command(after_help = help::verify())]
    Verify(VerifyArgs),

    /// Screen every live definition of the project's servers for poisoning: text
    /// that instructs the model, invisible characters, shadowing, exfiltration
    #[command(after_help = help::scan())]
    Scan(ScanArgs),

    /// Show what changed, classified: between the lock and live servers, or between
    /// two lock files
    #[command(after_help = help::diff())]
    Diff(DiffArgs),

    /// Show which pinned npm and PyPI packages have newer releases, and which of them
    /// the cooldown (min-release-age) still holds back
    #[command(after_help = help::outdated())]
    Outdated(OutdatedArgs),

    /// Move npm and PyPI servers to a newer release, after reviewing its tools
    #[command(after_help = help::upgrade())]
    Upgrade(UpgradeArgs),

    /// Run a server (stdio, Streamable HTTP or SSE) behind a proxy that enforces the lock
    /// for a whole agent session
    #[command(after_help = help::guard())]
    Guard(GuardArgs),

    /// Rewrite a client config so its servers launch through `mcp-lock guard`
    #[command(after_help = help::wrap())]
    Wrap(WrapArgs),

    /// Undo `mcp-lock wrap`: servers launch directly again
    #[command(after_help = help::unwrap())]
    Unwrap(WrapArgs),

    /// Would a call an agent already planned still be valid, and mean the same, under
    /// the live contract?
    #[command(
        name = "check-call",
        after_help = help::check_call()
    )]
    CheckCall(CheckCallArgs),

    /// Judge a listing a client already received (from the agent's own session)
    /// against mcp.lock, as verify would, without connecting
    #[command(
        name = "check-listing",
        after_help = help::check_listing()
    )]
    CheckListing(CheckListingArgs),

    /// Log in to a remote server that asks for OAuth, and cache its tokens
    #[command(after_help = help::login())]
    Login(LoginArgs),

    /// Forget the tokens `mcp-lock login` cached for a server
    #[command(after_help = help::logout())]
    Logout(LogoutArgs),

    /// A remote server as a stdio stream, for `mcp-lock guard` (internal)
    #[command(name = "remote-bridge", hide = true)]
    RemoteBridge(RemoteBridgeArgs),

    /// List every server the client configs define: where, how, under which client
    /// profiles, and whether the lock pins it
    #[command(after_help = help::servers())]
    Servers(ServersArgs),

    /// Show the client profiles: what mcp-lock sends when it connects as each host
    #[command(after_help = help::profiles())]
    Profiles(ProfilesArgs),

    /// Print the hash of tool definitions: a definition, a listing or a tools/list result
    #[command(after_help = help::hash())]
    Hash(HashArgs),

    /// Check the guard's audit log (its chain and signed checkpoints), or show what
    /// each session did
    #[command(subcommand, after_help = help::audit())]
    Audit(AuditCommand),

    /// Answer a coding agent's hooks from the lock: Claude Code's SessionStart verifies
    /// the project's servers once, and PreToolUse refuses calls the lock does not allow
    #[command(after_help = help::hook())]
    Hook {
        /// The agent whose hook this is
        #[arg(value_enum)]
        host: HookHost,
    },

    /// Print a shell completion script
    #[command(after_help = help::completions())]
    Completions {
        /// The shell to complete for
        shell: clap_complete::Shell,
    },

    /// Print the man page (roff), generated from these definitions
    #[command(after_help = help::man())]
    Man {
        /// A subcommand's own page (mcp-lock-SUBCOMMAND(1)) [default: mcp-lock(1)]
        #[arg(value_name = "SUBCOMMAND")]
        subcommand: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Check that the audit log is whole and unaltered: every entry chained to the
    /// one before it, every signed checkpoint valid
    #[command(after_help = help::audit_verify())]
    Verify(AuditVerifyArgs),

    /// One summary per guard session: its client, what it was shown and hidden, its
    /// calls and refusals, drift found mid-session
    #[command(after_help = help::audit_show())]
    Show(AuditShowArgs),
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
