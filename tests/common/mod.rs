//! A small test environment: a temp project with a client config, the real binary,
//! and the fixture server built from examples/.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

pub mod pull_request;
pub mod registries;

/// The mcp-lock binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mcp-lock"))
}

/// Variables that send a program to the user's own configuration, caches or a
/// client's files somewhere other than under `HOME`. Every command a test starts goes
/// without them (a test that needs one sets it on the command), so all of that
/// follows `HOME` into the test's temporary home.
const MOVES_USER_STATE: &[&str] = &[
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "CLINE_DIR",
    "CLINE_DATA_DIR",
    "CLINE_MCP_SETTINGS_PATH",
    "GEMINI_CLI_HOME",
    "CONTINUE_GLOBAL_DIR",
    "GOOSE_PATH_ROOT",
    "PYTHONUSERBASE",
];

/// Prefixes of the npm, uv and pip settings (cache, config file, tool folders) a
/// developer's shell may carry; the package tests set the ones they use.
const PACKAGE_TOOL_SETTINGS: &[&str] = &["npm_config_", "NPM_CONFIG_", "UV_", "PIP_"];

/// The user's real home, as this test process was given it: only to name the
/// toolchain's folders and to check that no test writes under it.
pub fn real_home() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}

/// A command for `program` whose home is `home`: `HOME` is `home`, and the config,
/// cache, data and state folders, npm's, uv's and pip's settings and caches, and every
/// client's own config variable follow it there. Cargo and rustup keep the real
/// toolchain. Every command a test starts is built here (a test checks that).
pub fn command_in(program: impl AsRef<std::ffi::OsStr>, home: &Path) -> Command {
    std::fs::create_dir_all(home).unwrap();
    let mut cmd = Command::new(program);
    for name in MOVES_USER_STATE {
        cmd.env_remove(name);
    }
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if PACKAGE_TOOL_SETTINGS.iter().any(|p| name.starts_with(p)) {
            cmd.env_remove(&*name);
        }
    }
    if let Some(real) = real_home() {
        for (name, under) in [("CARGO_HOME", ".cargo"), ("RUSTUP_HOME", ".rustup")] {
            if std::env::var_os(name).is_none() {
                cmd.env(name, real.join(under));
            }
        }
    }
    cmd.env("HOME", home);
    cmd
}

/// [`command_in`] with this test process's own temporary home, for a command that
/// belongs to no [`Project`].
pub fn command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    command_in(program, process_home())
}

/// One temporary home per test process, under cargo's target/tmp, named by the
/// process id; homes of processes that have ended are removed when one is made.
fn process_home() -> &'static Path {
    static HOME: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let homes = Path::new(env!("CARGO_TARGET_TMPDIR")).join("test-homes");
        if let Ok(entries) = std::fs::read_dir(&homes) {
            for entry in entries.flatten() {
                let pid = entry.file_name().to_string_lossy().into_owned();
                if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(&pid).exists() {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let home = homes.join(std::process::id().to_string());
        let _ = std::fs::remove_dir_all(&home);
        std::fs::create_dir_all(&home).unwrap();
        home
    })
}

/// The fixture server (examples/fixture_server/). `cargo test` builds examples, but
/// not when a single test target is selected, so make sure once per test binary.
pub fn fixture() -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut command = command(cargo);
        command
            .args(["build", "--quiet", "--example", "fixture_server"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        // Set for this test by cargo, not in a shell: ring's build script reruns when
        // they change, and everything above ring would be rebuilt on every run.
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if name.starts_with("CARGO_PKG_") || name.starts_with("CARGO_MANIFEST_") {
                command.env_remove(&*name);
            }
        }
        let status = command.status().expect("cargo runs");
        assert!(status.success(), "building the fixture server failed");
    });
    let path = bin()
        .parent()
        .unwrap()
        .join("examples")
        .join("fixture_server");
    assert!(
        path.exists(),
        "fixture server not built at {}",
        path.display()
    );
    path
}

/// Where scripts/install-test-servers.sh puts the real servers and the SARIF schema.
pub fn test_servers_dir() -> PathBuf {
    std::env::var_os("MCP_LOCK_TEST_SERVERS")
        .map(PathBuf::from)
        .or_else(|| {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
            Some(cache.join("mcp-lock/test-servers"))
        })
        .expect("HOME or MCP_LOCK_TEST_SERVERS is set")
}

/// A unique tag to find a test's processes in the process table.
pub fn unique_tag(name: &str) -> String {
    format!("mcplock-test-{name}-{}-{}", std::process::id(), nanos())
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// Processes whose command line contains `needle`.
pub fn processes_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .chars()
            .all(|c| c.is_ascii_digit())
        {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(needle) {
                found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// Waits (up to 10 s) until a process whose command line contains `tag` is running.
#[track_caller]
pub fn wait_until_running(tag: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while processes_with(tag).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "no process tagged {tag} started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Asserts that no process whose command line contains `tag` is left, allowing a
/// killed one up to 3 s to be reaped (SIGKILL is delivered, not awaited).
#[track_caller]
pub fn assert_none_left(tag: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    loop {
        let left = processes_with(tag);
        if left.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running: {left:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A project directory with a `.mcp.json`, and a temporary home of its own beside it
/// for every command run in it.
pub struct Project {
    pub dir: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Project {
    pub fn new(servers: Value) -> Self {
        let project = Project::empty();
        project.set_servers(servers);
        project
    }

    /// A project with no config at all.
    pub fn empty() -> Self {
        Project::at(tempfile::tempdir().unwrap())
    }

    /// The project in `dir`, as it is.
    pub fn at(dir: tempfile::TempDir) -> Self {
        Project {
            dir,
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// The home directory every command run in this project gets, unless the test
    /// names a `HOME` of its own.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// A command for `program` in this project, with this project's home and its
    /// user-config folder (`.user-config` in the project), no terminal.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = command_in(program, self.home());
        cmd.current_dir(self.path())
            .env("XDG_CONFIG_HOME", self.path().join(".user-config"))
            .stdin(std::process::Stdio::null());
        cmd
    }

    /// A project whose servers are pinned under the `bare` client profile (no
    /// capabilities, the newest protocol first), for tests of protocol eras and
    /// transports rather than of what a host declares.
    pub fn bare(servers: Value) -> Self {
        let project = Project::new(servers);
        std::fs::write(
            project.path().join("mcp-lock.toml"),
            "[profiles]\npin = [\"bare\"]\n",
        )
        .unwrap();
        project
    }

    pub fn set_servers(&self, servers: Value) {
        let config = json!({ "mcpServers": servers });
        std::fs::write(
            self.path().join(".mcp.json"),
            serde_json::to_string_pretty(&config).unwrap(),
        )
        .unwrap();
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn lock_text(&self) -> Option<String> {
        std::fs::read_to_string(self.path().join("mcp.lock")).ok()
    }

    /// Runs mcp-lock in the project with no terminal and returns its output.
    pub fn run(&self, args: &[&str]) -> Run {
        self.run_env(args, &[])
    }

    /// Starts mcp-lock in the project with no terminal, stderr piped, without waiting.
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        self.command(bin())
            .args(args)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Runs `mcp-lock guard GUARD_ARGS...` as a host would and expects it to refuse
    /// the launch, as verify fails it: exit 1, one line on stderr (returned), nothing
    /// on stdout, and a `launch_refused` entry in the audit log.
    pub fn guard_refuses(&self, guard_args: &[&str], env: &[(&str, &str)]) -> String {
        let args: Vec<&str> = std::iter::once("guard")
            .chain(guard_args.iter().copied())
            .collect();
        let run = self.run_env(&args, env);
        let stderr = run.stderr();
        run.expect(1);
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(
            stderr.starts_with("error: mcp-lock guard: refusing to start: "),
            "{stderr}"
        );
        assert!(
            run.output.stdout.is_empty(),
            "nothing was started, nothing answered"
        );
        let audit = std::fs::read_to_string(self.path().join(".mcp-lock/audit.jsonl")).unwrap();
        assert!(
            audit
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .any(|e| e["event"] == "launch_refused"),
            "{audit}"
        );
        stderr
    }

    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut cmd = self.command_env(bin(), env);
        cmd.args(args);
        let started = std::time::Instant::now();
        let output = cmd.output().unwrap();
        Run {
            output,
            elapsed: started.elapsed(),
        }
    }
}

impl Project {
    /// [`Project::command`] with `env` set on it. A test that names `HOME` (or
    /// `XDG_CONFIG_HOME`) gets that home, with the rest of the user's folders
    /// following it rather than this project's.
    pub fn command_env(
        &self,
        program: impl AsRef<std::ffi::OsStr>,
        env: &[(&str, &str)],
    ) -> Command {
        let mut cmd = self.command(program);
        if env
            .iter()
            .any(|(k, _)| *k == "HOME" || *k == "XDG_CONFIG_HOME")
        {
            cmd.env_remove("XDG_CONFIG_HOME");
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    }
}

/// A fixture server entry for `.mcp.json`.
pub fn fixture_entry(args: &[&str]) -> Value {
    json!({"command": fixture().display().to_string(), "args": args})
}

pub struct Run {
    pub output: Output,
    pub elapsed: std::time::Duration,
}

impl Run {
    pub fn code(&self) -> i32 {
        self.output.status.code().unwrap_or(-1)
    }
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout())
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout()))
    }
    #[track_caller]
    pub fn expect(&self, code: i32) -> &Self {
        assert_eq!(
            self.code(),
            code,
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout(),
            self.stderr()
        );
        self
    }
}

/// A server listening on loopback for one test, ended by PID when dropped.
pub struct HttpServer {
    child: std::process::Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl HttpServer {
    /// Starts a program that writes its port to the file named by $MCP_LOCK_PORT_FILE
    /// (and by the option `port_file_flag`, if given), and waits for it.
    pub fn start(
        program: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        port_file_flag: Option<&str>,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port_file = dir.path().join("port");
        let mut command = command(program);
        command
            .args(args)
            .envs(env.iter().copied())
            .env("MCP_LOCK_PORT_FILE", &port_file)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if let Some(flag) = port_file_flag {
            command.arg(flag).arg(&port_file);
        }
        let mut child = command.spawn().expect("the server starts");
        let started = std::time::Instant::now();
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file)
                && let Ok(port) = text.trim().parse()
            {
                break port;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("{} exited before listening: {status}", program.display());
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(30),
                "{} did not listen within 30 s",
                program.display()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        HttpServer { child, port, dir }
    }

    /// The fixture server over HTTP with these arguments.
    pub fn fixture(args: &[&str]) -> Self {
        HttpServer::start(&fixture(), args, &[], Some("--port-file"))
    }

    /// A file in this server's own temporary folder.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An MCP client over a child's stdin/stdout, for driving `mcp-lock guard` (or a
/// server directly) message by message. Stderr is collected.
pub struct McpPipe {
    pub child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<Value>,
    /// Messages that arrived while waiting for something else.
    pub held: std::collections::VecDeque<Value>,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    next_id: i64,
}

impl McpPipe {
    pub fn spawn(program: &Path, args: &[&str], dir: &Path, env: &[(&str, &str)]) -> Self {
        use std::io::BufRead;
        let mut child = command(program)
            .args(args)
            .current_dir(dir)
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON from the server ({e}): {line}"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        let stdin = child.stdin.take();
        McpPipe {
            child,
            stdin,
            lines,
            held: Default::default(),
            stderr,
            next_id: 1,
        }
    }

    /// The mcp-lock binary (`guard ...`) in a project directory.
    pub fn guard(project: &Project, args: &[&str]) -> Self {
        let mut all = vec!["guard"];
        all.extend_from_slice(args);
        McpPipe::spawn(&bin(), &all, project.path(), &[])
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits (up to 10 s) until stderr contains `needle`; false if it never does.
    pub fn stderr_shows(&self, needle: &str) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if self.stderr().contains(needle) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        false
    }

    pub fn send(&mut self, message: &Value) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().expect("stdin still open");
        writeln!(stdin, "{message}").expect("the peer reads");
        stdin.flush().unwrap();
    }

    /// Sends raw text as one line.
    pub fn send_raw(&mut self, line: &str) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().expect("stdin still open");
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// Writes `line` over and over without blocking, until the peer has taken nothing
    /// for half a second (every pipe and buffer on the way is full). Returns how many
    /// whole lines went in; the last may be cut, which no longer matters to a peer
    /// that stopped reading.
    pub fn send_until_full(&mut self, line: &str) -> usize {
        use std::os::fd::AsRawFd;
        let fd = self.stdin.as_ref().expect("stdin still open").as_raw_fd();
        // SAFETY: fcntl and write on a descriptor this value owns.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        let data = format!("{line}\n").into_bytes();
        let (mut at, mut whole, mut stalled) = (0, 0, 0);
        while stalled < 50 {
            // SAFETY: writes from a live buffer of the given length.
            let n = unsafe { libc::write(fd, data[at..].as_ptr().cast(), data.len() - at) };
            if n > 0 {
                stalled = 0;
                at += n as usize;
                if at == data.len() {
                    at = 0;
                    whole += 1;
                }
            } else {
                stalled += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        whole
    }

    /// Closes the client's side.
    pub fn close(&mut self) {
        self.stdin.take();
    }

    /// The next message, from those held first.
    pub fn next(&mut self, timeout: std::time::Duration) -> Option<Value> {
        if let Some(v) = self.held.pop_front() {
            return Some(v);
        }
        self.lines.recv_timeout(timeout).ok()
    }

    /// Waits for the message that answers `id`, holding everything else.
    #[track_caller]
    pub fn answer(&mut self, id: i64) -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        if let Some(i) = self
            .held
            .iter()
            .position(|m| m["id"] == id && m.get("method").is_none())
        {
            return self.held.remove(i).unwrap();
        }
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let message = self.lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!("no answer to request {id}; stderr:\n{}", self.stderr())
            });
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
            self.held.push_back(message);
        }
    }

    /// Waits for a notification with this method (held ones first).
    #[track_caller]
    pub fn notification(&mut self, method: &str) -> Value {
        if let Some(i) = self.held.iter().position(|m| m["method"] == method) {
            return self.held.remove(i).unwrap();
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let message = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no {method} notification; stderr:\n{}", self.stderr()));
            if message["method"] == method && message.get("id").is_none() {
                return message;
            }
            self.held.push_back(message);
        }
    }

    /// Sends a request and waits for its answer.
    #[track_caller]
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.answer(id)
    }

    /// initialize + notifications/initialized, 2025-11-25.
    #[track_caller]
    pub fn initialize(&mut self) -> Value {
        let answer = self.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test-agent", "version": "1"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        answer
    }

    /// Every tool name of a complete listing, following cursors.
    #[track_caller]
    pub fn list_tools(&mut self) -> Vec<Value> {
        let mut tools = Vec::new();
        let mut params = json!({});
        loop {
            let answer = self.request("tools/list", params);
            let result = &answer["result"];
            assert!(result.is_object(), "tools/list failed: {answer}");
            tools.extend(result["tools"].as_array().unwrap().iter().cloned());
            match result.get("nextCursor") {
                Some(Value::String(c)) => params = json!({"cursor": c}),
                _ => return tools,
            }
        }
    }

    /// A tools/call and its answer.
    #[track_caller]
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// Waits for the process to exit, up to `limit`.
    pub fn wait_exit(&mut self, limit: std::time::Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

impl Drop for McpPipe {
    fn drop(&mut self) {
        // End only what this test started, by its PID.
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// PIDs of running processes whose command line contains `needle`.
pub fn pids_with(needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        // A zombie has an empty command line and is gone for our purposes.
        if String::from_utf8_lossy(&cmdline)
            .replace('\0', " ")
            .contains(needle)
        {
            pids.push(pid);
        }
    }
    pids
}

/// PIDs of running processes whose environment contains `needle` (NAME=value).
pub fn pids_with_env(needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ
            .split(|&b| b == 0)
            .any(|var| var == needle.as_bytes())
        {
            pids.push(pid);
        }
    }
    pids
}

/// PIDs of running processes whose program (first argument) has this file name and
/// whose command line contains `needle`.
pub fn pids_of(program: &str, needle: &str) -> Vec<u32> {
    pids_with(needle)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
                let first = cmdline.split(|&b| b == 0).next().unwrap_or_default();
                Path::new(&*String::from_utf8_lossy(first))
                    .file_name()
                    .is_some_and(|n| n == program)
            })
        })
        .collect()
}

impl McpPipe {
    /// Every item of a complete prompts/list, resources/templates/list or
    /// resources/list (`member`: prompts, resourceTemplates, resources), following
    /// cursors.
    #[track_caller]
    pub fn list_items(&mut self, method: &str, member: &str) -> Vec<Value> {
        let mut items = Vec::new();
        let mut params = json!({});
        loop {
            let answer = self.request(method, params);
            let result = &answer["result"];
            assert!(result.is_object(), "{method} failed: {answer}");
            items.extend(result[member].as_array().unwrap().iter().cloned());
            match result.get("nextCursor") {
                Some(Value::String(c)) => params = json!({"cursor": c}),
                _ => return items,
            }
        }
    }
}

/// Runs `command` with `input` on its standard input (written from a thread of its
/// own, so a child that answers before it has read everything cannot block), its
/// standard output and error captured.
pub fn output_with_stdin(command: &mut Command, input: &[u8]) -> Output {
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starts");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        // A child that exits without reading it all closes the pipe: not our error.
        let _ = stdin.write_all(&input);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    output
}

/// A command's standard output, once it is known to have succeeded (its whole output
/// shown when it did not).
#[track_caller]
pub fn succeeded(what: &str, output: &Output) -> String {
    assert!(
        output.status.success(),
        "{what}: {}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A verify report with what differs between two runs taken out: the time taken.
pub fn without_timing(mut report: Value) -> Value {
    for server in report["servers"].as_array_mut().unwrap() {
        let server = server.as_object_mut().unwrap();
        server.remove("elapsed_ms");
        if let Some(package) = server.get_mut("package").and_then(Value::as_object_mut) {
            package.remove("elapsed_ms");
        }
    }
    report
}
