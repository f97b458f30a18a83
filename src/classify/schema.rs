//! JSON Schema comparison: did the set of accepted values grow, shrink, or move, and
//! what does that mean in this direction?
//!
//! Local `$ref`s are expanded first, so a change inside `$defs` is judged where it is
//! used; a hostile schema that would expand without bound is compared imprecisely.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::{Map, Value};

use super::dialect::{self, Draft};
use super::{Class, Classifier, Direction, Finding, text};
use crate::json::{Json, escape_pointer};

/// Schema nodes an expansion of `$ref`s may produce before giving up.
const EXPANSION_BUDGET: usize = 100_000;
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
                "description" => text::description(&kp, x, y, self.out),
                "title" | "examples" | "$comment" => {
                    text::inert(&kp, &format!("`{key}`"), x, y, self.out);
                }
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
        let mut found = scan(self.raw.0, a);
        for d in scan(self.raw.1, b) {
            if !found.contains(&d) {
                found.push(d);
            }
        }
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

    fn types(&mut self, pointer: &str, x: Option<&Value>, y: Option<&Value>, target: bool) {
        let set = |v: Option<&Value>| -> Option<BTreeSet<String>> {
            v.map(|v| match v {
                Value::String(s) => BTreeSet::from([s.clone()]),
                Value::Array(items) => items
                    .iter()
                    .map(|t| t.as_str().unwrap_or("(not a type name)").to_string())
                    .collect(),
                _ => BTreeSet::from(["(not a type name)".to_string()]),
            })
        };
        let accepts = |set: &Option<BTreeSet<String>>, t: &str| match set {
            None => true,
            Some(s) => s.contains(t) || (t == "integer" && s.contains("number")),
        };
        let within = |a: &Option<BTreeSet<String>>, b: &Option<BTreeSet<String>>| match a {
            None => b.is_none(),
            Some(a) => a.iter().all(|t| accepts(b, t)),
        };
        let (a, b) = (set(x), set(y));
        let invalid = |s: &Option<BTreeSet<String>>| {
            s.as_ref().is_some_and(|s| s.contains("(not a type name)"))
        };
        if invalid(&a) || invalid(&b) {
            return self.shift(
                Shift::Imprecise,
                pointer,
                x,
                y,
                "`type` holds something that is not a type name".into(),
                false,
            );
        }
        let show = |s: &Option<BTreeSet<String>>| match s {
            None => "any".to_string(),
            Some(s) => s.iter().cloned().collect::<Vec<_>>().join(" | "),
        };
        let what = format!("type {} -> {}", show(&a), show(&b));
        match (within(&a, &b), within(&b, &a)) {
            (true, true) => self.push(
                Class::Cosmetic,
                pointer,
                x,
                y,
                format!("{what}: the same types, written differently"),
            ),
            (true, false) => self.shift(
                Shift::Widened,
                pointer,
                x,
                y,
                format!("{what} (widened)"),
                target,
            ),
            (false, true) => self.shift(
                Shift::Narrowed,
                pointer,
                x,
                y,
                format!("{what} (narrowed)"),
                target,
            ),
            (false, false) => self.shift(Shift::Changed, pointer, x, y, what, target),
        }
    }

    /// `enum` and `const` together: the fixed set of allowed values, if any.
    fn values(
        &mut self,
        a: &Map<String, Value>,
        b: &Map<String, Value>,
        pointer: &str,
        target: bool,
    ) {
        let set = |m: &Map<String, Value>| -> Option<BTreeMap<String, Value>> {
            let list: Vec<Value> = match (m.get("const"), m.get("enum")) {
                (Some(c), _) => vec![c.clone()],
                (None, Some(Value::Array(items))) => items.clone(),
                (None, Some(other)) => vec![other.clone()],
                (None, None) => return None,
            };
            Some(list.into_iter().map(|v| (canon(&v), v)).collect())
        };
        let key = if a.contains_key("const") || b.contains_key("const") {
            "const"
        } else {
            "enum"
        };
        let kp = format!("{pointer}/{key}");
        let (x, y) = (
            a.get(key).or_else(|| a.get("enum")),
            b.get(key).or_else(|| b.get("enum")),
        );
        let (sa, sb) = (set(a), set(b));
        let list = |keys: Vec<&String>| keys.into_iter().cloned().collect::<Vec<_>>().join(", ");
        match (&sa, &sb) {
            (None, None) => {}
            (None, Some(s)) => self.shift(
                Shift::Narrowed,
                &kp,
                x,
                y,
                format!("now limited to {}", list(s.keys().collect())),
                target,
            ),
            (Some(_), None) => self.shift(
                Shift::Widened,
                &kp,
                x,
                y,
                "no longer limited to a fixed set of values".into(),
                target,
            ),
            (Some(sa), Some(sb)) => {
                let removed: Vec<&String> = sa.keys().filter(|k| !sb.contains_key(*k)).collect();
                let added: Vec<&String> = sb.keys().filter(|k| !sa.contains_key(*k)).collect();
                match (removed.is_empty(), added.is_empty()) {
                    (true, true) => self.push(
                        Class::Cosmetic,
                        &kp,
                        x,
                        y,
                        "the same values, in another order or spelling".into(),
                    ),
                    (true, false) => self.shift(
                        Shift::Widened,
                        &kp,
                        x,
                        y,
                        format!("{key} widened: added {}", list(added)),
                        target,
                    ),
                    (false, true) => self.shift(
                        Shift::Narrowed,
                        &kp,
                        x,
                        y,
                        format!("{key} narrowed: removed {}", list(removed)),
                        target,
                    ),
                    (false, false) => self.shift(
                        Shift::Changed,
                        &kp,
                        x,
                        y,
                        format!(
                            "{key} changed: removed {}; added {}",
                            list(removed),
                            list(added)
                        ),
                        target,
                    ),
                }
            }
        }
    }

    /// `properties` and `required` together.
    fn object(
        &mut self,
        a: &Map<String, Value>,
        b: &Map<String, Value>,
        pointer: &str,
        depth: usize,
    ) {
        // Borrowed, not copied: a schema can hold a million properties.
        let empty = Map::new();
        fn props<'a>(
            m: &'a Map<String, Value>,
            empty: &'a Map<String, Value>,
        ) -> &'a Map<String, Value> {
            m.get("properties")
                .and_then(Value::as_object)
                .unwrap_or(empty)
        }
        let required = |m: &Map<String, Value>| -> Vec<String> {
            m.get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (pa, pb) = (props(a, &empty), props(b, &empty));
        let (ra, rb) = (required(a), required(b));
        let input = self.dir == Direction::Input;
        let before_count = self.out.len();
        let names: BTreeSet<&String> = pa.keys().chain(pb.keys()).collect();
        let mut removed = Vec::new();
        let mut added = Vec::new();
        for name in names {
            let pp = format!("{pointer}/properties/{}", escape_pointer(name));
            let target = input && self.classifier.is_target_field(name);
            match (pa.get(name), pb.get(name)) {
                (Some(x), Some(y)) => self.node(x, y, &pp, Some(name), depth + 1),
                (Some(x), None) => {
                    removed.push(name.clone());
                    let reason = if input {
                        format!(
                            "input `{name}` removed: old calls that send it are refused or silently ignored"
                        )
                    } else {
                        format!("output field `{name}` removed: old readers of it break")
                    };
                    self.push(Class::Breaking, &pp, Some(x), None, reason);
                }
                (None, Some(y)) => {
                    added.push(name.clone());
                    let is_required = rb.contains(name);
                    if !input {
                        self.push(
                            Class::Additive,
                            &pp,
                            None,
                            Some(y),
                            format!("new output field `{name}`: old readers ignore it"),
                        );
                        continue;
                    }
                    if is_required {
                        self.push(
                            Class::Breaking,
                            &pp,
                            None,
                            Some(y),
                            format!("new required input `{name}`: old calls no longer validate"),
                        );
                    } else if !target {
                        self.push(
                            Class::Additive,
                            &pp,
                            None,
                            Some(y),
                            format!("new optional input `{name}`: old calls still validate"),
                        );
                    }
                    if !target && let Some(inner) = self.classifier.target_inside(y) {
                        self.push(
                            Class::Authority,
                            &pp,
                            None,
                            Some(y),
                            format!("new input `{name}` contains `{inner}`, which selects a target or identity"),
                        );
                    }
                    if target {
                        self.push(
                            Class::Authority,
                            &pp,
                            None,
                            Some(y),
                            format!("new input `{name}` selects a target or identity: calls can now be pointed somewhere else"),
                        );
                    }
                }
                (None, None) => {}
            }
        }
        // Required-ness of properties that exist on both sides (or on neither).
        let rp = format!("{pointer}/required");
        let (x, y) = (a.get("required"), b.get("required"));
        // A required-list change that only follows an added or removed property is
        // already reported with that property.
        let mut explained = false;
        for name in rb.iter().filter(|n| !ra.contains(n)) {
            if added.contains(name) {
                explained = true;
                continue;
            }
            if input {
                self.push(
                    Class::Breaking,
                    &rp,
                    x,
                    y,
                    format!("`{name}` is now required: old calls without it no longer validate"),
                );
                if self.classifier.is_target_field(name) {
                    self.push(
                        Class::Authority,
                        &rp,
                        x,
                        y,
                        format!("`{name}` now must be given, and it selects a target or identity"),
                    );
                }
            } else {
                self.push(
                    Class::Additive,
                    &rp,
                    x,
                    y,
                    format!("output field `{name}` is now always present"),
                );
            }
        }
        for name in ra.iter().filter(|n| !rb.contains(n)) {
            if removed.contains(name) {
                explained = true;
                continue;
            }
            if input {
                self.push(
                    Class::Additive,
                    &rp,
                    x,
                    y,
                    format!("`{name}` is now optional: old calls still validate"),
                );
            } else {
                self.push(
                    Class::Breaking,
                    &rp,
                    x,
                    y,
                    format!(
                        "output field `{name}` may now be absent: old readers that expect it break"
                    ),
                );
            }
        }
        if input {
            self.replacements(pa, pb, &removed, &added, pointer);
        }
        let touched_required = self.out[before_count..].iter().any(|f| f.pointer == rp);
        if x != y && !touched_required && !explained {
            let set = |r: &[String]| r.iter().cloned().collect::<BTreeSet<String>>();
            let what = if set(&ra) == set(&rb) {
                "the same required fields, in another order or written out empty"
            } else {
                "`required` names fields that are not properties"
            };
            let class = if set(&ra) == set(&rb) {
                Class::Cosmetic
            } else if input == (rb.len() > ra.len()) {
                Class::Breaking
            } else {
                Class::Additive
            };
            self.push(class, &rp, x, y, what.into());
        }
    }

    /// An input with a fixed set of values replaced by a free-form one.
    fn replacements(
        &mut self,
        pa: &Map<String, Value>,
        pb: &Map<String, Value>,
        removed: &[String],
        added: &[String],
        pointer: &str,
    ) {
        let constrained = |s: &Value| {
            ["enum", "const", "pattern", "format"]
                .iter()
                .any(|k| s.get(k).is_some())
        };
        let free_form = |s: &Value| {
            !constrained(s)
                && match s.get("type") {
                    None => true,
                    Some(Value::String(t)) => t == "string",
                    Some(_) => false,
                }
        };
        for old in removed {
            if !pa.get(old).is_some_and(constrained) {
                continue;
            }
            if let Some(new) = added.iter().find(|n| pb.get(*n).is_some_and(free_form)) {
                let pp = format!("{pointer}/properties/{}", escape_pointer(new));
                self.push(
                    Class::Authority,
                    &pp,
                    pa.get(old),
                    pb.get(new),
                    format!("`{old}` (a fixed set of values) replaced by free-form `{new}`: calls can now name anything"),
                );
            }
        }
    }

    fn bound(
        &mut self,
        key: &str,
        pointer: &str,
        x: Option<&Value>,
        y: Option<&Value>,
        lower: bool,
        target: bool,
    ) {
        let num = |v: Option<&Value>| v.map(|v| v.as_f64());
        let (shift, what) = match (num(x), num(y)) {
            (None, _) => (Shift::Narrowed, format!("`{key}` added")),
            (_, None) => (Shift::Widened, format!("`{key}` removed")),
            (Some(Some(a)), Some(Some(b))) if a == b => {
                return self.push(
                    Class::Cosmetic,
                    pointer,
                    x,
                    y,
                    format!("`{key}` written differently, same value"),
                );
            }
            (Some(Some(a)), Some(Some(b))) => {
                let tighter = if lower { b > a } else { b < a };
                let word = if tighter { "tightened" } else { "relaxed" };
                let shift = if tighter {
                    Shift::Narrowed
                } else {
                    Shift::Widened
                };
                (shift, format!("`{key}` {word}: {a} -> {b}"))
            }
            _ => (Shift::Imprecise, format!("`{key}` is not a number")),
        };
        self.shift(shift, pointer, x, y, what, target);
    }

    fn multiple_of(&mut self, pointer: &str, x: Option<&Value>, y: Option<&Value>, target: bool) {
        let (shift, what) = match (x.and_then(Value::as_f64), y.and_then(Value::as_f64)) {
            (None, Some(_)) if x.is_none() => (Shift::Narrowed, "`multipleOf` added".to_string()),
            (Some(_), None) if y.is_none() => (Shift::Widened, "`multipleOf` removed".to_string()),
            (Some(a), Some(b)) if a > 0.0 && b > 0.0 && a.is_finite() && b.is_finite() => {
                // Exact remainders only: a near miss in floating point is not a divisor.
                const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
                let whole = |n: f64, d: f64| n % d == 0.0 && n / d < EXACT;
                let what = format!("`multipleOf` {a} -> {b}");
                if whole(b, a) {
                    (Shift::Narrowed, what)
                } else if whole(a, b) {
                    (Shift::Widened, what)
                } else {
                    (Shift::Changed, what)
                }
            }
            _ => (
                Shift::Imprecise,
                "`multipleOf` is not a positive number".into(),
            ),
        };
        self.shift(shift, pointer, x, y, what, target);
    }

    /// `prefixItems`, or draft-07 array-form `items`: position by position.
    fn tuple(
        &mut self,
        pointer: &str,
        x: Option<&Value>,
        y: Option<&Value>,
        field: Option<&str>,
        depth: usize,
    ) {
        let (Some(Value::Array(a)), Some(Value::Array(b))) = (x, y) else {
            let shift = match (x, y) {
                (None, Some(Value::Array(_))) => Shift::Narrowed,
                (Some(Value::Array(_)), None) => Shift::Widened,
                _ => Shift::Imprecise,
            };
            let what = match shift {
                Shift::Narrowed => "positional item schemas added",
                Shift::Widened => "positional item schemas removed",
                _ => "item schemas changed between positional and single form",
            };
            return self.shift(shift, pointer, x, y, what.into(), false);
        };
        for (i, (p, q)) in a.iter().zip(b).enumerate() {
            self.node(p, q, &format!("{pointer}/{i}"), field, depth + 1);
        }
        if a.len() != b.len() {
            let (shift, what) = if b.len() > a.len() {
                (Shift::Narrowed, "more positions constrained")
            } else {
                (Shift::Widened, "fewer positions constrained")
            };
            self.shift(
                shift,
                pointer,
                x,
                y,
                format!("{what} ({} -> {})", a.len(), b.len()),
                false,
            );
        }
    }

    /// `anyOf`/`oneOf` (`union`) or `allOf`: branches added or removed are precise;
    /// a single edited branch is compared in place; anything else is imprecise.
    #[allow(clippy::too_many_arguments)]
    fn branches(
        &mut self,
        key: &str,
        pointer: &str,
        x: Option<&Value>,
        y: Option<&Value>,
        union: bool,
        field: Option<&str>,
        depth: usize,
    ) {
        let target = self.is_target(field);
        let (a, b) = match (x, y) {
            (None, Some(_)) => {
                return self.shift(
                    Shift::Narrowed,
                    pointer,
                    x,
                    y,
                    format!("`{key}` added"),
                    target,
                );
            }
            (Some(_), None) => {
                return self.shift(
                    Shift::Widened,
                    pointer,
                    x,
                    y,
                    format!("`{key}` removed"),
                    target,
                );
            }
            (Some(Value::Array(a)), Some(Value::Array(b))) => (a, b),
            _ => {
                return self.shift(
                    Shift::Imprecise,
                    pointer,
                    x,
                    y,
                    format!("`{key}` is not a list of schemas"),
                    false,
                );
            }
        };
        let mut left: Vec<(usize, String)> = b.iter().map(canon).enumerate().collect();
        let mut removed = Vec::new();
        for (i, branch) in a.iter().enumerate() {
            let c = canon(branch);
            match left.iter().position(|(_, d)| *d == c) {
                Some(at) => {
                    left.remove(at);
                }
                None => removed.push(i),
            }
        }
        let added: Vec<usize> = left.into_iter().map(|(i, _)| i).collect();
        if key == "oneOf" && !(removed.is_empty() && added.is_empty()) {
            // Exactly one branch must match: a branch added can make a value match two
            // (refused), a branch removed can make it match one (accepted).
            self.shift(
                Shift::Imprecise,
                pointer,
                x,
                y,
                format!(
                    "`oneOf` changed ({} branch(es) removed, {} added); exactly one branch must match, so values can be refused or accepted either way",
                    removed.len(),
                    added.len()
                ),
                false,
            );
            self.target_branches(key, pointer, x, y, &added, b);
            return;
        }
        let grows = |more: bool| {
            if more == union {
                Shift::Widened
            } else {
                Shift::Narrowed
            }
        };
        match (removed.as_slice(), added.as_slice()) {
            ([], []) => self.push(
                Class::Cosmetic,
                pointer,
                x,
                y,
                format!("`{key}` branches reordered"),
            ),
            ([], more) => {
                self.shift(
                    grows(true),
                    pointer,
                    x,
                    y,
                    format!("`{key}`: {} branch(es) added", more.len()),
                    target,
                );
                self.target_branches(key, pointer, x, y, more, b);
            }
            (fewer, []) => self.shift(
                grows(false),
                pointer,
                x,
                y,
                format!("`{key}`: {} branch(es) removed", fewer.len()),
                target,
            ),
            ([i], [j]) => self.node(&a[*i], &b[*j], &format!("{pointer}/{j}"), field, depth + 1),
            (fewer, more) => self.shift(
                Shift::Imprecise,
                pointer,
                x,
                y,
                format!(
                    "`{key}` rewritten ({} branch(es) removed, {} added)",
                    fewer.len(),
                    more.len()
                ),
                false,
            ),
        }
    }

    /// An input branch added that accepts a field selecting a target widens authority.
    fn target_branches(
        &mut self,
        key: &str,
        pointer: &str,
        x: Option<&Value>,
        y: Option<&Value>,
        added: &[usize],
        branches: &[Value],
    ) {
        let inner = added
            .iter()
            .find_map(|j| self.classifier.target_inside(&branches[*j]));
        if self.dir == Direction::Input
            && let Some(inner) = inner
        {
            self.push(
                Class::Authority,
                pointer,
                x,
                y,
                format!(
                    "a new `{key}` branch accepts `{inner}`, which selects a target or identity"
                ),
            );
        }
    }

    /// `$defs` entries are judged where they are used; one nothing uses is cosmetic.
    fn definitions(&mut self, pointer: &str, x: Option<&Value>, y: Option<&Value>) {
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

/// The canonical text of a value, to compare values regardless of member order.
fn canon(v: &Value) -> String {
    Json::from_value(v).canonical().unwrap_or_default()
}

/// What expanding `$ref`s found out about a schema.
#[derive(Default)]
struct Refs {
    /// `$ref` targets (pointers from the root) that some schema uses.
    used: HashSet<String>,
    /// Some reference could not be followed (an anchor, another document, a dynamic
    /// reference), so any definition may be in use.
    unresolved: bool,
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
fn expand_root(root: &Value, refs: &mut Refs) -> Option<Value> {
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
fn has_refs(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().any(has_refs),
        Value::Object(map) => {
            super::REFERENCES.iter().any(|k| map.contains_key(*k)) || map.values().any(has_refs)
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

    use super::super::{Class, Classifier};
    use crate::json::Json;

    fn findings(before: serde_json::Value, after: serde_json::Value) -> Vec<super::Finding> {
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

    fn mention_refs(found: &[super::Finding]) -> bool {
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
