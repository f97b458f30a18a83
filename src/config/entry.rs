//! One server entry of any client, read into a [`ServerSpec`]: every client's type
//! spellings, url, header and environment members, disabled flags and tool filters.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{
    Host, OAuthClientSpec, RemoteKind, ServerSpec, ToolFilter, TransportSpec, unwrapped_command,
    vars,
};

/// What an entry is.
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    Server(ServerSpec),
    /// Not used, and why (`disabled: true`, `enabled: false`, …).
    Skipped(String),
}

/// Reads one entry as `host` writes it.
pub fn read_entry(name: &str, entry: &Value, host: Host) -> Result<Read, String> {
    let obj = entry.as_object().ok_or("entry is not an object")?;
    if obj.get("disabled") == Some(&Value::Bool(true)) {
        return Ok(Read::Skipped("disabled: true".into()));
    }
    if obj.get("enabled") == Some(&Value::Bool(false)) {
        return Ok(Read::Skipped("enabled: false".into()));
    }
    let kind = string(obj, "type")?;
    if host == Host::Goose
        && let Some(kind @ ("builtin" | "platform" | "frontend" | "inline_python")) =
            kind.as_deref()
    {
        return Ok(Read::Skipped(format!(
            "type: {kind} (part of Goose, not a server)"
        )));
    }
    let tr = |value: String, field: &str| {
        vars::translate(&value, host).map_err(|m| format!("{m} (in {field})"))
    };
    let http_url = string(obj, "httpUrl")?;
    let url = match (
        string(obj, "url")?,
        string(obj, "serverUrl")?,
        string(obj, "uri")?,
    ) {
        (Some(u), _, _) | (None, Some(u), _) | (None, None, Some(u)) => Some(u),
        (None, None, None) => http_url.clone(),
    };
    let (command, mut args, nested_env) = command_and_args(obj)?;
    if command.is_some() && url.is_some() {
        return Err(
            "has both \"command\" and \"url\"; a stdio server has a command, a remote one a url"
                .into(),
        );
    }
    let remote = match kind.as_deref() {
        Some("stdio" | "local") => None,
        None if url.is_some() && command.is_none() => Some(default_remote(host, &http_url)),
        None => None,
        Some(other) => match remote_kind(other) {
            Some(kind) => Some(kind),
            None => return Err(format!("unknown transport type {other:?}")),
        },
    };
    let mut guarded = false;
    let transport = if let Some(kind) = remote {
        let mut headers = string_map(obj, "headers")?;
        headers.extend(string_map(obj, "http_headers")?);
        if let Some(options) = obj.get("requestOptions").and_then(Value::as_object) {
            headers.extend(string_map(options, "headers")?);
        }
        // Codex names the variables that hold header values.
        for (header, var) in string_map(obj, "env_http_headers")? {
            headers.insert(header, format!("${{{var}}}"));
        }
        if let Some(var) = string(obj, "bearer_token_env_var")? {
            headers.insert("Authorization".into(), format!("Bearer ${{{var}}}"));
        }
        let headers = headers
            .into_iter()
            .map(|(k, v)| {
                let field = format!("headers.{k}");
                tr(v, &field).map(|v| (k, v))
            })
            .collect::<Result<_, _>>()?;
        let url = url.ok_or("remote entry has no \"url\"")?;
        TransportSpec::Remote {
            kind,
            url: tr(url, "url")?,
            headers,
        }
    } else {
        let command = command.ok_or("stdio entry has no \"command\"")?;
        let mut env = nested_env;
        for key in ["env", "environment", "envs"] {
            env.extend(string_map(obj, key)?);
        }
        // Codex's env_vars and Goose's env_keys name variables to pass through.
        for key in ["env_vars", "env_keys"] {
            for var in string_list(obj, key)?.unwrap_or_default() {
                env.entry(var.clone()).or_insert(format!("${{{var}}}"));
            }
        }
        let env = env
            .into_iter()
            .map(|(k, v)| {
                let field = format!("env.{k}");
                tr(v, &field).map(|v| (k, v))
            })
            .collect::<Result<_, _>>()?;
        let command = tr(command, "command")?;
        args = args
            .into_iter()
            .enumerate()
            .map(|(i, a)| tr(a, &format!("args[{i}]")))
            .collect::<Result<_, _>>()?;
        // A remote entry wrap moved: read the original, where the guard reads it.
        if let Some(sidecar) = super::wrapped_remote_sidecar(&command, &args) {
            return read_sidecar_entry(name, &sidecar, host);
        }
        // An entry `mcp-lock wrap` rewrote launches the guard, which starts the real
        // server: read it as that server, so wrapping never moves a pin.
        let unwrapped = unwrapped_command(&command, &args);
        guarded = unwrapped.is_some();
        let (command, args) = unwrapped.unwrap_or((command, args));
        let cwd = match string(obj, "cwd")? {
            Some(cwd) => Some(tr(cwd, "cwd")?),
            None => None,
        };
        TransportSpec::Stdio {
            command,
            args,
            env,
            cwd,
        }
    };
    Ok(Read::Server(ServerSpec {
        name: name.to_string(),
        transport,
        hosts: vec![host],
        filter: filter(obj)?,
        personal: false,
        oauth_client: oauth_client(obj)?,
        guarded,
    }))
}

/// The remote entry `name` of a sidecar wrap wrote, read as if it were still here.
fn read_sidecar_entry(name: &str, sidecar: &str, host: Host) -> Result<Read, String> {
    let text = std::fs::read_to_string(sidecar).map_err(|e| {
        format!("is wrapped by mcp-lock, but its original entry in {sidecar} cannot be read: {e}; run `mcp-lock unwrap` or restore that file")
    })?;
    let root = super::shape::parse(&text, super::Format::Json, sidecar)
        .map_err(|e| format!("is wrapped by mcp-lock, but {sidecar} is unreadable: {e}"))?;
    let Some(entry) = root.get("mcpServers").and_then(|t| t.get(name)) else {
        return Err(format!(
            "is wrapped by mcp-lock, but {sidecar} has no entry {name:?}; run `mcp-lock unwrap` or restore that file"
        ));
    };
    match read_entry(name, entry, host)? {
        Read::Server(spec) if matches!(spec.transport, TransportSpec::Remote { .. }) => {
            Ok(Read::Server(spec))
        }
        _ => Err(format!(
            "is wrapped by mcp-lock, but its entry in {sidecar} is not a remote server"
        )),
    }
}

/// `"oauth": {"clientId": ..., "clientSecret": ..., "callbackPort": N}` (Claude Code's
/// spelling; `client_id` / `client_secret` / `callback_port` too).
fn oauth_client(obj: &Map<String, Value>) -> Result<Option<Box<OAuthClientSpec>>, String> {
    let Some(oauth) = obj.get("oauth") else {
        return Ok(None);
    };
    let Some(oauth) = oauth.as_object() else {
        return Err("\"oauth\" must be an object".into());
    };
    let text = |keys: [&str; 2]| {
        keys.iter()
            .find_map(|k| oauth.get(*k))
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("\"oauth.{}\" must be a string", keys[0]))
            })
            .transpose()
    };
    let Some(client_id) = text(["clientId", "client_id"])? else {
        return Ok(None);
    };
    let callback_port = match ["callbackPort", "callback_port"]
        .iter()
        .find_map(|k| oauth.get(*k))
    {
        None => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|p| u16::try_from(p).ok())
                .ok_or("\"oauth.callbackPort\" must be a port number")?,
        ),
    };
    Ok(Some(Box::new(OAuthClientSpec {
        client_id,
        client_secret: text(["clientSecret", "client_secret"])?,
        callback_port,
    })))
}

/// The type names clients give remote transports.
fn remote_kind(name: &str) -> Option<RemoteKind> {
    match name {
        "remote" => Some(RemoteKind::StreamableHttp),
        other => RemoteKind::parse(other),
    }
}

/// What a `url` with no `type` means to `host`: Cline and Gemini CLI take it as the
/// legacy SSE endpoint (Gemini's Streamable HTTP one is `httpUrl`).
fn default_remote(host: Host, http_url: &Option<String>) -> RemoteKind {
    match host {
        Host::Cline | Host::GeminiCli if http_url.is_none() => RemoteKind::Sse,
        _ => RemoteKind::StreamableHttp,
    }
}

/// `command` + `args`, opencode's argv-array `command`, Zed's older
/// `command: {path, args, env}`, or Goose's `cmd`.
type Launch = (Option<String>, Vec<String>, BTreeMap<String, String>);

fn command_and_args(obj: &Map<String, Value>) -> Result<Launch, String> {
    let args = string_list(obj, "args")?.unwrap_or_default();
    match obj.get("command").or_else(|| obj.get("cmd")) {
        None | Some(Value::Null) => Ok((None, args, BTreeMap::new())),
        Some(Value::String(s)) => Ok((Some(s.clone()), args, BTreeMap::new())),
        Some(Value::Array(_)) => {
            let argv = string_list(obj, "command")?.unwrap_or_default();
            let (command, rest) = argv
                .split_first()
                .ok_or("\"command\" is an empty array; it starts with the program to run")?;
            let mut all = rest.to_vec();
            all.extend(args);
            Ok((Some(command.clone()), all, BTreeMap::new()))
        }
        Some(Value::Object(nested)) => {
            let path = string(nested, "path")?.ok_or("\"command\" has no \"path\"")?;
            let mut all = string_list(nested, "args")?.unwrap_or_default();
            all.extend(args);
            Ok((Some(path), all, string_map(nested, "env")?))
        }
        Some(_) => Err("\"command\" is not a string".into()),
    }
}

/// The tools the host shows its agent.
fn filter(obj: &Map<String, Value>) -> Result<ToolFilter, String> {
    let mut include: Option<Vec<String>> = None;
    for key in ["includeTools", "enabled_tools", "available_tools"] {
        if let Some(names) = string_list(obj, key)? {
            include.get_or_insert_with(Vec::new).extend(names);
        }
    }
    let mut exclude = Vec::new();
    for key in ["excludeTools", "disabled_tools", "disabledTools"] {
        exclude.extend(string_list(obj, key)?.unwrap_or_default());
    }
    // `tools`: a list of the tools shown, or a map of name to whether it is shown.
    match obj.get("tools") {
        Some(Value::Array(_)) => {
            let names = string_list(obj, "tools")?.unwrap_or_default();
            include.get_or_insert_with(Vec::new).extend(names);
        }
        Some(Value::Object(map)) => {
            for (tool, shown) in map {
                if shown == &Value::Bool(false) {
                    exclude.push(tool.clone());
                }
            }
        }
        _ => {}
    }
    Ok(ToolFilter {
        include,
        exclude,
        ..ToolFilter::default()
    })
}

fn string(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("\"{key}\" is not a string")),
    }
}

fn string_list(obj: &Map<String, Value>, key: &str) -> Result<Option<Vec<String>>, String> {
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

fn string_map(obj: &Map<String, Value>, key: &str) -> Result<BTreeMap<String, String>, String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn server(entry: Value, host: Host) -> ServerSpec {
        match read_entry("s", &entry, host).unwrap() {
            Read::Server(spec) => spec,
            Read::Skipped(why) => panic!("skipped: {why}"),
        }
    }

    #[test]
    fn every_type_spelling_reads_as_its_transport() {
        for spelling in [
            "http",
            "streamable-http",
            "streamableHttp",
            "streamable_http",
            "remote",
        ] {
            let spec = server(json!({"type": spelling, "url": "http://h/"}), Host::Unknown);
            assert_eq!(spec.transport_name(), "streamable-http", "{spelling}");
        }
        let sse = server(json!({"type": "sse", "url": "http://h/"}), Host::Unknown);
        assert_eq!(sse.transport_name(), "sse");
        let local = server(json!({"type": "local", "command": ["x"]}), Host::OpenCode);
        assert_eq!(local.transport_name(), "stdio");
    }

    #[test]
    fn every_url_member_is_read() {
        for member in ["url", "serverUrl", "uri", "httpUrl"] {
            let spec = server(json!({ member: "http://h/mcp" }), Host::Unknown);
            assert!(
                matches!(&spec.transport, TransportSpec::Remote { url, .. } if url == "http://h/mcp"),
                "{member}"
            );
        }
    }

    #[test]
    fn an_untyped_url_is_sse_to_cline_and_gemini_and_http_url_is_streamable() {
        let url = json!({"url": "http://h/sse"});
        assert_eq!(server(url.clone(), Host::Cline).transport_name(), "sse");
        assert_eq!(server(url.clone(), Host::GeminiCli).transport_name(), "sse");
        assert_eq!(
            server(url, Host::ClaudeCode).transport_name(),
            "streamable-http"
        );
        let http = json!({"httpUrl": "http://h/mcp"});
        assert_eq!(
            server(http, Host::GeminiCli).transport_name(),
            "streamable-http"
        );
    }

    #[test]
    fn codex_secrets_become_header_and_env_templates() {
        let spec = server(
            json!({"url": "http://h/", "bearer_token_env_var": "TOKEN",
                   "env_http_headers": {"X-Key": "KEY"}, "http_headers": {"X-Plain": "p"}}),
            Host::Codex,
        );
        let TransportSpec::Remote { headers, .. } = spec.transport else {
            panic!("remote")
        };
        assert_eq!(headers["Authorization"], "Bearer ${TOKEN}");
        assert_eq!(headers["X-Key"], "${KEY}");
        assert_eq!(headers["X-Plain"], "p");
        let stdio = server(
            json!({"command": "x", "env_vars": ["GITHUB_TOKEN"], "env": {"A": "1"}}),
            Host::Codex,
        );
        let TransportSpec::Stdio { env, .. } = stdio.transport else {
            panic!("stdio")
        };
        assert_eq!(env["GITHUB_TOKEN"], "${GITHUB_TOKEN}");
        assert_eq!(env["A"], "1");
    }

    #[test]
    fn launch_forms_of_opencode_zed_and_goose_read_as_command_and_args() {
        let launch = |spec: ServerSpec| match spec.transport {
            TransportSpec::Stdio {
                command, args, env, ..
            } => (command, args, env.len()),
            TransportSpec::Remote { .. } => panic!("stdio"),
        };
        let opencode = json!({"type": "local", "command": ["npx", "-y", "pkg"], "environment": {"A": "{env:A}"}});
        assert_eq!(
            launch(server(opencode, Host::OpenCode)),
            ("npx".into(), vec!["-y".into(), "pkg".into()], 1)
        );
        let zed = json!({"command": {"path": "srv", "args": ["--x"], "env": {"K": "v"}}});
        assert_eq!(
            launch(server(zed, Host::Zed)),
            ("srv".into(), vec!["--x".into()], 1)
        );
        let goose = json!({"type": "stdio", "cmd": "uvx", "args": ["pkg"], "envs": {"K": "v"}, "env_keys": ["T"]});
        assert_eq!(
            launch(server(goose, Host::Goose)),
            ("uvx".into(), vec!["pkg".into()], 2)
        );
    }

    #[test]
    fn disabled_entries_are_skipped_saying_why() {
        assert_eq!(
            read_entry("s", &json!({"command": "x", "disabled": true}), Host::Cline),
            Ok(Read::Skipped("disabled: true".into()))
        );
        assert_eq!(
            read_entry("s", &json!({"command": "x", "enabled": false}), Host::Codex),
            Ok(Read::Skipped("enabled: false".into()))
        );
        assert!(matches!(
            read_entry("s", &json!({"type": "builtin"}), Host::Goose),
            Ok(Read::Skipped(_))
        ));
    }

    #[test]
    fn tool_filters_are_read_from_each_hosts_keys() {
        let f = |entry: Value| server(entry, Host::Unknown).filter;
        let base = |extra: Value| {
            let mut e = json!({"command": "x", "autoApprove": ["a"], "alwaysAllow": ["a"]});
            e.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            e
        };
        assert_eq!(
            f(base(json!({"includeTools": ["a"], "excludeTools": ["b"]}))),
            ToolFilter {
                include: Some(vec!["a".into()]),
                exclude: vec!["b".into()],
                ..ToolFilter::default()
            }
        );
        assert_eq!(
            f(base(
                json!({"enabled_tools": ["a"], "disabled_tools": ["b"]})
            ))
            .include,
            Some(vec!["a".into()])
        );
        assert_eq!(
            f(base(json!({"disabledTools": ["b"]}))).exclude,
            vec!["b".to_string()]
        );
        assert_eq!(
            f(base(json!({"available_tools": ["a"]}))).include,
            Some(vec!["a".into()])
        );
        assert_eq!(
            f(base(json!({"tools": ["a"]}))).include,
            Some(vec!["a".into()])
        );
        assert!(f(base(json!({}))).is_empty(), "autoApprove hides nothing");
    }
}
