use super::*;

fn at(name: &'static str) -> ConfigPath<'static> {
    ConfigPath::new(name, Path::new("/p"))
}

/// `text` with `old` replaced by `new` at its only occurrence, checked to be that.
fn only(text: &str, old: &str, new: &str) -> String {
    assert_eq!(text.matches(old).count(), 1, "{old} once in {text}");
    text.replacen(old, new, 1)
}

fn set(name: &'static str, text: &str, server: &str, old: &str, new: &str) -> String {
    set_arg(text, &at(name), server, old, new).unwrap_or_else(|e| panic!("{e}"))
}

fn error(name: &'static str, text: &str, server: &str, old: &str) -> String {
    set_arg(text, &at(name), server, old, "x@2")
        .map(|t| panic!("changed: {t}"))
        .unwrap_err()
        .to_string()
}

#[test]
fn a_json_arg_is_rewritten_and_nothing_else() {
    let text = "{\n  \"mcpServers\": {\n    \"tiny\": {\n      \"command\": \"npx\",\n      \"args\": [\"-y\", \"tiny-mcp@1.0.0\"]\n    }\n  }\n}\n";
    assert_eq!(
        set(
            ".mcp.json",
            text,
            "tiny",
            "tiny-mcp@1.0.0",
            "tiny-mcp@1.0.1"
        ),
        only(text, "\"tiny-mcp@1.0.0\"", "\"tiny-mcp@1.0.1\"")
    );
}

#[test]
fn jsonc_comments_trailing_commas_and_crlf_stay_byte_for_byte() {
    let text = "// project servers\r\n{\r\n  \"servers\": {\r\n    /* the small one */\r\n    \"tiny\": {\r\n      \"type\": \"stdio\",\r\n      \"command\": \"npx\", // pinned\r\n      \"args\": [\r\n        \"-y\",\r\n        \"tiny-mcp@1.0.0\", // the package\r\n      ],\r\n    },\r\n  },\r\n}\r\n";
    assert_eq!(
        set(
            ".vscode/mcp.json",
            text,
            "tiny",
            "tiny-mcp@1.0.0",
            "tiny-mcp@1.0.1"
        ),
        only(text, "tiny-mcp@1.0.0", "tiny-mcp@1.0.1")
    );
}

#[test]
fn json_escapes_are_read_in_the_old_value_and_written_in_the_new() {
    let text = r#"{"mcpServers": {"t": {"command": "npx", "args": ["-y", "tiny-mcp\u00401.0.0", "--dir=C:\\tools"]}}}"#;
    assert_eq!(
        set(
            "t.json",
            text,
            "t",
            "tiny-mcp@1.0.0",
            "tiny-mcp@\"1.0.1\"\n"
        ),
        only(
            text,
            r#""tiny-mcp\u00401.0.0""#,
            r#""tiny-mcp@\"1.0.1\"\n""#
        )
    );
    assert_eq!(
        set("t.json", text, "t", "--dir=C:\\tools", "--dir=D:\\tools"),
        only(text, r#""--dir=C:\\tools""#, r#""--dir=D:\\tools""#)
    );
}

#[test]
fn only_the_named_server_changes_when_two_have_the_same_arg() {
    let text = r#"{"mcpServers": {
  "a": {"command": "npx", "args": ["-y", "tiny-mcp@1.0.0"]},
  "b": {"command": "npx", "args": ["-y", "tiny-mcp@1.0.0"]}
}}"#;
    let out = set("t.json", text, "b", "tiny-mcp@1.0.0", "tiny-mcp@1.0.1");
    assert_eq!(
        out,
        only(
            text,
            r#""b": {"command": "npx", "args": ["-y", "tiny-mcp@1.0.0"]}"#,
            r#""b": {"command": "npx", "args": ["-y", "tiny-mcp@1.0.1"]}"#
        )
    );
}

#[test]
fn a_wrapped_entry_changes_the_servers_own_arg_not_the_guards() {
    let text = r#"{"mcpServers": {"x": {"command": "mcp-lock", "args": ["guard", "x", "--", "npx", "-y", "tiny-mcp@1.0.0"]}}}"#;
    assert_eq!(
        set("t.json", text, "x", "tiny-mcp@1.0.0", "tiny-mcp@1.0.1"),
        only(text, "tiny-mcp@1.0.0", "tiny-mcp@1.0.1")
    );
    // The guard's own words and the server's command are not the server's args.
    let e = error("t.json", text, "x", "guard");
    assert!(e.contains("has no argument \"guard\""), "{e}");
    let e = error("t.json", text, "x", "npx");
    assert!(e.contains("has no argument \"npx\""), "{e}");
}

#[test]
fn opencode_argv_is_its_command_array_after_the_program() {
    let text = r#"{"mcp": {"t": {"type": "local", "command": ["npx", "-y", "tiny-mcp@1.0.0"]}}}"#;
    assert_eq!(
        set(
            "opencode.json",
            text,
            "t",
            "tiny-mcp@1.0.0",
            "tiny-mcp@1.0.1"
        ),
        only(text, "tiny-mcp@1.0.0", "tiny-mcp@1.0.1")
    );
}

#[test]
fn a_codex_toml_arg_keeps_its_quoting_and_the_tables_around_it() {
    let text = "# Codex\r\n[mcp_servers.tiny]\r\ncommand = \"uvx\"\r\nargs = [\"tiny-py==1.0.0\"]  # pinned\r\n\r\n[mcp_servers.lit]\r\ncommand = 'uvx'\r\nargs = ['tiny-py==1.0.0', \"--flag\"]\r\n";
    let basic = set(
        "config.toml",
        text,
        "tiny",
        "tiny-py==1.0.0",
        "tiny-py==1.0.1",
    );
    assert_eq!(
        basic,
        only(
            text,
            "args = [\"tiny-py==1.0.0\"]",
            "args = [\"tiny-py==1.0.1\"]"
        )
    );
    let literal = set(
        "config.toml",
        text,
        "lit",
        "tiny-py==1.0.0",
        "tiny-py==1.0.1",
    );
    assert_eq!(literal, only(text, "'tiny-py==1.0.0'", "'tiny-py==1.0.1'"));
    // A literal string cannot hold a quote: the new value is a basic string then.
    let quoted = set("config.toml", text, "lit", "tiny-py==1.0.0", "it's\\");
    assert_eq!(quoted, only(text, "'tiny-py==1.0.0'", "\"it's\\\\\""));
}

#[test]
fn toml_inline_tables_and_multiline_strings_are_edited_in_place() {
    let text =
        "[mcp_servers]\ntiny = { command = \"uvx\", args = [\n  '''tiny-py==1.0.0''',\n] }\n";
    assert_eq!(
        set(
            "config.toml",
            text,
            "tiny",
            "tiny-py==1.0.0",
            "tiny-py==1.0.1"
        ),
        only(text, "'''tiny-py==1.0.0'''", "'''tiny-py==1.0.1'''")
    );
}

#[test]
fn an_arg_not_found_or_found_twice_is_refused_naming_server_and_file() {
    let text = r#"{"mcpServers": {"t": {"command": "npx", "args": ["tiny-mcp@1.0.0", "tiny-mcp@1.0.0"]}, "u": {"command": "npx", "args": ["-y"]}, "r": {"url": "https://h/mcp"}}}"#;
    let e = error("t.json", text, "t", "tiny-mcp@1.0.0");
    assert_eq!(
        e,
        "t.json: server \"t\" has the argument \"tiny-mcp@1.0.0\" 2 times, and which one to change cannot be told: change it by hand"
    );
    let e = error("t.json", text, "u", "tiny-mcp@1.0.0");
    assert!(
        e.starts_with("t.json: server \"u\" has no argument \"tiny-mcp@1.0.0\""),
        "{e}"
    );
    let e = error("t.json", text, "r", "tiny-mcp@1.0.0");
    assert!(e.contains("server \"r\" is a remote server"), "{e}");
    let e = error("t.json", text, "nope", "tiny-mcp@1.0.0");
    assert!(e.starts_with("t.json: no server \"nope\""), "{e}");
}

#[test]
fn a_goose_yaml_arg_is_changed_when_it_is_one_scalar_of_the_entry() {
    let text = "# goose\nextensions:\n  other:\n    cmd: npx\n    args: [-y, tiny-mcp@1.0.0]\n  tiny:\n    cmd: npx\n    args:\n      - -y\n      - tiny-mcp@1.0.0   # pinned\n    enabled: true\n    type: stdio\n    description: |\n      tiny-mcp@1.0.0\n  quoted:\n    cmd: npx\n    args: [\"-y\", 'tiny-mcp@1.0.0']\n    enabled: true\n    type: stdio\n";
    let out = set(
        "config.yaml",
        text,
        "tiny",
        "tiny-mcp@1.0.0",
        "tiny-mcp@1.0.1",
    );
    assert_eq!(
        out,
        only(
            text,
            "- tiny-mcp@1.0.0   # pinned",
            "- tiny-mcp@1.0.1   # pinned"
        )
    );
    let out = set("config.yaml", text, "quoted", "tiny-mcp@1.0.0", "it's");
    assert_eq!(out, only(text, "'tiny-mcp@1.0.0'", "'it''s'"));
    let out = set(
        "config.yaml",
        text,
        "other",
        "tiny-mcp@1.0.0",
        "tiny-mcp@1.0.1",
    );
    assert_eq!(
        out,
        only(text, "[-y, tiny-mcp@1.0.0]", "[-y, tiny-mcp@1.0.1]")
    );
}

#[test]
fn a_plain_yaml_value_that_would_read_differently_is_quoted() {
    let text = "extensions:\n  t:\n    cmd: npx\n    args: [\"-y\", pkg]\n    enabled: true\n    type: stdio\n";
    // Plain `1.0` would be a number, `a, b` two items.
    assert_eq!(
        set("config.yaml", text, "t", "pkg", "1.0"),
        only(text, "pkg", "\"1.0\"")
    );
    assert_eq!(
        set("config.yaml", text, "t", "pkg", "a, b"),
        only(text, "pkg", "\"a, b\"")
    );
}

#[test]
fn a_continue_yaml_item_is_found_by_its_name() {
    let text = "name: assistant\nmcpServers:\n- name: a\n  command: uvx\n  args:\n  - tiny-py==1.0.0\n- command: uvx\n  name: \"b\"\n  args: [\"tiny-py==1.0.0\"]\n";
    assert_eq!(
        set("config.yaml", text, "b", "tiny-py==1.0.0", "tiny-py==1.0.1"),
        only(text, "\"tiny-py==1.0.0\"", "\"tiny-py==1.0.1\"")
    );
    assert_eq!(
        set("config.yaml", text, "a", "tiny-py==1.0.0", "tiny-py==1.0.1"),
        only(text, "- tiny-py==1.0.0", "- tiny-py==1.0.1")
    );
}

#[test]
fn yaml_the_reader_does_not_follow_is_refused() {
    // Twice in the entry.
    let text = "extensions:\n  t:\n    cmd: npx\n    args: [pkg, pkg]\n    enabled: true\n    type: stdio\n";
    let e = error("config.yaml", text, "t", "pkg");
    assert!(e.contains("2 times"), "{e}");
    // Once, but not in its args.
    let text = "extensions:\n  t:\n    cmd: npx\n    args: [-y]\n    name: pkg\n    enabled: true\n    type: stdio\n";
    let e = error("config.yaml", text, "t", "pkg");
    assert!(e.contains("outside the server's args"), "{e}");
    // A table written in flow style.
    let text = "extensions: {t: {cmd: npx, args: [pkg], enabled: true, type: stdio}}\n";
    let e = error("config.yaml", text, "t", "pkg");
    assert!(e.contains("flow style"), "{e}");
}
