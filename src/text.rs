//! Showing server text to a person safely. Descriptions, names and stderr lines are
//! attacker-controlled: they must never move the cursor, recolour the terminal or
//! reorder what a reviewer reads.

/// A count with its noun, plural unless it is one: "1 tool", "3 tools", "0 pages".
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The text with control, bidi and invisible characters written as visible escapes.
pub fn escape_for_terminal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if is_unsafe(c) => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Serialized JSON with every unsafe character outside the C0 range written as a
/// `\uXXXX` escape, so a machine report shown on a terminal cannot drive it either.
/// (serde_json already escapes C0 inside strings; newlines between tokens are kept.)
pub fn escape_json_output(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if (c as u32) >= 0x7f && is_unsafe(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether a character could move the cursor, reorder text or hide: C0 and C1
/// controls, bidi controls, zero-width and other invisible characters.
pub fn is_unsafe(c: char) -> bool {
    matches!(c as u32,
        0x00..=0x1f | 0x7f..=0x9f     // C0, DEL, C1 (CSI is U+009B)
        | 0xad                        // soft hyphen
        | 0x034f                      // combining grapheme joiner
        | 0x061c                      // Arabic letter mark
        | 0x115f | 0x1160 | 0x3164 | 0xffa0 // Hangul fillers
        | 0x0600..=0x0605             // Arabic number signs (format)
        | 0x06dd | 0x070f             // Arabic end of ayah, Syriac abbreviation mark
        | 0x180b..=0x180e             // Mongolian free variation selectors, vowel separator
        | 0x200b..=0x200f             // zero-width, LRM, RLM
        | 0x2028..=0x202e             // separators, bidi embeddings and overrides
        | 0x2060..=0x206f             // word joiner, invisible operators, bidi isolates
        | 0xfe00..=0xfe0f             // variation selectors
        | 0xfeff                      // BOM / zero-width no-break space
        | 0xfff9..=0xfffb             // interlinear annotation
        | 0xfffe | 0xffff             // noncharacters (not allowed in XML)
        | 0x110bd | 0x110cd           // Kaithi number signs
        | 0x13430..=0x1343f           // Egyptian hieroglyph format controls
        | 0x1bca0..=0x1bca3           // shorthand format controls
        | 0x1d173..=0x1d17a           // musical symbol format controls
        | 0xe0000..=0xe007f           // tag characters
        | 0xe0100..=0xe01ef           // variation selectors supplement
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_output_escapes_c1_bidi_and_tags_and_stays_the_same_json() {
        let value = serde_json::json!({"d": "a\u{9b}b\u{202e}c\u{e0041}\u{1b}"});
        let text = escape_json_output(&serde_json::to_string(&value).unwrap());
        assert_eq!(text, r#"{"d":"a\u009bb\u202ec\udb40\udc41\u001b"}"#);
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn escapes_variation_selectors_format_controls_and_noncharacters() {
        assert_eq!(
            escape_for_terminal("a\u{fe0f}b\u{e0100}c\u{13430}d\u{ffff}"),
            "a\\u{fe0f}b\\u{e0100}c\\u{13430}d\\u{ffff}"
        );
    }

    #[test]
    fn escapes_terminal_controls_and_bidi_but_keeps_ordinary_text() {
        assert_eq!(
            escape_for_terminal("ok \u{1b}[2J\u{202e}evil\u{9b}café"),
            "ok \\u{001b}[2J\\u{202e}evil\\u{009b}café"
        );
    }
}
