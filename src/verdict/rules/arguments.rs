//! Argument rules: what one argument of a tool's calls may be. A rule is checked
//! before the call is sent, and an argument a rule names must be given: a server's
//! default for a missing argument is not something mcp-lock can judge.

use serde_json::Value;

/// What one argument may be: one of `values`, and/or a string matching `pattern`.
#[derive(Debug, Clone)]
pub struct ArgumentRule {
    pub values: Option<Vec<Value>>,
    pub pattern: Option<regex::Regex>,
}

impl PartialEq for ArgumentRule {
    fn eq(&self, other: &Self) -> bool {
        self.values == other.values
            && self.pattern.as_ref().map(regex::Regex::as_str)
                == other.pattern.as_ref().map(regex::Regex::as_str)
    }
}

/// The most of a value quoted in a refusal.
const QUOTED_CHARS: usize = 80;

impl ArgumentRule {
    /// Why `given` breaks the rule, if it does.
    pub fn broken_by(&self, given: Option<&Value>) -> Option<String> {
        let Some(given) = given else {
            return Some("must be given (the rule cannot judge the server's default)".into());
        };
        if let Some(values) = &self.values
            && !values.contains(given)
        {
            let allowed: Vec<String> = values.iter().map(Value::to_string).collect();
            return Some(format!(
                "{} is not one of {}",
                quote(given),
                allowed.join(", ")
            ));
        }
        if let Some(pattern) = &self.pattern {
            match given.as_str() {
                Some(text) if pattern.is_match(text) => {}
                Some(_) => {
                    return Some(format!(
                        "{} does not match /{}/",
                        quote(given),
                        pattern.as_str()
                    ));
                }
                None => {
                    return Some(format!(
                        "{} is not a string to match /{}/",
                        quote(given),
                        pattern.as_str()
                    ));
                }
            }
        }
        None
    }
}

fn quote(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(QUOTED_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(values: Option<Vec<Value>>, pattern: Option<&str>) -> ArgumentRule {
        ArgumentRule {
            values,
            pattern: pattern.map(|p| regex::Regex::new(p).unwrap()),
        }
    }

    #[test]
    fn a_pattern_lets_a_matching_string_through_and_names_what_broke_it() {
        let main_only = rule(None, Some("^main$"));
        assert_eq!(main_only.broken_by(Some(&json!("main"))), None);
        let why = main_only.broken_by(Some(&json!("release"))).unwrap();
        assert_eq!(why, "\"release\" does not match /^main$/");
        let why = main_only.broken_by(Some(&json!(7))).unwrap();
        assert!(why.contains("not a string"), "{why}");
        let why = main_only.broken_by(None).unwrap();
        assert!(why.starts_with("must be given"), "{why}");
    }

    #[test]
    fn values_are_compared_as_json() {
        let owners = rule(Some(vec![json!("acme"), json!(3)]), None);
        assert_eq!(owners.broken_by(Some(&json!("acme"))), None);
        assert_eq!(owners.broken_by(Some(&json!(3))), None);
        let why = owners.broken_by(Some(&json!("3"))).unwrap();
        assert_eq!(why, "\"3\" is not one of \"acme\", 3");
    }
}
