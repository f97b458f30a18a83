//! The HTTP headers a 2026-07-28 Streamable HTTP client mirrors from a request's
//! body: `Mcp-Name` (the tool or prompt name, or the resource URI) and one
//! `Mcp-Param-{Name}` per tool parameter its input schema marks with `x-mcp-header`,
//! with the transport's value encoding. A tool whose `x-mcp-header` marks break the
//! rules is left out of what the client offers (the transport says it MUST be), so
//! update, verify and the guard all leave it out alike; and a mark added or moved is
//! an authority change (the classifier), as a value then reaches the HTTP layer.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// One mirrored parameter: the chain of `properties` keys to it, and the header's
/// name part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirrored {
    pub path: Vec<String>,
    pub header: String,
}

/// JavaScript's safe integer range, which an integer header value must be in.
const SAFE_INTEGER: i64 = (1 << 53) - 1;

/// The tool's mirrored parameters, or why its `x-mcp-header` marks are invalid.
pub fn mirrored(tool: &Value) -> Result<Vec<Mirrored>, String> {
    match tool.get("inputSchema") {
        Some(schema) => mirrored_in(schema),
        None => Ok(Vec::new()),
    }
}

/// [`mirrored`] of an input schema.
pub fn mirrored_in(schema: &Value) -> Result<Vec<Mirrored>, String> {
    let mut out = Vec::new();
    walk(schema, &mut Vec::new(), true, &mut out)?;
    let mut seen = std::collections::HashSet::new();
    for m in &out {
        if !seen.insert(m.header.to_ascii_lowercase()) {
            return Err(format!(
                "x-mcp-header {:?} is given to two parameters (names must differ, case aside)",
                m.header
            ));
        }
    }
    Ok(out)
}

/// Finds every `x-mcp-header` under `schema`; `reachable` while the chain from the
/// root is `properties` keys only.
fn walk(
    schema: &Value,
    path: &mut Vec<String>,
    reachable: bool,
    out: &mut Vec<Mirrored>,
) -> Result<(), String> {
    let Some(object) = schema.as_object() else {
        if let Some(items) = schema.as_array() {
            for item in items {
                walk(item, path, false, out)?;
            }
        }
        return Ok(());
    };
    if let Some(mark) = object.get("x-mcp-header") {
        let shown = crate::base::text::escape_cut(&mark.to_string(), 60);
        if !reachable || path.is_empty() {
            return Err(format!(
                "x-mcp-header {shown} marks a schema that is not a property reached through \"properties\" alone"
            ));
        }
        let Some(header) = mark.as_str() else {
            return Err(format!("x-mcp-header {shown} is not a string"));
        };
        if header.is_empty() {
            return Err("an x-mcp-header is empty".into());
        }
        if !header.bytes().all(is_tchar) {
            return Err(format!(
                "x-mcp-header {shown} is not an HTTP field name (token characters only)"
            ));
        }
        let primitive = match object.get("type") {
            Some(Value::String(t)) => matches!(t.as_str(), "string" | "integer" | "boolean"),
            _ => false,
        };
        if !primitive {
            return Err(format!(
                "x-mcp-header {shown} marks a parameter that is not a string, integer or boolean"
            ));
        }
        out.push(Mirrored {
            path: path.clone(),
            header: header.to_string(),
        });
    }
    for (key, value) in object {
        if key == "properties" {
            if let Some(props) = value.as_object() {
                for (name, sub) in props {
                    path.push(name.clone());
                    walk(sub, path, reachable, out)?;
                    path.pop();
                }
            }
        } else if key != "x-mcp-header" && (value.is_object() || value.is_array()) {
            // Anywhere else (items, oneOf, $defs, ...) a mark is invalid.
            walk(value, &mut path.clone(), false, out)?;
        }
    }
    Ok(())
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The headers a `tools/call` with these `arguments` carries for `mirrored`; a
/// parameter with no value (absent or null) has none.
pub fn param_headers(mirrored: &[Mirrored], arguments: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in mirrored {
        let mut at = arguments;
        let mut found = true;
        for key in &m.path {
            match at.get(key) {
                Some(next) => at = next,
                None => {
                    found = false;
                    break;
                }
            }
        }
        let text = match at {
            _ if !found => continue,
            Value::String(s) => s.clone(),
            Value::Bool(b) => b.to_string(),
            Value::Number(n) if n.as_i64().is_some_and(|i| i.abs() <= SAFE_INTEGER) => {
                n.to_string()
            }
            // Null, or a value the schema does not allow: no header.
            _ => continue,
        };
        out.push((format!("Mcp-Param-{}", m.header), encode(&text)));
    }
    out
}

/// A header value as the transport's value encoding has it: as-is when it is plain
/// visible ASCII (spaces and tabs inside allowed), else `=?base64?...?=`.
pub fn encode(value: &str) -> String {
    let visible = value
        .bytes()
        .all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b));
    let padded = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let sentinel = value.starts_with("=?base64?") && value.ends_with("?=");
    let plain = visible && !padded && !sentinel;
    if plain {
        value.to_string()
    } else {
        format!("=?base64?{}?=", STANDARD.encode(value.as_bytes()))
    }
}

/// The `Mcp-Name` of a request: its tool or prompt name, or its resource URI.
pub fn name_header(method: &str, params: &Value) -> Option<String> {
    let source = match method {
        "tools/call" | "prompts/get" => params.get("name"),
        "resources/read" => params.get("uri"),
        _ => None,
    }?;
    source.as_str().map(encode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_encoded_as_the_transport_says() {
        assert_eq!(encode("us-west1"), "us-west1");
        assert_eq!(encode("us west 1"), "us west 1");
        assert_eq!(encode("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encode(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encode("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        assert_eq!(encode(""), "");
    }

    #[test]
    fn marked_parameters_are_mirrored_and_a_null_or_absent_one_is_not() {
        let tool = json!({"name": "q", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "on": {"type": "boolean", "x-mcp-header": "On"},
            "deep": {"type": "object", "properties": {"k": {"type": "string", "x-mcp-header": "K"}}},
            "plain": {"type": "string"}
        }}});
        let marks = mirrored(&tool).unwrap();
        let headers = param_headers(
            &marks,
            &json!({"region": "eu", "n": 42, "on": false, "deep": {"k": "v"}, "plain": "x"}),
        );
        assert_eq!(
            headers,
            vec![
                ("Mcp-Param-Region".into(), "eu".into()),
                ("Mcp-Param-N".into(), "42".into()),
                ("Mcp-Param-On".into(), "false".into()),
                ("Mcp-Param-K".into(), "v".into()),
            ]
        );
        assert!(param_headers(&marks, &json!({"region": null})).is_empty());
    }

    #[test]
    fn invalid_marks_make_the_tool_invalid() {
        let with =
            |prop: Value| json!({"inputSchema": {"type": "object", "properties": {"p": prop}}});
        for (bad, why) in [
            (json!({"type": "string", "x-mcp-header": ""}), "empty"),
            (
                json!({"type": "string", "x-mcp-header": "a b"}),
                "field name",
            ),
            (
                json!({"type": "string", "x-mcp-header": "a:b"}),
                "field name",
            ),
            (json!({"type": "string", "x-mcp-header": "é"}), "field name"),
            (
                json!({"type": "number", "x-mcp-header": "N"}),
                "string, integer or boolean",
            ),
            (
                json!({"type": "object", "x-mcp-header": "O"}),
                "string, integer or boolean",
            ),
            (
                json!({"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}),
                "not a property",
            ),
        ] {
            let e = mirrored(&with(bad.clone())).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let twice = json!({"inputSchema": {"properties": {
            "a": {"type": "string", "x-mcp-header": "Region"},
            "b": {"type": "string", "x-mcp-header": "region"}}}});
        assert!(mirrored(&twice).unwrap_err().contains("two parameters"));
        let composed = json!({"inputSchema": {"oneOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}});
        assert!(mirrored(&composed).is_err());
    }

    #[test]
    fn the_name_header_is_the_tool_prompt_or_resource() {
        assert_eq!(
            name_header("tools/call", &json!({"name": "get-weather"})).as_deref(),
            Some("get-weather")
        );
        assert_eq!(
            name_header("resources/read", &json!({"uri": "file:///a b"})).as_deref(),
            Some("file:///a b")
        );
        assert_eq!(name_header("tools/list", &json!({})), None);
    }
}
