//! `mcp-lock hash`: the recipe's hashes for definitions given as files or stdin.

use std::fmt::Write as _;
use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;
use mcp_lock::base::json::Json;
use mcp_lock::base::text::escape_for_terminal;
use mcp_lock::contract::hash::{HashedTool, ToolHash, hash_listing_text, tool_hashes_set_hash};
use mcp_lock::verdict::exit_codes::ExitCode;
use serde_json::json;

use crate::cli::{HashArgs, HashFormat};

/// One definition read, and where from.
struct Definition {
    tool: ToolHash,
    /// Where it was read, for messages: the file, and its place in a listing.
    place: String,
}

impl Definition {
    /// Why it cannot be pinned: it has no hash, or no string name (a tools/list
    /// listing names every tool; the recipe still hashes any object, for its vectors).
    fn problem(&self) -> Option<String> {
        match (&self.tool.hash, &self.tool.name) {
            (Err(e), _) => Some(format!("has no hash: {e}")),
            (Ok(_), None) => Some("has no string \"name\", so it cannot be pinned".into()),
            (Ok(_), Some(_)) => None,
        }
    }
}

pub fn run(args: HashArgs) -> anyhow::Result<ExitCode> {
    let files = if args.files.is_empty() {
        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            anyhow::bail!("no input: name a FILE, or pipe JSON into `mcp-lock hash -`");
        }
        vec![PathBuf::from("-")]
    } else {
        args.files
    };
    refuse_repeated_files(&files)?;
    let mut read = Vec::new();
    let mut single = files.len() == 1;
    for file in &files {
        let name = file.display().to_string();
        let bytes = if name == "-" {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .context("cannot read standard input")?;
            bytes
        } else {
            std::fs::read(file).with_context(|| format!("cannot read {name}"))?
        };
        // A plain listing is hashed as it is read; anything else is read whole below.
        if let Some((_, hashes)) = hash_listing_text(&bytes) {
            single = false;
            read.extend(hashes.into_iter().enumerate().map(|(i, tool)| Definition {
                tool,
                place: format!("{name}: definition #{}", i + 1),
            }));
            // Freed when the process ends, which is soon (as `read` below).
            std::mem::forget(bytes);
            continue;
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "stream did not contain valid UTF-8",
                )
            })
            .with_context(|| {
                if name == "-" {
                    "cannot read standard input".to_string()
                } else {
                    format!("cannot read {name}")
                }
            })?;
        let value = Json::parse(&text).map_err(|e| anyhow::anyhow!("{name}: not JSON: {e}"))?;
        if let Some(why) = error_answer(&value) {
            super::error(&format!(
                "{name}: a JSON-RPC error answer, not a tools/list result ({why}); nothing to hash"
            ));
            return Ok(ExitCode::Drift);
        }
        let mut value = value;
        match take_definitions(&mut value) {
            Some(defs) => {
                single = false;
                read.extend(defs.into_iter().enumerate().map(|(i, def)| Definition {
                    tool: ToolHash::from(&HashedTool::new(def)),
                    place: format!("{name}: definition #{}", i + 1),
                }));
            }
            None if value.is_object() => read.push(Definition {
                tool: ToolHash::from(&HashedTool::new(value)),
                place: format!("{name}: the definition"),
            }),
            None => anyhow::bail!(
                "{name}: expected a tool definition (object), a listing (array) or a tools/list result"
            ),
        }
    }
    let problems: Vec<Option<String>> = read.iter().map(Definition::problem).collect();
    let set = tool_hashes_set_hash(read.iter().map(|r| &r.tool));
    let all_hashed = problems.iter().all(Option::is_none) && (single || set.is_ok());
    match args.format {
        HashFormat::Json => {
            let doc = json!({
                "tools": read.iter().zip(&problems).map(|(r, problem)| json!({
                    "name": r.tool.name,
                    "hash": r.tool.hash.as_ref().ok(),
                    "error": problem,
                })).collect::<Vec<_>>(),
                "set_hash": set.as_ref().ok(),
                "set_error": set.as_ref().err().map(|e| e.to_string()),
            });
            println!("{}", serde_json::to_string_pretty(&doc)?);
            for (r, problem) in read.iter().zip(&problems) {
                if let Some(problem) = problem {
                    super::error(&format!("{} {problem}", r.place));
                }
            }
        }
        HashFormat::Text => {
            // Written at once: one line per definition would be a write each.
            let mut text = String::new();
            for (r, problem) in read.iter().zip(&problems) {
                let name = r
                    .tool
                    .name
                    .as_deref()
                    .map_or_else(|| "(no name)".to_string(), escape_for_terminal);
                match &r.tool.hash {
                    Ok(hash) => {
                        let _ = writeln!(text, "{hash}  {name}");
                    }
                    Err(_) => {
                        let _ = writeln!(text, "{:<64}  {name}", "-");
                    }
                }
                if let Some(problem) = problem {
                    print_all(&std::mem::take(&mut text));
                    let hint = if single && r.tool.name.is_none() {
                        " (expected a tool definition, a listing or a tools/list result)"
                    } else {
                        ""
                    };
                    super::error(&format!("{} {problem}{hint}", r.place));
                }
            }
            // Each definition without a hash was named above; that is why.
            if !single && problems.iter().all(Option::is_none) {
                match &set {
                    Ok(hash) => {
                        let _ = writeln!(
                            text,
                            "{hash}  (set of {})",
                            mcp_lock::base::text::count(read.len(), "tool")
                        );
                    }
                    Err(e) => {
                        print_all(&std::mem::take(&mut text));
                        super::error(&format!("no set hash: {e}"));
                    }
                }
            }
            print_all(&text);
        }
    }
    // The process ends next: freeing every definition one by one would only cost time.
    std::mem::forget(read);
    Ok(if all_hashed {
        ExitCode::Success
    } else {
        ExitCode::Drift
    })
}

/// A file named twice (by any path, or as `-` when stdin is that file) would count
/// its definitions twice: the set hash of a listing no server sent.
fn refuse_repeated_files(files: &[PathBuf]) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let mut seen: Vec<((u64, u64), String)> = Vec::new();
    for file in files {
        let name = file.display().to_string();
        let metadata = if name == "-" {
            use std::os::fd::AsFd;
            std::io::stdin()
                .as_fd()
                .try_clone_to_owned()
                .ok()
                .and_then(|fd| std::fs::File::from(fd).metadata().ok())
        } else {
            std::fs::metadata(file).ok()
        };
        // What cannot be looked at is reported when it is read.
        let Some(metadata) = metadata else { continue };
        let id = (metadata.dev(), metadata.ino());
        match seen.iter().find(|(seen, _)| *seen == id) {
            Some((_, first)) if *first == name => {
                anyhow::bail!("{name} is named twice; name each file once")
            }
            Some((_, first)) => {
                anyhow::bail!("{name} and {first} are the same file; name each file once")
            }
            None => seen.push((id, name)),
        }
    }
    Ok(())
}

/// A JSON-RPC answer that carries an error instead of a result: its code and message.
fn error_answer(value: &Json) -> Option<String> {
    let error = value.get("error")?;
    if value.get("result").is_some() || value.get("name").is_some() {
        return None;
    }
    let code = error.get("code").map(|c| c.to_value().to_string());
    let message = error.get("message").and_then(Json::as_str);
    Some(match (code, message) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        (Some(code), None) => format!("code {code}"),
        (None, Some(message)) => message,
        (None, None) => "no code or message".into(),
    })
}

/// Writes to stdout as println! would, in one write; a closed stdout (`| head`) ends
/// the output quietly instead of in a panic.
fn print_all(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// [`definitions`], taken out of `value` rather than copied.
fn take_definitions(value: &mut Json) -> Option<Vec<Json>> {
    definitions(value)?;
    let holder = match value {
        Json::Array(_) => value,
        _ if value.get("tools").and_then(Json::as_array).is_some() => last_member(value, "tools")?,
        _ => last_member(last_member(value, "result")?, "tools")?,
    };
    match std::mem::replace(holder, Json::Null) {
        Json::Array(items) => Some(items),
        _ => None,
    }
}

/// The last member named `key`: the one [`Json::get`] reads.
fn last_member<'a>(value: &'a mut Json, key: &str) -> Option<&'a mut Json> {
    match value {
        Json::Object(members) => members
            .iter_mut()
            .rev()
            .find(|(k, _)| k.eq_str(key))
            .map(|(_, v)| v),
        _ => None,
    }
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
