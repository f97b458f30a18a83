//! `${VAR}` expansion: a server entry's values expanded from the environment when it is
//! contacted, each expanded value recorded as a secret; and the reverse, the values a
//! client gave a wrapped entry's variables.

use std::collections::BTreeMap;
use std::path::Path;

use super::{
    ConfigError, Resolved, ResolvedRemote, ResolvedStdio, ServerSpec, TransportSpec, vars,
};
use crate::secrets::Secrets;

/// Expands `${VAR}`, `${VAR:-default}`, `${env:VAR}` and `${workspaceFolder}` in one
/// value, recording every value taken from the environment as a secret (a default
/// written in the config is one only when a literal `env` value would be).
pub fn expand(
    value: &str,
    server: &str,
    field: &str,
    project_dir: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
    secrets: &mut Secrets,
) -> Result<String, ConfigError> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(ConfigError::Variable {
                server: server.into(),
                field: field.into(),
                message: "unclosed \"${\"".into(),
            });
        };
        let body = &after[..end];
        rest = &after[end + 1..];
        if body == "workspaceFolder" {
            out.push_str(&project_dir.display().to_string());
            continue;
        }
        if let Some(input) = body.strip_prefix("input:") {
            return Err(ConfigError::Variable {
                server: server.into(),
                field: field.into(),
                message: format!(
                    "VS Code input variable ${{input:{input}}} cannot be answered here; use ${{env:NAME}} instead"
                ),
            });
        }
        let body = body.strip_prefix("env:").unwrap_or(body);
        let (var, default) = match body.split_once(":-") {
            Some((var, default)) => (var, Some(default)),
            None => (body, None),
        };
        let valid = !var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(ConfigError::Variable {
                server: server.into(),
                field: field.into(),
                message: format!("\"${{{body}}}\" is not a variable reference"),
            });
        }
        match (lookup(var), default) {
            (Some(v), _) => {
                secrets.add_variable(var, &v);
                out.push_str(&v);
            }
            // The default is written in the config for anyone to read: a secret only
            // where a literal value would be one.
            (None, Some(default)) => {
                secrets.add_literal_env(var, default);
                out.push_str(default);
            }
            (None, None) => {
                return Err(ConfigError::UnsetVariable {
                    server: server.into(),
                    var: var.into(),
                    field: field.into(),
                });
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Expands a remote entry's URL: each variable is expanded as by [`expand`], then
/// percent-encoded for the URL component it lands in ([`vars::expand_url`]).
fn expand_url(
    template: &str,
    server: &str,
    project_dir: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
    secrets: &mut Secrets,
) -> Result<String, ConfigError> {
    let mut parts = Vec::new();
    let mut rest = template;
    // The variables whose value is a secret, as `expand` recorded it.
    let mut secret_values = Vec::new();
    while let Some(start) = rest.find("${") {
        parts.push(vars::UrlPart::Text(rest[..start].to_string()));
        let after = &rest[start..];
        // An unclosed "${" is reported by `expand`.
        let end = after.find('}').map_or(after.len(), |e| e + 1);
        let reference = &after[..end];
        let value = expand(reference, server, "url", project_dir, lookup, secrets)?;
        let name = reference[2..end - 1].to_string();
        if secrets.contains_value(&value) {
            secret_values.push(name.clone());
        }
        parts.push(vars::UrlPart::Var { name, value });
        rest = &after[end..];
    }
    parts.push(vars::UrlPart::Text(rest.to_string()));
    let (url, inserted) = vars::expand_url(&parts).map_err(|message| ConfigError::Variable {
        server: server.into(),
        field: "url".into(),
        message,
    })?;
    // The encoded forms are as secret as the values.
    for (name, text) in inserted {
        if !secret_values.contains(&name) {
            continue;
        }
        let name = name.strip_prefix("env:").unwrap_or(&name);
        let name = name.split_once(":-").map_or(name, |(n, _)| n);
        secrets.add_variable(name, &text);
    }
    Ok(url)
}

/// One variable of a template and the value a client gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expanded {
    pub var: String,
    pub value: String,
    /// The reference's `:-default`, as written.
    pub default: Option<String>,
}

impl Expanded {
    /// Records the value as [`expand`] would: a secret when it came from the
    /// environment, but the written default is one only where a literal value is.
    pub fn record(&self, secrets: &mut Secrets) {
        if self.default.as_deref() == Some(self.value.as_str()) {
            secrets.add_literal_env(&self.var, &self.value);
        } else {
            secrets.add_variable(&self.var, &self.value);
        }
    }
}

/// The values a client gave the variables of `template` when it expanded it to
/// `actual`: for a wrapped entry, whose guard receives only the expanded arguments.
/// `None` when `actual` cannot be an expansion of `template`. Where two adjacent
/// variables make the split ambiguous, the first takes as little as it can.
pub fn match_expansion(template: &str, actual: &str) -> Option<Vec<Expanded>> {
    let (parts, closed) = template_parts(template);
    if !closed {
        return None;
    }

    fn go(parts: &[Part], actual: &str, out: &mut Vec<Expanded>) -> bool {
        match parts.split_first() {
            None => actual.is_empty(),
            Some((Part::Text(text), rest)) => {
                actual.starts_with(text) && go(rest, &actual[text.len()..], out)
            }
            Some((Part::Var(name, default), rest)) => {
                for (cut, _) in actual.char_indices().chain([(actual.len(), ' ')]) {
                    out.push(Expanded {
                        var: name.to_string(),
                        value: actual[..cut].to_string(),
                        default: default.map(str::to_string),
                    });
                    if go(rest, &actual[cut..], out) {
                        return true;
                    }
                    out.pop();
                }
                false
            }
        }
    }
    let mut out = Vec::new();
    go(&parts, actual, &mut out).then_some(out)
}

/// The variables a value refers to, as `${NAME}` / `${env:NAME}` name them.
fn variables_in(value: &str) -> Vec<String> {
    template_parts(value)
        .0
        .into_iter()
        .filter_map(|part| match part {
            Part::Var(name, _) if name != "workspaceFolder" => Some(name.to_string()),
            _ => None,
        })
        .collect()
}

/// A piece of a value as written: text, or a `${...}` reference by variable name,
/// with its default.
enum Part<'a> {
    Text(&'a str),
    Var(&'a str, Option<&'a str>),
}

/// A value split at its `${NAME}`, `${env:NAME}` and `${NAME:-default}` references
/// (`${workspaceFolder}` among them), and whether every `${` was closed; the parts
/// after an unclosed one are left out.
fn template_parts(value: &str) -> (Vec<Part<'_>>, bool) {
    let mut parts = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        parts.push(Part::Text(&rest[..start]));
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return (parts, false);
        };
        let body = after[..end].strip_prefix("env:").unwrap_or(&after[..end]);
        parts.push(match body.split_once(":-") {
            Some((name, default)) => Part::Var(name, Some(default)),
            None => Part::Var(body, None),
        });
        rest = &after[end + 1..];
    }
    parts.push(Part::Text(rest));
    (parts, true)
}

impl ServerSpec {
    /// Expands the entry's variables from the given environment.
    pub fn resolve(
        &self,
        project_dir: &Path,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Resolved, ConfigError> {
        match &self.transport {
            TransportSpec::Stdio { .. } => self
                .resolve_stdio(project_dir, lookup)
                .map(|r| Resolved::Stdio(r.expect("a stdio entry"))),
            TransportSpec::Remote { kind, url, headers } => {
                let mut secrets = Secrets::default();
                let name = &self.name;
                let written_url = url.clone();
                let url = expand_url(url, name, project_dir, lookup, &mut secrets)?;
                let mut resolved = Vec::new();
                for (key, value) in headers {
                    let field = format!("headers.{key}");
                    let expanded = expand(value, name, &field, project_dir, lookup, &mut secrets)?;
                    // A header value is a credential whether or not it came from a variable.
                    secrets.add_header(key, &expanded);
                    resolved.push((key.clone(), expanded, variables_in(value)));
                }
                Ok(Resolved::Remote(ResolvedRemote {
                    name: name.clone(),
                    oauth_issuer: None,
                    kind: *kind,
                    url,
                    written_url,
                    headers: resolved,
                    secrets,
                }))
            }
        }
    }

    /// Expands a stdio entry's variables from the given environment, recording its
    /// secrets by the rule in [`crate::secrets`].
    pub fn resolve_stdio(
        &self,
        project_dir: &Path,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<ResolvedStdio>, ConfigError> {
        let TransportSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } = &self.transport
        else {
            return Ok(None);
        };
        let mut secrets = Secrets::default();
        let name = &self.name;
        let mut resolved_env = BTreeMap::new();
        // The envFile's variables first: `env` overrides them, as in VS Code.
        if let Some(template) = self.environ.as_ref().and_then(|e| e.env_file.as_ref()) {
            for (key, value) in self.read_env_file(template, project_dir, lookup, &mut secrets)? {
                secrets.add_variable(&key, &value);
                resolved_env.insert(key, value);
            }
        }
        for (key, value) in env {
            let v = expand(
                value,
                name,
                &format!("env.{key}"),
                project_dir,
                lookup,
                &mut secrets,
            )?;
            if !value.contains("${") {
                secrets.add_literal_env(key, value);
            }
            resolved_env.insert(key.clone(), v);
        }
        let self_command = command;
        let command = expand(command, name, "command", project_dir, lookup, &mut secrets)?;
        let args = args
            .iter()
            .enumerate()
            .map(|(i, a)| {
                expand(
                    a,
                    name,
                    &format!("args[{i}]"),
                    project_dir,
                    lookup,
                    &mut secrets,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let cwd = match cwd {
            Some(c) => project_dir.join(expand(c, name, "cwd", project_dir, lookup, &mut secrets)?),
            None => project_dir.to_path_buf(),
        };
        Ok(Some(ResolvedStdio {
            written_command: self_command.clone(),
            command,
            args,
            env: resolved_env,
            inherit: self.environ.as_ref().and_then(|e| e.inherit.clone()),
            cwd,
            secrets,
        }))
    }

    /// The variables of the entry's `envFile`, read now, as VS Code reads it when it
    /// starts the server: the path is the expanded template, used as it is (VS Code
    /// resolves no relative path, so one is refused here).
    fn read_env_file(
        &self,
        template: &str,
        project_dir: &Path,
        lookup: &dyn Fn(&str) -> Option<String>,
        secrets: &mut Secrets,
    ) -> Result<Vec<(String, String)>, ConfigError> {
        let field = "envFile";
        let path = expand(template, &self.name, field, project_dir, lookup, secrets)?;
        let error = |message: String| ConfigError::Variable {
            server: self.name.clone(),
            field: field.into(),
            message,
        };
        if !Path::new(&path).is_absolute() {
            return Err(error(format!(
                "envFile {path:?} is a relative path, which VS Code does not read from the workspace; write \"${{workspaceFolder}}/{path}\""
            )));
        }
        super::environ::read_env_file(Path::new(&path))
            .map_err(|e| error(format!("cannot read envFile {path}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(var: &str) -> Option<String> {
        match var {
            "TOKEN" => Some("s3cr3t-value".into()),
            "HOME" => Some("/home/me".into()),
            _ => None,
        }
    }

    #[test]
    fn expands_variables_and_remembers_them_as_secrets() {
        let mut secrets = Secrets::default();
        let out = expand(
            "Bearer ${TOKEN} ${env:HOME} ${MISSING:-fallback}",
            "s",
            "args[0]",
            Path::new("/p"),
            &env,
            &mut secrets,
        )
        .unwrap();
        assert_eq!(out, "Bearer s3cr3t-value /home/me fallback");
        assert_eq!(secrets.redact("x s3cr3t-value y"), "x ${TOKEN} y");
    }

    #[test]
    fn a_written_default_is_not_a_secret_but_the_environments_value_is() {
        let mut secrets = Secrets::default();
        let lookup = |var: &str| (var == "TOKEN").then(|| "s3cr3t-value".to_string());
        let out = expand(
            "${LOG_LEVEL:-debug} ${TOKEN:-unused-default}",
            "s",
            "args[0]",
            Path::new("/p"),
            &lookup,
            &mut secrets,
        )
        .unwrap();
        assert_eq!(out, "debug s3cr3t-value");
        assert_eq!(secrets.redact("debug s3cr3t-value"), "debug ${TOKEN}");
        // A default that looks like a credential stays one, as a literal would.
        let mut secrets = Secrets::default();
        expand(
            "${API_KEY:-sk-written-in-config}",
            "s",
            "env.K",
            Path::new("/p"),
            &|_| None,
            &mut secrets,
        )
        .unwrap();
        assert!(secrets.contains_value("sk-written-in-config"));
        // What a client expanded to the written default is read the same way.
        let mut secrets = Secrets::default();
        for e in match_expansion("--level=${LOG_LEVEL:-debug}", "--level=debug").unwrap() {
            e.record(&mut secrets);
        }
        assert!(secrets.is_empty());
    }

    #[test]
    fn match_expansion_recovers_the_values_a_client_expanded() {
        let pairs = |template: &str, actual: &str| {
            match_expansion(template, actual).map(|found| {
                found
                    .into_iter()
                    .map(|e| (e.var, e.value))
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(
            pairs("--token=${SECRET}", "--token=abc123"),
            Some(vec![("SECRET".into(), "abc123".into())])
        );
        assert_eq!(
            pairs("${env:A}/x/${B:-d}", "one/x/two"),
            Some(vec![("A".into(), "one".into()), ("B".into(), "two".into())])
        );
        assert_eq!(pairs("plain", "plain"), Some(vec![]));
        assert_eq!(pairs("--token=${SECRET}", "--other=abc"), None);
        assert_eq!(pairs("plain", "other"), None);
    }

    #[test]
    fn unset_variable_is_an_error_naming_it() {
        let err = expand(
            "${NOPE}",
            "gh",
            "env.X",
            Path::new("/"),
            &env,
            &mut Secrets::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "server \"gh\": environment variable NOPE is not set (used in env.X)"
        );
    }
}
