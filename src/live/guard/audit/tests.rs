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
