//! The strict reader and JCS writer (with their fast paths: plain ASCII runs, small
//! integers, reused buffers) agree with a straightforward reference on random JSON:
//! same canonical text, same hash, and the canonical text reads back to itself.
//! Seeded, so every run checks the same documents.

use mcp_lock::hash::{definition_hash, sha256_hex};
use mcp_lock::json::Json;

/// xorshift64*: small, deterministic, good enough to shape documents.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The reference model: strings as UTF-16 units, members in order (repeats possible).
#[derive(Clone, Debug)]
enum V {
    Null,
    Bool(bool),
    Num(f64),
    Str(Vec<u16>),
    Arr(Vec<V>),
    Obj(Vec<(Vec<u16>, V)>),
}

fn random_units(rng: &mut Rng) -> Vec<u16> {
    let len = match rng.below(4) {
        0 => rng.below(3),
        1 => rng.below(12),
        _ => rng.below(40),
    };
    let mut units = Vec::new();
    for _ in 0..len {
        match rng.below(20) {
            // Mostly plain ASCII, as real definitions are.
            0..=11 => units.push(0x20 + rng.below(0x5f) as u16),
            12 => units.push([0x22, 0x5c, 0x2f][rng.below(3) as usize]),
            13 => units.push(rng.below(0x20) as u16),
            14 => units.push(0x7f + rng.below(0x100) as u16),
            15 => units.push(0x800 + rng.below(0xd000) as u16),
            16 => {
                // A surrogate pair (an emoji, say).
                units.push(0xd800 + rng.below(0x400) as u16);
                units.push(0xdc00 + rng.below(0x400) as u16);
            }
            17 => units.push(0xd800 + rng.below(0x800) as u16), // lone surrogate
            18 => units.push([0x202e, 0x200b, 0x2028, 0x9b][rng.below(4) as usize]),
            _ => units.push(0xe000 + rng.below(0x2000) as u16),
        }
    }
    units
}

fn random_number(rng: &mut Rng) -> f64 {
    match rng.below(8) {
        0 => 0.0,
        1 => -0.0,
        2 => rng.below(1000) as f64,
        3 => -(rng.below(1 << 40) as f64),
        4 => (rng.below(1 << 53)) as f64,
        5 => rng.below(1_000_000) as f64 / 1000.0,
        6 => f64::from_bits(rng.next() & !(0x7ff << 52) | (rng.below(0x7fe) << 52)),
        _ => 1e21 * (1 + rng.below(1000)) as f64,
    }
}

fn random_value(rng: &mut Rng, depth: u32) -> V {
    let leaf = depth > 5 || rng.below(3) == 0;
    match if leaf { rng.below(4) } else { 4 + rng.below(2) } {
        0 => [V::Null, V::Bool(true), V::Bool(false)][rng.below(3) as usize].clone(),
        1 => V::Num(random_number(rng)),
        2 | 3 => V::Str(random_units(rng)),
        4 => V::Arr(
            (0..rng.below(6))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let mut members: Vec<(Vec<u16>, V)> = Vec::new();
            for _ in 0..rng.below(8) {
                let key = random_units(rng);
                // Repeated names are legal to read but have no canonical form; keep
                // most objects free of them so most documents hash.
                if members.iter().any(|(k, _)| *k == key) && rng.below(10) != 0 {
                    continue;
                }
                members.push((key, random_value(rng, depth + 1)));
            }
            V::Obj(members)
        }
    }
}

/// The document as a client might send it: random spacing, random escapes.
fn write_sent(v: &V, rng: &mut Rng, out: &mut String) {
    let space = |rng: &mut Rng, out: &mut String| {
        for _ in 0..rng.below(3).saturating_sub(1) {
            out.push([' ', '\n', '\t', '\r'][rng.below(4) as usize]);
        }
    };
    space(rng, out);
    match v {
        V::Null => out.push_str("null"),
        V::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        V::Num(n) => {
            if rng.below(2) == 0 || n.fract() != 0.0 || n.abs() >= 1e21 {
                out.push_str(&format!("{n:e}"));
            } else {
                out.push_str(&format!("{n}"));
            }
        }
        V::Str(units) => write_sent_string(units, rng, out),
        V::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_sent(item, rng, out);
            }
            space(rng, out);
            out.push(']');
        }
        V::Obj(members) => {
            out.push('{');
            for (i, (k, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                space(rng, out);
                write_sent_string(k, rng, out);
                space(rng, out);
                out.push(':');
                write_sent(item, rng, out);
            }
            space(rng, out);
            out.push('}');
        }
    }
    space(rng, out);
}

fn write_sent_string(units: &[u16], rng: &mut Rng, out: &mut String) {
    out.push('"');
    let mut i = 0;
    while i < units.len() {
        let u = units[i];
        let pair = (0xd800..0xdc00).contains(&u)
            && units
                .get(i + 1)
                .is_some_and(|l| (0xdc00..0xe000).contains(l));
        let must_escape = u < 0x20 || u == 0x22 || u == 0x5c || (0xd800..0xe000).contains(&u);
        if must_escape || rng.below(8) == 0 {
            out.push_str(&format!("\\u{u:04X}"));
            i += 1;
            continue;
        }
        let width = if pair { 2 } else { 1 };
        out.push_str(&String::from_utf16(&units[i..i + width]).unwrap());
        i += width;
    }
    out.push('"');
}

/// The reference JCS writer: every character on its own, every number through the
/// general shortest-digits formatter. `None`: a repeated member name.
fn reference_canonical(v: &V, out: &mut String) -> Option<()> {
    match v {
        V::Null => out.push_str("null"),
        V::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        V::Num(n) if *n == 0.0 => out.push('0'),
        V::Num(n) => out.push_str(ryu_js::Buffer::new().format_finite(*n)),
        V::Str(units) => reference_string(units, out),
        V::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                reference_canonical(item, out)?;
            }
            out.push(']');
        }
        V::Obj(members) => {
            let mut sorted: Vec<&(Vec<u16>, V)> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            if sorted.windows(2).any(|w| w[0].0 == w[1].0) {
                return None;
            }
            out.push('{');
            for (i, (k, item)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                reference_string(k, out);
                out.push(':');
                reference_canonical(item, out)?;
            }
            out.push('}');
        }
    }
    Some(())
}

fn reference_string(units: &[u16], out: &mut String) {
    out.push('"');
    for c in char::decode_utf16(units.iter().copied()) {
        match c {
            Ok('"') => out.push_str("\\\""),
            Ok('\\') => out.push_str("\\\\"),
            Ok('\u{8}') => out.push_str("\\b"),
            Ok('\t') => out.push_str("\\t"),
            Ok('\n') => out.push_str("\\n"),
            Ok('\u{c}') => out.push_str("\\f"),
            Ok('\r') => out.push_str("\\r"),
            Ok(c) if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            Ok(c) => out.push(c),
            Err(lone) => out.push_str(&format!("\\u{:04x}", lone.unpaired_surrogate())),
        }
    }
    out.push('"');
}

#[test]
fn fast_reader_and_writer_agree_with_the_reference_on_random_json() {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let (mut hashed, mut refused) = (0, 0);
    for round in 0..3000 {
        let value = random_value(&mut rng, 0);
        let mut sent = String::new();
        write_sent(&value, &mut rng, &mut sent);
        let parsed = Json::parse(&sent).unwrap_or_else(|e| panic!("round {round}: {e}\n{sent}"));
        let mut expected = String::new();
        match reference_canonical(&value, &mut expected) {
            Some(()) => {
                hashed += 1;
                let canonical = parsed.canonical().unwrap();
                assert_eq!(canonical, expected, "round {round}: {sent}");
                assert_eq!(
                    definition_hash(&parsed).unwrap(),
                    sha256_hex(expected.as_bytes()),
                    "round {round}"
                );
                let again = Json::parse(&canonical).unwrap();
                assert_eq!(again.canonical().unwrap(), canonical, "round {round}");
            }
            None => {
                refused += 1;
                assert!(parsed.canonical().is_err(), "round {round}: {sent}");
                assert!(definition_hash(&parsed).is_err(), "round {round}");
            }
        }
    }
    // The generator made both kinds, or this test checks less than it says.
    assert!(
        hashed > 2000 && refused > 10,
        "{hashed} hashed, {refused} refused"
    );
}
