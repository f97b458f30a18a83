//! What each command's `--help` says after its options: examples, what the options
//! cannot say, exit codes and the command's page in the book.
//!
//! Prose is one line a paragraph, so clap alone wraps it to the terminal; indented
//! lines (examples, snippets, the exit code table) are verbatim and fit
//! [`VERBATIM_WIDTH`] columns, so clap never wraps them. Class lists and exit codes
//! come from the types that define them.

mod checks;
mod session;
#[cfg(test)]
mod tests;

use mcp_lock::verdict::exit_codes::ExitCode;
use mcp_lock::verdict::policy::{Action, Policy, Rule, parse_accept_rule};

pub use checks::*;
pub use session::*;

/// The widest a verbatim line may be: at 80 columns clap leaves it whole.
pub const VERBATIM_WIDTH: usize = 80;

/// Where every command's reference page is; `#NAME` is the command's heading.
const DOCS: &str = "docs/commands.md";

/// The column an example's description starts at, when the command is short enough.
const EXAMPLE_COLUMN: usize = 40;

/// One command's after-help, built in the order it is read.
struct After(String);

impl After {
    /// Starts with the examples: each a command line and what it does.
    fn examples(examples: &[(&str, &str)]) -> Self {
        let mut text = String::from("Examples:\n");
        let width = examples
            .iter()
            .filter(|(command, what)| {
                // Only examples that fit one line set the column.
                !what.is_empty()
                    && 2 + command.len() + 2 <= EXAMPLE_COLUMN
                    && 2 + command.len() + 2 + what.len() <= VERBATIM_WIDTH
            })
            .map(|(command, _)| command.len())
            .max()
            .unwrap_or(0);
        let column = 2 + width + 2;
        for (command, what) in examples {
            if what.is_empty() {
                text.push_str(&format!("  {command}\n"));
            } else if 2 + command.len() + 2 <= column && column + what.len() <= VERBATIM_WIDTH {
                text.push_str(&format!("  {command:<width$}  {what}\n"));
            } else {
                // Too long for one line: the description goes under the command.
                let indent = if column + what.len() <= VERBATIM_WIDTH {
                    column
                } else {
                    6
                };
                text.push_str(&format!("  {command}\n{:indent$}{what}\n", ""));
            }
        }
        After(text)
    }

    /// A paragraph of prose, one line: clap wraps it.
    fn para(mut self, text: &str) -> Self {
        debug_assert!(!text.contains('\n'), "one line a paragraph: {text}");
        self.0.push('\n');
        self.0.push_str(text);
        self.0.push('\n');
        self
    }

    /// Verbatim lines (a snippet to copy), indented by two.
    fn verbatim(mut self, lines: &str) -> Self {
        for line in lines.lines() {
            self.0.push_str("  ");
            self.0.push_str(line);
            self.0.push('\n');
        }
        self
    }

    /// The exit codes, each with what it means for this command.
    fn codes(mut self, codes: &[(ExitCode, &str)]) -> Self {
        self.0.push_str("\nExit codes:\n");
        self.0.push_str(&code_table(codes));
        self
    }

    /// Ends with the command's page in the book.
    fn docs(mut self, name: &str) -> String {
        self.0.push_str(&format!("\nDocs: {DOCS}#{name}"));
        self.0
    }
}

fn code_table(codes: &[(ExitCode, &str)]) -> String {
    codes
        .iter()
        .map(|(code, what)| format!("  {:>3}  {what}\n", i32::from(*code)))
        .collect()
}

/// Rule names joined with ", ".
fn names(rules: impl Iterator<Item = Rule>) -> String {
    rules.map(Rule::as_str).collect::<Vec<_>>().join(", ")
}

/// Every class, grouped by what the default policy does with it.
fn classes_by_default_action() -> String {
    let policy = &Policy::default();
    let of = |action: Action| {
        names(
            Rule::ALL
                .into_iter()
                .filter(move |r| policy.action(*r) == action),
        )
    };
    format!(
        "Classes that fail by default: {}. Classes that warn: {}. Reported only: {}.",
        of(Action::Fail),
        of(Action::Warn),
        of(Action::Allow)
    )
}

/// The classes `update --accept` and `upgrade --accept` take.
pub fn accept_classes() -> impl Iterator<Item = Rule> {
    Rule::ALL
        .into_iter()
        .filter(|r| parse_accept_rule(r.as_str()).is_ok())
}

/// `--accept`'s long help: what `short` says, then every class it takes.
pub fn accept_help(short: &str) -> String {
    format!(
        "{short}\n\nClasses: {}. The screening classes ({}) are never accepted unasked: \
         name each finding a person looked at in [screen] accept of mcp-lock.toml.",
        names(accept_classes()),
        names(
            Rule::ALL
                .into_iter()
                .filter(|r| matches!(r, Rule::Screen(_)))
        )
    )
}

/// The long help of `--fail`, `--warn` and `--allow`: every class there is.
pub fn class_help(what: &str) -> String {
    format!(
        "{what} (comma-separated)\n\nClasses: {}.",
        names(Rule::ALL.into_iter())
    )
}

/// What each exit code means, whichever command ends with it.
fn meaning(code: ExitCode) -> &'static str {
    match code {
        ExitCode::Success => "converged or done (or drift the policy allows)",
        ExitCode::Drift => "drift the policy fails",
        ExitCode::Usage => "usage, config, policy or lock error",
        ExitCode::Unverified => "a server (or registry) could not be checked",
        ExitCode::ApprovalNeeded => "update, upgrade: changes need approval (no terminal)",
        ExitCode::InvalidArguments => "check-call: the arguments do not fit",
        ExitCode::ServerExited => "guard: the server exited first",
        ExitCode::Denied => "check-call: the tool rules deny the call",
        ExitCode::Interrupted => "interrupted (Ctrl-C): nothing written",
    }
}

pub const ABOUT: &str = "Pin the tool definitions of your MCP servers in mcp.lock, verify them in CI, approve every change";

/// The top level's after-help: what the commands are for, and every exit code.
pub fn top() -> String {
    let mut codes: Vec<(i32, Vec<&str>)> = Vec::new();
    for code in ExitCode::ALL {
        let n = i32::from(code);
        match codes.iter_mut().find(|(m, _)| *m == n) {
            Some((_, meanings)) => meanings.push(meaning(code)),
            None => codes.push((n, vec![meaning(code)])),
        }
    }
    let table: String = codes
        .iter()
        .map(|(n, meanings)| format!("  {n:>3}  {}\n", meanings.join("; ")))
        .collect();
    let mut text = After::examples(&[
        (
            "mcp-lock update",
            "pin every server, asking before each change",
        ),
        (
            "mcp-lock verify",
            "check live servers against mcp.lock (CI)",
        ),
        ("mcp-lock verify github --format json", ""),
        (
            "mcp-lock diff --from old.lock",
            "what changed between two locks",
        ),
        (
            "mcp-lock hash tools.json",
            "hash tool definitions as the lock does",
        ),
        (
            "mcp-lock guard github",
            "enforce the lock on a whole agent session",
        ),
        (
            "mcp-lock wrap",
            "make the config's servers launch via guard",
        ),
        (
            "mcp-lock outdated",
            "newer npm/PyPI releases, with a cooldown",
        ),
        (
            "mcp-lock check-call github create_issue --args '{\"title\": \"Bug\"}'",
            "",
        ),
    ])
    .0;
    text.push_str("\nExit codes:\n");
    text.push_str(&table);
    text.push_str(&format!(
        "\nEach command's --help has its own examples and exit codes.\n\nDocs: {DOCS}"
    ));
    text
}
