//! Symlinks a cloned repository ships cannot make mcp-lock write outside the project:
//! a file mcp-lock creates or replaces is never written through a link that is
//! dangling or leads out of the directory the file belongs in. Every run here has a
//! fake HOME inside a temporary directory, with the project at `HOME/src/repo`, so a
//! link `../../.bashrc` in the project names that HOME's `.bashrc`.

use crate::common;

use std::path::{Path, PathBuf};

use common::{Run, fixture_entry};
use serde_json::json;

/// A fake home holding `src/repo`, the project mcp-lock runs in.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        let home = Home {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(home.repo()).unwrap();
        home
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn repo(&self) -> PathBuf {
        self.path().join("src/repo")
    }

    /// Runs mcp-lock in the project, with HOME (and the config directory under it)
    /// inside this temporary directory.
    fn run(&self, args: &[&str]) -> Run {
        let started = std::time::Instant::now();
        let output = common::command(common::bin())
            .args(args)
            .current_dir(self.repo())
            .env("HOME", self.path())
            .env("XDG_CONFIG_HOME", self.path().join(".config"))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        Run {
            output,
            elapsed: started.elapsed(),
        }
    }

    fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.repo().join(rel), text).unwrap();
    }

    fn link(&self, rel: &str, target: &str) {
        std::os::unix::fs::symlink(target, self.repo().join(rel)).unwrap();
    }

    /// Every file under the repo and the home, with its bytes (links as their target).
    fn snapshot(&self) -> Vec<(PathBuf, String)> {
        let mut all = Vec::new();
        collect(self.path(), &mut all);
        all.sort();
        all
    }
}

fn collect(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_symlink() {
            let target = std::fs::read_link(&path).unwrap();
            out.push((path, format!("-> {}", target.display())));
        } else if meta.is_dir() {
            collect(&path, out);
        } else {
            out.push((path.clone(), std::fs::read_to_string(&path).unwrap()));
        }
    }
}

/// The run failed with exit 2 and a single line on stderr that names `link`.
#[track_caller]
fn refused_naming(run: &Run, link: &str) {
    run.expect(2);
    let stderr = run.stderr();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(lines[0].contains(link), "names {link}: {stderr}");
    assert!(lines[0].contains("symlink"), "says why: {stderr}");
}

/// A config whose text would be shell commands if it landed in a shell's startup file.
fn hostile_config(home: &Home) -> String {
    let pwned = home.path().join("pwned");
    serde_json::to_string_pretty(&json!({
        "z": format!("$(touch {})", pwned.display()),
        "mcpServers": { "fixture": fixture_entry(&[]) }
    }))
    .unwrap()
}

#[test]
fn a_backup_symlink_to_the_users_bashrc_is_refused_and_the_bashrc_is_untouched() {
    let home = Home::new();
    std::fs::write(home.path().join(".bashrc"), "export PS1='$ '\n").unwrap();
    home.write(".mcp.json", &hostile_config(&home));
    home.link(".mcp.json.mcp-lock.bak", "../../.bashrc");
    let before = home.snapshot();

    let run = home.run(&["wrap"]);
    refused_naming(&run, ".mcp.json.mcp-lock.bak");
    assert_eq!(home.snapshot(), before, "nothing was written");
}

#[test]
fn a_dangling_sidecar_symlink_is_refused_and_nothing_is_created() {
    let home = Home::new();
    let config = serde_json::to_string_pretty(&json!({
        "mcpServers": {
            "fixture": fixture_entry(&[]),
            "remote": { "type": "http", "url": "https://example.com/mcp" }
        }
    }))
    .unwrap();
    home.write(".mcp.json", &config);
    home.link(".mcp.json.mcp-lock.remote.json", "../../.profile");
    let before = home.snapshot();

    let run = home.run(&["wrap"]);
    refused_naming(&run, ".mcp.json.mcp-lock.remote.json");
    assert!(!home.path().join(".profile").exists());
    assert_eq!(home.snapshot(), before, "nothing was written");
}

#[test]
fn a_dangling_lock_symlink_to_the_users_bash_profile_is_refused_before_any_server_runs() {
    let home = Home::new();
    let pwned = home.path().join("pwned");
    let name = format!("$(touch {})", pwned.display());
    let config = json!({ "mcpServers": { name: fixture_entry(&[]) } });
    home.write(".mcp.json", &serde_json::to_string_pretty(&config).unwrap());
    home.link("mcp.lock", "../../.bash_profile");
    let before = home.snapshot();

    let run = home.run(&["update", "--yes"]);
    refused_naming(&run, "mcp.lock");
    assert!(!home.path().join(".bash_profile").exists());
    assert_eq!(home.snapshot(), before, "nothing was written");
}

#[test]
fn a_lock_symlink_to_an_existing_file_outside_the_project_is_refused_and_left_as_it_was() {
    let home = Home::new();
    std::fs::write(home.path().join(".bash_profile"), "export A=1\n").unwrap();
    let config = json!({ "mcpServers": { "fixture": fixture_entry(&[]) } });
    home.write(".mcp.json", &serde_json::to_string_pretty(&config).unwrap());
    home.link("mcp.lock", "../../.bash_profile");
    let before = home.snapshot();

    let run = home.run(&["update", "--yes"]);
    refused_naming(&run, "mcp.lock");
    assert_eq!(home.snapshot(), before, "nothing was written");
}

#[test]
fn a_config_in_a_directory_symlinked_out_of_the_project_gets_no_backup_there() {
    let home = Home::new();
    std::fs::create_dir_all(home.path().join(".config/Code/User")).unwrap();
    let config = json!({ "servers": { "fixture": fixture_entry(&[]) } });
    std::fs::write(
        home.path().join(".config/Code/User/mcp.json"),
        serde_json::to_string_pretty(&config).unwrap(),
    )
    .unwrap();
    home.link(".vscode", "../../.config/Code/User");
    let before = home.snapshot();

    let run = home.run(&["wrap"]);
    refused_naming(&run, ".vscode/mcp.json");
    assert_eq!(home.snapshot(), before, "nothing was written");
}

#[test]
fn an_audit_log_directory_symlinked_out_of_the_project_is_refused() {
    let home = Home::new();
    let config = json!({ "mcpServers": { "fixture": fixture_entry(&[]) } });
    home.write(".mcp.json", &serde_json::to_string_pretty(&config).unwrap());
    home.run(&["update", "--yes"]).expect(0);
    home.link(".mcp-lock", "../..");
    let before = home.snapshot();

    let run = home.run(&["guard", "fixture"]);
    refused_naming(&run, ".mcp-lock/audit.jsonl");
    assert!(!home.path().join("audit.jsonl").exists());
    assert_eq!(home.snapshot(), before, "nothing was written");
}

#[test]
fn a_symlinked_config_inside_the_project_is_still_wrapped_through_its_link() {
    let home = Home::new();
    std::fs::create_dir_all(home.repo().join("shared")).unwrap();
    let config = json!({ "mcpServers": { "fixture": fixture_entry(&[]) } });
    let text = serde_json::to_string_pretty(&config).unwrap();
    home.write("shared/mcp.json", &text);
    home.link(".mcp.json", "shared/mcp.json");

    home.run(&["wrap"]).expect(0);
    let link = home.repo().join(".mcp.json");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    let wrapped = std::fs::read_to_string(home.repo().join("shared/mcp.json")).unwrap();
    assert!(wrapped.contains("\"guard\""), "{wrapped}");
    home.run(&["unwrap"]).expect(0);
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(
        std::fs::read_to_string(home.repo().join("shared/mcp.json")).unwrap(),
        text
    );
}

#[test]
fn a_user_config_symlinked_into_dotfiles_under_home_is_wrapped_through_its_link() {
    let home = Home::new();
    std::fs::create_dir_all(home.path().join("dotfiles")).unwrap();
    std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
    let text = "{\n  \"mcpServers\": { \"mine\": { \"command\": \"srv-user\" } }\n}\n";
    std::fs::write(home.path().join("dotfiles/gemini.json"), text).unwrap();
    // Out of the file's own directory, but still in home: the user's own link.
    let link = home.path().join(".gemini/settings.json");
    std::os::unix::fs::symlink("../dotfiles/gemini.json", &link).unwrap();

    home.run(&["--user", "gemini-cli", "wrap"]).expect(0);
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    let wrapped = std::fs::read_to_string(home.path().join("dotfiles/gemini.json")).unwrap();
    assert!(wrapped.contains("\"guard\""), "{wrapped}");
    home.run(&["--user", "gemini-cli", "unwrap"]).expect(0);
    assert_eq!(
        std::fs::read_to_string(home.path().join("dotfiles/gemini.json")).unwrap(),
        text
    );
}
