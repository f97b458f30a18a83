//! JSON Schema comparison: did the set of accepted values grow, shrink, or move, and
//! what does that mean in this direction?
//!
//! Local `$ref`s are expanded first, so a change inside `$defs` is judged where it is
//! used; a hostile schema that would expand without bound is compared imprecisely.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashSet};

use serde_json::{Map, Value};

mod applicators;
mod object;
mod refs;
mod values;

use refs::{Refs, expand_root, has_refs};

use super::dialect::{self, Draft};
use super::{Class, Classifier, Direction, Finding, text};
use crate::base::json::{Json, escape_pointer};

/// Deepest nesting compared precisely.
const MAX_DEPTH: usize = 128;

/// What happened to the set of values a schema accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shift {
    Narrowed,
    Widened,
    /// Some values gained, some lost.
    Changed,
    /// Not worked out; the finding says so.
    Imprecise,
}

/// Compares two schemas (either may be missing) at `pointer` of a tool definition.
pub(super) fn compare(
    classifier: &Classifier,
    dir: Direction,
    pointer: &str,
    before: Option<&Value>,
    after: Option<&Value>,
    out: &mut Vec<Finding>,
) {
    let any = Value::Bool(true);
    let (a, b) = (before.unwrap_or(&any), after.unwrap_or(&any));
    let mut refs = Refs::default();
    // Only a reference can make an expansion grow: a schema without one is compared as
    // it is, however large or deep (the walk has its own depth limit).
    let expanded = if has_refs(a) || has_refs(b) {
        (|| Some((expand_root(a, &mut refs)?, expand_root(b, &mut refs)?)))()
            .map(|(a, b)| (Cow::Owned(a), Cow::Owned(b)))
    } else {
        Some((Cow::Borrowed(a), Cow::Borrowed(b)))
    };
    let mut walk = Walk {
        classifier,
        dir,
        base: pointer,
        raw: (a, b),
        refs,
        out,
    };
    match expanded {
        Some((a, b)) => walk.node(&a, &b, pointer, None, 0),
        None => walk.shift(
            Shift::Imprecise,
            pointer,
            before,
            after,
            "its `$ref`s expand beyond what mcp-lock compares".into(),
            false,
        ),
    }
}

struct Walk<'a> {
    classifier: &'a Classifier,
    dir: Direction,
    /// The pointer of the schema's root, for naming `$defs` entries.
    base: &'a str,
    /// The two schemas as written, before `$ref`s were expanded.
    raw: (&'a Value, &'a Value),
    refs: Refs,
    out: &'a mut Vec<Finding>,
}

impl Walk<'_> {
    /// Records a change to the accepted values, classed by direction.
    fn shift(
        &mut self,
        shift: Shift,
        pointer: &str,
        before: Option<&Value>,
        after: Option<&Value>,
        what: String,
        target: bool,
    ) {
        use Direction::{Input, Output};
        let (class, tail) = match (self.dir, shift) {
            (Input, Shift::Widened) if target => (
                Class::Authority,
                "accepts more values for a field that selects a target or identity",
            ),
            (Input, Shift::Widened) => (Class::Additive, "old calls still validate"),
            (Input, Shift::Narrowed) => (Class::Breaking, "old calls may no longer validate"),
            (Output, Shift::Narrowed) => (Class::Additive, "old readers still parse every result"),
            (Output, Shift::Widened) => (
                Class::Breaking,
                "results may hold values old readers do not expect",
            ),
            (_, Shift::Changed) => (
                Class::Breaking,
                "neither narrower nor wider, so old calls or results may not fit",
            ),
            (_, Shift::Imprecise) => (
                Class::Breaking,
                "not compared precisely, so treated as breaking",
            ),
        };
        self.push(class, pointer, before, after, format!("{what}: {tail}"));
    }

    fn push(
        &mut self,
        class: Class,
        pointer: &str,
        before: Option<&Value>,
        after: Option<&Value>,
        reason: String,
    ) {
        self.out
            .push(Finding::new(class, pointer, before, after, reason));
    }

    /// Compares two (expanded) schemas. `field` names the property they describe.
    fn node(&mut self, a: &Value, b: &Value, pointer: &str, field: Option<&str>, depth: usize) {
        if a == b {
            return;
        }
        let target = self.is_target(field);
        if depth > MAX_DEPTH {
            return self.shift(
                Shift::Imprecise,
                pointer,
                Some(a),
                Some(b),
                "nested too deeply".into(),
                false,
            );
        }
        if keeps_as_any_of_branch(a, b) {
            return self.shift(
                Shift::Widened,
                pointer,
                Some(a),
                Some(b),
                "now `anyOf` the pinned form and others: every value the pinned form accepted is still accepted".into(),
                target,
            );
        }
        let empty = Map::new();
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => self.keywords(x, y, pointer, field, depth),
            (Value::Bool(true), Value::Object(y)) => {
                self.keywords(&empty, y, pointer, field, depth)
            }
            (Value::Object(x), Value::Bool(true)) => {
                self.keywords(x, &empty, pointer, field, depth)
            }
            (Value::Bool(false), _) => self.shift(
                Shift::Widened,
                pointer,
                Some(a),
                Some(b),
                "accepted nothing, now accepts values".into(),
                target,
            ),
            (_, Value::Bool(false)) => self.shift(
                Shift::Narrowed,
                pointer,
                Some(a),
                Some(b),
                "now accepts nothing".into(),
                target,
            ),
            _ => self.shift(
                Shift::Imprecise,
                pointer,
                Some(a),
                Some(b),
                "not a schema object".into(),
                false,
            ),
        }
    }

    fn is_target(&self, field: Option<&str>) -> bool {
        self.dir == Direction::Input && field.is_some_and(|f| self.classifier.is_target_field(f))
    }

    fn keywords(
        &mut self,
        a: &Map<String, Value>,
        b: &Map<String, Value>,
        pointer: &str,
        field: Option<&str>,
        depth: usize,
    ) {
        let target = self.is_target(field);
        let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        let mut values_done = false;
        let mut object_done = false;
        for key in keys {
            let (x, y) = (a.get(key), b.get(key));
            if x == y {
                continue;
            }
            let kp = format!("{pointer}/{}", escape_pointer(key));
            match key.as_str() {
                "type" => self.types(&kp, x, y, target),
                "enum" | "const" if !values_done => {
                    values_done = true;
                    self.values(a, b, pointer, target);
                }
                "enum" | "const" => {}
                "properties" | "required" if !object_done => {
                    object_done = true;
                    self.object(a, b, pointer, depth);
                }
                "properties" | "required" => {}
                "minimum" | "exclusiveMinimum" | "minLength" | "minItems" | "minProperties"
                | "minContains" => self.bound(key, &kp, x, y, true, target),
                "maximum" | "exclusiveMaximum" | "maxLength" | "maxItems" | "maxProperties"
                | "maxContains" => self.bound(key, &kp, x, y, false, target),
                "multipleOf" => self.multiple_of(&kp, x, y, target),
                "pattern" | "format" | "contentEncoding" | "contentMediaType" => {
                    let shift = match (x, y) {
                        (None, _) => Shift::Narrowed,
                        (_, None) => Shift::Widened,
                        _ => Shift::Changed,
                    };
                    let what = match shift {
                        Shift::Narrowed => format!("`{key}` added"),
                        Shift::Widened => format!("`{key}` removed"),
                        _ => format!("`{key}` changed; whether it accepts more or less is unknown"),
                    };
                    self.shift(shift, &kp, x, y, what, target);
                }
                "uniqueItems" | "nullable" => {
                    let on = |v: Option<&Value>| v.and_then(Value::as_bool).unwrap_or(false);
                    let (was, now) = (on(x), on(y));
                    // uniqueItems: true accepts less; nullable: true accepts more.
                    let narrows = (key == "uniqueItems") == now;
                    if was == now {
                        self.push(
                            Class::Cosmetic,
                            &kp,
                            x,
                            y,
                            format!("`{key}` written differently, same effect"),
                        );
                    } else {
                        let shift = if narrows {
                            Shift::Narrowed
                        } else {
                            Shift::Widened
                        };
                        self.shift(shift, &kp, x, y, format!("`{key}` {was} -> {now}"), target);
                    }
                }
                "additionalProperties" if x.is_none_or(Value::is_boolean) && y.is_none_or(Value::is_boolean) => {
                    let allows = |v: Option<&Value>| v.and_then(Value::as_bool).unwrap_or(true);
                    let (was, now) = (allows(x), allows(y));
                    if was == now {
                        self.push(
                            Class::Cosmetic,
                            &kp,
                            x,
                            y,
                            format!("`additionalProperties` written out at its effective value ({now})"),
                        );
                    } else if now {
                        self.shift(
                            Shift::Widened,
                            &kp,
                            x,
                            y,
                            "properties not listed are now allowed".into(),
                            target,
                        );
                    } else if self.dir == Direction::Input
                        && [a, b]
                            .iter()
                            .all(|s| s.get("properties").is_some_and(Value::is_object))
                    {
                        // A call made from the pinned schema names only its listed
                        // properties: it is accepted as before.
                        self.push(
                            Class::Additive,
                            &kp,
                            x,
                            y,
                            "`additionalProperties: false`: only properties the schema never listed are now refused; calls made from the pinned schema pass as before".into(),
                        );
                    } else {
                        self.shift(
                            Shift::Narrowed,
                            &kp,
                            x,
                            y,
                            "`additionalProperties: false`: properties not listed are now refused"
                                .into(),
                            false,
                        );
                    }
                }
                "items" if x.is_some_and(Value::is_array) || y.is_some_and(Value::is_array) => {
                    self.tuple(&kp, x, y, field, depth);
                }
                "items" | "additionalProperties" | "additionalItems" | "unevaluatedProperties"
                | "unevaluatedItems" | "propertyNames" => {
                    let any = Value::Bool(true);
                    // What a target field holds is still the target.
                    self.node(x.unwrap_or(&any), y.unwrap_or(&any), &kp, field, depth + 1);
                }
                "contains" => match (x, y) {
                    (Some(x), Some(y)) => self.node(x, y, &kp, None, depth + 1),
                    (None, _) => {
                        self.shift(Shift::Narrowed, &kp, x, y, "`contains` added".into(), target)
                    }
                    (_, None) => {
                        self.shift(Shift::Widened, &kp, x, y, "`contains` removed".into(), target)
                    }
                },
                "prefixItems" => self.tuple(&kp, x, y, field, depth),
                "anyOf" | "oneOf" => self.branches(key, &kp, x, y, true, field, depth),
                "allOf" => self.branches(key, &kp, x, y, false, field, depth),
                "description" => {
                    let words = super::rewording::schema_words(field, &[a.get("enum"), b.get("enum")]);
                    text::description_in(&kp, x, y, &words, self.out);
                }
                "title" | "examples" | "$comment" => {
                    text::inert(&kp, &format!("`{key}`"), x, y, self.out);
                }
                // Validates nothing; where a value is sent is judged with the whole
                // tool (`header_marks` in classify/mod.rs).
                "x-mcp-header" if self.dir == Direction::Input => {}
                "$id" | "$anchor" => self.shift(
                    Shift::Imprecise,
                    &kp,
                    x,
                    y,
                    format!("`{key}` changed, which can change what `$ref`s point at"),
                    false,
                ),
                "default" => match self.dir {
                    Direction::Input if target => self.push(
                        Class::Authority,
                        &kp,
                        x,
                        y,
                        "default of a field that selects a target or identity changed: calls that omit it now land elsewhere".into(),
                    ),
                    Direction::Input => self.push(
                        Class::Semantic,
                        &kp,
                        x,
                        y,
                        "default changed: calls that omit the field now mean something else"
                            .into(),
                    ),
                    Direction::Output => self.push(
                        Class::Semantic,
                        &kp,
                        x,
                        y,
                        "default of an output field changed: a result that omits it now means something else".into(),
                    ),
                },
                "deprecated" | "readOnly" | "writeOnly" => self.push(
                    Class::Semantic,
                    &kp,
                    x,
                    y,
                    format!("`{key}` changed: the model may read it"),
                ),
                "$schema" => self.dialect(a, b, pointer, x, y),
                "$defs" | "definitions" => self.definitions(&kp, x, y),
                _ => self.shift(
                    Shift::Imprecise,
                    &kp,
                    x,
                    y,
                    format!("`{key}` changed"),
                    false,
                ),
            }
        }
    }

    /// `$schema` changed: cosmetic unless the schema uses a keyword that means
    /// something else under the other dialect, or names one mcp-lock does not know.
    fn dialect(
        &mut self,
        a: &Map<String, Value>,
        b: &Map<String, Value>,
        pointer: &str,
        x: Option<&Value>,
        y: Option<&Value>,
    ) {
        let kp = format!("{pointer}/$schema");
        let name = |v: Option<&Value>, d: Option<Draft>| match (v, d) {
            (None, _) => format!("(none: {}, the MCP default)", Draft::DEFAULT.name()),
            (_, Some(d)) => d.name().to_string(),
            (Some(v), None) => canon(v),
        };
        let (Some(da), Some(db)) = (Draft::of(x), Draft::of(y)) else {
            let what = format!(
                "schema dialect {} -> {}, and mcp-lock does not know the rules of {}",
                name(x, Draft::of(x)),
                name(y, Draft::of(y)),
                if Draft::of(y).is_none() {
                    "the new one"
                } else {
                    "the old one"
                }
            );
            return self.shift(Shift::Imprecise, &kp, x, y, what, false);
        };
        let what = format!(
            "schema dialect {} -> {}",
            name(x, Some(da)),
            name(y, Some(db))
        );
        if da == db {
            return self.push(
                Class::Cosmetic,
                &kp,
                x,
                y,
                format!("{what}: the same dialect, written differently"),
            );
        }
        // Keywords are read as written: expanding `$ref`s folds away the `$ref`s
        // whose siblings matter. A schema reached through a `$ref` is read expanded.
        let relative = pointer.strip_prefix(self.base).unwrap_or(pointer);
        let scan = |raw: &Value, expanded: &Map<String, Value>| match raw.pointer(relative) {
            Some(Value::Object(m)) if m.get("$schema") == expanded.get("$schema") => {
                dialect::differences(m, da, db)
            }
            _ => dialect::differences(expanded, da, db),
        };
        // Both sides, each difference once (a schema can hold a million of them).
        let mut seen = HashSet::new();
        let mut found = scan(self.raw.0, a);
        found.extend(scan(self.raw.1, b));
        found.retain(|d| seen.insert((d.pointer.clone(), d.what)));
        if found.is_empty() {
            return self.push(
                Class::Cosmetic,
                &kp,
                x,
                y,
                format!("{what}: no keyword this schema uses means anything different in the two"),
            );
        }
        let shown: Vec<String> = found
            .iter()
            .take(3)
            .map(|d| format!("{} at {pointer}{}", d.what, d.pointer))
            .collect();
        let more = match found.len() {
            n if n > 3 => format!(" and {} more", n - 3),
            _ => String::new(),
        };
        let what = format!(
            "{what}, and keywords it uses mean something else in each: {}{more}",
            shown.join("; ")
        );
        self.shift(Shift::Imprecise, &kp, x, y, what, false);
    }
}

/// The canonical text of a value, to compare values regardless of member order.
fn canon(v: &Value) -> String {
    Json::from_value(v).canonical().unwrap_or_default()
}

/// Keywords that describe a schema without changing what it accepts.
const NOTES: [&str; 4] = ["description", "title", "$comment", "examples"];

/// Whether `b` is `a` kept whole as one branch of an `anyOf` (its notes either kept in
/// the branch or moved, unchanged, beside the `anyOf`): every value `a` accepted, `b`
/// accepts. Real servers widen a parameter so (an object, or now also a string).
fn keeps_as_any_of_branch(a: &Value, b: &Value) -> bool {
    let (Some(x), Some(y)) = (a.as_object(), b.as_object()) else {
        return false;
    };
    let Some(branches) = y.get("anyOf").and_then(Value::as_array) else {
        return false;
    };
    if x.contains_key("anyOf") || branches.len() < 2 {
        return false;
    }
    let outer: Map<String, Value> = y
        .iter()
        .filter(|(k, _)| k.as_str() != "anyOf")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if outer.keys().any(|k| !NOTES.contains(&k.as_str())) {
        return false;
    }
    let split = |m: &Map<String, Value>| -> (Map<String, Value>, Map<String, Value>) {
        m.iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .partition(|(k, _)| !NOTES.contains(&k.as_str()))
    };
    let (core, notes) = split(x);
    branches.iter().any(|branch| {
        branch == a
            || branch
                .as_object()
                .is_some_and(|m| split(m).0 == core && outer == notes)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::base::json::Json;
    use crate::contract::classify::{Class, Classifier, Finding};

    fn findings(before: Value, after: Value) -> Vec<Finding> {
        let tool = |schema| Json::from_value(&json!({"name": "t", "inputSchema": schema}));
        Classifier::default().classify(&tool(before), &tool(after))
    }

    /// Upgrades of real servers (benches/upgrade_churn.py) stopped on these; a call
    /// made from the pinned schema is accepted before and after.
    #[test]
    fn additional_properties_false_over_listed_properties_is_additive_not_breaking() {
        let schema = |extra: Option<bool>| {
            let mut s = json!({"type": "object", "properties": {"q": {"type": "string"}}});
            if let Some(extra) = extra {
                s["additionalProperties"] = extra.into();
            }
            s
        };
        let found = findings(schema(None), schema(Some(false)));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].class, Class::Additive);
        // With no properties listed, the pinned schema accepted any object: refusing
        // every property breaks calls.
        let found = findings(
            json!({"type": "object"}),
            json!({"type": "object", "additionalProperties": false}),
        );
        assert_eq!(found[0].class, Class::Breaking, "{found:?}");
    }

    #[test]
    fn a_parameter_kept_as_one_branch_of_an_any_of_is_widened_not_broken() {
        let comment = json!({"type": "object", "properties": {"path": {"type": "string"}, "body": {"type": "string"}},
            "required": ["path", "body"], "additionalProperties": false, "description": "A review comment"});
        let other = json!({"type": "object", "properties": {"line": {"type": "number"}}, "required": ["line"]});
        let schema = |items: Value| json!({"type": "object", "properties": {"comments": {"type": "array", "items": items}}});
        // The pinned form kept whole as a branch, or its description moved beside the anyOf.
        let kept = json!({"anyOf": [comment.clone(), other.clone()]});
        let mut bare = comment.clone();
        bare.as_object_mut().unwrap().remove("description");
        let moved =
            json!({"anyOf": [bare.clone(), other.clone()], "description": "A review comment"});
        for after in [kept, moved] {
            let found = findings(schema(comment.clone()), schema(after));
            assert_eq!(found.len(), 1, "{found:?}");
            assert_eq!(found[0].class, Class::Additive, "{found:?}");
        }
        // A branch that is not the pinned form is no widening.
        let mut changed = comment.clone();
        changed["required"] = json!(["path", "body", "line"]);
        let found = findings(
            schema(comment.clone()),
            schema(json!({"anyOf": [changed, other]})),
        );
        assert!(
            found.iter().any(|f| f.class == Class::Breaking),
            "{found:?}"
        );
    }

    #[test]
    fn the_largest_safe_integer_as_a_bound_is_no_bound() {
        let schema = |bound: Option<(&str, i64)>| {
            let mut s = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
            if let Some((key, value)) = bound {
                s["properties"]["n"][key] = value.into();
            }
            s
        };
        for (key, value) in [
            ("maximum", 9_007_199_254_740_991),
            ("minimum", -9_007_199_254_740_991),
        ] {
            let found = findings(schema(None), schema(Some((key, value))));
            assert_eq!(found.len(), 1, "{found:?}");
            assert_eq!(found[0].class, Class::Cosmetic, "{key}: {found:?}");
        }
        let found = findings(schema(None), schema(Some(("maximum", 1000))));
        assert_eq!(found[0].class, Class::Breaking, "{found:?}");
    }

    #[test]
    fn a_nested_dialect_change_is_judged_by_the_keywords_below_it() {
        let schema = |dialect: &str| {
            json!({
                "type": "object",
                "properties": {
                    "mail": {"type": "string", "format": "email"},
                    "point": {"$schema": dialect, "type": "array", "items": {"type": "number"}}
                }
            })
        };
        let found = findings(
            schema("http://json-schema.org/draft-07/schema#"),
            schema("https://json-schema.org/draft/2020-12/schema"),
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].class, Class::Cosmetic, "{found:?}");
        assert_eq!(found[0].pointer, "/inputSchema/properties/point/$schema");
    }

    #[test]
    fn many_dialect_sensitive_keywords_are_counted_not_all_listed() {
        let properties: serde_json::Map<String, Value> = (0..5_000)
            .map(|i| (format!("p{i}"), json!({"type": "string", "format": "uri"})))
            .collect();
        let schema = |dialect: &str| json!({"$schema": dialect, "type": "object", "properties": properties.clone()});
        let found = findings(
            schema("http://json-schema.org/draft-07/schema#"),
            schema("https://json-schema.org/draft/2020-12/schema"),
        );
        assert_eq!(found.len(), 1, "one finding");
        assert_eq!(found[0].class, Class::Breaking);
        assert!(
            found[0].reason.contains("and 4997 more"),
            "{}",
            found[0].reason
        );
    }
}
