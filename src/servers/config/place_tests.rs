use super::*;
use serde_json::json;

#[test]
fn amazonq_agent_tools_follow_the_agents_allow_list() {
    let tools = |list: serde_json::Value, server: &str| {
        amazonq_agent_tools(&json!({ "tools": list }), server).unwrap()
    };
    assert_eq!(tools(json!(["*"]), "git"), None);
    assert_eq!(tools(json!(["@git"]), "git"), None);
    assert_eq!(
        tools(json!(["@git/status", "@git/log", "fs_read"]), "git"),
        Some(vec!["status".to_string(), "log".to_string()])
    );
    // "*" beside other items is not "every tool" to Amazon Q.
    assert_eq!(tools(json!(["*", "fs_read"]), "git"), Some(vec![]));
    assert_eq!(tools(json!(["@other"]), "git"), Some(vec![]));
    assert_eq!(
        amazonq_agent_tools(&json!({}), "git").unwrap(),
        Some(vec![])
    );
    assert!(amazonq_agent_tools(&json!({"tools": "*"}), "git").is_err());
}

#[test]
fn opencode_merges_server_entries_member_by_member() {
    let mut far =
        json!({"mcp": {"a": {"type": "local", "command": ["x"], "environment": {"K": "1"}}}});
    merge_deep(
        &mut far,
        json!({"mcp": {"a": {"command": ["y", "z"]}, "b": {"type": "remote", "url": "http://h"}}}),
    );
    assert_eq!(
        far,
        json!({"mcp": {"a": {"type": "local", "command": ["y", "z"], "environment": {"K": "1"}},
                           "b": {"type": "remote", "url": "http://h"}}})
    );
}

#[test]
fn a_continue_single_server_json_is_named_after_its_file() {
    let file = Path::new("/p/.continue/mcpServers/fetcher.json");
    let read = read_file(
        r#"{"command": "uvx", "args": ["mcp-server-fetch"]}"#,
        "fetcher.json",
        file,
        Path::new("/p"),
    )
    .unwrap();
    assert_eq!(read.host, Host::Continue);
    let servers: Vec<_> = read.servers().collect();
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0].name, "fetcher");
    assert!(read_file(r#"{"models": []}"#, "x.json", file, Path::new("/p")).is_err());
}

#[test]
fn a_continue_single_server_is_found_on_the_line_its_object_opens() {
    let file = Path::new("/p/.continue/mcpServers/fetcher.json");
    let text = "// fetches pages\n\n{\n  \"command\": \"uvx\"\n}\n";
    let read = read_file(text, "fetcher.json", file, Path::new("/p")).unwrap();
    assert_eq!(read.entries[0].line, 3);
}

#[test]
fn opencode_layers_outside_a_repository_are_the_project_directorys_only() {
    let top = tempfile::tempdir().unwrap();
    let project = top.path().join("a/b");
    std::fs::create_dir_all(project.join(".opencode")).unwrap();
    for file in [
        top.path().join("opencode.json"),
        top.path().join("a/opencode.json"),
        project.join("opencode.json"),
        project.join(".opencode/opencode.json"),
    ] {
        std::fs::write(file, "{}").unwrap();
    }
    assert_eq!(
        opencode_layers(&project),
        [
            project.join("opencode.json"),
            project.join(".opencode/opencode.json")
        ]
    );
}

#[test]
fn opencode_layers_run_from_the_git_root_down_then_dot_opencode_up() {
    let top = tempfile::tempdir().unwrap();
    let root = top.path().join("repo");
    let project = root.join("a/b");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(project.join(".opencode")).unwrap();
    std::fs::create_dir_all(root.join(".opencode")).unwrap();
    for file in [
        top.path().join("opencode.json"),
        root.join("opencode.json"),
        root.join("a/opencode.jsonc"),
        project.join("opencode.json"),
        project.join("opencode.jsonc"),
        project.join(".opencode/opencode.json"),
        root.join(".opencode/opencode.jsonc"),
    ] {
        std::fs::write(file, "{}").unwrap();
    }
    let rel: Vec<String> = opencode_layers(&project)
        .iter()
        .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    assert_eq!(
        rel,
        [
            "opencode.json",
            "a/opencode.jsonc",
            "a/b/opencode.json",
            "a/b/opencode.jsonc",
            "a/b/.opencode/opencode.json",
            ".opencode/opencode.jsonc",
        ]
    );
}

#[test]
fn an_amazonq_agent_without_servers_reads_as_empty() {
    let file = Path::new("/p/.amazonq/cli-agents/dev.json");
    let read = read_file(
        r#"{"name": "dev", "tools": ["*"]}"#,
        "dev.json",
        file,
        Path::new("/p"),
    )
    .unwrap();
    assert_eq!(read.host, Host::AmazonQ);
    assert!(read.entries.is_empty());
}
