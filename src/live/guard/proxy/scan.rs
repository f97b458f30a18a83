//! The outline of a JSON text read without building it: where each member of a batch
//! starts and ends (and whether there are too many to route), and the id at the start
//! of a message too large to be read at all.
//!
//! Only the structure is followed (strings, nesting, delimiters); what a slice holds is
//! read by the real readers afterwards, which refuse anything this let through.

use std::ops::Range;

/// The most members a batch may have, from either side (docs/guard.md). A batch is
/// routed member by member, and each member costs the guard far more than its bytes:
/// five million `{}` in one 15 MB line would take hundreds of MB to route.
pub(super) const MAX_BATCH_MEMBERS: usize = 1_000;

/// How far into a message past the limit its id is looked for.
const ID_SCAN_BYTES: usize = 64 * 1024;

/// The longest string id taken from the start of a message past the limit.
pub(super) const MAX_STRING_ID_BYTES: usize = 256;

/// What a line that starts like a batch holds.
#[derive(Debug, PartialEq)]
pub(super) enum Batch {
    /// Where each member is in the line.
    Members(Vec<Range<usize>>),
    /// More than [`MAX_BATCH_MEMBERS`] members (counting stopped there).
    TooMany,
    /// Not a JSON array: the real reader says why.
    NotJson,
}

/// The members of the JSON array `text`, at most [`MAX_BATCH_MEMBERS`] of them.
pub(super) fn batch_members(text: &[u8]) -> Batch {
    let mut at = skip_space(text, 0);
    if text.get(at) != Some(&b'[') {
        return Batch::NotJson;
    }
    at = skip_space(text, at + 1);
    let mut members = Vec::new();
    if text.get(at) == Some(&b']') {
        return ends_at(text, at + 1, members);
    }
    loop {
        let Some(end) = skip_value(text, at) else {
            return Batch::NotJson;
        };
        if members.len() == MAX_BATCH_MEMBERS {
            return Batch::TooMany;
        }
        members.push(at..end);
        at = skip_space(text, end);
        match text.get(at) {
            Some(b',') => at = skip_space(text, at + 1),
            Some(b']') => return ends_at(text, at + 1, members),
            _ => return Batch::NotJson,
        }
    }
}

/// The members found, if nothing but white space follows the array.
fn ends_at(text: &[u8], at: usize, members: Vec<Range<usize>>) -> Batch {
    if skip_space(text, at) == text.len() {
        Batch::Members(members)
    } else {
        Batch::NotJson
    }
}

/// The raw text of the top-level `"id"` of a request whose start is `head`, when that
/// start says so without doubt: an object whose first members (within the first
/// 64 KiB) name `"id"` once with a whole value and name `"method"`, and name neither
/// `"result"` nor `"error"` (an answer's id belongs to the other side's request).
pub(super) fn leading_id(head: &[u8]) -> Option<&[u8]> {
    let head = &head[..head.len().min(ID_SCAN_BYTES)];
    let mut at = skip_space(head, 0);
    if head.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_space(head, at + 1);
    let mut id = None;
    let mut method = false;
    while head.get(at) == Some(&b'"') {
        let Some(key_end) = skip_string(head, at) else {
            break;
        };
        let key = member_name(&head[at..key_end])?;
        match key.as_str() {
            "result" | "error" => return None,
            "method" => method = true,
            _ => {}
        }
        let colon = skip_space(head, key_end);
        if head.get(colon) != Some(&b':') {
            return None;
        }
        let start = skip_space(head, colon + 1);
        let Some(end) = skip_value(head, start) else {
            break;
        };
        let next = skip_space(head, end);
        // A value the head ends right after may go on (a number cut short).
        let Some(&delimiter) = head.get(next) else {
            break;
        };
        if delimiter != b',' && delimiter != b'}' {
            return None;
        }
        if key == "id" && id.replace(start..end).is_some() {
            // Named twice: readers would disagree on which is meant.
            return None;
        }
        if delimiter == b'}' {
            break;
        }
        at = skip_space(head, next + 1);
    }
    let id = id?;
    method.then(|| &head[id])
}

/// A member name as a reader decodes it (`"i\u0064"` is `id`); None if it is not a
/// JSON string.
fn member_name(raw: &[u8]) -> Option<String> {
    if !raw.contains(&b'\\') {
        return std::str::from_utf8(&raw[1..raw.len() - 1])
            .ok()
            .map(str::to_string);
    }
    serde_json::from_slice(raw).ok()
}

fn skip_space(text: &[u8], mut at: usize) -> usize {
    while text
        .get(at)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        at += 1;
    }
    at
}

/// Just past the string that opens at `at` (a `"`); None if `text` ends first.
fn skip_string(text: &[u8], at: usize) -> Option<usize> {
    let mut at = at + 1;
    loop {
        let found = at + memchr::memchr2(b'"', b'\\', text.get(at..)?)?;
        if text[found] == b'"' {
            return Some(found + 1);
        }
        at = found + 2;
    }
}

/// Just past the value that starts at `at`; None if `text` ends first (or nothing is
/// there). Brackets are counted, not matched: the real reader refuses `[}`.
fn skip_value(text: &[u8], at: usize) -> Option<usize> {
    match *text.get(at)? {
        b'"' => skip_string(text, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match *text.get(i)? {
                    b'"' => {
                        i = skip_string(text, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        b',' | b'}' | b']' | b':' => None,
        _ => {
            // A number or a literal: up to the next delimiter, which must be there.
            let len = text[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))?;
            Some(at + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(text: &str) -> Vec<&str> {
        match batch_members(text.as_bytes()) {
            Batch::Members(ranges) => ranges.into_iter().map(|r| &text[r]).collect(),
            other => panic!("{other:?} for {text}"),
        }
    }

    #[test]
    fn a_batch_is_cut_into_its_members_whatever_they_hold() {
        assert_eq!(
            members(r#" [ {"a":"x,]}\"y"} , [1,[2]],3 ,"s",null]  "#),
            vec![r#"{"a":"x,]}\"y"}"#, "[1,[2]]", "3", r#""s""#, "null"]
        );
        assert_eq!(members("[]"), Vec::<&str>::new());
        assert_eq!(batch_members(b"[1,2"), Batch::NotJson);
        assert_eq!(batch_members(b"[1,]"), Batch::NotJson);
        assert_eq!(batch_members(b"[1] x"), Batch::NotJson);
    }

    #[test]
    fn a_batch_of_more_members_than_the_limit_is_counted_only_that_far() {
        let many = format!("[{}{{}}]", "{},".repeat(MAX_BATCH_MEMBERS));
        assert_eq!(batch_members(many.as_bytes()), Batch::TooMany);
        let most = format!("[{}{{}}]", "{},".repeat(MAX_BATCH_MEMBERS - 1));
        assert!(
            matches!(batch_members(most.as_bytes()), Batch::Members(m) if m.len() == MAX_BATCH_MEMBERS)
        );
    }

    #[test]
    fn the_id_at_the_start_of_a_request_is_found_only_when_unambiguous() {
        let id = |text: &str| {
            leading_id(text.as_bytes()).map(|t| String::from_utf8_lossy(t).into_owned())
        };
        let pad = "x".repeat(100);
        assert_eq!(
            id(&format!(
                r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"a":"{pad}"#
            )),
            Some("7".into())
        );
        assert_eq!(
            id(&format!(
                r#"{{"method":"m","i\u0064" : "ab\"c","params":[{pad}"#
            )),
            Some(r#""ab\"c""#.into())
        );
        // No method seen yet, an answer, a repeated id, a number cut short, not an
        // object, an id after the part looked at.
        assert_eq!(id(&format!(r#"{{"id":7,"params":{{"a":"{pad}"#)), None);
        assert_eq!(id(r#"{"id":7,"method":"m","result":{"a":"#), None);
        assert_eq!(id(r#"{"id":7,"method":"m","id":8,"params":["#), None);
        assert_eq!(id(r#"{"method":"m","id":12"#), None);
        assert_eq!(id(r#"[{"method":"m","id":1,"params":["#), None);
        let late = format!(
            r#"{{"method":"m","params":"{}","id":1}}"#,
            "y".repeat(ID_SCAN_BYTES)
        );
        assert_eq!(id(&late), None);
    }
}
