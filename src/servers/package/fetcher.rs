//! Fetching registry documents: a bounded body, same-origin redirects and a deadline
//! per request.

use super::*;

/// The most a registry's answer (a packument, a simple-API page) may hold. The
/// abbreviated packuments of the largest npm packages and the pages of the largest
/// PyPI projects are a few MB; more is refused while reading, not after.
pub(super) const MAX_REGISTRY_BODY: usize = 64 * 1024 * 1024;

/// How many same-origin redirects a registry look-up follows.
pub(super) const MAX_REDIRECTS: usize = 10;

/// How registry look-ups are made: whether a redirect to another origin is followed
/// (`--allow-redirects`, as for MCP servers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fetcher {
    pub allow_redirects: bool,
}

/// The whole of one registry look-up, redirects and body included.
pub(super) const REGISTRY_DEADLINE: Duration = Duration::from_secs(30);

impl Fetcher {
    /// The whole answer for a request to a registry, or why there is none, within
    /// one deadline for every hop and the whole body.
    /// Documents are kept in the registry cache and asked for again only if changed.
    pub async fn get(&self, url: &str, accept: &str) -> Result<String, String> {
        let body = self
            .get_within(url, accept, MAX_REGISTRY_BODY, true)
            .await?;
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// [`Fetcher::get`] for a file of at most `max` bytes (an sdist), as it was sent,
    /// never kept in the registry cache.
    pub async fn get_bytes(&self, url: &str, accept: &str, max: usize) -> Result<Vec<u8>, String> {
        self.get_within(url, accept, max, false).await
    }

    async fn get_within(
        &self,
        url: &str,
        accept: &str,
        max: usize,
        keep: bool,
    ) -> Result<Vec<u8>, String> {
        tokio::time::timeout(
            REGISTRY_DEADLINE,
            self.get_unbounded(url, accept, max, keep),
        )
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "{url} did not answer whole within {} s",
                REGISTRY_DEADLINE.as_secs()
            ))
        })
    }

    /// The HTTP client registry look-ups share (connections are kept and reused
    /// across look-ups: a verify asks for hundreds of documents).
    fn client() -> Result<reqwest::Client, String> {
        static CLIENT: std::sync::OnceLock<Result<reqwest::Client, String>> =
            std::sync::OnceLock::new();
        CLIENT
            .get_or_init(|| {
                // Fails only if another provider was installed first, which is as good.
                let _ = rustls::crypto::ring::default_provider().install_default();
                reqwest::Client::builder()
                    .user_agent(concat!("mcp-lock/", env!("CARGO_PKG_VERSION")))
                    .connect_timeout(Duration::from_secs(10))
                    // Redirects are followed below, where their origin is checked.
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| format!("cannot build an HTTP client: {e}"))
            })
            .clone()
    }

    async fn get_unbounded(
        &self,
        url: &str,
        accept: &str,
        max: usize,
        keep: bool,
    ) -> Result<Vec<u8>, String> {
        let client = Self::client()?;
        // A document kept from an earlier look-up is asked for only if it changed.
        let cached = if keep {
            registry_cache::read(url, accept, max)
        } else {
            None
        };
        let first = url::Url::parse(url).map_err(|e| format!("{url} is not a URL: {e}"))?;
        let mut at = first.clone();
        let mut response;
        let mut hops = 0;
        loop {
            let mut request = client.get(at.clone()).header("Accept", accept);
            if let Some(entry) = &cached {
                if let Some(etag) = &entry.etag {
                    request = request.header(reqwest::header::IF_NONE_MATCH, etag);
                }
                if let Some(lm) = &entry.last_modified {
                    request = request.header(reqwest::header::IF_MODIFIED_SINCE, lm);
                }
            }
            response = request
                .send()
                .await
                .map_err(|e| format!("cannot reach {at}: {}", crate::base::net::error_chain(&e)))?;
            if response.status() == reqwest::StatusCode::NOT_MODIFIED
                && let Some(entry) = cached
            {
                return Ok(entry.body.into_bytes());
            }
            if !response.status().is_redirection() {
                break;
            }
            let to = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .and_then(|l| at.join(l).ok())
                .ok_or_else(|| {
                    format!(
                        "{at} answered HTTP {} with no readable Location",
                        response.status()
                    )
                })?;
            if to.origin() != first.origin() && !self.allow_redirects {
                return Err(format!(
                    "{at} redirects to {to}, another origin; not followed (pass --allow-redirects to follow it)"
                ));
            }
            hops += 1;
            if hops > MAX_REDIRECTS {
                return Err(format!("{url} redirects more than {MAX_REDIRECTS} times"));
            }
            at = to;
        }
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Err(format!(
                "{at} answered 404: no such package on that registry"
            ));
        }
        if !status.is_success() {
            return Err(format!("{at} answered HTTP {status}"));
        }
        let too_large = || {
            format!(
                "{at} answered with more than {} MiB; refusing to read more (not a packument, index page or file mcp-lock accepts)",
                max / (1024 * 1024)
            )
        };
        if response.content_length().is_some_and(|n| n > max as u64) {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| {
            format!(
                "cannot read the answer from {at}: {}",
                crate::base::net::error_chain(&e)
            )
        })? {
            if body.len() + chunk.len() > max {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        let (etag, last_modified) = registry_cache::validators(response.headers());
        if keep && (etag.is_some() || last_modified.is_some()) {
            let kept = String::from_utf8_lossy(&body).into_owned();
            let (url, accept) = (url.to_string(), accept.to_string());
            // Written whole and synced, off the async workers.
            let _ = tokio::task::spawn_blocking(move || {
                registry_cache::write(
                    &url,
                    &accept,
                    etag.as_deref(),
                    last_modified.as_deref(),
                    &kept,
                )
            })
            .await;
        }
        Ok(body)
    }
}
