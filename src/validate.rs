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
        ArgumentSchema { validator }
    }

    /// Checks one call's arguments.
    pub fn check(&self, arguments: &serde_json::Value) -> ArgumentCheck {
        let validator = match &self.validator {
            Ok(v) => v,
            Err(reason) => return ArgumentCheck::Unusable(reason.clone()),
        };
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
