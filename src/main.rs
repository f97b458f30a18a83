//! The `mcp-lock` binary: parse arguments, run a command, map the result to an exit code.

mod cli;
mod commands;

use clap::Parser;
use mcp_lock::exit_codes::ExitCode;

fn main() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    match cli.color {
        cli::ColorWhen::Auto => {}
        cli::ColorWhen::Always => anstream::ColorChoice::Always.write_global(),
        cli::ColorWhen::Never => anstream::ColorChoice::Never.write_global(),
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            anstream::eprintln!("error: cannot start the async runtime: {e}");
            return exit(ExitCode::Usage);
        }
    };
    let stopped = if matches!(cli.command, cli::Command::Guard(_)) {
        "interrupted: the server was stopped"
    } else {
        "interrupted: nothing was written"
    };
    let code = runtime.block_on(async {
        tokio::select! {
            result = commands::run(cli) => match result {
                Ok(code) => code,
                Err(e) => {
                    commands::error(&format!("{e:#}"));
                    ExitCode::Usage
                }
            },
            _ = interrupted() => {
                mcp_lock::client::stdio::kill_all_servers();
                anstream::eprintln!("{stopped}");
                // A prompt may still be blocked reading the terminal; do not wait for it.
                std::process::exit(ExitCode::Interrupted.into());
            }
        }
    });
    exit(code)
}

async fn interrupted() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
        _ = hup.recv() => {}
    }
}

fn exit(code: ExitCode) -> std::process::ExitCode {
    std::process::ExitCode::from(i32::from(code) as u8)
}
