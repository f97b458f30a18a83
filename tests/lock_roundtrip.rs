//! The lock writer and reader agree on everything a server or config can send:
//! awkward names, args and definitions read back equal and re-render to the same bytes.

use std::collections::BTreeMap;

use mcp_lock::hash::definition_hash;
use mcp_lock::json::Json;
use mcp_lock::lock::{LockedServer, LockedTool, Lockfile, Reached, parse_lock, render_lock};

fn tool(definition: &str) -> (String, LockedTool) {
    let definition = Json::parse(definition).unwrap();
    let name = definition.get("name").and_then(Json::as_str).unwrap();
    let hash = definition_hash(&definition).unwrap();
    (
        name,
        LockedTool {
            hash,
            definition: definition.into(),
        },
    )
}

fn awkward_lock() -> Lockfile {
    let tools: BTreeMap<String, LockedTool> = [
        tool(r#"{"name":"quotes'''inside","description":"has ''' and \" and \\ and \u007f"}"#),
        tool(r#"{"name":"bidi","description":"admin\u202e\u2066 \u2028 line \u009b[2J \ud83d\ude00"}"#),
        tool(r#"{"name":"lone","description":"x\uDEADy","inputSchema":{"type":"object","properties":{"n":{"maximum":12345678901234567890,"minimum":1.0,"default":-0}}}}"#),
        tool(r#"{"name":"name with\nnewline\tand tab","inputSchema":{}}"#),
        tool(r#"{"name":"empty","inputSchema":{"type":"object","properties":{},"required":[]}}"#),
    ]
    .into_iter()
    .collect();
    let server = |name: &str| LockedServer {
        name: name.into(),
        reached: Reached::Stdio {
            command: "np\"x".into(),
            args: vec!["-y".into(), "${TOKEN}".into(), "a'b\\c\u{1b}".into()],
            env: vec!["TOKEN".into()],
        },
        protocol_version: "2025-11-25".into(),
        client_info: Json::parse(r#"{"name":"mcp-lock","version":"0.1.0"}"#).unwrap(),
        client_capabilities: Json::parse("{}").unwrap(),
        server_info: Json::parse(r#"{"name":"it's \u202e odd","version":"1"}"#).unwrap(),
        list_changed: true,
        instructions_hash: Some("a".repeat(64)),
        tools: tools.clone(),
    };
    let mut lock = Lockfile::default();
    for name in [
        "plain",
        "with \"quotes\" and 'apostrophes'",
        "ünïcödé\u{2028}",
    ] {
        lock.servers.insert(name.into(), server(name));
    }
    lock
}

#[test]
fn awkward_names_args_and_definitions_round_trip_exactly() {
    let lock = awkward_lock();
    let text = render_lock(&lock);
    let back = parse_lock(&text, "mcp.lock").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(render_lock(&back), text, "rendering is deterministic");
    for (name, server) in &lock.servers {
        let read = &back.servers[name];
        assert_eq!(read.reached, server.reached);
        assert_eq!(read.server_info.canonical(), server.server_info.canonical());
        for (tool, pinned) in &server.tools {
            // Member order is not kept (the lock writes RFC 8785 order); the canonical
            // form, and so the hash, is.
            assert_eq!(
                read.tools[tool].definition.canonical(),
                pinned.definition.canonical()
            );
            assert_eq!(read.tools[tool].hash, pinned.hash);
        }
    }
}

#[test]
fn no_character_that_could_hide_or_reorder_text_is_written_raw() {
    let text = render_lock(&awkward_lock());
    for c in text.chars() {
        assert!(
            c == '\n' || !mcp_lock::text::is_unsafe(c),
            "raw {c:?} in the lock:\n{text}"
        );
    }
}

#[test]
fn a_repeated_member_in_a_recorded_json_field_is_a_lock_error() {
    let text = render_lock(&awkward_lock()).replacen(
        r#"server_info = "{\"name\":"#,
        r#"server_info = "{\"a\":1,\"a\":2,\"name\":"#,
        1,
    );
    let err = parse_lock(&text, "mcp.lock").unwrap_err().to_string();
    assert!(
        err.contains("server_info has repeated member name \"a\""),
        "{err}"
    );
}

#[test]
fn a_malformed_instructions_hash_is_a_lock_error() {
    let text = render_lock(&awkward_lock()).replacen(&"a".repeat(64), "not-a-hash", 1);
    let err = parse_lock(&text, "mcp.lock").unwrap_err().to_string();
    assert!(
        err.contains("instructions_hash is not 64 lowercase hex digits"),
        "{err}"
    );
}

#[test]
fn the_example_lock_is_a_valid_lock_pinning_server_memory() {
    let text = include_str!("../mcp.lock.example");
    let lock = parse_lock(text, "mcp.lock.example").unwrap();
    let memory = &lock.servers["memory"];
    assert_eq!(memory.tools.len(), 9);
    let (comment, written) = text.split_once('\n').unwrap();
    assert!(comment.contains("@modelcontextprotocol/server-memory"));
    assert_eq!(
        render_lock(&lock),
        written,
        "the example is exactly what this writer writes"
    );
}
