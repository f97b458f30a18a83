//! `mcp-lock hash`: the recipe's hashes for definitions given as files or stdin.

use std::io::Read;

use anyhow::Context;
use mcp_lock::exit_codes::ExitCode;
use mcp_lock::hash::{HashedTool, listing_set_hash};
use mcp_lock::json::Json;
use serde_json::json;

use crate::cli::{HashArgs, HashFormat};

pub fn run(args: HashArgs) -> anyhow::Result<ExitCode> {
    let files = if args.files.is_empty() {
        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            anyhow::bail!("no input: name a FILE, or pipe JSON into `mcp-lock hash -`");
        }
        vec![std::path::PathBuf::from("-")]
    } else {
        args.files
    };
    let mut tools = Vec::new();
    let mut single = files.len() == 1;
    for file in &files {
        let name = file.display().to_string();
        let text = if name == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read standard input")?;
            text
        } else {
            std::fs::read_to_string(file).with_context(|| format!("cannot read {name}"))?
        };
        let value = Json::parse(&text).map_err(|e| anyhow::anyhow!("{name}: not JSON: {e}"))?;
        match definitions(&value) {
            Some(defs) => {
                single = false;
                tools.extend(defs.iter().cloned().map(HashedTool::new));
            }
            None if value.is_object() => tools.push(HashedTool::new(value)),
            None => anyhow::bail!(
                "{name}: expected a tool definition (object), a listing (array) or a tools/list result"
            ),
        }
    }
    let set = listing_set_hash(&tools);
    let all_hashed = tools.iter().all(|t| t.hash.is_ok()) && (single || set.is_ok());
    match args.format {
        HashFormat::Json => {
            let doc = json!({
                "tools": tools.iter().map(|t| json!({
                    "name": t.name,
                    "hash": t.hash.as_ref().ok(),
                    "error": t.hash.as_ref().err().map(|e| e.to_string()),
                })).collect::<Vec<_>>(),
                "set_hash": set.as_ref().ok(),
                "set_error": set.as_ref().err().map(|e| e.to_string()),
            });
            println!("{}", serde_json::to_string_pretty(&doc)?);
        }
        HashFormat::Text => {
            for t in &tools {
                let name = t.name.as_deref().map_or_else(
                    || "(no name)".to_string(),
                    mcp_lock::text::escape_for_terminal,
                );
                match &t.hash {
                    Ok(hash) => println!("{hash}  {name}"),
                    Err(e) => {
                        println!("{:<64}  {name}", "-");
                        super::error(&format!("{name}: no hash: {e}"));
                    }
                }
            }
            if !single {
                match &set {
                    Ok(hash) => println!(
                        "{hash}  (set of {})",
                        mcp_lock::text::count(tools.len(), "tool")
                    ),
                    Err(e) => super::error(&format!("no set hash: {e}")),
                }
            }
        }
    }
    Ok(if all_hashed {
        ExitCode::Success
    } else {
        ExitCode::Drift
    })
}

/// The tool array of a listing: a bare array, a tools/list result, or a JSON-RPC answer.
/// An object with a `name` is a definition, even if it has a `tools` member of its own.
fn definitions(value: &Json) -> Option<&[Json]> {
    if value.get("name").is_some() {
        return None;
    }
    value
        .as_array()
        .or_else(|| value.get("tools").and_then(Json::as_array))
        .or_else(|| {
            value
                .get("result")
                .and_then(|r| r.get("tools"))
                .and_then(Json::as_array)
        })
}
