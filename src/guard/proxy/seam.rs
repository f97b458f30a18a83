//! The guard's framing and both directions' routing driven from byte slices instead
//! of stdin, stdout and a server process: the seam the fuzz targets (fuzz/) drive.
//! Each burst is handled as the loops in [`super`] handle a read: split into lines
//! of at most `max_message_bytes`, each line routed, audit entries written before
//! what they decided is passed on. Not a stable interface.

use std::io::{self, BufReader};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use serde_json::Value;

use super::{
    GuardSetup, Line, ListChangedRun, Notes, Out, Outbox, Shared, from_client, from_server,
    read_line, rpc_error,
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
            let line = match read_line(&mut reader, &mut buf, self.max, &self.arrived) {
                Ok(Line::Eof) | Err(_) => break,
                Ok(Line::TooLong) => {
                    let max = self.max;
                    self.client.refuse(&format!(
                        "a message from the client larger than {max} bytes"
                    ));
                    let error = rpc_error(
                        &Value::Null,
                        -32600,
                        &format!("mcp-lock guard: message larger than {max} bytes; not forwarded"),
                    );
                    out.push_back(error.as_bytes());
                    continue;
                }
                Ok(Line::Text) => &buf,
            };
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let routed = from_client(line, &self.shared, &mut self.client);
            match (routed.forward, routed.unlogged) {
                (Some(bytes), Some(instead)) => out.push_held(
                    &bytes,
                    instead.forward.as_deref(),
                    Some(instead.answer),
                    instead.forget,
                ),
                (Some(bytes), None) => out.push_forward(&bytes),
                (None, _) => {}
            }
            if let Some(answer) = routed.answer {
                out.push_back(answer.as_bytes());
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
            let line = &buf;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match from_server(line, &self.shared, &mut self.server) {
                Some(Out::Raw) => out.push_forward(line),
                Some(Out::Text(text)) => out.push_forward(text.as_bytes()),
                Some(Out::Checked { text, instead }) => {
                    out.push_held(text.as_bytes(), Some(instead.as_bytes()), None, Vec::new())
                }
                None => {}
            }
        }
        let (notes, logged) = self.server.flush_run(&self.shared, true);
        out.settle(logged, &self.shared);
        out.forward.extend_from_slice(&notes);
        out.forward
    }
}
