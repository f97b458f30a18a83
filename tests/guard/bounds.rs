//! What the guard holds and waits for is bounded: a host that reads neither its stderr
//! nor its stdout, messages past the size limit, huge batches, and requests piling up
//! unanswered.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::process::{Child, Stdio};

use super::*;

/// Peak resident memory of a process, in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The guard for `deploy` launching the fixture with `fixture_args` (tagged, so the
/// test can see the server go), its stdio wired as the caller says.
fn guard_with(project: &Project, fixture_args: &[&str], stdout: Stdio, stderr: Stdio) -> Child {
    let fixture = common::fixture().display().to_string();
    common::command(common::bin())
        .args(["guard", "deploy", "--", &fixture])
        .args(fixture_args)
        .current_dir(project.path())
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("the guard starts")
}

/// A call to a tool the lock does not pin, with a long name: the guard answers it
/// itself and says so in a long line on its stderr.
fn refused_call(id: usize) -> String {
    let tool = format!("no_such_tool_{}", "x".repeat(400));
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": {}}})
    .to_string()
}

#[test]
fn a_host_that_never_reads_the_guards_stderr_still_gets_every_answer() {
    let project = deploy_project(&[]);
    let mut guard = guard_with(&project, &[], Stdio::piped(), Stdio::piped());
    // Its stderr is held open and never read: once the pipe is full, a blocking write
    // of the guard's notes would never return.
    let _stderr = guard.stderr.take().unwrap();
    let mut stdin = guard.stdin.take().unwrap();
    let (tx, answers) = std::sync::mpsc::channel::<Value>();
    let stdout = guard.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });
    // 600 refusals say about 250 KB on stderr; the pipe holds 64 KB.
    for id in 1..=600 {
        writeln!(stdin, "{}", refused_call(id)).unwrap();
        let answer = answers
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("no answer to call {id}: the guard stalled"));
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["result"]["isError"], true, "{answer}");
    }
    drop(stdin);
    assert!(
        wait_exit(&mut guard, Duration::from_secs(10)).is_some(),
        "the guard exits"
    );
}

fn wait_exit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if std::time::Instant::now() >= deadline {
            // Only what this test started, by its PID.
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_client_that_closes_stdin_while_not_reading_stdout_ends_the_session_within_seconds() {
    let tag = format!("guard-unread-{}", std::process::id());
    let project = deploy_project(&[]);
    let mut guard = guard_with(&project, &["--tag", &tag], Stdio::piped(), Stdio::null());
    // Its stdout is held open and never read.
    let _stdout = guard.stdout.take().unwrap();
    let stdin = guard.stdin.take().unwrap();
    common::wait_until_running(&tag);
    // Calls the guard answers itself, written until nothing more goes in: the answers
    // fill stdout's pipe and the guard's queue for it, so the guard stops reading its
    // stdin, and that pipe fills too.
    let fd = stdin.as_raw_fd();
    // SAFETY: fcntl on the pipe this test holds.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    let (mut id, mut stalled) = (0, 0);
    let mut pending = Vec::new();
    while stalled < 50 {
        if pending.is_empty() {
            id += 1;
            pending = format!("{}\n", refused_call(id)).into_bytes();
        }
        // SAFETY: a write from a live buffer of its length.
        let n = unsafe { libc::write(fd, pending.as_ptr().cast(), pending.len()) };
        if n > 0 {
            stalled = 0;
            pending.drain(..n as usize);
        } else {
            stalled += 1;
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    assert!(id > 1000, "only {id} calls went in");
    drop(stdin);
    let status = wait_exit(&mut guard, Duration::from_secs(8));
    assert!(
        status.is_some(),
        "the guard still runs 8 s after its client closed stdin"
    );
    assert!(pids_with(&tag).is_empty(), "server left running");
}

#[test]
fn a_request_one_byte_over_the_limit_is_answered_with_its_own_id() {
    let project = deploy_project(&[]);
    let mut agent = McpPipe::guard(&project, &["deploy", "--max-message-bytes", "2048"]);
    agent.initialize();
    agent.list_tools();
    let over = |id: Value| {
        let line = |pad: usize| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "search_docs", "arguments": {"query": "x".repeat(pad)}}})
            .to_string()
        };
        let short = line(0).len();
        line(2049 - short)
    };
    for id in [json!(71), json!("big-72")] {
        let line = over(id.clone());
        assert_eq!(line.len(), 2049);
        agent.send_raw(&line);
        let answer = agent.next(Duration::from_secs(10)).expect("answered");
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert_eq!(answer["id"], id, "{answer}");
    }
    // An id that comes only past the first 64 KiB is not looked for.
    let late = format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"search_docs","arguments":{{"query":"{}"}}}},"id":73}}"#,
        "x".repeat(70_000)
    );
    agent.send_raw(&late);
    let answer = agent.next(Duration::from_secs(10)).expect("answered");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer["id"], Value::Null, "{answer}");
    assert!(actions(&project).is_empty());
    let ok = agent.call("read_ticket", json!({"id": "T-3"}));
    assert_eq!(ok["result"]["structuredContent"]["title"], "Ticket T-3");
}

#[test]
fn a_client_batch_of_millions_of_members_is_refused_in_bounded_memory() {
    let project = deploy_project(&[]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    // 15 MB: five million `{}`, under the 16 MiB message limit.
    let mut batch = "{},".repeat(5_000_000);
    batch.pop();
    agent.send_raw(&format!("[{batch}]"));
    drop(batch);
    let answer = agent.next(Duration::from_secs(60)).expect("answered");
    assert!(answer.is_object(), "one error, not a batch: {answer:.200}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("more than 1000"),
        "{answer}"
    );
    let peak = peak_kib(agent.child.id());
    eprintln!("the guard peaked at {peak} KiB for a 15 MB client batch");
    assert!(
        peak < 200 * 1024,
        "the guard peaked at {peak} KiB for a 15 MB batch"
    );
    let ok = agent.call("read_ticket", json!({"id": "T-4"}));
    assert_eq!(ok["result"]["structuredContent"]["title"], "Ticket T-4");
}

#[test]
fn a_server_batch_of_millions_of_members_is_dropped_in_bounded_memory() {
    let project = deploy_project(&[]);
    let fixture = common::fixture().display().to_string();
    let mut agent = McpPipe::guard(
        &project,
        &[
            "deploy",
            "--max-message-bytes",
            "67108864",
            "--",
            &fixture,
            "--misbehave",
            "zero-batch",
        ],
    );
    agent.initialize();
    agent.list_tools();
    // The server sends 30 MB of `[0,0,...]` before the answer.
    let answer = agent.call("read_ticket", json!({"id": "T-5"}));
    assert_eq!(
        answer["result"]["structuredContent"]["title"], "Ticket T-5",
        "{answer}"
    );
    assert!(
        agent.stderr_shows("dropped a batch from the server of more than 1000 messages"),
        "{}",
        agent.stderr()
    );
    let peak = peak_kib(agent.child.id());
    eprintln!("the guard peaked at {peak} KiB for a 30 MB server batch");
    assert!(
        peak < 200 * 1024,
        "the guard peaked at {peak} KiB for a 30 MB batch"
    );
}

#[test]
fn requests_past_the_pending_limit_are_answered_with_an_error_at_once() {
    let project = deploy_project(&[]);
    let fixture = common::fixture().display().to_string();
    // A server that hangs on the second page of a listing, and reads nothing more.
    let mut agent = McpPipe::guard(
        &project,
        &["deploy", "--", &fixture, "--misbehave", "hang-listing"],
    );
    agent.initialize();
    let limit = 10_000;
    let mut burst = String::new();
    for id in 1000..1000 + limit + 1 {
        burst.push_str(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list",
                "params": {"cursor": "page-1"}})
            .to_string(),
        );
        burst.push('\n');
    }
    agent.send_raw(burst.trim_end());
    let last = (1000 + limit) as i64;
    let answer = agent.answer(last);
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("10000 requests are already waiting"),
        "{answer}"
    );
    let peak = peak_kib(agent.child.id());
    eprintln!("the guard peaked at {peak} KiB with 10,000 requests waiting");
    assert!(peak < 200 * 1024, "the guard peaked at {peak} KiB");
}
