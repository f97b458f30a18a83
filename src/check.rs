//! Checking many servers at once: resolve, fetch concurrently (bounded), compare.

use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::client::{ClientOptions, Fetched, fetch_stdio};
use crate::config::{ConfigError, ProjectConfig, ResolvedStdio, ServerSpec};
use crate::drift::{ServerReport, compare};
use crate::lock::Lockfile;

/// How to check.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub client: ClientOptions,
    /// Servers contacted at once.
    pub jobs: usize,
    /// Send the clientInfo and capabilities the lock recorded (verify), rather than
    /// this build's defaults (update).
    pub identity_from_lock: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            client: ClientOptions::default(),
            jobs: 8,
            identity_from_lock: true,
        }
    }
}

/// One server's fetch and its comparison with the lock.
#[derive(Debug, Clone)]
pub struct Checked {
    pub spec: ServerSpec,
    /// What the server said; `None` when it could not be contacted by design (remote).
    pub fetched: Option<Fetched>,
    pub report: ServerReport,
}

/// Called as each server finishes, for progress display.
pub type Progress = Arc<dyn Fn(&ServerReport) + Send + Sync>;

/// Expands every selected server's variables up front, so a config error stops the
/// run before any server starts.
pub fn resolve_all(
    project: &ProjectConfig,
    specs: &[ServerSpec],
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(ServerSpec, Option<ResolvedStdio>)>, ConfigError> {
    specs
        .iter()
        .map(|spec| {
            Ok((
                spec.clone(),
                spec.resolve_stdio(&project.project_dir, lookup)?,
            ))
        })
        .collect()
}

/// Fetches and compares every server, at most `options.jobs` at a time. Results come
/// back in the order given.
pub async fn check_servers(
    targets: Vec<(ServerSpec, Option<ResolvedStdio>)>,
    lock: &Lockfile,
    options: &CheckOptions,
    progress: Progress,
) -> Vec<Checked> {
    let permits = Arc::new(Semaphore::new(options.jobs.max(1)));
    let mut handles = Vec::new();
    for (spec, resolved) in targets {
        let pinned = lock.servers.get(&spec.name).cloned();
        let mut client = options.client.clone();
        if options.identity_from_lock
            && let Some(pin) = &pinned
        {
            client.capabilities = pin.client_capabilities.to_value();
            client.client_info = pin.client_info.to_value();
        }
        let permits = permits.clone();
        let progress = progress.clone();
        handles.push(tokio::spawn(async move {
            let checked = match resolved {
                None => Checked {
                    report: ServerReport::unverifiable(
                        &spec.name,
                        spec.transport_name(),
                        "remote transport not supported yet; this server was not checked".into(),
                    ),
                    spec,
                    fetched: None,
                },
                Some(resolved) => {
                    let _permit = permits.acquire_owned().await.expect("never closed");
                    let fetched = fetch_stdio(&resolved, &client).await;
                    let report = compare(&spec, pinned.as_ref(), &fetched);
                    Checked {
                        spec,
                        fetched: Some(fetched),
                        report,
                    }
                }
            };
            progress(&checked.report);
            checked
        }));
    }
    let mut results = Vec::with_capacity(handles.len());
    for handle in handles {
        match handle.await {
            Ok(checked) => results.push(checked),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    results
}
