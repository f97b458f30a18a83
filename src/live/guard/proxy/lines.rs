//! Bytes in and out of the event loop: what one side sends cut into lines across
//! reads ([`Lines`]), and what waits to be written to a side that may not take it all
//! at once ([`Outgoing`]).

use std::io;
use std::os::fd::RawFd;

/// How much one read asks for.
pub(super) const READ_SIZE: usize = 64 * 1024;

/// What one side sent, cut into lines of at most a limit.
#[derive(Default)]
pub(super) struct Lines {
    buf: Vec<u8>,
    /// Where the next line starts.
    start: usize,
    /// `buf[start..scanned]` holds no newline.
    scanned: usize,
    /// In a line past the limit, already reported: dropped up to its newline.
    skipping: bool,
    /// The side closed: what is left without a newline is a line too.
    ended: bool,
}

/// One piece of what a side sent.
pub(super) enum Framed<'a> {
    /// A line, without its newline.
    Line(&'a [u8]),
    /// A line past the limit: reported once, as soon as it is past it, and dropped;
    /// with what was read of its start (at least the limit's worth).
    TooLong(&'a [u8]),
}

/// What one read found.
pub(super) enum Read {
    /// This many bytes.
    Bytes(usize),
    /// The side closed.
    Ended,
    /// Nothing now (interrupted, or nothing there after all).
    Nothing,
}

impl Lines {
    /// Reads once from `fd` (which poll found readable).
    pub(super) fn read_from(&mut self, fd: RawFd) -> io::Result<Read> {
        self.make_room();
        let spare = self.buf.spare_capacity_mut();
        let len = spare.len().min(READ_SIZE);
        // SAFETY: read(2) into the vector's spare capacity, at most its length.
        let n = unsafe { libc::read(fd, spare.as_mut_ptr().cast(), len) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock => Ok(Read::Nothing),
                _ => Err(e),
            };
        }
        if n == 0 {
            self.ended = true;
            return Ok(Read::Ended);
        }
        // SAFETY: read(2) initialised the first `n` bytes of the spare capacity.
        unsafe { self.buf.set_len(self.buf.len() + n as usize) };
        Ok(Read::Bytes(n as usize))
    }

    /// Bytes that arrived some other way (the fuzz seam).
    pub(super) fn push(&mut self, bytes: &[u8]) {
        self.make_room();
        self.buf.extend_from_slice(bytes);
    }

    /// The side closed (the fuzz seam).
    pub(super) fn end(&mut self) {
        self.ended = true;
    }

    /// Drops what was consumed before reading more, and keeps room for a whole read.
    fn make_room(&mut self) {
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
            self.scanned = 0;
            // A large message read once (a listing of many tools) is not held on to
            // for the rest of the session.
            if self.buf.capacity() > 16 * READ_SIZE {
                self.buf.shrink_to(READ_SIZE);
            }
        } else if self.start >= READ_SIZE {
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        self.buf.reserve(READ_SIZE);
    }

    /// The next line of at most `max` bytes, or the report of one longer; `None` when
    /// no whole line is waiting.
    pub(super) fn next(&mut self, max: usize) -> Option<Framed<'_>> {
        loop {
            match memchr::memchr(b'\n', &self.buf[self.scanned..]) {
                Some(i) => {
                    let (start, end) = (self.start, self.scanned + i);
                    self.start = end + 1;
                    self.scanned = self.start;
                    if std::mem::take(&mut self.skipping) {
                        continue;
                    }
                    if end - start > max {
                        return Some(Framed::TooLong(&self.buf[start..end]));
                    }
                    return Some(Framed::Line(&self.buf[start..end]));
                }
                None => {
                    let start = self.start;
                    let len = self.buf.len() - start;
                    if self.skipping {
                        // Nothing of a line being dropped is kept.
                        self.buf.truncate(start);
                        self.scanned = start;
                        if self.ended {
                            self.skipping = false;
                        }
                        return None;
                    }
                    if len > max {
                        // Dropped when the next read makes room.
                        self.skipping = !self.ended;
                        self.start = self.buf.len();
                        self.scanned = self.start;
                        return Some(Framed::TooLong(&self.buf[start..]));
                    }
                    if self.ended && len > 0 {
                        self.start = self.buf.len();
                        self.scanned = self.start;
                        return Some(Framed::Line(&self.buf[start..]));
                    }
                    self.scanned = self.buf.len();
                    return None;
                }
            }
        }
    }
}

/// Bytes for one side, written as far as it takes them without blocking.
#[derive(Default)]
pub(super) struct Outgoing {
    bytes: Vec<u8>,
    /// How much of `bytes` is written.
    sent: usize,
}

impl Outgoing {
    pub(super) fn pending(&self) -> usize {
        self.bytes.len() - self.sent
    }

    pub(super) fn extend(&mut self, bytes: &[u8]) {
        if self.sent == self.bytes.len() {
            self.clear();
        }
        self.bytes.extend_from_slice(bytes);
    }

    /// Takes `bytes` over, leaving `bytes` empty: moved rather than copied when
    /// nothing waits here (a large answer is then held once, not twice).
    pub(super) fn append(&mut self, bytes: &mut Vec<u8>) {
        if self.pending() == 0 {
            self.clear();
            std::mem::swap(&mut self.bytes, bytes);
        } else {
            self.bytes.extend_from_slice(bytes);
        }
        bytes.clear();
        if bytes.capacity() > 16 * READ_SIZE {
            bytes.shrink_to(READ_SIZE);
        }
    }

    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.sent = 0;
        if self.bytes.capacity() > 16 * READ_SIZE {
            self.bytes.shrink_to(READ_SIZE);
        }
    }

    /// Writes what `fd` takes now (all of it, when `fd` blocks); true when anything
    /// was written. An error means the reader is gone.
    pub(super) fn write_to(&mut self, fd: RawFd) -> io::Result<bool> {
        let mut wrote = false;
        while self.sent < self.bytes.len() {
            let rest = &self.bytes[self.sent..];
            // SAFETY: write(2) from a live buffer of the given length.
            let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::Interrupted => continue,
                    io::ErrorKind::WouldBlock => return Ok(wrote),
                    _ => return Err(e),
                }
            }
            if n == 0 {
                // Nothing taken without an error: tried again when poll says so.
                return Ok(wrote);
            }
            self.sent += n as usize;
            wrote = true;
        }
        self.clear();
        Ok(wrote)
    }

    /// Writes all of it, waiting for `fd` to take it (for the end of a session).
    pub(super) fn finish_to(&mut self, fd: RawFd) -> io::Result<()> {
        while self.pending() > 0 {
            if !self.write_to(fd)? {
                let mut poll_fd = libc::pollfd {
                    fd,
                    events: libc::POLLOUT,
                    revents: 0,
                };
                // SAFETY: poll(2) on one pollfd.
                unsafe { libc::poll(&mut poll_fd, 1, -1) };
            }
        }
        Ok(())
    }
}

/// Makes `fd` non-blocking if it is a pipe or a socket (a file or a terminal is
/// written as it is: neither fills up the way a pipe does); what it was is put back
/// when this is dropped, for whoever shares the descriptor after the guard.
pub(super) struct NonBlocking {
    fd: RawFd,
    /// The flags before, when they were changed.
    before: Option<libc::c_int>,
    /// Non-blocking now, whoever made it so.
    on: bool,
}

/// What a descriptor is: its kind, and which file.
fn identity(fd: RawFd) -> Option<(libc::mode_t, libc::dev_t, libc::ino_t)> {
    // SAFETY: fstat(2) into a zeroed stat, on a descriptor the caller names.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        (libc::fstat(fd, &mut stat) == 0).then_some((
            stat.st_mode & libc::S_IFMT,
            stat.st_dev,
            stat.st_ino,
        ))
    }
}

impl NonBlocking {
    /// `fd` made non-blocking, unless it is the same pipe as `unless` (stdout sent
    /// where stderr goes: stderr is written with blocking writes, by this thread and
    /// others, and must not start failing with EAGAIN).
    pub(super) fn set(fd: RawFd, unless: Option<RawFd>) -> NonBlocking {
        let kind = identity(fd);
        let shared = unless.is_some_and(|other| kind.is_some() && identity(other) == kind);
        let pipe_like = kind.is_some_and(|(k, ..)| k == libc::S_IFIFO || k == libc::S_IFSOCK);
        // SAFETY: fcntl(2) on a descriptor the caller holds open.
        let (before, on) = unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            let change = pipe_like && !shared && flags >= 0 && flags & libc::O_NONBLOCK == 0;
            let set = change && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0;
            let already = flags >= 0 && flags & libc::O_NONBLOCK != 0;
            (set.then_some(flags), set || already)
        };
        NonBlocking { fd, before, on }
    }

    /// Whether writes may come back unfinished (so POLLOUT is worth waiting for).
    pub(super) fn is_set(&self) -> bool {
        self.on
    }

    /// Leaves the descriptor non-blocking (one the guard alone holds).
    pub(super) fn for_good(mut self) {
        self.before = None;
    }

    /// Back to blocking, as it was.
    pub(super) fn restore(&mut self) {
        if let Some(flags) = self.before.take() {
            // SAFETY: fcntl on a descriptor held open by the caller.
            unsafe {
                libc::fcntl(self.fd, libc::F_SETFL, flags);
            }
            self.on = false;
        }
    }
}

impl Drop for NonBlocking {
    fn drop(&mut self) {
        self.restore();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(chunks: &[&[u8]], max: usize) -> Vec<Option<Vec<u8>>> {
        let mut lines = Lines::default();
        let mut found = Vec::new();
        for (i, chunk) in chunks.iter().enumerate() {
            lines.push(chunk);
            if i == chunks.len() - 1 {
                lines.end();
            }
            while let Some(framed) = lines.next(max) {
                found.push(match framed {
                    Framed::Line(line) => Some(line.to_vec()),
                    Framed::TooLong(_) => None,
                });
            }
        }
        found
    }

    #[test]
    fn lines_are_cut_at_newlines_across_reads_and_the_last_needs_none() {
        let found = lines_of(&[b"ab", b"c\nde\n\nf", b"g"], 10);
        let want: Vec<Option<Vec<u8>>> = vec![
            Some(b"abc".to_vec()),
            Some(b"de".to_vec()),
            Some(Vec::new()),
            Some(b"fg".to_vec()),
        ];
        assert_eq!(found, want);
    }

    #[test]
    fn a_line_past_the_limit_is_reported_once_as_soon_as_it_is_past_it_and_dropped() {
        // Reported before its newline arrives, then dropped to it; the next line is
        // whole. A line of exactly the limit passes.
        let mut lines = Lines::default();
        lines.push(b"abcdef");
        assert!(matches!(lines.next(4), Some(Framed::TooLong(_))));
        assert!(lines.next(4).is_none());
        lines.push(b"gh\nabcd\n");
        assert!(matches!(lines.next(4), Some(Framed::Line(b"abcd"))));
        assert!(lines.next(4).is_none());
        let found = lines_of(&[b"abcde\nxy"], 4);
        assert_eq!(found, vec![None, Some(b"xy".to_vec())]);
    }

    #[test]
    fn a_long_line_at_the_end_of_input_is_reported_and_nothing_follows() {
        assert_eq!(
            lines_of(&[b"ok\n", b"abcdefgh"], 4),
            vec![Some(b"ok".to_vec()), None]
        );
    }

    #[test]
    fn room_is_made_without_losing_a_partial_line() {
        let mut lines = Lines::default();
        let long = vec![b'x'; READ_SIZE + 10];
        lines.push(&long);
        lines.push(b"\npartial");
        assert!(matches!(lines.next(usize::MAX), Some(Framed::Line(l)) if l.len() == long.len()));
        assert!(lines.next(usize::MAX).is_none());
        lines.push(b" line\n");
        assert!(matches!(
            lines.next(usize::MAX),
            Some(Framed::Line(b"partial line"))
        ));
    }

    #[test]
    fn outgoing_keeps_what_a_full_pipe_did_not_take_and_a_pipe_shared_with_stderr_stays_blocking() {
        let mut fds = [0; 2];
        // SAFETY: pipe(2) into a two-element array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let (read_end, write_end) = (fds[0], fds[1]);
        // The same pipe where stderr goes is left blocking.
        // SAFETY: dup(2) of the pipe's write end.
        let dup = unsafe { libc::dup(write_end) };
        assert!(!NonBlocking::set(write_end, Some(dup)).is_set());
        // SAFETY: close of the descriptor dup made.
        unsafe { libc::close(dup) };
        let mut nb = NonBlocking::set(write_end, None);
        assert!(nb.is_set());
        let mut out = Outgoing::default();
        let big = vec![b'y'; 1 << 20];
        out.extend(&big);
        assert!(out.write_to(write_end).unwrap());
        let left = out.pending();
        assert!(left > 0 && left < big.len(), "a pipe takes part of 1 MiB");
        let mut drained = 0;
        let mut buf = vec![0u8; 1 << 16];
        while drained < big.len() {
            // SAFETY: read(2) into a live buffer of its length.
            let n = unsafe { libc::read(read_end, buf.as_mut_ptr().cast(), buf.len()) };
            assert!(n > 0);
            drained += n as usize;
            out.write_to(write_end).unwrap();
        }
        assert_eq!(out.pending(), 0);
        nb.restore();
        // SAFETY: fcntl and close on the pipe made above.
        unsafe {
            assert_eq!(libc::fcntl(write_end, libc::F_GETFL) & libc::O_NONBLOCK, 0);
            libc::close(write_end);
            libc::close(read_end);
        }
    }
}
