//! Shell completions, run in a real bash: the generated function is called the way
//! bash's programmable completion calls it, and what it offers is read back.

use crate::common;

/// What bash offers for `line`, completing its last word (an empty last word when
/// `line` ends in a space).
fn bash_completes(line: &str) -> Vec<String> {
    let script = common::command(common::bin())
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert!(script.status.success());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mcp-lock.bash");
    std::fs::write(&file, &script.stdout).unwrap();
    let mut words: Vec<&str> = line.split(' ').collect();
    if words.last() == Some(&"") {
        words.pop();
        words.push("");
    }
    let cword = words.len() - 1;
    let prev = if cword > 0 { words[cword - 1] } else { "" };
    let words_array: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    // `complete -p` names the function the script registered; call it as bash would:
    // $1 the command, $2 the word being completed, $3 the word before it.
    let program = format!(
        r#"source '{file}' || exit 9
func=$(complete -p mcp-lock | sed -n 's/.*-F \([^ ]*\).*/\1/p')
[ -n "$func" ] || exit 8
COMP_WORDS=({words})
COMP_CWORD={cword}
COMP_LINE='{line}'
COMP_POINT=${{#COMP_LINE}}
"$func" mcp-lock '{cur}' '{prev}'
printf '%s\n' "${{COMPREPLY[@]}}"
"#,
        file = file.display(),
        words = words_array.join(" "),
        cur = words[cword],
    );
    let out = common::command("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "bash failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_subcommands() {
    assert_eq!(bash_completes("mcp-lock ver"), ["verify"]);
    assert_eq!(
        bash_completes("mcp-lock check-"),
        ["check-call", "check-listing"]
    );
    assert_eq!(bash_completes("mcp-lock check-l"), ["check-listing"]);
}

#[test]
fn bash_completes_the_flags_of_a_subcommand() {
    assert_eq!(bash_completes("mcp-lock verify --form"), ["--format"]);
    assert_eq!(bash_completes("mcp-lock update --dry"), ["--dry-run"]);
    // A hyphenated subcommand too.
    assert_eq!(bash_completes("mcp-lock check-call --for"), ["--format"]);
    // Global flags after a subcommand.
    assert!(bash_completes("mcp-lock diff --").contains(&"--lock".to_string()));
}

#[test]
fn bash_completes_the_values_of_a_subcommand_flag() {
    assert_eq!(
        bash_completes("mcp-lock verify --format "),
        ["human", "json", "sarif", "junit", "github", "markdown"]
    );
    assert_eq!(bash_completes("mcp-lock guard --on-drift f"), ["fail"]);
}

#[test]
fn a_completion_script_cut_short_by_its_reader_is_no_error() {
    use std::process::Stdio;
    let mut child = common::command(common::bin())
        .args(["completions", "bash"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}
