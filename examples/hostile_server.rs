//! A stdio MCP server that misbehaves at the level of bytes and processes, for
//! tests/cli/hostile.rs: it floods stderr, never reads its stdin, writes one enormous line,
//! exits half-way through an answer or closes its output and lingers. It speaks just
//! enough of the handshake era to get there: `server/discover` is answered "method not
//! found", `initialize` with a tools capability, and `tools/list` with one tool.
//! Nothing it writes is held in memory whole, so a test can measure the client.

use std::io::{BufRead, Write};
use std::time::Duration;

use serde_json::{Value, json};

const HELP: &str = "\
hostile_server: a stdio MCP server that misbehaves, for mcp-lock's tests

Options (one MODE):
  --mode serve             behave (the baseline)
  --mode flood-stderr      write --bytes of 100-character stderr lines, then serve (a
                           client that does not read stderr meanwhile waits forever)
  --mode flood-then-die    write --bytes of stderr lines, then \"fatal: the last words\",
                           then exit 1 without answering anything
  --mode never-read        never read stdin: write --count ping requests to stdout,
                           then sleep for an hour
  --mode long-line         answer tools/list with one line of --bytes bytes (a JSON
                           string padded with x), written in 64 KB pieces
  --mode exit-mid-page     answer tools/list with half a line, then exit 4
  --mode close-stdout      after initialize, close stdout and sleep for an hour
  --bytes N                size for flood-* and long-line (default 64 MB)
  --count N                pings for never-read (default 100000)
  --tag TEXT               ignored; lets tests find this process in the process table";

fn main() {
    let mut mode = String::from("serve");
    let mut bytes: u64 = 64 * 1024 * 1024;
    let mut count: u64 = 100_000;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_default();
        match arg.as_str() {
            "--mode" => mode = value(),
            "--bytes" => bytes = value().parse().unwrap_or(bytes),
            "--count" => count = value().parse().unwrap_or(count),
            "--tag" => {
                value();
            }
            "--help" | "-h" => {
                println!("{HELP}");
                return;
            }
            other => {
                eprintln!("hostile_server: unknown option {other}");
                std::process::exit(2);
            }
        }
    }
    match mode.as_str() {
        "flood-then-die" => {
            flood_stderr(bytes);
            eprintln!("fatal: the last words");
            std::process::exit(1);
        }
        "flood-stderr" => flood_stderr(bytes),
        "never-read" => {
            let mut out = std::io::stdout().lock();
            for i in 0..count {
                let ping = json!({"jsonrpc": "2.0", "id": format!("ping-{i}"), "method": "ping"});
                if writeln!(out, "{ping}").is_err() {
                    break;
                }
            }
            let _ = out.flush();
            sleep_an_hour();
        }
        _ => {}
    }
    serve(&mode, bytes);
}

fn sleep_an_hour() -> ! {
    std::thread::sleep(Duration::from_secs(3600));
    std::process::exit(0);
}

/// Writes `bytes` of stderr in lines of 100 characters.
fn flood_stderr(bytes: u64) {
    let line = format!("{}\n", "noise ".repeat(17).get(..99).unwrap_or_default());
    // Buffered, so that the flood comes in large writes and its speed is the reader's.
    let mut err = std::io::BufWriter::with_capacity(64 * 1024, std::io::stderr().lock());
    let mut written = 0;
    while written < bytes {
        if err.write_all(line.as_bytes()).is_err() {
            return;
        }
        written += line.len() as u64;
    }
    let _ = err.flush();
}

fn serve(mode: &str, bytes: u64) {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let (Some(method), Some(id)) = (msg["method"].as_str(), msg.get("id").cloned()) else {
            continue;
        };
        let answer = match method {
            "initialize" => json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": msg["params"]["protocolVersion"].as_str().unwrap_or("2025-11-25"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1.0.0"},
            }}),
            "tools/list" => match mode {
                "long-line" => {
                    write_long_line(&mut out, &id, bytes);
                    continue;
                }
                "exit-mid-page" => {
                    let whole = tools_answer(&id).to_string();
                    let _ = out.write_all(&whole.as_bytes()[..whole.len() / 2]);
                    let _ = out.flush();
                    eprintln!("hostile_server: exiting half-way through a page");
                    std::process::exit(4);
                }
                _ => tools_answer(&id),
            },
            _ => json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": "method not found"}}),
        };
        let _ = writeln!(out, "{answer}");
        let _ = out.flush();
        if mode == "close-stdout" && method == "initialize" {
            // SAFETY: closes this process's own descriptor 1; nothing writes to it again.
            unsafe {
                libc::close(1);
            }
            sleep_an_hour();
        }
    }
}

fn tools_answer(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [{
        "name": "echo",
        "description": "Echo the text back",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    }]}})
}

/// One line of `bytes` bytes, a valid answer if it were read whole, written piece by
/// piece so that this process never holds it.
fn write_long_line(out: &mut impl Write, id: &Value, bytes: u64) {
    let head = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"tools\":[],\"pad\":\"");
    let tail = "\"}}\n";
    let piece = vec![b'x'; 64 * 1024];
    let mut left = bytes.saturating_sub((head.len() + tail.len()) as u64);
    if out.write_all(head.as_bytes()).is_err() {
        return;
    }
    while left > 0 {
        let n = left.min(piece.len() as u64) as usize;
        if out.write_all(&piece[..n]).is_err() {
            return;
        }
        left -= n as u64;
    }
    let _ = out.write_all(tail.as_bytes());
    let _ = out.flush();
}
