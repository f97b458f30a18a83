use super::*;
use crate::servers::config::Host;

fn env(var: &str) -> Option<String> {
    match var {
        "TOKEN" => Some("s3cr3t-value".into()),
        "HOME" => Some("/home/me".into()),
        _ => None,
    }
}

#[test]
fn expands_variables_and_remembers_them_as_secrets() {
    let mut secrets = Secrets::default();
    let out = expand(
        "Bearer ${TOKEN} ${env:HOME} ${MISSING:-fallback}",
        "s",
        "args[0]",
        Path::new("/p"),
        &env,
        &mut secrets,
    )
    .unwrap();
    assert_eq!(out, "Bearer s3cr3t-value /home/me fallback");
    assert_eq!(secrets.redact("x s3cr3t-value y"), "x ${TOKEN} y");
}

#[test]
fn a_written_default_is_not_a_secret_but_the_environments_value_is() {
    let mut secrets = Secrets::default();
    let lookup = |var: &str| (var == "TOKEN").then(|| "s3cr3t-value".to_string());
    let out = expand(
        "${LOG_LEVEL:-debug} ${TOKEN:-unused-default}",
        "s",
        "args[0]",
        Path::new("/p"),
        &lookup,
        &mut secrets,
    )
    .unwrap();
    assert_eq!(out, "debug s3cr3t-value");
    assert_eq!(secrets.redact("debug s3cr3t-value"), "debug ${TOKEN}");
    // A default that looks like a credential stays one, as a literal would.
    let mut secrets = Secrets::default();
    expand(
        "${API_KEY:-sk-written-in-config}",
        "s",
        "env.K",
        Path::new("/p"),
        &|_| None,
        &mut secrets,
    )
    .unwrap();
    assert!(secrets.contains_value("sk-written-in-config"));
    // What a client expanded to the written default is read the same way.
    let mut secrets = Secrets::default();
    for e in match_expansion("--level=${LOG_LEVEL:-debug}", "--level=debug").unwrap() {
        e.record(&mut secrets);
    }
    assert!(secrets.is_empty());
}

#[test]
fn match_expansion_recovers_the_values_a_client_expanded() {
    let pairs = |template: &str, actual: &str| {
        match_expansion(template, actual).map(|found| {
            found
                .into_iter()
                .map(|e| (e.var, e.value))
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(
        pairs("--token=${SECRET}", "--token=abc123"),
        Some(vec![("SECRET".into(), "abc123".into())])
    );
    assert_eq!(
        pairs("${env:A}/x/${B:-d}", "one/x/two"),
        Some(vec![("A".into(), "one".into()), ("B".into(), "two".into())])
    );
    assert_eq!(pairs("plain", "plain"), Some(vec![]));
    assert_eq!(pairs("--token=${SECRET}", "--other=abc"), None);
    assert_eq!(pairs("plain", "other"), None);
}

fn with(host: Host, value: &str, field: &str) -> Result<String, ConfigError> {
    let lookup = |var: &str| match var {
        "TOKEN" => Some("s3cr3t-value".to_string()),
        "HOME" => Some("/home/me".to_string()),
        _ => None,
    };
    expand_with(
        &Variables::of(host),
        value,
        "s",
        field,
        Path::new("/work/proj"),
        &lookup,
        &mut Secrets::default(),
    )
}

#[test]
fn codex_keeps_every_reference_as_written_but_a_field_naming_a_variable_expands() {
    let written = "${TOKEN} ${env:TOKEN} ${workspaceFolder} ${input:x} ${unclosed";
    for field in ["command", "args[0]", "env.K", "cwd", "url", "headers.X"] {
        assert_eq!(
            with(Host::Codex, written, field).unwrap(),
            written,
            "{field}"
        );
    }
    let rules = Variables {
        syntax: vars::Syntax::Literal,
        named: vec!["env.TOKEN".into()],
        ..Variables::default()
    };
    let mut secrets = Secrets::default();
    let out = expand_with(
        &rules,
        "${TOKEN}",
        "s",
        "env.TOKEN",
        Path::new("/p"),
        &env,
        &mut secrets,
    )
    .unwrap();
    assert_eq!(out, "s3cr3t-value");
    assert!(secrets.contains_value("s3cr3t-value"));
}

#[test]
fn roo_code_expands_env_and_workspace_folder_only() {
    assert_eq!(
        with(
            Host::RooCode,
            "${env:TOKEN} ${TOKEN} ${workspaceFolder} ${workspaceFolderBasename} ${userHome}",
            "args[0]"
        )
        .unwrap(),
        "s3cr3t-value ${TOKEN} /work/proj ${workspaceFolderBasename} ${userHome}"
    );
}

#[test]
fn cline_expands_env_references_only() {
    assert_eq!(
        with(
            Host::Cline,
            "${env: TOKEN } ${TOKEN} ${workspaceFolder}",
            "headers.A"
        )
        .unwrap(),
        "s3cr3t-value ${TOKEN} ${workspaceFolder}"
    );
}

#[test]
fn vscode_answers_its_own_names_keeps_unknown_ones_and_refuses_what_needs_the_editor() {
    let sep = std::path::MAIN_SEPARATOR;
    assert_eq!(
        with(
            Host::VsCode,
            "${env:TOKEN} ${TOKEN} ${userHome}${/}${workspaceFolderBasename}${pathSeparator}",
            "env.K"
        )
        .unwrap(),
        format!("s3cr3t-value ${{TOKEN}} /home/me{sep}proj{sep}")
    );
    for (written, says) in [
        ("${input:token}", "input variable"),
        ("${config:editor.x}", "VS Code setting"),
        ("${command:pick}", "command VS Code runs"),
        ("${file}", "running editor"),
    ] {
        let err = with(Host::VsCode, written, "args[0]")
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{written}: {err}");
    }
}

#[test]
fn cursor_own_names_come_from_the_project_and_home_never_from_the_environment() {
    let mut secrets = Secrets::default();
    let lookup = |var: &str| (var == "HOME").then(|| "/home/me".to_string());
    let out = expand_with(
        &Variables::of(Host::Cursor),
        "${userHome}/.x ${workspaceFolder} ${workspaceFolderBasename}",
        "s",
        "args[0]",
        Path::new("/work/proj"),
        &lookup,
        &mut secrets,
    )
    .unwrap();
    assert_eq!(out, "/home/me/.x /work/proj proj");
    // A path the host fills in is no secret.
    assert!(secrets.is_empty());
    let err = with(Host::Cursor, "${userHome}", "args[0]");
    assert!(err.is_ok());
    let no_home = expand_with(
        &Variables::of(Host::Cursor),
        "${userHome}",
        "s",
        "args[0]",
        Path::new("/p"),
        &|_| None,
        &mut Secrets::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(no_home.contains("home directory"), "{no_home}");
    assert!(
        !no_home.contains("environment variable userHome"),
        "{no_home}"
    );
}

#[test]
fn amazon_q_expands_env_references_in_env_and_headers_and_passes_args_as_written() {
    assert_eq!(
        with(Host::AmazonQ, "${env:TOKEN} ${TOKEN}", "env.K").unwrap(),
        "s3cr3t-value ${TOKEN}"
    );
    assert_eq!(
        with(Host::AmazonQ, "${env:TOKEN}", "headers.A").unwrap(),
        "s3cr3t-value"
    );
    assert_eq!(
        with(Host::AmazonQ, "${env:TOKEN}", "args[0]").unwrap(),
        "${env:TOKEN}"
    );
    assert_eq!(
        with(Host::AmazonQ, "${env:TOKEN}", "url").unwrap(),
        "${env:TOKEN}"
    );
}

#[test]
fn a_url_reference_the_host_keeps_is_url_text_not_an_encoded_value() {
    let spec = |host: Host| ServerSpec {
        name: "s".into(),
        transport: TransportSpec::Remote {
            kind: super::super::RemoteKind::StreamableHttp,
            url: "https://h.example/${X}/${env:TOKEN}".into(),
            headers: BTreeMap::new(),
        },
        hosts: vec![host],
        filter: Default::default(),
        personal: false,
        guarded: false,
        allow_scripts: false,
        oauth_client: None,
        client_metadata_url: None,
        oauth_off: false,
        vars: Variables::of(host),
        headers_helper: None,
        environ: None,
        refusal: None,
    };
    let Resolved::Remote(remote) = spec(Host::Cline).resolve(Path::new("/p"), &env).unwrap() else {
        panic!("remote")
    };
    assert_eq!(remote.url, "https://h.example/${X}/s3cr3t-value");
}

#[test]
fn match_expansion_by_a_hosts_rules_keeps_literal_references_and_records_no_own_name() {
    let roo = Variables::of(Host::RooCode);
    let found = match_expansion_with(
        &roo,
        "args[0]",
        "${env:TOKEN}@${workspaceFolder}/${TOKEN}",
        "abc@/p/${TOKEN}",
    )
    .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(
        (found[0].var.as_str(), found[0].value.as_str()),
        ("TOKEN", "abc")
    );
    // Roo Code keeps ${TOKEN}: a launch with a value there is not this entry.
    assert!(match_expansion_with(&roo, "args[0]", "${TOKEN}", "abc").is_none());
}

#[test]
fn unset_variable_is_an_error_naming_it() {
    let err = expand(
        "${NOPE}",
        "gh",
        "env.X",
        Path::new("/"),
        &env,
        &mut Secrets::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "server \"gh\": environment variable NOPE is not set (used in env.X)"
    );
}

/// A Codex entry read from its TOML members, as `read_entry` reads it.
fn codex(entry: serde_json::Value) -> ServerSpec {
    match crate::servers::config::entry::read_entry("s", &entry, Host::Codex).unwrap() {
        crate::servers::config::entry::Read::Server(spec) => spec,
        other => panic!("{other:?}"),
    }
}

#[test]
fn codex_leaves_out_env_vars_that_are_unset_and_headers_whose_variable_is_unset_or_blank() {
    let lookup = |var: &str| match var {
        "SET" => Some("v1".to_string()),
        "EMPTY" => Some(String::new()),
        "BLANK" => Some("  ".to_string()),
        _ => None,
    };
    let stdio = codex(serde_json::json!({"command": "x", "env_vars": ["SET", "EMPTY", "GONE"]}));
    let resolved = stdio
        .resolve_stdio(Path::new("/p"), &lookup)
        .unwrap()
        .unwrap();
    // An empty value is still set: Codex passes it.
    assert_eq!(
        resolved.env.keys().collect::<Vec<_>>(),
        ["EMPTY", "SET"],
        "{:?}",
        resolved.env
    );
    let remote = codex(serde_json::json!({"url": "http://h/",
            "env_http_headers": {"X-Set": "SET", "X-Blank": "BLANK", "X-Gone": "GONE"}}));
    let Resolved::Remote(r) = remote.resolve(Path::new("/p"), &lookup).unwrap() else {
        panic!("remote");
    };
    let names: Vec<&str> = r.headers.iter().map(|(k, _, _)| k.as_str()).collect();
    assert_eq!(names, ["X-Set"]);
    // Another host's unset variable is still an error.
    let other = ServerSpec {
        vars: Variables::of(Host::ClaudeCode),
        ..stdio
    };
    assert!(other.resolve_stdio(Path::new("/p"), &lookup).is_err());
}

#[test]
fn codex_refuses_a_bearer_token_variable_that_is_unset_or_empty() {
    let spec = codex(serde_json::json!({"url": "http://h/", "bearer_token_env_var": "TOK"}));
    let with = |value: Option<&str>| {
        let lookup = |var: &str| (var == "TOK").then(|| value.map(str::to_string)).flatten();
        spec.resolve(Path::new("/p"), &lookup).map(|_| ())
    };
    assert!(with(Some("t0k3n")).is_ok());
    let empty = with(Some("")).unwrap_err().to_string();
    assert!(empty.contains("TOK is empty"), "{empty}");
    let unset = with(None).unwrap_err().to_string();
    assert!(unset.contains("TOK is not set"), "{unset}");
}
