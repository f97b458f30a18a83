//! `mcp-lock check-listing`: a listing captured from the fixture server, judged against
//! the lock, gets the report `verify` gets from the same server, for every drift
//! revision; a listing with a page missing is incomplete, never converged.

use crate::common;

use common::{McpPipe, Project, fixture, fixture_entry};
use serde_json::{Value, json};

/// What a client of the pinned profile receives from the fixture at `args`: the
/// initialize result and every page of every list, as an array of documents.
fn capture(project: &Project, args: &[&str]) -> Vec<Value> {
    let lock =
        mcp_lock::records::lock::parse_lock(&project.lock_text().unwrap(), "mcp.lock").unwrap();
    let profile = lock.servers["fx"].profiles.keys().next().unwrap().clone();
    capture_as(project, args, &profile)
}

/// The `initialize` params a client of the pinned profile `profile` sends.
fn handshake_of(project: &Project, profile: &str) -> Value {
    let lock =
        mcp_lock::records::lock::parse_lock(&project.lock_text().unwrap(), "mcp.lock").unwrap();
    let pin = &lock.servers["fx"].profiles[profile];
    json!({
        "protocolVersion": pin.protocol_version,
        "capabilities": pin.client_capabilities.to_value(),
        "clientInfo": pin.client_info.to_value(),
    })
}

/// What a client of the pinned profile `profile` receives (see [`capture`]).
fn capture_as(project: &Project, args: &[&str], profile: &str) -> Vec<Value> {
    let mut pipe = McpPipe::spawn(&fixture(), args, project.path(), &[]);
    let init = pipe.request("initialize", handshake_of(project, profile));
    pipe.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let result = init["result"].clone();
    let mut documents = vec![result.clone()];
    for (method, capability) in [
        ("tools/list", "tools"),
        ("prompts/list", "prompts"),
        ("resources/templates/list", "resources"),
    ] {
        if result["capabilities"].get(capability).is_none() {
            continue;
        }
        let mut params = json!({});
        loop {
            let answer = pipe.request(method, params);
            let page = answer["result"].clone();
            assert!(page.is_object(), "{method}: {answer}");
            documents.push(page.clone());
            match page.get("nextCursor") {
                Some(Value::String(c)) => params = json!({"cursor": c}),
                _ => break,
            }
        }
    }
    pipe.close();
    documents
}

fn check_listing(project: &Project, documents: &[Value]) -> common::Run {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("listing.json");
    std::fs::write(&file, serde_json::to_string(documents).unwrap()).unwrap();
    project.run(&[
        "check-listing",
        "fx",
        file.to_str().unwrap(),
        "--format",
        "json",
    ])
}

/// A report with what differs between two runs of anything taken out: the time taken,
/// the stderr and stray lines only a connection has, and the package check (what is
/// launched is verify's to check; a listing says nothing of it).
fn comparable(mut report: Value) -> Value {
    for server in report["servers"].as_array_mut().unwrap() {
        let server = server.as_object_mut().unwrap();
        server.remove("elapsed_ms");
        server.remove("stderr");
        server.remove("ignored_lines");
        server.remove("package");
    }
    report
}

/// Pins the fixture at `pinned`, then for each revision compares `verify` against the
/// live server with `check-listing` of a listing captured from it.
fn same_as_verify(base: &[&str], pinned: &str, revisions: &[&str]) {
    fn with<'a>(base: &[&'a str], revision: &'a str) -> Vec<&'a str> {
        let mut args = base.to_vec();
        args.extend(["--revision", revision]);
        args
    }
    let project = Project::new(json!({ "fx": fixture_entry(&with(base, pinned)) }));
    project.run(&["update", "--yes"]).expect(0);
    for revision in revisions {
        project.set_servers(json!({ "fx": fixture_entry(&with(base, revision)) }));
        let verify = project.run(&["verify", "--format", "json"]);
        let listing = capture(&project, &with(base, revision));
        let checked = check_listing(&project, &listing);
        assert_eq!(
            checked.code(),
            verify.code(),
            "revision {revision}: exit codes differ\n{}{}",
            checked.stdout(),
            checked.stderr()
        );
        assert_eq!(
            comparable(checked.json()),
            comparable(verify.json()),
            "revision {revision}: the reports differ"
        );
    }
}

#[test]
fn every_tool_revision_gets_verifys_report_from_a_captured_listing() {
    same_as_verify(
        &["--page-size", "2"],
        "a",
        &[
            "a",
            "b",
            "additive",
            "cosmetic",
            "breaking",
            "authority",
            "hostile",
        ],
    );
}

#[test]
fn every_prompt_and_template_revision_gets_verifys_report_from_a_captured_listing() {
    same_as_verify(
        &["--surface", "--page-size", "2"],
        "a",
        &[
            "a",
            "prompt-required",
            "prompt-optional",
            "prompt-reworded",
            "prompt-title",
            "prompt-renamed",
            "prompt-added",
            "prompt-removed",
            "prompt-hostile",
            "template-widened",
            "template-mime",
            "template-renamed",
        ],
    );
}

#[test]
fn a_long_description_edited_by_one_word_gets_verifys_report() {
    same_as_verify(&[], "long", &["long", "long-edit"]);
}

#[test]
fn a_listing_whose_last_page_is_missing_is_incomplete_even_when_what_was_read_matches() {
    let args = ["--page-size", "2", "--revision", "a"];
    let project = Project::new(json!({ "fx": fixture_entry(&args) }));
    project.run(&["update", "--yes"]).expect(0);
    let mut listing = capture(&project, &args);
    assert!(listing.len() >= 3, "paged: {listing:?}");
    listing.pop();
    let run = check_listing(&project, &listing);
    run.expect(3);
    let server = &run.json()["servers"][0];
    assert_eq!(server["verdict"], "incomplete");
    assert!(
        server["error"]
            .as_str()
            .unwrap()
            .contains("names a page the input does not have"),
        "{server}"
    );
}

#[test]
fn pages_given_as_separate_files_or_json_lines_on_stdin_are_joined() {
    let args = ["--page-size", "2", "--revision", "b"];
    let project = Project::new(json!({ "fx": fixture_entry(&["--revision", "a"]) }));
    project.run(&["update", "--yes"]).expect(0);
    let listing = capture(&project, &args);
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (i, document) in listing.iter().enumerate() {
        let file = dir.path().join(format!("{i}.json"));
        std::fs::write(&file, serde_json::to_string_pretty(document).unwrap()).unwrap();
        files.push(file.display().to_string());
    }
    let mut argv = vec!["check-listing", "fx", "--format", "json"];
    argv.extend(files.iter().map(String::as_str));
    let from_files = project.run(&argv);
    from_files.expect(1);
    assert_eq!(from_files.json()["servers"][0]["verdict"], "stale");

    let lines: String = listing
        .iter()
        .map(|d| format!("{}\n", serde_json::to_string(d).unwrap()))
        .collect();
    let out = common::output_with_stdin(
        project
            .command(common::bin())
            .args(["check-listing", "fx", "--format", "json"]),
        lines.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(1));
    let from_stdin: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(comparable(from_stdin), comparable(from_files.json()));
}

#[test]
fn broken_input_an_unknown_server_or_no_tools_is_a_one_line_error_with_exit_2() {
    let project = Project::new(json!({ "fx": fixture_entry(&["--revision", "a"]) }));
    project.run(&["update", "--yes"]).expect(0);
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let cases = [
        (write("broken.json", "{\"tools\": ["), "not JSON"),
        (
            write("prompts.json", "{\"prompts\": []}"),
            "no tools/list result",
        ),
        (
            write(
                "error.json",
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}"#,
            ),
            "JSON-RPC error answer",
        ),
        (write("number.json", "7"), "not a JSON object or array"),
    ];
    for (file, said) in &cases {
        let run = project.run(&["check-listing", "fx", file]);
        run.expect(2);
        let stderr = run.stderr();
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(said), "{file}: {stderr}");
    }
    let listing = write("ok.json", "{\"tools\": []}");
    let run = project.run(&["check-listing", "nope", &listing]);
    run.expect(2);
    assert!(
        run.stderr().contains("unknown server \"nope\""),
        "{}",
        run.stderr()
    );
    let run = project.run(&["check-listing", "fx", &listing, "--client", "no-such-host"]);
    run.expect(2);
}

#[test]
fn a_server_pinned_under_two_profiles_needs_client_to_say_which_received_the_listing() {
    let project = Project::new(json!({ "fx": fixture_entry(&["--revision", "a"]) }));
    std::fs::write(
        project.path().join("mcp-lock.toml"),
        "[profiles]\npin = [\"claude-code\", \"vscode\"]\n",
    )
    .unwrap();
    project.run(&["update", "--yes"]).expect(0);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("l.json");
    std::fs::write(&file, "{\"tools\": []}").unwrap();
    let file = file.to_str().unwrap();
    let run = project.run(&["check-listing", "fx", file]);
    run.expect(2);
    assert!(run.stderr().contains("--client"), "{}", run.stderr());
    // Every pinned tool missing from what vscode's agent received: removals fail.
    let run = project.run(&[
        "check-listing",
        "fx",
        file,
        "--client",
        "vscode",
        "--format",
        "json",
    ]);
    run.expect(1);
    assert_eq!(run.json()["servers"][0]["profile"], "vscode");
}

/// A remote server pinned over HTTP+SSE (found by falling back from Streamable HTTP):
/// how the client reached it is not in what it received, and a matching listing
/// gets verify's report.
#[test]
fn a_remote_servers_listing_converges_with_the_transport_it_was_pinned_over() {
    let http = common::HttpServer::fixture(&["--sse", "--revision", "a"]);
    let project = Project::new(json!({ "fx": {"url": http.url("/sse")} }));
    project.run(&["update", "--yes"]).expect(0);
    let lock = project.lock_text().unwrap();
    assert!(lock.contains("sse"), "pinned over HTTP+SSE: {lock}");
    let verify = project.run(&["verify", "--format", "json"]);
    verify.expect(0);
    let listing = capture(&project, &["--revision", "a"]);
    let checked = check_listing(&project, &listing);
    checked.expect(0);
    assert_eq!(comparable(checked.json()), comparable(verify.json()));
}

/// A tools/list page of `n` small tools starting at `from`, with a next cursor when
/// `next` is given.
fn page_of(from: usize, n: usize, next: Option<&str>) -> String {
    let tools: Vec<String> = (from..from + n)
        .map(|i| format!(r#"{{"name":"t{i}","inputSchema":{{"type":"object"}}}}"#))
        .collect();
    let cursor = next.map_or(String::new(), |c| format!(r#","nextCursor":"{c}""#));
    format!(r#"{{"tools":[{}]{cursor}}}"#, tools.join(","))
}

#[test]
fn a_listing_past_verifys_limits_is_incomplete_and_is_not_read_whole() {
    let project = Project::new(json!({ "fx": fixture_entry(&["--revision", "a"]) }));
    project.run(&["update", "--yes"]).expect(0);
    let dir = tempfile::tempdir().unwrap();
    let check = |name: &str, text: &str, extra: &[&str]| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let mut args = vec!["check-listing", "fx", path.to_str().unwrap()];
        args.extend_from_slice(&["--format", "json"]);
        args.extend_from_slice(extra);
        let run = project.run(&args);
        run.expect(3);
        let server = run.json()["servers"][0].clone();
        assert_eq!(server["verdict"], "incomplete", "{name}: {server}");
        server["error"].as_str().unwrap().to_string()
    };
    // More tools than --max-tools, over three pages (JSON Lines).
    let lines = [
        page_of(0, 6000, Some("2")),
        page_of(6000, 6000, Some("3")),
        page_of(12000, 6000, None),
    ]
    .join("\n");
    let error = check("many.jsonl", &lines, &[]);
    assert!(
        error.starts_with(
            "runaway listing: more than 10000 tools (raise --max-tools if this is real)"
        ),
        "{error}"
    );
    // The same within a raised --max-tools, but past --max-pages.
    let error = check(
        "many.jsonl",
        &lines,
        &["--max-tools", "20000", "--max-pages", "2"],
    );
    assert!(
        error.starts_with("runaway listing: more than 2 pages (raise --max-pages if this is real)"),
        "{error}"
    );
    // One 20 MB page, over the 16 MiB a server message may be: reading stops there.
    let huge = format!("[{}]", page_of(0, 400_000, None));
    assert!(huge.len() > 16 * 1024 * 1024);
    let error = check("huge.json", &huge, &[]);
    assert!(
        error
            .contains("the document at line 1 is larger than 16777216 bytes (--max-message-bytes)"),
        "{error}"
    );
    // Within raised limits the three pages are read whole (and are not the pinned
    // listing).
    let path = dir.path().join("many.jsonl");
    let run = project.run(&[
        "check-listing",
        "fx",
        path.to_str().unwrap(),
        "--format",
        "json",
        "--max-tools",
        "20000",
    ]);
    run.expect(1);
    assert_eq!(run.json()["servers"][0]["tools"], 18_000);
}

/// The fixture listing tools by the capabilities a client declares, pinned under two
/// profiles defined in mcp-lock.toml (not the built-in ones, whose values move): `plain`
/// declares nothing, `asker` sampling and elicitation (two more tools). `rooted`, known
/// but not pinned, declares roots besides.
fn gated_project() -> Project {
    let project = Project::new(json!({ "fx": fixture_entry(&["--gated"]) }));
    std::fs::write(
        project.path().join("mcp-lock.toml"),
        r#"[profiles]
pin = ["plain", "asker"]

[profile.plain]
protocol-version = "2025-06-18"
capabilities = {}
client-info = { name = "plain-agent", version = "1.0" }

[profile.asker]
protocol-version = "2025-06-18"
capabilities = { sampling = {}, elicitation = {} }
client-info = { name = "asking-agent", version = "2.0" }

[profile.rooted]
protocol-version = "2025-06-18"
capabilities = { sampling = {}, elicitation = {}, roots = {} }
client-info = { name = "rooted-agent", version = "3.0" }
"#,
    )
    .unwrap();
    project.run(&["update", "--yes"]).expect(0);
    project
}

/// check-listing of `documents` with `extra` arguments, as JSON.
fn check_listing_with(project: &Project, documents: &[Value], extra: &[&str]) -> common::Run {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("listing.json");
    std::fs::write(&file, serde_json::to_string(documents).unwrap()).unwrap();
    let mut args = vec![
        "check-listing",
        "fx",
        file.to_str().unwrap(),
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    project.run(&args)
}

fn tool_changes(server: &Value) -> Vec<(String, String)> {
    server["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap().to_string(),
                c["change"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_listing_is_judged_under_the_pinned_profile_whose_capabilities_the_handshake_declares() {
    let project = gated_project();
    let plain = capture_as(&project, &["--gated"], "plain");
    let asker = capture_as(&project, &["--gated"], "asker");
    assert_eq!(plain.len(), asker.len(), "one tools page each");
    let plain_hello = handshake_of(&project, "plain").to_string();
    let asker_hello = handshake_of(&project, "asker").to_string();

    // Each client's own listing, with what it declared: converged under its profile.
    for (listing, hello, profile) in [
        (&plain, &plain_hello, "plain"),
        (&asker, &asker_hello, "asker"),
    ] {
        let run = check_listing_with(&project, listing, &["--handshake", hello]);
        run.expect(0);
        let server = &run.json()["servers"][0];
        assert_eq!(server["profile"], profile, "{server}");
        assert_eq!(server["profile_pinned"], true);
        assert_eq!(server["verdict"], "converged");
        assert!(server.get("missing_profile").is_none(), "{server}");
    }
    // The plain listing from a client that declared sampling and elicitation: the two
    // tools that client is pinned with are missing.
    let run = check_listing_with(&project, &plain, &["--handshake", &asker_hello]);
    run.expect(1);
    let server = &run.json()["servers"][0];
    assert_eq!(server["profile"], "asker");
    assert_eq!(
        tool_changes(server),
        [
            ("confirm_deploy".to_string(), "removed".to_string()),
            ("summarize".to_string(), "removed".to_string())
        ]
    );
    // The whole request, and the server/discover form, are read too; key order of the
    // capabilities does not matter.
    let request = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "clientInfo": {"name": "x"},
                   "capabilities": {"elicitation": {}, "sampling": {}}}});
    let discover = json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "elicitation": {}}}}});
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hello.json");
    std::fs::write(&file, discover.to_string()).unwrap();
    let from_file = format!("@{}", file.display());
    for hello in [request.to_string(), from_file] {
        let run = check_listing_with(&project, &asker, &["--handshake", &hello]);
        run.expect(0);
        assert_eq!(run.json()["servers"][0]["profile"], "asker");
    }
    // Without it, a server pinned under two profiles needs to be told which.
    check_listing_with(&project, &asker, &[]).expect(2);
    // --client wins over what the handshake declares.
    let run = check_listing_with(
        &project,
        &asker,
        &["--handshake", &plain_hello, "--client", "asker"],
    );
    run.expect(0);
    assert_eq!(run.json()["servers"][0]["profile"], "asker");
}

#[test]
fn a_handshake_no_pinned_profile_matches_is_judged_as_the_guard_judges_it_and_named() {
    let project = gated_project();
    let asker = capture_as(&project, &["--gated"], "asker");
    // Capabilities of the known profile `rooted`, which the lock does not pin. Every
    // tool listed is approved under `asker`: the guard would serve each, so this
    // passes, and says what the client misses.
    let rooted = r#"{"protocolVersion": "2025-06-18", "capabilities": {"sampling": {}, "elicitation": {}, "roots": {}}, "clientInfo": {"name": "rooted-agent"}}"#;
    let run = check_listing_with(&project, &asker, &["--handshake", rooted]);
    run.expect(0);
    let doc = run.json();
    let server = &doc["servers"][0];
    assert_eq!(server["verdict"], "converged", "{server}");
    assert_eq!(server["profile"], "(unmatched)");
    assert_eq!(server["profile_pinned"], false);
    assert_eq!(server["changes"], json!([]));
    assert_eq!(
        server["missing_profile"],
        json!({
            "closest": "asker",
            "difference": ["+/roots"],
            "profile": "rooted",
            "pin_with": "mcp-lock update fx --client rooted",
        })
    );
    let warning = run.stderr();
    assert!(
        warning.contains("match no client profile pinned for fx (pinned: asker, plain); closest is asker, differing at +/roots")
            && warning.contains("`mcp-lock update fx --client rooted`"),
        "{warning}"
    );
    // A tool no pinned profile approves is added, as the guard hides it: stale, exit 1.
    let mut extra = asker.clone();
    let page = extra
        .iter_mut()
        .find(|d| d.get("tools").is_some())
        .expect("a tools page");
    page["tools"].as_array_mut().unwrap().push(json!({
        "name": "wipe_everything",
        "description": "Deletes every ticket.",
        "inputSchema": {"type": "object"}
    }));
    let run = check_listing_with(&project, &extra, &["--handshake", rooted]);
    run.expect(1);
    let server = &run.json()["servers"][0];
    assert_eq!(server["verdict"], "stale", "{server}");
    assert_eq!(
        tool_changes(server),
        [("wipe_everything".to_string(), "added".to_string())]
    );
    // Capabilities no known profile has: the closest still named, and how to pin it.
    let odd = r#"{"protocolVersion": "2025-06-18", "capabilities": {"experimental": {"x": {}}}}"#;
    let run = check_listing_with(&project, &asker, &["--handshake", odd]);
    run.expect(0);
    let server = &run.json()["servers"][0];
    let missing = &server["missing_profile"];
    assert_eq!(missing["closest"], "plain", "{server}");
    assert_eq!(missing["difference"], json!(["+/experimental"]));
    assert_eq!(missing["profile"], Value::Null);
    assert!(
        missing["pin_with"]
            .as_str()
            .unwrap()
            .starts_with("define a profile with these capabilities in mcp-lock.toml"),
        "{missing}"
    );
}

#[test]
fn a_handshake_that_is_not_one_is_a_one_line_error_with_exit_2() {
    let project = gated_project();
    let dir = tempfile::tempdir().unwrap();
    let listing = dir.path().join("l.json");
    std::fs::write(&listing, r#"{"tools": []}"#).unwrap();
    let big = dir.path().join("big.json");
    std::fs::write(
        &big,
        format!(
            "{{\"capabilities\": {{}}, \"x\": \"{}\"}}",
            "a".repeat(2 << 20)
        ),
    )
    .unwrap();
    let missing = dir.path().join("absent.json");
    let cases = [
        ("{\"capabilities\": ".to_string(), "--handshake: not JSON"),
        ("[1]".to_string(), "not a JSON object"),
        (
            r#"{"method": "tools/list", "params": {}}"#.to_string(),
            "is not a handshake request",
        ),
        (
            r#"{"protocolVersion": "2025-06-18"}"#.to_string(),
            "declares no capabilities object",
        ),
        (
            r#"{"capabilities": []}"#.to_string(),
            "declares no capabilities object",
        ),
        (
            r#"{"capabilities": {}, "protocolVersion": 7}"#.to_string(),
            "protocol version is not a string",
        ),
        (
            r#"{"capabilities": {}, "capabilities": {"roots": {}}}"#.to_string(),
            "repeated",
        ),
        (format!("@{}", big.display()), "larger than 1048576 bytes"),
        (
            format!("@{}", missing.display()),
            "cannot read the handshake from",
        ),
    ];
    for (hello, said) in &cases {
        let run = project.run(&[
            "check-listing",
            "fx",
            listing.to_str().unwrap(),
            "--handshake",
            hello,
        ]);
        run.expect(2);
        let stderr = run.stderr();
        assert_eq!(stderr.trim().lines().count(), 1, "{hello}: {stderr}");
        assert!(stderr.contains(said), "{hello}: {stderr}");
    }
}

#[test]
fn the_tools_the_rules_deny_are_named_in_what_a_client_received() {
    let project = Project::new(json!({"fx": fixture_entry(&[])}));
    std::fs::write(
        project.path().join("mcp-lock.toml"),
        "[tools]\ndeny = [\"fx/read_ticket\"]\n",
    )
    .unwrap();
    project.run(&["update", "--yes"]).expect(0);
    let documents = capture(&project, &[]);
    let run = check_listing(&project, &documents);
    run.expect(0);
    let denied = &run.json()["servers"][0]["denied"];
    assert_eq!(denied[0]["name"], "read_ticket", "{denied}");
    assert_eq!(denied[0]["rule"], "[tools] deny \"fx/read_ticket\"");
    assert_eq!(denied.as_array().unwrap().len(), 1);
}
