//! `mcp-lock servers`: every server the client configs define, where it was found,
//! how it is reached, which client profiles pin it, whether the lock does, and what
//! would be launched: the entry resolved by the same code a connection uses
//! ([`ServerSpec::resolve`]), every secret in it redacted to its `${NAME}`.

use std::path::Path;

use mcp_lock::base::text::escape_for_terminal as esc;
use mcp_lock::records::lock::read_lock;
use mcp_lock::servers::config::environ::Inherit;
use mcp_lock::servers::config::{Found, Resolved, ServerSpec, ToolFilter};
use mcp_lock::servers::package::PackagePin;
use mcp_lock::verdict::exit_codes::ExitCode;
use serde::Serialize;

use super::{Workspace, display_path, env_lookup};
use crate::cli::{CallFormat, ServersArgs};

/// One row: a server entry and what the lock says of it.
#[derive(Debug, Serialize)]
struct Row {
    name: String,
    /// `stdio`, `streamable-http`, `sse`; none for a skipped entry.
    transport: Option<String>,
    file: String,
    line: usize,
    host: &'static str,
    /// The client profiles it is listed under by default (what `update` pins).
    profiles: Vec<String>,
    /// The profiles the lock pins it under (empty: not pinned).
    pinned: Vec<String>,
    /// Why the entry is not used, when it is not.
    skipped: Option<String>,
    /// The entry launches `mcp-lock guard` (`mcp-lock wrap`): `launch` is the server
    /// the guard starts (the pinned package version, when the lock pins one).
    guarded: bool,
    /// The tools the host shows its agent; none for a skipped entry.
    filter: Option<Filter>,
    /// What would be launched or contacted; none for a skipped entry, or when the
    /// entry cannot be resolved (then `launch_error` says why).
    launch: Option<Launch>,
    launch_error: Option<String>,
    /// What the developer's own settings say of an entry still pinned (turned off
    /// for them only).
    note: Option<String>,
    /// Hosts that last sent the guard another handshake than the lock pinned for
    /// their profile (`.mcp-lock/handshakes.json`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    observed_handshakes: Vec<mcp_lock::records::observed::Observed>,
    /// Under each pinned profile, what the tool rules let its host use of the pinned
    /// definitions; empty when no rule is given.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    effective: Vec<Effective>,
}

/// The pinned definitions one host may use, and those the tool rules deny it.
#[derive(Debug, Serialize)]
struct Effective {
    profile: String,
    /// Pinned tools the host is served (before drift), by name.
    tools: Vec<String>,
    prompts: Vec<String>,
    resource_templates: Vec<String>,
    denied: Vec<mcp_lock::verdict::rules::Denied>,
}

/// What the rules leave each pinned profile's host of `pins`.
fn effective(
    rules: &mcp_lock::verdict::rules::ToolRules,
    pins: &mcp_lock::records::lock::PinnedServer,
) -> Vec<Effective> {
    use mcp_lock::contract::surface::Kind;
    if rules.is_empty() {
        return Vec::new();
    }
    pins.profiles
        .iter()
        .map(|(profile, pinned)| {
            let mut e = Effective {
                profile: profile.clone(),
                tools: Vec::new(),
                prompts: Vec::new(),
                resource_templates: Vec::new(),
                denied: Vec::new(),
            };
            for kind in [Kind::Tool, Kind::Prompt, Kind::ResourceTemplate] {
                for (key, item) in pinned.items(kind).into_iter().flatten() {
                    match rules.decide_definition(
                        Some(profile),
                        kind,
                        &pinned.name,
                        key,
                        Some(&item.definition),
                    ) {
                        Some(denial) => e.denied.push(mcp_lock::verdict::rules::Denied {
                            kind,
                            name: key.clone(),
                            denial,
                            action: Default::default(),
                        }),
                        None => match kind {
                            Kind::Tool => e.tools.push(key.clone()),
                            Kind::Prompt => e.prompts.push(key.clone()),
                            _ => e.resource_templates.push(key.clone()),
                        },
                    }
                }
            }
            e
        })
        .collect()
}

#[derive(Debug, Serialize)]
struct Filter {
    /// Only these tools, when given.
    include: Option<Vec<String>>,
    /// Never these.
    exclude: Vec<String>,
    /// Rules over the host's own names for the tools (opencode's `tools` map), in the
    /// order the host weighs them: the last one matching a tool decides.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    rules: Vec<Rule>,
}

#[derive(Debug, Serialize)]
struct Rule {
    /// The pattern, over the host's name for a tool (opencode: `<server>_<tool>`).
    pattern: String,
    /// Whether a tool it decides is hidden from the agent.
    hides: bool,
}

impl From<&ToolFilter> for Filter {
    fn from(f: &ToolFilter) -> Self {
        Filter {
            include: f.include.clone(),
            exclude: f.exclude.clone(),
            rules: f
                .rules
                .iter()
                .flat_map(|rules| rules.0.iter())
                .map(|r| Rule {
                    pattern: r.pattern.clone(),
                    hides: r.hides,
                })
                .collect(),
        }
    }
}

/// A resolved entry, secrets redacted: a process for stdio, a URL for remote.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Launch {
    Stdio {
        command: String,
        args: Vec<String>,
        /// The variables the entry sets (names only), over what it inherits.
        env: Vec<EnvVar>,
        cwd: String,
        /// The entry's `envFile` as written (VS Code, Cursor): read when the server
        /// starts.
        env_file: Option<String>,
        /// How many variables the envFile sets that `env` does not (never their
        /// names: any line of the file it points at may read as one).
        env_file_variables: Option<usize>,
        /// What of mcp-lock's environment the server inherits: `all`, `listed`
        /// (only `inherited`: Codex), `redacted` (all but what looks like a
        /// secret: Gemini CLI), or `all_but` (all but `not_inherited`: VS Code).
        inherit: &'static str,
        /// The names inherited, when `inherit` is `listed`.
        inherited: Option<Vec<String>>,
        /// The names removed, when `inherit` is `all_but` (VS Code's `env` `null`).
        #[serde(skip_serializing_if = "Option::is_none")]
        not_inherited: Option<Vec<String>>,
        /// A guarded entry with a pinned closure: the guard runs the package's command
        /// from the closure cache, not `run` (`sha256:… (N packages)`).
        #[serde(skip_serializing_if = "Option::is_none")]
        closure: Option<String>,
    },
    Remote {
        url: String,
        headers: Vec<Header>,
        /// A token `mcp-lock login` cached for this URL is sent as its Authorization.
        login_token: bool,
        /// The issuers of the cached tokens for this URL (names, never tokens).
        login_issuers: Vec<String>,
        /// A `headersHelper` (Claude Code) adds headers when the server is contacted;
        /// it is not run to show this.
        headers_helper: bool,
    },
}

#[derive(Debug, Serialize)]
struct EnvVar {
    name: String,
    /// `config` (the value as written) or `expanded` (variables in it expanded).
    from: &'static str,
}

#[derive(Debug, Serialize)]
struct Header {
    name: String,
    /// The variables its value is built from.
    variables: Vec<String>,
}

/// The entry as a connection would resolve it, with every secret redacted, or why
/// it cannot be resolved.
///
/// A guarded entry with a package pin launches the pinned version: its arguments are
/// rewritten by the guard's own [`pinned_launch`](mcp_lock::servers::package::pinned_launch),
/// against the lock's directory, as the guard does; with a pinned closure, the guard
/// runs the package's command from the closure cache (`closure` says which).
fn resolve_launch(
    spec: &ServerSpec,
    project_dir: &Path,
    guard_pin: Option<(&PackagePin, &Path)>,
) -> Result<Launch, String> {
    let mut resolved = spec
        .resolve(project_dir, &env_lookup)
        .map_err(|e| e.to_string())?;
    if spec.guarded
        && let Some((pin, lock_dir)) = guard_pin
        && let Resolved::Stdio(stdio) = &mut resolved
    {
        stdio.args = mcp_lock::servers::package::pinned_launch(
            &stdio.command,
            &stdio.args,
            &stdio.cwd,
            lock_dir,
            Some(pin),
        );
    }
    let secrets = resolved.secrets();
    let redact = |text: &str| secrets.redact(text);
    Ok(match &resolved {
        Resolved::Stdio(stdio) => {
            let written = match &spec.transport {
                mcp_lock::servers::config::TransportSpec::Stdio { env, .. } => Some(env),
                _ => None,
            };
            let env_file = spec.environ.as_ref().and_then(|e| e.env_file.as_ref());
            let written_env = |name: &str| written.is_some_and(|w| w.contains_key(name));
            Launch::Stdio {
                command: redact(&stdio.command),
                args: stdio.args.iter().map(|a| redact(a)).collect(),
                env: stdio
                    .env
                    .iter()
                    // The names an envFile gives are not shown: any line of whatever
                    // file it points at (a key, a token) may read as one. Counted.
                    .filter(|(name, _)| written_env(name))
                    .map(|(name, value)| EnvVar {
                        name: name.clone(),
                        from: match written.and_then(|w| w.get(name)) {
                            Some(w) if w == value => "config",
                            _ => "expanded",
                        },
                    })
                    .collect(),
                cwd: redact(&stdio.cwd.display().to_string()),
                env_file: env_file.map(|f| redact(f)),
                env_file_variables: env_file
                    .map(|_| stdio.env.keys().filter(|name| !written_env(name)).count()),
                inherit: match &stdio.inherit {
                    None => "all",
                    Some(Inherit::Only(_)) => "listed",
                    Some(Inherit::GeminiRedacted { .. }) => "redacted",
                    Some(Inherit::AllBut(_)) => "all_but",
                },
                inherited: match &stdio.inherit {
                    Some(Inherit::Only(names)) => Some(names.clone()),
                    _ => None,
                },
                not_inherited: match &stdio.inherit {
                    Some(Inherit::AllBut(names)) => Some(names.clone()),
                    _ => None,
                },
                closure: guard_pin
                    .filter(|_| spec.guarded)
                    .and_then(|(pin, _)| pin.closure.as_ref())
                    .map(|c| {
                        format!(
                            "{} ({})",
                            c.hash,
                            mcp_lock::base::text::count(c.count, "package")
                        )
                    }),
            }
        }
        Resolved::Remote(remote) => {
            let login_issuers = if mcp_lock::servers::client::takes_login_token(remote) {
                login_issuers(&remote.url)
            } else {
                Vec::new()
            };
            Launch::Remote {
                url: redact(&remote.url),
                headers: remote
                    .headers
                    .iter()
                    .map(|(name, _, variables)| Header {
                        name: name.clone(),
                        variables: variables.clone(),
                    })
                    .collect(),
                login_token: !login_issuers.is_empty(),
                login_issuers,
                headers_helper: spec.headers_helper.is_some(),
            }
        }
    })
}

/// The issuers of the tokens `mcp-lock login` cached for `url`, read from the cache
/// a connection reads (no network: with several, the connection asks the server
/// which one it trusts).
fn login_issuers(url: &str) -> Vec<String> {
    let Ok(store) = mcp_lock::servers::auth::TokenStore::from_env(&env_lookup) else {
        return Vec::new();
    };
    let Ok(resource) = mcp_lock::servers::auth::canonical_resource(url) else {
        return Vec::new();
    };
    let mut issuers: Vec<String> = store
        .find_unlocked(&resource)
        .into_iter()
        .map(|(_, record)| record.issuer)
        .collect();
    issuers.sort();
    issuers.dedup();
    issuers
}

pub fn run(ws: &Workspace, args: ServersArgs) -> anyhow::Result<ExitCode> {
    let project = ws.load_config()?;
    let policy = ws.policy(None)?;
    let lock = read_lock(&ws.lock_path)?.unwrap_or_default();
    let observed = super::observed_handshakes(ws, &lock, &[]);
    let spec_of = |name: &str| -> Option<&ServerSpec> { project.server(name) };
    let row = |found: &Found| -> anyhow::Result<Row> {
        let spec = spec_of(&found.name).filter(|_| found.skipped.is_none());
        let profiles = match spec {
            Some(spec) => policy
                .profiles
                .for_server(&spec.name, &spec.hosts, None)?
                .profiles
                .into_iter()
                .map(|p| p.name)
                .collect(),
            None => Vec::new(),
        };
        let guard_pin = lock
            .servers
            .get(&found.name)
            .and_then(|p| p.package.as_ref())
            .map(|pin| (pin, ws.lock_dir()));
        let (launch, launch_error) =
            match spec.map(|s| resolve_launch(s, &project.project_dir, guard_pin)) {
                Some(Ok(launch)) => (Some(launch), None),
                Some(Err(why)) => (None, Some(why)),
                None => (None, None),
            };
        Ok(Row {
            name: found.name.clone(),
            transport: spec.map(|s| s.transport_name().to_string()),
            file: display_path(&found.file, &ws.project_dir),
            line: found.line,
            host: found.host.as_str(),
            profiles,
            pinned: lock
                .servers
                .get(&found.name)
                .filter(|_| spec.is_some())
                .map(|p| p.profiles.keys().cloned().collect())
                .unwrap_or_default(),
            skipped: found.skipped.clone(),
            guarded: spec.is_some_and(|s| s.guarded),
            filter: spec.map(|s| Filter::from(&s.filter)),
            launch,
            launch_error,
            note: found.note.clone(),
            observed_handshakes: observed
                .iter()
                .filter(|o| o.server == found.name && spec.is_some())
                .cloned()
                .collect(),
            effective: lock
                .servers
                .get(&found.name)
                .filter(|_| spec.is_some())
                .map(|p| effective(&policy.rules, p))
                .unwrap_or_default(),
        })
    };
    let rows: Vec<Row> = project
        .found
        .iter()
        .map(row)
        .collect::<anyhow::Result<_>>()?;
    match args.format {
        CallFormat::Json => super::out(&format!(
            "{}\n",
            mcp_lock::base::text::escape_json_output(&serde_json::to_string_pretty(
                &serde_json::json!({"lock": ws.lock_display(), "servers": rows})
            )?)
        )),
        CallFormat::Human => super::out(&table(&rows, &project.project_dir)),
    }
    Ok(ExitCode::Success)
}

/// The rows as aligned columns, each followed by what it launches; every config
/// string escaped.
fn table(rows: &[Row], project_dir: &Path) -> String {
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            let mut lock = match (&r.skipped, r.pinned.is_empty()) {
                (Some(why), _) => format!("skipped ({})", esc(why)),
                (None, true) => "not pinned".to_string(),
                (None, false) => format!("pinned ({})", r.pinned.join(", ")),
            };
            if let Some(note) = &r.note {
                lock.push_str(&format!("; note: {}", esc(note)));
            }
            [
                esc(&r.name),
                r.transport.clone().unwrap_or_else(|| "-".into()),
                format!("{}:{}", esc(&r.file), r.line),
                r.host.to_string(),
                if r.profiles.is_empty() {
                    "-".into()
                } else {
                    r.profiles.join(", ")
                },
                lock,
            ]
        })
        .collect();
    let header = [
        "SERVER",
        "TRANSPORT",
        "FOUND IN",
        "HOST",
        "PROFILES",
        "LOCK",
    ];
    let mut widths = header.map(|h| h.chars().count());
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cols: [&str; 6]| -> String {
        let mut out = String::new();
        for (i, (cell, w)) in cols.iter().zip(widths).enumerate() {
            if i == 5 {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  "));
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = line(header);
    for (row, r) in cells.iter().zip(rows) {
        out.push_str(&line([
            &row[0], &row[1], &row[2], &row[3], &row[4], &row[5],
        ]));
        for (label, value) in details(r, project_dir) {
            out.push_str(&format!("    {label:<8} {value}\n"));
        }
        for o in &r.observed_handshakes {
            // Escaped when it was made.
            out.push_str(&format!("    {:<8} {}\n", "observed", o.message));
        }
        for e in &r.effective {
            let served = e.tools.len() + e.prompts.len() + e.resource_templates.len();
            let total = served + e.denied.len();
            let mut line = format!("for {}: {served} of {total} served", esc(&e.profile));
            if !e.denied.is_empty() {
                let denied: Vec<String> = e
                    .denied
                    .iter()
                    .map(|d| match d.kind {
                        mcp_lock::contract::surface::Kind::Tool => {
                            format!("{} ({})", esc(&d.name), esc(&d.denial.rule))
                        }
                        kind => {
                            format!("{} {} ({})", kind.noun(), esc(&d.name), esc(&d.denial.rule))
                        }
                    })
                    .collect();
                line.push_str(&format!("; denied: {}", denied.join(", ")));
            }
            out.push_str(&format!("    {:<8} {line}\n", "rules"));
        }
    }
    if rows.is_empty() {
        out.push_str("(no servers)\n");
    }
    out
}

/// The launch of a row, one labelled line each, escaped: nothing for a skipped entry.
fn details(row: &Row, project_dir: &Path) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if row.skipped.is_some() {
        return out;
    }
    match (&row.launch, &row.launch_error) {
        (_, Some(why)) => out.push(("launch", format!("unresolved: {}", esc(why)))),
        (
            Some(Launch::Stdio {
                command,
                args,
                env,
                cwd,
                env_file,
                env_file_variables,
                inherit,
                inherited,
                not_inherited,
                closure,
            }),
            _,
        ) => {
            let words: Vec<String> = std::iter::once(command)
                .chain(args)
                .map(|w| shell_word(w))
                .collect();
            out.push(("run", esc(&words.join(" "))));
            if let Some(closure) = closure {
                out.push((
                    "closure",
                    format!(
                        "the guard runs its pinned closure {} from the closure cache",
                        esc(closure)
                    ),
                ));
            }
            if !env.is_empty() {
                let names: Vec<String> = env
                    .iter()
                    .map(|v| match v.from {
                        "expanded" => format!("{} (expanded)", esc(&v.name)),
                        _ => esc(&v.name),
                    })
                    .collect();
                out.push(("env", names.join(", ")));
            }
            if let Some(file) = env_file {
                let count = env_file_variables.unwrap_or(0);
                out.push((
                    "envFile",
                    format!(
                        "{} ({count} more variable{} when it starts)",
                        esc(file),
                        if count == 1 { "" } else { "s" }
                    ),
                ));
            }
            if let Some(names) = not_inherited {
                out.push((
                    "inherits",
                    format!("all but {} (env: null)", esc(&names.join(", "))),
                ));
            }
            match (*inherit, inherited) {
                ("listed", Some(names)) => {
                    out.push(("inherits", format!("only {}", esc(&names.join(", ")))))
                }
                ("redacted", _) => out.push((
                    "inherits",
                    "all but variables that look like secrets (Gemini CLI)".into(),
                )),
                _ => {}
            }
            if Path::new(cwd) != project_dir {
                out.push(("cwd", esc(cwd)));
            }
        }
        (
            Some(Launch::Remote {
                url,
                headers,
                login_token,
                login_issuers,
                headers_helper,
            }),
            _,
        ) => {
            out.push(("url", esc(url)));
            if !headers.is_empty() {
                let names: Vec<String> = headers.iter().map(|h| esc(&h.name)).collect();
                out.push(("headers", names.join(", ")));
            }
            if *headers_helper {
                out.push((
                    "headers",
                    "and those its headersHelper prints when it is contacted".into(),
                ));
            }
            if *login_token {
                out.push((
                    "login",
                    format!(
                        "token from `mcp-lock login` ({}){}",
                        esc(&login_issuers.join(", ")),
                        if *headers_helper {
                            ", unless its headersHelper prints an Authorization header"
                        } else {
                            ""
                        }
                    ),
                ));
            }
        }
        (None, None) => {}
    }
    if row.guarded {
        out.push(("guard", "launched through `mcp-lock guard`".into()));
    }
    if let Some(filter) = &row.filter {
        if let Some(include) = &filter.include {
            out.push(("tools", format!("only {}", esc(&include.join(", ")))));
        }
        if !filter.exclude.is_empty() {
            out.push(("hidden", esc(&filter.exclude.join(", "))));
        }
        if !filter.rules.is_empty() {
            // In the host's own names and order: the last rule matching a tool decides.
            let said: Vec<String> = filter
                .rules
                .iter()
                .map(|r| format!("{} {}", if r.hides { "hides" } else { "shows" }, r.pattern))
                .collect();
            out.push(("tools", esc(&said.join(", then "))));
        }
    }
    out
}

/// A word as a POSIX shell would need it written: bare when plain, else in single
/// quotes. Redacted secrets stay `${NAME}`, quoted so no shell expands them.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_with_spaces_quotes_or_a_redacted_secret_is_single_quoted() {
        assert_eq!(shell_word("--describe-env"), "--describe-env");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word("--token=${TOKEN}"), "'--token=${TOKEN}'");
        assert_eq!(shell_word(""), "''");
    }
}
