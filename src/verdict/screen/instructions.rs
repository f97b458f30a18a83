//! Text telling the model to do something outside the tool's own job.
//!
//! Not a phrase list only: each sentence of the normalised text is read for cues
//! (a directive addressed to the model, a sensitive target, a concealment or override
//! cue), and a rule fires on the combination. A negated directive ("never include
//! your API key") is advice to the model, not an instruction to leak.

use std::sync::LazyLock;

use regex::Regex;

use super::walk::{Field, Text};
use super::{Normal, Screened, Severity, quote};

pub const SENSITIVE_READ: &str = "sensitive-read";
pub const CONCEALMENT: &str = "concealment";
pub const OVERRIDE: &str = "instruction-override";
pub const OTHER_TOOL: &str = "call-order";
pub const IMPORTANT_BLOCK: &str = "important-block";
pub const RECIPIENT: &str = "recipient-override";

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a screening pattern compiles")
}

/// Secrets and private files a tool's description has no reason to send the model to.
pub static SENSITIVE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(~/\.ssh|\.ssh/|\bid_(rsa|dsa|ecdsa|ed25519)\b|\bprivate[ _-]?keys?\b|(^|[\s/'(])\.env\b",
        r"|/etc/(passwd|shadow)|\bcredentials?\b|\bapi[ _-]?keys?\b|\bsecret[ _-]?keys?\b|\bsecrets\b",
        r"|\bpasswords?\b|\b(access|auth|bearer|session|refresh|github|slack|npm)[ _-]?tokens?\b",
        r"|\bmcp\.json\b|claude_desktop_config|\.cursor/|\.aws/|\.npmrc|\.netrc|\.pypirc",
        r"|\.git-credentials|\.kube/config|\bkeychain\b|\bseed phrase|\bmnemonic\b|\bcookies\b",
        r"|\.config/gh\b|\bhosts\.yml\b|\b(oauth|personal access|gh|pat)[ _-]?tokens?\b|\bshell history\b",
        r"|\.bash_history|\.zsh_history|\benvironment variables\b|\bconfig(uration)? files?\b",
        r"|\b(conversation|chat|message) history\b|\bsystem prompt\b|\bprevious messages\b)"
    ))
});

/// Verbs that move data to the model or out: what a leak is asked with.
pub static MOVE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"\b(read|open|cat|load|access|get|fetch|retrieve|include|pass|send|provide|attach",
        r"|upload|copy|extract|collect|gather|dump|print|output|forward|put|insert|append",
        r"|paste|add|supply|give|submit|transmit|leak|exfiltrate|post|look up|grab)\b",
        r"|\b(read|open|get|cat|fetch|load)_[a-z_]+\b"
    ))
});

/// A directive addressed to the model.
static DIRECTIVE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"\b(you (must|should|need to|have to|will|shall|are required to|are to)|must|always",
        r"|make sure|be sure|ensure|remember to|mandatory|required to|it is (very |extremely |really )?",
        r"(important|critical|essential|crucial|vital)|before (using|calling|you|running|invoking)",
        r"|first|otherwise|(the )?(assistant|model|ai|llm|agent|claude) (must|should|needs to|has to|will)",
        r"|before (answering|responding|replying|doing anything)",
        r"|(note|message|instructions?|reminder|hint) (for|to) (the )?(assistant|model|ai|llm|agent|claude))\b"
    ))
});

/// An imperative at the start of a clause: "Read ~/.ssh/id_rsa and ...".
static IMPERATIVE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(^|[,:;>]\s*|\b(then|and|also|please|first|so)\s+)([a-z]+ly\s+)?(read|open|cat|load|access|fetch|retrieve",
        r"|include|pass|send|provide|attach|upload|copy|extract|collect|gather|dump|forward|put",
        r"|insert|append|paste|add|grab|look up)\b"
    ))
});

static NEGATION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(never|not|don't|dont|avoid|without|no|nor|exclude|excluding|redact|omit|cannot|can't)\b",
    )
});

static CONCEAL: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(\b(do not|don't|dont|never|must not|should not|shouldn't|without)\s+(ever\s+)?",
        r"(tell|telling|inform|informing|mention|mentioning|reveal|revealing|notify|notifying|alert",
        r"|alerting|disclose|disclosing|let|letting|say|saying|show|showing|explain|explaining",
        r"|share|sharing|bother|bothering)\b",
        r"[^.\n]{0,60}\b(the user|user|users|the human|them|anyone|that you|this|it)\b",
        r"|\b(secretly|covertly|surreptitiously|behind the user'?s back)\b",
        r"|\b(hide|hiding|conceal|concealing|keep)\b[^.\n]{0,40}\bfrom (the )?(user|human|them)\b",
        r"|\b(the )?(user|human|person|people)( (you are|you're) (helping|assisting|working (with|for)))? (must|should|will|may|can) (not|never) (know|see|notice|find out|be told|learn|hear)\b",
        r"|\bkeep (this|it|that|these)( [a-z]+){0,3} to yourself\b",
        r"|\b(user|human) (doesn't|does not|don't|do not) need to (know|see|be told)\b",
        r"|\bno need to (tell|inform|notify|alert|mention|ask|bother) (the )?(user|human)\b",
        r"|\bthis is (just )?an? (internal |)implementation detail\b)"
    ))
});

/// Moving data quietly: concealment when nothing plainer says so.
static QUIETLY: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"\b(quietly|silently|discreetly|invisibly) (forward|send|upload|copy|share|include|attach",
        r"|post|transmit|collect|pass|add)\b"
    ))
});

static OVERRIDE_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(\b(ignore|disregard|forget|override|bypass|overrule|supersede|replace)\b[^.\n]{0,50}",
        r"\b(previous|prior|earlier|above|preceding|all|other|any|your|system|original|existing|safety|user'?s?)\b",
        r"[^.\n]{0,30}\b(instructions?|prompts?|rules|guidelines|directions|directives|policies|guardrails|restrictions)\b",
        r"|\b(ignore|disregard|forget|override|bypass)\b[^.\n]{0,20}\b(instructions?|guidelines|rules|prompts?|directives)\b",
        r"[^.\n]{0,40}\b(earlier|previously|before|above|given|system|original)\b",
        r"|\byou are now\b|\bnew (system )?instructions\s*:|\bfrom now on,? you\b",
        r"|\b(ignore|disregard|forget)\b[^.\n]{0,20}\bwhat(ever)? (the )?(system|developer|user|operator)\b[^.\n]{0,30}\b(told|said|asked|says)\b",
        r"|\bfollow only (the )?(guidance|instructions|rules|directions) (in|of|from) this (tool|description)\b",
        r"|\byour (previous|prior|earlier|original) (rules|instructions|guidelines) (no longer|do not|don't) apply\b",
        r"|\b(these|the following) instructions (take|have) (precedence|priority)\b",
        r"|\btakes? precedence over (all |any )?(other|previous|your|system)\b)"
    ))
});

static BLOCK: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?i)(<\s*/?\s*(important|system|system[-_ ]?(prompt|message)|instructions?|admin|secret",
        r"|hidden|assistant|critical|mandatory|ai[-_ ]?only|model[-_ ]?only)\s*>",
        r"|\[\s*(system|inst|/inst|admin)\s*\]|<\|im_start\|>|<\|system\|>|^\s*(system|admin|developer)\s*:)"
    ))
});

static ORDER: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"\b(before|prior to|after|whenever|each time) (using|calling|running|invoking|executing) this (tool|function)\b",
        r"[^.\n]{0,80}\b(call|use|run|invoke|execute|read)\b",
        r"|\b(always|must|first) (call|use|run|invoke)\b[^.\n]{0,40}\b(tool|function)\b[^.\n]{0,30}\b(first|before|after|afterwards)\b"
    ))
});

static RECIPIENT_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"\b(all|every|any|each)\b[^.\n]{0,40}\b(emails?|messages?|mails?|payments?|transfers?|files?|requests?)\b",
        r"[^.\n]{0,60}\b(to|cc|bcc|recipient|forwarded|redirected)\b[^.\n]{0,20}",
        r"([a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}|\+?\d[\d ()-]{7,}\d|https?://)",
        r"|\b(always|also|must|should) (bcc|cc|blind[- ]copy|copy in)\b[^.\n]{0,20}[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}",
        r"|\b(change|replace|swap|set) the (recipient|address|to address|destination)\b[^.\n]{0,60}(to|with)\b[^.\n]{0,20}([a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}|https?://)"
    ))
});

/// Whether a negation governs the word at `at`: one of the few words before it.
pub fn negated_before(sentence: &str, at: usize) -> bool {
    let mut from = at.saturating_sub(24);
    while !sentence.is_char_boundary(from) {
        from -= 1;
    }
    NEGATION.is_match(&sentence[from..at])
}

/// A sentence that starts by sending something somewhere.
static SENDING: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\s*(send|forward|redirect|route|cc|bcc|copy|deliver)\b"));

/// The sentences of normalised text, as byte ranges.
pub fn sentences(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        let end = match b {
            b'\n' => true,
            b'.' | b'!' | b'?' => bytes.get(i + 1).is_none_or(|n| *n == b' ' || *n == b'\n'),
            _ => false,
        };
        if end {
            if i > start {
                out.push((start, i + 1));
            }
            start = i + 1;
        }
    }
    if start < text.len() {
        out.push((start, text.len()));
    }
    out
}

pub fn screen(text: &Text, normal: &Normal, out: &mut Vec<Screened>) {
    if matches!(text.field, Field::Structure) {
        return;
    }
    let raw = &text.value;
    let at = |start: usize, end: usize| {
        let (a, b) = normal.raw_range(start, end);
        quote(raw, a, b)
    };
    // A block or role marker addresses what it wraps to the model.
    let block = BLOCK.find(&normal.text);
    if let Some(m) = block {
        out.push(
            Screened::new(IMPORTANT_BLOCK, Severity::Medium, text, at(m.start(), m.end())).because(
                "a block or role marker addressed to the model, not to the person reading the definition",
            ),
        );
    }
    for (s, e) in sentences(&normal.text) {
        let sentence = &normal.text[s..e];
        // A verb that moves data, not negated just before it ("never include ...").
        let moving = MOVE
            .find_iter(sentence)
            .find(|m| !negated_before(sentence, m.start()));
        if let (Some(target), Some(verb)) = (SENSITIVE.find(sentence), moving)
            && (block.is_some() || DIRECTIVE.is_match(sentence) || IMPERATIVE.is_match(sentence))
        {
            let (from, to) = if verb.start() < target.start() {
                (verb.start(), target.end())
            } else {
                (target.start(), verb.end())
            };
            out.push(
                Screened::new(SENSITIVE_READ, Severity::High, text, at(s + from, s + to)).because(
                    format!(
                        "tells the model to read or pass on {:?}, which a tool's description has no reason to ask for",
                        target.as_str().trim()
                    ),
                ),
            );
        }
        if let Some(m) = CONCEAL.find(sentence).or_else(|| QUIETLY.find(sentence)) {
            out.push(
                Screened::new(
                    CONCEALMENT,
                    Severity::High,
                    text,
                    at(s + m.start(), s + m.end()),
                )
                .because("tells the model to hide what it does from the user"),
            );
        }
        if let Some(m) = OVERRIDE_RE.find(sentence) {
            out.push(
                Screened::new(
                    OVERRIDE,
                    Severity::High,
                    text,
                    at(s + m.start(), s + m.end()),
                )
                .because("tells the model to set aside its instructions or system prompt"),
            );
        }
        if let Some(m) = RECIPIENT_RE.find(sentence)
            && (DIRECTIVE.is_match(sentence)
                || sentence.contains("must be")
                || sentence.contains("instead of")
                || SENDING.is_match(sentence))
        {
            out.push(
                Screened::new(
                    RECIPIENT,
                    Severity::High,
                    text,
                    at(s + m.start(), s + m.end()),
                )
                .because("tells the model to send everything of a kind to a fixed recipient"),
            );
        }
        if let Some(m) = ORDER.find(sentence) {
            out.push(
                Screened::new(
                    OTHER_TOOL,
                    Severity::Low,
                    text,
                    at(s + m.start(), s + m.end()),
                )
                .because(
                    "tells the model to do something else before or after this tool; check what",
                ),
            );
        }
    }
}
