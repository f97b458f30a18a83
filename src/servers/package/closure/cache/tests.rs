use super::*;

fn seal(dir: &Path) -> Result<Seal, String> {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &[7u8; 32]);
    Ok(Seal::new(key, "sha256:abc", dir))
}

/// A closure directory inside a temporary one (which also holds its stat record),
/// kept until the test ends.
struct Tree {
    _temp: tempfile::TempDir,
    dir: PathBuf,
}

impl Tree {
    fn path(&self) -> &Path {
        &self.dir
    }
}

fn tree() -> Tree {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("npm-abc");
    std::fs::create_dir(&dir).unwrap();
    Tree { _temp: temp, dir }
}

#[test]
fn a_manifest_sees_a_changed_added_or_removed_file() {
    let dir = tree();
    let seal = seal(dir.path());
    std::fs::create_dir_all(dir.path().join("node_modules/a")).unwrap();
    std::fs::write(dir.path().join("node_modules/a/index.js"), "one").unwrap();
    let sealed = seal
        .as_ref()
        .unwrap()
        .seal(&manifest_of(dir.path()).unwrap());
    std::fs::write(dir.path().join(MANIFEST), &sealed).unwrap();
    assert!(matches!(check(dir.path(), &seal).unwrap(), Fit::Matches));
    std::fs::write(dir.path().join("node_modules/a/index.js"), "two").unwrap();
    match check(dir.path(), &seal).unwrap() {
        Fit::Differs(why) => assert!(why.contains("node_modules/a/index.js"), "{why}"),
        _ => panic!("a changed file went unseen"),
    }
    std::fs::write(dir.path().join("node_modules/a/index.js"), "one").unwrap();
    std::fs::write(dir.path().join("node_modules/a/extra.js"), "x").unwrap();
    assert!(matches!(check(dir.path(), &seal).unwrap(), Fit::Differs(_)));
    std::fs::remove_file(dir.path().join("node_modules/a/extra.js")).unwrap();
    std::fs::remove_file(dir.path().join("node_modules/a/index.js")).unwrap();
    assert!(matches!(check(dir.path(), &seal).unwrap(), Fit::Differs(_)));
    let fresh = tempfile::tempdir().unwrap();
    let missing = fresh.path().join("never");
    assert!(matches!(check(&missing, &seal).unwrap(), Fit::Missing));
}

#[test]
fn a_file_changed_with_its_manifest_recomputed_is_named_and_not_trusted() {
    let dir = tree();
    let seal = seal(dir.path());
    let file = dir.path().join("index.js");
    std::fs::write(&file, "one").unwrap();
    let sealed = seal
        .as_ref()
        .unwrap()
        .seal(&manifest_of(dir.path()).unwrap());
    std::fs::write(dir.path().join(MANIFEST), &sealed).unwrap();
    // The file and its line changed together, as whoever writes the cache can.
    std::fs::write(&file, "two").unwrap();
    let before = crate::contract::hash::sha256_hex(b"one");
    let after = crate::contract::hash::sha256_hex(b"two");
    std::fs::write(dir.path().join(MANIFEST), sealed.replace(&before, &after)).unwrap();
    match check(dir.path(), &seal).unwrap() {
        Fit::Differs(why) => assert!(why.starts_with("index.js is not as installed"), "{why}"),
        _ => panic!("a recomputed manifest was trusted"),
    }
    // An unsealed manifest (an older mcp-lock's) that matches the tree.
    std::fs::write(dir.path().join(MANIFEST), manifest_of(dir.path()).unwrap()).unwrap();
    assert!(matches!(check(dir.path(), &seal).unwrap(), Fit::Differs(_)));
    // Sealed for another closure: not this one's.
    let other = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &[7u8; 32]);
    let other = Seal::new(other, "sha256:def", dir.path());
    std::fs::write(
        dir.path().join(MANIFEST),
        other.seal(&manifest_of(dir.path()).unwrap()),
    )
    .unwrap();
    assert!(matches!(check(dir.path(), &seal).unwrap(), Fit::Differs(_)));
    // A line removed with its file: the whole no longer verifies.
    let sealed = seal
        .as_ref()
        .unwrap()
        .seal(&manifest_of(dir.path()).unwrap());
    std::fs::write(dir.path().join(MANIFEST), &sealed).unwrap();
    assert!(matches!(check(dir.path(), &seal).unwrap(), Fit::Matches));
    std::fs::remove_file(&file).unwrap();
    let without: String = sealed
        .lines()
        .filter(|l| !l.ends_with("\tindex.js"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.path().join(MANIFEST), without).unwrap();
    assert!(matches!(check(dir.path(), &seal).unwrap(), Fit::Differs(_)));
    // With no key nothing is trusted.
    assert!(matches!(
        check(dir.path(), &Err("no key".into())).unwrap(),
        Fit::Differs(_)
    ));
}

/// A tree of two files with its sealed manifest, and the seal.
fn sealed_tree() -> (Tree, Seal) {
    let dir = tree();
    std::fs::create_dir_all(dir.path().join("lib")).unwrap();
    std::fs::write(dir.path().join("lib/index.js"), "exports.v = 1;\n").unwrap();
    std::fs::write(dir.path().join("lib/other.js"), "exports.o = 1;\n").unwrap();
    let seal = seal(dir.path()).unwrap();
    std::fs::write(
        dir.path().join(MANIFEST),
        seal.seal(&manifest_of(dir.path()).unwrap()),
    )
    .unwrap();
    (dir, seal)
}

/// The stat record as a check writes it, dated `ahead_s` seconds from now (so its
/// files are past the racy window), and what the next walk reads.
fn record_and_walk(dir: &Path, seal: &Seal, ahead_s: i128) -> (String, Stats) {
    let (_, stats) = manifest_with(dir, None).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i128;
    write_stats(dir, seal, &stats, now + ahead_s * 1_000_000_000).unwrap();
    let known = read_stats(dir, seal);
    manifest_with(dir, known.as_ref()).unwrap()
}

#[test]
fn a_sealed_stat_record_spares_reading_unchanged_files_and_matches_the_full_manifest() {
    let (dir, seal) = sealed_tree();
    let (text, stats) = record_and_walk(dir.path(), &seal, 10);
    assert_eq!(stats.hashed, 0, "every file vouched for by its stat");
    assert_eq!(text, manifest_of(dir.path()).unwrap());
    assert!(matches!(
        check(dir.path(), &Ok(seal)).unwrap(),
        Fit::Matches
    ));
    // Files changed within the racy window of the record are read again.
    let (dir, seal) = sealed_tree();
    let (_, stats) = record_and_walk(dir.path(), &seal, 0);
    assert_eq!(stats.hashed, 2);
}

#[test]
fn a_file_rewritten_after_the_stat_record_with_its_size_and_mtime_kept_is_still_seen() {
    let (dir, seal) = sealed_tree();
    record_and_walk(dir.path(), &seal, 10);
    let file = dir.path().join("lib/index.js");
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
    // Past the filesystem's timestamp tick, so the change time moves.
    std::thread::sleep(std::time::Duration::from_millis(50));
    std::fs::write(&file, "exports.v = 2;\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(std::fs::metadata(&file).unwrap().modified().unwrap(), mtime);
    match check(dir.path(), &Ok(seal)).unwrap() {
        Fit::Differs(why) => assert!(why.contains("lib/index.js"), "{why}"),
        _ => panic!("a rewritten file was trusted by its stat"),
    }
}

#[test]
fn a_stat_record_edited_or_sealed_under_another_key_is_ignored() {
    let (dir, seal) = sealed_tree();
    record_and_walk(dir.path(), &seal, 10);
    let record = stats_path(dir.path());
    let text = std::fs::read_to_string(&record).unwrap();
    // Changed and its hash line rewritten to claim the new bytes: the record's seal
    // no longer verifies, so every file is read (and the change seen).
    std::fs::write(dir.path().join("lib/other.js"), "exports.o = 2;\n").unwrap();
    let old = crate::contract::hash::sha256_hex(b"exports.o = 1;\n");
    let new = crate::contract::hash::sha256_hex(b"exports.o = 2;\n");
    std::fs::write(&record, text.replace(&old, &new)).unwrap();
    assert!(read_stats(dir.path(), &seal).is_none());
    assert!(matches!(
        check(dir.path(), &Ok(seal)).unwrap(),
        Fit::Differs(_)
    ));
    // Another key's record is not this one's.
    let (dir, seal) = sealed_tree();
    let other = Seal::new(
        ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &[8u8; 32]),
        "sha256:abc",
        dir.path(),
    );
    record_and_walk(dir.path(), &other, 10);
    assert!(read_stats(dir.path(), &seal).is_none());
    // Something other than a file in the record's place is no record.
    let (dir, seal) = sealed_tree();
    std::fs::create_dir(stats_path(dir.path())).unwrap();
    assert!(read_stats(dir.path(), &seal).is_none());
    assert!(matches!(
        check(dir.path(), &Ok(seal)).unwrap(),
        Fit::Matches
    ));
}

#[test]
fn a_fifo_in_the_cache_is_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo =
        std::ffi::CString::new(dir.path().join("pipe").as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo on a path this test owns.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let manifest = manifest_of(dir.path()).unwrap();
    assert!(manifest.starts_with("o\t"), "{manifest}");
}

#[test]
fn npx_runs_the_only_bin_or_the_one_named_as_the_package() {
    let dir = tempfile::tempdir().unwrap();
    let package = dir.path().join("node_modules/@scope/tool");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(package.join("package.json"), r#"{"bin": "cli.js"}"#).unwrap();
    assert_eq!(npm_default_bin(dir.path(), "@scope/tool").unwrap(), "tool");
    std::fs::write(package.join("package.json"), r#"{"bin": {"x": "x.js"}}"#).unwrap();
    assert_eq!(npm_default_bin(dir.path(), "@scope/tool").unwrap(), "x");
    std::fs::write(
        package.join("package.json"),
        r#"{"bin": {"x": "x.js", "y": "y.js"}}"#,
    )
    .unwrap();
    assert!(npm_default_bin(dir.path(), "@scope/tool").is_err());
}
