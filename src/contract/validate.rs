//! Call arguments against a tool's input schema: JSON Schema 2020-12, or the draft the
//! schema names in `$schema`. Remote `$ref`s are never fetched.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::base::json::Json;

/// A schema whose top level lists more properties than this, and that no `$ref` or
/// anchor ties together, is compiled per call with only the properties the call names:
/// a compiled validator costs far more memory than the schema's text (a million
/// properties took over 500 MB), and the properties a call does not name cannot
/// change whether it validates (`additionalProperties` and `unevaluatedProperties` see
/// the same names as evaluated either way). One difference: a property schema that
/// cannot be compiled makes the schema unusable only for calls that name it, where a
/// whole schema would be unusable (and its calls forwarded unchecked) for every call.
const SLICE_FROM: usize = 1024;

/// The longest message kept per violation; a hostile schema cannot flood a refusal.
const MESSAGE_CHARS: usize = 300;
/// At most this many violations are reported per call.
const MAX_VIOLATIONS: usize = 10;

/// A compiled input schema, or why it could not be compiled.
pub struct ArgumentSchema {
    compiled: Compiled,
    /// The schema holds a number of magnitude 2^53 or more. The lock keeps numbers as
    /// doubles (RFC 8785), so such a number may not be the one the server wrote, and
    /// an integer argument that large cannot be compared with it exactly.
    imprecise: bool,
}

/// One place where the arguments do not fit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// JSON pointer into the arguments ("" is the arguments object itself).
    pub path: String,
    pub message: String,
}

/// What checking arguments found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgumentCheck {
    Valid,
    /// The first few violations, in schema order.
    Invalid(Vec<Violation>),
    /// The schema itself cannot be used (an unknown draft, a remote `$ref`, a
    /// malformed keyword): nothing can be said about the arguments.
    Unusable(String),
}

enum Compiled {
    Whole(Result<jsonschema::Validator, String>),
    /// Compiled at each call from the schema cut down to the properties it names.
    PerCall(Source),
}

/// Where a schema compiled per call is kept: inside a shared definition, or alone.
enum Source {
    Definition(Arc<Json>),
    Schema(Json),
}

impl Source {
    fn schema(&self) -> &Json {
        match self {
            Source::Definition(d) => d.get("inputSchema").unwrap_or(&EMPTY),
            Source::Schema(s) => s,
        }
    }
}

static EMPTY: Json = Json::Object(Vec::new());

impl ArgumentSchema {
    /// Compiles a tool's `inputSchema`.
    pub fn compile(schema: &Json) -> Self {
        if per_call(schema) {
            return ArgumentSchema {
                compiled: Compiled::PerCall(Source::Schema(schema.clone())),
                imprecise: has_number(schema, &|n| n.abs() >= EXACT),
            };
        }
        ArgumentSchema {
            compiled: Compiled::Whole(compile_value(&schema.to_value())),
            imprecise: has_number(schema, &|n| n.abs() >= EXACT),
        }
    }

    /// Compiles the `inputSchema` of a tool definition (none: any arguments), keeping
    /// a share of the definition rather than a copy when it is compiled per call.
    pub fn for_tool(definition: &Arc<Json>) -> Self {
        let schema = definition.get("inputSchema").unwrap_or(&EMPTY);
        if per_call(schema) {
            return ArgumentSchema {
                compiled: Compiled::PerCall(Source::Definition(definition.clone())),
                imprecise: has_number(schema, &|n| n.abs() >= EXACT),
            };
        }
        ArgumentSchema::compile(schema)
    }

    /// Checks one call's arguments.
    pub fn check(&self, arguments: &serde_json::Value) -> ArgumentCheck {
        let sliced;
        let validator = match &self.compiled {
            Compiled::Whole(Ok(v)) => v,
            Compiled::Whole(Err(reason)) => return ArgumentCheck::Unusable(reason.clone()),
            Compiled::PerCall(source) => {
                sliced = compile_value(&slice(source.schema(), arguments));
                match &sliced {
                    Ok(v) => v,
                    Err(reason) => return ArgumentCheck::Unusable(reason.clone()),
                }
            }
        };
        if self.imprecise
            && let Some(path) = large_integer(arguments, String::new())
        {
            return ArgumentCheck::Invalid(vec![Violation {
                path,
                message: "an integer of 2^53 or more cannot be checked exactly against this schema: the lock keeps its numbers as doubles".into(),
            }]);
        }
        let violations: Vec<Violation> = validator
            .iter_errors(arguments)
            .take(MAX_VIOLATIONS)
            .map(|e| Violation {
                path: e.instance_path().to_string(),
                message: cut(&e.to_string()),
            })
            .collect();
        if violations.is_empty() {
            ArgumentCheck::Valid
        } else {
            ArgumentCheck::Invalid(violations)
        }
    }
}

fn compile_value(schema: &serde_json::Value) -> Result<jsonschema::Validator, String> {
    jsonschema::validator_for(schema).map_err(|e| cut(&e.masked().to_string()))
}

/// Whether a schema is compiled per call: an object with many top-level properties
/// and no keyword anywhere that could point into them.
fn per_call(schema: &Json) -> bool {
    fn tied(value: &Json) -> bool {
        match value {
            Json::Array(items) => items.iter().any(tied),
            Json::Object(members) => members.iter().any(|(k, v)| {
                crate::contract::classify::REFERENCES
                    .iter()
                    .chain(&["$id", "id", "$anchor", "$dynamicAnchor", "$recursiveAnchor"])
                    .any(|word| k.eq_str(word))
                    || tied(v)
            }),
            _ => false,
        }
    }
    match schema.get("properties") {
        Some(Json::Object(properties)) => properties.len() > SLICE_FROM && !tied(schema),
        _ => false,
    }
}

/// The schema as [`Json::to_value`] reads it, with only the top-level properties that
/// `arguments` names.
fn slice(schema: &Json, arguments: &serde_json::Value) -> serde_json::Value {
    let Json::Object(members) = schema else {
        return schema.to_value();
    };
    // As to_value reads names: a lone surrogate is U+FFFD.
    let named = |name: &crate::base::json::JsonStr| {
        arguments.as_object().is_some_and(|a| {
            a.keys()
                .any(|k| name.eq_str(k) || (k.contains('\u{fffd}') && name.to_string_lossy() == *k))
        })
    };
    let mut out = serde_json::Map::new();
    for (key, value) in members {
        let value = match value {
            Json::Object(properties) if key.eq_str("properties") => serde_json::Value::Object(
                properties
                    .iter()
                    .filter(|(name, _)| named(name))
                    .map(|(name, v)| (name.to_string_lossy(), v.to_value()))
                    .collect(),
            ),
            other => other.to_value(),
        };
        out.insert(key.to_string_lossy(), value);
    }
    serde_json::Value::Object(out)
}

/// 2^53: integers from here on are not all exact as doubles.
const EXACT: f64 = 9_007_199_254_740_992.0;

fn has_number(value: &Json, test: &dyn Fn(f64) -> bool) -> bool {
    match value {
        Json::Number(n) => test(*n),
        Json::Array(items) => items.iter().any(|v| has_number(v, test)),
        Json::Object(members) => members.iter().any(|(_, v)| has_number(v, test)),
        _ => false,
    }
}

/// The pointer to the first integer argument of magnitude 2^53 or more.
fn large_integer(value: &serde_json::Value, at: String) -> Option<String> {
    use serde_json::Value;
    match value {
        Value::Number(n) => {
            let large = match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => i.unsigned_abs() >= 1 << 53,
                (None, Some(_)) => true,
                (None, None) => n
                    .as_f64()
                    .is_some_and(|f| f.abs() >= EXACT && f.fract() == 0.0),
            };
            large.then_some(at)
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| large_integer(v, format!("{at}/{i}"))),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            large_integer(v, format!("{at}/{}", crate::base::json::escape_pointer(k)))
        }),
        _ => None,
    }
}

fn cut(text: &str) -> String {
    if text.chars().count() <= MESSAGE_CHARS {
        return text.to_string();
    }
    let mut out: String = text.chars().take(MESSAGE_CHARS).collect();
    out.push('…');
    out
}

/// Deepest nesting of a call's arguments that is checked (the arguments object is
/// level 1). Deeper arguments are refused, by `guard` and `check-call` alike: well
/// within what a server's JSON reader takes, so the check never reads less than it.
pub const MAX_ARGUMENT_DEPTH: usize = 100;

/// Reads a JSON text the way a server will: integers exactly (up to 64 bits), other
/// numbers as doubles. None when that cannot be done: an integer beyond 64 bits, a
/// lone surrogate, nesting deeper than serde_json reads (128).
pub fn read_exactly(text: &[u8]) -> Option<Value> {
    if !integers_fit(text) {
        return None;
    }
    serde_json::from_slice(text).ok()
}

/// Whether the strict reader's value of `text` ([`Json::to_value`]) is exactly what
/// [`read_exactly`] would read, so the text need not be read a second time: every
/// number an integer of at most 15 digits (exact as a double; not `-0`, which
/// serde_json reads as a double), no `\uD800`-`\uDFFF` escape (a lone surrogate
/// fails there), and nesting well within serde_json's limit. False says only "read
/// it again", never that the readings differ.
pub fn strict_reads_exactly(text: &[u8]) -> bool {
    let mut i = 0;
    let mut depth = 0usize;
    let mut in_string = false;
    while i < text.len() {
        let c = text[i];
        if in_string {
            match c {
                b'\\' => {
                    if text.get(i + 1) == Some(&b'u')
                        && matches!(text.get(i + 2), Some(b'd' | b'D'))
                        && matches!(
                            text.get(i + 3),
                            Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
                        )
                    {
                        return false;
                    }
                    i += 1;
                }
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > 100 {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < text.len()
                    && matches!(text[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    i += 1;
                }
                let token = &text[start..i];
                let digits = token.len() - usize::from(token[0] == b'-');
                if !token[usize::from(token[0] == b'-')..]
                    .iter()
                    .all(u8::is_ascii_digit)
                    || digits == 0
                    || digits > 15
                    || token == b"-0"
                {
                    return false;
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    true
}

/// The one decision `guard` and `check-call` share on whether a call's arguments
/// can be checked at all. `strict` is the arguments as read strictly (every member
/// kept), `exact` the same arguments as [`read_exactly`] read them, None when the
/// text holding them could not be read so. Returns the arguments to check, or the
/// violation both report (as invalid arguments) instead.
pub fn checkable_arguments(strict: &Json, exact: Option<Value>) -> Result<Value, Violation> {
    let message = if nesting(strict) > MAX_ARGUMENT_DEPTH {
        format!(
            "the arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels, so they cannot be checked"
        )
    } else if let Some(exact) = exact {
        return Ok(exact);
    } else {
        "the call cannot be read exactly (an integer beyond 64 bits, a lone surrogate, or nesting too deep), so it cannot be checked".into()
    };
    Err(Violation {
        path: String::new(),
        message,
    })
}

/// How deep a value nests: 0 for a scalar, 1 for an object of scalars.
fn nesting(json: &Json) -> usize {
    match json {
        Json::Array(items) => 1 + items.iter().map(nesting).max().unwrap_or(0),
        Json::Object(members) => 1 + members.iter().map(|(_, v)| nesting(v)).max().unwrap_or(0),
        _ => 0,
    }
}

/// Whether every integer in a JSON text fits 64 bits (the widest the argument check
/// reads exactly). Decimals and exponents are read as doubles, as most servers do.
fn integers_fit(text: &[u8]) -> bool {
    let mut i = 0;
    let mut in_string = false;
    while i < text.len() {
        let c = text[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if c == b'"' {
            in_string = true;
        } else if c == b'-' || c.is_ascii_digit() {
            let start = i;
            while i < text.len()
                && matches!(text[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
            {
                i += 1;
            }
            let token = std::str::from_utf8(&text[start..i]).unwrap_or("");
            let integer = !token.contains(['.', 'e', 'E']);
            if integer && token.parse::<i64>().is_err() && token.parse::<u64>().is_err() {
                return false;
            }
            continue;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_strict_reading_is_used_only_where_it_equals_the_exact_one() {
        let same = [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{"id":"T-1","n":-42,"big":123456789012345,"l":[true,null,{"k":"\u00e9\"q"}]}}}"#,
            r#"{"id":0,"params":{"arguments":{"s":"1.5e3 in a string, -0 too","t":"😀"}}}"#,
        ];
        for text in same {
            assert!(strict_reads_exactly(text.as_bytes()), "{text}");
            let strict = Json::parse(text).unwrap().to_value();
            assert_eq!(Some(strict), read_exactly(text.as_bytes()), "{text}");
        }
        let again = [
            r#"{"n":1.5}"#,
            r#"{"n":1e3}"#,
            r#"{"n":-0}"#,
            r#"{"n":1234567890123456}"#,
            r#"{"n":18446744073709551616}"#,
            r#"{"s":"\uD800"}"#,
            r#"{"s":"\udfff"}"#,
            // A pair is read alike, but telling it from a lone half is left to a
            // second reading.
            r#"{"s":"\ud83d\ude00"}"#,
        ];
        for text in again {
            assert!(!strict_reads_exactly(text.as_bytes()), "{text}");
        }
        let deep = format!("{}{}", "[".repeat(101), "]".repeat(101));
        assert!(!strict_reads_exactly(deep.as_bytes()));
    }

    #[test]
    fn arguments_nested_beyond_the_limit_cannot_be_checked_whatever_reads_them() {
        let deep = |levels: usize| format!("{}1{}", "[".repeat(levels - 1), "]".repeat(levels - 1));
        let arguments = |levels: usize| format!("{{\"a\":{}}}", deep(levels));
        let judge = |text: &str| {
            checkable_arguments(&Json::parse(text).unwrap(), read_exactly(text.as_bytes()))
        };
        assert!(judge(&arguments(MAX_ARGUMENT_DEPTH)).is_ok());
        // Readable by serde_json, and still refused: the limit is the arguments' own.
        let refused = judge(&arguments(MAX_ARGUMENT_DEPTH + 1)).unwrap_err();
        assert!(
            refused.message.contains("nest deeper"),
            "{}",
            refused.message
        );
        assert_eq!(judge(&arguments(200)).unwrap_err(), refused);
        assert!(judge(r#"{"n": 18446744073709551616}"#).is_err());
        assert!(judge(r#"{"n": 18446744073709551615}"#).is_ok());
    }

    fn schema(text: &str) -> ArgumentSchema {
        ArgumentSchema::compile(&Json::parse(text).unwrap())
    }

    #[test]
    fn a_missing_required_property_names_its_path() {
        let s = schema(
            r#"{"type":"object","properties":{"branch":{"type":"string"},"region":{"type":"string"}},"required":["branch","region"]}"#,
        );
        assert_eq!(
            s.check(&json!({"branch": "x", "region": "eu"})),
            ArgumentCheck::Valid
        );
        let ArgumentCheck::Invalid(v) = s.check(&json!({"branch": "x"})) else {
            panic!("expected invalid")
        };
        assert_eq!(v[0].path, "");
        assert!(v[0].message.contains("region"), "{v:?}");
        let ArgumentCheck::Invalid(v) = s.check(&json!({"branch": 7, "region": "eu"})) else {
            panic!("expected invalid")
        };
        assert_eq!(v[0].path, "/branch");
    }

    #[test]
    fn large_integers_are_refused_only_against_a_schema_that_cannot_hold_them_exactly() {
        let ids = schema(
            r#"{"type":"object","properties":{"id":{"type":"integer","enum":[1234567890123456789]}}}"#,
        );
        let ArgumentCheck::Invalid(v) = ids.check(&json!({"id": 1234567890123456788_i64})) else {
            panic!("a near value must not pass")
        };
        assert_eq!(v[0].path, "/id");
        // Any integer schema without such numbers checks large values exactly.
        let plain =
            schema(r#"{"type":"object","properties":{"id":{"type":"integer","minimum":0}}}"#);
        assert_eq!(
            plain.check(&json!({"id": 1234567890123456789_i64})),
            ArgumentCheck::Valid
        );
    }

    #[test]
    fn a_schema_with_thousands_of_properties_gives_the_verdicts_of_the_whole_schema() {
        let properties: Vec<String> = (0..3000)
            .map(|i| {
                format!(
                    r#""p{i}":{{"type":"{}"}}"#,
                    if i % 2 == 0 { "string" } else { "integer" }
                )
            })
            .collect();
        let text = format!(
            r#"{{"type":"object","properties":{{{}}},"required":["p1"],"additionalProperties":false}}"#,
            properties.join(",")
        );
        let json = Json::parse(&text).unwrap();
        let sliced = ArgumentSchema::compile(&json);
        assert!(matches!(sliced.compiled, Compiled::PerCall(_)));
        let whole = ArgumentSchema {
            compiled: Compiled::Whole(compile_value(&json.to_value())),
            imprecise: false,
        };
        for arguments in [
            json!({"p1": 1}),
            json!({"p1": 1, "p2": "x", "p2999": 3}),
            json!({"p1": "one"}),
            json!({"p2": "x"}),
            json!({"p1": 1, "p3000": 1}),
            json!({"p1": 1, "p4": 4}),
            json!([]),
        ] {
            assert_eq!(
                sliced.check(&arguments),
                whole.check(&arguments),
                "{arguments}"
            );
        }
        assert!(matches!(
            sliced.check(&json!({"p1": 1, "zz": 1})),
            ArgumentCheck::Invalid(_)
        ));
        // A $ref could point into the properties: compiled whole.
        let tied = text.replacen(
            r#""type":"object""#,
            r##""type":"object","$ref":"#/properties/p0""##,
            1,
        );
        let tied = ArgumentSchema::compile(&Json::parse(&tied).unwrap());
        assert!(matches!(tied.compiled, Compiled::Whole(_)));
    }

    #[test]
    fn the_declared_draft_is_used() {
        // Draft 4's boolean exclusiveMaximum: 10 itself is out of range.
        let s = schema(
            r#"{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"type":"number","maximum":10,"exclusiveMaximum":true}}}"#,
        );
        assert!(matches!(
            s.check(&json!({"n": 10})),
            ArgumentCheck::Invalid(_)
        ));
        assert_eq!(s.check(&json!({"n": 9})), ArgumentCheck::Valid);
    }

    #[test]
    fn a_remote_ref_makes_the_schema_unusable_rather_than_fetched() {
        let s = schema(r#"{"$ref":"https://example.invalid/schema.json"}"#);
        assert!(matches!(s.check(&json!({})), ArgumentCheck::Unusable(_)));
    }
}
