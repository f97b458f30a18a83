//! How the event loop waits: a short, bounded busy-poll for an answer the server is
//! expected to send, or a pause that lets pipelined answers gather.
//!
//! A thread blocked in poll(2) on an idle CPU wakes tens of microseconds after the
//! bytes arrive (an idle vCPU has to be woken by its host); on a quiet machine that
//! is most of what the guard adds to a round trip. So while exactly one request sent
//! to the server waits for its answer (a caller is blocked on it), or the only one was
//! just answered (its caller sends the next at once), the loop first polls without
//! blocking for up to [`WINDOW`]. On a busy machine the threads are rarely idle and
//! the spinning only takes CPU time from the server, so it is done only while the
//! load average is below half the CPUs (looked at once a second).
//!
//! While calls are pipelined, the opposite: before it blocks, the loop sleeps for
//! [`PAUSE`], so that what it is woken for next is several answers, not one. The
//! server is busy with the requests already queued for it meanwhile, so this costs
//! pipelined calls a few microseconds each and saves a wake-up and a round of reads
//! and writes per answer, for the guard, the server and the client alike.

use std::time::{Duration, Instant};

/// How long to poll before blocking.
const WINDOW: Duration = Duration::from_micros(250);
/// How long to sleep before polling while calls are pipelined.
const PAUSE: Duration = Duration::from_micros(20);
/// The timer slack the loop's thread asks for, so that a pause is about [`PAUSE`]
/// long, not the 50 µs a thread gets by default.
const SLACK_NS: libc::c_ulong = 2_000;
/// How often the load average is looked at.
const RECHECK: Duration = Duration::from_secs(1);

pub(super) struct Spin {
    window: Duration,
    /// [`PAUSE`], or `MCP_LOCK_GUARD_PAUSE_US` (0: no pause).
    pause: Duration,
    /// Set by `MCP_LOCK_GUARD_SPIN_US` (for benchmarks): spin whatever the load.
    forced: bool,
    quiet: bool,
    checked: Option<Instant>,
}

impl Spin {
    /// `MCP_LOCK_GUARD_SPIN_US` sets the window in microseconds (0 turns spinning
    /// off) and spins whatever the load; unset, [`WINDOW`] while the machine is quiet.
    pub(super) fn from_env() -> Self {
        let micros = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_micros)
        };
        let forced = micros("MCP_LOCK_GUARD_SPIN_US");
        let pause = micros("MCP_LOCK_GUARD_PAUSE_US").unwrap_or(PAUSE);
        // SAFETY: sets this thread's timer slack; no memory is shared.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, SLACK_NS, 0, 0, 0);
        }
        Spin {
            window: forced.unwrap_or(WINDOW),
            pause,
            forced: forced.is_some(),
            quiet: false,
            checked: None,
        }
    }

    /// Polls `fds` without blocking until one is ready or the window has passed (at
    /// once when spinning is off now); true when one is ready.
    pub(super) fn until_ready(&mut self, fds: &mut [libc::pollfd]) -> bool {
        if self.window.is_zero() || !(self.forced || self.machine_is_quiet()) {
            return false;
        }
        let start = Instant::now();
        loop {
            // SAFETY: poll(2) on the caller's pollfds, no timeout.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
            if ready > 0 {
                return true;
            }
            if ready < 0 || start.elapsed() >= self.window {
                return false;
            }
            std::hint::spin_loop();
        }
    }

    /// Sleeps for the pause of pipelined calls.
    pub(super) fn pause(&self) {
        if !self.pause.is_zero() {
            std::thread::sleep(self.pause);
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
