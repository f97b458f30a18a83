//! Screening decides what the guard serves, as it decides what verify passes: a
//! changed tool whose live definition screening fails is hidden and its calls refused,
//! though its class alone would only warn.

use super::*;

/// Every high-severity rule the fixture's hostile `search_docs` raises.
const HOSTILE_HIGH: &[&str] = &["sensitive-read", "bidi-control", "control-characters"];

fn hostile_after_start(policy: &str) -> (Project, McpPipe) {
    let project = deploy_project(&[]);
    std::fs::write(project.path().join("mcp-lock.toml"), policy).unwrap();
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    assert!(names(&agent.list_tools()).contains(&"search_docs"));
    std::fs::write(project.path().join("rev"), "hostile").unwrap();
    agent.notification("notifications/tools/list_changed");
    (project, agent)
}

#[test]
fn a_changed_tool_screening_fails_is_hidden_and_refused_though_semantic_only_warns() {
    let (project, mut agent) = hostile_after_start("[verify]\nsemantic = \"warn\"\n");
    let tools = agent.list_tools();
    assert_eq!(names(&tools), ["deploy_preview", "read_ticket"]);
    let answer = agent.call("search_docs", json!({"query": "x"}));
    let r = refusal(&answer);
    assert_eq!(r["tool"], "search_docs");
    assert_eq!(r["side_effect_started"], false);
    assert!(!answer.to_string().contains("id_rsa"), "{answer}");
    assert_eq!(actions(&project), Vec::<Value>::new());
    // verify judges it the same way: the screening finding fails the run.
    let doc = project
        .run(&["verify", "--format", "json"])
        .expect(1)
        .json();
    let change = &doc["servers"][0]["changes"][0];
    assert_eq!(change["tool"], "search_docs");
    assert_eq!(change["action"], "fail");
    assert_eq!(change["class"], "semantic");
}

#[test]
fn the_same_tool_with_its_findings_accepted_is_served_live() {
    let accepted: Vec<String> = HOSTILE_HIGH
        .iter()
        .map(|rule| format!("\"deploy/search_*:{rule}\""))
        .collect();
    let policy = format!(
        "[verify]\nsemantic = \"warn\"\n[screen]\naccept = [{}]\n",
        accepted.join(", ")
    );
    let (project, mut agent) = hostile_after_start(&policy);
    let tools = agent.list_tools();
    assert_eq!(
        names(&tools),
        ["deploy_preview", "read_ticket", "search_docs"]
    );
    project.run(&["verify"]).expect(0);
}
