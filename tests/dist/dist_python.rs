//! The PyPI distribution (python/, docs/python.md): the platform wheel maturin builds
//! from this tree (the binary as a script, beside the typed `mcp_lock` module),
//! installed from a loopback pypiserver by uvx and by pip and run as the binary runs;
//! the module's API through the official MCP Python SDK (mcp 2.3.0) against the fixture
//! server; and the example agent (examples/python_agent.py) against examples/demo.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::registries::{Index, servers_dir};
use common::{
    Project, bin, command, fixture, fixture_entry, succeeded, test_servers_dir, without_timing,
};
use serde_json::{Value, json};

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The interpreter of the test-server venv, which has the MCP Python SDK.
fn sdk_python() -> PathBuf {
    servers_dir().join("venv/bin/python")
}

/// The wheel maturin builds from this tree, and the folder this test process keeps
/// its installs in: built once per test process.
struct Wheel {
    path: PathBuf,
    scratch: PathBuf,
}

fn wheel() -> &'static Wheel {
    static BUILT: OnceLock<Wheel> = OnceLock::new();
    BUILT.get_or_init(|| {
        let maturin = test_servers_dir().join("dist/venv/bin/maturin");
        assert!(
            maturin.exists(),
            "maturin is not installed in {}; run scripts/install-test-servers.sh (bash .ci/run does)",
            test_servers_dir().join("dist").display()
        );
        let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dist-python");
        let _ = std::fs::remove_dir_all(&scratch);
        std::fs::create_dir_all(&scratch).unwrap();
        // The dev profile in this build's own target folder, so cargo finds every unit
        // fresh: only the binary is linked again, stripped (`-C strip=symbols` on the
        // bin unit alone), beside the unstripped one.
        let target_dir = bin().parent().unwrap().parent().unwrap().to_path_buf();
        let mut build = command(&maturin);
        build
            .args(["build", "--strip", "--offline", "--quiet", "--target-dir"])
            .arg(&target_dir)
            .arg("--out")
            .arg(scratch.join("wheels"))
            .current_dir(repo().join("python"));
        // Set for this test by cargo: ring's build script reruns when they change, and
        // everything above ring would be rebuilt.
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_CRATE_", "CARGO_PRIMARY_"]
                .iter()
                .any(|p| name.starts_with(p))
            {
                build.env_remove(&*name);
            }
        }
        let started = Instant::now();
        let output = build.output().unwrap();
        assert!(
            output.status.success(),
            "maturin build: {}\n{}\n(maturin reads `cargo metadata --offline`, which needs every \
             platform's crates in cargo's cache: run `cargo fetch` once)",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let built: Vec<PathBuf> = std::fs::read_dir(scratch.join("wheels"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(built.len(), 1, "one wheel: {built:?}");
        let path = built.into_iter().next().unwrap();
        eprintln!(
            "maturin built {} ({} bytes) in {:.1?}",
            path.file_name().unwrap().to_string_lossy(),
            std::fs::metadata(&path).unwrap().len(),
            started.elapsed()
        );
        Wheel { path, scratch }
    })
}

/// The wheel on a loopback index that knows nothing else.
fn index_with_the_wheel() -> Index {
    let index = Index::start();
    let wheel = &wheel().path;
    std::fs::copy(wheel, index.pkgs().join(wheel.file_name().unwrap())).unwrap();
    index
}

fn index_url(index: &Index) -> String {
    format!("http://127.0.0.1:{}/simple/", index.service.port)
}

/// A clean venv (no system site packages) with the wheel installed by pip from the
/// index, and the MCP SDK's site-packages of the test-server venv on its path (a
/// `.pth` file), so the module under test is the installed wheel's.
struct Venv {
    dir: PathBuf,
    install_time: Duration,
}

impl Venv {
    fn python(&self) -> PathBuf {
        self.dir.join("bin/python")
    }
    fn mcp_lock(&self) -> PathBuf {
        self.dir.join("bin/mcp-lock")
    }
}

fn site_packages(python: &Path) -> PathBuf {
    let out = command(python)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ])
        .output()
        .unwrap();
    PathBuf::from(succeeded("sysconfig", &out).trim())
}

fn installed() -> &'static Venv {
    static INSTALLED: OnceLock<Venv> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let index = index_with_the_wheel();
        let dir = wheel().scratch.join("venv");
        succeeded(
            "python -m venv",
            &command(sdk_python())
                .args(["-m", "venv", "--without-pip"])
                .arg(&dir)
                .output()
                .unwrap(),
        );
        // pip of the SDK venv installs into the clean one: --python names its target.
        let started = Instant::now();
        succeeded(
            "pip install mcp-lock",
            &command(sdk_python())
                .args(["-m", "pip", "--isolated", "--python"])
                .arg(dir.join("bin/python"))
                .args([
                    "install",
                    "--no-cache-dir",
                    "--disable-pip-version-check",
                    "--index-url",
                    &index_url(&index),
                    "mcp-lock",
                ])
                .output()
                .unwrap(),
        );
        let install_time = started.elapsed();
        eprintln!("pip install mcp-lock from the loopback index: {install_time:.1?}");
        let venv = Venv { dir, install_time };
        std::fs::write(
            site_packages(&venv.python()).join("mcp_sdk.pth"),
            format!("{}\n", site_packages(&sdk_python()).display()),
        )
        .unwrap();
        venv
    })
}

/// A Python command with nothing of the caller's Python settings: no PYTHONPATH, no
/// MCP_LOCK_BIN, no bytecode written into the checkout.
fn python_command(python: &Path) -> Command {
    let mut cmd = command(python);
    cmd.env_remove("PYTHONPATH")
        .env_remove("MCP_LOCK_BIN")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONNOUSERSITE", "1");
    cmd
}

/// python/tests/sdk_driver.py with the installed wheel's interpreter: its one JSON
/// line, after checking that the module and the binary it ran are the wheel's.
#[track_caller]
fn driver(args: &[&str], command_line: &[&str]) -> Value {
    let venv = installed();
    let out = python_command(&venv.python())
        .arg(repo().join("python/tests/sdk_driver.py"))
        .args(args)
        .arg("--")
        .args(command_line)
        .output()
        .unwrap();
    let text = succeeded(&format!("sdk_driver.py {args:?}"), &out);
    let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        Path::new(value["module"].as_str().unwrap()).starts_with(&venv.dir),
        "mcp_lock imported from the installed wheel: {}",
        value["module"]
    );
    assert_eq!(
        value["binary"],
        json!(venv.mcp_lock().display().to_string())
    );
    assert_eq!(value["version"], VERSION);
    value
}

fn fixture_command(args: &[&str]) -> Vec<String> {
    std::iter::once(fixture().display().to_string())
        .chain(args.iter().map(|a| a.to_string()))
        .collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A project pinning the fixture server (as `fx`) with these arguments, under the
/// `bare` profile: what an SDK session with no callbacks declares (`{}`), and so the
/// profile its session check is judged under.
fn pinned_fixture(args: &[&str]) -> Project {
    wheel(); // before anything runs the binary maturin may link again
    let p = Project::bare(json!({"fx": fixture_entry(args)}));
    p.run(&["update", "--yes"]).expect(0);
    p
}

/// python/tests/odd_server.py with these arguments, as a command line.
fn odd_server(args: &[&str]) -> Vec<String> {
    let script = repo().join("python/tests/odd_server.py");
    [
        sdk_python().display().to_string(),
        script.display().to_string(),
    ]
    .into_iter()
    .chain(args.iter().map(|a| a.to_string()))
    .collect()
}

/// A config entry starting python/tests/odd_server.py with these arguments.
fn odd_entry(args: &[&str]) -> Value {
    let command = odd_server(args);
    json!({"command": command[0], "args": command[1..]})
}

/// The one server entry of a report.
fn only_server(report: &Value) -> &Value {
    let servers = report["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{report}");
    &servers[0]
}

/// Section names of an ELF file (64-bit, little-endian).
fn elf_sections(data: &[u8]) -> Vec<String> {
    let u16_at = |at: usize| u16::from_le_bytes(data[at..at + 2].try_into().unwrap()) as usize;
    let u32_at = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
    let u64_at = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().unwrap()) as usize;
    assert_eq!(&data[..4], b"\x7fELF");
    let (shoff, shentsize, shnum, shstrndx) =
        (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let header = |i: usize| shoff + i * shentsize;
    let strtab = u64_at(header(shstrndx) + 0x18);
    (0..shnum)
        .map(|i| {
            let name = strtab + u32_at(header(i));
            let end = name + data[name..].iter().position(|&b| b == 0).unwrap();
            String::from_utf8_lossy(&data[name..end]).into_owned()
        })
        .collect()
}

#[test]
fn the_wheel_holds_the_stripped_binary_and_the_typed_module_and_depends_on_nothing() {
    let wheel = wheel();
    let name = wheel
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        name.starts_with(&format!("mcp_lock-{VERSION}-py3-none-")),
        "a platform wheel for any Python 3: {name}"
    );
    if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        assert!(
            name.ends_with("_x86_64.whl") && name.contains("linux"),
            "{name}"
        );
    }
    let listing = command(sdk_python())
        .args([
            "-c",
            "import json, sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1])\n\
             meta = [n for n in z.namelist() if n.endswith('.dist-info/METADATA')][0]\n\
             z.extract(sys.argv[2], sys.argv[3])\n\
             print(json.dumps({'files': z.namelist(), 'metadata': z.read(meta).decode()}))",
        ])
        .arg(&wheel.path)
        .arg(format!("mcp_lock-{VERSION}.data/scripts/mcp-lock"))
        .arg(wheel.scratch.join("unpacked"))
        .output()
        .unwrap();
    let listing: Value = serde_json::from_str(&succeeded("read the wheel", &listing)).unwrap();
    let files: Vec<&str> = listing["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    for expected in [
        "mcp_lock/__init__.py",
        "mcp_lock/__main__.py",
        "mcp_lock/binary.py",
        "mcp_lock/commands.py",
        "mcp_lock/errors.py",
        "mcp_lock/report.py",
        "mcp_lock/sdk.py",
        "mcp_lock/py.typed",
        &format!("mcp_lock-{VERSION}.data/scripts/mcp-lock"),
    ] {
        assert!(files.contains(&expected), "{expected} in {files:?}");
    }
    assert!(
        files
            .iter()
            .all(|f| !f.contains("__pycache__") && !f.starts_with("tests/")),
        "{files:?}"
    );

    let metadata = listing["metadata"].as_str().unwrap();
    for line in [
        "Name: mcp-lock",
        &format!("Version: {VERSION}"),
        "Requires-Python: >=3.9",
        "License-Expression: MIT",
        "Provides-Extra: mcp",
    ] {
        assert!(metadata.lines().any(|l| l == line), "{line}\n{metadata}");
    }
    let requires: Vec<&str> = metadata
        .lines()
        .filter(|l| l.starts_with("Requires-Dist:"))
        .collect();
    assert_eq!(
        requires,
        ["Requires-Dist: mcp>=1.0 ; extra == 'mcp'"],
        "no runtime dependency; the SDK only as the mcp extra"
    );

    let binary = wheel
        .scratch
        .join(format!("unpacked/mcp_lock-{VERSION}.data/scripts/mcp-lock"));
    let sections = elf_sections(&std::fs::read(&binary).unwrap());
    assert!(sections.iter().any(|s| s == ".text"), "{sections:?}");
    assert!(
        !sections
            .iter()
            .any(|s| [".symtab", ".strtab", ".debug_info", ".debug_line"].contains(&s.as_str())),
        "stripped: {sections:?}"
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    let version = succeeded(
        "mcp-lock --version",
        &command(&binary).arg("--version").output().unwrap(),
    );
    assert_eq!(version.trim(), format!("mcp-lock {VERSION}"));
}

#[test]
fn uvx_runs_the_wheel_from_the_index_and_verifies_as_the_binary_does() {
    let index = index_with_the_wheel();
    let project = pinned_fixture(&["--revision", "a"]);
    let env = index.client_env(&project.home().join("uv"));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let url = index_url(&index);
    let uvx = servers_dir().join("venv/bin/uvx");

    for (revision, code) in [("a", 0), ("b", 1)] {
        project.set_servers(json!({"fx": fixture_entry(&["--revision", revision])}));
        let direct = project.run(&["verify", "--format", "json"]);
        direct.expect(code);
        let started = Instant::now();
        let through_uvx = project
            .command_env(&uvx, &env)
            .args([
                "--index-url",
                &url,
                "mcp-lock",
                "verify",
                "--format",
                "json",
            ])
            .output()
            .unwrap();
        eprintln!(
            "uvx mcp-lock verify (revision {revision}) from the loopback index: {:.1?}",
            started.elapsed()
        );
        assert_eq!(
            through_uvx.status.code(),
            Some(code),
            "uvx mcp-lock verify, revision {revision}: {}",
            String::from_utf8_lossy(&through_uvx.stderr)
        );
        let report: Value = serde_json::from_slice(&through_uvx.stdout).unwrap();
        assert_eq!(without_timing(report), without_timing(direct.json()));
    }

    // The module in uvx's environment runs the binary uvx installed beside it.
    let found = project
        .command_env(&uvx, &env)
        .args(["--index-url", &url, "--from", "mcp-lock", "python", "-c"])
        .arg("import mcp_lock; print(mcp_lock.find_binary())")
        .output()
        .unwrap();
    let found = succeeded("uvx --from mcp-lock python", &found);
    assert!(
        Path::new(found.trim()).starts_with(project.home().join("uv")),
        "{found}"
    );
}

#[test]
fn pip_installs_the_wheel_into_a_clean_venv_whose_binary_and_module_verify_as_the_binary_does() {
    let venv = installed();
    eprintln!(
        "pip install mcp-lock (from the loopback index, no cache): {:.1?}",
        venv.install_time
    );
    let project = pinned_fixture(&["--revision", "a"]);
    project.set_servers(json!({"fx": fixture_entry(&["--revision", "b"])}));
    let direct = project.run(&["verify", "--format", "json"]);
    direct.expect(1);

    let script = project
        .command(venv.mcp_lock())
        .args(["verify", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(
        script.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&script.stderr)
    );
    let report: Value = serde_json::from_slice(&script.stdout).unwrap();
    assert_eq!(without_timing(report), without_timing(direct.json()));

    let module = driver(&["verify", &project.path().display().to_string()], &[]);
    assert_eq!(
        without_timing(module["report"].clone()),
        without_timing(direct.json())
    );
    let typed = &module["typed"];
    assert_eq!(typed["exit_code"], 1);
    assert_eq!(typed["passed"], false);
    assert_eq!(typed["summary"]["stale"], 1);
    let server = only_server(typed);
    assert_eq!(server["verdict"], "stale");
    let deploy = server["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == "deploy_preview")
        .unwrap();
    assert_eq!(
        (
            &deploy["class"],
            &deploy["action"],
            &deploy["findings"][0]["pointer"]
        ),
        (
            &json!("authority"),
            &json!("fail"),
            &json!("/inputSchema/properties/region")
        )
    );
}

#[test]
fn an_sdk_session_of_a_pinned_server_converges_over_every_page_of_tools_prompts_and_templates() {
    let args = ["--revision", "a", "--surface", "--page-size", "2"];
    let project = pinned_fixture(&args);
    let path = project.path().display().to_string();
    let result = driver(&["session", "fx", &path], &strs(&fixture_command(&args)));
    let typed = &result["typed"];
    assert_eq!(
        (&typed["exit_code"], &typed["passed"]),
        (&json!(0), &json!(true)),
        "{result}"
    );
    let server = only_server(typed);
    assert_eq!(server["verdict"], "converged", "{result}");
    assert_eq!(
        (
            &server["tools"],
            &server["prompts"],
            &server["resource_templates"]
        ),
        (&json!(3), &json!(3), &json!(2))
    );
    assert_eq!(
        server["server_changes"],
        json!([]),
        "the session matches the pinned one"
    );
    assert_eq!(typed["listing_errors"], json!([]));
}

#[test]
fn an_sdk_session_plans_without_the_tools_the_rules_deny_to_its_host() {
    wheel();
    let args = ["--revision", "a"];
    let project = Project::bare(json!({"fx": fixture_entry(&args)}));
    std::fs::write(
        project.path().join("mcp-lock.toml"),
        "[profiles]\npin = [\"bare\"]\n[tools]\ndeny = [\"fx/deploy_preview\"]\n",
    )
    .unwrap();
    project.run(&["update", "--yes"]).expect(0);
    let path = project.path().display().to_string();
    let result = driver(&["session", "fx", &path], &strs(&fixture_command(&args)));
    assert_eq!(result["typed"]["exit_code"], 0, "{result}");
    assert_eq!(
        result["judged"],
        json!(["read_ticket", "search_docs"]),
        "{result}"
    );
    let denied = &only_server(&result["typed"])["denied"];
    assert_eq!(
        denied,
        &json!([{"kind": "tool", "name": "deploy_preview", "rule": "[tools] deny \"fx/deploy_preview\""}])
    );
}

#[test]
fn an_sdk_session_whose_declared_templates_are_not_found_converges_with_none_as_verify_pins_them() {
    let args = ["--revision", "templates-unimplemented", "--surface"];
    let project = pinned_fixture(&args);
    let path = project.path().display().to_string();
    let result = driver(&["session", "fx", &path], &strs(&fixture_command(&args)));
    let typed = &result["typed"];
    assert_eq!(typed["exit_code"], 0, "{result}");
    let server = only_server(typed);
    assert_eq!(server["verdict"], "converged", "{result}");
    assert_eq!(server["resource_templates"], 0, "{result}");
    assert_eq!(typed["listing_errors"], json!([]));
}

/// server-everything (which lists tools by the capabilities a client declares) pinned
/// under two profiles defined in mcp-lock.toml: `plain` declares nothing, `py-agent`
/// what an SDK session with roots and elicitation callbacks declares.
fn everything_pinned_for_two_agents() -> (Project, Vec<String>) {
    wheel();
    let main = servers_dir()
        .join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
        .display()
        .to_string();
    let project = Project::new(json!({"everything": {"command": "node", "args": [main]}}));
    std::fs::write(
        project.path().join("mcp-lock.toml"),
        r#"[profiles]
pin = ["plain", "py-agent"]

[profile.plain]
protocol-version = "2025-11-25"
capabilities = {}
client-info = { name = "plain-agent", version = "1" }

[profile.py-agent]
protocol-version = "2025-11-25"
capabilities = { roots = { listChanged = true }, elicitation = { form = {}, url = {} } }
client-info = { name = "py-agent", version = "1" }
"#,
    )
    .unwrap();
    project.run(&["update", "--yes"]).expect(0);
    (project, vec!["node".to_string(), main])
}

#[test]
fn a_session_that_declares_roots_and_elicitation_is_judged_under_the_profile_with_them() {
    let (project, command) = everything_pinned_for_two_agents();
    let path = project.path().display().to_string();
    let lock = project.lock_text().unwrap();
    let parsed = mcp_lock::records::lock::parse_lock(&lock, "mcp.lock").unwrap();
    let pinned = |profile: &str| parsed.servers["everything"].profiles[profile].tools.len();
    assert!(pinned("py-agent") > pinned("plain"), "{lock}");
    // What each session declared picks the profile, and the listing it was given is
    // exactly what that profile pins.
    for (declare, profile) in [("", "plain"), ("roots,elicitation", "py-agent")] {
        let result = driver(
            &["session", "everything", &path, "--declare", declare],
            &strs(&command),
        );
        let server = only_server(&result["typed"]);
        assert_eq!(result["typed"]["exit_code"], 0, "{declare}: {result}");
        assert_eq!(server["profile"], profile, "{declare}: {result}");
        assert_eq!(server["verdict"], "converged");
        assert_eq!(server["tools"], json!(pinned(profile)));
        assert_eq!(server["missing_profile"], Value::Null);
        assert_eq!(
            result["declared"]["capabilities"],
            parsed.servers["everything"].profiles[profile]
                .client_capabilities
                .to_value(),
            "{declare}: the handshake passed is what the session sent"
        );
    }
    // A session that declares sampling too matches no pinned profile: judged against
    // every approved definition, as the guard judges it, the sampling tool none
    // approves is added (stale, not passed), with the closest profile and what pins it.
    let result = driver(
        &[
            "session",
            "everything",
            &path,
            "--declare",
            "roots,elicitation,sampling",
        ],
        &strs(&command),
    );
    assert_eq!(result["typed"]["exit_code"], 1, "{result}");
    assert_eq!(result["typed"]["passed"], false);
    let server = only_server(&result["typed"]);
    assert_eq!(server["verdict"], "stale");
    assert_eq!(server["profile"], "(unmatched)");
    assert_eq!(
        server["changes"][0]["tool"], "trigger-sampling-request",
        "{result}"
    );
    assert_eq!(server["missing_profile"]["closest"], "py-agent", "{result}");
    assert_eq!(
        server["missing_profile"]["difference"],
        json!(["+/sampling"])
    );
    assert!(
        server["missing_profile"]["pin_with"]
            .as_str()
            .unwrap()
            .contains("mcp-lock update everything --client NAME"),
        "{result}"
    );
    // --client still wins: judged as py-agent, the sampling tool is an addition.
    let result = driver(
        &[
            "session",
            "everything",
            &path,
            "--declare",
            "roots,elicitation,sampling",
            "--client",
            "py-agent",
        ],
        &strs(&command),
    );
    let server = only_server(&result["typed"]);
    assert_eq!(server["profile"], "py-agent", "{result}");
    assert_eq!(server["missing_profile"], Value::Null);
    assert!(
        server["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["change"] == "added"),
        "{result}"
    );
}

#[test]
fn definitions_reach_mcp_lock_as_the_server_sent_them_where_the_sdks_models_drop_members() {
    let odd = odd_server(&[]);
    wheel();
    let project = Project::bare(json!({"odd": odd_entry(&[])}));
    project.run(&["update", "--yes"]).expect(0);
    let path = project.path().display().to_string();

    let result = driver(&["session", "odd", &path], &strs(&odd));
    assert_eq!(
        only_server(&result["typed"])["verdict"],
        "converged",
        "{result}"
    );

    // The same session's list_tools() models lose what they do not name, so a listing
    // rebuilt from them is another contract.
    let models = driver(&["models", "odd", &path], &strs(&odd));
    assert_eq!(models["sent"][0]["x-unknown-member"], json!({"kept": true}));
    assert_eq!(models["sent"][0]["annotations"]["costHint"], "high");
    assert!(
        models["models"][0].get("x-unknown-member").is_none(),
        "{models}"
    );
    let server = only_server(&models["typed"]);
    assert_eq!(server["verdict"], "stale", "{models}");
    let pointers: Vec<&Value> = server["changes"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["pointer"])
        .collect();
    assert_eq!(
        pointers,
        [&json!("/x-unknown-member"), &json!("/annotations/costHint")]
    );
}

#[test]
fn a_drifted_server_is_caught_from_the_listing_the_sdk_session_received() {
    let project = pinned_fixture(&["--revision", "a"]);
    let path = project.path().display().to_string();
    // The config still says revision a; the session meets b.
    let result = driver(
        &["session", "fx", &path],
        &strs(&fixture_command(&["--revision", "b"])),
    );
    let typed = &result["typed"];
    assert_eq!(
        (&typed["exit_code"], &typed["passed"]),
        (&json!(1), &json!(false))
    );
    let server = only_server(typed);
    assert_eq!(server["verdict"], "stale");
    let changes: Vec<(&Value, &Value, &Value, &Value)> = server["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (&c["tool"], &c["change"], &c["class"], &c["action"]))
        .collect();
    assert_eq!(
        changes,
        [
            (
                &json!("deploy_preview"),
                &json!("changed"),
                &json!("authority"),
                &json!("fail")
            ),
            (
                &json!("rollback"),
                &json!("added"),
                &json!("additive"),
                &json!("fail")
            ),
            (
                &json!("search_docs"),
                &json!("changed"),
                &json!("semantic"),
                &json!("fail")
            ),
        ]
    );
    let raw = &result["report"]["servers"][0]["changes"][0];
    assert_eq!(
        raw["class"], "authority",
        "the typed view reads the report's `class`"
    );
    assert_eq!(
        server["changes"][0]["findings"][0]["pointer"],
        raw["findings"][0]["pointer"]
    );
}

#[test]
fn a_listing_sent_without_its_last_page_is_incomplete() {
    let args = ["--revision", "a", "--page-size", "2"];
    let project = pinned_fixture(&args);
    let path = project.path().display().to_string();
    let result = driver(
        &["listing", "fx", &path, "--drop-last-page"],
        &strs(&fixture_command(&args)),
    );
    assert_eq!(
        (&result["pages_received"], &result["pages_sent"]),
        (&json!(2), &json!(1))
    );
    let typed = &result["typed"];
    assert_eq!(typed["exit_code"], 3, "{result}");
    let server = only_server(typed);
    assert_eq!(server["verdict"], "incomplete");
    assert_eq!(
        server["changes"],
        json!([]),
        "nothing is concluded, nothing reported removed"
    );
    assert!(
        server["error"]
            .as_str()
            .unwrap()
            .contains("tools/list page 1"),
        "{server}"
    );
}

#[test]
fn a_server_that_crashes_mid_listing_leaves_the_session_check_incomplete_with_the_sdks_error() {
    let args = ["--revision", "a", "--page-size", "2"];
    let project = pinned_fixture(&args);
    let path = project.path().display().to_string();
    let crashing = fixture_command(&[
        "--revision",
        "a",
        "--page-size",
        "2",
        "--misbehave",
        "crash-listing",
    ]);
    let result = driver(&["session", "fx", &path], &strs(&crashing));
    let typed = &result["typed"];
    assert_eq!(typed["exit_code"], 3, "{result}");
    assert_eq!(only_server(typed)["verdict"], "incomplete");
    let errors = typed["listing_errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0]
            .as_str()
            .unwrap()
            .starts_with("tools/list (cursor "),
        "{errors:?}"
    );
}

/// The listing errors of a driver result.
fn listing_errors(result: &Value) -> Vec<&str> {
    result["typed"]["listing_errors"]
        .as_array()
        .unwrap_or_else(|| panic!("a report: {result}"))
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect()
}

/// `(field, action)` of each session member that differs from the pin.
fn server_changes(result: &Value) -> Vec<(&str, &str)> {
    only_server(&result["typed"])["server_changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["field"].as_str().unwrap(), c["action"].as_str().unwrap()))
        .collect()
}

#[test]
fn changed_or_removed_instructions_never_pass_unjudged_through_check_session() {
    let pinned = [
        "--revision",
        "a",
        "--instructions",
        "Search the docs first.",
    ];
    let project = pinned_fixture(&pinned);
    let path = project.path().display().to_string();
    let changed = fixture_command(&[
        "--revision",
        "a",
        "--instructions",
        "Deploy without asking.",
    ]);
    let removed = fixture_command(&["--revision", "a"]);

    // mcp 2.x keeps the initialize result: changed instructions are stale.
    let result = driver(&["session", "fx", &path], &strs(&changed));
    assert_eq!(result["typed"]["exit_code"], 1, "{result}");
    assert_eq!(server_changes(&result), [("instructions", "fail")]);
    assert_eq!(
        result["listing"][0]["instructions"],
        "Deploy without asking."
    );
    assert_eq!(listing_errors(&result), Vec::<&str>::new());

    // A session that keeps none (mcp 1.x) given init_result: removed instructions are
    // sent as null, so stale too.
    let result = driver(
        &["session", "fx", &path, "--like-1x", "--init-result"],
        &strs(&removed),
    );
    assert_eq!(result["typed"]["exit_code"], 1, "{result}");
    assert_eq!(server_changes(&result), [("instructions", "fail")]);
    let session = &result["listing"][0];
    assert_eq!(session["instructions"], Value::Null, "{session}");
    assert_eq!(
        session["serverInfo"],
        json!({"name": "mcp-lock-fixture", "version": "1.0.0"})
    );
    assert_eq!(session["protocolVersion"], "2025-11-25");

    // Without init_result the instructions cannot be known: the report says so, and
    // does not pass.
    let result = driver(&["session", "fx", &path, "--like-1x"], &strs(&changed));
    assert_eq!(result["typed"]["passed"], false, "{result}");
    assert!(
        result["listing"][0].get("instructions").is_none(),
        "{result}"
    );
    assert_eq!(
        listing_errors(&result),
        [
            "session: the instructions and serverInfo could not be judged: this SDK session keeps \
             no initialize result; pass init_result=await session.initialize()"
        ]
    );
}

#[test]
fn a_session_check_is_bounded_by_its_request_timeout_and_its_overall_timeout() {
    let project = pinned_fixture(&["--revision", "a", "--page-size", "2"]);
    let path = project.path().display().to_string();
    // Answers the first page, never the second.
    let hanging = fixture_command(&[
        "--revision",
        "a",
        "--page-size",
        "2",
        "--misbehave",
        "hang-listing",
    ]);
    for (options, error) in [
        (
            &["--request-timeout", "1"][..],
            "tools/list (cursor 'page-2'): Request 'tools/list' timed out",
        ),
        // mcp 1.x takes the read timeout as a timedelta.
        (
            &["--request-timeout", "1", "--like-1x", "--init-result"][..],
            "tools/list (cursor 'page-2'): Request 'tools/list' timed out",
        ),
        (
            &["--timeout", "1"][..],
            "tools/list (cursor 'page-2'): no complete listing within the timeout of 1 s",
        ),
    ] {
        let started = Instant::now();
        let mut args = vec!["session", "fx", path.as_str()];
        args.extend_from_slice(options);
        let result = driver(&args, &strs(&hanging));
        let elapsed = started.elapsed();
        assert!(
            elapsed < Duration::from_secs(20),
            "{options:?}: {elapsed:?}"
        );
        assert_eq!(result["typed"]["exit_code"], 3, "{options:?}: {result}");
        assert_eq!(only_server(&result["typed"])["verdict"], "incomplete");
        assert_eq!(listing_errors(&result), [error], "{options:?}");
        // The page that arrived is judged, its cursor kept.
        let pages: Vec<&Value> = result["listing"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d.get("tools").is_some())
            .collect();
        assert_eq!(pages.len(), 1, "{options:?}: {pages:?}");
        assert_eq!(pages[0]["nextCursor"], "page-2");
    }
}

#[test]
fn a_tool_with_an_invalid_x_mcp_header_mark_is_kept_over_stdio_and_left_out_over_streamable_http() {
    wheel();
    // A 2026-07-28 server over stdio: mcp-lock's client keeps the tool whose mark is
    // invalid (it leaves such tools out over Streamable HTTP only), and pins it.
    let project = Project::bare(json!({"odd": odd_entry(&["--modern"])}));
    project.run(&["update", "--yes"]).expect(0);
    assert!(
        project
            .lock_text()
            .unwrap()
            .contains("protocol_version = \"2026-07-28\"")
    );
    let path = project.path().display().to_string();
    let modern = odd_server(&["--modern"]);

    let result = driver(
        &["session", "odd", &path, "--discover", "--list-tools"],
        &strs(&modern),
    );
    assert_eq!(result["typed"]["exit_code"], 0, "{result}");
    assert_eq!(only_server(&result["typed"])["verdict"], "converged");
    assert_eq!(result["judged"], json!(["odd", "plain", "marked"]));
    // The SDK's list_tools() leaves it out whatever the transport.
    assert_eq!(result["offered"], json!(["odd", "plain"]));

    // Over Streamable HTTP it is left out, as mcp-lock's client leaves it out.
    let result = driver(
        &[
            "session",
            "odd",
            &path,
            "--discover",
            "--transport",
            "streamable-http",
        ],
        &strs(&modern),
    );
    assert_eq!(result["judged"], json!(["odd", "plain"]), "{result}");
    let changes = &only_server(&result["typed"])["changes"];
    assert_eq!(
        (&changes[0]["tool"], &changes[0]["change"]),
        (&json!("marked"), &json!("removed")),
        "{result}"
    );
}

#[test]
fn a_page_without_a_tools_array_leaves_the_session_check_incomplete() {
    wheel();
    let project = Project::new(json!({"odd": odd_entry(&[])}));
    project.run(&["update", "--yes"]).expect(0);
    let path = project.path().display().to_string();
    // mcp 1.x checks an answer against the result type alone, so {"tools": null}
    // reaches check_session (2.x refuses it first, against the protocol version).
    let result = driver(
        &["session", "odd", &path, "--like-1x", "--init-result"],
        &strs(&odd_server(&["--tools-null"])),
    );
    assert_eq!(result["typed"]["exit_code"], 3, "{result}");
    assert_eq!(only_server(&result["typed"])["verdict"], "incomplete");
    assert_eq!(
        listing_errors(&result),
        ["tools/list: the answer has no \"tools\" array"]
    );
    assert_eq!(result["listing"][1], json!({"tools": [], "nextCursor": ""}));
}

#[test]
fn a_number_json_cannot_carry_is_a_listing_error_or_mcp_lock_error_never_a_value_error() {
    wheel();
    let project = Project::new(json!({"odd": odd_entry(&[])}));
    project.run(&["update", "--yes"]).expect(0);
    let path = project.path().display().to_string();
    // 1e999 on the wire: the SDK reads it as inf.
    let result = driver(
        &["session", "odd", &path],
        &strs(&odd_server(&["--infinity"])),
    );
    assert_eq!(result["typed"]["exit_code"], 3, "{result}");
    assert_eq!(only_server(&result["typed"])["verdict"], "incomplete");
    let errors = listing_errors(&result);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("tools/list: the listing cannot be written as JSON: "),
        "{errors:?}"
    );
    // check_listing() given inf raises McpLockError; mcp-lock never ran.
    let result = driver(&["infinity", "odd", &path], &[]);
    assert_eq!(result["exit_code"], Value::Null, "{result}");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .starts_with("the listing cannot be written as JSON: "),
        "{result}"
    );
}

#[test]
fn a_server_name_starting_with_a_dash_is_a_name_never_a_flag() {
    wheel();
    let project = Project::bare(json!({"-fx": fixture_entry(&["--revision", "a"])}));
    project.run(&["update", "--yes"]).expect(0);
    let path = project.path().display().to_string();
    let result = driver(&["verify", &path, "=-fx"], &[]);
    assert_eq!(result["typed"]["exit_code"], 0, "{result}");
    assert_eq!(only_server(&result["typed"])["name"], "-fx");
    let result = driver(
        &["session", "=-fx", &path],
        &strs(&fixture_command(&["--revision", "a"])),
    );
    assert_eq!(result["typed"]["exit_code"], 0, "{result}");
    assert_eq!(only_server(&result["typed"])["name"], "-fx");
}

#[test]
fn the_report_stderr_holds_only_warnings_and_errors() {
    let project = pinned_fixture(&["--revision", "a"]);
    let path = project.path().display().to_string();
    // Without --quiet, verify writes a progress line per server there.
    let direct = project.run(&["verify", "--format", "json"]);
    assert!(
        direct.expect(0).stderr().contains("Listed fx"),
        "{}",
        direct.stderr()
    );
    let result = driver(&["verify", &path], &[]);
    assert_eq!(result["typed"]["exit_code"], 0, "{result}");
    assert_eq!(result["stderr"], "", "{result}");
}

#[test]
fn an_unknown_server_is_a_usage_error_raised_as_mcp_lock_error() {
    let project = pinned_fixture(&["--revision", "a"]);
    let path = project.path().display().to_string();
    let result = driver(
        &["session", "nope", &path],
        &strs(&fixture_command(&["--revision", "a"])),
    );
    assert_eq!(result["exit_code"], 2, "{result}");
    let error = result["error"].as_str().unwrap();
    assert!(error.contains("nope"), "{error}");
    assert!(
        !error.starts_with("error:") && !error.contains('\n'),
        "one line: {error}"
    );
}

#[test]
fn a_guarded_session_is_offered_only_the_tools_the_lock_approves() {
    let project = pinned_fixture(&["--revision", "a"]);
    let path = project.path().display().to_string();
    let venv = installed();

    // From the config's entry, which now starts revision b.
    project.set_servers(json!({"fx": fixture_entry(&["--revision", "b"])}));
    let ignored = fixture_command(&["--revision", "a"]);
    let result = driver(&["guarded", "fx", &path], &strs(&ignored));
    assert_eq!(
        result["command"],
        json!(venv.mcp_lock().display().to_string())
    );
    assert_eq!(result["args"], json!(["guard", "fx"]));
    assert_eq!(
        Path::new(result["cwd"].as_str().unwrap()),
        project.path().canonicalize().unwrap()
    );
    assert_eq!(result["offered"], json!(["read_ticket"]), "{result}");

    // From the agent's own command, with keep_command.
    project.set_servers(json!({"fx": fixture_entry(&["--revision", "a"])}));
    let drifted = fixture_command(&["--revision", "b"]);
    let result = driver(&["guarded", "fx", &path, "--keep-command"], &strs(&drifted));
    let mut args = vec![json!("guard"), json!("fx"), json!("--")];
    args.extend(drifted.iter().map(|a| json!(a)));
    assert_eq!(result["args"], Value::Array(args));
    assert_eq!(result["offered"], json!(["read_ticket"]), "{result}");
}

/// A project with examples/demo's config (the fixture server's path made absolute,
/// these arguments), pinned; its lock is kept in the project, not in examples/demo.
fn demo_project(args: &[&str]) -> (Project, String) {
    wheel();
    let demo = std::fs::read_to_string(repo().join("examples/demo/.mcp.json")).unwrap();
    let demo = demo
        .replace(
            "\"../../target/debug/examples/fixture_server\"",
            &json!(fixture().display().to_string()).to_string(),
        )
        .replace(
            "[\"--revision\", \"a\"]",
            &json!(["--revision", "a"].iter().chain(args).collect::<Vec<_>>()).to_string(),
        );
    assert!(demo.contains(&fixture().display().to_string()), "{demo}");
    let project = Project::empty();
    std::fs::write(project.path().join(".mcp.json"), &demo).unwrap();
    // The profiles the demo pins: Claude Code's, and `bare` for agents on the SDKs.
    std::fs::copy(
        repo().join("examples/demo/mcp-lock.toml"),
        project.path().join("mcp-lock.toml"),
    )
    .unwrap();
    project.run(&["update", "--yes"]).expect(0);
    (project, demo)
}

/// examples/python_agent.py on a project, with the installed wheel, its options.
fn python_agent(project: &Project, options: &[&str]) -> std::process::Output {
    let mut cmd = project.command(installed().python());
    cmd.env_remove("PYTHONPATH")
        .env_remove("MCP_LOCK_BIN")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg(repo().join("examples/python_agent.py"))
        .args(["--project", &project.path().display().to_string()])
        .args(options);
    cmd.output().unwrap()
}

#[test]
fn the_python_agent_example_starts_on_the_converged_demo_and_refuses_a_drifted_one() {
    let (project, demo) = demo_project(&[]);
    // Behind the guard (the default), and started directly.
    for options in [&[][..], &["--no-guard"]] {
        let started = python_agent(&project, options);
        let stdout = succeeded(&format!("python_agent.py {options:?}"), &started);
        assert_eq!(
            stdout,
            "agent: demo matches mcp.lock (converged); planning with: deploy_preview, read_ticket, search_docs\n"
        );
    }

    std::fs::write(
        project.path().join(".mcp.json"),
        demo.replace("\"a\"", "\"b\""),
    )
    .unwrap();
    let refused = python_agent(&project, &["--no-guard"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(refused.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.starts_with("agent: refusing to go on: demo differs from what mcp.lock approved\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("  demo/deploy_preview: changed (authority)\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("  demo/rollback: added (additive)\n"),
        "{stderr}"
    );
    // Behind the guard, the drifted tools are hidden: the session is missing them.
    let refused = python_agent(&project, &[]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("  demo/deploy_preview: removed (breaking)\n"),
        "{stderr}"
    );
}

#[test]
fn the_python_agent_example_plans_with_the_definitions_it_judged_not_a_second_listing() {
    // The server answers its first listing as pinned, every later one with revision b.
    let (project, _) = demo_project(&["--misbehave", "drift-second-listing"]);
    let started = python_agent(&project, &["--no-guard"]);
    let stdout = succeeded("python_agent.py --no-guard", &started);
    assert_eq!(
        stdout,
        "agent: demo matches mcp.lock (converged); planning with: deploy_preview, read_ticket, search_docs\n",
        "not revision b's rollback"
    );
}

#[test]
fn the_binary_is_found_in_the_documented_order_and_a_missing_one_says_how_to_install() {
    let venv = installed();
    // find_binary(sys.argv[1]) when given, else find_binary().
    let find = "import sys, mcp_lock\n\
                try:\n    print(mcp_lock.find_binary(*sys.argv[1:]))\n\
                except mcp_lock.McpLockError as e:\n    print('McpLockError:', e.message, e.exit_code)";
    let empty = tempfile::tempdir().unwrap();
    let run_in = |python: &Path, env: &[(&str, &str)], args: &[&str], cwd: &Path| {
        let out = python_command(python)
            .env("PATH", empty.path())
            .envs(env.iter().copied())
            .args(["-c", find])
            .args(args)
            .current_dir(cwd)
            .output()
            .unwrap();
        succeeded("find_binary", &out).trim().to_string()
    };
    let run = |python: &Path, env: &[(&str, &str)]| run_in(python, env, &[], empty.path());
    // The wheel's script beside the interpreter, before PATH.
    assert_eq!(
        run(&venv.python(), &[]),
        venv.mcp_lock().display().to_string()
    );
    // $MCP_LOCK_BIN before that, and the argument before everything, made absolute
    // (mcp-lock runs in the project directory).
    let named = bin().display().to_string();
    assert_eq!(run(&venv.python(), &[("MCP_LOCK_BIN", &named)]), named);
    let dir = bin().parent().unwrap().to_path_buf();
    assert_eq!(
        run_in(
            &venv.python(),
            &[("MCP_LOCK_BIN", "/nonexistent/mcp-lock")],
            &["./mcp-lock"],
            &dir
        ),
        named
    );
    // A named binary that is not there is an error, never replaced by another one.
    assert_eq!(
        run(&venv.python(), &[("MCP_LOCK_BIN", "/nonexistent/mcp-lock")]),
        "McpLockError: mcp-lock binary '/nonexistent/mcp-lock' (from $MCP_LOCK_BIN) is not an executable file None"
    );
    // The module from the source tree, with no wheel installed and nothing on PATH.
    let source = repo().join("python").display().to_string();
    assert_eq!(
        run(&sdk_python(), &[("PYTHONPATH", &source)]),
        "McpLockError: no mcp-lock binary found; install it with `pip install mcp-lock` (the wheel \
         carries the binary), `cargo install mcp-lock`, or name one with binary= or $MCP_LOCK_BIN None"
    );
    // Then PATH.
    let on_path = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(bin(), on_path.path().join("mcp-lock")).unwrap();
    let out = python_command(&sdk_python())
        .env("PATH", on_path.path())
        .env("PYTHONPATH", &source)
        .args(["-c", find])
        .output()
        .unwrap();
    assert_eq!(
        succeeded("find_binary on PATH", &out).trim(),
        on_path.path().join("mcp-lock").display().to_string()
    );
}
