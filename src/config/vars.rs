//! Each client's variable syntax, translated into the `${VAR}` templates that
//! [`super::expand`] expands at connect time, so secrets handling is the same for all.

use super::Host;

/// A value as written in `host`'s file, as a `${VAR}` template.
///
/// - Claude Code, Kiro, VS Code, Cursor and the rest: `${VAR}` (and `${VAR:-d}`,
///   `${env:VAR}`) as they are.
/// - Gemini CLI: `$VAR` too, over the whole file.
/// - opencode: `{env:VAR}`; `{file:path}` is refused.
/// - Continue: `${{ secrets.X }}`, read as the environment variable `X`.
pub fn translate(value: &str, host: Host) -> Result<String, String> {
    match host {
        Host::GeminiCli => Ok(dollar_names(value)),
        Host::OpenCode => opencode(value),
        Host::Continue => continue_secrets(value),
        _ => Ok(value.to_string()),
    }
}

/// `$NAME` (not `${`) as `${NAME}`.
fn dollar_names(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let rest = &value[i + 1..];
        let starts_name = rest
            .chars()
            .next()
            .is_some_and(|n| n.is_ascii_alphabetic() || n == '_');
        if c != '$' || !starts_name {
            out.push(c);
            continue;
        }
        let len = rest
            .find(|n: char| !(n.is_ascii_alphanumeric() || n == '_'))
            .unwrap_or(rest.len());
        out.push_str(&format!("${{{}}}", &rest[..len]));
        for _ in 0..len {
            chars.next();
        }
    }
    out
}

fn opencode(value: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find('{') {
        let (before, after) = rest.split_at(start);
        out.push_str(before);
        let body_end = after.find('}');
        match (
            after.strip_prefix("{env:"),
            after.strip_prefix("{file:"),
            body_end,
        ) {
            (Some(name), _, Some(end)) => {
                out.push_str(&format!("${{{}}}", &name[..end - 5]));
                rest = &after[end + 1..];
            }
            (_, Some(_), Some(end)) => {
                return Err(format!(
                    "opencode's {} reads a file, which mcp-lock does not; put the value in an environment variable and write {{env:NAME}}",
                    &after[..=end]
                ));
            }
            _ => {
                out.push('{');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn continue_secrets(value: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 3..];
        let end = after
            .find("}}")
            .ok_or_else(|| "unclosed \"${{\"".to_string())?;
        let body = after[..end].trim();
        match body.strip_prefix("secrets.") {
            Some(name) if !name.is_empty() => out.push_str(&format!("${{{name}}}")),
            _ => {
                return Err(format!(
                    "\"${{{{ {body} }}}}\" is not a secret reference; mcp-lock reads ${{{{ secrets.NAME }}}} as the environment variable NAME"
                ));
            }
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_dollar_names_become_templates() {
        assert_eq!(
            translate("a $TOKEN b ${OTHER} $1 $", Host::GeminiCli).unwrap(),
            "a ${TOKEN} b ${OTHER} $1 $"
        );
    }

    #[test]
    fn opencode_env_becomes_a_template_and_file_is_refused() {
        assert_eq!(
            translate("Bearer {env:TOKEN} {x}", Host::OpenCode).unwrap(),
            "Bearer ${TOKEN} {x}"
        );
        let err = translate("{file:~/.secret}", Host::OpenCode).unwrap_err();
        assert!(err.contains("{file:~/.secret}"), "{err}");
    }

    #[test]
    fn continue_secrets_read_as_environment_variables() {
        assert_eq!(
            translate("Bearer ${{ secrets.API_KEY }}", Host::Continue).unwrap(),
            "Bearer ${API_KEY}"
        );
        assert!(translate("${{ inputs.x }}", Host::Continue).is_err());
    }

    #[test]
    fn other_hosts_keep_their_dollar_brace_templates() {
        assert_eq!(
            translate("$HOME ${X}", Host::ClaudeCode).unwrap(),
            "$HOME ${X}"
        );
    }
}
