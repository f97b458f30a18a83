//! What Goose makes of one extension in its `config.yaml`, beyond the shared reading
//! of [`super::entry`]: the extensions it drops as malformed, and the header values
//! it fills from the extension's own `envs` and `env_keys`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Why Goose skips the extension, when it cannot read it.
///
/// block/goose `crates/goose/src/config/extensions.rs` (`get_extensions_map`) reads
/// each entry as an `ExtensionEntry` (a required `enabled: bool` beside the
/// `ExtensionConfig`) and skips, with only a log line, each one that does not
/// deserialize; `crates/goose/src/agents/extension.rs` (`ExtensionConfig`, `Envs`)
/// says what a `stdio` or `streamable_http` extension must hold: `name`, `cmd` and
/// `args`, or `uri`; `envs` and `headers` of strings; `env_keys` and
/// `available_tools` lists of strings; `timeout` a number of seconds.
pub fn malformed(obj: &Map<String, Value>) -> Option<String> {
    let skip = |why: String| Some(format!("Goose skips this extension: {why}"));
    let kind = obj.get("type").and_then(Value::as_str);
    if !matches!(obj.get("enabled"), Some(Value::Bool(_))) {
        return skip("\"enabled\" is not true or false".into());
    }
    let (required, maps, lists): (&[&str], &[&str], &[&str]) = match kind {
        Some("stdio") => (
            &["name", "cmd"],
            &["envs"],
            &["args", "env_keys", "available_tools"],
        ),
        Some("streamable_http") => (
            &["name", "uri"],
            &["envs", "headers"],
            &["env_keys", "available_tools"],
        ),
        // Goose's own extensions and `sse` are skipped by name in `super::entry`.
        Some("builtin" | "platform" | "frontend" | "inline_python" | "sse") => return None,
        Some(other) => return skip(format!("unknown type {other:?}")),
        None => return skip("it has no \"type\"".into()),
    };
    for key in required {
        if !obj.get(*key).is_some_and(Value::is_string) {
            return skip(format!("\"{key}\" is missing or not a string"));
        }
    }
    // `args` has no default: a stdio extension without it is dropped.
    if kind == Some("stdio") && !obj.contains_key("args") {
        return skip("it has no \"args\" (write args: [])".into());
    }
    for key in maps {
        match obj.get(*key) {
            None => {}
            Some(Value::Object(map)) => {
                if let Some((k, _)) = map.iter().find(|(_, v)| !v.is_string()) {
                    return skip(format!("\"{key}.{k}\" is not a string"));
                }
            }
            Some(_) => return skip(format!("\"{key}\" is not a map")),
        }
    }
    for key in lists {
        match obj.get(*key) {
            None => {}
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => {}
            Some(_) => return skip(format!("\"{key}\" is not a list of strings")),
        }
    }
    match obj.get("timeout") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.is_u64() => None,
        Some(_) => skip("\"timeout\" is not a number of seconds".into()),
    }
}

/// The variables a header of Goose's may name: each `envs` value as written, and each
/// `env_keys` name not in `envs` as the `${NAME}` template of the environment
/// variable Goose reads it from (block/goose `crates/goose/src/config/base.rs`,
/// `get_secret`: the name upper-cased).
pub fn header_variables(
    envs: &BTreeMap<String, String>,
    env_keys: &[String],
) -> BTreeMap<String, String> {
    let mut known = envs.clone();
    for key in env_keys {
        known
            .entry(key.clone())
            .or_insert_with(|| env_key_template(key));
    }
    known
}

/// The template an `env_keys` name is read through.
pub fn env_key_template(key: &str) -> String {
    format!("${{{}}}", key.to_uppercase())
}

/// A header value as Goose sends it (block/goose
/// `crates/goose/src/agents/extension_manager.rs`, `substitute_env_vars`): each
/// `${VAR}` (spaces allowed inside the braces), then each `$VAR` whose `${VAR}` was
/// not written, replaced by `known`'s value; any other reference stays as written.
pub fn header(value: &str, known: &BTreeMap<String, String>) -> String {
    let braced = replace_refs(value, true, |_| true, known);
    replace_refs(
        &braced,
        false,
        |name| !value.contains(&format!("${{{name}}}")),
        known,
    )
}

fn is_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Replaces `${ NAME }` (when `braced`) or `$NAME` references found in `text`.
fn replace_refs(
    text: &str,
    braced: bool,
    allowed: impl Fn(&str) -> bool,
    known: &BTreeMap<String, String>,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let found = if braced {
            braced_ref(after)
        } else {
            plain_ref(after)
        };
        match found {
            Some((name, len)) if allowed(name) && known.contains_key(name) => {
                out.push_str(&known[name]);
                rest = &after[len..];
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `{ NAME }` at the start of `s`: the name and the length read.
fn braced_ref(s: &str) -> Option<(&str, usize)> {
    let inner = s.strip_prefix('{')?;
    let trimmed = inner.trim_start();
    let lead = inner.len() - trimmed.len();
    let (name, len) = plain_ref(trimmed)?;
    let tail = &trimmed[len..];
    let close = tail.trim_start();
    let gap = tail.len() - close.len();
    close
        .starts_with('}')
        .then_some((name, 1 + lead + len + gap + 1))
}

/// `NAME` at the start of `s`.
fn plain_ref(s: &str) -> Option<(&str, usize)> {
    if !s.chars().next().is_some_and(is_start) {
        return None;
    }
    let len = s.find(|c: char| !is_name_char(c)).unwrap_or(s.len());
    Some((&s[..len], len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn goose_fills_header_references_from_envs_and_env_keys_only() {
        let envs = BTreeMap::from([("ORG".to_string(), "acme".to_string())]);
        let known = header_variables(&envs, &["api_token".to_string()]);
        assert_eq!(
            header("Bearer ${ api_token }", &known),
            "Bearer ${API_TOKEN}"
        );
        assert_eq!(header("$ORG/${ ORG }", &known), "acme/acme");
        assert_eq!(header("$ORG/x", &known), "acme/x");
        // Not the extension's own: kept as written, never read from the environment.
        assert_eq!(header("${HOME} $USER", &known), "${HOME} $USER");
        // `$ORG` is left when `${ORG}` is written too, as Goose's second pass does.
        assert_eq!(header("${ORG} $ORG", &known), "acme $ORG");
        // A name runs as far as it can: `$ORGy` is not `$ORG`.
        assert_eq!(header("x$ORGy", &known), "x$ORGy");
        assert_eq!(header("$ORG-1", &known), "acme-1");
    }

    #[test]
    fn goose_skips_extensions_it_cannot_deserialize() {
        let ok = json!({"type": "stdio", "name": "a", "cmd": "x", "args": [], "enabled": true});
        assert_eq!(malformed(&obj(ok)), None);
        let cases = [
            json!({"type": "stdio", "name": "a", "cmd": "x", "args": []}),
            json!({"type": "stdio", "name": "a", "cmd": "x", "enabled": true}),
            json!({"type": "stdio", "name": "a", "cmd": "x", "args": [], "enabled": true, "envs": {"N": 1}}),
            json!({"type": "stdio", "name": "a", "cmd": "x", "args": [1], "enabled": true}),
            json!({"type": "streamable_http", "name": "a", "enabled": true}),
            json!({"type": "websocket", "name": "a", "enabled": true}),
        ];
        for case in cases {
            let why = malformed(&obj(case.clone()));
            assert!(
                why.as_deref()
                    .is_some_and(|w| w.starts_with("Goose skips this extension: ")),
                "{case}: {why:?}"
            );
        }
    }
}
