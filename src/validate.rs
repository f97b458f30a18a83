//! Call arguments against a tool's input schema: JSON Schema 2020-12, or the draft the
//! schema names in `$schema`. Remote `$ref`s are never fetched.

use serde::Serialize;

use crate::json::Json;

/// The longest message kept per violation; a hostile schema cannot flood a refusal.
const MESSAGE_CHARS: usize = 300;
/// At most this many violations are reported per call.
const MAX_VIOLATIONS: usize = 10;

/// A compiled input schema, or why it could not be compiled.
pub struct ArgumentSchema {
    validator: Result<jsonschema::Validator, String>,
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

impl ArgumentSchema {
    /// Compiles a tool's `inputSchema`.
    pub fn compile(schema: &Json) -> Self {
        let value = schema.to_value();
        let validator = jsonschema::validator_for(&value).map_err(|e| {
            let message = e.masked().to_string();
            cut(&message)
        });
        ArgumentSchema {
            validator,
            imprecise: has_number(schema, &|n| n.abs() >= EXACT),
        }
    }

    /// Checks one call's arguments.
    pub fn check(&self, arguments: &serde_json::Value) -> ArgumentCheck {
        let validator = match &self.validator {
            Ok(v) => v,
            Err(reason) => return ArgumentCheck::Unusable(reason.clone()),
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
            large_integer(v, format!("{at}/{}", crate::json::escape_pointer(k)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
