//! Entries `mcp-lock wrap` rewrote: whether an entry launches the guard, and the server
//! command (or, for a remote server, the sidecar) it stands for.

/// Whether a stdio entry launches `mcp-lock guard`: the command's file name starts
/// with `mcp-lock` and the first argument is `guard`.
pub fn launches_guard(command: &str, args: &[String]) -> bool {
    let file_name = command.rsplit(['/', '\\']).next().unwrap_or(command);
    matches!(file_name, "mcp-lock" | "mcp-lock.exe") && args.first().is_some_and(|a| a == "guard")
}

/// The server a wrapped entry starts: for `mcp-lock guard NAME [OPTIONS] -- COMMAND
/// ARGS...` (what `mcp-lock wrap` writes), `COMMAND` and `ARGS`. `None` for an entry
/// that does not launch the guard, or names no command after `--`.
pub fn unwrapped_command(command: &str, args: &[String]) -> Option<(String, Vec<String>)> {
    if !launches_guard(command, args) {
        return None;
    }
    // The "--" is looked for after the server name, which could itself be "--".
    let dashes = 2 + args.get(2..)?.iter().position(|a| a == "--")?;
    let (inner, rest) = args[dashes + 1..].split_first()?;
    Some((inner.clone(), rest.to_vec()))
}

/// Whether a wrapped entry gives the guard `--allow-scripts` (among its own options,
/// before `--`).
pub fn guard_allows_scripts(command: &str, args: &[String]) -> bool {
    launches_guard(command, args)
        && args
            .iter()
            .skip(2)
            .take_while(|a| *a != "--")
            .any(|a| a == "--allow-scripts")
}

/// For an entry `mcp-lock wrap` made of a remote server (`guard NAME --config X`,
/// no command after `--`), the sidecar `X` that holds the original entry.
pub fn wrapped_remote_sidecar(command: &str, args: &[String]) -> Option<String> {
    if !launches_guard(command, args) || args.iter().any(|a| a == "--") {
        return None;
    }
    let at = args.iter().position(|a| a == "--config")?;
    args.get(at + 1)
        .filter(|p| p.ends_with(".mcp-lock.remote.json"))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwrapped_command_looks_for_the_separator_after_the_server_name() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            unwrapped_command("mcp-lock", &args(&["guard", "--", "--", "srv", "a"])),
            Some(("srv".into(), args(&["a"])))
        );
        assert_eq!(
            unwrapped_command("C:\\bin\\mcp-lock.exe", &args(&["guard", "s", "--", "x"])),
            Some(("x".into(), vec![]))
        );
        assert_eq!(
            unwrapped_command("mcp-lock", &args(&["guard", "s", "--"])),
            None
        );
    }

    #[test]
    fn allow_scripts_is_read_among_the_guards_own_options_only() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(guard_allows_scripts(
            "mcp-lock",
            &args(&["guard", "s", "--allow-scripts", "--", "npx", "pkg"])
        ));
        assert!(!guard_allows_scripts(
            "mcp-lock",
            &args(&["guard", "s", "--", "npx", "pkg", "--allow-scripts"])
        ));
        assert!(!guard_allows_scripts("npx", &args(&["--allow-scripts"])));
    }
}
