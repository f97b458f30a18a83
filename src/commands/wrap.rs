//! `mcp-lock wrap` / `unwrap`: placeholder until implemented.

use mcp_lock::exit_codes::ExitCode;

use super::Workspace;
use crate::cli::WrapArgs;

pub enum Direction {
    Wrap,
    Unwrap,
}

pub fn run(_ws: &Workspace, _args: WrapArgs, _direction: Direction) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
