//! The guard's own lines for its stderr, queued and written by a thread of their own:
//! a host that does not read the guard's stderr (a pipe left full) must not stall the
//! loop that carries the session. The queue is bounded; lines that do not fit are
//! dropped and counted, and the count is said once writing goes on.
//!
//! The descriptor itself stays blocking: the server may share it, and a non-blocking
//! stderr would make its writes fail.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// How much may wait to be written before lines are dropped.
const QUEUE_BYTES: usize = 256 * 1024;

/// The server's stderr, passed on in pieces, has a line begun and not ended. Changed
/// only while the stderr lock is held, so the writer, holding it, reads it true.
static SERVER_MID_LINE: AtomicBool = AtomicBool::new(false);

/// How long the guard's own lines wait for a server line passed on in pieces to end,
/// so that they do not land inside it; a server that stalls mid-line gets no longer.
const MID_LINE_WAIT: Duration = Duration::from_millis(200);

/// Says whether the server's line is unfinished after the piece just written; called
/// with the stderr lock held (see [`SERVER_MID_LINE`]).
pub(super) fn server_mid_line(unfinished: bool) {
    SERVER_MID_LINE.store(unfinished, Ordering::Release);
}

#[derive(Default)]
struct Queue {
    bytes: Vec<u8>,
    /// Lines dropped since the last were written.
    dropped: u64,
    /// The writer holds bytes it has not finished writing.
    writing: bool,
}

struct Stderr {
    queue: Mutex<Queue>,
    /// Lines queued (for the writer), or written (for [`drain`]).
    changed: Condvar,
}

fn stderr() -> &'static Stderr {
    static STDERR: OnceLock<Stderr> = OnceLock::new();
    STDERR.get_or_init(|| {
        std::thread::Builder::new()
            .name("mcp-lock-stderr".into())
            .spawn(write_queued)
            .expect("a thread starts");
        Stderr {
            queue: Mutex::new(Queue::default()),
            changed: Condvar::new(),
        }
    })
}

fn queue(stderr: &Stderr) -> MutexGuard<'_, Queue> {
    stderr.queue.lock().unwrap_or_else(|e| e.into_inner())
}

/// Queues `line` (without its newline) for the guard's stderr; dropped, and counted,
/// when the queue is full.
pub(super) fn note(line: &str) {
    let stderr = stderr();
    let mut queue = queue(stderr);
    if queue.bytes.len() + line.len() + 1 > QUEUE_BYTES {
        queue.dropped += 1;
        return;
    }
    queue.bytes.extend_from_slice(line.as_bytes());
    queue.bytes.push(b'\n');
    stderr.changed.notify_all();
}

/// Waits up to `limit` for what is queued to be written (the session is ending).
pub(super) fn drain(limit: Duration) {
    let stderr = stderr();
    let until = Instant::now() + limit;
    let mut queue = queue(stderr);
    while !queue.bytes.is_empty() || queue.writing || queue.dropped > 0 {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        queue = stderr
            .changed
            .wait_timeout(queue, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// The writer's thread: whatever is queued, written with blocking writes.
fn write_queued() {
    // The queue is made before this thread looks at it.
    let stderr = stderr();
    let mut bytes = Vec::new();
    loop {
        let dropped = {
            let mut queue = queue(stderr);
            queue.writing = false;
            stderr.changed.notify_all();
            while queue.bytes.is_empty() && queue.dropped == 0 {
                queue = stderr
                    .changed
                    .wait(queue)
                    .unwrap_or_else(|e| e.into_inner());
            }
            queue.writing = true;
            std::mem::swap(&mut queue.bytes, &mut bytes);
            std::mem::take(&mut queue.dropped)
        };
        if dropped > 0 {
            let line = format!(
                "mcp-lock guard: {} not written: stderr was not being read\n",
                crate::base::text::count(dropped as usize, "line")
            );
            bytes.extend_from_slice(line.as_bytes());
        }
        let until = Instant::now() + MID_LINE_WAIT;
        let mut err = std::io::stderr().lock();
        while SERVER_MID_LINE.load(Ordering::Acquire) && Instant::now() < until {
            drop(err);
            std::thread::sleep(Duration::from_millis(2));
            err = std::io::stderr().lock();
        }
        // A stderr that is gone takes nothing more; the lines are dropped.
        let _ = err.write_all(&bytes);
        drop(err);
        bytes.clear();
    }
}
