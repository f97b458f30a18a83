//! The whole contract surface: prompts and resource templates are listed, pinned,
//! classified and verified like tools (resources on request), against the fixture and
//! two real releases of server-everything.

use crate::common;

use std::path::PathBuf;

use common::{Project, fixture_entry};
use serde_json::{Value, json};

fn servers_dir() -> PathBuf {
    let dir = common::test_servers_dir();
    assert!(
        dir.join("npm/node_modules/server-everything-2025.7.1")
            .is_dir(),
        "real MCP servers are not installed in {}; run scripts/install-test-servers.sh (bash .ci/run does)",
        dir.display()
    );
    dir
}

fn everything(release: &str) -> Value {
    let package = match release {
        "2025.7.1" => "server-everything-2025.7.1",
        _ => "@modelcontextprotocol/server-everything",
    };
    let main = servers_dir()
        .join("npm/node_modules")
        .join(package)
        .join("dist/index.js");
    json!({"command": "node", "args": [main.display().to_string()]})
}

/// (kind, change, key) of every change in the first server of a JSON report.
fn changes(doc: &Value) -> Vec<(String, String, String)> {
    doc["servers"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap().to_string(),
                c["change"].as_str().unwrap().to_string(),
                c["tool"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A fixture project serving prompts and templates, its revision read from a file.
fn surface_project(extra: &[&str]) -> (Project, tempfile::NamedTempFile) {
    let rev = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(rev.path(), "a").unwrap();
    let path = rev.path().display().to_string();
    let mut args = vec!["--surface", "--revision-file", path.as_str()];
    args.extend(extra);
    let p = Project::new(json!({"fixture": fixture_entry(&args)}));
    (p, rev)
}

#[test]
fn server_everything_pins_its_four_prompts_and_two_templates_and_relocks_byte_identically() {
    let p = Project::new(json!({"everything": everything("2026.8.31")}));
    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    assert_eq!(lock.matches("\n[[server.prompt]]\n").count(), 4, "{lock}");
    assert_eq!(lock.matches("\n[[server.resource_template]]\n").count(), 2);
    assert!(
        !lock.contains("[[server.resource]]"),
        "resources are pinned on request"
    );
    for prompt in [
        "simple-prompt",
        "args-prompt",
        "completable-prompt",
        "resource-prompt",
    ] {
        assert!(lock.contains(&format!("name = \"{prompt}\"")), "{prompt}");
    }
    let doc = p.run(&["verify", "--format", "json"]).expect(0).json();
    let server = &doc["servers"][0];
    assert_eq!(server["verdict"], "converged");
    assert_eq!(
        (
            &server["tools"],
            &server["prompts"],
            &server["resource_templates"]
        ),
        (&json!(16), &json!(4), &json!(2))
    );
    p.run(&["update", "--yes"]).expect(0);
    assert_eq!(
        p.lock_text().unwrap(),
        lock,
        "a second update wrote other bytes"
    );
}

#[test]
fn a_real_release_upgrade_reports_every_prompt_and_template_change_and_no_false_rename() {
    let p = Project::new(json!({"everything": everything("2025.7.1")}));
    p.run(&["update", "--yes"]).expect(0);
    p.set_servers(json!({"everything": everything("2026.8.31")}));
    let doc = p.run(&["verify", "--format", "json"]).expect(1).json();
    let surface: Vec<(String, String, String)> = changes(&doc)
        .into_iter()
        .filter(|(kind, _, _)| kind != "tool")
        .collect();
    let expect = |kind: &str, change: &str, key: &str| {
        (kind.to_string(), change.to_string(), key.to_string())
    };
    // simple_prompt -> simple-prompt and resource_prompt -> resource-prompt change
    // their definitions too, so they are no renames; complex_prompt is gone and
    // args-prompt is new.
    assert_eq!(
        surface,
        [
            expect("prompt", "added", "args-prompt"),
            expect("prompt", "added", "completable-prompt"),
            expect("prompt", "removed", "complex_prompt"),
            expect("prompt", "added", "resource-prompt"),
            expect("prompt", "removed", "resource_prompt"),
            expect("prompt", "added", "simple-prompt"),
            expect("prompt", "removed", "simple_prompt"),
            expect(
                "resource_template",
                "added",
                "demo://resource/dynamic/blob/{resourceId}"
            ),
            expect(
                "resource_template",
                "added",
                "demo://resource/dynamic/text/{resourceId}"
            ),
            expect(
                "resource_template",
                "removed",
                "test://static/resource/{id}"
            ),
        ]
    );
    let human = p.run(&["verify"]).stdout();
    assert!(
        human.contains("removed  prompt complex_prompt  prompt-removed, fail"),
        "{human}"
    );
    assert!(
        human.contains("added    template demo://resource/dynamic/text/{resourceId}  resource-template-added, fail"),
        "{human}"
    );
}

#[test]
fn a_prompt_renamed_with_its_definition_kept_is_one_rename() {
    let (p, rev) = surface_project(&[]);
    p.run(&["update", "--yes"]).expect(0);
    std::fs::write(rev.path(), "prompt-renamed").unwrap();
    let doc = p.run(&["verify", "--format", "json"]).expect(1).json();
    let all = doc["servers"][0]["changes"].as_array().unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    let change = &all[0];
    assert_eq!(
        (
            &change["kind"],
            &change["change"],
            &change["tool"],
            &change["renamed_from"]
        ),
        (
            &json!("prompt"),
            &json!("renamed"),
            &json!("hello"),
            &json!("greeting")
        )
    );
    assert_eq!(change["action"], "fail");
    let human = p.run(&["verify"]).stdout();
    assert!(
        human.contains("renamed  prompt hello (was greeting)  renamed, fail"),
        "{human}"
    );
    // Approved, the pin moves from the old name to the new one.
    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    assert!(lock.contains("name = \"hello\"") && !lock.contains("name = \"greeting\""));
    p.run(&["verify"]).expect(0);
}

#[test]
fn prompt_and_template_changes_are_classified_and_judged_like_tool_changes() {
    let (p, rev) = surface_project(&[]);
    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    for (revision, kind, key, class, exit) in [
        (
            "prompt-required",
            "prompt",
            "summarize_ticket",
            "breaking",
            1,
        ),
        ("prompt-optional", "prompt", "release_notes", "additive", 0),
        (
            "prompt-reworded",
            "prompt",
            "summarize_ticket",
            "semantic",
            1,
        ),
        ("prompt-title", "prompt", "summarize_ticket", "cosmetic", 0),
        // The uriTemplate moved with all else equal: one rename, judged authority.
        (
            "template-widened",
            "resource_template",
            "fixture://{tenant}/tickets/{id}",
            "authority",
            1,
        ),
        (
            "template-mime",
            "resource_template",
            "fixture://docs/{path}",
            "breaking",
            1,
        ),
    ] {
        std::fs::write(rev.path(), revision).unwrap();
        let run = p.run(&["verify", "--format", "json"]);
        run.expect(exit);
        let doc = run.json();
        let found: Vec<(String, String)> = doc["servers"][0]["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["tool"].as_str().unwrap().to_string(),
                    c["class"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        assert!(
            found.contains(&(key.to_string(), class.to_string())),
            "{revision}: {found:?}"
        );
        assert!(
            doc["servers"][0]["changes"]
                .as_array()
                .unwrap()
                .iter()
                .all(|c| c["kind"] == kind),
            "{revision}: {doc}"
        );
        assert_eq!(p.lock_text().unwrap(), lock, "verify wrote the lock");
    }
    // SARIF points at the line of the prompt's pin in the lock.
    std::fs::write(rev.path(), "prompt-required").unwrap();
    let sarif: Value =
        serde_json::from_str(&p.run(&["verify", "--format", "sarif"]).stdout()).unwrap();
    let result = &sarif["runs"][0]["results"][0];
    let line = result["locations"][0]["physicalLocation"]["region"]["startLine"]
        .as_u64()
        .unwrap() as usize;
    assert_eq!(
        lock.lines().nth(line - 1),
        Some("name = \"summarize_ticket\""),
        "{result}"
    );
    assert_eq!(lock.lines().nth(line - 2), Some("[[server.prompt]]"));
    assert_eq!(result["properties"]["prompt"], "summarize_ticket");
}

#[test]
fn prompts_templates_and_resources_are_read_over_every_page() {
    let (p, _rev) = surface_project(&["--page-size", "1"]);
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[surface]\nresources = true\n",
    )
    .unwrap();
    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    assert_eq!(lock.matches("\n[[server.prompt]]\n").count(), 3);
    assert_eq!(lock.matches("\n[[server.resource_template]]\n").count(), 2);
    assert_eq!(lock.matches("\n[[server.resource]]\n").count(), 3);
    assert!(lock.contains("uri = \"fixture://readme\""), "{lock}");
    let doc = p.run(&["verify", "--format", "json"]).expect(0).json();
    assert_eq!(doc["servers"][0]["resources"], 3);
}

#[test]
fn resources_are_pinned_only_for_the_servers_that_ask() {
    let (p, _rev) = surface_project(&[]);
    p.run(&["update", "--yes"]).expect(0);
    assert!(!p.lock_text().unwrap().contains("[[server.resource]]"));
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[surface.server.fixture]\nresources = true\n",
    )
    .unwrap();
    // Resources the lock does not pin yet are a notice until update pins them.
    let run = p.run(&["verify", "--format", "json"]);
    run.expect(0);
    assert_eq!(
        run.json()["servers"][0]["not_pinned_yet"],
        json!(["resource"])
    );
    p.run(&["update", "--yes"]).expect(0);
    assert_eq!(
        p.lock_text()
            .unwrap()
            .matches("\n[[server.resource]]\n")
            .count(),
        3
    );
}

#[test]
fn a_declared_kind_that_cannot_be_listed_makes_the_server_incomplete() {
    for (misbehave, message) in [
        (
            "prompts-cursor-loop",
            "prompts/list: cursor loop: the server returned cursor \"page-1\" twice",
        ),
        (
            "templates-fail",
            "resources/templates/list page 1: error -32603: templates unavailable",
        ),
        // -32601 is "none to list" on the first page only: after one, the list was
        // there and did not finish.
        (
            "templates-gone-page-2",
            "resources/templates/list page 2: error -32601: Method not found",
        ),
    ] {
        let p = Project::new(json!({
            "fixture": fixture_entry(&["--surface", "--page-size", "1", "--misbehave", misbehave])
        }));
        let run = p.run(&["update", "--yes"]);
        run.expect(3);
        assert!(
            run.stderr().contains(message),
            "{misbehave}: {}",
            run.stderr()
        );
        assert!(p.lock_text().is_none(), "an incomplete listing was pinned");
    }
}

#[test]
fn a_lock_from_before_prompts_were_pinned_verifies_with_a_notice_and_update_pins_them() {
    let (p, _rev) = surface_project(&[]);
    let toml = p.path().join("mcp-lock.toml");
    std::fs::write(
        &toml,
        "[surface]\nprompts = false\nresource-templates = false\n",
    )
    .unwrap();
    p.run(&["update", "--yes"]).expect(0);
    let before = p.lock_text().unwrap();
    assert!(!before.contains("prompts_set_hash") && !before.contains("[[server.prompt]]"));
    std::fs::remove_file(&toml).unwrap();

    let run = p.run(&["verify"]);
    run.expect(0);
    assert!(
        run.stdout().contains(
            "note: prompts and templates not pinned yet (the lock is from before they were); `mcp-lock update fixture` shows and pins them"
        ),
        "{}",
        run.stdout()
    );
    let doc = p.run(&["verify", "--format", "json"]).expect(0).json();
    assert_eq!(
        doc["servers"][0]["not_pinned_yet"],
        json!(["prompt", "resource_template"])
    );

    let run = p.run(&["update"]);
    run.expect(4);
    assert!(
        run.stderr().contains("fixture [claude-code]: prompts not pinned yet (a lock from before they were); 3 prompts to pin"),
        "{}",
        run.stderr()
    );
    assert_eq!(p.lock_text().unwrap(), before);
    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    assert_eq!(lock.matches("\n[[server.prompt]]\n").count(), 3);
    let doc = p.run(&["verify", "--format", "json"]).expect(0).json();
    assert_eq!(doc["servers"][0]["verdict"], "converged");
    assert!(doc["servers"][0].get("not_pinned_yet").is_none());
}

#[test]
fn declared_templates_answered_with_method_not_found_are_pinned_as_none_and_noted() {
    let (p, rev) = surface_project(&[]);
    std::fs::write(rev.path(), "templates-unimplemented").unwrap();
    let note = "declares resources but answers resources/templates/list with -32601 (method not found): no templates to pin";

    let run = p.run(&["update", "--yes"]);
    run.expect(0);
    assert!(run.stderr().contains(note), "{}", run.stderr());
    let lock = p.lock_text().unwrap();
    assert_eq!(lock.matches("\n[[server.tool]]\n").count(), 3, "{lock}");
    assert_eq!(lock.matches("\n[[server.prompt]]\n").count(), 3, "{lock}");
    assert!(!lock.contains("[[server.resource_template]]"), "{lock}");
    assert!(lock.contains("resource_templates_set_hash"), "{lock}");

    let run = p.run(&["verify"]);
    run.expect(0);
    assert!(run.stdout().contains("converged"), "{}", run.stdout());
    assert!(
        run.stdout().contains(&format!("note: {note}")),
        "{}",
        run.stdout()
    );
    let doc = p.run(&["verify", "--format", "json"]).expect(0).json();
    let server = &doc["servers"][0];
    assert_eq!(server["verdict"], "converged");
    assert_eq!(server["resource_templates"], 0);
    assert_eq!(server["not_implemented"], json!(["resource_template"]));
    let md = p.run(&["verify", "--format", "markdown"]);
    md.expect(0);
    assert!(
        md.stdout().contains("Note: declares resources"),
        "{}",
        md.stdout()
    );

    // The server starts serving templates: each is an addition against the empty pin,
    // judged by the policy like any other.
    std::fs::write(rev.path(), "a").unwrap();
    let run = p.run(&["verify", "--format", "json"]);
    run.expect(1);
    let doc = run.json();
    assert_eq!(doc["servers"][0]["verdict"], "stale");
    assert!(doc["servers"][0].get("not_implemented").is_none());
    let mut added = changes(&doc);
    added.sort();
    assert_eq!(
        added,
        [
            ("resource_template", "added", "fixture://docs/{path}"),
            ("resource_template", "added", "fixture://tickets/{id}"),
        ]
        .map(|(k, c, t)| (k.to_string(), c.to_string(), t.to_string()))
    );
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[verify]\nresource-template-added = \"warn\"\n",
    )
    .unwrap();
    p.run(&["verify"]).expect(0);
}

#[test]
fn declared_prompts_answered_with_method_not_found_are_pinned_as_none() {
    let (p, rev) = surface_project(&[]);
    std::fs::write(rev.path(), "prompts-unimplemented").unwrap();
    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    assert!(!lock.contains("[[server.prompt]]"), "{lock}");
    assert_eq!(lock.matches("\n[[server.resource_template]]\n").count(), 2);
    let doc = p.run(&["verify", "--format", "json"]).expect(0).json();
    assert_eq!(doc["servers"][0]["not_implemented"], json!(["prompt"]));
    assert_eq!(doc["servers"][0]["prompts"], 0);
}

/// @modelcontextprotocol/server-postgres 0.6.2, as installed by
/// scripts/install-test-servers.sh: it declares `resources` and answers
/// resources/templates/list with -32601, and lists its tool without a database.
#[test]
fn server_postgres_which_has_no_template_list_is_pinned_out_of_the_box() {
    let main = common::test_servers_dir()
        .join("popular/npm/node_modules/@modelcontextprotocol/server-postgres/dist/index.js");
    assert!(
        main.is_file(),
        "@modelcontextprotocol/server-postgres is not installed at {}; run scripts/install-test-servers.sh (bash .ci/run does)",
        main.display()
    );
    // Nothing listens there: the tool listing needs no connection.
    let p = Project::new(json!({"postgres": {
        "command": "node",
        "args": [main.display().to_string(), "postgresql://127.0.0.1:9/none"],
    }}));
    let run = p.run(&["update", "--yes"]);
    run.expect(0);
    let lock = p.lock_text().unwrap();
    assert!(lock.contains("name = \"query\""), "{lock}");
    let run = p.run(&["verify"]);
    run.expect(0);
    assert!(
        run.stdout().contains(
            "note: declares resources but answers resources/templates/list with -32601 (method not found): no templates to pin"
        ),
        "{}",
        run.stdout()
    );
}
