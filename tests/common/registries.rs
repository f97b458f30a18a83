//! Package registries on loopback for the tests that publish to them: a verdaccio npm
//! registry with no uplink and a pypiserver index (both installed by
//! scripts/install-test-servers.sh). Nothing leaves the machine.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub fn servers_dir() -> PathBuf {
    let dir = super::test_servers_dir();
    assert!(
        dir.join("verdaccio/node_modules/.bin/verdaccio").exists()
            && dir.join("venv/bin/pypi-server").exists()
            && dir.join("venv/bin/uvx").exists(),
        "verdaccio, pypiserver and uv are not installed in {}; run scripts/install-test-servers.sh (bash .ci/run does)",
        dir.display()
    );
    dir
}

pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/packages")
        .join(name)
}

/// A port nothing listens on right now, for a server to take.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A plain HTTP/1.0 GET on loopback: status and body.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((status, body))
}

/// A child process ended by PID when dropped.
pub struct Service {
    pub child: Child,
    pub port: u16,
    pub dir: tempfile::TempDir,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Service {
    pub fn wait_for(&mut self, path: &str, what: &str) {
        let started = Instant::now();
        loop {
            if let Some((200, _)) = http_get(self.port, path) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                let log = std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default();
                panic!("{what} exited before listening: {status}\n{log}");
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{what} did not listen within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// verdaccio on 127.0.0.1 with no uplink, a temporary storage and one user. Its
/// request bodies may reach 100 MB (10 MB by default): a platform package of mcp-lock's
/// debug build is published to it.
pub struct Registry {
    pub service: Service,
    pub token: String,
}

impl Registry {
    pub fn start() -> Registry {
        let servers = servers_dir();
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let config = format!(
            "storage: {storage}\n\
             auth:\n  htpasswd:\n    file: {htpasswd}\n    max_users: 10\n    algorithm: sha1\n\
             uplinks: {{}}\n\
             packages:\n  '**':\n    access: $all\n    publish: $authenticated\n\
             log: {{ type: stdout, format: pretty, level: warn }}\n\
             max_body_size: 100mb\n",
            storage = dir.path().join("storage").display(),
            htpasswd = dir.path().join("htpasswd").display(),
        );
        std::fs::write(dir.path().join("config.yaml"), config).unwrap();
        let log = std::fs::File::create(dir.path().join("log")).unwrap();
        let child = super::command(servers.join("verdaccio/node_modules/.bin/verdaccio"))
            .arg("--config")
            .arg(dir.path().join("config.yaml"))
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("verdaccio starts");
        let mut service = Service { child, port, dir };
        service.wait_for("/-/ping", "verdaccio");
        let out = super::command("node")
            .arg(data("npm-publish.mjs"))
            .args([
                "adduser",
                &format!("http://127.0.0.1:{port}/"),
                "tester",
                "secret-password",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "adduser: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
        let registry = Registry { service, token };
        // Publishing carries the token; running does not (verdaccio checks a password
        // on every authenticated request, and a launcher needs none).
        std::fs::write(
            registry.service.dir.path().join("publish.npmrc"),
            format!(
                "registry={}\n//127.0.0.1:{port}/:_authToken={}\n",
                registry.url(),
                registry.token
            ),
        )
        .unwrap();
        std::fs::write(
            registry.service.dir.path().join("run.npmrc"),
            format!("registry={}\n", registry.url()),
        )
        .unwrap();
        registry
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.service.port)
    }

    /// `npm publish` of a package directory, as its author would.
    pub fn publish_dir(&self, dir: &Path) {
        let out = super::command("npm")
            .arg("publish")
            .arg(dir)
            .arg("--userconfig")
            .arg(self.service.dir.path().join("publish.npmrc"))
            .args(["--registry", &self.url()])
            .env(
                "npm_config_cache",
                self.service.dir.path().join("publish-cache"),
            )
            .env("npm_config_update_notifier", "false")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "npm publish: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Publishes many tarballs in one process (the PUT `npm publish` sends).
    pub fn publish_tarballs(&self, files: &[PathBuf]) {
        let out = super::command("node")
            .arg(data("npm-publish.mjs"))
            .args(["publish", &self.url(), &self.token])
            .args(files)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "publish: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// tiny-mcp at `version`, published.
    pub fn publish_tiny(&self, version: &str) {
        self.publish_package("tiny-mcp", version, |server| server);
    }

    /// A package of tests/data/packages published at `version` (its package.json says
    /// 1.0.0), its `server.js` (tiny-mcp's, when the package has none of its own: the
    /// server is the same with or without a dependency) passed through `edit` first.
    pub fn publish_package(&self, package: &str, version: &str, edit: impl Fn(String) -> String) {
        let dir = tempfile::tempdir().unwrap();
        for entry in std::fs::read_dir(data(package)).unwrap() {
            let from = entry.unwrap().path();
            std::fs::copy(&from, dir.path().join(from.file_name().unwrap())).unwrap();
        }
        let server = dir.path().join("server.js");
        let manifest = dir.path().join("package.json");
        let text = std::fs::read_to_string(&manifest).unwrap();
        if !server.exists() && text.contains("\"server.js\"") {
            std::fs::copy(data("tiny-mcp/server.js"), &server).unwrap();
        }
        if server.exists() {
            let edited = edit(std::fs::read_to_string(&server).unwrap());
            std::fs::write(&server, edited).unwrap();
        }
        let text = text.replacen(
            "\"version\": \"1.0.0\"",
            &format!("\"version\": \"{version}\""),
            1,
        );
        std::fs::write(&manifest, text).unwrap();
        self.publish_dir(dir.path());
    }

    /// `@modelcontextprotocol/server-memory` 2026.8.31 and every package of its
    /// dependency closure, as npm packed them from the public registry
    /// (scripts/install-test-servers.sh): with no uplink, `npx -y` finds them all here.
    pub fn publish_server_memory(&self) {
        let packs = servers_dir().join("packs");
        let mut files: Vec<PathBuf> = std::fs::read_dir(packs.join("deps"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files.push(packs.join("modelcontextprotocol-server-memory-2026.8.31.tgz"));
        self.publish_tarballs(&files);
    }

    /// The registry's packument for a package.
    pub fn packument(&self, name: &str) -> Value {
        let (status, body) =
            http_get(self.service.port, &format!("/{}", name.replace('/', "%2f"))).unwrap();
        assert_eq!(status, 200, "{body}");
        serde_json::from_str(&body).unwrap()
    }

    /// The environment a host gives npx: this registry, a cache of the test's own.
    pub fn client_env(&self, cache: &Path) -> Vec<(String, String)> {
        vec![
            ("npm_config_registry".into(), self.url()),
            ("npm_config_cache".into(), cache.display().to_string()),
            (
                "npm_config_userconfig".into(),
                self.service
                    .dir
                    .path()
                    .join("run.npmrc")
                    .display()
                    .to_string(),
            ),
            ("npm_config_update_notifier".into(), "false".into()),
            ("npm_config_audit".into(), "false".into()),
            ("npm_config_fund".into(), "false".into()),
        ]
    }
}

/// pypiserver on 127.0.0.1 serving a folder of distribution files.
pub struct Index {
    pub service: Service,
}

impl Index {
    pub fn start() -> Index {
        let servers = servers_dir();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pkgs")).unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("log")).unwrap();
        let child = super::command(servers.join("venv/bin/pypi-server"))
            .args([
                "run",
                "-i",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "--disable-fallback",
            ])
            .arg(dir.path().join("pkgs"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("pypiserver starts");
        let mut service = Service { child, port, dir };
        service.wait_for("/simple/", "pypiserver");
        Index { service }
    }

    pub fn pkgs(&self) -> PathBuf {
        self.service.dir.path().join("pkgs")
    }

    /// A wheel of tiny-py at `version`, put on the index; its path.
    pub fn publish_tiny(&self, version: &str) -> PathBuf {
        self.make("make_wheel.py", &[version])
    }

    /// A wheel of the tiny server named `name` at 1.0.0 that requires each of
    /// `requires`, put on the index.
    pub fn publish_tiny_requiring(&self, name: &str, requires: &[&str]) {
        self.make("make_wheel.py", &[&["1.0.0", name][..], requires].concat());
    }

    /// A hand-written sdist (tests/data/packages/make_sdist.py) put on the index, its
    /// PKG-INFO `static` or dynamic; its build backend appends to `marker` whenever it
    /// runs. Its path.
    pub fn publish_sdist(
        &self,
        name: &str,
        version: &str,
        marker: &Path,
        static_metadata: bool,
        requires: &[&str],
    ) -> PathBuf {
        let marker = marker.display().to_string();
        let kind = if static_metadata { "static" } else { "dynamic" };
        let args = [&[name, version, marker.as_str(), kind][..], requires].concat();
        self.make("make_sdist.py", &args)
    }

    /// Runs one of tests/data/packages' makers into the index's folder: the path it
    /// printed.
    fn make(&self, script: &str, args: &[&str]) -> PathBuf {
        let out = super::command(servers_dir().join("venv/bin/python"))
            .arg(data(script))
            .arg(self.pkgs())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    }

    /// The environment a host gives uvx: this index only, caches of the test's own,
    /// the venv's Python (nothing downloaded), uv on PATH.
    pub fn client_env(&self, cache: &Path) -> Vec<(String, String)> {
        let venv = servers_dir().join("venv");
        let path = format!(
            "{}:{}",
            venv.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        vec![
            (
                "UV_INDEX_URL".into(),
                format!("http://127.0.0.1:{}/simple/", self.service.port),
            ),
            (
                "UV_CACHE_DIR".into(),
                cache.join("uv-cache").display().to_string(),
            ),
            (
                "UV_TOOL_DIR".into(),
                cache.join("uv-tools").display().to_string(),
            ),
            ("UV_NO_CONFIG".into(), "1".into()),
            (
                "UV_PYTHON".into(),
                venv.join("bin/python").display().to_string(),
            ),
            ("UV_PYTHON_DOWNLOADS".into(), "never".into()),
            ("PATH".into(), path),
        ]
    }
}

/// Talks to `mcp-lock guard` as an agent host would: initialize, list, call the
/// `version` tool. Returns the serverInfo version and the tool's text.
pub fn ask_guard_for_version(
    p: &super::Project,
    server: &str,
    command: &[&str],
    env: &[(String, String)],
) -> (String, String) {
    let mut child = p
        .command(super::bin())
        .args(["guard", server, "--"])
        .args(command)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Writes the messages, then waits for the answer to `id`.
    let mut answer = |id: u64, messages: &[Value]| -> Value {
        for message in messages {
            writeln!(stdin, "{message}").unwrap();
        }
        stdin.flush().unwrap();
        let message = &messages[messages.len() - 1];
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to {message}"));
            let value: Value = serde_json::from_str(&line).unwrap();
            if value["id"] == id {
                return value;
            }
        }
    };
    let init = answer(
        1,
        &[
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test-host", "version": "1"}}}),
        ],
    );
    answer(
        2,
        &[
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        ],
    );
    let call = answer(
        3,
        &[
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "version", "arguments": {}}}),
        ],
    );
    drop(stdin);
    let _ = child.wait();
    (
        init["result"]["serverInfo"]["version"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        call["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

/// A well-formed sha512 SRI value no package has.
pub fn sha512_sri() -> String {
    format!("sha512-{}==", "Q".repeat(86))
}

/// A directory holding `npx` and `uvx` that start the fixture server whatever their
/// arguments, and the PATH that finds them first.
pub fn stand_in_runners() -> (tempfile::TempDir, String) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    for name in ["npx", "uvx"] {
        let file = dir.path().join(name);
        std::fs::write(
            &file,
            format!("#!/bin/sh\nexec '{}'\n", super::fixture().display()),
        )
        .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (dir, path)
}
