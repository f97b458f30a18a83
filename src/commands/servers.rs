//! `mcp-lock servers`: every server the client configs define, where it was found,
//! how it is reached, which client profiles pin it, and whether the lock does.

use mcp_lock::config::{Found, ServerSpec};
use mcp_lock::exit_codes::ExitCode;
use mcp_lock::lock::read_lock;
use mcp_lock::text::escape_for_terminal as esc;
use serde::Serialize;

use super::{Workspace, display_path};
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
    /// What the developer's own settings say of an entry still pinned (turned off
    /// for them only).
    note: Option<String>,
}

pub fn run(ws: &Workspace, args: ServersArgs) -> anyhow::Result<ExitCode> {
    let project = ws.load_config()?;
    let policy = ws.policy(None)?;
    let lock = read_lock(&ws.lock_path)?.unwrap_or_default();
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
            note: found.note.clone(),
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
            mcp_lock::text::escape_json_output(&serde_json::to_string_pretty(
                &serde_json::json!({"lock": ws.lock_display(), "servers": rows})
            )?)
        )),
        CallFormat::Human => super::out(&table(&rows)),
    }
    Ok(ExitCode::Success)
}

/// The rows as aligned columns; every config string escaped.
fn table(rows: &[Row]) -> String {
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
    for row in &cells {
        out.push_str(&line([
            &row[0], &row[1], &row[2], &row[3], &row[4], &row[5],
        ]));
    }
    if rows.is_empty() {
        out.push_str("(no servers)\n");
    }
    out
}
