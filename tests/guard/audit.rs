//! The audit log: an entry before each call it decides, whole lines when writing fails, a full disk, a flood of list_changed.

use super::*;

/// Sets the file size limit (RLIMIT_FSIZE) of a process this test started.
fn set_file_size_limit(pid: u32, limit: libc::rlim_t) {
    // SAFETY: prlimit on a child of this test, with live structs.
    unsafe {
        let mut old: libc::rlimit = std::mem::zeroed();
        assert_eq!(
            libc::prlimit(pid as i32, libc::RLIMIT_FSIZE, std::ptr::null(), &mut old),
            0
        );
        let new = libc::rlimit {
            rlim_cur: limit,
            rlim_max: old.rlim_max,
        };
        assert_eq!(
            libc::prlimit(pid as i32, libc::RLIMIT_FSIZE, &new, std::ptr::null_mut()),
            0,
            "cannot set the guard's file size limit"
        );
    }
}

#[test]
fn a_call_whose_audit_entry_cannot_be_written_is_refused_and_the_log_keeps_whole_lines() {
    let project = deploy_project(&[]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    let log = project.path().join(".mcp-lock/audit.jsonl");
    let before = std::fs::read(&log).unwrap();
    // Room for the first 40 bytes of the next entry only, as on a disk that fills up
    // in the middle of the write: the kernel takes part of it, then refuses the rest.
    set_file_size_limit(agent.child.id(), before.len() as libc::rlim_t + 40);
    let answer = agent.call("read_ticket", json!({"id": "T-1"}));
    let r = refusal(&answer);
    assert_eq!(r["error_code"], "AUDIT_LOG_UNWRITABLE", "{answer}");
    assert_eq!(r["required_action"], "retry_later");
    assert_eq!(r["side_effect_started"], false);
    assert!(actions(&project).is_empty(), "an unrecorded call ran");
    assert_eq!(
        std::fs::read(&log).unwrap(),
        before,
        "part of an entry was left in the log"
    );
    // A listing that cannot be recorded is not passed on either.
    let listing = agent.request("tools/list", json!({}));
    assert_eq!(listing["error"]["code"], -32603, "{listing}");
    assert!(agent.stderr_shows("cannot write the audit log"));

    // Space returns. Another writer died mid-entry meanwhile: the guard's next entry
    // starts on a line of its own instead of continuing the torn one.
    set_file_size_limit(agent.child.id(), libc::RLIM_INFINITY);
    let torn = r#"{"time":"2026-12-01T10:00:00.000Z","server":"other","ev"#;
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut file, torn.as_bytes()).unwrap();
    drop(file);
    let answer = agent.call("read_ticket", json!({"id": "T-2"}));
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        actions(&project),
        [json!({"tool": "read_ticket", "arguments": {"id": "T-2"}})]
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.ends_with('\n'));
    let lines: Vec<&str> = text.lines().collect();
    let unreadable: Vec<&&str> = lines
        .iter()
        .filter(|l| serde_json::from_str::<Value>(l).is_err())
        .collect();
    assert_eq!(unreadable, [&torn], "{text}");
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(last["decision"], "forwarded");
    assert_eq!(last["arguments"], json!({"id": "T-2"}));
}

#[test]
fn a_flood_of_list_changed_makes_few_audit_entries_that_count_every_notification() {
    const FLOOD: u64 = 200_000;
    let fixture = common::fixture().display().to_string();
    // The server announces a change 200,000 times before it serves anything.
    let script = format!(
        r#"yes '{{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}}' | head -n {FLOOD}; exec {fixture} --revision-file rev --action-log actions.jsonl"#
    );
    let project = shell_project(&script);
    let mut agent = McpPipe::guard(&project, &["deploy", "--", "sh", "-c", &script]);
    agent.initialize();
    // Still invalidating: nothing is usable until a listing asked for after them.
    let answer = agent.call("read_ticket", json!({"id": "T-1"}));
    assert_eq!(refusal(&answer)["error_code"], "LISTING_NOT_VERIFIED");
    agent.list_tools();
    let answer = agent.call("read_ticket", json!({"id": "T-2"}));
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    // Still forwarding: the client got every one of them.
    let forwarded = agent
        .held
        .iter()
        .filter(|m| m["method"] == "notifications/tools/list_changed")
        .count();
    assert_eq!(forwarded as u64, FLOOD);
    agent.close();
    agent
        .wait_exit(Duration::from_secs(10))
        .expect("the guard exits");

    let log = audit(&project);
    let runs: Vec<&Value> = log
        .iter()
        .filter(|e| e["event"] == "list_changed")
        .collect();
    assert!(
        !runs.is_empty() && runs.len() < 50,
        "{} list_changed entries",
        runs.len()
    );
    let counted: u64 = runs.iter().map(|e| e["count"].as_u64().unwrap()).sum();
    assert_eq!(counted, FLOOD);
    assert!(runs.iter().all(|e| e["since"].is_string()));
    // Every run is logged before the refusal it caused.
    let refused = log
        .iter()
        .position(|e| e["error_code"] == "LISTING_NOT_VERIFIED")
        .unwrap();
    let first_run = log
        .iter()
        .position(|e| e["event"] == "list_changed")
        .unwrap();
    assert!(first_run < refused);
}

/// A small tmpfs mounted for one test, unmounted (lazily, in case a process still
/// holds a file on it) when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// None where mounting is not permitted (not root, no CAP_SYS_ADMIN).
    fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = common::command("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then_some(SmallDisk { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills what is left, page by page, into `filler`.
    fn fill(&self) {
        use std::io::Write;
        let mut file = std::fs::File::create(self.path().join("filler")).unwrap();
        let page = [b'f'; 4096];
        while file.write_all(&page).is_ok() {}
        // A last part-page, if any.
        while file.write_all(b"f").is_ok() {}
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = common::command("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

#[test]
fn on_a_full_disk_calls_are_refused_and_no_cut_entry_is_left_when_space_returns() {
    let Some(disk) = SmallDisk::mount("256k") else {
        eprintln!("skipped: mounting a tmpfs is not permitted here");
        return;
    };
    let project = deploy_project(&[]);
    let log = disk.path().join("audit.jsonl");
    let log_arg = log.display().to_string();
    let mut agent = McpPipe::guard(&project, &["deploy", "--audit-log", &log_arg]);
    agent.initialize();
    agent.list_tools();
    let before = std::fs::read(&log).unwrap();
    // The disk is full but for the rest of the log's last page: an entry larger than
    // that is written in part, then the disk refuses the rest.
    disk.fill();
    let big = "b".repeat(8192);
    let answer = agent.call("read_ticket", json!({ "id": big }));
    assert_eq!(
        refusal(&answer)["error_code"],
        "AUDIT_LOG_UNWRITABLE",
        "{answer}"
    );
    assert!(actions(&project).is_empty(), "an unrecorded call ran");
    assert_eq!(std::fs::read(&log).unwrap(), before, "a cut entry was left");
    // Space returns: the same call goes through, recorded whole.
    std::fs::remove_file(disk.path().join("filler")).unwrap();
    let answer = agent.call("read_ticket", json!({ "id": big }));
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    let text = std::fs::read_to_string(&log).unwrap();
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let last = entries.last().unwrap();
    assert_eq!(last["decision"], "forwarded");
    assert_eq!(last["arguments"]["id"], big.as_str());
    agent.close();
    agent.wait_exit(Duration::from_secs(10));
}
