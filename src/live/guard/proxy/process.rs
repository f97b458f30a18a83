//! The server as a child process in a group of its own, and shutdown that leaves
//! nothing running.

use super::*;

/// The server a session speaks to, as a pair of byte streams: the guard writes the
/// client's lines for the server to `input` and reads the server's lines from
/// `output`. A server the guard started is also a [`ServerProcess`], stopped when the
/// session ends; one reached another way (an in-process bridge to a remote server,
/// feeding a pipe or socket pair) has none, and ends when its `output` closes.
pub struct Upstream {
    pub input: OwnedFd,
    pub output: OwnedFd,
    pub process: Option<ServerProcess>,
}

/// A server the guard started: its process group, for shutdown.
pub struct ServerProcess {
    child: Child,
    pgid: i32,
    watchdog: Option<Watchdog>,
}

impl Upstream {
    /// Starts the server of `launch` in a process group of its own. With secrets to
    /// hide, its stderr passes through the guard, line by line, redacted; without, it
    /// goes straight to the client's.
    pub fn spawn(launch: &Launch, secrets: &crate::base::secrets::Secrets) -> io::Result<Upstream> {
        let mut command = Command::new(&launch.command);
        crate::servers::config::environ::set_environment(
            &mut command,
            launch.inherit.as_ref(),
            &launch.env,
        );
        command
            .args(&launch.args)
            .current_dir(&launch.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if secrets.is_empty() {
                Stdio::inherit()
            } else {
                Stdio::piped()
            });
        // The thread that spawns lives for the whole session, as PR_SET_PDEATHSIG needs.
        let watchdog = prepare_server(&mut command);
        let (mut child, pgid, watchdog) =
            start_server(|| command.spawn(), |c| Some(c.id()), watchdog)?;
        let input = OwnedFd::from(child.stdin.take().expect("stdin is piped"));
        let output = OwnedFd::from(child.stdout.take().expect("stdout is piped"));
        if let Some(server_err) = child.stderr.take() {
            let secrets = secrets.clone();
            std::thread::spawn(move || pass_stderr(server_err, &secrets));
        }
        Ok(Upstream {
            input,
            output,
            process: Some(ServerProcess {
                child,
                pgid,
                watchdog,
            }),
        })
    }
}

impl ServerProcess {
    /// Ends the whole group: `grace` for the leader to exit by itself first.
    pub(super) fn stop(&mut self, grace: Duration) {
        stop(&mut self.child, self.pgid, grace, &mut self.watchdog);
    }

    /// How the leader exited, waiting up to `limit`, without reaping it.
    pub(super) fn exit_within(&self, limit: Duration) -> Option<String> {
        wait_exit(self.pgid, limit)
    }
}

/// A file size limit makes an audit write fail (and what it decided be refused)
/// instead of killing the guard mid-session.
pub(super) fn ignore_file_size_signal() {
    // SAFETY: setting a signal's disposition to ignore shares no memory.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Whether the client has closed its end of our stdin.
pub(super) fn client_hung_up() -> bool {
    let mut fd = libc::pollfd {
        fd: 0,
        events: libc::POLLIN | libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one pollfd, no timeout.
    let ready = unsafe { libc::poll(&mut fd, 1, 0) };
    ready > 0 && fd.revents & (libc::POLLHUP | libc::POLLRDHUP | libc::POLLERR) != 0
}

/// Ends the server's whole group: wait `grace` for the leader to exit by itself, then
/// SIGTERM, then SIGKILL, and reap it.
pub(super) fn stop(child: &mut Child, pgid: i32, grace: Duration, watchdog: &mut Option<Watchdog>) {
    if wait_exit(pgid, grace).is_none() {
        signal_group(pgid, libc::SIGTERM);
        wait_exit(pgid, TERM_GRACE);
    }
    // Sweep the group even after a clean exit: grandchildren may outlive the leader.
    // The leader is alive or an unreaped zombie here, so the group id is still ours.
    signal_group(pgid, libc::SIGKILL);
    // Dismissed while the group id is still ours, before the leader is reaped.
    if let Some(watchdog) = watchdog.take() {
        watchdog.dismiss();
    }
    let _ = child.wait();
    unregister(pgid);
}

/// Waits up to `limit` for the leader to exit, without reaping it.
pub(super) fn wait_exit(pgid: i32, limit: Duration) -> Option<String> {
    let until = Instant::now() + limit;
    loop {
        if let Some(description) = peek_exit(pgid) {
            return Some(description);
        }
        if Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Copies the server's stderr to the guard's, with the server's secrets redacted. A
/// line is passed on whole, or, when longer than [`STDERR_LINE_BYTES`], in pieces of
/// that size; a secret cut by a piece boundary is still replaced whole (see
/// [`PieceRedactor`](crate::base::secrets::PieceRedactor)). The bytes are passed on as they
/// came (as the server's own stderr would be), but for the secrets; the guard's own
/// lines are not written inside a line passed on in pieces (see
/// [`server_mid_line`](super::super::stderr::server_mid_line)).
pub(super) fn pass_stderr(
    server_err: std::process::ChildStderr,
    secrets: &crate::base::secrets::Secrets,
) {
    use std::io::{BufRead, Read};
    let mut reader = io::BufReader::new(server_err);
    let mut redactor = crate::base::secrets::PieceRedactor::new(secrets);
    let (mut piece, mut clean) = (Vec::new(), Vec::new());
    loop {
        piece.clear();
        clean.clear();
        let read = (&mut reader)
            .take(STDERR_LINE_BYTES as u64)
            .read_until(b'\n', &mut piece);
        let ended = matches!(read, Ok(0) | Err(_));
        let line_done = ended || piece.last() == Some(&b'\n');
        redactor.push(&piece, line_done, &mut clean);
        // The guard's own lines wait for a line passed on in pieces to end.
        let mut err = io::stderr().lock();
        let failed = err.write_all(&clean).is_err();
        super::super::stderr::server_mid_line(!line_done && !failed);
        drop(err);
        if failed || ended {
            return;
        }
    }
}

/// The longest piece of a server's stderr line redacted at once.
pub(super) const STDERR_LINE_BYTES: usize = 64 * 1024;
