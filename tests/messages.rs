//! What mcp-lock says, through the real binary: interrupts, help, limits, errors and
//! the small words of its reports.

mod common;

use common::{Project, fixture_entry, processes_with, unique_tag};

#[test]
fn nothing_is_printed_after_the_interrupt_message() {
    let tag = unique_tag("sigterm-quiet");
    // Many servers, so that some report their kill while the message goes out.
    let servers: serde_json::Map<String, serde_json::Value> = (0..10)
        .map(|i| {
            (
                format!("s{i}"),
                fixture_entry(&["--misbehave", "hang-initialize", "--tag", &tag]),
            )
        })
        .collect();
    let p = Project::new(serde_json::Value::Object(servers));
    for _ in 0..3 {
        let child = p.spawn(&["update", "--yes"]);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while processes_with(&tag).len() < 10 {
            assert!(
                std::time::Instant::now() < deadline,
                "the servers did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // SAFETY: signalling the mcp-lock process this test started.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{stderr}");
        // The servers mcp-lock killed itself are not failures to report.
        assert_eq!(stderr, "interrupted: nothing was written\n");
        assert_eq!(processes_with(&tag), Vec::<String>::new());
    }
}
