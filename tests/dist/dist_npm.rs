//! The npm distribution (npm/, docs/npm.md): the platform and main packages built by
//! npm/build.mjs, installed with npm from a loopback registry and run through npx as
//! the binary runs; the launcher; the TypeScript API and its SDK helpers through the
//! official TypeScript SDK against the fixture server; the declarations and the
//! example agent (examples/ts_agent) type-checked and run against examples/demo.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use common::registries::Registry;
use common::{
    Project, bin, command, fixture, fixture_entry, succeeded, test_servers_dir, without_timing,
};
use serde_json::{Value, json};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The Node packages scripts/install-test-servers.sh installs for these tests.
fn dist_node_modules() -> PathBuf {
    let dir = test_servers_dir().join("dist/node/node_modules");
    assert!(
        dir.join("@modelcontextprotocol/sdk/package.json").exists()
            && dir.join(".bin/tsc").exists(),
        "the TypeScript SDK and compiler are not installed in {}; run scripts/install-test-servers.sh (bash .ci/run does)",
        dir.display()
    );
    dir
}

fn sdk_dir() -> PathBuf {
    dist_node_modules().join("@modelcontextprotocol/sdk")
}

/// server-everything's entry point, from the test-server cache: it lists tools by the
/// capabilities a client declares.
fn everything_main() -> PathBuf {
    let main = test_servers_dir()
        .join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        main.exists(),
        "server-everything is not installed at {}; run scripts/install-test-servers.sh",
        main.display()
    );
    main
}

/// Node's own types for type-checking the example, from the test-server cache.
fn node_types() -> PathBuf {
    let dir = dist_node_modules().join("@types/node");
    assert!(
        dir.join("package.json").exists(),
        "no @types/node in {}; run scripts/install-test-servers.sh",
        dir.display()
    );
    dir
}

/// This machine's platform key, as the launcher computes it.
fn platform_key() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    let libc = if cfg!(target_env = "musl") {
        "musl"
    } else {
        "gnu"
    };
    format!("linux-{arch}-{libc}")
}

/// The tarballs npm/build.mjs packs from a stripped copy of the binary under test (a
/// debug build is about 120 MB, stripped about 37 MB): built once per test process.
struct Packages {
    platform: PathBuf,
    main: PathBuf,
}

fn packages() -> &'static Packages {
    static BUILT: std::sync::OnceLock<Packages> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dist-npm");
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        let stripped = out.join("mcp-lock");
        succeeded(
            "strip",
            &command("strip")
                .arg("-o")
                .arg(&stripped)
                .arg(bin())
                .output()
                .unwrap(),
        );
        let started = Instant::now();
        let printed = succeeded(
            "npm/build.mjs",
            &command("node")
                .arg(repo().join("npm/build.mjs"))
                .arg("--out")
                .arg(out.join("packages"))
                .arg("--binary")
                .arg(format!("x86_64-unknown-linux-gnu={}", stripped.display()))
                .env("npm_config_cache", out.join("npm-cache"))
                .output()
                .unwrap(),
        );
        let tarballs: Vec<PathBuf> = printed.lines().map(PathBuf::from).collect();
        assert_eq!(tarballs.len(), 2, "{printed}");
        for tarball in &tarballs {
            eprintln!(
                "packed {} ({} bytes) in {:.1?}",
                tarball.display(),
                std::fs::metadata(tarball).unwrap().len(),
                started.elapsed()
            );
        }
        Packages {
            platform: tarballs[0].clone(),
            main: tarballs[1].clone(),
        }
    })
}

/// A command in `project` with the registry's client environment and a cache of the
/// project's own.
fn npm_command(project: &Project, registry: &Registry, program: &str) -> Command {
    let env = registry.client_env(&project.home().join("npm-cache"));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    project.command_env(program, &env)
}

#[test]
fn npm_install_from_a_registry_runs_verify_as_the_binary_does() {
    let packages = packages();
    let registry = Registry::start();
    registry.publish_tarballs(&[packages.platform.clone(), packages.main.clone()]);

    let project = Project::new(json!({"fx": fixture_entry(&["--revision", "a"])}));
    project.run(&["update", "--yes"]).expect(0);
    std::fs::write(
        project.path().join("package.json"),
        r#"{"name": "agent-project", "private": true}"#,
    )
    .unwrap();
    let started = Instant::now();
    succeeded(
        "npm install mcp-lock",
        &npm_command(&project, &registry, "npm")
            .args(["install", "--save-dev", "mcp-lock"])
            .output()
            .unwrap(),
    );
    eprintln!(
        "npm install mcp-lock from the loopback registry: {:.1?}",
        started.elapsed()
    );
    let installed = project
        .path()
        .join("node_modules/@mcp-lock")
        .join(platform_key());
    assert!(installed.join("bin/mcp-lock").exists());
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(installed.join("package.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["libc"], json!(["glibc"]));
    // Only this platform's package is installed; the others are not in the registry.
    assert_eq!(
        std::fs::read_dir(project.path().join("node_modules/@mcp-lock"))
            .unwrap()
            .count(),
        1
    );

    for (revision, code) in [("a", 0), ("b", 1)] {
        project.set_servers(json!({"fx": fixture_entry(&["--revision", revision])}));
        let npx = npm_command(&project, &registry, "npx")
            .args(["--no", "mcp-lock", "verify", "--format", "json"])
            .output()
            .unwrap();
        let direct = project.run(&["verify", "--format", "json"]);
        direct.expect(code);
        assert_eq!(
            npx.status.code(),
            Some(code),
            "npx mcp-lock verify, revision {revision}: {}",
            String::from_utf8_lossy(&npx.stderr)
        );
        let through_npm: Value = serde_json::from_slice(&npx.stdout).unwrap();
        assert_eq!(without_timing(through_npm), without_timing(direct.json()));
    }
}

#[test]
fn npx_without_the_platform_package_names_the_missing_one() {
    let packages = packages();
    let registry = Registry::start();
    registry.publish_tarballs(std::slice::from_ref(&packages.main));
    let project = Project::new(json!({"fx": fixture_entry(&["--revision", "a"])}));
    std::fs::write(
        project.path().join("package.json"),
        r#"{"name": "agent-project", "private": true}"#,
    )
    .unwrap();
    succeeded(
        "npm install --omit=optional mcp-lock",
        &npm_command(&project, &registry, "npm")
            .args(["install", "--omit=optional", "mcp-lock"])
            .output()
            .unwrap(),
    );
    assert!(!project.path().join("node_modules/@mcp-lock").exists());
    let npx = npm_command(&project, &registry, "npx")
        .args(["--no", "mcp-lock", "verify"])
        .output()
        .unwrap();
    let key = platform_key();
    assert_eq!(npx.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&npx.stderr),
        format!(
            "mcp-lock: no binary for {key}; install @mcp-lock/{key} or use cargo install mcp-lock\n"
        )
    );
    assert!(npx.stdout.is_empty());
}

#[test]
fn build_writes_every_platform_package_from_the_one_table() {
    let out = tempfile::tempdir().unwrap();
    let fake = out.path().join("fake-binary");
    std::fs::write(&fake, "not a binary").unwrap();
    let table: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("npm/mcp-lock/platforms.json")).unwrap(),
    )
    .unwrap();
    let platforms = table["platforms"].as_array().unwrap();
    assert_eq!(platforms.len(), 7);
    let mut build = command("node");
    build
        .arg(repo().join("npm/build.mjs"))
        .arg("--out")
        .arg(out.path().join("out"))
        .arg("--no-pack");
    for platform in platforms {
        build.arg("--binary").arg(format!(
            "{}={}",
            platform["target"].as_str().unwrap(),
            fake.display()
        ));
    }
    succeeded("npm/build.mjs --no-pack", &build.output().unwrap());

    let cargo: toml::Table =
        toml::from_str(&std::fs::read_to_string(repo().join("Cargo.toml")).unwrap()).unwrap();
    let version = cargo["package"]["version"].as_str().unwrap();
    let read = |path: PathBuf| -> Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let main = read(out.path().join("out/mcp-lock/package.json"));
    assert_eq!(main["version"], version);
    assert_eq!(
        main["optionalDependencies"].as_object().unwrap().len(),
        platforms.len()
    );
    // The committed manifest is the one the build writes (`node npm/build.mjs --sync`).
    assert_eq!(main, read(repo().join("npm/mcp-lock/package.json")));

    for platform in platforms {
        let key = platform["key"].as_str().unwrap();
        let name = format!("@mcp-lock/{key}");
        let manifest = read(out.path().join("out").join(key).join("package.json"));
        assert_eq!(manifest["name"], name);
        assert_eq!(manifest["version"], version);
        assert_eq!(main["optionalDependencies"][&name], version);
        assert_eq!(manifest["os"], json!([platform["os"]]));
        assert_eq!(manifest["cpu"], json!([platform["cpu"]]));
        let libc = match key.rsplit('-').next().unwrap() {
            "gnu" => json!(["glibc"]),
            "musl" => json!(["musl"]),
            _ => Value::Null,
        };
        assert_eq!(manifest["libc"], libc, "{key}");
        let exe = if key.starts_with("win32") {
            "mcp-lock.exe"
        } else {
            "mcp-lock"
        };
        assert_eq!(manifest["files"], json!([format!("bin/{exe}")]));
        // The binary, the manifest and a README (which npm packs whatever `files` says).
        let dir = out.path().join("out").join(key);
        assert_eq!(entries(&dir), ["README.md", "bin", "package.json"], "{key}");
        assert_eq!(entries(&dir.join("bin")), [exe], "{key}");
    }
}

/// The names in a folder, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn build_copies_the_main_package_from_a_checkout_inside_node_modules() {
    // A checkout (or an unpacked source package) under some node_modules folder, with
    // an npm install of its own inside the main package folder.
    let dir = tempfile::tempdir().unwrap();
    let checkout = dir.path().join("node_modules/mcp-lock-src");
    copy_dir(&repo().join("npm/mcp-lock"), &checkout.join("npm/mcp-lock"));
    std::fs::copy(repo().join("npm/build.mjs"), checkout.join("npm/build.mjs")).unwrap();
    std::fs::copy(repo().join("Cargo.toml"), checkout.join("Cargo.toml")).unwrap();
    let installed = checkout.join("npm/mcp-lock/node_modules/left-pad");
    std::fs::create_dir_all(&installed).unwrap();
    std::fs::write(installed.join("index.js"), "module.exports = 1;\n").unwrap();

    let out = dir.path().join("out");
    succeeded(
        "npm/build.mjs --no-pack under node_modules",
        &command("node")
            .arg(checkout.join("npm/build.mjs"))
            .arg("--out")
            .arg(&out)
            .arg("--no-pack")
            .output()
            .unwrap(),
    );
    let main = out.join("mcp-lock");
    let mut expected = entries(&repo().join("npm/mcp-lock"));
    expected.retain(|name| name != "node_modules");
    assert_eq!(entries(&main), expected);
    for file in ["index.js", "index.d.ts", "bin/mcp-lock.js", "lib/binary.js"] {
        assert_eq!(
            std::fs::read(main.join(file)).unwrap(),
            std::fs::read(repo().join("npm/mcp-lock").join(file)).unwrap(),
            "{file}"
        );
    }
}

/// Runs one test of a `node --test` file by its exact name, with the binary, the
/// fixture server and the SDK named in the environment.
#[track_caller]
fn node_test(file: &str, name: &str) {
    let pattern = format!("^{}$", regex_escape(name));
    let output = command("node")
        .arg("--test")
        .arg(format!("--test-name-pattern={pattern}"))
        .arg(repo().join("npm/tests").join(file))
        .env("MCP_LOCK_BIN", bin())
        .env("MCP_LOCK_TEST_FIXTURE", fixture())
        .env("MCP_LOCK_TEST_SDK", sdk_dir())
        .env("MCP_LOCK_TEST_EVERYTHING", everything_main())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("# pass 1\n") && stdout.contains("# fail 0\n"),
        "{file}: {name}\n--- stdout\n{stdout}\n--- stderr\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\^$.|?*+()[]{}/".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

#[test]
fn launcher_names_the_missing_platform_package() {
    node_test(
        "launcher.test.cjs",
        "a missing platform package is named with how to get the binary",
    );
}

#[test]
fn launcher_names_the_platforms_that_have_a_package() {
    node_test(
        "launcher.test.cjs",
        "a platform with no package says which platforms have one",
    );
}

#[test]
fn launcher_passes_arguments_stdio_and_the_exit_code() {
    node_test(
        "launcher.test.cjs",
        "the binary gets the arguments and stdio and its exit code comes back",
    );
}

#[test]
fn launcher_forwards_a_signal_to_the_binary() {
    node_test(
        "launcher.test.cjs",
        "a signal to the launcher reaches the binary",
    );
}

#[test]
fn launcher_dies_of_the_signal_that_ended_the_binary() {
    node_test(
        "launcher.test.cjs",
        "a binary ended by a signal ends the launcher by the same signal",
    );
}

#[test]
fn sdk_session_that_declares_roots_and_elicitation_is_judged_under_the_profile_with_them() {
    node_test(
        "sdk.test.mjs",
        "a session that declares roots and elicitation is judged under the profile with them",
    );
}

#[test]
fn sdk_session_that_converged_comes_out_converged() {
    node_test("sdk.test.mjs", "a converged session comes out converged");
}

#[test]
fn sdk_session_keeps_the_members_the_sdk_does_not_model() {
    node_test(
        "sdk.test.mjs",
        "members the sdk does not model reach the lock as the server sent them",
    );
}

#[test]
fn sdk_session_that_drifted_is_caught_from_what_it_received() {
    node_test(
        "sdk.test.mjs",
        "a drifted session is caught from the listing it received",
    );
}

#[test]
fn sdk_session_plans_without_the_tools_the_rules_deny_to_its_host() {
    node_test(
        "sdk.test.mjs",
        "a session plans without the tools the rules deny to its host",
    );
}

#[test]
fn sdk_session_with_its_last_page_missing_is_incomplete() {
    node_test(
        "sdk.test.mjs",
        "a session whose last page is missing is incomplete",
    );
}

#[test]
fn sdk_session_whose_first_page_of_a_kind_fails_is_incomplete() {
    node_test(
        "sdk.test.mjs",
        "a kind whose first page fails is incomplete",
    );
}

#[test]
fn sdk_session_whose_declared_templates_are_not_found_converges_with_none() {
    node_test(
        "sdk.test.mjs",
        "a declared kind whose list method is not found is none, as verify pins it",
    );
}

#[test]
fn sdk_session_of_an_unknown_server_is_an_mcp_lock_error() {
    node_test("sdk.test.mjs", "an unknown server is an McpLockError");
}

#[test]
fn guarded_params_launch_the_server_through_the_guard() {
    node_test(
        "sdk.test.mjs",
        "guarded params launch the server through the guard",
    );
}

#[test]
fn api_verify_resolves_with_the_report_and_rejects_a_usage_error() {
    node_test(
        "sdk.test.mjs",
        "verify resolves with the report and rejects a missing lock",
    );
}

#[test]
fn sdk_session_of_a_server_that_does_not_declare_tools_still_lists_them() {
    node_test(
        "sdk.test.mjs",
        "a server that does not declare tools still has its tools listed and judged",
    );
}

#[test]
fn sdk_session_without_the_pinned_instructions_is_stale() {
    node_test(
        "sdk.test.mjs",
        "instructions the session did not get, or got changed, are drift",
    );
}

#[test]
fn sdk_session_that_hangs_is_cut_off_by_the_timeouts_as_incomplete() {
    node_test(
        "sdk.test.mjs",
        "a listing that hangs is cut off by the timeouts and judged incomplete",
    );
}

#[test]
fn sdk_session_defaults_to_the_request_timeout_and_page_limit_of_verify() {
    node_test(
        "sdk.test.mjs",
        "list requests default to verify's limits: 30 s a request, 500 pages",
    );
}

#[test]
fn api_verify_takes_one_server_name_as_a_string() {
    node_test("sdk.test.mjs", "verify takes one server name as a string");
}

#[test]
fn api_report_whose_exit_code_is_not_the_processes_is_an_mcp_lock_error() {
    node_test(
        "sdk.test.mjs",
        "a report whose exit_code is not the process's is an McpLockError",
    );
}

#[test]
fn api_aborted_call_rejects_with_an_mcp_lock_error() {
    node_test("sdk.test.mjs", "an aborted call rejects with McpLockError");
}

/// A folder where `mcp-lock`, the SDK and Node's types resolve as a user's
/// node_modules would have them, holding copies of `files`.
fn node_project(files: &[PathBuf]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let modules = dir.path().join("node_modules");
    std::fs::create_dir_all(modules.join("@modelcontextprotocol")).unwrap();
    std::fs::create_dir_all(modules.join("@types")).unwrap();
    for (link, target) in [
        ("mcp-lock", repo().join("npm/mcp-lock")),
        ("@modelcontextprotocol/sdk", sdk_dir()),
        ("@types/node", node_types()),
    ] {
        std::os::unix::fs::symlink(target, modules.join(link)).unwrap();
    }
    for file in files {
        std::fs::copy(file, dir.path().join(file.file_name().unwrap())).unwrap();
    }
    dir
}

#[track_caller]
fn type_check(dir: &Path) {
    let output = command(dist_node_modules().join(".bin/tsc"))
        .args(["--noEmit", "--strict", "-p", "."])
        .current_dir(dir)
        .output()
        .unwrap();
    succeeded(&format!("tsc in {}", dir.display()), &output);
}

#[test]
fn declarations_and_the_example_type_check_strictly() {
    let types = repo().join("npm/tests/types");
    type_check(
        node_project(&[
            types.join("api.mts"),
            types.join("api.cts"),
            types.join("tsconfig.json"),
        ])
        .path(),
    );
    let example = repo().join("examples/ts_agent");
    type_check(
        node_project(&[
            example.join("agent.mjs"),
            example.join("tsconfig.json"),
            example.join("package.json"),
        ])
        .path(),
    );
}

#[test]
fn example_agent_checks_its_session_against_the_demo_and_refuses_drift() {
    fixture();
    let demo = repo().join("examples/demo");
    let entries = |dir: &Path| -> Vec<_> {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    let before = entries(&demo);
    let agent = node_project(&[
        repo().join("examples/ts_agent/agent.mjs"),
        repo().join("examples/ts_agent/package.json"),
    ]);
    // The locks live outside the demo, which stays as it is checked in; the demo's
    // profiles (mcp-lock.toml, read beside the lock) go with them.
    let locks = tempfile::tempdir().unwrap();
    std::fs::copy(
        demo.join("mcp-lock.toml"),
        locks.path().join("mcp-lock.toml"),
    )
    .unwrap();
    let lock = |name: &str| locks.path().join(name).display().to_string();
    let mcp_lock = |args: &[&str]| {
        let output = command(bin())
            .args(args)
            .current_dir(&demo)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        succeeded(&format!("mcp-lock {args:?}"), &output);
    };
    let run_agent = |extra: &[&str]| {
        command("node")
            .arg(agent.path().join("agent.mjs"))
            .arg("--project")
            .arg(&demo)
            .args(extra)
            .env("MCP_LOCK_BIN", bin())
            .current_dir(&demo)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };

    let a_lock = lock("a.lock");
    mcp_lock(&["update", "--yes", "--quiet", "--lock", &a_lock]);
    // Through the guard unless told not to.
    for (extra, how) in [
        (&[][..], "through mcp-lock guard"),
        (&["--no-guard"][..], "unguarded"),
    ] {
        let args: Vec<&str> = ["--lock", a_lock.as_str()]
            .into_iter()
            .chain(extra.iter().copied())
            .collect();
        let output = run_agent(&args);
        let stdout = succeeded(&format!("agent {args:?}"), &output);
        assert_eq!(
            stdout,
            format!(
                "agent: demo [bare] converged: 3 tools as pinned ({how})\n\
                 agent: read_ticket -> {{\"title\":\"Ticket T-42\"}}\n"
            ),
            "{args:?}"
        );
        assert_eq!(
            String::from_utf8_lossy(&output.stderr)
                .contains("mcp-lock guard: enforcing 3 pinned tools of demo"),
            extra.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    // A lock that pinned revision B of the demo's server: the session it gets is A.
    let config = std::fs::read_to_string(demo.join(".mcp.json")).unwrap();
    let revision_b = locks.path().join("b.mcp.json");
    std::fs::write(
        &revision_b,
        config.replace(r#"["--revision", "a"]"#, r#"["--revision", "b"]"#),
    )
    .unwrap();
    mcp_lock(&[
        "--config",
        &revision_b.display().to_string(),
        "update",
        "--yes",
        "--quiet",
        "--lock",
        &lock("b.lock"),
    ]);
    // Unguarded, the session has the server's own definitions: deploy_preview changed.
    let refused = run_agent(&["--lock", &lock("b.lock"), "--no-guard"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(refused.stdout.is_empty(), "nothing was called");
    assert!(
        stderr.starts_with(
            "agent: demo is stale; not calling anything until a person approves it (mcp-lock update demo)\n"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("  changed tool deploy_preview: "),
        "{stderr}"
    );
    // Through the guard, the drifted tools were hidden from the session: what it was
    // offered lacks them, and the agent refuses all the same.
    let guarded = run_agent(&["--lock", &lock("b.lock")]);
    let stderr = String::from_utf8_lossy(&guarded.stderr);
    assert_eq!(guarded.status.code(), Some(1), "{stderr}");
    assert!(guarded.stdout.is_empty(), "nothing was called");
    assert!(
        stderr.contains("mcp-lock guard: hid 2 tools that differ from mcp.lock or are not pinned: deploy_preview, search_docs"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "\nagent: demo is stale; not calling anything until a person approves it (mcp-lock update demo)\n"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("  removed tool deploy_preview: "),
        "{stderr}"
    );
    assert_eq!(entries(&demo), before, "nothing was written into the demo");
}
