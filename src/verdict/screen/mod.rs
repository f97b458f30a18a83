//! Screening: what a definition (a tool, prompt or resource template, as the server
//! listed it) says to the model, read before it is approved.
//!
//! Every string in the definition is screened, not only its description: titles,
//! parameter names, descriptions and titles at any depth of a schema, enum and const
//! values, defaults, examples. Four families of rules run on each
//! ([docs/screening.md](../../docs/screening.md) lists every rule):
//!
//! - instructions to the model beyond the tool's own job ([`instructions`]);
//! - invisible or misleading characters ([`chars`]);
//! - shadowing of another server's tools ([`shadowing`]), which needs a [`Context`];
//! - shapes that carry data out ([`exfil`]).
//!
//! The engine only reports; the policy decides what each severity does
//! (`screen-high`, `screen-medium`, `screen-low` in `[verify]`).

mod chars;
mod context;
mod exfil;
mod hidden;
mod instructions;
mod normal;
mod shadowing;
mod walk;

use std::collections::BTreeSet;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::base::action::Action;
use crate::contract::surface::Kind;

pub use context::Context;
pub use normal::{Normal, fold_name};
pub use walk::{Field, Text};

/// How sure a rule is that a definition works against the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Suspicious, and common in harmless servers too.
    Low,
    /// Suspicious; worth a look before approving.
    Medium,
    /// The definition clearly tries to make the model act against the user.
    High,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every rule id, with its severity (the one it reports at most) and what it catches:
/// the list docs/screening.md documents.
pub const RULES: &[(&str, &str)] = &[
    (
        instructions::SENSITIVE_READ,
        "tells the model to read or pass on secrets or private files",
    ),
    (
        instructions::CONCEALMENT,
        "tells the model to hide what it does from the user",
    ),
    (
        instructions::OVERRIDE,
        "tells the model to ignore or replace its instructions or system prompt",
    ),
    (
        instructions::OTHER_TOOL,
        "tells the model to call some other tool first or afterwards",
    ),
    (
        instructions::IMPORTANT_BLOCK,
        "an <IMPORTANT>-style block or a fake system/role marker addressed to the model",
    ),
    (
        instructions::RECIPIENT,
        "tells the model to send every message, mail or payment of a kind to a fixed address",
    ),
    (
        chars::TAG_CHARACTERS,
        "Unicode tag characters (U+E0000-E007F): text the user cannot see",
    ),
    (
        chars::BIDI_CONTROL,
        "bidirectional overrides or isolates that reorder what is shown",
    ),
    (chars::ZERO_WIDTH, "zero-width characters inside text"),
    (
        chars::CONTROL_CHARACTERS,
        "control characters, terminal escape sequences among them",
    ),
    (
        chars::CONFUSABLE_NAME,
        "a name mixing scripts, or with Cyrillic/Greek letters that look Latin",
    ),
    (
        shadowing::SHADOWING_INSTRUCTION,
        "tells the model how to use another server's tool",
    ),
    (
        shadowing::SHADOWING_NAME,
        "a tool name that imitates another server's tool name",
    ),
    (
        exfil::EXFIL_PARAMETER,
        "a parameter asking for secrets, files, the conversation or the system prompt",
    ),
    (
        exfil::EXFIL_URL,
        "a URL or Markdown image with a placeholder for data",
    ),
];

/// One thing screening found in a definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Screened {
    /// The rule's stable id (`sensitive-read`, `tag-characters`, ...).
    pub rule: &'static str,
    pub severity: Severity,
    /// RFC 6901 pointer of the string in the definition (of the property, for a
    /// property name).
    pub pointer: String,
    /// An excerpt around what matched, invisible and control characters escaped.
    pub quote: String,
    /// One line saying what it means.
    pub reason: String,
    /// The policy's `[screen] accept` names it: still reported, not counted.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub accepted: bool,
    /// What the policy does with it (set as the policy evaluates).
    pub action: Action,
}

impl Screened {
    fn new(rule: &'static str, severity: Severity, text: &Text, quote: String) -> Self {
        Screened {
            rule,
            severity,
            pointer: text.pointer.clone(),
            quote,
            reason: String::new(),
            accepted: false,
            action: Action::Allow,
        }
    }

    fn because(mut self, reason: impl Into<String>) -> Self {
        self.reason = reason.into();
        self
    }
}

/// The most findings kept for one definition (a hostile one could match everywhere).
pub const MAX_FINDINGS: usize = 64;

/// Screens one definition of `server`: every finding, worst first, then by pointer.
pub fn screen(kind: Kind, definition: &Value, server: &str, ctx: &Context) -> Vec<Screened> {
    let texts = walk::texts(kind, definition);
    let mut out = Vec::new();
    for text in &texts {
        chars::screen(text, &mut out);
        let normal = Normal::of(&text.value);
        instructions::screen(text, &normal, &mut out);
        exfil::screen(text, &normal, &mut out);
        shadowing::screen_text(text, &normal, server, ctx, &mut out);
    }
    if kind == Kind::Tool
        && let Some(name) = definition.get("name").and_then(Value::as_str)
    {
        shadowing::screen_name(name, server, ctx, &mut out);
    }
    exfil::screen_parameters(&texts, &mut out);
    // An order among the server's own tools is its own workflow ("call list_x first").
    if let Some(own) = ctx.tools_of(server) {
        out.retain(|f| {
            f.rule != instructions::OTHER_TOOL
                || !own
                    .iter()
                    .any(|t| t.len() >= 6 && f.quote.contains(t.as_str()))
        });
    }
    // One finding per rule and pointer: the first (they come in text order).
    let mut seen = BTreeSet::new();
    out.retain(|f| seen.insert((f.rule, f.pointer.clone())));
    out.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.pointer.cmp(&b.pointer))
            .then_with(|| a.rule.cmp(b.rule))
    });
    out.truncate(MAX_FINDINGS);
    out
}

/// The longest quote, in characters, on either side of what matched.
const QUOTE_SIDE: usize = 40;
/// The longest match shown whole.
const QUOTE_MATCH: usize = 120;

/// An excerpt of `raw` around the bytes `start..end`: a bounded window, with `…` where
/// it was cut, invisible and control characters escaped.
pub fn quote(raw: &str, start: usize, end: usize) -> String {
    let start = floor_char(raw, start.min(raw.len()));
    let end = floor_char(raw, end.min(raw.len())).max(start);
    let before: Vec<char> = raw[..start].chars().collect();
    let matched: Vec<char> = raw[start..end].chars().collect();
    let after: Vec<char> = raw[end..].chars().collect();
    let mut out = String::new();
    let from = before.len().saturating_sub(QUOTE_SIDE);
    if from > 0 {
        out.push('…');
    }
    out.extend(before[from..].iter().flat_map(|c| escape_char(*c)));
    if matched.len() > QUOTE_MATCH {
        let half = QUOTE_MATCH / 2;
        out.extend(matched[..half].iter().flat_map(|c| escape_char(*c)));
        out.push('…');
        out.extend(
            matched[matched.len() - half..]
                .iter()
                .flat_map(|c| escape_char(*c)),
        );
    } else {
        out.extend(matched.iter().flat_map(|c| escape_char(*c)));
    }
    let to = after.len().min(QUOTE_SIDE);
    out.extend(after[..to].iter().flat_map(|c| escape_char(*c)));
    if to < after.len() {
        out.push('…');
    }
    out
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A character as a quote shows it: itself, or `\u{E0041}` when it is invisible or a
/// control character; a line break as `\n`.
fn escape_char(c: char) -> Vec<char> {
    match c {
        '\n' => vec!['\\', 'n'],
        '\t' | ' ' => vec![' '],
        c if hidden::is_hidden(c) || c.is_control() => {
            format!("\\u{{{:X}}}", c as u32).chars().collect()
        }
        c => vec![c],
    }
}

/// `raw` escaped whole, as a quote shows it (bounded like a quote).
pub fn escaped(raw: &str) -> String {
    quote(raw, 0, raw.len())
}

/// `[screen]` of the policy file: findings a team looked at and accepted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScreenSettings {
    /// `SERVER/NAME:RULE-ID` entries; SERVER/NAME may hold `*` globs.
    pub accept: Vec<Accepted>,
    /// The other servers' tool names, for shadowing (filled by the caller).
    pub context: std::sync::Arc<Context>,
}

/// One `[screen] accept` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    pub definition: String,
    pub rule: String,
}

impl Accepted {
    /// Reads `SERVER/NAME:RULE-ID`, or says why not.
    pub fn parse(entry: &str) -> Result<Accepted, String> {
        let (definition, rule) = entry.rsplit_once(':').ok_or_else(|| {
            format!("{entry:?}: write an accepted finding as \"SERVER/NAME:RULE-ID\"")
        })?;
        if !definition.contains('/') {
            return Err(format!(
                "{entry:?}: write an accepted finding as \"SERVER/NAME:RULE-ID\""
            ));
        }
        if !RULES.iter().any(|(id, _)| *id == rule) {
            let ids: Vec<&str> = RULES.iter().map(|(id, _)| *id).collect();
            return Err(format!(
                "{entry:?}: {rule:?} is not a screening rule; use one of {}",
                ids.join(", ")
            ));
        }
        Ok(Accepted {
            definition: definition.to_string(),
            rule: rule.to_string(),
        })
    }

    /// Whether this entry accepts `rule` on the definition `name` of `server`.
    pub fn covers(&self, server: &str, name: &str, rule: &str) -> bool {
        self.rule == rule && glob(&self.definition, &format!("{server}/{name}"))
    }
}

/// `*` matches any run of characters (`/` too); everything else itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests;
