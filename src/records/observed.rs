//! Observed handshakes: what the real hosts sent the guard, kept beside the audit log
//! in `.mcp-lock/handshakes.json`, the last one per server and host (`clientInfo.name`).
//!
//! Built-in profiles go stale with every host release. The guard records what each
//! host really sends, `verify` and `servers` say when it differs from the handshake
//! the lock pinned for that host's profile, and `update` offers to pin it.
//!
//! The file is state, not configuration: it is written atomically, never through a
//! symlink, and read as hostile input (bounded, a corrupt file ignored with a notice).

use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::base::protocol::is_modern;
use crate::records::lock::{LockedServer, Lockfile, PinnedServer};
use crate::records::profile::capability_difference;

/// The file's name in the state directory.
pub const FILE_NAME: &str = "handshakes.json";
/// The most bytes read of it; a larger file is ignored with a notice.
pub const MAX_BYTES: u64 = 1024 * 1024;
/// The most handshakes kept: the oldest go first.
pub const MAX_ENTRIES: usize = 64;
/// The most bytes one handshake may take: a larger one is not recorded.
pub const MAX_ENTRY_BYTES: usize = 16 * 1024;
/// The file's own format version.
const FORMAT: u32 = 1;

/// What one host sent when it connected through the guard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Handshake {
    pub server: String,
    /// `clientInfo.name` ("" when it sent none): with the server, the key.
    pub host: String,
    pub client_info: Value,
    /// `server/discover` or `initialize`.
    pub path: String,
    /// The version it asked for.
    pub requested_version: Option<String>,
    /// The version the session agreed on (2026-07-28 for `server/discover`, else the
    /// server's answer to `initialize`): with the path, the handshake's era.
    pub agreed_version: Option<String>,
    pub capabilities: Value,
    /// Whether its capabilities declare `roots`.
    pub roots_declared: bool,
    /// The shape of its `roots/list` answer, when the guard saw one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots_answer: Option<RootsShape>,
    /// The pinned profile it matched, or the nearest one when it matched none.
    pub profile: Option<String>,
    /// It matched that profile (capabilities and era equal).
    pub matched: bool,
    /// When it was seen (RFC 3339, UTC).
    pub at: String,
}

/// A `roots/list` answer, without its paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootsShape {
    pub count: usize,
    /// Every root has a `name`.
    pub named: bool,
    /// The URI schemes used (`file`).
    pub schemes: Vec<String>,
}

impl RootsShape {
    /// The shape of a `roots/list` result, when it is one.
    pub fn of(result: &Value) -> Option<RootsShape> {
        let roots = result.get("roots")?.as_array()?;
        let mut schemes: Vec<String> = roots
            .iter()
            .filter_map(|r| r["uri"].as_str())
            .map(|u| {
                u.split(':')
                    .next()
                    .unwrap_or_default()
                    .chars()
                    .take(32)
                    .collect()
            })
            .collect();
        schemes.sort();
        schemes.dedup();
        Some(RootsShape {
            count: roots.len(),
            named: roots.iter().all(|r| r["name"].is_string()),
            schemes,
        })
    }
}

impl Handshake {
    /// The era in words: `server/discover 2026-07-28` or `initialize 2025-11-25`.
    pub fn era(&self) -> String {
        let version = self
            .agreed_version
            .as_deref()
            .or(self.requested_version.as_deref())
            .unwrap_or("(no version)");
        format!("{} {version}", self.path)
    }

    /// "Claude Code 2.1.340": the host as it names itself.
    pub fn host_shown(&self) -> String {
        let name = self.client_info["title"]
            .as_str()
            .or(self.client_info["name"].as_str())
            .unwrap_or("a host with no clientInfo");
        match self.client_info["version"].as_str() {
            Some(v) => format!("{name} {v}"),
            None => name.to_string(),
        }
    }

    /// Whether a pinned listing was made with this handshake: the same capabilities,
    /// in the same era. The clientInfo (a host's version) does not count.
    pub fn matches(&self, pin: &LockedServer) -> bool {
        pin.client_capabilities.to_value() == self.capabilities && self.same_era(pin)
    }

    /// The same era as a pinned listing: the version agreed on is the pinned one
    /// (2026-07-28 only ever via `server/discover`).
    pub fn same_era(&self, pin: &LockedServer) -> bool {
        let version = self
            .agreed_version
            .as_deref()
            .or(self.requested_version.as_deref());
        version == Some(pin.protocol_version.as_str())
            && (self.path == "server/discover") == is_modern(&pin.protocol_version)
    }

    /// The version a client asks for to speak this handshake again: 2026-07-28 for
    /// `server/discover`, else the version agreed on.
    pub fn version_to_ask(&self) -> Option<String> {
        if self.path == "server/discover" {
            return Some(crate::base::protocol::MODERN_VERSION.to_string());
        }
        self.agreed_version
            .clone()
            .or_else(|| self.requested_version.clone())
    }
}

/// Where the state file of a project is: `.mcp-lock/handshakes.json` beside the lock.
pub fn path_in(lock_dir: &Path) -> PathBuf {
    lock_dir.join(".mcp-lock").join(FILE_NAME)
}

#[derive(Serialize, Deserialize)]
struct Document {
    version: u32,
    handshakes: Vec<Handshake>,
}

/// The handshakes recorded for the project whose lock is in `lock_dir`. A missing
/// file is none; a symlink, a file too large, or one that does not read is an
/// error, the one-line notice to show (the file is then ignored).
pub fn read(lock_dir: &Path) -> Result<Vec<Handshake>, String> {
    let path = path_in(lock_dir);
    let shown = ".mcp-lock/handshakes.json";
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{shown} is ignored: {e}")),
        Ok(m) if m.file_type().is_symlink() => {
            return Err(format!("{shown} is ignored: it is a symlink"));
        }
        Ok(_) => {}
    }
    if let Some(dir) = path.parent()
        && std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(format!(
            "{shown} is ignored: its directory .mcp-lock is a symlink"
        ));
    }
    let bytes = crate::base::files::read_regular(&path, MAX_BYTES).map_err(|e| {
        if crate::base::files::too_large(&e) {
            format!("{shown} is ignored: larger than {MAX_BYTES} bytes")
        } else {
            format!("{shown} is ignored: {e}")
        }
    })?;
    parse(&bytes).map_err(|e| format!("{shown} is ignored: {e}"))
}

fn parse(bytes: &[u8]) -> Result<Vec<Handshake>, String> {
    let doc: Document =
        serde_json::from_slice(bytes).map_err(|e| format!("it does not read ({e})"))?;
    if doc.version != FORMAT {
        return Err(format!("unknown format version {}", doc.version));
    }
    Ok(doc.handshakes)
}

/// Records `seen` in the project's state file, replacing the last handshake of the
/// same server and host, keeping at most [`MAX_ENTRIES`] (the newest). Written whole
/// (a temporary file renamed over it), never through a symlink: a `.mcp-lock` or a
/// `handshakes.json` that is one is refused. A corrupt file is replaced.
pub fn record(lock_dir: &Path, seen: &Handshake) -> io::Result<()> {
    let entry = serde_json::to_vec(seen).map_err(io::Error::other)?;
    if entry.len() > MAX_ENTRY_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the handshake takes more than {MAX_ENTRY_BYTES} bytes; not recorded"),
        ));
    }
    let dir_path = lock_dir.join(".mcp-lock");
    if std::fs::symlink_metadata(&dir_path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            ".mcp-lock is a symlink; the handshake is not recorded through it",
        ));
    }
    let dir = crate::base::files::create_dir_within(&dir_path, lock_dir, 0o700)?;
    let path = dir.join(FILE_NAME);
    if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.file_type().is_file()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            ".mcp-lock/handshakes.json is not a regular file; the handshake is not recorded",
        ));
    }
    // Guards of several servers share the file: one writer at a time.
    let guard = crate::base::files::open_dir(&dir)?;
    // SAFETY: flock on a descriptor this function owns; released when it is closed.
    if unsafe { libc::flock(guard.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut all = read(lock_dir).unwrap_or_default();
    all.retain(|h| !(h.server == seen.server && h.host == seen.host));
    all.push(seen.clone());
    all.sort_by(|a, b| b.at.cmp(&a.at));
    all.truncate(MAX_ENTRIES);
    all.sort_by(|a, b| (&a.server, &a.host).cmp(&(&b.server, &b.host)));
    let doc = Document {
        version: FORMAT,
        handshakes: all,
    };
    let mut bytes = serde_json::to_vec_pretty(&doc).map_err(io::Error::other)?;
    bytes.push(b'\n');
    crate::base::files::replace(&path, lock_dir, &bytes, 0o600)
}

/// A host that last sent another handshake than the one the lock pinned for its
/// profile: a notice in `verify` and `servers`, never an exit code by itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Observed {
    pub server: String,
    /// The pinned profile it was judged under (matched by capabilities, or nearest).
    pub profile: String,
    pub client_info: Value,
    /// `server/discover` or `initialize`.
    pub path: String,
    pub protocol_version: Option<String>,
    pub capabilities: Value,
    pub pinned_protocol_version: String,
    pub pinned_capabilities: Value,
    /// JSON pointers from the pinned capabilities to the observed ones
    /// (`+/x` added, `-/x` gone, `~/x` another value).
    pub difference: Vec<String>,
    /// The era (path or protocol version) differs.
    pub era_changed: bool,
    pub at: String,
    pub message: String,
}

/// The recorded handshakes that differ from what the lock pinned, for the servers it
/// pins (all of them, or those named).
pub fn differing(lock: &Lockfile, seen: &[Handshake], servers: &[String]) -> Vec<Observed> {
    let mut out = Vec::new();
    for h in seen {
        if !servers.is_empty() && !servers.contains(&h.server) {
            continue;
        }
        let Some(pins) = lock.servers.get(&h.server) else {
            continue;
        };
        if let Some(o) = differs(&h.server, pins, h) {
            out.push(o);
        }
    }
    out
}

/// The pinned profile a handshake is judged under: the one it names if still pinned,
/// else the one with equal capabilities, else the one with the fewest differences.
pub fn nearest<'a>(
    pins: &'a PinnedServer,
    h: &Handshake,
) -> Option<(&'a String, &'a LockedServer)> {
    if let Some(p) = h
        .profile
        .as_ref()
        .and_then(|n| pins.profiles.get_key_value(n))
    {
        return Some(p);
    }
    pins.profiles.iter().min_by_key(|(_, p)| {
        capability_difference(&p.client_capabilities.to_value(), &h.capabilities).len()
    })
}

fn differs(server: &str, pins: &PinnedServer, h: &Handshake) -> Option<Observed> {
    if pins.profiles.values().any(|p| h.matches(p)) {
        return None;
    }
    let (profile, pin) = nearest(pins, h)?;
    let pinned_capabilities = pin.client_capabilities.to_value();
    let difference = capability_difference(&pinned_capabilities, &h.capabilities);
    let era_changed = !h.same_era(pin);
    let pinned_era = format!(
        "{} {}",
        if is_modern(&pin.protocol_version) {
            "server/discover"
        } else {
            "initialize"
        },
        pin.protocol_version
    );
    let mut what = Vec::new();
    if !difference.is_empty() {
        what.push(format!(
            "capabilities {} (differing at {})",
            compact(&h.capabilities),
            difference.join(", ")
        ));
    }
    if era_changed {
        what.push(format!(
            "over {} where the lock pinned {pinned_era}",
            h.era()
        ));
    }
    let message = format!(
        "{server} [{profile}]: {} last sent {}; pinned under {} over {pinned_era} (run `mcp-lock update {server}` to pin it)",
        h.host_shown(),
        what.join(", "),
        compact(&pinned_capabilities),
    );
    Some(Observed {
        server: server.to_string(),
        profile: profile.clone(),
        client_info: h.client_info.clone(),
        path: h.path.clone(),
        protocol_version: h.agreed_version.clone().or(h.requested_version.clone()),
        capabilities: h.capabilities.clone(),
        pinned_protocol_version: pin.protocol_version.clone(),
        pinned_capabilities,
        difference,
        era_changed,
        at: h.at.clone(),
        message: crate::base::text::escape_for_terminal(&message),
    })
}

/// A JSON value on one line, cut at 200 characters.
fn compact(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 200 {
        let cut: String = text.chars().take(200).collect();
        format!("{cut}…")
    } else {
        text
    }
}

/// The handshakes `update` lists a server's profile with instead of the profile's
/// own values: for each pinned profile, the newest recorded handshake judged under it
/// that differs from what the lock pinned. (server, profile) → handshake.
pub fn to_pin(lock: &Lockfile, seen: &[Handshake]) -> Vec<(String, String, Handshake)> {
    let mut out: Vec<(String, String, Handshake)> = Vec::new();
    for h in seen {
        let Some(pins) = lock.servers.get(&h.server) else {
            continue;
        };
        if pins.profiles.values().any(|p| h.matches(p)) {
            continue;
        }
        let Some((profile, _)) = nearest(pins, h) else {
            continue;
        };
        if h.version_to_ask()
            .is_none_or(|v| !crate::servers::client::PROTOCOL_VERSIONS.contains(&v.as_str()))
        {
            continue;
        }
        match out
            .iter_mut()
            .find(|(s, p, _)| *s == h.server && p == profile)
        {
            Some(slot) if slot.2.at < h.at => slot.2 = h.clone(),
            Some(_) => {}
            None => out.push((h.server.clone(), profile.clone(), h.clone())),
        }
    }
    out
}

/// A handshake as JSON for a test or a report (the file's entry).
pub fn to_json(h: &Handshake) -> Value {
    serde_json::to_value(h).unwrap_or_else(|_| json!(null))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(server: &str, host: &str, at: &str) -> Handshake {
        Handshake {
            server: server.into(),
            host: host.into(),
            client_info: json!({"name": host, "version": "1"}),
            path: "initialize".into(),
            requested_version: Some("2025-11-25".into()),
            agreed_version: Some("2025-11-25".into()),
            capabilities: json!({"roots": {}}),
            roots_declared: true,
            roots_answer: None,
            profile: Some("bare".into()),
            matched: false,
            at: at.into(),
        }
    }

    #[test]
    fn the_last_handshake_per_server_and_host_is_kept_and_the_newest_of_too_many() {
        let dir = tempfile::tempdir().unwrap();
        record(dir.path(), &seen("a", "h", "2026-01-01T00:00:00.000Z")).unwrap();
        let mut later = seen("a", "h", "2026-01-02T00:00:00.000Z");
        later.capabilities = json!({});
        record(dir.path(), &later).unwrap();
        let all = read(dir.path()).unwrap();
        assert_eq!(all, vec![later]);
        for i in 0..MAX_ENTRIES + 5 {
            record(
                dir.path(),
                &seen(
                    "s",
                    &format!("h{i:03}"),
                    &format!("2026-02-01T00:00:{:02}.{i:03}Z", i % 60),
                ),
            )
            .unwrap();
        }
        let all = read(dir.path()).unwrap();
        assert_eq!(all.len(), MAX_ENTRIES);
        assert!(
            !all.iter().any(|h| h.server == "a"),
            "the oldest went first"
        );
    }

    #[test]
    fn a_corrupt_or_symlinked_state_file_is_ignored_and_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".mcp-lock")).unwrap();
        std::fs::write(path_in(dir.path()), b"{not json").unwrap();
        assert!(read(dir.path()).unwrap_err().contains("does not read"));
        // A corrupt file is replaced by the next record.
        record(dir.path(), &seen("a", "h", "t")).unwrap();
        assert_eq!(read(dir.path()).unwrap().len(), 1);

        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("victim");
        std::fs::write(&target, b"keep").unwrap();
        std::fs::remove_file(path_in(dir.path())).unwrap();
        std::os::unix::fs::symlink(&target, path_in(dir.path())).unwrap();
        assert!(read(dir.path()).unwrap_err().contains("symlink"));
        assert!(record(dir.path(), &seen("a", "h", "t")).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");

        std::fs::remove_file(path_in(dir.path())).unwrap();
        let big = vec![b' '; MAX_BYTES as usize + 1];
        std::fs::write(path_in(dir.path()), big).unwrap();
        assert!(read(dir.path()).unwrap_err().contains("larger than"));
    }

    #[test]
    fn a_state_directory_that_is_a_symlink_is_neither_read_nor_written() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join(".mcp-lock")).unwrap();
        assert!(record(dir.path(), &seen("a", "h", "t")).is_err());
        assert!(!outside.path().join(FILE_NAME).exists());
        std::fs::write(outside.path().join(FILE_NAME), b"{}").unwrap();
        assert!(read(dir.path()).unwrap_err().contains("symlink"));
    }

    #[test]
    fn the_roots_answer_is_kept_as_a_shape_without_paths() {
        let shape = RootsShape::of(
            &json!({"roots": [{"uri": "file:///home/x"}, {"uri": "file:///y", "name": "y"}]}),
        )
        .unwrap();
        assert_eq!(
            shape,
            RootsShape {
                count: 2,
                named: false,
                schemes: vec!["file".into()]
            }
        );
        assert!(RootsShape::of(&json!({"tools": []})).is_none());
    }
}
