//! Finding a server's authorization server: the 401 challenge, protected resource
//! metadata (RFC 9728) and authorization server metadata (RFC 8414 / OpenID Connect
//! discovery), with the issuer check.

use reqwest::header::{ACCEPT, CONTENT_TYPE};
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
}

/// What an unauthenticated `initialize` POST got: the challenge of a 401, or `None`
/// when the server let it through.
pub async fn probe(http: &Http, url: &Url) -> Result<Option<Challenge>, String> {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "mcp-lock", "version": env!("CARGO_PKG_VERSION")}}
    });
    let client = http.client_for(url)?;
    let response = http
        .within(url, async {
            client
                .post(url.clone())
                .header(ACCEPT, "application/json, text/event-stream")
                .header(CONTENT_TYPE, "application/json")
                .body(body.to_string())
                .send()
                .await
                .map_err(|e| {
                    format!(
                        "cannot reach {url}: {}",
                        crate::client::http::reqwest_chain(e)
                    )
                })
        })
        .await?;
    if response.status() != StatusCode::UNAUTHORIZED {
        return Ok(None);
    }
    let header = response
        .headers()
        .get("www-authenticate")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    Ok(Some(parse_challenge(&header)))
}

/// The resource metadata: the challenge's URL, else the path-aware well-known URL,
/// else the root one.
pub async fn resource_metadata(
    http: &Http,
    url: &Url,
    challenge: &Challenge,
) -> Result<(Url, ResourceMetadata), String> {
    let mut candidates = Vec::new();
    if let Some(given) = &challenge.resource_metadata {
        candidates.push(url.join(given).map_err(|e| {
            format!("the challenge's resource_metadata {given:?} is not a URL: {e}")
        })?);
    }
    let path = url.path().trim_end_matches('/');
    if !path.is_empty() {
        candidates.push(well_known(url, "oauth-protected-resource", path));
    }
    candidates.push(well_known(url, "oauth-protected-resource", ""));
    let mut tried = Vec::new();
    for candidate in candidates {
        match get_json::<ResourceMetadata>(http, &candidate).await {
            Ok(doc) => return Ok((candidate, doc)),
            Err(e) => tried.push(e),
        }
    }
    Err(format!(
        "no protected resource metadata found ({})",
        tried.join("; ")
    ))
}

/// The resource metadata, checked to be for the server at `url`: RFC 9728 requires
/// its `resource`, and a document for another resource (or none named) could send
/// the login to anyone's authorization server.
pub async fn checked_resource_metadata(
    http: &Http,
    url: &Url,
    challenge: &Challenge,
) -> Result<ResourceMetadata, String> {
    let resource = super::canonical_resource(url.as_str())?;
    let (at, metadata) = resource_metadata(http, url, challenge).await?;
    let Some(named) = &metadata.resource else {
        return Err(format!(
            "the protected resource metadata at {at} names no resource (RFC 9728 requires it); refusing it"
        ));
    };
    if super::canonical_resource(named).ok().as_deref() != Some(resource.as_str()) {
        return Err(format!(
            "the protected resource metadata at {at} is for {:?}, not {resource:?}; refusing it",
            crate::text::escape_cut(named, 200)
        ));
    }
    Ok(metadata)
}

/// The authorization server's metadata, by RFC 8414 then OpenID Connect discovery,
/// checked to name the issuer it was fetched for.
pub async fn server_metadata(http: &Http, issuer: &str) -> Result<ServerMetadata, String> {
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
    for candidate in candidates {
        match get_json::<ServerMetadata>(http, &candidate).await {
            Ok(doc) => {
                if doc.issuer != issuer {
                    return Err(format!(
                        "the authorization server metadata at {candidate} names the issuer {:?}, not {issuer:?}; refusing it",
                        crate::text::escape_cut(&doc.issuer, 200)
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
            Err(e) => tried.push(e),
        }
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

async fn get_json<T: serde::de::DeserializeOwned>(http: &Http, url: &Url) -> Result<T, String> {
    let client = http.client_for(url)?;
    let body = http
        .within(url, async {
            let response = client
                .get(url.clone())
                .header(ACCEPT, "application/json")
                .send()
                .await
                .map_err(|e| format!("{url}: {}", crate::client::http::reqwest_chain(e)))?;
            if !response.status().is_success() {
                return Err(format!("{url}: HTTP {}", response.status().as_u16()));
            }
            super::read_capped(response, url).await
        })
        .await?;
    serde_json::from_slice(&body).map_err(|e| format!("{url}: not the expected JSON: {e}"))
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
