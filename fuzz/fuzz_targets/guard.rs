//! The guard's framing and decision path on random client and server byte streams:
//! no panic, and no tools/call reaches the server for a tool that is not approved.
//! Driven through `guard::proxy::seam` (the routing of both directions without a
//! process). The lock pins three tools; the policy is the default one or (flag bit 0)
//! one that fails every change, where a call may reach the server only after a
//! listing showed the tool with exactly its pinned definition.
//!
//! Input: a flag byte (bit 0 strict policy, bit 1 `--on-drift fail`, bit 2 a small
//! message limit), a read-size byte, then bursts separated by 0xFE (never in UTF-8
//! text), alternately from the client and from the server.

#![no_main]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use mcp_lock::live::guard::audit::AuditLog;
use mcp_lock::live::guard::pins::PinWatch;
use mcp_lock::live::guard::proxy::seam::Router;
use mcp_lock::live::guard::{GuardSetup, OnDrift, Session};
use mcp_lock::contract::hash::definition_hash;
use mcp_lock::base::json::Json;
use mcp_lock::records::lock::{LockedServer, LockedTool, PinnedServer, Reached};
use mcp_lock::verdict::policy::{Action, Policy, Rule};
use serde_json::Value;

/// The pinned tools (the seed corpus in scripts/fuzz.sh lists the same).
const TOOLS: &[&str] = &[
    r#"{"name":"echo","description":"Echoes the message back.","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}"#,
    r#"{"name":"add","description":"Adds two numbers.","inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}}"#,
    r#"{"name":"read_file","description":"Reads a file.","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}"#,
];

fn pins() -> (PinnedServer, HashMap<String, String>) {
    let mut tools = BTreeMap::new();
    let mut hashes = HashMap::new();
    for text in TOOLS {
        let definition = Json::parse(text).unwrap();
        let name = definition.get("name").and_then(Json::as_str).unwrap();
        let hash = definition_hash(&definition).unwrap();
        hashes.insert(name.clone(), hash.clone());
        tools.insert(
            name,
            LockedTool {
                hash,
                definition: definition.into(),
            },
        );
    }
    let listing = LockedServer {
        name: "demo".into(),
        profile: "bare".into(),
        reached: Reached::Stdio {
            command: "demo-server".into(),
            args: Vec::new(),
            env: Vec::new(),
            code_env: Vec::new(),
        },
        protocol_version: "2025-06-18".into(),
        client_info: Json::parse(r#"{"name":"mcp-lock","version":"0.1.0"}"#).unwrap(),
        client_capabilities: Json::parse("{}").unwrap(),
        server_info: Json::parse(r#"{"name":"demo","version":"1.0.0"}"#).unwrap(),
        list_changed: false,
        instructions_hash: None,
        tools,
        prompts: None,
        resource_templates: None,
        resources: None,
    };
    (PinnedServer::single(listing), hashes)
}

/// Every message of a line: the items of a batch, or the line itself.
fn messages(line: &[u8]) -> Vec<Value> {
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Array(items)) => items,
        Ok(single) => vec![single],
        Err(_) => Vec::new(),
    }
}

fuzz_target!(|data: &[u8]| {
    let [flags, read, rest @ ..] = data else {
        return;
    };
    let strict = flags & 1 != 0;
    let (pinned, hashes) = pins();
    let mut policy = Policy::default();
    if strict {
        policy.set(&Rule::ALL, Action::Fail);
    }
    let on_drift = if flags & 2 != 0 {
        OnDrift::Fail
    } else {
        OnDrift::Hide
    };
    let setup = GuardSetup {
        session: Session::new("demo", Some(pinned), policy, on_drift),
        audit: AuditLog::disabled("demo", Default::default()),
        pins: PinWatch::new(PathBuf::from("/nonexistent/mcp-lock-fuzz/mcp.lock")),
        max_message_bytes: if flags & 4 != 0 { 256 } else { 1 << 20 },
    };
    let mut router = Router::new(setup).expect("a session without an audit file");
    let read_size = [1, 3, 16, 100, 4096, 65536][usize::from(*read) % 6];
    // Every (tool, hash) any server line listed: more than the guard accepted, so a
    // call outside it was never approved.
    let mut listed: HashMap<String, HashSet<String>> = HashMap::new();
    for (i, burst) in rest.split(|&b| b == 0xfe).enumerate() {
        if i % 2 == 1 {
            for line in burst.split(|&b| b == b'\n') {
                note_listed(line, &mut listed);
            }
            router.from_server(burst, read_size);
            continue;
        }
        let routed = router.from_client(burst, read_size);
        for line in routed.to_server.split(|&b| b == b'\n') {
            for message in messages(line) {
                if message.get("method").and_then(Value::as_str) != Some("tools/call") {
                    continue;
                }
                let name = message.pointer("/params/name").and_then(Value::as_str);
                let name =
                    name.unwrap_or_else(|| panic!("forwarded a call naming no tool: {message}"));
                let pinned = hashes
                    .get(name)
                    .unwrap_or_else(|| panic!("forwarded a call to the unpinned tool {name:?}"));
                let seen = listed.get(name);
                assert!(
                    seen.is_some(),
                    "forwarded a call to {name:?} before any listing showed it"
                );
                if strict {
                    assert!(
                        seen.is_some_and(|hashes| hashes.contains(pinned)),
                        "forwarded a call to {name:?}, never listed as pinned, under a policy failing every change"
                    );
                }
            }
        }
    }
});

fn note_listed(line: &[u8], listed: &mut HashMap<String, HashSet<String>>) {
    let Some(message) = std::str::from_utf8(line)
        .ok()
        .and_then(|t| Json::parse(t).ok())
    else {
        return;
    };
    let items = match &message {
        Json::Array(items) => items.iter().collect(),
        single => vec![single],
    };
    for item in items {
        let Some(tools) = item
            .get("result")
            .and_then(|r| r.get("tools"))
            .and_then(Json::as_array)
        else {
            continue;
        };
        for tool in tools {
            if let (Some(name), Ok(hash)) = (
                tool.get("name").and_then(Json::as_str),
                definition_hash(tool),
            ) {
                listed.entry(name).or_default().insert(hash);
            }
        }
    }
}
