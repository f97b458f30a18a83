//! The RFC 8785 (JCS) writer, compact and pretty.

use super::{CanonError, Json, JsonStr, decode};

/// Writes `value`; on a repeated member, the error's pointer is built on the way back
/// up, so that a value that has a canonical form pays nothing for pointers.
pub(super) fn write_value(
    value: &Json,
    out: &mut impl Sink,
    indent: Option<usize>,
) -> Result<(), CanonError> {
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
    pub(super) fn under(self, token: &str) -> CanonError {
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

pub(super) fn write_number(n: f64, out: &mut impl Sink) {
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
    write_wtf8(s.bytes(), out, visible);
}

/// [`write_string`] of the string whose stored bytes (see [`JsonStr`]) these are.
pub(super) fn write_wtf8(mut bytes: &[u8], out: &mut impl Sink, visible: bool) {
    out.put(b"\"");
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
        c if visible && crate::base::text::is_unsafe(c) => {
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
pub(super) fn into_text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}
