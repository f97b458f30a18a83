use super::*;

#[test]
fn reads_every_supported_shape() {
    let claude = r#"{"mcpServers":{"a":{"command":"x","args":["1"],"env":{"K":"v"}}}}"#;
    let vscode = r#"{ // comment
            "servers": {"a": {"type": "stdio", "command": "x", "args": ["1", "// not a comment"], // why
                              /* block, */ },
                        "r": {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${T}"}}},
            "inputs": []}"#;
    let settings = r#"{"mcp":{"servers":{"a":{"command":"x"}}}}"#;
    assert_eq!(parse_config(claude, "c").unwrap()[0].name, "a");
    let v = parse_config(vscode, "v").unwrap();
    assert_eq!(v.len(), 2);
    assert!(
        matches!(&v[0].transport, TransportSpec::Stdio { args, .. } if args == &["1", "// not a comment"])
    );
    assert!(
        matches!(&v[1].transport, TransportSpec::Remote { headers, .. } if headers.keys().eq(["Authorization"]))
    );
    assert_eq!(parse_config(settings, "s").unwrap().len(), 1);
}

#[test]
fn url_without_command_is_remote() {
    let specs = parse_config(
        r#"{"mcpServers":{"r":{"url":"http://127.0.0.1/mcp"}}}"#,
        "c",
    )
    .unwrap();
    assert_eq!(specs[0].transport_name(), "streamable-http");
}

#[test]
fn syntax_errors_name_file_and_line() {
    let err = parse_config(
        "{\n\"mcpServers\": {\n  \"a\": {\"command\": }\n}}",
        ".mcp.json",
    )
    .unwrap_err();
    assert!(err.to_string().starts_with(".mcp.json:3:"), "{err}");
}

#[test]
fn wrapped_entry_reads_as_the_server_it_launches() {
    let text = r#"{"mcpServers":{
            "gh": {"command": "/usr/local/bin/mcp-lock", "env": {"K": "v"},
                   "args": ["guard", "gh", "--lock", "../mcp.lock", "--", "npx", "-y", "pkg"]},
            "bare": {"command": "mcp-lock", "args": ["guard", "bare", "--", "server"]},
            "hand": {"command": "mcp-lock", "args": ["guard", "hand"]},
            "other": {"command": "tool", "args": ["guard", "x", "--", "server"]}}}"#;
    let specs = parse_config(text, "c").unwrap();
    let launch = |name: &str| match &specs.iter().find(|s| s.name == name).unwrap().transport {
        TransportSpec::Stdio {
            command, args, env, ..
        } => (command.clone(), args.join(" "), env.len()),
        TransportSpec::Remote { .. } => panic!("stdio"),
    };
    assert_eq!(launch("gh"), ("npx".into(), "-y pkg".into(), 1));
    assert_eq!(launch("bare"), ("server".into(), String::new(), 0));
    assert_eq!(launch("hand"), ("mcp-lock".into(), "guard hand".into(), 0));
    assert_eq!(
        launch("other"),
        ("tool".into(), "guard x -- server".into(), 0)
    );
}
