//! OAuth for remote servers that need it, after the MCP authorization spec
//! (2025-06-18 through 2026-07-28): discovery from the 401 challenge, a client
//! (pre-registered, else dynamically registered as a native app), the authorization
//! code flow with PKCE S256, `state`, the `resource` indicator and the `iss` check,
//! and a token cache refreshed before expiry and on 401.
//!
//! The protocol pieces (PKCE, the authorization URL, code exchange, refresh) are the
//! `oauth2` crate's, over our own reqwest client. Left out: Client ID Metadata
//! Documents (they need an HTTPS-hosted document mcp-lock does not have) and the
//! client-credentials extension.

pub mod callback;
pub mod discovery;
pub mod store;

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use oauth2::basic::BasicClient;
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, HttpRequest,
    HttpResponse, PkceCodeChallenge, RedirectUrl, RefreshToken, RequestTokenError, Scope,
    TokenResponse, TokenUrl,
};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{StatusCode, Url};
use serde::Deserialize;
use serde_json::json;

pub use store::{TokenRecord, TokenStore};

/// A token is refreshed when it has less than this left.
const REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// How many times a 403 `insufficient_scope` may send the login back for more scope.
const MAX_STEP_UPS: usize = 2;

/// The server's URL as a resource indicator (RFC 8707): no fragment, the host in
/// lower case, no trailing slash on an empty path.
pub fn canonical_resource(url: &str) -> Result<String, String> {
    let mut url = Url::parse(url).map_err(|e| format!("invalid URL: {e}"))?;
    url.set_fragment(None);
    let text = url.to_string();
    Ok(match text.strip_suffix('/') {
        Some(trimmed) if url.path() == "/" && url.query().is_none() => trimmed.to_string(),
        _ => text,
    })
}

/// HTTP clients for the authorization exchanges, one per origin (same-origin
/// redirects only, proxies skipped for loopback), like the MCP client's.
#[derive(Default)]
pub struct Http;

impl Http {
    pub fn client_for(&self, url: &Url) -> Result<reqwest::Client, String> {
        crate::client::http::build_client(url, &crate::client::ClientOptions::default())
    }
}

/// oauth2's requests sent through reqwest.
async fn send(
    client: reqwest::Client,
    request: HttpRequest,
) -> Result<HttpResponse, reqwest::Error> {
    let (parts, body) = request.into_parts();
    let response = client
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .send()
        .await?;
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.bytes().await?.to_vec();
    let mut out = HttpResponse::new(body);
    *out.status_mut() = status;
    *out.headers_mut() = headers;
    Ok(out)
}

fn token_error<E: std::error::Error>(
    e: RequestTokenError<E, oauth2::basic::BasicErrorResponse>,
) -> String {
    match e {
        RequestTokenError::ServerResponse(r) => {
            let mut text = r.error().to_string();
            if let Some(d) = r.error_description() {
                text.push_str(&format!(": {d}"));
            }
            text
        }
        RequestTokenError::Request(e) => crate::client::http::error_chain(&e),
        RequestTokenError::Parse(e, _) => format!("unreadable token response: {e}"),
        RequestTokenError::Other(s) => s,
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A pre-registered client, from the config.
#[derive(Clone)]
pub struct ClientConfig {
    pub client_id: String,
    pub client_secret: Option<String>,
}

/// How `login` talks to the person.
pub struct LoginOptions {
    /// Open the authorization address in a browser (only with a terminal and no `CI`).
    pub open_browser: bool,
    /// Also read the address the browser ended on from stdin.
    pub paste_back: bool,
    /// The callback listener's port; 0 for any free one.
    pub callback_port: u16,
    pub client: Option<ClientConfig>,
    /// How long to wait for the person.
    pub timeout: Duration,
}

/// What a login did.
pub struct LoggedIn {
    pub issuer: String,
    pub scope: Option<String>,
    pub path: std::path::PathBuf,
    pub registered: bool,
}

#[derive(Deserialize)]
struct Registration {
    client_id: String,
    client_secret: Option<String>,
    token_endpoint_auth_method: Option<String>,
}

/// Logs in to the server at `url`: discovery, a client, the browser round trip and
/// the code exchange; the tokens go to `store`. `say` shows a line to the person.
pub async fn login(
    url: &str,
    store: &TokenStore,
    options: &LoginOptions,
    say: &dyn Fn(&str),
) -> Result<LoggedIn, String> {
    let http = Http;
    let server = Url::parse(url).map_err(|e| format!("invalid URL: {e}"))?;
    let resource = canonical_resource(url)?;
    let Some(challenge) = discovery::probe(&http, &server).await? else {
        return Err(format!(
            "{url} answered without asking for authorization; no login is needed"
        ));
    };
    let (_, metadata) = discovery::resource_metadata(&http, &server, &challenge).await?;
    if let Some(named) = &metadata.resource
        && canonical_resource(named).ok().as_deref() != Some(resource.as_str())
    {
        return Err(format!(
            "the protected resource metadata is for {named:?}, not {resource:?}; refusing it"
        ));
    }
    let issuer = metadata
        .authorization_servers
        .first()
        .ok_or("the protected resource metadata names no authorization server")?
        .clone();
    let server_meta = discovery::server_metadata(&http, &issuer).await?;
    let mut scopes: BTreeSet<String> = match &challenge.scope {
        Some(s) => s.split_whitespace().map(str::to_string).collect(),
        None => metadata.scopes_supported.iter().cloned().collect(),
    };
    if scopes.is_empty() {
        scopes = server_meta.scopes_supported.iter().cloned().collect();
    }

    let callback = callback::Callback::bind(options.callback_port).await?;
    let (client, registered) = match &options.client {
        Some(c) => (c.clone(), false),
        None => (
            register(&http, &server_meta, &callback.redirect_uri).await?,
            true,
        ),
    };
    let auth_type = if client.client_secret.is_some() {
        AuthType::RequestBody
    } else {
        AuthType::BasicAuth
    };
    let mut oauth = BasicClient::new(ClientId::new(client.client_id.clone()))
        .set_auth_uri(
            AuthUrl::new(server_meta.authorization_endpoint.clone())
                .map_err(|e| format!("the authorization endpoint is not a URL: {e}"))?,
        )
        .set_token_uri(
            TokenUrl::new(server_meta.token_endpoint.clone())
                .map_err(|e| format!("the token endpoint is not a URL: {e}"))?,
        )
        .set_redirect_uri(
            RedirectUrl::new(callback.redirect_uri.clone())
                .map_err(|e| format!("the redirect URI is not a URL: {e}"))?,
        )
        .set_auth_type(auth_type);
    if let Some(secret) = &client.client_secret {
        oauth = oauth.set_client_secret(ClientSecret::new(secret.clone()));
    }
    let token_url = Url::parse(&server_meta.token_endpoint)
        .map_err(|e| format!("the token endpoint is not a URL: {e}"))?;
    let token_client = http.client_for(&token_url)?;
    let post = |request: HttpRequest| send(token_client.clone(), request);

    for step in 0..=MAX_STEP_UPS {
        let (pkce, verifier) = PkceCodeChallenge::new_random_sha256();
        let (address, state) = oauth
            .authorize_url(CsrfToken::new_random)
            .add_scopes(scopes.iter().cloned().map(Scope::new))
            .set_pkce_challenge(pkce)
            .add_extra_param("resource", resource.clone())
            .url();
        say(&format!("Open this address to log in:\n  {address}"));
        if options.open_browser {
            open_browser(address.as_str());
        }
        if options.paste_back {
            say(
                "Then paste the address the browser ends on (it starts with the redirect URI) and press Enter:",
            );
        }
        let query = tokio::time::timeout(
            options.timeout,
            wait_for_callback(&callback, options.paste_back),
        )
        .await
        .map_err(|_| {
            format!(
                "no login within {}s; run mcp-lock login again",
                options.timeout.as_secs()
            )
        })??;
        let code = check_callback(&query, state.secret(), &server_meta)?;
        let tokens = oauth
            .exchange_code(AuthorizationCode::new(code))
            .set_pkce_verifier(verifier)
            .add_extra_param("resource", resource.clone())
            .request_async(&post)
            .await
            .map_err(|e| format!("the token request failed: {}", token_error(e)))?;
        let granted = tokens
            .scopes()
            .map(|s| {
                s.iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .or_else(|| {
                (!scopes.is_empty()).then(|| scopes.iter().cloned().collect::<Vec<_>>().join(" "))
            });
        let record = TokenRecord {
            resource: resource.clone(),
            issuer: server_meta.issuer.clone(),
            token_endpoint: server_meta.token_endpoint.clone(),
            client_id: client.client_id.clone(),
            client_secret: client.client_secret.clone(),
            access_token: tokens.access_token().secret().clone(),
            refresh_token: tokens.refresh_token().map(|t| t.secret().clone()),
            expires_at: tokens.expires_in().map(|d| now() + d.as_secs()),
            scope: granted.clone(),
        };
        // A token without enough scope is answered 403 insufficient_scope: ask again
        // for the union, a bounded number of times.
        let more = insufficient_scope(&http, &server, &record.access_token).await?;
        match more {
            Some(wanted) if step < MAX_STEP_UPS => {
                let before = scopes.len();
                scopes.extend(wanted.split_whitespace().map(str::to_string));
                if scopes.len() == before {
                    return Err(format!(
                        "the server still answers 403 insufficient_scope with every scope it asked for ({wanted})"
                    ));
                }
                say(&format!(
                    "The server wants more scope ({wanted}); log in once more."
                ));
                continue;
            }
            Some(wanted) => {
                return Err(format!(
                    "the server still answers 403 insufficient_scope ({wanted}) after {MAX_STEP_UPS} step-ups"
                ));
            }
            None => {}
        }
        let lock = lock(store).await?;
        let path = store.save(&record, &lock)?;
        return Ok(LoggedIn {
            issuer: record.issuer,
            scope: granted,
            path,
            registered,
        });
    }
    unreachable!("the loop returns on its last step")
}

/// Takes the store's lock off the async workers (flock blocks).
async fn lock(store: &TokenStore) -> Result<store::StoreLock, String> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || store.lock())
        .await
        .map_err(|e| format!("the token cache lock failed: {e}"))?
}

async fn register(
    http: &Http,
    meta: &discovery::ServerMetadata,
    redirect_uri: &str,
) -> Result<ClientConfig, String> {
    let Some(endpoint) = &meta.registration_endpoint else {
        return Err(format!(
            "the authorization server {} offers no dynamic client registration; register a client there and put its clientId under \"oauth\" in the server's config entry",
            meta.issuer
        ));
    };
    let url =
        Url::parse(endpoint).map_err(|e| format!("the registration endpoint is not a URL: {e}"))?;
    let body = json!({
        "client_name": "mcp-lock",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    });
    let response = http
        .client_for(&url)?
        .post(url.clone())
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| {
            format!(
                "client registration at {url} failed: {}",
                crate::client::http::reqwest_chain(e)
            )
        })?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        return Err(format!(
            "client registration at {url} failed: HTTP {}: {}",
            status.as_u16(),
            crate::text::cut(text.trim(), 200)
        ));
    }
    let registration: Registration = serde_json::from_str(&text)
        .map_err(|e| format!("client registration at {url}: unreadable answer: {e}"))?;
    let secret = match registration.token_endpoint_auth_method.as_deref() {
        Some("none") => None,
        _ => registration.client_secret,
    };
    Ok(ClientConfig {
        client_id: registration.client_id,
        client_secret: secret,
    })
}

/// The callback's query, from the listener or (with paste-back) stdin, whichever first.
async fn wait_for_callback(
    callback: &callback::Callback,
    paste_back: bool,
) -> Result<String, String> {
    if !paste_back {
        return callback.wait().await;
    }
    // A plain thread, not spawn_blocking: when the listener wins, the runtime must not
    // wait at exit for a read of stdin that may never end.
    let (tx, pasted) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let got = std::io::stdin()
            .read_line(&mut line)
            .map_err(|e| format!("cannot read the pasted address: {e}"))
            .and_then(|_| callback::pasted_query(&line));
        let _ = tx.send(got);
    });
    tokio::select! {
        got = callback.wait() => got,
        got = pasted => got.map_err(|e| format!("cannot read the pasted address: {e}"))?,
    }
}

/// The code of a callback, after the `state` and `iss` checks.
fn check_callback(
    query: &str,
    state: &str,
    meta: &discovery::ServerMetadata,
) -> Result<String, String> {
    let params: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
    if let Some(error) = params.get("error") {
        let description = params
            .get("error_description")
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        return Err(format!(
            "the authorization server refused the login: {error}{description}"
        ));
    }
    if params.get("state").map(String::as_str) != Some(state) {
        return Err("the callback's state does not match the login's; refusing it (start mcp-lock login again)".into());
    }
    match params.get("iss") {
        Some(iss) if *iss != meta.issuer => {
            return Err(format!(
                "the callback comes from issuer {iss:?}, not {:?}; refusing it",
                meta.issuer
            ));
        }
        None if meta.authorization_response_iss_parameter_supported => {
            return Err("the callback has no iss parameter though the authorization server promises one; refusing it".into());
        }
        _ => {}
    }
    params
        .get("code")
        .cloned()
        .ok_or_else(|| "the callback has no code".into())
}

/// `Some(scope)` when the server answers a request with this token 403
/// `insufficient_scope`.
async fn insufficient_scope(
    http: &Http,
    server: &Url,
    token: &str,
) -> Result<Option<String>, String> {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "mcp-lock", "version": env!("CARGO_PKG_VERSION")}}
    });
    let response = http
        .client_for(server)?
        .post(server.clone())
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
        .header(AUTHORIZATION, format!("Bearer {token}"))
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| {
            format!(
                "cannot reach {server}: {}",
                crate::client::http::reqwest_chain(e)
            )
        })?;
    if response.status() != StatusCode::FORBIDDEN {
        return Ok(None);
    }
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| discovery::parse_challenge(&String::from_utf8_lossy(v.as_bytes())))
        .unwrap_or_default();
    Ok(match (challenge.error.as_deref(), challenge.scope) {
        (Some("insufficient_scope"), Some(scope)) => Some(scope),
        _ => None,
    })
}

fn open_browser(address: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    if let Ok(mut child) = std::process::Command::new(opener)
        .arg(address)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        // Reaped in the background so no zombie is left.
        std::thread::spawn(move || child.wait());
    }
}

/// A token to send, and who issued it.
pub struct Bearer {
    pub access_token: String,
    pub issuer: String,
}

/// The cached token for the server at `url`, if `login` left one: refreshed first
/// when it expires within a minute, or when `force` (after a 401). The rotated
/// refresh token is saved under the cache's lock. `Err` when a needed refresh failed.
pub async fn cached_bearer(
    store: &TokenStore,
    url: &str,
    force: bool,
) -> Result<Option<Bearer>, String> {
    let Ok(resource) = canonical_resource(url) else {
        return Ok(None);
    };
    let fresh = |r: &TokenRecord| {
        r.expires_at
            .is_none_or(|at| at > now() + REFRESH_MARGIN.as_secs())
    };
    // Files are replaced atomically, so a read without the lock sees a whole record.
    let unlocked = store.find_unlocked(&resource);
    let Some(first) = unlocked.into_iter().next() else {
        return Ok(None);
    };
    if !force && fresh(&first) {
        return Ok(Some(Bearer {
            access_token: first.access_token,
            issuer: first.issuer,
        }));
    }
    let held = lock(store).await?;
    // Another run may have refreshed it while we waited.
    let Some((_, record)) = store.find(&resource, &held).into_iter().next() else {
        return Ok(None);
    };
    if !force && fresh(&record) || force && record.access_token != first.access_token {
        return Ok(Some(Bearer {
            access_token: record.access_token,
            issuer: record.issuer,
        }));
    }
    let record = refresh(record).await?;
    store.save(&record, &held)?;
    Ok(Some(Bearer {
        access_token: record.access_token,
        issuer: record.issuer,
    }))
}

/// Exchanges the refresh token for new tokens, keeping the old refresh token when no
/// new one is issued.
async fn refresh(record: TokenRecord) -> Result<TokenRecord, String> {
    let expired = || "the token from mcp-lock login expired and cannot be refreshed".to_string();
    let Some(refresh_token) = record.refresh_token.clone() else {
        return Err(expired());
    };
    let token_url =
        Url::parse(&record.token_endpoint).map_err(|e| format!("{}: {e}", expired()))?;
    let client = Http.client_for(&token_url)?;
    let post = |request: HttpRequest| send(client.clone(), request);
    let mut oauth = BasicClient::new(ClientId::new(record.client_id.clone()))
        .set_token_uri(TokenUrl::from_url(token_url.clone()));
    if let Some(secret) = &record.client_secret {
        oauth = oauth
            .set_client_secret(ClientSecret::new(secret.clone()))
            .set_auth_type(AuthType::RequestBody);
    }
    let tokens = oauth
        .exchange_refresh_token(&RefreshToken::new(refresh_token))
        .add_extra_param("resource", record.resource.clone())
        .request_async(&post)
        .await
        .map_err(|e| format!("{}: {}", expired(), token_error(e)))?;
    Ok(TokenRecord {
        access_token: tokens.access_token().secret().clone(),
        refresh_token: tokens
            .refresh_token()
            .map(|t| t.secret().clone())
            .or(record.refresh_token.clone()),
        expires_at: tokens.expires_in().map(|d| now() + d.as_secs()),
        ..record
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_resources_drop_fragments_and_a_bare_trailing_slash() {
        assert_eq!(
            canonical_resource("HTTPS://MCP.Example.com/").unwrap(),
            "https://mcp.example.com"
        );
        assert_eq!(
            canonical_resource("https://mcp.example.com:443/mcp#x").unwrap(),
            "https://mcp.example.com/mcp"
        );
    }

    fn meta() -> discovery::ServerMetadata {
        discovery::ServerMetadata {
            issuer: "https://as.example/".into(),
            authorization_endpoint: "https://as.example/authorize".into(),
            token_endpoint: "https://as.example/token".into(),
            registration_endpoint: None,
            scopes_supported: vec![],
            code_challenge_methods_supported: vec!["S256".into()],
            authorization_response_iss_parameter_supported: true,
        }
    }

    #[test]
    fn a_callback_with_another_state_or_issuer_is_refused() {
        let m = meta();
        let iss = "iss=https%3A%2F%2Fas.example%2F";
        assert_eq!(
            check_callback(&format!("code=c&state=s&{iss}"), "s", &m).unwrap(),
            "c"
        );
        assert!(
            check_callback(&format!("code=c&state=t&{iss}"), "s", &m)
                .unwrap_err()
                .contains("state")
        );
        assert!(
            check_callback("code=c&state=s&iss=https%3A%2F%2Fevil%2F", "s", &m)
                .unwrap_err()
                .contains("issuer")
        );
        assert!(
            check_callback("code=c&state=s", "s", &m)
                .unwrap_err()
                .contains("no iss")
        );
    }
}
