//! A short, bounded busy-poll for an answer the server is expected to send.
//!
//! A thread blocked in read(2) on an idle CPU wakes tens of microseconds after the
//! bytes arrive (an idle vCPU has to be woken by its host); on a quiet machine that
//! is most of what the guard adds to a round trip. So while exactly one request sent
//! to the server waits for its answer (a caller is blocked on it; pipelined calls keep
//! the threads awake anyway), the server's side first polls without blocking for up
//! to [`WINDOW`]. On a busy machine the threads are rarely idle and the spinning only
//! takes CPU time from the server, so it is done only while the load average is below
//! half the CPUs (looked at once a second).

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// How long to poll before blocking.
const WINDOW: Duration = Duration::from_micros(250);
/// How often the load average is looked at.
const RECHECK: Duration = Duration::from_secs(1);

pub(super) struct Spin {
    window: Duration,
    /// Set by `MCP_LOCK_GUARD_SPIN_US` (for benchmarks): spin whatever the load.
    forced: bool,
    quiet: bool,
    checked: Option<Instant>,
}

impl Spin {
    /// `MCP_LOCK_GUARD_SPIN_US` sets the window in microseconds (0 turns spinning
    /// off) and spins whatever the load; unset, [`WINDOW`] while the machine is quiet.
    pub(super) fn from_env() -> Self {
        let forced = std::env::var("MCP_LOCK_GUARD_SPIN_US")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_micros);
        Spin {
            window: forced.unwrap_or(WINDOW),
            forced: forced.is_some(),
            quiet: false,
            checked: None,
        }
    }

    /// Polls `fd` without blocking until it is readable or the window has passed
    /// (at once when spinning is off now).
    pub(super) fn until_readable(&mut self, fd: RawFd) {
        if self.window.is_zero() || !(self.forced || self.machine_is_quiet()) {
            return;
        }
        let start = Instant::now();
        loop {
            let mut poll_fd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd, no timeout.
            let ready = unsafe { libc::poll(&mut poll_fd, 1, 0) };
            if ready != 0 || start.elapsed() >= self.window {
                return;
            }
            std::hint::spin_loop();
        }
    }

    fn machine_is_quiet(&mut self) -> bool {
        if self.checked.is_none_or(|at| at.elapsed() >= RECHECK) {
            self.checked = Some(Instant::now());
            let cpus = std::thread::available_parallelism().map_or(1, usize::from);
            let mut load = [0f64; 1];
            // SAFETY: room for the one sample asked for.
            let got = unsafe { libc::getloadavg(load.as_mut_ptr(), 1) };
            self.quiet = got == 1 && load[0] < cpus as f64 / 2.0;
        }
        self.quiet
    }
}
