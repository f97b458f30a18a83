use super::*;

#[test]
fn canonical_resources_drop_fragments_and_a_bare_trailing_slash() {
    assert_eq!(
        canonical_resource("HTTPS://MCP.Example.com/").unwrap(),
        "https://mcp.example.com"
    );
    assert_eq!(
        canonical_resource("https://mcp.example.com:443/mcp#x").unwrap(),
        "https://mcp.example.com/mcp"
    );
}

fn meta() -> discovery::ServerMetadata {
    discovery::ServerMetadata {
        issuer: "https://as.example/".into(),
        authorization_endpoint: "https://as.example/authorize".into(),
        token_endpoint: "https://as.example/token".into(),
        registration_endpoint: None,
        scopes_supported: vec![],
        code_challenge_methods_supported: vec!["S256".into()],
        authorization_response_iss_parameter_supported: true,
        token_endpoint_auth_methods_supported: vec![],
        client_id_metadata_document_supported: false,
    }
}

#[test]
fn an_error_callback_with_another_state_is_refused_for_its_state_and_its_text_escaped() {
    let m = meta();
    let forged = check_callback("error=access_denied&state=t", "s", &m).unwrap_err();
    assert!(forged.contains("state"), "{forged}");
    assert!(!forged.contains("access_denied"), "{forged}");
    let refused = check_callback(
        "error=access_denied&error_description=%1B%5B2J%E2%80%AEgone&state=s",
        "s",
        &m,
    )
    .unwrap_err();
    assert!(refused.contains("access_denied"), "{refused}");
    assert!(
        !refused.contains('\u{1b}') && !refused.contains('\u{202e}'),
        "{refused:?}"
    );
}

#[test]
fn the_token_endpoint_method_is_the_registrations_else_the_first_listed_else_basic() {
    let listed = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    // RFC 7591: what the registration returned wins.
    assert_eq!(
        TokenAuth::choose(
            Some("client_secret_post"),
            &listed(&["client_secret_basic"]),
            true
        ),
        TokenAuth::Post
    );
    assert_eq!(
        TokenAuth::choose(Some("client_secret_basic"), &[], true),
        TokenAuth::Basic
    );
    // RFC 8414: no list means basic; a list is honoured.
    assert_eq!(TokenAuth::choose(None, &[], true), TokenAuth::Basic);
    assert_eq!(
        TokenAuth::choose(None, &listed(&["client_secret_post"]), true),
        TokenAuth::Post
    );
    assert_eq!(
        TokenAuth::choose(
            None,
            &listed(&["client_secret_post", "client_secret_basic"]),
            true
        ),
        TokenAuth::Post
    );
    assert_eq!(
        TokenAuth::choose(None, &listed(&["none", "client_secret_basic"]), true),
        TokenAuth::Basic
    );
    assert_eq!(
        TokenAuth::choose(None, &listed(&["private_key_jwt"]), true),
        TokenAuth::Basic
    );
    // Without a secret there is nothing to send but the id.
    assert_eq!(
        TokenAuth::choose(Some("client_secret_basic"), &[], false),
        TokenAuth::None
    );
    assert_eq!(TokenAuth::choose(Some("none"), &[], true), TokenAuth::None);
}

#[test]
fn a_record_of_an_older_release_refreshes_with_its_secret_in_the_body() {
    let (_, mut record) = cached("https://as.example/", None);
    assert_eq!(TokenAuth::of_record(&record), TokenAuth::None);
    record.client_secret = Some("s".into());
    assert_eq!(TokenAuth::of_record(&record), TokenAuth::Post);
    record.token_endpoint_auth = Some("client_secret_basic".into());
    assert_eq!(TokenAuth::of_record(&record), TokenAuth::Basic);
}

#[test]
fn a_lifetime_past_the_end_of_time_saturates_instead_of_overflowing() {
    assert_eq!(expiry(1_000, Duration::from_secs(u64::MAX)), u64::MAX);
    assert_eq!(expiry(1_000, Duration::from_secs(60)), 1_060);
}

#[test]
fn endpoints_must_be_https_or_http_on_loopback() {
    for good in [
        "https://as.example/authorize",
        "http://127.0.0.1:8080/authorize",
        "http://localhost/authorize",
        "http://[::1]/authorize",
    ] {
        assert!(
            endpoint_url("authorization endpoint", good).is_ok(),
            "{good}"
        );
    }
    for bad in [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "http://as.example/authorize",
        "data:text/html,hi",
    ] {
        let e = endpoint_url("authorization endpoint", bad).unwrap_err();
        assert!(e.contains("neither https nor http on loopback"), "{e}");
    }
}

fn cached(issuer: &str, obtained_at: Option<u64>) -> (usize, TokenRecord) {
    (
        0,
        TokenRecord {
            resource: "https://mcp.example/mcp".into(),
            issuer: issuer.into(),
            token_endpoint: format!("{issuer}token"),
            client_id: "c".into(),
            client_secret: None,
            access_token: format!("at-{issuer}"),
            refresh_token: None,
            expires_at: None,
            scope: None,
            obtained_at,
            token_endpoint_auth: None,
            wanted_scope: None,
            resource_indicator: None,
        },
    )
}

#[test]
fn the_cached_record_is_the_one_for_the_issuer_the_server_names_else_the_latest_login() {
    let records = || {
        vec![
            cached("https://old.example/", Some(300)),
            cached("https://new.example/", Some(200)),
            cached("https://other.example/", None),
        ]
    };
    let named = ["https://new.example/".to_string()];
    let pick = |named: &[String]| choose(records(), named).unwrap().1.issuer;
    assert_eq!(pick(&named), "https://new.example/");
    // Not named (or no metadata): the latest login, whatever the file order.
    assert_eq!(pick(&[]), "https://old.example/");
    assert_eq!(
        pick(&["https://gone.example/".to_string()]),
        "https://old.example/"
    );
    // Equal logins: the first file, every time.
    let same = vec![
        cached("https://b.example/", None),
        cached("https://a.example/", None),
    ];
    assert_eq!(choose(same, &[]).unwrap().1.issuer, "https://b.example/");
    assert!(choose(Vec::<(usize, TokenRecord)>::new(), &named).is_none());
}

#[test]
fn a_callback_with_another_state_or_issuer_is_refused() {
    let m = meta();
    let iss = "iss=https%3A%2F%2Fas.example%2F";
    assert_eq!(
        check_callback(&format!("code=c&state=s&{iss}"), "s", &m).unwrap(),
        "c"
    );
    assert!(
        check_callback(&format!("code=c&state=t&{iss}"), "s", &m)
            .unwrap_err()
            .contains("state")
    );
    assert!(
        check_callback("code=c&state=s&iss=https%3A%2F%2Fevil%2F", "s", &m)
            .unwrap_err()
            .contains("issuer")
    );
    assert!(
        check_callback("code=c&state=s", "s", &m)
            .unwrap_err()
            .contains("no iss")
    );
}
