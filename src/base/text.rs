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

/// "… (12 more characters)": what a cut left out, for the end of what it kept.
pub fn left_out(n: usize, what: &str) -> String {
    format!("… ({})", count(n, &format!("more {what}")))
}

/// The first `max` characters of `text`, and how many characters follow them.
pub fn split_at_chars(text: &str, max: usize) -> (&str, usize) {
    match text.char_indices().nth(max) {
        None => (text, 0),
        Some((end, _)) => (&text[..end], text[end..].chars().count()),
    }
}

/// `text` cut at `max` characters, ending with how many were left out; not escaped
/// (for messages escaped where they are shown).
pub fn cut(text: &str, max: usize) -> String {
    match split_at_chars(text, max) {
        (head, 0) => head.to_string(),
        (head, rest) => format!("{head}{}", left_out(rest, "character")),
    }
}

/// Server text escaped and cut at `max` characters, ending with how many were left
/// out. Cut before escaping, so an escape is never split.
pub fn escape_cut(text: &str, max: usize) -> String {
    match split_at_chars(text, max) {
        (head, 0) => escape_for_terminal(head),
        (head, rest) => format!(
            "{}{}",
            escape_for_terminal(head),
            left_out(rest, "character")
        ),
    }
}

/// Text written to it, kept as at most `max_lines` lines of at most `max_chars`
/// characters each, with what is left out only counted: folding a huge definition for
/// a person takes little memory. Write to it (e.g. `serde_json::to_writer_pretty`),
/// then take [`Folded::lines`].
#[derive(Debug)]
pub struct Folded {
    max_lines: usize,
    max_chars: usize,
    lines: Vec<(Vec<u8>, usize)>,
    /// The line being written: its first bytes, and how many characters it has.
    current: Vec<u8>,
    current_chars: usize,
    more_lines: usize,
}

impl Folded {
    pub fn new(max_lines: usize, max_chars: usize) -> Self {
        Folded {
            max_lines,
            max_chars,
            lines: Vec::new(),
            current: Vec::new(),
            current_chars: 0,
            more_lines: 0,
        }
    }

    /// `text` folded at once.
    pub fn text(text: &str, max_lines: usize, max_chars: usize) -> Vec<String> {
        let mut folded = Folded::new(max_lines, max_chars);
        std::io::Write::write_all(&mut folded, text.as_bytes()).expect("writes to memory");
        folded.lines()
    }

    fn end_line(&mut self) {
        if self.lines.len() < self.max_lines {
            let bytes = std::mem::take(&mut self.current);
            self.lines.push((bytes, self.current_chars));
        } else {
            self.current.clear();
            self.more_lines += 1;
        }
        self.current_chars = 0;
    }

    /// The kept lines, each escaped and cut with a count of what it left out, then a
    /// line counting the lines left out, if any.
    pub fn lines(self) -> Vec<String> {
        let (mut lines, more) = self.finish();
        if more > 0 {
            lines.push(left_out(more, "line"));
        }
        lines
    }

    /// The kept lines, each escaped and cut with a count of what it left out, and how
    /// many lines were left out.
    pub fn finish(mut self) -> (Vec<String>, usize) {
        if !self.current.is_empty() || self.current_chars > 0 {
            self.end_line();
        }
        let out: Vec<String> = self
            .lines
            .iter()
            .map(|(bytes, chars)| {
                let text = String::from_utf8_lossy(bytes);
                let shown: String = text.chars().take(self.max_chars).collect();
                let rest = chars.saturating_sub(self.max_chars);
                let mut line = escape_for_terminal(&shown);
                if rest > 0 {
                    line.push_str(&left_out(rest, "character"));
                }
                line
            })
            .collect();
        (out, self.more_lines)
    }
}

impl std::io::Write for Folded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // Enough bytes for `max_chars` characters of any width.
        let keep = self.max_chars.saturating_mul(4);
        for piece in buf.split_inclusive(|b| *b == b'\n') {
            let (text, ends) = match piece.split_last() {
                Some((b'\n', text)) => (text, true),
                _ => (piece, false),
            };
            if self.lines.len() < self.max_lines {
                let room = keep.saturating_sub(self.current.len());
                self.current
                    .extend_from_slice(&text[..text.len().min(room)]);
            }
            // Characters, counted by the bytes that start one.
            self.current_chars += text.iter().filter(|b| (**b & 0xc0) != 0x80).count();
            if ends {
                self.end_line();
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
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

/// Whether `text` matches `pattern`: `*` any run of characters, `?` any one, the rest
/// literally. Backtracks to the last `*` only: never worse than the product of the
/// lengths.
pub fn wildcard(text: &str, pattern: &str) -> bool {
    let text: Vec<char> = text.chars().collect();
    let pattern: Vec<char> = pattern.chars().collect();
    let (mut t, mut p) = (0, 0);
    // The last `*` seen, and where in the text it was tried up to.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                t += 1;
                p += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_with_a_count_and_never_inside_an_escape() {
        assert_eq!(escape_cut("short", 5), "short");
        assert_eq!(
            escape_cut("abc\u{1b}def", 4),
            "abc\\u{001b}… (3 more characters)"
        );
        assert_eq!(escape_cut("héllo wörld", 5), "héllo… (6 more characters)");
    }

    #[test]
    fn folded_text_keeps_some_lines_cut_and_counts_the_rest() {
        let text = format!("one\n{}\nthree\nfour\nfive", "é".repeat(30));
        assert_eq!(
            Folded::text(&text, 3, 10),
            [
                "one".to_string(),
                format!("{}… (20 more characters)", "é".repeat(10)),
                "three".into(),
                "… (2 more lines)".into(),
            ]
        );
        // Written in pieces that split lines and characters, the same result.
        let mut folded = Folded::new(3, 10);
        for chunk in text.as_bytes().chunks(3) {
            std::io::Write::write_all(&mut folded, chunk).unwrap();
        }
        assert_eq!(folded.lines(), Folded::text(&text, 3, 10));
        assert_eq!(Folded::text("a\u{202e}b", 5, 10), ["a\\u{202e}b"]);
    }

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
