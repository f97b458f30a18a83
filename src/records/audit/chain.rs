//! `mcp-lock audit verify`: the chain of a log's files, line by line, and the
//! signatures of its checkpoints (docs/audit.md).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::format::{self, GENESIS};

pub use super::format::MAX_LINE;

/// Warnings kept in a report; past them, one more line counts the rest.
pub const MAX_WARNINGS: usize = 100;

/// Sessions followed at once for an end; past them, a warning says some were not.
pub const MAX_OPEN_SESSIONS: usize = 10_000;

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

/// Where a line is, and the chain members it begins with.
#[derive(Clone)]
struct Place {
    file: usize,
    number: usize,
    chain: Option<(u64, String)>,
    hash: String,
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

/// Warnings, at most [`MAX_WARNINGS`] of them kept and the rest counted.
#[derive(Default)]
struct Warnings {
    kept: Vec<String>,
    more: usize,
}

impl Warnings {
    fn push(&mut self, warning: String) {
        if self.kept.len() < MAX_WARNINGS {
            self.kept.push(warning);
        } else {
            self.more += 1;
        }
    }

    fn finish(mut self) -> Vec<String> {
        if self.more > 0 {
            self.kept
                .push(format!("{} more warnings not shown", self.more));
        }
        self.kept
    }
}

/// The sessions seen without their end so far: at most [`MAX_OPEN_SESSIONS`], and the
/// last few ended ones, so that an entry written after a session's end (its final
/// checkpoint) does not open it again.
#[derive(Default)]
struct Sessions {
    open: std::collections::BTreeSet<String>,
    ended: std::collections::VecDeque<String>,
    untracked: usize,
}

impl Sessions {
    const ENDED_KEPT: usize = 64;

    fn saw(&mut self, session: &str, ends: bool) {
        if ends {
            self.open.remove(session);
            if !self.ended.iter().any(|s| s == session) {
                if self.ended.len() == Self::ENDED_KEPT {
                    self.ended.pop_front();
                }
                self.ended.push_back(session.to_string());
            }
        } else if !self.open.contains(session) && !self.ended.iter().any(|s| s == session) {
            if self.open.len() < MAX_OPEN_SESSIONS {
                self.open.insert(session.to_string());
            } else {
                self.untracked += 1;
            }
        }
    }
}

/// What is still to be decided when a break was found: a jump in `seq` is a
/// reorder if a later line carries one of the missing numbers, else a deletion.
struct Jump {
    at: Place,
    last: u64,
    seq: u64,
}

/// Checks `files` as one chain, in this order. `allowed_signers`: an ssh-keygen
/// allowed-signers file every signed checkpoint must verify against, signed under
/// `namespace`. The files are read one line at a time: memory does not grow with
/// the log, and time is linear in it.
pub fn verify(
    files: &[PathBuf],
    allowed_signers: Option<&Path>,
    namespace: &str,
) -> std::io::Result<ChainReport> {
    let mut report = ChainReport {
        intact: true,
        files: Vec::new(),
        entries: 0,
        unchained: 0,
        checkpoints: 0,
        signed_checkpoints: 0,
        signatures_checked: allowed_signers.is_some(),
        after_last_signed: None,
        broken: None,
        warnings: Vec::new(),
    };
    // Every break's message begins with its place.
    let at = |line: &Place, problem: &'static str, message: String| {
        let file = files[line.file].display().to_string();
        Break {
            message: format!("{file}:{}: {message}", line.number),
            file,
            line: line.number,
            seq: line.chain.as_ref().map(|(s, _)| *s),
            problem,
        }
    };
    let mut warnings = Warnings::default();
    let mut previous: Option<Place> = None;
    // The chain so far is every seq from `first_seq` to `last_seq`, in order.
    let mut first_seq: Option<u64> = None;
    let mut last_seq: Option<u64> = None;
    let mut last_signed: Option<usize> = None;
    let mut sessions = Sessions::default();
    // A chained line that is not a whole entry: whole only if the next line links to it.
    let mut cut: Option<Place> = None;
    let mut jump: Option<Jump> = None;
    // Index of the line being read, over every file.
    let mut i = 0usize;
    for (file, path) in files.iter().enumerate() {
        let mut lines = format::LogLines::open(path)?;
        while let Some((number, read)) = lines.next_line()? {
            let index = i;
            i += 1;
            let format::LogLine::Line(bytes) = read else {
                return Err(std::io::Error::other(format!(
                    "{}:{number}: a line longer than {} MiB is not an audit entry",
                    path.display(),
                    MAX_LINE >> 20
                )));
            };
            let chain = format::chain_members(bytes).map(|(s, p)| (s, p.to_string()));
            if report.broken.is_some() {
                // Only the count, and whether a later line holds a missing seq.
                if let (Some(j), Some((s, _))) = (&jump, &chain)
                    && *s > j.last
                    && *s < j.seq
                {
                    report.broken = Some(at(
                        &j.at,
                        "reordered",
                        format!(
                            "entries were moved: seq {} comes here, before seq {s} ({}:{number})",
                            j.seq,
                            path.display()
                        ),
                    ));
                    jump = None;
                }
                continue;
            }
            let line = Place {
                file,
                number,
                hash: format::line_hash(bytes),
                chain,
            };
            if let Some(c) = cut.take() {
                let (seq, _) = c.chain.as_ref().expect("a cut line is chained");
                let linked = line
                    .chain
                    .as_ref()
                    .is_some_and(|(s, p)| *s == seq + 1 && *p == c.hash);
                if !linked {
                    report.broken = Some(at(
                        &c,
                        "cut_short",
                        "the line ends mid-entry: the log was cut, or its writer died while writing it"
                            .into(),
                    ));
                    continue;
                }
                warnings.push(format!(
                    "{}:{}: this entry was cut short when it was written (its writer stopped mid-line); the chain goes on from it",
                    files[c.file].display(),
                    c.number
                ));
            }
            let Some((seq, prev)) = line.chain.clone() else {
                if last_seq.is_some() {
                    report.broken = Some(at(
                        &line,
                        "unchained",
                        "this line has no seq and prev, though the chain began before it: it was not written by the guard, or was edited".into(),
                    ));
                    continue;
                }
                report.unchained += 1;
                previous = Some(line);
                continue;
            };
            let expected = previous.as_ref().map_or(GENESIS, |p| p.hash.as_str());
            let problem: Option<(&'static str, &Place, String)> = match last_seq {
                None if previous.is_none() && (seq != 1 || prev != GENESIS) => Some((
                    "start_missing",
                    &line,
                    format!(
                        "the log begins at seq {seq}: {} earlier entries, or an earlier file, are missing",
                        seq.saturating_sub(1)
                    ),
                )),
                None if prev != expected => Some((
                    "edited",
                    previous.as_ref().unwrap_or(&line),
                    "the first chained entry records another hash for the line before it: that line was changed".into(),
                )),
                None => None,
                Some(last) if seq == last + 1 && prev == expected => None,
                Some(last) if seq == last + 1 => Some((
                    "edited",
                    previous.as_ref().unwrap_or(&line),
                    format!(
                        "this line was changed after it was written: the entry after it (seq {seq}) recorded another hash for it"
                    ),
                )),
                Some(last) if seq > last + 1 => {
                    // Deleted, unless a later line carries a missing seq (then
                    // reordered): decided as the rest is read.
                    jump = Some(Jump {
                        at: line.clone(),
                        last,
                        seq,
                    });
                    Some((
                        "deleted",
                        &line,
                        format!(
                            "{} missing before this line: seq jumps from {last} to {seq}",
                            match seq - last - 1 {
                                1 => "1 entry".to_string(),
                                n => format!("{n} entries"),
                            }
                        ),
                    ))
                }
                Some(last) if first_seq.is_some_and(|first| seq >= first && seq <= last) => Some((
                    "inserted",
                    &line,
                    format!("this line repeats seq {seq}, already in the log: it was inserted"),
                )),
                Some(last) => Some((
                    "reordered",
                    &line,
                    format!("entries were moved: seq {seq} comes after seq {last}"),
                )),
            };
            if let Some((problem, where_, message)) = problem {
                report.broken = Some(at(where_, problem, message));
                continue;
            }
            first_seq.get_or_insert(seq);
            last_seq = Some(seq);
            let entry = serde_json::from_slice::<Value>(bytes)
                .ok()
                .filter(Value::is_object)
                .map(|entry| Fields::of(&entry));
            let Some(entry) = entry else {
                cut = Some(line.clone());
                previous = Some(line);
                continue;
            };
            previous = Some(line);
            if let Some(session) = &entry.session {
                // Kept short: only a warning ever shows it.
                sessions.saw(&crate::base::text::cut(session, 200), entry.ends);
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
                let text = format::checkpoint_text(seq, &prev, &entry.time);
                if let Err(why) = check_signature(allowed, namespace, signature, &text) {
                    report.broken = Some(at(
                        previous.as_ref().expect("just set"),
                        "bad_signature",
                        format!(
                            "the checkpoint's signature does not verify against {}: {why}",
                            allowed.display()
                        ),
                    ));
                    continue;
                }
            }
            last_signed = Some(index);
        }
        report.files.push(FileCount {
            path: path.display().to_string(),
            lines: lines.number,
        });
    }
    report.entries = i;
    if report.broken.is_none()
        && let Some(c) = cut
    {
        // The last line, cut short: nothing after it links to it.
        report.broken = Some(at(
            &c,
            "cut_short",
            "the line ends mid-entry: the log was cut, or its writer died while writing it".into(),
        ));
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
        for session in &sessions.open {
            warnings.push(format!(
                "session {session} has no end: its guard is still running or was killed, or the log's end was cut"
            ));
        }
        if sessions.untracked > 0 {
            warnings.push(format!(
                "more than {MAX_OPEN_SESSIONS} sessions were open at once: {} entries of sessions past them were not followed to their end",
                sessions.untracked
            ));
        }
        report.after_last_signed = last_signed.map(|l| i - l - 1);
    }
    report.warnings = warnings.finish();
    report.intact = report.broken.is_none();
    Ok(report)
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
