//! A server with 10,000 tools: pinned, verified and found drifted exactly as a small
//! one is. Only the results and the lock's bytes are asserted, never time (the
//! benchmark for that is benches/scale.py).

use crate::common;

use common::{Project, fixture_entry};
use serde_json::{Value, json};

/// Every tool the server lists: the fixture's three and its synthetic ones.
const TOOLS: usize = 10_000;
/// Revision b lists one tool more than the default --max-tools (10,000) allows.
const LIMIT: &str = "--max-tools=20000";
const SYNTHETIC: usize = TOOLS - 3;

fn project(revision_file: &std::path::Path) -> Project {
    let many = SYNTHETIC.to_string();
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

    // A second project pinning the same server must write the same bytes; both pin
    // at once (debug builds are slow at this size, and there are two cores).
    let again = project(&rev);
    std::thread::scope(|s| {
        s.spawn(|| {
            again.run(&["update", "--yes", LIMIT]).expect(0);
        });
        p.run(&["update", "--yes", LIMIT]).expect(0);
    });
    let lock = p.lock_text().unwrap();
    assert_eq!(again.lock_text().unwrap(), lock);
    let names = tool_names(&lock);
    assert_eq!(names.len(), TOOLS, "every tool is pinned once");
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "tools are pinned in name order");
    assert!(names.contains(&format!("bulk_{:05}", SYNTHETIC - 1)));

    let run = p.run(&["verify", "--format", "json", LIMIT]);
    run.expect(0);
    let report = run.json();
    assert_eq!(report["servers"][0]["verdict"], "converged");
    assert_eq!(report["servers"][0]["tools"], TOOLS);
    assert_eq!(p.lock_text().unwrap(), lock, "verify never writes the lock");

    std::fs::write(&rev, "b").unwrap();
    let run = p.run(&["verify", "--format", "json", LIMIT]);
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
    let mut expected: Vec<(String, String)> = (0..SYNTHETIC)
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

    // The formats that point into the lock render the 10,000-tool drift and name the
    // changed tools; both at once, for the two cores.
    std::thread::scope(|s| {
        for format in ["sarif", "junit"] {
            let (p, lock) = (&p, &lock);
            s.spawn(move || {
                let run = p.run(&["verify", "--format", format, LIMIT]);
                run.expect(1);
                let out = run.stdout();
                assert!(
                    out.contains("bulk_09000") && out.contains("bulk_00001"),
                    "{format} names the changed tools:\n{}",
                    &out[..out.len().min(2000)]
                );
                if format == "sarif" {
                    // Each result points at the line of the lock naming its tool.
                    let sarif: Value = serde_json::from_str(&out).unwrap();
                    let results = sarif["runs"][0]["results"].as_array().unwrap();
                    let mut pointed = 0;
                    for result in results {
                        let Some(tool) = result["properties"]["tool"].as_str() else {
                            continue;
                        };
                        let line = result["locations"][0]["physicalLocation"]["region"]["startLine"]
                            .as_u64()
                            .unwrap() as usize;
                        if tool == "rollback" {
                            continue; // not pinned: its server's line
                        }
                        assert_eq!(
                            lock.lines().nth(line - 1),
                            Some(format!("name = \"{tool}\"").as_str()),
                            "{tool} at line {line}"
                        );
                        pointed += 1;
                    }
                    assert_eq!(pointed, 13, "every changed pinned tool is located");
                }
            });
        }
    });
    assert_eq!(p.lock_text().unwrap(), lock);

    // A lock this large has its definitions read while the server is listed: one
    // edited by hand is refused as in a small lock, naming its line, the server
    // stopped and nothing reported.
    std::fs::write(&rev, "a").unwrap();
    let tool = format!("bulk_{:05}", SYNTHETIC / 2);
    let at = lock.find(&format!("name = \"{tool}\"\n")).unwrap();
    let def = at + lock[at..].find("definition = '''").unwrap();
    let line = 1 + lock[..def].matches('\n').count();
    let quote = def + lock[def..].find("\"description\": \"").unwrap() + 16;
    let edited = format!("{}Edited: {}", &lock[..quote], &lock[quote..]);
    std::fs::write(p.path().join("mcp.lock"), &edited).unwrap();
    for format in ["human", "json"] {
        let run = p.run(&["verify", "--format", format, LIMIT]);
        run.expect(2);
        let expected = format!(
            "mcp.lock:{line}: tool {tool:?} of server \"bulk\": the definition does not match its hash"
        );
        assert!(run.stderr().contains(&expected), "{}", run.stderr());
        assert_eq!(run.stdout(), "", "no report for a lock that does not read");
        assert_eq!(
            common::processes_with(&rev.display().to_string()),
            Vec::<String>::new()
        );
    }
}
