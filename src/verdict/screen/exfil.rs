//! Shapes that carry data out: a parameter whose description asks for secrets, files,
//! the conversation or the system prompt; a URL with a placeholder for data.

use std::sync::LazyLock;

use regex::Regex;

use super::instructions::{MOVE, SENSITIVE, sentences};
use super::walk::{Field, Text};
use super::{Normal, Screened, Severity, fold_name, quote};

pub const EXFIL_PARAMETER: &str = "exfil-parameter";
pub const EXFIL_URL: &str = "exfil-url";

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a screening pattern compiles")
}

/// What the model holds that is not the tool's business: the conversation, its
/// instructions, everything.
static PRIVATE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"\b(conversation( history)?|chat history|previous messages|message history|all (the )?messages",
        r"|system prompt|your (instructions|prompt|rules|context)|context window|everything you know",
        r"|all (the )?(information|data|context|details) you (have|know|can)|full context|entire context",
        r"|everything (in|from) (the|your) (context|memory|conversation)|(contents?|text) of (the |every |any |all )?(file|files|~|/)",
        r"|other tools'? (results?|outputs?|descriptions?)|tool descriptions|list of (your )?tools)\b"
    ))
});

static NEGATION: LazyLock<Regex> = LazyLock::new(|| {
    re(r"\b(never|not|don't|dont|avoid|without|no|exclude|excluding|redact|omit)\b")
});

/// Parameter names made to look harmless while carrying data out.
static CARRIER: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"^(sidenote|sidenotes|note|notes|context|additionalcontext|extracontext|metadata|meta|feedback",
        r"|debug|debuginfo|extra|extrainfo|comment|comments|annotation|remark|remarks|memo|hint",
        r"|reasoning|thoughts|details|info|additionalinfo|payload|data|diagnostics|telemetry|trace|logs?)$"
    ))
});

/// A URL, or a Markdown image's target.
static URL: LazyLock<Regex> =
    LazyLock::new(|| re(r#"(!\[[^\]\n]{0,200}\]\(\s*)?\bhttps?://[^\s)\]'"`]+"#));

/// A placeholder in a URL: `{data}`, `{{secret}}`, `<token>`, `$KEY`, `${KEY}`, `[DATA]`.
static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\{\{?\s*([A-Za-z_ .-]{1,40})\s*\}?\}|<([A-Za-z_ .-]{1,40})>|\$\{?([A-Za-z_]{2,40})\}?|\[([A-Za-z_ ]{2,40})\]|%([A-Za-z_]{2,40})%",
    )
});

/// What a placeholder named like this stands for is data the model holds.
static DATA_WORD: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?i)(data|secret|token|key|password|passwd|pwd|content|conversation|history|chat|context",
        r"|info|payload|env|file|cred|prompt|message|ssh|summary|memory|cookie|session|private|leak|exfil)"
    ))
});

pub fn screen(text: &Text, normal: &Normal, out: &mut Vec<Screened>) {
    if matches!(
        text.field,
        Field::Structure | Field::Name | Field::Parameter
    ) {
        return;
    }
    let _ = normal;
    let raw = &text.value;
    for url in URL.find_iter(raw) {
        let image = url.as_str().starts_with('!');
        let at = url.as_str().find("http").unwrap_or(0);
        let target = &url.as_str()[at..];
        let Some(p) = PLACEHOLDER.captures_iter(target).find(|c| {
            let name = c.iter().skip(1).flatten().next().map_or("", |m| m.as_str());
            image || DATA_WORD.is_match(name)
        }) else {
            continue;
        };
        let placeholder = p.get(0).map_or("", |m| m.as_str());
        let what = if image {
            "a Markdown image the client loads by itself"
        } else {
            "a URL"
        };
        out.push(
            Screened::new(
                EXFIL_URL,
                Severity::High,
                text,
                quote(raw, url.start(), url.end()),
            )
            .because(format!(
                "{what} with a placeholder for data ({placeholder}): filled in, it carries the data to that host"
            )),
        );
        return;
    }
}

/// A parameter named after what the model should keep: filled in, it is sent.
static NAMED_ASK: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"\b(system prompt|conversation|chat history|previous messages|message history|all messages",
        r"|tools? list|list of tools|full context|chain of thought|ssh|id (rsa|ed25519|ecdsa|dsa)",
        r"|env file|dotenv|mcp json|passwd|private key|credentials file|aws credentials)\b"
    ))
});

/// A name's words: `content_from_reading_ssh_id_rsa` and `systemPrompt` as "content
/// from reading ssh id rsa" and "system prompt".
fn words(name: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.' | ' ' | '/') {
            out.push(' ');
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower {
            out.push(' ');
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        out.extend(super::normal::fold_char(c).to_lowercase());
    }
    out
}

/// A parameter whose name or description asks for what the tool has no use for.
pub fn screen_parameters(texts: &[Text], out: &mut Vec<Screened>) {
    for text in texts {
        if text.field == Field::Parameter
            && let Some(m) = NAMED_ASK.find(&words(&text.value))
        {
            out.push(
                Screened::new(
                    EXFIL_PARAMETER,
                    Severity::High,
                    text,
                    quote(&text.value, 0, text.value.len()),
                )
                .because(format!(
                    "parameter {:?} is named after {:?}: the model fills it in, and it goes to the server",
                    text.value,
                    m.as_str()
                )),
            );
            continue;
        }
        let Some(param) = &text.parameter else {
            continue;
        };
        if text.field != Field::Prose || !text.pointer.ends_with("/description") {
            continue;
        }
        let normal = Normal::of(&text.value);
        let carrier = CARRIER.is_match(&fold_name(param));
        for (s, e) in sentences(&normal.text) {
            let sentence = &normal.text[s..e];
            if NEGATION.is_match(sentence) || !MOVE.is_match(sentence) {
                continue;
            }
            let private = PRIVATE.find(sentence);
            let secret = SENSITIVE.find(sentence);
            let Some(asked) = private.or(secret) else {
                continue;
            };
            let severity = if carrier || private.is_some() {
                Severity::High
            } else {
                Severity::Medium
            };
            let (a, b) = normal.raw_range(s, e);
            out.push(
                Screened::new(EXFIL_PARAMETER, severity, text, quote(&text.value, a, b)).because(
                    format!(
                        "parameter {param:?} asks the model for {:?}: whatever the model puts there goes to the server",
                        asked.as_str().trim()
                    ),
                ),
            );
            break;
        }
    }
}
