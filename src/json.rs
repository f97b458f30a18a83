//! A strict JSON reader and the RFC 8785 (JCS) writer the hash is built on.
//!
//! Server output cannot go through `serde_json::Value` on its way to the hash: it keeps
//! only the last copy of a repeated member name and refuses lone surrogates, and both
//! matter to the recipe. [`Json`] keeps every member as sent and strings as UTF-8 with
//! lone surrogates kept (see [`JsonStr`]), so nothing is lost before canonicalization
//! decides what can be hashed. Member names are sorted by UTF-16 code units, as JCS
//! says, by comparing the UTF-8 directly ([`cmp_utf16`]).

use std::cmp::Ordering;
use std::fmt;

/// Deepest nesting the reader accepts; deeper input is refused rather than risking
/// the stack on hostile server output.
const MAX_DEPTH: usize = 256;

/// A JSON value exactly as sent: object members in order (repeats kept), strings with
/// lone surrogates kept, numbers as IEEE 754 doubles.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(f64),
    String(JsonStr),
    Array(Vec<Json>),
    Object(Vec<(JsonStr, Json)>),
}

/// A JSON string as UTF-8, with one extension: a lone surrogate (valid in JSON text
/// as a `\u` escape, not in Unicode) is kept as the three bytes UTF-8 would give its
/// code point (WTF-8), so that it hashes the way the recipe says. A surrogate pair
/// sent as two escapes is stored as the one character it stands for, so the bytes are
/// the same however the string was written.
///
/// Short strings (most member names) are kept inline: a schema with a million
/// properties holds a million names, and a heap block for each would cost more than
/// the names themselves.
#[derive(Clone)]
pub struct JsonStr(Bytes);

/// Bytes kept inline up to this many.
const INLINE: usize = 22;

#[derive(Clone)]
enum Bytes {
    Inline(u8, [u8; INLINE]),
    Heap(Box<[u8]>),
}

impl JsonStr {
    /// From bytes the reader has checked: UTF-8, lone surrogates as WTF-8.
    fn from_wtf8(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE {
            let mut inline = [0u8; INLINE];
            inline[..bytes.len()].copy_from_slice(bytes);
            JsonStr(Bytes::Inline(bytes.len() as u8, inline))
        } else {
            JsonStr(Bytes::Heap(bytes.into()))
        }
    }

    /// The stored bytes: UTF-8, but for lone surrogates (see [`JsonStr`]).
    fn bytes(&self) -> &[u8] {
        match &self.0 {
            Bytes::Inline(len, bytes) => &bytes[..usize::from(*len)],
            Bytes::Heap(bytes) => bytes,
        }
    }

    /// The string if it is valid Unicode (no lone surrogate), without copying.
    pub fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(self.bytes()).ok()
    }

    /// The string if it is valid Unicode (no lone surrogate).
    pub fn to_str(&self) -> Option<String> {
        self.as_str().map(str::to_string)
    }

    /// The string with any lone surrogate replaced by U+FFFD.
    pub fn to_string_lossy(&self) -> String {
        match self.as_str() {
            Some(s) => s.to_string(),
            None => code_points(self.bytes())
                .map(|c| char::from_u32(c).unwrap_or('\u{fffd}'))
                .collect(),
        }
    }

    /// The UTF-16 code units, the order JCS sorts member names by.
    pub fn units(&self) -> impl Iterator<Item = u16> + '_ {
        utf16_units(self.bytes())
    }

    pub fn eq_str(&self, s: &str) -> bool {
        self.bytes() == s.as_bytes()
    }
}

/// The code points of WTF-8 bytes (surrogates included, as numbers).
fn code_points(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let (c, width) = decode(bytes, at)?;
        at += width;
        Some(c)
    })
}

/// The code point at `at` of WTF-8 bytes and its width in bytes.
fn decode(bytes: &[u8], at: usize) -> Option<(u32, usize)> {
    let first = *bytes.get(at)?;
    let (width, lead) = match first {
        0x00..=0x7f => return Some((u32::from(first), 1)),
        0xc0..=0xdf => (2, u32::from(first & 0x1f)),
        0xe0..=0xef => (3, u32::from(first & 0x0f)),
        _ => (4, u32::from(first & 0x07)),
    };
    let rest = bytes.get(at + 1..at + width)?;
    let c = rest
        .iter()
        .fold(lead, |c, &b| (c << 6) | u32::from(b & 0x3f));
    Some((c, width))
}

/// The UTF-16 code units of WTF-8 bytes.
fn utf16_units(bytes: &[u8]) -> impl Iterator<Item = u16> + '_ {
    code_points(bytes).flat_map(|c| {
        let (first, second) = if c >= 0x1_0000 {
            let c = c - 0x1_0000;
            (0xd800 | (c >> 10) as u16, Some(0xdc00 | (c & 0x3ff) as u16))
        } else {
            (c as u16, None)
        };
        std::iter::once(first).chain(second)
    })
}

/// Orders two strings by their UTF-16 code units, as JCS sorts member names, without
/// converting them: the bytes up to the first difference are the same, and from the
/// character holding it on, only the two characters there decide (UTF-8 order and
/// UTF-16 order differ only between U+E000..U+FFFF and characters past U+FFFF).
pub fn cmp_utf16(a: &str, b: &str) -> Ordering {
    cmp_wtf8(a.as_bytes(), b.as_bytes())
}

fn cmp_wtf8(a: &[u8], b: &[u8]) -> Ordering {
    let Some(mut at) = a.iter().zip(b).position(|(x, y)| x != y) else {
        return a.len().cmp(&b.len());
    };
    if a[at] < 0x80 && b[at] < 0x80 {
        return a[at].cmp(&b[at]);
    }
    // Back to the start of the character the difference is in (the same in both).
    while at > 0 && a[at] & 0xc0 == 0x80 {
        at -= 1;
    }
    utf16_units(&a[at..]).cmp(utf16_units(&b[at..]))
}

impl Default for JsonStr {
    fn default() -> Self {
        JsonStr(Bytes::Inline(0, [0; INLINE]))
    }
}

impl From<&str> for JsonStr {
    fn from(s: &str) -> Self {
        JsonStr::from_wtf8(s.as_bytes())
    }
}

impl PartialEq for JsonStr {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for JsonStr {}

impl std::hash::Hash for JsonStr {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.bytes().hash(state);
    }
}

impl Ord for JsonStr {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp_wtf8(self.bytes(), other.bytes())
    }
}

impl PartialOrd for JsonStr {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for JsonStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string_lossy(), f)
    }
}

/// Why a text is not JSON, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at line {line}, column {column}")]
pub struct ParseError {
    pub message: String,
    pub line: usize,
    pub column: usize,
    /// Byte offset of the fault from the start of the text (server messages are one
    /// line, where this says more than a column of characters).
    pub offset: usize,
}

/// Why a value has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonError {
    #[error("repeated member name {name:?} at {pointer}")]
    RepeatedMember { name: String, pointer: String },
}

impl Json {
    /// Reads one JSON text; surrounding whitespace is allowed, anything else is not.
    pub fn parse(text: &str) -> Result<Json, ParseError> {
        let mut reader = Reader {
            text: text.as_bytes(),
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

    /// The last member with this name, as most JSON readers would see it.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members
                .iter()
                .rev()
                .find(|(k, _)| k.eq_str(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// Takes out the member [`Json::get`] would return, without copying it.
    pub fn take(&mut self, key: &str) -> Option<Json> {
        match self {
            Json::Object(members) => {
                let at = members.iter().rposition(|(k, _)| k.eq_str(key))?;
                // In order: a later `get` of a repeated name must still see the last.
                Some(members.remove(at).1)
            }
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<String> {
        match self {
            Json::String(s) => s.to_str(),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Json]> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn is_object(&self) -> bool {
        matches!(self, Json::Object(_))
    }

    /// True when some object, at any depth, names a member twice: readers disagree on
    /// what such a text says (first or last wins), so it must not be passed on.
    pub fn has_repeated_member(&self) -> bool {
        match self {
            Json::Array(items) => items.iter().any(Json::has_repeated_member),
            Json::Object(members) => {
                let mut names: Vec<&JsonStr> = members.iter().map(|(k, _)| k).collect();
                names.sort_unstable();
                names.windows(2).any(|w| w[0] == w[1])
                    || members.iter().any(|(_, v)| v.has_repeated_member())
            }
            _ => false,
        }
    }

    /// The RFC 8785 canonical form, or why there is none.
    pub fn canonical(&self) -> Result<String, CanonError> {
        let mut out = Vec::new();
        write_value(self, &mut out, None)?;
        Ok(into_text(out))
    }

    /// [`Json::canonical`] written to `out` as it is made (a hash can take it without
    /// the whole text ever being held); on error `out` has had part of it.
    pub fn canonical_into(&self, out: &mut impl Sink) -> Result<(), CanonError> {
        write_value(self, out, None)
    }

    /// The canonical form laid out over lines, two spaces a level: members in JCS order,
    /// numbers and strings written as JCS writes them. Reading it back gives a value
    /// with the same canonical form, so a pinned definition can be stored readably.
    pub fn canonical_pretty(&self) -> Result<String, CanonError> {
        let mut out = Vec::new();
        write_value(self, &mut out, Some(0))?;
        Ok(into_text(out))
    }

    /// A `serde_json::Value` view for reading protocol fields. Lossy where serde_json
    /// must be: the last repeated member wins, lone surrogates become U+FFFD.
    pub fn to_value(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => number_value(*n),
            Json::String(s) => Value::String(s.to_string_lossy()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.to_string_lossy(), v.to_value()))
                    .collect(),
            ),
        }
    }

    /// The reverse of [`Json::to_value`], for values this program builds itself.
    pub fn from_value(value: &serde_json::Value) -> Json {
        use serde_json::Value;
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Number(n.as_f64().unwrap_or(f64::NAN)),
            Value::String(s) => Json::String(s.as_str().into()),
            Value::Array(items) => Json::Array(items.iter().map(Json::from_value).collect()),
            Value::Object(map) => Json::Object(
                map.iter()
                    .map(|(k, v)| (k.as_str().into(), Json::from_value(v)))
                    .collect(),
            ),
        }
    }
}

/// The top level of a JSON-RPC message that could not be read whole (too deep, not
/// UTF-8, malformed inside): enough to tell whether it answers a waiting request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The `id` member's text as sent, if the object has one.
    pub id: Option<String>,
    /// Whether the object has a `method` member (a request or notification).
    pub has_method: bool,
}

/// Scans the top-level members of an object text without reading nested values, so
/// neither depth nor bad bytes inside them stop it. `None` when the text is not an
/// object or its top level cannot be followed.
pub fn scan_envelope(bytes: &[u8]) -> Option<Envelope> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let ws = |pos: &mut usize| {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(*pos) {
            *pos += 1;
        }
    };
    let mut pos = 0;
    ws(&mut pos);
    if bytes.get(pos) != Some(&b'{') {
        return None;
    }
    pos += 1;
    let mut envelope = Envelope {
        id: None,
        has_method: false,
    };
    loop {
        ws(&mut pos);
        match bytes.get(pos)? {
            b'}' => return Some(envelope),
            b'"' => {}
            _ => return None,
        }
        let key_end = skip_string(bytes, pos)?;
        let key = &bytes[pos + 1..key_end - 1];
        pos = key_end;
        ws(&mut pos);
        if bytes.get(pos) != Some(&b':') {
            return None;
        }
        pos += 1;
        ws(&mut pos);
        let value_start = pos;
        pos = skip_value(bytes, pos)?;
        match key {
            b"id" => {
                let raw = String::from_utf8_lossy(&bytes[value_start..pos]);
                envelope.id = Some(raw.trim_end().to_string());
            }
            b"method" => envelope.has_method = true,
            _ => {}
        }
        ws(&mut pos);
        match bytes.get(pos)? {
            b',' => pos += 1,
            b'}' => return Some(envelope),
            _ => return None,
        }
    }
}

/// The position just past the string starting at `pos` (a quote).
fn skip_string(bytes: &[u8], mut pos: usize) -> Option<usize> {
    pos += 1;
    loop {
        match bytes.get(pos)? {
            b'"' => return Some(pos + 1),
            b'\\' => pos += 2,
            _ => pos += 1,
        }
    }
}

/// The position just past the value starting at `pos`, counting brackets instead of
/// reading what is inside them.
fn skip_value(bytes: &[u8], mut pos: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match bytes.get(pos)? {
            b'"' => {
                pos = skip_string(bytes, pos)?;
                if depth == 0 {
                    return Some(pos);
                }
            }
            b'{' | b'[' => {
                depth += 1;
                pos += 1;
            }
            b'}' | b']' if depth == 0 => return Some(pos),
            b'}' | b']' => {
                depth -= 1;
                pos += 1;
                if depth == 0 {
                    return Some(pos);
                }
            }
            b',' if depth == 0 => return Some(pos),
            _ => pos += 1,
        }
    }
}

fn number_value(n: f64) -> serde_json::Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if n.fract() == 0.0 && n.abs() < EXACT {
        serde_json::Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null)
    }
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
fn push_wtf8(bytes: &mut Vec<u8>, c: u32) {
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

/// Writes `value`; on a repeated member, the error's pointer is built on the way back
/// up, so that a value that has a canonical form pays nothing for pointers.
fn write_value(value: &Json, out: &mut impl Sink, indent: Option<usize>) -> Result<(), CanonError> {
    match value {
        Json::Null => out.put(b"null"),
        Json::Bool(b) => out.put(if *b { b"true" } else { b"false" }),
        Json::Number(n) => write_number(*n, out),
        Json::String(s) => write_string(s, out, indent.is_some()),
        Json::Array(items) => {
            if items.is_empty() {
                out.put(b"[]");
                return Ok(());
            }
            out.put(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.put(b",");
                }
                newline(out, indent.map(|d| d + 1));
                write_value(item, out, indent.map(|d| d + 1))
                    .map_err(|e| e.under(&i.to_string()))?;
            }
            newline(out, indent);
            out.put(b"]");
        }
        Json::Object(members) => {
            if members.is_empty() {
                out.put(b"{}");
                return Ok(());
            }
            // Members often come sorted: then they are written in place, with no
            // list of them to allocate.
            let sorted: Option<Vec<&(JsonStr, Json)>> = if members.is_sorted_by(|a, b| a.0 < b.0) {
                None
            } else {
                let mut sorted: Vec<&(JsonStr, Json)> = members.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(&b.0));
                if let Some(pair) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
                    let name = pair[0].0.to_string_lossy();
                    return Err(CanonError::RepeatedMember {
                        pointer: format!("/{}", escape_pointer(&name)),
                        name,
                    });
                }
                Some(sorted)
            };
            out.put(b"{");
            match sorted {
                Some(sorted) => write_members(sorted.into_iter(), out, indent)?,
                None => write_members(members.iter(), out, indent)?,
            }
            newline(out, indent);
            out.put(b"}");
        }
    }
    Ok(())
}

/// The members of an object, in the order given, without the braces.
fn write_members<'a>(
    members: impl Iterator<Item = &'a (JsonStr, Json)>,
    out: &mut impl Sink,
    indent: Option<usize>,
) -> Result<(), CanonError> {
    for (i, (key, item)) in members.enumerate() {
        if i > 0 {
            out.put(b",");
        }
        newline(out, indent.map(|d| d + 1));
        write_string(key, out, indent.is_some());
        out.put(b":");
        if indent.is_some() {
            out.put(b" ");
        }
        write_value(item, out, indent.map(|d| d + 1))
            .map_err(|e| e.under(&escape_pointer(&key.to_string_lossy())))?;
    }
    Ok(())
}

impl CanonError {
    /// The same error seen from the parent: `token` goes in front of its pointer.
    fn under(self, token: &str) -> CanonError {
        match self {
            CanonError::RepeatedMember { name, pointer } => CanonError::RepeatedMember {
                name,
                pointer: format!("/{token}{pointer}"),
            },
        }
    }
}

fn newline(out: &mut impl Sink, indent: Option<usize>) {
    if let Some(depth) = indent {
        out.put(b"\n");
        for _ in 0..depth {
            out.put(b"  ");
        }
    }
}

/// A JSON pointer reference token (RFC 6901).
pub fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn write_number(n: f64, out: &mut impl Sink) {
    /// Below this every integer is exact and ECMAScript writes it as plain digits.
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if n == 0.0 {
        // ECMAScript writes -0 as 0.
        out.put(b"0");
    } else if n.fract() == 0.0 && n.abs() < EXACT {
        // The common case (counts, limits, ids), without the shortest-digits search.
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut rest = n.abs() as u64;
        while rest > 0 {
            at -= 1;
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        if n < 0.0 {
            out.put(b"-");
        }
        out.put(&digits[at..]);
    } else {
        out.put(ryu_js::Buffer::new().format_finite(n).as_bytes());
    }
}

/// Writes a string as JCS does. `visible` (the pretty form) also writes characters
/// that could reorder or hide text in a review (bidi controls, zero-width, C1) as
/// `\u` escapes: the value, and so the canonical form, stays the same.
fn write_string(s: &JsonStr, out: &mut impl Sink, visible: bool) {
    out.put(b"\"");
    let mut bytes = s.bytes();
    loop {
        // Characters that need no escape are copied as they are: most names and
        // descriptions are nothing else. A lone surrogate starts with 0xED (as do
        // U+D000..U+D7FF, which take the slower way below).
        let special = |b: u8| {
            b < 0x20 || b == b'"' || b == b'\\' || if visible { b >= 0x7f } else { b == 0xed }
        };
        let plain = bytes
            .iter()
            .position(|&b| special(b))
            .unwrap_or(bytes.len());
        out.put(&bytes[..plain]);
        bytes = &bytes[plain..];
        let Some((c, width)) = decode(bytes, 0) else {
            break;
        };
        write_char(c, out, visible);
        bytes = &bytes[width..];
    }
    out.put(b"\"");
}

/// Writes one code point (a lone surrogate is one too) as JCS does.
fn write_char(c: u32, out: &mut impl Sink, visible: bool) {
    let Some(c) = char::from_u32(c) else {
        return push_unit_escape(out, c as u16);
    };
    match c {
        '"' => out.put(b"\\\""),
        '\\' => out.put(b"\\\\"),
        '\u{8}' => out.put(b"\\b"),
        '\t' => out.put(b"\\t"),
        '\n' => out.put(b"\\n"),
        '\u{c}' => out.put(b"\\f"),
        '\r' => out.put(b"\\r"),
        c if (c as u32) < 0x20 => push_unit_escape(out, c as u16),
        c if visible && crate::text::is_unsafe(c) => {
            let mut pair = [0u16; 2];
            for unit in c.encode_utf16(&mut pair) {
                push_unit_escape(out, *unit);
            }
        }
        c => out.put(c.encode_utf8(&mut [0; 4]).as_bytes()),
    }
}

/// `\u` and four lowercase hex digits.
fn push_unit_escape(out: &mut impl Sink, unit: u16) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut escape = *b"\\u0000";
    for (at, shift) in [12, 8, 4, 0].into_iter().enumerate() {
        escape[2 + at] = DIGITS[usize::from((unit >> shift) & 0xf)];
    }
    out.put(&escape);
}

/// Where canonical text goes as it is written: a buffer, or a hash fed on the way.
/// What is put is always UTF-8: the writer escapes every lone surrogate.
pub trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// The text a writer made: UTF-8 by construction (see [`Sink`]).
fn into_text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_repeated_members_and_refuses_to_canonicalize_them() {
        let v = Json::parse(r#"{"a":1,"b":{"c":1,"c":2}}"#).unwrap();
        assert_eq!(
            v.canonical(),
            Err(CanonError::RepeatedMember {
                name: "c".into(),
                pointer: "/b/c".into()
            })
        );
        assert_eq!(v.get("b").unwrap().get("c"), Some(&Json::Number(2.0)));
    }

    #[test]
    fn lone_surrogates_survive_and_are_written_lowercase() {
        let v = Json::parse(r#""a\uDEADb""#).unwrap();
        assert_eq!(v.canonical().unwrap(), r#""a\udeadb""#);
        assert_eq!(v.to_value(), serde_json::json!("a\u{fffd}b"));
    }

    #[test]
    fn refuses_what_json_does_not_allow() {
        for bad in [
            "",
            "01",
            "1.",
            "-",
            "[1,]",
            "{\"a\"}",
            "\"\t\"",
            "nul",
            "1e999",
            "{} x",
            "'a'",
            "\"\\u+041\"",
            "\"\\u-041\"",
        ] {
            assert!(Json::parse(bad).is_err(), "accepted {bad:?}");
        }
    }

    #[test]
    fn parse_errors_name_line_and_column() {
        let err = Json::parse("{\n  \"a\": tru\n}").unwrap_err();
        assert_eq!((err.line, err.column), (2, 8));
    }

    #[test]
    fn refuses_hostile_nesting_without_overflowing_the_stack() {
        let deep = "[".repeat(100_000);
        assert!(Json::parse(&deep).unwrap_err().message.contains("deeper"));
    }

    #[test]
    fn envelope_of_an_unreadable_answer_names_its_id() {
        let mut deep = String::from(r#"{"jsonrpc":"2.0","result":{"tools":[{"x":"#);
        deep.push_str(&"[".repeat(100_000));
        deep.push_str(&"]".repeat(100_000));
        deep.push_str(r#"}]},"id":7}"#);
        assert!(Json::parse(&deep).is_err());
        let envelope = scan_envelope(deep.as_bytes()).unwrap();
        assert_eq!(envelope.id.as_deref(), Some("7"));
        assert!(!envelope.has_method);
        let mut bad = br#"{"id": "a\"b" , "method":"x","params":{"d":""#.to_vec();
        bad.extend_from_slice(b"\xff\"}}");
        let envelope = scan_envelope(&bad).unwrap();
        assert_eq!(envelope.id.as_deref(), Some(r#""a\"b""#));
        assert!(envelope.has_method);
        assert_eq!(scan_envelope(b"not json"), None);
        assert_eq!(scan_envelope(br#"{"id":1,"result":{"#), None);
    }

    #[test]
    fn short_and_long_strings_compare_and_sort_by_their_code_units() {
        let short = JsonStr::from("name");
        let long = JsonStr::from("a much longer member name");
        assert_eq!(short.units().count(), 4);
        assert_eq!(long.to_string_lossy(), "a much longer member name");
        assert!(long < short);
        let inline = "twenty-two bytes long!";
        assert_eq!(JsonStr::from(inline), JsonStr::from(inline));
        assert_ne!(JsonStr::from(inline), JsonStr::from(&*format!("{inline}?")));
        assert_eq!(JsonStr::default().units().count(), 0);
    }

    #[test]
    fn member_names_sort_by_utf16_units_not_by_utf8_bytes() {
        // U+FF61 is one unit (0xFF61); U+1F600 is two (0xD83D 0xDE00): UTF-16 puts
        // the emoji first, UTF-8 bytes (EF.. against F0..) the other way round.
        assert_eq!(cmp_utf16("\u{1F600}", "\u{FF61}"), Ordering::Less);
        assert_eq!(cmp_utf16("a\u{FF61}", "a\u{1F600}"), Ordering::Greater);
        assert_eq!(cmp_utf16("ab", "abc"), Ordering::Less);
        assert_eq!(cmp_utf16("\u{e9}", "z"), Ordering::Greater);
        let v = Json::parse(r#"{"\uff61":1,"\ud83d\ude00":2,"\ud83d":3,"z":4}"#).unwrap();
        assert_eq!(
            v.canonical().unwrap(),
            "{\"z\":4,\"\\ud83d\":3,\"\u{1F600}\":2,\"\u{FF61}\":1}"
        );
    }

    #[test]
    fn a_pair_of_escapes_is_the_character_it_stands_for() {
        let escaped = Json::parse(r#""\ud83d\ude00""#).unwrap();
        let raw = Json::parse("\"\u{1F600}\"").unwrap();
        assert_eq!(escaped, raw);
        assert_eq!(escaped.as_str().as_deref(), Some("\u{1F600}"));
        // A lone high surrogate before another escape leaves that escape alone.
        let v = Json::parse(r#""\ud83d\n\ud83d\u0041""#).unwrap();
        assert_eq!(v.canonical().unwrap(), r#""\ud83d\n\ud83dA""#);
        assert_eq!(v.to_value(), serde_json::json!("\u{fffd}\n\u{fffd}A"));
    }

    #[test]
    fn pretty_form_reads_back_to_the_same_canonical_form() {
        let text =
            r#"{"z":[1.50,{"y":"\u001b\uD800\u202e\u009b\udb40\udc01"}],"a":{},"m":[],"n":-0}"#;
        let v = Json::parse(text).unwrap();
        let pretty = v.canonical_pretty().unwrap();
        assert!(pretty.contains('\n'));
        assert!(pretty.contains(r"\u202e\u009b\udb40\udc01"), "{pretty}");
        let back = Json::parse(&pretty).unwrap();
        assert_eq!(back.canonical(), v.canonical());
    }
}
