//! `mcp-lock hash`, `--help` and completions through the real binary, and README.md held
//! to it: its demo output and its exit-code table.

use crate::common;

use std::io::Write;
use std::process::Stdio;

use serde_json::Value;

fn vectors() -> Value {
    serde_json::from_str(include_str!("../data/tool-definition-hash-vectors.json")).unwrap()
}

fn hash_stdin(input: &str, args: &[&str]) -> (i32, String, String) {
    let mut child = common::command(common::bin())
        .arg("hash")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn hash_prints_the_vector_hash_for_every_definition_vector() {
    for d in vectors()["definitions"].as_array().unwrap() {
        let input = d["input"].as_str().unwrap();
        let (code, out, err) = hash_stdin(input, &[]);
        // The RFC 8785 vectors are objects with no name: hashed, but never pinnable.
        let named = mcp_lock::base::json::Json::parse(input)
            .unwrap()
            .get("name")
            .and_then(mcp_lock::base::json::Json::as_str)
            .is_some();
        assert_eq!(code, if named { 0 } else { 1 }, "{}: {err}", d["about"]);
        assert!(
            out.starts_with(d["hash"].as_str().unwrap()),
            "{}: {out}",
            d["about"]
        );
    }
}

#[test]
fn hash_prints_the_set_hash_for_every_set_vector_over_its_pages() {
    for s in vectors()["sets"].as_array().unwrap() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = Vec::new();
        for (i, page) in s["pages"].as_array().unwrap().iter().enumerate() {
            let path = dir.path().join(format!("page{i}.json"));
            std::fs::write(&path, page.as_str().unwrap()).unwrap();
            files.push(path.display().to_string());
        }
        let out = common::command(common::bin())
            .arg("hash")
            .args(&files)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with(s["setHash"].as_str().unwrap()),
            "{}: {text}",
            s["about"]
        );
        for line in s["lines"].as_array().unwrap() {
            let (name, hash) = line.as_str().unwrap().split_once(':').unwrap();
            assert!(text.contains(&format!("{hash}  {name}")), "{text}");
        }
    }
}

#[test]
fn hash_accepts_a_whole_tools_list_answer_and_reports_json() {
    let answer = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"weather","description":"Get the current weather for a city.","inputSchema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}}"#;
    let (code, out, _) = hash_stdin(answer, &["--format", "json"]);
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        doc["tools"][0]["hash"],
        "f6d1913a45f2a5ea95ceb161b4e08eed245a1808044f3a358705d2641b6fb37d"
    );
    assert!(doc["set_hash"].is_string());
}

#[test]
fn hash_refuses_every_invalid_vector_with_exit_1() {
    for entry in vectors()["invalid"].as_array().unwrap() {
        let input = match entry["input"].as_str() {
            Some(text) => text.to_string(),
            None => entry["pages"][0].as_str().unwrap().to_string(),
        };
        let (code, _, err) = hash_stdin(&input, &[]);
        assert_eq!(code, 1, "{}: {err}", entry["about"]);
        assert!(err.contains("error"), "{err}");
    }
}

#[test]
fn hash_of_text_that_is_not_json_is_a_usage_error_with_position() {
    let (code, _, err) = hash_stdin("{\"name\": }", &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("-: not JSON: expected a JSON value at line 1, column 10"),
        "{err}"
    );
}

#[test]
fn every_command_has_help_with_an_example() {
    for cmd in [
        "update",
        "verify",
        "hash",
        "completions",
        "hook",
        "audit",
        "servers",
        "check-listing",
    ] {
        let out = common::command(common::bin())
            .args([cmd, "--help"])
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Examples:"),
            "{cmd} --help has no example:\n{text}"
        );
    }
    let top = common::command(common::bin())
        .arg("--help")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&top.stdout).contains("Exit codes:"));
}

/// `mcp-lock ARGS --help` as a terminal of `columns` columns gets it.
fn help_at(args: &[&str], columns: usize) -> String {
    let out = common::command(common::bin())
        .args(args)
        .arg("--help")
        .env("COLUMNS", columns.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn help_prose_is_wrapped_to_the_terminal_and_ends_with_the_docs_page() {
    let narrow = help_at(&["verify"], 80);
    let wide = help_at(&["verify"], 120);
    let widest = |text: &str| text.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(widest(&narrow) <= 80, "{narrow}");
    assert!(
        widest(&wide) > 100,
        "prose is wrapped by clap, not by hand:\n{wide}"
    );
    assert!(widest(&wide) <= 120, "{wide}");
    for text in [&narrow, &wide] {
        assert!(
            text.trim_end().ends_with("Docs: docs/commands.md#verify"),
            "{text}"
        );
    }
}

#[test]
fn every_command_s_docs_link_leads_to_a_section_of_the_commands_page() {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/commands.md")).unwrap();
    let top = help_at(&[], 120);
    let commands: Vec<&str> = top
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        // A name starts its line; a description's continuation is indented further.
        .filter_map(|l| l.strip_prefix("  ").filter(|rest| !rest.starts_with(' ')))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    assert!(commands.len() > 15, "{top}");
    for name in commands {
        let help = help_at(&[name], 120);
        let anchor = help
            .trim_end()
            .rsplit_once("Docs: docs/commands.md#")
            .map(|(_, anchor)| anchor.to_string())
            .unwrap_or_else(|| panic!("{name}: no docs link\n{help}"));
        assert!(
            page.lines().any(|l| l == format!("## {anchor}")),
            "{name}: docs/commands.md has no section `## {anchor}`"
        );
    }
}

#[test]
fn hook_help_s_settings_snippet_copies_as_the_plugin_s_hooks() {
    let plugin: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/plugins/claude-code/hooks/hooks.json"
        ))
        .unwrap(),
    )
    .unwrap();
    for columns in [80, 120] {
        let help = help_at(&["hook"], columns);
        let snippet: Vec<&str> = help
            .lines()
            .skip_while(|l| *l != "  {")
            .take_while(|l| l.starts_with("  "))
            .map(|l| &l[2..])
            .collect();
        let settings: Value = serde_json::from_str(&snippet.join("\n"))
            .unwrap_or_else(|e| panic!("at {columns} columns, not JSON: {e}\n{help}"));
        let hooks = settings["hooks"].as_object().unwrap();
        let events: Vec<&String> = hooks.keys().collect();
        let plugin_events: Vec<&String> = plugin["hooks"].as_object().unwrap().keys().collect();
        assert_eq!(events, plugin_events);
        for (event, entries) in hooks {
            let entry = &entries[0];
            assert_eq!(
                entry["matcher"], plugin["hooks"][event][0]["matcher"],
                "{event}"
            );
            assert_eq!(entry["hooks"][0]["command"], "mcp-lock hook claude-code");
        }
    }
}

#[test]
fn completions_are_generated_for_bash_and_zsh() {
    for shell in ["bash", "zsh", "fish"] {
        let out = common::command(common::bin())
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).contains("verify"));
    }
}

#[test]
fn unknown_flag_is_a_usage_error() {
    let out = common::command(common::bin())
        .args(["verify", "--frobnicate"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn hash_refuses_a_definition_without_a_string_name_with_exit_1() {
    for (input, expected) in [
        (
            r#"{"name": 7, "description": "x"}"#,
            "-: the definition has no string \"name\"",
        ),
        (
            r#"{"foo": 1}"#,
            "-: the definition has no string \"name\", so it cannot be pinned (expected a tool definition",
        ),
        (
            r#"{"tools": [{"name": "a"}, {"title": "b"}]}"#,
            "-: definition #2 has no string \"name\"",
        ),
    ] {
        let (code, out, err) = hash_stdin(input, &[]);
        assert_eq!(code, 1, "{input}: {out}{err}");
        assert!(err.contains(expected), "{input}: {err}");
        assert_eq!(err.lines().count(), 1, "{input}: {err}");
        assert!(!out.contains("(set of"), "{input}: {out}");
        let (code, out, _) = hash_stdin(input, &["--format", "json"]);
        assert_eq!(code, 1, "{input}: {out}");
        let doc: Value = serde_json::from_str(&out).unwrap();
        let nameless = doc["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"].is_null())
            .unwrap();
        assert!(nameless["hash"].is_string(), "the recipe hashes it: {out}");
        assert_eq!(
            nameless["error"], "has no string \"name\", so it cannot be pinned",
            "{out}"
        );
    }
}

#[test]
fn hash_of_a_json_rpc_error_answer_is_refused_with_exit_1_and_its_message() {
    let answer = r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}"#;
    for format in ["text", "json"] {
        let (code, out, err) = hash_stdin(answer, &["--format", format]);
        assert_eq!(code, 1, "{out}{err}");
        assert_eq!(out, "", "nothing is hashed");
        assert_eq!(
            err.trim_end(),
            "error: -: a JSON-RPC error answer, not a tools/list result (-32601: Method not found); nothing to hash"
        );
    }
}

#[test]
fn hash_refuses_the_same_file_named_twice() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.json");
    std::fs::write(&page, r#"[{"name": "a"}]"#).unwrap();
    let page = page.display().to_string();
    let other = format!("{}/./page.json", dir.path().display());
    for (files, expected) in [
        (
            vec![page.as_str(), page.as_str()],
            format!("{page} is named twice"),
        ),
        (
            vec![page.as_str(), other.as_str()],
            format!("{other} and {page} are the same file"),
        ),
    ] {
        let out = common::command(common::bin())
            .arg("hash")
            .args(&files)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&expected), "{err}");
        assert!(out.stdout.is_empty());
    }
    // Standard input redirected from a file named too is the same file.
    let out = common::command(common::bin())
        .args(["hash", &page, "-"])
        .stdin(std::fs::File::open(&page).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("- and "));
}

#[test]
fn hash_of_a_listing_is_the_same_whether_streamed_or_read_whole() {
    let tools = r#"[{"name":"b","x":{"z":1,"a":[1.50,"\u00e9"]}},{"name":"a","d":"\ud83d"}]"#;
    let answer = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":{tools}}}}}"#);
    let streamed = hash_stdin(&answer, &[]);
    // A repeated `result` (the last one counts) is left to the whole-text reader.
    let repeated = format!(r#"{{"result":{{"tools":[]}},"result":{{"tools":{tools}}}}}"#);
    let whole = hash_stdin(&repeated, &[]);
    assert_eq!(streamed.0, 0, "{streamed:?}");
    assert!(streamed.1.ends_with("  (set of 2 tools)\n"), "{streamed:?}");
    assert_eq!(streamed, whole);
    let as_json = hash_stdin(&answer, &["--format", "json"]);
    assert_eq!(as_json, hash_stdin(&repeated, &["--format", "json"]));
}

/// README.md, whose demo block and exit-code table these tests hold to the binary.
fn readme_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")
}

const DEMO_START: &str = "<!-- demo-output:start -->\n";
const DEMO_END: &str = "<!-- demo-output:end -->";

/// The quick start's drift, run as README says: `update --yes` in a copy of
/// examples/demo laid out as in the tree (the fixture at
/// ../../target/debug/examples/fixture_server), revision "a" changed to "b", then
/// `verify` of the Claude Code profile, quiet (no timings). Returns README's console
/// block of what it printed, the clone's folder written `/path/to/mcp-lock` and the
/// fixture binary's sha256 (new with every build) `…`.
fn quick_start_drift_block() -> String {
    let fixture = common::fixture();
    let root = tempfile::tempdir().unwrap();
    let demo = root.path().join("examples").join("demo");
    std::fs::create_dir_all(&demo).unwrap();
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo");
    for name in [".mcp.json", "mcp-lock.toml"] {
        std::fs::copy(source.join(name), demo.join(name)).unwrap();
    }
    let examples = root.path().join("target/debug/examples");
    std::fs::create_dir_all(&examples).unwrap();
    std::fs::copy(&fixture, examples.join("fixture_server")).unwrap();
    let home = root.path().join("home");
    let run = |args: &[&str]| {
        common::command_in(common::bin(), &home)
            .args(args)
            .current_dir(&demo)
            .output()
            .unwrap()
    };
    let pinned = run(&["update", "--yes"]);
    assert_eq!(
        pinned.status.code(),
        Some(0),
        "update --yes: {}",
        String::from_utf8_lossy(&pinned.stderr)
    );
    let config = std::fs::read_to_string(demo.join(".mcp.json")).unwrap();
    assert_eq!(
        config.matches("\"a\"").count(),
        1,
        "the demo's revision: {config}"
    );
    std::fs::write(demo.join(".mcp.json"), config.replace("\"a\"", "\"b\"")).unwrap();
    let command = ["verify", "--client", "claude-code", "--quiet"];
    let verified = run(&command);
    assert_eq!(verified.status.code(), Some(1), "verify after the drift");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&verified.stdout),
        String::from_utf8_lossy(&verified.stderr)
    );
    let printed = without_build_hashes(
        &printed.replace(&*root.path().to_string_lossy(), "/path/to/mcp-lock"),
    );
    format!(
        "```console\n$ mcp-lock {}\n{printed}```\n",
        command.join(" ")
    )
}

/// `text` with the hex digits after each "(sha256 " written `…`.
fn without_build_hashes(text: &str) -> String {
    let marker = "(sha256 ";
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        let after = &rest[at + marker.len()..];
        let digits = after.len()
            - after
                .trim_start_matches(|c: char| c.is_ascii_hexdigit())
                .len();
        out.push_str(&rest[..at + marker.len()]);
        out.push('…');
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

#[test]
fn readme_demo_output_is_what_the_quick_start_prints() {
    let block = quick_start_drift_block();
    let readme = std::fs::read_to_string(readme_path()).unwrap();
    let start = readme
        .find(DEMO_START)
        .expect("README has the demo-output start marker")
        + DEMO_START.len();
    let end = start
        + readme[start..]
            .find(DEMO_END)
            .expect("README has the demo-output end marker");
    if std::env::var_os("MCP_LOCK_UPDATE_SNAPSHOTS").is_some() {
        let updated = format!("{}{block}{}", &readme[..start], &readme[end..]);
        std::fs::write(readme_path(), updated).unwrap();
        return;
    }
    assert_eq!(
        &readme[start..end],
        block,
        "README's demo output is stale; run MCP_LOCK_UPDATE_SNAPSHOTS=1 cargo test --test cli cli_misc::readme_demo and review the diff"
    );
}

/// Every exit code the binary has, by an exhaustive match: a new `ExitCode` variant
/// does not compile here until it is listed.
fn every_exit_code() -> Vec<i32> {
    use mcp_lock::verdict::exit_codes::ExitCode;
    let all = [
        ExitCode::Success,
        ExitCode::Drift,
        ExitCode::Usage,
        ExitCode::Unverified,
        ExitCode::ApprovalNeeded,
        ExitCode::InvalidArguments,
        ExitCode::ServerExited,
        ExitCode::Denied,
        ExitCode::Interrupted,
    ];
    for code in all {
        match code {
            ExitCode::Success
            | ExitCode::Drift
            | ExitCode::Usage
            | ExitCode::Unverified
            | ExitCode::ApprovalNeeded
            | ExitCode::InvalidArguments
            | ExitCode::ServerExited
            | ExitCode::Denied
            | ExitCode::Interrupted => {}
        }
    }
    let mut codes: Vec<i32> = all.into_iter().map(i32::from).collect();
    codes.sort_unstable();
    codes.dedup();
    codes
}

#[test]
fn readme_and_book_exit_code_tables_list_every_code_the_binary_has() {
    let book = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/exit-codes.md");
    for (path, heading) in [
        (readme_path(), "\n## Exit codes\n"),
        (book, "# Exit codes\n"),
    ] {
        let text = std::fs::read_to_string(&path).unwrap();
        let section = text
            .split_once(heading)
            .unwrap_or_else(|| panic!("{} has no exit-code section", path.display()))
            .1;
        let table: Vec<i32> = section
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .filter_map(|l| {
                l.trim_start_matches('|')
                    .split('|')
                    .next()?
                    .trim()
                    .parse()
                    .ok()
            })
            .collect();
        assert_eq!(
            table,
            every_exit_code(),
            "the exit-code table of {}",
            path.display()
        );
    }
}
