//! OAuth for remote servers that need it, after the MCP authorization spec
//! (2025-06-18 through 2026-07-28): discovery from the 401 challenge, a client
//! (pre-registered, else dynamically registered as a native app), the authorization
//! code flow with PKCE S256, `state`, the `resource` indicator and the `iss` check,
//! and a token cache refreshed before expiry and on 401.
//!
//! The protocol pieces (PKCE, the authorization URL, code exchange, refresh) are the
//! `oauth2` crate's, over our own reqwest client. Machine-to-machine logins (the
//! client-credentials extension) are in [`machine`].

pub mod callback;
pub mod discovery;
pub mod machine;
pub mod store;

mod bearer;
pub use bearer::*;

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use oauth2::basic::BasicClient;
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, HttpRequest,
    HttpResponse, PkceCodeChallenge, RedirectUrl, RefreshToken, RequestTokenError, Scope,
    TokenResponse, TokenUrl,
};
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
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

/// Largest answer accepted from an authorization exchange: metadata, registration
/// and token responses are a few kilobytes, and a hostile server must not make us
/// hold hundreds of megabytes.
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// HTTP for the authorization exchanges: clients per origin (same-origin redirects
/// only, proxies skipped for loopback), like the MCP client's, and one deadline that
/// every exchange, its answer's body included, must finish by.
#[derive(Clone, Copy)]
pub struct Http {
    deadline: Instant,
}

impl Http {
    /// Exchanges that must all be over by `deadline`.
    pub fn until(deadline: Instant) -> Self {
        Http { deadline }
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    pub fn client_for(&self, url: &Url) -> Result<reqwest::Client, String> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        crate::base::net::build_client(url, left.max(Duration::from_millis(1)))
    }

    /// One exchange with `url` (the request and the whole answer), cut off at the
    /// deadline.
    pub async fn within<T>(
        &self,
        url: &Url,
        exchange: impl std::future::Future<Output = Result<T, String>>,
    ) -> Result<T, String> {
        tokio::time::timeout_at(self.deadline, exchange)
            .await
            .unwrap_or_else(|_| Err(format!("{url} did not answer in time (--timeout)")))
    }
}

/// The answer's body, refused once it passes [`MAX_ANSWER_BYTES`] (checked while
/// reading, so a huge body is never held).
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    url: &Url,
) -> Result<Vec<u8>, String> {
    let too_big = || {
        format!(
            "{url} answered with more than {} KiB; refusing it",
            MAX_ANSWER_BYTES / 1024
        )
    };
    if response
        .content_length()
        .is_some_and(|n| n > MAX_ANSWER_BYTES as u64)
    {
        return Err(too_big());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("{url}: {}", crate::base::net::reqwest_chain(e)))?
    {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(too_big());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// An endpoint from authorization server metadata, as a URL the browser or our
/// client may be sent to: https, or http on loopback only (RFC 8414 wants https; a
/// `file:` or `javascript:` address must never reach the opener).
fn endpoint_url(name: &str, text: &str) -> Result<Url, String> {
    let shown = crate::base::text::escape_cut(text, 200);
    let url = Url::parse(text).map_err(|e| format!("the {name} {shown:?} is not a URL: {e}"))?;
    match url.scheme() {
        "https" => Ok(url),
        "http" if crate::base::net::is_loopback(&url) => Ok(url),
        _ => Err(format!(
            "the {name} {shown:?} is neither https nor http on loopback; refusing it"
        )),
    }
}

/// Why one of oauth2's requests failed, in one line.
#[derive(Debug)]
struct SendError(String);

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SendError {}

/// oauth2's requests sent through reqwest, within the deadline and the size cap.
async fn send(
    http: Http,
    client: reqwest::Client,
    request: HttpRequest,
) -> Result<HttpResponse, SendError> {
    let (parts, body) = request.into_parts();
    let url = Url::parse(&parts.uri.to_string())
        .map_err(|e| SendError(format!("{}: not a URL: {e}", parts.uri)))?;
    http.within(&url, async {
        let response = client
            .request(parts.method, url.clone())
            .headers(parts.headers)
            .body(body)
            .send()
            .await
            .map_err(|e| format!("{url}: {}", crate::base::net::reqwest_chain(e)))?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = read_capped(response, &url).await?;
        let mut out = HttpResponse::new(body);
        *out.status_mut() = status;
        *out.headers_mut() = headers;
        Ok(out)
    })
    .await
    .map_err(SendError)
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
        RequestTokenError::Request(e) => e.to_string(),
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
    /// The token endpoint method it was registered with, when the config says.
    pub token_endpoint_auth_method: Option<String>,
}

/// How a client proves itself at the token endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenAuth {
    /// A public client: its id in the body, no secret.
    None,
    /// `client_secret_basic`: id and secret in an `Authorization: Basic` header.
    Basic,
    /// `client_secret_post`: id and secret in the form body.
    Post,
}

impl TokenAuth {
    pub fn name(self) -> &'static str {
        match self {
            TokenAuth::None => "none",
            TokenAuth::Basic => "client_secret_basic",
            TokenAuth::Post => "client_secret_post",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        match name {
            "none" => Some(TokenAuth::None),
            "client_secret_basic" => Some(TokenAuth::Basic),
            "client_secret_post" => Some(TokenAuth::Post),
            _ => None,
        }
    }

    /// The method for a client with (or without) a secret: the one its registration
    /// returned (RFC 7591 §3.2.1), else the first of basic and post the authorization
    /// server lists, in its order (RFC 8414 §2: an absent list means
    /// `client_secret_basic`; a pre-registered client was registered with one of
    /// the methods its server lists, most often the first).
    pub fn choose(registered: Option<&str>, supported: &[String], has_secret: bool) -> Self {
        if !has_secret {
            return TokenAuth::None;
        }
        if let Some(method) = registered.and_then(Self::parse) {
            return method;
        }
        supported
            .iter()
            .find_map(|s| Self::parse(s).filter(|m| *m != TokenAuth::None))
            .unwrap_or(TokenAuth::Basic)
    }

    /// A cached record's method; records of older releases sent their secret in
    /// the body.
    fn of_record(record: &TokenRecord) -> Self {
        match record.token_endpoint_auth.as_deref().and_then(Self::parse) {
            Some(method) => method,
            None if record.client_secret.is_some() => TokenAuth::Post,
            None => TokenAuth::None,
        }
    }

    /// oauth2's way of sending it; with `None` the client id goes in the body.
    fn auth_type(self) -> AuthType {
        match self {
            TokenAuth::Basic => AuthType::BasicAuth,
            TokenAuth::Post | TokenAuth::None => AuthType::RequestBody,
        }
    }
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
    /// A Client ID Metadata Document's URL, the client id where the authorization
    /// server supports them and no client is pre-registered.
    pub client_metadata_url: Option<String>,
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

/// A client to log in with and how it authenticates at the token endpoint.
struct Chosen {
    client: ClientConfig,
    auth: TokenAuth,
    registered: bool,
}

/// Logs in to the server at `url`: discovery, a client, the browser round trip and
/// the code exchange; the tokens go to `store`. `say` shows a line to the person.
/// Everything, the person's part included, must be over within `options.timeout`.
pub async fn login(
    url: &str,
    store: &TokenStore,
    options: &LoginOptions,
    say: &dyn Fn(&str),
) -> Result<LoggedIn, String> {
    let deadline = Instant::now() + options.timeout;
    let http = Http::until(deadline);
    let server = Url::parse(url).map_err(|e| format!("invalid URL: {e}"))?;
    let resource = canonical_resource(url)?;
    // Before anyone is sent to a browser: a login whose tokens cannot be kept is lost.
    store.check_writable()?;
    let challenge = match discovery::probe(&http, &server, None).await? {
        discovery::Asked::Nothing => {
            return Err(format!(
                "{url} answered initialize and tools/list without asking for authorization; no login is needed"
            ));
        }
        discovery::Asked::Login(challenge) | discovery::Asked::MoreScope(challenge) => challenge,
    };
    let metadata = discovery::checked_resource_metadata(&http, &server, &challenge).await?;
    // The resource indicator exactly as the metadata publishes it (checked to be
    // this server's, or its origin's for a document at the root).
    let indicator = metadata
        .resource
        .clone()
        .unwrap_or_else(|| resource.clone());
    let issuer = metadata
        .authorization_servers
        .first()
        .ok_or("the protected resource metadata names no authorization server")?
        .clone();
    let server_meta = discovery::server_metadata(&http, &issuer, metadata.at_origin).await?;
    let authorization_url = endpoint_url(
        "authorization endpoint",
        &server_meta.authorization_endpoint,
    )?;
    let token_url = endpoint_url("token endpoint", &server_meta.token_endpoint)?;
    let mut scopes: BTreeSet<String> = match &challenge.scope {
        Some(s) => s.split_whitespace().map(str::to_string).collect(),
        None => metadata.scopes_supported.iter().cloned().collect(),
    };
    if scopes.is_empty() {
        scopes = server_meta.scopes_supported.iter().cloned().collect();
    }
    // A login again asks for what the last one was granted and what a session asked
    // for since (step-up: the union of granted and newly required scope).
    for (_, record) in store.find_unlocked(&resource) {
        if record.issuer == server_meta.issuer {
            for scope in [&record.scope, &record.wanted_scope].into_iter().flatten() {
                scopes.extend(scope.split_whitespace().map(str::to_string));
            }
        }
    }

    let callback = callback::Callback::bind(options.callback_port).await?;
    let Chosen {
        client,
        auth,
        registered,
    } = match &options.client {
        Some(c) => Chosen {
            auth: TokenAuth::choose(
                c.token_endpoint_auth_method.as_deref(),
                &server_meta.token_endpoint_auth_methods_supported,
                c.client_secret.is_some(),
            ),
            client: c.clone(),
            registered: false,
        },
        // The 2025-11-25 order: pre-registered, then a metadata document, then
        // dynamic registration.
        None => match &options.client_metadata_url {
            Some(url) if server_meta.client_id_metadata_document_supported => Chosen {
                client: ClientConfig {
                    client_id: url.clone(),
                    client_secret: None,
                    token_endpoint_auth_method: None,
                },
                auth: TokenAuth::None,
                registered: false,
            },
            _ => register(&http, &server_meta, &callback.redirect_uri).await?,
        },
    };
    let mut oauth = BasicClient::new(ClientId::new(client.client_id.clone()))
        .set_auth_uri(AuthUrl::from_url(authorization_url))
        .set_token_uri(TokenUrl::from_url(token_url.clone()))
        .set_redirect_uri(
            RedirectUrl::new(callback.redirect_uri.clone())
                .map_err(|e| format!("the redirect URI is not a URL: {e}"))?,
        )
        .set_auth_type(auth.auth_type());
    if let (Some(secret), false) = (&client.client_secret, auth == TokenAuth::None) {
        oauth = oauth.set_client_secret(ClientSecret::new(secret.clone()));
    }
    let token_client = http.client_for(&token_url)?;
    let post = |request: HttpRequest| send(http, token_client.clone(), request);

    for step in 0..=MAX_STEP_UPS {
        let (pkce, verifier) = PkceCodeChallenge::new_random_sha256();
        let (address, state) = oauth
            .authorize_url(CsrfToken::new_random)
            .add_scopes(scopes.iter().cloned().map(Scope::new))
            .set_pkce_challenge(pkce)
            .add_extra_param("resource", indicator.clone())
            .url();
        let shown = crate::base::text::escape_for_terminal(address.as_str());
        say(&format!("Open this address to log in:\n  {shown}"));
        if options.open_browser {
            open_browser(address.as_str());
        }
        if options.paste_back {
            say(
                "Then paste the address the browser ends on (it starts with the redirect URI) and press Enter:",
            );
        }
        let query = tokio::time::timeout_at(
            deadline,
            wait_for_callback(&callback, state.secret(), options.paste_back),
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
            .add_extra_param("resource", indicator.clone())
            .request_async(&post)
            .await
            .map_err(|e| format!("the token request failed: {}", token_error(e)))?;
        let granted = granted_scope(tokens.scopes(), &scopes);
        let obtained = now();
        let record = TokenRecord {
            resource: resource.clone(),
            issuer: server_meta.issuer.clone(),
            token_endpoint: server_meta.token_endpoint.clone(),
            client_id: client.client_id.clone(),
            client_secret: client.client_secret.clone(),
            access_token: tokens.access_token().secret().clone(),
            refresh_token: tokens.refresh_token().map(|t| t.secret().clone()),
            expires_at: tokens.expires_in().map(|d| expiry(obtained, d)),
            scope: granted.clone(),
            obtained_at: Some(obtained),
            token_endpoint_auth: Some(auth.name().to_string()),
            wanted_scope: None,
            resource_indicator: (indicator != resource).then(|| indicator.clone()),
        };
        // A token without enough scope is answered 403 insufficient_scope: ask again
        // for the union, a bounded number of times.
        let more = match discovery::probe(&http, &server, Some(&record.access_token)).await? {
            discovery::Asked::Nothing => None,
            discovery::Asked::MoreScope(challenge) => Some(challenge.scope.unwrap_or_default()),
            discovery::Asked::Login(_) => {
                return Err(
                    "the server refuses the token the authorization server just issued (HTTP 401)"
                        .into(),
                );
            }
        };
        match more {
            Some(wanted) if step < MAX_STEP_UPS => {
                let before = scopes.len();
                scopes.extend(wanted.split_whitespace().map(str::to_string));
                let wanted = crate::base::text::escape_cut(&wanted, 200);
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
                    "the server still answers 403 insufficient_scope ({}) after {MAX_STEP_UPS} step-ups",
                    crate::base::text::escape_cut(&wanted, 200)
                ));
            }
            None => {}
        }
        let lock = lock(store, deadline).await?;
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

/// The scope a token response grants: what it says, else what was asked for (RFC
/// 6749 §5.1: an absent `scope` means the one requested), `None` when neither.
fn granted_scope(said: Option<&Vec<Scope>>, asked: &BTreeSet<String>) -> Option<String> {
    let join = |items: Vec<String>| items.join(" ");
    said.map(|s| join(s.iter().map(|s| s.to_string()).collect()))
        .or_else(|| (!asked.is_empty()).then(|| join(asked.iter().cloned().collect())))
}

/// When a token given at `now` for `lifetime` expires, in Unix seconds; a lifetime
/// past the end of time is the end of time, not an overflow.
fn expiry(now: u64, lifetime: Duration) -> u64 {
    now.saturating_add(lifetime.as_secs())
}

/// How often a run waiting for the cache's lock looks again.
const LOCK_POLL: Duration = Duration::from_millis(20);

/// Takes the store's lock, waiting at most until `deadline` (another run holds it
/// only while it reads or writes a file, never across a network call).
async fn lock(store: &TokenStore, deadline: Instant) -> Result<store::StoreLock, String> {
    loop {
        if let Some(held) = store.try_lock()? {
            return Ok(held);
        }
        if Instant::now() + LOCK_POLL > deadline {
            return Err(format!(
                "the token cache {} stayed locked by another mcp-lock run until the deadline",
                store.dir().display()
            ));
        }
        tokio::time::sleep(LOCK_POLL).await;
    }
}

async fn register(
    http: &Http,
    meta: &discovery::ServerMetadata,
    redirect_uri: &str,
) -> Result<Chosen, String> {
    let Some(endpoint) = &meta.registration_endpoint else {
        let document = if meta.client_id_metadata_document_supported {
            ", or host a Client ID Metadata Document and name it in \"oauth\": {\"clientMetadataUrl\": ...} (docs/oauth.md)"
        } else {
            ""
        };
        return Err(format!(
            "the authorization server {} offers no dynamic client registration; register a client there and put its clientId under \"oauth\" in the server's config entry{document}",
            meta.issuer
        ));
    };
    let url = endpoint_url("registration endpoint", endpoint)?;
    let body = json!({
        "client_name": "mcp-lock",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    });
    let client = http.client_for(&url)?;
    let (status, text) = http
        .within(&url, async {
            let response = client
                .post(url.clone())
                .header(CONTENT_TYPE, "application/json")
                .header(ACCEPT, "application/json")
                .body(body.to_string())
                .send()
                .await
                .map_err(|e| {
                    format!(
                        "client registration at {url} failed: {}",
                        crate::base::net::reqwest_chain(e)
                    )
                })?;
            let status = response.status();
            let body = read_capped(response, &url).await?;
            Ok((status, String::from_utf8_lossy(&body).into_owned()))
        })
        .await?;
    if !status.is_success() {
        return Err(format!(
            "client registration at {url} failed: HTTP {}: {}",
            status.as_u16(),
            crate::base::text::cut(text.trim(), 200)
        ));
    }
    let registration: Registration = serde_json::from_str(&text)
        .map_err(|e| format!("client registration at {url}: unreadable answer: {e}"))?;
    let auth = TokenAuth::choose(
        registration.token_endpoint_auth_method.as_deref(),
        &meta.token_endpoint_auth_methods_supported,
        registration.client_secret.is_some(),
    );
    let secret = registration
        .client_secret
        .filter(|_| auth != TokenAuth::None);
    Ok(Chosen {
        client: ClientConfig {
            client_id: registration.client_id,
            client_secret: secret,
            token_endpoint_auth_method: Some(auth.name().to_string()),
        },
        auth,
        registered: true,
    })
}

/// The callback's query, from the listener or (with paste-back) stdin, whichever first.
async fn wait_for_callback(
    callback: &callback::Callback,
    state: &str,
    paste_back: bool,
) -> Result<String, String> {
    if !paste_back {
        return callback.wait(state).await;
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
        got = callback.wait(state) => got,
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
    // The state first: a request that is not this login's answer says nothing about it.
    if params.get("state").map(String::as_str) != Some(state) {
        return Err("the callback's state does not match the login's; refusing it (start mcp-lock login again)".into());
    }
    if let Some(error) = params.get("error") {
        let description = params
            .get("error_description")
            .map(|d| format!(": {}", crate::base::text::escape_cut(d, 300)))
            .unwrap_or_default();
        return Err(format!(
            "the authorization server refused the login: {}{description}",
            crate::base::text::escape_cut(error, 100)
        ));
    }
    match params.get("iss") {
        Some(iss) if *iss != meta.issuer => {
            return Err(format!(
                "the callback comes from issuer {:?}, not {:?}; refusing it",
                crate::base::text::escape_cut(iss, 200),
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

#[cfg(test)]
mod tests;
