//! Invisible or misleading characters: what a person reviewing a definition does not
//! see, but the model reads (or a terminal acts on).

use super::hidden::{is_bidi, is_hidden, is_tag, is_zero_width};
use super::normal::is_lookalike;
use super::walk::{Field, Text};
use super::{Screened, Severity, quote};

pub const TAG_CHARACTERS: &str = "tag-characters";
pub const BIDI_CONTROL: &str = "bidi-control";
pub const ZERO_WIDTH: &str = "zero-width";
pub const CONTROL_CHARACTERS: &str = "control-characters";
pub const CONFUSABLE_NAME: &str = "confusable-name";

/// A zero-width joiner between two pictographs builds one emoji (👩‍💻): not hidden text.
fn joins_emoji(chars: &[(usize, char)], i: usize) -> bool {
    let pictograph = |c: char| (c as u32) >= 0x2600 && !is_hidden(c) && c != '\u{FE0F}';
    chars[i].1 == '\u{200D}'
        && i > 0
        && i + 1 < chars.len()
        && (pictograph(chars[i - 1].1) || chars[i - 1].1 == '\u{FE0F}')
        && pictograph(chars[i + 1].1)
}

pub fn screen(text: &Text, out: &mut Vec<Screened>) {
    let s = &text.value;
    let chars: Vec<(usize, char)> = s.char_indices().collect();
    let first = |pred: &dyn Fn(usize, char) -> bool| {
        chars
            .iter()
            .enumerate()
            .find(|(i, (_, c))| pred(*i, *c))
            .map(|(_, (at, c))| (*at, *at + c.len_utf8()))
    };
    if let Some((a, b)) = first(&|_, c| is_tag(c)) {
        let hidden: String = s
            .chars()
            .filter(|c| is_tag(*c))
            .filter_map(|c| char::from_u32(c as u32 - 0xE0000))
            .filter(|c| !c.is_control())
            .collect();
        let hidden: String = hidden.chars().take(200).collect();
        out.push(
            Screened::new(TAG_CHARACTERS, Severity::High, text, quote(s, a, b)).because(format!(
                "Unicode tag characters hide text from the user that the model reads: {hidden:?}"
            )),
        );
    }
    if let Some((a, b)) = first(&|_, c| is_bidi(c)) {
        out.push(
            Screened::new(BIDI_CONTROL, Severity::High, text, quote(s, a, b)).because(
                "a bidirectional override or isolate makes the text show in another order than the model reads it",
            ),
        );
    }
    let zero_width = |i: usize, c: char| {
        is_zero_width(c) && !joins_emoji(&chars, i) && !(c == '\u{FEFF}' && i == 0)
    };
    if let Some((a, b)) = first(&zero_width) {
        let severity = if matches!(text.field, Field::Name | Field::Parameter) {
            Severity::High
        } else {
            Severity::Medium
        };
        out.push(
            Screened::new(ZERO_WIDTH, severity, text, quote(s, a, b))
                .because("a zero-width character: invisible to the user, read by the model"),
        );
    }
    // An escape (ESC, or the one-character CSI) starts a sequence a terminal acts on.
    let escape = s
        .char_indices()
        .find(|(_, c)| matches!(c, '\u{1B}' | '\u{9B}'));
    let control = |_: usize, c: char| c.is_control() && !matches!(c, '\n' | '\r' | '\t');
    if let Some((a, c)) = escape {
        out.push(
            Screened::new(
                CONTROL_CHARACTERS,
                Severity::High,
                text,
                quote(s, a, a + c.len_utf8()),
            )
            .because(
                "a terminal escape sequence: it can hide or rewrite what a person sees in a terminal",
            ),
        );
    } else if let Some((a, b)) = first(&control) {
        out.push(
            Screened::new(CONTROL_CHARACTERS, Severity::Medium, text, quote(s, a, b))
                .because("a control character in text the model reads"),
        );
    }
    if matches!(text.field, Field::Name | Field::Parameter) {
        confusable(text, out);
    }
}

/// A name mixing Latin with another script's letters, or holding Cyrillic or Greek
/// letters that look Latin among Latin ones.
fn confusable(text: &Text, out: &mut Vec<Screened>) {
    let s = &text.value;
    let latin = s.chars().any(|c| c.is_ascii_alphabetic());
    let lookalike = s.char_indices().find(|(_, c)| is_lookalike(*c));
    let foreign = s
        .char_indices()
        .find(|(_, c)| c.is_alphabetic() && !c.is_ascii() && !is_lookalike(*c));
    let Some((at, c)) = (if latin { lookalike.or(foreign) } else { None }) else {
        return;
    };
    // Accented Latin letters (é, ü) are Latin: a French or German name is not mixed.
    if ('\u{00C0}'..='\u{024F}').contains(&c) {
        return;
    }
    out.push(
        Screened::new(
            CONFUSABLE_NAME,
            Severity::Medium,
            text,
            quote(s, at, at + c.len_utf8()),
        )
        .because(format!(
            "the name mixes Latin letters with {} (U+{:04X}), which can make it look like another name",
            if is_lookalike(c) {
                "a lookalike letter"
            } else {
                "another script"
            },
            c as u32
        )),
    );
}
