//! The popular MCP servers people configure (issue 42's list), installed from npm and
//! PyPI by scripts/install-test-servers.sh into `popular/` of the test cache. Each is
//! configured in `.mcp.json` as its README says (the command from the cache, its
//! arguments, dummy keys), with no mcp-lock.toml: `update --yes` pins every one with
//! the counts a bare Python SDK client (mcp 2.3.0) lists, `verify` finds them all
//! converged, and a second `verify` at once raises no false alarm.
//!
//! filesystem, memory, everything and time are pinned the same way in
//! tests/real_servers.rs. The counts below are what the SDK listed, each server alone,
//! in a network namespace holding only loopback (the script's comment has the table).

use crate::common;

use std::path::{Path, PathBuf};

use common::Project;
use common::registries::Index;
use serde_json::{Value, json};

fn popular_dir() -> PathBuf {
    let dir = common::test_servers_dir().join("popular");
    assert!(
        dir.join("npm/node_modules/.bin").is_dir()
            && dir.join("venv/bin/mcp-server-fetch").exists()
            && dir.join("venv-serena/bin/serena").exists(),
        "the popular MCP servers are not installed in {}; run scripts/install-test-servers.sh (bash .ci/run does)",
        dir.display()
    );
    dir
}

/// A loopback port nothing listens on: a server that would reach out to the network
/// at start (an update check, telemetry, a browser download) is sent here through its
/// proxy setting, so a test never leaves the machine.
const REFUSING_PROXY: &str = "http://127.0.0.1:9";

/// One server as configured, and what the SDK listed: tools, prompts, templates.
struct Popular {
    name: &'static str,
    entry: Value,
    listed: (usize, usize, usize),
}

impl Popular {
    /// The counts as `update` prints them: "26 tools", "1 tool, 1 prompt".
    fn counts(&self) -> String {
        let (tools, prompts, templates) = self.listed;
        let mut parts = vec![plural(tools, "tool")];
        if prompts > 0 {
            parts.push(plural(prompts, "prompt"));
        }
        if templates > 0 {
            parts.push(plural(templates, "template"));
        }
        parts.join(", ")
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// An npm server started by its package's bin, as `npx -y PKG` would.
fn npm(dir: &Path, bin: &str, env: Value) -> Value {
    let command = dir.join("npm/node_modules/.bin").join(bin);
    json!({"command": command.display().to_string(), "env": env})
}

fn pypi(dir: &Path, venv: &str, script: &str, args: &[&str], env: Value) -> Value {
    let command = dir.join(venv).join("bin").join(script);
    json!({"command": command.display().to_string(), "args": args, "env": env})
}

fn server(name: &'static str, entry: Value, listed: (usize, usize, usize)) -> Popular {
    Popular {
        name,
        entry,
        listed,
    }
}

/// The servers that list without an account, the network or a fix of issue 42's
/// other parts. `project` holds the git repository and serena's project.
fn listable(project: &Path) -> Vec<Popular> {
    let dir = popular_dir();
    let repo = project.join("repo");
    let git = common::command("git")
        .args(["init", "--quiet"])
        .arg(&repo)
        .status()
        .unwrap();
    assert!(git.success());
    let repo = repo.display().to_string();
    let project = project.display().to_string();
    let no_env = json!({});
    vec![
        server(
            "sequential-thinking",
            npm(&dir, "mcp-server-sequential-thinking", no_env.clone()),
            (1, 0, 0),
        ),
        server(
            "fetch",
            pypi(&dir, "venv", "mcp-server-fetch", &[], no_env.clone()),
            (1, 1, 0),
        ),
        server(
            "git",
            pypi(
                &dir,
                "venv",
                "mcp-server-git",
                &["--repository", &repo],
                no_env.clone(),
            ),
            (12, 0, 0),
        ),
        server(
            "github",
            npm(
                &dir,
                "mcp-server-github",
                json!({"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_dummy"}),
            ),
            (26, 0, 0),
        ),
        server(
            "slack",
            npm(
                &dir,
                "mcp-server-slack",
                json!({"SLACK_BOT_TOKEN": "xoxb-dummy", "SLACK_TEAM_ID": "T00000000"}),
            ),
            (8, 0, 0),
        ),
        server(
            "brave-search",
            npm(
                &dir,
                "brave-search-mcp-server",
                json!({"BRAVE_API_KEY": "dummy"}),
            ),
            (8, 0, 0),
        ),
        server(
            "playwright",
            npm(&dir, "playwright-mcp", no_env.clone()),
            (25, 0, 0),
        ),
        server(
            "chrome-devtools",
            // Its documented switches for the update check and usage statistics.
            npm(
                &dir,
                "chrome-devtools-mcp",
                json!({
                    "CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS": "1",
                    "CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS": "1",
                }),
            ),
            (32, 0, 0),
        ),
        server(
            "context7",
            npm(&dir, "context7-mcp", no_env.clone()),
            (2, 0, 0),
        ),
        server(
            "notion",
            npm(
                &dir,
                "notion-mcp-server",
                json!({"NOTION_TOKEN": "ntn_dummy"}),
            ),
            (24, 0, 0),
        ),
        server(
            "tavily",
            npm(&dir, "tavily-mcp", json!({"TAVILY_API_KEY": "tvly-dummy"})),
            (5, 0, 0),
        ),
        server(
            "firecrawl",
            npm(
                &dir,
                "firecrawl-mcp",
                json!({"FIRECRAWL_API_KEY": "fc-dummy"}),
            ),
            (29, 0, 0),
        ),
        server(
            "exa",
            npm(&dir, "exa-mcp-server", json!({"EXA_API_KEY": "dummy"})),
            (2, 1, 0),
        ),
        server(
            "desktop-commander",
            // Its telemetry switch and feature-flag URL; the proxy stops the Chrome
            // download it starts in the background when no Chrome is installed.
            npm(
                &dir,
                "desktop-commander",
                json!({
                    "DESKTOP_COMMANDER_DISABLE_TELEMETRY": "1",
                    "DC_FLAG_URL": format!("{REFUSING_PROXY}/flags.json"),
                    "HTTPS_PROXY": REFUSING_PROXY,
                    "HTTP_PROXY": REFUSING_PROXY,
                }),
            ),
            (26, 0, 0),
        ),
        server(
            "duckduckgo",
            pypi(&dir, "venv", "duckduckgo-mcp-server", &[], no_env.clone()),
            (3, 0, 0),
        ),
        server(
            "aws-documentation",
            pypi(
                &dir,
                "venv-aws",
                "awslabs.aws-documentation-mcp-server",
                &[],
                json!({"FASTMCP_LOG_LEVEL": "ERROR", "AWS_DOCUMENTATION_PARTITION": "aws"}),
            ),
            (5, 0, 0),
        ),
        server(
            "serena",
            // Its README's Claude Code setup, without the dashboard (a browser); the
            // proxy stops its check for a newer release on PyPI.
            pypi(
                &dir,
                "venv-serena",
                "serena",
                &[
                    "start-mcp-server",
                    "--context",
                    "claude-code",
                    "--project",
                    &project,
                    "--enable-web-dashboard",
                    "false",
                    "--open-web-dashboard",
                    "false",
                ],
                json!({"HTTPS_PROXY": REFUSING_PROXY, "HTTP_PROXY": REFUSING_PROXY}),
            ),
            (2, 0, 0),
        ),
    ]
}

/// The servers that declare `resources` and answer `resources/templates/list` with
/// -32601: today the whole server is `incomplete`, though every tool was read.
fn templates_not_implemented() -> Vec<Popular> {
    let dir = popular_dir();
    let no_env = json!({});
    let mut postgres = npm(&dir, "mcp-server-postgres", no_env.clone());
    // Listing reads no table (resources are not pinned by default): a loopback port
    // that refuses stands for the database.
    postgres["args"] = json!(["postgresql://127.0.0.1:9/mydb"]);
    vec![
        server("postgres", postgres, (1, 0, 0)),
        server(
            "puppeteer",
            npm(&dir, "mcp-server-puppeteer", no_env.clone()),
            (7, 0, 0),
        ),
        server(
            "playwright-executeautomation",
            npm(&dir, "playwright-mcp-server", no_env.clone()),
            (33, 0, 0),
        ),
        server(
            "browsermcp",
            npm(&dir, "mcp-server-browsermcp", no_env.clone()),
            (12, 0, 0),
        ),
        server(
            "kubernetes",
            npm(&dir, "mcp-server-kubernetes", no_env),
            (23, 1, 0),
        ),
    ]
}

/// Generous deadlines for a loaded two-core machine; the servers start through
/// mcp-lock's own concurrency.
const PATIENT: [&str; 4] = ["--timeout", "600", "--request-timeout", "300"];

/// `update --yes` with no mcp-lock.toml pins every server with the SDK's counts; then
/// `verify` twice in a row finds every one converged with those tools.
fn pinned_and_verified_converged_twice(p: &Project, servers: &[Popular], env: &[(&str, &str)]) {
    assert!(!p.path().join("mcp-lock.toml").exists());
    let config: serde_json::Map<String, Value> = servers
        .iter()
        .map(|s| (s.name.to_string(), s.entry.clone()))
        .collect();
    p.set_servers(Value::Object(config));
    let update = p.run_env(&[&["update", "--yes"][..], &PATIENT].concat(), env);
    update.expect(0);
    for s in servers {
        let line = format!("Pinning {} [claude-code] ({})", s.name, s.counts());
        assert!(
            update.stderr().contains(&line),
            "{line}\n{}",
            update.stderr()
        );
    }
    let mut expected: Vec<(String, &str, u64)> = servers
        .iter()
        .map(|s| (s.name.to_string(), "converged", s.listed.0 as u64))
        .collect();
    expected.sort();
    for round in ["first", "second"] {
        let run = p.run_env(
            &[&["verify", "--format", "json"][..], &PATIENT].concat(),
            env,
        );
        let doc = run.expect(0).json();
        let verdicts: Vec<(String, &str, u64)> = doc["servers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["name"].as_str().unwrap().to_string(),
                    s["verdict"].as_str().unwrap(),
                    s["tools"].as_u64().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(verdicts, expected, "{round} verify: {doc:#}");
    }
}

#[test]
fn popular_servers_are_pinned_with_the_sdk_counts_and_verified_converged_twice_without_a_policy() {
    let p = Project::new(json!({}));
    let servers = listable(p.path());
    pinned_and_verified_converged_twice(&p, &servers, &[]);
}

#[test]
fn servers_answering_resource_templates_with_method_not_found_are_pinned_and_verified_converged() {
    let p = Project::new(json!({}));
    pinned_and_verified_converged_twice(&p, &templates_not_implemented(), &[]);
}

/// The four servers tests/real_servers.rs pins, as it configures them.
fn four_real_servers(project: &Path) -> Vec<(&'static str, Value)> {
    let dir = common::test_servers_dir();
    let entry = |package: &str, extra: &[&str]| {
        let main = dir
            .join("npm/node_modules/@modelcontextprotocol")
            .join(package)
            .join("dist/index.js");
        let mut args = vec![main.display().to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        json!({"command": "node", "args": args})
    };
    let mut memory = entry("server-memory", &[]);
    memory["env"] = json!({"MEMORY_FILE_PATH": project.join("memory.jsonl").display().to_string()});
    vec![
        ("everything", entry("server-everything", &["stdio"])),
        (
            "filesystem",
            entry("server-filesystem", &[&project.display().to_string()]),
        ),
        ("memory", memory),
        (
            "time",
            json!({"command": dir.join("venv/bin/mcp-server-time").display().to_string(), "args": ["--local-timezone", "UTC"]}),
        ),
    ]
}

/// Precision of screening (issue 43): every definition the real servers list, each
/// server screened with the others' tool names, raises no high-severity finding, so
/// `scan` passes and an unattended first pin pins them all. (Their medium and low
/// findings, each looked at, are in benches/screening.py's output.)
#[test]
fn the_real_servers_definitions_raise_no_high_screening_finding() {
    let p = Project::new(json!({}));
    let mut config: serde_json::Map<String, Value> = listable(p.path())
        .into_iter()
        .chain(templates_not_implemented())
        .map(|s| (s.name.to_string(), s.entry))
        .collect();
    config.extend(
        four_real_servers(p.path())
            .into_iter()
            .map(|(name, entry)| (name.to_string(), entry)),
    );
    let servers = config.len();
    p.set_servers(Value::Object(config));
    let run = p.run(&[&["scan", "--format", "json"][..], &PATIENT].concat());
    let doc = run.json();
    let listed: Vec<&Value> = doc["servers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["listed"] == true)
        .collect();
    assert_eq!(listed.len(), servers, "{doc:#}");
    let screened: u64 = listed.iter().map(|s| s["screened"].as_u64().unwrap()).sum();
    assert!(screened > 300, "{screened} definitions screened");
    let high: Vec<&Value> = listed
        .iter()
        .flat_map(|s| s["items"].as_array().unwrap())
        .flat_map(|i| i["findings"].as_array().unwrap())
        .filter(|f| f["severity"] == "high")
        .collect();
    assert!(high.is_empty(), "high findings: {high:#?}");
    assert_eq!(doc["findings"]["high"], 0);
    run.expect(0);
}

/// A pypiserver on loopback holding the AWS documentation server's and serena's
/// closures, as downloaded by the install script, and the environment that sends uvx
/// (and mcp-lock's own resolution) there with caches of the test's own.
fn pypi_index_of_the_closures(p: &Project) -> (Index, Vec<(String, String)>) {
    let wheels = popular_dir().join("wheels");
    let index = Index::start();
    for file in std::fs::read_dir(&wheels).unwrap() {
        let file = file.unwrap().path();
        std::fs::copy(&file, index.pkgs().join(file.file_name().unwrap())).unwrap();
    }
    let env = index.client_env(p.home());
    (index, env)
}

fn pairs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

#[test]
fn aws_documentation_server_run_by_uvx_at_latest_is_pinned_exactly_and_verified_converged() {
    let p = Project::new(json!({}));
    let (_index, env) = pypi_index_of_the_closures(&p);
    // As the AWS Labs README says: `uvx PKG@latest`.
    let aws = server(
        "aws-documentation",
        json!({
            "command": "uvx",
            "args": ["awslabs.aws-documentation-mcp-server@latest"],
            "env": {"FASTMCP_LOG_LEVEL": "ERROR", "AWS_DOCUMENTATION_PARTITION": "aws"},
        }),
        (5, 0, 0),
    );
    pinned_and_verified_converged_twice(&p, &[aws], &pairs(&env));
    let lock = p.lock_text().unwrap();
    assert!(
        lock.contains("kind = \"pypi\"")
            && lock.contains("version = \"1.2.3\"")
            && lock.contains("awslabs_aws_documentation_mcp_server-1.2.3-py3-none-any.whl"),
        "the newest release on the index is pinned exactly: {lock}"
    );
}

#[test]
fn serena_whose_closure_needs_a_source_distribution_is_pinned_and_verify_says_why_its_closure_is_not()
 {
    let p = Project::new(json!({}));
    let (_index, env) = pypi_index_of_the_closures(&p);
    let project = p.path().display().to_string();
    let serena = json!({
        "command": "uvx",
        "args": [
            "--from", "serena-agent", "serena", "start-mcp-server",
            "--context", "claude-code", "--project", project,
            "--enable-web-dashboard", "false", "--open-web-dashboard", "false",
        ],
        // Its check for a newer release goes to a refusing port; uv reaches the index.
        "env": {"HTTPS_PROXY": REFUSING_PROXY, "HTTP_PROXY": REFUSING_PROXY, "NO_PROXY": "127.0.0.1"},
    });
    p.set_servers(json!({ "serena": serena }));
    let env = pairs(&env);
    let update = p.run_env(&[&["update", "--yes"][..], &PATIENT].concat(), &env);
    update.expect(0);
    assert!(
        update
            .stderr()
            .contains("Pinning serena [claude-code] (2 tools)"),
        "{}",
        update.stderr()
    );
    // proxy-tools (via pywebview) is published only as a source distribution whose
    // PKG-INFO is Metadata-Version 1.1: its dependencies cannot be read without a
    // build. verify names that cause and advises nothing that cannot succeed.
    for round in ["first", "second"] {
        let verify = p.run_env(&[&["verify"][..], &PATIENT].concat(), &env);
        // An unpinned closure is a warning by default: the project verifies.
        verify.expect(0);
        let out = format!("{}{}", verify.stdout(), verify.stderr());
        assert!(out.contains("proxy-tools"), "{round} verify: {out}");
        assert!(out.contains("closure-unpinned"), "{round} verify: {out}");
        assert!(
            !out.contains("`mcp-lock update` pins it"),
            "{round} verify: {out}"
        );
    }
}
