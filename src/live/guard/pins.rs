//! Noticing that the lock changed on disk, cheaply enough to ask at every call.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::records::lock::{PinnedServer, read_lock_server};

/// Watches the lock file: its identity, size and modification time, looked at only
/// when inotify says something happened to that name in its directory (every time
/// when inotify is not available), so a call costs no file-system lookup.
///
/// The inotify queue itself is read only when new input arrived since it was last
/// read (see [`PinWatch::input_arrived`]): a message read after the lock changed
/// always sees the change, and the messages of one read share one look.
pub struct PinWatch {
    path: PathBuf,
    stamp: Option<(u64, u64, i64, i64)>,
    events: Option<Inotify>,
    fresh: Arc<AtomicBool>,
}

impl PinWatch {
    pub fn new(path: PathBuf) -> Self {
        // A symlink on the way to the lock (the file or a directory) can change where
        // the watch cannot see: look every time.
        let linked = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink())
            || through_symlink(&path);
        let events = if linked { None } else { Inotify::watch(&path) };
        let stamp = stamp(&path);
        PinWatch {
            path,
            stamp,
            events,
            fresh: Arc::new(AtomicBool::new(true)),
        }
    }

    /// A flag that whoever reads the guard's input sets (`store(true)`) after each
    /// read that returned bytes: only then can a message have been sent after the
    /// lock changed, so only then is the inotify queue worth a system call.
    pub fn input_arrived(&self) -> Arc<AtomicBool> {
        self.fresh.clone()
    }

    /// The server's pins when the lock changed since last asked (None inside: the lock
    /// no longer pins the server).
    pub fn changed(&mut self, server: &str) -> Option<Result<Option<PinnedServer>, String>> {
        if let Some(events) = &self.events
            && (!self.fresh.swap(false, Ordering::AcqRel) || !events.touched())
        {
            return None;
        }
        let now = stamp(&self.path);
        if now == self.stamp {
            return None;
        }
        self.stamp = now;
        Some(match read_lock_server(&self.path, server) {
            Ok(Some(pinned)) => Ok(pinned),
            Ok(None) => Err(format!("{} is gone", self.path.display())),
            Err(e) => Err(e.to_string()),
        })
    }
}

/// Whether the lock's directory is reached through a symlink (or cannot be resolved).
fn through_symlink(path: &std::path::Path) -> bool {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let (Ok(real), Ok(written)) = (std::fs::canonicalize(dir), std::path::absolute(dir)) else {
        return true;
    };
    let written: PathBuf = written
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect();
    real != written
}

fn stamp(path: &std::path::Path) -> Option<(u64, u64, i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.ino(), m.len(), m.mtime(), m.mtime_nsec()))
}

/// An inotify watch on the lock's directory, read without blocking.
struct Inotify {
    fd: std::os::fd::OwnedFd,
    name: Vec<u8>,
    /// The watch is gone (directory removed or moved, events lost): look every time.
    lost: std::cell::Cell<bool>,
}

impl Inotify {
    fn watch(path: &std::path::Path) -> Option<Self> {
        use std::os::fd::FromRawFd;
        use std::os::unix::ffi::OsStrExt;
        let name = path.file_name()?.as_bytes().to_vec();
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        let dir = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        // SAFETY: plain system calls on a descriptor this function owns.
        unsafe {
            let raw = libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC);
            if raw < 0 {
                return None;
            }
            let fd = std::os::fd::OwnedFd::from_raw_fd(raw);
            let mask = libc::IN_CLOSE_WRITE
                | libc::IN_MOVED_TO
                | libc::IN_MOVED_FROM
                | libc::IN_CREATE
                | libc::IN_DELETE
                | libc::IN_MODIFY
                | libc::IN_ATTRIB
                | libc::IN_DELETE_SELF
                | libc::IN_MOVE_SELF;
            if libc::inotify_add_watch(raw, dir.as_ptr(), mask) < 0 {
                return None;
            }
            Some(Inotify {
                fd,
                name,
                lost: std::cell::Cell::new(false),
            })
        }
    }

    /// Whether anything happened to the lock's name (or the watch itself) since last
    /// asked. Every queued event is consumed.
    fn touched(&self) -> bool {
        use std::os::fd::AsRawFd;
        let mut touched = self.lost.get();
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: reads into a buffer of the given length.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                // EAGAIN: nothing more queued. Any other error: look at the file.
                let again = std::io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock;
                return touched || (n < 0 && !again);
            }
            let mut at = 0;
            let n = n as usize;
            let header = std::mem::size_of::<libc::inotify_event>();
            while at + header <= n {
                // SAFETY: the kernel wrote a whole inotify_event header at `at`.
                let event: libc::inotify_event =
                    unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
                let len = event.len as usize;
                let name = &buf[at + header..(at + header + len).min(n)];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                let whole_dir = event.mask
                    & (libc::IN_Q_OVERFLOW
                        | libc::IN_IGNORED
                        | libc::IN_DELETE_SELF
                        | libc::IN_MOVE_SELF)
                    != 0;
                if whole_dir {
                    self.lost.set(true);
                }
                if whole_dir || name == self.name.as_slice() {
                    touched = true;
                }
                at += header + len;
            }
        }
    }
}
