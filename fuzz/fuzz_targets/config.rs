//! Every config reader never panics: the client configs in each format and place
//! (JSON/JSONC, Codex TOML, Goose and Continue YAML, no extension at all, where the
//! format is told from the text) and mcp-lock.toml. Input: a selector byte, the text.
//! The same text read twice gives the same outcome.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use mcp_lock::servers::config::read_file;
use mcp_lock::verdict::policy::Policy;

/// Where a file may be: the name picks its format and host.
const PLACES: &[&str] = &[
    ".mcp.json",
    ".vscode/mcp.json",
    "User/settings.json",
    ".cursor/mcp.json",
    "home/.claude.json",
    ".gemini/settings.json",
    ".zed/settings.json",
    "opencode.jsonc",
    ".codex/config.toml",
    "goose/config.yaml",
    ".continue/mcpServers/servers.yaml",
    "mcp-servers",
    "mcp_settings.json",
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let index = usize::from(selector) % (PLACES.len() + 1);
    let Some(place) = PLACES.get(index) else {
        if let Err(e) = Policy::parse(&text, "mcp-lock.toml") {
            assert!(!e.to_string().is_empty(), "an empty error message");
        }
        return;
    };
    let file = Path::new("/project").join(place);
    let project = Path::new("/project");
    let first = read_file(&text, place, &file, project);
    let second = read_file(&text, place, &file, project);
    match (&first, &second) {
        (Ok(a), Ok(b)) => assert_eq!(a.entries.len(), b.entries.len()),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("reading the same config twice gave different results"),
    }
    if let Err(e) = first {
        let message = e.to_string();
        assert!(!message.is_empty(), "an empty error message");
    }
});
