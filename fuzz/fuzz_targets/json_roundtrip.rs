//! The strict reader and the JCS writer: canonical(parse(canonical(x))) ==
//! canonical(x), the pretty form reads back to the same canonical form, and on
//! text serde_json also reads (no repeated member names, no lone surrogates) the JCS
//! bytes agree with serde_json's values (float_roundtrip) canonicalised the
//! straightforward way below.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_lock::base::json::Json;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = Json::parse(text);
    let reference: Option<Value> = serde_json::from_str(text).ok();
    let Ok(value) = parsed else {
        // What serde_json reads, the strict reader reads too (it only refuses
        // nesting deeper than serde_json's own limit).
        assert!(
            reference.is_none(),
            "serde_json reads what Json::parse refuses: {text:?}"
        );
        return;
    };
    let Ok(canonical) = value.canonical() else {
        assert!(
            value.has_repeated_member(),
            "no canonical form without a repeated member"
        );
        return;
    };
    let again = Json::parse(&canonical).expect("canonical text reads back");
    assert_eq!(
        again.canonical().unwrap(),
        canonical,
        "canonical form is a fixed point"
    );
    let pretty = value
        .canonical_pretty()
        .expect("pretty form of a canonical value");
    let from_pretty = Json::parse(&pretty).expect("pretty text reads back");
    assert_eq!(
        from_pretty.canonical().unwrap(),
        canonical,
        "pretty form reads back"
    );
    if let Some(reference) = reference {
        let mut expected = String::new();
        reference_canonical(&reference, &mut expected);
        assert_eq!(canonical, expected, "JCS bytes differ from the reference");
    }
});

/// RFC 8785 written directly from the spec: members sorted by UTF-16 code units,
/// numbers as ECMAScript writes them, strings with the minimal escapes.
fn reference_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let n = n.as_f64().expect("a finite number");
            if n == 0.0 {
                out.push('0');
            } else {
                out.push_str(ryu_js::Buffer::new().format_finite(n));
            }
        }
        Value::String(s) => reference_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                reference_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (name, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                reference_string(name, out);
                out.push(':');
                reference_canonical(item, out);
            }
            out.push('}');
        }
    }
}

fn reference_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}
