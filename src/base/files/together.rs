//! Replacing several files as one step that a crash cannot leave half done (a
//! client config and the lock pinning what it launches).
//!
//! Each new content is written whole to a temporary file beside its target and
//! synced; then a journal naming each (temporary, target) pair is written, itself
//! atomically; then each temporary is renamed over its target and the journal
//! removed. The journal is the commit point: a run that finds no journal removes the
//! temporaries (the old contents stand), a run that finds one finishes its renames
//! (the new contents stand) — [`finish_interrupted`], called first.

use super::*;

/// A file, and the directory it belongs in: a write to it that would land outside
/// `root` is refused (see [`landing`]).
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    pub path: &'a Path,
    pub root: &'a Path,
}

/// The largest journal read: it holds only file names.
const MAX_JOURNAL_BYTES: u64 = 1024 * 1024;

/// The first line of a journal; the pairs follow, each path ended by a NUL (which no
/// path holds).
const JOURNAL_HEADER: &[u8] = b"mcp-lock journal 1: renames to finish, temporary NUL target NUL\n";

/// Replaces each file with its bytes and mode, all or none. Nothing is written when
/// a file or the journal would land outside its root, or when `journal` exists (an
/// earlier write was interrupted: [`finish_interrupted`] first). An error after the
/// journal is written leaves it for [`finish_interrupted`] to finish. Call it holding
/// the lock every writer of these files takes.
pub fn replace_together(files: &[(Place, &[u8], u32)], journal: Place) -> io::Result<()> {
    stage(files, journal)?.commit()?.finish()
}

/// Finishes a [`replace_together`] of `files` that a crash interrupted, before
/// anything else reads or writes them: when `journal` exists, every rename it names
/// whose temporary is still there is done (the journal was written only once every
/// new content was whole), and the journal removed; then temporaries no journal
/// names are removed (a crash before the journal: the old contents stand).
///
/// Returns the files replaced, `None` when there was no journal. Refused when the
/// journal or a file would land outside its root, or when the journal names a file
/// not in `files` or a temporary not beside its target: such a journal was not
/// written for these files. Call it holding the lock every writer of them takes.
pub fn finish_interrupted(files: &[Place], journal: Place) -> io::Result<Option<Vec<PathBuf>>> {
    let journal_real = landing(journal.path, journal.root)?;
    let targets = files
        .iter()
        .map(|f| landing(f.path, f.root))
        .collect::<io::Result<Vec<_>>>()?;
    let finished = match super::read_regular(&journal_real, MAX_JOURNAL_BYTES) {
        Ok(bytes) => Some(roll_forward(&bytes, &targets, &journal_real)?),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(io::Error::new(
                e.kind(),
                format!("{}: {e}", journal_real.display()),
            ));
        }
    };
    for target in &targets {
        remove_stale_temporaries(target);
    }
    Ok(finished)
}

/// Does the renames a journal names whose temporary is still there, then removes it.
fn roll_forward(bytes: &[u8], targets: &[PathBuf], journal: &Path) -> io::Result<Vec<PathBuf>> {
    let foreign = |why: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} {why}: it was not written for these files; remove it",
                journal.display()
            ),
        )
    };
    let pairs = read_journal(bytes).ok_or_else(|| foreign("is not an mcp-lock journal"))?;
    let mut renames = Vec::new();
    for (temp, target) in pairs {
        if !targets.contains(&target) {
            return Err(foreign(&format!("names {}", target.display())));
        }
        let (Some(temp_name), Some(name)) = (temp.file_name(), target.file_name()) else {
            return Err(foreign("names no file"));
        };
        if temp.parent() != target.parent() || !is_temporary_of(temp_name, &name.to_string_lossy())
        {
            return Err(foreign(&format!("names {}", temp.display())));
        }
        renames.push((c_name(temp_name)?, c_name(name)?, target));
    }
    let mut finished = Vec::new();
    for (temp_name, name, target) in renames {
        let dir = open_dir(&parent_of(&target))?;
        let temp = parent_of(&target).join(OsStr::from_bytes(temp_name.as_bytes()));
        match std::fs::symlink_metadata(&temp) {
            Ok(meta) if meta.is_file() => {}
            // Renamed before the crash.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Ok(_) => return Err(foreign(&format!("names {}", temp.display()))),
            Err(e) => return Err(e),
        }
        rename_in(&dir, &temp_name, &name)?;
        dir.sync_all()?;
        finished.push(target);
    }
    remove_journal(journal)?;
    Ok(finished)
}

/// The (temporary, target) pairs of a journal.
fn read_journal(bytes: &[u8]) -> Option<Vec<(PathBuf, PathBuf)>> {
    let body = bytes.strip_prefix(JOURNAL_HEADER)?;
    let body = body.strip_suffix(b"\0")?;
    let paths: Vec<PathBuf> = body
        .split(|&b| b == 0)
        .map(|p| PathBuf::from(OsStr::from_bytes(p)))
        .collect();
    if !paths.len().is_multiple_of(2) || paths.iter().any(|p| !p.is_absolute()) {
        return None;
    }
    Some(
        paths
            .chunks(2)
            .map(|pair| (pair[0].clone(), pair[1].clone()))
            .collect(),
    )
}

fn remove_journal(journal: &Path) -> io::Result<()> {
    std::fs::remove_file(journal)?;
    open_dir(&parent_of(journal))?.sync_all()
}

/// The new contents, whole and synced in their temporaries; the old ones still in
/// place. Dropped, the temporaries are removed.
struct Staged {
    temps: Vec<Temporary>,
    journal: PathBuf,
    journal_root: PathBuf,
}

/// The journal written: the new contents are committed. Dropped before
/// [`Committed::finish`], what is left is for [`finish_interrupted`].
struct Committed {
    temps: Vec<Temporary>,
    journal: PathBuf,
}

/// Writes every new content to a temporary beside its target, once every landing
/// (the journal's too) has been checked.
fn stage(files: &[(Place, &[u8], u32)], journal: Place) -> io::Result<Staged> {
    let journal_real = landing(journal.path, journal.root)?;
    let mut targets = Vec::new();
    for (place, _, _) in files {
        let target = landing(place.path, place.root)?;
        if targets.contains(&target) || target == journal_real {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is written twice in one step", target.display()),
            ));
        }
        targets.push(target);
    }
    if std::fs::symlink_metadata(&journal_real).is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "{} exists: an earlier write of these files was interrupted and must be finished first",
                journal_real.display()
            ),
        ));
    }
    let mut temps = Vec::new();
    for (place, bytes, mode) in files {
        let temp = Temporary::beside(place.path, place.root)?;
        temp.file().write_all(bytes)?;
        temp.complete(*mode)?;
        temps.push(temp);
    }
    Ok(Staged {
        temps,
        journal: journal_real,
        journal_root: journal.root.to_path_buf(),
    })
}

impl Staged {
    /// Writes the journal naming each temporary and its target.
    fn commit(self) -> io::Result<Committed> {
        let Staged {
            mut temps,
            journal,
            journal_root,
        } = self;
        let mut bytes = JOURNAL_HEADER.to_vec();
        for temp in &temps {
            for path in [temp.path(), temp.target().to_path_buf()] {
                bytes.extend_from_slice(path.as_os_str().as_bytes());
                bytes.push(0);
            }
        }
        replace(&journal, &journal_root, &bytes, 0o600)?;
        // The temporaries are the journal's now: no longer removed when dropped.
        for temp in &mut temps {
            temp.persisted = true;
        }
        Ok(Committed { temps, journal })
    }
}

impl Committed {
    /// Renames the temporary of the `index`th file over it.
    fn rename(&mut self, index: usize) -> io::Result<()> {
        self.temps[index].rename()
    }

    /// Renames every temporary not yet renamed, syncs their directories and removes
    /// the journal.
    fn finish(mut self) -> io::Result<()> {
        for index in 0..self.temps.len() {
            if std::fs::symlink_metadata(self.temps[index].path()).is_ok() {
                self.rename(index)?;
            }
        }
        for temp in &self.temps {
            temp.dir.sync_all()?;
        }
        remove_journal(&self.journal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A project with `.mcp.json` and `mcp.lock` holding "old".
    fn project() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let d = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(d.join(".mcp.json"), "old config").unwrap();
        std::fs::write(d.join("mcp.lock"), "old lock").unwrap();
        (dir, d)
    }

    fn contents(d: &Path) -> (String, String) {
        (
            std::fs::read_to_string(d.join(".mcp.json")).unwrap(),
            std::fs::read_to_string(d.join("mcp.lock")).unwrap(),
        )
    }

    /// Every name in the directory but the two files.
    fn others(d: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n != ".mcp.json" && n != "mcp.lock")
            .collect();
        names.sort();
        names
    }

    fn places(d: &Path) -> (PathBuf, PathBuf, PathBuf) {
        (
            d.join(".mcp.json"),
            d.join("mcp.lock"),
            d.join(".mcp-lock.journal"),
        )
    }

    fn new_contents<'a>(
        config: &'a Path,
        lock: &'a Path,
        d: &'a Path,
    ) -> Vec<(Place<'a>, &'a [u8], u32)> {
        vec![
            (
                Place {
                    path: config,
                    root: d,
                },
                b"new config".as_slice(),
                0o644,
            ),
            (
                Place {
                    path: lock,
                    root: d,
                },
                b"new lock".as_slice(),
                0o600,
            ),
        ]
    }

    #[test]
    fn both_files_are_replaced_and_nothing_is_left_beside_them() {
        let (_dir, d) = project();
        let (config, lock, journal) = places(&d);
        let journal = Place {
            path: &journal,
            root: &d,
        };
        replace_together(&new_contents(&config, &lock, &d), journal).unwrap();
        assert_eq!(contents(&d), ("new config".into(), "new lock".into()));
        let mode = std::fs::metadata(&lock).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(others(&d).is_empty(), "{:?}", others(&d));
        let files = [
            Place {
                path: &config,
                root: &d,
            },
            Place {
                path: &lock,
                root: &d,
            },
        ];
        assert_eq!(finish_interrupted(&files, journal).unwrap(), None);
    }

    #[test]
    fn a_refused_landing_writes_nothing() {
        let (_dir, d) = project();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("target"), "theirs").unwrap();
        std::fs::remove_file(d.join("mcp.lock")).unwrap();
        symlink(outside.path().join("target"), d.join("mcp.lock")).unwrap();
        let (config, lock, journal) = places(&d);
        let error = replace_together(
            &new_contents(&config, &lock, &d),
            Place {
                path: &journal,
                root: &d,
            },
        )
        .unwrap_err();
        assert!(Refusal::of(&error).is_some(), "{error}");
        assert_eq!(std::fs::read_to_string(&config).unwrap(), "old config");
        assert_eq!(
            std::fs::read_to_string(outside.path().join("target")).unwrap(),
            "theirs"
        );
        assert_eq!(others(&d), Vec::<String>::new());
        // A journal that would land outside is refused the same way.
        std::fs::remove_file(d.join("mcp.lock")).unwrap();
        std::fs::write(d.join("mcp.lock"), "old lock").unwrap();
        std::fs::write(outside.path().join("journal"), "theirs too").unwrap();
        symlink(outside.path().join("journal"), &journal).unwrap();
        let error = replace_together(
            &new_contents(&config, &lock, &d),
            Place {
                path: &journal,
                root: &d,
            },
        )
        .unwrap_err();
        assert!(Refusal::of(&error).is_some(), "{error}");
        assert_eq!(contents(&d), ("old config".into(), "old lock".into()));
        assert_eq!(
            std::fs::read_to_string(outside.path().join("journal")).unwrap(),
            "theirs too"
        );
    }

    #[test]
    fn a_crash_after_the_journal_is_rolled_forward() {
        for renamed_before_crash in [0, 1, 2] {
            let (_dir, d) = project();
            let (config, lock, journal_path) = places(&d);
            let journal = Place {
                path: &journal_path,
                root: &d,
            };
            let mut committed = stage(&new_contents(&config, &lock, &d), journal)
                .unwrap()
                .commit()
                .unwrap();
            for index in 0..renamed_before_crash {
                committed.rename(index).unwrap();
            }
            drop(committed);
            assert!(journal_path.exists());
            let files = [
                Place {
                    path: &config,
                    root: &d,
                },
                Place {
                    path: &lock,
                    root: &d,
                },
            ];
            let finished = finish_interrupted(&files, journal).unwrap().unwrap();
            assert_eq!(finished.len(), 2 - renamed_before_crash);
            assert_eq!(contents(&d), ("new config".into(), "new lock".into()));
            assert!(others(&d).is_empty(), "{:?}", others(&d));
        }
    }

    #[test]
    fn a_crash_before_the_journal_leaves_the_old_files_and_no_temporaries() {
        let (_dir, d) = project();
        let (config, lock, journal) = places(&d);
        let journal = Place {
            path: &journal,
            root: &d,
        };
        let staged = stage(&new_contents(&config, &lock, &d), journal).unwrap();
        // A crash: nothing removes the temporaries.
        std::mem::forget(staged);
        assert_eq!(others(&d).len(), 2);
        let files = [
            Place {
                path: &config,
                root: &d,
            },
            Place {
                path: &lock,
                root: &d,
            },
        ];
        assert_eq!(finish_interrupted(&files, journal).unwrap(), None);
        assert_eq!(contents(&d), ("old config".into(), "old lock".into()));
        assert!(others(&d).is_empty(), "{:?}", others(&d));
    }

    #[test]
    fn a_journal_naming_other_files_is_refused_and_an_unfinished_one_blocks_new_writes() {
        let (_dir, d) = project();
        let (config, lock, journal_path) = places(&d);
        let journal = Place {
            path: &journal_path,
            root: &d,
        };
        std::fs::write(d.join(".bashrc.AbC123.tmp"), "x").unwrap();
        let mut planted = JOURNAL_HEADER.to_vec();
        for path in [d.join(".bashrc.AbC123.tmp"), d.join(".bashrc")] {
            planted.extend_from_slice(path.as_os_str().as_bytes());
            planted.push(0);
        }
        std::fs::write(&journal_path, planted).unwrap();
        let error = replace_together(&new_contents(&config, &lock, &d), journal).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists, "{error}");
        let files = [
            Place {
                path: &config,
                root: &d,
            },
            Place {
                path: &lock,
                root: &d,
            },
        ];
        let error = finish_interrupted(&files, journal).unwrap_err();
        assert!(
            error.to_string().contains("not written for these files"),
            "{error}"
        );
        assert!(!d.join(".bashrc").exists());
        assert_eq!(contents(&d), ("old config".into(), "old lock".into()));
    }
}
