//! The event loop: one thread polls the client's stdin and the server's stdout,
//! routes every whole line each read brought, writes the audit entries of all of
//! them at once, and only then writes on what they decided, without blocking.
//!
//! One thread because a proxy's cost under load is mostly wake-ups and system calls,
//! not parsing: a thread per direction wakes once per message on each side, where one
//! loop takes whatever both sides sent since it last looked. A side that does not
//! take what is written to it (a full pipe) keeps it queued; while that queue is
//! long, the loop stops reading what would add to it, as a blocking pipe would.

use super::lines::{Framed, Lines, NonBlocking, Outgoing, READ_SIZE, Read};
use super::*;

/// How much may wait for one side before the loop stops reading what adds to it.
const QUEUE_LIMIT: usize = 1 << 20;
/// How long a queue for the server may go without any of it taken, once the client
/// has closed (or while its stdin cannot be read for it), before the session ends.
const STUCK_LIMIT: Duration = Duration::from_secs(1);
/// How often a loop waiting on a stuck server looks whether the client is gone.
const STUCK_CHECK: Duration = Duration::from_millis(250);

/// Where the client's side is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Client {
    /// Its stdin is read.
    Open,
    /// Its stdin ended (or its stdout broke): what is queued for the server is still
    /// written, then the server's stdin is closed.
    Closing,
    /// The server's stdin is closed; the server's output still goes to the client,
    /// unless `client_gone`.
    Closed,
}

/// The loop's state.
struct Pump<'a> {
    shared: &'a Mutex<Shared>,
    notes: Notes,
    arrived: &'a AtomicBool,
    events: &'a Sender<Event>,
    max: usize,
    from_client: Lines,
    from_server: Lines,
    /// What the client's lines decided, then what the server's did.
    client_out: Outbox,
    server_out: Outbox,
    to_server: Outgoing,
    to_client: Outgoing,
    server_in: Option<OwnedFd>,
    server_output: RawFd,
    stdout: NonBlocking,
    client: Client,
    /// The client's stdout broke: nothing more is written to it.
    client_gone: bool,
    /// The client closed its stdin while the loop was not reading it (a queue was
    /// full): what is left in it is read whatever the queues hold (a pipe or socket
    /// holds little), so that its end is seen.
    stdin_hung_up: bool,
    /// When the queue for the server last moved (or began to wait).
    server_took: Instant,
    /// Requests forwarded that the server has not answered (the session's count).
    /// While calls go one at a time (one waiting, or the only one just answered: its
    /// caller sends the next as soon as it reads the answer), the loop spins briefly
    /// before it blocks (see [`Spin`]); with more, they are pipelined, and it pauses
    /// instead, so that one wake-up takes several answers.
    awaiting: usize,
    one_at_a_time: bool,
    spin: Spin,
    /// The last read of either side filled its buffer: more is waiting, no pause.
    busy: bool,
}

/// Runs the session's loop on this thread until the server's output ends; sends
/// [`Event::ClientClosed`] when the client's side ends first, and
/// [`Event::ServerClosed`] at the end.
pub(super) fn pump(
    server_in: OwnedFd,
    server_output: OwnedFd,
    shared: &Mutex<Shared>,
    notes: Notes,
    arrived: &AtomicBool,
    max: usize,
    events: &Sender<Event>,
) {
    // The server's stdin is the guard's own pipe: nobody else shares its flags.
    NonBlocking::set(server_in.as_raw_fd(), None).for_good();
    let mut pump = Pump {
        shared,
        notes,
        arrived,
        events,
        max,
        from_client: Lines::default(),
        from_server: Lines::default(),
        client_out: Outbox::default(),
        server_out: Outbox::default(),
        to_server: Outgoing::default(),
        to_client: Outgoing::default(),
        server_in: Some(server_in),
        server_output: server_output.as_raw_fd(),
        stdout: NonBlocking::set(1, Some(2)),
        client: Client::Open,
        client_gone: false,
        stdin_hung_up: false,
        server_took: Instant::now(),
        awaiting: 0,
        one_at_a_time: false,
        spin: Spin::from_env(),
        busy: false,
    };
    let problem = pump.run();
    // Whatever the server said before it ended still reaches the client, which may
    // have closed only its writing side.
    pump.stdout.restore();
    if !pump.client_gone {
        let _ = pump.to_client.finish_to(1);
    }
    drop(server_output);
    let _ = events.send(Event::ServerClosed(problem));
}

impl Pump<'_> {
    /// The loop; returns why the server's side ended (`None`: it closed its output).
    fn run(&mut self) -> Option<String> {
        loop {
            let mut fds = self.poll_set();
            self.wait(&mut fds);
            if let Some(end) = self.read_server(fds[1].revents) {
                self.route_and_queue(true);
                return end;
            }
            self.read_client(fds[0].events, fds[0].revents);
            self.route_and_queue(false);
            self.write();
            self.closing();
        }
    }

    /// stdin, the server's output, the server's input, stdout: each asked for only
    /// what the loop would do with it now (-1: not at all).
    fn poll_set(&self) -> [libc::pollfd; 4] {
        let pollfd = |fd: RawFd, events: libc::c_short| libc::pollfd {
            fd: if events == 0 { -1 } else { fd },
            events,
            revents: 0,
        };
        let full =
            self.to_server.pending() >= QUEUE_LIMIT || self.to_client.pending() >= QUEUE_LIMIT;
        let read_client = self.client == Client::Open && (!full || self.stdin_hung_up);
        // Not read, stdin is still watched for the client hanging up (poll(2) reports
        // POLLHUP whatever is asked; POLLRDHUP is a socket's half-close).
        let watch_client = self.client == Client::Open && !read_client;
        let read_server = self.to_client.pending() < QUEUE_LIMIT;
        let write_server = self.server_in.is_some() && self.to_server.pending() > 0;
        let write_client =
            !self.client_gone && self.stdout.is_set() && self.to_client.pending() > 0;
        let when = |yes: bool, events: libc::c_short| if yes { events } else { 0 };
        [
            pollfd(
                0,
                when(read_client, libc::POLLIN) | when(watch_client, libc::POLLRDHUP),
            ),
            pollfd(self.server_output, when(read_server, libc::POLLIN)),
            pollfd(
                self.server_in.as_ref().map_or(-1, AsRawFd::as_raw_fd),
                when(write_server, libc::POLLOUT),
            ),
            pollfd(1, when(write_client, libc::POLLOUT)),
        ]
    }

    /// Waits until a side is ready: after a spin while calls go one at a time, after
    /// a pause while they are pipelined, and with a timeout while the queue for the
    /// server is stuck.
    fn wait(&mut self, fds: &mut [libc::pollfd; 4]) {
        let nothing_queued = self.to_server.pending() == 0 && self.to_client.pending() == 0;
        let one_at_a_time = std::mem::take(&mut self.one_at_a_time) || self.awaiting == 1;
        if nothing_queued && one_at_a_time && self.spin.until_ready(fds) {
            return;
        }
        if self.awaiting > 1 && !std::mem::take(&mut self.busy) {
            self.spin.pause();
        }
        let stuck = self.to_server.pending() > 0
            && (self.client != Client::Open || fds[0].events & libc::POLLIN == 0);
        let timeout = if stuck {
            STUCK_CHECK.as_millis() as i32
        } else {
            -1
        };
        loop {
            // SAFETY: poll(2) on an array of four pollfds.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), 4, timeout) };
            if ready >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return;
            }
        }
    }

    /// Reads the server's output when ready; `Some` when its side has ended (inside:
    /// a problem to tell, if any).
    fn read_server(&mut self, revents: libc::c_short) -> Option<Option<String>> {
        if revents == 0 {
            return None;
        }
        let ended = match self.from_server.read_from(self.server_output) {
            Ok(Read::Bytes(n)) => {
                self.arrived.store(true, Ordering::Release);
                self.busy |= n == READ_SIZE;
                false
            }
            Ok(Read::Nothing) => false,
            Ok(Read::Ended) | Err(_) => true,
        };
        while let Some(framed) = self.from_server.next(self.max) {
            match framed {
                Framed::Line(line) => {
                    take_server_line(line, self.shared, &mut self.notes, &mut self.server_out)
                }
                Framed::TooLong(_) => {
                    return Some(Some(format!(
                        "server sent a message larger than {} bytes; the session was ended",
                        self.max
                    )));
                }
            }
        }
        ended.then_some(None)
    }

    /// Reads the client's stdin when ready (`events`: what was asked of it).
    fn read_client(&mut self, events: libc::c_short, revents: libc::c_short) {
        if revents == 0 || self.client != Client::Open {
            return;
        }
        if events & libc::POLLIN == 0 {
            // Watched, not read: it hung up (or broke). It is read from now on.
            self.stdin_hung_up = true;
            return;
        }
        match self.from_client.read_from(0) {
            Ok(Read::Bytes(n)) => {
                self.arrived.store(true, Ordering::Release);
                self.busy |= n == READ_SIZE;
            }
            Ok(Read::Nothing) => {}
            Ok(Read::Ended) | Err(_) => self.client_closing(),
        }
        while let Some(line) = self.from_client.next(self.max) {
            take_client_line(
                line,
                self.max,
                self.shared,
                &mut self.notes,
                &mut self.client_out,
            );
        }
    }

    fn client_closing(&mut self) {
        self.client = Client::Closing;
        self.server_took = Instant::now();
    }

    /// Writes the audit entries of what was routed, then queues what they decided
    /// (or what stands in for it, if they could not be written).
    fn route_and_queue(&mut self, end: bool) {
        let (client_notes, logged) = self.notes.flush_run(self.shared, end);
        let refused = self.client_out.settle(logged, self.shared);
        if refused > 0 {
            self.notes.say(&format!(
                "refused {} with calls: their audit entries could not be written",
                crate::base::text::count(refused, "message")
            ));
        }
        self.server_out.settle(logged, self.shared);
        let awaiting = lock(self.shared).session.waiting();
        self.one_at_a_time |= self.awaiting == 1 && awaiting == 0;
        self.awaiting = awaiting;
        let client_out = std::mem::take(&mut self.client_out.forward);
        if !client_out.is_empty() && self.server_in.is_some() {
            if self.to_server.pending() == 0 {
                self.server_took = Instant::now();
            }
            self.to_server.extend(&client_out);
        }
        self.client_out.forward = reuse(client_out);
        if !self.client_gone {
            self.to_client.append(&mut self.server_out.forward);
            self.to_client.extend(&self.client_out.back);
            self.to_client.extend(&client_notes);
        }
        self.server_out.forward.clear();
        self.client_out.back.clear();
    }

    /// Writes what each side takes now.
    fn write(&mut self) {
        if let Some(input) = &self.server_in
            && self.to_server.pending() > 0
        {
            match self.to_server.write_to(input.as_raw_fd()) {
                Ok(true) => self.server_took = Instant::now(),
                Ok(false) => {}
                Err(_) => {
                    // The server closed its stdin: it is ending; its side reports how.
                    self.to_server.clear();
                    self.server_in = None;
                    self.server_took = Instant::now();
                    if self.client == Client::Open {
                        self.client_closing();
                    }
                }
            }
        }
        if !self.client_gone && self.to_client.pending() > 0 && self.to_client.write_to(1).is_err()
        {
            self.client_gone = true;
            self.to_client.clear();
            if self.client == Client::Open {
                self.client_closing();
            }
        }
    }

    /// Moves a closing client's side on: once the server has taken what was queued
    /// for it (or has taken nothing for [`STUCK_LIMIT`]), the server's stdin is
    /// closed; the server is then stopped, and the end of its output ends the loop.
    /// While the client is open and its stdin is not read because the server takes
    /// nothing, a client that hangs up ends its side too.
    fn closing(&mut self) {
        let stuck = self.server_took.elapsed() > STUCK_LIMIT;
        match self.client {
            Client::Open => {
                if self.to_server.pending() >= QUEUE_LIMIT && stuck && client_hung_up() {
                    self.client = Client::Closing;
                }
            }
            Client::Closing => {}
            // The server is being stopped; its output ends the loop.
            Client::Closed => return,
        }
        if self.client == Client::Closing && (self.to_server.pending() == 0 || stuck) {
            // Told before the server's stdin closes: a server that exits at once on
            // EOF must not look like one that exited by itself.
            let _ = self.events.send(Event::ClientClosed);
            self.to_server.clear();
            self.server_in = None;
            self.client = Client::Closed;
        }
    }
}

/// An emptied buffer back, keeping its capacity.
fn reuse(mut bytes: Vec<u8>) -> Vec<u8> {
    bytes.clear();
    bytes
}
