//! The GitHub Action's update-pr mode as a scheduled job runs it, on a real git
//! repository on disk: `scripts/action-update.sh` writes the new lock and the step's
//! outputs, then [`commit_as_the_action_would`] does what peter-evans/create-pull-request
//! does with them (stage `add-paths`, commit to the branch only when something is
//! staged). Only the API calls that open the pull request are left out.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use super::Project;

/// Runs git in the project, failing the test when git fails; its stdout.
pub fn git(p: &Project, args: &[&str]) -> String {
    let out = p
        .command("git")
        .args([
            "-c",
            "user.name=mcp-lock tests",
            "-c",
            "user.email=tests@example.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The project as a repository on `main`, everything in it committed.
pub fn commit_all(p: &Project) {
    if !p.path().join(".git").exists() {
        git(p, &["init", "-q", "-b", "main"]);
    }
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "-m", "base"]);
}

/// One run of the update-pr step.
pub struct Step {
    pub status: i32,
    pub stderr: String,
    pub outputs: BTreeMap<String, String>,
    /// `$RUNNER_TEMP`, where the review is written: kept while the step is read.
    pub runner_temp: tempfile::TempDir,
}

impl Step {
    pub fn output(&self, name: &str) -> &str {
        self.outputs
            .get(name)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("no output {name}: {:?}\n{}", self.outputs, self.stderr))
    }

    pub fn body(&self) -> String {
        std::fs::read_to_string(self.output("body-path")).unwrap()
    }
}

/// Runs `scripts/action-update.sh` in the project as the action does, with `env`.
pub fn run_step(p: &Project, env: &[(&str, &str)]) -> Step {
    let runner_temp = tempfile::tempdir().unwrap();
    let outputs = runner_temp.path().join("github-output");
    std::fs::write(&outputs, "").unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/action-update.sh");
    let bin = super::bin();
    let mut all = vec![
        ("MCP_LOCK", bin.to_str().unwrap()),
        ("GITHUB_OUTPUT", outputs.to_str().unwrap()),
        ("RUNNER_TEMP", runner_temp.path().to_str().unwrap()),
    ];
    all.extend_from_slice(env);
    let out = p.command_env("bash", &all).arg(script).output().unwrap();
    let text = std::fs::read_to_string(&outputs).unwrap();
    Step {
        status: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        outputs: parse_outputs(&text),
        runner_temp,
    }
}

/// `$GITHUB_OUTPUT` as GitHub reads it: `name=value` lines and `name<<DELIMITER`
/// blocks.
pub fn parse_outputs(text: &str) -> BTreeMap<String, String> {
    let mut outputs = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delimiter)) = line.split_once("<<") {
            let mut value = Vec::new();
            for line in lines.by_ref() {
                if line == delimiter {
                    break;
                }
                value.push(line);
            }
            outputs.insert(name.to_string(), value.join("\n"));
        } else if let Some((name, value)) = line.split_once('=') {
            outputs.insert(name.to_string(), value.to_string());
        }
    }
    outputs
}

/// What peter-evans/create-pull-request does with the step's outputs: the branch is
/// made from the checkout, `add-paths` staged, and a commit titled as the pull
/// request made only when something is staged. The files of that commit, or `None`
/// when it made none. The work tree is left on the branch.
pub fn commit_as_the_action_would(p: &Project, step: &Step, branch: &str) -> Option<Vec<String>> {
    let paths = step.outputs.get("add-paths")?;
    git(p, &["checkout", "-q", "-B", branch]);
    for path in paths.lines() {
        git(p, &["add", "--", path]);
    }
    let staged = git(p, &["diff", "--cached", "--name-only"]);
    if staged.trim().is_empty() {
        return None;
    }
    let title = step.outputs.get("title").cloned().unwrap_or_default();
    git(p, &["commit", "-q", "-m", &title]);
    let files = git(p, &["show", "--name-only", "--format=", "HEAD"]);
    Some(files.lines().map(str::to_string).collect())
}
