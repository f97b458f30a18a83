//! The stats remembered for an installed closure's files, so an unchanged install is
//! not hashed again.

use super::*;

/// The stat record of an installed directory: a file beside it, `<dir>.stat` (outside
/// the tree, which an older mcp-lock would see as a file that was never installed).
pub(super) fn stats_path(dir: &Path) -> PathBuf {
    dir.with_extension("stat")
}

/// The stat record's first line.
pub(super) const STATS_HEADER: &str = "mcp-lock closure stat 1";

/// A file changed this close (in nanoseconds) to when the record was written is not
/// trusted by its stat: a change within the same timestamp tick would not show.
pub(super) const RACY_NS: i128 = 2_000_000_000;

/// What identifies a file's bytes without reading them: device, inode, size, mode,
/// and modification and change times. Whoever rewrites a file moves its change time
/// (which no one but the clock sets), so equal stats mean the bytes last hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileStat {
    dev: u64,
    ino: u64,
    size: u64,
    mode: u32,
    mtime: i128,
    ctime: i128,
}

impl FileStat {
    fn of(meta: &std::fs::Metadata) -> FileStat {
        use std::os::unix::fs::MetadataExt as _;
        FileStat {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mode: meta.mode(),
            mtime: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        }
    }

    fn text(&self) -> String {
        format!(
            "{}\t{}\t{}\t{:o}\t{}\t{}",
            self.dev, self.ino, self.size, self.mode, self.mtime, self.ctime
        )
    }

    fn parse(fields: &[&str]) -> Option<FileStat> {
        let [dev, ino, size, mode, mtime, ctime] = fields else {
            return None;
        };
        Some(FileStat {
            dev: dev.parse().ok()?,
            ino: ino.parse().ok()?,
            size: size.parse().ok()?,
            mode: u32::from_str_radix(mode, 8).ok()?,
            mtime: mtime.parse().ok()?,
            ctime: ctime.parse().ok()?,
        })
    }
}

/// Each file's stat when its bytes last matched the sealed manifest, and its line.
pub(super) type Known = std::collections::HashMap<String, (FileStat, String)>;

/// What a walk saw of each regular file, and how many it had to read.
#[derive(Default)]
pub(super) struct Stats {
    files: Vec<(String, FileStat, String)>,
    pub(super) hashed: usize,
}

/// The stat record of `dir` when its seal verifies (the same key and binding as the
/// manifest's: written by mcp-lock for this closure and directory), else nothing,
/// and every file is read.
pub(super) fn read_stats(dir: &Path, seal: &Seal) -> Option<Known> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(stats_path(dir))
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_MANIFEST + 1).read_to_string(&mut text).ok()?;
    if text.len() as u64 > MAX_MANIFEST {
        return None;
    }
    let body = text.strip_suffix('\n')?;
    let (signed, tag) = body.rsplit_once("\nend\t")?;
    let signed = format!("{signed}\n");
    if !seal.verifies(&signed, tag) {
        return None;
    }
    let mut lines = signed.lines();
    if lines.next()? != STATS_HEADER {
        return None;
    }
    let written: i128 = lines.next()?.strip_prefix("written\t")?.parse().ok()?;
    let mut known = Known::new();
    for line in lines {
        let fields: Vec<&str> = line.splitn(7, '\t').collect();
        let (stat, entry) = fields.split_at(6.min(fields.len()));
        let (Some(stat), Some(entry)) = (FileStat::parse(stat), entry.first()) else {
            return None;
        };
        // Changed too close to the record to be told apart by its times.
        if stat.ctime > written - RACY_NS || stat.mtime > written - RACY_NS {
            continue;
        }
        known.insert(path_of(entry), (stat, (*entry).to_string()));
    }
    Some(known)
}

/// Writes the stat record of `dir`: each regular file's stat as the walk took it
/// (before reading it) with its manifest line, sealed whole.
pub(super) fn write_stats(
    dir: &Path,
    seal: &Seal,
    stats: &Stats,
    written: i128,
) -> std::io::Result<()> {
    let mut out = format!("{STATS_HEADER}\nwritten\t{written}\n");
    for (_, stat, line) in &stats.files {
        let _ = writeln!(out, "{}\t{line}", stat.text());
    }
    let tag = seal.tag(&out);
    let _ = writeln!(out, "end\t{tag}");
    crate::base::files::replace(
        &stats_path(dir),
        &crate::base::files::parent_of(dir),
        out.as_bytes(),
        0o600,
    )
}

/// The manifest of `dir`, and the stat of each regular file in it. A file whose stat
/// is the one `known` records has the line recorded with it, unread; every other file
/// is read and hashed.
pub(super) fn manifest_with(dir: &Path, known: Option<&Known>) -> std::io::Result<(String, Stats)> {
    let mut lines = Vec::new();
    let mut stats = Stats::default();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for entry in std::fs::read_dir(dir.join(&rel))? {
            let entry = entry?;
            let path = rel.join(entry.file_name());
            if path.as_os_str() == MANIFEST {
                continue;
            }
            let meta = std::fs::symlink_metadata(dir.join(&path))?;
            let shown = path.to_string_lossy().into_owned();
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(dir.join(&path))?;
                lines.push(format!("l\t{}\t\t{shown}", target.display()));
            } else if meta.is_dir() {
                lines.push(format!(
                    "d\t{:o}\t\t{shown}",
                    meta.permissions().mode() & 0o777
                ));
                stack.push(path);
            } else if !meta.is_file() {
                // A FIFO, socket or device: never opened (a FIFO would wait forever);
                // no install writes one, so it never matches.
                lines.push(format!("o\t{:o}\t\t{shown}", meta.permissions().mode()));
            } else {
                let stat = FileStat::of(&meta);
                let line = match known.and_then(|k| k.get(&shown)) {
                    Some((was, line)) if *was == stat => line.clone(),
                    _ => {
                        stats.hashed += 1;
                        format!(
                            "f\t{:o}\t{}\t{shown}",
                            meta.permissions().mode() & 0o777,
                            hash_file(&dir.join(&path))?
                        )
                    }
                };
                stats.files.push((shown, stat, line.clone()));
                lines.push(line);
            }
        }
    }
    lines.sort_by(|a, b| a.rsplit('\t').next().cmp(&b.rsplit('\t').next()));
    Ok((lines.join("\n") + "\n", stats))
}

/// A file's sha256, hex.
pub(super) fn hash_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    let mut hex = String::with_capacity(64);
    for byte in hasher.finalize() {
        let _ = write!(hex, "{byte:02x}");
    }
    Ok(hex)
}
