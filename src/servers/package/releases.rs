//! The releases a registry lists for a pinned package, and which of them a move of the
//! pin may go to: the newest release that is older than the cooldown
//! (`[upgrade] min-release-age`), not deprecated (npm) or yanked (PyPI), and not a
//! prerelease unless the pin is one.
//!
//! [`fetch`] asks the registry the pin was resolved from ([`source`]); [`candidate`]
//! decides, without I/O, for `mcp-lock outdated` and a later `mcp-lock upgrade`.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{Entry, Fetcher, Package, PackagePin, Target, npm, pypi};

/// The cooldown when the policy names none: a week.
pub const DEFAULT_MIN_RELEASE_AGE: Duration = Duration::from_secs(7 * 24 * 60 * 60);

pub use super::Ecosystem;

/// One published version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    pub version: String,
    /// When it was published (npm's `time`; on PyPI the earliest upload of its files);
    /// `None` when the registry does not say.
    pub published: Option<SystemTime>,
    /// npm: the deprecation message.
    pub deprecated: Option<String>,
    /// PyPI: every file of it is yanked; the reason, `Some("")` when none was given.
    pub yanked: Option<String>,
}

impl Release {
    /// A release of `version` with nothing known about it but its version.
    pub fn new(version: &str) -> Release {
        Release {
            version: version.to_string(),
            published: None,
            deprecated: None,
            yanked: None,
        }
    }

    /// How long ago it was published (zero for a time in the future); `None` when
    /// unknown.
    pub fn age(&self, now: SystemTime) -> Option<Duration> {
        self.published
            .map(|p| now.duration_since(p).unwrap_or(Duration::ZERO))
    }

    /// Deprecated or yanked: never proposed unless named.
    pub fn is_withdrawn(&self) -> bool {
        self.deprecated.is_some() || self.yanked.is_some()
    }
}

/// Every release a registry lists for one package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Releases {
    pub name: String,
    pub ecosystem: Ecosystem,
    /// In no particular order.
    pub releases: Vec<Release>,
}

impl Releases {
    /// The release of `version` (for PyPI, `1.0` finds `1.0.0`).
    pub fn get(&self, version: &str) -> Option<&Release> {
        self.releases
            .iter()
            .find(|r| self.ecosystem.compare(&r.version, version) == Ordering::Equal)
    }
}

/// Where a pinned package's releases are listed: the registry (npm) or index (PyPI)
/// the pin was resolved from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub ecosystem: Ecosystem,
    pub name: String,
    /// The registry or index URL, with a trailing `/`; `Err`: why it is not known (an
    /// rc file that cannot be read), which fetching its releases then says.
    pub registry: Result<String, String>,
}

/// The pinned version of an npm or PyPI pin; `None` for every other kind.
pub fn pinned_version(pin: &PackagePin) -> Option<&str> {
    match &pin.package {
        Package::Npm { version, .. } | Package::Pypi { version, .. } => Some(version),
        _ => None,
    }
}

/// Where to look up a pin's releases, chosen as `update` chose where to resolve it:
/// the entry's `--registry`/`--default-index` argument when it still launches that
/// package, then its environment and npm's rc files (under `project_dir`), then the
/// process's. With no entry (the server left the config), the process's settings.
/// `None` for a pin that is no npm or PyPI package.
pub fn source(pin: &PackagePin, entry: Option<&Entry<'_>>, project_dir: &Path) -> Option<Source> {
    let lookup = |key: &str| match entry {
        Some(entry) => entry.lookup(key),
        None => std::env::var(key).ok(),
    };
    let recognised = entry.map(Entry::recognised);
    match &pin.package {
        Package::Npm { name, .. } => {
            let argument = recognised
                .as_ref()
                .filter(|r| matches!(&r.target, Target::Npm { name: n, .. } if n == name))
                .and_then(|r| r.registry.as_deref());
            Some(Source {
                ecosystem: Ecosystem::Npm,
                name: name.clone(),
                registry: npm::registry_given(name, argument, project_dir, &lookup),
            })
        }
        Package::Pypi { name, .. } => {
            let argument = recognised
                .filter(|r| {
                    matches!(&r.target, Target::Pypi { name: n, .. }
                        if pypi::normalize(n) == pypi::normalize(name))
                })
                .and_then(|r| r.registry);
            Some(Source {
                ecosystem: Ecosystem::Pypi,
                name: name.clone(),
                registry: Ok(argument.unwrap_or_else(|| pypi::index_for(&pin.launcher, &lookup))),
            })
        }
        _ => None,
    }
}

/// Every release the source lists, with publish times and deprecations (npm: the
/// full packument; PyPI: the simple API, PEP 691 JSON preferred over HTML).
pub async fn fetch(source: &Source, fetcher: &Fetcher) -> Result<Releases, String> {
    let registry = source.registry.as_deref().map_err(Clone::clone)?;
    match source.ecosystem {
        Ecosystem::Npm => {
            let url = format!("{registry}{}", source.name.replace('/', "%2f"));
            // The abbreviated packument npm install asks for has neither `time` nor
            // (everywhere) `deprecated`.
            let body = fetcher.get(&url, "application/json").await?;
            parse_npm(&body, &source.name).map_err(|e| {
                format!(
                    "the registry at {registry} answered for {} with {e}",
                    source.name
                )
            })
        }
        Ecosystem::Pypi => {
            let files = pypi::fetch(registry, &source.name, fetcher).await?;
            Ok(from_index_files(&source.name, &files))
        }
    }
}

/// [`fetch`] for each source at once, by server name.
pub async fn fetch_all(
    sources: Vec<(String, Source)>,
    fetcher: Fetcher,
) -> BTreeMap<String, Result<Releases, String>> {
    super::at_once(sources, move |(server, source)| async move {
        let releases = fetch(&source, &fetcher).await;
        (server, releases)
    })
    .await
}

/// Reads a full packument: `versions` (each one's `deprecated`) and `time`. A version
/// that is not semver is left out: it is never proposed.
pub fn parse_npm(body: &str, name: &str) -> Result<Releases, String> {
    #[derive(serde::Deserialize)]
    struct Shape {
        versions: Option<BTreeMap<String, Manifest>>,
        #[serde(default)]
        time: BTreeMap<String, serde_json::Value>,
    }
    #[derive(serde::Deserialize)]
    struct Manifest {
        deprecated: Option<serde_json::Value>,
    }
    let shape: Shape = serde_json::from_str(body).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => format!("a document that is not a packument ({e})"),
        _ => format!("something that is not JSON ({e})"),
    })?;
    let versions = shape
        .versions
        .ok_or("a document without versions (not a packument)")?;
    let releases = versions
        .into_iter()
        .filter(|(version, _)| npm::is_semver(version))
        .map(|(version, manifest)| Release {
            published: shape
                .time
                .get(&version)
                .and_then(|t| t.as_str())
                .and_then(parse_time),
            // npm un-deprecates by setting an empty message.
            deprecated: manifest
                .deprecated
                .and_then(|d| d.as_str().map(String::from))
                .filter(|d| !d.is_empty()),
            yanked: None,
            version,
        })
        .collect();
    Ok(Releases {
        name: name.to_string(),
        ecosystem: Ecosystem::Npm,
        releases,
    })
}

/// The releases of an index's files: published at the earliest upload of any of its
/// files (unknown if any file's time is), yanked when every file is (with the first
/// reason given).
pub fn from_index_files(name: &str, files: &[pypi::IndexFile]) -> Releases {
    struct Group<'a> {
        version: &'a str,
        published: Option<SystemTime>,
        time_unknown: bool,
        yanked: Vec<&'a str>,
        files: usize,
    }
    let mut groups: BTreeMap<pypi::Version, Group> = BTreeMap::new();
    for file in files {
        let Some(key) = pypi::Version::parse(&file.version) else {
            continue;
        };
        let group = groups.entry(key).or_insert(Group {
            version: &file.version,
            published: None,
            time_unknown: false,
            yanked: Vec::new(),
            files: 0,
        });
        group.files += 1;
        match file.upload_time.as_deref().and_then(parse_time) {
            Some(t) => group.published = Some(group.published.map_or(t, |p| p.min(t))),
            None => group.time_unknown = true,
        }
        if let Some(reason) = &file.yanked {
            group.yanked.push(reason);
        }
    }
    let releases = groups
        .into_values()
        .map(|g| Release {
            version: g.version.to_string(),
            published: if g.time_unknown { None } else { g.published },
            deprecated: None,
            yanked: (g.yanked.len() == g.files).then(|| {
                g.yanked
                    .iter()
                    .find(|r| !r.is_empty())
                    .copied()
                    .unwrap_or_default()
                    .to_string()
            }),
        })
        .collect();
    Releases {
        name: name.to_string(),
        ecosystem: Ecosystem::Pypi,
        releases,
    }
}

/// Which release to move to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want<'a> {
    /// The newest release that passes the cooldown, is neither deprecated nor yanked,
    /// and is no prerelease unless the pin is one.
    Newest,
    /// Exactly this version (`upgrade --to`): it must be listed and pass the cooldown;
    /// a deprecated, yanked or prerelease version is taken, its flags reported.
    Exactly(&'a str),
}

/// Why a newer release is not proposed yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Published `age` ago, less than the cooldown.
    Cooldown { age: Duration },
    /// The registry gives no publish time (and the cooldown is not 0).
    TimeUnknown,
}

impl Hold {
    /// `cooldown` or `release_time_unknown`, as the JSON report writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Hold::Cooldown { .. } => "cooldown",
            Hold::TimeUnknown => "release_time_unknown",
        }
    }
}

impl std::fmt::Display for Hold {
    /// "2d 3h old", "release time unknown".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Hold::Cooldown { age } => write!(f, "{} old", format_age(*age)),
            Hold::TimeUnknown => f.write_str("release time unknown"),
        }
    }
}

/// A release newer than the candidate (or the pin) that the cooldown holds back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldBack {
    pub release: Release,
    pub hold: Hold,
}

/// What the registry offers a pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outlook {
    /// The pinned release as the registry lists it; `None` when it no longer does
    /// (unpublished, or removed from the index).
    pub pinned: Option<Release>,
    /// The release to move to; `None` when there is none (the pin is the newest, or
    /// every newer release is held back or withdrawn).
    pub candidate: Option<Release>,
    /// Newer than the candidate (or the pin), too new for the cooldown; newest first.
    /// A deprecated or yanked one is listed too, with its flags.
    pub held_back: Vec<HeldBack>,
    /// Newer than the candidate (or the pin) and old enough, but deprecated or
    /// yanked, so passed over; newest first.
    pub withdrawn: Vec<Release>,
}

/// Why [`Want::Exactly`] cannot be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The registry does not list the version.
    NotListed { name: String, version: String },
    /// The version is listed but too new for the cooldown (or its time unknown).
    Held {
        name: String,
        version: String,
        hold: Hold,
        min_release_age: Duration,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotListed { name, version } => {
                write!(f, "{name} {version} is not listed on the registry")
            }
            Refusal::Held {
                name,
                version,
                hold,
                min_release_age,
            } => write!(
                f,
                "{name} {version} is held back by the cooldown of {} ({hold}); pass --min-release-age 0 to take it anyway",
                format_age(*min_release_age)
            ),
        }
    }
}

impl std::error::Error for Refusal {}

/// Decides, for the version `pinned`, what to move to (see [`Want`]) and what the
/// cooldown holds back. A release passes the cooldown when it was published at least
/// `min_release_age` before `now`; with a cooldown of zero every release does, its
/// time known or not.
pub fn candidate(
    releases: &Releases,
    pinned: &str,
    want: Want<'_>,
    min_release_age: Duration,
    now: SystemTime,
) -> Result<Outlook, Refusal> {
    let eco = releases.ecosystem;
    let hold = |r: &Release| -> Option<Hold> {
        if min_release_age.is_zero() {
            return None;
        }
        match r.age(now) {
            None => Some(Hold::TimeUnknown),
            Some(age) if age < min_release_age => Some(Hold::Cooldown { age }),
            Some(_) => None,
        }
    };
    let prereleases = eco.is_prerelease(pinned);
    let mut newer: Vec<&Release> = releases
        .releases
        .iter()
        .filter(|r| eco.compare(&r.version, pinned) == Ordering::Greater)
        .filter(|r| prereleases || !eco.is_prerelease(&r.version))
        .collect();
    newer.sort_by(|a, b| eco.compare(&b.version, &a.version));
    let chosen = match want {
        Want::Newest => newer
            .iter()
            .find(|r| !r.is_withdrawn() && hold(r).is_none())
            .map(|r| (*r).clone()),
        Want::Exactly(version) => {
            let named = releases.get(version).ok_or_else(|| Refusal::NotListed {
                name: releases.name.clone(),
                version: version.to_string(),
            })?;
            if let Some(hold) = hold(named) {
                return Err(Refusal::Held {
                    name: releases.name.clone(),
                    version: named.version.clone(),
                    hold,
                    min_release_age,
                });
            }
            Some(named.clone())
        }
    };
    let floor = chosen.as_ref().map_or(pinned, |c| c.version.as_str());
    let above: Vec<&Release> = newer
        .into_iter()
        .filter(|r| eco.compare(&r.version, floor) == Ordering::Greater)
        .collect();
    Ok(Outlook {
        pinned: releases.get(pinned).cloned(),
        held_back: above
            .iter()
            .filter_map(|r| {
                hold(r).map(|hold| HeldBack {
                    release: (*r).clone(),
                    hold,
                })
            })
            .collect(),
        withdrawn: above
            .iter()
            .filter(|r| r.is_withdrawn() && hold(r).is_none())
            .map(|r| (*r).clone())
            .collect(),
        candidate: chosen,
    })
}

/// Reads a cooldown: a whole number of days, hours or minutes (`7d`, `36h`, `90m`),
/// or `0` for none. At most ten years.
pub fn parse_age(text: &str) -> Result<Duration, String> {
    let bad = || {
        format!(
            "{text:?} is not a release age; write a whole number of days, hours or minutes (\"7d\", \"36h\", \"90m\"), or \"0\" for no cooldown"
        )
    };
    let trimmed = text.trim();
    if trimmed == "0" {
        return Ok(Duration::ZERO);
    }
    let unit = trimmed.chars().last().ok_or_else(bad)?;
    let seconds: u64 = match unit {
        'd' => 24 * 60 * 60,
        'h' => 60 * 60,
        'm' => 60,
        _ => return Err(bad()),
    };
    let digits = &trimmed[..trimmed.len() - 1];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| bad())?;
    const MAX: u64 = 3650 * 24 * 60 * 60;
    match n.checked_mul(seconds) {
        Some(total) if total <= MAX => Ok(Duration::from_secs(total)),
        _ => Err(format!(
            "{text:?} is longer than ten years; no cooldown is that long"
        )),
    }
}

/// An age as people read it: "7d", "2d 3h", "5h 10m", "12m", "under a minute".
pub fn format_age(age: Duration) -> String {
    let secs = age.as_secs();
    let (days, hours, minutes) = (secs / 86_400, secs % 86_400 / 3600, secs % 3600 / 60);
    match (days, hours, minutes) {
        (0, 0, 0) => "under a minute".into(),
        (0, 0, m) => format!("{m}m"),
        (0, h, 0) => format!("{h}h"),
        (0, h, m) => format!("{h}h {m}m"),
        (d, 0, _) => format!("{d}d"),
        (d, h, _) => format!("{d}d {h}h"),
    }
}

/// Reads an ISO 8601 / RFC 3339 date-time as registries write them
/// (`2026-01-02T03:04:05.678Z`, `…+02:00`, PyPI's microseconds), to the second.
pub fn parse_time(text: &str) -> Option<SystemTime> {
    let b = text.trim().as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(range)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b.get(4) != Some(&b'-')
        || b.get(7) != Some(&b'-')
        || !matches!(b.get(10), Some(b'T' | b't' | b' '))
    {
        return None;
    }
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if b.get(13) != Some(&b':') || b.get(16) != Some(&b':') {
        return None;
    }
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut at = 19;
    if b.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while b.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        if at == start {
            return None;
        }
    }
    let offset = match b.get(at)? {
        b'Z' | b'z' if at + 1 == b.len() => 0,
        sign @ (b'+' | b'-') => {
            let h = num(at + 1..at + 3)?;
            let m = match b.get(at + 3) {
                Some(b':') if at + 6 == b.len() => num(at + 4..at + 6)?,
                Some(_) if at + 5 == b.len() => num(at + 3..at + 5)?,
                None => 0,
                _ => return None,
            };
            let minutes = h * 60 + m;
            if *sign == b'+' { minutes } else { -minutes }
        }
        _ => return None,
    };
    let secs = crate::base::clock::days_from_civil(year, month, day) * 86_400
        + hour * 3600
        + minute * 60
        + second
        - offset * 60;
    u64::try_from(secs)
        .ok()
        .map(|s| UNIX_EPOCH + Duration::from_secs(s))
}

/// RFC 3339 in UTC, to the second: `2026-01-02T03:04:05Z`.
pub fn format_time(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    crate::base::clock::format_utc(secs, None)
}

#[cfg(test)]
mod tests;
