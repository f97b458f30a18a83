//! Claude Code's `headersHelper`: a command, written in a remote entry, whose output
//! is a JSON object of headers to send. It is run the way Claude Code documents it
//! (code.claude.com/docs/en/mcp, "Use dynamic headers for custom authentication"):
//! through a shell, with a 10-second timeout, with `CLAUDE_CODE_MCP_SERVER_NAME` and
//! `CLAUDE_CODE_MCP_SERVER_URL` set, afresh for each connection; its headers override
//! written ones of the same name. Its working directory is the project's (Claude
//! Code's is the session's, which is the project directory).
//!
//! Like a stdio server, it runs in a process group of its own, watched so that
//! nothing it started outlives it: stdin is null, output is bounded, and at the
//! timeout the whole group is killed and the helper reaped.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::stdio::{peek_exit, prepare_server, signal_group, start_server, unregister};
use crate::base::secrets::Secrets;

/// How long the helper may take, as Claude Code allows it.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Overrides [`TIMEOUT`], in milliseconds: for tests, which cannot wait 10 s.
const TIMEOUT_VAR: &str = "MCP_LOCK_HEADERS_HELPER_TIMEOUT_MS";
/// Most output read: a few headers take far less.
const MAX_OUTPUT: usize = 64 * 1024;
/// Most of its stderr read, for the first line of an error.
const MAX_STDERR: usize = 16 * 1024;
/// Longest stderr line shown, in characters.
const STDERR_CHARS: usize = 200;

/// Runs `command` for the server `server` at `url` in `cwd`, and returns the headers
/// it printed (names and values; every value is a secret to the caller). The error
/// is one line saying what went wrong and what to do, with `known` secrets redacted.
pub fn run(
    command: &str,
    server: &str,
    url: &str,
    cwd: &Path,
    known: &Secrets,
) -> Result<Vec<(String, String)>, String> {
    let limit = std::env::var(TIMEOUT_VAR)
        .ok()
        .and_then(|ms| ms.trim().parse().ok())
        .map_or(TIMEOUT, Duration::from_millis);
    let mut shell = Command::new("/bin/sh");
    shell
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env("CLAUDE_CODE_MCP_SERVER_NAME", server)
        .env("CLAUDE_CODE_MCP_SERVER_URL", url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let watchdog = prepare_server(&mut shell);
    let (mut child, pgid, watchdog) = start_server(|| shell.spawn(), |c| Some(c.id()), watchdog)
        .map_err(|e| format!("its headersHelper could not be started with /bin/sh: {e}"))?;
    let deadline = Instant::now() + limit;
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let (sent, received) = mpsc::channel();
    for (is_out, pipe, max) in [
        (
            true,
            out.map(|p| Box::new(p) as Box<dyn Read + Send>),
            MAX_OUTPUT,
        ),
        (
            false,
            err.map(|p| Box::new(p) as Box<dyn Read + Send>),
            MAX_STDERR,
        ),
    ] {
        let sent = sent.clone();
        // Reads at most one byte past `max`, then closes the pipe: a helper that
        // prints without end stops at its next write.
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(pipe) = pipe {
                let _ = pipe.take(max as u64 + 1).read_to_end(&mut bytes);
            }
            let _ = sent.send((is_out, bytes));
        });
    }
    drop(sent);
    let finished = wait(&received, child.id() as i32, deadline);
    // Everything the helper started goes with it, as a server's group does; the
    // leader is alive or an unreaped zombie here, so the group id is still ours.
    signal_group(pgid, libc::SIGKILL);
    if let Some(watchdog) = watchdog {
        watchdog.dismiss();
    }
    let status = reap(&mut child);
    unregister(pgid);
    let Some((stdout, stderr)) = finished else {
        return Err(format!(
            "its headersHelper did not finish within {} s and was stopped; make it answer sooner (Claude Code allows it 10 s)",
            limit.as_secs_f64()
        ));
    };
    if stdout.len() > MAX_OUTPUT {
        return Err(format!(
            "its headersHelper printed more than {} KiB; it must print one JSON object of header names and string values",
            MAX_OUTPUT / 1024
        ));
    }
    match status {
        Some(status) if status.success() => {}
        status => {
            let why = match status.and_then(|s| s.code()) {
                Some(code) => format!("exit status {code}"),
                None => "killed by a signal".into(),
            };
            let line = first_line(&stderr, known);
            let said = if line.is_empty() {
                String::new()
            } else {
                format!(": {line}")
            };
            return Err(format!(
                "its headersHelper failed ({why}){said}; run the command under \"headersHelper\" in the config yourself to see why, and fix it"
            ));
        }
    }
    parse(&stdout)
}

/// Waits until both pipes are read and the helper has exited (without reaping it),
/// or the deadline passes (None).
fn wait(
    received: &mpsc::Receiver<(bool, Vec<u8>)>,
    pid: i32,
    deadline: Instant,
) -> Option<(Vec<u8>, Vec<u8>)> {
    let (mut stdout, mut stderr) = (None, None);
    while stdout.is_none() || stderr.is_none() {
        let left = deadline.checked_duration_since(Instant::now())?;
        let (is_out, bytes) = received.recv_timeout(left).ok()?;
        if is_out {
            if bytes.len() > MAX_OUTPUT {
                // Enough is known: the rest is not waited for.
                return Some((bytes, Vec::new()));
            }
            stdout = Some(bytes);
        } else {
            stderr = Some(bytes);
        }
    }
    while peek_exit(pid).is_none() {
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Some((stdout?, stderr?))
}

/// Reaps the helper, killed or exited, within a moment (SIGKILL was sent).
fn reap(child: &mut Child) -> Option<ExitStatus> {
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(2)),
            _ => return child.wait().ok(),
        }
    }
}

/// The first non-empty line of `stderr`, redacted and cut short.
fn first_line(stderr: &[u8], known: &Secrets) -> String {
    let text = String::from_utf8_lossy(stderr);
    let line = text.lines().map(str::trim).find(|l| !l.is_empty());
    let line = known.redact(line.unwrap_or_default());
    let mut cut: String = line.chars().take(STDERR_CHARS).collect();
    if cut.len() < line.len() {
        cut.push('…');
    }
    cut
}

/// The headers of the helper's output: one JSON object whose values are strings.
fn parse(stdout: &[u8]) -> Result<Vec<(String, String)>, String> {
    let value: serde_json::Value = serde_json::from_slice(stdout).map_err(|e| {
        format!(
            "its headersHelper did not print JSON ({e}); it must print one object of header names and string values, e.g. {{\"Authorization\": \"Bearer ...\"}}"
        )
    })?;
    let serde_json::Value::Object(map) = value else {
        return Err(
            "its headersHelper printed JSON that is not an object; it must print one object of header names and string values, e.g. {\"Authorization\": \"Bearer ...\"}"
                .into(),
        );
    };
    map.into_iter()
        .map(|(name, value)| match value {
            serde_json::Value::String(value) => Ok((name, value)),
            _ => Err(format!(
                "its headersHelper printed a value for header {name:?} that is not a string; every value must be a string"
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn helper(command: &str) -> Result<Vec<(String, String)>, String> {
        let dir = tempfile::tempdir().unwrap();
        run(
            command,
            "srv",
            "http://127.0.0.1:1/mcp",
            dir.path(),
            &Secrets::default(),
        )
    }

    #[test]
    fn the_helper_runs_in_a_shell_with_the_server_name_and_url_set() {
        let headers = helper(
            r#"printf '{"X-Name": "%s", "X-Url": "%s"}' "$CLAUDE_CODE_MCP_SERVER_NAME" "$CLAUDE_CODE_MCP_SERVER_URL""#,
        )
        .unwrap();
        assert_eq!(
            headers,
            vec![
                ("X-Name".into(), "srv".into()),
                ("X-Url".into(), "http://127.0.0.1:1/mcp".into())
            ]
        );
    }

    #[test]
    fn output_that_is_not_an_object_of_strings_is_refused_saying_what_it_must_be() {
        let err = helper("echo '[1]'").unwrap_err();
        assert!(err.contains("not an object"), "{err}");
        let err = helper(r#"echo '{"X-Count": 3}'"#).unwrap_err();
        assert!(err.contains("\"X-Count\" that is not a string"), "{err}");
        let err = helper("echo not json").unwrap_err();
        assert!(err.contains("did not print JSON"), "{err}");
    }

    #[test]
    fn a_failing_helper_says_its_status_and_first_stderr_line_redacted() {
        let mut known = Secrets::default();
        known.add("TOKEN", "tok-s3cr3t-value");
        let dir = tempfile::tempdir().unwrap();
        let err = run(
            "echo; echo 'no ticket for tok-s3cr3t-value' >&2; echo second >&2; exit 7",
            "srv",
            "http://h/",
            dir.path(),
            &known,
        )
        .unwrap_err();
        assert!(
            err.contains("(exit status 7): no ticket for ${TOKEN};"),
            "{err}"
        );
        assert!(!err.contains("second") && !err.contains('\n'), "{err}");
    }

    #[test]
    fn endless_output_is_cut_and_refused() {
        let err = helper("yes").unwrap_err();
        assert!(err.contains("more than 64 KiB"), "{err}");
    }
}
