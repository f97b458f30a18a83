//! The stdio transport: a child process speaking newline-delimited JSON-RPC.
//!
//! The child gets a process group of its own so that shutdown reaches everything it
//! started (`npx` and `uvx` run the real server as a grandchild). Every live group is
//! registered so an interrupted mcp-lock can still end them all.

use std::collections::{HashSet, VecDeque};
use std::io;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::{Instant, timeout_at};

use super::{Counters, RpcError, Transport, notification, request_message, take_payload};
use crate::base::json::Json;
use crate::base::secrets::Secrets;
use crate::servers::config::ResolvedStdio;

/// How many trailing stderr lines are kept for error messages.
const STDERR_LINES: usize = 20;
/// Longest stderr line kept, in characters.
const STDERR_LINE_CHARS: usize = 400;
/// Longest stderr line read whole (then redacted and cut); the rest of a longer
/// line is dropped.
const STDERR_LINE_BYTES: usize = 16 * 1024;
/// How long a server gets to exit after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_millis(1000);

static LIVE_GROUPS: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

/// The registered process groups, which [`kill_all_servers`] ends.
fn live_groups() -> std::sync::MutexGuard<'static, Option<HashSet<i32>>> {
    LIVE_GROUPS.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn unregister(pgid: i32) {
    let mut groups = live_groups();
    if let Some(set) = groups.as_mut() {
        set.remove(&pgid);
    }
}

pub(crate) fn signal_group(pgid: i32, signal: i32) {
    // kill(0) or kill(-1) would reach our own group or every process we may signal.
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is shared.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

/// How the child exited, if it has, without reaping it: while it is an unreaped
/// zombie its pid, which is also its group id, cannot be given to another process, so
/// signalling the group afterwards cannot reach a stranger.
pub(crate) fn peek_exit(pid: i32) -> Option<String> {
    // SAFETY: waitid with WNOWAIT only reads the child's state into a zeroed siginfo_t.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let rc = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        if rc != 0 {
            // Already reaped (ECHILD): it has exited.
            return Some("server exited".into());
        }
        if info.si_pid() == 0 {
            return None;
        }
        Some(match info.si_code {
            libc::CLD_EXITED => format!("server exited (exit status {})", info.si_status()),
            _ => format!("server exited (killed by signal {})", info.si_status()),
        })
    }
}

/// A small process of its own that kills a server's group if mcp-lock dies without
/// ending it (SIGKILL, a crash): the kernel's parent-death signal reaches only the
/// server's leader, not what it started (`npx` runs node as a grandchild, and a
/// grandchild may ignore SIGTERM and a closed stdin).
///
/// It lives in a session (and so a process group) of its own, entered before the
/// server starts: a `kill -9` of mcp-lock's whole group must not take the watchdog
/// with it. The server's own process tells it the group id (see
/// [`Watchdog::tell_in_child`]) before it runs anything, so no moment exists in which
/// the server runs and the watchdog does not know it. A process that leaves the
/// server's group (`setsid()`, `setpgid()`) is beyond its reach.
pub(crate) struct Watchdog {
    pid: libc::pid_t,
    tell: std::os::fd::OwnedFd,
}

impl Watchdog {
    /// Forks the watchdog and waits until it is in a session of its own; None if it
    /// cannot be started (the server is then protected by its parent-death signal
    /// only).
    pub(crate) fn start() -> Option<Self> {
        use std::os::fd::FromRawFd;
        let mut tell = [0i32; 2];
        let mut ready = [0i32; 2];
        // SAFETY: after fork the child makes only async-signal-safe calls (setsid,
        // write, close, dup2, signal, read, kill, _exit), as a fork of a threaded
        // process must. The parent only closes and reads descriptors it created.
        unsafe {
            if libc::pipe2(tell.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
                return None;
            }
            if libc::pipe2(ready.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
                libc::close(tell[0]);
                libc::close(tell[1]);
                return None;
            }
            let pid = libc::fork();
            if pid < 0 {
                for fd in [tell[0], tell[1], ready[0], ready[1]] {
                    libc::close(fd);
                }
                return None;
            }
            if pid == 0 {
                // Out of mcp-lock's group and session: whatever signals those reach,
                // the watchdog outlives mcp-lock long enough to end the server.
                libc::setsid();
                let byte = 1u8;
                libc::write(ready[1], (&byte as *const u8).cast(), 1);
                // Hold nothing else open: the client's and the server's pipes must
                // close when mcp-lock closes them.
                if tell[0] != 3 {
                    libc::dup2(tell[0], 3);
                }
                if libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32) != 0 {
                    for fd in 4..4096 {
                        libc::close(fd);
                    }
                }
                for fd in 0..3 {
                    libc::close(fd);
                }
                // The terminal's signals are mcp-lock's to handle.
                for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
                    libc::signal(sig, libc::SIG_IGN);
                }
                // Four bytes of group id from the server's process, then one byte
                // from mcp-lock when it ended the group itself; end of file after
                // only the group id: mcp-lock is gone without saying goodbye.
                let mut got = [0u8; 5];
                let mut n = 0usize;
                while n < got.len() {
                    let r = libc::read(3, got.as_mut_ptr().add(n).cast(), got.len() - n);
                    if r < 0 && *libc::__errno_location() == libc::EINTR {
                        continue;
                    }
                    if r <= 0 {
                        break;
                    }
                    n += r as usize;
                }
                let pgid = i32::from_ne_bytes([got[0], got[1], got[2], got[3]]);
                if n == 4 && pgid > 1 {
                    libc::kill(-pgid, libc::SIGKILL);
                }
                libc::_exit(0);
            }
            libc::close(tell[0]);
            libc::close(ready[1]);
            // Wait until it has left mcp-lock's session (or died trying).
            let mut byte = 0u8;
            while libc::read(ready[0], (&mut byte as *mut u8).cast(), 1) < 0
                && *libc::__errno_location() == libc::EINTR
            {}
            libc::close(ready[0]);
            Some(Watchdog {
                pid,
                tell: std::os::fd::OwnedFd::from_raw_fd(tell[1]),
            })
        }
    }

    /// The descriptor the server's process writes its group id to, from
    /// [`Watchdog::tell_in_child`]. It is close-on-exec: the server never holds it.
    pub(crate) fn fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.tell.as_raw_fd()
    }

    /// Called in the server's process between fork and exec (after it made its own
    /// process group): tells the watchdog the group to end.
    ///
    /// # Safety
    /// Only async-signal-safe calls; `fd` is [`Watchdog::fd`].
    pub(crate) unsafe fn tell_in_child(fd: i32) {
        // SAFETY: getpid and write are async-signal-safe; four bytes into a pipe are
        // written whole.
        unsafe {
            let pgid = libc::getpid().to_ne_bytes();
            libc::write(fd, pgid.as_ptr().cast(), pgid.len());
        }
    }

    /// mcp-lock ended the group itself (or never started the server): the watchdog
    /// leaves without killing. Call it while the group id is still ours (before the
    /// leader is reaped).
    pub(crate) fn dismiss(self) {
        use std::io::Write;
        let _ = std::fs::File::from(self.tell).write_all(b"x");
        // SAFETY: waits for this process's own child.
        unsafe {
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
    }
}

/// Kills every server process group still running. For an interrupted run: the
/// children live in groups of their own, so the terminal's Ctrl-C does not reach them.
pub fn kill_all_servers() {
    let groups = live_groups();
    for pgid in groups.iter().flatten() {
        signal_group(*pgid, libc::SIGKILL);
    }
}

/// Makes `command` start a server the way every server is started: in a process
/// group of its own, killed by the kernel if the process that started it dies, with
/// SIGXFSZ at its default, and watched by a [`Watchdog`] that ends its group however
/// mcp-lock dies. The watchdog is returned for [`start_server`].
pub(crate) fn prepare_server(command: &mut std::process::Command) -> Option<Watchdog> {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
    // Started first, so it is ready before anything of the server runs; the server's
    // process tells it its group.
    let watchdog = Watchdog::start();
    let tell = watchdog.as_ref().map(Watchdog::fd);
    // SAFETY: prctl, signal and the watchdog's write are async-signal-safe and touch
    // no memory of the parent. PR_SET_PDEATHSIG fires when the spawning thread ends,
    // so that thread must live as long as the server.
    unsafe {
        command.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
            if let Some(fd) = tell {
                Watchdog::tell_in_child(fd);
            }
            Ok(())
        });
    }
    watchdog
}

/// Spawns a server [`prepare_server`] prepared and registers its group for
/// [`kill_all_servers`], under the lock that takes, so an interrupt cannot fall
/// between the spawn and the registration. Returns the child, its group and the
/// watchdog (dismissed if the spawn failed).
pub(crate) fn start_server<C>(
    spawn: impl FnOnce() -> io::Result<C>,
    pid: impl Fn(&C) -> Option<u32>,
    watchdog: Option<Watchdog>,
) -> io::Result<(C, i32, Option<Watchdog>)> {
    let mut groups = live_groups();
    let child = match spawn() {
        Ok(child) => child,
        Err(e) => {
            if let Some(watchdog) = watchdog {
                watchdog.dismiss();
            }
            return Err(e);
        }
    };
    let pgid = pid(&child).map_or(0, |id| id as i32);
    groups.get_or_insert_with(HashSet::new).insert(pgid);
    Ok((child, pgid, watchdog))
}

/// A running stdio server.
pub struct StdioConnection {
    child: Child,
    pgid: i32,
    stdin: Option<ChildStdin>,
    stdout: LineReader,
    stderr: Arc<Mutex<VecDeque<String>>>,
    stderr_task: tokio::task::JoinHandle<()>,
    next_id: i64,
    counters: Counters,
    pub(crate) answers: super::Answers,
    max_message_bytes: usize,
    /// Ends the server's group if mcp-lock dies without doing so.
    watchdog: Option<Watchdog>,
}

impl StdioConnection {
    /// Starts the server in a process group of its own.
    pub fn spawn(resolved: &ResolvedStdio, max_message_bytes: usize) -> io::Result<Self> {
        let mut command = Command::new(&resolved.command);
        crate::servers::config::environ::set_environment(
            command.as_std_mut(),
            resolved.inherit.as_ref(),
            &resolved.env,
        );
        command
            .args(&resolved.args)
            .current_dir(&resolved.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let watchdog = prepare_server(command.as_std_mut());
        let (mut child, pgid, watchdog) = start_server(|| command.spawn(), Child::id, watchdog)?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr_pipe = child.stderr.take().expect("stderr is piped");
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let stderr_task = tokio::spawn(keep_stderr_tail(
            stderr_pipe,
            stderr.clone(),
            resolved.secrets.clone(),
        ));
        Ok(StdioConnection {
            child,
            pgid,
            stdin,
            stdout: LineReader::new(stdout, max_message_bytes),
            stderr,
            stderr_task,
            next_id: 1,
            counters: Counters::default(),
            answers: super::Answers::default(),
            max_message_bytes,
            watchdog,
        })
    }

    async fn write(&mut self, message: &Value, deadline: Instant) -> Result<(), RpcError> {
        let mut line = serde_json::to_vec(message).expect("a Value always serializes");
        line.push(b'\n');
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(RpcError::Closed("stdin already closed".into()));
        };
        let write = async {
            stdin.write_all(&line).await?;
            stdin.flush().await
        };
        match timeout_at(deadline, write).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(RpcError::Closed(self.exit_description().await)),
            // Only a full pipe blocks a write: the server has stopped reading its
            // input, which "no answer" would not say.
            Err(_) => Err(RpcError::Io(format!(
                "the server stopped reading its input (a {}-byte write was still blocked at the deadline)",
                line.len()
            ))),
        }
    }

    async fn exit_description(&mut self) -> String {
        // The pipe closing and the exit are not simultaneous; give the exit a moment.
        match self.exit_within(Duration::from_millis(200)).await {
            Some(description) => description,
            None => "server closed its output".into(),
        }
    }

    /// Waits up to `limit` for the server to exit, without reaping it. Wakes when it
    /// exits (a pidfd), not at the next tick of a timer.
    async fn exit_within(&self, limit: Duration) -> Option<String> {
        if let Some(description) = peek_exit(self.pgid) {
            return Some(description);
        }
        let until = Instant::now() + limit;
        if let Some(pidfd) = PidFd::open(self.pgid) {
            let waited = tokio::task::spawn_blocking(move || pidfd.wait_readable(limit)).await;
            if matches!(waited, Ok(true)) {
                return peek_exit(self.pgid);
            }
            if waited.is_ok() {
                return None;
            }
        }
        loop {
            if let Some(description) = peek_exit(self.pgid) {
                return Some(description);
            }
            if Instant::now() >= until {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The server's last stderr lines; still filling until shutdown returns.
    pub fn stderr_tail_handle(&self) -> Arc<Mutex<VecDeque<String>>> {
        self.stderr.clone()
    }

    /// Closes stdin and sends SIGTERM at once (a server that has only listed has
    /// nothing to save, so no grace is waited first), then SIGKILL to the whole group
    /// if the leader has not exited within [`TERM_GRACE`].
    pub async fn shutdown(mut self) -> Option<ExitStatus> {
        drop(self.stdin.take());
        if peek_exit(self.pgid).is_none() {
            signal_group(self.pgid, libc::SIGTERM);
            self.exit_within(TERM_GRACE).await;
        }
        // Sweep the group even after a clean exit: grandchildren may outlive the leader.
        // The leader is alive or an unreaped zombie here, so the group id is still ours.
        signal_group(self.pgid, libc::SIGKILL);
        // Dismissed while the group id is still ours, before the leader is reaped.
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.dismiss();
        }
        let status = self.child.wait().await.ok();
        unregister(self.pgid);
        // Let the stderr reader take what the dying server wrote last.
        let _ = tokio::time::timeout(Duration::from_millis(200), &mut self.stderr_task).await;
        status
    }
}

/// A pidfd (Linux 5.3+): readable once the process has exited, reaped or not.
struct PidFd(std::os::fd::OwnedFd);

impl PidFd {
    fn open(pid: i32) -> Option<PidFd> {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return None;
        }
        // SAFETY: the fd was just opened and is owned by nothing else.
        Some(PidFd(unsafe {
            std::os::fd::OwnedFd::from_raw_fd(fd as i32)
        }))
    }

    /// Whether the process exits within `limit`.
    fn wait_readable(&self, limit: Duration) -> bool {
        use std::os::fd::AsRawFd;
        let until = std::time::Instant::now() + limit;
        loop {
            let left = until.saturating_duration_since(std::time::Instant::now());
            let mut fd = libc::pollfd {
                fd: self.0.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().min(i32::MAX as u128) as i32;
            // SAFETY: one valid pollfd.
            let ready = unsafe { libc::poll(&mut fd, 1, ms) };
            if ready > 0 {
                return true;
            }
            if ready == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return false;
            }
        }
    }
}

impl Transport for StdioConnection {
    async fn notify(
        &mut self,
        method: &str,
        params: Option<Value>,
        deadline: Instant,
    ) -> Result<(), RpcError> {
        self.write(&notification(method, params), deadline).await
    }

    /// Answers the server's own requests and sets notifications aside meanwhile.
    async fn request(
        &mut self,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Json, RpcError> {
        let id = self.next_id;
        self.next_id += 1;
        self.write(&request_message(id, method, params), deadline)
            .await?;
        loop {
            let line = match timeout_at(deadline, self.stdout.next_line()).await {
                Err(_) => return Err(RpcError::Timeout),
                Ok(Err(e)) => return Err(RpcError::Io(format!("read error: {e}"))),
                Ok(Ok(Line::Eof)) => return Err(RpcError::Closed(self.exit_description().await)),
                Ok(Ok(Line::TooLong)) => {
                    return Err(RpcError::TooLarge(self.max_message_bytes));
                }
                Ok(Ok(Line::Text(bytes))) => bytes,
            };
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let inbound = take_payload(&line, id, &mut self.counters, &self.answers);
            for reply in &inbound.replies {
                self.write(reply, deadline).await?;
            }
            if let Some(answer) = inbound.answer {
                return answer;
            }
        }
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn name(&self) -> &'static str {
        "stdio"
    }
}

impl Drop for StdioConnection {
    fn drop(&mut self) {
        // Dropped without shutdown (cancelled or panicked): leave nothing running.
        let groups = live_groups();
        if groups.as_ref().is_some_and(|g| g.contains(&self.pgid)) {
            signal_group(self.pgid, libc::SIGKILL);
        }
        drop(groups);
        // The leader is reaped only after this (kill_on_drop), so the group id is
        // still ours while the watchdog leaves.
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.dismiss();
        }
        unregister(self.pgid);
        self.stderr_task.abort();
    }
}

/// Keeps the server's last stderr lines, redacted before they are cut so that no
/// part of a secret survives the cut.
async fn keep_stderr_tail(
    pipe: tokio::process::ChildStderr,
    tail: Arc<Mutex<VecDeque<String>>>,
    secrets: Secrets,
) {
    let mut reader = BufReader::new(pipe);
    let mut chunk = vec![0u8; 8192];
    let mut partial: Vec<u8> = Vec::new();
    // Inside a line too long to keep: drop bytes until its end.
    let mut skipping = false;
    loop {
        let n = match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        partial.extend_from_slice(&chunk[..n]);
        // Only the last lines of a read can survive in the tail: a flood of short
        // lines is cut down here, not redacted line by line, and the buffer is moved
        // once per read rather than once per line.
        let mut kept: VecDeque<(usize, usize)> = VecDeque::new();
        let mut start = 0;
        while let Some(i) = partial[start..].iter().position(|&b| b == b'\n') {
            if !std::mem::take(&mut skipping) {
                if kept.len() == STDERR_LINES {
                    kept.pop_front();
                }
                kept.push_back((start, start + i));
            }
            start += i + 1;
        }
        for (from, to) in kept {
            push_line(&tail, &partial[from..to], &secrets);
        }
        partial.drain(..start);
        if partial.len() > STDERR_LINE_BYTES {
            if !skipping {
                push_line(&tail, &partial, &secrets);
                skipping = true;
            }
            partial.clear();
        }
    }
    if !partial.is_empty() && !skipping {
        push_line(&tail, &partial, &secrets);
    }
}

fn push_line(tail: &Mutex<VecDeque<String>>, bytes: &[u8], secrets: &Secrets) {
    let text = String::from_utf8_lossy(bytes);
    let line = secrets.redact_truncated(text.trim_end_matches('\r'), STDERR_LINE_CHARS);
    let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
    if tail.len() == STDERR_LINES {
        tail.pop_front();
    }
    tail.push_back(line);
}

enum Line {
    Text(Vec<u8>),
    TooLong,
    Eof,
}

/// Reads newline-delimited messages with a bound on their size, so a hostile server
/// cannot make mcp-lock buffer without limit.
struct LineReader {
    inner: BufReader<ChildStdout>,
    max: usize,
}

impl LineReader {
    fn new(stdout: ChildStdout, max: usize) -> Self {
        LineReader {
            inner: BufReader::with_capacity(64 * 1024, stdout),
            max,
        }
    }

    async fn next_line(&mut self) -> io::Result<Line> {
        let mut line = Vec::new();
        loop {
            let buf = self.inner.fill_buf().await?;
            if buf.is_empty() {
                return Ok(if line.is_empty() {
                    Line::Eof
                } else {
                    Line::Text(line)
                });
            }
            let (take, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (buf.len(), false),
            };
            if line.len() + take > self.max {
                return Ok(Line::TooLong);
            }
            line.extend_from_slice(&buf[..take]);
            self.inner.consume(take + usize::from(done));
            if done {
                return Ok(Line::Text(line));
            }
        }
    }
}
