//! A server with 10,000 tools: pinned, verified and found drifted exactly as a small
//! one is. Only the results and the lock's bytes are asserted, never time (the
//! benchmark for that is benches/scale.py).

mod common;

use common::{Project, fixture_entry};
use serde_json::{Value, json};

const TOOLS: usize = 10_000;

fn project(revision_file: &std::path::Path) -> Project {
    let many = TOOLS.to_string();
    let rev = revision_file.display().to_string();
    Project::bare(json!({
        "bulk": fixture_entry(&["--many", &many, "--page-size", "500", "--revision-file", &rev]),
    }))
}

fn tool_names(lock: &str) -> Vec<String> {
    lock.lines()
        .zip(lock.lines().skip(1))
        .filter(|(table, _)| *table == "[[server.tool]]")
        .filter_map(|(_, name)| name.strip_prefix("name = \""))
        .map(|n| n.trim_end_matches('"').to_string())
        .collect()
}

#[test]
fn ten_thousand_tools_pin_verify_and_drift_like_three() {
    let dir = tempfile::tempdir().unwrap();
    let rev = dir.path().join("revision");
    std::fs::write(&rev, "a").unwrap();
    let p = project(&rev);

    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    let names = tool_names(&lock);
    assert_eq!(names.len(), TOOLS + 3, "every tool is pinned once");
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "tools are pinned in name order");
    assert!(names.contains(&"bulk_09999".to_string()));

    // A second project pinning the same server writes the same bytes.
    let again = project(&rev);
    again.run(&["update", "--yes"]).expect(0);
    assert_eq!(again.lock_text().unwrap(), lock);

    let run = p.run(&["verify", "--format", "json"]);
    run.expect(0);
    let report = run.json();
    assert_eq!(report["servers"][0]["verdict"], "converged");
    assert_eq!(report["servers"][0]["tools"], TOOLS + 3);
    assert_eq!(p.lock_text().unwrap(), lock, "verify never writes the lock");

    std::fs::write(&rev, "b").unwrap();
    let run = p.run(&["verify", "--format", "json"]);
    run.expect(1);
    let report = run.json();
    let server = &report["servers"][0];
    assert_eq!(server["verdict"], "stale");
    let mut changes: Vec<(String, String)> = server["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c: &Value| {
            (
                c["tool"].as_str().unwrap().to_string(),
                c["change"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    changes.sort();
    let mut expected: Vec<(String, String)> = (0..TOOLS)
        .step_by(1000)
        .map(|i| (format!("bulk_{i:05}"), "changed".to_string()))
        .chain([
            ("bulk_00001".to_string(), "changed".to_string()),
            ("deploy_preview".to_string(), "changed".to_string()),
            ("rollback".to_string(), "added".to_string()),
            ("search_docs".to_string(), "changed".to_string()),
        ])
        .collect();
    expected.sort();
    assert_eq!(changes, expected);
    let required = server["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == "bulk_00001")
        .unwrap();
    assert_eq!(required["class"], "breaking", "{required}");

    // Every report format renders the 10,000-tool drift; each names the changed tools.
    for format in ["human", "sarif", "junit", "github", "markdown"] {
        let run = p.run(&["verify", "--format", format]);
        run.expect(1);
        let out = run.stdout();
        assert!(
            out.contains("bulk_09000") && out.contains("bulk_00001"),
            "{format} names the changed tools:\n{}",
            &out[..out.len().min(2000)]
        );
    }
    assert_eq!(p.lock_text().unwrap(), lock);
}
