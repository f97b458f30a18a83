//! What a change means for a caller: every difference between a pinned tool
//! definition and a live one becomes findings, each with a class, the JSON pointer it
//! concerns, the values before and after, and a one-line reason.
//!
//! Direction matters. An input schema says what the agent sends, so accepting less
//! breaks old calls; an output schema says what the agent reads, so producing more
//! breaks old readers. Where a precise answer is not possible the finding says so and
//! is classified as breaking, never as additive.

mod dialect;
mod schema;
mod surface;
mod text;

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use std::collections::{HashMap, HashSet};

use crate::json::{Json, JsonStr, escape_pointer};

pub use surface::{canonical_except_key, is_template_rename, same_except_key};
pub use text::instruction_in;

/// What a change can do to a caller, least to most serious.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// Title, icons, `_meta`, order, whitespace, defaults written out: nothing a caller
    /// or the model acts on.
    Cosmetic,
    /// Old calls keep working and mean the same.
    Additive,
    /// Text the model reads changed while the shape did not: meaning may have moved.
    Semantic,
    /// An old call no longer validates or an old result no longer parses.
    Breaking,
    /// The change can widen what a call does or where it lands.
    Authority,
}

impl Class {
    pub const ALL: [Class; 5] = [
        Class::Authority,
        Class::Breaking,
        Class::Semantic,
        Class::Additive,
        Class::Cosmetic,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Class::Cosmetic => "cosmetic",
            Class::Additive => "additive",
            Class::Semantic => "semantic",
            Class::Breaking => "breaking",
            Class::Authority => "authority",
        }
    }

    pub fn parse(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing that changed, and what it means.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub class: Class,
    /// RFC 6901 pointer into the tool definition ("" for the whole tool).
    pub pointer: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
    pub reason: String,
    /// The live description newly tells the model what to do (read files, send data
    /// elsewhere, keep something from the user).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub instructs_model: bool,
}

/// Whether a schema describes what the agent sends or what it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Input,
    Output,
}

/// Words that make a field pick a target or identity, unless the policy says otherwise.
pub const DEFAULT_TARGET_FIELDS: &[&str] = &[
    "host",
    "hostname",
    "account",
    "environment",
    "env",
    "region",
    "tenant",
    "user",
    "username",
    "repository",
    "repo",
    "org",
    "organization",
    "project",
    "path",
    "url",
    "uri",
    "endpoint",
    "target",
    "cluster",
    "namespace",
    "workspace",
    "owner",
    "team",
];

/// Classifies changes; configured with the words that mark target fields.
#[derive(Debug, Clone)]
pub struct Classifier {
    /// Each entry split into words (`projectId` is `project`, `id`).
    targets: Vec<Vec<String>>,
}

impl Default for Classifier {
    fn default() -> Self {
        Classifier::with_target_fields(DEFAULT_TARGET_FIELDS.iter().copied())
    }
}

impl Classifier {
    pub fn with_target_fields<S: AsRef<str>>(words: impl IntoIterator<Item = S>) -> Self {
        Classifier {
            targets: words
                .into_iter()
                .map(|w| words_of(w.as_ref()))
                .filter(|w| !w.is_empty())
                .collect(),
        }
    }

    /// Whether a property name selects a target or identity: its words (split at
    /// case changes, digits and punctuation) contain a target entry's words, the last
    /// one possibly plural.
    pub fn is_target_field(&self, name: &str) -> bool {
        let words = words_of(name);
        self.targets.iter().any(|target| {
            words.windows(target.len()).any(|window| {
                let (last, rest) = target.split_last().expect("entries are not empty");
                let (word, before) = window.split_last().expect("same length");
                before == rest
                    && (word == last
                        || word.strip_suffix('s') == Some(last.as_str())
                        || word.strip_suffix("es") == Some(last.as_str()))
            })
        })
    }

    /// The first property name inside a schema (at any depth) that selects a target.
    pub fn target_inside(&self, schema: &serde_json::Value) -> Option<String> {
        fn walk(c: &Classifier, v: &Value, depth: usize) -> Option<String> {
            if depth > 64 {
                return None;
            }
            match v {
                Value::Object(m) => {
                    if let Some(Value::Object(props)) = m.get("properties") {
                        for (name, sub) in props {
                            if c.is_target_field(name) {
                                return Some(name.clone());
                            }
                            if let Some(found) = walk(c, sub, depth + 1) {
                                return Some(found);
                            }
                        }
                    }
                    m.iter()
                        .filter(|(k, _)| k.as_str() != "properties")
                        .find_map(|(_, sub)| walk(c, sub, depth + 1))
                }
                Value::Array(items) => items.iter().find_map(|i| walk(c, i, depth + 1)),
                _ => None,
            }
        }
        walk(self, schema, 0)
    }

    /// Every finding between a pinned and a live definition of the same tool.
    pub fn classify(&self, pinned: &Json, live: &Json) -> Vec<Finding> {
        let (a, b) = readable_pair(pinned, live);
        self.classify_read(&a, &b, pinned, live)
    }

    /// [`Classifier::classify`] of the definitions as read (`a`, `b`).
    fn classify_read(&self, a: &Value, b: &Value, pinned: &Json, live: &Json) -> Vec<Finding> {
        let empty = Map::new();
        let a = a.as_object().unwrap_or(&empty);
        let b = b.as_object().unwrap_or(&empty);
        let mut out = Vec::new();
        let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let (x, y) = (a.get(key), b.get(key));
            if x == y {
                continue;
            }
            let pointer = format!("/{}", escape_pointer(key));
            match key.as_str() {
                "description" => text::description(&pointer, x, y, &mut out),
                "title" | "icons" | "_meta" => {
                    text::inert(&pointer, &format!("`{key}`"), x, y, &mut out);
                }
                "annotations" => annotations(x, y, &mut out),
                "inputSchema" => {
                    schema::compare(self, Direction::Input, &pointer, x, y, &mut out);
                }
                "outputSchema" => match (x, y) {
                    (None, Some(_)) => out.push(Finding::new(
                        Class::Additive,
                        &pointer,
                        x,
                        y,
                        "results now declare structured content".into(),
                    )),
                    (Some(_), None) => out.push(Finding::new(
                        Class::Breaking,
                        &pointer,
                        x,
                        y,
                        "results no longer promise structured content; old readers of it break"
                            .into(),
                    )),
                    _ => schema::compare(self, Direction::Output, &pointer, x, y, &mut out),
                },
                "execution" => execution(x, y, &mut out),
                _ => out.push(Finding::new(
                    Class::Breaking,
                    &pointer,
                    x,
                    y,
                    format!(
                        "`{key}` is not a tool member the spec defines; its effect cannot be judged, so it is treated as breaking"
                    ),
                )),
            }
        }
        finish(pinned, live, out)
    }

    /// The finding for a tool the lock does not pin.
    pub fn tool_added(&self, live: &Json) -> Vec<Finding> {
        // Only the members read here are converted: a definition can be megabytes.
        let annotations = live.get("annotations").map(Json::to_value);
        let description = live.get("description").map(Json::to_value);
        let hints = Hints::of(annotations.as_ref().and_then(Value::as_object));
        let mut out = vec![Finding::new(
            Class::Additive,
            "",
            None,
            None,
            format!("new tool ({})", hints.summary()),
        )];
        if let Some(desc) = description.as_ref().and_then(Value::as_str)
            && let Some(phrase) = instruction_in(desc, "")
        {
            out.push(text::instructing(
                "/description",
                None,
                Some(&Value::String(desc.into())),
                format!("the description instructs the model ({phrase:?})"),
            ));
        }
        out
    }

    /// The finding for a pinned tool the server no longer lists.
    pub fn tool_removed(&self) -> Vec<Finding> {
        vec![Finding::new(
            Class::Breaking,
            "",
            None,
            None,
            "tool removed; calls to it now fail".into(),
        )]
    }
}

/// The two definitions as the classifier reads them. In input and output schemas of
/// at least [`PRUNE_FROM`] top-level properties, the properties that are the same on
/// both sides, and required on both or on neither, are left out of both: they cannot
/// change a finding, and a schema can hold a million of them (a finding about the
/// whole schema then shows it without them). Only schemas without references are pruned (a
/// `$ref` may point into the properties).
fn readable_pair(pinned: &Json, live: &Json) -> (Value, Value) {
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

/// The keywords by which a schema refers to another.
pub(crate) const REFERENCES: [&str; 3] = ["$ref", "$dynamicRef", "$recursiveRef"];

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

impl Finding {
    fn new(
        class: Class,
        pointer: &str,
        before: Option<&Value>,
        after: Option<&Value>,
        reason: String,
    ) -> Self {
        Finding {
            class,
            pointer: pointer.to_string(),
            before: before.cloned(),
            after: after.cloned(),
            reason,
            instructs_model: false,
        }
    }
}

/// Findings worst first (within a class, in the order the definition was walked),
/// and never none for two definitions that differ: when only member order or number
/// spelling differs in the parsed view, yet the hashes differ, that is said rather
/// than nothing.
pub(crate) fn finish(pinned: &Json, live: &Json, mut out: Vec<Finding>) -> Vec<Finding> {
    if out.is_empty() && pinned.canonical().ok() != live.canonical().ok() {
        out.push(Finding::new(
            Class::Breaking,
            "",
            None,
            None,
            "the definitions differ in a way that cannot be read back (repeated member names or invalid text); treated as breaking".into(),
        ));
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.class));
    out
}

/// The worst class among findings.
pub fn worst(findings: &[Finding]) -> Option<Class> {
    findings.iter().map(|f| f.class).max()
}

/// A name split into lowercase words at case changes (`AWSRegion` is `aws`,
/// `region`), digits and punctuation.
fn words_of(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut words = Vec::new();
    let mut word = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let boundary = i > 0 && {
            let p = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            !c.is_alphanumeric()
                || (p.is_lowercase() && c.is_uppercase())
                || (p.is_uppercase() && c.is_uppercase() && next_lower)
                || (p.is_alphabetic() != c.is_alphabetic())
        };
        if boundary && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Effective annotation hints: what a client must assume, with the spec's defaults.
/// A read-only tool is, in effect, neither destructive nor non-idempotent.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Hints {
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
}

impl Hints {
    fn of(annotations: Option<&Map<String, Value>>) -> Hints {
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

    fn summary(&self) -> String {
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
fn annotations(before: Option<&Value>, after: Option<&Value>, out: &mut Vec<Finding>) {
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
fn execution(before: Option<&Value>, after: Option<&Value>, out: &mut Vec<Finding>) {
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
    use super::*;

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

    #[test]
    fn target_fields_match_whole_words_and_plurals_only() {
        let c = Classifier::default();
        for name in [
            "region",
            "projectId",
            "target_region",
            "repoUrl",
            "HOST",
            "hosts",
            "user-name",
            "org2",
        ] {
            assert!(c.is_target_field(name), "{name}");
        }
        for name in [
            "original",
            "pathway",
            "query",
            "limit",
            "hostile",
            "users_count_x",
        ] {
            let expect = name == "users_count_x";
            assert_eq!(c.is_target_field(name), expect, "{name}");
        }
    }

    #[test]
    fn a_configured_list_replaces_the_default() {
        let c = Classifier::with_target_fields(["galaxy", "starSystem"]);
        assert!(c.is_target_field("galaxyName"));
        assert!(c.is_target_field("home_star_systems"));
        assert!(!c.is_target_field("star"));
        assert!(!c.is_target_field("region"));
    }

    #[test]
    fn acronyms_split_before_the_next_word() {
        assert_eq!(words_of("AWSRegion"), ["aws", "region"]);
        assert_eq!(words_of("APIEndpointURL"), ["api", "endpoint", "url"]);
        assert!(Classifier::default().is_target_field("AWSRegion"));
    }
}
