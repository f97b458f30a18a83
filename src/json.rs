//! A strict JSON reader and the RFC 8785 (JCS) writer the hash is built on.
//!
//! Server output cannot go through `serde_json::Value` on its way to the hash: it keeps
//! only the last copy of a repeated member name and refuses lone surrogates, and both
//! matter to the recipe. [`Json`] keeps every member as sent and strings as UTF-16 code
//! units, so nothing is lost before canonicalization decides what can be hashed.

use std::cmp::Ordering;
use std::fmt;

/// Deepest nesting the reader accepts; deeper input is refused rather than risking
/// the stack on hostile server output.
const MAX_DEPTH: usize = 256;

/// A JSON value exactly as sent: object members in order (repeats kept), strings as
/// UTF-16 code units (lone surrogates kept), numbers as IEEE 754 doubles.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(f64),
    String(JsonStr),
    Array(Vec<Json>),
    Object(Vec<(JsonStr, Json)>),
}

/// A JSON string as UTF-16 code units. Most are valid Unicode; a lone surrogate is
/// kept as it came so that it hashes the way the recipe says.
///
/// Short strings (most member names) are kept inline: a schema with a million
/// properties holds a million names, and a heap block for each would cost more than
/// the names themselves.
#[derive(Clone)]
pub struct JsonStr(Units);

/// Code units kept inline up to this many.
const INLINE: usize = 11;

#[derive(Clone)]
enum Units {
    Inline(u8, [u16; INLINE]),
    Heap(Box<[u16]>),
}

impl JsonStr {
    fn from_units(units: Vec<u16>) -> Self {
        if units.len() <= INLINE {
            JsonStr::from_slice(&units)
        } else {
            JsonStr(Units::Heap(units.into_boxed_slice()))
        }
    }

    fn from_slice(units: &[u16]) -> Self {
        if units.len() <= INLINE {
            let mut inline = [0u16; INLINE];
            inline[..units.len()].copy_from_slice(units);
            JsonStr(Units::Inline(units.len() as u8, inline))
        } else {
            JsonStr(Units::Heap(units.into()))
        }
    }

    /// The code units, the order JCS sorts member names by.
    pub fn units(&self) -> &[u16] {
        match &self.0 {
            Units::Inline(len, units) => &units[..usize::from(*len)],
            Units::Heap(units) => units,
        }
    }

    /// The string if it is valid Unicode (no lone surrogate).
    pub fn to_str(&self) -> Option<String> {
        String::from_utf16(self.units()).ok()
    }

    /// The string with any lone surrogate replaced by U+FFFD.
    pub fn to_string_lossy(&self) -> String {
        String::from_utf16_lossy(self.units())
    }

    pub fn eq_str(&self, s: &str) -> bool {
        self.units().iter().copied().eq(s.encode_utf16())
    }
}

impl Default for JsonStr {
    fn default() -> Self {
        JsonStr(Units::Inline(0, [0; INLINE]))
    }
}

impl From<&str> for JsonStr {
    fn from(s: &str) -> Self {
        JsonStr::from_units(s.encode_utf16().collect())
    }
}

impl PartialEq for JsonStr {
    fn eq(&self, other: &Self) -> bool {
        self.units() == other.units()
    }
}

impl Eq for JsonStr {}

impl std::hash::Hash for JsonStr {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.units().hash(state);
    }
}

impl Ord for JsonStr {
    fn cmp(&self, other: &Self) -> Ordering {
        self.units().cmp(other.units())
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
        let mut out = String::new();
        write_value(self, &mut out, None)?;
        Ok(out)
    }

    /// [`Json::canonical`] appended to `out`; on error `out` holds part of it.
    pub fn canonical_into(&self, out: &mut String) -> Result<(), CanonError> {
        write_value(self, out, None)
    }

    /// The canonical form laid out over lines, two spaces a level: members in JCS order,
    /// numbers and strings written as JCS writes them. Reading it back gives a value
    /// with the same canonical form, so a pinned definition can be stored readably.
    pub fn canonical_pretty(&self) -> Result<String, CanonError> {
        let mut out = String::new();
        write_value(self, &mut out, Some(0))?;
        Ok(out)
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
    /// The string being read, reused from string to string: each string then costs
    /// one allocation of its exact size, or none when short.
    scratch: Vec<u16>,
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
        let mut units = std::mem::take(&mut self.scratch);
        units.clear();
        let read = self.string_into(&mut units);
        let string = read.map(|()| JsonStr::from_slice(&units));
        self.scratch = units;
        string
    }

    fn string_into(&mut self, units: &mut Vec<u16>) -> Result<(), ParseError> {
        loop {
            let run_start = self.pos;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            if run_start < self.pos {
                let bytes = &self.text[run_start..self.pos];
                if bytes.is_ascii() {
                    units.extend(bytes.iter().map(|&b| u16::from(b)));
                } else {
                    let run = std::str::from_utf8(bytes).map_err(|e| {
                        self.pos = run_start + e.valid_up_to();
                        self.error("invalid UTF-8 in a string")
                    })?;
                    units.extend(run.encode_utf16());
                }
            }
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
                    let unit = match escape {
                        b'"' => 0x22,
                        b'\\' => 0x5c,
                        b'/' => 0x2f,
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        b'n' => 0x0a,
                        b'r' => 0x0d,
                        b't' => 0x09,
                        b'u' => self.hex4()?,
                        _ => {
                            self.pos -= 1;
                            return Err(self.error("unknown escape in a string"));
                        }
                    };
                    units.push(unit);
                }
                Some(_) => return Err(self.error("unescaped control character in a string")),
            }
        }
    }
}

/// Writes `value`; on a repeated member, the error's pointer is built on the way back
/// up, so that a value that has a canonical form pays nothing for pointers.
fn write_value(value: &Json, out: &mut String, indent: Option<usize>) -> Result<(), CanonError> {
    match value {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => write_number(*n, out),
        Json::String(s) => write_string(s, out, indent.is_some()),
        Json::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent.map(|d| d + 1));
                write_value(item, out, indent.map(|d| d + 1))
                    .map_err(|e| e.under(&i.to_string()))?;
            }
            newline(out, indent);
            out.push(']');
        }
        Json::Object(members) => {
            if members.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            let mut sorted: Vec<&(JsonStr, Json)> = members.iter().collect();
            // Members usually come sorted or nearly: check before sorting.
            if !sorted.is_sorted_by(|a, b| a.0 < b.0) {
                sorted.sort_by(|a, b| a.0.cmp(&b.0));
                if let Some(pair) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
                    let name = pair[0].0.to_string_lossy();
                    return Err(CanonError::RepeatedMember {
                        pointer: format!("/{}", escape_pointer(&name)),
                        name,
                    });
                }
            }
            out.push('{');
            for (i, (key, item)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent.map(|d| d + 1));
                write_string(key, out, indent.is_some());
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                write_value(item, out, indent.map(|d| d + 1))
                    .map_err(|e| e.under(&escape_pointer(&key.to_string_lossy())))?;
            }
            newline(out, indent);
            out.push('}');
        }
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

fn newline(out: &mut String, indent: Option<usize>) {
    if let Some(depth) = indent {
        out.push('\n');
        out.extend(std::iter::repeat_n("  ", depth));
    }
}

/// A JSON pointer reference token (RFC 6901).
pub fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn write_number(n: f64, out: &mut String) {
    /// Below this every integer is exact and ECMAScript writes it as plain digits.
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if n == 0.0 {
        // ECMAScript writes -0 as 0.
        out.push('0');
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
            out.push('-');
        }
        out.extend(digits[at..].iter().map(|&d| char::from(d)));
    } else {
        out.push_str(ryu_js::Buffer::new().format_finite(n));
    }
}

/// Writes a string as JCS does. `visible` (the pretty form) also writes characters
/// that could reorder or hide text in a review (bidi controls, zero-width, C1) as
/// `\u` escapes: the value, and so the canonical form, stays the same.
fn write_string(s: &JsonStr, out: &mut String, visible: bool) {
    out.push('"');
    let mut units = s.units();
    loop {
        // Printable ASCII but for the two that need escapes is copied as it is: most
        // names and descriptions are nothing else.
        let plain = units
            .iter()
            .position(|&u| !(0x20..0x7f).contains(&u) || u == 0x22 || u == 0x5c)
            .unwrap_or(units.len());
        push_ascii(out, &units[..plain]);
        units = &units[plain..];
        let Some(&first) = units.first() else {
            break;
        };
        // One character (a surrogate pair, or one unit) that is not plain ASCII.
        let width = if (0xd800..0xdc00).contains(&first)
            && units.get(1).is_some_and(|u| (0xdc00..0xe000).contains(u))
        {
            2
        } else {
            1
        };
        write_char(&units[..width], out, visible);
        units = &units[width..];
    }
    out.push('"');
}

/// Appends code units that are all ASCII, through a small buffer of bytes.
fn push_ascii(out: &mut String, units: &[u16]) {
    let mut buf = [0u8; 256];
    for chunk in units.chunks(buf.len()) {
        for (b, &u) in buf.iter_mut().zip(chunk) {
            *b = u as u8;
        }
        out.push_str(std::str::from_utf8(&buf[..chunk.len()]).unwrap_or_default());
    }
}

/// Writes one character's code units (a lone surrogate is one unit) as JCS does.
fn write_char(units: &[u16], out: &mut String, visible: bool) {
    for item in char::decode_utf16(units.iter().copied()) {
        match item {
            Ok('"') => out.push_str("\\\""),
            Ok('\\') => out.push_str("\\\\"),
            Ok('\u{8}') => out.push_str("\\b"),
            Ok('\t') => out.push_str("\\t"),
            Ok('\n') => out.push_str("\\n"),
            Ok('\u{c}') => out.push_str("\\f"),
            Ok('\r') => out.push_str("\\r"),
            Ok(c) if (c as u32) < 0x20 => push_unit_escape(out, c as u16),
            Ok(c) if visible && crate::text::is_unsafe(c) => {
                let mut pair = [0u16; 2];
                for unit in c.encode_utf16(&mut pair) {
                    push_unit_escape(out, *unit);
                }
            }
            Ok(c) => out.push(c),
            Err(lone) => push_unit_escape(out, lone.unpaired_surrogate()),
        }
    }
}

/// `\u` and four lowercase hex digits.
fn push_unit_escape(out: &mut String, unit: u16) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.push_str("\\u");
    for shift in [12, 8, 4, 0] {
        out.push(char::from(DIGITS[usize::from((unit >> shift) & 0xf)]));
    }
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
        assert_eq!(short.units().len(), 4);
        assert_eq!(long.to_string_lossy(), "a much longer member name");
        assert!(long < short);
        assert_eq!(JsonStr::from("elevenchars"), JsonStr::from("elevenchars"));
        assert_ne!(JsonStr::from("elevenchars"), JsonStr::from("elevenchars!"));
        assert_eq!(JsonStr::default().units(), &[] as &[u16]);
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
