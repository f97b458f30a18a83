//! The guard's audit log: one JSON object a line, appended, never rewritten.
//!
//! Every value is redacted before it is serialised, so a secret of the server's entry
//! cannot reach the log even when a call's arguments carry it.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use sha2::Digest;

use crate::base::secrets::Secrets;
use crate::records::audit::format::{self, AuditSettings};
use crate::records::audit::signing::Signer;

/// Where decisions are appended.
pub struct AuditLog {
    /// Shared by every handle of one guard, so that one append and taking it back
    /// cannot interleave with another thread's.
    file: Option<Arc<Mutex<Appender>>>,
    path: Option<PathBuf>,
    server: String,
    /// This guard's session id: 16 hex characters, in every entry it writes.
    session: String,
    secrets: Secrets,
}

/// How long a signing command may take before the checkpoint is left unsigned.
const SIGN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl AuditLog {
    /// Opens (creating it and its directory, readable by the owner only) the log at
    /// `path` for appending. `root` is the directory the log belongs in (the lock's,
    /// for the default `.mcp-lock/audit.jsonl`).
    /// The log itself must be a regular file, not a symlink: a checked-out
    /// `.mcp-lock/audit.jsonl` pointing at `~/.bashrc` must not get lines appended;
    /// nor may its directory lead out of `root` (a checked-out `.mcp-lock` link).
    pub fn open(path: &Path, root: &Path, server: &str, secrets: Secrets) -> std::io::Result<Self> {
        let dir = crate::base::files::create_dir_within(
            &crate::base::files::parent_of(path),
            root,
            0o700,
        )?;
        let real = dir.join(path.file_name().unwrap_or_default());
        let file = open_log(&real)?;
        // Appends are serialised on a file of their own, which rotation never moves;
        // where it cannot be made, on the log itself.
        let lock = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(format::lock_path(&real))
            .ok()
            .filter(|f| f.metadata().is_ok_and(|m| m.is_file()));
        let lock = match lock {
            Some(lock) => lock,
            None => file.try_clone()?,
        };
        let meta = file.metadata()?;
        Ok(AuditLog {
            file: Some(Arc::new(Mutex::new(Appender {
                ino: meta.ino(),
                dev: meta.dev(),
                file,
                lock: Arc::new(lock),
                real,
                head: None,
                settings: AuditSettings::default(),
                signer: None,
            }))),
            path: Some(path.to_path_buf()),
            server: server.to_string(),
            session: session_id(),
            secrets,
        })
    }

    /// Checkpoints, rotation and signing as `[audit]` says.
    pub fn configure(&mut self, settings: AuditSettings, signer: Option<Signer>) {
        if let Some(file) = &self.file {
            let mut appender = file.lock().unwrap_or_else(|e| e.into_inner());
            appender.settings = settings;
            appender.signer = signer;
        }
    }

    /// A log that records nothing (for hosts that keep their own); `secrets` are
    /// still redacted from the guard's stderr lines.
    pub fn disabled(server: &str, secrets: Secrets) -> Self {
        AuditLog {
            file: None,
            path: None,
            server: server.to_string(),
            session: session_id(),
            secrets,
        }
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// This guard's session id.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Appends one entry now (see [`AuditLog::entry`]).
    pub fn record(&mut self, event: &str, members: Members) -> std::io::Result<()> {
        let line = self.entry(event, members);
        self.append(line.as_bytes())
    }

    /// One entry as a line with the server's secrets redacted inside its values,
    /// newline included: `time`, `server`, `session` and `event` first, then the
    /// given members. Its `seq` and `prev` are put in front when it is appended.
    pub fn entry(&self, event: &str, members: Members) -> String {
        self.entry_at(&now_rfc3339(), event, members)
    }

    fn entry_at(&self, time: &str, event: &str, members: Members) -> String {
        let mut line: Vec<u8> = Vec::with_capacity(256);
        line.extend_from_slice(b"{\"time\":\"");
        line.extend_from_slice(time.as_bytes());
        line.extend_from_slice(b"\",\"server\":");
        push_json(&mut line, &self.server);
        line.extend_from_slice(b",\"session\":\"");
        line.extend_from_slice(self.session.as_bytes());
        line.extend_from_slice(b"\",\"event\":");
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

    /// Writes a checkpoint of the chain's head now (`reason`: `session_end` or
    /// `every`), signed when `[audit]` names a key or a command.
    pub fn checkpoint(&mut self, reason: &str) -> std::io::Result<()> {
        self.append_with(&[], Some(reason))
    }

    /// Appends whole lines, or nothing: several guards can share a file without
    /// interleaving, and an entry is never left cut. Each line gets its `seq` and
    /// `prev` (docs/audit.md) here, under the lock, from the line last in the log.
    ///
    /// Under an exclusive `flock` (other guards of the same file wait): a file that
    /// does not end in a newline (a guard died mid-write, or could not take its write
    /// back) gets one first, so no entry is glued to a torn one; the lines go out in
    /// one `write` where the kernel takes them whole; a write that fails part way (a
    /// full disk, a file size limit) is cut back to where it began and the error
    /// returned, so the caller can refuse what the entries decided.
    pub fn append(&mut self, lines: &[u8]) -> std::io::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        self.append_with(lines, None)
    }

    fn append_with(&mut self, lines: &[u8], checkpoint: Option<&str>) -> std::io::Result<()> {
        let Some(file) = self.file.clone() else {
            return Ok(());
        };
        let mut appender = file.lock().unwrap_or_else(|e| e.into_inner());
        let appender = &mut *appender;
        let lock_file = appender.lock.clone();
        let _held = FileLock::exclusive(&lock_file);
        let start = appender.follow_rotation()?;
        let mut head = appender.head_at(start)?;
        let mut out = Vec::with_capacity(lines.len() + lines.len() / 2 + 128);
        if !head.ends_in_newline {
            out.push(b'\n');
        }
        let every = appender.settings.checkpoint_every;
        for line in lines.split_inclusive(|b| *b == b'\n') {
            head.chain(line, &mut out);
            if every > 0 && head.seq % every == 0 {
                let entry = self.checkpoint_entry(&head, "every", appender.signer.as_ref());
                head.chain(entry.as_bytes(), &mut out);
            }
        }
        if let Some(reason) = checkpoint {
            let entry = self.checkpoint_entry(&head, reason, appender.signer.as_ref());
            head.chain(entry.as_bytes(), &mut out);
        }
        let start = if start > 0
            && start.saturating_add(out.len() as u64) > appender.settings.max_file_bytes
        {
            appender.rotate()?;
            if out.first() == Some(&b'\n') {
                out.remove(0);
            }
            0
        } else {
            start
        };
        let mut written = 0;
        let file = &appender.file;
        let failed = loop {
            if written == out.len() {
                head.len = start + written as u64;
                head.ends_in_newline = out.ends_with(b"\n");
                appender.head = Some(head);
                return Ok(());
            }
            match (&*file).write(&out[written..]) {
                Ok(0) => break std::io::Error::from(std::io::ErrorKind::WriteZero),
                Ok(n) => written += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break e,
            }
        };
        appender.head = None;
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

    /// A checkpoint entry to follow `head`, signed over the text docs/audit.md gives.
    fn checkpoint_entry(&self, head: &Head, reason: &str, signer: Option<&Signer>) -> String {
        let time = now_rfc3339();
        let mut members: Members = vec![
            ("decision", Value::from("chain_head")),
            ("reason", Value::from(reason)),
        ];
        match signer {
            None => members.push(("signature", Value::Null)),
            Some(signer) => {
                let text = format::checkpoint_text(head.seq + 1, &head.hash, &time);
                match sign(signer, &text) {
                    Ok(signature) => members.push(("signature", Value::from(signature))),
                    Err(problem) => {
                        super::stderr::note(&format!(
                            "mcp-lock guard: the audit checkpoint is not signed: {problem}"
                        ));
                        members.push(("signature", Value::Null));
                        members.push(("signature_error", Value::from(problem)));
                    }
                }
            }
        }
        // The signature is the signer's own: not redacted, so that it still verifies.
        let mut line = self.entry_at(&time, "checkpoint", Vec::new());
        line.truncate(line.len() - 2);
        for (name, value) in &members {
            line.push(',');
            line.push_str(&serde_json::to_string(name).unwrap_or_default());
            line.push(':');
            line.push_str(&value.to_string());
        }
        line.push_str("}\n");
        line
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
            session: self.session.clone(),
            secrets: self.secrets.clone(),
        })
    }
}

/// The open log, and the chain's head as this guard last left it.
struct Appender {
    file: File,
    /// What appends are serialised on (see [`AuditLog::open`]).
    lock: Arc<File>,
    /// The log file's inode and device, to see whether its path still names it.
    ino: u64,
    dev: u64,
    /// The log's path, its directory checked.
    real: PathBuf,
    /// The last line after this guard's last append: still the head if the file is
    /// the same and as long.
    head: Option<Head>,
    settings: AuditSettings,
    signer: Option<Signer>,
}

/// The last line of the chain: what the next entry links to.
#[derive(Clone)]
struct Head {
    hash: String,
    seq: u64,
    /// The file's length when this was the last line (the file is the appender's:
    /// the head is dropped when another file is opened at the path).
    len: u64,
    ends_in_newline: bool,
}

impl Head {
    /// Adds `line` (an entry without its chain members) after this head to `out`,
    /// and makes it the head.
    fn chain(&mut self, line: &[u8], out: &mut Vec<u8>) {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let Some(body) = line.strip_prefix(b"{") else {
            return;
        };
        self.seq += 1;
        let from = out.len();
        out.extend_from_slice(b"{\"seq\":");
        out.extend_from_slice(self.seq.to_string().as_bytes());
        out.extend_from_slice(b",\"prev\":\"");
        out.extend_from_slice(self.hash.as_bytes());
        out.extend_from_slice(b"\",");
        out.extend_from_slice(body);
        self.hash = format::line_hash(&out[from..]);
        out.push(b'\n');
    }
}

impl Appender {
    /// The log's length, after following a rotation by another guard (then the file
    /// now at its path is opened): one `lstat` of the path when there was none.
    fn follow_rotation(&mut self) -> std::io::Result<u64> {
        if let Ok(m) = std::fs::symlink_metadata(&self.real)
            && m.ino() == self.ino
            && m.dev() == self.dev
        {
            return Ok(m.len());
        }
        self.set_file(open_log(&self.real)?)?;
        self.head = None;
        Ok(self.file.metadata()?.len())
    }

    fn set_file(&mut self, file: File) -> std::io::Result<()> {
        let m = file.metadata()?;
        self.ino = m.ino();
        self.dev = m.dev();
        self.file = file;
        Ok(())
    }

    /// The chain's head when the file is `len` long: this guard's own last line when
    /// nobody wrote since, else read from the file's last line (or, in an empty
    /// file, the newest rotated file's), else the genesis.
    fn head_at(&mut self, len: u64) -> std::io::Result<Head> {
        if let Some(head) = &self.head
            && head.len == len
        {
            return Ok(head.clone());
        }
        let (line, ends_in_newline) = if len > 0 {
            last_line(&self.file, len)?
        } else {
            match format::rotated_files(&self.real)?.pop() {
                Some((_, path)) => {
                    let file = File::open(&path)?;
                    let len = file.metadata()?.len();
                    let (line, _) = last_line(&file, len)?;
                    (line, true)
                }
                None => (None, true),
            }
        };
        Ok(match line {
            Some(line) => Head {
                hash: format::line_hash(&line),
                seq: format::chain_members(&line).map_or(0, |(seq, _)| seq),
                len,
                ends_in_newline,
            },
            None => Head {
                hash: format::GENESIS.to_string(),
                seq: 0,
                len,
                ends_in_newline: true,
            },
        })
    }

    /// Renames the log to its next numbered name and starts a new one at its path.
    fn rotate(&mut self) -> std::io::Result<()> {
        let next = format::rotated_files(&self.real)?
            .last()
            .map_or(1, |(n, _)| n + 1);
        std::fs::rename(&self.real, format::rotated_path(&self.real, next))?;
        self.set_file(open_log(&self.real)?)
    }
}

/// Opens the log at `real` for appending (and reading, to find its last line).
fn open_log(real: &Path) -> std::io::Result<File> {
    let open = |read: bool| {
        OpenOptions::new()
            .create(true)
            .append(true)
            .read(read)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(real)
    };
    // A log its owner made write-only is appended to without reading it: its chain
    // restarts from the genesis each session.
    let file = match open(true) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => open(false),
        opened => opened,
    }
    .map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => crate::base::files::no_append_through(real),
        _ => e,
    })?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// Largest last line read to find the chain's head.
const MAX_LAST_LINE: u64 = 256 * 1024 * 1024;

/// The last line of a file `len` long, without its newline, and whether the file
/// ends in one; None for an empty file. A file that cannot be read has no line.
fn last_line(file: &File, len: u64) -> std::io::Result<(Option<Vec<u8>>, bool)> {
    let mut last = [0u8];
    if len == 0 || file.read_exact_at(&mut last, len - 1).is_err() {
        return Ok((None, true));
    }
    let ends_in_newline = last[0] == b'\n';
    let end = if ends_in_newline { len - 1 } else { len };
    let mut start = end;
    // Entries are a few hundred bytes: a small read first, larger ones for a long line.
    let mut chunk = vec![0u8; 1024];
    'back: while start > 0 && end - start < MAX_LAST_LINE {
        let from = start.saturating_sub(chunk.len() as u64);
        let piece = &mut chunk[..(start - from) as usize];
        file.read_exact_at(piece, from)?;
        if let Some(at) = memchr::memrchr(b'\n', piece) {
            start = from + at as u64 + 1;
            break 'back;
        }
        start = from;
        if chunk.len() < 1 << 20 {
            chunk.resize(chunk.len() * 4, 0);
        }
    }
    let mut line = vec![0u8; (end - start) as usize];
    file.read_exact_at(&mut line, start)?;
    Ok((Some(line), ends_in_newline))
}

/// A session id: 16 hex characters from the system's randomness.
fn session_id() -> String {
    let mut bytes = [0u8; 8];
    let random = File::open("/dev/urandom").and_then(|mut f| {
        use std::io::Read;
        f.read_exact(&mut bytes)
    });
    if random.is_err() {
        let seed = format!("{:?}{}", SystemTime::now(), std::process::id());
        bytes.copy_from_slice(&sha2::Sha256::digest(seed.as_bytes())[..8]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs the signer on `text`; its signature, or why there is none, in one line.
fn sign(signer: &Signer, text: &str) -> Result<String, String> {
    let (program, args): (String, Vec<String>) = match signer {
        Signer::Key(key) => (
            "ssh-keygen".into(),
            vec![
                "-Y".into(),
                "sign".into(),
                "-f".into(),
                key.display().to_string(),
                "-n".into(),
                format::SIGNING_NAMESPACE.into(),
            ],
        ),
        Signer::Command(argv) => (argv[0].clone(), argv[1..].to_vec()),
    };
    let output = format::run_with_input(&program, &args, text.as_bytes(), SIGN_WAIT)?;
    let first_error = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes)
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string()
    };
    if !output.status.success() {
        return Err(format!(
            "{program} failed ({}): {}",
            output.status,
            first_error(&output.stderr)
        ));
    }
    match String::from_utf8(output.stdout) {
        Ok(signature) if !signature.trim().is_empty() => Ok(signature),
        _ => Err(format!("{program} wrote no signature")),
    }
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
    crate::base::clock::format_utc(secs, Some(millis))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod chain_tests;
