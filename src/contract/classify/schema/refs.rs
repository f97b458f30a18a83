//! Local `$ref`s: expanded before comparing, so a change inside `$defs` is judged
//! where it is used, within limits a hostile schema cannot push past; and `$defs`
//! entries themselves, cosmetic when nothing uses them.

use std::collections::{BTreeSet, HashSet};

use serde_json::{Map, Value};

use super::{Shift, Walk};
use crate::base::json::escape_pointer;
use crate::contract::classify::Class;

/// Schema nodes an expansion of `$ref`s may produce before giving up.
const EXPANSION_BUDGET: usize = 100_000;

impl Walk<'_> {
    /// `$defs` entries are judged where they are used; one nothing uses is cosmetic.
    pub(super) fn definitions(&mut self, pointer: &str, x: Option<&Value>, y: Option<&Value>) {
        let empty = Map::new();
        let a = x.and_then(Value::as_object).unwrap_or(&empty);
        let b = y.and_then(Value::as_object).unwrap_or(&empty);
        let relative = pointer.strip_prefix(self.base).unwrap_or(pointer);
        let names: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        for name in names {
            let (p, q) = (a.get(name), b.get(name));
            if p == q {
                continue;
            }
            let entry = format!("{relative}/{}", escape_pointer(name));
            let at = format!("{pointer}/{}", escape_pointer(name));
            if self.refs.unresolved {
                self.shift(
                    Shift::Imprecise,
                    &at,
                    p,
                    q,
                    "definition changed, and a `$ref` mcp-lock cannot follow (an anchor, another document or a dynamic reference) may use it".into(),
                    false,
                );
            } else if !self.refs.used.contains(&entry) {
                self.push(
                    Class::Cosmetic,
                    &at,
                    p,
                    q,
                    "definition changed, but no `$ref` uses it".into(),
                );
            }
        }
    }
}

/// What expanding `$ref`s found out about a schema.
#[derive(Default)]
pub(super) struct Refs {
    /// `$ref` targets (pointers from the root) that some schema uses.
    pub(super) used: HashSet<String>,
    /// Some reference could not be followed (an anchor, another document, a dynamic
    /// reference), so any definition may be in use.
    pub(super) unresolved: bool,
}

/// Keywords that say something about a value without constraining it; where a `$ref`
/// and its target both have one, the referring schema's wins.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Deepest nesting an expansion may produce; deeper is compared imprecisely.
const MAX_EXPANDED_DEPTH: usize = 200;

/// The schema with every local `$ref` replaced by what it points at (a `$ref` inside
/// its own expansion is left as written). A `$ref` with siblings keeps them: an
/// annotation overrides the target's, and a constraint both have is kept from each,
/// the sibling's under `allOf`. `None` when the expansion grows too large or deep.
pub(super) fn expand_root(root: &Value, refs: &mut Refs) -> Option<Value> {
    let mut budget = EXPANSION_BUDGET;
    expand(root, root, &mut Vec::new(), &mut budget, refs, 0)
}

fn expand(
    root: &Value,
    value: &Value,
    stack: &mut Vec<String>,
    budget: &mut usize,
    refs: &mut Refs,
    depth: usize,
) -> Option<Value> {
    // Only what a `$ref` brings in counts against the limits: the schema as written is
    // already bounded by the reader, and its size or depth is not the references' doing.
    if !stack.is_empty() {
        *budget = budget.checked_sub(1)?;
        if depth > MAX_EXPANDED_DEPTH {
            return None;
        }
    }
    match value {
        Value::Array(items) => items
            .iter()
            .map(|v| expand(root, v, stack, budget, refs, depth + 1))
            .collect::<Option<Vec<_>>>()
            .map(Value::Array),
        Value::Object(map) => {
            if map.contains_key("$dynamicRef") || map.contains_key("$recursiveRef") {
                refs.unresolved = true;
            }
            let target = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix('#'))
                .and_then(percent_decode);
            if map.contains_key("$ref") && target.is_none() {
                refs.unresolved = true;
            }
            if let Some(target) = &target
                && stack.contains(target)
            {
                // Recursion: compared where it started.
                refs.used.insert(target.clone());
            } else if let Some(target) = target {
                let Some(found) = root.pointer(&target) else {
                    refs.unresolved = true;
                    return expand_members(root, map, stack, budget, refs, depth);
                };
                refs.used.insert(target.clone());
                stack.push(target);
                let resolved = expand(root, found, stack, budget, refs, depth + 1);
                stack.pop();
                let resolved = resolved?;
                let mut siblings = map.clone();
                siblings.remove("$ref");
                let siblings = expand_members(root, &siblings, stack, budget, refs, depth)?;
                return Some(merge_ref(resolved, siblings));
            }
            expand_members(root, map, stack, budget, refs, depth)
        }
        other => Some(other.clone()),
    }
}

/// Whether any schema in `value` refers to another (`$ref`, `$dynamicRef`,
/// `$recursiveRef`).
pub(super) fn has_refs(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().any(has_refs),
        Value::Object(map) => {
            crate::contract::classify::REFERENCES
                .iter()
                .any(|k| map.contains_key(*k))
                || map.values().any(has_refs)
        }
        _ => false,
    }
}

/// An object with each member expanded, `$defs` kept as written (they are judged
/// where they are used).
fn expand_members(
    root: &Value,
    map: &Map<String, Value>,
    stack: &mut Vec<String>,
    budget: &mut usize,
    refs: &mut Refs,
    depth: usize,
) -> Option<Value> {
    let mut out = Map::new();
    for (k, v) in map {
        let v = if matches!(k.as_str(), "$defs" | "definitions") {
            v.clone()
        } else {
            expand(root, v, stack, budget, refs, depth + 1)?
        };
        out.insert(k.clone(), v);
    }
    Some(Value::Object(out))
}

/// A resolved `$ref` target combined with the referring schema's other keywords.
fn merge_ref(target: Value, siblings: Value) -> Value {
    let Value::Object(siblings) = siblings else {
        return target;
    };
    if siblings.is_empty() {
        return target;
    }
    let mut merged = match target {
        Value::Object(m) => m,
        Value::Bool(true) => Map::new(),
        other => return other,
    };
    for (k, v) in siblings {
        match merged.get(&k) {
            None => {
                merged.insert(k, v);
            }
            Some(_) if ANNOTATIONS.contains(&k.as_str()) => {
                merged.insert(k, v);
            }
            Some(existing) if *existing == v => {}
            Some(_) => {
                let mut extra = Map::new();
                extra.insert(k, v);
                match merged.get_mut("allOf") {
                    Some(Value::Array(all)) => all.push(Value::Object(extra)),
                    _ => {
                        merged.insert("allOf".into(), Value::Array(vec![Value::Object(extra)]));
                    }
                }
            }
        }
    }
    Value::Object(merged)
}

/// A URI fragment's percent-escapes decoded; `None` if they are not valid UTF-8.
fn percent_decode(fragment: &str) -> Option<String> {
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = fragment.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let text = String::from_utf8(out).ok()?;
    // Only JSON pointers are followed; `#name` anchors are not.
    (text.is_empty() || text.starts_with('/')).then_some(text)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::base::json::Json;
    use crate::contract::classify::{Class, Classifier, Finding};

    fn findings(before: serde_json::Value, after: serde_json::Value) -> Vec<Finding> {
        let tool = |schema| Json::from_value(&json!({"name": "t", "inputSchema": schema}));
        Classifier::default().classify(&tool(before), &tool(after))
    }

    fn nested(levels: usize, leaf: &str) -> serde_json::Value {
        let mut schema = json!({"type": leaf});
        for _ in 0..levels {
            schema = json!({"type": "object", "properties": {"n": schema}});
        }
        schema
    }

    fn mention_refs(found: &[Finding]) -> bool {
        found.iter().any(|f| f.reason.contains("$ref"))
    }

    #[test]
    fn a_deep_schema_without_refs_is_compared_without_a_ref_finding() {
        let found = findings(nested(105, "string"), nested(105, "integer"));
        assert!(!mention_refs(&found), "{found:?}");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].class, Class::Breaking);
        assert!(
            found[0].pointer.ends_with("/properties/n/type"),
            "{found:?}"
        );
    }

    #[test]
    fn a_large_schema_is_compared_precisely_unless_its_refs_are_what_grows() {
        let values: Vec<String> = (0..100_001).map(|i| format!("v{i}")).collect();
        let mut more = values.clone();
        more.push("extra".into());
        let schema = |values: &[String]| {
            json!({"type": "object", "properties": {
                "pick": {"enum": values},
                "other": {"$ref": "#/$defs/small"}
            }, "$defs": {"small": {"type": "string"}}})
        };
        let found = findings(schema(&values), schema(&more));
        assert!(!mention_refs(&found), "{found:?}");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].class, Class::Additive, "{found:?}");
        // Still: references that multiply are compared imprecisely, and say so.
        let mut defs = serde_json::Map::new();
        for i in 0..40 {
            let next = format!("#/$defs/d{}", i + 1);
            defs.insert(
                format!("d{i}"),
                json!({"type": "object", "properties": {"a": {"$ref": next}, "b": {"$ref": next}}}),
            );
        }
        defs.insert("d40".into(), json!({"type": "string"}));
        let bomb = |leaf: &str| {
            let mut d = defs.clone();
            d.insert("d40".into(), json!({"type": leaf}));
            json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": d})
        };
        let found = findings(bomb("string"), bomb("integer"));
        assert!(mention_refs(&found), "{found:?}");
    }
}
