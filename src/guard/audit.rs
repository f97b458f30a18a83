//! The guard's audit log: one JSON object a line, appended, never rewritten.
//!
//! Every value is redacted before it is serialised, so a secret of the server's entry
//! cannot reach the log even when a call's arguments carry it.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::secrets::Secrets;

/// Where decisions are appended.
pub struct AuditLog {
    /// Shared by every handle of one guard, so that one append and taking it back
    /// cannot interleave with another thread's.
    file: Option<Arc<Mutex<Appender>>>,
    path: Option<PathBuf>,
    server: String,
    secrets: Secrets,
}

impl AuditLog {
    /// Opens (creating it and its directory, readable by the owner only) the log at
    /// `path` for appending. `root` is the directory the log belongs in (the lock's,
    /// for the default `.mcp-lock/audit.jsonl`).
    /// The log itself must be a regular file, not a symlink: a checked-out
    /// `.mcp-lock/audit.jsonl` pointing at `~/.bashrc` must not get lines appended;
    /// nor may its directory lead out of `root` (a checked-out `.mcp-lock` link).
    pub fn open(path: &Path, root: &Path, server: &str, secrets: Secrets) -> std::io::Result<Self> {
        let dir = crate::files::create_dir_within(&crate::files::parent_of(path), root, 0o700)?;
        let real = dir.join(path.file_name().unwrap_or_default());
        let open = |read: bool| {
            OpenOptions::new()
                .create(true)
                .append(true)
                .read(read)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&real)
        };
        // Read too, to check that the file ends in a newline before each append; a
        // log its owner made write-only is appended to without that check.
        let file = match open(true) {
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => open(false),
            opened => opened,
        }
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => crate::files::no_append_through(&real),
            _ => e,
        })?;
        if !file.metadata()?.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        Ok(AuditLog {
            file: Some(Arc::new(Mutex::new(Appender {
                file,
                ends_at: None,
            }))),
            path: Some(path.to_path_buf()),
            server: server.to_string(),
            secrets,
        })
    }

    /// A log that records nothing (for hosts that keep their own); `secrets` are
    /// still redacted from the guard's stderr lines.
    pub fn disabled(server: &str, secrets: Secrets) -> Self {
        AuditLog {
            file: None,
            path: None,
            server: server.to_string(),
            secrets,
        }
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Appends one entry now (see [`AuditLog::entry`]).
    pub fn record(&mut self, event: &str, members: Members) -> std::io::Result<()> {
        let line = self.entry(event, members);
        self.append(line.as_bytes())
    }

    /// One entry as a line with the server's secrets redacted inside its values, newline included: `time`, `server` and `event`
    /// first, then the given members.
    pub fn entry(&self, event: &str, members: Members) -> String {
        let mut line: Vec<u8> = Vec::with_capacity(256);
        line.extend_from_slice(b"{\"time\":\"");
        line.extend_from_slice(now_rfc3339().as_bytes());
        line.extend_from_slice(b"\",\"server\":");
        push_json(&mut line, &self.server);
        line.extend_from_slice(b",\"event\":");
        push_json(&mut line, event);
        for (name, value) in &members {
            line.push(b',');
            push_json(&mut line, name);
            line.push(b':');
            // Inside the values' strings, before serialising: the entry's structure
            // and the guard's own members are never rewritten.
            push_json(&mut line, &*self.secrets.redacted_value(value));
        }
        line.extend_from_slice(b"}\n");
        // Only JSON was written: always UTF-8.
        String::from_utf8(line).unwrap_or_default()
    }

    /// Appends whole lines, or nothing: several guards can share a file without
    /// interleaving, and an entry is never left cut.
    ///
    /// Under an exclusive `flock` (other guards of the same file wait): a file that
    /// does not end in a newline (a guard died mid-write, or could not take its write
    /// back) gets one first, so no entry is glued to a torn one; the lines go out in
    /// one `write` where the kernel takes them whole; a write that fails part way (a
    /// full disk, a file size limit) is cut back to where it began and the error
    /// returned, so the caller can refuse what the entries decided.
    pub fn append(&mut self, lines: &[u8]) -> std::io::Result<()> {
        let Some(file) = self.file.as_ref() else {
            return Ok(());
        };
        if lines.is_empty() {
            return Ok(());
        }
        let mut appender = file.lock().unwrap_or_else(|e| e.into_inner());
        let Appender { file, ends_at } = &mut *appender;
        let _shared = FileLock::exclusive(file);
        let start = file.metadata()?.len();
        let mut last = [b'\n'];
        // The file is read only when someone else may have written it last.
        if start > 0 && *ends_at != Some(start) && file.read_exact_at(&mut last, start - 1).is_err()
        {
            last = [b'\n'];
        }
        *ends_at = None;
        let mut whole = Vec::new();
        let lines = if last[0] == b'\n' {
            lines
        } else {
            whole.reserve(lines.len() + 1);
            whole.push(b'\n');
            whole.extend_from_slice(lines);
            &whole
        };
        let mut written = 0;
        let failed = loop {
            if written == lines.len() {
                if lines.ends_with(b"\n") {
                    *ends_at = Some(start + written as u64);
                }
                return Ok(());
            }
            match (&*file).write(&lines[written..]) {
                Ok(0) => break std::io::Error::from(std::io::ErrorKind::WriteZero),
                Ok(n) => written += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break e,
            }
        };
        // Cut back only what is certainly ours: the file grew by exactly what was
        // written. Otherwise the next append starts on a line of its own.
        if written > 0
            && file
                .metadata()
                .is_ok_and(|m| m.len() == start + written as u64)
        {
            let _ = file.set_len(start);
        }
        Err(failed)
    }

    /// The values this log's server must never show.
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// The text with the secrets of this log's server redacted.
    pub fn redact(&self, text: &str) -> String {
        self.secrets.redact(text)
    }

    /// A second handle on the same file, for appending without this log's owner.
    pub fn writer(&self) -> std::io::Result<Self> {
        Ok(AuditLog {
            file: self.file.clone(),
            path: self.path.clone(),
            server: self.server.clone(),
            secrets: self.secrets.clone(),
        })
    }
}

/// The open log, and where this guard's last whole append left its end.
struct Appender {
    file: File,
    /// The file's length after this guard's last append that ended in a newline: if
    /// the file still has that length, it ends in one and need not be read.
    ends_at: Option<u64>,
}

/// An exclusive `flock` on the log for one append, released when dropped. Where
/// locks are not supported, or another process holds one for longer than
/// [`LOCK_WAIT`] (no guard does: it holds it for one write), the append goes ahead
/// without one rather than hang the session.
struct FileLock<'a>(Option<&'a File>);

/// How long an append waits for another writer's lock.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl<'a> FileLock<'a> {
    fn exclusive(file: &'a File) -> Self {
        let until = std::time::Instant::now() + LOCK_WAIT;
        let locked = loop {
            // SAFETY: flock on a descriptor this process holds open.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if rc == 0 {
                break true;
            }
            let error = std::io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::EINTR) => {}
                Some(libc::EWOULDBLOCK) if std::time::Instant::now() < until => {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                _ => break false,
            }
        };
        FileLock(locked.then_some(file))
    }
}

impl Drop for FileLock<'_> {
    fn drop(&mut self) {
        if let Some(file) = self.0 {
            // SAFETY: as above.
            unsafe {
                libc::flock(file.as_raw_fd(), libc::LOCK_UN);
            }
        }
    }
}

/// An entry's members after `time`, `server` and `event`, in order.
pub type Members = Vec<(&'static str, Value)>;

fn push_json(line: &mut Vec<u8>, value: &(impl serde::Serialize + ?Sized)) {
    // Strings and JSON values always serialize into memory.
    let _ = serde_json::to_writer(&mut *line, value);
}

/// The current time as RFC 3339 in UTC with milliseconds: 2026-11-29T22:58:53.123Z.
pub fn now_rfc3339() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let millis = since.as_millis();
    // Entries of one burst share their millisecond: format it once per thread.
    LAST_TIME.with(|last| {
        let mut last = last.borrow_mut();
        if last.0 != millis || last.1.is_empty() {
            *last = (
                millis,
                format_utc(since.as_secs() as i64, since.subsec_millis()),
            );
        }
        last.1.clone()
    })
}

thread_local! {
    static LAST_TIME: std::cell::RefCell<(u128, String)> =
        const { std::cell::RefCell::new((0, String::new())) };
}

fn format_utc(secs: i64, millis: u32) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_timestamps() {
        assert_eq!(format_utc(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_utc(951_782_400, 7), "2000-02-29T00:00:00.007Z");
        assert_eq!(format_utc(1_795_993_133, 123), "2026-11-29T22:58:53.123Z");
    }

    #[test]
    fn a_symlinked_log_is_refused_rather_than_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("bashrc");
        std::fs::write(&target, "export A=1\n").unwrap();
        let link = dir.path().join("audit.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(AuditLog::open(&link, dir.path(), "s", Secrets::default()).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "export A=1\n");
    }

    #[test]
    fn a_secret_equal_to_a_json_word_leaves_the_entry_valid_json() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut secrets = Secrets::default();
        secrets.add("FLAG", "true");
        secrets.add("MODE", "call");
        let mut log = AuditLog::open(&path, dir.path(), "s", secrets).unwrap();
        let m: Members = vec![
            ("first_page", serde_json::json!(true)),
            ("arguments", serde_json::json!({"q": "true"})),
        ];
        log.record("call", m).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let v: Value = serde_json::from_str(text.trim()).expect("valid JSON");
        assert_eq!(v["first_page"], true);
        assert_eq!(v["event"], "call");
        assert_eq!(v["arguments"]["q"], "${FLAG}");
    }

    #[test]
    fn an_entry_after_a_torn_line_starts_on_a_line_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, "{\"time\":\"2026-12-01T00:00:00.000Z\",\"ser").unwrap();
        let mut log = AuditLog::open(&path, dir.path(), "s", Secrets::default()).unwrap();
        log.record("call", Vec::new()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        let v: Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(v["event"], "call");
    }

    #[test]
    fn a_line_torn_by_another_writer_after_our_append_is_not_glued_to() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut log = AuditLog::open(&path, dir.path(), "s", Secrets::default()).unwrap();
        log.record("first", Vec::new()).unwrap();
        // Another guard dies mid-entry after this one's append.
        let mut other = OpenOptions::new().append(true).open(&path).unwrap();
        other.write_all(b"{\"time\":\"2026-12-01T00:").unwrap();
        log.record("second", Vec::new()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        let v: Value = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(v["event"], "second");
    }

    #[test]
    fn entries_are_redacted_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/audit.jsonl");
        let mut secrets = Secrets::default();
        secrets.add("API_TOKEN", "tok-123456789");
        let mut log = AuditLog::open(&path, dir.path(), "s", secrets).unwrap();
        let m: Members = vec![("arguments", serde_json::json!({"q": "tok-123456789"}))];
        log.record("call", m).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("tok-123456789"), "{text}");
        let v: Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(v["arguments"]["q"], "${API_TOKEN}");
        assert_eq!(v["event"], "call");
    }
}
