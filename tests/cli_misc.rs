//! `mcp-lock hash`, `--help` and completions through the real binary.

mod common;

use std::io::Write;
use std::process::Stdio;

use serde_json::Value;

fn vectors() -> Value {
    serde_json::from_str(include_str!("data/tool-definition-hash-vectors.json")).unwrap()
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
    for cmd in ["update", "verify", "hash", "completions"] {
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
