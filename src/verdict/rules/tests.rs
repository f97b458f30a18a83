use serde_json::json;

use super::*;
use crate::verdict::policy::Policy;

fn project(text: &str) -> ToolRules {
    Policy::parse(text, "mcp-lock.toml").unwrap().rules
}

fn tool<'a>(
    server: &'a str,
    name: &'a str,
    annotations: Option<&'a Map<String, Value>>,
) -> Subject<'a> {
    Subject {
        kind: Kind::Tool,
        server,
        name,
        other: None,
        annotations,
    }
}

fn denied(rules: &ToolRules, profile: &str, server: &str, name: &str) -> Option<String> {
    rules
        .decide(profile, &tool(server, name, None))
        .map(|d| d.rule)
}

#[test]
fn a_deny_glob_denies_the_tools_it_matches_and_names_itself() {
    let rules = project("[tools]\ndeny = [\"github/merge_pull_request\", \"github/delete_*\"]\n");
    assert_eq!(
        denied(&rules, "claude-code", "github", "delete_repository").as_deref(),
        Some("[tools] deny \"github/delete_*\"")
    );
    assert!(denied(&rules, "claude-code", "github", "merge_pull_request").is_some());
    assert_eq!(
        denied(&rules, "claude-code", "github", "create_issue"),
        None
    );
    let d = rules
        .decide("codex", &tool("github", "delete_file", None))
        .unwrap();
    assert_eq!(
        d.to_string(),
        "[tools] deny \"github/delete_*\" in mcp-lock.toml"
    );
}

#[test]
fn an_allow_list_denies_every_tool_it_does_not_match() {
    let rules = project("[tools]\nallow = [\"github/get_*\", \"fetch/*\"]\n");
    assert_eq!(denied(&rules, "codex", "github", "get_issue"), None);
    assert_eq!(denied(&rules, "codex", "fetch", "fetch"), None);
    assert_eq!(
        denied(&rules, "codex", "github", "create_issue").as_deref(),
        Some("[tools] allow (not listed)")
    );
}

#[test]
fn annotation_rules_judge_effective_hints_and_except_names_a_tool_out() {
    let rules =
        project("[tools]\ndeny-when = [\"destructive\"]\nexcept = [\"github/create_issue\"]\n");
    let read_only = json!({"readOnlyHint": true});
    let safe = json!({"readOnlyHint": false, "destructiveHint": false});
    let said_nothing = json!({});
    let decide = |name: &str, a: &Value| {
        rules
            .decide("codex", &tool("github", name, a.as_object()))
            .map(|d| d.rule)
    };
    assert_eq!(decide("get_issue", &read_only), None);
    assert_eq!(decide("add_comment", &safe), None);
    assert_eq!(
        decide("delete_branch", &said_nothing).as_deref(),
        Some("[tools] deny-when \"destructive\""),
        "a tool that says nothing is, in effect, destructive"
    );
    assert_eq!(decide("create_issue", &said_nothing), None);
    // Without annotations at all, the spec's defaults apply too.
    assert!(
        rules
            .decide("codex", &tool("github", "push", None))
            .is_some()
    );
}

#[test]
fn a_host_section_allows_a_tool_for_that_host_only_and_can_narrow_too() {
    let rules = project(concat!(
        "[tools]\ndeny = [\"github/merge_pull_request\"]\n",
        "[profile.claude-code.tools]\nallow = [\"github/merge_pull_request\"]\n",
        "[profile.codex.tools]\ndeny = [\"github/create_*\"]\n",
    ));
    assert_eq!(
        denied(&rules, "claude-code", "github", "merge_pull_request"),
        None
    );
    assert_eq!(
        denied(&rules, "gemini-cli", "github", "merge_pull_request").as_deref(),
        Some("[tools] deny \"github/merge_pull_request\"")
    );
    assert_eq!(
        denied(&rules, "codex", "github", "create_issue").as_deref(),
        Some("[profile.codex.tools] deny \"github/create_*\"")
    );
    assert_eq!(
        denied(&rules, "claude-code", "github", "create_issue"),
        None
    );
}

#[test]
fn a_users_deny_stays_denied_whatever_the_project_allows() {
    let mut rules = project(concat!(
        "[tools]\nallow = [\"github/*\"]\n",
        "[profile.claude-code.tools]\nallow = [\"github/delete_repository\"]\n",
    ));
    let user = user_layer_from_text(
        "[tools]\ndeny = [\"*/delete_*\"]\n[audit]\nsign-command = [\"x\"]\n",
        "/home/u/.config/mcp-lock/mcp-lock.toml",
    )
    .unwrap()
    .unwrap();
    rules.add_user_layer(user);
    let d = rules
        .decide("claude-code", &tool("github", "delete_repository", None))
        .unwrap();
    assert_eq!(d.rule, "[tools] deny \"*/delete_*\"");
    assert_eq!(d.source, "/home/u/.config/mcp-lock/mcp-lock.toml");
    // The project still narrows: its allow list applies under the user's rules.
    assert!(denied(&rules, "codex", "fetch", "fetch").is_some());
    assert_eq!(denied(&rules, "codex", "github", "get_issue"), None);
}

#[test]
fn a_users_file_without_rules_gives_no_layer_and_a_broken_one_names_its_line() {
    assert_eq!(
        user_layer_from_text("[audit]\nsigning-key = \"k\"\n", "u.toml").unwrap(),
        None
    );
    let err = user_layer_from_text("[tools]\n\ndeny = [\"nope\"]\n", "u.toml").unwrap_err();
    assert!(err.starts_with("u.toml:3: "), "{err}");
    let err = user_layer_from_text("[toolz]\n", "u.toml").unwrap_err();
    assert!(err.starts_with("u.toml:1: "), "{err}");
}

#[test]
fn prompts_and_templates_have_rules_of_their_own() {
    let rules = project(concat!(
        "[prompts]\ndeny = [\"github/*\"]\n",
        "[resource-templates]\nallow = [\"docs/page\"]\n",
    ));
    let prompt = Subject {
        kind: Kind::Prompt,
        ..tool("github", "triage", None)
    };
    assert!(rules.decide("codex", &prompt).is_some());
    assert_eq!(rules.decide("codex", &tool("github", "triage", None)), None);
    let def = json!({"name": "page", "uriTemplate": "docs://{slug}"});
    let template = Subject::of(Kind::ResourceTemplate, "docs", "docs://{slug}", Some(&def));
    assert_eq!(rules.decide("codex", &template), None);
    let other = Subject::of(Kind::ResourceTemplate, "docs", "docs://raw/{id}", None);
    assert_eq!(
        rules.decide("codex", &other).map(|d| d.rule).as_deref(),
        Some("[resource-templates] allow (not listed)")
    );
}

#[test]
fn argument_rules_of_every_section_apply_to_a_call() {
    let mut rules = project(concat!(
        "[tools.arguments.\"github/create_pull_request\"]\n",
        "base = { pattern = \"^main$\" }\n",
        "[profile.codex.tools.arguments.\"github/*\"]\n",
        "owner = { values = [\"acme\"] }\n",
    ));
    let ok = json!({"owner": "acme", "base": "main"});
    let other_base = json!({"owner": "acme", "base": "release"});
    let check = |rules: &ToolRules, profile: &str, args: &Value| {
        rules
            .check_arguments(profile, "github", "create_pull_request", args)
            .map(|d| d.rule)
    };
    assert_eq!(check(&rules, "codex", &ok), None);
    assert_eq!(
        check(&rules, "codex", &other_base).as_deref(),
        Some(
            "[tools.arguments.\"github/create_pull_request\"] base: \"release\" does not match /^main$/"
        )
    );
    let other_owner = json!({"owner": "evil", "base": "main"});
    assert!(check(&rules, "codex", &other_owner).is_some());
    assert_eq!(
        check(&rules, "claude-code", &other_owner),
        None,
        "codex's rule only"
    );
    assert_eq!(
        rules.check_arguments("codex", "github", "get_issue", &json!({})),
        Some(Denial {
            rule: "[profile.codex.tools.arguments.\"github/*\"] owner: must be given (the rule cannot judge the server's default)".into(),
            source: "mcp-lock.toml".into(),
        })
    );
    let user = user_layer_from_text(
        "[tools.arguments.\"*/*\"]\nowner = { pattern = \"^acme$\" }\n",
        "u.toml",
    )
    .unwrap()
    .unwrap();
    rules.add_user_layer(user);
    assert_eq!(
        check(&rules, "claude-code", &other_owner).as_deref(),
        Some("[tools.arguments.\"*/*\"] owner: \"evil\" does not match /^acme$/")
    );
}

#[test]
fn bad_rules_are_refused_with_their_line() {
    let cases = [
        (
            "[tools]\ndeny = [\"delete_repository\"]\n",
            2,
            "SERVER/NAME",
        ),
        ("[tools]\ndeny-when = [\"dangerous\"]\n", 2, "not a hint"),
        (
            "[tools.arguments.\"a/b\"]\nx = { pattern = \"(\" }\n",
            2,
            "not a regular expression",
        ),
        ("[tools.arguments.\"a/b\"]\nx = {}\n", 2, "needs `values"),
        ("[profile.nobody.tools]\ndeny = [\"a/b\"]\n", 1, "nobody"),
        (
            "[profile.codex]\nprotocol-version = \"2025-06-18\"\n",
            1,
            "is built in",
        ),
        ("[prompts]\ndeny-when = [\"destructive\"]\n", 2, "deny-when"),
    ];
    for (text, line, says) in cases {
        let err = Policy::parse(text, "p.toml").unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("p.toml:{line}: ")) && err.contains(says),
            "{text:?}: {err}"
        );
    }
}

#[test]
fn a_builtin_profiles_section_may_hold_rules_and_a_defined_profile_both() {
    let policy = Policy::parse(
        concat!(
            "[profile.codex.tools]\ndeny = [\"a/*\"]\n",
            "[profile.mine]\nprotocol-version = \"2025-06-18\"\n",
            "[profile.mine.tools]\ndeny = [\"b/*\"]\n",
        ),
        "p.toml",
    )
    .unwrap();
    assert!(policy.profiles.defined.contains_key("mine"));
    assert_eq!(
        policy.rules.host_names().collect::<Vec<_>>(),
        vec!["codex", "mine"]
    );
    assert!(!policy.rules.is_empty());
    assert!(Policy::default().rules.is_empty());
}

#[test]
fn a_host_the_caller_cannot_name_gets_what_every_host_is_allowed() {
    let rules = project(concat!(
        "[tools]\ndeny = [\"github/merge_pull_request\"]\n",
        "[profile.claude-code.tools]\nallow = [\"github/merge_pull_request\"]\n",
        "[profile.codex.tools]\ndeny = [\"github/create_*\"]\n",
        "[profile.codex.tools.arguments.\"github/*\"]\nowner = { values = [\"acme\"] }\n",
    ));
    let unknown = |name: &str| rules.decide_unknown_host(&tool("github", name, None));
    assert!(unknown("merge_pull_request").is_some());
    assert!(unknown("create_issue").is_some());
    assert_eq!(unknown("get_issue"), None);
    assert!(
        rules
            .check_arguments_unknown_host("github", "get_issue", &json!({"owner": "x"}))
            .is_some()
    );
}

#[test]
fn no_users_file_or_a_path_through_a_file_gives_no_rules_and_a_directory_in_its_place_is_an_error()
{
    let dir = tempfile::tempdir().unwrap();
    let xdg = dir.path().display().to_string();
    let lookup = |name: &str| (name == "XDG_CONFIG_HOME").then(|| xdg.clone());
    assert_eq!(load_user_layer(&lookup), Ok(None));
    // `mcp-lock` is a file: the settings file cannot exist.
    std::fs::write(dir.path().join("mcp-lock"), "").unwrap();
    assert_eq!(load_user_layer(&lookup), Ok(None));
    std::fs::remove_file(dir.path().join("mcp-lock")).unwrap();
    std::fs::create_dir_all(dir.path().join("mcp-lock/mcp-lock.toml")).unwrap();
    let err = load_user_layer(&lookup).unwrap_err();
    assert!(err.starts_with("cannot read "), "{err}");
}
