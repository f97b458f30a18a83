//! `properties` and `required`: fields added, removed, made required or optional, and
//! a fixed-value input replaced by a free-form one.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::Walk;
use crate::base::json::escape_pointer;
use crate::contract::classify::{Class, Direction};

impl Walk<'_> {
    /// `properties` and `required` together.
    pub(super) fn object(
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
    pub(super) fn replacements(
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
}
