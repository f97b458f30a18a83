//! Package pins against real registries on loopback: a verdaccio npm registry with no
//! uplink and a pypiserver index, both started here, with `npx -y` and `uvx` doing the
//! launching. Nothing leaves the machine: the registries know only what the tests
//! publish (verdaccio and pypiserver are installed by scripts/install-test-servers.sh).

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::Project;
use common::registries::{
    Index, Registry, ask_guard_for_version, data, free_port, servers_dir, sha512_sri,
    stand_in_runners,
};
use mcp_lock::servers::package::Package;
use serde_json::{Value, json};

fn run(p: &Project, args: &[&str], env: &[(String, String)]) -> common::Run {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    p.run_env(args, &env)
}

fn lock_of(p: &Project) -> mcp_lock::records::lock::Lockfile {
    mcp_lock::records::lock::parse_lock(&p.lock_text().expect("a lock"), "mcp.lock").unwrap()
}

fn package_of(p: &Project, server: &str) -> Package {
    lock_of(p).servers[server]
        .package
        .clone()
        .unwrap_or_else(|| panic!("{server} has no package pin"))
        .package
}

/// The report of one server in `verify --format json`.
fn report<'a>(doc: &'a Value, server: &str) -> &'a Value {
    doc["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == server)
        .unwrap_or_else(|| panic!("no report for {server}: {doc}"))
}

fn bare_project(servers: Value) -> Project {
    Project::bare(servers)
}

#[test]
fn an_npm_package_pinned_through_npx_is_changed_by_a_new_publish_while_the_guard_keeps_launching_the_pin()
 {
    let registry = Registry::start();
    registry.publish_tiny("1.0.0");
    let cache = tempfile::tempdir().unwrap();
    let env = registry.client_env(cache.path());
    let p = bare_project(json!({
        "tiny": {"command": "npx", "args": ["-y", "tiny-mcp"]},
        "tiny-wrapped": {"command": "mcp-lock", "args": ["guard", "tiny-wrapped", "--", "npx", "-y", "tiny-mcp"]},
    }));
    let update = run(&p, &["update", "--yes"], &env);
    update.expect(0);
    assert!(
        update
            .stderr()
            .contains("tiny package npm tiny-mcp@1.0.0 (sha512-"),
        "update shows what was resolved: {}",
        update.stderr()
    );
    let published = registry.packument("tiny-mcp")["versions"]["1.0.0"]["dist"]["integrity"]
        .as_str()
        .unwrap()
        .to_string();
    for server in ["tiny", "tiny-wrapped"] {
        assert_eq!(
            package_of(&p, server),
            Package::Npm {
                name: "tiny-mcp".into(),
                version: "1.0.0".into(),
                integrity: published.clone(),
            }
        );
    }
    run(&p, &["verify"], &env).expect(0);

    // A new release with the very same tools.
    registry.publish_tiny("1.0.1");
    let verify = run(&p, &["verify", "--format", "json"], &env);
    verify.expect(1);
    let doc = verify.json();
    let tiny = report(&doc, "tiny");
    assert_eq!(tiny["package"]["status"], "changed", "{tiny}");
    assert_eq!(tiny["package"]["action"], "fail");
    assert!(
        tiny["package"]["pinned"]
            .as_str()
            .unwrap()
            .starts_with("npm tiny-mcp@1.0.0")
    );
    assert_eq!(tiny["package"]["live"], "npm tiny-mcp@1.0.1");
    assert_eq!(tiny["changes"], json!([]), "every tool is unchanged");
    let wrapped = report(&doc, "tiny-wrapped");
    assert_eq!(wrapped["package"]["status"], "floating", "{wrapped}");
    assert_eq!(wrapped["package"]["action"], "warn");
    assert!(
        wrapped["package"]["message"]
            .as_str()
            .unwrap()
            .starts_with("floats; the registry's newest is 1.0.1; pinned 1.0.0"),
        "{wrapped}"
    );
    // The wrapped server alone passes, with the warning, listed as the guard runs it.
    let human = run(&p, &["verify", "tiny-wrapped"], &env);
    human.expect(0);
    assert!(
        human.stdout().contains("package-floating, warn"),
        "{}",
        human.stdout()
    );
    let human = run(&p, &["verify", "tiny"], &env);
    human.expect(1);
    assert!(
        human
            .stdout()
            .contains("package  changed  package-changed, fail  npm tiny-mcp@1.0.0 (sha512-")
            && human.stdout().contains(" -> npm tiny-mcp@1.0.1"),
        "{}",
        human.stdout()
    );
    // Every CI format carries it.
    for (format, shows) in [
        ("sarif", "\"ruleId\": \"package-changed\""),
        ("junit", "package-changed"),
        ("github", "package changed"),
        ("markdown", "package-changed"),
    ] {
        let out = run(&p, &["verify", "--format", format], &env);
        assert!(out.stdout().contains(shows), "{format}: {}", out.stdout());
    }
    // Offline, the registry is not asked.
    let offline = run(&p, &["verify", "--offline", "--format", "json"], &env);
    offline.expect(0);
    assert_eq!(
        report(&offline.json(), "tiny")["package"]["status"],
        "skipped"
    );

    // The guard launches the pinned 1.0.0 although the registry's newest is 1.0.1.
    let (server_version, text) =
        ask_guard_for_version(&p, "tiny-wrapped", &["npx", "-y", "tiny-mcp"], &env);
    assert_eq!(
        (server_version.as_str(), text.as_str()),
        ("1.0.0", "tiny-mcp 1.0.0")
    );

    // `--accept` moves the package only when package-changed is named.
    let before = p.lock_text().unwrap();
    let update = run(
        &p,
        &["update", "tiny", "--accept", "additive,cosmetic"],
        &env,
    );
    update.expect(4);
    assert_eq!(p.lock_text().unwrap(), before, "nothing moved");
    let update = run(&p, &["update", "tiny", "--accept", "package-changed"], &env);
    update.expect(4); // the server info's new version still needs a person
    match package_of(&p, "tiny") {
        Package::Npm { version, .. } => assert_eq!(version, "1.0.1"),
        other => panic!("{other:?}"),
    }
    match package_of(&p, "tiny-wrapped") {
        Package::Npm { version, .. } => assert_eq!(version, "1.0.0"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_npm_integrity_that_differs_from_the_registrys_is_package_changed() {
    let registry = Registry::start();
    registry.publish_tiny("1.0.0");
    let cache = tempfile::tempdir().unwrap();
    let env = registry.client_env(cache.path());
    let p = bare_project(json!({"tiny": {"command": "npx", "args": ["-y", "tiny-mcp@1.0.0"]}}));
    run(&p, &["update", "--yes"], &env).expect(0);
    let text = p.lock_text().unwrap();
    run(&p, &["verify"], &env).expect(0);
    let start = text.find("integrity = \"").unwrap() + 13;
    let end = start + text[start..].find('"').unwrap();
    let forged = format!(
        "{}sha512-{}==\"{}",
        &text[..start],
        "A".repeat(86),
        &text[end + 1..]
    );
    std::fs::write(p.path().join("mcp.lock"), forged).unwrap();
    let verify = run(&p, &["verify", "--format", "json"], &env);
    verify.expect(1);
    let doc = verify.json();
    let package = &report(&doc, "tiny")["package"];
    assert_eq!(package["status"], "changed");
    assert!(
        package["message"]
            .as_str()
            .unwrap()
            .contains("another integrity than the lock pins"),
        "{package}"
    );

    // With the registry gone, the package cannot be checked: exit 3, never a pass
    // (npx, told to stay offline, still starts the version it installed before).
    std::fs::write(p.path().join("mcp.lock"), &text).unwrap();
    drop(registry);
    let mut env = env;
    env.push(("npm_config_offline".into(), "true".into()));
    let verify = run(&p, &["verify", "--format", "json"], &env);
    verify.expect(3);
    let doc = verify.json();
    let tiny = report(&doc, "tiny");
    assert_eq!(tiny["verdict"], "converged", "the tools were read: {tiny}");
    assert_eq!(tiny["package"]["status"], "unverifiable");
    assert!(
        tiny["package"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot reach"),
        "{tiny}"
    );
}

#[test]
fn a_spec_that_does_not_resolve_leaves_the_lock_unwritten_and_exits_3() {
    let registry = Registry::start();
    registry.publish_tiny("1.0.0");
    let cache = tempfile::tempdir().unwrap();
    let env = registry.client_env(cache.path());
    let p = bare_project(json!({"tiny": {"command": "npx", "args": ["-y", "tiny-mcp@9.9.9"]}}));
    let update = run(&p, &["update", "--yes", "--timeout", "60"], &env);
    update.expect(3);
    assert!(
        update
            .stderr()
            .contains("tiny: package: tiny-mcp@9.9.9 is not published on the registry"),
        "{}",
        update.stderr()
    );
    assert_eq!(p.lock_text(), None, "no lock, not half of one");
}

#[test]
fn a_registry_answering_garbage_is_a_clear_error_never_a_pass() {
    // A registry that answers every request with an HTML page.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = "<html>maintenance</html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let cache = tempfile::tempdir().unwrap();
    let rc = cache.path().join("npmrc");
    std::fs::write(&rc, format!("registry=http://127.0.0.1:{port}/\n")).unwrap();
    let env: Vec<(String, String)> = vec![
        (
            "npm_config_registry".into(),
            format!("http://127.0.0.1:{port}/"),
        ),
        (
            "npm_config_cache".into(),
            cache.path().display().to_string(),
        ),
        ("npm_config_userconfig".into(), rc.display().to_string()),
        ("npm_config_fetch_retries".into(), "0".into()),
        ("npm_config_update_notifier".into(), "false".into()),
    ];
    let p = bare_project(json!({"tiny": {"command": "npx", "args": ["-y", "tiny-mcp"]}}));
    let update = run(&p, &["update", "--yes", "--timeout", "60"], &env);
    update.expect(3);
    let line = update
        .stderr()
        .lines()
        .find(|l| l.contains("tiny: package:"))
        .unwrap_or_default()
        .to_string();
    assert!(
        line.contains(&format!("the registry at http://127.0.0.1:{port}/ answered for tiny-mcp with something that is not JSON")),
        "{}",
        update.stderr()
    );
    assert_eq!(p.lock_text(), None);
}

#[test]
fn the_real_server_memory_tarball_is_pinned_with_its_published_integrity() {
    let servers = servers_dir();
    let packs = servers.join("packs");
    let recorded = std::fs::read_to_string(packs.join("server-memory.integrity"))
        .expect("install-test-servers.sh records the published integrity")
        .trim()
        .to_string();
    let registry = Registry::start();
    registry.publish_server_memory();
    let cache = tempfile::tempdir().unwrap();
    let env = registry.client_env(cache.path());
    let p = bare_project(json!({}));
    p.set_servers(json!({"memory": {
        "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"],
        "env": {"MEMORY_FILE_PATH": p.path().join("memory.jsonl").display().to_string()}}}));
    let update = run(
        &p,
        &[
            "update",
            "--yes",
            "--timeout",
            "180",
            "--request-timeout",
            "120",
        ],
        &env,
    );
    update.expect(0);
    assert_eq!(
        package_of(&p, "memory"),
        Package::Npm {
            name: "@modelcontextprotocol/server-memory".into(),
            version: "2026.8.31".into(),
            integrity: recorded,
        }
    );
    assert_eq!(
        lock_of(&p).servers["memory"].tool_names().len(),
        9,
        "it ran and listed its tools"
    );
    run(&p, &["verify"], &env).expect(0);
}

fn sha256_of(path: &Path) -> String {
    mcp_lock::servers::package::sha256_file(path).unwrap()
}

#[test]
fn a_pypi_package_pinned_through_uvx_is_changed_by_a_new_release_while_the_guard_keeps_launching_the_pin()
 {
    let index = Index::start();
    let wheel = index.publish_tiny("1.0.0");
    let cache = tempfile::tempdir().unwrap();
    let env = index.client_env(cache.path());
    let p = bare_project(json!({
        "tiny": {"command": "uvx", "args": ["tiny-py"]},
        "tiny-wrapped": {"command": "mcp-lock", "args": ["guard", "tiny-wrapped", "--", "uvx", "tiny-py"]},
    }));
    run(&p, &["update", "--yes"], &env).expect(0);
    let expected = Package::Pypi {
        name: "tiny-py".into(),
        version: "1.0.0".into(),
        files: [(
            "tiny_py-1.0.0-py3-none-any.whl".to_string(),
            sha256_of(&wheel),
        )]
        .into(),
    };
    assert_eq!(package_of(&p, "tiny"), expected);
    assert_eq!(package_of(&p, "tiny-wrapped"), expected);
    run(&p, &["verify"], &env).expect(0);

    index.publish_tiny("1.0.1");
    let verify = run(&p, &["verify", "--format", "json"], &env);
    verify.expect(1);
    let doc = verify.json();
    let tiny = report(&doc, "tiny");
    assert_eq!(tiny["package"]["status"], "changed", "{tiny}");
    assert_eq!(tiny["package"]["live"], "pypi tiny-py==1.0.1");
    assert_eq!(tiny["changes"], json!([]), "every tool is unchanged");
    let wrapped = report(&doc, "tiny-wrapped");
    assert_eq!(wrapped["package"]["status"], "floating", "{wrapped}");
    assert!(
        wrapped["package"]["message"]
            .as_str()
            .unwrap()
            .starts_with("floats; the registry's newest is 1.0.1; pinned 1.0.0"),
        "{wrapped}"
    );
    run(&p, &["verify", "tiny-wrapped"], &env).expect(0);
    let (server_version, text) =
        ask_guard_for_version(&p, "tiny-wrapped", &["uvx", "tiny-py"], &env);
    assert_eq!(
        (server_version.as_str(), text.as_str()),
        ("1.0.0", "tiny-py 1.0.0")
    );

    // A file added to the pinned release later is no change; a pinned file that
    // changed is.
    std::fs::write(
        index.pkgs().join("tiny_py-1.0.0.tar.gz"),
        b"an sdist added later",
    )
    .unwrap();
    run(&p, &["verify", "tiny-wrapped"], &env).expect(0);
    let mut bytes = std::fs::read(&wheel).unwrap();
    bytes.push(0);
    std::fs::write(&wheel, bytes).unwrap();
    let verify = run(&p, &["verify", "tiny-wrapped", "--format", "json"], &env);
    verify.expect(1);
    let doc = verify.json();
    let package = &report(&doc, "tiny-wrapped")["package"];
    assert_eq!(package["status"], "changed");
    assert!(
        package["message"]
            .as_str()
            .unwrap()
            .contains("gives tiny_py-1.0.0-py3-none-any.whl another sha256 than the lock pins"),
        "{package}"
    );
}

#[test]
fn uvs_at_latest_pins_the_newest_release_exactly_and_a_newer_one_is_met_as_npx_at_latest_is() {
    let index = Index::start();
    index.publish_tiny("1.0.0");
    let wheel = index.publish_tiny("1.1.0");
    let cache = tempfile::tempdir().unwrap();
    let env = index.client_env(cache.path());
    let p = bare_project(json!({
        "latest": {"command": "uvx", "args": ["tiny-py@latest"]},
        "from-latest": {"command": "uvx", "args": ["--from", "tiny-py@latest", "tiny-py"]},
        "latest-wrapped": {"command": "mcp-lock", "args": ["guard", "latest-wrapped", "--", "uvx", "tiny-py@latest"]},
        "at-version": {"command": "uvx", "args": ["tiny-py@1.0.0"]},
    }));
    run(&p, &["update", "--yes"], &env).expect(0);
    let newest = Package::Pypi {
        name: "tiny-py".into(),
        version: "1.1.0".into(),
        files: [(
            "tiny_py-1.1.0-py3-none-any.whl".to_string(),
            sha256_of(&wheel),
        )]
        .into(),
    };
    for server in ["latest", "from-latest", "latest-wrapped"] {
        assert_eq!(package_of(&p, server), newest, "{server}");
    }
    match package_of(&p, "at-version") {
        Package::Pypi { version, .. } => assert_eq!(version, "1.0.0", "`@1.0.0` is `==1.0.0`"),
        other => panic!("{other:?}"),
    }
    run(&p, &["verify"], &env).expect(0);

    // A newer release: the host's own uvx now launches it (package-changed), the
    // guard keeps launching the pin (package-floating), as with npx's @latest.
    index.publish_tiny("1.2.0");
    let verify = run(&p, &["verify", "--format", "json"], &env);
    verify.expect(1);
    let doc = verify.json();
    for server in ["latest", "from-latest"] {
        let r = report(&doc, server);
        assert_eq!(r["package"]["status"], "changed", "{r}");
        assert_eq!(r["package"]["live"], "pypi tiny-py==1.2.0", "{r}");
    }
    let wrapped = report(&doc, "latest-wrapped");
    assert_eq!(wrapped["package"]["status"], "floating", "{wrapped}");
    assert_eq!(report(&doc, "at-version")["package"]["status"], "pinned");
    run(&p, &["verify", "latest-wrapped", "at-version"], &env).expect(0);
    let (server_version, _) =
        ask_guard_for_version(&p, "latest-wrapped", &["uvx", "tiny-py@latest"], &env);
    assert_eq!(server_version, "1.1.0", "the guard launches the pin");
}

#[test]
fn a_pypi_spec_that_does_not_resolve_is_quoted_as_written() {
    let index = Index::start();
    index.publish_tiny("1.0.0");
    let cache = tempfile::tempdir().unwrap();
    let env = index.client_env(cache.path());
    let p = bare_project(json!({
        "missing": {"command": "uvx", "args": ["tiny-py@9.9.9"]},
        "range": {"command": "uvx", "args": ["tiny-py>=1"]},
    }));
    let update = run(&p, &["update", "--yes", "--timeout", "60"], &env);
    update.expect(3);
    assert!(
        package_error(&update, "missing").contains("package: tiny-py@9.9.9 is not on the index"),
        "{}",
        update.stderr()
    );
    assert!(
        package_error(&update, "range").contains(
            "tiny-py>=1: version ranges are not resolved; write an exact version (tiny-py==1.2.3) or tiny-py@latest"
        ),
        "{}",
        update.stderr()
    );
}

fn script_project() -> Project {
    let p = bare_project(json!({"script": {"command": "node", "args": ["server.js"]}}));
    std::fs::copy(data("tiny-mcp/server.js"), p.path().join("server.js")).unwrap();
    std::fs::copy(data("tiny-mcp/package.json"), p.path().join("package.json")).unwrap();
    p
}

#[test]
fn a_local_script_edited_by_one_byte_is_package_changed_and_the_guard_refuses_it() {
    let p = script_project();
    p.run(&["update", "--yes"]).expect(0);
    let sha = sha256_of(&p.path().join("server.js"));
    assert_eq!(
        package_of(&p, "script"),
        Package::Script {
            path: "server.js".into(),
            sha256: sha.clone()
        }
    );
    p.run(&["verify"]).expect(0);
    let (version, _) = ask_guard_for_version(&p, "script", &["node", "server.js"], &[]);
    assert_eq!(version, "1.0.0", "the unchanged script runs");

    let source = std::fs::read_to_string(p.path().join("server.js")).unwrap();
    std::fs::write(
        p.path().join("server.js"),
        source.replacen("tiny stdio", "tiny_stdio", 1),
    )
    .unwrap();
    let verify = p.run(&["verify", "--format", "json"]);
    verify.expect(1);
    let doc = verify.json();
    let script = report(&doc, "script");
    assert_eq!(script["package"]["status"], "changed");
    assert_eq!(script["changes"], json!([]), "every tool is unchanged");
    // Offline still hashes a local script.
    p.run(&["verify", "--offline"]).expect(1);

    let guard = common::command(common::bin())
        .args(["guard", "script", "--", "node", "server.js"])
        .current_dir(p.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(guard.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&guard.stderr);
    let refusal: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("refusing to start"))
        .collect();
    assert_eq!(refusal.len(), 1, "{stderr}");
    assert!(
        refusal[0].contains(&format!(
            "refusing to start: the script server.js changed since it was pinned (sha256 {} -> ",
            &sha[..19]
        )),
        "{stderr}"
    );
    assert!(
        guard.stdout.is_empty(),
        "nothing was started, nothing answered"
    );
    let audit = std::fs::read_to_string(p.path().join(".mcp-lock/audit.jsonl")).unwrap();
    assert!(audit.contains("launch_refused"), "{audit}");

    // Approved, the new hash is pinned; `diff` between the two locks shows it moved.
    let old = p.path().join("old.lock");
    std::fs::copy(p.path().join("mcp.lock"), &old).unwrap();
    p.run(&["update", "--yes"]).expect(0);
    assert_ne!(
        package_of(&p, "script"),
        Package::Script {
            path: "server.js".into(),
            sha256: sha
        }
    );
    p.run(&["verify"]).expect(0);
    let diff = p.run(&["diff", "--from", "old.lock", "--format", "json"]);
    diff.expect(1);
    let doc = diff.json();
    assert_eq!(
        report(&doc, "script")["package"]["status"],
        "changed",
        "{doc}"
    );
}

#[test]
fn a_version_2_lock_has_packages_not_pinned_yet_until_update_pins_them() {
    let p = script_project();
    p.run(&["update", "--yes"]).expect(0);
    let text = p.lock_text().unwrap();
    let start = text.find("\n[server.package]").unwrap();
    let end = start + 1 + text[start + 1..].find("\n\n").unwrap();
    let v2 = without_approvals(&format!("{}{}", &text[..start], &text[end..]))
        .replace("\nversion = 8\n", "\nversion = 2\n");
    std::fs::write(p.path().join("mcp.lock"), &v2).unwrap();
    let verify = p.run(&["verify"]);
    verify.expect(0);
    assert!(
        verify.stdout().contains("package not pinned yet"),
        "{}",
        verify.stdout()
    );
    // A v2 lock with a package table is refused: the table needs version 3.
    std::fs::write(
        p.path().join("mcp.lock"),
        without_approvals(&text).replace("\nversion = 8\n", "\nversion = 2\n"),
    )
    .unwrap();
    let err = p.run(&["verify"]);
    err.expect(2);
    assert!(
        err.stderr()
            .contains("[server.package] needs lock format version 3"),
        "{}",
        err.stderr()
    );
    std::fs::write(p.path().join("mcp.lock"), &v2).unwrap();
    p.run(&["update", "--yes"]).expect(0);
    assert_eq!(
        p.lock_text().unwrap(),
        text,
        "update pins the package, as a fresh pin would"
    );
}

#[test]
fn an_unknown_launcher_is_recorded_as_not_recognised_and_shown() {
    let fixture = common::fixture();
    let p = bare_project(
        json!({"wrapped-by-env": {"command": "env", "args": [fixture.display().to_string()]}}),
    );
    p.run(&["update", "--yes"]).expect(0);
    assert_eq!(package_of(&p, "wrapped-by-env"), Package::Unrecognised);
    assert!(
        p.lock_text()
            .unwrap()
            .contains("kind = \"unrecognised\"\nlauncher = \"env\"\n")
    );
    let verify = p.run(&["verify"]);
    verify.expect(0);
    assert!(
        verify.stdout().contains(
            "launches `env`, which mcp-lock does not recognise as a package runner or script"
        ),
        "{}",
        verify.stdout()
    );
}

// Hostile registries: small HTTP servers on loopback answering what an attacker (or a
// broken proxy) might, with the entry's runner a stand-in that starts the fixture
// server, so that only the package check can fail.

/// A registry on loopback: `answer(path, stream)` writes each whole HTTP response.
fn fake_registry(answer: impl Fn(&str, &mut TcpStream) + Send + Sync + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let answer = std::sync::Arc::new(answer);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let answer = answer.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request = String::new();
                let _ = reader.read_line(&mut request);
                let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                answer(&path, &mut stream);
            });
        }
    });
    port
}

fn respond(stream: &mut TcpStream, status: &str, headers: &str, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn packument(latest: &str, integrity: &str) -> String {
    json!({"name": "tiny-mcp", "dist-tags": {"latest": latest},
        "versions": {latest: {"dist": {"integrity": integrity}}}})
    .to_string()
}

fn npm_env(port: u16, path: &str) -> Vec<(String, String)> {
    vec![
        (
            "npm_config_registry".into(),
            format!("http://127.0.0.1:{port}/"),
        ),
        ("PATH".into(), path.to_string()),
    ]
}

/// The `SERVER: package: …` line of update's stderr.
fn package_error(run: &common::Run, server: &str) -> String {
    run.stderr()
        .lines()
        .find(|l| l.contains(&format!("{server}: package:")))
        .unwrap_or_else(|| panic!("no package error for {server}: {}", run.stderr()))
        .to_string()
}

#[test]
fn a_registry_version_that_is_not_semver_is_never_pinned_and_the_error_names_the_registry_and_the_value()
 {
    let (_runners, path) = stand_in_runners();
    for latest in ["npm:evil-pkg@6.6.6", "file:/srv/evil.tgz"] {
        let body = packument(latest, &sha512_sri());
        let port = fake_registry(move |_, s| respond(s, "200 OK", "", &body));
        let p = bare_project(json!({"tiny": {"command": "npx", "args": ["-y", "tiny-mcp"]}}));
        let update = run(&p, &["update", "--yes"], &npm_env(port, &path));
        update.expect(3);
        let line = package_error(&update, "tiny");
        assert!(
            line.contains(&format!(
                "the registry at http://127.0.0.1:{port}/ gives tiny-mcp the version \"{latest}\", which is not a semver version"
            )),
            "{line}"
        );
        assert_recorded_unresolved(&p, "tiny");
    }
}

#[test]
fn an_npm_integrity_of_sha1_only_is_not_a_pin() {
    let (_runners, path) = stand_in_runners();
    let body = packument("1.0.0", "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=");
    let port = fake_registry(move |_, s| respond(s, "200 OK", "", &body));
    let p = bare_project(json!({"tiny": {"command": "npx", "args": ["-y", "tiny-mcp"]}}));
    let update = run(&p, &["update", "--yes"], &npm_env(port, &path));
    update.expect(3);
    let line = package_error(&update, "tiny");
    assert!(
        line.contains(&format!(
            "the registry at http://127.0.0.1:{port}/ gives tiny-mcp@1.0.0 no sha512 integrity (only \"sha1-"
        )),
        "{line}"
    );
    assert_recorded_unresolved(&p, "tiny");
}

#[test]
fn a_pypi_file_whose_version_is_not_pep440_is_never_pinned() {
    let (_runners, path) = stand_in_runners();
    let sha = "a".repeat(64);
    let body = json!({"meta": {"api-version": "1.1"}, "name": "tiny-py", "files": [
        {"filename": "tiny_py-99.0 @ file:/srv/evil-py3-none-any.whl", "url": "x",
         "hashes": {"sha256": sha}}]})
    .to_string();
    let port = fake_registry(move |_, s| respond(s, "200 OK", "", &body));
    let p = bare_project(json!({"tiny": {"command": "uvx", "args": ["tiny-py"]}}));
    let env = vec![
        (
            "UV_INDEX_URL".to_string(),
            format!("http://127.0.0.1:{port}/simple/"),
        ),
        ("PATH".to_string(), path.clone()),
    ];
    let update = run(&p, &["update", "--yes"], &env);
    update.expect(3);
    let line = package_error(&update, "tiny");
    assert!(
        line.contains(&format!("the index at http://127.0.0.1:{port}/simple/ answered for tiny-py with a file \"tiny_py-99.0 @ file:/srv/evil-py3-none-any.whl\" whose version \"99.0 @ file:/srv/evil\" is not a PEP 440 version")),
        "{line}"
    );
    assert_recorded_unresolved(&p, "tiny");
}

#[test]
fn an_endless_packument_is_refused_while_it_is_read() {
    let (_runners, path) = stand_in_runners();
    // No Content-Length: the body ends when the registry stops, which it never does.
    let port = fake_registry(|_, s| {
        let _ = write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{{\"versions\":{{"
        );
        let chunk = format!("\"{}\":1,", "9".repeat(1 << 20));
        while s.write_all(chunk.as_bytes()).is_ok() {}
    });
    let p = bare_project(json!({"tiny": {"command": "npx", "args": ["-y", "tiny-mcp"]}}));
    let update = run(&p, &["update", "--yes"], &npm_env(port, &path));
    update.expect(3);
    let line = package_error(&update, "tiny");
    assert!(
        line.contains(&format!(
            "http://127.0.0.1:{port}/tiny-mcp answered with more than 64 MiB; refusing to read more"
        )),
        "{line}"
    );
    assert!(
        update.elapsed < Duration::from_secs(25),
        "refused as it read, not at the 30 s timeout: {:?}",
        update.elapsed
    );
}

#[test]
fn a_registry_redirect_to_another_origin_is_refused_unless_allowed() {
    let (_runners, path) = stand_in_runners();
    let body = packument("1.0.0", &sha512_sri());
    let elsewhere = fake_registry(move |_, s| respond(s, "200 OK", "", &body));
    let port = fake_registry(move |p, s| {
        respond(
            s,
            "302 Found",
            &format!("Location: http://127.0.0.1:{elsewhere}{p}\r\n"),
            "",
        )
    });
    let env = npm_env(port, &path);
    let p = bare_project(json!({"tiny": {"command": "npx", "args": ["-y", "tiny-mcp"]}}));
    let update = run(&p, &["update", "--yes"], &env);
    update.expect(3);
    let line = package_error(&update, "tiny");
    assert!(
        line.contains(&format!(
            "http://127.0.0.1:{port}/tiny-mcp redirects to http://127.0.0.1:{elsewhere}/tiny-mcp, another origin; not followed (pass --allow-redirects to follow it)"
        )),
        "{line}"
    );
    assert_recorded_unresolved(&p, "tiny");
    run(&p, &["update", "--yes", "--allow-redirects"], &env).expect(0);
    assert_eq!(
        package_of(&p, "tiny"),
        Package::Npm {
            name: "tiny-mcp".into(),
            version: "1.0.0".into(),
            integrity: sha512_sri(),
        }
    );
}

#[test]
fn an_unreachable_registry_says_which_package_could_not_be_checked_in_the_summary() {
    let (_runners, path) = stand_in_runners();
    let body = packument("1.0.0", &sha512_sri());
    let port = fake_registry(move |_, s| respond(s, "200 OK", "", &body));
    let p = bare_project(json!({"tiny": {"command": "npx", "args": ["-y", "tiny-mcp"]}}));
    run(&p, &["update", "--yes"], &npm_env(port, &path)).expect(0);
    run(&p, &["verify"], &npm_env(port, &path)).expect(0);
    let gone = free_port();
    let verify = run(&p, &["verify"], &npm_env(gone, &path));
    verify.expect(3);
    let last = verify
        .stderr()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    assert!(
        last.starts_with(&format!(
            "error: 1 server converged; 1 package could not be checked: tiny: cannot reach http://127.0.0.1:{gone}/tiny-mcp"
        )),
        "{}",
        verify.stderr()
    );
}

#[test]
fn a_decoy_after_an_option_that_takes_a_value_is_not_pinned_and_verify_says_why() {
    let (_runners, path) = stand_in_runners();
    let body = packument("1.0.0", &sha512_sri());
    let port = fake_registry(move |_, s| respond(s, "200 OK", "", &body));
    let p = bare_project(json!({
        "decoy": {"command": "npx", "args": ["-y", "--globalconfig", "tiny-mcp", "evil-pkg"]},
        "health": {"command": "docker", "args": ["run", "-i", "--rm", "--health-cmd",
            format!("mcp/github@sha256:{}", "a".repeat(64)), "evil/image:latest"]},
    }));
    let env = npm_env(port, &path);
    // docker is not run here: only the package pins are looked at.
    let update = run(&p, &["update", "--yes", "decoy"], &env);
    update.expect(0);
    assert_eq!(package_of(&p, "decoy"), Package::Unrecognised);
    let verify = run(&p, &["verify", "decoy"], &env);
    verify.expect(0);
    assert!(
        verify.stdout().contains(
            "not recognised: `npx` is given `--globalconfig`: it names an npmrc file, whose registry mcp-lock does not read; its code is not pinned"
        ),
        "{}",
        verify.stdout()
    );
    let recognised = mcp_lock::servers::package::recognise(
        "docker",
        &[
            "run".to_string(),
            "-i".into(),
            "--rm".into(),
            "--health-cmd".into(),
            format!("mcp/github@sha256:{}", "a".repeat(64)),
            "evil/image:latest".into(),
        ],
        &|_| false,
    );
    assert_eq!(
        recognised.target,
        mcp_lock::servers::package::Target::Oci {
            reference: "evil/image:latest".into()
        },
        "the image is the one docker runs, pinned by tag only"
    );
}

#[test]
fn runner_options_that_load_code_or_pick_the_interpreter_make_a_pinned_entry_unrecognised_naming_the_option()
 {
    let (_runners, path) = stand_in_runners();
    let body = packument("1.0.0", &sha512_sri());
    let port = fake_registry(move |_, s| respond(s, "200 OK", "", &body));
    let sha = "b".repeat(64);
    let page = json!({"meta": {"api-version": "1.1"}, "name": "tiny-py", "files": [
        {"filename": "tiny_py-2.0.0-py3-none-any.whl", "url": "x", "hashes": {"sha256": sha}}]})
    .to_string();
    let index = fake_registry(move |_, s| respond(s, "200 OK", "", &page));
    let mut env = npm_env(port, &path);
    env.push((
        "UV_INDEX_URL".to_string(),
        format!("http://127.0.0.1:{index}/simple/"),
    ));
    let servers = |npx: &[&str], uvx: &[&str]| {
        let npx: Vec<&str> = npx
            .iter()
            .copied()
            .chain(["-y", "tiny-mcp@1.0.0"])
            .collect();
        let uvx: Vec<&str> = uvx.iter().copied().chain(["tiny-py==2.0.0"]).collect();
        json!({
            "node": {"command": "npx", "args": npx},
            "py": {"command": "uvx", "args": uvx},
        })
    };
    let p = bare_project(servers(&[], &[]));
    run(&p, &["update", "--yes"], &env).expect(0);
    run(&p, &["verify"], &env).expect(0);
    // A preload through npx, an interpreter of the repository's through uvx.
    p.set_servers(servers(
        &["--node-options=--require=./x.js"],
        &["--python", "./evilpy"],
    ));
    let verify = run(&p, &["verify"], &env);
    verify.expect(1);
    for said in [
        "not recognised: `npx` is given `--node-options`: it gives node options",
        "not recognised: `uvx` is given `--python ./evilpy`: it picks the interpreter by path or name",
    ] {
        assert!(
            verify.stdout().contains(said),
            "{said}\n{}",
            verify.stdout()
        );
    }
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    for (server, option) in [("node", "--node-options"), ("py", "--python ./evilpy")] {
        let stderr = p.guard_refuses(&[server], &env_refs);
        assert!(stderr.contains(&format!("`{option}")), "{stderr}");
        assert!(stderr.contains("package-changed"), "{stderr}");
    }
    // A version request for the interpreter is no file: still the pinned package.
    p.set_servers(servers(&[], &["--python", "3.12"]));
    run(&p, &["verify"], &env).expect(0);
}

#[test]
fn a_project_copy_that_npx_would_run_instead_of_the_pinned_package_is_package_changed() {
    let (_runners, path) = stand_in_runners();
    let body = packument("1.0.0", &sha512_sri());
    let port = fake_registry(move |_, s| respond(s, "200 OK", "", &body));
    let env = npm_env(port, &path);
    let p = bare_project(json!({"tiny": {"command": "npx", "args": ["-y", "tiny-mcp@1.0.0"]}}));
    run(&p, &["update", "--yes"], &env).expect(0);
    run(&p, &["verify"], &env).expect(0);
    // The repository ships its own tiny-mcp 1.0.0: npx runs it, not the registry's.
    let copy = p.path().join("node_modules/tiny-mcp");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::write(
        copy.join("package.json"),
        r#"{"name":"tiny-mcp","version":"1.0.0","bin":{"tiny-mcp":"evil.js"}}"#,
    )
    .unwrap();
    std::fs::write(
        copy.join("evil.js"),
        "require('fs').writeFileSync('pwned', '')\n",
    )
    .unwrap();
    for args in [vec!["verify"], vec!["verify", "--offline"]] {
        let verify = run(&p, &args, &env);
        verify.expect(1);
        assert!(
            verify.stdout().contains(
                "`npx` runs the project's own copy, node_modules/tiny-mcp (version 1.0.0), not the registry's tiny-mcp@1.0.0"
            ),
            "{}",
            verify.stdout()
        );
        assert!(
            verify.stdout().contains("package-changed"),
            "{}",
            verify.stdout()
        );
    }
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let stderr = p.guard_refuses(&["tiny"], &env_refs);
    assert!(stderr.contains("runs the project's own copy"), "{stderr}");
    // A bin in node_modules/.bin named like the command word runs too.
    std::fs::remove_dir_all(&copy).unwrap();
    std::fs::create_dir_all(p.path().join("node_modules/.bin")).unwrap();
    std::fs::write(
        p.path().join("node_modules/.bin/tiny-mcp@1.0.0"),
        "#!/bin/sh\n",
    )
    .unwrap();
    let verify = run(&p, &["verify"], &env);
    verify.expect(1);
    assert!(
        verify
            .stdout()
            .contains("runs the project's own copy, node_modules/.bin/tiny-mcp@1.0.0"),
        "{}",
        verify.stdout()
    );
    // Another version than the exact one asked for: npx fetches the pinned one.
    std::fs::remove_file(p.path().join("node_modules/.bin/tiny-mcp@1.0.0")).unwrap();
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::write(
        copy.join("package.json"),
        r#"{"name":"tiny-mcp","version":"0.9.0"}"#,
    )
    .unwrap();
    run(&p, &["verify"], &env).expect(0);
}

#[test]
fn a_registry_or_index_given_as_an_argument_is_the_one_the_pin_resolves_from() {
    let (_runners, path) = stand_in_runners();
    let body = packument("1.0.0", &sha512_sri());
    let port = fake_registry(move |_, s| respond(s, "200 OK", "", &body));
    let sha = "b".repeat(64);
    let page = json!({"meta": {"api-version": "1.1"}, "name": "tiny-py", "files": [
        {"filename": "tiny_py-2.0.0-py3-none-any.whl", "url": "x", "hashes": {"sha256": sha}}]})
    .to_string();
    let index = fake_registry(move |_, s| respond(s, "200 OK", "", &page));
    // The environment names registries nothing listens on: only the arguments work.
    let nowhere = free_port();
    let env = vec![
        (
            "npm_config_registry".to_string(),
            format!("http://127.0.0.1:{nowhere}/"),
        ),
        (
            "UV_INDEX_URL".to_string(),
            format!("http://127.0.0.1:{nowhere}/simple/"),
        ),
        ("PATH".to_string(), path.clone()),
    ];
    let p = bare_project(json!({
        "npm": {"command": "npx", "args": ["--registry", format!("http://127.0.0.1:{port}"), "-y", "tiny-mcp"]},
        "py": {"command": "uvx", "args": [format!("--index-url=http://127.0.0.1:{index}/simple"), "tiny-py"]},
    }));
    run(&p, &["update", "--yes"], &env).expect(0);
    assert_eq!(
        package_of(&p, "npm"),
        Package::Npm {
            name: "tiny-mcp".into(),
            version: "1.0.0".into(),
            integrity: sha512_sri(),
        }
    );
    match package_of(&p, "py") {
        Package::Pypi { version, .. } => assert_eq!(version, "2.0.0"),
        other => panic!("{other:?}"),
    }
    run(&p, &["verify"], &env).expect(0);
}

#[test]
fn a_config_changed_to_another_npm_package_is_refused_by_the_guard_as_verify_fails_it() {
    let registry = Registry::start();
    registry.publish_tiny("1.0.0");
    let cache = tempfile::tempdir().unwrap();
    let env = registry.client_env(cache.path());
    let p = bare_project(json!({
        "tiny": {"command": "npx", "args": ["-y", "tiny-mcp"]},
        "tiny-wrapped": {"command": "mcp-lock", "args": ["guard", "tiny-wrapped", "--", "npx", "-y", "tiny-mcp"]},
    }));
    run(&p, &["update", "--yes"], &env).expect(0);
    p.set_servers(json!({
        "tiny": {"command": "npx", "args": ["-y", "evil-pkg"]},
        "tiny-wrapped": {"command": "mcp-lock", "args": ["guard", "tiny-wrapped", "--", "npx", "-y", "evil-pkg"]},
    }));
    // npx writes its logs in its cache whenever it runs: an empty cache after the guard
    // refused shows npx never started.
    let fresh = tempfile::tempdir().unwrap();
    let guard_env = registry.client_env(fresh.path());
    for server in ["tiny", "tiny-wrapped"] {
        let verify = run(&p, &["verify", server, "--format", "json"], &env);
        verify.expect(1);
        let doc = verify.json();
        assert_eq!(report(&doc, server)["package"]["status"], "changed");
        let refusal = p.guard_refuses(
            &[server, "--", "npx", "-y", "evil-pkg"],
            &str_env(&guard_env),
        );
        assert!(
            refusal
                .contains("the entry now launches npm evil-pkg; the lock pins npm tiny-mcp@1.0.0")
                && refusal.contains("(package-changed, which `mcp-lock verify` fails)"),
            "{refusal}"
        );
    }
    // The unwrapped entry, launched by the guard from the config, is refused too.
    p.guard_refuses(&["tiny"], &str_env(&guard_env));
    assert_eq!(
        std::fs::read_dir(fresh.path()).unwrap().count(),
        0,
        "npx never ran"
    );
}

#[test]
fn a_package_the_first_update_could_not_resolve_is_recorded_unresolved_and_stays_unverifiable() {
    let registry = Registry::start();
    registry.publish_tiny("1.0.0");
    let cache = tempfile::tempdir().unwrap();
    let env = registry.client_env(cache.path());
    let p = bare_project(json!({"tiny": {"command": "npx", "args": ["-y", "tiny-mcp"]}}));
    // npx fills its cache while the registry is up.
    run(&p, &["update", "--yes"], &env).expect(0);
    std::fs::remove_file(p.path().join("mcp.lock")).unwrap();
    drop(registry);
    // The registry is gone; npx still starts the server from its cache.
    let mut offline_env = env.clone();
    offline_env.push(("npm_config_prefer_offline".into(), "true".into()));
    let update = run(&p, &["update", "--yes"], &offline_env);
    update.expect(3);
    assert!(
        update.stderr().contains("tiny: package: cannot reach"),
        "{}",
        update.stderr()
    );
    let text = p.lock_text().expect("the tools were pinned");
    assert!(
        text.starts_with("# ") && text.contains("\nversion = 8\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "[server.package]\nkind = \"unresolved\"\nlauncher = \"npx\"\nreason = \"cannot reach"
        ),
        "{text}"
    );
    let pinned = format!("{:?}", package_of(&p, "tiny"));
    assert!(
        pinned.starts_with("Unresolved { reason: \"cannot reach"),
        "{pinned}"
    );
    // Never "not pinned yet": verify cannot check it (exit 3), online or offline.
    let verify = run(&p, &["verify", "--format", "json"], &offline_env);
    verify.expect(3);
    let doc = verify.json();
    let tiny = report(&doc, "tiny");
    assert_eq!(tiny["package"]["status"], "unverifiable", "{tiny}");
    assert!(
        tiny["package"]["message"]
            .as_str()
            .unwrap()
            .starts_with("the lock records this package as unresolved (cannot reach"),
        "{tiny}"
    );
    run(&p, &["verify", "--offline"], &offline_env).expect(3);
    // The guard does not launch the floating spec.
    let refusal = p.guard_refuses(&["tiny"], &str_env(&offline_env));
    assert!(refusal.contains("(unverifiable, which"), "{refusal}");

    // Once the registry answers, update pins it and verify passes.
    let registry = Registry::start();
    registry.publish_tiny("1.0.0");
    let env = registry.client_env(cache.path());
    run(&p, &["update", "--yes"], &env).expect(0);
    assert!(matches!(package_of(&p, "tiny"), Package::Npm { .. }));
    run(&p, &["verify"], &env).expect(0);
}

#[test]
fn a_repointed_script_symlink_is_refused_by_the_guard_as_verify_fails_it() {
    let p = bare_project(json!({"script": {"command": "node", "args": ["server.js"]}}));
    let source = std::fs::read_to_string(data("tiny-mcp/server.js")).unwrap();
    std::fs::write(p.path().join("real.js"), &source).unwrap();
    std::fs::copy(data("tiny-mcp/package.json"), p.path().join("package.json")).unwrap();
    std::os::unix::fs::symlink("real.js", p.path().join("server.js")).unwrap();
    p.run(&["update", "--yes"]).expect(0);
    match package_of(&p, "script") {
        Package::Script { path, .. } => assert_eq!(path, "real.js", "the link's target"),
        other => panic!("{other:?}"),
    }
    p.run(&["verify"]).expect(0);
    // The same tools, and a marker written when it runs.
    let evil = format!(
        "require('fs').writeFileSync(require('path').join(__dirname, 'evil-ran'), '');\n{source}"
    );
    std::fs::write(p.path().join("evil.js"), evil).unwrap();
    std::fs::remove_file(p.path().join("server.js")).unwrap();
    std::os::unix::fs::symlink("evil.js", p.path().join("server.js")).unwrap();
    let verify = p.run(&["verify", "--format", "json"]);
    verify.expect(1);
    assert_eq!(
        report(&verify.json(), "script")["package"]["status"],
        "changed"
    );
    // verify ran it to list its tools; the guard must not.
    std::fs::remove_file(p.path().join("evil-ran")).ok();
    let refusal = p.guard_refuses(&["script", "--", "node", "server.js"], &[]);
    assert!(
        refusal.contains("the entry now runs evil.js, the lock pins real.js"),
        "{refusal}"
    );
    p.guard_refuses(&["script"], &[]);
    assert!(!p.path().join("evil-ran").exists(), "evil.js never ran");
}

#[test]
fn verify_says_once_that_a_pinned_script_is_unchanged() {
    let p = script_project();
    p.run(&["update", "--yes"]).expect(0);
    let verify = p.run(&["verify"]);
    verify.expect(0);
    let line = verify
        .stdout()
        .lines()
        .find(|l| l.contains("package:"))
        .unwrap_or_else(|| panic!("{}", verify.stdout()))
        .to_string();
    assert!(
        line.trim_start()
            .starts_with("package: script server.js (sha256 ")
            && line.ends_with("): unchanged since it was pinned"),
        "{line}"
    );
    assert_eq!(line.matches("server.js").count(), 1, "{line}");
}

/// The lock records `server`'s package as unresolved (a refusal pins nothing, and
/// the lock says so, so verify cannot pass it until an update pins it).
fn assert_recorded_unresolved(p: &Project, server: &str) {
    let pin = lock_of(p).servers[server].package.clone();
    assert!(
        matches!(
            pin,
            Some(mcp_lock::servers::package::PackagePin {
                package: mcp_lock::servers::package::Package::Unresolved { .. },
                ..
            })
        ),
        "no package pinned, and the lock records it as unresolved: {pin:?}"
    );
}

/// An owned environment as the `(&str, &str)` pairs the project helpers take.
fn str_env(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

#[test]
fn a_packument_the_registry_says_is_unchanged_is_read_from_the_cache_and_a_changed_one_is_read_whole()
 {
    use std::sync::{Arc, Mutex};
    let (_runners, path) = stand_in_runners();
    // The registry's document, its ETag, and what each request was answered with.
    let state = Arc::new(Mutex::new((
        packument("1.0.0", &sha512_sri()),
        "\"v1\"".to_string(),
        Vec::<String>::new(),
    )));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let shared = state.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            let _ = reader.read_line(&mut request);
            let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
            let mut asked = None;
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("if-none-match")
                {
                    asked = Some(value.trim().to_string());
                }
                line.clear();
            }
            let mut state = shared.lock().unwrap();
            let (body, etag, log) = &mut *state;
            if path != "/tiny-mcp" {
                respond(&mut stream, "404 Not Found", "", "{}");
            } else if asked.as_ref() == Some(etag) {
                log.push("304".into());
                respond(
                    &mut stream,
                    "304 Not Modified",
                    &format!("ETag: {etag}\r\n"),
                    "",
                );
            } else {
                log.push("200".into());
                respond(&mut stream, "200 OK", &format!("ETag: {etag}\r\n"), body);
            }
        }
    });
    let answers = || state.lock().unwrap().2.clone();
    let p = bare_project(json!({"tiny": {"command": "npx", "args": ["-y", "tiny-mcp@1.0.0"]}}));
    let env = npm_env(port, &path);
    run(&p, &["update", "--yes"], &env).expect(0);
    let fetched = answers().len();
    assert!(
        fetched >= 1 && answers().iter().all(|a| a == "200"),
        "{:?}",
        answers()
    );
    // Unchanged: asked for with its ETag, answered 304, checked from the cache.
    run(&p, &["verify"], &env).expect(0);
    let after = answers();
    assert!(after.len() > fetched, "{after:?}");
    assert!(after[fetched..].iter().all(|a| a == "304"), "{after:?}");
    // The registry now gives another integrity: the new document is read whole and
    // the move is found.
    {
        let mut state = state.lock().unwrap();
        state.0 = packument("1.0.0", &format!("sha512-{}==", "R".repeat(86)));
        state.1 = "\"v2\"".into();
    }
    let seen = answers().len();
    let verify = run(&p, &["verify", "--format", "json"], &env);
    verify.expect(1);
    assert_eq!(answers()[seen], "200", "{:?}", answers());
    assert_eq!(
        report(&verify.json(), "tiny")["package"]["status"],
        "changed"
    );
}

/// A lock without the approvals version 7 records (to be read as an older version).
fn without_approvals(lock: &str) -> String {
    lock.lines()
        .filter(|l| !l.starts_with("approved = "))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}
