//! What a client received from a server, given as documents rather than read over a
//! connection: `mcp-lock check-listing` and the Python and TypeScript helpers that
//! check an agent's own session. The documents become the [`Fetched`] a connection
//! would have produced, so the comparison, classes and policy are `verify`'s own.

use std::time::Duration;

use crate::base::json::Json;
use crate::contract::hash::{HashedTool, instructions_hash};
use crate::contract::surface::{Kind, Surface};
use crate::live::guard::client::ClientHello;
use crate::records::lock::LockedServer;
use crate::servers::client::{Fetched, Listing, Outcome, ServerSession};

/// The bounds a listing is read within: verify's own (`--max-tools`, `--max-pages`,
/// `--max-message-bytes`). Past one, reading stops and the listing is incomplete,
/// as verify stops reading a server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Definitions of one kind.
    pub max_tools: usize,
    /// Pages of one kind.
    pub max_pages: usize,
    /// One document (a page, a message): what one server message may be.
    pub max_message_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        let client = crate::servers::client::ClientOptions::default();
        Limits {
            max_tools: client.max_tools,
            max_pages: client.max_pages,
            max_message_bytes: client.max_message_bytes,
        }
    }
}

/// The session members a client saw in the `initialize` (or `server/discover`) result.
#[derive(Debug, Clone, Default)]
pub struct SeenSession {
    pub protocol_version: Option<String>,
    pub server_info: Option<Json>,
    /// `Some(None)`: the client saw no instructions; `None`: not given.
    pub instructions: Option<Option<String>>,
    pub list_changed: Option<bool>,
    /// The capabilities the server declared (the `capabilities` member's names).
    pub declared: Option<Vec<String>>,
}

/// One kind's pages as received, in order.
#[derive(Debug, Clone, Default)]
struct Pages {
    definitions: Vec<Json>,
    pages: usize,
    /// The `nextCursor` of the last page: a page the input does not have.
    missing: Option<String>,
}

/// Everything read from the documents.
#[derive(Debug, Clone, Default)]
pub struct Received {
    pub session: SeenSession,
    kinds: [Option<Pages>; 4],
    limits: Limits,
    /// Why reading stopped before the input's end (a limit): the listing is
    /// incomplete.
    stopped: Option<String>,
}

fn slot(kind: Kind) -> usize {
    match kind {
        Kind::Tool => 0,
        Kind::Prompt => 1,
        Kind::ResourceTemplate => 2,
        Kind::Resource => 3,
    }
}

impl Received {
    /// Reads documents in order within the default limits. `place` names each for
    /// messages ("stdin", a file).
    pub fn read<'a>(documents: impl IntoIterator<Item = (Json, &'a str)>) -> Result<Self, String> {
        let mut received = Received::default();
        for (document, place) in documents {
            received.take_document(document, place)?;
            if received.stopped() {
                break;
            }
        }
        received.finish()
    }

    /// Nothing read yet; reading stops at `limits`.
    pub fn new(limits: Limits) -> Self {
        Received {
            limits,
            ..Received::default()
        }
    }

    /// Takes one document (an error: the input is not a listing). Once a limit is
    /// passed, [`Received::stopped`] says so and nothing more should be read.
    pub fn take_document(&mut self, document: Json, place: &str) -> Result<(), String> {
        if self.stopped() {
            return Ok(());
        }
        self.take(document, place)
    }

    /// Reading stops here, for `why` (a limit): the listing is incomplete.
    pub fn stop(&mut self, why: String) {
        self.stopped.get_or_insert(why);
    }

    /// Whether a limit stopped the reading.
    pub fn stopped(&self) -> bool {
        self.stopped.is_some()
    }

    /// Everything read: an error when the input had no tools/list result (unless a
    /// limit stopped the reading first, which makes the listing incomplete).
    pub fn finish(self) -> Result<Self, String> {
        if self.kinds[slot(Kind::Tool)].is_none() && !self.stopped() {
            return Err(
                "the input has no tools/list result (a document with a \"tools\" array)".into(),
            );
        }
        Ok(self)
    }

    fn take(&mut self, document: Json, place: &str) -> Result<(), String> {
        if self.stopped() {
            return Ok(());
        }
        let document = match document {
            Json::Array(items) => {
                for item in items {
                    self.take(item, place)?;
                }
                return Ok(());
            }
            Json::Object(_) => document,
            _ => return Err(format!("{place}: a document is not a JSON object or array")),
        };
        let mut document = document;
        if document.get("jsonrpc").is_some() {
            if let Some(error) = document.get("error") {
                let message = error
                    .get("message")
                    .and_then(Json::as_str)
                    .unwrap_or_default();
                return Err(format!(
                    "{place}: a JSON-RPC error answer ({message:?}) is not a listing; give the pages that were received"
                ));
            }
            match document.take("result") {
                Some(result) => return self.take(result, place),
                None => return Err(format!("{place}: a JSON-RPC message without a result")),
            }
        }
        let kinds: Vec<Kind> = Kind::ALL
            .into_iter()
            .filter(|k| document.get(k.list_method().1).is_some())
            .collect();
        let cursor = match document.get("nextCursor") {
            None | Some(Json::Null) => None,
            Some(Json::String(s)) => Some(s.to_string_lossy()),
            Some(_) => return Err(format!("{place}: \"nextCursor\" is not a string")),
        };
        if cursor.is_some() && kinds.len() != 1 {
            return Err(format!(
                "{place}: \"nextCursor\" belongs to one list page; this document has {}",
                if kinds.is_empty() {
                    "no definitions".to_string()
                } else {
                    format!("{} lists", kinds.len())
                }
            ));
        }
        let session = self.take_session(&document, place)?;
        if kinds.is_empty() && !session {
            return Err(format!(
                "{place}: a document is neither a list page (\"tools\", \"prompts\", \"resourceTemplates\", \"resources\") nor a session (\"serverInfo\", \"instructions\", \"capabilities\", \"protocolVersion\")"
            ));
        }
        for kind in kinds {
            let member = kind.list_method().1;
            let Some(Json::Array(definitions)) = document.take(member) else {
                return Err(format!("{place}: \"{member}\" is not an array"));
            };
            let pages = self.kinds[slot(kind)].get_or_insert_with(Pages::default);
            pages.definitions.extend(definitions);
            pages.pages += 1;
            pages.missing = cursor.clone();
            // verify's bounds, in verify's words.
            let (method, _) = kind.list_method();
            let prefix = if kind == Kind::Tool {
                String::new()
            } else {
                format!("{method}: ")
            };
            if pages.definitions.len() > self.limits.max_tools {
                // What is past the limit is not kept.
                pages.definitions.truncate(self.limits.max_tools + 1);
                self.stopped = Some(format!(
                    "{prefix}runaway listing: more than {} (raise --max-tools if this is real)",
                    crate::base::text::count(self.limits.max_tools, kind.noun())
                ));
            } else if pages.pages > self.limits.max_pages {
                self.stopped = Some(format!(
                    "{prefix}runaway listing: more than {} (raise --max-pages if this is real)",
                    crate::base::text::count(self.limits.max_pages, "page")
                ));
            }
        }
        Ok(())
    }

    /// Takes the session members of a document; whether it had any.
    fn take_session(&mut self, document: &Json, place: &str) -> Result<bool, String> {
        let seen = &mut self.session;
        let mut any = false;
        if let Some(version) = document.get("protocolVersion") {
            let Some(version) = version.as_str() else {
                return Err(format!("{place}: \"protocolVersion\" is not a string"));
            };
            seen.protocol_version = Some(version);
            any = true;
        }
        if let Some(info) = document.get("serverInfo") {
            if let Err(e) = info.canonical() {
                return Err(format!("{place}: serverInfo has {e}"));
            }
            seen.server_info = Some(info.clone());
            any = true;
        }
        match document.get("instructions") {
            None => {}
            Some(Json::Null) => {
                seen.instructions = Some(None);
                any = true;
            }
            Some(Json::String(s)) => {
                seen.instructions = Some(Some(s.to_string_lossy()));
                any = true;
            }
            Some(_) => return Err(format!("{place}: \"instructions\" is not a string")),
        }
        if let Some(capabilities) = document.get("capabilities") {
            if !capabilities.is_object() {
                return Err(format!("{place}: \"capabilities\" is not an object"));
            }
            let list_changed = capabilities.get("tools").and_then(|t| t.get("listChanged"));
            seen.list_changed = Some(matches!(list_changed, Some(Json::Bool(true))));
            if let Json::Object(members) = capabilities {
                seen.declared = Some(members.iter().map(|(k, _)| k.to_string_lossy()).collect());
            }
            any = true;
        }
        Ok(any)
    }

    /// What a connection under `pin`'s profile would have produced. Session members
    /// the input does not give are taken as pinned (nothing to judge them by); kinds
    /// it does not give, or that `surface` leaves out, are not judged, except that a
    /// kind whose capability the server's `capabilities` do not declare was seen to
    /// be empty (as verify sees it). A kind whose last page names a next one makes the
    /// whole listing incomplete.
    pub fn into_fetched(
        self,
        transport: &str,
        pin: Option<&LockedServer>,
        surface: Surface,
    ) -> Fetched {
        let seen = self.session;
        let undeclared = |kind: Kind| {
            seen.declared
                .as_ref()
                .is_some_and(|names| !names.iter().any(|n| n == kind.capability()))
        };
        let mut kinds = self.kinds;
        for kind in surface.extra_kinds() {
            if kinds[slot(kind)].is_none() && undeclared(kind) {
                kinds[slot(kind)] = Some(Pages::default());
            }
        }
        let instructions_hash = match &seen.instructions {
            Some(given) => given.as_deref().map(instructions_hash),
            None => pin.and_then(|p| p.instructions_hash.clone()),
        };
        let instructions = seen.instructions.flatten();
        let session = ServerSession {
            protocol_version: seen
                .protocol_version
                .or_else(|| pin.map(|p| p.protocol_version.clone()))
                .unwrap_or_default(),
            // How the client reached the server is not in what it received: the
            // pinned transport (found when pinned: a URL may have fallen back to
            // HTTP+SSE) and login issuer stand, so they are not judged.
            transport: pin.map_or(transport, |p| p.reached.transport_name()).into(),
            server_info: seen
                .server_info
                .or_else(|| pin.map(|p| p.server_info.clone()))
                .unwrap_or(Json::Null),
            list_changed: seen
                .list_changed
                .or_else(|| pin.map(|p| p.list_changed))
                .unwrap_or(false),
            instructions_hash,
            instructions,
            // The client's own identity is the profile's: what it declared is not
            // in what it received.
            client_capabilities: pin
                .map(|p| p.client_capabilities.to_value())
                .unwrap_or_default(),
            client_info: pin.map(|p| p.client_info.to_value()).unwrap_or_default(),
            oauth_issuer: match pin.map(|p| &p.reached) {
                Some(crate::records::lock::Reached::Remote { oauth_issuer, .. }) => {
                    oauth_issuer.clone()
                }
                _ => None,
            },
        };
        let mut listing = Listing::default();
        let mut missing = self.stopped;
        let [tools, rest @ ..] = kinds;
        // Only a limit that stopped the reading leaves no tools page: incomplete.
        let tools = tools.unwrap_or_default();
        listing.pages = tools.pages;
        for (kind, pages) in Kind::ALL
            .into_iter()
            .zip(std::iter::once(Some(tools)).chain(rest))
        {
            let Some(pages) = pages else { continue };
            if !surface.covers(kind) {
                continue;
            }
            if missing.is_none()
                && let Some(cursor) = &pages.missing
            {
                missing = Some(format!(
                    "{} page {}: its nextCursor {cursor:?} names a page the input does not have",
                    kind.list_method().0,
                    pages.pages
                ));
            }
            let hashed: Vec<HashedTool> = pages
                .definitions
                .into_iter()
                .map(|d| HashedTool::keyed(d, kind.key_member()))
                .collect();
            match kind {
                Kind::Tool => listing.tools = hashed,
                _ => *listing.kind_mut(kind) = Some(hashed),
            }
        }
        let outcome = match missing {
            Some(error) => Outcome::Incomplete {
                session,
                listing,
                error,
            },
            None => Outcome::Complete { session, listing },
        };
        Fetched {
            outcome,
            stderr_tail: Vec::new(),
            ignored_lines: 0,
            notifications: 0,
            elapsed: Duration::ZERO,
            oauth_issuer: None,
        }
    }
}

/// The longest `--handshake` read: an `initialize` request is a few hundred bytes.
pub const MAX_HANDSHAKE_BYTES: usize = 1024 * 1024;

/// What the client declared when it connected (`check-listing --handshake`): the
/// `initialize` params it sent (`protocolVersion`, `capabilities`, `clientInfo`), or
/// the whole `initialize` or `server/discover` request. Read as the guard reads a
/// handshake ([`ClientHello::from_request`]); `source` names it in errors.
pub fn read_handshake(text: &str, source: &str) -> Result<ClientHello, String> {
    let json = Json::parse(text).map_err(|e| format!("{source}: not JSON: {e}"))?;
    if json.has_repeated_member() {
        return Err(format!(
            "{source}: a member name is repeated; readers disagree on what it means"
        ));
    }
    if !json.is_object() {
        return Err(format!(
            "{source}: the handshake is not a JSON object: give the initialize params the client sent, or its initialize (or server/discover) request"
        ));
    }
    let (method, params) = match json.get("method") {
        Some(method) => {
            let method = method.as_str().unwrap_or_default();
            (method, json.get("params"))
        }
        None => ("initialize".to_string(), Some(&json)),
    };
    let hello = ClientHello::from_request(&method, params).ok_or_else(|| {
        format!("{source}: {method:?} is not a handshake request (initialize or server/discover)")
    })?;
    let raw = params.map(Json::to_value).unwrap_or_default();
    let (capabilities, version) = if hello.modern {
        let meta = &raw["_meta"];
        (
            &meta["io.modelcontextprotocol/clientCapabilities"],
            &meta["io.modelcontextprotocol/protocolVersion"],
        )
    } else {
        (&raw["capabilities"], &raw["protocolVersion"])
    };
    if !capabilities.is_object() {
        return Err(format!(
            "{source}: the handshake declares no capabilities object (a client that declares none sends {{}})"
        ));
    }
    if !(version.is_null() || version.is_string()) {
        return Err(format!("{source}: the protocol version is not a string"));
    }
    Ok(hello)
}

/// The client's capabilities in `fetched` are those it declared: what the report's
/// `client_capabilities` note compares with the pinned ones.
pub fn declare(fetched: &mut Fetched, hello: &ClientHello) {
    if let Outcome::Complete { session, .. } | Outcome::Incomplete { session, .. } =
        &mut fetched.outcome
    {
        session.client_capabilities = hello.capabilities.clone();
    }
}

/// Why [`Documents`] gave no document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocumentError {
    /// The input is not JSON documents (or could not be read): a usage error.
    Invalid(String),
    /// A document is larger than the message bound: the listing is incomplete.
    TooLarge(String),
}

/// The JSON documents of one input, read as a stream: one JSON text after another
/// (a whole document, or one per line as JSON Lines), and the members of a
/// top-level array each a document of its own. Only one document is held at a time,
/// and none larger than `max` bytes: memory stays bounded whatever the input's size.
pub struct Documents<R> {
    reader: R,
    place: String,
    max: usize,
    /// The line the reader is on, from 1.
    line: usize,
    /// Bytes read so far.
    offset: usize,
    /// Inside a top-level array (the line it opened on), and whether a member was
    /// just read (a `,` or `]` must follow).
    array: Option<usize>,
    after_member: bool,
}

impl<R: std::io::BufRead> Documents<R> {
    pub fn new(reader: R, place: &str, max: usize) -> Self {
        Documents {
            reader,
            place: place.to_string(),
            max,
            line: 1,
            offset: 0,
            array: None,
            after_member: false,
        }
    }

    fn peek(&mut self) -> Result<Option<u8>, DocumentError> {
        loop {
            match self.reader.fill_buf() {
                Ok(buf) => return Ok(buf.first().copied()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(DocumentError::Invalid(format!(
                        "cannot read {}: {e}",
                        self.place
                    )));
                }
            }
        }
    }

    fn bump(&mut self, byte: u8) {
        self.reader.consume(1);
        self.offset += 1;
        if byte == b'\n' {
            self.line += 1;
        }
    }

    fn invalid(&self, line: usize, what: &str) -> DocumentError {
        DocumentError::Invalid(if line == 1 {
            format!("{}: {what}", self.place)
        } else {
            format!("{}: line {line}: {what}", self.place)
        })
    }

    /// The next document, `None` at the input's end.
    pub fn next_document(&mut self) -> Result<Option<Json>, DocumentError> {
        loop {
            let Some(byte) = self.peek()? else {
                return match self.array {
                    Some(line) => {
                        Err(self.invalid(line, "not JSON: the array that opens here is not closed"))
                    }
                    None => Ok(None),
                };
            };
            match byte {
                b' ' | b'\t' | b'\r' | b'\n' => self.bump(byte),
                b',' if self.array.is_some() && self.after_member => {
                    self.bump(byte);
                    self.after_member = false;
                }
                b']' if self.array.is_some() => {
                    self.bump(byte);
                    self.array = None;
                    self.after_member = false;
                }
                b'[' if self.array.is_none() => {
                    self.array = Some(self.line);
                    self.bump(byte);
                }
                _ if self.after_member => {
                    let line = self.line;
                    return Err(
                        self.invalid(line, "not JSON: expected `,` or `]` after an array member")
                    );
                }
                // An array's member may be anything: what is not a document is said
                // so when it is taken.
                _ if byte == b'{' || self.array.is_some() => return self.document().map(Some),
                _ => {
                    let line = self.line;
                    return Err(self.invalid(line, "a document is not a JSON object or array"));
                }
            }
        }
    }

    /// One value's text, up to where it closes (an array member: up to the `,` or
    /// `]` after it), parsed.
    fn document(&mut self) -> Result<Json, DocumentError> {
        let (line, start) = (self.line, self.offset);
        let mut text = Vec::new();
        let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
        loop {
            let buf = loop {
                match self.reader.fill_buf() {
                    Ok(buf) => break buf,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        return Err(DocumentError::Invalid(format!(
                            "cannot read {}: {e}",
                            self.place
                        )));
                    }
                }
            };
            if buf.is_empty() {
                break;
            }
            let mut end = None;
            let mut lines = 0;
            for (i, &b) in buf.iter().enumerate() {
                if b == b'\n' {
                    lines += 1;
                }
                if in_string {
                    if escaped {
                        escaped = false;
                    } else if b == b'\\' {
                        escaped = true;
                    } else if b == b'"' {
                        in_string = false;
                    }
                    continue;
                }
                match b {
                    b'"' => in_string = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' if depth == 0 => {
                        end = Some(i);
                        break;
                    }
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 && self.array.is_none() {
                            end = Some(i + 1);
                            break;
                        }
                    }
                    b',' if depth == 0 => {
                        end = Some(i);
                        break;
                    }
                    _ => {}
                }
            }
            let take = end.unwrap_or(buf.len());
            if text.len() + take > self.max {
                return Err(DocumentError::TooLarge(format!(
                    "{}: the document at line {line} is larger than {} bytes (--max-message-bytes), more than one server message can be; raise --max-message-bytes if this is real",
                    self.place, self.max
                )));
            }
            text.extend_from_slice(&buf[..take]);
            self.reader.consume(take);
            self.offset += take;
            self.line += lines;
            if end.is_some() {
                break;
            }
        }
        if self.array.is_some() {
            self.after_member = true;
        }
        let text = String::from_utf8(text).map_err(|e| {
            DocumentError::Invalid(format!(
                "{}: not UTF-8 (at byte {})",
                self.place,
                start + e.utf8_error().valid_up_to()
            ))
        })?;
        Json::parse(&text).map_err(|e| self.invalid(line, &format!("not JSON: {e}")))
    }
}

/// The JSON documents of one input: the whole text as one document, or else one per
/// non-blank line (JSON Lines).
pub fn documents(text: &str, place: &str) -> Result<Vec<Json>, String> {
    match Json::parse(text) {
        Ok(document) => Ok(vec![document]),
        Err(whole) => {
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            if lines.len() < 2 {
                return Err(format!("{place}: not JSON: {whole}"));
            }
            lines
                .iter()
                .enumerate()
                .map(|(i, line)| {
                    Json::parse(line).map_err(|e| format!("{place}: line {}: not JSON: {e}", i + 1))
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Received, String> {
        let docs = documents(text, "input")?;
        Received::read(docs.into_iter().map(|d| (d, "input")))
    }

    fn outcome(text: &str) -> Outcome {
        read(text)
            .unwrap()
            .into_fetched("stdio", None, Surface::default())
            .outcome
    }

    #[test]
    fn pages_of_one_kind_are_joined_in_order() {
        let text = r#"[{"tools":[{"name":"a"}],"nextCursor":"2"},{"tools":[{"name":"b"}]}]"#;
        let Outcome::Complete { listing, .. } = outcome(text) else {
            panic!("complete")
        };
        let names: Vec<_> = listing
            .tools
            .iter()
            .map(|t| t.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(listing.pages, 2);
    }

    #[test]
    fn a_last_page_with_a_cursor_makes_the_listing_incomplete() {
        let text = r#"{"tools":[{"name":"a"}],"nextCursor":""}"#;
        let Outcome::Incomplete { error, .. } = outcome(text) else {
            panic!("incomplete")
        };
        assert!(error.contains("tools/list page 1"), "{error}");
    }

    #[test]
    fn json_lines_and_json_rpc_answers_are_read() {
        let text = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"serverInfo\":{\"name\":\"s\"},\"instructions\":\"hi\"}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[]}}\n";
        let Outcome::Complete { session, .. } = outcome(text) else {
            panic!("complete")
        };
        assert_eq!(session.instructions.as_deref(), Some("hi"));
        assert_eq!(session.instructions_hash, Some(instructions_hash("hi")));
    }

    #[test]
    fn input_without_tools_or_with_an_ambiguous_cursor_is_refused() {
        assert!(
            read(r#"{"prompts":[]}"#)
                .unwrap_err()
                .contains("no tools/list")
        );
        let err = read(r#"{"tools":[],"prompts":[],"nextCursor":"x"}"#).unwrap_err();
        assert!(err.contains("belongs to one list page"), "{err}");
        assert!(read(r#"{"hello":1}"#).unwrap_err().contains("neither"));
        assert!(read("[1]").unwrap_err().contains("not a JSON object"));
    }

    #[test]
    fn kinds_the_surface_leaves_out_are_not_judged() {
        let text = r#"[{"tools":[]},{"resources":[{"uri":"x://a"}]}]"#;
        let Outcome::Complete { listing, .. } = outcome(text) else {
            panic!("complete")
        };
        assert!(listing.resources.is_none());
    }
}
