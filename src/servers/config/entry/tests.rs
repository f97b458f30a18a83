use super::*;
use serde_json::json;

fn server(entry: Value, host: Host) -> ServerSpec {
    match read_entry("s", &entry, host).unwrap() {
        Read::Server(spec) => spec,
        Read::Skipped(why) => panic!("skipped: {why}"),
    }
}

#[test]
fn every_type_spelling_reads_as_its_transport() {
    for spelling in [
        "http",
        "streamable-http",
        "streamableHttp",
        "streamable_http",
        "remote",
    ] {
        let spec = server(json!({"type": spelling, "url": "http://h/"}), Host::Unknown);
        assert_eq!(spec.transport_name(), "streamable-http", "{spelling}");
    }
    let sse = server(json!({"type": "sse", "url": "http://h/"}), Host::Unknown);
    assert_eq!(sse.transport_name(), "sse");
    let local = server(json!({"type": "local", "command": ["x"]}), Host::OpenCode);
    assert_eq!(local.transport_name(), "stdio");
}

#[test]
fn codex_env_vars_are_names_or_tables_with_a_local_source() {
    let spec = server(
        json!({"command": "x", "env_vars": ["A", {"name": "B"}, {"name": "C", "source": "local"}]}),
        Host::Codex,
    );
    let TransportSpec::Stdio { env, .. } = &spec.transport else {
        panic!("stdio");
    };
    assert_eq!(env.keys().collect::<Vec<_>>(), ["A", "B", "C"]);
    assert_eq!(spec.vars.optional, ["env.A", "env.B", "env.C"]);
    let inherit = spec
        .environ
        .as_ref()
        .and_then(|e| e.inherit.clone())
        .unwrap();
    assert_eq!(
        inherit,
        environ::codex_inherited(&["A".into(), "B".into(), "C".into()])
    );
    let refused = |entry: Value| read_entry("s", &entry, Host::Codex).unwrap_err();
    // A variable read on a remote executor: that one server is not checked.
    let remote = read_entry(
        "s",
        &json!({"command": "x", "env_vars": [{"name": "B", "source": "remote"}]}),
        Host::Codex,
    );
    assert!(
        matches!(&remote, Ok(Read::Skipped(why)) if why.starts_with(NOT_CHECKED)
                && why.contains("source = \"remote\"") && why.contains("\"B\"")),
        "{remote:?}"
    );
    let other = refused(json!({"command": "x", "env_vars": [{"name": "B", "source": "vault"}]}));
    assert!(other.contains("\"vault\""), "{other}");
    let unknown = refused(json!({"command": "x", "env_vars": [{"name": "B", "from": "x"}]}));
    assert!(unknown.contains("\"from\""), "{unknown}");
    assert!(
        refused(json!({"command": "x", "env_vars": [{"source": "local"}]})).contains("no \"name\"")
    );
}

#[test]
fn a_codex_server_in_a_remote_environment_is_not_checked_and_a_local_one_is_read() {
    let read = read_entry(
        "s",
        &json!({"command": "x", "environment_id": "devbox"}),
        Host::Codex,
    );
    assert!(
        matches!(&read, Ok(Read::Skipped(why)) if why.starts_with(NOT_CHECKED)
                && why.contains("environment_id = \"devbox\"")),
        "{read:?}"
    );
    server(
        json!({"command": "x", "environment_id": "local"}),
        Host::Codex,
    );
}

#[test]
fn every_url_member_is_read() {
    for member in ["url", "serverUrl", "uri", "httpUrl"] {
        let spec = server(json!({ member: "http://h/mcp" }), Host::Unknown);
        assert!(
            matches!(&spec.transport, TransportSpec::Remote { url, .. } if url == "http://h/mcp"),
            "{member}"
        );
    }
}

#[test]
fn an_untyped_url_is_sse_to_cline_only_and_streamable_http_to_gemini_and_continue() {
    let url = json!({"url": "http://h/sse"});
    assert_eq!(server(url.clone(), Host::Cline).transport_name(), "sse");
    for host in [Host::GeminiCli, Host::Continue, Host::ClaudeCode] {
        assert_eq!(
            server(url.clone(), host).transport_name(),
            "streamable-http",
            "{host:?}"
        );
    }
    let http = json!({"httpUrl": "http://h/mcp"});
    assert_eq!(
        server(http, Host::GeminiCli).transport_name(),
        "streamable-http"
    );
}

#[test]
fn codex_secrets_become_header_and_env_templates() {
    let spec = server(
        json!({"url": "http://h/", "bearer_token_env_var": "TOKEN",
                   "env_http_headers": {"X-Key": "KEY"}, "http_headers": {"X-Plain": "p"}}),
        Host::Codex,
    );
    let TransportSpec::Remote { headers, .. } = spec.transport else {
        panic!("remote")
    };
    assert_eq!(headers["Authorization"], "Bearer ${TOKEN}");
    assert_eq!(headers["X-Key"], "${KEY}");
    assert_eq!(headers["X-Plain"], "p");
    let stdio = server(
        json!({"command": "x", "env_vars": ["GITHUB_TOKEN"], "env": {"A": "1"}}),
        Host::Codex,
    );
    let TransportSpec::Stdio { env, .. } = stdio.transport else {
        panic!("stdio")
    };
    assert_eq!(env["GITHUB_TOKEN"], "${GITHUB_TOKEN}");
    assert_eq!(env["A"], "1");
}

#[test]
fn launch_forms_of_opencode_zed_and_goose_read_as_command_and_args() {
    let launch = |spec: ServerSpec| match spec.transport {
        TransportSpec::Stdio {
            command, args, env, ..
        } => (command, args, env.len()),
        TransportSpec::Remote { .. } => panic!("stdio"),
    };
    let opencode =
        json!({"type": "local", "command": ["npx", "-y", "pkg"], "environment": {"A": "{env:A}"}});
    assert_eq!(
        launch(server(opencode, Host::OpenCode)),
        ("npx".into(), vec!["-y".into(), "pkg".into()], 1)
    );
    let zed = json!({"command": {"path": "srv", "args": ["--x"], "env": {"K": "v"}}});
    assert_eq!(
        launch(server(zed, Host::Zed)),
        ("srv".into(), vec!["--x".into()], 1)
    );
    let goose = json!({"type": "stdio", "name": "s", "enabled": true, "cmd": "uvx", "args": ["pkg"], "envs": {"K": "v"}, "env_keys": ["T"]});
    assert_eq!(
        launch(server(goose, Host::Goose)),
        ("uvx".into(), vec!["pkg".into()], 2)
    );
}

#[test]
fn headers_helper_is_read_from_claude_code_remote_entries_only() {
    let entry = json!({"type": "http", "url": "http://h/", "headersHelper": "get-headers"});
    assert_eq!(
        server(entry.clone(), Host::ClaudeCode).headers_helper,
        Some(Box::new("get-headers".into()))
    );
    assert_eq!(server(entry, Host::Cursor).headers_helper, None);
    let stdio = json!({"command": "x", "headersHelper": "get-headers"});
    assert_eq!(server(stdio, Host::ClaudeCode).headers_helper, None);
    let empty = json!({"url": "http://h/", "headersHelper": ""});
    assert_eq!(server(empty, Host::ClaudeCode).headers_helper, None);
    assert_eq!(
        read_entry(
            "s",
            &json!({"url": "http://h/", "headersHelper": ["x"]}),
            Host::ClaudeCode
        ),
        Err("\"headersHelper\" is not a string".into())
    );
}

#[test]
fn disabled_entries_are_skipped_saying_why() {
    assert_eq!(
        read_entry("s", &json!({"command": "x", "disabled": true}), Host::Cline),
        Ok(Read::Skipped("disabled: true".into()))
    );
    assert_eq!(
        read_entry("s", &json!({"command": "x", "enabled": false}), Host::Codex),
        Ok(Read::Skipped("enabled: false".into()))
    );
    assert!(matches!(
        read_entry("s", &json!({"type": "builtin"}), Host::Goose),
        Ok(Read::Skipped(_))
    ));
}

#[test]
fn tool_filters_are_read_from_each_hosts_keys() {
    let f = |entry: Value| server(entry, Host::Unknown).filter;
    let base = |extra: Value| {
        let mut e = json!({"command": "x", "autoApprove": ["a"], "alwaysAllow": ["a"]});
        e.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        e
    };
    assert_eq!(
        f(base(json!({"includeTools": ["a"], "excludeTools": ["b"]}))),
        ToolFilter {
            include: Some(vec!["a".into()]),
            exclude: vec!["b".into()],
            ..ToolFilter::default()
        }
    );
    assert_eq!(
        f(base(
            json!({"enabled_tools": ["a"], "disabled_tools": ["b"]})
        ))
        .include,
        Some(vec!["a".into()])
    );
    assert_eq!(
        f(base(json!({"disabledTools": ["b"]}))).exclude,
        vec!["b".to_string()]
    );
    assert_eq!(
        f(base(json!({"available_tools": ["a"]}))).include,
        Some(vec!["a".into()])
    );
    assert_eq!(
        f(base(json!({"tools": ["a"]}))).include,
        Some(vec!["a".into()])
    );
    assert!(f(base(json!({}))).is_empty(), "autoApprove hides nothing");
}

#[test]
fn goose_empty_available_tools_shows_every_tool_and_gemini_and_codex_empty_lists_none() {
    let goose = json!({"type": "stdio", "name": "s", "enabled": true, "cmd": "x", "args": [], "available_tools": []});
    assert_eq!(server(goose, Host::Goose).filter.include, None);
    let listed = json!({"type": "stdio", "name": "s", "enabled": true, "cmd": "x", "args": [], "available_tools": ["a"]});
    assert_eq!(
        server(listed, Host::Goose).filter.include,
        Some(vec!["a".into()])
    );
    let gemini = json!({"command": "x", "includeTools": []});
    assert_eq!(server(gemini, Host::GeminiCli).filter.include, Some(vec![]));
    let codex = json!({"command": "x", "enabled_tools": []});
    assert_eq!(server(codex, Host::Codex).filter.include, Some(vec![]));
}

#[test]
fn goose_env_keys_read_upper_cased_envs_path_is_dropped_and_headers_take_the_extensions_own_values()
{
    let stdio = json!({"type": "stdio", "name": "s", "enabled": true, "cmd": "x", "args": ["${A}"],
                           "envs": {"PATH": "/evil", "K": "${B}"}, "env_keys": ["gh_token"]});
    let spec = server(stdio, Host::Goose);
    assert_eq!(spec.vars.syntax, vars::Syntax::Goose);
    assert_eq!(spec.vars.named, ["env.gh_token"]);
    let TransportSpec::Stdio { args, env, .. } = spec.transport else {
        panic!("stdio")
    };
    assert_eq!(args, ["${A}"]);
    assert_eq!(env.get("PATH"), None);
    assert_eq!(env["K"], "${B}");
    assert_eq!(env["gh_token"], "${GH_TOKEN}");
    let http = json!({"type": "streamable_http", "name": "s", "enabled": true, "uri": "http://h/${X}",
                          "envs": {"ORG": "acme"}, "env_keys": ["tok"],
                          "headers": {"Authorization": "Bearer $tok", "X-Org": "${ORG}", "X-Home": "${HOME}"}});
    let spec = server(http, Host::Goose);
    assert_eq!(spec.vars.named, ["headers.Authorization"]);
    let TransportSpec::Remote { url, headers, .. } = spec.transport else {
        panic!("remote")
    };
    assert_eq!(url, "http://h/${X}");
    assert_eq!(headers["Authorization"], "Bearer ${TOK}");
    assert_eq!(headers["X-Org"], "acme");
    assert_eq!(headers["X-Home"], "${HOME}");
}

#[test]
fn a_goose_header_that_writes_an_env_keys_template_itself_is_sent_as_written() {
    // `env_keys: [api_token]` is read from API_TOKEN, but a header that writes
    // `${API_TOKEN}` is not one Goose fills (it knows `api_token`): as written.
    let http = json!({"type": "streamable_http", "name": "s", "enabled": true, "uri": "http://h/mcp",
                          "env_keys": ["api_token"],
                          "headers": {"Authorization": "Bearer ${API_TOKEN}"}});
    let spec = server(http, Host::Goose);
    assert!(spec.vars.named.is_empty(), "{:?}", spec.vars.named);
    let TransportSpec::Remote { headers, .. } = spec.transport else {
        panic!("remote")
    };
    assert_eq!(headers["Authorization"], "Bearer ${API_TOKEN}");
}

#[test]
fn goose_sse_extensions_are_skipped_as_goose_refuses_them() {
    let sse = json!({"type": "sse", "uri": "http://h/sse", "enabled": true});
    let Ok(Read::Skipped(why)) = read_entry("s", &sse, Host::Goose) else {
        panic!("not skipped")
    };
    assert!(why.contains("SSE is unsupported"), "{why}");
    let http = json!({"type": "streamable_http", "name": "s", "enabled": true, "uri": "http://h/mcp", "headers": {"X-K": "v"}});
    let spec = server(http, Host::Goose);
    assert_eq!(spec.transport_name(), "streamable-http");
    assert!(
        matches!(&spec.transport, TransportSpec::Remote { url, headers, .. } if url == "http://h/mcp" && headers.contains_key("X-K"))
    );
}

#[test]
fn opencode_oauth_false_is_read_and_turns_oauth_off() {
    let off = json!({"type": "remote", "url": "http://h/mcp", "oauth": false});
    let spec = server(off, Host::OpenCode);
    assert!(spec.oauth_off);
    assert_eq!(spec.oauth_client, None);
    let on = json!({"type": "remote", "url": "http://h/mcp",
                        "oauth": {"clientId": "id", "clientSecret": "{env:S}", "scope": "read"}});
    let spec = server(on, Host::OpenCode);
    assert!(!spec.oauth_off);
    assert_eq!(spec.oauth_client.unwrap().client_id, "id");
    let wrong = json!({"type": "remote", "url": "http://h/mcp", "oauth": true});
    assert!(read_entry("s", &wrong, Host::OpenCode).is_err());
}

#[test]
fn an_oauth_object_names_a_machine_client_or_a_registered_method_and_a_wrong_one_is_refused() {
    let entry = |oauth: Value| json!({"type": "http", "url": "http://h/mcp", "oauth": oauth});
    let spec = server(
        entry(
            json!({"grant": "client_credentials", "clientId": "ci", "privateKey": "${KEY}",
                         "signingAlgorithm": "RS256", "scope": "mcp:read"}),
        ),
        Host::ClaudeCode,
    );
    let client = spec.oauth_client.unwrap();
    assert!(client.client_credentials);
    assert_eq!(client.private_key.as_deref(), Some("${KEY}"));
    assert_eq!(client.signing_algorithm.as_deref(), Some("RS256"));
    let spec = server(
        entry(json!({"clientId": "c", "tokenEndpointAuthMethod": "client_secret_post"})),
        Host::ClaudeCode,
    );
    assert_eq!(
        spec.oauth_client
            .unwrap()
            .token_endpoint_auth_method
            .as_deref(),
        Some("client_secret_post")
    );
    for (bad, says) in [
        (
            json!({"grant": "client_credentials", "clientId": "ci"}),
            "needs",
        ),
        (
            json!({"grant": "password", "clientId": "ci"}),
            "oauth.grant",
        ),
        (
            json!({"clientId": "c", "privateKey": "k"}),
            "oauth.privateKey",
        ),
        (
            json!({"grant": "client_credentials", "clientId": "ci", "clientSecret": "s",
                    "signingAlgorithm": "HS256"}),
            "signingAlgorithm",
        ),
        (
            json!({"clientId": "c", "tokenEndpointAuthMethod": "tls_client_auth"}),
            "tokenEndpointAuthMethod",
        ),
        (
            json!({"clientMetadataUrl": "http://agents.example/c.json"}),
            "clientMetadataUrl",
        ),
    ] {
        let e = read_entry("s", &entry(bad.clone()), Host::ClaudeCode)
            .err()
            .unwrap_or_else(|| panic!("{bad} was read"));
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn continue_api_key_is_a_bearer_authorization_header_that_wins_over_a_written_one() {
    let entry = json!({"name": "s", "url": "http://h/mcp", "apiKey": "${{ secrets.KEY }}",
                           "requestOptions": {"headers": {"authorization": "Bearer old", "X-A": "a"}}});
    let TransportSpec::Remote { headers, .. } = server(entry, Host::Continue).transport else {
        panic!("remote")
    };
    assert_eq!(headers.len(), 2, "{headers:?}");
    assert_eq!(headers["Authorization"], "Bearer ${KEY}");
    assert_eq!(headers["X-A"], "a");
}

#[test]
fn zed_extension_entries_are_skipped_and_its_custom_and_http_forms_read() {
    for entry in [
        json!({"source": "extension", "enabled": true, "settings": {}}),
        json!({"enabled": true, "settings": {"key": "v"}}),
    ] {
        let Ok(Read::Skipped(why)) = read_entry("s", &entry, Host::Zed) else {
            panic!("not skipped: {entry}")
        };
        assert!(why.contains("Zed extension"), "{why}");
    }
    let custom = json!({"source": "custom", "command": "srv", "args": ["-x"], "env": {}});
    assert_eq!(server(custom, Host::Zed).transport_name(), "stdio");
    let http = json!({"url": "http://h/mcp", "headers": {"X-K": "v"}, "oauth": {"client_id": "c"}});
    let spec = server(http, Host::Zed);
    assert_eq!(spec.transport_name(), "streamable-http");
    assert_eq!(spec.oauth_client.unwrap().client_id, "c");
}

#[test]
fn cline_nested_transport_reads_as_the_flat_entry() {
    let nested = json!({"transport": {"type": "streamableHttp", "url": "http://h/mcp",
                                          "headers": {"X-K": "v"}}, "disabled": false});
    let spec = server(nested, Host::Cline);
    assert_eq!(spec.transport_name(), "streamable-http");
    let stdio = json!({"transport": {"type": "stdio", "command": "srv", "args": ["-x"]}});
    assert_eq!(server(stdio, Host::Cline).transport_name(), "stdio");
    let off = json!({"transport": {"type": "stdio", "command": "srv"}, "disabled": true});
    assert_eq!(
        read_entry("s", &off, Host::Cline),
        Ok(Read::Skipped("disabled: true".into()))
    );
    let odd = json!({"transport": {"type": "http", "url": "http://h/"}});
    assert!(read_entry("s", &odd, Host::Cline).is_err());
}

#[test]
fn vscode_env_numbers_are_their_javascript_text_and_null_is_not_inherited() {
    let spec = server(
        json!({"command": "x", "env": {"A": 8080, "B": 0.5, "C": 1.0, "D": -0.0, "E": null, "F": "s"}}),
        Host::VsCode,
    );
    let TransportSpec::Stdio { env, .. } = &spec.transport else {
        panic!("stdio")
    };
    let got: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(
        got,
        [
            ("A", "8080"),
            ("B", "0.5"),
            ("C", "1"),
            ("D", "0"),
            ("F", "s")
        ]
    );
    assert_eq!(
        spec.environ.unwrap().inherit,
        Some(environ::Inherit::AllBut(vec!["E".into()]))
    );
    // JavaScript would write these in exponent form; a bool is not VS Code's.
    for odd in [json!(1e21), json!(1e-7), json!(true)] {
        let entry = json!({"command": "x", "env": {"A": odd}});
        let error = read_entry("s", &entry, Host::VsCode).unwrap_err();
        assert!(
            error.contains("env.A") && error.contains("quotes"),
            "{error}"
        );
    }
    // Other hosts keep refusing a number.
    let entry = json!({"command": "x", "env": {"A": 8080}});
    assert!(read_entry("s", &entry, Host::ClaudeCode).is_err());
}

#[test]
fn gemini_include_tools_shows_the_name_before_a_parenthesis_and_exclude_tools_is_exact() {
    let spec = server(
        json!({"command": "x", "includeTools": ["run_shell_command(git)", "a(b(c)"],
                   "excludeTools": ["x(y)"]}),
        Host::GeminiCli,
    );
    for shown in ["run_shell_command", "run_shell_command(git)", "a", "a(b"] {
        assert!(spec.filter.shows(shown), "{shown}");
    }
    assert!(!spec.filter.shows("run_shell"));
    let excluded = server(
        json!({"command": "x", "excludeTools": ["x(y)"]}),
        Host::GeminiCli,
    );
    assert!(excluded.filter.shows("x"));
    // Only Gemini CLI reads the parenthesis.
    let other = server(
        json!({"command": "x", "includeTools": ["run_shell_command(git)"]}),
        Host::Unknown,
    );
    assert!(!other.filter.shows("run_shell_command"));
}

#[test]
fn gemini_http_url_wins_over_url_and_google_auth_is_refused_in_one_line() {
    let spec = server(
        json!({"httpUrl": "http://h/a", "url": "http://h/b", "type": "sse"}),
        Host::GeminiCli,
    );
    assert!(
        matches!(&spec.transport, TransportSpec::Remote { url, kind: RemoteKind::StreamableHttp, .. } if url == "http://h/a")
    );
    assert!(spec.refusal.is_none());
    let google = server(
        json!({"httpUrl": "http://h/a", "authProviderType": "service_account_impersonation"}),
        Host::GeminiCli,
    );
    assert!(google.refusal.unwrap().contains("authProviderType"));
    let discovery = server(
        json!({"url": "http://h/a", "authProviderType": "dynamic_discovery"}),
        Host::GeminiCli,
    );
    assert!(discovery.refusal.is_none());
    // Gemini CLI fails that one server, so it is skipped (and warned of), not the
    // whole file refused.
    let stdio = json!({"command": "x", "authProviderType": "google_credentials"});
    assert!(matches!(
        read_entry("s", &stdio, Host::GeminiCli),
        Ok(Read::Skipped(why)) if why.starts_with(NOT_CHECKED) && why.contains("authProviderType")
    ));
}

#[test]
fn a_codex_http_headers_helper_is_refused_in_one_line_not_left_out() {
    let codex = server(
        json!({"url": "http://h/mcp", "http_headers_helper": ["print-headers"]}),
        Host::Codex,
    );
    assert!(codex.refusal.unwrap().contains("http_headers_helper"));
    let plain = server(json!({"url": "http://h/mcp"}), Host::Codex);
    assert!(plain.refusal.is_none());
}
