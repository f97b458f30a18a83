//! `mcp-lock outdated` against registries on loopback: crafted packuments and index
//! pages served from this process (publish times and yanks a real registry cannot be
//! told to backdate), and a real verdaccio with tiny-mcp published at several
//! versions. The servers' runners are stand-ins that start the fixture server, so only
//! the registry look-ups matter. Nothing leaves the machine.

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use common::Project;
use common::registries::{Registry, free_port, sha512_sri, stand_in_runners};
use mcp_lock::servers::package::releases::format_time;
use serde_json::{Value, json};

/// What a crafted registry answers: path -> (content type, body); anything else 404.
type Pages = Arc<Mutex<BTreeMap<String, (String, String)>>>;

/// A registry on loopback serving `pages`, answered from a thread of this process.
fn crafted_registry(pages: Pages) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let pages = pages.clone();
            std::thread::spawn(move || answer(stream, &pages));
        }
    });
    port
}

fn answer(mut stream: TcpStream, pages: &Pages) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request = String::new();
    let _ = reader.read_line(&mut request);
    let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        line.clear();
    }
    let page = pages.lock().unwrap().get(&path).cloned();
    let (status, kind, body) = match page {
        Some((kind, body)) => ("200 OK", kind, body),
        None => ("404 Not Found", "text/plain".into(), "not found".into()),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// `days` days before now, as a registry writes it.
fn days_ago(days: f64) -> String {
    format_time(SystemTime::now() - Duration::from_secs_f64(days * 86_400.0))
}

/// A full packument of tiny-mcp: each version with its age in days and, if given, its
/// deprecation message; `latest` is what `update` pins.
fn packument(latest: &str, versions: &[(&str, f64, Option<&str>)]) -> String {
    let mut time = serde_json::Map::new();
    let mut manifests = serde_json::Map::new();
    time.insert("created".into(), json!(days_ago(400.0)));
    for (version, age, deprecated) in versions {
        time.insert(version.to_string(), json!(days_ago(*age)));
        let mut manifest = json!({"name": "tiny-mcp", "version": version,
            "dist": {"integrity": sha512_sri(), "tarball": "http://127.0.0.1:9/x.tgz"}});
        if let Some(message) = deprecated {
            manifest["deprecated"] = json!(message);
        }
        manifests.insert(version.to_string(), manifest);
    }
    json!({"name": "tiny-mcp", "dist-tags": {"latest": latest}, "time": time,
        "versions": manifests})
    .to_string()
}

/// The environment of a host whose npx asks the registry on `npm_port` and whose uvx
/// asks the index on `pypi_port`.
fn registry_env(npm_port: u16, pypi_port: u16, path: &str) -> Vec<(String, String)> {
    vec![
        (
            "npm_config_registry".into(),
            format!("http://127.0.0.1:{npm_port}/"),
        ),
        (
            "UV_INDEX_URL".into(),
            format!("http://127.0.0.1:{pypi_port}/simple/"),
        ),
        ("PATH".into(), path.to_string()),
    ]
}

fn run(p: &Project, args: &[&str], env: &[(String, String)]) -> common::Run {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    p.run_env(args, &env)
}

fn row<'a>(doc: &'a Value, server: &str) -> &'a Value {
    doc["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["server"] == server)
        .unwrap_or_else(|| panic!("no row for {server}: {doc:#}"))
}

fn versions(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|r| r["version"].as_str().unwrap())
        .collect()
}

/// A project with `tiny` launched by `npx -y tiny-mcp` (and `local`, a server that is
/// no registry package), pinned by `update` against `pages`' packument.
fn npm_project(versions: &[(&str, f64, Option<&str>)]) -> (Project, Pages, Vec<(String, String)>) {
    let (runners, path) = stand_in_runners();
    let pages: Pages = Arc::default();
    pages.lock().unwrap().insert(
        "/tiny-mcp".into(),
        ("application/json".into(), packument("1.0.0", versions)),
    );
    let port = crafted_registry(pages.clone());
    let p = Project::bare(json!({
        "tiny": {"command": "npx", "args": ["-y", "tiny-mcp"]},
        "local": common::fixture_entry(&[]),
    }));
    let env = registry_env(port, free_port(), &path);
    run(&p, &["update", "--yes"], &env).expect(0);
    // The runners are only needed to pin.
    drop(runners);
    (p, pages, env)
}

#[test]
fn the_candidate_is_the_newest_release_past_the_cooldown_and_newer_ones_are_held_back_with_their_age()
 {
    let (p, _pages, env) = npm_project(&[
        ("1.0.0", 100.0, None),
        ("1.1.0", 30.0, None),
        ("1.2.0", 20.0, Some("broken: use 1.1.0")),
        ("1.3.0", 2.0, None),
        ("2.0.0-rc.1", 10.0, None),
    ]);
    let out = run(&p, &["outdated", "--format", "json"], &env);
    out.expect(0);
    let doc = out.json();
    assert_eq!(doc["min_release_age"], "7d");
    assert_eq!(doc["min_release_age_seconds"], 7 * 86_400);
    assert_eq!(doc["exit_code"], 0);
    assert_eq!(doc["lock"], "mcp.lock");
    assert_eq!(doc["not_registry_packages"], json!(["local"]));
    let tiny = row(&doc, "tiny");
    assert_eq!(tiny["status"], "outdated", "{tiny:#}");
    assert_eq!(tiny["kind"], "npm");
    assert_eq!(tiny["package"], "tiny-mcp");
    assert_eq!(tiny["pinned"]["version"], "1.0.0");
    assert_eq!(tiny["pinned"]["listed"], true);
    assert_eq!(tiny["pinned"]["deprecated"], Value::Null);
    assert_eq!(tiny["candidate"]["version"], "1.1.0");
    let age = tiny["candidate"]["age_seconds"].as_u64().unwrap();
    assert!((30 * 86_400..31 * 86_400).contains(&age), "{age}");
    assert_eq!(versions(&tiny["held_back"]), ["1.3.0"]);
    assert_eq!(tiny["held_back"][0]["hold"], "cooldown");
    assert_eq!(versions(&tiny["withdrawn"]), ["1.2.0"]);
    assert_eq!(tiny["withdrawn"][0]["deprecated"], "broken: use 1.1.0");

    // The flag overrides the policy: a day lets 1.3.0 through.
    let out = run(
        &p,
        &["outdated", "--format", "json", "--min-release-age", "1d"],
        &env,
    );
    out.expect(0);
    let tiny = row(&out.json(), "tiny").clone();
    assert_eq!(tiny["candidate"]["version"], "1.3.0");
    assert_eq!(tiny["held_back"], json!([]));
    assert_eq!(tiny["withdrawn"], json!([]));

    // The policy's cooldown, longer than every newer release's age: nothing to move
    // to, everything held back, the deprecated one flagged.
    let policy = p.path().join("mcp-lock.toml");
    let mut text = std::fs::read_to_string(&policy).unwrap();
    text.push_str("\n[upgrade]\nmin-release-age = \"45d\"\n");
    std::fs::write(&policy, text).unwrap();
    let out = run(&p, &["outdated", "--format", "json"], &env);
    out.expect(0);
    let doc = out.json();
    assert_eq!(doc["min_release_age"], "45d");
    let tiny = row(&doc, "tiny");
    assert_eq!(tiny["status"], "up_to_date");
    assert_eq!(tiny["candidate"], Value::Null);
    assert_eq!(versions(&tiny["held_back"]), ["1.3.0", "1.2.0", "1.1.0"]);
    assert_eq!(tiny["held_back"][1]["deprecated"], "broken: use 1.1.0");
}

#[test]
fn a_prerelease_pin_is_offered_prereleases() {
    let (runners, path) = stand_in_runners();
    let pages: Pages = Arc::default();
    pages.lock().unwrap().insert(
        "/tiny-mcp".into(),
        (
            "application/json".into(),
            packument(
                "2.0.0-rc.1",
                &[
                    ("1.0.0", 100.0, None),
                    ("2.0.0-rc.1", 50.0, None),
                    ("2.0.0-rc.2", 20.0, None),
                ],
            ),
        ),
    );
    let port = crafted_registry(pages);
    let p = Project::bare(json!({"tiny": {"command": "npx", "args": ["-y", "tiny-mcp"]}}));
    let env = registry_env(port, free_port(), &path);
    run(&p, &["update", "--yes"], &env).expect(0);
    drop(runners);
    let out = run(&p, &["outdated", "--format", "json"], &env);
    out.expect(0);
    assert_eq!(
        row(&out.json(), "tiny")["candidate"]["version"],
        "2.0.0-rc.2"
    );
}

#[test]
fn text_output_is_a_table_with_one_line_per_server_and_the_deprecation_messages_below() {
    let (p, _pages, env) = npm_project(&[
        ("1.0.0", 100.0, Some("1.0.0 leaks tokens")),
        ("1.1.0", 30.0, None),
        ("1.2.0", 2.0, None),
    ]);
    let out = run(&p, &["outdated"], &env);
    out.expect(0);
    let stdout = out.stdout();
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("SERVER") && lines[0].ends_with("HELD BACK (cooldown 7d)"),
        "{stdout}"
    );
    let tiny: Vec<&str> = lines[1].split("  ").filter(|c| !c.is_empty()).collect();
    assert_eq!(
        tiny,
        [
            "tiny",
            "npm tiny-mcp",
            "1.0.0 (deprecated)",
            "1.1.0",
            "1.2.0 (2d old)"
        ],
        "{stdout}"
    );
    assert!(
        stdout.contains("note: tiny: tiny-mcp 1.0.0 (pinned) is deprecated: 1.0.0 leaks tokens"),
        "{stdout}"
    );
    assert!(!stdout.contains('\x1b'), "no colour without a terminal");
    let stderr = out.stderr();
    assert!(
        stderr.contains("1 server not pinned to an npm or PyPI package left out: local"),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 package: 1 outdated, 1 with releases held back (cooldown 7d)"),
        "{stderr}"
    );

    // Named, a server that is no registry package gets a row saying so.
    let out = run(&p, &["outdated", "local", "--format", "json"], &env);
    out.expect(0);
    let doc = out.json();
    let local = row(&doc, "local");
    assert_eq!(local["status"], "not_a_registry_package", "{local}");
    assert!(
        local["message"]
            .as_str()
            .unwrap()
            .starts_with("not a registry package"),
        "{local}"
    );
    assert_eq!(
        doc["servers"].as_array().unwrap().len(),
        1,
        "only the named"
    );
    let out = run(&p, &["outdated", "nosuch"], &env);
    out.expect(2);
    assert!(
        out.stderr()
            .contains("no server named \"nosuch\" in mcp.lock; it pins: local, tiny"),
        "{}",
        out.stderr()
    );
}

#[test]
fn markdown_output_is_a_table_for_a_pull_request_comment() {
    let (p, _pages, env) = npm_project(&[
        ("1.0.0", 100.0, None),
        ("1.1.0", 30.0, None),
        ("1.2.0", 20.0, Some("do not | use")),
        ("1.3.0", 3.0, None),
    ]);
    let out = run(&p, &["outdated", "--format", "markdown"], &env);
    out.expect(0);
    let md = out.stdout();
    assert!(
        md.starts_with("## mcp-lock outdated: 1 outdated package of 1 package\n"),
        "{md}"
    );
    assert!(
        md.contains("| Server | Package | Pinned | Candidate | Held back |\n| --- | --- | --- | --- | --- |\n| tiny | npm tiny-mcp | 1.0.0 | **1.1.0** | 1.3.0 (3d old) |\n"),
        "{md}"
    );
    assert!(
        md.contains("- **tiny**: tiny-mcp 1.2.0 (passed over) is deprecated: do not \\| use\n"),
        "registry text cannot close a cell: {md}"
    );
    assert!(
        md.contains("Not registry packages, left out: local"),
        "{md}"
    );
}

/// A PEP 691 project page of tiny-py: (file version, days ago, yanked).
fn index_json(files: &[(&str, Option<f64>, Value)]) -> String {
    let files: Vec<Value> = files
        .iter()
        .map(|(version, age, yanked)| {
            let mut file = json!({
                "filename": format!("tiny_py-{version}-py3-none-any.whl"),
                "url": format!("/files/tiny_py-{version}-py3-none-any.whl"),
                "hashes": {"sha256": "a".repeat(64)},
                "yanked": yanked,
            });
            if let Some(age) = age {
                file["upload-time"] = json!(days_ago(*age));
            }
            file
        })
        .collect();
    json!({"meta": {"api-version": "1.1"}, "name": "tiny-py", "files": files}).to_string()
}

#[test]
fn a_yanked_pypi_release_is_passed_over_from_pep691_json_and_from_the_html_page() {
    let (runners, path) = stand_in_runners();
    let pages: Pages = Arc::default();
    pages.lock().unwrap().insert(
        "/simple/tiny-py/".into(),
        (
            "application/vnd.pypi.simple.v1+json".into(),
            index_json(&[
                ("1.0.0", Some(100.0), json!(false)),
                ("1.1.0", Some(40.0), json!(false)),
                ("1.2.0", Some(30.0), json!("broken wheel")),
                ("1.3.0", Some(1.0), json!(false)),
                ("1.4.0", None, json!(false)),
            ]),
        ),
    );
    let port = crafted_registry(pages.clone());
    let p = Project::bare(json!({"py": {"command": "uvx", "args": ["tiny-py==1.0.0"]}}));
    let env = registry_env(free_port(), port, &path);
    run(&p, &["update", "--yes"], &env).expect(0);
    drop(runners);
    let out = run(&p, &["outdated", "--format", "json"], &env);
    out.expect(0);
    let doc = out.json();
    let py = row(&doc, "py");
    assert_eq!(py["kind"], "pypi", "{py:#}");
    assert_eq!(py["registry"], format!("http://127.0.0.1:{port}/simple/"));
    assert_eq!(py["candidate"]["version"], "1.1.0");
    assert_eq!(versions(&py["withdrawn"]), ["1.2.0"]);
    assert_eq!(py["withdrawn"][0]["yanked"], "broken wheel");
    assert_eq!(versions(&py["held_back"]), ["1.4.0", "1.3.0"]);
    assert_eq!(py["held_back"][0]["hold"], "release_time_unknown");
    assert_eq!(py["held_back"][0]["published"], Value::Null);
    assert_eq!(py["held_back"][1]["hold"], "cooldown");

    // An index that serves only the HTML page: yanks are read from data-yanked, and
    // with no upload times every newer release is held back while there is a cooldown.
    let html = r#"<!DOCTYPE html><html><body>
        <a href="/f/tiny_py-1.0.0-py3-none-any.whl#sha256=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">tiny_py-1.0.0-py3-none-any.whl</a>
        <a href="/f/tiny_py-1.1.0-py3-none-any.whl">tiny_py-1.1.0-py3-none-any.whl</a>
        <a href="/f/tiny_py-1.2.0-py3-none-any.whl" data-yanked="">tiny_py-1.2.0-py3-none-any.whl</a>
        </body></html>"#;
    pages.lock().unwrap().insert(
        "/simple/tiny-py/".into(),
        ("text/html".into(), html.to_string()),
    );
    let out = run(&p, &["outdated", "--format", "json"], &env);
    out.expect(0);
    let py = row(&out.json(), "py").clone();
    assert_eq!(py["candidate"], Value::Null);
    assert_eq!(versions(&py["held_back"]), ["1.2.0", "1.1.0"]);
    assert_eq!(py["held_back"][0]["yanked"], "");
    assert!(
        py["held_back"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["hold"] == "release_time_unknown")
    );
    let out = run(
        &p,
        &["outdated", "--format", "json", "--min-release-age", "0"],
        &env,
    );
    out.expect(0);
    let doc = out.json();
    assert_eq!(doc["min_release_age"], "0");
    let py = row(&doc, "py");
    assert_eq!(py["candidate"]["version"], "1.1.0");
    assert_eq!(versions(&py["withdrawn"]), ["1.2.0"]);
}

#[test]
fn a_registry_that_is_down_makes_each_of_its_servers_say_why_and_exits_3() {
    let (runners, path) = stand_in_runners();
    let pages: Pages = Arc::default();
    pages.lock().unwrap().insert(
        "/tiny-mcp".into(),
        (
            "application/json".into(),
            packument("1.0.0", &[("1.0.0", 100.0, None)]),
        ),
    );
    pages.lock().unwrap().insert(
        "/simple/tiny-py/".into(),
        (
            "application/vnd.pypi.simple.v1+json".into(),
            index_json(&[("1.0.0", Some(100.0), json!(false))]),
        ),
    );
    let port = crafted_registry(pages);
    let p = Project::bare(json!({
        "tiny": {"command": "npx", "args": ["-y", "tiny-mcp"]},
        "py": {"command": "uvx", "args": ["tiny-py"]},
    }));
    run(&p, &["update", "--yes"], &registry_env(port, port, &path)).expect(0);
    drop(runners);
    let up = run(
        &p,
        &["outdated", "--format", "json"],
        &registry_env(port, port, &path),
    );
    up.expect(0);
    assert_eq!(row(&up.json(), "tiny")["status"], "up_to_date");

    let gone = free_port();
    let env = registry_env(gone, gone, &path);
    let out = run(&p, &["outdated"], &env);
    out.expect(3);
    let stdout = out.stdout();
    let rows: Vec<&str> = stdout.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "one line per server: {stdout}");
    assert!(
        rows[0].starts_with("py ")
            && rows[0].contains(&format!(
                "could not check: cannot reach http://127.0.0.1:{gone}/simple/tiny-py/"
            )),
        "{stdout}"
    );
    assert!(
        rows[1].starts_with("tiny ")
            && rows[1].contains(&format!(
                "could not check: cannot reach http://127.0.0.1:{gone}/tiny-mcp"
            )),
        "{stdout}"
    );
    assert!(
        out.stderr()
            .contains("error: 2 packages: 0 outdated, 2 could not be checked (cooldown 7d)"),
        "{}",
        out.stderr()
    );
    let json = run(&p, &["outdated", "--format", "json"], &env);
    json.expect(3);
    let doc = json.json();
    assert_eq!(doc["exit_code"], 3);
    for server in ["tiny", "py"] {
        let r = row(&doc, server);
        assert_eq!(r["status"], "unchecked");
        assert!(
            r["message"].as_str().unwrap().starts_with("cannot reach "),
            "{r}"
        );
    }
}

#[test]
fn a_registry_answering_garbage_is_a_one_line_reason_not_a_crash() {
    let (p, pages, env) = npm_project(&[("1.0.0", 100.0, None)]);
    for garbage in [
        "<html>proxy error</html>",
        r#"{"versions": [1, 2]}"#,
        r#"{"versions": {}, "time": "yesterday"}"#,
    ] {
        pages.lock().unwrap().insert(
            "/tiny-mcp".into(),
            ("application/json".into(), garbage.into()),
        );
        let out = run(&p, &["outdated", "--format", "json"], &env);
        out.expect(3);
        let doc = out.json();
        let message = row(&doc, "tiny")["message"].as_str().unwrap().to_string();
        assert!(
            message.starts_with("the registry at http://127.0.0.1:")
                && message.contains("answered for tiny-mcp with")
                && !message.contains('\n'),
            "{garbage}: {message}"
        );
    }
}

#[test]
fn a_missing_or_corrupt_lock_is_the_error_every_command_gives() {
    let p = Project::new(json!({"local": common::fixture_entry(&[])}));
    let out = p.run(&["outdated"]);
    out.expect(2);
    assert!(
        out.stderr()
            .contains("mcp.lock not found; run `mcp-lock update` to create it"),
        "{}",
        out.stderr()
    );
    std::fs::write(p.path().join("mcp.lock"), "version = \n").unwrap();
    let outdated = p.run(&["outdated"]);
    outdated.expect(2);
    let verify = p.run(&["verify"]);
    verify.expect(2);
    assert_eq!(outdated.stderr(), verify.stderr());
    assert!(!outdated.stderr().is_empty());

    std::fs::remove_file(p.path().join("mcp.lock")).unwrap();
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[upgrade]\nmin-release-age = \"a week\"\n",
    )
    .unwrap();
    let out = p.run(&["outdated"]);
    out.expect(2);
    assert!(
        out.stderr()
            .contains("mcp-lock.toml:2: min-release-age: \"a week\" is not a release age"),
        "{}",
        out.stderr()
    );
    let out = p.run(&["outdated", "--min-release-age", "7w"]);
    out.expect(2);
    assert!(
        out.stderr().contains("not a release age"),
        "{}",
        out.stderr()
    );
}

#[test]
fn against_verdaccio_tiny_mcp_published_at_several_versions_shows_the_cooldown_and_a_deprecation() {
    let registry = Registry::start();
    registry.publish_tiny("1.0.0");
    let (runners, path) = stand_in_runners();
    let env = vec![
        ("npm_config_registry".to_string(), registry.url()),
        ("PATH".to_string(), path.clone()),
    ];
    let p = Project::bare(json!({"tiny": {"command": "npx", "args": ["-y", "tiny-mcp"]}}));
    run(&p, &["update", "--yes"], &env).expect(0);
    drop(runners);
    let out = run(&p, &["outdated", "--format", "json"], &env);
    out.expect(0);
    let tiny = row(&out.json(), "tiny").clone();
    assert_eq!(tiny["status"], "up_to_date", "{tiny:#}");
    assert!(
        tiny["pinned"]["published"].is_string(),
        "verdaccio gives `time`"
    );

    for version in ["1.0.1", "1.1.0"] {
        registry.publish_tiny(version);
    }
    let out = common::command("npm")
        .args([
            "deprecate",
            "tiny-mcp@1.1.0",
            "1.1.0 is broken, stay on 1.0.1",
        ])
        .arg("--userconfig")
        .arg(registry.service.dir.path().join("publish.npmrc"))
        .args(["--registry", &registry.url()])
        .env(
            "npm_config_cache",
            registry.service.dir.path().join("publish-cache"),
        )
        .env("npm_config_update_notifier", "false")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "npm deprecate: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Just published: the cooldown holds both back.
    let out = run(&p, &["outdated", "--format", "json"], &env);
    out.expect(0);
    let tiny = row(&out.json(), "tiny").clone();
    assert_eq!(tiny["candidate"], Value::Null, "{tiny:#}");
    assert_eq!(versions(&tiny["held_back"]), ["1.1.0", "1.0.1"]);
    assert_eq!(tiny["held_back"][0]["hold"], "cooldown");
    assert_eq!(
        tiny["held_back"][0]["deprecated"],
        "1.1.0 is broken, stay on 1.0.1"
    );
    assert!(tiny["held_back"][1]["age_seconds"].as_u64().unwrap() < 3600);

    // Without a cooldown the newest release not deprecated is the candidate.
    let out = run(
        &p,
        &["outdated", "--format", "json", "--min-release-age", "0"],
        &env,
    );
    out.expect(0);
    let tiny = row(&out.json(), "tiny").clone();
    assert_eq!(tiny["status"], "outdated");
    assert_eq!(tiny["candidate"]["version"], "1.0.1");
    assert_eq!(versions(&tiny["withdrawn"]), ["1.1.0"]);
}
