//! Goose's user-level `config.yaml` (`--user goose`), read as block/goose reads it:
//! `env_keys` from the upper-cased variable, args and envs as written, `envs.PATH`
//! replaced by Goose's own, header references filled from the extension's own envs
//! and env_keys, extensions Goose cannot deserialize skipped, and GOOSE_PATH_ROOT.

use std::path::Path;

use super::common::{HttpServer, Project, Run};
use super::{VALUE, place, sample, user_lock};
use serde_json::Value;

/// A project, and a home holding `sample` (with `@URL@` set to `url`) at Goose's
/// default place under it.
fn goose_home(name: &str, url: &str) -> (Project, tempfile::TempDir) {
    let project = Project::empty();
    let home = tempfile::tempdir().unwrap();
    let text = sample(name, project.path()).replace("@URL@", url);
    place(home.path(), ".config/goose/config.yaml", &text);
    (project, home)
}

/// `mcp-lock --user goose ARGS` with HOME at `home`, XDG_CONFIG_HOME unset, and `env`.
fn run(project: &Project, home: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let home = home.display().to_string();
    let mut all = vec![("HOME", home.as_str()), ("XDG_CONFIG_HOME", "")];
    all.extend_from_slice(env);
    let mut argv = vec!["--user", "goose"];
    argv.extend_from_slice(args);
    project.run_env(&argv, &all)
}

fn servers_row(project: &Project, home: &Path, name: &str) -> Value {
    let run = run(
        project,
        home,
        &["servers", "--format", "json"],
        &[("SAMPLE_SECRET", VALUE)],
    );
    run.expect(0);
    super::row_named(&run.json(), name)
}

#[test]
fn goose_env_keys_take_the_upper_cased_variable_and_args_and_envs_reach_the_server_as_written() {
    let (project, home) = goose_home("goose-env-keys.config.yaml", "");
    let env = [("SAMPLE_SECRET", VALUE)];
    run(&project, home.path(), &["update", "--yes"], &env).expect(0);
    run(&project, home.path(), &["verify"], &env).expect(0);
    let lock = user_lock(home.path());
    // `env_keys: [sample_secret]` reached the server as `sample_secret`, from SAMPLE_SECRET.
    assert!(lock.contains("Token: q7z"), "{lock}");
    // `envs: {LITERAL: ${SAMPLE_SECRET}}` is passed as written.
    assert!(lock.contains("Token: ${SAMPLE_SECRET}"), "{lock}");
}

#[test]
fn a_goose_envs_path_is_not_given_to_the_server_as_goose_sets_path_itself() {
    let (project, home) = goose_home("goose-env-keys.config.yaml", "");
    let row = servers_row(&project, home.path(), "literal");
    let names: Vec<&str> = row["launch"]["env"]
        .as_array()
        .unwrap_or_else(|| panic!("{row}"))
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert_eq!(names, ["LITERAL"], "{row}");
}

#[test]
fn an_unset_goose_env_key_says_goose_would_read_its_keyring_and_what_to_export() {
    let (project, home) = goose_home("goose-env-keys.config.yaml", "");
    let update = run(&project, home.path(), &["update", "--yes", "fixture"], &[]);
    assert_ne!(update.code(), 0);
    let stderr = update.stderr();
    assert!(
        stderr.contains("keyring") && stderr.contains("export SAMPLE_SECRET"),
        "{stderr}"
    );
}

#[test]
fn a_goose_header_is_filled_from_the_extensions_envs_and_env_keys() {
    let key = "goose-header-key-3b9e";
    let server = HttpServer::fixture(&["--http", "--require-token", key]);
    let (project, home) = goose_home("goose-headers.config.yaml", &server.url("/mcp"));
    let env = [("API_KEY", key)];
    run(&project, home.path(), &["update", "--yes"], &env).expect(0);
    run(&project, home.path(), &["verify"], &env).expect(0);
    let lock = user_lock(home.path());
    assert!(lock.contains("headers = [\"Authorization\"]"), "{lock}");
    assert!(!lock.contains(key), "{lock}");
}

#[test]
fn goose_extensions_goose_cannot_read_are_skipped_saying_why_and_the_rest_pinned() {
    let (project, home) = goose_home("goose-malformed.config.yaml", "");
    let env = [("SAMPLE_SECRET", VALUE)];
    run(&project, home.path(), &["update", "--yes"], &env).expect(0);
    let lock = user_lock(home.path());
    assert!(lock.contains("name = \"fixture\""), "{lock}");
    for (name, why) in [
        ("numeric-env", "\"envs.PORT\" is not a string"),
        ("no-enabled", "\"enabled\""),
    ] {
        assert!(!lock.contains(name), "{lock}");
        let row = servers_row(&project, home.path(), name);
        let skipped = row["skipped"].as_str().unwrap_or_default();
        assert!(
            skipped.contains("Goose skips this extension") && skipped.contains(why),
            "{row}"
        );
    }
}

#[test]
fn goose_config_is_read_under_an_absolute_goose_path_root() {
    let project = Project::empty();
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let text = sample("goose.config.yaml", project.path());
    place(root.path(), "config/config.yaml", &text);
    let root_text = root.path().display().to_string();
    let env = [
        ("SAMPLE_SECRET", VALUE),
        ("GOOSE_PATH_ROOT", root_text.as_str()),
    ];
    run(&project, home.path(), &["update", "--yes"], &env).expect(0);
    let lock = user_lock(home.path());
    assert!(lock.contains("name = \"fixture\""), "{lock}");
}
