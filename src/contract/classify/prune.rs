//! Huge schemas: properties unchanged on both sides are left out before comparing,
//! so a schema with a million properties is compared by what changed.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::REFERENCES;
use crate::base::json::{Json, JsonStr};

/// The two definitions as the classifier reads them. In input and output schemas of
/// at least [`PRUNE_FROM`] top-level properties, the properties that are the same on
/// both sides, and required on both or on neither, are left out of both: they cannot
/// change a finding, and a schema can hold a million of them (a finding about the
/// whole schema then shows it without them). Only schemas without references are pruned (a
/// `$ref` may point into the properties).
pub(super) fn readable_pair(pinned: &Json, live: &Json) -> (Value, Value) {
    let (Json::Object(a), Json::Object(b)) = (pinned, live) else {
        return (pinned.to_value(), live.to_value());
    };
    fn schema<'a>(members: &'a [(JsonStr, Json)], key: &str) -> Option<&'a Json> {
        let mut found = members.iter().filter(|(k, _)| k.eq_str(key));
        match (found.next(), found.next()) {
            (Some((_, v)), None) => Some(v),
            _ => None,
        }
    }
    let mut same_props: Vec<(&'static str, HashSet<&JsonStr>)> = Vec::new();
    for key in ["inputSchema", "outputSchema"] {
        if let (Some(x), Some(y)) = (schema(a, key), schema(b, key)) {
            same_props.push((key, unchanged_properties(x, y)));
        }
    }
    let convert = |members: &[(JsonStr, Json)]| {
        let mut out = Map::new();
        for (k, v) in members {
            let same = same_props
                .iter()
                .find(|(key, _)| k.eq_str(key))
                .map(|(_, same)| same);
            let value = match (same, v) {
                (Some(same), Json::Object(schema)) if !same.is_empty() => {
                    let mut m = Map::new();
                    for (sk, sv) in schema {
                        let sv = match sv {
                            Json::Object(props) if sk.eq_str("properties") => Value::Object(
                                props
                                    .iter()
                                    .filter(|(name, _)| !same.contains(name))
                                    .map(|(name, p)| (name.to_string_lossy(), p.to_value()))
                                    .collect(),
                            ),
                            other => other.to_value(),
                        };
                        m.insert(sk.to_string_lossy(), sv);
                    }
                    Value::Object(m)
                }
                _ => v.to_value(),
            };
            out.insert(k.to_string_lossy(), value);
        }
        Value::Object(out)
    };
    (convert(a), convert(b))
}

/// Schemas with fewer top-level properties than this are compared whole.
const PRUNE_FROM: usize = 1000;

/// The names of the top-level properties two schemas give the same schema, required
/// on both or neither; empty when either schema could make that unsafe to rely on
/// (a reference anywhere, a repeated member, `properties` or `required` not plain, a
/// `$schema` change, which is judged by every keyword the schema uses).
fn unchanged_properties<'a>(x: &'a Json, y: &'a Json) -> HashSet<&'a JsonStr> {
    fn refers(value: &Json) -> bool {
        match value {
            Json::Array(items) => items.iter().any(refers),
            Json::Object(members) => members
                .iter()
                .any(|(k, v)| REFERENCES.iter().any(|w| k.eq_str(w)) || refers(v)),
            _ => false,
        }
    }
    /// The properties and required names of a plain object schema.
    fn parts(schema: &Json) -> Option<(HashMap<&JsonStr, &Json>, HashSet<&JsonStr>)> {
        let Json::Object(members) = schema else {
            return None;
        };
        let mut properties = None;
        let mut required = HashSet::new();
        let mut seen = HashSet::new();
        for (k, v) in members {
            if !seen.insert(k) {
                return None;
            }
            if k.eq_str("properties") {
                let Json::Object(props) = v else { return None };
                let map: HashMap<&JsonStr, &Json> = props.iter().map(|(n, p)| (n, p)).collect();
                if map.len() != props.len() {
                    return None;
                }
                properties = Some(map);
            } else if k.eq_str("required") {
                let Json::Array(names) = v else { return None };
                for name in names {
                    let Json::String(name) = name else {
                        return None;
                    };
                    required.insert(name);
                }
            }
        }
        Some((properties?, required))
    }
    let mut same = HashSet::new();
    if refers(x) || refers(y) {
        return same;
    }
    let dialect = |schema: &'a Json| match schema {
        Json::Object(members) => members
            .iter()
            .find(|(k, _)| k.eq_str("$schema"))
            .map(|(_, v)| v),
        _ => None,
    };
    match (dialect(x), dialect(y)) {
        (None, None) => {}
        (Some(a), Some(b)) if same_json(a, b) => {}
        _ => return same,
    }
    let (Some((px, rx)), Some((py, ry))) = (parts(x), parts(y)) else {
        return same;
    };
    // Small schemas are read whole, so a finding about the whole schema shows all of it.
    if px.len().max(py.len()) < PRUNE_FROM {
        return same;
    }
    for (name, a) in &px {
        if let Some(b) = py.get(name)
            && rx.contains(name) == ry.contains(name)
            && same_json(a, b)
        {
            same.insert(*name);
        }
    }
    same
}

/// Equal as JSON values: object members compared whatever their order (the lock keeps
/// them sorted, servers send them as they like); a repeated member is never equal.
fn same_json(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            if x.len() != y.len() {
                return false;
            }
            let ys: HashMap<&JsonStr, &Json> = y.iter().map(|(k, v)| (k, v)).collect();
            let xs: HashSet<&JsonStr> = x.iter().map(|(k, _)| k).collect();
            ys.len() == y.len()
                && xs.len() == x.len()
                && x.iter()
                    .all(|(k, v)| ys.get(k).is_some_and(|w| same_json(v, w)))
        }
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same_json(v, w))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::classify::{Class, Classifier, Finding, worst};

    /// A tool whose input schema has `n` string properties p0.. (p0 and p1 required),
    /// changed by `edit`.
    fn big_tool(n: usize, edit: impl Fn(&mut Value)) -> Json {
        let properties: Map<String, Value> = (0..n)
            .map(|i| {
                (
                    format!("p{i}"),
                    serde_json::json!({"type": "string", "description": format!("field {i}")}),
                )
            })
            .collect();
        let mut tool = serde_json::json!({
            "name": "big",
            "inputSchema": {"type": "object", "properties": properties, "required": ["p0", "p1"]},
        });
        edit(&mut tool);
        Json::from_value(&tool)
    }

    #[test]
    fn pruning_unchanged_properties_of_a_huge_schema_gives_the_same_findings() {
        let c = Classifier::default();
        let schema = |t: &mut Value| t["inputSchema"].clone();
        type Edit = Box<dyn Fn(&mut Value)>;
        let edits: Vec<Edit> = vec![
            Box::new(|t| t["inputSchema"]["properties"]["p7"]["type"] = "integer".into()),
            Box::new(|t| t["inputSchema"]["required"] = serde_json::json!(["p0", "p1", "p9"])),
            Box::new(|t| t["inputSchema"]["required"] = serde_json::json!(["p0"])),
            Box::new(|t| t["inputSchema"]["properties"]["p3"]["description"] = "now other".into()),
            Box::new(|t| {
                t["inputSchema"]["properties"]["region"] = serde_json::json!({"type": "string"})
            }),
            Box::new(|t| {
                t["inputSchema"]["properties"]
                    .as_object_mut()
                    .unwrap()
                    .remove("p5");
            }),
            Box::new(|t| t["inputSchema"]["additionalProperties"] = false.into()),
            Box::new(|t| t["inputSchema"]["type"] = "array".into()),
        ];
        // As the lock keeps it: members sorted, unlike the server's order.
        let pinned = Json::parse(&big_tool(PRUNE_FROM + 10, |_| {}).canonical().unwrap()).unwrap();
        for (i, edit) in edits.iter().enumerate() {
            let live = big_tool(PRUNE_FROM + 10, edit);
            let (a, b) = readable_pair(&pinned, &live);
            let (ka, kb) = (schema(&mut a.clone()), schema(&mut b.clone()));
            assert!(
                ka["properties"].as_object().unwrap().len() < 10,
                "edit {i}: unchanged properties are left out"
            );
            assert!(kb["properties"].as_object().unwrap().len() < 10);
            let pruned = c.classify(&pinned, &live);
            let whole = c.classify_read(&pinned.to_value(), &live.to_value(), &pinned, &live);
            let key = |f: &Finding| (f.class, f.pointer.clone(), f.reason.clone());
            assert!(!whole.is_empty(), "edit {i}");
            assert_eq!(
                pruned.iter().map(key).collect::<Vec<_>>(),
                whole.iter().map(key).collect::<Vec<_>>(),
                "edit {i}"
            );
        }
    }

    #[test]
    fn a_dialect_change_in_a_huge_schema_sees_the_keywords_of_unchanged_properties() {
        let with_format =
            |t: &mut Value| t["inputSchema"]["properties"]["p3"]["format"] = "email".into();
        let pinned = big_tool(PRUNE_FROM + 1, with_format);
        let live = big_tool(PRUNE_FROM + 1, |t| {
            with_format(t);
            t["inputSchema"]["$schema"] = "http://json-schema.org/draft-07/schema#".into();
        });
        let (a, _) = readable_pair(&pinned, &live);
        assert_eq!(
            a["inputSchema"]["properties"].as_object().unwrap().len(),
            PRUNE_FROM + 1
        );
        let findings = Classifier::default().classify(&pinned, &live);
        assert_eq!(worst(&findings), Some(Class::Breaking), "{findings:?}");
        assert!(findings[0].reason.contains("`format`"), "{findings:?}");
    }

    #[test]
    fn schemas_with_references_or_few_properties_are_read_whole() {
        let small = big_tool(5, |_| {});
        let (a, _) = readable_pair(&small, &small);
        assert_eq!(a["inputSchema"]["properties"].as_object().unwrap().len(), 5);
        let with_ref = |t: &mut Value| {
            t["inputSchema"]["$defs"] = serde_json::json!({"x": {"$ref": "#/properties/p1"}})
        };
        let big = big_tool(PRUNE_FROM + 1, with_ref);
        let (a, _) = readable_pair(&big, &big);
        assert_eq!(
            a["inputSchema"]["properties"].as_object().unwrap().len(),
            PRUNE_FROM + 1
        );
    }
}
