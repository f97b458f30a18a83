//! The lexing both readers share: numbers, string escapes, and runs of characters
//! that stand for themselves. The tree reader ([`super::read`]) turns a failure into
//! an error at its place; the listing fast path ([`super::tape`]) declines, leaving
//! the text to the tree reader, so both read every text the same way.

/// What is wrong, and the byte offset it is at.
pub(super) struct LexError {
    pub at: usize,
    pub message: &'static str,
}

fn fail<T>(at: usize, message: &'static str) -> Result<T, LexError> {
    Err(LexError { at, message })
}

/// A number as read.
pub(super) enum Number {
    /// An integer of at most 15 digits, exact in a double without float parsing:
    /// `text[start..end]` as written (its sign at `start` when `negative`).
    Short {
        start: usize,
        end: usize,
        negative: bool,
    },
    /// Any other number, as the nearest double.
    Double(f64),
}

impl Number {
    /// The value of a [`Number::Short`] as a double (`-0` keeps its sign).
    pub(super) fn short_value(text: &[u8], start: usize, end: usize, negative: bool) -> f64 {
        let digits = &text[start + usize::from(negative)..end];
        let value = digits
            .iter()
            .fold(0u64, |n, d| n * 10 + u64::from(d - b'0')) as f64;
        if negative { -value } else { value }
    }
}

/// Reads the number at `*pos` (RFC 8259 grammar, finite doubles only).
pub(super) fn number(text: &[u8], pos: &mut usize) -> Result<Number, LexError> {
    let start = *pos;
    let digits = |pos: &mut usize| {
        let from = *pos;
        while let Some(b'0'..=b'9') = text.get(*pos) {
            *pos += 1;
        }
        *pos - from
    };
    let negative = text.get(*pos) == Some(&b'-');
    if negative {
        *pos += 1;
    }
    let integer_at = *pos;
    match text.get(*pos) {
        Some(b'0') => *pos += 1,
        Some(b'1'..=b'9') => {
            digits(pos);
        }
        _ => return fail(*pos, "malformed number"),
    }
    if *pos - integer_at <= 15 && !matches!(text.get(*pos), Some(b'.' | b'e' | b'E')) {
        return Ok(Number::Short {
            start,
            end: *pos,
            negative,
        });
    }
    if text.get(*pos) == Some(&b'.') {
        *pos += 1;
        if digits(pos) == 0 {
            return fail(*pos, "malformed number: no digits after '.'");
        }
    }
    if let Some(b'e' | b'E') = text.get(*pos) {
        *pos += 1;
        if let Some(b'+' | b'-') = text.get(*pos) {
            *pos += 1;
        }
        if digits(pos) == 0 {
            return fail(*pos, "malformed number: no digits in the exponent");
        }
    }
    // The grammar above admits only ASCII, so this slice is valid UTF-8.
    let written = std::str::from_utf8(&text[start..*pos]).unwrap_or("");
    match written.parse::<f64>() {
        Ok(n) if n.is_finite() => Ok(Number::Double(n)),
        _ => fail(start, "number out of range for an IEEE 754 double"),
    }
}

/// Moves `*pos` past the characters that stand for themselves (no quote, backslash
/// or control character), checking that they are UTF-8.
pub(super) fn plain_run(text: &[u8], pos: &mut usize) -> Result<(), LexError> {
    let rest = &text[*pos..];
    let len = plain_len(rest);
    let run = &rest[..len];
    if !run.is_ascii()
        && let Err(e) = std::str::from_utf8(run)
    {
        return fail(*pos + e.valid_up_to(), "invalid UTF-8 in a string");
    }
    *pos += len;
    Ok(())
}

/// The code point an escape stands for, `*pos` at its backslash: a surrogate pair
/// written as two `\u` escapes is one character, a lone surrogate its own code point.
pub(super) fn escape(text: &[u8], pos: &mut usize) -> Result<u32, LexError> {
    let Some(&escape) = text.get(*pos + 1) else {
        return fail(*pos + 1, "unterminated string");
    };
    *pos += 2;
    Ok(match escape {
        b'"' => 0x22,
        b'\\' => 0x5c,
        b'/' => 0x2f,
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => 0x0a,
        b'r' => 0x0d,
        b't' => 0x09,
        b'u' => {
            let unit = hex4(text, pos)?;
            if (0xd800..0xdc00).contains(&unit) && text[*pos..].starts_with(b"\\u") {
                let after = *pos;
                *pos += 2;
                let next = hex4(text, pos)?;
                if (0xdc00..0xe000).contains(&next) {
                    let high = u32::from(unit - 0xd800);
                    let low = u32::from(next - 0xdc00);
                    return Ok(0x1_0000 + (high << 10) + low);
                }
                // Not a pair: the next escape is read on its own.
                *pos = after;
            }
            u32::from(unit)
        }
        _ => return fail(*pos - 1, "unknown escape in a string"),
    })
}

fn hex4(text: &[u8], pos: &mut usize) -> Result<u16, LexError> {
    let Some(hex) = text.get(*pos..*pos + 4) else {
        return fail(*pos, "truncated \\u escape");
    };
    let mut unit = 0u16;
    for &b in hex {
        let Some(digit) = (b as char).to_digit(16) else {
            return fail(*pos, "malformed \\u escape");
        };
        unit = unit << 4 | digit as u16;
    }
    *pos += 4;
    Ok(unit)
}

/// How many bytes from the start need no escape: no quote, backslash or control
/// character. A word at a time: a byte is flagged when it equals `"` or `\` or is
/// below 0x20; the lowest flag of each test is exact (a borrow only runs upwards
/// from a flagged byte), and that is the one used.
pub(super) fn plain_len(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut at = 0;
    while let Some(word) = bytes.get(at..at + 8) {
        let w = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
        let quote = w ^ (ONES * u64::from(b'"'));
        let backslash = w ^ (ONES * u64::from(b'\\'));
        let flags = (quote.wrapping_sub(ONES) & !quote
            | backslash.wrapping_sub(ONES) & !backslash
            | w.wrapping_sub(ONES * 0x20) & !w)
            & HIGH;
        if flags != 0 {
            return at + (flags.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + bytes[at..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .unwrap_or(bytes.len() - at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_run_length_stops_at_the_first_byte_that_needs_an_escape() {
        let naive = |b: &[u8]| {
            b.iter()
                .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                .unwrap_or(b.len())
        };
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 40) as usize;
            // Mostly plain bytes (ASCII and not), and now and then one that stops a run.
            let bytes: Vec<u8> = (0..len)
                .map(|i| {
                    let r = seed.rotate_left(i as u32 * 7);
                    match r % 23 {
                        0 => b'"',
                        1 => b'\\',
                        2 => (r >> 8) as u8 % 0x20,
                        3 => 0x20,
                        4 => 0x80 | (r >> 8) as u8,
                        _ => b'a' + (r >> 8) as u8 % 26,
                    }
                })
                .collect();
            assert_eq!(plain_len(&bytes), naive(&bytes), "round {round}: {bytes:?}");
        }
    }
}
