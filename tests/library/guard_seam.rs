//! The guard's routing seam (`guard::proxy::seam`, what the fuzz targets drive)
//! decides as the guard does: a call to a pinned tool listed as pinned is forwarded,
//! a call to a tool the lock does not pin is answered by the guard, and a call before
//! any listing is refused.

use std::collections::BTreeMap;
use std::path::PathBuf;

use mcp_lock::base::json::Json;
use mcp_lock::contract::hash::definition_hash;
use mcp_lock::live::guard::audit::AuditLog;
use mcp_lock::live::guard::pins::PinWatch;
use mcp_lock::live::guard::proxy::seam::Router;
use mcp_lock::live::guard::{GuardSetup, OnDrift, Session};
use mcp_lock::records::lock::{LockedServer, LockedTool, PinnedServer, Reached};
use mcp_lock::verdict::policy::Policy;

const ECHO: &str = r#"{"name":"echo","description":"Echoes the message back.","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}"#;

fn router() -> Router {
    let definition = Json::parse(ECHO).unwrap();
    let tools = BTreeMap::from([(
        "echo".to_string(),
        LockedTool {
            hash: definition_hash(&definition).unwrap(),
            definition: definition.into(),
        },
    )]);
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
    let pins = PinnedServer::single(listing);
    let dir = tempfile::tempdir().unwrap();
    Router::new(GuardSetup {
        session: Session::new("demo", Some(pins), Policy::default(), OnDrift::Hide),
        audit: AuditLog::disabled("demo", Default::default()),
        pins: PinWatch::new(PathBuf::from(dir.path()).join("mcp.lock")),
        max_message_bytes: 1 << 20,
    })
    .unwrap()
}

fn call(id: u32, tool: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"message":"hi"}}}}}}"#
    )
}

#[test]
fn seam_forwards_only_calls_to_pinned_tools_a_listing_showed() {
    let mut router = router();
    let early = router.from_client(format!("{}\n", call(1, "echo")).as_bytes(), 7);
    assert!(
        early.to_server.is_empty(),
        "a call before any listing is not forwarded"
    );
    assert!(String::from_utf8_lossy(&early.to_client).contains("LISTING_NOT_VERIFIED"));

    let list = router.from_client(
        b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n",
        7,
    );
    assert!(
        !list.to_server.is_empty(),
        "the listing request goes to the server"
    );
    let evil = r#"{"name":"evil","inputSchema":{"type":"object"}}"#;
    let answer =
        format!("{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"tools\":[{ECHO},{evil}]}}}}\n");
    let to_client = String::from_utf8(router.from_server(answer.as_bytes(), 5)).unwrap();
    assert!(
        to_client.contains("\"echo\"") && !to_client.contains("evil"),
        "{to_client}"
    );

    let calls = format!("{}\n{}\n", call(3, "echo"), call(4, "evil"));
    let routed = router.from_client(calls.as_bytes(), 3);
    let to_server = String::from_utf8(routed.to_server).unwrap();
    assert!(
        to_server.contains("\"id\":3") && !to_server.contains("evil"),
        "{to_server}"
    );
    assert!(String::from_utf8_lossy(&routed.to_client).contains("UNPINNED_TOOL"));
}
