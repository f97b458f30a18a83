use super::*;

/// Each line's `seq` and `prev` follow from the line before it.
fn assert_chained(lines: &[Vec<u8>]) {
    let mut prev = format::GENESIS.to_string();
    for (i, line) in lines.iter().enumerate() {
        let (seq, recorded) = format::chain_members(line).expect("chained");
        assert_eq!(seq, i as u64 + 1, "line {}", i + 1);
        assert_eq!(recorded, prev, "line {}", i + 1);
        serde_json::from_slice::<Value>(line).expect("JSON");
        prev = format::line_hash(line);
    }
}

fn lines_of(paths: &[PathBuf]) -> Vec<Vec<u8>> {
    paths
        .iter()
        .flat_map(|p| {
            std::fs::read(p)
                .unwrap()
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .map(<[u8]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn entries_of_two_guards_sharing_a_log_make_one_chain_with_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut a = AuditLog::open(&path, dir.path(), "a", Secrets::default()).unwrap();
    let mut b = AuditLog::open(&path, dir.path(), "b", Secrets::default()).unwrap();
    let settings = AuditSettings {
        checkpoint_every: 4,
        ..AuditSettings::default()
    };
    a.configure(settings.clone(), None);
    b.configure(settings, None);
    assert_ne!(a.session(), b.session());
    for i in 0..5 {
        a.record("tools/call", vec![("n", Value::from(i))]).unwrap();
        let burst = [b.entry("x", Vec::new()), b.entry("y", Vec::new())].concat();
        b.append(burst.as_bytes()).unwrap();
    }
    a.checkpoint("session_end").unwrap();
    let lines = lines_of(&[path]);
    assert_chained(&lines);
    let events: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let checkpoints: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "checkpoint")
        .collect();
    // 15 entries, with a checkpoint after each 4th line of the chain, and one at the end.
    assert_eq!(lines.len(), 15 + 4 + 1, "{events:#?}");
    assert_eq!(checkpoints.last().unwrap()["reason"], "session_end");
    assert!(checkpoints.iter().all(|c| c["signature"].is_null()));
    assert!(
        events
            .iter()
            .all(|e| e["session"].as_str().is_some_and(|s| s.len() == 16))
    );
}

#[test]
fn rotation_keeps_the_chain_across_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut log = AuditLog::open(&path, dir.path(), "s", Secrets::default()).unwrap();
    log.configure(
        AuditSettings {
            max_file_bytes: 1000,
            checkpoint_every: 0,
        },
        None,
    );
    let mut other = AuditLog::open(&path, dir.path(), "t", Secrets::default()).unwrap();
    for i in 0..20 {
        log.record("e", vec![("i", Value::from(i))]).unwrap();
        other.record("f", vec![("i", Value::from(i))]).unwrap();
    }
    let files = format::family(&path).unwrap();
    assert!(files.len() >= 3, "{files:?}");
    let lines = lines_of(&files);
    assert_eq!(lines.len(), 40);
    assert_chained(&lines);
}

#[test]
fn an_entry_after_another_writers_long_line_links_to_that_whole_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut log = AuditLog::open(&path, dir.path(), "s", Secrets::default()).unwrap();
    let mut other = AuditLog::open(&path, dir.path(), "t", Secrets::default()).unwrap();
    log.record("first", Vec::new()).unwrap();
    let long = "x".repeat(50_000);
    other
        .record("long", vec![("arguments", Value::from(long))])
        .unwrap();
    log.record("after", Vec::new()).unwrap();
    let lines = lines_of(&[path]);
    assert_eq!(lines.len(), 3);
    assert!(lines[1].len() > 50_000);
    assert_chained(&lines);
}

#[test]
fn a_log_begun_by_an_older_release_is_chained_from_its_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let old =
        "{\"time\":\"2026-11-01T00:00:00.000Z\",\"server\":\"s\",\"event\":\"client_closed\"}\n";
    std::fs::write(&path, old).unwrap();
    let mut log = AuditLog::open(&path, dir.path(), "s", Secrets::default()).unwrap();
    log.record("e", Vec::new()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let second = text.lines().nth(1).unwrap();
    let (seq, prev) = format::chain_members(second.as_bytes()).unwrap();
    assert_eq!(seq, 1);
    assert_eq!(prev, format::line_hash(old.as_bytes()));
}

#[test]
fn a_checkpoint_is_signed_with_the_named_ssh_key() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "test", "-f"])
        .arg(&key)
        .status();
    if !made.is_ok_and(|s| s.success()) {
        panic!("ssh-keygen is needed for this test");
    }
    let path = dir.path().join("audit.jsonl");
    let mut log = AuditLog::open(&path, dir.path(), "s", Secrets::default()).unwrap();
    log.configure(AuditSettings::default(), Some(Signer::Key(key)));
    log.record("e", Vec::new()).unwrap();
    log.checkpoint("session_end").unwrap();
    let lines = lines_of(&[path]);
    assert_chained(&lines);
    let checkpoint: Value = serde_json::from_slice(&lines[1]).unwrap();
    let signature = checkpoint["signature"].as_str().unwrap();
    assert!(
        signature.starts_with("-----BEGIN SSH SIGNATURE-----"),
        "{checkpoint}"
    );
    let failing = Signer::Command(vec!["false".into()]);
    log.configure(AuditSettings::default(), Some(failing));
    log.checkpoint("session_end").unwrap();
    let lines = lines_of(&[dir.path().join("audit.jsonl")]);
    let unsigned: Value = serde_json::from_slice(&lines[2]).unwrap();
    assert!(unsigned["signature"].is_null());
    assert!(
        unsigned["signature_error"]
            .as_str()
            .unwrap()
            .contains("false failed")
    );
}
