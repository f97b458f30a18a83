//! The strict reader and JCS writer (with their fast paths: plain ASCII runs, small
//! integers, reused buffers) agree with a straightforward reference on random JSON:
//! same canonical text, same hash, and the canonical text reads back to itself.
//! The listing fast path of `mcp-lock hash` (one definition at a time on a flat tape)
//! agrees with the tree: same names and hashes, and it declines whatever the tree
//! reader refuses. Seeded, so every run checks the same documents.

use mcp_lock::base::json::{Json, Listed};
use mcp_lock::contract::hash::{
    HashedTool, ToolHash, definition_hash, hash_listing_text, sha256_hex, tool_hashes_set_hash,
};

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

/// What `mcp-lock hash` reads as the definitions of a listing, read through the tree:
/// the general path the fast one must agree with.
fn tree_listing(value: &Json, listed: Listed) -> Option<Vec<ToolHash>> {
    let array = match listed {
        Listed::Array => value.as_array(),
        Listed::Tools => value.get("tools")?.as_array(),
        Listed::ResultTools => value.get("result")?.get("tools")?.as_array(),
    }?;
    Some(
        array
            .iter()
            .map(|d| ToolHash::from(&HashedTool::new(d.clone())))
            .collect(),
    )
}

/// A one-byte edit of a text: a byte dropped, or replaced by one that matters to JSON.
fn mutate(text: &str, rng: &mut Rng) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    if bytes.is_empty() {
        return bytes;
    }
    let at = rng.below(bytes.len() as u64) as usize;
    const BYTES: &[u8] = b"\"\\[]{},:0-e.u \x01\x7f\xff\xed";
    if rng.below(3) == 0 {
        bytes.remove(at);
    } else {
        bytes[at] = BYTES[rng.below(BYTES.len() as u64) as usize];
    }
    bytes
}

#[test]
fn streamed_listing_hashes_agree_with_the_tree_and_decline_what_it_refuses() {
    let mut rng = Rng(0x0dd_ba11_5eed_7a9e);
    let (mut agreed, mut declined, mut mutants_read) = (0, 0, 0);
    for round in 0..1500 {
        let mut definitions = Vec::new();
        for _ in 0..rng.below(4) {
            let mut sent = String::new();
            let value = match rng.below(3) {
                // Mostly objects with a name, as listings hold.
                0 | 1 => {
                    let mut value = random_value(&mut rng, 1);
                    if let V::Obj(members) = &mut value {
                        let name: Vec<u16> = "name".encode_utf16().collect();
                        members.push((name, V::Str(random_units(&mut rng))));
                    }
                    value
                }
                _ => random_value(&mut rng, 0),
            };
            write_sent(&value, &mut rng, &mut sent);
            definitions.push(sent);
        }
        let items = definitions.join(",");
        let shapes = [
            (Listed::Array, format!("[{items}]")),
            (Listed::Tools, format!(r#" {{"tools" : [{items}] }}"#)),
            (
                Listed::ResultTools,
                format!(
                    r#"{{"jsonrpc":"2.0","id":3,"result":{{"nextCursor":"c","tools":[{items}]}}}}"#
                ),
            ),
        ];
        for (listed, text) in shapes {
            let tree = Json::parse(&text).unwrap_or_else(|e| panic!("round {round}: {e}"));
            let expected = tree_listing(&tree, listed).unwrap();
            let (got_listed, got) = hash_listing_text(text.as_bytes())
                .unwrap_or_else(|| panic!("round {round}: declined a plain listing: {text}"));
            assert_eq!(
                (got_listed, &got),
                (listed, &expected),
                "round {round}: {text}"
            );
            agreed += 1;

            let bad = mutate(&text, &mut rng);
            let tree = std::str::from_utf8(&bad)
                .ok()
                .and_then(|t| Json::parse(t).ok());
            match (tree, hash_listing_text(&bad)) {
                (None, None) => declined += 1,
                (None, Some(_)) => panic!(
                    "round {round}: read what the tree refuses: {}",
                    String::from_utf8_lossy(&bad)
                ),
                (Some(_), None) => {}
                (Some(tree), Some((listed, got))) => {
                    mutants_read += 1;
                    let expected = tree_listing(&tree, listed);
                    assert_eq!(
                        Some(got),
                        expected,
                        "round {round}: {}",
                        String::from_utf8_lossy(&bad)
                    );
                }
            }
        }
    }
    assert!(
        agreed == 4500 && declined > 1500 && mutants_read > 300,
        "{agreed} agreed, {declined} declined, {mutants_read} mutants read"
    );
}

#[test]
fn streamed_listing_takes_the_nesting_limit_where_the_tree_does() {
    // A definition in a tools/list answer is three levels down; the reader takes 256.
    for depth in [253, 254, 255] {
        let definition = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let text = format!(r#"{{"result":{{"tools":[{definition}]}}}}"#);
        let tree = Json::parse(&text);
        let fast = hash_listing_text(text.as_bytes());
        assert_eq!(tree.is_ok(), fast.is_some(), "depth {depth}");
        if let (Ok(tree), Some((listed, got))) = (tree, fast) {
            assert_eq!(Some(got), tree_listing(&tree, listed));
        }
    }
    assert!(Json::parse(&format!("[{}]", "[".repeat(255) + &"]".repeat(255))).is_ok());
    let too_deep = format!(r#"{{"tools":[{}{}]}}"#, "[".repeat(256), "]".repeat(256));
    assert!(Json::parse(&too_deep).is_err());
    assert!(hash_listing_text(too_deep.as_bytes()).is_none());
}

#[test]
fn streamed_listing_leaves_every_other_shape_to_the_tree() {
    for text in [
        // A definition, even one holding a `tools` array of its own.
        r#"{"name":"t","tools":[{"name":"x"}]}"#,
        r#"{"tools":[{"name":"x"}],"name":"t"}"#,
        // An error answer; a repeated `tools` (the last one counts) or `result`.
        r#"{"error":{"code":1},"id":1}"#,
        r#"{"tools":[{"name":"a"}],"tools":[{"name":"b"}]}"#,
        r#"{"result":{"tools":[]},"result":{"tools":[{"name":"b"}]}}"#,
        r#"{"tools":{"name":"a"},"result":{"tools":[{"name":"b"}]}}"#,
        // Not a listing at all, or not JSON.
        r#"{"result":{"tools":{}}}"#,
        "\u{feff}[]",
        r#"[{"name":"a"}] x"#,
        "",
    ] {
        assert!(hash_listing_text(text.as_bytes()).is_none(), "{text}");
    }
    // Escaped member names are the names they stand for.
    let (listed, got) = hash_listing_text(br#"{"\u0074ools":[{"n\u0061me":"\u00e9"}]}"#).unwrap();
    assert_eq!(listed, Listed::Tools);
    assert_eq!(got[0].name.as_deref(), Some("\u{e9}"));
    // A repeated member inside a definition: no hash, with the tree's pointer.
    let text = r#"[{"name":"a","s":{"p":[1,{"q":1,"q":2}]}}]"#;
    let (_, got) = hash_listing_text(text.as_bytes()).unwrap();
    let tree = Json::parse(text).unwrap();
    assert_eq!(Some(got.clone()), tree_listing(&tree, Listed::Array));
    assert_eq!(
        got[0].hash.as_ref().unwrap_err().to_string(),
        r#"repeated member name "q" at /s/p/1/q"#
    );
}

#[test]
fn published_vectors_hash_the_same_through_the_listing_fast_path() {
    let v: serde_json::Value =
        serde_json::from_str(include_str!("../data/tool-definition-hash-vectors.json")).unwrap();
    let hashed = |text: &str| {
        hash_listing_text(text.as_bytes())
            .expect("a plain listing")
            .1
    };
    let pages = |pages: &serde_json::Value| -> Vec<ToolHash> {
        let pages = pages.as_array().unwrap().iter();
        pages.flat_map(|p| hashed(p.as_str().unwrap())).collect()
    };
    for d in v["definitions"].as_array().unwrap() {
        let got = hashed(&format!("[{}]", d["input"].as_str().unwrap()));
        assert_eq!(
            got[0].hash.as_deref().ok(),
            d["hash"].as_str(),
            "{}",
            d["about"]
        );
    }
    for s in v["sets"].as_array().unwrap() {
        let got = tool_hashes_set_hash(&pages(&s["pages"])).unwrap();
        assert_eq!(Some(got.as_str()), s["setHash"].as_str(), "{}", s["about"]);
    }
    for entry in v["invalid"].as_array().unwrap() {
        let refused = match entry["input"].as_str() {
            Some(input) => hashed(&format!("[{input}]"))[0].hash.is_err(),
            None => tool_hashes_set_hash(&pages(&entry["pages"])).is_err(),
        };
        assert!(refused, "{}", entry["about"]);
    }
}

#[test]
fn streamed_listing_sorts_wide_objects_and_names_the_same_repeat_as_the_tree() {
    let mut rng = Rng(0xfeed_f00d_1234_5678);
    for round in 0..400 {
        let width = 1 + rng.below(30);
        let members: Vec<String> = (0..width)
            .map(|_| {
                // Few distinct names, so that some objects repeat one or several.
                let name = match rng.below(4) {
                    0 => format!("k{}", rng.below(width * 2)),
                    1 => format!("\\u00e9{}", rng.below(width * 3)),
                    2 => format!("\u{ff61}{}", rng.below(width * 3)),
                    _ => format!("\u{1f600}{}", rng.below(width * 3)),
                };
                format!(r#""{name}":{}"#, rng.below(100))
            })
            .collect();
        let text = format!(r#"[{{"name":"w","o":{{{}}}}}]"#, members.join(","));
        let tree = Json::parse(&text).unwrap();
        let (_, got) = hash_listing_text(text.as_bytes()).unwrap();
        assert_eq!(
            Some(got),
            tree_listing(&tree, Listed::Array),
            "round {round}: {text}"
        );
    }
}
