//! `mcp-lock audit verify`: the chain of a log's files, line by line, and the
//! signatures of its checkpoints (docs/audit.md).

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::format::{self, GENESIS};

/// Largest line read; a longer one is not an entry the guard writes.
pub const MAX_LINE: usize = 64 * 1024 * 1024;

/// What `audit verify` found.
#[derive(Debug, Clone, Serialize)]
pub struct ChainReport {
    pub intact: bool,
    pub files: Vec<FileCount>,
    /// Lines read, in every file.
    pub entries: usize,
    /// Lines before the chain began (written by a release before the chain).
    pub unchained: usize,
    pub checkpoints: usize,
    pub signed_checkpoints: usize,
    /// Whether signatures were checked (`--allowed-signers`).
    pub signatures_checked: bool,
    /// Entries after the last signed checkpoint: chained, not vouched for by a signature.
    pub after_last_signed: Option<usize>,
    #[serde(rename = "break")]
    pub broken: Option<Break>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileCount {
    pub path: String,
    pub lines: usize,
}

/// The first place the chain does not hold.
#[derive(Debug, Clone, Serialize)]
pub struct Break {
    pub file: String,
    /// 1-based, within `file`.
    pub line: usize,
    pub seq: Option<u64>,
    /// `edited`, `deleted`, `inserted`, `reordered`, `unchained`, `cut_short`,
    /// `start_missing`, `bad_signature` or `unsigned`.
    pub problem: &'static str,
    pub message: String,
}

/// One line as read.
struct Line {
    file: usize,
    number: usize,
    chain: Option<(u64, String)>,
    hash: String,
    /// What the summary needs of a whole entry; None for a line that is not one.
    entry: Option<Fields>,
}

/// The members of an entry `verify` reads.
struct Fields {
    session: Option<String>,
    event: String,
    time: String,
    /// A session ends with this entry.
    ends: bool,
    signature: Option<String>,
}

impl Fields {
    fn of(entry: &Value) -> Self {
        let text = |name: &str| entry[name].as_str().map(str::to_string);
        let event = text("event").unwrap_or_default();
        Fields {
            session: text("session").filter(|s| !s.is_empty()),
            ends: matches!(
                event.as_str(),
                "client_closed" | "server_exited" | "launch_refused"
            ) || (event == "checkpoint" && entry["reason"] == "session_end"),
            time: text("time").unwrap_or_default(),
            signature: text("signature"),
            event,
        }
    }
}

/// Checks `files` as one chain, in this order. `allowed_signers`: an ssh-keygen
/// allowed-signers file every signed checkpoint must verify against, signed under
/// `namespace`.
pub fn verify(
    files: &[PathBuf],
    allowed_signers: Option<&Path>,
    namespace: &str,
) -> std::io::Result<ChainReport> {
    let mut lines = Vec::new();
    let mut counts = Vec::new();
    for (i, path) in files.iter().enumerate() {
        let n = read_lines(path, i, &mut lines)?;
        counts.push(FileCount {
            path: path.display().to_string(),
            lines: n,
        });
    }
    let mut report = ChainReport {
        intact: true,
        files: counts,
        entries: lines.len(),
        unchained: 0,
        checkpoints: 0,
        signed_checkpoints: 0,
        signatures_checked: allowed_signers.is_some(),
        after_last_signed: None,
        broken: None,
        warnings: Vec::new(),
    };
    // Every break's message begins with its place.
    let at = |line: &Line, problem: &'static str, message: String| {
        let file = files[line.file].display().to_string();
        Break {
            message: format!("{file}:{}: {message}", line.number),
            file,
            line: line.number,
            seq: line.chain.as_ref().map(|(s, _)| *s),
            problem,
        }
    };
    let mut seen: HashSet<u64> = HashSet::new();
    let mut last_seq: Option<u64> = None;
    let mut last_signed: Option<usize> = None;
    let mut sessions: BTreeMap<String, bool> = BTreeMap::new();
    for (i, line) in lines.iter().enumerate() {
        let previous = i.checked_sub(1).map(|p| &lines[p]);
        let Some((seq, prev)) = &line.chain else {
            if last_seq.is_some() {
                report.broken = Some(at(
                    line,
                    "unchained",
                    "this line has no seq and prev, though the chain began before it: it was not written by the guard, or was edited".into(),
                ));
                break;
            }
            report.unchained += 1;
            continue;
        };
        let expected = previous.map_or(GENESIS, |p| p.hash.as_str());
        let problem: Option<(&'static str, &Line, String)> = match last_seq {
            None if previous.is_none() && (*seq != 1 || prev != GENESIS) => Some((
                "start_missing",
                line,
                format!(
                    "the log begins at seq {seq}: {} earlier entries, or an earlier file, are missing",
                    seq.saturating_sub(1)
                ),
            )),
            None if prev != expected => Some((
                "edited",
                previous.unwrap_or(line),
                "the first chained entry records another hash for the line before it: that line was changed".into(),
            )),
            None => None,
            Some(last) if *seq == last + 1 && prev == expected => None,
            Some(last) if *seq == last + 1 => Some((
                "edited",
                previous.unwrap_or(line),
                format!(
                    "this line was changed after it was written: the entry after it (seq {seq}) recorded another hash for it"
                ),
            )),
            Some(last) if *seq > last + 1 => {
                let later = lines[i + 1..].iter().find_map(|l| {
                    l.chain
                        .as_ref()
                        .filter(|(s, _)| *s > last && *s < *seq)
                        .map(|(s, _)| (*s, l))
                });
                Some(match later {
                    Some((s, l)) => (
                        "reordered",
                        line,
                        format!(
                            "entries were moved: seq {seq} comes here, before seq {s} ({}:{})",
                            files[l.file].display(),
                            l.number
                        ),
                    ),
                    None => (
                        "deleted",
                        line,
                        format!(
                            "{} missing before this line: seq jumps from {last} to {seq}",
                            match seq - last - 1 {
                                1 => "1 entry".to_string(),
                                n => format!("{n} entries"),
                            }
                        ),
                    ),
                })
            }
            Some(_) if seen.contains(seq) => Some((
                "inserted",
                line,
                format!("this line repeats seq {seq}, already in the log: it was inserted"),
            )),
            Some(last) => Some((
                "reordered",
                line,
                format!("entries were moved: seq {seq} comes after seq {last}"),
            )),
        };
        if let Some((problem, where_, message)) = problem {
            report.broken = Some(at(where_, problem, message));
            break;
        }
        seen.insert(*seq);
        last_seq = Some(*seq);
        let Some(entry) = &line.entry else {
            // A line cut short: whole only if the next line links to it.
            let linked = lines
                .get(i + 1)
                .and_then(|next| next.chain.as_ref())
                .is_some_and(|(s, p)| *s == seq + 1 && *p == line.hash);
            if linked {
                let place = format!("{}:{}", files[line.file].display(), line.number);
                report.warnings.push(format!(
                    "{place}: this entry was cut short when it was written (its writer stopped mid-line); the chain goes on from it"
                ));
                continue;
            }
            report.broken = Some(at(
                line,
                "cut_short",
                "the line ends mid-entry: the log was cut, or its writer died while writing it"
                    .into(),
            ));
            break;
        };
        if let Some(session) = &entry.session {
            *sessions.entry(session.clone()).or_default() |= entry.ends;
        }
        if entry.event != "checkpoint" {
            continue;
        }
        report.checkpoints += 1;
        let Some(signature) = &entry.signature else {
            continue;
        };
        report.signed_checkpoints += 1;
        if let Some(allowed) = allowed_signers {
            let text = format::checkpoint_text(*seq, prev, &entry.time);
            if let Err(why) = check_signature(allowed, namespace, signature, &text) {
                report.broken = Some(at(
                    line,
                    "bad_signature",
                    format!(
                        "the checkpoint's signature does not verify against {}: {why}",
                        allowed.display()
                    ),
                ));
                break;
            }
        }
        last_signed = Some(i);
    }
    if report.broken.is_none() {
        if allowed_signers.is_some() && report.signed_checkpoints == 0 {
            let file = files
                .last()
                .map(|f| f.display().to_string())
                .unwrap_or_default();
            report.broken = Some(Break {
                line: report.files.last().map_or(0, |f| f.lines),
                file,
                seq: last_seq,
                problem: "unsigned",
                message: "no signed checkpoint: nothing vouches for the log (set [audit] signing-key or sign-command in your own ~/.config/mcp-lock/mcp-lock.toml)".into(),
            });
        }
        for (session, ended) in &sessions {
            if !ended {
                report.warnings.push(format!(
                    "session {session} has no end: its guard is still running or was killed, or the log's end was cut"
                ));
            }
        }
        report.after_last_signed = last_signed.map(|i| lines.len() - i - 1);
    }
    report.intact = report.broken.is_none();
    Ok(report)
}

/// Reads a file's lines into `lines`; how many.
fn read_lines(path: &Path, file: usize, lines: &mut Vec<Line>) -> std::io::Result<usize> {
    let f = std::fs::File::open(path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let mut reader = BufReader::new(f);
    let mut number = 0;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        number += 1;
        if buf.len() > MAX_LINE {
            return Err(std::io::Error::other(format!(
                "{}:{number}: a line longer than {} MiB is not an audit entry",
                path.display(),
                MAX_LINE >> 20
            )));
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        lines.push(Line {
            file,
            number,
            chain: format::chain_members(line).map(|(s, p)| (s, p.to_string())),
            hash: format::line_hash(line),
            entry: serde_json::from_slice::<Value>(line)
                .ok()
                .filter(Value::is_object)
                .map(|entry| Fields::of(&entry)),
        });
    }
    Ok(number)
}

/// How long one ssh-keygen run may take.
const SSH_KEYGEN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Checks an SSH signature of `text` against an allowed-signers file.
fn check_signature(
    allowed: &Path,
    namespace: &str,
    signature: &str,
    text: &str,
) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let sig = dir.path().join("checkpoint.sig");
    std::fs::write(&sig, signature).map_err(|e| e.to_string())?;
    let sig = sig.display().to_string();
    let allowed = allowed.display().to_string();
    let args = ["-Y", "find-principals", "-s", &sig, "-f", &allowed];
    let found = format::run_with_input("ssh-keygen", &args, b"", SSH_KEYGEN_WAIT)?;
    let principals = String::from_utf8_lossy(&found.stdout).into_owned();
    let Some(principal) = principals.lines().next().filter(|_| found.status.success()) else {
        return Err("no allowed signer made it".into());
    };
    let args = [
        "-Y", "verify", "-f", &allowed, "-I", principal, "-n", namespace, "-s", &sig,
    ];
    let out = format::run_with_input("ssh-keygen", &args, text.as_bytes(), SSH_KEYGEN_WAIT)?;
    if out.status.success() {
        Ok(())
    } else {
        let why = String::from_utf8_lossy(&out.stderr);
        Err(why.lines().next().unwrap_or("rejected").trim().to_string())
    }
}
