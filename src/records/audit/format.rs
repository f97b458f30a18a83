//! What the guard writes and `mcp-lock audit` reads: the chain's members, the hash of
//! a line, the genesis, and the names of a log's rotated files (docs/audit.md).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The log format the guard writes: entries chained by `seq` and `prev`.
pub const LOG_FORMAT: u64 = 2;

/// What the first entry of a log links to: 64 zeros.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The namespace `signing-key` signs checkpoints under (`ssh-keygen -Y sign -n`).
pub const SIGNING_NAMESPACE: &str = "mcp-lock-audit";

/// `[audit]` in mcp-lock.toml: how the guard checkpoints and rotates its log (who
/// signs is the user's own setting: [`super::signing`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSettings {
    /// A checkpoint whenever `seq` reaches a multiple of this (0: only at session end).
    pub checkpoint_every: u64,
    /// A file is rotated before an append would take it past this size.
    pub max_file_bytes: u64,
}

impl Default for AuditSettings {
    fn default() -> Self {
        AuditSettings {
            checkpoint_every: 1000,
            max_file_bytes: 10 * 1024 * 1024,
        }
    }
}

/// Lowercase hex SHA-256 of a line's exact bytes, without its final newline.
pub fn line_hash(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    hex(&Sha256::digest(line))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

/// The `seq` and `prev` a chained line begins with, read from its first bytes
/// (`{"seq":17,"prev":"<64 hex>",`), so that a line cut short keeps them. None for a
/// line that does not begin so (unchained, or not an entry).
pub fn chain_members(line: &[u8]) -> Option<(u64, &str)> {
    let rest = line.strip_prefix(b"{\"seq\":")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 19 || (digits > 1 && rest[0] == b'0') {
        return None;
    }
    let seq: u64 = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let rest = rest[digits..].strip_prefix(b",\"prev\":\"")?;
    let hash = rest.get(..64)?;
    if !hash.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    rest.get(64..66).filter(|end| *end == b"\",")?;
    Some((seq, std::str::from_utf8(hash).ok()?))
}

/// Runs `program` with `input` on its stdin and waits for it, at most `wait` (then
/// it is killed): the guard's signer and `audit verify`'s ssh-keygen. Errors are one
/// line, naming the program.
pub fn run_with_input(
    program: &str,
    args: &[impl AsRef<std::ffi::OsStr>],
    input: &[u8],
    wait: std::time::Duration,
) -> Result<std::process::Output, String> {
    use std::io::{Read, Write};
    use std::process::Stdio;
    let mut child = std::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input);
    }
    // Read while it runs, so that a chatty program cannot fill a pipe and stall.
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(pipe) = pipe {
                let _ = pipe.take(1 << 20).read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = read(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = read(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let until = std::time::Instant::now() + wait;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < until => {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{program} did not finish within {} s",
                    wait.as_secs()
                ));
            }
        }
    };
    Ok(std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// The text a checkpoint's signature is made over (docs/audit.md).
pub fn checkpoint_text(seq: u64, prev: &str, time: &str) -> String {
    format!("mcp-lock audit checkpoint\nseq {seq}\nprev {prev}\ntime {time}\n")
}

/// The lock file appends to `log` are serialised by.
pub fn lock_path(log: &Path) -> PathBuf {
    let mut name = log.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    log.with_file_name(name)
}

/// The name of the `n`th rotated file of `log`: `audit.jsonl` -> `audit.3.jsonl`.
pub fn rotated_path(log: &Path, n: u64) -> PathBuf {
    let name = log.file_name().unwrap_or_default().to_string_lossy();
    let rotated = match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => format!("{stem}.{n}.{ext}"),
        _ => format!("{name}.{n}"),
    };
    log.with_file_name(rotated)
}

/// The rotated files of `log` that exist, oldest first, with their numbers.
pub fn rotated_files(log: &Path) -> std::io::Result<Vec<(u64, PathBuf)>> {
    let dir = crate::base::files::parent_of(log);
    let name = log
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let (stem, ext) = match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => (format!("{stem}."), format!(".{ext}")),
        _ => (format!("{name}."), String::new()),
    };
    let mut found = Vec::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(found),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let file = entry.file_name().to_string_lossy().into_owned();
        let number = file
            .strip_prefix(&stem)
            .and_then(|rest| rest.strip_suffix(ext.as_str()))
            .filter(|n| {
                !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && !n.starts_with('0')
            })
            .and_then(|n| n.parse::<u64>().ok());
        // A link or anything but a file (a FIFO would hang the read) is no part of it.
        if let Some(n) = number
            && entry.file_type()?.is_file()
        {
            found.push((n, dir.join(&file)));
        }
    }
    found.sort();
    Ok(found)
}

/// Every file of the log at `log`, oldest first: the rotated ones, then `log` itself
/// (when it exists).
pub fn family(log: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = rotated_files(log)?.into_iter().map(|(_, p)| p).collect();
    if std::fs::symlink_metadata(log).is_ok_and(|m| m.is_file()) {
        files.push(log.to_path_buf());
    }
    Ok(files)
}

/// Largest line read; a longer one is not an entry the guard writes.
pub const MAX_LINE: usize = 64 * 1024 * 1024;

/// One line of a log file as [`LogLines`] reads it.
pub enum LogLine<'a> {
    /// The line's bytes, without its newline.
    Line(&'a [u8]),
    /// A line longer than [`MAX_LINE`]: read through, not kept.
    TooLong,
}

/// A log file read one line at a time: only the line being read is held, whatever
/// the file's size, and a line past [`MAX_LINE`] is skipped without being held.
pub struct LogLines {
    reader: std::io::BufReader<std::fs::File>,
    buf: Vec<u8>,
    /// The 1-based number of the line last read.
    pub number: usize,
}

impl LogLines {
    /// Opens `path`, a regular file (opened without blocking, so a FIFO cannot hang
    /// the reader); errors name it.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        let named =
            |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
            .open(path)
            .map_err(named)?;
        if !file.metadata().map_err(named)?.is_file() {
            return Err(std::io::Error::other(format!(
                "{}: not a regular file; name the log's files",
                path.display()
            )));
        }
        Ok(LogLines {
            reader: std::io::BufReader::with_capacity(1 << 16, file),
            buf: Vec::new(),
            number: 0,
        })
    }

    /// The next line and its 1-based number, None at the end of the file.
    pub fn next_line(&mut self) -> std::io::Result<Option<(usize, LogLine<'_>)>> {
        use std::io::{BufRead, Read};
        self.buf.clear();
        let n = (&mut self.reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut self.buf)?;
        if n == 0 {
            return Ok(None);
        }
        self.number += 1;
        if self.buf.len() > MAX_LINE {
            // Read through to the line's end without keeping it.
            self.buf = Vec::new();
            loop {
                let chunk = self.reader.fill_buf()?;
                if chunk.is_empty() {
                    break;
                }
                match chunk.iter().position(|b| *b == b'\n') {
                    Some(at) => {
                        self.reader.consume(at + 1);
                        break;
                    }
                    None => {
                        let len = chunk.len();
                        self.reader.consume(len);
                    }
                }
            }
            return Ok(Some((self.number, LogLine::TooLong)));
        }
        let line = self.buf.strip_suffix(b"\n").unwrap_or(&self.buf);
        Ok(Some((self.number, LogLine::Line(line))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_members_are_read_from_the_start_of_a_line_even_one_cut_short() {
        let line = format!("{{\"seq\":17,\"prev\":\"{GENESIS}\",\"time\":\"2026-12-");
        assert_eq!(chain_members(line.as_bytes()), Some((17, GENESIS)));
        assert_eq!(chain_members(b"{\"time\":\"2026\"}"), None);
        let bad = format!("{{\"seq\":017,\"prev\":\"{GENESIS}\",");
        assert_eq!(chain_members(bad.as_bytes()), None);
    }

    #[test]
    fn a_line_hash_ignores_the_final_newline_only() {
        assert_eq!(line_hash(b"{}\n"), line_hash(b"{}"));
        assert_ne!(line_hash(b"{} "), line_hash(b"{}"));
        assert_eq!(
            line_hash(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn rotated_files_are_numbered_between_stem_and_extension_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        assert_eq!(rotated_path(&log, 3), dir.path().join("audit.3.jsonl"));
        assert_eq!(
            rotated_path(&dir.path().join("log"), 2),
            dir.path().join("log.2")
        );
        for name in [
            "audit.10.jsonl",
            "audit.2.jsonl",
            "audit.x.jsonl",
            "audit.02.jsonl",
            "audit.jsonl",
        ] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        assert_eq!(
            family(&log).unwrap(),
            vec![
                dir.path().join("audit.2.jsonl"),
                dir.path().join("audit.10.jsonl"),
                log.clone()
            ]
        );
        assert_eq!(lock_path(&log), dir.path().join("audit.jsonl.lock"));
    }

    #[test]
    fn a_link_among_a_logs_files_is_not_read_as_one_of_them() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        std::fs::write(dir.path().join("audit.1.jsonl"), "").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("audit.2.jsonl")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &log).unwrap();
        assert_eq!(
            family(&log).unwrap(),
            vec![dir.path().join("audit.1.jsonl")]
        );
    }

    #[test]
    fn a_program_that_outlives_its_wait_is_killed_and_named() {
        let wait = std::time::Duration::from_millis(200);
        let err = run_with_input("sleep", &["5"], b"", wait).unwrap_err();
        assert_eq!(err, "sleep did not finish within 0 s");
        let out = run_with_input("cat", &[] as &[&str], b"text", wait).unwrap();
        assert_eq!(out.stdout, b"text");
    }
}
