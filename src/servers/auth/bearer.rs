//! The bearer token a request carries: the cached one, refreshed, or asked for again
//! after a step-up.

use super::*;

/// A token to send, and who issued it.
pub struct Bearer {
    pub access_token: String,
    pub issuer: String,
}

impl From<TokenRecord> for Bearer {
    fn from(record: TokenRecord) -> Self {
        Bearer {
            access_token: record.access_token,
            issuer: record.issuer,
        }
    }
}

/// The token to send to `remote`: its client-credentials client's own (see
/// [`machine::machine_bearer`]), else the one `mcp-lock login` cached (see
/// [`cached_bearer`]).
pub async fn bearer_for(
    store: &TokenStore,
    url: &str,
    machine: Option<&machine::MachineClient>,
    force: bool,
    deadline: Instant,
) -> Result<Option<Bearer>, String> {
    match machine {
        Some(client) => machine::machine_bearer(store, url, client, force, deadline).await,
        None => cached_bearer(store, url, force, deadline).await,
    }
}

/// The cached token for the server at `url`, if `login` left one: refreshed first
/// when it expires within a minute, or when `force` (after a 401). Every exchange is
/// over by `deadline`, and the cache's lock is held only to read or write a file, so
/// a token endpoint that never answers stalls no other run. `Err` when a needed
/// refresh failed.
pub async fn cached_bearer(
    store: &TokenStore,
    url: &str,
    force: bool,
    deadline: Instant,
) -> Result<Option<Bearer>, String> {
    let Ok(resource) = canonical_resource(url) else {
        return Ok(None);
    };
    let http = Http::until(deadline);
    let fresh = |r: &TokenRecord| {
        r.expires_at
            .is_none_or(|at| at > now().saturating_add(REFRESH_MARGIN.as_secs()))
    };
    // Files are replaced atomically, so a read without the lock sees a whole record.
    let records = store.find_unlocked(&resource);
    let named = if records.len() > 1 {
        current_issuers(&http, url).await
    } else {
        Vec::new()
    };
    let Some((path, first)) = choose(records, &named) else {
        return Ok(None);
    };
    if !force && fresh(&first) {
        return Ok(Some(first.into()));
    }
    // Another run may have refreshed it meanwhile.
    let Some(record) = reread(store, &path, &resource, deadline).await? else {
        return Ok(None);
    };
    if !force && fresh(&record) || force && record.access_token != first.access_token {
        return Ok(Some(record.into()));
    }
    let refreshed = match refresh(&http, record.clone()).await {
        Ok(refreshed) => refreshed,
        Err(e) => {
            // A run that refreshed at the same time may have rotated the refresh
            // token under us: its tokens are as good.
            return match reread(store, &path, &resource, deadline).await? {
                Some(now) if now.refresh_token != record.refresh_token => Ok(Some(now.into())),
                _ => Err(e),
            };
        }
    };
    // Saved only over the record it was made from: a login, logout or refresh by
    // another run while ours was on the network wins, and this run still uses the
    // tokens it got.
    let held = lock(store, deadline).await?;
    if store
        .read(&path, &resource, &held)
        .is_some_and(|now| same_tokens(&now, &record))
    {
        store.save_to(&path, &refreshed, &held)?;
    }
    Ok(Some(refreshed.into()))
}

/// Notes in the cache that the server asked for `scope` (403 `insufficient_scope`)
/// of the token in use for `url`, so the next `mcp-lock login` asks for it.
pub async fn want_scope(
    store: &TokenStore,
    url: &str,
    access_token: &str,
    scope: &str,
    deadline: Instant,
) -> Result<(), String> {
    let resource = canonical_resource(url)?;
    let held = lock(store, deadline).await?;
    for (path, mut record) in store.find(&resource, &held) {
        if record.access_token == access_token {
            let mut wanted: BTreeSet<String> = record
                .wanted_scope
                .iter()
                .flat_map(|s| s.split_whitespace().map(str::to_string))
                .collect();
            wanted.extend(scope.split_whitespace().map(str::to_string));
            record.wanted_scope = Some(wanted.into_iter().collect::<Vec<_>>().join(" "));
            store.save_to(&path, &record, &held)?;
        }
    }
    Ok(())
}

pub(super) fn same_tokens(a: &TokenRecord, b: &TokenRecord) -> bool {
    a.access_token == b.access_token && a.refresh_token == b.refresh_token
}

/// The record in `path` as the cache holds it now, read under the lock.
pub(super) async fn reread(
    store: &TokenStore,
    path: &std::path::Path,
    resource: &str,
    deadline: Instant,
) -> Result<Option<TokenRecord>, String> {
    let held = lock(store, deadline).await?;
    Ok(store.read(path, resource, &held))
}

/// The record to use among a server's cached ones (with their files, in file
/// order): one for an issuer the server's metadata names now (`named`, in its
/// order of preference) when there is one, else any; among those the latest login,
/// then the first file, so the choice never depends on how a directory lists.
pub(super) fn choose<P>(
    records: Vec<(P, TokenRecord)>,
    named: &[String],
) -> Option<(P, TokenRecord)> {
    let rank = |r: &TokenRecord| named.iter().position(|n| *n == r.issuer);
    let best = records.iter().filter_map(|(_, r)| rank(r)).min();
    records
        .into_iter()
        .filter(|(_, r)| best.is_none() || rank(r) == best)
        .enumerate()
        .max_by_key(|(i, (_, r))| (r.obtained_at.unwrap_or(0), std::cmp::Reverse(*i)))
        .map(|(_, found)| found)
}

/// The authorization servers the server's protected resource metadata names now;
/// empty when it cannot be had in half the time left (the server itself needs the
/// rest).
pub(super) async fn current_issuers(http: &Http, url: &str) -> Vec<String> {
    let Ok(server) = Url::parse(url) else {
        return Vec::new();
    };
    let now = Instant::now();
    let half = now + http.deadline().saturating_duration_since(now) / 2;
    let quick = Http::until(half);
    discovery::checked_resource_metadata(&quick, &server, &discovery::Challenge::default())
        .await
        .map(|m| m.authorization_servers)
        .unwrap_or_default()
}

/// Exchanges the refresh token for new tokens, keeping the old refresh token when no
/// new one is issued.
pub(super) async fn refresh(http: &Http, record: TokenRecord) -> Result<TokenRecord, String> {
    let expired = || "the token from mcp-lock login expired and cannot be refreshed".to_string();
    let Some(refresh_token) = record.refresh_token.clone() else {
        return Err(expired());
    };
    let token_url = endpoint_url("token endpoint", &record.token_endpoint)
        .map_err(|e| format!("{}: {e}", expired()))?;
    let client = http.client_for(&token_url)?;
    let http = *http;
    let post = |request: HttpRequest| send(http, client.clone(), request);
    let auth = TokenAuth::of_record(&record);
    let mut oauth = BasicClient::new(ClientId::new(record.client_id.clone()))
        .set_token_uri(TokenUrl::from_url(token_url.clone()))
        .set_auth_type(auth.auth_type());
    if let (Some(secret), false) = (&record.client_secret, auth == TokenAuth::None) {
        oauth = oauth.set_client_secret(ClientSecret::new(secret.clone()));
    }
    let tokens = oauth
        .exchange_refresh_token(&RefreshToken::new(refresh_token))
        .add_extra_param(
            "resource",
            record
                .resource_indicator
                .clone()
                .unwrap_or_else(|| record.resource.clone()),
        )
        .request_async(&post)
        .await
        .map_err(|e| format!("{}: {}", expired(), token_error(e)))?;
    Ok(TokenRecord {
        access_token: tokens.access_token().secret().clone(),
        refresh_token: tokens
            .refresh_token()
            .map(|t| t.secret().clone())
            .or(record.refresh_token.clone()),
        expires_at: tokens.expires_in().map(|d| expiry(now(), d)),
        ..record
    })
}
