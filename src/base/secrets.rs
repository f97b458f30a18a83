//! Secret values, decided per server by one documented rule, and redacted structurally:
//! inside the strings that can carry them (server text, call arguments, config values),
//! before anything is serialised. mcp-lock's own words and the structure of its JSON
//! are never rewritten.
//!
//! Which values are secrets (docs/secrets.md says the same):
//! - every header value of a remote entry, and the credential after an auth scheme
//!   (`Bearer X` makes `X` a secret too);
//! - every value a `${VAR}` (or `${env:VAR}`) expands to, in any field, except the
//!   variables that name places rather than credentials ([`PLACE_VARIABLES`]);
//! - an `env` value written literally in the config when its name looks like a
//!   credential (a word such as TOKEN, SECRET, KEY, PASSWORD, AUTH, CREDENTIALS), when it
//!   starts like a well-known token (`ghp_`, `sk-`, …), or the password of a URL in it.
//!
//! Any other literal value (`"MODE": "stdio"`, a directory) is configuration, not a
//! secret. A secret under 4 characters is too likely to occur by chance to look for,
//! and is not treated as one.

use std::borrow::Cow;

use serde_json::Value;

use crate::base::json::{Json, JsonStr};

/// Variables that name places and people, not credentials: their values are paths
/// and names that servers echo in good faith.
pub const PLACE_VARIABLES: &[&str] = &[
    "workspaceFolder",
    "userHome",
    "HOME",
    "USER",
    "USERNAME",
    "LOGNAME",
    "PWD",
    "OLDPWD",
    "PATH",
    "SHELL",
    "TMPDIR",
    "TMP",
    "TEMP",
    "LANG",
    "TERM",
    "HOSTNAME",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
];

/// Words that make an `env` name a credential's name (whole words of the name).
const CREDENTIAL_WORDS: &[&str] = &[
    "TOKEN",
    "TOKENS",
    "SECRET",
    "SECRETS",
    "KEY",
    "KEYS",
    "APIKEY",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "PASSPHRASE",
    "AUTH",
    "AUTHORIZATION",
    "CREDENTIAL",
    "CREDENTIALS",
    "COOKIE",
    "SESSION",
    "PRIVATE",
    "PAT",
    "BEARER",
    "SIGNATURE",
];

/// Prefixes of well-known token formats.
const TOKEN_PREFIXES: &[&str] = &[
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "github_pat_",
    "glpat-",
    "sk-",
    "sk_live_",
    "rk_live_",
    "xoxb-",
    "xoxp-",
    "AKIA",
];

/// The secret values of one server (or of several, merged), with the escaped forms
/// they take inside raw server text.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    entries: Vec<Secret>,
}

#[derive(Debug, Clone)]
struct Secret {
    name: String,
    value: String,
    /// The value as it can appear in raw text (JSON-escaped among them), longest first.
    forms: Vec<String>,
}

impl Secrets {
    /// Secrets shorter than this are too likely to occur by chance to look for.
    pub const MIN_CHARS: usize = 4;
    /// Values shorter than this are redacted, but too likely to occur in a definition
    /// by chance to refuse a lock over.
    const MIN_REFUSED: usize = 8;

    /// The value a `${var}` expanded to, unless `var` names a place.
    pub fn add_variable(&mut self, var: &str, value: &str) {
        if !PLACE_VARIABLES.contains(&var) {
            self.add(var, value);
        }
    }

    /// A header's (expanded) value: always a secret, and so is the credential after an
    /// auth scheme.
    pub fn add_header(&mut self, name: &str, value: &str) {
        self.add(name, value);
        if let Some((scheme, credential)) = value.split_once(' ')
            && !scheme.is_empty()
            && scheme.chars().all(|c| c.is_ascii_alphabetic())
        {
            self.add(name, credential.trim());
        }
    }

    /// An `env` value written literally in the config: a secret when its name or its
    /// shape says it is a credential.
    pub fn add_literal_env(&mut self, name: &str, value: &str) {
        if is_credential_name(name) || TOKEN_PREFIXES.iter().any(|p| value.starts_with(p)) {
            self.add(name, value);
        }
        if let Some(password) = url_password(value) {
            self.add(name, password);
        }
    }

    /// A value known to be a secret, whatever it looks like (a call's credentials).
    pub fn add(&mut self, name: &str, value: &str) {
        if value.chars().count() < Self::MIN_CHARS || self.entries.iter().any(|e| e.value == value)
        {
            return;
        }
        let json = serde_json::to_string(value).expect("a string serializes");
        let json = json[1..json.len() - 1].to_string();
        let debug = format!("{value:?}");
        let debug = debug[1..debug.len() - 1].to_string();
        let mut forms = vec![value.to_string(), json, debug];
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

    /// Whether `value` is one of the secrets.
    pub fn contains_value(&self, value: &str) -> bool {
        self.entries.iter().any(|e| e.value == value)
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

    /// The names of the secrets, for tests and messages (values never leave).
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// One string that can carry a secret (server text, an argument, an error quoting
    /// either), with every secret in it replaced by `${NAME}`. Borrowed when clean.
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for e in &self.entries {
            for form in &e.forms {
                if out.contains(form.as_str()) {
                    out = Cow::Owned(out.replace(form.as_str(), &format!("${{{}}}", e.name)));
                }
            }
        }
        out
    }

    /// [`Secrets::redact_str`], owned.
    pub fn redact(&self, text: &str) -> String {
        self.redact_str(text).into_owned()
    }

    /// Redacts in place.
    pub fn redact_in_place(&self, text: &mut String) {
        if let Cow::Owned(clean) = self.redact_str(text) {
            *text = clean;
        }
    }

    /// Redacts, then keeps at most `max_chars` characters: the whole text is redacted
    /// before the cut, so the cut cannot leave part of a secret behind (as long as the
    /// text given is the whole line, or much longer than `max_chars`).
    pub fn redact_truncated(&self, text: &str, max_chars: usize) -> String {
        let redacted = self.redact_str(text);
        if redacted.chars().count() <= max_chars {
            return redacted.into_owned();
        }
        let mut cut: String = redacted.chars().take(max_chars).collect();
        cut.push('…');
        cut
    }

    /// Every string and member name inside a JSON value redacted, and a number whose
    /// digits hold a secret replaced by the redacted text; booleans, other numbers and
    /// the structure are left alone.
    pub fn redact_value(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => self.redact_in_place(s),
            // A secret of digits sent as a number: the number becomes its redaction.
            Value::Number(n) => {
                if let Cow::Owned(clean) = self.redact_str(&n.to_string()) {
                    *value = Value::String(clean);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_value(v)),
            Value::Object(members) => {
                let dirty = members
                    .keys()
                    .any(|k| matches!(self.redact_str(k), Cow::Owned(_)));
                if dirty {
                    let old = std::mem::take(members);
                    for (k, mut v) in old {
                        self.redact_value(&mut v);
                        members.insert(self.redact(&k), v);
                    }
                } else {
                    members.values_mut().for_each(|v| self.redact_value(v));
                }
            }
            _ => {}
        }
    }

    /// [`Secrets::redact_value`] on a copy, borrowed when nothing needs redacting.
    pub fn redacted_value<'a>(&self, value: &'a Value) -> Cow<'a, Value> {
        if self.is_empty() || !self.occurs_in_value(value) {
            return Cow::Borrowed(value);
        }
        let mut copy = value.clone();
        self.redact_value(&mut copy);
        Cow::Owned(copy)
    }

    fn occurs_in_value(&self, value: &Value) -> bool {
        match value {
            Value::String(s) => matches!(self.redact_str(s), Cow::Owned(_)),
            Value::Number(n) => matches!(self.redact_str(&n.to_string()), Cow::Owned(_)),
            Value::Array(items) => items.iter().any(|v| self.occurs_in_value(v)),
            Value::Object(members) => members.iter().any(|(k, v)| {
                matches!(self.redact_str(k), Cow::Owned(_)) || self.occurs_in_value(v)
            }),
            _ => false,
        }
    }

    /// Every string and member name inside a strict-reader JSON tree redacted (a lone
    /// surrogate stays as it came unless its string holds a secret).
    pub fn redact_json(&self, value: &mut Json) {
        if self.is_empty() {
            return;
        }
        let redact = |s: &mut JsonStr| {
            if let Cow::Owned(clean) = self.redact_str(&s.to_string_lossy()) {
                *s = JsonStr::from(clean.as_str());
            }
        };
        match value {
            Json::String(s) => redact(s),
            Json::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            Json::Object(members) => {
                for (k, v) in members {
                    redact(k);
                    self.redact_json(v);
                }
            }
            _ => {}
        }
    }

    /// Whether any secret occurs in a string or member name of the value.
    pub fn occurs_in_json(&self, value: &Json) -> bool {
        let mut found = false;
        if !self.is_empty() {
            visit_strings(value, &mut |s| {
                found = found || matches!(self.redact_str(s), Cow::Owned(_));
            });
        }
        found
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

/// Whether an `env` name reads as a credential's: one of its words (split at `_`,
/// `-`, `.` and lower-to-upper case changes) is a credential word.
pub fn is_credential_name(name: &str) -> bool {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            words.push(std::mem::take(&mut word));
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower {
            words.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        word.push(c.to_ascii_uppercase());
    }
    words.push(word);
    words.iter().any(|w| CREDENTIAL_WORDS.contains(&w.as_str()))
}

/// The password of a `scheme://user:password@host` URL.
fn url_password(value: &str) -> Option<&str> {
    let (_, rest) = value.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    let (_, password) = userinfo.split_once(':')?;
    Some(password)
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

/// Redacts text that arrives in pieces (a long line read a piece at a time): bytes
/// that could be the start of a secret the next piece completes are held back until
/// it does, or until the text ends, so that a secret cut by a piece boundary is
/// replaced whole. At each place the longest form found there is replaced.
pub struct PieceRedactor<'a> {
    secrets: &'a Secrets,
    /// The bytes any form starts with.
    first: [bool; 256],
    /// The longest form's length.
    longest: usize,
    held: Vec<u8>,
}

impl<'a> PieceRedactor<'a> {
    pub fn new(secrets: &'a Secrets) -> Self {
        let mut first = [false; 256];
        let mut longest = 0;
        for form in secrets.entries.iter().flat_map(|e| &e.forms) {
            first[usize::from(form.as_bytes()[0])] = true;
            longest = longest.max(form.len());
        }
        PieceRedactor {
            secrets,
            first,
            longest,
            held: Vec::new(),
        }
    }

    /// The next piece, redacted into `out`; `ends`: the text ends with it (the end of
    /// a line), so nothing is held back.
    pub fn push(&mut self, piece: &[u8], ends: bool, out: &mut Vec<u8>) {
        let mut text = std::mem::take(&mut self.held);
        text.extend_from_slice(piece);
        let (mut at, mut plain) = (0, 0);
        while at < text.len() {
            if !self.first[usize::from(text[at])] {
                at += 1;
                continue;
            }
            let rest = &text[at..];
            let forms = || {
                self.secrets
                    .entries
                    .iter()
                    .flat_map(|e| e.forms.iter().map(move |f| (f.as_bytes(), &e.name)))
            };
            if !ends
                && rest.len() < self.longest
                && forms().any(|(f, _)| f.len() > rest.len() && f.starts_with(rest))
            {
                // The next piece says whether this is a secret.
                break;
            }
            match forms()
                .filter(|(f, _)| rest.starts_with(f))
                .max_by_key(|(f, _)| f.len())
            {
                Some((form, name)) => {
                    out.extend_from_slice(&text[plain..at]);
                    out.extend_from_slice(format!("${{{name}}}").as_bytes());
                    at += form.len();
                    plain = at;
                }
                None => at += 1,
            }
        }
        out.extend_from_slice(&text[plain..at]);
        text.drain(..at);
        self.held = text;
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
    fn a_secret_cut_by_every_piece_boundary_is_still_redacted_whole() {
        let mut s = secrets();
        s.add("OTHER", "pa\"ss");
        let text = "x pa\"ss\\word-123456 y pa\"ss pa\"ss\\word-12 z pa\"ss\\word-123456";
        let want = s.redact(text);
        assert!(
            want.contains("${TOKEN}") && want.contains("${OTHER}"),
            "{want}"
        );
        for size in 1..text.len() {
            let mut redactor = PieceRedactor::new(&s);
            let mut out = Vec::new();
            let pieces: Vec<&[u8]> = text.as_bytes().chunks(size).collect();
            for (i, piece) in pieces.iter().enumerate() {
                redactor.push(piece, i + 1 == pieces.len(), &mut out);
            }
            assert_eq!(String::from_utf8(out).unwrap(), want, "pieces of {size}");
        }
        // Held back only while it could still be a secret, and never past the end.
        let mut redactor = PieceRedactor::new(&s);
        let mut out = Vec::new();
        redactor.push(b"abc pa", false, &mut out);
        assert_eq!(out, b"abc ");
        redactor.push(b"x", true, &mut out);
        assert_eq!(out, b"abc pax");
    }

    #[test]
    fn finds_a_secret_inside_decoded_json_strings() {
        let s = secrets();
        let def = Json::parse(r#"{"name":"t","description":"key: pa\"ss\\word-123456"}"#).unwrap();
        assert_eq!(s.find_in_json(&def), Some("TOKEN"));
        let clean = Json::parse(r#"{"name":"t"}"#).unwrap();
        assert_eq!(s.find_in_json(&clean), None);
    }

    #[test]
    fn literal_env_values_are_secrets_only_when_they_look_like_credentials() {
        let mut s = Secrets::default();
        s.add_literal_env("MODE", "stdio");
        s.add_literal_env("FLAG", "true");
        s.add_literal_env("ROOT_DIR", "/srv/data");
        assert!(s.is_empty(), "{:?}", s.names());
        s.add_literal_env("GITHUB_PERSONAL_ACCESS_TOKEN", "abcd1234");
        s.add_literal_env("braveApiKey", "BSAxyz987");
        s.add_literal_env("UPSTREAM", "ghp_0123456789");
        s.add_literal_env("DATABASE_URL", "postgres://me:hunter22@127.0.0.1/db");
        assert_eq!(
            s.redact("abcd1234 BSAxyz987 ghp_0123456789 postgres://me:hunter22@127.0.0.1/db"),
            "${GITHUB_PERSONAL_ACCESS_TOKEN} ${braveApiKey} ${UPSTREAM} postgres://me:${DATABASE_URL}@127.0.0.1/db"
        );
    }

    #[test]
    fn credential_names_are_matched_as_whole_words() {
        for name in [
            "API_KEY",
            "apiKey",
            "GITHUB_TOKEN",
            "DB_PASSWORD",
            "x-auth",
            "APIKEY",
        ] {
            assert!(is_credential_name(name), "{name}");
        }
        for name in [
            "MONKEY",
            "KEYBOARD_LAYOUT",
            "PASSAGE",
            "MODE",
            "TOKENIZER_PATH",
        ] {
            assert!(!is_credential_name(name), "{name}");
        }
    }

    #[test]
    fn place_variables_and_short_values_are_not_secrets() {
        let mut s = Secrets::default();
        s.add_variable("HOME", "/home/me");
        s.add_variable("workspaceFolder", "/srv/project");
        s.add_variable("LEVEL", "on");
        assert!(s.is_empty());
        s.add_variable("API", "value-of-api");
        assert_eq!(s.names(), ["API"]);
    }

    #[test]
    fn a_bearer_headers_credential_is_a_secret_on_its_own() {
        let mut s = Secrets::default();
        s.add_header("Authorization", "Bearer tok-123456");
        assert_eq!(s.redact("got tok-123456"), "got ${Authorization}");
    }

    #[test]
    fn redacting_json_keeps_its_structure() {
        let mut s = Secrets::default();
        s.add("TOKEN", "true");
        s.add("KEY", "s3cr3t-value");
        let mut v: Value =
            serde_json::json!({"pinned": true, "a": ["x s3cr3t-value", 1], "s3cr3t-value": "true"});
        s.redact_value(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"pinned": true, "a": ["x ${KEY}", 1], "${KEY}": "${TOKEN}"})
        );
        let clean = serde_json::json!({"a": 1});
        assert!(matches!(s.redacted_value(&clean), Cow::Borrowed(_)));
    }

    #[test]
    fn a_secret_of_digits_sent_as_a_number_is_redacted() {
        let mut s = Secrets::default();
        s.add("PIN", "48151623");
        let pin = serde_json::json!({"pin": 48151623, "n": 7});
        assert_eq!(
            s.redacted_value(&pin).into_owned(),
            serde_json::json!({"pin": "${PIN}", "n": 7})
        );
    }
}
