//! How deep a YAML text nests, told from its bytes before the parser reads it: the
//! YAML parser takes time quadratic in the depth of nesting before its own recursion
//! limit refuses it, so a file of a hundred thousand `[` would hold every command for
//! minutes.

/// Deeper than the YAML parser goes (128), so nothing it accepts is refused here.
pub const MAX_YAML_DEPTH: usize = 256;

/// The 1-based line and column where `text` first nests deeper than `max`, counting
/// flow collections (`[`, `{`) and block nesting (each indentation level, each `- `
/// or `? ` of a compact item). Quoted scalars, comments and block scalars (`|`, `>`)
/// are skipped, so brackets in text do not count; the count can only err low, which
/// leaves the verdict to the parser.
pub fn yaml_too_deep(text: &str, max: usize) -> Option<(usize, usize)> {
    let mut flow = 0usize;
    // Columns of the block nodes open above the current line.
    let mut block: Vec<usize> = Vec::new();
    // Inside a block scalar: lines indented more than this column are its text.
    let mut literal_above: Option<usize> = None;
    // Inside a quoted scalar that spans lines.
    let mut quote: Option<u8> = None;
    for (number, line) in text.split('\n').enumerate() {
        let bytes = line.as_bytes();
        let indent = bytes.iter().take_while(|&&b| b == b' ').count();
        if let Some(above) = literal_above {
            if indent > above || line.trim().is_empty() {
                continue;
            }
            literal_above = None;
        }
        let mut i = indent;
        if flow == 0 && quote.is_none() {
            let rest = &bytes[indent..];
            if rest.is_empty() || rest[0] == b'#' {
                continue;
            }
            while block.last().is_some_and(|&col| col >= indent) {
                block.pop();
            }
            // A node at this column, and one more for each compact `- ` or `? `.
            block.push(indent);
            while i + 1 < bytes.len() && matches!(bytes[i], b'-' | b'?') && bytes[i + 1] == b' ' {
                i += 2;
                while i < bytes.len() && bytes[i] == b' ' {
                    i += 1;
                }
                block.push(i);
            }
        }
        let mut token_start = true;
        while i < bytes.len() {
            let b = bytes[i];
            if let Some(q) = quote {
                match b {
                    b'\\' if q == b'"' => i += 1,
                    _ if b == q => quote = None,
                    _ => {}
                }
                i += 1;
                token_start = false;
                continue;
            }
            let mut opened = false;
            match b {
                b'#' if token_start => break,
                b'"' | b'\'' if token_start => quote = Some(b),
                b'[' | b'{' if flow > 0 || token_start => {
                    flow += 1;
                    opened = true;
                    if flow + block.len() > max {
                        return Some((number + 1, i + 1));
                    }
                }
                b']' | b'}' if flow > 0 => flow -= 1,
                b'|' | b'>' if flow == 0 && token_start => {
                    let after = line[i + 1..].split(" #").next().unwrap_or("");
                    if after
                        .trim()
                        .bytes()
                        .all(|c| c.is_ascii_digit() || c == b'-' || c == b'+')
                    {
                        literal_above = Some(indent);
                        break;
                    }
                }
                _ => {}
            }
            // A token starts after a blank, and in flow after an indicator.
            token_start =
                matches!(b, b' ' | b'\t') || opened || (flow > 0 && matches!(b, b',' | b':'));
            i += 1;
        }
        if flow + block.len() > max {
            return Some((number + 1, indent + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_flow_and_block_nesting_are_found_where_they_pass_the_limit() {
        let flow = "a: ".to_string() + &"[".repeat(10) + &"]".repeat(10);
        assert_eq!(yaml_too_deep(&flow, 8), Some((1, 11)));
        assert_eq!(yaml_too_deep(&flow, 20), None);
        let compact = "- ".repeat(10) + "x";
        assert_eq!(yaml_too_deep(&compact, 8).map(|(l, _)| l), Some(1));
        let mut indented = String::new();
        for depth in 0..10 {
            indented += &format!("{}k{depth}:\n", " ".repeat(depth));
        }
        assert_eq!(yaml_too_deep(&indented, 8), Some((9, 9)));
        assert_eq!(yaml_too_deep(&indented, 10), None);
    }

    #[test]
    fn brackets_in_quotes_comments_and_block_scalars_do_not_count() {
        let text = format!(
            "mcpServers:\n  - name: \"{open}\"\n    # {open}\n    args: ['{open}', x]\n    description: |\n      {open}\n    command: a{open}\n",
            open = "[".repeat(50)
        );
        assert_eq!(yaml_too_deep(&text, 10), None);
    }
}
