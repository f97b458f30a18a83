//! The strict reader: JSON text to a [`Json`] tree.

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
        let start = self.pos;
        let digits = |r: &mut Self| {
            let from = r.pos;
            while let Some(b'0'..=b'9') = r.peek() {
                r.pos += 1;
            }
            r.pos - from
        };
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        let integer_at = self.pos;
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                digits(self);
            }
            _ => return Err(self.error("malformed number")),
        }
        let integer = &self.text[integer_at..self.pos];
        // An integer of up to 15 digits is exact in a double: no float parsing needed.
        if integer.len() <= 15 && !matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            let value = integer
                .iter()
                .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
            let value = value as f64;
            return Ok(Json::Number(if negative { -value } else { value }));
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if digits(self) == 0 {
                return Err(self.error("malformed number: no digits after '.'"));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return Err(self.error("malformed number: no digits in the exponent"));
            }
        }
        // The grammar above admits only ASCII, so this slice is valid UTF-8.
        let text = std::str::from_utf8(&self.text[start..self.pos]).unwrap_or("");
        match text.parse::<f64>() {
            Ok(n) if n.is_finite() => Ok(Json::Number(n)),
            _ => {
                self.pos = start;
                Err(self.error("number out of range for an IEEE 754 double"))
            }
        }
    }

    fn hex4(&mut self) -> Result<u16, ParseError> {
        let Some(hex) = self.text.get(self.pos..self.pos + 4) else {
            return Err(self.error("truncated \\u escape"));
        };
        if !hex.iter().all(u8::is_ascii_hexdigit) {
            return Err(self.error("malformed \\u escape"));
        }
        let hex = std::str::from_utf8(hex).unwrap_or("0");
        let unit = u16::from_str_radix(hex, 16).map_err(|_| self.error("malformed \\u escape"))?;
        self.pos += 4;
        Ok(unit)
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

    /// Moves past characters that stand for themselves (no quote, backslash or
    /// control character), checking that they are UTF-8.
    fn plain_run(&mut self) -> Result<(), ParseError> {
        let run_start = self.pos;
        let rest = &self.text[run_start..];
        let len = rest
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            .unwrap_or(rest.len());
        let run = &rest[..len];
        if !run.is_ascii()
            && let Err(e) = std::str::from_utf8(run)
        {
            self.pos = run_start + e.valid_up_to();
            return Err(self.error("invalid UTF-8 in a string"));
        }
        self.pos += len;
        Ok(())
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
                    self.pos += 1;
                    let Some(escape) = self.peek() else {
                        return Err(self.error("unterminated string"));
                    };
                    self.pos += 1;
                    let c = match escape {
                        b'"' => 0x22,
                        b'\\' => 0x5c,
                        b'/' => 0x2f,
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        b'n' => 0x0a,
                        b'r' => 0x0d,
                        b't' => 0x09,
                        b'u' => self.escaped_code_point()?,
                        _ => {
                            self.pos -= 1;
                            return Err(self.error("unknown escape in a string"));
                        }
                    };
                    push_wtf8(bytes, c);
                }
                Some(_) => return Err(self.error("unescaped control character in a string")),
            }
            let run_start = self.pos;
            self.plain_run()?;
            bytes.extend_from_slice(&self.text[run_start..self.pos]);
        }
    }

    /// The code point of a `\u` escape (after the `u`): a surrogate pair written as
    /// two escapes is one character, a lone surrogate is kept as its own code point.
    fn escaped_code_point(&mut self) -> Result<u32, ParseError> {
        let unit = self.hex4()?;
        if (0xd800..0xdc00).contains(&unit) && self.text[self.pos..].starts_with(b"\\u") {
            let after = self.pos;
            self.pos += 2;
            let next = self.hex4()?;
            if (0xdc00..0xe000).contains(&next) {
                let high = u32::from(unit - 0xd800);
                let low = u32::from(next - 0xdc00);
                return Ok(0x1_0000 + (high << 10) + low);
            }
            // Not a pair: the next escape is read on its own.
            self.pos = after;
        }
        Ok(u32::from(unit))
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
