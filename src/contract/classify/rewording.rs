//! Graded rewording: whether an edit to text the model reads can change what a call
//! means.
//!
//! Cosmetic only when every difference is one that cannot: whitespace, line breaks
//! and reflow, punctuation, capitalisation, Markdown markup, a typo fixed (a word
//! within one edit of the old one, neither a word that carries meaning), an article
//! added or dropped, a sentence moved. Everything else is semantic, and the finding
//! says why in words: a number, unit or limit changed; negation added or removed; a
//! modal verb or quantifier changed; a named field changed; a sentence added or
//! removed; a word replaced. When in doubt, semantic: a missed change of meaning is
//! worse than a stop.

use similar::{Algorithm, DiffOp, capture_diff_slices};

/// What an edit can do to a call's meaning, and why, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grade {
    /// Cannot change what a call means.
    Cosmetic(String),
    /// Can.
    Semantic(String),
}

/// Words that turn a statement around.
const NEGATIONS: &[&str] = &[
    "not",
    "no",
    "never",
    "none",
    "nor",
    "neither",
    "without",
    "cannot",
    "can't",
    "don't",
    "doesn't",
    "isn't",
    "aren't",
    "won't",
    "shouldn't",
    "mustn't",
    "didn't",
    "wasn't",
    "except",
    "unless",
    "nothing",
    "nobody",
    "non",
];

/// Modal verbs and quantifiers: what may, must or will happen, and to how much.
const MODALS: &[&str] = &[
    "may",
    "must",
    "should",
    "can",
    "could",
    "will",
    "would",
    "shall",
    "might",
    "need",
    "needs",
    "required",
    "optional",
    "always",
    "sometimes",
    "usually",
    "only",
    "all",
    "some",
    "any",
    "every",
    "each",
    "both",
    "either",
    "most",
    "least",
    "more",
    "less",
    "fewer",
    "many",
    "few",
    "several",
    "max",
    "maximum",
    "min",
    "minimum",
    "exactly",
    "approximately",
    "default",
    "defaults",
    "limit",
    "limits",
    "until",
    "within",
];

/// Units a number is counted in.
const UNITS: &[&str] = &[
    "ms",
    "millisecond",
    "milliseconds",
    "s",
    "sec",
    "second",
    "seconds",
    "min",
    "minute",
    "minutes",
    "h",
    "hour",
    "hours",
    "day",
    "days",
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "years",
    "b",
    "byte",
    "bytes",
    "kb",
    "kib",
    "mb",
    "mib",
    "gb",
    "gib",
    "tb",
    "character",
    "characters",
    "chars",
    "line",
    "lines",
    "page",
    "pages",
    "item",
    "items",
    "result",
    "results",
    "row",
    "rows",
    "token",
    "tokens",
    "word",
    "words",
    "percent",
    "%",
    "px",
    "pixels",
    "utc",
    "local",
];

/// JSON Schema's type names, which restate what the schema says whatever the text says.
const TYPE_WORDS: &[&str] = &[
    "string", "strings", "number", "numbers", "integer", "integers", "boolean", "booleans",
    "array", "arrays", "object", "objects", "null",
];

/// Words an edit may add or drop without changing a call.
const ARTICLES: &[&str] = &["a", "an", "the"];

/// Short common words a one-letter edit turns into another word, never a typo fix.
const COMMON: &[&str] = &[
    "form", "from", "now", "not", "on", "one", "in", "is", "it", "its", "of", "or", "our", "out",
    "to", "too", "two", "the", "then", "than", "them", "they", "their", "there", "these", "those",
    "this", "that", "what", "when", "where", "which", "while", "who", "how", "new", "old", "own",
    "get", "set", "put", "add", "use", "used", "user", "users", "read", "reads", "write", "writes",
    "file", "files", "find", "fine", "line", "list", "lists", "last", "lost", "most", "must",
    "may", "max", "min", "top", "tip", "id", "ids", "key", "keys", "row", "rows", "raw", "new",
    "few", "fee", "sum", "some", "same", "save", "safe", "send", "sent", "end", "and", "any", "an",
    "as", "at", "be", "by", "do", "does", "done", "go", "if", "me", "my", "no", "so", "up", "us",
    "we", "lock", "look", "link", "like", "live", "love", "move", "more", "make", "made", "name",
    "names", "page", "pages", "past", "path", "paths", "part", "port", "post", "host", "hosts",
    "cost", "cast", "case", "cause", "code", "mode", "node", "note", "body", "copy", "open",
    "over", "ever", "even", "each", "else", "also", "only", "into", "onto", "unto", "upon", "with",
    "will", "well", "wall", "want", "went", "data", "date", "time", "type", "tool", "tools",
    "text", "next", "test", "best", "less", "loss", "left", "lift", "true", "tree", "free", "full",
    "fill", "file",
];

/// A word or number as the model reads it: lower case, Markdown marks gone; numbers
/// keep their decimal point and sign.
fn tokens(text: &str) -> Vec<String> {
    // Link targets stay (a URL is a target); the brackets and parentheses go.
    let mut out = Vec::new();
    let mut word = String::new();
    let chars: Vec<char> = text.chars().collect();
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() {
            out.push(std::mem::take(word).to_lowercase());
        }
    };
    for (i, &c) in chars.iter().enumerate() {
        let next_is_digit = chars.get(i + 1).is_some_and(|n| n.is_ascii_digit());
        let prev_is_digit = i > 0 && chars[i - 1].is_ascii_digit();
        let keeps = c.is_alphanumeric()
            || c == '_'
            || c == '%'
            // 1.5, 10,000, -3: part of the number.
            || ((c == '.' || c == ',') && prev_is_digit && next_is_digit)
            || (c == '-' && next_is_digit && word.is_empty())
            // don't, can't: one word.
            || (c == '\'' && !word.is_empty() && chars.get(i + 1).is_some_and(|n| n.is_alphabetic()));
        if keeps {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// The sentences of a text, each as its tokens (empty ones dropped).
fn sentences(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        current.push(c);
        let ends = match c {
            '\n' => true,
            '.' | '!' | '?' | ';' => chars.get(i + 1).is_none_or(|n| n.is_whitespace()),
            _ => false,
        };
        if ends {
            out.push(tokens(&current));
            current.clear();
        }
    }
    out.push(tokens(&current));
    out.retain(|s| !s.is_empty());
    out
}

fn is_number(word: &str) -> bool {
    word.chars().any(|c| c.is_ascii_digit())
}

fn in_list(list: &[&str], word: &str) -> bool {
    list.contains(&word)
}

/// Optimal string alignment distance, stopping early past 2.
fn edits(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > 2 {
        return 3;
    }
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// Whether `new` fixes a typo in `old`: one edit apart (a swap of neighbours counts as
/// one), long enough that one edit rarely makes another word, neither a word that
/// carries meaning, not a plural or another ending of the same word.
fn typo_fixed(old: &str, new: &str) -> bool {
    let meaningful = |w: &str| {
        is_number(w)
            || in_list(NEGATIONS, w)
            || in_list(MODALS, w)
            || in_list(UNITS, w)
            || in_list(COMMON, w)
            || w.contains('_')
    };
    let shortest = old.chars().count().min(new.chars().count());
    let inflected = old.strip_suffix('s') == Some(new)
        || new.strip_suffix('s') == Some(old)
        || old.strip_suffix("ed").is_some() != new.strip_suffix("ed").is_some()
        || old.strip_suffix("ing").is_some() != new.strip_suffix("ing").is_some();
    shortest >= 4 && !meaningful(old) && !meaningful(new) && !inflected && edits(old, new) == 1
}

fn quote(words: &[String]) -> String {
    const MAX: usize = 8;
    let shown: Vec<&str> = words.iter().take(MAX).map(String::as_str).collect();
    let more = if words.len() > MAX { " …" } else { "" };
    format!("\"{}{more}\"", shown.join(" "))
}

/// Why one replaced run of words can change a call, if it can; `None` when the run
/// is a typo fix or an article, with the cosmetic reason put in `typos`.
fn judge_run(old: &[String], new: &[String], typos: &mut Vec<String>) -> Option<String> {
    fn any<'a>(words: &'a [String], list: &[&str]) -> Option<&'a str> {
        words.iter().find(|w| in_list(list, w)).map(String::as_str)
    }
    let numbers = |w: &[String]| {
        w.iter()
            .filter(|w| is_number(w))
            .cloned()
            .collect::<Vec<_>>()
    };
    let (n_old, n_new) = (numbers(old), numbers(new));
    if n_old != n_new {
        let shown = |n: &[String]| {
            const MAX: usize = 6;
            let more = if n.len() > MAX { " …" } else { "" };
            format!("{}{more}", n[..n.len().min(MAX)].join(" "))
        };
        return Some(match (n_old.is_empty(), n_new.is_empty()) {
            (false, false) => format!("number changed: {} → {}", shown(&n_old), shown(&n_new)),
            (true, false) => format!("number added: {}", shown(&n_new)),
            _ => format!("number removed: {}", shown(&n_old)),
        });
    }
    match (any(old, NEGATIONS), any(new, NEGATIONS)) {
        (None, Some(w)) => return Some(format!("negation added: \"{w}\"")),
        (Some(w), None) => return Some(format!("negation removed: \"{w}\"")),
        (Some(a), Some(b)) if a != b => {
            return Some(format!("negation changed: \"{a}\" → \"{b}\""));
        }
        _ => {}
    }
    if let Some(w) = any(old, UNITS).or(any(new, UNITS)) {
        return Some(format!(
            "unit changed near \"{w}\": {} → {}",
            quote(old),
            quote(new)
        ));
    }
    if let Some(w) = any(old, MODALS).or(any(new, MODALS)) {
        return Some(format!(
            "modal or quantifier changed (\"{w}\"): {} → {}",
            quote(old),
            quote(new)
        ));
    }
    // Articles alone, added or dropped.
    let content = |w: &[String]| w.iter().filter(|w| !in_list(ARTICLES, w)).count();
    if content(old) == 0 && content(new) == 0 {
        typos.push("article changed".into());
        return None;
    }
    // The same letters, split or joined: "filename" and "file name", "e-mail".
    if !old.is_empty() && old.concat() == new.concat() {
        typos.push(format!("spelling: {} → {}", old.join(" "), new.join(" ")));
        return None;
    }
    // Only the schema's own type named or dropped: "the input" → "the input string".
    let restates = |w: &[String]| {
        w.iter()
            .all(|w| in_list(ARTICLES, w) || in_list(TYPE_WORDS, w))
    };
    if (old.is_empty() && restates(new)) || (new.is_empty() && restates(old)) {
        typos.push(format!(
            "restates a type: {}",
            quote(if old.is_empty() { new } else { old })
        ));
        return None;
    }
    if old.len() == new.len() && old.iter().zip(new).all(|(a, b)| a == b || typo_fixed(a, b)) {
        for (a, b) in old.iter().zip(new).filter(|(a, b)| a != b) {
            typos.push(format!("typo fixed: {a} → {b}"));
        }
        return None;
    }
    if old.iter().chain(new).any(|w| w.contains('_')) {
        return Some(format!(
            "named field changed: {} → {}",
            quote(old),
            quote(new)
        ));
    }
    Some(match (old.is_empty(), new.is_empty()) {
        (true, _) => format!("words added: {}", quote(new)),
        (_, true) => format!("words removed: {}", quote(old)),
        _ => format!("reworded: {} → {}", quote(old), quote(new)),
    })
}

/// Words a sentence that only restates a schema may hold beside the schema's own
/// words (its field's name, its type, its enum values): "The region, one of eu or
/// us." A modal, negation, number or any other word makes it more than a restatement.
const RESTATING: &[&str] = &[
    "a",
    "an",
    "the",
    "value",
    "values",
    "field",
    "parameter",
    "param",
    "argument",
    "property",
    "input",
    "one",
    "of",
    "either",
    "or",
    "is",
    "as",
    "this",
];

/// The words a description of a schema field may restate without saying more than
/// the schema does: the field's name (whole, and split at `_`, `-` and case), its
/// types and its enum values, lower case.
pub fn schema_words(field: Option<&str>, enums: &[Option<&serde_json::Value>]) -> Vec<String> {
    let mut words = Vec::new();
    if let Some(name) = field {
        words.extend(tokens(name));
        let mut part = String::new();
        for c in name.chars() {
            if (c == '_' || c == '-' || c.is_uppercase()) && !part.is_empty() {
                words.push(std::mem::take(&mut part).to_lowercase());
            }
            if c.is_alphanumeric() {
                part.push(c);
            }
        }
        if !part.is_empty() {
            words.push(part.to_lowercase());
        }
    }
    for values in enums {
        let values = values.and_then(|e| e.as_array());
        for value in values.into_iter().flatten().take(64) {
            match value {
                serde_json::Value::String(s) => words.extend(tokens(s)),
                other => words.extend(tokens(&other.to_string())),
            }
        }
    }
    words.sort();
    words.dedup();
    words
}

/// Grades the edit from `was` to `now`.
pub fn grade(was: &str, now: &str) -> Grade {
    grade_in(was, now, &[])
}

/// [`grade`] for the description of a schema field whose own words (name, enum
/// values: [`schema_words`]) are `schema`: a sentence added or removed that holds only
/// those, type names and [`RESTATING`] words says nothing the schema does not.
pub fn grade_in(was: &str, now: &str, schema: &[String]) -> Grade {
    let (old, new) = (sentences(was), sentences(now));
    if !schema.is_empty() {
        let restates = |s: &Vec<String>| {
            s.iter().all(|w| {
                in_list(RESTATING, w) || in_list(TYPE_WORDS, w) || schema.iter().any(|x| x == w)
            })
        };
        let kept = |side: &[Vec<String>]| {
            let mut kept: Vec<Vec<String>> =
                side.iter().filter(|s| !restates(s)).cloned().collect();
            kept.sort();
            kept
        };
        let dropped: Vec<&Vec<String>> = old.iter().chain(&new).filter(|s| restates(s)).collect();
        let same_count = |s: &Vec<String>| {
            old.iter().filter(|o| *o == s).count() == new.iter().filter(|n| *n == s).count()
        };
        if !dropped.is_empty() && kept(&old) == kept(&new) && dropped.iter().any(|s| !same_count(s))
        {
            let changed = dropped
                .iter()
                .find(|s| !same_count(s))
                .expect("one differs");
            return Grade::Cosmetic(format!(
                "a sentence restating the schema: {}",
                quote(changed)
            ));
        }
    }
    if old == new {
        return Grade::Cosmetic(if was.split_whitespace().eq(now.split_whitespace()) {
            "whitespace and line breaks only".into()
        } else {
            "punctuation, capitalisation, Markdown or layout only".into()
        });
    }
    // A sentence moved is the same sentence: compare the sentences in sorted order
    // when both sides hold the same ones.
    let sorted = |s: &[Vec<String>]| {
        let mut s = s.to_vec();
        s.sort();
        s
    };
    if sorted(&old) == sorted(&new) {
        return Grade::Cosmetic("sentences moved, none changed".into());
    }
    let (flat_old, flat_new): (Vec<String>, Vec<String>) = (old.concat(), new.concat());
    if flat_old == flat_new {
        return Grade::Cosmetic("sentences split or joined, the words unchanged".into());
    }
    let mut typos = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, &flat_old, &flat_new) {
        let (a, b) = match op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete {
                old_index, old_len, ..
            } => (&flat_old[old_index..old_index + old_len], &flat_new[0..0]),
            DiffOp::Insert {
                new_index, new_len, ..
            } => (&flat_old[0..0], &flat_new[new_index..new_index + new_len]),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => (
                &flat_old[old_index..old_index + old_len],
                &flat_new[new_index..new_index + new_len],
            ),
        };
        if let Some(why) = judge_run(a, b, &mut typos) {
            return Grade::Semantic(why);
        }
    }
    typos.dedup();
    Grade::Cosmetic(if typos.is_empty() {
        "punctuation, capitalisation, Markdown or layout only".into()
    } else {
        typos.join(", ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosmetic(was: &str, now: &str) -> String {
        match grade(was, now) {
            Grade::Cosmetic(why) => why,
            Grade::Semantic(why) => panic!("{was:?} -> {now:?} graded semantic: {why}"),
        }
    }

    fn semantic(was: &str, now: &str) -> String {
        match grade(was, now) {
            Grade::Semantic(why) => why,
            Grade::Cosmetic(why) => panic!("{was:?} -> {now:?} graded cosmetic: {why}"),
        }
    }

    #[test]
    fn layout_punctuation_case_and_markdown_are_cosmetic() {
        cosmetic("Read a file.", "Read a file.\n");
        cosmetic("Read a  file from\nthe disk.", "Read a file from the disk.");
        cosmetic("Read a file", "Read a file.");
        cosmetic("read a file.", "Read a File.");
        cosmetic("Read a **file**.", "Read a `file`.");
        cosmetic("Lists tools. Reads pages.", "Reads pages. Lists tools.");
        cosmetic("Returns the results.", "Returns results.");
    }

    #[test]
    fn a_typo_fixed_is_cosmetic_and_says_so() {
        assert_eq!(
            cosmetic("Will recieve the payload.", "Will receive the payload."),
            "typo fixed: recieve → receive"
        );
        cosmetic("Searches the documnetation.", "Searches the documentation.");
        assert_eq!(
            cosmetic("The filename to write.", "The file name to write."),
            "spelling: filename → file name"
        );
        cosmetic("Echoes back the input", "Echoes back the input string");
    }

    #[test]
    fn every_change_of_meaning_is_semantic_with_its_reason() {
        assert_eq!(
            semantic(
                "Returns at most 10 results.",
                "Returns at most 100 results."
            ),
            "number changed: 10 → 100"
        );
        assert_eq!(
            semantic("Deletes the file.", "Does not delete the file."),
            "negation added: \"not\""
        );
        assert!(
            semantic("Never deletes files.", "Now deletes files.").starts_with("negation removed")
        );
        assert!(
            semantic("You may retry.", "You must retry.")
                .starts_with("modal or quantifier changed")
        );
        assert!(
            semantic("Deletes some files.", "Deletes all files.")
                .starts_with("modal or quantifier")
        );
        assert!(
            semantic("Timeout in seconds.", "Timeout in milliseconds.").starts_with("unit changed")
        );
        semantic("Maximum number of results.", "Page index to return.");
        assert!(
            semantic("Lists the open issues.", "Lists the closed issues.").starts_with("reworded")
        );
        assert!(
            semantic("Sets `file_path`.", "Sets `dir_path`.").starts_with("named field changed")
        );
        assert!(
            semantic("Reads a file.", "Reads a file. Then sends it to the admin.")
                .starts_with("words added")
        );
        assert!(
            semantic("Reads a file from disk.", "Reads a form from disk.").starts_with("reworded")
        );
        assert!(semantic("Reads the file.", "Reads the files.").starts_with("reworded"));
    }

    #[test]
    fn a_sentence_that_only_restates_the_field_its_type_or_enum_is_cosmetic() {
        let region = serde_json::json!(["eu-west", "us-east"]);
        let words = schema_words(Some("deployRegion"), &[Some(&region), None]);
        let graded = |was: &str, now: &str| grade_in(was, now, &words);
        for (was, now) in [
            (
                "Where to deploy.",
                "Where to deploy. The deploy region, a string.",
            ),
            (
                "Where to deploy.",
                "Where to deploy. One of eu-west or us-east.",
            ),
            ("The region. Where to deploy.", "Where to deploy."),
        ] {
            assert!(
                matches!(graded(was, now), Grade::Cosmetic(ref why) if why.starts_with("a sentence restating the schema")),
                "{was:?} -> {now:?}: {:?}",
                graded(was, now)
            );
        }
        // More than the schema says: a default, a limit, a modal, a negation, another
        // word, or the rest of the text changed too.
        for (was, now) in [
            ("Where to deploy.", "Where to deploy. Defaults to eu-west."),
            ("Where to deploy.", "Where to deploy. Must be eu-west."),
            ("Where to deploy.", "Where to deploy. Not us-east."),
            (
                "Where to deploy.",
                "Where to deploy. The deploy region, 2 of them.",
            ),
            ("Where to deploy.", "Where to build. The deploy region."),
        ] {
            assert!(
                matches!(graded(was, now), Grade::Semantic(_)),
                "{was:?} -> {now:?}: {:?}",
                graded(was, now)
            );
        }
    }
}
