//! SessionStart's reuse of an earlier start's verification (`.mcp-lock/hook-reuse.json`
//! in the project): a server whose inputs did not change since it was last verified is
//! not started again; its standing is taken from the last start.
//!
//! What a server's verification depends on is keyed, per server: mcp-lock's version,
//! the lock's bytes (sha256), the lock's companion closures file, the policy file, the
//! config files that define the project's servers (and, for the user's own servers,
//! the servers part of `~/.claude.json`), the Claude Code settings files, the entry as
//! it resolves (its variables expanded), and its launch identity: the exact package
//! version the entry launches (npm, PyPI), an OCI image's digest, or the sha256 of the
//! script or binary it runs. A server without a launch identity that pins what runs is
//! verified at every start: a remote server (its URL can serve anything tomorrow), a
//! package launched by tag, range or none (`npx pkg`, `pkg@latest`), an OCI image by
//! tag, a launch mcp-lock does not recognise. A result older than [`MAX_AGE`] is not
//! reused either.
//!
//! The file lives in the project, which anyone who can commit to it can write: each
//! entry is sealed with an HMAC under a key of the user's own (in the user's cache
//! directory, never in the project), over its key material and its result, so a
//! committed or edited entry is never reused, and the key material (which includes
//! the entry's expanded variables) cannot be guessed back from the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ring::hmac;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The file, in the project's `.mcp-lock/` directory.
pub const FILE: &str = "hook-reuse.json";
/// The user's key, in the hook's records directory.
pub const KEY_FILE: &str = "reuse.key";
/// How long a verification is reused at most.
pub const MAX_AGE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);
/// The largest reuse file read.
const MAX_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    version: u32,
    servers: BTreeMap<String, Sealed>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Sealed {
    /// Seconds since the epoch when it was verified.
    made: u64,
    /// The [`ServerRecord`], as JSON text (sealed as these bytes).
    record: String,
    /// HMAC-SHA256 (hex) of the key material's digest, `made` and `record`.
    tag: String,
}

const VERSION: u32 = 1;

/// The reuse file of one project, with the user's key.
pub struct Reuse {
    key: hmac::Key,
    path: PathBuf,
    root: PathBuf,
    stored: Stored,
    changed: bool,
}

/// Builds the key material of one server, part by part (each part length-prefixed,
/// so two parts never run into one another).
#[derive(Clone, Default)]
pub struct Material(Sha256);

impl Material {
    pub fn new() -> Self {
        let mut m = Material(Sha256::new());
        m.part(env!("CARGO_PKG_VERSION").as_bytes());
        m
    }

    pub fn part(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
        self
    }

    /// A file's bytes (or that it is absent, or unreadable).
    pub fn file(&mut self, path: &Path) -> &mut Self {
        match std::fs::read(path) {
            Ok(bytes) => self.part(b"file").part(&Sha256::digest(&bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.part(b"absent"),
            Err(_) => self.part(b"unreadable"),
        }
    }

    fn digest(&self) -> [u8; 32] {
        self.0.clone().finalize().into()
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What a seal covers: the key material's digest, when it was made, the result.
fn sealed_bytes(material: &[u8; 32], made: u64, record: &str) -> Vec<u8> {
    let mut data = Vec::with_capacity(40 + record.len());
    data.extend_from_slice(material);
    data.extend_from_slice(&made.to_le_bytes());
    data.extend_from_slice(record.as_bytes());
    data
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

impl Reuse {
    /// The reuse file of `project` and the user's key from `records` (made when
    /// missing). `None` when the key cannot be read or made: nothing is reused then.
    pub fn open(project: &Path, records: &Path) -> Option<Reuse> {
        let key = user_key(records)?;
        let dir = project.join(".mcp-lock");
        let path = dir.join(FILE);
        let stored = read(&path).unwrap_or_default();
        Some(Reuse {
            key: hmac::Key::new(hmac::HMAC_SHA256, &key),
            path,
            root: project.to_path_buf(),
            stored,
            changed: false,
        })
    }

    /// What was kept for `id` (a server's standing, a lock's server names) if it was
    /// sealed under this key material, by this user, within [`MAX_AGE`].
    pub fn get<T: serde::de::DeserializeOwned>(&self, id: &str, material: &Material) -> Option<T> {
        let sealed = self.stored.servers.get(id)?;
        let age = now().checked_sub(sealed.made)?;
        if age > MAX_AGE.as_secs() {
            return None;
        }
        let tag = unhex(&sealed.tag)?;
        // Compared in constant time.
        hmac::verify(
            &self.key,
            &sealed_bytes(&material.digest(), sealed.made, &sealed.record),
            &tag,
        )
        .ok()?;
        serde_json::from_str(&sealed.record).ok()
    }

    /// Keeps `record` for `id` under this key material.
    pub fn put<T: Serialize>(&mut self, id: &str, material: &Material, record: &T) {
        let made = now();
        let text = serde_json::to_string(record).expect("a record serializes");
        let tag = hmac::sign(&self.key, &sealed_bytes(&material.digest(), made, &text));
        self.stored.servers.insert(
            id.to_string(),
            Sealed {
                made,
                record: text,
                tag: hex(tag.as_ref()),
            },
        );
        self.changed = true;
    }

    /// Forgets `id` (a server verified at every start).
    pub fn forget(&mut self, id: &str) {
        self.changed |= self.stored.servers.remove(id).is_some();
    }

    /// Keeps only the servers of `ids` (what the project still has).
    pub fn retain(&mut self, ids: &[String]) {
        let before = self.stored.servers.len();
        self.stored.servers.retain(|id, _| ids.contains(id));
        self.changed |= self.stored.servers.len() != before;
    }

    /// Writes the file whole (a temporary file renamed over it) in `.mcp-lock/`, which
    /// no symlink may lead out of the project; when nothing changed, nothing is
    /// written. A failure to write only costs the next start its reuse.
    pub fn save(mut self) -> Result<(), String> {
        if !self.changed {
            return Ok(());
        }
        self.stored.version = VERSION;
        let dir = crate::base::files::parent_of(&self.path);
        crate::base::files::create_dir_within(&dir, &self.root, 0o755)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let bytes = serde_json::to_vec(&self.stored).expect("reuse serializes");
        crate::base::files::replace(&self.path, &self.root, &bytes, 0o644)
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }
}

fn read(path: &Path) -> Option<Stored> {
    use std::io::Read as _;
    let (file, _) = crate::base::files::open_regular(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MAX_BYTES {
        return None;
    }
    serde_json::from_slice::<Stored>(&bytes)
        .ok()
        .filter(|s| s.version == VERSION)
}

/// The user's 32-byte key, made (random, mode 0600) the first time.
fn user_key(records: &Path) -> Option<Vec<u8>> {
    use ring::rand::SecureRandom as _;
    let path = records.join(KEY_FILE);
    if let Ok((mut file, _)) = crate::base::files::open_regular(&path) {
        use std::io::Read as _;
        let mut key = Vec::new();
        if (&mut file).take(65).read_to_end(&mut key).is_ok() && key.len() == 32 {
            return Some(key);
        }
    }
    let mut key = vec![0u8; 32];
    ring::rand::SystemRandom::new().fill(&mut key).ok()?;
    let root = crate::base::files::parent_of(records);
    crate::base::files::create_dir_within(records, &root, 0o700).ok()?;
    crate::base::files::replace(&path, records, &key, 0o600).ok()?;
    Some(key)
}

/// What runs when `command args` is launched, when that pins what runs: an npm or
/// PyPI package at an exact version, or an OCI image by digest. `None`: what runs can
/// change without the entry changing (a tag, a range, no version, a launch not
/// recognised, or a script: the files it imports are not in any key, so a tool
/// defined in a sibling module could change under a reused verdict): the server is
/// verified at every start.
pub fn launch_identity(command: &str, args: &[String], cwd: &Path) -> Option<String> {
    use crate::servers::package::Target;
    let full = |p: &str| {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            cwd.join(p)
        }
    };
    let is_file = |p: &str| full(p).is_file();
    let recognised = crate::servers::package::recognise(command, args, &is_file);
    match recognised.target {
        Target::Npm {
            name,
            spec: Some(spec),
        } if exact_version(&spec, 3) => Some(format!("npm {name}@{spec}")),
        Target::Pypi {
            name,
            spec: Some(spec),
        } => {
            // The spec as written after the name: `==1.2` or uv's `@1.2`.
            let version = spec
                .strip_prefix("==")
                .or_else(|| spec.strip_prefix('@'))
                .unwrap_or(&spec);
            exact_version(version, 1).then(|| format!("pypi {name}=={version}"))
        }
        Target::Oci { reference } => {
            crate::servers::package::oci_digest(&reference).map(|d| format!("oci {d}"))
        }
        _ => None,
    }
}

/// Whether `spec` names one version: numeric dot-separated parts (at least
/// `min_parts`), then an optional pre-release or build suffix.
fn exact_version(spec: &str, min_parts: usize) -> bool {
    let spec = spec.strip_prefix("==").unwrap_or(spec);
    let core = spec.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() >= min_parts
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::super::ServerRecord;
    use super::*;

    fn record(why: &str) -> ServerRecord {
        ServerRecord::unpinned(why, false)
    }

    #[test]
    fn a_sealed_result_is_reused_only_under_the_same_key_material_and_user_key() {
        let project = tempfile::tempdir().unwrap();
        let records = tempfile::tempdir().unwrap();
        let mut material = Material::new();
        material.part(b"lock-a");
        let mut reuse = Reuse::open(project.path(), records.path()).unwrap();
        reuse.put("project:fx", &material, &record("fx"));
        reuse.save().unwrap();

        let reuse = Reuse::open(project.path(), records.path()).unwrap();
        assert_eq!(reuse.get("project:fx", &material), Some(record("fx")));
        let mut other = Material::new();
        other.part(b"lock-b");
        assert_eq!(
            reuse.get::<ServerRecord>("project:fx", &other),
            None,
            "another lock"
        );
        assert_eq!(reuse.get::<ServerRecord>("project:gx", &material), None);

        // Another user's key (or none of theirs): the file is not trusted.
        let stranger = tempfile::tempdir().unwrap();
        let theirs = Reuse::open(project.path(), stranger.path()).unwrap();
        assert_eq!(theirs.get::<ServerRecord>("project:fx", &material), None);

        // An edited result is not reused.
        let path = project.path().join(".mcp-lock").join(FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        let edited = text.replace("is not pinned", "is pinned!!!!");
        assert_ne!(text, edited);
        std::fs::write(&path, edited).unwrap();
        let reuse = Reuse::open(project.path(), records.path()).unwrap();
        assert_eq!(reuse.get::<ServerRecord>("project:fx", &material), None);
    }

    #[cfg(unix)]
    #[test]
    fn the_reuse_file_is_never_written_through_a_link_leaving_the_project() {
        let project = tempfile::tempdir().unwrap();
        let records = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), project.path().join(".mcp-lock")).unwrap();
        let mut reuse = Reuse::open(project.path(), records.path()).unwrap();
        reuse.put("project:fx", &Material::new(), &record("fx"));
        assert!(reuse.save().is_err());
        assert!(!outside.path().join(FILE).exists());
    }

    #[test]
    fn only_a_launch_that_pins_what_runs_has_an_identity() {
        let dir = tempfile::tempdir().unwrap();
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            launch_identity("npx", &args(&["-y", "tiny-mcp@1.2.3"]), dir.path()).as_deref(),
            Some("npm tiny-mcp@1.2.3")
        );
        for floating in [
            "tiny-mcp",
            "tiny-mcp@latest",
            "tiny-mcp@^1.2.0",
            "tiny-mcp@1.x",
        ] {
            assert_eq!(
                launch_identity("npx", &args(&["-y", floating]), dir.path()),
                None,
                "{floating}"
            );
        }
        // A script imports what it likes from beside it: never reused.
        std::fs::write(dir.path().join("server.js"), "require('./tools')").unwrap();
        assert_eq!(
            launch_identity("node", &args(&["server.js"]), dir.path()),
            None
        );
        assert_eq!(
            launch_identity("some-binary-on-path", &[], dir.path()),
            None
        );
    }
}
