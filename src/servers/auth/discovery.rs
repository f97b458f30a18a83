//! Finding a server's authorization server: the 401 challenge, protected resource
//! metadata (RFC 9728) and authorization server metadata (RFC 8414 / OpenID Connect
//! discovery), with the issuer check.

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{StatusCode, Url};
use serde::Deserialize;
use serde_json::json;

use super::Http;

/// The parameters of a `WWW-Authenticate: Bearer ...` challenge that matter here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    pub resource_metadata: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
}

/// Reads the Bearer challenge's `key="value"` (or `key=token`) parameters.
pub fn parse_challenge(header: &str) -> Challenge {
    let mut challenge = Challenge::default();
    let Some(rest) = header
        .trim_start()
        .strip_prefix("Bearer")
        .or_else(|| header.trim_start().strip_prefix("bearer"))
    else {
        return challenge;
    };
    let mut rest = rest.trim_start();
    while !rest.is_empty() {
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq]
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let after = rest[eq + 1..].trim_start();
        let (value, next) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            value.push(n);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => value.push(c),
                }
            }
            (value, &quoted[end..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim().to_string(), &after[end..])
        };
        match key.as_str() {
            "resource_metadata" => challenge.resource_metadata = Some(value),
            "scope" => challenge.scope = Some(value),
            "error" => challenge.error = Some(value),
            _ => {}
        }
        rest = next.trim_start().trim_start_matches(',').trim_start();
    }
    challenge
}

/// RFC 9728 protected resource metadata.
#[derive(Debug, Clone, Deserialize)]
pub struct ResourceMetadata {
    pub resource: Option<String>,
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    /// No document exists: a server of the 2025-03-26 era, whose authorization
    /// server is at its own origin.
    #[serde(skip)]
    pub at_origin: bool,
}

/// RFC 8414 authorization server metadata.
#[derive(Debug, Clone, Deserialize)]
pub struct ServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    #[serde(default)]
    pub code_challenge_methods_supported: Vec<String>,
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
    /// RFC 8414: absent means `client_secret_basic` only.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Vec<String>,
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
}

/// What the server asked of a request made with a token (or with none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// It answered without asking for anything.
    Nothing,
    /// `401`: a login, with the challenge's parameters.
    Login(Challenge),
    /// `403 insufficient_scope`: a login with more scope.
    MoreScope(Challenge),
}

/// What the server asks of a client that opens a session and lists its tools, with
/// `token` or without one: `initialize`, `notifications/initialized` and `tools/list`
/// (a server may let the handshake through and ask for authorization only when
/// something is listed), or for a server of the sessionless era, whose handshake
/// fails, a modern `tools/list`. Never a call: a probe must have no effect.
pub async fn probe(http: &Http, url: &Url, token: Option<&str>) -> Result<Asked, String> {
    let version = crate::base::protocol::LEGACY_VERSION;
    let client_info = json!({"name": "mcp-lock", "version": env!("CARGO_PKG_VERSION")});
    let post = |body: serde_json::Value, session: Option<String>, protocol: Option<&str>| {
        let client = http.client_for(url);
        let protocol = protocol.map(str::to_string);
        async move {
            let mut request = client?
                .post(url.clone())
                .header(ACCEPT, "application/json, text/event-stream")
                .header(CONTENT_TYPE, "application/json")
                .body(body.to_string());
            if let Some(token) = token {
                request = request.header(AUTHORIZATION, format!("Bearer {token}"));
            }
            if let Some(session) = session {
                request = request.header("mcp-session-id", session);
            }
            if let Some(protocol) = protocol {
                request = request.header("mcp-protocol-version", protocol);
            }
            http.within(url, async {
                request.send().await.map_err(|e| {
                    format!("cannot reach {url}: {}", crate::base::net::reqwest_chain(e))
                })
            })
            .await
        }
    };
    let init = post(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": client_info}}),
        None,
        None,
    )
    .await?;
    if let Some(asked) = asked(&init) {
        return Ok(asked);
    }
    let list = if init.status().is_success() {
        let session = init
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        // The answer's body is not needed (and an event stream may stay open).
        drop(init);
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let sent = post(initialized, session.clone(), Some(version)).await?;
        if let Some(asked) = asked(&sent) {
            return Ok(asked);
        }
        drop(sent);
        post(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
            session,
            Some(version),
        )
        .await?
    } else {
        drop(init);
        let modern = crate::base::protocol::MODERN_VERSION;
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": modern,
            "io.modelcontextprotocol/clientInfo": client_info,
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        post(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}}),
            None,
            Some(modern),
        )
        .await?
    };
    Ok(asked(&list).unwrap_or(Asked::Nothing))
}

/// What a response asks for: a login on 401, more scope on 403 `insufficient_scope`.
fn asked(response: &reqwest::Response) -> Option<Asked> {
    let challenge = || {
        response
            .headers()
            .get("www-authenticate")
            .map(|v| parse_challenge(&String::from_utf8_lossy(v.as_bytes())))
            .unwrap_or_default()
    };
    match response.status() {
        StatusCode::UNAUTHORIZED => Some(Asked::Login(challenge())),
        StatusCode::FORBIDDEN => {
            let challenge = challenge();
            (challenge.error.as_deref() == Some("insufficient_scope"))
                .then_some(Asked::MoreScope(challenge))
        }
        _ => None,
    }
}

/// Where a resource metadata document was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// At the challenge's `resource_metadata`, or the path-aware well-known URL: it
    /// must name the server's URL.
    ForTheUrl,
    /// At the root well-known URL: RFC 9728 §3.3 lets it name the origin.
    AtTheRoot,
}

/// The resource metadata: the challenge's URL, else the path-aware well-known URL,
/// else the root one. `Ok(None)` when the challenge names none and there is none at
/// either well-known address (both answered 404 or 410), as for a server of the
/// 2025-03-26 era.
async fn resource_metadata(
    http: &Http,
    url: &Url,
    challenge: &Challenge,
) -> Result<Option<(Url, Found, ResourceMetadata)>, String> {
    let mut candidates = Vec::new();
    if let Some(given) = &challenge.resource_metadata {
        candidates.push((
            url.join(given).map_err(|e| {
                format!("the challenge's resource_metadata {given:?} is not a URL: {e}")
            })?,
            Found::ForTheUrl,
        ));
    }
    let path = url.path().trim_end_matches('/');
    if !path.is_empty() {
        candidates.push((
            well_known(url, "oauth-protected-resource", path),
            Found::ForTheUrl,
        ));
    }
    candidates.push((
        well_known(url, "oauth-protected-resource", ""),
        Found::AtTheRoot,
    ));
    let mut tried = Vec::new();
    let mut absent = true;
    for (candidate, found) in candidates {
        match get_json::<ResourceMetadata>(http, &candidate).await {
            Ok(doc) => return Ok(Some((candidate, found, doc))),
            Err(e) => {
                absent &= e.absent;
                tried.push(e.message);
            }
        }
    }
    // A challenge that names a document is not of the 2025-03-26 era.
    if absent && challenge.resource_metadata.is_none() {
        return Ok(None);
    }
    Err(format!(
        "no protected resource metadata found ({})",
        tried.join("; ")
    ))
}

/// The server's authorization servers and the scopes it lists, from its resource
/// metadata, checked to be for the server at `url`: RFC 9728 requires its
/// `resource`, and a document for another resource (or none named) could send the
/// login to anyone's authorization server. A server with no resource metadata at
/// all is of the 2025-03-26 era, whose authorization server is at its origin.
pub async fn checked_resource_metadata(
    http: &Http,
    url: &Url,
    challenge: &Challenge,
) -> Result<ResourceMetadata, String> {
    let resource = super::canonical_resource(url.as_str())?;
    let Some((at, found, metadata)) = resource_metadata(http, url, challenge).await? else {
        return Ok(ResourceMetadata {
            resource: Some(resource),
            authorization_servers: vec![origin(url)],
            scopes_supported: Vec::new(),
            at_origin: true,
        });
    };
    let Some(named) = &metadata.resource else {
        return Err(format!(
            "the protected resource metadata at {at} names no resource (RFC 9728 requires it); refusing it"
        ));
    };
    let named_canonical = super::canonical_resource(named).ok();
    let fits = named_canonical.as_deref() == Some(resource.as_str())
        || found == Found::AtTheRoot && named_canonical.as_deref() == Some(origin(url).as_str());
    if !fits {
        return Err(format!(
            "the protected resource metadata at {at} is for {:?}, not {resource:?}; refusing it",
            crate::base::text::escape_cut(named, 200)
        ));
    }
    Ok(metadata)
}

/// `scheme://host[:port]`, as a resource or an issuer.
fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// The authorization server's metadata, by RFC 8414 then OpenID Connect discovery,
/// checked to name the issuer it was fetched for. For a server of the 2025-03-26 era
/// (`at_origin`), whose metadata is found from its own origin rather than from an
/// issuer, the document may name any issuer of that origin; with no document at all,
/// that revision's default endpoints are used.
pub async fn server_metadata(
    http: &Http,
    issuer: &str,
    at_origin: bool,
) -> Result<ServerMetadata, String> {
    let url = Url::parse(issuer)
        .map_err(|e| format!("the authorization server {issuer:?} is not a URL: {e}"))?;
    let path = url.path().trim_end_matches('/');
    let mut candidates = vec![
        well_known(&url, "oauth-authorization-server", path),
        well_known(&url, "openid-configuration", path),
    ];
    if !path.is_empty() {
        let mut oidc = url.clone();
        oidc.set_path(&format!("{path}/.well-known/openid-configuration"));
        candidates.push(oidc);
    }
    let mut tried = Vec::new();
    let mut absent = true;
    for candidate in candidates {
        match get_json::<ServerMetadata>(http, &candidate).await {
            Ok(doc) => {
                let of_origin =
                    || Url::parse(&doc.issuer).is_ok_and(|n| n.origin() == url.origin());
                if doc.issuer != issuer && !(at_origin && of_origin()) {
                    return Err(format!(
                        "the authorization server metadata at {candidate} names the issuer {:?}, not {issuer:?}; refusing it",
                        crate::base::text::escape_cut(&doc.issuer, 200)
                    ));
                }
                if !doc
                    .code_challenge_methods_supported
                    .iter()
                    .any(|m| m == "S256")
                {
                    return Err(format!(
                        "the authorization server {issuer} does not list PKCE S256 in code_challenge_methods_supported; refusing to log in without it"
                    ));
                }
                return Ok(doc);
            }
            Err(e) => {
                absent &= e.absent;
                tried.push(e.message);
            }
        }
    }
    if absent && at_origin {
        // 2025-03-26: a server with no metadata has its endpoints at default paths
        // of its origin (and must support PKCE, which that revision requires).
        let at = |endpoint: &str| format!("{}/{endpoint}", origin(&url));
        return Ok(ServerMetadata {
            issuer: issuer.to_string(),
            authorization_endpoint: at("authorize"),
            token_endpoint: at("token"),
            registration_endpoint: Some(at("register")),
            scopes_supported: Vec::new(),
            code_challenge_methods_supported: vec!["S256".into()],
            authorization_response_iss_parameter_supported: false,
            token_endpoint_auth_methods_supported: Vec::new(),
            client_id_metadata_document_supported: false,
        });
    }
    Err(format!(
        "no authorization server metadata for {issuer} ({})",
        tried.join("; ")
    ))
}

/// `https://host/.well-known/<name><path>`.
fn well_known(url: &Url, name: &str, path: &str) -> Url {
    let mut out = url.clone();
    out.set_path(&format!("/.well-known/{name}{path}"));
    out.set_query(None);
    out.set_fragment(None);
    out
}

/// Why a metadata document could not be had; `absent` when the server has none
/// there (404 or 410), rather than failing to give it.
struct Missing {
    message: String,
    absent: bool,
}

async fn get_json<T: serde::de::DeserializeOwned>(http: &Http, url: &Url) -> Result<T, Missing> {
    let failed = |message: String| Missing {
        message,
        absent: false,
    };
    let client = http.client_for(url).map_err(failed)?;
    let exchange = async {
        let response = client
            .get(url.clone())
            .header(ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| failed(format!("{url}: {}", crate::base::net::reqwest_chain(e))))?;
        let status = response.status();
        if !status.is_success() {
            return Err(Missing {
                message: format!("{url}: HTTP {}", status.as_u16()),
                absent: matches!(status, StatusCode::NOT_FOUND | StatusCode::GONE),
            });
        }
        super::read_capped(response, url).await.map_err(failed)
    };
    let body = tokio::time::timeout_at(http.deadline(), exchange)
        .await
        .unwrap_or_else(|_| Err(failed(format!("{url} did not answer in time (--timeout)"))))?;
    serde_json::from_slice(&body).map_err(|e| failed(format!("{url}: not the expected JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_gives_its_resource_metadata_scope_and_error() {
        let c = parse_challenge(
            r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="https://x/.well-known/oauth-protected-resource/mcp""#,
        );
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://x/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(parse_challenge("Basic realm=\"x\""), Challenge::default());
    }
}
