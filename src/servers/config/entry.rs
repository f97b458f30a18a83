//! One server entry of any client, read into a [`ServerSpec`]: every client's type
//! spellings, url, header and environment members, disabled flags and tool filters.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{
    Host, OAuthClientSpec, RemoteKind, ServerSpec, ToolFilter, TransportSpec, environ, goose,
    unwrapped_command, vars,
};

mod values;
use values::*;

/// What an entry is.
// One per entry read, unwrapped at once: the size of a server spec costs nothing here.
#[allow(clippy::large_enum_variant)]
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
    if host == Host::Goose
        && let Some(why) = goose::malformed(obj)
    {
        return Ok(Read::Skipped(why));
    }
    if host == Host::Cline
        && let Some(transport) = obj.get("transport")
    {
        return read_entry(name, &cline_flattened(obj, transport)?, host);
    }
    if host == Host::Zed && zed_extension(obj) {
        return Ok(Read::Skipped(
            "provided by a Zed extension, which launches it; mcp-lock cannot".into(),
        ));
    }
    // openai/codex codex-rs/config/src/mcp_types.rs: `environment_id` other than
    // "local" starts the server on a remote executor, not on this machine.
    if host == Host::Codex
        && let Some(id) = string(obj, "environment_id")?.filter(|id| id != "local")
    {
        return Ok(Read::Skipped(format!(
            "{NOT_CHECKED}environment_id = {id:?}: Codex starts it in that remote environment, and mcp-lock starts servers on this machine only; pin it from a config that runs it locally"
        )));
    }
    if host == Host::Codex
        && let Some(name) = remote_env_var(obj)
    {
        return Ok(Read::Skipped(format!(
            "{NOT_CHECKED}env_vars entry {name:?} has source = \"remote\", read where Codex runs the server remotely; mcp-lock starts servers on this machine: use source = \"local\" or set {name} in \"env\""
        )));
    }
    // Gemini CLI fails a stdio server with Google authentication, and only it
    // (packages/core/src/tools/mcp-client.ts `createTransport`).
    if host == Host::GeminiCli
        && obj.get("url").or_else(|| obj.get("httpUrl")).is_none()
        && let Some(google @ ("google_credentials" | "service_account_impersonation")) =
            string(obj, "authProviderType")?.as_deref()
    {
        return Ok(Read::Skipped(format!(
            "{NOT_CHECKED}authProviderType {google:?} needs a \"url\" or \"httpUrl\"; Gemini CLI does not start this server either"
        )));
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
    // block/goose crates/goose/src/agents/extension.rs: an `sse` extension is kept
    // only so old config files still load; Goose shows none of its tools.
    if host == Host::Goose && kind.as_deref() == Some("sse") {
        return Ok(Read::Skipped(
            "type: sse (Goose no longer runs SSE extensions: \"SSE is unsupported\")".into(),
        ));
    }
    let tr = |value: String, field: &str| {
        vars::translate(&value, host).map_err(|m| format!("{m} (in {field})"))
    };
    let http_url = string(obj, "httpUrl")?;
    // Gemini CLI takes the older `httpUrl` over `url`, always as Streamable HTTP
    // (google-gemini/gemini-cli packages/core/src/tools/mcp-client.ts
    // `createUrlTransport`, "Priority 1: httpUrl (deprecated)").
    let gemini_http_url = if host == Host::GeminiCli {
        http_url.clone()
    } else {
        None
    };
    let url = match (
        gemini_http_url.clone(),
        string(obj, "url")?,
        string(obj, "serverUrl")?,
        string(obj, "uri")?,
    ) {
        (Some(u), ..) => Some(u),
        (None, Some(u), _, _) | (None, None, Some(u), _) | (None, None, None, Some(u)) => Some(u),
        (None, None, None, None) => http_url,
    };
    let (command, mut args, nested_env) = command_and_args(obj)?;
    if command.is_some() && url.is_some() {
        return Err(
            "has both \"command\" and \"url\"; a stdio server has a command, a remote one a url"
                .into(),
        );
    }
    let remote = match kind.as_deref() {
        _ if gemini_http_url.is_some() && command.is_none() => Some(RemoteKind::StreamableHttp),
        Some("stdio" | "local") => None,
        None if url.is_some() && command.is_none() => Some(default_remote(host)),
        None => None,
        Some(other) => match remote_kind(other) {
            Some(kind) => Some(kind),
            None => return Err(format!("unknown transport type {other:?}")),
        },
    };
    // Claude Code's command printing JSON headers (code.claude.com/docs/en/mcp, "Use
    // dynamic headers for custom authentication"); no other client has the key.
    let headers_helper = match (host, remote) {
        // An empty one is none, as Claude Code tests it.
        (Host::ClaudeCode, Some(_)) => string(obj, "headersHelper")?
            .filter(|c| !c.is_empty())
            .map(Box::new),
        _ => None,
    };
    let mut guarded = false;
    let mut allow_scripts = false;
    // Fields mcp-lock writes as `${NAME}` from a member naming the variable.
    let mut named = Vec::new();
    // Those of them the host leaves out, or refuses to start with an empty value.
    let (mut optional, mut non_empty) = (Vec::new(), Vec::new());
    let mut environ = environ::Environ::default();
    let transport = if let Some(kind) = remote {
        let mut headers = string_map(obj, "headers")?;
        headers.extend(string_map(obj, "http_headers")?);
        if let Some(options) = obj.get("requestOptions").and_then(Value::as_object) {
            headers.extend(string_map(options, "headers")?);
        }
        // Codex names the variables that hold header values.
        // An unset or blank one leaves its header out (openai/codex
        // codex-rs/rmcp-client/src/utils.rs `build_default_headers`).
        for (header, var) in string_map(obj, "env_http_headers")? {
            named.push(format!("headers.{header}"));
            optional.push(format!("headers.{header}"));
            headers.insert(header, format!("${{{var}}}"));
        }
        // An unset or empty one stops the server starting (openai/codex
        // codex-rs/core/src/mcp_connection_manager.rs `resolve_bearer_token`).
        if let Some(var) = string(obj, "bearer_token_env_var")? {
            named.push("headers.Authorization".into());
            non_empty.push("headers.Authorization".into());
            headers.insert("Authorization".into(), format!("Bearer ${{{var}}}"));
        }
        // continuedev/continue core/context/mcp/MCPConnection.ts: `apiKey` is sent as
        // `Authorization: Bearer <apiKey>`, spread after requestOptions.headers, so it
        // wins over an Authorization header written there.
        if host == Host::Continue
            && let Some(key) = string(obj, "apiKey")?
        {
            headers.retain(|name, _| !name.eq_ignore_ascii_case("authorization"));
            headers.insert("Authorization".into(), format!("Bearer {key}"));
        }
        // Goose fills a header's `${VAR}` / `$VAR` from the extension's own envs and
        // env_keys only (see `goose::header`); an env_keys value is read at connect time.
        if host == Host::Goose {
            let env_keys = string_list(obj, "env_keys")?.unwrap_or_default();
            let known = goose::header_variables(&string_map(obj, "envs")?, &env_keys);
            let templates: Vec<String> = env_keys
                .iter()
                .map(|k| goose::env_key_template(k))
                .collect();
            for (k, v) in headers.iter_mut() {
                let filled = goose::header(v, &known);
                // Only what `goose::header` put in is an env_keys value: the same text
                // written in the header already is sent as written.
                let count = |text: &str| -> usize {
                    templates
                        .iter()
                        .map(|t| text.matches(t.as_str()).count())
                        .sum()
                };
                let inserted = count(&filled) > count(v);
                let mut leftover = filled.clone();
                for t in &templates {
                    leftover = leftover.replace(t.as_str(), "");
                }
                if inserted {
                    if leftover.contains("${") || count(v) > 0 {
                        return Err(format!(
                            "\"headers.{k}\" holds an env_keys value beside other ${{...}} text, which Goose sends as written and mcp-lock cannot; write that text without \"${{\""
                        ));
                    }
                    named.push(format!("headers.{k}"));
                }
                *v = filled;
            }
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
            if host == Host::VsCode && key == "env" {
                let (set, unset) = vscode_env(obj)?;
                env.extend(set);
                if !unset.is_empty() {
                    environ.inherit = Some(environ::Inherit::AllBut(unset));
                }
                continue;
            }
            env.extend(string_map(obj, key)?);
        }
        // VS Code appends an `env` PATH to the one the server would inherit rather
        // than replacing it (microsoft/vscode src/vs/workbench/api/node/extHostMcpNode.ts,
        // `startNodeMpc`: "we want to append to the existing PATH").
        if host == Host::VsCode {
            environ.path_appends = env.keys().any(|k| k.eq_ignore_ascii_case("PATH"));
        }
        // Codex's env_vars and Goose's env_keys name variables to pass through.
        // Codex passes a name only when it is set (openai/codex
        // codex-rs/rmcp-client/src/utils.rs `create_env_for_mcp_server`).
        let env_vars = env_var_names(obj)?;
        let env_keys = string_list(obj, "env_keys")?.unwrap_or_default();
        for (var, passed_when_set) in env_vars
            .iter()
            .map(|v| (v, true))
            .chain(env_keys.iter().map(|v| (v, false)))
        {
            if let std::collections::btree_map::Entry::Vacant(slot) = env.entry(var.clone()) {
                // Goose passes the env_keys name as written, its value read from the
                // name upper-cased (block/goose crates/goose/src/config/base.rs
                // `get_secret`).
                slot.insert(match host {
                    Host::Goose => goose::env_key_template(var),
                    _ => format!("${{{var}}}"),
                });
                named.push(format!("env.{var}"));
                if passed_when_set {
                    optional.push(format!("env.{var}"));
                }
            }
        }
        // Goose sets the server's PATH itself after the extension's envs
        // (block/goose crates/goose/src/agents/extension_manager.rs,
        // `child_process_client`): an `envs.PATH` never reaches the server.
        if host == Host::Goose {
            env.remove("PATH");
        }
        let env = env
            .into_iter()
            .map(|(k, v)| {
                let field = format!("env.{k}");
                tr(v, &field).map(|v| (k, v))
            })
            .collect::<Result<_, _>>()?;
        // VS Code reads `envFile` into the environment when it starts the server,
        // under `env` (microsoft/vscode src/vs/workbench/api/node/extHostMcpNode.ts,
        // `startNodeMpc`); Cursor's docs list the same field for stdio servers.
        // Other hosts have no such field.
        if matches!(host, Host::VsCode | Host::Cursor)
            && let Some(file) = string(obj, "envFile")?
        {
            environ.env_file = Some(tr(file, "envFile")?);
        }
        // Codex starts the server with only a few of its own variables and the
        // entry's `env_vars` (openai/codex codex-rs/rmcp-client/src/utils.rs,
        // `create_env_for_mcp_server`).
        if host == Host::Codex {
            environ.inherit = Some(environ::codex_inherited(&env_vars));
        }
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
        allow_scripts = super::wrapped::guard_allows_scripts(&command, &args);
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
        filter: filter(obj, host)?,
        refusal: refusal(obj, host, remote.is_some())?.map(Box::new),
        personal: false,
        oauth_client: oauth_client(obj, &tr)?,
        client_metadata_url: client_metadata_url(obj)?,
        oauth_off: obj.get("oauth") == Some(&Value::Bool(false)),
        guarded,
        allow_scripts,
        vars: vars::Variables {
            syntax: vars::Syntax::of(host),
            named,
            optional,
            non_empty,
        },
        headers_helper,
        environ: (environ != environ::Environ::default()).then(|| Box::new(environ)),
    }))
}

/// Why an entry is skipped when mcp-lock cannot start or reach it as its host does:
/// warned of, not only listed, since the host does run it.
pub const NOT_CHECKED: &str = "not checked: ";

/// The first Codex `env_vars` table whose variable is read on a remote executor.
fn remote_env_var(obj: &Map<String, Value>) -> Option<String> {
    obj.get("env_vars")?.as_array()?.iter().find_map(|item| {
        let table = item.as_object()?;
        (table.get("source")?.as_str()? == "remote")
            .then(|| table.get("name")?.as_str().map(str::to_string))?
    })
}

/// Codex's `env_vars`: names, or tables `{ name = "X", source = "local" }`
/// (openai/codex codex-rs/config/src/mcp_types.rs `McpServerEnvVar`,
/// `validate_source`). `source = "remote"` reads the variable on a remote executor
/// Codex runs the server on, which mcp-lock cannot do.
fn env_var_names(obj: &Map<String, Value>) -> Result<Vec<String>, String> {
    let Some(items) = obj.get("env_vars").filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let items = items.as_array().ok_or("\"env_vars\" is not an array")?;
    items
        .iter()
        .map(|item| match item {
            Value::String(name) => Ok(name.clone()),
            Value::Object(table) => {
                if let Some(key) = table.keys().find(|k| *k != "name" && *k != "source") {
                    return Err(format!(
                        "an \"env_vars\" table has an unknown key {key:?}; Codex reads only name and source"
                    ));
                }
                let name = string(table, "name")?
                    .ok_or("an \"env_vars\" table has no \"name\"; write { name = \"VAR\" }")?;
                match string(table, "source")?.as_deref() {
                    None | Some("local") => Ok(name),
                    Some("remote") => Err(format!(
                        "env_vars entry {name:?} has source = \"remote\", read where Codex runs the server remotely; mcp-lock starts servers on this machine: use source = \"local\" or set {name} in \"env\""
                    )),
                    Some(other) => Err(format!(
                        "env_vars entry {name:?} has source = {other:?}; Codex accepts only \"local\" or \"remote\""
                    )),
                }
            }
            _ => Err("\"env_vars\" holds a value that is neither a name nor a { name, source } table".into()),
        })
        .collect()
}

/// cline/cline apps/vscode/src/services/mcp/schemas.ts: the Cline CLI writes
/// `{"transport": {"type", ...}, "disabled", ...}`; Cline hoists the transport's
/// members to the top and keeps only the entry's own settings beside them.
fn cline_flattened(obj: &Map<String, Value>, transport: &Value) -> Result<Value, String> {
    let transport = transport
        .as_object()
        .ok_or("\"transport\" is not an object")?;
    let members: &[&str] = match transport.get("type").and_then(Value::as_str) {
        Some("stdio") => &["type", "command", "args", "cwd", "env"],
        Some("sse" | "streamableHttp") => &["type", "url", "headers"],
        _ => {
            return Err(
                "\"transport.type\" must be \"stdio\", \"sse\" or \"streamableHttp\"".into(),
            );
        }
    };
    let mut flat = Map::new();
    for key in members {
        if let Some(v) = transport.get(*key) {
            flat.insert(key.to_string(), v.clone());
        }
    }
    for key in ["disabled", "autoApprove", "timeout", "oauth"] {
        if let Some(v) = obj.get(key) {
            flat.insert(key.to_string(), v.clone());
        }
    }
    Ok(Value::Object(flat))
}

/// zed-industries/zed `ContextServerSettingsContent` (untagged): an entry with neither
/// a command nor a url is the `Extension` form, `{"settings": ...}` for a server an
/// extension launches; older releases tagged it `"source": "extension"`.
fn zed_extension(obj: &Map<String, Value>) -> bool {
    let launchable = obj.contains_key("command") || obj.contains_key("url");
    !launchable
        && (obj.get("source") == Some(&Value::String("extension".into()))
            || obj.contains_key("settings"))
}

/// The remote entry `name` of a sidecar wrap wrote, read as if it were still here.
fn read_sidecar_entry(name: &str, sidecar: &str, host: Host) -> Result<Read, String> {
    let text = crate::base::files::read_regular_text(sidecar.as_ref(), super::MAX_DISCOVERED_BYTES).map_err(|e| {
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
        // It launches the guard, which reaches the server through its remote bridge.
        Read::Server(spec) if matches!(spec.transport, TransportSpec::Remote { .. }) => {
            Ok(Read::Server(ServerSpec {
                guarded: true,
                ..spec
            }))
        }
        _ => Err(format!(
            "is wrapped by mcp-lock, but its entry in {sidecar} is not a remote server"
        )),
    }
}

/// `"oauth": {"clientId": ..., "clientSecret": ..., "callbackPort": N}` (Claude Code's
/// spelling; `client_id` / `client_secret` / `callback_port` too), or `"oauth": false`
/// (sst/opencode packages/opencode/src/config/mcp.ts: "disable OAuth auto-detection").
/// opencode's `scope` and `redirectUri` are not used: `mcp-lock login` asks for the
/// scope the server advertises and listens on its own callback. The id and secret are
/// written in the host's variable syntax (`{env:X}`, `${{ secrets.X }}`), translated
/// by `tr` like every other member.
fn oauth_client(
    obj: &Map<String, Value>,
    tr: &dyn Fn(String, &str) -> Result<String, String>,
) -> Result<Option<Box<OAuthClientSpec>>, String> {
    let Some(oauth) = obj.get("oauth") else {
        return Ok(None);
    };
    if oauth == &Value::Bool(false) {
        return Ok(None);
    }
    let Some(oauth) = oauth.as_object() else {
        return Err("\"oauth\" must be an object, or false to turn OAuth off".into());
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
    let client_secret = match text(["clientSecret", "client_secret"])? {
        Some(secret) => Some(tr(secret, "oauth.clientSecret")?),
        None => None,
    };
    let client_credentials = match text(["grant", "grant_type"])?.as_deref() {
        None | Some("authorization_code") => false,
        Some("client_credentials") => true,
        Some(other) => {
            return Err(format!(
                "\"oauth.grant\" must be \"client_credentials\" or \"authorization_code\", not {:?}",
                crate::base::text::escape_cut(other, 60)
            ));
        }
    };
    let private_key = match text(["privateKey", "private_key"])? {
        Some(key) => Some(tr(key, "oauth.privateKey")?),
        None => None,
    };
    let signing_algorithm = text(["signingAlgorithm", "signing_algorithm"])?;
    let token_endpoint_auth_method =
        text(["tokenEndpointAuthMethod", "token_endpoint_auth_method"])?;
    if let Some(method) = &token_endpoint_auth_method
        && !matches!(
            method.as_str(),
            "client_secret_basic" | "client_secret_post" | "none"
        )
    {
        return Err(format!(
            "\"oauth.tokenEndpointAuthMethod\" must be client_secret_basic, client_secret_post or none, not {:?}",
            crate::base::text::escape_cut(method, 60)
        ));
    }
    if let Some(alg) = &signing_algorithm
        && !matches!(alg.as_str(), "ES256" | "RS256")
    {
        return Err(format!(
            "\"oauth.signingAlgorithm\" must be ES256 or RS256, not {:?}",
            crate::base::text::escape_cut(alg, 60)
        ));
    }
    if client_credentials && client_secret.is_none() && private_key.is_none() {
        return Err(
            "\"oauth.grant\": \"client_credentials\" needs \"clientSecret\" or \"privateKey\""
                .into(),
        );
    }
    if !client_credentials && private_key.is_some() {
        return Err(
            "\"oauth.privateKey\" is for \"grant\": \"client_credentials\"; a login with a browser uses no key".into(),
        );
    }
    Ok(Some(Box::new(OAuthClientSpec {
        client_id: tr(client_id, "oauth.clientId")?,
        client_secret,
        callback_port,
        client_credentials,
        private_key,
        signing_algorithm,
        scope: text(["scope", "scopes"])?,
        token_endpoint_auth_method,
    })))
}

/// `"oauth": {"clientMetadataUrl": "https://..."}`: a Client ID Metadata Document's
/// address, which must be https with a path (the document's URL is the client id).
fn client_metadata_url(obj: &Map<String, Value>) -> Result<Option<String>, String> {
    let Some(value) = obj.get("oauth").and_then(Value::as_object).and_then(|o| {
        o.get("clientMetadataUrl")
            .or_else(|| o.get("client_metadata_url"))
    }) else {
        return Ok(None);
    };
    let text = value
        .as_str()
        .ok_or("\"oauth.clientMetadataUrl\" must be a string")?;
    check_client_metadata_url(text).map_err(|e| format!("\"oauth.clientMetadataUrl\": {e}"))?;
    Ok(Some(text.to_string()))
}

/// A Client ID Metadata Document's address: https, with a path, no fragment.
pub fn check_client_metadata_url(text: &str) -> Result<(), String> {
    let shown = crate::base::text::escape_cut(text, 200);
    let url = url::Url::parse(text).map_err(|e| format!("{shown:?} is not a URL: {e}"))?;
    if url.scheme() != "https" || url.path() == "/" || url.fragment().is_some() {
        return Err(format!(
            "{shown:?} must be an https address with a path and no fragment (a Client ID Metadata Document)"
        ));
    }
    Ok(())
}

/// The type names clients give remote transports.
fn remote_kind(name: &str) -> Option<RemoteKind> {
    match name {
        "remote" => Some(RemoteKind::StreamableHttp),
        other => RemoteKind::parse(other),
    }
}

/// What a `url` with no `type` means to `host`. Cline takes it as the legacy SSE
/// endpoint (cline/cline apps/vscode/src/services/mcp/schemas.ts: the SSE arm comes
/// first "so when type is not specified, it will default to sse"). Everyone else tries
/// Streamable HTTP, falling back to legacy SSE, as [`RemoteKind::StreamableHttp`]
/// does: Gemini CLI (google-gemini/gemini-cli packages/core/src/tools/mcp-client.ts,
/// "url without type (default to HTTP)" and its SSE fallback) and Continue
/// (continuedev/continue core/context/mcp/MCPConnection.ts, "try http and fall back
/// to sse").
fn default_remote(host: Host) -> RemoteKind {
    match host {
        Host::Cline => RemoteKind::Sse,
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

/// Why mcp-lock cannot contact the server as its host would, when it cannot: Gemini
/// CLI's Google authentication (google-gemini/gemini-cli
/// packages/core/src/tools/mcp-client.ts `createAuthProvider`: `authProviderType`
/// `google_credentials` or `service_account_impersonation` puts a Google token on
/// every request; `dynamic_discovery` is OAuth, as for any server).
fn refusal(obj: &Map<String, Value>, host: Host, remote: bool) -> Result<Option<String>, String> {
    // Codex's `http_headers_helper` runs a command whose JSON output becomes headers;
    // its exact contract is not read here yet, so its server is refused, not
    // contacted without the headers Codex would send.
    if host == Host::Codex && remote && obj.get("http_headers_helper").is_some() {
        return Ok(Some(
            "Codex's http_headers_helper is not run by mcp-lock; give the headers through env_http_headers or bearer_token_env_var instead, or leave the server out".into(),
        ));
    }
    if host != Host::GeminiCli {
        return Ok(None);
    }
    match string(obj, "authProviderType")?.as_deref() {
        None | Some("dynamic_discovery") => Ok(None),
        Some(google @ ("google_credentials" | "service_account_impersonation")) if remote => {
            Ok(Some(format!(
                "authProviderType {google:?} (Gemini CLI's Google authentication) cannot be done by mcp-lock; pin the server with a token in \"headers\" (Authorization) instead, or leave it out"
            )))
        }
        Some(google @ ("google_credentials" | "service_account_impersonation")) => Err(format!(
            "authProviderType {google:?} needs a \"url\" or \"httpUrl\", as in Gemini CLI"
        )),
        Some(other) => Err(format!("unknown authProviderType {other:?}")),
    }
}

/// The tools the host shows its agent.
fn filter(obj: &Map<String, Value>, host: Host) -> Result<ToolFilter, String> {
    let mut include: Option<Vec<String>> = None;
    // An empty list shows nothing to Gemini CLI (google-gemini/gemini-cli
    // packages/core/src/tools/mcp-client.ts `isEnabled`) and to Codex (openai/codex
    // codex-rs/core/src/mcp_connection_manager.rs `ToolFilter::allows`), but every
    // tool to Goose, which writes `available_tools: []` on each extension (block/goose
    // crates/goose/src/agents/extension.rs `is_tool_available`).
    for key in ["includeTools", "enabled_tools", "available_tools"] {
        if let Some(mut names) = string_list(obj, key)? {
            if key == "available_tools" && names.is_empty() {
                continue;
            }
            // Gemini CLI shows a tool that an `includeTools` entry names, or begins
            // with the name and `(`: "run_shell_command(git)" shows run_shell_command
            // (`isEnabled`, packages/core/src/tools/mcp-client.ts). Each name before a
            // `(` is listed too; `excludeTools` stays exact, as there.
            if host == Host::GeminiCli && key == "includeTools" {
                let prefixes: Vec<String> = names
                    .iter()
                    .flat_map(|n| n.match_indices('(').map(|(at, _)| n[..at].to_string()))
                    .collect();
                names.extend(prefixes);
            }
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

#[cfg(test)]
mod tests;
