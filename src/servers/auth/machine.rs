//! Machine-to-machine login: the MCP client-credentials extension
//! (`io.modelcontextprotocol/oauth-client-credentials`, SEP-1046). A CI job or an
//! agent host with no person gets a token itself, authenticating with a client secret
//! (`client_secret_basic` or `client_secret_post`, as the authorization server lists
//! them) or a signed JWT assertion (`private_key_jwt`, RFC 7523, ES256 or RS256).
//! Tokens are cached like a login's; the secret and key never are.

use std::collections::BTreeSet;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use oauth2::basic::BasicClient;
use oauth2::{AuthType, ClientId, ClientSecret, HttpRequest, Scope, TokenResponse, TokenUrl};
use reqwest::Url;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, RSA_PKCS1_SHA256, RsaKeyPair,
};
use serde_json::json;
use tokio::time::Instant;

use super::{
    Bearer, Http, REFRESH_MARGIN, TokenAuth, TokenRecord, TokenStore, canonical_resource,
    discovery, endpoint_url, expiry, granted_scope, lock, now, send, token_error,
};

/// A client-credentials client with its secret or key expanded: a remote entry's
/// own way to get a token, with no `mcp-lock login`.
#[derive(Clone)]
pub struct MachineClient {
    pub client_id: String,
    pub client_secret: Option<String>,
    pub private_key: Option<String>,
    pub signing_algorithm: Option<String>,
    pub scope: Option<String>,
}

impl std::fmt::Debug for MachineClient {
    // The secret and key are never printed, even in a debug dump.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MachineClient")
            .field("client_id", &self.client_id)
            .field("signing_algorithm", &self.signing_algorithm)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// What a cached record of this grant says in `token_endpoint_auth`'s place, so a
/// browser login's record and a machine's are never mixed up.
const GRANT: &str = "client_credentials";
/// How long a client assertion is valid.
const ASSERTION_SECONDS: u64 = 300;

/// The token for the server at `url` that `client` gets by itself: the cached one
/// while it is fresh (and not `force`, after a 401), else a new one from the
/// authorization server. `Ok(None)` when the server asks for no authorization.
pub async fn machine_bearer(
    store: &TokenStore,
    url: &str,
    client: &MachineClient,
    force: bool,
    deadline: Instant,
) -> Result<Option<Bearer>, String> {
    let resource = canonical_resource(url)?;
    let ours = |r: &TokenRecord| {
        r.client_id == client.client_id && r.token_endpoint_auth.as_deref() == Some(GRANT)
    };
    let fresh = |r: &TokenRecord| {
        r.expires_at
            .is_none_or(|at| at > now().saturating_add(REFRESH_MARGIN.as_secs()))
    };
    let cached = store
        .find_unlocked(&resource)
        .into_iter()
        .map(|(_, r)| r)
        .filter(ours)
        .max_by_key(|r| r.obtained_at.unwrap_or(0));
    if let Some(record) = &cached
        && !force
        && fresh(record)
    {
        return Ok(Some(record.clone().into()));
    }
    let failed = |e: String| format!("the client-credentials login failed: {e}");
    let http = Http::until(deadline);
    let server = Url::parse(url).map_err(|e| format!("invalid URL: {e}"))?;
    let challenge = match discovery::probe(&http, &server, None)
        .await
        .map_err(failed)?
    {
        discovery::Asked::Nothing => return Ok(None),
        discovery::Asked::Login(c) | discovery::Asked::MoreScope(c) => c,
    };
    let metadata = discovery::checked_resource_metadata(&http, &server, &challenge)
        .await
        .map_err(failed)?;
    let issuer = metadata
        .authorization_servers
        .first()
        .ok_or_else(|| {
            failed("the protected resource metadata names no authorization server".into())
        })?
        .clone();
    let server_meta = discovery::server_metadata(&http, &issuer, metadata.at_origin)
        .await
        .map_err(failed)?;
    let token_url = endpoint_url("token endpoint", &server_meta.token_endpoint).map_err(failed)?;
    let scopes: BTreeSet<String> = match (&client.scope, &challenge.scope) {
        (Some(s), _) | (None, Some(s)) => s.split_whitespace().map(str::to_string).collect(),
        (None, None) if !metadata.scopes_supported.is_empty() => {
            metadata.scopes_supported.iter().cloned().collect()
        }
        (None, None) => server_meta.scopes_supported.iter().cloned().collect(),
    };

    let mut oauth = BasicClient::new(ClientId::new(client.client_id.clone()))
        .set_token_uri(TokenUrl::from_url(token_url.clone()));
    let assertion = match (&client.private_key, &client.client_secret) {
        (Some(key), _) => {
            oauth = oauth.set_auth_type(AuthType::RequestBody);
            Some(assertion(key, client, &server_meta.issuer).map_err(failed)?)
        }
        (None, Some(secret)) => {
            let auth = TokenAuth::choose(
                None,
                &server_meta.token_endpoint_auth_methods_supported,
                true,
            );
            oauth = oauth
                .set_auth_type(auth.auth_type())
                .set_client_secret(ClientSecret::new(secret.clone()));
            None
        }
        (None, None) => {
            return Err(failed(
                "the entry gives no clientSecret or privateKey".into(),
            ));
        }
    };
    let token_client = http.client_for(&token_url)?;
    let post = |request: HttpRequest| send(http, token_client.clone(), request);
    let mut request = oauth
        .exchange_client_credentials()
        .add_scopes(scopes.iter().cloned().map(Scope::new))
        .add_extra_param(
            "resource",
            metadata
                .resource
                .clone()
                .unwrap_or_else(|| resource.clone()),
        );
    if let Some(jwt) = assertion {
        request = request
            .add_extra_param(
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            )
            .add_extra_param("client_assertion", jwt);
    }
    let tokens = request
        .request_async(&post)
        .await
        .map_err(|e| failed(format!("the token request failed: {}", token_error(e))))?;
    let obtained = now();
    let record = TokenRecord {
        resource: resource.clone(),
        issuer: server_meta.issuer.clone(),
        token_endpoint: server_meta.token_endpoint.clone(),
        client_id: client.client_id.clone(),
        // Never cached: the config holds it, and the cache need not.
        client_secret: None,
        access_token: tokens.access_token().secret().clone(),
        refresh_token: None,
        expires_at: tokens.expires_in().map(|d| expiry(obtained, d)),
        scope: granted_scope(tokens.scopes(), &scopes),
        obtained_at: Some(obtained),
        token_endpoint_auth: Some(GRANT.into()),
        wanted_scope: None,
        resource_indicator: None,
    };
    let held = lock(store, deadline).await?;
    store.save(&record, &held)?;
    Ok(Some(record.into()))
}

/// A client assertion (RFC 7523 §2.2): a JWT from the client to the authorization
/// server, signed with the entry's key.
fn assertion(pem: &str, client: &MachineClient, audience: &str) -> Result<String, String> {
    let der = pem_der(pem)?;
    let algorithm = client.signing_algorithm.as_deref().unwrap_or("ES256");
    let issued = now();
    let mut jti = [0u8; 16];
    ring::rand::SecureRandom::fill(&SystemRandom::new(), &mut jti)
        .map_err(|_| "no randomness for the assertion's jti".to_string())?;
    let header = json!({"alg": algorithm, "typ": "JWT"});
    let claims = json!({
        "iss": client.client_id,
        "sub": client.client_id,
        "aud": audience,
        "iat": issued,
        "exp": issued + ASSERTION_SECONDS,
        "jti": hex(&jti),
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let rng = SystemRandom::new();
    let unreadable = |kind: &str| {
        format!(
            "oauth.privateKey is not a PKCS#8 {kind} private key (PEM \"BEGIN PRIVATE KEY\") for {algorithm}"
        )
    };
    let signature = match algorithm {
        "ES256" => {
            let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
                .map_err(|_| unreadable("P-256"))?;
            key.sign(&rng, signing_input.as_bytes())
                .map_err(|_| "signing the client assertion failed".to_string())?
                .as_ref()
                .to_vec()
        }
        "RS256" => {
            let key = RsaKeyPair::from_pkcs8(&der).map_err(|_| unreadable("RSA"))?;
            let mut signature = vec![0; key.public().modulus_len()];
            key.sign(
                &RSA_PKCS1_SHA256,
                &rng,
                signing_input.as_bytes(),
                &mut signature,
            )
            .map_err(|_| "signing the client assertion failed".to_string())?;
            signature
        }
        other => return Err(format!("signing algorithm {other:?} is not ES256 or RS256")),
    };
    Ok(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    ))
}

/// The DER bytes of a PEM `PRIVATE KEY` block (a `\n` written as the two characters
/// `\` `n`, as in an environment variable holding one line, is read as a newline).
fn pem_der(pem: &str) -> Result<Vec<u8>, String> {
    let pem = pem.replace("\\n", "\n");
    let body = pem
        .split("-----BEGIN PRIVATE KEY-----")
        .nth(1)
        .and_then(|rest| rest.split("-----END PRIVATE KEY-----").next())
        .ok_or("oauth.privateKey holds no \"-----BEGIN PRIVATE KEY-----\" block (PKCS#8 PEM)")?;
    let base64: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    STANDARD
        .decode(base64)
        .map_err(|_| "oauth.privateKey's PEM block is not base64".to_string())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(key: &str, alg: &str) -> MachineClient {
        MachineClient {
            client_id: "ci-bot".into(),
            client_secret: None,
            private_key: Some(key.into()),
            signing_algorithm: Some(alg.into()),
            scope: None,
        }
    }

    /// A P-256 key made for this test, as PKCS#8 PEM.
    fn p256_pem() -> (String, Vec<u8>) {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let key =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), &rng).unwrap();
        let public = ring::signature::KeyPair::public_key(&key).as_ref().to_vec();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(doc.as_ref())
        );
        (pem, public)
    }

    #[test]
    fn an_es256_assertion_verifies_with_the_keys_public_half_and_names_the_client() {
        let (pem, public) = p256_pem();
        let jwt = assertion(&pem, &client(&pem, "ES256"), "https://as.example").unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "ci-bot");
        assert_eq!(claims["sub"], "ci-bot");
        assert_eq!(claims["aud"], "https://as.example");
        assert_eq!(
            claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
            ASSERTION_SECONDS
        );
        let verifier = ring::signature::UnparsedPublicKey::new(
            &ring::signature::ECDSA_P256_SHA256_FIXED,
            public,
        );
        let signed = format!("{}.{}", parts[0], parts[1]);
        verifier
            .verify(
                signed.as_bytes(),
                &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
            )
            .expect("the signature verifies");
    }

    #[test]
    fn a_key_written_on_one_line_with_escaped_newlines_is_read() {
        let (pem, _) = p256_pem();
        let one_line = pem.replace('\n', "\\n");
        assert!(assertion(&one_line, &client(&one_line, "ES256"), "a").is_ok());
    }

    #[test]
    fn a_key_that_is_not_pkcs8_pem_or_not_of_the_algorithm_is_one_clear_error() {
        let e = assertion("not a key", &client("", "ES256"), "a").unwrap_err();
        assert!(e.contains("BEGIN PRIVATE KEY"), "{e}");
        let (pem, _) = p256_pem();
        let e = assertion(&pem, &client(&pem, "RS256"), "a").unwrap_err();
        assert!(e.contains("RSA") && e.contains("RS256"), "{e}");
        // The key itself is never in the message.
        assert!(!e.contains(&pem[30..60]), "{e}");
    }
}
