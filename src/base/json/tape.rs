//! The hashing fast path: a listing read one definition at a time into a flat tape
//! that borrows its strings from the text, and each definition written canonically
//! from the tape as soon as it is read.
//!
//! [`Json`](super::Json) builds a tree (a block per object, array and long string)
//! that `verify` and `update` keep; `mcp-lock hash` only needs each definition's
//! name and canonical bytes, so here the tape and its buffers are reused from one
//! definition to the next and nothing is allocated per node. Whatever this reader
//! is unsure of (text that is not JSON, a listing shape other than the plain ones)
//! it leaves to the general reader, which also words the errors: the two cannot
//! disagree on what a text means, only this one declines more.

use super::lex::{self, Number};
use super::read::push_wtf8;
use super::write::{Sink, write_number, write_wtf8};
use super::{CanonError, JsonStr, MAX_DEPTH, cmp_wtf8, escape_pointer};

/// One node of a definition. Containers say where they end, so a reader can step
/// over one; an object's members follow it as name, value, name, value...
#[derive(Clone, Copy, Debug)]
enum Node {
    Null,
    True,
    False,
    /// An integer JCS writes exactly as it was sent (at most 15 digits, not `-0`).
    Digits {
        start: u32,
        len: u32,
    },
    Number(f64),
    /// A string with no escape: its bytes in the text.
    Raw {
        start: u32,
        len: u32,
    },
    /// A string with escapes, decoded (WTF-8, as [`JsonStr`]) into the tape's bytes.
    Decoded {
        start: u32,
        len: u32,
    },
    /// The node after the container's last one.
    Array {
        end: u32,
    },
    Object {
        end: u32,
    },
}

/// The text is not JSON (or not as this reader reads it): the general reader says why.
#[derive(Debug)]
struct Declined;

/// Where the definitions of a listing were found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listed {
    /// The text is an array of definitions.
    Array,
    /// `{"tools": [...]}`, a tools/list result.
    Tools,
    /// `{"result": {"tools": [...]}}`, a JSON-RPC answer holding one.
    ResultTools,
}

/// One definition on the tape, as the callback of [`stream_listing`] sees it.
pub struct TapeDefinition<'a> {
    text: &'a [u8],
    tape: &'a Tape,
}

#[derive(Default)]
struct Tape {
    nodes: Vec<Node>,
    decoded: Vec<u8>,
    /// Member indices of the objects being written, innermost last (in a cell: the
    /// callback sees the tape shared).
    order: std::cell::Cell<Vec<u32>>,
}

/// Reads a listing as `mcp-lock hash` reads one and calls `each` with every
/// definition of every array that could be its definitions, in the order read, with
/// where it was. Returns which array the listing's definitions are, or `None` when
/// the fast path does not apply (not JSON, a definition or error answer rather than a
/// listing, a repeated `tools` or `result`, or a text over 4 GiB): read it whole then.
pub fn stream_listing(
    text: &[u8],
    mut each: impl FnMut(Listed, &TapeDefinition<'_>),
) -> Option<Listed> {
    u32::try_from(text.len()).ok()?;
    let mut reader = Reader {
        text,
        pos: 0,
        tape: Tape::default(),
    };
    reader.skip_ws();
    let listed = match reader.peek() {
        Some(b'[') => {
            reader.stream_array(1, Listed::Array, &mut each).ok()?;
            Some(Listed::Array)
        }
        Some(b'{') => reader.listing_object(&mut each).ok()?,
        _ => None,
    };
    reader.skip_ws();
    (reader.pos == text.len()).then_some(listed?)
}

/// What the top level of a listing object held.
#[derive(Default)]
struct Seen {
    /// A member that makes it something else than a listing (`name`, `error`).
    other: bool,
    tools: usize,
    tools_array: bool,
    result: usize,
    result_tools: usize,
    result_tools_array: bool,
}

struct Reader<'t> {
    text: &'t [u8],
    pos: usize,
    tape: Tape,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), Declined> {
        if self.peek() != Some(byte) {
            return Err(Declined);
        }
        self.pos += 1;
        Ok(())
    }

    /// The top-level object: `tools` and `result.tools` streamed, the rest read and
    /// dropped. Only a plain listing gets an answer.
    fn listing_object(
        &mut self,
        each: &mut impl FnMut(Listed, &TapeDefinition<'_>),
    ) -> Result<Option<Listed>, Declined> {
        let mut seen = Seen::default();
        self.members(|r, key| {
            match key {
                b"tools" => {
                    seen.tools += 1;
                    if r.peek() == Some(b'[') {
                        seen.tools_array = true;
                        return r.stream_array(2, Listed::Tools, each);
                    }
                }
                b"result" => {
                    seen.result += 1;
                    if r.peek() == Some(b'{') {
                        return r.members(|r, key| {
                            if key == b"tools" {
                                seen.result_tools += 1;
                                if r.peek() == Some(b'[') {
                                    seen.result_tools_array = true;
                                    return r.stream_array(3, Listed::ResultTools, each);
                                }
                            }
                            r.skip_value(2)
                        });
                    }
                }
                b"name" | b"error" => seen.other = true,
                _ => {}
            }
            r.skip_value(1)
        })?;
        Ok(match seen {
            Seen { other: true, .. } => None,
            Seen {
                tools: 1,
                tools_array: true,
                ..
            } => Some(Listed::Tools),
            Seen {
                tools: 0,
                result: 1,
                result_tools: 1,
                result_tools_array: true,
                ..
            } => Some(Listed::ResultTools),
            _ => None,
        })
    }

    /// The members of the object at `pos`, each value read by `member` given the
    /// reader (at the value) and the decoded name.
    fn members(
        &mut self,
        mut member: impl FnMut(&mut Self, &[u8]) -> Result<(), Declined>,
    ) -> Result<(), Declined> {
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(Declined);
            }
            let mark = self.tape.mark();
            let key = self.string()?;
            self.skip_ws();
            self.expect(b':')?;
            self.skip_ws();
            let name = self.tape.bytes(self.text, key).to_vec();
            self.tape.reset(mark);
            member(self, &name)?;
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(Declined),
            }
        }
    }

    /// Reads a value onto the tape and drops it.
    fn skip_value(&mut self, depth: usize) -> Result<(), Declined> {
        let mark = self.tape.mark();
        self.value(depth)?;
        self.tape.reset(mark);
        Ok(())
    }

    /// The array at `pos`, each item (at `depth`) read onto an empty tape and given to
    /// `each` before the next is read.
    fn stream_array(
        &mut self,
        depth: usize,
        listed: Listed,
        each: &mut impl FnMut(Listed, &TapeDefinition<'_>),
    ) -> Result<(), Declined> {
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.skip_ws();
            self.tape.reset((0, 0));
            self.value(depth)?;
            each(
                listed,
                &TapeDefinition {
                    text: self.text,
                    tape: &self.tape,
                },
            );
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(Declined),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<(), Declined> {
        if depth > MAX_DEPTH {
            return Err(Declined);
        }
        let node = match self.peek().ok_or(Declined)? {
            b'{' => return self.container(depth, b'}'),
            b'[' => return self.container(depth, b']'),
            b'"' => self.string()?,
            b't' => self.literal(b"true", Node::True)?,
            b'f' => self.literal(b"false", Node::False)?,
            b'n' => self.literal(b"null", Node::Null)?,
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return Err(Declined),
        };
        self.tape.nodes.push(node);
        Ok(())
    }

    fn literal(&mut self, word: &[u8], node: Node) -> Result<Node, Declined> {
        if !self.text[self.pos..].starts_with(word) {
            return Err(Declined);
        }
        self.pos += word.len();
        Ok(node)
    }

    /// An object (`close` is `}`) or an array, its node first and its `end` set last.
    fn container(&mut self, depth: usize, close: u8) -> Result<(), Declined> {
        let at = self.tape.nodes.len();
        self.tape.nodes.push(Node::Null);
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(close) {
            self.pos += 1;
        } else {
            loop {
                self.skip_ws();
                if close == b'}' {
                    if self.peek() != Some(b'"') {
                        return Err(Declined);
                    }
                    let key = self.string()?;
                    self.tape.nodes.push(key);
                    self.skip_ws();
                    self.expect(b':')?;
                    self.skip_ws();
                }
                self.value(depth + 1)?;
                self.skip_ws();
                match self.peek() {
                    Some(b',') => self.pos += 1,
                    Some(c) if c == close => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(Declined),
                }
            }
        }
        let end = self.tape.nodes.len() as u32;
        self.tape.nodes[at] = if close == b'}' {
            Node::Object { end }
        } else {
            Node::Array { end }
        };
        Ok(())
    }

    /// A string (at its opening quote) as a node, not yet on the tape.
    fn string(&mut self) -> Result<Node, Declined> {
        self.pos += 1;
        let start = self.pos;
        self.plain_run()?;
        if self.peek() == Some(b'"') {
            self.pos += 1;
            return Ok(Node::Raw {
                start: start as u32,
                len: (self.pos - 1 - start) as u32,
            });
        }
        let decoded = &mut self.tape.decoded;
        let from = decoded.len();
        decoded.extend_from_slice(&self.text[start..self.pos]);
        loop {
            match self.peek().ok_or(Declined)? {
                b'"' => break,
                b'\\' => {
                    let c = lex::escape(self.text, &mut self.pos).map_err(|_| Declined)?;
                    push_wtf8(&mut self.tape.decoded, c);
                }
                _ => return Err(Declined),
            }
            let run = self.pos;
            self.plain_run()?;
            self.tape
                .decoded
                .extend_from_slice(&self.text[run..self.pos]);
        }
        self.pos += 1;
        let decoded = &self.tape.decoded;
        Ok(Node::Decoded {
            start: from as u32,
            len: (decoded.len() - from) as u32,
        })
    }

    /// Past the characters that stand for themselves, checking they are UTF-8.
    fn plain_run(&mut self) -> Result<(), Declined> {
        lex::plain_run(self.text, &mut self.pos).map_err(|_| Declined)
    }

    fn number(&mut self) -> Result<Node, Declined> {
        match lex::number(self.text, &mut self.pos).map_err(|_| Declined)? {
            // "-0" is written as 0, so it is not kept as written.
            Number::Short {
                negative: true,
                end,
                start,
            } if end - start == 2 && self.text[start + 1] == b'0' => Ok(Node::Number(-0.0)),
            Number::Short { start, end, .. } => Ok(Node::Digits {
                start: start as u32,
                len: (end - start) as u32,
            }),
            Number::Double(n) => Ok(Node::Number(n)),
        }
    }
}

impl Tape {
    fn mark(&self) -> (usize, usize) {
        (self.nodes.len(), self.decoded.len())
    }

    fn reset(&mut self, (nodes, decoded): (usize, usize)) {
        self.nodes.truncate(nodes);
        self.decoded.truncate(decoded);
    }

    /// The stored bytes of a string node (see [`JsonStr`]).
    fn bytes<'a>(&'a self, text: &'a [u8], node: Node) -> &'a [u8] {
        match node {
            Node::Raw { start, len } => &text[start as usize..(start + len) as usize],
            Node::Decoded { start, len } => &self.decoded[start as usize..(start + len) as usize],
            _ => &[],
        }
    }
}

/// Sorts an object's members by name (UTF-16 order, as JCS says), or returns the
/// first repeated name in that order. Members mostly come few and often sorted, so
/// they are sorted by insertion, which also meets any repeat on the way.
fn sort_members<'a>(members: &mut [u32], key: impl Fn(u32) -> &'a [u8]) -> Option<&'a [u8]> {
    if members.len() > 16 {
        members.sort_unstable_by(|&a, &b| cmp_wtf8(key(a), key(b)));
        return members
            .windows(2)
            .find(|w| key(w[0]) == key(w[1]))
            .map(|w| key(w[0]));
    }
    for i in 1..members.len() {
        let member = members[i];
        let mut at = i;
        while at > 0 {
            match cmp_wtf8(key(members[at - 1]), key(member)) {
                std::cmp::Ordering::Less => break,
                std::cmp::Ordering::Greater => {
                    members[at] = members[at - 1];
                    at -= 1;
                }
                std::cmp::Ordering::Equal => {
                    // Put back in order before looking for the first repeat.
                    members[at] = member;
                    members.sort_by(|&a, &b| cmp_wtf8(key(a), key(b)));
                    return members
                        .windows(2)
                        .find(|w| key(w[0]) == key(w[1]))
                        .map(|w| key(w[0]));
                }
            }
        }
        members[at] = member;
    }
    None
}

/// The index after the node at `at` and everything in it.
fn after(nodes: &[Node], at: usize) -> usize {
    match nodes[at] {
        Node::Array { end } | Node::Object { end } => end as usize,
        _ => at + 1,
    }
}

impl TapeDefinition<'_> {
    /// The definition's `name` as [`Json::get`](super::Json::get) and
    /// [`Json::as_str`](super::Json::as_str) read it: the last member so named, when it
    /// is a string of valid Unicode.
    pub fn name(&self) -> Option<String> {
        let nodes = &self.tape.nodes;
        let Node::Object { end } = *nodes.first()? else {
            return None;
        };
        let mut at = 1;
        let mut name = None;
        while at < end as usize {
            if self.tape.bytes(self.text, nodes[at]) == b"name" {
                name = Some(nodes[at + 1]);
            }
            at = after(nodes, at + 1);
        }
        match name? {
            node @ (Node::Raw { .. } | Node::Decoded { .. }) => {
                std::str::from_utf8(self.tape.bytes(self.text, node))
                    .ok()
                    .map(str::to_string)
            }
            _ => None,
        }
    }

    /// The RFC 8785 canonical form, as [`Json::canonical_into`](super::Json::canonical_into)
    /// writes it.
    pub fn canonical_into(&self, out: &mut impl Sink) -> Result<(), CanonError> {
        let mut order = self.tape.order.take();
        order.clear();
        let written = self.write(0, out, &mut order);
        self.tape.order.set(order);
        written
    }

    fn write(
        &self,
        at: usize,
        out: &mut impl Sink,
        order: &mut Vec<u32>,
    ) -> Result<(), CanonError> {
        let nodes = &self.tape.nodes;
        match nodes[at] {
            Node::Null => out.put(b"null"),
            Node::True => out.put(b"true"),
            Node::False => out.put(b"false"),
            Node::Digits { start, len } => {
                out.put(&self.text[start as usize..(start + len) as usize])
            }
            Node::Number(n) => write_number(n, out),
            // With no escape, the string as sent is its canonical form, quotes and all.
            Node::Raw { start, len } => {
                out.put(&self.text[start as usize - 1..(start + len) as usize + 1])
            }
            node @ Node::Decoded { .. } => write_wtf8(self.tape.bytes(self.text, node), out, false),
            Node::Array { end } => {
                out.put(b"[");
                let (mut item, mut index) = (at + 1, 0usize);
                while item < end as usize {
                    if index > 0 {
                        out.put(b",");
                    }
                    self.write(item, out, order)
                        .map_err(|e| e.under(&index.to_string()))?;
                    item = after(nodes, item);
                    index += 1;
                }
                out.put(b"]");
            }
            Node::Object { end } => {
                let from = order.len();
                let mut member = at + 1;
                while member < end as usize {
                    order.push(member as u32);
                    member = after(nodes, member + 1);
                }
                let key = |m: u32| self.tape.bytes(self.text, nodes[m as usize]);
                if let Some(name) = sort_members(&mut order[from..], key) {
                    let name = JsonStr::from_wtf8(name).to_string_lossy();
                    order.truncate(from);
                    return Err(CanonError::RepeatedMember {
                        pointer: format!("/{}", escape_pointer(&name)),
                        name,
                    });
                }
                out.put(b"{");
                for i in from..order.len() {
                    if i > from {
                        out.put(b",");
                    }
                    let member = order[i] as usize;
                    match nodes[member] {
                        // The name as sent, and the colon when it follows at once.
                        Node::Raw { start, len } => {
                            let end = (start + len) as usize + 1;
                            let colon = usize::from(self.text.get(end) == Some(&b':'));
                            out.put(&self.text[start as usize - 1..end + colon]);
                            if colon == 0 {
                                out.put(b":");
                            }
                        }
                        _ => {
                            self.write(member, out, order)?;
                            out.put(b":");
                        }
                    }
                    if let Err(e) = self.write(member + 1, out, order) {
                        let name = JsonStr::from_wtf8(key(order[i])).to_string_lossy();
                        order.truncate(from);
                        return Err(e.under(&escape_pointer(&name)));
                    }
                }
                order.truncate(from);
                out.put(b"}");
            }
        }
        Ok(())
    }
}
