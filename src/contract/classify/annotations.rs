//! Annotations and `execution`: what a tool promises about its effects, and whether
//! it may or must be called as a task, each compared by effective value.

use serde_json::{Map, Value};

use super::{Class, Finding, text};
use crate::base::json::escape_pointer;

/// Effective annotation hints: what a client must assume, with the spec's defaults.
/// A read-only tool is, in effect, neither destructive nor non-idempotent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Hints {
    pub(crate) read_only: bool,
    pub(crate) destructive: bool,
    pub(crate) idempotent: bool,
    pub(crate) open_world: bool,
}

impl Hints {
    pub(crate) fn of(annotations: Option<&Map<String, Value>>) -> Hints {
        let flag = |name: &str, default: bool| {
            annotations
                .and_then(|a| a.get(name))
                .and_then(Value::as_bool)
                .unwrap_or(default)
        };
        let read_only = flag("readOnlyHint", false);
        Hints {
            read_only,
            destructive: !read_only && flag("destructiveHint", true),
            idempotent: read_only || flag("idempotentHint", false),
            open_world: flag("openWorldHint", true),
        }
    }

    pub(super) fn summary(&self) -> String {
        let mut parts = vec![if self.read_only {
            "read-only"
        } else {
            "may modify"
        }];
        if self.destructive {
            parts.push("destructive");
        }
        if !self.idempotent {
            parts.push("not idempotent");
        }
        parts.push(if self.open_world {
            "open world"
        } else {
            "closed world"
        });
        parts.join(", ")
    }
}

/// Annotations by effective value: a flip toward danger is authority, toward safety
/// additive; spelling out a default is cosmetic.
pub(super) fn annotations(before: Option<&Value>, after: Option<&Value>, out: &mut Vec<Finding>) {
    let empty = Map::new();
    let a = before.and_then(Value::as_object).unwrap_or(&empty);
    let b = after.and_then(Value::as_object).unwrap_or(&empty);
    let (ea, eb) = (Hints::of(Some(a)), Hints::of(Some(b)));
    // (member, effective before, after, whether `true` is the dangerous value, what it means)
    let hints = [
        (
            "readOnlyHint",
            ea.read_only,
            eb.read_only,
            false,
            "calls may now modify its environment",
        ),
        (
            "destructiveHint",
            ea.destructive,
            eb.destructive,
            true,
            "calls may now perform destructive updates",
        ),
        (
            "idempotentHint",
            ea.idempotent,
            eb.idempotent,
            false,
            "repeating a call may now have additional effect",
        ),
        (
            "openWorldHint",
            ea.open_world,
            eb.open_world,
            true,
            "calls may now reach an open world of external entities",
        ),
    ];
    for (name, was, now, danger, meaning) in hints {
        let pointer = format!("/annotations/{name}");
        let (x, y) = (a.get(name), b.get(name));
        if was != now {
            let why = if x == y && name != "readOnlyHint" {
                " (it follows readOnlyHint)"
            } else {
                ""
            };
            // The member itself did not change (it follows another): show what it
            // effectively was and is, not "(absent)" twice.
            let (shown_was, shown_now) = (Value::Bool(was), Value::Bool(now));
            let (x, y) = if x == y {
                (Some(&shown_was), Some(&shown_now))
            } else {
                (x, y)
            };
            let finding = if now == danger {
                Finding::new(
                    Class::Authority,
                    &pointer,
                    x,
                    y,
                    format!("{name} is now effectively {now}{why}: {meaning}"),
                )
            } else {
                Finding::new(
                    Class::Additive,
                    &pointer,
                    x,
                    y,
                    format!("{name} is now effectively {now}{why}, a safer promise"),
                )
            };
            out.push(finding);
        } else if x != y {
            out.push(Finding::new(
                Class::Cosmetic,
                &pointer,
                x,
                y,
                format!("{name} written differently, same effective value ({now})"),
            ));
        }
    }
    let mut rest: Vec<&String> = a.keys().chain(b.keys()).collect();
    rest.sort();
    rest.dedup();
    for key in rest {
        let (x, y) = (a.get(key), b.get(key));
        if x == y
            || matches!(
                key.as_str(),
                "readOnlyHint" | "destructiveHint" | "idempotentHint" | "openWorldHint"
            )
        {
            continue;
        }
        let pointer = format!("/annotations/{}", escape_pointer(key));
        if key == "title" {
            text::inert(&pointer, "annotation title", x, y, out);
            continue;
        }
        out.push({
            Finding::new(
                Class::Semantic,
                &pointer,
                x,
                y,
                format!("annotation `{key}` is not one the spec defines; clients may read it"),
            )
        });
    }
    if before.is_some_and(|v| !v.is_object()) || after.is_some_and(|v| !v.is_object()) {
        out.push(Finding::new(
            Class::Breaking,
            "/annotations",
            before,
            after,
            "annotations is not an object; read as the defaults, treated as breaking".into(),
        ));
    }
}

/// `execution.taskSupport`: requiring tasks breaks callers that do not use them, and
/// forbidding them breaks callers that do.
pub(super) fn execution(before: Option<&Value>, after: Option<&Value>, out: &mut Vec<Finding>) {
    let understood = |v: Option<&Value>| match v {
        None => true,
        Some(Value::Object(m)) => m
            .get("taskSupport")
            .is_none_or(|t| matches!(t.as_str(), Some("forbidden" | "optional" | "required"))),
        Some(_) => false,
    };
    if !understood(before) || !understood(after) {
        out.push(Finding::new(
            Class::Breaking,
            "/execution",
            before,
            after,
            "`execution` is not in a form the spec defines; treated as breaking".into(),
        ));
        return;
    }
    let support = |v: Option<&Value>| {
        v.and_then(|e| e.get("taskSupport"))
            .and_then(Value::as_str)
            .unwrap_or("forbidden")
            .to_string()
    };
    let (was, now) = (support(before), support(after));
    let strip = |v: Option<&Value>| {
        v.and_then(Value::as_object).map(|m| {
            let mut m = m.clone();
            m.remove("taskSupport");
            m
        })
    };
    if was != now {
        let pointer = "/execution/taskSupport";
        let (x, y) = (
            before.and_then(|e| e.get("taskSupport")),
            after.and_then(|e| e.get("taskSupport")),
        );
        let widened = matches!(
            (was.as_str(), now.as_str()),
            ("forbidden", "optional") | ("required", "optional")
        );
        out.push(if widened {
            Finding::new(
                Class::Additive,
                pointer,
                x,
                y,
                format!("task support {was} -> {now}: every old way of calling still works"),
            )
        } else {
            Finding::new(
                Class::Breaking,
                pointer,
                x,
                y,
                format!("task support {was} -> {now}: some old calls are now refused"),
            )
        });
    }
    if strip(before).unwrap_or_default() != strip(after).unwrap_or_default() {
        out.push(Finding::new(
            Class::Breaking,
            "/execution",
            before,
            after,
            "`execution` changed in a way mcp-lock does not know; treated as breaking".into(),
        ));
    } else if was == now {
        out.push(Finding::new(
            Class::Cosmetic,
            "/execution",
            before,
            after,
            format!("task support written differently, same effective value ({now})"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use crate::base::json::Json;
    use crate::contract::classify::Classifier;

    #[test]
    fn a_hint_that_follows_another_shows_its_effective_values_not_absent_twice() {
        let tool = |annotations: Value| {
            Json::from_value(&serde_json::json!({"name": "t", "annotations": annotations}))
        };
        let findings = Classifier::default().classify(
            &tool(serde_json::json!({"readOnlyHint": true})),
            &tool(serde_json::json!({"readOnlyHint": false})),
        );
        let destructive = findings
            .iter()
            .find(|f| f.pointer == "/annotations/destructiveHint")
            .expect("destructiveHint follows readOnlyHint");
        assert_eq!(destructive.before, Some(Value::Bool(false)));
        assert_eq!(destructive.after, Some(Value::Bool(true)));
        assert!(destructive.reason.contains("(it follows readOnlyHint)"));
    }
}
