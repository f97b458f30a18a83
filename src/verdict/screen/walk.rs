//! Every string of a definition, with its pointer and what kind of field it is.

use serde_json::Value;

use crate::base::json::escape_pointer;
use crate::contract::surface::Kind;

/// What a string is in its definition: what rules may read it as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The definition's own name (a tool's or prompt's `name`).
    Name,
    /// A property (parameter) name of a schema, or a prompt argument's `name`.
    Parameter,
    /// A description, title or other prose the model reads.
    Prose,
    /// A value: enum, const, default, example.
    Value,
    /// A URI template, `$ref`, `type`, `format`, `pattern`, `$schema`, an icon's
    /// source: structure, screened for invisible characters only.
    Structure,
}

/// One string of a definition.
#[derive(Debug, Clone)]
pub struct Text {
    pub pointer: String,
    pub field: Field,
    pub value: String,
    /// For a parameter's description: the parameter's name.
    pub parameter: Option<String>,
}

/// Schema members whose object members are named subschemas (property names are
/// parameters).
const NAMED_SCHEMAS: &[&str] = &["properties", "patternProperties"];

/// Members holding structure, never prose.
const STRUCTURE: &[&str] = &[
    "$ref",
    "$schema",
    "$id",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "type",
    "format",
    "pattern",
    "uriTemplate",
    "uri",
    "mimeType",
    "src",
    "contentEncoding",
    "contentMediaType",
];

const VALUES: &[&str] = &["enum", "const", "default", "examples", "example"];

/// The most strings read from one definition.
const MAX_TEXTS: usize = 20_000;

/// Every string in `definition`, keys of named schemas included.
pub fn texts(kind: Kind, definition: &Value) -> Vec<Text> {
    let mut out = Vec::new();
    walk(
        kind,
        definition,
        String::new(),
        Field::Prose,
        None,
        0,
        &mut out,
    );
    out
}

fn walk(
    kind: Kind,
    v: &Value,
    pointer: String,
    field: Field,
    parameter: Option<&str>,
    depth: usize,
    out: &mut Vec<Text>,
) {
    if out.len() >= MAX_TEXTS || depth > 64 {
        return;
    }
    match v {
        Value::String(s) => out.push(Text {
            pointer,
            field,
            value: s.clone(),
            parameter: parameter.map(str::to_string),
        }),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(
                    kind,
                    item,
                    format!("{pointer}/{i}"),
                    field,
                    parameter,
                    depth + 1,
                    out,
                );
            }
        }
        Value::Object(members) => {
            for (key, value) in members {
                let at = format!("{pointer}/{}", escape_pointer(key));
                let named = pointer
                    .rsplit('/')
                    .next()
                    .is_some_and(|last| NAMED_SCHEMAS.contains(&last));
                if named {
                    // A property name is text the model reads too.
                    out.push(Text {
                        pointer: at.clone(),
                        field: Field::Parameter,
                        value: key.clone(),
                        parameter: Some(key.clone()),
                    });
                    walk(kind, value, at, Field::Prose, Some(key), depth + 1, out);
                    continue;
                }
                let field = if depth == 0 && key == "name" && kind != Kind::ResourceTemplate {
                    Field::Name
                } else if kind == Kind::Prompt && key == "name" && pointer.contains("/arguments/") {
                    Field::Parameter
                } else if STRUCTURE.contains(&key.as_str()) {
                    Field::Structure
                } else if VALUES.contains(&key.as_str()) || field == Field::Value {
                    Field::Value
                } else if field == Field::Structure {
                    Field::Structure
                } else {
                    Field::Prose
                };
                // A prompt argument's description belongs to the argument.
                let param = if kind == Kind::Prompt && pointer.contains("/arguments/") {
                    members.get("name").and_then(Value::as_str)
                } else {
                    parameter
                };
                walk(kind, value, at, field, param, depth + 1, out);
            }
        }
        _ => {}
    }
}
