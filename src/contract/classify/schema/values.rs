//! Keywords that bound single values: `type`, `enum`/`const`, numeric and length
//! bounds, `multipleOf`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::{Shift, Walk, canon};
use crate::contract::classify::Class;

impl Walk<'_> {
    pub(super) fn types(
        &mut self,
        pointer: &str,
        x: Option<&Value>,
        y: Option<&Value>,
        target: bool,
    ) {
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
    pub(super) fn values(
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

    pub(super) fn bound(
        &mut self,
        key: &str,
        pointer: &str,
        x: Option<&Value>,
        y: Option<&Value>,
        lower: bool,
        target: bool,
    ) {
        let num = |v: Option<&Value>| v.map(|v| v.as_f64());
        // JavaScript's largest safe integer (2^53 - 1), which schema generators write
        // for every integer field: no number a JSON client sends exactly lies beyond it.
        const SAFE: f64 = 9_007_199_254_740_991.0;
        let (shift, what) = match (num(x), num(y)) {
            (None, Some(Some(b)))
                if key.ends_with("imum") && (if lower { b <= -SAFE } else { b >= SAFE }) =>
            {
                return self.push(
                    Class::Cosmetic,
                    pointer,
                    x,
                    y,
                    format!(
                        "`{key}` {b} added: the limit of integers JSON numbers hold exactly, no real bound"
                    ),
                );
            }
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

    pub(super) fn multiple_of(
        &mut self,
        pointer: &str,
        x: Option<&Value>,
        y: Option<&Value>,
        target: bool,
    ) {
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
}
