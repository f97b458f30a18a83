//! `${VAR}` expansion: a server entry's values expanded from the environment when it is
//! contacted, each expanded value recorded as a secret; and the reverse, the values a
//! client gave a wrapped entry's variables.

use std::collections::BTreeMap;
use std::path::Path;

use super::vars::{Own, Reference, Variables};
use super::{
    ConfigError, Resolved, ResolvedRemote, ResolvedStdio, ServerSpec, TransportSpec, vars,
};
use crate::base::secrets::Secrets;

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
    let rules = Variables::default();
    expand_with(&rules, value, server, field, project_dir, lookup, secrets)
}

/// [`expand`] by a host's own rules ([`Variables::reference`]): a reference the host
/// keeps as written stays so; the host's own names (`${userHome}`,
/// `${workspaceFolder}`, ...) come from the project directory and the home
/// directory, never as environment variables.
pub fn expand_with(
    rules: &Variables,
    value: &str,
    server: &str,
    field: &str,
    project_dir: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
    secrets: &mut Secrets,
) -> Result<String, ConfigError> {
    let error = |message: String| ConfigError::Variable {
        server: server.into(),
        field: field.into(),
        message,
    };
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            if !rules.shell_reading(field) {
                // A host reading only whole references keeps an unclosed one as written.
                out.push_str(&rest[start..]);
                rest = "";
                break;
            }
            return Err(error("unclosed \"${\"".into()));
        };
        let body = &after[..end];
        let reference = &rest[start..start + 2 + end + 1];
        rest = &after[end + 1..];
        match rules.reference(field, body) {
            Reference::Literal => out.push_str(reference),
            Reference::Own(own) => {
                out.push_str(&own_value(own, project_dir, lookup).map_err(error)?)
            }
            Reference::Refused(message) => return Err(error(message)),
            Reference::Env { var, default } => match (lookup(var), default) {
                (Some(v), _) => {
                    secrets.add_variable(var, &v);
                    out.push_str(&v);
                }
                // The default is written in the config for anyone to read: a secret
                // only where a literal value would be one.
                (None, Some(default)) => {
                    secrets.add_literal_env(var, default);
                    out.push_str(default);
                }
                // block/goose crates/goose/src/config/base.rs `get_secret`: an
                // `env_keys` name is read from the environment, then Goose's keyring.
                (None, None) if rules.syntax == vars::Syntax::Goose => {
                    return Err(error(format!(
                        "environment variable {var} is not set; Goose would then read this env_keys value from its keyring or secrets.yaml, which mcp-lock does not read: export {var}"
                    )));
                }
                (None, None) => {
                    return Err(ConfigError::UnsetVariable {
                        server: server.into(),
                        var: var.into(),
                        field: field.into(),
                    });
                }
            },
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// A host's own variable: the project directory (the workspace folder), its name,
/// the home directory, or the path separator.
fn own_value(
    own: Own,
    project_dir: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    Ok(match own {
        Own::WorkspaceFolder => project_dir.display().to_string(),
        Own::WorkspaceFolderBasename => project_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        Own::UserHome => lookup("HOME")
            .or_else(|| lookup("USERPROFILE"))
            .filter(|h| !h.is_empty())
            .ok_or("${userHome} is the home directory, and neither HOME nor USERPROFILE is set")?,
        Own::PathSeparator => std::path::MAIN_SEPARATOR.to_string(),
    })
}

/// Expands a remote entry's URL: each variable is expanded as by [`expand`], then
/// percent-encoded for the URL component it lands in ([`vars::expand_url`]).
fn expand_url(
    rules: &Variables,
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
        let value = expand_with(
            rules,
            reference,
            server,
            "url",
            project_dir,
            lookup,
            secrets,
        )?;
        if value == reference {
            // Kept as written by the host: text of the URL, not a value put in it.
            parts.push(vars::UrlPart::Text(value));
            rest = &after[end..];
            continue;
        }
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
    match_expansion_with(&Variables::default(), "", template, actual)
}

/// [`match_expansion`] by a host's rules for `field`: what the host keeps as written
/// must be there as written, and its own names (`${userHome}`) take any text but
/// are no secret.
pub fn match_expansion_with(
    rules: &Variables,
    field: &str,
    template: &str,
    actual: &str,
) -> Option<Vec<Expanded>> {
    let (parts, closed) = template_parts(rules, field, template);
    if !closed {
        return None;
    }

    fn go(parts: &[Part], actual: &str, out: &mut Vec<Expanded>) -> bool {
        match parts.split_first() {
            None => actual.is_empty(),
            Some((Part::Text(text), rest)) => {
                actual.starts_with(text) && go(rest, &actual[text.len()..], out)
            }
            Some((Part::Own(_), rest)) => actual
                .char_indices()
                .chain([(actual.len(), ' ')])
                .any(|(cut, _)| go(rest, &actual[cut..], out)),
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

/// A piece of a value as written: text (a reference the host keeps as written
/// among it), a `${...}` reference by variable name with its default, or one of the
/// host's own names.
enum Part<'a> {
    Text(&'a str),
    Var(&'a str, Option<&'a str>),
    Own(Own),
}

/// A value split at the references the host expands in `field`, and whether every
/// `${` the host reads was closed; the parts after an unclosed one are left out.
fn template_parts<'a>(rules: &Variables, field: &str, value: &'a str) -> (Vec<Part<'a>>, bool) {
    let mut parts = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        parts.push(Part::Text(&rest[..start]));
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            if rules.shell_reading(field) {
                return (parts, false);
            }
            parts.push(Part::Text(&rest[start..]));
            return (parts, true);
        };
        let body = &after[..end];
        parts.push(match rules.reference(field, body) {
            Reference::Literal => Part::Text(&rest[start..start + end + 3]),
            Reference::Env { var, default } => Part::Var(var, default),
            Reference::Own(own) => Part::Own(own),
            // What the client answered (a VS Code input) is as secret as a variable.
            Reference::Refused(_) => Part::Var(body, None),
        });
        rest = &after[end + 1..];
    }
    parts.push(Part::Text(rest));
    (parts, true)
}

/// A value as its host reads it: text (what the host keeps as written merged with
/// the text around it), variables with their defaults, and the host's own names.
#[derive(Debug, PartialEq, Eq)]
enum Reading<'a> {
    Text(String),
    Var(&'a str, Option<&'a str>),
    Own(Own),
}

fn reading<'a>(rules: &Variables, field: &str, value: &'a str) -> (Vec<Reading<'a>>, bool) {
    let (parts, closed) = template_parts(rules, field, value);
    let mut out: Vec<Reading> = Vec::new();
    for part in parts {
        match (part, out.last_mut()) {
            (Part::Text(""), _) => {}
            (Part::Text(t), Some(Reading::Text(last))) => last.push_str(t),
            (Part::Text(t), _) => out.push(Reading::Text(t.to_string())),
            (Part::Var(name, default), _) => out.push(Reading::Var(name, default)),
            (Part::Own(own), _) => out.push(Reading::Own(own)),
        }
    }
    (out, closed)
}

impl ServerSpec {
    /// Whether `other` launches what this entry launches: the same transport, each
    /// value read alike by each entry's host (`${env:X}` in a Roo Code file is `${X}`
    /// in Claude Code's; `${X}`, literal in a Codex file, is not).
    pub fn launches_as(&self, other: &ServerSpec) -> bool {
        if self.transport == other.transport && self.vars == other.vars {
            return true;
        }
        let alike = |field: &str, a: &str, b: &str| {
            reading(&self.vars, field, a) == reading(&other.vars, field, b)
        };
        let same_keys =
            |a: &BTreeMap<String, String>, b: &BTreeMap<String, String>| a.keys().eq(b.keys());
        match (&self.transport, &other.transport) {
            (
                TransportSpec::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                },
                TransportSpec::Stdio {
                    command: c,
                    args: a,
                    env: e,
                    cwd: w,
                },
            ) => {
                alike("command", command, c)
                    && args.len() == a.len()
                    && args
                        .iter()
                        .zip(a)
                        .enumerate()
                        .all(|(i, (x, y))| alike(&format!("args[{i}]"), x, y))
                    && same_keys(env, e)
                    && env
                        .iter()
                        .all(|(k, v)| alike(&format!("env.{k}"), v, &e[k]))
                    && match (cwd, w) {
                        (Some(x), Some(y)) => alike("cwd", x, y),
                        (None, None) => true,
                        _ => false,
                    }
            }
            (
                TransportSpec::Remote { kind, url, headers },
                TransportSpec::Remote {
                    kind: k,
                    url: u,
                    headers: h,
                },
            ) => {
                kind == k
                    && alike("url", url, u)
                    && same_keys(headers, h)
                    && headers
                        .iter()
                        .all(|(k, v)| alike(&format!("headers.{k}"), v, &h[k]))
            }
            _ => false,
        }
    }

    /// An error when `field` is one the host will not start with an empty variable
    /// in (Codex's `bearer_token_env_var`), and one of its variables is set but empty.
    fn refuse_empty(
        &self,
        field: &str,
        value: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), ConfigError> {
        if !self.vars.non_empty.iter().any(|f| f == field) {
            return Ok(());
        }
        match self
            .variables_in(field, value)
            .into_iter()
            .find(|var| lookup(var).is_some_and(|v| v.is_empty()))
        {
            Some(var) => Err(ConfigError::Variable {
                server: self.name.clone(),
                field: field.into(),
                message: format!(
                    "environment variable {var} is empty, and Codex does not start the server with an empty bearer token; set it"
                ),
            }),
            None => Ok(()),
        }
    }

    /// The environment variables a value of `field` takes, as the host reads it.
    fn variables_in(&self, field: &str, value: &str) -> Vec<String> {
        template_parts(&self.vars, field, value)
            .0
            .into_iter()
            .filter_map(|part| match part {
                Part::Var(name, _) => Some(name.to_string()),
                _ => None,
            })
            .collect()
    }

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
                let url = expand_url(&self.vars, url, name, project_dir, lookup, &mut secrets)?;
                let mut resolved = Vec::new();
                for (key, value) in headers {
                    let field = format!("headers.{key}");
                    self.refuse_empty(&field, value, lookup)?;
                    let expanded = match expand_with(
                        &self.vars,
                        value,
                        name,
                        &field,
                        project_dir,
                        lookup,
                        &mut secrets,
                    ) {
                        // A header the host leaves out when its variable is unset or blank.
                        Err(ConfigError::UnsetVariable { .. }) if self.vars.is_optional(&field) => {
                            continue;
                        }
                        Ok(v) if v.trim().is_empty() && self.vars.is_optional(&field) => continue,
                        other => other?,
                    };
                    // A header value is a credential whether or not it came from a variable.
                    secrets.add_header(key, &expanded);
                    resolved.push((key.clone(), expanded, self.variables_in(&field, value)));
                }
                let machine = match &self.oauth_client {
                    Some(client) if client.client_credentials => {
                        let mut expand = |template: &Option<String>, field: &str| {
                            template
                                .as_ref()
                                .map(|t| {
                                    expand_with(
                                        &self.vars,
                                        t,
                                        name,
                                        field,
                                        project_dir,
                                        lookup,
                                        &mut secrets,
                                    )
                                })
                                .transpose()
                        };
                        let client_secret = expand(&client.client_secret, "oauth.clientSecret")?;
                        let private_key = expand(&client.private_key, "oauth.privateKey")?;
                        // Credentials whether or not they came from a variable.
                        for value in client_secret.iter().chain(&private_key) {
                            secrets.add("oauth", value);
                        }
                        Some(Box::new(crate::servers::auth::machine::MachineClient {
                            client_id: client.client_id.clone(),
                            client_secret,
                            private_key,
                            signing_algorithm: client.signing_algorithm.clone(),
                            scope: client.scope.clone(),
                        }))
                    }
                    _ => None,
                };
                Ok(Resolved::Remote(ResolvedRemote {
                    name: name.clone(),
                    oauth_issuer: None,
                    oauth_off: self.oauth_off,
                    kind: *kind,
                    url,
                    written_url,
                    headers: resolved,
                    secrets,
                    headers_helper_error: None,
                    machine,
                }))
            }
        }
    }

    /// [`ServerSpec::resolve`] for a connection: a remote entry's `headersHelper` is run
    /// too (as Claude Code runs it, see [`crate::servers::client::headers_helper`]), its headers
    /// replacing written ones of the same name and every value recorded as a secret.
    /// A helper that fails leaves the entry with [`ResolvedRemote::headers_helper_error`]:
    /// that server is unverifiable, the others are still contacted.
    pub fn resolve_to_contact(
        &self,
        project_dir: &Path,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Resolved, ConfigError> {
        let mut resolved = self.resolve(project_dir, lookup)?;
        if let (Resolved::Remote(remote), Some(refusal)) = (&mut resolved, &self.refusal) {
            remote.headers_helper_error = Some(refusal.to_string());
            return Ok(resolved);
        }
        if let (Resolved::Remote(remote), Some(command)) = (&mut resolved, &self.headers_helper) {
            let run = crate::servers::client::headers_helper::run(
                command,
                &self.name,
                &remote.url,
                project_dir,
                &remote.secrets,
            );
            match run {
                Ok(headers) => {
                    for (name, value) in headers {
                        remote.secrets.add_header(&name, &value);
                        remote
                            .headers
                            .retain(|(written, _, _)| !written.eq_ignore_ascii_case(&name));
                        remote.headers.push((name, value, Vec::new()));
                    }
                }
                Err(error) => remote.headers_helper_error = Some(error),
            }
        }
        Ok(resolved)
    }

    /// Expands a stdio entry's variables from the given environment, recording its
    /// secrets by the rule in [`crate::base::secrets`].
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
        let file_set = resolved_env.clone();
        for (key, value) in env {
            let field = format!("env.{key}");
            let v = match expand_with(
                &self.vars,
                value,
                name,
                &field,
                project_dir,
                lookup,
                &mut secrets,
            ) {
                // A name the host passes only when it is set: the server does not get it.
                Err(ConfigError::UnsetVariable { .. }) if self.vars.is_optional(&field) => continue,
                other => other?,
            };
            // Nothing taken from anywhere: the value is as literal as one without `${`.
            if &v == value {
                secrets.add_literal_env(key, value);
            }
            resolved_env.insert(key.clone(), v);
        }
        let environ = self.environ.as_deref();
        if environ.is_some_and(|e| e.path_appends) {
            for (key, value) in resolved_env.iter_mut() {
                // Over what the envFile set, or else what the server inherits.
                let written = env.get(key);
                if !key.eq_ignore_ascii_case("PATH") || written.is_none() {
                    continue;
                }
                let before = match file_set.get(key) {
                    Some(from_file) => Some(from_file.clone()),
                    None => lookup(key),
                };
                if let Some(before) = before.filter(|b| !b.is_empty()) {
                    *value = format!("{before}{}{value}", if cfg!(windows) { ';' } else { ':' });
                }
            }
        }
        // VS Code's `env: {"NAME": null}`: not set, even by the envFile.
        if let Some(super::environ::Inherit::AllBut(names)) =
            environ.and_then(|e| e.inherit.as_ref())
        {
            resolved_env.retain(|key, _| !names.contains(key));
        }
        let self_command = command;
        let rules = &self.vars;
        let command = expand_with(
            rules,
            command,
            name,
            "command",
            project_dir,
            lookup,
            &mut secrets,
        )?;
        let args = args
            .iter()
            .enumerate()
            .map(|(i, a)| {
                expand_with(
                    rules,
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
            Some(c) => project_dir.join(expand_with(
                rules,
                c,
                name,
                "cwd",
                project_dir,
                lookup,
                &mut secrets,
            )?),
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
        let path = expand_with(
            &self.vars,
            template,
            &self.name,
            field,
            project_dir,
            lookup,
            secrets,
        )?;
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
        let vars = super::environ::read_env_file(Path::new(&path))
            .map_err(|e| error(format!("cannot read envFile {path}: {e}")))?;
        // The file's values are not in the entry the lock pins: a variable there that
        // decides which code runs (and that the entry's `env` does not override) would
        // load code no pin covers.
        let overridden = |name: &str| match &self.transport {
            TransportSpec::Stdio { env, .. } => env.contains_key(name),
            TransportSpec::Remote { .. } => false,
        };
        if let Some((name, _)) = vars
            .iter()
            .find(|(name, _)| super::environ::loads_code(name) && !overridden(name))
        {
            return Err(error(format!(
                "envFile {path} sets {name}, which decides which code the server loads; mcp-lock pins such variables only in the entry's own `env`: move it there and run `mcp-lock update`"
            )));
        }
        Ok(vars)
    }
}

#[cfg(test)]
mod tests;
