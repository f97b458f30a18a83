//! What a change means for a caller: every difference between a pinned tool
//! definition and a live one becomes findings, each with a class, the JSON pointer it
//! concerns, the values before and after, and a one-line reason.
//!
//! Direction matters. An input schema says what the agent sends, so accepting less
//! breaks old calls; an output schema says what the agent reads, so producing more
//! breaks old readers. Where a precise answer is not possible the finding says so and
//! is classified as breaking, never as additive.

mod annotations;
mod dialect;
mod prune;
pub mod rewording;
mod schema;
mod surface;
mod text;

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::base::json::{Json, escape_pointer};
pub(crate) use annotations::Hints;
use annotations::{annotations, execution};
use prune::readable_pair;

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
                    header_marks(a, b, &mut out);
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

/// The keywords by which a schema refers to another.
pub(crate) const REFERENCES: [&str; 3] = ["$ref", "$dynamicRef", "$recursiveRef"];
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

/// A parameter mirrored into an HTTP header (`x-mcp-header`, the 2026-07-28
/// Streamable HTTP transport) has its values copied out of the body to where proxies,
/// gateways and their logs see them: a mark added or moved is authority, one removed
/// additive. Marks that break the transport's rules count as none (such a tool is
/// not offered over that transport at all).
fn header_marks(a: &Map<String, Value>, b: &Map<String, Value>, out: &mut Vec<Finding>) {
    use crate::base::protocol::headers::{Mirrored, mirrored_in};
    let marks = |m: &Map<String, Value>| -> Vec<Mirrored> {
        m.get("inputSchema")
            .and_then(|s| mirrored_in(s).ok())
            .unwrap_or_default()
    };
    let (was, now) = (marks(a), marks(b));
    let pointer = |m: &Mirrored| {
        let mut p = "/inputSchema".to_string();
        for key in &m.path {
            p.push_str("/properties/");
            p.push_str(&escape_pointer(key));
        }
        p + "/x-mcp-header"
    };
    let shown = |m: &Mirrored| Value::String(m.header.clone());
    for m in now.iter().filter(|m| !was.contains(m)) {
        out.push(Finding::new(
            Class::Authority,
            &pointer(m),
            was.iter().find(|w| w.path == m.path).map(shown).as_ref(),
            Some(&shown(m)),
            format!(
                "parameter {} is now sent in the HTTP header Mcp-Param-{}: its values reach proxies, gateways and their logs",
                m.path.join("."),
                m.header
            ),
        ));
    }
    for m in was.iter().filter(|m| !now.iter().any(|n| n.path == m.path)) {
        out.push(Finding::new(
            Class::Additive,
            &pointer(m),
            Some(&shown(m)),
            None,
            format!(
                "parameter {} is no longer sent in an HTTP header",
                m.path.join(".")
            ),
        ));
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

#[cfg(test)]
mod tests {
    use super::*;

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
