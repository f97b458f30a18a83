//! The server group's life: a crash mid-call, the client leaving, the guard killed, and memory over many calls.

use super::*;

#[test]
fn a_server_crash_mid_call_answers_the_call_ends_the_session_and_leaves_no_process() {
    let tag = format!("guard-crash-{}", std::process::id());
    let project = deploy_project(&["--misbehave", "crash-on-call", "--tag", &tag]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    let answer = agent.call("read_ticket", json!({"id": "T-1"}));
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("server exited while handling this call"),
        "{answer}"
    );
    assert!(message.contains("exit status 70"), "{message}");
    let status = agent
        .wait_exit(Duration::from_secs(10))
        .expect("the guard exits");
    assert_eq!(status.code(), Some(1));
    assert!(pids_with(&tag).is_empty(), "server still running");
    // The server's stderr reached the client's stderr.
    assert!(
        agent.stderr_shows("crashing in the middle of a tools/call"),
        "{}",
        agent.stderr()
    );
    let log = audit(&project);
    let last = log.last().unwrap();
    assert_eq!(last["event"], "server_exited");
    assert_eq!(last["calls_unanswered"], json!(["read_ticket"]));
}

#[test]
fn a_client_disconnect_ends_the_whole_server_group_even_one_that_ignores_sigterm() {
    let tag = format!("guard-disconnect-{}", std::process::id());
    let project = deploy_project(&["--misbehave", "ignore-shutdown", "--tag", &tag]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    assert_eq!(pids_with(&tag).len(), 1);
    agent.close();
    let status = agent
        .wait_exit(Duration::from_secs(10))
        .expect("the guard exits");
    assert_eq!(status.code(), Some(0));
    assert!(pids_with(&tag).is_empty(), "server left running");
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn ten_thousand_calls_in_a_row_keep_the_guards_memory_flat() {
    let project = deploy_project(&[]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    let pid = agent.child.id();
    let run = |agent: &mut McpPipe, from: i64, count: i64| {
        // Pipelined in windows of 50, as a busy agent would send them.
        for start in (from..from + count).step_by(50) {
            for id in start..start + 50 {
                agent.send(
                    &json!({"jsonrpc": "2.0", "id": 100_000 + id, "method": "tools/call",
                    "params": {"name": "read_ticket", "arguments": {"id": format!("T-{id}")}}}),
                );
            }
            for id in start..start + 50 {
                let answer = agent.answer(100_000 + id);
                assert_eq!(
                    answer["result"]["structuredContent"]["title"],
                    format!("Ticket T-{id}"),
                    "{answer}"
                );
            }
        }
    };
    run(&mut agent, 0, 1_000);
    let warm = rss_kib(pid);
    run(&mut agent, 1_000, 9_000);
    let after = rss_kib(pid);
    assert!(
        after <= warm + 1024,
        "memory grew from {warm} KiB to {after} KiB over 9,000 calls"
    );
    let forwarded = audit(&project)
        .iter()
        .filter(|e| e["event"] == "tools/call" && e["decision"] == "forwarded")
        .count();
    assert_eq!(forwarded, 10_000);
    assert_eq!(actions(&project).len(), 10_000);
}

#[test]
fn a_client_leaving_while_the_server_stopped_reading_still_ends_the_session() {
    let tag = format!("guard-stuck-{}", std::process::id());
    let project = deploy_project(&[]);
    let fixture = common::fixture().display().to_string();
    let mut agent = McpPipe::guard(
        &project,
        &[
            "deploy",
            "--",
            &fixture,
            "--misbehave",
            "stop-reading",
            "--tag",
            &tag,
        ],
    );
    agent.initialize();
    agent.list_tools();
    // Write until nothing more goes in: the server's stdin pipe, the guard's buffers
    // and the guard's stdin pipe are all full, so the guard is blocked writing to the
    // server, as it would be under a real client. Never blocks the test itself.
    let padding = "x".repeat(1000);
    let line =
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"pad": padding}});
    assert!(agent.send_until_full(&line.to_string()) > 60);
    agent.close();
    let status = agent
        .wait_exit(Duration::from_secs(15))
        .expect("the guard exits although its write to the server never returns");
    assert_eq!(status.code(), Some(0));
    assert!(pids_with(&tag).is_empty(), "server left running");
}

#[test]
fn killing_the_guard_outright_still_ends_the_servers_grandchildren() {
    let tag = format!("guard-killed-{}", std::process::id());
    let fixture = common::fixture().display().to_string();
    // A shell in between, as npx or uvx put one: the server is a grandchild.
    // It ignores SIGTERM and does not exit when its stdin closes: only the watchdog's
    // SIGKILL to the group ends it.
    let script = format!("{fixture} --misbehave ignore-shutdown --tag {tag}; true");
    let project = shell_project(&script);
    let mut agent = McpPipe::guard(&project, &["deploy", "--", "sh", "-c", &script]);
    agent.initialize();
    assert_eq!(common::pids_of("fixture_server", &tag).len(), 1);
    // SAFETY: SIGKILL to the guard this test started, by its PID.
    unsafe {
        libc::kill(agent.child.id() as i32, libc::SIGKILL);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !common::pids_of("fixture_server", &tag).is_empty()
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        common::pids_of("fixture_server", &tag).is_empty(),
        "the server outlived its guard"
    );
}

#[test]
fn killing_the_guards_whole_process_group_still_ends_the_servers_grandchildren() {
    let tag = format!("guard-group-killed-{}", std::process::id());
    let fixture = common::fixture().display().to_string();
    // The server is a grandchild behind a shell, ignores SIGTERM and a closed stdin.
    let script = format!("{fixture} --misbehave ignore-shutdown --tag {tag}; true");
    let project = shell_project(&script);
    // The guard leads a process group of its own, as under a terminal or a client
    // that starts its servers so; `kill -9 -PGID` ends every process in it at once.
    let mut agent = McpPipe::spawn(
        Path::new("setsid"),
        &[
            common::bin().to_str().unwrap(),
            "guard",
            "deploy",
            "--",
            "sh",
            "-c",
            &script,
        ],
        project.path(),
        &[],
    );
    agent.initialize();
    assert_eq!(common::pids_of("fixture_server", &tag).len(), 1);
    let guard = agent.child.id() as i32;
    // SAFETY: SIGKILL to the process group this test's own child leads.
    unsafe {
        assert_eq!(libc::getpgid(guard), guard, "the guard leads its group");
        libc::kill(-guard, libc::SIGKILL);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !common::pids_of("fixture_server", &tag).is_empty()
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        common::pids_of("fixture_server", &tag).is_empty(),
        "the server outlived its guard's group"
    );
}

#[test]
fn a_burst_of_calls_written_at_once_is_answered_whole_however_the_reads_cut_it() {
    // One write of about 400 KB: the guard's reads cut it into pieces that end
    // inside lines, and the server's answers come back while the burst still goes in.
    let project = deploy_project(&[]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    let count = 3_000;
    let burst: Vec<String> = (0..count)
        .map(|id| {
            json!({"jsonrpc": "2.0", "id": 500_000 + id, "method": "tools/call",
                "params": {"name": "read_ticket", "arguments": {"id": format!("T-{id}")}}})
            .to_string()
        })
        .collect();
    agent.send_raw(&burst.join("\n"));
    for id in 0..count {
        let answer = agent.answer(500_000 + id);
        assert_eq!(
            answer["result"]["structuredContent"]["title"],
            format!("Ticket T-{id}"),
            "{answer}"
        );
    }
    agent.close();
    assert_eq!(
        agent.wait_exit(Duration::from_secs(10)).map(|s| s.code()),
        Some(Some(0))
    );
    let forwarded = audit(&project)
        .iter()
        .filter(|e| e["event"] == "tools/call" && e["decision"] == "forwarded")
        .count();
    assert_eq!(forwarded, count as usize);
}

#[test]
fn the_guard_leaves_its_stdout_blocking_as_it_found_it() {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // The test keeps a second descriptor of the guard's stdout pipe (the same open
    // file, so the same flags): non-blocking while the session runs, blocking after.
    let mut fds = [0; 2];
    // SAFETY: pipe(2) into a two-element array; each new descriptor is owned once.
    let (read_end, write_end) = unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
    };
    let kept = write_end.try_clone().unwrap();
    let nonblocking = || {
        // SAFETY: fcntl(2) on a descriptor this test owns.
        unsafe { libc::fcntl(kept.as_raw_fd(), libc::F_GETFL) & libc::O_NONBLOCK != 0 }
    };
    assert!(!nonblocking());
    let project = deploy_project(&[]);
    let mut guard = common::command(common::bin())
        .args(["guard", "deploy"])
        .current_dir(project.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::from(write_end))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = guard.stdin.take().unwrap();
    let mut answers = std::io::BufReader::new(std::fs::File::from(read_end));
    let mut line = String::new();
    use std::io::{BufRead, Write};
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}})
    )
    .unwrap();
    answers.read_line(&mut line).unwrap();
    assert!(line.contains("\"id\":1"), "{line}");
    assert!(nonblocking(), "non-blocking while the session runs");
    drop(stdin);
    assert_eq!(guard.wait().unwrap().code(), Some(0));
    assert!(!nonblocking(), "put back when the session ended");
}
