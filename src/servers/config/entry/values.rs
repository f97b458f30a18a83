//! Typed values read out of an entry's JSON object: strings, lists and maps, with the
//! entry's own errors.

use super::*;

pub(super) fn string(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("\"{key}\" is not a string")),
    }
}

pub(super) fn string_list(
    obj: &Map<String, Value>,
    key: &str,
) -> Result<Option<Vec<String>>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|a| match a {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                _ => Err(format!("\"{key}\" holds a value that is not a string")),
            })
            .collect::<Result<_, _>>()
            .map(Some),
        Some(_) => Err(format!("\"{key}\" is not an array")),
    }
}

/// VS Code's `env`: a value is a string, a number (passed as its decimal text), or
/// `null`, which removes the variable from what the server inherits (microsoft/vscode
/// src/vs/platform/mcp/common/mcpPlatformTypes.ts `IMcpStdioServerConfiguration.env`:
/// `Record<string, string | number | null>`; extHostMcpNode.ts `startNodeMpc` sets
/// `String(value)`, or `undefined` for `null`). Returns what is set and the names
/// removed.
pub(super) fn vscode_env(
    obj: &Map<String, Value>,
) -> Result<(BTreeMap<String, String>, Vec<String>), String> {
    let (mut set, mut unset) = (BTreeMap::new(), Vec::new());
    let Some(map) = obj.get("env").filter(|v| !v.is_null()) else {
        return Ok((set, unset));
    };
    let map = map.as_object().ok_or("\"env\" is not an object")?;
    for (k, v) in map {
        match v {
            Value::String(s) => {
                set.insert(k.clone(), s.clone());
            }
            Value::Null => unset.push(k.clone()),
            Value::Number(n) => {
                let text = js_number_text(n).ok_or_else(|| {
                    format!("\"env.{k}\" is a number VS Code would write in exponent form; write it in quotes")
                })?;
                set.insert(k.clone(), text);
            }
            _ => {
                return Err(format!(
                    "\"env.{k}\" is not a string, a number or null; write it in quotes: \"{v}\""
                ));
            }
        }
    }
    Ok((set, unset))
}

/// A JSON number as JavaScript's `String(n)` writes it, when that is plain decimal
/// (JavaScript writes 1e21 and up, and below 1e-6, in exponent form: `None`).
pub(super) fn js_number_text(n: &serde_json::Number) -> Option<String> {
    // Every integer JSON holds exactly is below 1e21.
    if n.is_i64() || n.is_u64() {
        return Some(n.to_string());
    }
    let f = n.as_f64()?;
    if f == 0.0 {
        return Some("0".into());
    }
    // Rust's shortest round-trip text is JavaScript's in this range ("1" for 1.0).
    (1e-6..1e21).contains(&f.abs()).then(|| format!("{f}"))
}

pub(super) fn string_map(
    obj: &Map<String, Value>,
    key: &str,
) -> Result<BTreeMap<String, String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                // Clients differ on what they make of these; say it as meant.
                Value::Number(_) | Value::Bool(_) => Err(format!(
                    "\"{key}.{k}\" is not a string; write it in quotes: \"{v}\""
                )),
                _ => Err(format!("\"{key}.{k}\" is not a string")),
            })
            .collect(),
        Some(_) => Err(format!("\"{key}\" is not an object")),
    }
}
