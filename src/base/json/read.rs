//! The strict reader: JSON text to a [`Json`] tree.

use super::lex::{self, LexError, Number};
use super::{Json, JsonStr, MAX_DEPTH, ParseError};

/// Reads one JSON text; surrounding whitespace is allowed, anything else is not.
pub(super) fn parse(text: &[u8]) -> Result<Json, ParseError> {
    let mut reader = Reader {
        text,
        pos: 0,
        scratch: Vec::new(),
        members: Vec::new(),
        items: Vec::new(),
    };
    reader.skip_ws();
    let value = reader.value(0)?;
    reader.skip_ws();
    if reader.pos != reader.text.len() {
        return Err(reader.error("unexpected text after the JSON value"));
    }
    Ok(value)
}

struct Reader<'a> {
    text: &'a [u8],
    pos: usize,
    /// A string with escapes being read, reused from string to string: each string
    /// then costs one allocation of its exact size, or none when short.
    scratch: Vec<u8>,
    /// The members of the objects being read, innermost last; each object takes its
    /// own off the top when it closes, in one allocation of its exact size.
    members: Vec<(JsonStr, Json)>,
    /// The same for arrays.
    items: Vec<Json>,
}

impl Reader<'_> {
    fn error(&self, message: &str) -> ParseError {
        let upto = &self.text[..self.pos.min(self.text.len())];
        let line = upto.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = upto.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&upto[line_start..]).chars().count() + 1;
        ParseError {
            message: message.to_string(),
            line,
            column,
            offset: upto.len(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect_literal(&mut self, word: &str, value: Json) -> Result<Json, ParseError> {
        if self.text[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.error("expected a JSON value"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested deeper than 256 levels"));
        }
        match self.peek() {
            None => Err(self.error("unexpected end of input")),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Json::String(self.string()?)),
            Some(b't') => self.expect_literal("true", Json::Bool(true)),
            Some(b'f') => self.expect_literal("false", Json::Bool(false)),
            Some(b'n') => self.expect_literal("null", Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error("expected a JSON value")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json, ParseError> {
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Json::Object(Vec::new()));
        }
        let start = self.members.len();
        let read = self.members_into(depth);
        let members: Vec<(JsonStr, Json)> = self.members.drain(start..).collect();
        read.map(|()| Json::Object(members))
    }

    fn members_into(&mut self, depth: usize) -> Result<(), ParseError> {
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a member name"));
            }
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.error("expected ':' after a member name"));
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value(depth + 1)?;
            self.members.push((key, value));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.error("expected ',' or '}' in an object")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Json, ParseError> {
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Json::Array(Vec::new()));
        }
        let start = self.items.len();
        let read = self.items_into(depth);
        let items: Vec<Json> = self.items.drain(start..).collect();
        read.map(|()| Json::Array(items))
    }

    fn items_into(&mut self, depth: usize) -> Result<(), ParseError> {
        loop {
            self.skip_ws();
            let item = self.value(depth + 1)?;
            self.items.push(item);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.error("expected ',' or ']' in an array")),
            }
        }
    }

    fn number(&mut self) -> Result<Json, ParseError> {
        match lex::number(self.text, &mut self.pos).map_err(|e| self.lex_error(e))? {
            Number::Short {
                start,
                end,
                negative,
            } => Ok(Json::Number(Number::short_value(
                self.text, start, end, negative,
            ))),
            Number::Double(n) => Ok(Json::Number(n)),
        }
    }

    /// A failure of the shared lexer, as an error at its place.
    fn lex_error(&mut self, e: LexError) -> ParseError {
        self.pos = e.at;
        self.error(e.message)
    }

    fn string(&mut self) -> Result<JsonStr, ParseError> {
        self.pos += 1;
        let start = self.pos;
        self.plain_run()?;
        // Most strings have no escape: they are their own bytes in the text.
        if self.peek() == Some(b'"') {
            self.pos += 1;
            return Ok(JsonStr::from_wtf8(&self.text[start..self.pos - 1]));
        }
        let mut bytes = std::mem::take(&mut self.scratch);
        bytes.clear();
        bytes.extend_from_slice(&self.text[start..self.pos]);
        let read = self.string_into(&mut bytes);
        let string = read.map(|()| JsonStr::from_wtf8(&bytes));
        self.scratch = bytes;
        string
    }

    /// Moves past characters that stand for themselves, checking they are UTF-8.
    fn plain_run(&mut self) -> Result<(), ParseError> {
        lex::plain_run(self.text, &mut self.pos).map_err(|e| self.lex_error(e))
    }

    /// The rest of a string after its first escape, onto `bytes`.
    fn string_into(&mut self, bytes: &mut Vec<u8>) -> Result<(), ParseError> {
        loop {
            match self.peek() {
                None => return Err(self.error("unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    let c = lex::escape(self.text, &mut self.pos).map_err(|e| self.lex_error(e))?;
                    push_wtf8(bytes, c);
                }
                Some(_) => return Err(self.error("unescaped control character in a string")),
            }
            let run_start = self.pos;
            self.plain_run()?;
            bytes.extend_from_slice(&self.text[run_start..self.pos]);
        }
    }
}

/// Appends a code point as UTF-8, a surrogate as the same three-byte pattern (WTF-8).
pub(super) fn push_wtf8(bytes: &mut Vec<u8>, c: u32) {
    match c {
        0..0x80 => bytes.push(c as u8),
        0x80..0x800 => bytes.extend([0xc0 | (c >> 6) as u8, 0x80 | (c & 0x3f) as u8]),
        0x800..0x1_0000 => bytes.extend([
            0xe0 | (c >> 12) as u8,
            0x80 | ((c >> 6) & 0x3f) as u8,
            0x80 | (c & 0x3f) as u8,
        ]),
        _ => bytes.extend([
            0xf0 | (c >> 18) as u8,
            0x80 | ((c >> 12) & 0x3f) as u8,
            0x80 | ((c >> 6) & 0x3f) as u8,
            0x80 | (c & 0x3f) as u8,
        ]),
    }
}
