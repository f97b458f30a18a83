//! One conversation over any transport: agree on an era, then read every page.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use super::{
    ClientOptions, LEGACY_VERSION, Listing, MODERN_VERSION, Outcome, ProtocolChoice, RpcError,
    ServerSession, Transport, is_modern, seconds,
};
use crate::base::json::Json;
use crate::contract::hash::{HashedTool, instructions_hash};
use crate::contract::surface::Kind;

/// Why a conversation could not start.
#[derive(Debug)]
pub(crate) enum Opening {
    /// Nothing could be learned; the message says why.
    Failed(String),
    /// The stdio process ended during the era probe: start it again without one.
    Restart,
    /// The endpoint refused a Streamable HTTP POST the way a legacy HTTP+SSE server does.
    NotStreamable(String),
    /// The handshake after the era probe was refused as only a modern server refuses
    /// it: the probe timed out on a server slow to start, not old. Start it again and
    /// speak the modern era, without the probe's short timeout.
    SlowModern(String),
}

impl Opening {
    pub(crate) fn message(self) -> String {
        match self {
            Opening::Failed(message)
            | Opening::NotStreamable(message)
            | Opening::SlowModern(message) => message,
            Opening::Restart => "the server exited during the protocol probe".into(),
        }
    }
}

/// JSON-RPC error codes only a modern server sends: header mismatch, missing client
/// capability, unsupported protocol version.
const MODERN_ERRORS: [i64; 3] = [-32020, -32021, -32022];

/// What a session carries into the listing.
struct Opened {
    session: ServerSession,
    /// The per-request `_meta` of the modern era; `None` after a handshake.
    meta: Option<Value>,
    declares_tools: bool,
    /// The server's capabilities: which other kinds it says it lists.
    capabilities: Option<Json>,
}

/// Opens a session in the era `options.protocol` asks for and lists every tool.
pub(crate) async fn open_and_list<T: Transport>(
    conn: &mut T,
    options: &ClientOptions,
    deadline: Instant,
) -> Result<Outcome, Opening> {
    let opened = match &options.protocol {
        ProtocolChoice::Newest => {
            match discover(conn, options, deadline, MODERN_VERSION, true).await? {
                Discovery::Modern(opened) => *opened,
                Discovery::Legacy(_) => handshake(conn, options, deadline, None).await?,
            }
        }
        ProtocolChoice::HandshakeOnly => handshake(conn, options, deadline, None).await?,
        ProtocolChoice::Exactly(version) if is_modern(version) => {
            match discover(conn, options, deadline, version, false).await? {
                Discovery::Modern(opened) => *opened,
                Discovery::Legacy(why) => {
                    return Err(Opening::Failed(format!(
                        "the server no longer speaks protocol {version}, which the lock pinned ({why}); run `mcp-lock update` to re-pin it"
                    )));
                }
            }
        }
        ProtocolChoice::Exactly(version) => {
            handshake(conn, options, deadline, Some(version)).await?
        }
    };
    Ok(list_all(conn, options, deadline, opened).await)
}

enum Discovery {
    Modern(Box<Opened>),
    /// The server is (or, for this version, acts as) a handshake-era one.
    Legacy(String),
}

/// The `_meta` every modern request carries.
fn modern_meta(options: &ClientOptions, version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": options.client_info,
        "io.modelcontextprotocol/clientCapabilities": options.capabilities,
    })
}

fn request_deadline(options: &ClientOptions, deadline: Instant) -> Instant {
    deadline.min(Instant::now() + options.request_timeout)
}

/// `server/discover`, read the way the spec's backward-compatibility sections say: a
/// result or a modern error means a modern server, anything else a legacy one. A
/// first refusal with `-32022` whose `supported` list names a version this client
/// speaks in the modern era is retried once with it (the 2026-07-28 negotiation).
async fn discover<T: Transport>(
    conn: &mut T,
    options: &ClientOptions,
    deadline: Instant,
    version: &str,
    probing: bool,
) -> Result<Discovery, Opening> {
    match discover_once(conn, options, deadline, version, probing).await? {
        Negotiated::Done(discovery) => Ok(discovery),
        Negotiated::Retry(supported) => {
            match discover_once(conn, options, deadline, &supported, probing).await? {
                Negotiated::Done(discovery) => Ok(discovery),
                Negotiated::Retry(again) => Err(Opening::Failed(format!(
                    "server/discover: the server refused protocol {supported} twice with -32022 (it says it supports {again})"
                ))),
            }
        }
    }
}

/// One `server/discover`, or the version to retry with.
enum Negotiated {
    Done(Discovery),
    Retry(String),
}

async fn discover_once<T: Transport>(
    conn: &mut T,
    options: &ClientOptions,
    deadline: Instant,
    version: &str,
    probing: bool,
) -> Result<Negotiated, Opening> {
    options.status.set("discovering");
    let meta = modern_meta(options, version);
    let mut until = request_deadline(options, deadline);
    if probing {
        until = until.min(Instant::now() + options.discover_timeout);
    }
    let failed = |e: RpcError| Opening::Failed(describe("server/discover", e, options, deadline));
    match conn
        .request("server/discover", json!({"_meta": meta}), until)
        .await
    {
        Ok(result) => {
            let supported = string_list(result.get("supportedVersions"));
            if supported.iter().any(|v| v == version) {
                let session = read_discover(&result, version, options, conn.name())
                    .map_err(Opening::Failed)?;
                let declares_tools = result.get("capabilities").and_then(|c| c.get("tools"));
                let capabilities = result.get("capabilities").cloned();
                return Ok(Negotiated::Done(Discovery::Modern(Box::new(Opened {
                    capabilities,
                    session,
                    meta: Some(meta),
                    declares_tools: declares_tools.is_some(),
                }))));
            }
            choose_legacy(&supported, version).map(Negotiated::Done)
        }
        // Unsupported version; over HTTP the same error arrives inside a 400.
        Err(
            RpcError::Remote {
                code: -32022, data, ..
            }
            | RpcError::Http {
                rpc: Some((-32022, _, data)),
                ..
            },
        ) => {
            let data = data.as_ref().map(Json::from_value);
            let supported = string_list(data.as_ref().and_then(|d| d.get("supported")));
            // Ours first, then the newest modern version both speak.
            let modern = [version, MODERN_VERSION]
                .into_iter()
                .find(|v| is_modern(v) && supported.iter().any(|s| s == v));
            match modern {
                Some(again) => Ok(Negotiated::Retry(again.to_string())),
                None => choose_legacy(&supported, version).map(Negotiated::Done),
            }
        }
        Err(e @ RpcError::Remote { code, .. }) if MODERN_ERRORS.contains(&code) => Err(failed(e)),
        // A 4xx without a modern error is a handshake-era server (401/403 are Auth).
        Err(e @ RpcError::Http { status, .. }) if (400..500).contains(&status) => {
            if is_modern_http_error(&e) {
                Err(failed(e))
            } else {
                Ok(Negotiated::Done(Discovery::Legacy(e.to_string())))
            }
        }
        Err(e @ RpcError::Remote { .. }) => Ok(Negotiated::Done(Discovery::Legacy(e.to_string()))),
        Err(RpcError::Timeout) if probing && Instant::now() < deadline => {
            Ok(Negotiated::Done(Discovery::Legacy(format!(
                "no answer within {}",
                seconds(options.discover_timeout)
            ))))
        }
        Err(RpcError::Closed(_)) if probing && conn.name() == "stdio" => Err(Opening::Restart),
        Err(e) => Err(failed(e)),
    }
}

fn is_modern_http_error(e: &RpcError) -> bool {
    matches!(e, RpcError::Http { rpc: Some((code, _, _)), .. } if MODERN_ERRORS.contains(code))
}

/// A modern server that does not speak `version`: fall back to the handshake if it
/// lists a handshake-era version, else give up.
fn choose_legacy(supported: &[String], version: &str) -> Result<Discovery, Opening> {
    let list = supported.join(", ");
    if supported.iter().any(|v| !is_modern(v)) || supported.is_empty() {
        Ok(Discovery::Legacy(format!(
            "it does not support {version}; it supports: {list}"
        )))
    } else {
        Err(Opening::Failed(format!(
            "the server supports only protocol versions {list}; mcp-lock speaks {MODERN_VERSION} and handshake versions up to {LEGACY_VERSION}"
        )))
    }
}

fn string_list(value: Option<&Json>) -> Vec<String> {
    value
        .and_then(Json::as_array)
        .map(|items| items.iter().filter_map(Json::as_str).collect())
        .unwrap_or_default()
}

/// The `initialize` handshake, asking for `exact` or the newest handshake version.
async fn handshake<T: Transport>(
    conn: &mut T,
    options: &ClientOptions,
    deadline: Instant,
    exact: Option<&str>,
) -> Result<Opened, Opening> {
    options.status.set("initializing");
    let params = json!({
        "protocolVersion": exact.unwrap_or(&options.handshake_version),
        "capabilities": options.capabilities,
        "clientInfo": options.client_info,
    });
    let init = match conn
        .request("initialize", params, request_deadline(options, deadline))
        .await
    {
        Ok(result) => result,
        Err(e @ RpcError::Http { status, .. })
            if matches!(status, 400 | 404 | 405) && !is_modern_http_error(&e) =>
        {
            return Err(Opening::NotStreamable(describe(
                "initialize",
                e,
                options,
                deadline,
            )));
        }
        Err(RpcError::Remote {
            code: -32022,
            message,
            data,
        }) if exact.is_none() && options.protocol == ProtocolChoice::HandshakeOnly => {
            // The version this client asks for is not one the server speaks: say which
            // it does, as the error's data lists them.
            let supported = data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .and_then(Value::as_array)
                .map(|v| {
                    v.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .filter(|s| !s.is_empty())
                .map(|s| format!("; it supports {s}"))
                .unwrap_or_default();
            return Err(Opening::Failed(format!(
                "initialize: the server does not speak protocol {}, which this client asks for (error -32022: {message}){supported}",
                options.handshake_version
            )));
        }
        Err(e @ RpcError::Remote { code, .. })
            if exact.is_none() && MODERN_ERRORS.contains(&code) =>
        {
            // A modern server refusing the handshake: the probe only timed out.
            return Err(Opening::SlowModern(describe(
                "initialize",
                e,
                options,
                deadline,
            )));
        }
        Err(e @ RpcError::Remote { .. }) if exact.is_some() => {
            return Err(Opening::Failed(format!(
                "the server no longer speaks protocol {}, which the lock pinned (initialize: {e}); run `mcp-lock update` to re-pin it",
                exact.unwrap_or_default()
            )));
        }
        Err(e) => {
            return Err(Opening::Failed(describe(
                "initialize",
                e,
                options,
                deadline,
            )));
        }
    };
    let session = read_session(&init, options, conn.name()).map_err(Opening::Failed)?;
    if let Some(version) = exact
        && session.protocol_version != version
    {
        return Err(Opening::Failed(format!(
            "the server no longer speaks protocol {version}, which the lock pinned (it answered initialize with {}); run `mcp-lock update` to re-pin it",
            session.protocol_version
        )));
    }
    if let Err(e) = conn
        .notify(
            "notifications/initialized",
            None,
            request_deadline(options, deadline),
        )
        .await
    {
        return Err(Opening::Failed(describe(
            "notifications/initialized",
            e,
            options,
            deadline,
        )));
    }
    let declares_tools = init.get("capabilities").and_then(|c| c.get("tools"));
    let capabilities = init.get("capabilities").cloned();
    Ok(Opened {
        capabilities,
        declares_tools: declares_tools.is_some(),
        session,
        meta: None,
    })
}

fn describe(what: &str, e: RpcError, options: &ClientOptions, deadline: Instant) -> String {
    match e {
        RpcError::Timeout => format!(
            "{what}: no answer within {}",
            timeout_text(options, deadline)
        ),
        e => format!("{what}: {e}"),
    }
}

async fn list_all<T: Transport>(
    conn: &mut T,
    options: &ClientOptions,
    deadline: Instant,
    opened: Opened,
) -> Outcome {
    let Opened {
        session,
        meta,
        declares_tools,
        capabilities,
    } = opened;
    let tools = list_kind(
        conn,
        options,
        deadline,
        Kind::Tool,
        declares_tools,
        meta.as_ref(),
    )
    .await;
    let mut listing = match tools {
        Ok(listing) => listing,
        // Nothing could be read at all.
        Err((partial, None)) => {
            return Outcome::Unverifiable {
                error: partial.error,
            };
        }
        Err((partial, Some(error))) => {
            return Outcome::Incomplete {
                session,
                listing: partial.listing,
                error,
            };
        }
    };
    // Then every other kind the surface covers. One the server declares but cannot
    // list makes the whole listing incomplete: never a silent "nothing there". Only a
    // list method it declares but answers with -32601 (method not found) on the first
    // page is none, said in a note: that server has none to offer.
    for kind in options.surface.extra_kinds() {
        let declared = capabilities
            .as_ref()
            .and_then(|c| c.get(kind.capability()))
            .is_some_and(|c| !matches!(c, Json::Null));
        let items = if declared {
            match list_kind(conn, options, deadline, kind, true, meta.as_ref()).await {
                Ok(other) => {
                    listing.not_implemented.extend(other.not_implemented);
                    other.tools
                }
                Err((_, error)) => {
                    return Outcome::Incomplete {
                        session,
                        listing,
                        error: error.unwrap_or_default(),
                    };
                }
            }
        } else {
            // The server offers none of this kind.
            Vec::new()
        };
        *listing.kind_mut(kind) = Some(items);
    }
    Outcome::Complete { session, listing }
}

/// A failed listing of one kind: what was read, and the error.
struct Partial {
    listing: Listing,
    error: String,
}

/// The list-changed notifications of one kind received so far.
fn changes_of(counters: crate::servers::client::Counters, kind: Kind) -> usize {
    match kind {
        Kind::Tool => counters.list_changed,
        Kind::Prompt => counters.prompts_changed,
        Kind::ResourceTemplate | Kind::Resource => counters.resources_changed,
    }
}

/// Lists every page of one kind, reading again (up to [`MAX_RESTARTS`] times) when its
/// list changed midway. Err: what was read, and `Some(error)` when it failed after the
/// first page or on a later kind; `None` with the error in the partial when nothing
/// could be read at all.
async fn list_kind<T: Transport>(
    conn: &mut T,
    options: &ClientOptions,
    deadline: Instant,
    kind: Kind,
    declared: bool,
    meta: Option<&Value>,
) -> Result<Listing, (Partial, Option<String>)> {
    let mut restarts = 0;
    loop {
        let pass = list_once(conn, options, deadline, kind, declared, meta).await;
        let (listing, error) = match pass {
            Pass::Done(listing) => return Ok(listing),
            Pass::Failed { listing, error }
                if listing.pages == 0 && restarts == 0 && kind == Kind::Tool =>
            {
                let error = describe_pass(error, options, deadline);
                return Err((Partial { listing, error }, None));
            }
            Pass::Failed { listing, error } => (listing, describe_pass(error, options, deadline)),
            Pass::ChangedMidway(_) if restarts < MAX_RESTARTS => {
                restarts += 1;
                continue;
            }
            Pass::ChangedMidway(listing) => (
                listing,
                format!(
                    "the {} list changed while it was being read, {} times in a row",
                    kind.noun(),
                    restarts + 1
                ),
            ),
        };
        return Err((
            Partial {
                listing,
                error: error.clone(),
            },
            Some(error),
        ));
    }
}

/// How many times a listing is read again after the server announced a change in
/// the middle of it.
const MAX_RESTARTS: usize = 3;

/// One pass over every page.
enum Pass {
    Done(Listing),
    /// `notifications/tools/list_changed` arrived between pages: they may mix two
    /// versions of the list.
    ChangedMidway(Listing),
    Failed {
        listing: Listing,
        error: PassError,
    },
}

enum PassError {
    Rpc(String, RpcError),
    Other(String),
}

fn describe_pass(error: PassError, options: &ClientOptions, deadline: Instant) -> String {
    match error {
        PassError::Rpc(what, RpcError::Timeout) => {
            format!(
                "{what}: no answer within {}",
                timeout_text(options, deadline)
            )
        }
        PassError::Rpc(what, e) => format!("{what}: {e}"),
        PassError::Other(message) => message,
    }
}

async fn list_once<T: Transport>(
    conn: &mut T,
    options: &ClientOptions,
    deadline: Instant,
    kind: Kind,
    declares_tools: bool,
    meta: Option<&Value>,
) -> Pass {
    let (method, member) = kind.list_method();
    // Tools keep their messages as they were; other kinds say which list it was.
    let prefix = if kind == Kind::Tool {
        String::new()
    } else {
        format!("{method}: ")
    };
    let mut listing = Listing::default();
    let mut seen_cursors = HashSet::new();
    let mut cursor: Option<String> = None;
    let mut changes_at_first_page = 0;
    loop {
        let mut params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        if let Some(meta) = meta {
            params["_meta"] = meta.clone();
        }
        options
            .status
            .set(&format!("listing page {}", listing.pages + 1));
        let request_deadline = deadline.min(Instant::now() + options.request_timeout);
        let page = match conn.request(method, params, request_deadline).await {
            Ok(page) => page,
            Err(RpcError::Remote { code: -32601, .. }) if !declares_tools && listing.pages == 0 => {
                // No capability and no list method: a server with none of this kind.
                return Pass::Done(listing);
            }
            Err(RpcError::Remote { code: -32601, .. })
                if kind != Kind::Tool && listing.pages == 0 =>
            {
                // The capability declared, its list method not there: the server has
                // none of this kind to offer. Tools keep their meaning (a server that
                // says it has tools and cannot list them is not verified).
                listing.not_implemented.push(kind);
                return Pass::Done(listing);
            }
            Err(e) => {
                let what = format!("{method} page {}", listing.pages + 1);
                return Pass::Failed {
                    listing,
                    error: PassError::Rpc(what, e),
                };
            }
        };
        listing.pages += 1;
        if listing.pages == 1 {
            changes_at_first_page = changes_of(conn.counters(), kind);
        }
        let failed = |listing, message: String| Pass::Failed {
            listing,
            error: PassError::Other(message),
        };
        let mut page = page;
        let Some(Json::Array(tools)) = page.take(member) else {
            let message = format!(
                "{method} page {}: the result has no \"{member}\" array",
                listing.pages
            );
            return failed(listing, message);
        };
        // 2026-07-28 Streamable HTTP: a tool with invalid `x-mcp-header` marks is
        // left out, as every client of that transport leaves it out.
        let checks_marks = kind == Kind::Tool && meta.is_some() && conn.name() == "streamable-http";
        let tools = tools.into_iter().filter(|d| {
            if !checks_marks || !has_mark(d) {
                return true;
            }
            match crate::base::protocol::headers::mirrored(&d.to_value()) {
                Ok(_) => true,
                Err(why) => {
                    let name = d.get("name").and_then(Json::as_str).unwrap_or_default();
                    listing.rejected.push((name, why));
                    false
                }
            }
        });
        // Each definition is hashed as it is moved into the listing, never copied.
        let tools: Vec<Json> = tools.collect();
        listing.tools.extend(
            tools
                .into_iter()
                .map(|d| HashedTool::keyed(d, kind.key_member())),
        );
        if listing.tools.len() > options.max_tools {
            let message = format!(
                "{prefix}runaway listing: more than {} (raise --max-tools if this is real)",
                crate::base::text::count(options.max_tools, kind.noun())
            );
            return failed(listing, message);
        }
        let changed_midway = changes_of(conn.counters(), kind) > changes_at_first_page;
        match page.get("nextCursor") {
            None | Some(Json::Null) if changed_midway && listing.pages > 1 => {
                return Pass::ChangedMidway(listing);
            }
            None | Some(Json::Null) => return Pass::Done(listing),
            Some(_) if changed_midway => return Pass::ChangedMidway(listing),
            Some(Json::String(next)) => {
                let Some(next) = next.to_str() else {
                    let message = format!(
                        "{method} page {}: \"nextCursor\" is not valid Unicode (a lone surrogate); it cannot be sent back as received",
                        listing.pages
                    );
                    return failed(listing, message);
                };
                if !seen_cursors.insert(next.clone()) {
                    let message =
                        format!("{prefix}cursor loop: the server returned cursor {next:?} twice");
                    return failed(listing, message);
                }
                if listing.pages >= options.max_pages {
                    let message = format!(
                        "{prefix}runaway listing: more than {} (raise --max-pages if this is real)",
                        crate::base::text::count(options.max_pages, "page")
                    );
                    return failed(listing, message);
                }
                cursor = Some(next);
            }
            Some(_) => {
                let message = format!(
                    "{method} page {}: \"nextCursor\" is not a string",
                    listing.pages
                );
                return failed(listing, message);
            }
        }
    }
}

/// Whether a definition holds an `x-mcp-header` member anywhere.
fn has_mark(json: &Json) -> bool {
    match json {
        Json::Object(members) => members
            .iter()
            .any(|(k, v)| k.eq_str("x-mcp-header") || has_mark(v)),
        Json::Array(items) => items.iter().any(has_mark),
        _ => false,
    }
}

fn timeout_text(options: &ClientOptions, deadline: Instant) -> String {
    if Instant::now() + Duration::from_millis(5) >= deadline {
        format!("the server timeout of {}", seconds(options.server_timeout))
    } else {
        format!(
            "the request timeout of {}",
            seconds(options.request_timeout)
        )
    }
}

fn read_session(
    init: &Json,
    options: &ClientOptions,
    transport: &str,
) -> Result<ServerSession, String> {
    if !init.is_object() {
        return Err("initialize: the result is not an object".into());
    }
    let value = init.to_value();
    let protocol_version = value["protocolVersion"]
        .as_str()
        .ok_or("initialize: the result has no protocolVersion")?
        .to_string();
    // What a lock pins must be a version a later run can ask for again.
    if !crate::servers::client::PROTOCOL_VERSIONS.contains(&protocol_version.as_str()) {
        return Err(format!(
            "initialize: the server answered with protocol version {protocol_version:?}, which mcp-lock does not speak ({})",
            crate::servers::client::PROTOCOL_VERSIONS.join(", ")
        ));
    }
    let instructions = match init.get("instructions") {
        None | Some(Json::Null) => None,
        Some(Json::String(s)) => Some(s.to_string_lossy()),
        Some(_) => return Err("initialize: \"instructions\" is not a string".into()),
    };
    let server_info = init.get("serverInfo").cloned().unwrap_or(Json::Null);
    if let Err(e) = server_info.canonical() {
        return Err(format!("initialize: serverInfo has {e}"));
    }
    Ok(ServerSession {
        protocol_version,
        transport: transport.into(),
        server_info,
        list_changed: value["capabilities"]["tools"]["listChanged"]
            .as_bool()
            .unwrap_or(false),
        instructions_hash: instructions.as_deref().map(instructions_hash),
        instructions,
        client_capabilities: options.capabilities.clone(),
        client_info: options.client_info.clone(),
        oauth_issuer: None,
    })
}

/// A `server/discover` result read as a session in `version`.
fn read_discover(
    result: &Json,
    version: &str,
    options: &ClientOptions,
    transport: &str,
) -> Result<ServerSession, String> {
    if !result.is_object() {
        return Err("server/discover: the result is not an object".into());
    }
    let instructions = match result.get("instructions") {
        None | Some(Json::Null) => None,
        Some(Json::String(s)) => Some(s.to_string_lossy()),
        Some(_) => return Err("server/discover: \"instructions\" is not a string".into()),
    };
    // The schema puts serverInfo in the result's _meta; accept it at the top level too.
    let server_info = result
        .get("_meta")
        .and_then(|m| m.get("io.modelcontextprotocol/serverInfo"))
        .or_else(|| result.get("serverInfo"))
        .cloned()
        .unwrap_or(Json::Null);
    if let Err(e) = server_info.canonical() {
        return Err(format!("server/discover: serverInfo has {e}"));
    }
    let list_changed = result
        .get("capabilities")
        .and_then(|c| c.get("tools"))
        .and_then(|t| t.get("listChanged"));
    Ok(ServerSession {
        protocol_version: version.into(),
        transport: transport.into(),
        server_info,
        list_changed: matches!(list_changed, Some(Json::Bool(true))),
        instructions_hash: instructions.as_deref().map(instructions_hash),
        instructions,
        client_capabilities: options.capabilities.clone(),
        client_info: options.client_info.clone(),
        oauth_issuer: None,
    })
}
