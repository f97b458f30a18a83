//! Closure pins against real registries on loopback (verdaccio, pypiserver): `update`
//! pins every package a server installs, `verify` reports a transitive dependency
//! that moved under an unchanged pin, and the guard runs exactly the pinned closure
//! from its content-addressed cache, rebuilt when tampered with and refused when a
//! package does not match its integrity.

use crate::common;

use std::path::PathBuf;

use common::Project;
use common::registries::{Index, Registry, ask_guard_for_version, data};
use serde_json::{Value, json};

fn run(p: &Project, args: &[&str], env: &[(String, String)]) -> common::Run {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    p.run_env(args, &env)
}

/// A package of tests/data/packages published at `version`.
fn publish(registry: &Registry, package: &str, version: &str) {
    registry.publish_package(package, version, |server| server);
}

fn report<'a>(doc: &'a Value, server: &str) -> &'a Value {
    doc["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == server)
        .unwrap_or_else(|| panic!("no report for {server}: {doc}"))
}

/// The closure cache's directories (one per installed closure).
fn cached(p: &Project) -> Vec<PathBuf> {
    let root = p.home().join(".cache/mcp-lock/closures");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|d| {
            d.map(|e| e.unwrap().path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

fn deps_project(registry: &Registry) -> (Project, Vec<(String, String)>, tempfile::TempDir) {
    publish(registry, "tiny-dep", "1.0.0");
    publish(registry, "tiny-mcp-deps", "1.0.0");
    let cache = tempfile::tempdir().unwrap();
    let env = registry.client_env(cache.path());
    let p = Project::bare(json!({
        "tiny": {"command": "npx", "args": ["-y", "tiny-mcp-deps@1.0.0"]},
        "tiny-wrapped": {"command": "mcp-lock", "args": ["guard", "tiny-wrapped", "--", "npx", "-y", "tiny-mcp-deps@1.0.0"]},
    }));
    run(&p, &["update", "--yes"], &env).expect(0);
    (p, env, cache)
}

#[test]
fn a_transitive_dependency_republished_in_range_is_dependency_changed_while_the_guard_runs_the_pinned_closure()
 {
    let registry = Registry::start();
    let (p, env, _cache) = deps_project(&registry);
    let lock = p.lock_text().unwrap();
    assert!(lock.contains("\nclosure = \"sha256:"), "{lock}");
    assert!(lock.contains("\nclosure_packages = 2\n"), "{lock}");
    let companion = std::fs::read_to_string(p.path().join("mcp.closure.lock"))
        .expect("the companion file beside the lock");
    for shown in [
        "name = \"tiny-dep\"\nversion = \"1.0.0\"\nintegrity = [\"sha512-",
        "path = \"node_modules/tiny-mcp-deps\"",
        "\\\"dependencies\\\":{\\\"tiny-dep\\\":\\\"^1.0.0\\\"}",
    ] {
        assert!(companion.contains(shown), "{shown} in {companion}");
    }
    run(&p, &["verify"], &env).expect(0);
    // A second update of an unchanged closure writes nothing.
    run(&p, &["update", "--yes"], &env).expect(0);
    assert_eq!(p.lock_text().unwrap(), lock);

    // The dependency publishes a new version within the server's range.
    publish(&registry, "tiny-dep", "1.0.1");
    let verify = run(&p, &["verify", "--format", "json"], &env);
    verify.expect(1);
    let doc = verify.json();
    let tiny = report(&doc, "tiny");
    assert_eq!(tiny["package"]["status"], "dependency_changed", "{tiny}");
    assert_eq!(tiny["package"]["action"], "fail");
    assert_eq!(
        tiny["package"]["dependencies"],
        json!([{"name": "tiny-dep", "path": "node_modules/tiny-dep", "from": "1.0.0", "to": "1.0.1"}])
    );
    assert_eq!(tiny["changes"], json!([]), "every tool is unchanged");
    let wrapped = report(&doc, "tiny-wrapped");
    assert_eq!(wrapped["package"]["status"], "pinned", "{wrapped}");
    assert!(
        wrapped["package"]["message"]
            .as_str()
            .unwrap()
            .contains("the guard runs its pinned closure (2 packages)"),
        "{wrapped}"
    );
    let human = run(&p, &["verify", "tiny"], &env);
    human.expect(1);
    assert!(
        human.stdout().contains("dependency-changed, fail")
            && human.stdout().contains("tiny-dep 1.0.0 -> 1.0.1"),
        "{}",
        human.stdout()
    );
    // Its own policy rule: warn passes.
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[verify]\ndependency-changed = \"warn\"\n",
    )
    .unwrap();
    run(&p, &["verify", "tiny"], &env).expect(0);
    std::fs::remove_file(p.path().join("mcp-lock.toml")).unwrap();

    // The guard runs the pinned closure: tiny-dep 1.0.0, though npx would take 1.0.1.
    let (_, text) = ask_guard_for_version(
        &p,
        "tiny-wrapped",
        &["npx", "-y", "tiny-mcp-deps@1.0.0"],
        &env,
    );
    assert_eq!(text, "tiny-mcp-deps 1.0.0 tiny-dep 1.0.0");
    let dirs = cached(&p);
    assert_eq!(dirs.len(), 1, "one closure, installed once: {dirs:?}");
    // check-call lists the wrapped entry from its closure too, as the guard runs it.
    run(
        &p,
        &["check-call", "tiny-wrapped", "version", "--args", "{}"],
        &env,
    )
    .expect(0);
    // `servers` says what the guard runs.
    let servers = run(&p, &["servers"], &env);
    assert!(
        servers
            .stdout()
            .contains("the guard runs its pinned closure sha256:")
            && servers
                .stdout()
                .contains("(2 packages) from the closure cache"),
        "{}",
        servers.stdout()
    );

    // Approving the move pins the new closure, and the companion shows it.
    run(&p, &["update", "tiny", "--yes"], &env).expect(0);
    let companion = std::fs::read_to_string(p.path().join("mcp.closure.lock")).unwrap();
    assert!(companion.contains("version = \"1.0.1\""), "{companion}");
    run(&p, &["verify", "tiny"], &env).expect(0);
}

/// A folder holding an `npm` that logs its arguments to `log` and runs the real npm,
/// first on the PATH it returns: how many closure resolutions ran is the number of
/// `--package-lock-only` lines in the log.
fn counting_npm() -> (tempfile::TempDir, PathBuf, String) {
    use std::os::unix::fs::PermissionsExt as _;
    let real = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join("npm"))
        .find(|npm| npm.is_file())
        .expect("npm on PATH");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("npm.log");
    let shim = dir.path().join("npm");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap()
    );
    (dir, log, path)
}

fn resolutions(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("--package-lock-only"))
        .count()
}

#[test]
fn verify_resolves_a_closure_again_only_when_a_registry_document_changed_and_still_finds_the_drift()
{
    let registry = Registry::start();
    let (p, mut env, _cache) = deps_project(&registry);
    let (_shim, log, path) = counting_npm();
    env.push(("PATH".into(), path));
    let closure_message = |run: &common::Run| {
        let doc = run.json();
        report(&doc, "tiny")["package"].clone()
    };
    // Nothing recorded yet: resolved once, and recorded.
    run(&p, &["verify", "tiny"], &env).expect(0);
    assert_eq!(resolutions(&log), 1);
    let records = p.home().join(".cache/mcp-lock/resolutions");
    assert_eq!(std::fs::read_dir(&records).unwrap().count(), 1);
    assert!(
        std::fs::read_dir(p.home().join(".cache/mcp-lock/registry"))
            .unwrap()
            .count()
            >= 2,
        "both packuments kept for conditional requests"
    );
    // Every packument unchanged: the recorded resolution is taken, npm is not run.
    let again = run(&p, &["verify", "tiny", "--format", "json"], &env);
    again.expect(0);
    assert_eq!(
        resolutions(&log),
        1,
        "no resolution for an unchanged registry"
    );
    let package = closure_message(&again);
    assert_eq!(package["status"], "pinned", "{package}");
    assert!(
        package["message"]
            .as_str()
            .unwrap()
            .contains("its dependency closure is the pinned one (2 packages)"),
        "{package}"
    );
    // A record edited in the cache is not believed: resolved again.
    let record = std::fs::read_dir(&records)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(&record).unwrap();
    std::fs::write(&record, text.replace("1.0.0", "1.0.9")).unwrap();
    run(&p, &["verify", "tiny"], &env).expect(0);
    assert_eq!(resolutions(&log), 2, "a tampered record is resolved again");

    // The dependency's packument changes: resolved again, and the move is found.
    publish(&registry, "tiny-dep", "1.0.1");
    let moved = run(&p, &["verify", "tiny", "--format", "json"], &env);
    moved.expect(1);
    assert_eq!(resolutions(&log), 3);
    let package = closure_message(&moved);
    assert_eq!(package["status"], "dependency_changed", "{package}");
    assert_eq!(
        package["dependencies"],
        json!([{"name": "tiny-dep", "path": "node_modules/tiny-dep", "from": "1.0.0", "to": "1.0.1"}])
    );
    // Unchanged since: the drift stays found, from the record.
    let still = run(&p, &["verify", "tiny", "--format", "json"], &env);
    still.expect(1);
    assert_eq!(resolutions(&log), 3);
    assert_eq!(closure_message(&still)["status"], "dependency_changed");
    // --offline asks no registry and resolves nothing.
    run(&p, &["verify", "tiny", "--offline"], &env).expect(0);
    assert_eq!(resolutions(&log), 3);
}

#[test]
fn a_tampered_closure_cache_is_installed_again_and_an_integrity_mismatch_starts_nothing() {
    let registry = Registry::start();
    let (p, env, cache) = deps_project(&registry);
    let command = ["npx", "-y", "tiny-mcp-deps@1.0.0"];
    let (_, text) = ask_guard_for_version(&p, "tiny-wrapped", &command, &env);
    assert_eq!(text, "tiny-mcp-deps 1.0.0 tiny-dep 1.0.0");
    let dir = cached(&p).pop().expect("the closure was installed");
    let index = dir.join("node_modules/tiny-dep/index.js");
    std::fs::write(&index, "module.exports = { version: \"evil\" };\n").unwrap();

    // Tampered with: installed again before the launch, and said so.
    let (_, text) = ask_guard_for_version(&p, "tiny-wrapped", &command, &env);
    assert_eq!(text, "tiny-mcp-deps 1.0.0 tiny-dep 1.0.0");
    assert!(!std::fs::read_to_string(&index).unwrap().contains("evil"));
    let audit = std::fs::read_to_string(p.path().join(".mcp-lock/audit.jsonl")).unwrap();
    assert!(
        audit.contains("node_modules/tiny-dep/index.js is not as installed")
            && audit.contains("installed again from the pins"),
        "{audit}"
    );

    // The registry now serves other bytes for the pinned tiny-dep 1.0.0: with no
    // cached copy anywhere, the install is refused and nothing starts.
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(cache.path()).unwrap();
    let storage = registry.service.dir.path().join("storage/tiny-dep");
    let tarball = storage.join("tiny-dep-1.0.0.tgz");
    publish(&registry, "tiny-dep", "1.0.2");
    std::fs::copy(storage.join("tiny-dep-1.0.2.tgz"), &tarball).unwrap();
    // npm retries a download that fails its integrity check, minutes with back-off.
    let mut env = env.clone();
    env.push(("npm_config_fetch_retries".into(), "0".into()));
    let guard = p
        .command(common::bin())
        .args(["guard", "tiny-wrapped", "--"])
        .args(command)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&guard.stderr);
    assert_eq!(guard.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("refusing to start: integrity mismatch installing the pinned closure"),
        "{stderr}"
    );
    assert!(guard.stdout.is_empty(), "nothing was started");
    assert!(cached(&p).is_empty(), "no half-installed closure is kept");
    // verify, listing the wrapped entry as the guard would run it, cannot pass it.
    let verify = run(&p, &["verify", "tiny-wrapped", "--format", "json"], &env);
    verify.expect(3);
    assert!(
        report(&verify.json(), "tiny-wrapped")["error"]
            .as_str()
            .unwrap_or_default()
            .contains("integrity mismatch"),
        "{}",
        verify.stdout()
    );
}

#[test]
fn a_cached_file_changed_with_its_manifest_recomputed_is_installed_again_and_named() {
    use std::os::unix::fs::PermissionsExt as _;
    let registry = Registry::start();
    let (p, env, _cache) = deps_project(&registry);
    let command = ["npx", "-y", "tiny-mcp-deps@1.0.0"];
    let (_, text) = ask_guard_for_version(&p, "tiny-wrapped", &command, &env);
    assert_eq!(text, "tiny-mcp-deps 1.0.0 tiny-dep 1.0.0");
    // The manifest's key is the user's own (in $XDG_CONFIG_HOME/mcp-lock), outside the
    // cache, private.
    let key = p.path().join(".user-config/mcp-lock/closure-cache.key");
    let mode = std::fs::metadata(&key).expect("a key").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // Whoever can write the cache changes a file and recomputes its manifest line
    // (its sha256, the only field that moves).
    let dir = cached(&p).pop().expect("the closure was installed");
    let index = dir.join("node_modules/tiny-dep/index.js");
    let evil = "module.exports = { version: \"evil\" };\n";
    let before = mcp_lock::contract::hash::sha256_hex(&std::fs::read(&index).unwrap());
    let after = mcp_lock::contract::hash::sha256_hex(evil.as_bytes());
    std::fs::write(&index, evil).unwrap();
    let manifest = dir.join(".mcp-lock-manifest");
    let recorded = std::fs::read_to_string(&manifest).unwrap();
    assert!(recorded.contains(&before), "{recorded}");
    std::fs::write(&manifest, recorded.replace(&before, &after)).unwrap();

    // The guard sees it, installs the closure again, runs the pinned bytes and says so.
    let (_, text) = ask_guard_for_version(&p, "tiny-wrapped", &command, &env);
    assert_eq!(text, "tiny-mcp-deps 1.0.0 tiny-dep 1.0.0");
    assert!(!std::fs::read_to_string(&index).unwrap().contains("evil"));
    let audit = std::fs::read_to_string(p.path().join(".mcp-lock/audit.jsonl")).unwrap();
    assert!(
        audit.contains("node_modules/tiny-dep/index.js is not as installed")
            && audit.contains("installed again from the pins"),
        "{audit}"
    );
    // A cache from before manifests were sealed (or under another key) is not trusted.
    std::fs::write(&key, format!("{}\n", "0".repeat(64))).unwrap();
    ask_guard_for_version(&p, "tiny-wrapped", &command, &env);
    let audit = std::fs::read_to_string(p.path().join(".mcp-lock/audit.jsonl")).unwrap();
    assert_eq!(
        audit.matches("installed again from the pins").count(),
        2,
        "{audit}"
    );
}

#[test]
fn a_cached_file_rewritten_between_two_launches_with_its_size_and_mtime_kept_is_installed_again() {
    let registry = Registry::start();
    let (p, env, _cache) = deps_project(&registry);
    let command = ["npx", "-y", "tiny-mcp-deps@1.0.0"];
    ask_guard_for_version(&p, "tiny-wrapped", &command, &env);
    // Past the stat record's racy window: the next launch records every file's stat
    // and the one after reads none of them.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    ask_guard_for_version(&p, "tiny-wrapped", &command, &env);
    let dir = cached(&p).pop().expect("the closure was installed");
    let record = std::fs::read_to_string(dir.with_extension("stat")).expect("a stat record");
    assert!(
        record.contains("node_modules/tiny-dep/index.js"),
        "{record}"
    );
    ask_guard_for_version(&p, "tiny-wrapped", &command, &env);
    // The same length, the modification time put back: only the change time moves.
    let index = dir.join("node_modules/tiny-dep/index.js");
    let pristine = std::fs::read_to_string(&index).unwrap();
    let mtime = std::fs::metadata(&index).unwrap().modified().unwrap();
    let real = "require(\"./package.json\").version";
    let evil = pristine.replacen(real, &format!("{:<1$}", "\"evil\"", real.len()), 1);
    assert_ne!(evil, pristine);
    assert_eq!(evil.len(), pristine.len(), "{pristine}");
    std::fs::write(&index, &evil).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&index)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let (_, text) = ask_guard_for_version(&p, "tiny-wrapped", &command, &env);
    assert_eq!(text, "tiny-mcp-deps 1.0.0 tiny-dep 1.0.0");
    assert_eq!(std::fs::read_to_string(&index).unwrap(), pristine);
    let audit = std::fs::read_to_string(p.path().join(".mcp-lock/audit.jsonl")).unwrap();
    assert!(
        audit.contains("node_modules/tiny-dep/index.js is not as installed")
            && audit.contains("installed again from the pins"),
        "{audit}"
    );
}

#[test]
fn a_version_4_lock_keeps_verifying_with_its_closure_unpinned_as_a_warning_update_can_fix() {
    let registry = Registry::start();
    let (p, env, _cache) = deps_project(&registry);
    let lock = p.lock_text().unwrap();
    let v4: String = lock
        .lines()
        .filter(|l| !l.starts_with("closure") && !l.starts_with("approved = "))
        .map(|l| if l == "version = 8" { "version = 4" } else { l })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    std::fs::write(p.path().join("mcp.lock"), &v4).unwrap();
    std::fs::remove_file(p.path().join("mcp.closure.lock")).unwrap();
    let verify = run(&p, &["verify", "--format", "json"], &env);
    verify.expect(0);
    let doc = verify.json();
    let package = &report(&doc, "tiny")["package"];
    assert_eq!(package["status"], "closure_unpinned", "{doc}");
    assert_eq!(package["action"], "warn", "{doc}");
    assert!(
        package["message"].as_str().unwrap().ends_with(
            "its dependency closure is not pinned: the launcher resolves its dependencies afresh at every launch; it resolves now: `mcp-lock update` pins it"
        ),
        "{doc}"
    );
    // Update pins the closures, asking first: the pin moves.
    // The lock is the first one again, but for how its last change was approved: the
    // policy's `accept`, where the first pin was `--yes`.
    run(&p, &["update", "--accept", "package-changed"], &env).expect(0);
    assert_eq!(
        p.lock_text().unwrap(),
        lock.replace("\napproved = \"yes\"\n", "\napproved = \"policy\"\n")
    );
}

#[test]
fn the_real_server_memory_closure_is_pinned_and_launched_from_the_closure_cache() {
    let registry = Registry::start();
    registry.publish_server_memory();
    let cache = tempfile::tempdir().unwrap();
    let env = registry.client_env(cache.path());
    let p = Project::bare(json!({}));
    let memory = p.path().join("memory.jsonl").display().to_string();
    p.set_servers(json!({"memory": {
        "command": "mcp-lock",
        "args": ["guard", "memory", "--", "npx", "-y", "@modelcontextprotocol/server-memory@2026.8.31"],
        "env": {"MEMORY_FILE_PATH": memory}}}));
    run(
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
    )
    .expect(0);
    let companion = std::fs::read_to_string(p.path().join("mcp.closure.lock")).unwrap();
    let packages = companion.matches("[[server.package]]").count();
    assert!(packages > 20, "the whole closure is pinned: {packages}");
    assert!(companion.contains("path = \"node_modules/@modelcontextprotocol/sdk\""));
    // verify lists the wrapped entry from the closure cache, as the guard runs it.
    run(&p, &["verify", "--timeout", "180"], &env).expect(0);
    let dirs = cached(&p);
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let installed: Value = serde_json::from_str(
        &std::fs::read_to_string(
            dirs[0].join("node_modules/@modelcontextprotocol/server-memory/package.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(installed["version"], "2026.8.31");
    // Every package installed is the pinned version.
    for block in companion.split("[[server.package]]").skip(1) {
        let field = |key: &str| {
            block
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{key} = \"")))
                .map(|v| v.trim_end_matches('"').to_string())
                .unwrap()
        };
        let manifest = dirs[0].join(field("path")).join("package.json");
        if let Ok(text) = std::fs::read_to_string(&manifest) {
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["version"], field("version"), "{}", manifest.display());
        } else {
            assert!(block.contains("optional"), "{} missing", manifest.display());
        }
    }
}

#[test]
fn a_pypi_closure_is_pinned_with_hashes_and_the_guard_runs_it_from_a_venv() {
    let index = Index::start();
    index.publish_tiny("1.0.0");
    let cache = tempfile::tempdir().unwrap();
    let env = index.client_env(cache.path());
    let p = Project::bare(json!({
        "tiny-wrapped": {"command": "mcp-lock", "args": ["guard", "tiny-wrapped", "--", "uvx", "tiny-py==1.0.0"]},
    }));
    run(&p, &["update", "--yes"], &env).expect(0);
    let companion = std::fs::read_to_string(p.path().join("mcp.closure.lock")).unwrap();
    assert!(
        companion.contains("ecosystem = \"pypi\"")
            && companion.contains("path = \"tiny-py\"\nname = \"tiny-py\"\nversion = \"1.0.0\"\nintegrity = [\"sha256:"),
        "{companion}"
    );
    let (version, text) =
        ask_guard_for_version(&p, "tiny-wrapped", &["uvx", "tiny-py==1.0.0"], &env);
    assert_eq!(
        (version.as_str(), text.as_str()),
        ("1.0.0", "tiny-py 1.0.0")
    );
    let dirs = cached(&p);
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    assert!(dirs[0].join("venv/bin/tiny-py").exists());
    // Run twice, the venv is unchanged (no bytecode written into it): not rebuilt.
    ask_guard_for_version(&p, "tiny-wrapped", &["uvx", "tiny-py==1.0.0"], &env);
    let audit = std::fs::read_to_string(p.path().join(".mcp-lock/audit.jsonl")).unwrap();
    assert!(!audit.contains("installed again"), "{audit}");
}

#[test]
fn install_scripts_run_only_for_a_server_allowed_them() {
    let registry = Registry::start();
    // tiny-dep with a postinstall script that leaves a mark where it ran.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(data("tiny-dep/index.js"), dir.path().join("index.js")).unwrap();
    let manifest = std::fs::read_to_string(data("tiny-dep/package.json"))
        .unwrap()
        .replacen(
            "\"main\": \"index.js\",",
            "\"main\": \"index.js\",\n  \"scripts\": {\"postinstall\": \"node -e \\\"require('fs').writeFileSync('ran', 'yes')\\\"\"},",
            1,
        );
    std::fs::write(dir.path().join("package.json"), manifest).unwrap();
    registry.publish_dir(dir.path());
    publish(&registry, "tiny-mcp-deps", "1.0.0");
    let cache = tempfile::tempdir().unwrap();
    let env = registry.client_env(cache.path());
    let p = Project::bare(json!({
        "off": {"command": "mcp-lock", "args": ["guard", "off", "--", "npx", "-y", "tiny-mcp-deps@1.0.0"]},
        "on": {"command": "mcp-lock", "args": ["guard", "on", "--allow-scripts", "--", "npx", "-y", "tiny-mcp-deps@1.0.0"]},
    }));
    run(&p, &["update", "--yes"], &env).expect(0);
    let companion = std::fs::read_to_string(p.path().join("mcp.closure.lock")).unwrap();
    assert!(
        companion.contains("install_scripts = [\"tiny-dep\"]"),
        "{companion}"
    );
    let command = ["npx", "-y", "tiny-mcp-deps@1.0.0"];
    let (_, text) = ask_guard_for_version(&p, "off", &command, &env);
    assert_eq!(text, "tiny-mcp-deps 1.0.0 tiny-dep 1.0.0");
    let audit = std::fs::read_to_string(p.path().join(".mcp-lock/audit.jsonl")).unwrap();
    assert!(
        audit.contains("install scripts not run for tiny-dep"),
        "{audit}"
    );
    let dirs = cached(&p);
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    assert!(
        !dirs[0].join("node_modules/tiny-dep/ran").exists(),
        "the script did not run"
    );
    // The entry that allows them: the guard given --allow-scripts, as the entry says.
    let mut guard_command = vec!["--allow-scripts", "--"];
    guard_command.extend(command);
    let out = p
        .command(common::bin())
        .args(["guard", "on"])
        .args(&guard_command)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let scripted: Vec<PathBuf> = cached(&p)
        .into_iter()
        .filter(|d| d.to_string_lossy().ends_with("-scripts"))
        .collect();
    assert_eq!(scripted.len(), 1, "{:?}", cached(&p));
    assert_eq!(
        std::fs::read_to_string(scripted[0].join("node_modules/tiny-dep/ran")).unwrap(),
        "yes"
    );
    // verify lists each entry as its guard runs it.
    run(&p, &["verify"], &env).expect(0);
}

/// Edits the companion as a hostile repository would, then makes the hashes agree
/// again: each server's closure hash recomputed (docs/lock-format.md's recipe) in the
/// companion and in mcp.lock, so only a check of the fields themselves can tell.
fn forge_companion(p: &Project, edit: impl Fn(&mut toml::Table)) {
    use mcp_lock::servers::package::closure::{Closure, Dependency, Ecosystem};
    let path = p.path().join("mcp.closure.lock");
    let mut doc: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
    edit(&mut doc);
    let mut lock = p.lock_text().unwrap();
    for server in doc["server"].as_array_mut().unwrap() {
        let server = server.as_table_mut().unwrap();
        let text = |v: &toml::Value, key: &str| {
            v.get(key)
                .and_then(toml::Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let packages = server["package"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| Dependency {
                path: text(p, "path"),
                name: text(p, "name"),
                version: text(p, "version"),
                integrity: p["integrity"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|h| h.as_str().unwrap().to_string())
                    .collect(),
                entry: text(p, "entry"),
                scripts: p.get("scripts").and_then(|s| s.as_bool()).unwrap_or(false),
            })
            .collect();
        let ecosystem = Ecosystem::parse(server["ecosystem"].as_str().unwrap()).unwrap();
        let hash = Closure {
            ecosystem,
            packages,
        }
        .hash();
        let old = server["closure"].as_str().unwrap().to_string();
        lock = lock.replace(&old, &hash);
        server.insert("closure".into(), toml::Value::String(hash));
    }
    std::fs::write(&path, toml::to_string(&doc).unwrap()).unwrap();
    std::fs::write(p.path().join("mcp.lock"), lock).unwrap();
}

/// An edit of the companion, as a hostile repository makes it.
type Forgery<'a> = dyn Fn(&mut toml::Table) + 'a;

/// The companion's package at `path` of the (only) server named `server`.
fn package_mut<'a>(doc: &'a mut toml::Table, server: &str, path: &str) -> &'a mut toml::Table {
    doc["server"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| s["name"].as_str() == Some(server))
        .unwrap()["package"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|p| p["path"].as_str() == Some(path))
        .unwrap()
        .as_table_mut()
        .unwrap()
}

/// The sha512 SRI value of a file, as npm computes a tarball's.
fn sri_of(file: &std::path::Path) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let digest = sha2::Sha512::digest(std::fs::read(file).unwrap());
    format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// Expects a one-line error naming mcp.closure.lock and `field`, with exit `code`.
fn refused_naming(run: &common::Run, code: i32, field: &str) {
    let stderr = run.stderr();
    run.expect(code);
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("mcp.closure.lock") && stderr.contains(field),
        "{field} in {stderr}"
    );
}

#[test]
fn a_companion_entry_naming_another_tarball_or_a_link_is_refused_and_nothing_runs() {
    let registry = Registry::start();
    let (p, env, _cache) = deps_project(&registry);
    // The repository ships its own tiny-dep: a tarball and a directory that leave a
    // mark when loaded.
    let evil = p.path().join("vendor/tiny-dep");
    std::fs::create_dir_all(&evil).unwrap();
    std::fs::copy(data("tiny-dep/package.json"), evil.join("package.json")).unwrap();
    let mark = p.path().join("pwned");
    std::fs::write(
        evil.join("index.js"),
        format!(
            "require('fs').writeFileSync({:?}, 'ran');\nmodule.exports = {{ version: 'evil' }};\n",
            mark.display().to_string()
        ),
    )
    .unwrap();
    let pack = common::command("npm")
        .args(["pack", "--pack-destination"])
        .arg(p.path().join("vendor"))
        .arg(&evil)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .unwrap();
    assert!(
        pack.status.success(),
        "{}",
        String::from_utf8_lossy(&pack.stderr)
    );
    let tarball = p.path().join("vendor/tiny-dep-1.0.0.tgz");
    let sri = sri_of(&tarball);
    let pristine = std::fs::read_to_string(p.path().join("mcp.closure.lock")).unwrap();
    let lock = p.lock_text().unwrap();
    let command = ["npx", "-y", "tiny-mcp-deps@1.0.0"];
    let forgeries: [(&str, Box<Forgery>); 3] = [
        (
            "\"resolved\"",
            Box::new(|doc| {
                let dep = package_mut(doc, "tiny-wrapped", "node_modules/tiny-dep");
                dep.insert(
                    "entry".into(),
                    toml::Value::String(format!(r#"{{"resolved":"file:{}"}}"#, tarball.display())),
                );
                dep.insert(
                    "integrity".into(),
                    toml::Value::Array(vec![toml::Value::String(sri.clone())]),
                );
            }),
        ),
        (
            "\"link\"",
            Box::new(|doc| {
                let dep = package_mut(doc, "tiny-wrapped", "node_modules/tiny-dep");
                dep.insert(
                    "entry".into(),
                    toml::Value::String(format!(
                        r#"{{"link":true,"resolved":"{}"}}"#,
                        evil.display()
                    )),
                );
            }),
        ),
        (
            "\"dependencies\"",
            Box::new(|doc| {
                let server = package_mut(doc, "tiny-wrapped", "node_modules/tiny-mcp-deps");
                server.insert(
                    "entry".into(),
                    toml::Value::String(format!(
                        r#"{{"bin":{{"tiny-mcp-deps":"server.js"}},"dependencies":{{"tiny-dep":"file:{}"}},"license":"MIT"}}"#,
                        evil.display()
                    )),
                );
            }),
        ),
    ];
    for (field, forge) in forgeries {
        std::fs::write(p.path().join("mcp.closure.lock"), &pristine).unwrap();
        std::fs::write(p.path().join("mcp.lock"), &lock).unwrap();
        forge_companion(&p, forge);
        // verify: a companion error, exit 2, one line naming the file and the field.
        refused_naming(&run(&p, &["verify"], &env), 2, field);
        refused_naming(&run(&p, &["verify", "--format", "json"], &env), 2, field);
        // The guard starts nothing and installs nothing.
        let mut args = vec!["guard", "tiny-wrapped", "--"];
        args.extend(command);
        refused_naming(&run(&p, &args, &env), 2, field);
        assert!(cached(&p).is_empty(), "nothing installed: {:?}", cached(&p));
        assert!(!mark.exists(), "the repository's code ran ({field})");
    }
}

#[test]
fn a_companion_whose_own_package_is_not_the_locks_starts_nothing() {
    let registry = Registry::start();
    let (p, env, _cache) = deps_project(&registry);
    publish(&registry, "tiny-mcp-deps", "1.0.1");
    let other = registry.packument("tiny-mcp-deps")["versions"]["1.0.1"]["dist"]["integrity"]
        .as_str()
        .unwrap()
        .to_string();
    // The server's own package in the companion: another release's integrity, the
    // closure hash recomputed in both files.
    forge_companion(&p, |doc| {
        package_mut(doc, "tiny-wrapped", "node_modules/tiny-mcp-deps").insert(
            "integrity".into(),
            toml::Value::Array(vec![toml::Value::String(other.clone())]),
        );
    });
    let stderr = p.guard_refuses(
        &["tiny-wrapped", "--", "npx", "-y", "tiny-mcp-deps@1.0.0"],
        &env.iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect::<Vec<_>>(),
    );
    assert!(
        stderr.contains("mcp.closure.lock")
            && stderr.contains(
                "`integrity` of its node_modules/tiny-mcp-deps is not the one mcp.lock pins"
            ),
        "{stderr}"
    );
    assert!(cached(&p).is_empty(), "nothing installed");
    // verify cannot list it as the guard would run it: unverifiable, saying why.
    let verify = run(&p, &["verify", "tiny-wrapped", "--format", "json"], &env);
    verify.expect(3);
    assert!(
        report(&verify.json(), "tiny-wrapped")["error"]
            .as_str()
            .unwrap_or_default()
            .contains("is not the one `mcp.lock` pins"),
        "{}",
        verify.stdout()
    );
}

#[test]
fn a_pypi_companion_name_that_adds_a_requirement_line_is_refused_and_nothing_runs() {
    let index = Index::start();
    index.publish_tiny("1.0.0");
    let cache = tempfile::tempdir().unwrap();
    let env = index.client_env(cache.path());
    let p = Project::bare(json!({
        "tiny-wrapped": {"command": "mcp-lock", "args": ["guard", "tiny-wrapped", "--", "uvx", "tiny-py==1.0.0"]},
    }));
    run(&p, &["update", "--yes"], &env).expect(0);
    // A wheel of the repository's own, named into the requirements file by a newline.
    let vendor = p.path().join("vendor");
    std::fs::create_dir_all(&vendor).unwrap();
    let made = common::command(common::registries::servers_dir().join("venv/bin/python"))
        .arg(data("make_wheel.py"))
        .arg(&vendor)
        .args(["6.6.6", "evil-py"])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let wheel = std::path::PathBuf::from(String::from_utf8(made.stdout).unwrap().trim());
    let wheel_hash = mcp_lock::contract::hash::sha256_hex(&std::fs::read(&wheel).unwrap());
    let pristine = std::fs::read_to_string(p.path().join("mcp.closure.lock")).unwrap();
    let lock = p.lock_text().unwrap();
    for (field, forge) in [("`name`", "name"), ("`version`", "version")] {
        std::fs::write(p.path().join("mcp.closure.lock"), &pristine).unwrap();
        std::fs::write(p.path().join("mcp.lock"), &lock).unwrap();
        forge_companion(&p, |doc| {
            let tiny = package_mut(doc, "tiny-wrapped", "tiny-py");
            let hashes: Vec<String> = tiny["integrity"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| format!("--hash={}", h.as_str().unwrap()))
                .collect();
            let injected = format!("\n{} --hash=sha256:{wheel_hash}\n# ", wheel.display());
            let value = if forge == "name" {
                format!("tiny-py==1.0.0 {}{injected}tiny-py", hashes.join(" "))
            } else {
                format!("1.0.0 {}{injected}", hashes.join(" "))
            };
            tiny.insert(forge.into(), toml::Value::String(value));
        });
        refused_naming(&run(&p, &["verify"], &env), 2, field);
        refused_naming(
            &run(
                &p,
                &["guard", "tiny-wrapped", "--", "uvx", "tiny-py==1.0.0"],
                &env,
            ),
            2,
            field,
        );
        assert!(cached(&p).is_empty(), "nothing installed: {:?}", cached(&p));
    }
}

/// What the sdist's build backend wrote: one line per run, `<hook> <who>`, where a
/// launch of the server says `launch` and anything else (a resolution) `resolver`.
fn backend_runs(marker: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(marker)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn an_sdist_only_dependency_with_static_metadata_is_pinned_by_its_hash_and_no_build_backend_runs_to_resolve_it()
 {
    let index = Index::start();
    let marks = tempfile::tempdir().unwrap();
    let marker = marks.path().join("built");
    let sdist = index.publish_sdist("static-dep", "1.0", &marker, true, &[]);
    index.publish_tiny_requiring("tiny-user", &["static-dep"]);
    let cache = tempfile::tempdir().unwrap();
    let env = index.client_env(cache.path());
    let p = Project::bare(json!({
        "user": {"command": "uvx", "args": ["tiny-user==1.0.0"], "env": {"BUILT_BY": "launch"}},
    }));
    let update = run(&p, &["update", "--yes"], &env);
    update.expect(0);
    assert!(
        !update.stderr().contains("closure not pinned"),
        "{}",
        update.stderr()
    );
    let companion = std::fs::read_to_string(p.path().join("mcp.closure.lock")).unwrap();
    let sha = mcp_lock::servers::package::sha256_file(&sdist).unwrap();
    assert!(
        companion.contains(&format!(
            "path = \"static-dep\"\nname = \"static-dep\"\nversion = \"1.0\"\nintegrity = [\"sha256:{sha}\"]"
        )),
        "{companion}"
    );
    // verify resolves the unwrapped entry's closure again: the same, still unbuilt.
    let verify = run(&p, &["verify", "--format", "json"], &env);
    verify.expect(0);
    assert_eq!(
        report(&verify.json(), "user")["package"]["status"],
        "pinned"
    );
    let runs = backend_runs(&marker);
    // uvx built it to launch the server (the server's own install, as a host does);
    // neither update nor verify ran its backend to read its dependencies.
    assert!(
        !runs.is_empty(),
        "the host's uvx builds it: the marker works"
    );
    assert!(runs.iter().all(|r| r.ends_with(" launch")), "{runs:?}");

    // The guard installs the pinned closure: the sdist is built then (the server's own
    // install, as uvx's), only where scripts are allowed.
    p.set_servers(json!({
        "on": {"command": "mcp-lock", "args": ["guard", "on", "--", "uvx", "tiny-user==1.0.0"]},
    }));
    let policy = p.path().join("mcp-lock.toml");
    std::fs::write(&policy, "[closure]\nallow-scripts = [\"on\"]\n").unwrap();
    run(&p, &["update", "--yes"], &env).expect(0);
    let (version, _) = ask_guard_for_version(&p, "on", &["uvx", "tiny-user==1.0.0"], &env);
    assert_eq!(version, "1.0.0");
    std::fs::remove_dir_all(p.home().join(".cache/mcp-lock/closures")).unwrap();
    std::fs::remove_file(&policy).unwrap();
    let env_str: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let refusal = p.guard_refuses(&["on", "--", "uvx", "tiny-user==1.0.0"], &env_str);
    assert!(
        refusal
            .contains("static-dep is pinned as a source distribution, and installing it builds it"),
        "{refusal}"
    );
}

#[test]
fn an_sdist_only_dependency_with_dynamic_metadata_is_closure_unpinned_said_plainly_in_verify_and_the_guard()
 {
    let index = Index::start();
    let marks = tempfile::tempdir().unwrap();
    let marker = marks.path().join("built");
    index.publish_sdist("dyn-dep", "1.0", &marker, false, &[]);
    index.publish_tiny_requiring("tiny-user", &["dyn-dep"]);
    let cache = tempfile::tempdir().unwrap();
    let env = index.client_env(cache.path());
    let p = Project::bare(json!({
        "user": {"command": "uvx", "args": ["tiny-user==1.0.0"], "env": {"BUILT_BY": "launch"}},
        "user-wrapped": {"command": "mcp-lock", "args": ["guard", "user-wrapped", "--", "uvx", "tiny-user==1.0.0"], "env": {"BUILT_BY": "launch"}},
    }));
    let update = run(&p, &["update", "--yes"], &env);
    update.expect(0);
    let cause = "dyn-dep 1.0 is published only as a source distribution (no wheel uv can use), and the PKG-INFO of dyn-dep 1.0's source distribution marks Requires-Dist dynamic";
    assert!(
        update
            .stderr()
            .contains(&format!("user: dependency closure not pinned: {cause}")),
        "{}",
        update.stderr()
    );
    let verify = run(&p, &["verify", "--format", "json"], &env);
    verify.expect(0);
    let doc = verify.json();
    for server in ["user", "user-wrapped"] {
        let package = &report(&doc, server)["package"];
        assert_eq!(package["status"], "closure_unpinned", "{package}");
        assert_eq!(package["action"], "warn", "{package}");
        let message = package["message"].as_str().unwrap();
        assert!(message.contains(cause), "{message}");
        assert!(
            !message.contains("mcp-lock update"),
            "never advice that cannot succeed: {message}"
        );
    }
    for format in ["human", "github", "sarif", "junit", "markdown"] {
        let shown = run(&p, &["verify", "--format", format], &env);
        shown.expect(0);
        assert!(
            shown.stdout().contains("closure-unpinned")
                || shown.stderr().contains("closure-unpinned"),
            "{format}: {}{}",
            shown.stdout(),
            shown.stderr()
        );
    }

    // The guard launches the floating closure only with a warning, audited.
    let guard = run(&p, &["guard", "user-wrapped"], &env);
    let warning = guard
        .stderr()
        .lines()
        .find(|l| l.starts_with("mcp-lock guard: warning: "))
        .map(String::from)
        .unwrap_or_else(|| panic!("no warning: {}", guard.stderr()));
    assert!(
        warning.contains("its dependency closure is not pinned: the guard resolves its dependencies afresh at every launch")
            && warning.ends_with("(closure-unpinned, warn)"),
        "{warning}"
    );
    let audit = std::fs::read_to_string(p.path().join(".mcp-lock/audit.jsonl")).unwrap();
    assert!(
        audit
            .lines()
            .any(|l| l.contains("\"launch_disagrees\"") && l.contains("closure-unpinned")),
        "{audit}"
    );
    assert!(
        backend_runs(&marker).iter().all(|r| r.ends_with(" launch")),
        "{:?}",
        backend_runs(&marker)
    );

    // A policy that fails it: verify fails, the guard refuses.
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[verify]\nclosure-unpinned = \"fail\"\n",
    )
    .unwrap();
    run(&p, &["verify"], &env).expect(1);
    let env_str: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let refusal = p.guard_refuses(&["user-wrapped"], &env_str);
    assert!(
        refusal.contains("(closure-unpinned, which `mcp-lock verify` fails)"),
        "{refusal}"
    );
}

#[test]
fn a_closure_move_proposed_in_a_pull_request_commits_the_lock_and_its_companion_and_names_each_package()
 {
    use common::pull_request::{commit_all, commit_as_the_action_would, run_step};
    let registry = Registry::start();
    publish(&registry, "tiny-dep", "1.0.0");
    publish(&registry, "tiny-mcp-deps", "1.0.0");
    let cache = tempfile::tempdir().unwrap();
    let env = registry.client_env(cache.path());
    let p = Project::bare(json!({
        "tiny": {"command": "npx", "args": ["-y", "tiny-mcp-deps@1.0.0"]},
    }));
    run(&p, &["update", "--yes"], &env).expect(0);
    commit_all(&p);

    publish(&registry, "tiny-dep", "1.0.1");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let step = run_step(&p, &env);
    assert_eq!(step.output("changed"), "true", "{}", step.stderr);
    assert_eq!(
        step.output("title"),
        "mcp.lock: 1 change to tiny, worst dependency-changed"
    );
    assert_eq!(
        step.output("labels"),
        "mcp-lock,mcp-lock: dependency-changed"
    );
    assert_eq!(step.output("add-paths"), "mcp.lock\nmcp.closure.lock");
    let body = step.body();
    assert!(
        body.contains("1 package of its dependency closure moved:\n\n- tiny-dep 1.0.0 -&gt; 1.0.1"),
        "{body}"
    );
    let files = commit_as_the_action_would(&p, &step, "mcp-lock/update");
    assert_eq!(
        files,
        Some(vec!["mcp.closure.lock".to_string(), "mcp.lock".to_string()])
    );
    run(
        &p,
        &["verify"],
        &env.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>(),
    )
    .expect(0);
}
