//! `mcp-lock check-call`: placeholder until implemented.

use mcp_lock::exit_codes::ExitCode;

use super::Workspace;
use crate::cli::CheckCallArgs;

pub async fn run(_ws: &Workspace, _args: CheckCallArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
