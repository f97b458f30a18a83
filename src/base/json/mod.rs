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

mod envelope;
mod lex;
mod read;
mod tape;
mod write;

pub use envelope::{Envelope, scan_envelope};
pub use tape::{Listed, TapeDefinition, stream_listing};
pub use write::{Sink, escape_pointer};
use write::{into_text, write_value};

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

#[inline]
fn cmp_wtf8(a: &[u8], b: &[u8]) -> Ordering {
    let Some(at) = a.iter().zip(b).position(|(x, y)| x != y) else {
        return a.len().cmp(&b.len());
    };
    if a[at] < 0x80 && b[at] < 0x80 {
        return a[at].cmp(&b[at]);
    }
    cmp_wtf8_from(a, b, at)
}

/// [`cmp_wtf8`] where the first difference, at `at`, is not between two ASCII bytes.
#[cold]
fn cmp_wtf8_from(a: &[u8], b: &[u8], mut at: usize) -> Ordering {
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
        read::parse(text.as_bytes())
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

    /// [`Json::as_str`] borrowed: the string if it is valid Unicode, without a copy.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Json::String(s) => s.as_str(),
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
                // A few names are compared pair by pair, without sorting a copy.
                let repeated = if members.len() <= 8 {
                    members
                        .iter()
                        .enumerate()
                        .any(|(i, (k, _))| members[i + 1..].iter().any(|(other, _)| other == k))
                } else {
                    let mut names: Vec<&JsonStr> = members.iter().map(|(k, _)| k).collect();
                    names.sort_unstable();
                    names.windows(2).any(|w| w[0] == w[1])
                };
                repeated || members.iter().any(|(_, v)| v.has_repeated_member())
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
    fn a_repeated_member_is_found_in_small_and_large_objects_at_any_depth() {
        let object = |n: usize, repeat: Option<(usize, usize)>| {
            let names: Vec<String> = (0..n)
                .map(|i| match repeat {
                    Some((_, to)) if i == to => "k0".to_string(),
                    _ => format!("k{i}"),
                })
                .collect();
            let members: Vec<String> = names.iter().map(|k| format!("\"{k}\":1")).collect();
            format!("{{{}}}", members.join(","))
        };
        for n in [2, 8, 9, 40] {
            let unique = Json::parse(&object(n, None)).unwrap();
            assert!(!unique.has_repeated_member(), "{n} distinct names");
            let repeated = Json::parse(&object(n, Some((0, n - 1)))).unwrap();
            assert!(
                repeated.has_repeated_member(),
                "{n} names, the last repeating the first"
            );
            let nested = format!("[{{\"a\":{}}}]", object(n, Some((0, n - 1))));
            assert!(
                Json::parse(&nested).unwrap().has_repeated_member(),
                "nested, {n}"
            );
        }
        // Names that differ only past the inline length, or by one escape, differ.
        let long = Json::parse(r#"{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1":1,"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2":2,"\u0061":3,"a":4}"#).unwrap();
        assert!(long.has_repeated_member(), "\\u0061 is a");
        let distinct = Json::parse(
            r#"{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1":1,"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2":2}"#,
        )
        .unwrap();
        assert!(!distinct.has_repeated_member());
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
