//! Creating and replacing the files mcp-lock writes (the lock, wrap's backups and
//! sidecars, the user's locks, the token cache, the guard's audit log) so that a
//! symlink a cloned repository ships cannot send the bytes anywhere else.
//!
//! Every write names the directory its file belongs in: the project for the
//! project's files, the user's config directory for the user's. Symlinks are followed
//! to find where the write lands, and it is refused when that is outside that
//! directory or when a link is dangling: a link to a file in the project (a lock
//! shared between checkouts) is written through, a link to `~/.bashrc` is not. The
//! write happens in the directory found, opened once: a temporary file created there
//! with `O_EXCL | O_NOFOLLOW`, then renamed over the file's name in it (a rename
//! replaces a link, it never follows one).
//!
//! [`replace_together`] writes several files as one step, with a journal that
//! [`finish_interrupted`] completes after a crash.

use std::ffi::{CString, OsStr};
use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

mod read;
mod together;

pub use read::{
    NotRead, open_regular, read_regular, read_regular_text, too_large, too_large_error,
};
pub use together::{Place, finish_interrupted, replace_together};

/// Why a write was refused. The caller names the file; this says what is wrong
/// with where it would land.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error(
        "it is a symlink to {}, which does not exist; mcp-lock creates no file through a symlink: create the file or remove the link",
        target.display()
    )]
    Dangling { target: PathBuf },
    #[error(
        "it is a symlink to {}, outside the directory it belongs in ({}): remove the link",
        target.display(),
        root.display()
    )]
    Outside { target: PathBuf, root: PathBuf },
    #[error(
        "it is in {} through {via}, outside the directory it belongs in ({}): remove the link",
        real.display(),
        root.display()
    )]
    DirectoryOutside {
        real: PathBuf,
        root: PathBuf,
        /// The link that leads out, as a phrase ("the symlink PATH").
        via: String,
    },
    #[error(
        "it is a symlink to {}, which is not a regular file: remove the link",
        target.display()
    )]
    NotAFile { target: PathBuf },
    #[error(
        "it is a symlink to {}; mcp-lock appends to no file through a symlink: remove the link",
        target.display()
    )]
    Appended { target: PathBuf },
}

/// The refusal for a file opened `O_NOFOLLOW` to append to that is a symlink.
pub fn no_append_through(link: &Path) -> io::Error {
    let target = std::fs::read_link(link).unwrap_or_default();
    refuse(Refusal::Appended { target })
}

impl Refusal {
    /// The refusal an error from this module carries, if it is one.
    pub fn of(error: &io::Error) -> Option<&Refusal> {
        error.get_ref().and_then(|e| e.downcast_ref())
    }
}

fn refuse(refusal: Refusal) -> io::Error {
    io::Error::other(refusal)
}

/// Where a write to `path` lands: the file at the end of its symlinks, named in its
/// real directory. An error holding a [`Refusal`] when that directory is not `root`
/// or inside it (after its own symlinks), or when `path` is a symlink whose end does
/// not exist or is not a regular file. `root` must exist.
pub fn landing(path: &Path, root: &Path) -> io::Result<PathBuf> {
    let root = std::fs::canonicalize(root)?;
    let (end, linked) = follow_links(path)?;
    let Some(name) = end.file_name() else {
        return Err(refuse(Refusal::NotAFile {
            target: normalize(&end),
        }));
    };
    let dir = parent_of(&end);
    let real_dir = match std::fs::canonicalize(&dir) {
        Ok(real) => real,
        Err(e) if linked && e.kind() == io::ErrorKind::NotFound => {
            return Err(refuse(Refusal::Dangling {
                target: normalize(&end),
            }));
        }
        Err(e) => return Err(e),
    };
    let real = real_dir.join(name);
    if !real_dir.starts_with(&root) {
        return Err(refuse(if linked {
            Refusal::Outside { target: real, root }
        } else {
            Refusal::DirectoryOutside {
                via: via(&dir),
                real: real_dir,
                root,
            }
        }));
    }
    if linked {
        match std::fs::symlink_metadata(&real) {
            Ok(meta) if meta.is_file() => {}
            Ok(_) => return Err(refuse(Refusal::NotAFile { target: real })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(refuse(Refusal::Dangling { target: real }));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(real)
}

/// Writes a file whole or not at all, where [`landing`] says it lands: a temporary
/// file beside it, synced, renamed over it, the directory synced. `mode` is the
/// file's permissions.
pub fn replace(path: &Path, root: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let temp = Temporary::beside(path, root)?;
    temp.file().write_all(bytes)?;
    temp.persist(mode)
}

/// Creates `dir` (`root` or inside it) and its missing parents with `mode`, and
/// returns its real path. Refused when a part of it that already exists is a
/// symlink that dangles or leads out of `root`: nothing is created there then.
pub fn create_dir_within(dir: &Path, root: &Path, mode: u32) -> io::Result<PathBuf> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(mode)
        .create(root)?;
    let root = std::fs::canonicalize(root)?;
    let inside = |part: &Path| -> io::Result<PathBuf> {
        let real = match std::fs::canonicalize(part) {
            Ok(real) => real,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let (end, _) = follow_links(part)?;
                return Err(refuse(Refusal::Dangling {
                    target: normalize(&end),
                }));
            }
            Err(e) => return Err(e),
        };
        if !real.starts_with(&root) {
            return Err(refuse(Refusal::DirectoryOutside {
                via: via(part),
                real,
                root: root.clone(),
            }));
        }
        Ok(real)
    };
    // What exists already is checked before anything is created through it.
    let mut existing = dir;
    while std::fs::symlink_metadata(existing).is_err() {
        match existing.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => existing = parent,
            _ => {
                existing = Path::new(".");
                break;
            }
        }
    }
    inside(existing)?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(mode)
        .create(dir)?;
    inside(dir)
}

/// Opens `dir`, which must be a real directory (no symlink at its end), to change
/// its mode or lock it without following a link swapped in.
pub fn open_dir(dir: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir)
}

/// A new temporary file in the directory a write to a path lands in, renamed over
/// the file by [`Temporary::persist`], removed if dropped before.
pub struct Temporary {
    dir: File,
    target: PathBuf,
    name: CString,
    temp: CString,
    file: File,
    persisted: bool,
}

impl Temporary {
    /// A temporary file `.NAME.XXXXXX.tmp` beside where a write to `path` lands (see
    /// [`landing`]), private until [`Temporary::persist`] gives it its mode.
    pub fn beside(path: &Path, root: &Path) -> io::Result<Self> {
        let target = landing(path, root)?;
        let dir = open_dir(&parent_of(&target))?;
        let name = target.file_name().unwrap_or_default().to_owned();
        let name = c_name(&name)?;
        // Another file already there (a writer's, or one planted) is never opened.
        for _ in 0..100 {
            let mut temp = b".".to_vec();
            temp.extend_from_slice(name.as_bytes());
            temp.push(b'.');
            temp.extend_from_slice(random_part().as_bytes());
            temp.extend_from_slice(b".tmp");
            let temp = c_name(OsStr::from_bytes(&temp))?;
            // SAFETY: openat on a directory descriptor this function owns, with a
            // NUL-terminated name; the descriptor returned is owned by the File.
            let fd = unsafe {
                libc::openat(
                    dir.as_raw_fd(),
                    temp.as_ptr(),
                    libc::O_WRONLY
                        | libc::O_CREAT
                        | libc::O_EXCL
                        | libc::O_NOFOLLOW
                        | libc::O_CLOEXEC,
                    0o600 as libc::c_uint,
                )
            };
            if fd >= 0 {
                // SAFETY: `fd` was just opened and is owned by nothing else.
                let file = unsafe { File::from_raw_fd(fd) };
                return Ok(Temporary {
                    dir,
                    target,
                    name,
                    temp,
                    file,
                    persisted: false,
                });
            }
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::AlreadyExists {
                return Err(error);
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("no free temporary file name beside {}", target.display()),
        ))
    }

    pub fn file(&self) -> &File {
        &self.file
    }

    /// The file this one replaces, by its real path.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Gives the file `mode`, syncs it, renames it over the target and syncs the
    /// directory.
    pub fn persist(mut self, mode: u32) -> io::Result<()> {
        self.complete(mode)?;
        self.rename()?;
        self.dir.sync_all()
    }

    /// Gives the file `mode` and syncs it: its content is whole on disk.
    fn complete(&self, mode: u32) -> io::Result<()> {
        self.file
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
        self.file.sync_all()
    }

    /// The temporary file's real path.
    fn path(&self) -> PathBuf {
        parent_of(&self.target).join(OsStr::from_bytes(self.temp.as_bytes()))
    }

    /// Renames the file over the target (the directory is not synced).
    fn rename(&mut self) -> io::Result<()> {
        rename_in(&self.dir, &self.temp, &self.name)?;
        self.persisted = true;
        Ok(())
    }
}

/// Renames `from` to `to` within the directory `dir`; a link named `to` is
/// replaced, never followed.
fn rename_in(dir: &File, from: &CString, to: &CString) -> io::Result<()> {
    let fd = dir.as_raw_fd();
    // SAFETY: renameat within one directory descriptor, with NUL-terminated names.
    if unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if !self.persisted {
            // SAFETY: unlinkat of the temporary name in the directory this value owns.
            unsafe {
                libc::unlinkat(self.dir.as_raw_fd(), self.temp.as_ptr(), 0);
            }
        }
    }
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// Random characters in a temporary file's name: `.NAME.XXXXXX.tmp`.
const TEMP_RANDOM: usize = 6;

fn random_part() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    const ALPHABET: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static COUNT: AtomicU64 = AtomicU64::new(0);
    // Randomly keyed per process; the count tells two calls apart.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    let mut n = hasher.finish();
    (0..TEMP_RANDOM)
        .map(|_| {
            let c = ALPHABET[(n % 62) as usize] as char;
            n /= 62;
            c
        })
        .collect()
}

/// Removes `.NAME.XXXXXX.tmp` files beside `target` (a real path, as [`landing`]
/// gives): what a writer killed before its rename leaves. Only that exact pattern,
/// only regular files; a file that cannot be removed is left for the next run. Call
/// it holding a lock every writer of the directory takes.
pub fn remove_stale_temporaries(target: &Path) {
    let Some(name) = target.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(parent_of(target)) else {
        return;
    };
    for entry in entries.flatten() {
        if is_temporary_of(&entry.file_name(), name) && entry.file_type().is_ok_and(|t| t.is_file())
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Whether `file_name` is a temporary file's name for the file `name`:
/// `.NAME.XXXXXX.tmp`.
fn is_temporary_of(file_name: &OsStr, name: &str) -> bool {
    let prefix = format!(".{name}.");
    file_name
        .to_str()
        .and_then(|n| n.strip_prefix(&prefix))
        .and_then(|rest| rest.strip_suffix(".tmp"))
        .is_some_and(|random| {
            random.len() == TEMP_RANDOM && random.bytes().all(|b| b.is_ascii_alphanumeric())
        })
}

/// The directory `path` is named in (`.` for a bare name).
pub fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `.` and `..` resolved by name, without touching the file system.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The end of `path`'s symlinks (relative targets joined to their link's
/// directory), and whether there was any.
fn follow_links(path: &Path) -> io::Result<(PathBuf, bool)> {
    // As many as the kernel follows before ELOOP.
    const MAX_LINKS: usize = 40;
    let mut path = path.to_path_buf();
    for hop in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&path)?;
                path = parent_of(&path).join(target);
            }
            _ => return Ok((path, hop > 0)),
        }
    }
    Err(io::Error::other(format!(
        "{}: too many levels of symbolic links",
        path.display()
    )))
}

/// The last symlink on the way to `dir` (the one nearest the file, most likely the
/// one a checkout brought), as a phrase for a message.
fn via(dir: &Path) -> String {
    dir.ancestors()
        .find(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_symlink()))
        .map(|p| format!("the symlink {}", p.display()))
        .unwrap_or_else(|| "a symlink".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn refusal(result: io::Result<impl std::fmt::Debug>) -> String {
        let error = result.unwrap_err();
        Refusal::of(&error)
            .unwrap_or_else(|| panic!("not a refusal: {error}"))
            .to_string()
    }

    #[test]
    fn links_are_followed_relative_to_their_own_directory_through_a_chain() {
        let dir = tempfile::tempdir().unwrap();
        let d = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(d.join("shared")).unwrap();
        std::fs::write(d.join("shared/team.lock"), "x").unwrap();
        symlink("shared/hop", d.join("mcp.lock")).unwrap();
        symlink("../shared/team.lock", d.join("shared/hop")).unwrap();
        assert_eq!(
            landing(&d.join("mcp.lock"), &d).unwrap(),
            d.join("shared/team.lock")
        );
        assert_eq!(
            landing(&d.join("plain.lock"), &d).unwrap(),
            d.join("plain.lock")
        );
        symlink("loop", d.join("loop")).unwrap();
        let err = landing(&d.join("loop"), &d).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("loop: too many levels of symbolic links")
        );
    }

    #[test]
    fn a_dangling_link_is_refused_even_inside_the_directory_it_belongs_in() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        symlink("team.lock", d.join("mcp.lock")).unwrap();
        symlink("gone/team.lock", d.join("deep.lock")).unwrap();
        for link in ["mcp.lock", "deep.lock"] {
            let why = refusal(replace(&d.join(link), d, b"x", 0o644));
            assert!(why.contains("which does not exist"), "{why}");
        }
        assert!(!d.join("team.lock").exists());
    }

    #[test]
    fn a_link_leading_out_of_the_root_is_refused_and_its_target_kept() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("home/repo")).unwrap();
        std::fs::write(d.join("home/.bashrc"), "export A=1\n").unwrap();
        let repo = d.join("home/repo");
        symlink("../.bashrc", repo.join("mcp.lock")).unwrap();
        let why = refusal(replace(&repo.join("mcp.lock"), &repo, b"$(x)", 0o644));
        assert!(why.contains("outside"), "{why}");
        assert_eq!(
            std::fs::read_to_string(d.join("home/.bashrc")).unwrap(),
            "export A=1\n"
        );
        // Through a symlinked directory too.
        symlink("..", repo.join("up")).unwrap();
        let why = refusal(replace(&repo.join("up/new.json"), &repo, b"x", 0o644));
        assert!(why.contains("through the symlink"), "{why}");
        assert!(!d.join("home/new.json").exists());
        // A link to a directory is no file to replace.
        std::fs::create_dir(repo.join("sub")).unwrap();
        symlink("sub", repo.join("dir.lock")).unwrap();
        let why = refusal(replace(&repo.join("dir.lock"), &repo, b"x", 0o644));
        assert!(why.contains("not a regular file"), "{why}");
    }

    #[test]
    fn a_link_to_a_file_inside_the_root_is_written_through_and_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("shared")).unwrap();
        std::fs::write(d.join("shared/team.lock"), "old").unwrap();
        symlink("shared/team.lock", d.join("mcp.lock")).unwrap();
        replace(&d.join("mcp.lock"), d, b"new", 0o640).unwrap();
        assert!(
            std::fs::symlink_metadata(d.join("mcp.lock"))
                .unwrap()
                .is_symlink()
        );
        assert_eq!(
            std::fs::read_to_string(d.join("shared/team.lock")).unwrap(),
            "new"
        );
        let mode = std::fs::metadata(d.join("shared/team.lock"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640);
        let left: Vec<_> = std::fs::read_dir(d.join("shared")).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
    }

    #[test]
    fn a_directory_is_created_only_where_its_existing_parts_stay_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("home/repo")).unwrap();
        let repo = d.join("home/repo");
        let made = create_dir_within(&repo.join(".mcp-lock/sub"), &repo, 0o700).unwrap();
        assert_eq!(
            made,
            std::fs::canonicalize(repo.join(".mcp-lock/sub")).unwrap()
        );
        symlink("..", repo.join("out")).unwrap();
        let why = refusal(create_dir_within(&repo.join("out/logs"), &repo, 0o700));
        assert!(why.contains("through the symlink"), "{why}");
        assert!(!d.join("home/logs").exists());
        symlink("nowhere", repo.join("dangling")).unwrap();
        let why = refusal(create_dir_within(&repo.join("dangling/x"), &repo, 0o700));
        assert!(why.contains("which does not exist"), "{why}");
    }

    #[test]
    fn only_temporaries_named_like_the_writers_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let lock = d.join("mcp.lock");
        replace(&lock, d, b"old", 0o644).unwrap();
        let kept = [
            ".mcp.lock.notes.tmp",
            ".mcp.lock.AbC12.tmp",
            "mcp.lock.AbC123.tmp",
            ".other.lock.AbC123.tmp",
            ".mcp.lock.AbC123.tmp.keep",
        ];
        for name in kept
            .iter()
            .chain(&[".mcp.lock.AbC123.tmp", ".mcp.lock.zz99ZZ.tmp"])
        {
            std::fs::write(d.join(name), "x").unwrap();
        }
        std::fs::create_dir(d.join(".mcp.lock.dir000.tmp")).unwrap();
        remove_stale_temporaries(&lock);
        let mut left: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut expected: Vec<String> = kept.iter().map(|s| s.to_string()).collect();
        expected.extend([".mcp.lock.dir000.tmp".into(), "mcp.lock".into()]);
        expected.sort();
        assert_eq!(left, expected);
    }
}
