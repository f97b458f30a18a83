//! Secret values: every `env` value and every expanded `${VAR}`. They never reach the
//! lock, a report or a log: output is redacted, and a lock that would contain one is
//! refused.

use crate::json::Json;
use crate::text::escape_for_terminal;

/// The secret values of a run, with the escaped forms they take in JSON, Rust debug
/// strings and terminal-escaped text, so redaction finds them in every output.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    entries: Vec<Secret>,
}

#[derive(Debug, Clone)]
struct Secret {
    name: String,
    value: String,
    /// The value as it can appear in output, longest first.
    forms: Vec<String>,
}

impl Secrets {
    /// Values shorter than this are too likely to occur by chance to redact usefully
    /// ("1", "on", "dev").
    const MIN_REDACTED: usize = 4;
    /// Values shorter than this are redacted from output but too likely to occur in a
    /// definition by chance to refuse a lock over ("true", "info").
    const MIN_REFUSED: usize = 8;

    pub fn add(&mut self, name: &str, value: &str) {
        if value.chars().count() < Self::MIN_REDACTED
            || self.entries.iter().any(|e| e.value == value)
        {
            return;
        }
        let json = serde_json::to_string(value).expect("a string serializes");
        let json = json[1..json.len() - 1].to_string();
        let debug = format!("{value:?}");
        let debug = debug[1..debug.len() - 1].to_string();
        let mut forms = vec![
            value.to_string(),
            escape_for_terminal(value),
            escape_for_terminal(&json),
            json,
            debug,
        ];
        forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
        forms.dedup();
        self.entries.push(Secret {
            name: name.to_string(),
            value: value.to_string(),
            forms,
        });
        // Longest first, so a value that contains another is replaced whole.
        self.entries
            .sort_by_key(|e| std::cmp::Reverse(e.value.len()));
    }

    /// No secret to redact.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn extend(&mut self, other: &Secrets) {
        for e in &other.entries {
            self.add(&e.name, &e.value);
        }
    }

    /// The text with every secret, in any of its forms, replaced by `${NAME}`.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for e in &self.entries {
            for form in &e.forms {
                if out.contains(form.as_str()) {
                    out = out.replace(form.as_str(), &format!("${{{}}}", e.name));
                }
            }
        }
        out
    }

    /// Redacts, then keeps at most `max_chars` characters: the whole text is redacted
    /// before the cut, so the cut cannot leave part of a secret behind (as long as the
    /// text given is the whole line, or much longer than `max_chars`).
    pub fn redact_truncated(&self, text: &str, max_chars: usize) -> String {
        let redacted = self.redact(text);
        if redacted.chars().count() <= max_chars {
            return redacted;
        }
        let mut cut: String = redacted.chars().take(max_chars).collect();
        cut.push('…');
        cut
    }

    /// The name of a secret (of at least 8 characters) that occurs in any string or
    /// member name of the value, decoded: escaping cannot hide it.
    pub fn find_in_json(&self, value: &Json) -> Option<&str> {
        let mut found = None;
        visit_strings(value, &mut |s| {
            if found.is_none() {
                found = self
                    .entries
                    .iter()
                    .find(|e| {
                        e.value.chars().count() >= Self::MIN_REFUSED && s.contains(e.value.as_str())
                    })
                    .map(|e| e.name.as_str());
            }
        });
        found
    }
}

fn visit_strings(value: &Json, f: &mut impl FnMut(&str)) {
    match value {
        Json::String(s) => f(&s.to_string_lossy()),
        Json::Array(items) => items.iter().for_each(|v| visit_strings(v, f)),
        Json::Object(members) => {
            for (k, v) in members {
                f(&k.to_string_lossy());
                visit_strings(v, f);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets() -> Secrets {
        let mut s = Secrets::default();
        s.add("TOKEN", "pa\"ss\\word-123456");
        s
    }

    #[test]
    fn redacts_the_raw_and_escaped_forms() {
        let s = secrets();
        for text in [
            "x pa\"ss\\word-123456 y",
            r#"x pa\"ss\\word-123456 y"#,
            &format!("{:?}", "pa\"ss\\word-123456"),
        ] {
            assert!(s.redact(text).contains("${TOKEN}"), "{text}");
            assert!(!s.redact(text).contains("word-123456"), "{text}");
        }
    }

    #[test]
    fn a_cut_through_a_secret_leaves_none_of_it() {
        let s = secrets();
        let line = format!("{}pa\"ss\\word-123456 and more", "0".repeat(10));
        assert_eq!(s.redact_truncated(&line, 14), "0000000000${TO…");
        assert_eq!(s.redact_truncated("short", 14), "short");
    }

    #[test]
    fn finds_a_secret_inside_decoded_json_strings() {
        let s = secrets();
        let def = Json::parse(r#"{"name":"t","description":"key: pa\"ss\\word-123456"}"#).unwrap();
        assert_eq!(s.find_in_json(&def), Some("TOKEN"));
        let clean = Json::parse(r#"{"name":"t"}"#).unwrap();
        assert_eq!(s.find_in_json(&clean), None);
    }
}
