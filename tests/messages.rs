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
        // SIGKILL is sent, but a process takes a moment to go.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !processes_with(&tag).is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "servers outlived mcp-lock: {:?}",
                processes_with(&tag)
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

#[test]
fn update_help_says_that_without_a_terminal_what_the_policy_accepts_is_written() {
    let help = Project::new(serde_json::json!({}))
        .run(&["update", "--help"])
        .expect(0)
        .stdout();
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(!flat.contains("nothing is written"), "{help}");
    assert!(
        flat.contains("Without a terminal and without --yes, only the changes the policy accepts"),
        "{help}"
    );
    // And that is what happens: the cosmetic change is written, the additive one is
    // left for a person, exit 4.
    let rev = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(rev.path(), "a").unwrap();
    let p = Project::new(serde_json::json!({
        "fixture": fixture_entry(&["--revision-file", &rev.path().display().to_string()])
    }));
    p.run(&["update", "--yes"]).expect(0);
    std::fs::write(rev.path(), "additive").unwrap();
    p.run(&["update", "--accept", "cosmetic"]).expect(4);
    let doc = p.run(&["verify", "--format", "json"]).expect(0).json();
    let left: Vec<&str> = doc["servers"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tool"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["search_docs"]);
}

#[test]
fn an_error_names_its_cause_once() {
    let p = Project::new(serde_json::json!({}));
    std::fs::create_dir(p.path().join("a-directory")).unwrap();
    let cases: [(&[&str], &str); 3] = [
        (
            &["--config", "nosuch.json", "verify"],
            "error: cannot read nosuch.json: No such file or directory (os error 2)\n",
        ),
        (
            &["--lock", "a-directory", "verify"],
            "error: cannot read a-directory: Is a directory (os error 21)\n",
        ),
        (
            &["--policy", "a-directory", "verify"],
            "error: cannot read a-directory: Is a directory (os error 21)\n",
        ),
    ];
    for (args, said) in cases {
        let run = p.run(args);
        run.expect(2);
        assert_eq!(run.stderr(), said, "{args:?}");
    }
}

#[test]
fn limits_that_cannot_work_are_refused_not_raised() {
    let p = Project::new(serde_json::json!({ "fixture": fixture_entry(&[]) }));
    let cases: [(&[&str], &str); 6] = [
        (
            &["verify", "--max-message-bytes", "10"],
            "must be at least 1024",
        ),
        (&["verify", "--max-pages", "0"], "must be at least 1"),
        (&["update", "--jobs", "0"], "must be at least 1"),
        (&["diff", "--max-tools", "0"], "must be at least 1"),
        (
            &["guard", "fixture", "--max-message-bytes", "1"],
            "must be at least 1024",
        ),
        (&["verify", "--jobs=-3"], "is not a whole number"),
    ];
    for (args, said) in cases {
        let run = p.run(args);
        run.expect(2);
        let stderr = run.stderr();
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        let flag = args.iter().find(|a| a.starts_with("--")).unwrap();
        let flag = flag.split('=').next().unwrap();
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
    // The smallest values that can work are taken as given.
    p.run(&["update", "--yes", "--jobs", "1", "--max-pages", "1"])
        .expect(0);
}
