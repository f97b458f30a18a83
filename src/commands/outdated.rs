//! `mcp-lock outdated`: for each server the lock pins to an npm or PyPI package, the
//! newest release the cooldown lets the pin move to, the newer ones it holds back,
//! and which are deprecated or yanked. Report-only, as `cargo outdated` is: nothing
//! is written, and being behind is no failure.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use anstyle::{AnsiColor, Style};
use mcp_lock::base::text::{count, escape_for_terminal as esc};
use mcp_lock::records::lock::PinnedServer;
use mcp_lock::review::report::escape_markdown;
use mcp_lock::servers::config::{ConfigError, ProjectConfig, Resolved};
use mcp_lock::servers::package::releases::{
    self, Outlook, Release, Releases, Source, Want, format_age, format_time,
};
use mcp_lock::servers::package::{Fetcher, OwnedEntry, Package};
use mcp_lock::verdict::exit_codes::ExitCode;
use serde::Serialize;

use super::{Workspace, env_lookup};
use crate::cli::{OutdatedArgs, OutdatedFormat};

/// The whole report, as `--format json` writes it (docs/outdated.md).
#[derive(Debug, Serialize)]
struct Report {
    lock: String,
    /// The cooldown, as people write it (`7d`), and in seconds.
    min_release_age: String,
    min_release_age_seconds: u64,
    /// When the registries were asked; ages are counted to this.
    checked_at: String,
    exit_code: i32,
    servers: Vec<Row>,
    /// Servers of the lock not pinned to an npm or PyPI package, not named: left out.
    not_registry_packages: Vec<String>,
}

/// One server.
#[derive(Debug, Serialize)]
struct Row {
    server: String,
    status: Status,
    /// `npm` or `pypi`; for a server not pinned to either, what it is pinned to
    /// (`oci`, `script`, `unrecognised`, `unresolved`), or `remote`, or `none`.
    kind: String,
    package: Option<String>,
    /// The registry or index asked.
    registry: Option<String>,
    pinned: Option<Pinned>,
    /// The release the pin may move to.
    candidate: Option<Shown>,
    /// Newer than the candidate (or the pin), inside the cooldown; newest first.
    held_back: Vec<Held>,
    /// Newer than the candidate (or the pin) and old enough, but deprecated or
    /// yanked: never proposed; newest first.
    withdrawn: Vec<Shown>,
    /// Why it could not be checked (`unchecked`), or why it is no registry package.
    message: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    /// A candidate newer than the pin.
    Outdated,
    /// Nothing to move to (newer releases may still be held back).
    UpToDate,
    /// The registry could not be asked, or its answer not read.
    Unchecked,
    /// Named, but pinned to no npm or PyPI package.
    NotARegistryPackage,
}

#[derive(Debug, Serialize)]
struct Pinned {
    version: String,
    /// Whether the registry still lists it.
    listed: bool,
    #[serde(flatten)]
    facts: Facts,
}

#[derive(Debug, Serialize)]
struct Shown {
    version: String,
    #[serde(flatten)]
    facts: Facts,
}

#[derive(Debug, Serialize)]
struct Held {
    version: String,
    /// `cooldown` or `release_time_unknown`.
    hold: &'static str,
    #[serde(flatten)]
    facts: Facts,
}

/// What the registry says of a release.
#[derive(Debug, Default, Serialize)]
struct Facts {
    /// RFC 3339, UTC; null when the registry does not say.
    published: Option<String>,
    age_seconds: Option<u64>,
    /// npm's deprecation message.
    deprecated: Option<String>,
    /// PyPI's yank reason ("" when none was given).
    yanked: Option<String>,
}

impl Facts {
    fn of(release: &Release, now: SystemTime) -> Facts {
        Facts {
            published: release.published.map(format_time),
            age_seconds: release.age(now).map(|a| a.as_secs()),
            deprecated: release.deprecated.clone(),
            yanked: release.yanked.clone(),
        }
    }

    /// "deprecated", "yanked", or nothing.
    fn flags(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.deprecated.is_some() {
            out.push("deprecated");
        }
        if self.yanked.is_some() {
            out.push("yanked");
        }
        out
    }
}

pub async fn run(ws: &Workspace, args: OutdatedArgs) -> anyhow::Result<ExitCode> {
    let policy = ws.policy(None)?;
    let min_age = args
        .min_release_age
        .unwrap_or(policy.upgrade.min_release_age);
    let (lock, ctx) =
        ws.read_lock_for_reports(&ws.lock_path, "; run `mcp-lock update` to create it")?;
    for name in &args.servers {
        if !lock.servers.contains_key(name) {
            let pinned: Vec<&str> = lock.servers.keys().map(String::as_str).collect();
            anyhow::bail!(
                "no server named {:?} in {}; it pins: {}",
                esc(name),
                ctx.path,
                if pinned.is_empty() {
                    "none".to_string()
                } else {
                    pinned.join(", ")
                }
            );
        }
    }
    // The config says which registry each entry installs from; a lock whose config
    // is gone is still checked, against the process's own settings.
    let project = match ws.load_config() {
        Ok(project) => Some(project),
        Err(e) if matches!(e.downcast_ref(), Some(ConfigError::NotFound { .. })) => None,
        Err(e) => return Err(e),
    };
    let fetcher = Fetcher {
        allow_redirects: args.allow_redirects,
    };
    let named = |name: &str| args.servers.is_empty() || args.servers.iter().any(|n| n == name);
    let mut sources = Vec::new();
    let mut others = Vec::new();
    let mut skipped = Vec::new();
    for (name, server) in lock.servers.iter().filter(|(n, _)| named(n)) {
        let entry = project
            .as_ref()
            .and_then(|p| entry_of(p, name, ws, fetcher));
        let found = server.package.as_ref().and_then(|pin| {
            let version = releases::pinned_version(pin)?;
            let source = releases::source(
                pin,
                entry.as_ref().map(OwnedEntry::entry).as_ref(),
                ws.lock_dir(),
            )?;
            Some((version.to_string(), source))
        });
        match found {
            Some(found) => sources.push((name.clone(), found)),
            None if args.servers.is_empty() => skipped.push(name.clone()),
            None => others.push(not_a_package(name, server)),
        }
    }
    if !sources.is_empty() && !super::quiet() {
        super::status(
            "Checking",
            AnsiColor::Cyan,
            &count(sources.len(), "package"),
        );
    }
    let asked = sources
        .iter()
        .map(|(server, (_, source))| (server.clone(), source.clone()))
        .collect();
    let mut fetched = releases::fetch_all(asked, fetcher).await;
    let now = SystemTime::now();
    let mut rows: Vec<Row> = sources
        .into_iter()
        .map(|(server, (pinned, source))| {
            let answer = fetched
                .remove(&server)
                .unwrap_or_else(|| Err("not asked".into()));
            row(server, &pinned, &source, answer, min_age, now)
        })
        .collect();
    rows.extend(others);
    rows.sort_by(|a, b| a.server.cmp(&b.server));
    let unchecked = rows
        .iter()
        .filter(|r| r.status == Status::Unchecked)
        .count();
    let code = if unchecked > 0 {
        ExitCode::Unverified
    } else {
        ExitCode::Success
    };
    let report = Report {
        lock: ctx.path.clone(),
        min_release_age: age_text(min_age),
        min_release_age_seconds: min_age.as_secs(),
        checked_at: format_time(now),
        exit_code: code.into(),
        servers: rows,
        not_registry_packages: skipped,
    };
    match args.format {
        OutdatedFormat::Json => {
            super::out(&format!("{}\n", serde_json::to_string_pretty(&report)?))
        }
        OutdatedFormat::Markdown => super::out(&markdown(&report)),
        OutdatedFormat::Text => {
            super::out(&text(&report));
            summary(&report, unchecked);
        }
    }
    Ok(code)
}

/// The cooldown as people write it: "7d", "36h", "0".
fn age_text(age: Duration) -> String {
    if age.is_zero() {
        "0".into()
    } else {
        format_age(age).replace(' ', "")
    }
}

/// The config's stdio entry for a server, resolved, to find its registry settings.
fn entry_of(
    project: &ProjectConfig,
    name: &str,
    ws: &Workspace,
    fetcher: Fetcher,
) -> Option<OwnedEntry> {
    let spec = project.server(name)?;
    match spec.resolve(&project.project_dir, &env_lookup).ok()? {
        Resolved::Stdio(stdio) => Some(OwnedEntry {
            server: name.to_string(),
            command: stdio.command,
            args: stdio.args,
            env: stdio.env,
            cwd: stdio.cwd,
            project_dir: ws.lock_dir().to_path_buf(),
            guarded: spec.guarded,
            fetcher,
        }),
        Resolved::Remote(_) => None,
    }
}

/// The row of a named server that is pinned to no npm or PyPI package.
fn not_a_package(name: &str, server: &PinnedServer) -> Row {
    let remote = server.reached().transport_name() != "stdio";
    let (kind, message) = match &server.package {
        Some(pin) => match &pin.package {
            Package::Unresolved { reason } => (
                "unresolved",
                format!(
                    "not a registry package: the lock records its package as unresolved ({reason}); `mcp-lock update` pins it"
                ),
            ),
            other => (other.kind(), format!("not a registry package ({pin})")),
        },
        None if remote => ("remote", "not a registry package (remote server)".into()),
        None => (
            "none",
            "not a registry package (no package pinned yet; `mcp-lock update` pins it)".into(),
        ),
    };
    Row {
        server: name.to_string(),
        status: Status::NotARegistryPackage,
        kind: kind.to_string(),
        package: None,
        registry: None,
        pinned: None,
        candidate: None,
        held_back: Vec::new(),
        withdrawn: Vec::new(),
        message: Some(message),
    }
}

/// The row of a server pinned to a package, from the registry's answer.
fn row(
    server: String,
    pinned: &str,
    source: &Source,
    answer: Result<Releases, String>,
    min_age: Duration,
    now: SystemTime,
) -> Row {
    let mut row = Row {
        server,
        status: Status::Unchecked,
        kind: source.ecosystem.as_str().to_string(),
        package: Some(source.name.clone()),
        registry: source.registry.clone().ok(),
        pinned: Some(Pinned {
            version: pinned.to_string(),
            listed: false,
            facts: Facts::default(),
        }),
        candidate: None,
        held_back: Vec::new(),
        withdrawn: Vec::new(),
        message: None,
    };
    let releases = match answer {
        Ok(releases) => releases,
        Err(why) => {
            row.message = Some(why);
            return row;
        }
    };
    let outlook = match releases::candidate(&releases, pinned, Want::Newest, min_age, now) {
        Ok(outlook) => outlook,
        // Only a named version can be refused; keep the reason rather than panic.
        Err(refusal) => {
            row.message = Some(refusal.to_string());
            return row;
        }
    };
    let Outlook {
        pinned: listed,
        candidate,
        held_back,
        withdrawn,
    } = outlook;
    row.pinned = Some(Pinned {
        version: pinned.to_string(),
        listed: listed.is_some(),
        facts: listed.map(|r| Facts::of(&r, now)).unwrap_or_default(),
    });
    row.status = if candidate.is_some() {
        Status::Outdated
    } else {
        Status::UpToDate
    };
    row.candidate = candidate.map(|r| Shown {
        facts: Facts::of(&r, now),
        version: r.version,
    });
    row.held_back = held_back
        .into_iter()
        .map(|h| Held {
            hold: h.hold.as_str(),
            facts: Facts::of(&h.release, now),
            version: h.release.version,
        })
        .collect();
    row.withdrawn = withdrawn
        .into_iter()
        .map(|r| Shown {
            facts: Facts::of(&r, now),
            version: r.version,
        })
        .collect();
    row
}

/// "1.0.3 (2d 4h old, deprecated)".
fn held_text(h: &Held) -> String {
    let why = match (h.hold, h.facts.age_seconds) {
        ("cooldown", Some(secs)) => format!("{} old", format_age(Duration::from_secs(secs))),
        _ => "release time unknown".to_string(),
    };
    let mut parts = vec![why];
    parts.extend(h.facts.flags().iter().map(|f| f.to_string()));
    format!("{} ({})", h.version, parts.join(", "))
}

fn pinned_text(p: &Pinned) -> String {
    let mut flags: Vec<&str> = p.facts.flags();
    if !p.listed {
        flags.push("not on the registry");
    }
    if flags.is_empty() {
        p.version.clone()
    } else {
        format!("{} ({})", p.version, flags.join(", "))
    }
}

fn candidate_text(row: &Row) -> String {
    match (&row.candidate, row.status) {
        (Some(c), _) if c.facts.flags().is_empty() => c.version.clone(),
        (Some(c), _) => format!("{} ({})", c.version, c.facts.flags().join(", ")),
        (None, Status::UpToDate) => "up to date".into(),
        (None, _) => String::new(),
    }
}

/// Lines under the table: each deprecation message and yank reason, each release
/// passed over, each server that could not be checked, in full.
fn notes(row: &Row) -> Vec<String> {
    let package = row.package.as_deref().unwrap_or_default();
    let mut out = Vec::new();
    let mut flagged = |version: &str, role: &str, facts: &Facts| {
        if let Some(message) = &facts.deprecated {
            out.push(format!(
                "{package} {version} ({role}) is deprecated: {message}"
            ));
        }
        if let Some(reason) = &facts.yanked {
            if reason.is_empty() {
                out.push(format!("{package} {version} ({role}) is yanked"));
            } else {
                out.push(format!("{package} {version} ({role}) is yanked: {reason}"));
            }
        }
    };
    if let Some(p) = &row.pinned {
        flagged(&p.version, "pinned", &p.facts);
    }
    if let Some(c) = &row.candidate {
        flagged(&c.version, "candidate", &c.facts);
    }
    for h in &row.held_back {
        flagged(&h.version, "held back", &h.facts);
    }
    for w in &row.withdrawn {
        flagged(&w.version, "passed over", &w.facts);
    }
    out
}

/// The table for people: one line per server, then the notes.
fn text(report: &Report) -> String {
    let header = [
        "SERVER".to_string(),
        "PACKAGE".to_string(),
        "PINNED".to_string(),
        "CANDIDATE".to_string(),
        format!("HELD BACK (cooldown {})", report.min_release_age),
    ];
    let red = Style::new().fg_color(Some(AnsiColor::Red.into()));
    let green = Style::new().fg_color(Some(AnsiColor::Green.into())).bold();
    let yellow = Style::new().fg_color(Some(AnsiColor::Yellow.into()));
    let dim = Style::new().dimmed();
    let mut lines: Vec<Vec<(String, Style)>> = Vec::new();
    for row in &report.servers {
        let package = match &row.package {
            Some(p) => format!("{} {}", row.kind, p),
            None => row.kind.clone(),
        };
        let mut cells = vec![
            (esc(&row.server), Style::new()),
            (esc(&package), Style::new()),
        ];
        match row.status {
            Status::Unchecked | Status::NotARegistryPackage => {
                if let Some(p) = &row.pinned {
                    cells.push((esc(&p.version), Style::new()));
                }
                let message = row.message.as_deref().unwrap_or_default();
                let (text, style) = if row.status == Status::Unchecked {
                    (format!("could not check: {message}"), red)
                } else {
                    (message.to_string(), dim)
                };
                cells.push((esc(&text), style));
            }
            Status::Outdated | Status::UpToDate => {
                let pinned = row.pinned.as_ref().map(pinned_text).unwrap_or_default();
                let flagged = row
                    .pinned
                    .as_ref()
                    .is_some_and(|p| !p.listed || !p.facts.flags().is_empty());
                cells.push((esc(&pinned), if flagged { red } else { Style::new() }));
                let candidate_style = if row.status == Status::Outdated {
                    green
                } else {
                    dim
                };
                cells.push((esc(&candidate_text(row)), candidate_style));
                let held: Vec<String> = row.held_back.iter().map(held_text).collect();
                cells.push((esc(&held.join(", ")), yellow));
            }
        }
        lines.push(cells);
    }
    let mut widths = header.iter().map(|h| h.chars().count()).collect::<Vec<_>>();
    for cells in &lines {
        // The last cell of a line is not padded: it never sets a width.
        for (i, (text, _)) in cells.iter().enumerate().take(cells.len() - 1) {
            widths[i] = widths[i].max(text.chars().count());
        }
    }
    let bold = Style::new().bold();
    let mut out = String::new();
    let write_line = |out: &mut String, cells: &[(String, Style)]| {
        let mut line = String::new();
        for (i, (text, style)) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                let _ = write!(line, "{style}{text}{style:#}");
            } else {
                let pad = widths[i] - text.chars().count();
                let _ = write!(line, "{style}{text}{style:#}{}  ", " ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    };
    if !lines.is_empty() {
        let header: Vec<(String, Style)> = header.into_iter().map(|h| (h, bold)).collect();
        write_line(&mut out, &header);
        for cells in &lines {
            write_line(&mut out, cells);
        }
    }
    let notes: Vec<String> = report
        .servers
        .iter()
        .flat_map(|row| {
            notes(row)
                .into_iter()
                .map(move |n| format!("{}: {n}", row.server))
        })
        .collect();
    if !notes.is_empty() {
        out.push('\n');
        for note in notes {
            let _ = writeln!(out, "{red}note{red:#}: {}", esc(&note));
        }
    }
    out
}

/// The closing line on stderr, and the servers left out.
fn summary(report: &Report, unchecked: usize) {
    let packages = report
        .servers
        .iter()
        .filter(|r| r.status != Status::NotARegistryPackage)
        .count();
    let outdated = report
        .servers
        .iter()
        .filter(|r| r.status == Status::Outdated)
        .count();
    let held = report
        .servers
        .iter()
        .filter(|r| !r.held_back.is_empty())
        .count();
    if !report.not_registry_packages.is_empty() {
        super::notice(&format!(
            "{} not pinned to an npm or PyPI package left out: {} (name one to see why)",
            count(report.not_registry_packages.len(), "server"),
            report.not_registry_packages.join(", ")
        ));
    }
    let mut parts = vec![format!("{outdated} outdated")];
    if held > 0 {
        parts.push(format!("{held} with releases held back"));
    }
    if unchecked > 0 {
        parts.push(format!("{unchecked} could not be checked"));
    }
    let line = format!(
        "{}: {} (cooldown {})",
        count(packages, "package"),
        parts.join(", "),
        report.min_release_age
    );
    if unchecked > 0 {
        super::error(&line);
    } else {
        super::status("Checked", AnsiColor::Green, &line);
    }
}

/// The Markdown report: a table, then the notes.
fn markdown(report: &Report) -> String {
    let cell = |text: &str| escape_markdown(text, 300);
    let outdated = report
        .servers
        .iter()
        .filter(|r| r.status == Status::Outdated)
        .count();
    let mut out = format!(
        "## mcp-lock outdated: {} of {}\n\n",
        count(outdated, "outdated package"),
        count(
            report
                .servers
                .iter()
                .filter(|r| r.status != Status::NotARegistryPackage)
                .count(),
            "package"
        )
    );
    let _ = writeln!(
        out,
        "Lock: {} · cooldown (min-release-age) {} · exit code {}\n",
        cell(&report.lock),
        cell(&report.min_release_age),
        report.exit_code
    );
    if !report.servers.is_empty() {
        out.push_str(
            "| Server | Package | Pinned | Candidate | Held back |\n| --- | --- | --- | --- | --- |\n",
        );
        for row in &report.servers {
            let package = match &row.package {
                Some(p) => format!("{} {}", row.kind, p),
                None => row.kind.clone(),
            };
            let pinned = row.pinned.as_ref().map(pinned_text).unwrap_or_default();
            let (candidate, held) = match row.status {
                Status::Unchecked => (
                    format!(
                        "**could not check**: {}",
                        cell(row.message.as_deref().unwrap_or_default())
                    ),
                    String::new(),
                ),
                Status::NotARegistryPackage => (
                    cell(row.message.as_deref().unwrap_or_default()),
                    String::new(),
                ),
                Status::Outdated => (format!("**{}**", cell(&candidate_text(row))), {
                    let held: Vec<String> = row.held_back.iter().map(held_text).collect();
                    cell(&held.join(", "))
                }),
                Status::UpToDate => (cell(&candidate_text(row)), {
                    let held: Vec<String> = row.held_back.iter().map(held_text).collect();
                    cell(&held.join(", "))
                }),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {candidate} | {held} |",
                cell(&row.server),
                cell(&package),
                cell(&pinned)
            );
        }
        out.push('\n');
    }
    let notes: Vec<String> = report
        .servers
        .iter()
        .flat_map(|row| {
            notes(row)
                .into_iter()
                .map(move |n| format!("**{}**: {}", cell(&row.server), cell(&n)))
        })
        .collect();
    for note in &notes {
        let _ = writeln!(out, "- {note}");
    }
    if !report.not_registry_packages.is_empty() {
        if !notes.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "Not registry packages, left out: {}",
            cell(&report.not_registry_packages.join(", "))
        );
    }
    out
}
