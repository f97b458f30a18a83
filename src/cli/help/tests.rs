//! Every command's help, rendered by clap as the binary renders it, against the types
//! its lists come from and the layout rules of this module.

use clap::CommandFactory;
use mcp_lock::verdict::exit_codes::ExitCode;
use mcp_lock::verdict::policy::Rule;

use super::{VERBATIM_WIDTH, accept_classes};
use crate::cli::Cli;

/// Every visible command under the top level, with its path (`audit verify`).
fn commands() -> Vec<(String, clap::Command)> {
    fn walk(prefix: &str, cmd: &clap::Command, out: &mut Vec<(String, clap::Command)>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let path = format!("{prefix}{}", sub.get_name());
            out.push((path.clone(), sub.clone()));
            walk(&format!("{path} "), sub, out);
        }
    }
    let mut out = Vec::new();
    let mut top = Cli::command();
    top.build();
    walk("", &top, &mut out);
    out.retain(|(path, _)| !path.split(' ').any(|part| part == "help"));
    out
}

/// The help `mcp-lock PATH --help` prints at `width` columns (`long`) or `-h`.
fn render(path: &str, width: usize, long: bool) -> String {
    let mut cmd = Cli::command().term_width(width);
    cmd.build();
    let mut sub = &mut cmd;
    for part in path.split(' ').filter(|p| !p.is_empty()) {
        sub = sub.find_subcommand_mut(part).expect("a subcommand");
    }
    let text = if long {
        sub.render_long_help()
    } else {
        sub.render_help()
    };
    text.to_string()
}

fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn every_command_has_examples_and_ends_with_its_page_in_the_book() {
    let all = commands();
    assert!(
        all.len() > 20,
        "{:?}",
        all.iter().map(|c| &c.0).collect::<Vec<_>>()
    );
    for (path, _) in &all {
        // A group's subcommands (audit verify) share the group's heading.
        let heading = path.split(' ').next().unwrap();
        let page = format!("Docs: docs/commands.md#{heading}");
        for long in [true, false] {
            let help = render(path, 100, long);
            assert!(help.contains("\nExamples:\n  "), "{path}:\n{help}");
            assert!(help.trim_end().ends_with(&page), "{path}:\n{help}");
        }
    }
}

#[test]
fn every_command_but_a_group_lists_its_exit_codes_with_their_numbers() {
    for (path, cmd) in commands() {
        if cmd.has_subcommands() {
            continue;
        }
        let help = render(&path, 100, true);
        let table = help
            .split("\nExit codes:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{path} has no exit codes:\n{help}"));
        let first = table.lines().next().unwrap_or_default();
        assert!(first.trim_start().starts_with("0  "), "{path}: {first}");
    }
}

#[test]
fn the_top_level_lists_every_exit_code_from_the_type() {
    let help = render("", 100, true);
    let table = help.split("\nExit codes:\n").nth(1).expect("exit codes");
    let numbers: Vec<i32> = table
        .lines()
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    let mut expected: Vec<i32> = ExitCode::ALL.into_iter().map(i32::from).collect();
    expected.dedup();
    assert_eq!(numbers, expected, "{help}");
    assert!(help.contains("Streamable HTTP or SSE"), "{help}");
}

#[test]
fn verify_lists_every_class_by_its_default_action_and_exit_130() {
    let help = flat(&render("verify", 100, true));
    for rule in Rule::ALL {
        assert!(help.contains(rule.as_str()), "{rule} missing: {help}");
    }
    assert!(help.contains("fail by default: authority, breaking, semantic, tool-added"));
    assert!(help.contains("130 interrupted"), "{help}");
    // --fail, --warn and --allow list every class too.
    let classes = Rule::ALL.map(Rule::as_str).join(", ");
    assert_eq!(help.matches(&format!("Classes: {classes}.")).count(), 3);
}

#[test]
fn update_and_upgrade_accept_lists_every_class_they_take() {
    let taken: Vec<&str> = accept_classes().map(Rule::as_str).collect();
    assert!(taken.contains(&"package-changed") && taken.contains(&"renamed"));
    assert!(!taken.contains(&"screen-high"));
    for path in ["update", "upgrade"] {
        let help = flat(&render(path, 100, true));
        assert!(
            help.contains(&format!("Classes: {}.", taken.join(", "))),
            "{path}: {help}"
        );
    }
}

/// Lines of an after-help, raw: prose is one line a paragraph (so two prose lines never
/// follow each other), and verbatim lines (indented) fit 80 columns.
#[test]
fn after_help_prose_is_not_wrapped_by_hand_and_verbatim_lines_fit_80_columns() {
    let mut all = commands();
    all.push((String::new(), Cli::command()));
    for (path, cmd) in all {
        let text = cmd.get_after_help().expect("an after-help").to_string();
        let lines: Vec<&str> = text.lines().collect();
        for pair in lines.windows(2) {
            let prose = |l: &str| !l.is_empty() && !l.starts_with(' ');
            assert!(
                !(prose(pair[0]) && prose(pair[1])),
                "{path}: hand-wrapped prose:\n{}\n{}",
                pair[0],
                pair[1]
            );
        }
        for line in lines.iter().filter(|l| l.starts_with(' ')) {
            assert!(
                line.chars().count() <= VERBATIM_WIDTH,
                "{path}: {} columns: {line}",
                line.chars().count()
            );
        }
    }
}

/// At 80 and 120 columns, each line of a paragraph clap wrapped is as full as it can
/// be: the next line's first word would not have fitted on it. A short line followed by
/// more of the same paragraph is an orphan left by a second wrapping.
#[test]
fn help_at_80_and_120_columns_leaves_no_orphan_words() {
    let mut paths: Vec<String> = commands().into_iter().map(|c| c.0).collect();
    paths.push(String::new());
    for width in [80, 120] {
        for path in &paths {
            let help = render(path, width, true);
            let lines: Vec<&str> = help.lines().collect();
            for pair in lines.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                // Prose clap wrapped: consecutive lines at column 0. (Indented lines are
                // examples, tables and options, which clap wraps with their indent.)
                let prose = |l: &str| !l.trim().is_empty() && !l.starts_with(' ');
                if !(prose(a) && prose(b)) {
                    continue;
                }
                let next = b.split_whitespace().next().unwrap_or_default();
                assert!(
                    a.chars().count() + 1 + next.chars().count() > width,
                    "{path} at {width} columns: {next:?} fits after {a:?}\n{help}"
                );
            }
            for line in &lines {
                assert!(line.chars().count() <= width, "{path} at {width}: {line}");
            }
        }
    }
}
