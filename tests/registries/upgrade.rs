//! `mcp-lock upgrade` against a real verdaccio on loopback: tiny-mcp 1.0.0 pinned
//! through npx, then a 1.1.0 whose tool list differs (a tool added, one reworded).
//! Nothing leaves the machine.

use crate::common;

use std::path::Path;

use common::Project;
use common::registries::Registry;
use rexpect::session::{PtySession, spawn_command};
use serde_json::json;

/// tiny-mcp at `version`; from 1.1.0 on with an `echo` tool and `version` reworded.
fn publish(registry: &Registry, version: &str) {
    registry.publish_package("tiny-mcp", version, |server| {
        if version == "1.0.0" {
            return server;
        }
        server
            .replace(
                "const tools = [",
                "const tools = [\n  { name: \"echo\", description: \"Echoes its text\", inputSchema: { type: \"object\", properties: { text: { type: \"string\" } } } },",
            )
            .replace(
                "Says which release of this server is running",
                "Says which release of this server is running, and since when",
            )
    });
}

/// A project pinning tiny-mcp 1.0.0 (its config naming that version unless told
/// otherwise), no cooldown, and 1.1.0 published since.
struct Setup {
    registry: Registry,
    _cache: tempfile::TempDir,
    env: Vec<(String, String)>,
    p: Project,
}

impl Setup {
    fn new() -> Setup {
        Setup::with(&["-y", "tiny-mcp@1.0.0"])
    }

    /// The same, the entry launched with `npx ARGS`.
    fn with(args: &[&str]) -> Setup {
        let registry = Registry::start();
        publish(&registry, "1.0.0");
        let cache = tempfile::tempdir().unwrap();
        let env = registry.client_env(cache.path());
        let p = Project::bare(json!({
            "tiny": {"command": "npx", "args": args},
        }));
        std::fs::write(
            p.path().join("mcp-lock.toml"),
            "[profiles]\npin = [\"bare\"]\n\n[upgrade]\nmin-release-age = \"0\"\n",
        )
        .unwrap();
        let s = Setup {
            registry,
            _cache: cache,
            env,
            p,
        };
        s.run(&["update", "--yes"]).expect(0);
        publish(&s.registry, "1.1.0");
        s
    }

    fn run(&self, args: &[&str]) -> common::Run {
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        self.p.run_env(args, &env)
    }

    fn pty(&self, args: &[&str]) -> PtySession {
        self.pty_env(args, &[])
    }

    fn pty_env(&self, args: &[&str], env: &[(&str, &Path)]) -> PtySession {
        // Not `Project::command`: its stdin is no terminal.
        let mut cmd = common::command_in(common::bin(), self.p.home());
        cmd.current_dir(self.p.path())
            .args(args)
            .env("NO_COLOR", "1");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        spawn_command(cmd, Some(60_000)).expect("spawn in a pty")
    }

    /// Config, lock and companion, as bytes.
    fn files(&self) -> [Vec<u8>; 3] {
        ["mcp.json", "mcp.lock", "mcp.closure.lock"].map(|name| {
            let name = if name == "mcp.json" {
                ".mcp.json"
            } else {
                name
            };
            std::fs::read(self.p.path().join(name)).unwrap_or_default()
        })
    }

    fn lock(&self) -> mcp_lock::records::lock::Lockfile {
        mcp_lock::records::lock::read_lock(&self.p.path().join("mcp.lock"))
            .unwrap()
            .unwrap()
    }
}

/// The `approved` value of a lock's only server, from its bytes.
fn before_lock_approval(lock: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(lock).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("approved = \""))
        .map(|v| v.trim_end_matches('"').to_string())
}

fn version_of(lock: &mcp_lock::records::lock::Lockfile) -> String {
    match &lock.servers["tiny"].package.as_ref().unwrap().package {
        mcp_lock::servers::package::Package::Npm { version, .. } => version.clone(),
        other => panic!("not npm: {other:?}"),
    }
}

/// Files in the project (but the configs, lock and companion) whose names look like
/// a temporary or journal.
fn leftovers(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else if name.contains("journal")
                || name.contains(".tmp")
                || name.starts_with(".mcp.lock")
            {
                out.push(e.path().display().to_string());
            }
        }
    }
    out
}

#[test]
fn a_dry_run_shows_the_next_releases_differences_and_writes_nothing_then_yes_writes_what_verify_passes()
 {
    let s = Setup::new();
    let before = s.files();
    let dry = s.run(&["upgrade", "--dry-run"]);
    dry.expect(0);
    let err = dry.stderr();
    assert!(
        err.contains("tiny: upgrade tiny-mcp 1.0.0 -> 1.1.0"),
        "{err}"
    );
    assert!(
        err.contains("config    tiny-mcp@1.0.0 -> tiny-mcp@1.1.0"),
        "{err}"
    );
    assert!(err.contains("tiny/echo [bare]"), "the added tool: {err}");
    assert!(
        err.contains("tiny/version [bare]"),
        "the changed tool: {err}"
    );
    assert!(err.contains("nothing written"), "{err}");
    assert_eq!(s.files(), before, "config, lock and companion unchanged");

    let config_before = String::from_utf8(before[0].clone()).unwrap();
    let yes = s.run(&["upgrade", "--yes"]);
    yes.expect(0);
    let config = std::fs::read_to_string(s.p.path().join(".mcp.json")).unwrap();
    assert_eq!(
        config,
        config_before.replace("tiny-mcp@1.0.0", "tiny-mcp@1.1.0"),
        "only the version moved"
    );
    let lock = s.lock();
    assert_eq!(version_of(&lock), "1.1.0");
    let tools = &lock.servers["tiny"].profiles["bare"].tools;
    assert!(tools.contains_key("echo"), "{:?}", tools.keys());
    assert_ne!(s.files()[2], before[2], "the companion has the new closure");
    // The lock says the move was taken unasked by `upgrade --yes` (the first pin was
    // `update --yes`).
    assert_eq!(
        before_lock_approval(&before[1]),
        Some("yes".to_string()),
        "the first pin"
    );
    assert_eq!(
        lock.servers["tiny"].approved,
        Some(mcp_lock::records::lock::Approval::UpgradeYes)
    );
    let verify = s.run(&["verify"]);
    verify.expect(0);
    assert!(
        leftovers(s.p.path()).is_empty(),
        "{:?}",
        leftovers(s.p.path())
    );
    // Nothing left to move to.
    let again = s.run(&["upgrade"]);
    again.expect(0);
    assert!(
        again
            .stderr()
            .contains("tiny: tiny-mcp 1.1.0 is the newest release past the cooldown"),
        "{}",
        again.stderr()
    );
}

#[test]
fn at_a_terminal_the_package_and_one_tool_accepted_and_one_rejected_moves_only_those() {
    let s = Setup::new();
    let before_lock = s.lock();
    let mut t = s.pty(&["upgrade"]);
    t.exp_string("tiny: upgrade tiny-mcp 1.0.0 -> 1.1.0")
        .unwrap();
    t.exp_string("Pin this package?").unwrap();
    t.send_line("y").unwrap();
    // The rest in the order they come: the metadata (serverInfo's version, the
    // launch), then the tools. Each prompt is drawn again once answered, so each
    // question is told by the block before its own number.
    let mut accepted_echo = false;
    for k in 2..=4 {
        let block = t.exp_string(&format!("[{k}/4]")).unwrap();
        if block.contains("tiny/echo") {
            accepted_echo = true;
            t.send_line("y").unwrap();
        } else if block.contains("tiny/version") {
            t.send_line("n").unwrap();
        } else {
            t.send_line("y").unwrap();
        }
    }
    t.exp_string("Rejected tiny/version").unwrap();
    t.exp_eof().unwrap();
    assert!(accepted_echo);
    let lock = s.lock();
    assert_eq!(version_of(&lock), "1.1.0");
    assert_eq!(
        lock.servers["tiny"].approved,
        Some(mcp_lock::records::lock::Approval::UpgradeTerminal),
        "every change that moved was accepted by a person at the terminal"
    );
    let tools = &lock.servers["tiny"].profiles["bare"].tools;
    assert!(tools.contains_key("echo"), "the accepted tool is pinned");
    assert_eq!(
        tools["version"].hash, before_lock.servers["tiny"].profiles["bare"].tools["version"].hash,
        "the rejected change stays pinned as it was"
    );
    let config = std::fs::read_to_string(s.p.path().join(".mcp.json")).unwrap();
    assert!(config.contains("tiny-mcp@1.1.0"), "{config}");
    // verify reports the rejected change, and nothing else.
    let verify = s.run(&["verify", "--format", "json"]);
    let doc = verify.json();
    let changes = doc["servers"][0]["changes"].as_array().unwrap().clone();
    assert_eq!(changes.len(), 1, "{doc:#}");
    assert_eq!(changes[0]["tool"], "version");
}

#[test]
fn a_rejected_package_move_leaves_config_and_lock_untouched_and_a_kill_at_the_prompt_too() {
    let s = Setup::new();
    let before = s.files();
    let mut t = s.pty(&["upgrade"]);
    t.exp_string("Pin this package?").unwrap();
    t.send_line("q").unwrap();
    t.exp_string("its package move was rejected").unwrap();
    t.exp_eof().unwrap();
    assert_eq!(s.files(), before);

    let temp = tempfile::tempdir().unwrap();
    let mut t = s.pty_env(&["upgrade"], &[("TMPDIR", temp.path())]);
    t.exp_string("Pin this package?").unwrap();
    let pid = t.process.child_pid;
    nix_kill(pid.as_raw());
    let _ = t.process.wait();
    assert_eq!(s.files(), before, "config and lock as they were");
    assert!(
        leftovers(s.p.path()).is_empty(),
        "{:?}",
        leftovers(s.p.path())
    );
    // And the next run starts cleanly.
    s.run(&["upgrade", "--dry-run"]).expect(0);
}

fn nix_kill(pid: i32) {
    let out = common::command("kill")
        .args(["-KILL", &pid.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success());
}

#[test]
fn a_deprecated_newest_release_is_not_proposed_but_to_naming_it_is_taken_and_flagged() {
    let s = Setup::new();
    let out = common::command("npm")
        .args(["deprecate", "tiny-mcp@1.1.0", "broken, stay on 1.0.0"])
        .arg("--userconfig")
        .arg(s.registry.service.dir.path().join("publish.npmrc"))
        .args(["--registry", &s.registry.url()])
        .env(
            "npm_config_cache",
            s.registry.service.dir.path().join("publish-cache"),
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let before = s.files();
    let none = s.run(&["upgrade", "--yes"]);
    none.expect(0);
    assert!(
        none.stderr()
            .contains("tiny-mcp 1.0.0 is the newest release past the cooldown; passed over: 1.1.0 (deprecated)"),
        "{}",
        none.stderr()
    );
    assert_eq!(s.files(), before);

    let not_listed = s.run(&["upgrade", "tiny", "--to", "9.9.9", "--yes"]);
    not_listed.expect(1);
    assert!(
        not_listed.stderr().contains("9.9.9 is not listed"),
        "{}",
        not_listed.stderr()
    );

    let taken = s.run(&["upgrade", "tiny", "--to", "1.1.0", "--yes"]);
    taken.expect(0);
    assert!(
        taken.stderr().contains(
            "tiny-mcp 1.1.0 is deprecated: broken, stay on 1.0.0; taken because --to names it"
        ),
        "{}",
        taken.stderr()
    );
    assert_eq!(version_of(&s.lock()), "1.1.0");
}

#[test]
fn a_server_that_is_no_registry_package_named_is_a_usage_error() {
    let p = Project::bare(json!({"fixture": common::fixture_entry(&[])}));
    p.run(&["update", "--yes"]).expect(0);
    let out = p.run(&["upgrade", "fixture"]);
    out.expect(2);
    assert!(
        out.stderr()
            .contains("fixture is not an npm or PyPI package"),
        "{}",
        out.stderr()
    );
}

#[test]
fn a_config_naming_no_version_is_left_as_it_is_and_only_the_lock_moves() {
    let s = Setup::with(&["-y", "tiny-mcp"]);
    let before = s.files();
    let yes = s.run(&["upgrade", "--yes"]);
    yes.expect(0);
    assert!(
        yes.stderr()
            .contains("the config names no version of its package"),
        "{}",
        yes.stderr()
    );
    assert_eq!(s.files()[0], before[0], "the config is byte-identical");
    assert_eq!(version_of(&s.lock()), "1.1.0");
    s.run(&["verify"]).expect(0);
}
