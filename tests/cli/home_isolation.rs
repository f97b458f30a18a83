//! No test reads or writes the user's real home: every command a test starts is built
//! by `common::command_in`, which points HOME, the XDG folders, npm's, uv's and pip's
//! settings and every client's own config variable into a temporary home. `.ci/run`
//! also runs the whole suite with HOME at an empty folder and fails if anything
//! appears in it.

use crate::common;

use std::path::{Path, PathBuf};

use common::{Project, bin, fixture_entry};
use serde_json::json;

/// What starts a process without the helper: a `Command` built directly, or a
/// program spawned in a terminal by name.
const UNISOLATED: &[&str] = &[
    "Command::new(",
    "Command::cargo_bin(",
    "assert_cmd::Command",
    "rexpect::spawn(",
    "spawn_bash(",
    "duct::cmd",
];

fn test_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            test_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_command_a_test_starts_is_built_by_the_helper_that_gives_it_a_temporary_home() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let helper = root.join("tests/common/mod.rs");
    let mut files = Vec::new();
    test_sources(&root.join("tests"), &mut files);
    test_sources(&root.join("benches"), &mut files);
    let this = root.join(file!());
    let mut found = Vec::new();
    for file in files.iter().filter(|f| **f != helper && **f != this) {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if UNISOLATED.iter().any(|p| line.contains(p)) {
                found.push(format!(
                    "{}:{}: {}",
                    file.strip_prefix(root).unwrap().display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(files.len() > 20, "the test sources were found: {files:?}");
    assert!(
        found.is_empty(),
        "start these with common::command / command_in / Project::command:\n{}",
        found.join("\n")
    );
    // The helper itself builds its one Command in command_in.
    let helper_text = std::fs::read_to_string(&helper).unwrap();
    assert_eq!(
        helper_text.matches("Command::new(").count(),
        1,
        "tests/common/mod.rs starts every process through command_in"
    );
}

/// The environment a command built by the helper starts with, as `env` prints it.
fn env_of(mut cmd: std::process::Command) -> impl Fn(&str) -> Option<String> {
    let out = cmd.output().unwrap();
    assert!(out.status.success());
    let env: Vec<(String, String)> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name: &str| {
        if name.ends_with('_') {
            // A prefix: the first variable that starts with it.
            return env
                .iter()
                .find(|(k, _)| k.starts_with(name))
                .map(|(k, _)| k.clone());
        }
        env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }
}

#[test]
fn a_helper_command_has_its_home_in_a_temporary_folder_and_no_variable_that_leads_elsewhere() {
    let home = tempfile::tempdir().unwrap();
    let cmd = common::command_in("/usr/bin/env", home.path());
    // Whatever this process inherited, the command is told to go without these.
    let removed: Vec<String> = cmd
        .get_envs()
        .filter(|(_, v)| v.is_none())
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    for moved in [
        "XDG_CONFIG_HOME",
        "XDG_CACHE_HOME",
        "CODEX_HOME",
        "CLINE_DIR",
    ] {
        assert!(removed.iter().any(|r| r == moved), "{moved} is not removed");
    }
    let value = env_of(cmd);
    assert_eq!(value("HOME").as_deref(), home.path().to_str());
    for moved in [
        "XDG_CONFIG_HOME",
        "XDG_CACHE_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "CODEX_HOME",
        "CLAUDE_CONFIG_DIR",
        "CLINE_DIR",
        "GEMINI_CLI_HOME",
        "GOOSE_PATH_ROOT",
        "CONTINUE_GLOBAL_DIR",
    ] {
        assert_eq!(value(moved), None, "{moved} would lead out of the home");
    }
    for prefix in ["npm_config_", "NPM_CONFIG_", "UV_", "PIP_"] {
        assert_eq!(value(prefix), None, "a {prefix} variable is inherited");
    }
    // The toolchain stays the real one, so cargo builds inside tests find it.
    assert!(value("CARGO_HOME").is_some());
    assert!(value("RUSTUP_HOME").is_some());

    // A project's commands get the project's own home, not the process's.
    let project = Project::empty();
    let value = env_of(project.command("/usr/bin/env"));
    assert_eq!(value("HOME").as_deref(), project.home().to_str());
    assert_eq!(
        value("XDG_CONFIG_HOME").map(PathBuf::from),
        Some(project.path().join(".user-config"))
    );
    assert_ne!(project.home(), home.path());
}

/// Every file under `dir` (recursively) with its length and modification time.
fn snapshot(dir: &Path) -> Vec<(PathBuf, u64, Option<std::time::SystemTime>)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            out.extend(snapshot(&path));
        } else {
            out.push((path, meta.len(), meta.modified().ok()));
        }
    }
    out.sort();
    out
}

#[test]
fn a_user_lock_written_through_the_helper_lands_in_the_temporary_home_not_the_real_one() {
    let real = common::real_home().map(|h| h.join(".config/mcp-lock"));
    let before = real.as_deref().map(snapshot);

    // A personal server in the temporary home's ~/.claude.json, pinned into a user
    // lock: the write mcp-lock makes under the user's config folder.
    let project = Project::new(json!({}));
    std::fs::write(
        project.home().join(".claude.json"),
        serde_json::to_string(&json!({"mcpServers": {"mine": fixture_entry(&[])}})).unwrap(),
    )
    .unwrap();
    let mut cmd = common::command_in(bin(), project.home());
    cmd.current_dir(project.path())
        .stdin(std::process::Stdio::null())
        .args(["--user", "claude-code", "update", "--yes"]);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let locks = snapshot(&project.home().join(".config/mcp-lock/locks"));
    assert_eq!(
        locks.len(),
        1,
        "one user lock in the temporary home: {locks:?}"
    );

    let after = real.as_deref().map(snapshot);
    assert_eq!(
        before, after,
        "nothing under the real ~/.config/mcp-lock moved"
    );
}
