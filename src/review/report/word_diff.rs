//! Word-level diffs of text (descriptions, instructions), shortened around each
//! change to a budget.

use super::*;

/// A run of a word diff: text both sides share, or what one side has instead.
enum Piece {
    Same(String),
    Change { removed: String, added: String },
}

/// How a word diff marks its changes and escapes server text.
#[derive(Clone, Copy)]
enum Markup {
    /// `[-removed-]{+added+}`, coloured on a terminal; text escaped for it.
    Terminal,
    /// `<del>removed</del><ins>added</ins>`; text escaped for Markdown ([`md`]).
    Markdown,
}

/// A word-level diff on one line: `[-removed-]{+added+}`, coloured on a terminal.
/// Whitespace between two changed words joins them, so a reworded phrase reads whole.
/// Long unchanged runs are shortened to their ends around each change, and the whole
/// diff is cut after [`DIFF_CHARS`] characters with a count of what is left out.
pub fn word_diff(before: &str, after: &str) -> String {
    render_pieces(&pieces(before, after), Markup::Terminal)
}

/// The same diff as GitHub-flavoured Markdown, for a pull request's body: removed
/// words struck through (`<del>`), added ones underlined (`<ins>`), server text
/// escaped so it marks nothing up.
pub fn word_diff_markdown(before: &str, after: &str) -> String {
    render_pieces(&pieces(before, after), Markup::Markdown)
}

fn pieces(before: &str, after: &str) -> Vec<Piece> {
    use similar::ChangeTag;
    // Word diffs are quadratic at worst; a hostile description must not stall a run.
    let diff = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_millis(200))
        .diff_words(before, after);
    let tokens: Vec<(ChangeTag, &str)> = diff
        .iter_all_changes()
        .map(|c| (c.tag(), c.value()))
        .collect();
    let mut pieces = Vec::new();
    let (mut removed, mut added) = (String::new(), String::new());
    let flush = |removed: &mut String, added: &mut String, pieces: &mut Vec<Piece>| {
        if !removed.is_empty() || !added.is_empty() {
            pieces.push(Piece::Change {
                removed: std::mem::take(removed),
                added: std::mem::take(added),
            });
        }
    };
    for (i, (tag, text)) in tokens.iter().enumerate() {
        match tag {
            ChangeTag::Delete => removed.push_str(text),
            ChangeTag::Insert => added.push_str(text),
            ChangeTag::Equal => {
                let pending = !removed.is_empty() || !added.is_empty();
                let next_changes = tokens
                    .get(i + 1)
                    .is_some_and(|(t, _)| *t != ChangeTag::Equal);
                if pending && next_changes && text.trim().is_empty() {
                    removed.push_str(text);
                    added.push_str(text);
                } else {
                    flush(&mut removed, &mut added, &mut pieces);
                    match pieces.last_mut() {
                        Some(Piece::Same(same)) => same.push_str(text),
                        _ => pieces.push(Piece::Same(text.to_string())),
                    }
                }
            }
        }
    }
    flush(&mut removed, &mut added, &mut pieces);
    pieces
}

/// How much server text a word diff may still show, and how much it left out.
struct Budget {
    chars: usize,
    left_out: usize,
    markup: Markup,
}

impl Budget {
    /// As much of `text` as still fits, escaped; the rest is counted as left out.
    fn take(&mut self, text: &str) -> String {
        let (head, rest) = split_at_chars(text, self.chars);
        if rest == 0 {
            self.chars -= head.chars().count();
        } else {
            self.left_out += rest;
            self.chars = 0;
        }
        match self.markup {
            Markup::Terminal => esc(head),
            Markup::Markdown => markdown::md(head, usize::MAX),
        }
    }
}

fn render_pieces(pieces: &[Piece], markup: Markup) -> String {
    let (red, green, dim) = match markup {
        Markup::Terminal => (
            Style::new().fg_color(Some(AnsiColor::Red.into())),
            Style::new().fg_color(Some(AnsiColor::Green.into())),
            Style::new().dimmed(),
        ),
        Markup::Markdown => (Style::new(), Style::new(), Style::new()),
    };
    let (del, del_end, ins, ins_end) = match markup {
        Markup::Terminal => ("[-", "-]", "{+", "+}"),
        Markup::Markdown => ("<del>", "</del>", "<ins>", "</ins>"),
    };
    let mut budget = Budget {
        chars: DIFF_CHARS,
        left_out: 0,
        markup,
    };
    let mut out = String::new();
    let last = pieces.len().saturating_sub(1);
    for (i, piece) in pieces.iter().enumerate() {
        match piece {
            _ if budget.chars == 0 => {
                budget.left_out += match piece {
                    Piece::Same(text) => text.chars().count(),
                    Piece::Change { removed, added } => {
                        removed.chars().count() + added.chars().count()
                    }
                };
            }
            Piece::Same(text) => {
                let keep_head = if i == 0 { 0 } else { DIFF_CONTEXT };
                let keep_tail = if i == last { 0 } else { DIFF_CONTEXT };
                let chars = text.chars().count();
                // Worth shortening only when it saves more than the marker costs.
                if pieces.len() > 1 && chars > keep_head + keep_tail + 40 {
                    let head = head_of(text, keep_head);
                    let tail = tail_of(text, keep_tail);
                    let skipped = chars - head.chars().count() - tail.chars().count();
                    out.push_str(&budget.take(head));
                    if !head.is_empty() && !head.ends_with(char::is_whitespace) {
                        out.push(' ');
                    }
                    let _ = write!(out, "{dim}… ({skipped} unchanged characters) …{dim:#}");
                    if !tail.is_empty() && !tail.starts_with(char::is_whitespace) {
                        out.push(' ');
                    }
                    out.push_str(&budget.take(tail));
                } else {
                    out.push_str(&budget.take(text));
                }
            }
            Piece::Change { removed, added } => {
                let shown = budget.take(removed);
                if !shown.is_empty() {
                    let _ = write!(out, "{red}{del}{shown}{del_end}{red:#}");
                }
                let shown = budget.take(added);
                if !shown.is_empty() {
                    let _ = write!(out, "{green}{ins}{shown}{ins_end}{green:#}");
                }
            }
        }
    }
    if budget.left_out > 0 {
        out.push_str(&left_out(budget.left_out, "character"));
    }
    out
}

/// About the first `n` characters of `text`, ending at a word boundary when one is
/// near.
fn head_of(text: &str, n: usize) -> &str {
    let end = text.char_indices().nth(n).map_or(text.len(), |(i, _)| i);
    let head = &text[..end];
    match head.rfind(char::is_whitespace) {
        Some(space) if space >= end / 2 => &head[..space],
        _ => head,
    }
}

/// About the last `n` characters of `text`, starting at a word boundary when one is
/// near.
fn tail_of(text: &str, n: usize) -> &str {
    let chars = text.chars().count();
    let start = text
        .char_indices()
        .nth(chars.saturating_sub(n))
        .map_or(text.len(), |(i, _)| i);
    let tail = &text[start..];
    match tail.find(char::is_whitespace) {
        Some(space) if space <= tail.len() / 2 => &tail[space..],
        _ => tail,
    }
}
