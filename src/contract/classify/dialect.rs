//! `$schema`: the JSON Schema dialect a schema is read in, and whether moving it to
//! another changes what the schema accepts.
//!
//! Most keywords mean the same in every draft MCP servers use, so a dialect change is
//! judged by the keywords the schema uses: it matters only where one of them means
//! something else under the other draft (`items` as a list, `dependencies`, `$ref`
//! beside other keywords, `format` assertion, ...). A schema without `$schema` is read
//! in the MCP default, JSON Schema 2020-12 (specification 2025-11-25, "Schema Dialect").

use serde_json::{Map, Value};

use crate::base::json::escape_pointer;

/// The JSON Schema drafts mcp-lock knows the keywords of, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Draft {
    Draft04,
    Draft06,
    Draft07,
    Draft2019,
    Draft2020,
}

impl Draft {
    /// The dialect MCP gives a schema without `$schema`.
    pub(crate) const DEFAULT: Draft = Draft::Draft2020;

    pub(crate) fn name(self) -> &'static str {
        match self {
            Draft::Draft04 => "draft-04",
            Draft::Draft06 => "draft-06",
            Draft::Draft07 => "draft-07",
            Draft::Draft2019 => "2019-09",
            Draft::Draft2020 => "2020-12",
        }
    }

    /// The draft a `$schema` member names (absent: the MCP default); `None` for a
    /// meta-schema mcp-lock does not know, whose rules it cannot read offline.
    pub(crate) fn of(schema_member: Option<&Value>) -> Option<Draft> {
        let Some(value) = schema_member else {
            return Some(Draft::DEFAULT);
        };
        let uri = value.as_str()?.trim();
        let uri = uri.strip_suffix('#').unwrap_or(uri);
        let uri = uri
            .strip_prefix("https://")
            .or_else(|| uri.strip_prefix("http://"))?;
        match uri {
            "json-schema.org/draft-04/schema" => Some(Draft::Draft04),
            "json-schema.org/draft-06/schema" => Some(Draft::Draft06),
            "json-schema.org/draft-07/schema" => Some(Draft::Draft07),
            "json-schema.org/draft/2019-09/schema" => Some(Draft::Draft2019),
            "json-schema.org/draft/2020-12/schema" => Some(Draft::Draft2020),
            _ => None,
        }
    }
}

/// A keyword in a schema whose meaning differs between two drafts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Difference {
    /// Pointer to the schema object holding it, relative to the scanned schema.
    pub pointer: String,
    /// What differs, for a reason line.
    pub what: &'static str,
}

/// Deepest nesting scanned; deeper is reported as a difference (it cannot be ruled out).
const MAX_DEPTH: usize = 128;

/// Keywords beside a `$ref` that no validator acts on, or that only locate other
/// schemas, so ignoring them (before 2019-09) or applying them (from it) is the same.
const INERT_REF_SIBLINGS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "$defs",
    "definitions",
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// The keywords in a schema object (and the schemas inside it) that mean something
/// different under `a` and under `b`, in walk order. Empty when the two drafts read it
/// alike.
pub(crate) fn differences(schema: &Map<String, Value>, a: Draft, b: Draft) -> Vec<Difference> {
    let mut out = Vec::new();
    if a != b {
        let mut scan = Scan {
            old: a.min(b),
            new: a.max(b),
            refs_into: ref_containers(schema),
            out: &mut out,
        };
        scan.keywords(schema, "");
        scan.children(schema, "", 0);
    }
    out
}

struct Scan<'a> {
    old: Draft,
    new: Draft,
    /// Whether some `$ref` points into `definitions`, and into `$defs`.
    refs_into: (bool, bool),
    out: &'a mut Vec<Difference>,
}

impl Scan<'_> {
    /// Whether one draft is before `since` and the other at or after it.
    fn crosses(&self, since: Draft) -> bool {
        self.old < since && self.new >= since
    }

    fn note(&mut self, pointer: &str, what: &'static str) {
        self.out.push(Difference {
            pointer: pointer.to_string(),
            what,
        });
    }

    fn schema(&mut self, value: &Value, pointer: &str, depth: usize) {
        if depth > MAX_DEPTH {
            return self.note(pointer, "schemas nested too deeply to check");
        }
        match value {
            Value::Bool(_) if self.crosses(Draft::Draft06) => {
                self.note(
                    pointer,
                    "a `true`/`false` schema (not a schema in draft-04)",
                );
            }
            Value::Object(map) => {
                self.keywords(map, pointer);
                self.children(map, pointer, depth);
            }
            _ => {}
        }
    }

    /// The keywords of one schema object.
    fn keywords(&mut self, map: &Map<String, Value>, pointer: &str) {
        use Draft::*;
        let has = |k: &str| map.contains_key(k);
        let rules: &[(&str, Draft, &'static str)] = &[
            (
                "id",
                Draft06,
                "`id` (the schema's identifier in draft-04, an unknown keyword later)",
            ),
            (
                "$id",
                Draft06,
                "`$id` (an unknown keyword in draft-04, which uses `id`)",
            ),
            (
                "const",
                Draft06,
                "`const` (unknown before draft-06, so not checked there)",
            ),
            (
                "contains",
                Draft06,
                "`contains` (unknown before draft-06, so not checked there)",
            ),
            (
                "propertyNames",
                Draft06,
                "`propertyNames` (unknown before draft-06, so not checked there)",
            ),
            (
                "if",
                Draft07,
                "`if`/`then`/`else` (unknown before draft-07, so not checked there)",
            ),
            (
                "format",
                Draft2019,
                "`format` (validators may assert it up to draft-07; an annotation from 2019-09)",
            ),
            (
                "dependencies",
                Draft2019,
                "`dependencies` (replaced by `dependentRequired`/`dependentSchemas` in 2019-09)",
            ),
            (
                "dependentRequired",
                Draft2019,
                "`dependentRequired` (unknown before 2019-09, so not checked there)",
            ),
            (
                "dependentSchemas",
                Draft2019,
                "`dependentSchemas` (unknown before 2019-09, so not checked there)",
            ),
            (
                "unevaluatedProperties",
                Draft2019,
                "`unevaluatedProperties` (unknown before 2019-09, so not checked there)",
            ),
            (
                "unevaluatedItems",
                Draft2019,
                "`unevaluatedItems` (unknown before 2019-09, so not checked there)",
            ),
            (
                "minContains",
                Draft2019,
                "`minContains`/`maxContains` (unknown before 2019-09)",
            ),
            (
                "maxContains",
                Draft2019,
                "`minContains`/`maxContains` (unknown before 2019-09)",
            ),
            (
                "$anchor",
                Draft2019,
                "`$anchor` (unknown before 2019-09, so `$ref`s to it do not resolve there)",
            ),
            (
                "prefixItems",
                Draft2020,
                "`prefixItems` (unknown before 2020-12, where `items` applies to every item)",
            ),
            (
                "$dynamicRef",
                Draft2020,
                "`$dynamicRef` (unknown before 2020-12)",
            ),
            (
                "$dynamicAnchor",
                Draft2020,
                "`$dynamicAnchor` (unknown before 2020-12)",
            ),
        ];
        for (keyword, since, what) in rules {
            if has(keyword) && self.crosses(*since) {
                // `if` stands for `then` and `else` too; one note for the three.
                self.note(pointer, what);
            }
        }
        if (has("then") || has("else")) && !has("if") && self.crosses(Draft07) {
            self.note(pointer, "`then`/`else` (unknown before draft-07)");
        }
        if map.get("items").is_some_and(Value::is_array) && self.crosses(Draft2020) {
            self.note(
                pointer,
                "`items` as a list (positional before 2020-12, which has `prefixItems` for that)",
            );
        }
        // Without a list `items`, `additionalItems` is ignored by every draft.
        if has("additionalItems")
            && map.get("items").is_some_and(Value::is_array)
            && self.crosses(Draft2020)
        {
            self.note(pointer, "`additionalItems` (gone in 2020-12)");
        }
        for bound in ["exclusiveMinimum", "exclusiveMaximum"] {
            if has(bound) && self.crosses(Draft06) {
                self.note(
                    pointer,
                    "`exclusiveMinimum`/`exclusiveMaximum` (a boolean modifier in draft-04, a number bound from draft-06)",
                );
                break;
            }
        }
        let integer = |t: &Value| t.as_str() == Some("integer");
        if map
            .get("type")
            .is_some_and(|t| integer(t) || t.as_array().is_some_and(|ts| ts.iter().any(integer)))
            && self.crosses(Draft06)
        {
            self.note(
                pointer,
                "`integer` (1.0 is not an integer in draft-04, it is from draft-06)",
            );
        }
        if has("$ref")
            && map
                .keys()
                .any(|k| k != "$ref" && !INERT_REF_SIBLINGS.contains(&k.as_str()))
            && self.crosses(Draft2019)
        {
            self.note(
                pointer,
                "`$ref` beside other keywords (ignored before 2019-09, applied from it)",
            );
        }
        let (into_definitions, into_defs) = self.refs_into;
        if pointer.is_empty() && into_definitions && has("definitions") && self.crosses(Draft2019) {
            self.note(
                pointer,
                "`$ref`s into `definitions` (not a keyword from 2019-09, which has `$defs`)",
            );
        }
        if pointer.is_empty() && into_defs && has("$defs") && self.crosses(Draft2019) {
            self.note(
                pointer,
                "`$ref`s into `$defs` (not a keyword before 2019-09, which has `definitions`)",
            );
        }
        for keyword in ["$recursiveRef", "$recursiveAnchor"] {
            // Only 2019-09 has them.
            if has(keyword) && ((self.old == Draft2019) != (self.new == Draft2019)) {
                self.note(
                    pointer,
                    "`$recursiveRef`/`$recursiveAnchor` (only 2019-09 reads them)",
                );
                break;
            }
        }
    }

    /// The schemas inside one schema object, by the keywords that hold schemas.
    fn children(&mut self, map: &Map<String, Value>, pointer: &str, depth: usize) {
        for (key, value) in map {
            let at = format!("{pointer}/{}", escape_pointer(key));
            match key.as_str() {
                "properties" | "patternProperties" | "$defs" | "definitions"
                | "dependentSchemas" => {
                    for (name, sub) in value.as_object().into_iter().flatten() {
                        self.schema(sub, &format!("{at}/{}", escape_pointer(name)), depth + 1);
                    }
                }
                // Each entry is a schema or a list of property names.
                "dependencies" => {
                    for (name, sub) in value.as_object().into_iter().flatten() {
                        if !sub.is_array() {
                            self.schema(sub, &format!("{at}/{}", escape_pointer(name)), depth + 1);
                        }
                    }
                }
                "items" | "allOf" | "anyOf" | "oneOf" | "prefixItems" if value.is_array() => {
                    for (i, sub) in value.as_array().into_iter().flatten().enumerate() {
                        self.schema(sub, &format!("{at}/{i}"), depth + 1);
                    }
                }
                // Draft-04 allows these two a boolean already.
                "additionalItems" | "additionalProperties" if value.is_boolean() => {}
                "items"
                | "additionalItems"
                | "additionalProperties"
                | "unevaluatedItems"
                | "unevaluatedProperties"
                | "propertyNames"
                | "contains"
                | "not"
                | "if"
                | "then"
                | "else" => self.schema(value, &at, depth + 1),
                _ => {}
            }
        }
    }
}

/// Whether any `$ref` in a schema points into `#/definitions`, and into `#/$defs`.
fn ref_containers(schema: &Map<String, Value>) -> (bool, bool) {
    fn walk(map: &Map<String, Value>, found: &mut (bool, bool), depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        if let Some(target) = map.get("$ref").and_then(Value::as_str) {
            found.0 |= target.starts_with("#/definitions");
            found.1 |= target.starts_with("#/$defs") || target.starts_with("#/%24defs");
        }
        for sub in map.values() {
            values(sub, found, depth + 1);
        }
    }
    fn values(value: &Value, found: &mut (bool, bool), depth: usize) {
        match value {
            Value::Object(map) => walk(map, found, depth),
            Value::Array(items) if depth <= MAX_DEPTH => {
                items.iter().for_each(|i| values(i, found, depth + 1))
            }
            _ => {}
        }
    }
    let mut found = (false, false);
    walk(schema, &mut found, 0);
    found
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn whats(schema: Value, a: Draft, b: Draft) -> Vec<&'static str> {
        let schema = schema.as_object().expect("a schema object").clone();
        differences(&schema, a, b)
            .into_iter()
            .map(|d| d.what)
            .collect()
    }

    #[test]
    fn schema_uris_name_their_draft_however_they_are_spelled() {
        for (uri, draft) in [
            ("http://json-schema.org/draft-07/schema#", Draft::Draft07),
            ("https://json-schema.org/draft-07/schema", Draft::Draft07),
            ("http://json-schema.org/draft-04/schema#", Draft::Draft04),
            (
                "https://json-schema.org/draft/2019-09/schema",
                Draft::Draft2019,
            ),
            (
                "https://json-schema.org/draft/2020-12/schema#",
                Draft::Draft2020,
            ),
        ] {
            assert_eq!(Draft::of(Some(&json!(uri))), Some(draft), "{uri}");
        }
        assert_eq!(Draft::of(None), Some(Draft::Draft2020));
        for unknown in [
            json!("https://example.com/my-meta"),
            json!("http://json-schema.org/schema#"),
            json!("http://json-schema.org/draft-03/schema#"),
            json!(7),
        ] {
            assert_eq!(Draft::of(Some(&unknown)), None, "{unknown}");
        }
    }

    #[test]
    fn keywords_every_draft_reads_alike_are_no_difference() {
        let schema = json!({
            "type": "object",
            "properties": {"q": {"type": "string", "maxLength": 3, "enum": ["a"]},
                           "n": {"type": "number", "minimum": 1, "exclusiveMaximum": 9}},
            "required": ["q"],
            "additionalProperties": false,
            "items": {"type": "string"},
            "additionalItems": false
        });
        assert!(whats(schema.clone(), Draft::Draft07, Draft::Draft2020).is_empty());
        assert!(whats(schema, Draft::Draft06, Draft::Draft2019).is_empty());
    }

    #[test]
    fn a_keyword_counts_only_when_the_drafts_straddle_its_change() {
        let format = json!({"properties": {"e": {"type": "string", "format": "email"}}});
        assert_eq!(
            whats(format.clone(), Draft::Draft07, Draft::Draft2020).len(),
            1
        );
        assert!(whats(format.clone(), Draft::Draft2019, Draft::Draft2020).is_empty());
        assert!(whats(format, Draft::Draft04, Draft::Draft07).is_empty());
        let tuple = json!({"items": [{"type": "string"}], "additionalItems": false});
        assert_eq!(
            whats(tuple.clone(), Draft::Draft2019, Draft::Draft2020).len(),
            2
        );
        assert!(whats(tuple, Draft::Draft04, Draft::Draft2019).is_empty());
        let recursive = json!({"$recursiveAnchor": true, "items": {"$recursiveRef": "#"}});
        assert_eq!(
            whats(recursive.clone(), Draft::Draft2019, Draft::Draft2020).len(),
            2
        );
        assert!(whats(recursive, Draft::Draft07, Draft::Draft04).is_empty());
        let integer = json!({"type": ["integer", "null"]});
        assert_eq!(
            whats(integer.clone(), Draft::Draft04, Draft::Draft07).len(),
            1
        );
        assert!(whats(integer, Draft::Draft06, Draft::Draft2020).is_empty());
    }

    #[test]
    fn ref_siblings_count_only_when_they_constrain() {
        let described = json!({"$ref": "#/definitions/s", "description": "x",
                               "definitions": {"s": {"type": "string"}}});
        let bounded = json!({"properties": {"p": {"$ref": "#/$defs/s", "maxLength": 2}},
                             "$defs": {"s": {"type": "string"}}});
        // The root pattern of draft-07 generators: `$ref` beside `definitions` only.
        let d = whats(described, Draft::Draft07, Draft::Draft2020);
        assert_eq!(
            d,
            ["`$ref`s into `definitions` (not a keyword from 2019-09, which has `$defs`)"]
        );
        let d = whats(bounded, Draft::Draft2020, Draft::Draft07);
        assert!(d.iter().any(|w| w.starts_with("`$ref` beside")), "{d:?}");
        assert!(
            d.iter().any(|w| w.starts_with("`$ref`s into `$defs`")),
            "{d:?}"
        );
    }

    #[test]
    fn values_that_are_data_are_not_read_as_schemas() {
        let schema = json!({
            "properties": {"format": {"type": "string"}, "items": {"const": "x"}},
            "enum": [{"format": "email", "items": [1]}],
            "default": {"dependencies": {}},
            "examples": [{"$ref": "#/x", "maxLength": 1}]
        });
        assert!(whats(schema, Draft::Draft07, Draft::Draft2020).is_empty());
    }

    #[test]
    fn the_same_draft_has_no_differences_and_a_deep_schema_does_not_overflow() {
        let mut deep = json!({"format": "email"});
        for _ in 0..1_000 {
            deep = json!({"not": deep});
        }
        assert!(whats(deep.clone(), Draft::Draft07, Draft::Draft07).is_empty());
        let d = whats(deep, Draft::Draft07, Draft::Draft2020);
        assert_eq!(d, ["schemas nested too deeply to check"]);
    }
}
