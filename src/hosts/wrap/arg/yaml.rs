//! The scalars of one server's entry in a Goose or Continue YAML config, with their
//! byte spans: enough of YAML to find a value in the usual block layout
//! (`extensions:` / `mcpServers:` at the top, one entry per key or list item, flow
//! sequences allowed inside). What this does not follow (a flow-style table, a quoted
//! scalar over several lines) is refused with a reason; anything it misreads is
//! caught by [`changed_only`](super::changed_only) reading the result again.

use std::ops::Range;

use super::Style;
use crate::servers::config::Shape;

/// A value scalar (not a key) as written.
#[derive(Debug)]
pub(super) struct Scalar {
    pub(super) span: Range<usize>,
    pub(super) style: Style,
    pub(super) value: String,
}

/// One line: where it starts, its text without the line break, its indentation.
struct Line<'t> {
    start: usize,
    text: &'t str,
    indent: usize,
}

impl Line<'_> {
    /// Blank or only a comment.
    fn is_empty(&self) -> bool {
        let t = self.text.trim_start();
        t.is_empty() || t.starts_with('#')
    }
}

/// The value scalars of every entry named `server` in the servers table (Goose's
/// `extensions:` map, Continue's `mcpServers:` list), in file order; `None` when
/// there is no such entry.
pub(super) fn scalars(
    text: &str,
    shape: Shape,
    server: &str,
) -> Result<Option<Vec<Scalar>>, String> {
    let table = match shape {
        Shape::Goose => "extensions",
        Shape::Continue => "mcpServers",
        _ => unreachable!("only Goose and Continue configs are YAML"),
    };
    let lines = lines(text);
    let head = lines
        .iter()
        .position(|l| l.indent == 0 && key_of(l.text) == Some(table))
        .ok_or_else(|| format!("no top-level {table}: line was found"))?;
    let after_key = lines[head].text.split_once(':').map_or("", |(_, v)| v);
    if !after_key.trim_start().is_empty() && !after_key.trim_start().starts_with('#') {
        return Err(format!(
            "{table}: is written in flow style, which mcp-lock does not edit"
        ));
    }
    let body: Vec<&Line> = lines[head + 1..]
        .iter()
        .filter(|l| !l.is_empty())
        .take_while(|l| l.indent > 0 || (shape == Shape::Continue && l.text.starts_with('-')))
        .collect();
    let Some(child_indent) = body.first().map(|l| l.indent) else {
        return Ok(None);
    };
    // Each entry: its first line and the lines up to the next at its indentation.
    let mut found = Vec::new();
    let starts: Vec<usize> = (0..body.len())
        .filter(|&i| body[i].indent == child_indent)
        .collect();
    for (n, &first) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(body.len());
        let entry = &body[first..end];
        let named = match shape {
            Shape::Goose => key_of(&entry[0].text[child_indent..]).map(unquote) == Some(server),
            _ => continue_name(entry, child_indent) == Some(server),
        };
        if named {
            found.push(entry);
        }
    }
    if found.is_empty() {
        return Ok(None);
    }
    let mut scalars = Vec::new();
    for entry in found {
        // The entry's lines as one slice of text: blank and comment lines between
        // hold no scalar and are skipped by the scanner too.
        let first = entry[0];
        let last = entry[entry.len() - 1];
        let span = first.start..last.start + last.text.len();
        scan(text, span, &mut scalars)?;
    }
    Ok(Some(scalars))
}

fn lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut start = usize::from(text.starts_with('\u{feff}')) * '\u{feff}'.len_utf8();
    for raw in text[start..].split_inclusive('\n') {
        let line = raw.trim_end_matches('\n').trim_end_matches('\r');
        out.push(Line {
            start,
            text: line,
            indent: line.len() - line.trim_start_matches(' ').len(),
        });
        start += raw.len();
    }
    out
}

/// The key of a `KEY: …` line (trimmed, quotes kept).
fn key_of(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let colon = t.find(": ").or_else(|| t.strip_suffix(':').map(str::len))?;
    Some(t[..colon].trim_end())
}

/// A key or value without its quotes.
fn unquote(s: &str) -> &str {
    let s = s.trim();
    ['"', '\'']
        .iter()
        .find_map(|q| s.strip_prefix(*q).and_then(|s| s.strip_suffix(*q)))
        .unwrap_or(s)
}

/// The `name:` of a Continue list item: on the `- ` line or a line of the item's
/// mapping below it.
fn continue_name<'t>(entry: &[&Line<'t>], dash: usize) -> Option<&'t str> {
    let first = entry[0].text[dash..].strip_prefix('-')?;
    let inner = dash + 1 + first.len() - first.trim_start().len();
    entry.iter().enumerate().find_map(|(i, line)| {
        let at = if i == 0 { inner } else { line.indent };
        if at != inner || line.text.len() < at {
            return None;
        }
        let value = line.text[at..].strip_prefix("name:")?;
        let value = value.split(" #").next().unwrap_or(value);
        Some(unquote(value))
    })
}

/// Appends the value scalars in `text[span]`.
fn scan(text: &str, span: Range<usize>, out: &mut Vec<Scalar>) -> Result<(), String> {
    let bytes = text.as_bytes();
    let end = span.end;
    let mut pos = span.start;
    let mut flow = 0usize;
    // Inside a `|` or `>` block scalar: the indentation of the line that opened it.
    let mut block: Option<usize> = None;
    let mut line_indent = 0;
    let at_line_start = |p: usize| p == span.start || bytes[p - 1] == b'\n';
    let space_or_end = |p: usize| p >= end || matches!(bytes[p], b' ' | b'\t' | b'\r' | b'\n');
    while pos < end {
        if at_line_start(pos) {
            line_indent = bytes[pos..end].iter().take_while(|&&b| b == b' ').count();
            let content = bytes[pos + line_indent..end]
                .first()
                .is_some_and(|&b| !matches!(b, b'\r' | b'\n'));
            if let Some(opener) = block {
                if !content || line_indent > opener {
                    pos = next_line(bytes, pos, end);
                    continue;
                }
                block = None;
            }
        }
        match bytes[pos] {
            b' ' | b'\t' | b'\r' | b'\n' => pos += 1,
            b'#' => pos = next_line(bytes, pos, end),
            b'-' | b'?' if flow == 0 && space_or_end(pos + 1) => pos += 1,
            b':' if space_or_end(pos + 1) || flow > 0 => pos += 1,
            b'[' | b'{' => {
                flow += 1;
                pos += 1;
            }
            b']' | b'}' => {
                flow = flow.saturating_sub(1);
                pos += 1;
            }
            b',' if flow > 0 => pos += 1,
            // Anchors, tags and aliases: skipped; an alias's value is elsewhere.
            b'&' | b'!' | b'*' => {
                while pos < end
                    && !space_or_end(pos)
                    && !(flow > 0 && b",[]{}".contains(&bytes[pos]))
                {
                    pos += 1;
                }
            }
            b'|' | b'>' if flow == 0 => {
                block = Some(line_indent);
                pos = next_line(bytes, pos, end);
            }
            quote @ (b'"' | b'\'') => {
                let close = closing_quote(bytes, pos, end, quote).ok_or_else(|| {
                    "a quoted value spans lines, which mcp-lock does not edit".to_string()
                })?;
                let token = &text[pos..=close];
                let value = match quote {
                    b'"' => serde_norway::from_str::<String>(token)
                        .map_err(|e| format!("cannot read {token}: {e}"))?,
                    _ => token[1..token.len() - 1].replace("''", "'"),
                };
                let style = match quote {
                    b'"' => Style::YamlDouble,
                    _ => Style::YamlSingle,
                };
                push_value(bytes, pos..close + 1, end, flow, style, value, out);
                pos = close + 1;
            }
            _ => {
                let start = pos;
                while pos < end {
                    let b = bytes[pos];
                    if matches!(b, b'\r' | b'\n')
                        || (b == b'#' && matches!(bytes[pos - 1], b' ' | b'\t'))
                        || (b == b':' && (space_or_end(pos + 1) || flow > 0))
                        || (flow > 0 && b",[]{}".contains(&b))
                    {
                        break;
                    }
                    pos += 1;
                }
                let token = text[start..pos].trim_end();
                let span = start..start + token.len();
                let value = token.to_string();
                push_value(bytes, span, end, flow, Style::YamlPlain, value, out);
            }
        }
    }
    Ok(())
}

/// Keeps a scalar unless a `:` follows it, which makes it a key.
fn push_value(
    bytes: &[u8],
    span: Range<usize>,
    end: usize,
    flow: usize,
    style: Style,
    value: String,
    out: &mut Vec<Scalar>,
) {
    let mut after = span.end;
    while after < end && matches!(bytes[after], b' ' | b'\t') {
        after += 1;
    }
    let is_key = after < end
        && bytes[after] == b':'
        && (after + 1 >= end
            || matches!(bytes[after + 1], b' ' | b'\t' | b'\r' | b'\n')
            || flow > 0);
    if !is_key {
        out.push(Scalar { span, style, value });
    }
}

/// The offset of the quote closing the one at `open`, on the same line.
fn closing_quote(bytes: &[u8], open: usize, end: usize, quote: u8) -> Option<usize> {
    let mut p = open + 1;
    while p < end && !matches!(bytes[p], b'\r' | b'\n') {
        match bytes[p] {
            b'\\' if quote == b'"' => p += 2,
            b'\'' if quote == b'\'' && bytes.get(p + 1) == Some(&b'\'') => p += 2,
            b if b == quote => return Some(p),
            _ => p += 1,
        }
    }
    None
}

fn next_line(bytes: &[u8], pos: usize, end: usize) -> usize {
    bytes[pos..end]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(end, |p| pos + p + 1)
}
