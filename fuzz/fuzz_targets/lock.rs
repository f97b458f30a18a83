//! The lock reader never panics on any text; its reader of the writer's own layout
//! agrees with the TOML reader wherever it answers; what it reads renders and reads
//! back equal (JSON compared in canonical form, as the lock keeps it); and a lock the
//! writer renders from arbitrary names and definitions always reads back equal.
//! Input: a mode byte, then lock text (mode even) or parts separated by 0xFF (mode
//! odd): server, profile, command, args (comma separated), protocol version,
//! serverInfo JSON, then tool definitions as JSON.

#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use mcp_lock::contract::hash::definition_hash;
use mcp_lock::base::json::Json;
use mcp_lock::records::lock::{
    Approval, LockedServer, LockedTool, Lockfile, PinnedServer, Reached, layout_and_toml_readings,
    parse_lock, parse_lock_server, parse_lock_with_lines, render_lock,
};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        read_text(&String::from_utf8_lossy(rest));
    } else {
        write_parts(rest, mode);
    }
});

fn read_text(text: &str) {
    // The reader of the writer's own layout answers only as the TOML reader would.
    if let Some((layout, toml)) = layout_and_toml_readings(text) {
        assert_eq!(
            Some(layout),
            toml,
            "the layout reader and the TOML reader differ"
        );
    }
    let Ok(lock) = parse_lock(text, "mcp.lock") else {
        return;
    };
    assert!(parse_lock_with_lines(text, "mcp.lock").is_ok());
    for (name, pinned) in &lock.servers {
        let one = parse_lock_server(text, "mcp.lock", name).expect("one server of a good lock");
        assert_eq!(
            one.as_ref(),
            Some(pinned),
            "server {name:?} read alone differs"
        );
    }
    round_trip(&lock);
}

fn round_trip(lock: &Lockfile) {
    let text = render_lock(lock);
    let back = parse_lock(&text, "mcp.lock")
        .unwrap_or_else(|e| panic!("a rendered lock does not read back: {e}\n{text}"));
    assert_eq!(
        canonical(&back),
        canonical(lock),
        "a rendered lock reads back different\n{text}"
    );
    assert_eq!(render_lock(&back), text, "rendering is not deterministic");
}

/// The lock with every definition and JSON field in canonical member order: the lock
/// keeps them in canonical form (what hashes are of), not in the order they were sent.
fn canonical(lock: &Lockfile) -> Lockfile {
    let mut lock = lock.clone();
    let sort = |items: &mut BTreeMap<String, LockedTool>| {
        for tool in items.values_mut() {
            let text = tool
                .definition
                .canonical()
                .expect("a pinned definition has a canonical form");
            tool.definition = Json::parse(&text).unwrap().into();
        }
    };
    for pinned in lock.servers.values_mut() {
        for listing in pinned.profiles.values_mut() {
            for value in [
                &mut listing.server_info,
                &mut listing.client_info,
                &mut listing.client_capabilities,
            ] {
                *value = Json::parse(&value.canonical().expect("a canonical form")).unwrap();
            }
            sort(&mut listing.tools);
            for items in [
                &mut listing.prompts,
                &mut listing.resource_templates,
                &mut listing.resources,
            ] {
                if let Some(items) = items {
                    sort(items);
                }
            }
        }
    }
    lock
}

fn write_parts(data: &[u8], mode: u8) {
    let parts: Vec<String> = data
        .split(|&b| b == 0xff)
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let part = |i: usize| parts.get(i).cloned().unwrap_or_default();
    let mut tools = BTreeMap::new();
    for text in parts.iter().skip(6) {
        let Ok(definition) = Json::parse(text) else {
            continue;
        };
        let (Some(name), Ok(hash)) = (
            definition.get("name").and_then(Json::as_str),
            definition_hash(&definition),
        ) else {
            continue;
        };
        tools.insert(
            name,
            LockedTool {
                hash,
                definition: definition.into(),
            },
        );
    }
    let object = |text: &str, default: &str| match Json::parse(text) {
        Ok(value) if value.is_object() && value.canonical().is_ok() => value,
        _ => Json::parse(default).unwrap(),
    };
    let reached = if mode & 2 == 0 {
        Reached::Stdio {
            command: part(2),
            args: part(3).split(',').map(str::to_string).collect(),
            env: vec![part(0)],
            code_env: Vec::new(),
        }
    } else {
        Reached::Remote {
            kind: if mode & 4 == 0 {
                "sse"
            } else {
                "streamable-http"
            }
            .into(),
            url: part(2),
            headers: part(3).split(',').map(str::to_string).collect(),
            oauth_issuer: (mode & 8 != 0).then(|| part(1)),
        }
    };
    let listing = LockedServer {
        name: part(0),
        profile: part(1),
        reached,
        protocol_version: part(4),
        client_info: Json::parse(r#"{"name":"mcp-lock","version":"0.1.0"}"#).unwrap(),
        client_capabilities: Json::parse("{}").unwrap(),
        server_info: object(&part(5), r#"{"name":"s","version":"1"}"#),
        list_changed: mode & 16 != 0,
        instructions_hash: (mode & 32 != 0).then(|| "0".repeat(64)),
        tools: tools.clone(),
        prompts: (mode & 64 != 0).then(|| tools.clone()),
        resource_templates: None,
        resources: None,
    };
    let mut lock = Lockfile::default();
    let mut pins = PinnedServer::single(listing);
    // Any approval, or none (not recorded), from the mode's top bit and the length of
    // the parts.
    pins.approved = (mode & 128 != 0).then(|| Approval::ALL[parts.len() % Approval::ALL.len()]);
    lock.servers.insert(part(0), pins);
    round_trip(&lock);
}
