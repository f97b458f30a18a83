//! The `mcp-lock` binary: parse arguments, run a command, map the result to an exit code.

mod cli;
mod commands;

use clap::Parser;
use mcp_lock::verdict::exit_codes::ExitCode;

fn main() -> std::process::ExitCode {
    one_allocator_arena();
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
    let stopped = match cli.command {
        cli::Command::Guard(_) => "interrupted: the server was stopped",
        // The guard ends its bridge this way when a call is still open as the agent
        // leaves: nothing to write, and nothing lost.
        cli::Command::RemoteBridge(_) => "the remote bridge was stopped",
        _ => "interrupted: nothing was written",
    };
    let terminal: &'static TerminalMode = Box::leak(Box::new(TerminalMode::save()));
    watch_signals(stopped, terminal);
    let is_hook = matches!(cli.command, cli::Command::Hook { .. });
    let code = runtime.block_on(async {
        match commands::run(cli).await {
            Ok(code) => code,
            // A hook that fails must still answer: Claude Code lets a call through on
            // a hook's error.
            Err(e) if is_hook && !e.is::<commands::Interrupted>() => {
                let line = one_line(&e);
                commands::error(&line);
                commands::hook::unjudged(&line).await;
                ExitCode::Success
            }
            // Ctrl-C at a prompt: the prompt read it as a key and raised SIGINT, which
            // may not have reached the watcher yet. Either way it is an interrupt.
            Err(e) if e.is::<commands::Interrupted>() => stop(stopped, terminal),
            Err(e) => {
                commands::error(&one_line(&e));
                ExitCode::Usage
            }
        }
    });
    exit(code)
}

/// Ends the run on SIGINT, SIGTERM or SIGHUP, from a thread and runtime of its own:
/// the command may be busy or blocked where no await lets the signal be seen (reading
/// a large config, or one that is a pipe), and the runtime's workers may all be busy.
/// The handlers are installed before this returns, so a signal from now on is seen.
fn watch_signals(stopped: &'static str, terminal: &'static TerminalMode) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(watcher) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let streams = {
        let _in_runtime = watcher.enter();
        (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        )
    };
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = streams else {
        return;
    };
    let spawned = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            watcher.block_on(async {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                    _ = hup.recv() => {}
                }
            });
            stop(stopped, terminal)
        });
    if spawned.is_err() {
        // No thread to answer the handlers: let the signals end the run as they end
        // any process, rather than be caught and ignored.
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: signal(2) restoring the default action; no handler runs.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
    }
}

/// An error and its causes, each said once: a typed error whose message already ends
/// in its source (`cannot read X: No such file or directory`) is not followed by that
/// source again, as `{:#}` would.
fn one_line(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let part = cause.to_string();
        if part.is_empty() || text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

/// Ends an interrupted run: the servers are killed and `message` is the last thing
/// printed. Their tasks report the kill as failures, so output is cut off first.
fn stop(message: &str, terminal: &TerminalMode) -> ! {
    commands::hide_progress();
    let saved = silence_output();
    mcp_lock::servers::client::stdio::kill_all_servers();
    terminal.restore();
    let line = format!("{message}\n");
    // SAFETY: write(2) from a live buffer of the given length to a descriptor we own.
    unsafe {
        libc::write(saved, line.as_ptr().cast(), line.len());
    }
    // A prompt may still be blocked reading the terminal; do not wait for it.
    std::process::exit(ExitCode::Interrupted.into());
}

/// Points stdout and stderr at /dev/null, so nothing any thread prints from now on is
/// seen, and returns a descriptor for the real stderr. The std locks are taken first
/// (and kept) where they can be within 200 ms: a line being printed is finished, not
/// cut, unless its writer is stuck.
fn silence_output() -> i32 {
    // A thread blocked writing to a pipe nobody reads (the guard's, say) holds its
    // lock for ever: wait for the locks briefly, then silence the output without them.
    let (taken, locked) = std::sync::mpsc::channel();
    let locker = std::thread::Builder::new().spawn(move || {
        std::mem::forget(std::io::stdout().lock());
        std::mem::forget(std::io::stderr().lock());
        let _ = taken.send(());
    });
    if locker.is_ok() {
        let _ = locked.recv_timeout(std::time::Duration::from_millis(200));
    }
    // SAFETY: dup, open and dup2 on the process's own standard descriptors.
    unsafe {
        let saved = libc::dup(2);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
        if saved >= 0 && null >= 0 {
            libc::dup2(null, 1);
            libc::dup2(null, 2);
            return saved;
        }
        2
    }
}

/// The terminal's settings at start, put back on interrupt: a prompt waiting for a
/// key holds the terminal in raw mode, and a signal can end the run right there.
struct TerminalMode(Option<libc::termios>);

impl TerminalMode {
    fn save() -> Self {
        // SAFETY: tcgetattr fills a zeroed termios for descriptor 0, if it is a terminal.
        unsafe {
            let mut mode: libc::termios = std::mem::zeroed();
            let ok = libc::isatty(0) == 1 && libc::tcgetattr(0, &mut mode) == 0;
            TerminalMode(ok.then_some(mode))
        }
    }

    fn restore(&self) {
        if let Some(mode) = &self.0 {
            // SAFETY: tcsetattr with settings read from the same descriptor.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, mode);
            }
        }
    }
}

fn exit(code: ExitCode) -> std::process::ExitCode {
    std::process::ExitCode::from(i32::from(code) as u8)
}

/// One glibc malloc arena for every thread, set before any thread starts. Memory
/// here moves between threads (a large lock's definitions are read on a thread of
/// their own while the listing is read on the runtime's; the guard's two directions
/// hand messages across), and with an arena per thread the memory one frees is not
/// reused by the others: at a 10,000-tool verify the peak was 74 MB with an arena
/// per thread and 60 MB with one. Small blocks still come from each thread's own
/// cache, without the arena's lock.
fn one_allocator_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; nothing else runs yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}
