//! Characters that show nothing to a person reading a definition: the one list both
//! the character screen and text normalisation read.

/// Unicode tag characters (U+E0000..U+E007F): invisible ASCII look-alikes.
pub fn is_tag(c: char) -> bool {
    ('\u{E0000}'..='\u{E007F}').contains(&c)
}

/// Bidirectional embedding, override and isolate controls.
pub fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Zero-width spaces and joiners, the word joiner and the byte-order mark.
pub fn is_zero_width(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}')
}

/// Characters that show nothing: tags, bidi controls, zero-width ones, and the
/// invisible formatting marks (soft hyphen, word joiners, LRM/RLM).
pub fn is_hidden(c: char) -> bool {
    is_tag(c)
        || is_bidi(c)
        || is_zero_width(c)
        || matches!(
            c,
            '\u{00AD}' | '\u{200E}' | '\u{200F}' | '\u{2061}'..='\u{2064}'
        )
}
