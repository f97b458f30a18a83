//! `mcp-lock login` / `mcp-lock logout`: OAuth tokens for remote servers.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::bail;
use mcp_lock::servers::auth::{self, LoginOptions, TokenStore};
use mcp_lock::servers::config::{Resolved, ServerSpec, TransportSpec};
use mcp_lock::verdict::exit_codes::ExitCode;

use super::{Workspace, env_lookup};
use crate::cli::{LoginArgs, LogoutArgs};

/// The remote entry named `server`, with its URL expanded.
fn remote_url(ws: &Workspace, server: &str) -> anyhow::Result<(ServerSpec, String)> {
    let (spec, remote) = remote_entry(ws, server)?;
    Ok((spec, remote.url))
}

/// The remote entry named `server`, resolved.
fn remote_entry(
    ws: &Workspace,
    server: &str,
) -> anyhow::Result<(ServerSpec, mcp_lock::servers::config::ResolvedRemote)> {
    let project = ws.load_config()?;
    let spec = project
        .select(std::slice::from_ref(&server.to_string()))?
        .remove(0);
    if !matches!(spec.transport, TransportSpec::Remote { .. }) {
        bail!("server {server:?} is a stdio server; login is for remote (http or sse) servers");
    }
    if spec.oauth_off {
        bail!(
            "server {server:?} turns OAuth off in its config (\"oauth\": false), so its client never logs in; set its credentials under \"headers\", or remove \"oauth\": false"
        );
    }
    match spec.resolve(&project.project_dir, &env_lookup)? {
        Resolved::Remote(remote) => Ok((spec, remote)),
        Resolved::Stdio(_) => unreachable!("a remote entry resolves to a remote server"),
    }
}

/// The entry's pre-registered client, its secret expanded.
fn client_config(ws: &Workspace, spec: &ServerSpec) -> anyhow::Result<Option<auth::ClientConfig>> {
    let Some(client) = &spec.oauth_client else {
        return Ok(None);
    };
    let client_secret = match &client.client_secret {
        None => None,
        Some(template) => Some(mcp_lock::servers::config::expand(
            template,
            &spec.name,
            "oauth.clientSecret",
            &ws.project_dir,
            &env_lookup,
            &mut mcp_lock::base::secrets::Secrets::default(),
        )?),
    };
    Ok(Some(auth::ClientConfig {
        client_id: client.client_id.clone(),
        client_secret,
        token_endpoint_auth_method: client.token_endpoint_auth_method.clone(),
    }))
}

fn store() -> anyhow::Result<TokenStore> {
    TokenStore::from_env(&env_lookup).map_err(anyhow::Error::msg)
}

pub async fn login(ws: &Workspace, args: LoginArgs) -> anyhow::Result<ExitCode> {
    let (spec, remote) = remote_entry(ws, &args.server)?;
    let store = store()?;
    if let Some(client) = &remote.machine {
        // No person needed: get a token now, as update, verify and the guard would.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(args.timeout);
        return match auth::machine::machine_bearer(&store, &remote.url, client, true, deadline)
            .await
        {
            Ok(Some(bearer)) => {
                super::status(
                    "Logged in",
                    anstyle::AnsiColor::Green,
                    &format!(
                        "to {} with issuer {} (client credentials; update, verify and guard get tokens by themselves)",
                        args.server,
                        mcp_lock::base::text::escape_cut(&bearer.issuer, 200)
                    ),
                );
                Ok(ExitCode::Success)
            }
            Ok(None) => {
                super::status(
                    "Logged in",
                    anstyle::AnsiColor::Green,
                    &format!("{}: the server asks for no authorization", args.server),
                );
                Ok(ExitCode::Success)
            }
            Err(e) => {
                super::error(
                    &remote
                        .secrets
                        .redact(&format!("login to {} failed: {e}", args.server)),
                );
                Ok(ExitCode::Unverified)
            }
        };
    }
    let url = remote.url;
    let interactive = std::io::stderr().is_terminal() && env_lookup("CI").is_none();
    if !interactive && !args.no_browser {
        // Nobody could see a browser open: never wait for one.
        bail!(
            "mcp-lock login needs a person: run it in a terminal, or pass --no-browser to open the address yourself and paste back where it ends (without a terminal or with CI set, no browser is opened)"
        );
    }
    let options = LoginOptions {
        open_browser: interactive && !args.no_browser,
        paste_back: args.no_browser,
        callback_port: args
            .callback_port
            .or(spec.oauth_client.as_ref().and_then(|c| c.callback_port))
            .unwrap_or(0),
        client: client_config(ws, &spec)?,
        client_metadata_url: spec
            .client_metadata_url
            .clone()
            .or(ws.policy(None)?.client_metadata_url),
        timeout: Duration::from_secs(args.timeout),
    };
    let say = |line: &str| eprintln!("{line}");
    match auth::login(&url, &store, &options, &say).await {
        Ok(done) => {
            // The issuer and scope are the authorization server's words.
            let scope = done
                .scope
                .map(|s| format!(", scope {}", mcp_lock::base::text::escape_cut(&s, 300)))
                .unwrap_or_default();
            let client = if done.registered {
                " (client registered)"
            } else {
                ""
            };
            super::status(
                "Logged in",
                anstyle::AnsiColor::Green,
                &format!(
                    "to {} with issuer {}{scope}{client}; tokens cached in {}",
                    args.server,
                    mcp_lock::base::text::escape_cut(&done.issuer, 200),
                    done.path.display()
                ),
            );
            Ok(ExitCode::Success)
        }
        Err(e) => {
            super::error(&format!("login to {} failed: {e}", args.server));
            Ok(ExitCode::Unverified)
        }
    }
}

pub fn logout(ws: &Workspace, args: LogoutArgs) -> anyhow::Result<ExitCode> {
    let (_, url) = remote_url(ws, &args.server)?;
    let resource = auth::canonical_resource(&url).map_err(anyhow::Error::msg)?;
    let store = store()?;
    let lock = store.lock().map_err(anyhow::Error::msg)?;
    let removed = store.remove(&resource, &lock).map_err(anyhow::Error::msg)?;
    if removed == 0 {
        super::status(
            "Logged out",
            anstyle::AnsiColor::Green,
            &format!("{}: no cached tokens to remove", args.server),
        );
    } else {
        super::status(
            "Logged out",
            anstyle::AnsiColor::Green,
            &format!("{}: removed its cached tokens", args.server),
        );
    }
    Ok(ExitCode::Success)
}
