//! The guard's framing and both directions' routing driven from byte slices instead
//! of stdin, stdout and a server process: the seam the fuzz targets (fuzz/) drive.
//! Each burst is handled as the loops in [`super`] handle a read: split into lines
//! of at most `max_message_bytes`, each line routed, audit entries written before
//! what they decided is passed on. Not a stable interface.

use std::io;
use std::sync::Mutex;

use super::lines::{Framed, Lines};
use super::{
    GuardSetup, ListChangedRun, Notes, Outbox, Shared, take_client_line, take_server_line,
};

/// One guarded session with no server process and no terminal.
pub struct Router {
    shared: Mutex<Shared>,
    notes: Notes,
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
        let notes = Notes::new(&setup.audit)?;
        Ok(Router {
            max: setup.max_message_bytes,
            shared: Mutex::new(Shared {
                pins: setup.pins,
                session: setup.session,
                audit: setup.audit,
                audit_lines: Vec::new(),
                client_notes: Vec::new(),
                list_changed: ListChangedRun::default(),
                served_logged: Default::default(),
            }),
            notes,
        })
    }

    /// Bytes from the client, read `read_size` bytes at a time; the burst ends as a
    /// stream does (its last line needs no newline).
    pub fn from_client(&mut self, bytes: &[u8], read_size: usize) -> FromClient {
        let mut lines = Lines::default();
        let mut out = Outbox::default();
        let chunks: Vec<&[u8]> = bytes.chunks(read_size.max(1)).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            lines.push(chunk);
            if i + 1 == chunks.len() {
                lines.end();
            }
            while let Some(line) = lines.next(self.max) {
                take_client_line(line, self.max, &self.shared, &mut self.notes, &mut out);
            }
        }
        let (notes, logged) = self.notes.flush(&self.shared);
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
        let mut lines = Lines::default();
        let mut out = Outbox::default();
        let chunks: Vec<&[u8]> = bytes.chunks(read_size.max(1)).collect();
        'read: for (i, chunk) in chunks.iter().enumerate() {
            lines.push(chunk);
            if i + 1 == chunks.len() {
                lines.end();
            }
            while let Some(framed) = lines.next(self.max) {
                match framed {
                    Framed::Line(line) => {
                        take_server_line(line, &self.shared, &mut self.notes, &mut out)
                    }
                    Framed::TooLong(_) => break 'read,
                }
            }
        }
        let (notes, logged) = self.notes.flush_run(&self.shared, true);
        out.settle(logged, &self.shared);
        out.forward.extend_from_slice(&notes);
        out.forward
    }
}
