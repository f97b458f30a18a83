//! The guard's framing and both directions' routing driven from byte slices instead
//! of stdin, stdout and a server process: the seam the fuzz targets (fuzz/) drive.
//! Each burst is handled as the loops in [`super`] handle a read: split into lines
//! of at most `max_message_bytes`, each line routed, audit entries written before
//! what they decided is passed on. Not a stable interface.

use std::io::{self, BufReader};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use super::{
    GuardSetup, Line, ListChangedRun, Notes, Outbox, Shared, read_line, take_client_line,
    take_server_line,
};

/// One guarded session with no server process and no terminal.
pub struct Router {
    shared: Mutex<Shared>,
    client: Notes,
    server: Notes,
    arrived: AtomicBool,
    max: usize,
}

/// What one burst from the client became.
#[derive(Debug, Default)]
pub struct FromClient {
    /// Lines the server would be sent.
    pub to_server: Vec<u8>,
    /// Lines the client would be answered with.
    pub to_client: Vec<u8>,
}

impl Router {
    pub fn new(setup: GuardSetup) -> io::Result<Router> {
        let client = Notes::new(&setup.audit)?;
        let server = Notes::new(&setup.audit)?;
        Ok(Router {
            max: setup.max_message_bytes,
            shared: Mutex::new(Shared {
                pins: setup.pins,
                session: setup.session,
                audit: setup.audit,
                audit_lines: Vec::new(),
                client_notes: Vec::new(),
                list_changed: ListChangedRun::default(),
            }),
            client,
            server,
            arrived: AtomicBool::new(false),
        })
    }

    /// Bytes from the client, read `read_size` bytes at a time.
    pub fn from_client(&mut self, bytes: &[u8], read_size: usize) -> FromClient {
        let mut reader = BufReader::with_capacity(read_size.max(1), bytes);
        let mut buf = Vec::new();
        let mut out = Outbox::default();
        loop {
            match read_line(&mut reader, &mut buf, self.max, &self.arrived) {
                Ok(Line::Eof) | Err(_) => break,
                Ok(line) => take_client_line(
                    line,
                    &buf,
                    self.max,
                    &self.shared,
                    &mut self.client,
                    &mut out,
                ),
            }
        }
        let (notes, logged) = self.client.flush(&self.shared);
        out.settle(logged, &self.shared);
        out.back.extend_from_slice(&notes);
        FromClient {
            to_server: out.forward,
            to_client: out.back,
        }
    }

    /// Bytes from the server, read `read_size` bytes at a time; returns the lines
    /// the client would be sent. A line past the limit ends the burst, as it ends a
    /// session.
    pub fn from_server(&mut self, bytes: &[u8], read_size: usize) -> Vec<u8> {
        let mut reader = BufReader::with_capacity(read_size.max(1), bytes);
        let mut buf = Vec::new();
        let mut out = Outbox::default();
        while let Ok(Line::Text) = read_line(&mut reader, &mut buf, self.max, &self.arrived) {
            take_server_line(&buf, &self.shared, &mut self.server, &mut out);
        }
        let (notes, logged) = self.server.flush_run(&self.shared, true);
        out.settle(logged, &self.shared);
        out.forward.extend_from_slice(&notes);
        out.forward
    }
}
