//! TOML's smallest pieces as the lock writes them: a `key = value` line and a basic
//! string. Shared by the lock and its closure companion.

use std::fmt::Write as _;

/// One `name = value` line.
pub(super) fn key(out: &mut String, name: &str, value: &str) {
    let _ = writeln!(out, "{name} = {value}");
}

/// A TOML basic string: always valid, whatever the text holds, and characters that
/// could reorder or hide text in a review are escaped.
pub(super) fn basic(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if crate::base::text::is_unsafe(c) => {
                let _ = match c as u32 {
                    n @ 0..=0xffff => write!(out, "\\u{n:04X}"),
                    n => write!(out, "\\U{n:08X}"),
                };
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
