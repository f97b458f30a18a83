//! A server's JSON body or SSE event as the bridge's stdout lines, without decoding it
//! into values and encoding it again: the body is checked to be JSON, a batch is cut
//! into its members, and line ends become spaces. Inside a JSON string a line end is
//! always escaped, so every raw one is whitespace between tokens.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

/// A body that is not JSON.
#[derive(Debug, PartialEq, Eq)]
pub struct NotJson;

/// The lines of one body: the message itself, or each member of a batch (none for a
/// blank body).
pub fn lines(body: Vec<u8>) -> Result<Vec<Vec<u8>>, NotJson> {
    let Some(first) = body.iter().position(|b| !b.is_ascii_whitespace()) else {
        return Ok(Vec::new());
    };
    serde_json::from_slice::<IgnoredAny>(&body).map_err(|_| NotJson)?;
    if body[first] != b'[' {
        return Ok(vec![one_line(body)]);
    }
    Ok(members(&body[first + 1..])
        .into_iter()
        .map(|member| one_line(member.to_vec()))
        .collect())
}

/// The top-level members of a JSON array, given what follows its `[`. The array is
/// known to be valid JSON, so only strings and nesting need following.
fn members(inner: &[u8]) -> Vec<&[u8]> {
    let mut found = Vec::new();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let mut start = None;
    for (i, &b) in inner.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b']' | b'}' if depth == 0 => {
                found.extend(start.map(|s| trim_end(&inner[s..i])));
                break;
            }
            b',' if depth == 0 => {
                found.extend(start.take().map(|s| trim_end(&inner[s..i])));
            }
            b']' | b'}' => depth -= 1,
            b if b.is_ascii_whitespace() => {}
            _ => {
                start.get_or_insert(i);
                match b {
                    b'"' => in_string = true,
                    b'[' | b'{' => depth += 1,
                    _ => {}
                }
            }
        }
    }
    found
}

fn trim_end(bytes: &[u8]) -> &[u8] {
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    &bytes[..end]
}

/// One message on one line: its raw line ends (whitespace, see above) become spaces.
fn one_line(mut message: Vec<u8>) -> Vec<u8> {
    for b in &mut message {
        if *b == b'\n' || *b == b'\r' {
            *b = b' ';
        }
    }
    message
}

/// The id of a message that has one, read without decoding the rest (a result of
/// any size is stepped over, not built).
pub fn id_of(line: &[u8]) -> Option<Value> {
    #[derive(Deserialize)]
    struct Head {
        id: Option<Value>,
    }
    serde_json::from_slice::<Head>(line).ok()?.id
}

/// Whether a line is the answer (a result or an error) to the request with this id.
pub fn answers(line: &[u8], id: &Value) -> bool {
    #[derive(Deserialize)]
    struct Head {
        id: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        method: bool,
        #[serde(default, deserialize_with = "present")]
        result: bool,
        #[serde(default, deserialize_with = "present")]
        error: bool,
    }
    fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        IgnoredAny::deserialize(d).map(|_| true)
    }
    serde_json::from_slice::<Head>(line)
        .is_ok_and(|h| !h.method && (h.result || h.error) && h.id.as_ref() == Some(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(lines: Vec<Vec<u8>>) -> Vec<String> {
        lines
            .into_iter()
            .map(|l| String::from_utf8(l).unwrap())
            .collect()
    }

    #[test]
    fn a_batch_is_cut_into_its_members_as_the_server_wrote_them() {
        let body = b" [ {\"id\":1,\"result\":{\"s\":\"a,]}\\\"[\"}} ,\n\t{\"method\":\"n\",\"params\":[1,{}]} ] ";
        assert_eq!(
            text(lines(body.to_vec()).unwrap()),
            vec![
                "{\"id\":1,\"result\":{\"s\":\"a,]}\\\"[\"}}",
                "{\"method\":\"n\",\"params\":[1,{}]}"
            ]
        );
        assert!(lines(b"[]".to_vec()).unwrap().is_empty());
    }

    #[test]
    fn a_pretty_printed_message_becomes_one_line_of_the_same_json() {
        let pretty = serde_json::to_vec_pretty(&json!({"id": 7, "result": {"t": "x\ny"}})).unwrap();
        let out = lines(pretty).unwrap();
        assert_eq!(out.len(), 1);
        assert!(!out[0].contains(&b'\n'));
        let back: Value = serde_json::from_slice(&out[0]).unwrap();
        assert_eq!(back, json!({"id": 7, "result": {"t": "x\ny"}}));
    }

    #[test]
    fn a_body_that_is_not_json_is_refused_and_a_blank_one_is_empty() {
        assert_eq!(lines(b"{\"id\": 1,".to_vec()), Err(NotJson));
        assert_eq!(lines(b"[{}] trailing".to_vec()), Err(NotJson));
        assert!(lines(b" \r\n".to_vec()).unwrap().is_empty());
    }

    #[test]
    fn only_a_result_or_error_with_the_same_id_answers_a_request() {
        assert!(answers(
            br#"{"jsonrpc":"2.0","id":3,"result":null}"#,
            &json!(3)
        ));
        assert!(answers(br#"{"id":"a","error":{"code":1}}"#, &json!("a")));
        assert!(!answers(br#"{"id":3,"result":{}}"#, &json!("3")));
        assert!(!answers(br#"{"id":3,"method":"ping"}"#, &json!(3)));
        assert!(!answers(br#"{"method":"notifications/x"}"#, &json!(3)));
    }
}
