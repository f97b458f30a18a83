//! JSON with comments and trailing commas, as VS Code, Gemini CLI, Zed and opencode
//! accept it: a span-keeping scanner (for `wrap`, which edits bytes in place, and for
//! the line each entry starts on) and the stripping serde_json reads after.

use std::ops::Range;

use super::ConfigError;

/// Removes `//` and `/* */` comments, then trailing commas, outside strings.
pub(crate) fn strip_jsonc(text: &str) -> String {
    remove_trailing_commas(&remove_comments(text))
}

/// Copies `text`, asking `skip` at each char outside JSON strings how many chars to
/// drop there (0 keeps it).
fn filter_outside_strings(text: &str, mut skip: impl FnMut(&[char], usize) -> usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut in_string = false;
    while i < chars.len() {
        let c = chars[i];
        if in_string {
            out.push(c);
            if c == '\\' && i + 1 < chars.len() {
                out.push(chars[i + 1]);
                i += 1;
            } else if c == '"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        let n = skip(&chars, i);
        if n > 0 {
            // Keep line breaks so error positions still point at the right line.
            out.extend(chars[i..i + n].iter().filter(|&&c| c == '\n'));
            i += n;
            continue;
        }
        in_string = c == '"';
        out.push(c);
        i += 1;
    }
    out
}

fn remove_comments(text: &str) -> String {
    filter_outside_strings(text, |chars, i| match (chars[i], chars.get(i + 1)) {
        ('/', Some('/')) => chars[i..]
            .iter()
            .position(|&c| c == '\n')
            .unwrap_or(chars.len() - i),
        ('/', Some('*')) => chars[i + 2..]
            .windows(2)
            .position(|w| w == ['*', '/'])
            .map_or(chars.len() - i, |p| p + 4),
        _ => 0,
    })
}

fn remove_trailing_commas(text: &str) -> String {
    filter_outside_strings(text, |chars, i| {
        // Only a comma looks ahead: looking past every blank would be quadratic in a
        // long run of them.
        if chars[i] != ',' {
            return 0;
        }
        let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
        usize::from(matches!(next, Some('}' | ']')))
    })
}

/// Where the next token starts at or after `pos`: past whitespace and comments.
pub(crate) fn skip_trivia(text: &str, pos: usize) -> usize {
    let mut scanner = Scanner {
        text,
        path: "",
        pos,
    };
    // Only called between tokens of a document that scanned, so comments are closed.
    let _ = scanner.trivia();
    scanner.pos
}

/// A JSON value and the bytes it spans.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) span: Range<usize>,
    pub(crate) kind: Kind,
}

#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Object(Vec<Member>),
    Array(Vec<Node>),
    /// Decoded.
    String(String),
    /// A number, `true`, `false` or `null`, as written.
    Scalar,
}

#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub(crate) key: String,
    pub(crate) key_span: Range<usize>,
    pub(crate) value: Node,
}

impl Node {
    /// The value of an object's member; the last one when the name repeats.
    pub(crate) fn member(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Object(members) => members
                .iter()
                .rev()
                .find(|m| m.key == key)
                .map(|m| &m.value),
            _ => None,
        }
    }
}

/// Reads JSON with comments and trailing commas (what VS Code accepts), keeping the
/// byte span of every value.
pub(crate) struct Scanner<'t> {
    pub(crate) text: &'t str,
    pub(crate) path: &'t str,
    pub(crate) pos: usize,
}

/// Deeper than serde_json goes, so nothing it accepts is refused here.
const MAX_DEPTH: usize = 256;

impl Scanner<'_> {
    pub(crate) fn document(&mut self) -> Result<Node, ConfigError> {
        // A byte order mark is skipped, not removed: spans stay offsets into the text.
        if self.pos == 0 && self.text.starts_with('\u{feff}') {
            self.pos = '\u{feff}'.len_utf8();
        }
        let root = self.value(0)?;
        self.trivia()?;
        if self.pos < self.text.len() {
            return Err(self.error("trailing characters"));
        }
        Ok(root)
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    pub(crate) fn trivia(&mut self) -> Result<(), ConfigError> {
        loop {
            let rest = &self.text.as_bytes()[self.pos..];
            match rest {
                [b' ' | b'\t' | b'\n' | b'\r', ..] => self.pos += 1,
                [b'/', b'/', ..] => {
                    self.pos += rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())
                }
                [b'/', b'*', ..] => match self.text[self.pos + 2..].find("*/") {
                    Some(end) => self.pos += end + 4,
                    None => return Err(self.error("unclosed comment")),
                },
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, ConfigError> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        self.trivia()?;
        let start = self.pos;
        let kind = match self.peek() {
            Some(b'{') => {
                self.pos += 1;
                Kind::Object(self.members(depth)?)
            }
            Some(b'[') => {
                self.pos += 1;
                Kind::Array(self.items(depth)?)
            }
            Some(b'"') => Kind::String(self.string()?),
            Some(b) if b.is_ascii_alphanumeric() || b == b'-' => {
                while self
                    .peek()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
                {
                    self.pos += 1;
                }
                Kind::Scalar
            }
            _ => return Err(self.error("expected a value")),
        };
        Ok(Node {
            span: start..self.pos,
            kind,
        })
    }

    /// After `{`: members up to and including `}`.
    fn members(&mut self, depth: usize) -> Result<Vec<Member>, ConfigError> {
        let mut members = Vec::new();
        loop {
            self.trivia()?;
            match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(members);
                }
                Some(b'"') => {}
                _ => return Err(self.error("expected a member name or '}'")),
            }
            let key_start = self.pos;
            let key = self.string()?;
            let key_span = key_start..self.pos;
            self.trivia()?;
            if self.peek() != Some(b':') {
                return Err(self.error("expected ':'"));
            }
            self.pos += 1;
            let value = self.value(depth + 1)?;
            members.push(Member {
                key,
                key_span,
                value,
            });
            self.separator(b'}')?;
        }
    }

    /// After `[`: elements up to and including `]`.
    fn items(&mut self, depth: usize) -> Result<Vec<Node>, ConfigError> {
        let mut items = Vec::new();
        loop {
            self.trivia()?;
            if self.peek() == Some(b']') {
                self.pos += 1;
                return Ok(items);
            }
            items.push(self.value(depth + 1)?);
            self.separator(b']')?;
        }
    }

    /// A comma (a trailing one is allowed), or the closing bracket left for the caller.
    fn separator(&mut self, close: u8) -> Result<(), ConfigError> {
        self.trivia()?;
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(())
            }
            Some(b) if b == close => Ok(()),
            _ => Err(self.error(&format!("expected ',' or '{}'", close as char))),
        }
    }

    /// A string token, decoded by serde_json so escapes mean what they mean to clients.
    fn string(&mut self) -> Result<String, ConfigError> {
        let start = self.pos;
        self.pos += 1;
        loop {
            match self.peek() {
                None => return Err(self.error("unclosed string")),
                Some(b'\\') => self.pos += 2,
                Some(b'"') => break,
                Some(_) => self.pos += 1,
            }
        }
        self.pos += 1;
        serde_json::from_str(&self.text[start..self.pos])
            .map_err(|e| self.error(&format!("invalid string: {e}")))
    }

    fn error(&self, message: &str) -> ConfigError {
        let before = &self.text.as_bytes()[..self.pos.min(self.text.len())];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        ConfigError::Syntax {
            path: self.path.to_string(),
            line: before.iter().filter(|&&b| b == b'\n').count() + 1,
            column: before.len() - line_start + 1,
            language: "JSON",
            message: message.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> Node {
        Scanner {
            text,
            path: "t",
            pos: 0,
        }
        .document()
        .unwrap()
    }

    #[test]
    fn scanner_spans_cover_each_value_as_written() {
        let text = "{ // c\n \"a\": [ \"x\\u00e9\" , 12, /* ] */ true, ], \"b\": {\"c\": null,},}";
        let root = scan(text);
        let a = root.member("a").unwrap();
        assert_eq!(
            &text[a.span.clone()],
            "[ \"x\\u00e9\" , 12, /* ] */ true, ]"
        );
        let Kind::Array(items) = &a.kind else {
            panic!("an array")
        };
        let spans: Vec<&str> = items.iter().map(|n| &text[n.span.clone()]).collect();
        assert_eq!(spans, ["\"x\\u00e9\"", "12", "true"]);
        assert!(matches!(&items[0].kind, Kind::String(s) if s == "xé"));
        let c = root.member("b").and_then(|b| b.member("c")).unwrap();
        assert_eq!(&text[c.span.clone()], "null");
    }

    #[test]
    fn scanner_errors_point_at_line_and_column() {
        let err = Scanner {
            text: "{\n  \"a\": [1 2]\n}",
            path: "f.json",
            pos: 0,
        }
        .document()
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "f.json:2:11: not valid JSON: expected ',' or ']'"
        );
    }

    #[test]
    fn scanner_keeps_comment_markers_inside_strings() {
        let text = r#"{"a": "// not /* a comment", "b": "\"*/"}"#;
        let root = scan(text);
        assert!(matches!(&root.member("b").unwrap().kind, Kind::String(s) if s == "\"*/"));
    }
}
