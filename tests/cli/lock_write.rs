//! Writing `mcp.lock` through the real binary: a symlinked lock keeps its link (a
//! dangling one is refused), and what a killed write left behind is cleaned up by the
//! next update.

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::{Project, fixture_entry};
use serde_json::json;

fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn a_symlinked_lock_is_written_through_and_stays_a_link() {
    let project = Project::new(json!({ "fixture": fixture_entry(&["--revision", "a"]) }));
    let shared = project.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    let link = project.path().join("mcp.lock");
    // The team's lock is pinned first; the link then points at it.
    project
        .run(&["--lock", "shared/team.lock", "update", "--yes"])
        .expect(0);
    std::os::unix::fs::symlink("shared/team.lock", &link).unwrap();
    project.run(&["update", "--yes"]).expect(0);
    let is_link = || {
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    };
    assert!(is_link(), "the update replaced the link");
    let first = std::fs::read_to_string(shared.join("team.lock")).unwrap();
    assert!(first.contains("[[server]]"), "{first}");

    project.set_servers(json!({ "fixture": fixture_entry(&["--revision", "b"]) }));
    project.run(&["update", "--yes"]).expect(0);
    assert!(is_link(), "the update replaced the link with a file");
    let second = std::fs::read_to_string(shared.join("team.lock")).unwrap();
    assert_ne!(second, first, "the target kept the old pins");
    project.run(&["verify"]).expect(0);
    assert_eq!(files_in(&shared), ["team.lock"]);
}

#[test]
fn a_dangling_lock_symlink_inside_the_project_is_refused_and_creates_nothing() {
    let project = Project::new(json!({ "fixture": fixture_entry(&[]) }));
    std::fs::create_dir(project.path().join("shared")).unwrap();
    std::os::unix::fs::symlink("shared/team.lock", project.path().join("mcp.lock")).unwrap();
    let run = project.run(&["update", "--yes"]);
    run.expect(2);
    let stderr = run.stderr();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cannot write mcp.lock: it is a symlink to")
            && stderr.contains("which does not exist"),
        "{stderr}"
    );
    assert!(files_in(&project.path().join("shared")).is_empty());
}

#[test]
fn temporary_files_a_killed_write_left_are_removed_by_the_next_update() {
    let project = Project::new(json!({ "fixture": fixture_entry(&[]) }));
    project.run(&["update", "--yes"]).expect(0);
    let pinned = project.lock_text().unwrap();
    // What a write killed before its rename leaves: the writer's own name pattern,
    // often still private.
    let stale = project.path().join(".mcp.lock.Q7x2Lm.tmp");
    std::fs::write(&stale, pinned.repeat(50)).unwrap();
    std::fs::set_permissions(&stale, std::fs::Permissions::from_mode(0o600)).unwrap();
    for other in [
        ".mcp.lock.notes.tmp",
        "mcp.lock.Q7x2Lm.tmp",
        ".mcp.lock.orig",
    ] {
        std::fs::write(project.path().join(other), "mine").unwrap();
    }
    // verify takes no file lock, so it cannot tell a live writer's file from a stale one.
    project.run(&["verify"]).expect(0);
    assert!(stale.exists());

    project.run(&["update", "--yes"]).expect(0);
    assert_eq!(project.lock_text().unwrap(), pinned);
    assert_eq!(
        files_in(project.path()),
        [
            ".mcp.json",
            ".mcp.lock.notes.tmp",
            ".mcp.lock.orig",
            "mcp.lock",
            "mcp.lock.Q7x2Lm.tmp"
        ]
    );
}
