//! A Server-Sent Events parser over raw bytes, bounded so a hostile server cannot make
//! mcp-lock buffer without limit.
//!
//! It follows the WHATWG event-stream rules that matter for MCP: lines end in CRLF, LF
//! or CR (a CRLF may be split across reads), a leading BOM is dropped, `:` starts a
//! comment, `data` lines join with `\n`, a blank line dispatches, and an event whose
//! data is empty is not dispatched (server-everything opens with one).

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The `event` field; `message` when absent.
    pub name: String,
    pub data: String,
}

/// An event grew past the size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("event larger than {0} bytes")]
pub struct TooLarge(pub usize);

/// Incremental parser: feed it bytes as they arrive.
#[derive(Debug)]
pub struct Parser {
    max: usize,
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    name: String,
    /// The last byte fed was a CR: an LF next belongs to the same line end.
    after_cr: bool,
    /// Still at the very start of the stream, where a BOM may appear.
    at_start: bool,
    /// The last `id` field seen (the stream's last event ID), for a reconnection.
    last_id: Option<String>,
    /// The last `retry` field seen, in milliseconds.
    retry: Option<u64>,
}

impl Parser {
    /// A parser refusing events (and lines) longer than `max` bytes.
    pub fn new(max: usize) -> Self {
        Parser {
            max,
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            name: String::new(),
            after_cr: false,
            at_start: true,
            last_id: None,
            retry: None,
        }
    }

    /// A parser for the stream opened again after this one dropped: it keeps only the
    /// last event ID and the retry delay (as the SSE spec keeps them across
    /// connections); a line or event the old stream left half-sent is dropped, and the
    /// new stream may start with a BOM again.
    pub fn reconnected(&self) -> Self {
        Parser {
            last_id: self.last_id.clone(),
            retry: self.retry,
            ..Parser::new(self.max)
        }
    }

    /// The last event ID the stream set, to send as `Last-Event-ID` on reconnecting.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The reconnection delay the stream asked for, in milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry
    }

    /// Consumes `bytes`, returning the events they completed.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Result<Vec<Event>, TooLarge> {
        let mut events = Vec::new();
        if bytes.is_empty() {
            // Nothing to learn, and a pending CR must still meet its LF.
            return Ok(events);
        }
        if self.at_start {
            // The BOM may itself arrive split; wait until three bytes are known.
            self.line.extend_from_slice(bytes);
            if self.line.len() < 3 && b"\xEF\xBB\xBF".starts_with(&self.line) {
                return Ok(events);
            }
            self.at_start = false;
            let pending = std::mem::take(&mut self.line);
            let start = if pending.starts_with(b"\xEF\xBB\xBF") {
                3
            } else {
                0
            };
            return self.feed_lines(&pending[start..], events);
        }
        if self.after_cr && bytes.first() == Some(&b'\n') {
            bytes = &bytes[1..];
        }
        self.after_cr = false;
        self.feed_lines(bytes, std::mem::take(&mut events))
    }

    fn feed_lines(&mut self, bytes: &[u8], mut events: Vec<Event>) -> Result<Vec<Event>, TooLarge> {
        let mut rest = bytes;
        while let Some(i) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&rest[..i]);
            self.check()?;
            let line = std::mem::take(&mut self.line);
            if let Some(event) = self.take_line(line) {
                events.push(event);
            }
            let crlf = rest[i] == b'\r' && rest.get(i + 1) == Some(&b'\n');
            if rest[i] == b'\r' && i + 1 == rest.len() {
                self.after_cr = true;
            }
            rest = &rest[i + 1 + usize::from(crlf)..];
        }
        self.line.extend_from_slice(rest);
        self.check()?;
        Ok(events)
    }

    fn check(&self) -> Result<(), TooLarge> {
        if self.line.len() + self.data.len() > self.max {
            Err(TooLarge(self.max))
        } else {
            Ok(())
        }
    }

    fn take_line(&mut self, mut line: Vec<u8>) -> Option<Event> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line[0] == b':' {
            return None;
        }
        // Where the field name ends and its value starts.
        let (field_end, value_start) = match line.iter().position(|&b| b == b':') {
            Some(i) if line.get(i + 1) == Some(&b' ') => (i, i + 2),
            Some(i) => (i, i + 1),
            None => (line.len(), line.len()),
        };
        // An event's first data line is moved, not copied: a 40 MB answer is then
        // held once.
        if &line[..field_end] == b"data" && !self.has_data {
            line.drain(..value_start);
            self.data = line;
            self.has_data = true;
            return None;
        }
        let (field, value) = (&line[..field_end], &line[value_start..]);
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => self.name = String::from_utf8_lossy(value).into_owned(),
            // Kept for a reconnection (the guard's GET stream); an id with NUL is ignored.
            b"id" if !value.contains(&0) => {
                self.last_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" => {
                if let Ok(ms) = std::str::from_utf8(value).unwrap_or("").parse() {
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<Event> {
        let name = std::mem::take(&mut self.name);
        let data = std::mem::take(&mut self.data);
        let had_data = std::mem::take(&mut self.has_data);
        if !had_data || data.is_empty() {
            return None;
        }
        Some(Event {
            name: if name.is_empty() {
                "message".into()
            } else {
                name
            },
            data: String::from_utf8(data)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &[u8], piece: usize) -> Vec<Event> {
        let mut parser = Parser::new(1024);
        let mut events = Vec::new();
        for chunk in input.chunks(piece) {
            events.extend(parser.feed(chunk).unwrap());
        }
        events
    }

    fn message(data: &str) -> Event {
        Event {
            name: "message".into(),
            data: data.into(),
        }
    }

    #[test]
    fn every_split_of_a_stream_gives_the_same_events() {
        let input = "\u{feff}: comment\r\nevent: endpoint\r\ndata: /message?s=1\r\n\r\nid: 7\ndata: {\"a\":\ndata:1}\n\n\rdata: é\r\r".as_bytes();
        let expected = vec![
            Event {
                name: "endpoint".into(),
                data: "/message?s=1".into(),
            },
            message("{\"a\":\n1}"),
            message("é"),
        ];
        for piece in 1..=input.len() {
            assert_eq!(
                parse_in_pieces(input, piece),
                expected,
                "piece size {piece}"
            );
        }
    }

    #[test]
    fn events_with_empty_data_are_skipped() {
        let events = parse_in_pieces(b"id: 1\ndata:\n\nevent: x\n\ndata: ok\n\n", 4);
        assert_eq!(events, vec![message("ok")]);
    }

    #[test]
    fn only_one_leading_space_is_removed_from_a_value() {
        let events = parse_in_pieces(b"data:  two\n\ndata:none\n\n", 100);
        assert_eq!(events, vec![message(" two"), message("none")]);
    }

    #[test]
    fn a_stream_too_short_for_a_bom_still_parses() {
        let mut parser = Parser::new(100);
        assert!(parser.feed(b"\n").unwrap().is_empty());
        assert_eq!(parser.feed(b"data: x\n\n").unwrap(), vec![message("x")]);
    }

    #[test]
    fn an_event_past_the_limit_is_refused() {
        let mut parser = Parser::new(16);
        assert!(parser.feed(b"data: 0123456789\n").is_ok());
        assert_eq!(parser.feed(b"data: 0123456789\n"), Err(TooLarge(16)));
        let mut parser = Parser::new(16);
        assert_eq!(parser.feed(&[b'x'; 40]), Err(TooLarge(16)));
    }

    #[test]
    fn a_reconnected_parser_keeps_the_id_and_retry_but_drops_a_half_sent_event() {
        let mut first = Parser::new(1 << 20);
        let events = first
            .feed(b"retry: 1500\nid: 41\ndata: whole\n\ndata: half")
            .unwrap();
        assert_eq!(events.len(), 1);
        let mut again = first.reconnected();
        assert_eq!(again.last_event_id(), Some("41"));
        assert_eq!(again.retry_ms(), Some(1500));
        let events = again.feed("\u{feff}data: next\n\n".as_bytes()).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "next");
    }
}
