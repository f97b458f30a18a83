//! `SERVER/NAME` patterns: `*` stands for any run of characters, `?` for one; every
//! other character stands for itself.

use std::fmt;

/// A `SERVER/NAME` pattern, as written in a rules file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob(String);

impl Glob {
    /// A pattern, when it names a server and a definition (`SERVER/NAME`, each side
    /// non-empty).
    pub fn parse(text: &str) -> Result<Glob, String> {
        match text.split_once('/') {
            Some((server, name)) if !server.is_empty() && !name.is_empty() => {
                Ok(Glob(text.to_string()))
            }
            _ => Err(format!(
                "{text:?} is not a SERVER/NAME pattern; write e.g. \"github/delete_*\" or \"*/write_file\""
            )),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `server/name` matches.
    pub fn matches(&self, server: &str, name: &str) -> bool {
        crate::base::text::wildcard(&format!("{server}/{name}"), &self.0)
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_star_matches_any_run_and_a_question_mark_one_character() {
        let g = Glob::parse("github/delete_*").unwrap();
        assert!(g.matches("github", "delete_repository"));
        assert!(g.matches("github", "delete_"));
        assert!(!g.matches("github", "merge_pull_request"));
        assert!(!g.matches("gitlab", "delete_repository"));
        let any = Glob::parse("*/write_?ile").unwrap();
        assert!(any.matches("filesystem", "write_file"));
        assert!(!any.matches("filesystem", "write_files"));
        assert!(Glob::parse("*/*").unwrap().matches("a", "b"));
        assert!(
            Glob::parse("git*/*_issue")
                .unwrap()
                .matches("github", "create_issue")
        );
    }

    #[test]
    fn a_pattern_without_a_server_and_a_name_is_refused() {
        for bad in ["delete_repo", "/x", "github/", ""] {
            let err = Glob::parse(bad).unwrap_err();
            assert!(err.contains("SERVER/NAME"), "{err}");
        }
    }
}
