//! The token cache: one JSON file per (canonical server URL, issuer) under the user's
//! config directory (`$XDG_CONFIG_HOME/mcp-lock/oauth/`, else `~/.config/mcp-lock/oauth/`).
//! The directory is 0700 and every file 0600; files are replaced atomically under one
//! `flock`, held only while a file is read or written (never across a network call, so
//! a hung token endpoint stalls no other run). A refresh is saved only over the record
//! it was made from; see `auth::cached_bearer`.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What a login left behind for one server and issuer. Never printed or logged.
#[derive(Clone, Serialize, Deserialize)]
pub struct TokenRecord {
    /// The canonical server URL the token is for (the RFC 8707 resource).
    pub resource: String,
    pub issuer: String,
    pub token_endpoint: String,
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Unix seconds; `None` when the server gave no lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// When the login that made it happened (Unix seconds; kept through refreshes),
    /// so the latest of a server's records can be told; `None` in older caches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub obtained_at: Option<u64>,
    /// How the client authenticates at the token endpoint (`client_secret_basic`,
    /// `client_secret_post` or `none`), for the refresh; `None` in older caches,
    /// which sent a secret in the body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth: Option<String>,
    /// Scope the server asked for (403 `insufficient_scope`) during a session that
    /// could not log in again itself (the guard); the next login asks for it too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wanted_scope: Option<String>,
    /// The resource indicator sent (RFC 8707), exactly as the protected resource
    /// metadata published it, when that differs from `resource`; a refresh sends it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_indicator: Option<String>,
}

/// The cache directory.
#[derive(Debug, Clone)]
pub struct TokenStore {
    dir: PathBuf,
}

/// Held while the cache is read and written; released on drop.
pub struct StoreLock {
    _file: File,
}

impl TokenStore {
    /// The cache under `$XDG_CONFIG_HOME` (or `$HOME/.config`) as `lookup` gives them.
    pub fn from_env(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let base = lookup("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                lookup("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".config"))
            })
            .ok_or("neither XDG_CONFIG_HOME nor HOME is set: no place for the token cache")?;
        Ok(TokenStore {
            dir: base.join("mcp-lock").join("oauth"),
        })
    }

    pub fn at(dir: PathBuf) -> Self {
        TokenStore { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file for one server and issuer.
    pub fn path_for(&self, resource: &str, issuer: &str) -> PathBuf {
        let digest = Sha256::digest(format!("{resource}\n{issuer}").as_bytes());
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{hex}.json"))
    }

    /// Creates the directory if need be and makes it private, returning its real
    /// path. A symlinked directory leading out of mcp-lock's config directory (its
    /// parent) is refused, and the mode is set on the directory itself.
    fn ensure_dir(&self) -> Result<PathBuf, String> {
        let root = crate::base::files::parent_of(&self.dir);
        let real = crate::base::files::create_dir_within(&self.dir, &root, 0o700)
            .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        crate::base::files::open_dir(&real)
            .and_then(|dir| dir.set_permissions(std::fs::Permissions::from_mode(0o700)))
            .map_err(|e| format!("cannot make {} private: {e}", self.dir.display()))?;
        Ok(real)
    }

    /// Fails now, not after a login, when records cannot be written: the directory is
    /// created and a file tried in it.
    pub fn check_writable(&self) -> Result<(), String> {
        let real = self.ensure_dir()?;
        tempfile::Builder::new()
            .prefix(".check-")
            .tempfile_in(&real)
            .map(drop)
            .map_err(|e| {
                format!(
                    "cannot write the token cache in {}: {e}; make it writable or set XDG_CONFIG_HOME to a directory that is",
                    self.dir.display()
                )
            })
    }

    /// Takes the cache's lock, creating the directory if need be; `None` while
    /// another run holds it.
    pub fn try_lock(&self) -> Result<Option<StoreLock>, String> {
        let path = self.ensure_dir()?.join(".lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        // SAFETY: flock on a descriptor this function owns; LOCK_NB never blocks.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(Some(StoreLock { _file: file }));
        }
        let error = std::io::Error::last_os_error();
        if error.kind() == std::io::ErrorKind::WouldBlock {
            return Ok(None);
        }
        Err(format!("cannot lock {}: {error}", path.display()))
    }

    /// Takes the cache's lock, waiting for as long as another run holds it (which is
    /// only while it reads or writes a file).
    pub fn lock(&self) -> Result<StoreLock, String> {
        loop {
            if let Some(held) = self.try_lock()? {
                return Ok(held);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The record in `path` as the cache holds it now, if it is still for `resource`.
    pub fn read(&self, path: &Path, resource: &str, _lock: &StoreLock) -> Option<TokenRecord> {
        let text = std::fs::read_to_string(path).ok()?;
        let record: TokenRecord = serde_json::from_str(&text).ok()?;
        (record.resource == resource).then_some(record)
    }

    /// Every record for `resource`, whatever the issuer, with its file.
    pub fn find(&self, resource: &str, _lock: &StoreLock) -> Vec<(PathBuf, TokenRecord)> {
        self.scan(resource)
    }

    fn scan(&self, resource: &str) -> Vec<(PathBuf, TokenRecord)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut found: Vec<(PathBuf, TokenRecord)> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .filter_map(|p| {
                let text = std::fs::read_to_string(&p).ok()?;
                let record: TokenRecord = serde_json::from_str(&text).ok()?;
                (record.resource == resource).then_some((p, record))
            })
            .collect();
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found
    }

    /// Like [`Self::find`] without the lock: files are replaced atomically, so each is
    /// read whole, though it may be replaced just after.
    pub fn find_unlocked(&self, resource: &str) -> Vec<(PathBuf, TokenRecord)> {
        self.scan(resource)
    }

    /// Writes a record atomically (a 0600 temporary file renamed over the old one).
    pub fn save(&self, record: &TokenRecord, lock: &StoreLock) -> Result<PathBuf, String> {
        let path = self.path_for(&record.resource, &record.issuer);
        self.save_to(&path, record, lock)?;
        Ok(path)
    }

    /// Writes a record over the file it was read from, atomically.
    pub fn save_to(
        &self,
        path: &Path,
        record: &TokenRecord,
        _lock: &StoreLock,
    ) -> Result<(), String> {
        let real = self.ensure_dir()?;
        let text = serde_json::to_string_pretty(record).expect("a record serializes");
        let name = path.file_name().unwrap_or_default();
        crate::base::files::replace(&real.join(name), &real, text.as_bytes(), 0o600)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(())
    }

    /// Removes every record for `resource`; returns how many there were.
    pub fn remove(&self, resource: &str, lock: &StoreLock) -> Result<usize, String> {
        let found = self.find(resource, lock);
        for (path, _) in &found {
            std::fs::remove_file(path)
                .map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
        }
        Ok(found.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(resource: &str) -> TokenRecord {
        TokenRecord {
            resource: resource.into(),
            issuer: "https://as.example/".into(),
            token_endpoint: "https://as.example/token".into(),
            client_id: "c".into(),
            client_secret: None,
            access_token: "at".into(),
            refresh_token: Some("rt".into()),
            expires_at: Some(1),
            scope: None,
            obtained_at: None,
            token_endpoint_auth: None,
            wanted_scope: None,
            resource_indicator: None,
        }
    }

    #[test]
    fn records_are_private_files_in_a_private_directory_and_found_by_resource() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TokenStore::at(tmp.path().join("oauth"));
        let lock = store.lock().unwrap();
        let path = store.save(&record("https://a.example/mcp"), &lock).unwrap();
        store.save(&record("https://b.example/mcp"), &lock).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(store.dir()), 0o700);
        let found = store.find("https://a.example/mcp", &lock);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, path);
        assert_eq!(store.remove("https://a.example/mcp", &lock).unwrap(), 1);
        assert!(store.find("https://a.example/mcp", &lock).is_empty());
        assert_eq!(store.find("https://b.example/mcp", &lock).len(), 1);
    }

    #[test]
    fn a_cache_directory_symlinked_out_of_the_config_directory_is_neither_used_nor_chmodded() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir(tmp.path().join("mcp-lock")).unwrap();
        std::os::unix::fs::symlink("../elsewhere", tmp.path().join("mcp-lock/oauth")).unwrap();
        let store = TokenStore::at(tmp.path().join("mcp-lock/oauth"));
        let err = store.lock().err().expect("refused");
        assert!(err.contains("outside"), "{err}");
        let mode = std::fs::metadata(&elsewhere).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    }

    #[test]
    fn a_symlinked_lock_or_token_file_in_the_cache_is_not_written_through() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TokenStore::at(tmp.path().join("oauth"));
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "keep\n").unwrap();
        let lock = store.lock().unwrap();
        let token = store.path_for("https://a.example/mcp", "https://as.example/");
        std::os::unix::fs::symlink(&victim, &token).unwrap();
        let err = store
            .save(&record("https://a.example/mcp"), &lock)
            .unwrap_err();
        assert!(err.contains("outside"), "{err}");
        drop(lock);
        std::fs::remove_file(store.dir().join(".lock")).unwrap();
        std::os::unix::fs::symlink(&victim, store.dir().join(".lock")).unwrap();
        assert!(store.lock().is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n");
    }
}
