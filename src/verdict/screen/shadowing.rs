//! Shadowing: a definition that tells the model how to use another server's tool, or
//! a tool name that imitates another server's.

use std::sync::LazyLock;

use regex::Regex;

use super::context::deletions;
use super::instructions::sentences;
use super::normal::is_lookalike;
use super::walk::{Field, Text};
use super::{Context, Normal, Screened, Severity, fold_name, quote};

pub const SHADOWING_INSTRUCTION: &str = "shadowing-instruction";
pub const SHADOWING_NAME: &str = "shadowing-name";

/// Words that make a mention of a tool an instruction about it.
static CUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(must|always|never|instead|should|make sure|ensure|before|after|whenever|when|do not",
        r"|don't|important|only|required|require|change|set|add|send|redirect|replace|use|call)\b"
    ))
    .expect("a screening pattern compiles")
});

/// A name distinctive enough that a mention of it is a mention of that tool, not a
/// word ("search", "fetch" are both).
fn distinctive(name: &str) -> bool {
    let chars = name.chars().count();
    let separated = name.contains(['_', '-', '.']);
    let camel = name
        .chars()
        .zip(name.chars().skip(1))
        .any(|(a, b)| a.is_lowercase() && b.is_uppercase());
    chars >= 6 && (separated || camel) || chars >= 12
}

/// What a tool name is made of (`files.read`, `send-email`, `get_issue`).
fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')
}

pub fn screen_text(
    text: &Text,
    normal: &Normal,
    server: &str,
    ctx: &Context,
    out: &mut Vec<Screened>,
) {
    if matches!(
        text.field,
        Field::Structure | Field::Name | Field::Parameter
    ) {
        return;
    }
    let index = ctx.index();
    let bytes = normal.text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        // The next run of name characters: a word that may be a tool's name.
        let Some(start) = normal.text[at..].find(is_name_char).map(|i| at + i) else {
            return;
        };
        let end = normal.text[start..]
            .find(|c: char| !is_name_char(c))
            .map_or(normal.text.len(), |i| start + i);
        at = end;
        // A sentence's full stop, or a path's slash, is not part of the name.
        let word = normal.text[start..end].trim_matches(['.', '/', '-']);
        let Some(named) = index.lower.get(word) else {
            continue;
        };
        let Some((other, tool)) = named
            .iter()
            .find(|(s, t)| s != server && distinctive(t) && !ctx.owns(server, t))
        else {
            continue;
        };
        let Some((s, e)) = sentences(&normal.text)
            .into_iter()
            .find(|(s, e)| *s <= start && start < *e)
        else {
            continue;
        };
        if !CUE.is_match(&normal.text[s..e]) {
            continue;
        }
        let (a, b) = normal.raw_range(start, (end + 60).min(e));
        out.push(
            Screened::new(
                SHADOWING_INSTRUCTION,
                Severity::High,
                text,
                quote(&text.value, a, b),
            )
            .because(format!(
                "tells the model how to use {tool:?}, a tool of another server ({other})"
            )),
        );
        return;
    }
}

/// Levenshtein distance, bounded: `None` past `max`.
fn distance(a: &str, b: &str, max: usize) -> Option<usize> {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut row = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            row[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(row[j] + 1);
        }
        if row.iter().min().is_some_and(|m| *m > max) {
            return None;
        }
        prev = row;
    }
    prev.last().copied().filter(|d| *d <= max)
}

pub fn screen_name(name: &str, server: &str, ctx: &Context, out: &mut Vec<Screened>) {
    let text = Text {
        pointer: "/name".into(),
        field: Field::Name,
        value: name.to_string(),
        parameter: None,
    };
    let folded = fold_name(name);
    let disguised = name
        .chars()
        .any(|c| is_lookalike(c) || super::hidden::is_hidden(c));
    let index = ctx.index();
    let foreign = |(s, t): &&(String, String)| s != server && t != name && !ctx.owns(server, t);
    let same = index
        .folded
        .get(&folded)
        .into_iter()
        .flatten()
        .find(foreign);
    let near = || {
        if folded.chars().count() < 8 {
            return None;
        }
        let mut seen = std::collections::HashSet::new();
        for key in deletions(&folded) {
            for theirs in index.near.get(&key).into_iter().flatten() {
                if *theirs == folded || !seen.insert(theirs) {
                    continue;
                }
                // Another server's name first: the edit distance is the dearer test.
                let Some(found) = index.folded.get(theirs).into_iter().flatten().find(foreign)
                else {
                    continue;
                };
                if distance(&folded, theirs, 1).is_some() {
                    return Some(found);
                }
            }
        }
        None
    };
    let (severity, how, (other, tool)) = match same {
        Some(found) if disguised => (
            Severity::High,
            "written with lookalike or invisible characters",
            found,
        ),
        Some(found) => (
            Severity::Medium,
            "differing only in case or separators",
            found,
        ),
        None => match near() {
            Some(found) => (Severity::Medium, "one letter away", found),
            None => return,
        },
    };
    out.push(
        Screened::new(SHADOWING_NAME, severity, &text, quote(name, 0, name.len())).because(
            format!("the name imitates {tool:?} of another server ({other}), {how}"),
        ),
    );
}
