//! HTTP plumbing that the authorization exchanges ([`crate::servers::auth`]) and the MCP
//! client ([`crate::servers::client`]) both stand on: one way to build a client (TLS, proxies,
//! redirects) and to say why a request failed. Below both, so neither imports the
//! other for it.

use std::sync::Once;
use std::time::Duration;

use reqwest::{Client, StatusCode, Url};

/// Redirects followed for one request, within and across origins together.
pub const MAX_REDIRECTS: usize = 10;

/// The HTTP client for one server: TLS through rustls (ring), proxies from the
/// environment except for loopback, redirects kept to the same origin unless allowed.
pub fn build_client(url: &Url, connect_timeout: Duration) -> Result<Client, String> {
    static PROVIDER: Once = Once::new();
    PROVIDER.call_once(|| {
        // Fails only if another provider was installed first, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    // Only a same-origin 307/308 is followed by reqwest: it keeps the method and body.
    // A 301/302/303 would turn a POST into a GET, so it is reported instead; another
    // origin is followed by the connection itself, without the configured headers.
    let origin = url.origin();
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        let keeps_method = matches!(
            attempt.status(),
            StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
        );
        if attempt.previous().len() >= MAX_REDIRECTS {
            attempt.error("more than 10 redirects")
        } else if keeps_method && attempt.url().origin() == origin {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    let mut builder = Client::builder()
        .redirect(policy)
        .user_agent(concat!("mcp-lock/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(connect_timeout);
    if is_loopback(url) {
        // A proxy cannot reach this machine's loopback on our behalf.
        builder = builder.no_proxy();
    }
    builder
        .build()
        .map_err(|e| format!("could not set up the HTTP client: {}", error_chain(&e)))
}

pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Every message of a reqwest error's chain, without the URL it carries.
pub fn reqwest_chain(e: reqwest::Error) -> String {
    error_chain(&e.without_url())
}

/// Every message of an error chain, which reqwest spreads over sources.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        let part = inner.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = inner.source();
    }
    text
}
