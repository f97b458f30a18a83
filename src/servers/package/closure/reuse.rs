//! A closure resolution made again only when what it was made from changed.
//!
//! npm and uv resolve a closure from the registry documents of its packages (npm's
//! packuments, the index's project pages). After a resolution whose documents did not
//! change while it ran, `verify` records the closure and the sha256 of each document
//! under the user's cache (`$XDG_CACHE_HOME/mcp-lock/resolutions`, sealed with the
//! closure cache's key). The next `verify` asks the registry for each document again
//! (a conditional request: unchanged ones answer 304 from [`super::super::registry_cache`])
//! and, when every one is what the record says, takes the recorded closure instead of
//! running npm or uv. Any changed, new or unreadable document, another resolver
//! binary, PATH or resolver setting, and the resolution runs again.
//!
//! A resolution that does run takes a turn ([`turn`]): at most two per core at once,
//! at a lower CPU priority, so it never starves the servers being listed beside it;
//! its deadline runs from its turn.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Closure, Ecosystem};
use crate::servers::package::{Fetcher, pypi};

/// The `Accept` npm asks packuments with (as [`crate::servers::package::npm::fetch`]).
pub const NPM_ACCEPT: &str = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8";
/// The `Accept` project pages are asked with (as [`crate::servers::package::pypi::fetch`]).
pub const PYPI_ACCEPT: &str = "application/vnd.pypi.simple.v1+json, text/html;q=0.2";

/// A record's first line.
const HEADER: &str = "mcp-lock resolution 2";

/// The most of a record read.
const MAX_RECORD: u64 = super::MAX_OUTPUT as u64;

/// Registry documents asked for at once, over the whole process.
const DOCUMENTS_AT_ONCE: usize = 16;

/// What a closure is resolved from, besides the registry's documents.
#[derive(Debug, Clone)]
pub struct Plan {
    pub ecosystem: Ecosystem,
    /// npm or uv, as found for the entry.
    pub tool: PathBuf,
    pub name: String,
    pub version: String,
    /// The registry (npm) or index (PyPI) URL, ending in `/`.
    pub registry: String,
    /// How registry look-ups are made (an sdist's metadata read around uv).
    pub fetcher: crate::servers::package::Fetcher,
}

impl Plan {
    /// Runs the resolver (`update`: at once, at the normal priority).
    pub async fn resolve(&self) -> Result<Closure, String> {
        self.run(false).await
    }

    /// Runs the resolver in its turn, at a lower priority (`verify`, beside the
    /// servers being listed).
    pub async fn resolve_in_turn(&self) -> Result<Closure, String> {
        let _turn = turn().await;
        self.run(true).await
    }

    async fn run(&self, lower: bool) -> Result<Closure, String> {
        let (tool, name, version, registry) =
            (&self.tool, &self.name, &self.version, &self.registry);
        match self.ecosystem {
            Ecosystem::Npm => super::npm::resolve(tool, name, version, registry, lower).await,
            Ecosystem::Pypi => {
                super::pypi::resolve(tool, name, version, registry, &self.fetcher, lower).await
            }
        }
    }

    /// The registry document of each package of `closure`, by URL: `None` when one
    /// would come from another registry than the plan's (a scope's own registry),
    /// which a record does not follow.
    fn documents(
        &self,
        closure: &Closure,
        registry_for: &(dyn Fn(&str) -> Option<String> + Sync),
    ) -> Option<Vec<(String, &'static str)>> {
        let mut urls = Vec::new();
        for p in &closure.packages {
            match self.ecosystem {
                Ecosystem::Npm => {
                    if registry_for(&p.name)? != self.registry {
                        return None;
                    }
                    urls.push((
                        format!("{}{}", self.registry, p.name.replace('/', "%2f")),
                        NPM_ACCEPT,
                    ));
                }
                Ecosystem::Pypi => urls.push((
                    format!("{}{}/", self.registry, pypi::normalize(&p.name)),
                    PYPI_ACCEPT,
                )),
            }
        }
        urls.sort();
        urls.dedup();
        Some(urls)
    }

    /// What else a resolution depends on: the resolver binary (its real path, size
    /// and modification time), where uv finds Python (PATH, a virtualenv), the
    /// resolver's settings in the environment and the bytes of npm's user and global
    /// configuration. sha256, hex.
    fn key(&self) -> Option<String> {
        let real = self.tool.canonicalize().ok()?;
        let meta = std::fs::metadata(&real).ok()?;
        let modified = meta
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_nanos();
        let mut text = format!(
            "{HEADER}\n{}\n{}\n{}\n{}\n{}\t{}\t{modified}\n",
            self.ecosystem.as_str(),
            self.name,
            self.version,
            self.registry,
            real.display(),
            meta.len(),
        );
        let mut vars: Vec<(String, String)> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .filter(|(k, _)| {
                let lower = k.to_ascii_lowercase();
                // Where npm and uv read settings and find Python (a virtualenv's
                // first, then uv's own under the data folder, then PATH).
                [
                    "PATH",
                    "HOME",
                    "XDG_DATA_HOME",
                    "VIRTUAL_ENV",
                    "CONDA_PREFIX",
                ]
                .contains(&k.as_str())
                    || lower.starts_with("npm_config_")
                    || k.starts_with("UV_")
                    || k.starts_with("PYTHON")
            })
            .collect();
        vars.sort();
        for (k, v) in vars {
            text.push_str(&format!("{k}={v}\n"));
        }
        if self.ecosystem == Ecosystem::Npm {
            // npm reads the user's (and the global) rc file; their bytes are part of it.
            let home = std::env::var_os("HOME").map(PathBuf::from);
            let user = std::env::var_os("npm_config_userconfig")
                .or_else(|| std::env::var_os("NPM_CONFIG_USERCONFIG"))
                .map(PathBuf::from)
                .or_else(|| home.map(|h| h.join(".npmrc")));
            for file in user.into_iter().chain([PathBuf::from("/etc/npmrc")]) {
                let bytes =
                    crate::base::files::read_regular(&file, 1024 * 1024).unwrap_or_default();
                text.push_str(&format!("{}\n", crate::contract::hash::sha256_hex(&bytes)));
            }
        }
        Some(crate::contract::hash::sha256_hex(text.as_bytes()))
    }
}

/// A turn to run a resolver: at most two per core at once (a resolution waits on
/// the registry part of its time), each at a lower CPU priority
/// ([`lower_priority`](super::lower_priority)), so resolutions beside the servers being listed take the
/// cores only when the servers leave them idle.
pub async fn turn() -> tokio::sync::SemaphorePermit<'static> {
    static TURNS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    let turns = TURNS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        tokio::sync::Semaphore::new(2 * cores)
    });
    turns.acquire().await.expect("never closed")
}

/// The closure `plan` resolves to: the recorded one when every registry document it
/// was resolved from is unchanged, else resolved again (and recorded when its
/// documents did not move while it ran). `pinned`: the closure the lock pins, whose
/// documents are read before resolving. `registry_for`: the registry npm asks for a
/// package name.
pub async fn resolve(
    plan: &Plan,
    pinned: Option<&Closure>,
    fetcher: &Fetcher,
    registry_for: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<Closure, String> {
    let key = plan.key();
    let root = root();
    if let (Some(key), Some(root)) = (&key, &root)
        && let Some((docs, closure)) = read(root, key, plan)
        && fetch_hashes(
            &docs
                .keys()
                .cloned()
                .map(|u| (u, accept_of(plan)))
                .collect::<Vec<_>>(),
            fetcher,
        )
        .await
        .is_some_and(|now| now == docs)
    {
        return Ok(closure);
    }
    let before = match pinned.and_then(|c| plan.documents(c, registry_for)) {
        Some(urls) if key.is_some() && root.is_some() => fetch_hashes(&urls, fetcher).await,
        _ => None,
    };
    let live = plan.resolve_in_turn().await?;
    if let (Some(before), Some(key), Some(root)) = (before, key, root)
        && let Some(urls) = plan.documents(&live, registry_for)
        && let Some(after) = fetch_hashes(&urls, fetcher).await
        && after
            .iter()
            .all(|(url, hash)| before.get(url) == Some(hash))
    {
        write(&root, &key, &after, &live, plan);
    }
    Ok(live)
}

fn accept_of(plan: &Plan) -> &'static str {
    match plan.ecosystem {
        Ecosystem::Npm => NPM_ACCEPT,
        Ecosystem::Pypi => PYPI_ACCEPT,
    }
}

/// The sha256 of each document, by URL; `None` when one cannot be read.
async fn fetch_hashes(
    urls: &[(String, &'static str)],
    fetcher: &Fetcher,
) -> Option<BTreeMap<String, String>> {
    static AT_ONCE: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(DOCUMENTS_AT_ONCE);
    let mut tasks = tokio::task::JoinSet::new();
    for (url, accept) in urls.iter().cloned() {
        let fetcher = *fetcher;
        tasks.spawn(async move {
            let _slot = AT_ONCE.acquire().await.expect("never closed");
            let body = fetcher.get(&url, accept).await.ok()?;
            Some((url, crate::contract::hash::sha256_hex(body.as_bytes())))
        });
    }
    let mut out = BTreeMap::new();
    while let Some(done) = tasks.join_next().await {
        let (url, hash) = done.ok()??;
        out.insert(url, hash);
    }
    Some(out)
}

/// `$XDG_CACHE_HOME/mcp-lock/resolutions`, else `$HOME/.cache/mcp-lock/resolutions`.
pub fn root() -> Option<PathBuf> {
    super::cache::cache_root().and_then(|c| c.parent().map(|p| p.join("resolutions")))
}

fn record_path(root: &Path, key: &str) -> PathBuf {
    root.join(&key[..40])
}

/// The closure as text its own parser reads back: npm's lockfile, uv's requirements.
fn serialize(closure: &Closure, plan: &Plan) -> Result<String, String> {
    match plan.ecosystem {
        Ecosystem::Npm => super::npm::lockfile(closure, &plan.name, &plan.version),
        Ecosystem::Pypi => super::pypi::requirements(closure),
    }
}

fn deserialize(text: &str, plan: &Plan) -> Result<Closure, String> {
    match plan.ecosystem {
        Ecosystem::Npm => super::npm::from_lockfile(text, &plan.name, &plan.version),
        Ecosystem::Pypi => super::pypi::from_requirements(text, &plan.name, &plan.version),
    }
}

/// The record's text without its seal: header, key, one `doc <sha256> <url>` line per
/// document, an empty line, the closure.
fn unsealed(key: &str, docs: &BTreeMap<String, String>, closure: &str) -> String {
    let mut text = format!("{HEADER}\nkey {key}\n");
    for (url, hash) in docs {
        text.push_str(&format!("doc {hash} {url}\n"));
    }
    text.push('\n');
    text.push_str(closure);
    text
}

fn write(root: &Path, key: &str, docs: &BTreeMap<String, String>, closure: &Closure, plan: &Plan) {
    let Ok(closure) = serialize(closure, plan) else {
        return;
    };
    if docs.keys().any(|u| u.contains(['\n', ' '])) {
        return;
    }
    let Ok(seal) = super::cache::cache_key(root) else {
        return;
    };
    let text = unsealed(key, docs, &closure);
    let tag = ring::hmac::sign(&seal, text.as_bytes());
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    if crate::base::files::create_dir_within(root, root, 0o700).is_err() {
        return;
    }
    let _ = crate::base::files::replace(
        &record_path(root, key),
        root,
        format!("{hex}\n{text}").as_bytes(),
        0o600,
    );
}

/// The recorded documents and closure for `key`, when the record's seal verifies.
fn read(root: &Path, key: &str, plan: &Plan) -> Option<(BTreeMap<String, String>, Closure)> {
    let bytes = crate::base::files::read_regular(&record_path(root, key), MAX_RECORD).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (tag_hex, text) = text.split_once('\n')?;
    let seal = super::cache::cache_key(root).ok()?;
    let tag: Vec<u8> = (0..tag_hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(tag_hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<_>>()?;
    ring::hmac::verify(&seal, text.as_bytes(), &tag).ok()?;
    let (head, closure) = text.split_once("\n\n")?;
    let mut lines = head.lines();
    (lines.next()? == HEADER).then_some(())?;
    (lines.next()? == format!("key {key}")).then_some(())?;
    let mut docs = BTreeMap::new();
    for line in lines {
        let (hash, url) = line.strip_prefix("doc ")?.split_once(' ')?;
        docs.insert(url.to_string(), hash.to_string());
    }
    let closure = deserialize(closure, plan).ok()?;
    // The record is for the documents of exactly this closure.
    let urls = plan.documents(&closure, &|_| Some(plan.registry.clone()))?;
    if urls.len() != docs.len() || urls.iter().any(|(u, _)| !docs.contains_key(u)) {
        return None;
    }
    Some((docs, closure))
}
