//! Each client's variable syntax, translated into the `${VAR}` templates that
//! [`super::expand`] expands at connect time, so secrets handling is the same for all.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use super::Host;

/// Which `${...}` references a host expands when it launches an entry, read from
/// each client's own code; what it keeps literally reaches the server as written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Syntax {
    /// `${VAR}`, `${VAR:-default}`, `${env:VAR}` from the environment and
    /// `${workspaceFolder}`: Claude Code, and the templates [`translate`] makes for
    /// Gemini CLI, opencode and Continue. Kiro, Windsurf, Zed, Claude Desktop and
    /// unknown hosts are read so too (their own rules unconfirmed).
    #[default]
    Shell,
    /// Codex CLI passes command, args, env, cwd, url and headers as written
    /// (openai/codex `codex-rs/rmcp-client/src/utils.rs`, `create_env_for_mcp_server`,
    /// `build_default_headers`); only the fields naming a variable (`env_vars`,
    /// `bearer_token_env_var`, `env_http_headers`) take values from the environment.
    Literal,
    /// VS Code's resolver (microsoft/vscode
    /// `src/vs/workbench/services/configurationResolver/common/variableResolver.ts`):
    /// `${env:NAME}`, `${workspaceFolder}`, `${workspaceFolderBasename}`,
    /// `${userHome}`, `${pathSeparator}`, `${/}`; `${input:..}`, `${config:..}`,
    /// `${command:..}` and the editor's variables cannot be answered; any other
    /// `${...}` stays as written.
    VsCode,
    /// Cursor's documented interpolation (cursor.com/docs, MCP "config
    /// interpolation"): `${env:NAME}`, `${userHome}`, `${workspaceFolder}`,
    /// `${workspaceFolderBasename}`, `${pathSeparator}`, `${/}`, in command, args,
    /// env, url and headers. A plain `${VAR}` is left to the [`Syntax::Shell`]
    /// reading, as before (what Cursor does with it is undocumented).
    Cursor,
    /// Roo Code (RooCodeInc/Roo-Code `src/services/mcp/McpHub.ts` calling
    /// `injectVariables` of `src/utils/config.ts` over the whole entry): `${env:NAME}`
    /// (NAME of word characters) and `${workspaceFolder}`; anything else literal.
    RooCode,
    /// Cline (cline/cline `apps/vscode/src/utils/envExpansion.ts`, applied to the
    /// whole entry by `McpHub.ts`): `${env:NAME}` only; anything else literal.
    Cline,
    /// Amazon Q Developer CLI (aws/amazon-q-developer-cli
    /// `crates/chat-cli/src/mcp_client/client.rs`): `${env:NAME}` in env values and
    /// headers; the command is shell-expanded (read as [`Syntax::Shell`]); args and
    /// url as written.
    AmazonQ,
    /// Goose (block/goose `crates/goose/src/agents/extension_manager.rs`): `cmd`,
    /// `args`, `envs` and `uri` as written, never from the environment. A header's
    /// `${VAR}` / `$VAR` take only the extension's own `envs` and `env_keys`
    /// (`substitute_env_vars` over `merge_environments`): [`super::entry`] writes
    /// those in when it reads the entry, and names the fields `env_keys` fill.
    Goose,
}

impl Syntax {
    /// The rules of the client whose file an entry is read from.
    pub fn of(host: Host) -> Syntax {
        match host {
            Host::Codex => Syntax::Literal,
            Host::VsCode => Syntax::VsCode,
            Host::Cursor => Syntax::Cursor,
            Host::RooCode => Syntax::RooCode,
            Host::Cline => Syntax::Cline,
            Host::AmazonQ => Syntax::AmazonQ,
            Host::Goose => Syntax::Goose,
            _ => Syntax::Shell,
        }
    }
}

/// An entry's variable rules: its host's [`Syntax`], and the fields whose `${NAME}`
/// mcp-lock wrote for a field of the host's that names a variable to read (Codex's
/// `env_vars`), expanded whatever the syntax.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Variables {
    pub syntax: Syntax,
    /// Field names as [`super::expand`] reports them: `env.NAME`, `headers.NAME`.
    pub named: Vec<String>,
    /// Fields of `named` the host leaves out when their variable is unset: Codex's
    /// `env_vars` (the server does not get the name), and its `env_http_headers`,
    /// whose header is also left out when the value is blank (openai/codex
    /// `codex-rs/rmcp-client/src/utils.rs`, `create_env_for_mcp_server`,
    /// `build_default_headers`).
    pub optional: Vec<String>,
    /// Fields of `named` the host refuses to start with when their variable is
    /// empty: Codex's `bearer_token_env_var` (openai/codex
    /// `codex-rs/core/src/mcp_connection_manager.rs`, `resolve_bearer_token`).
    pub non_empty: Vec<String>,
}

/// A value a host gives a `${...}` reference of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Own {
    WorkspaceFolder,
    WorkspaceFolderBasename,
    UserHome,
    PathSeparator,
}

/// What a host makes of one `${body}` in one field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference<'a> {
    /// Kept as written.
    Literal,
    /// The environment variable `var`, or the written default when it is unset.
    Env {
        var: &'a str,
        default: Option<&'a str>,
    },
    /// One of the host's own names, never read from the environment.
    Own(Own),
    /// Cannot be answered here: the message says why and what to do.
    Refused(String),
}

impl Variables {
    pub fn of(host: Host) -> Variables {
        Variables {
            syntax: Syntax::of(host),
            ..Variables::default()
        }
    }

    /// What the host makes of `${body}` in `field` (`command`, `args[0]`, `env.K`,
    /// `cwd`, `url`, `headers.K`).
    pub fn reference<'a>(&self, field: &str, body: &'a str) -> Reference<'a> {
        if self.named.iter().any(|f| f == field) {
            return shell(body);
        }
        let env_only = |body: &'a str| match body.strip_prefix("env:") {
            Some(var) if is_name(var) => Reference::Env { var, default: None },
            _ => Reference::Literal,
        };
        match self.syntax {
            Syntax::Shell => shell(body),
            Syntax::Literal | Syntax::Goose => Reference::Literal,
            Syntax::VsCode => vscode(body),
            Syntax::Cursor => match own(body) {
                Some(own) => Reference::Own(own),
                None => shell(body),
            },
            Syntax::RooCode if body == "workspaceFolder" => Reference::Own(Own::WorkspaceFolder),
            Syntax::RooCode => env_only(body),
            // Cline trims the name.
            Syntax::Cline => match body.strip_prefix("env:").map(str::trim) {
                Some(var) if is_name(var) => Reference::Env { var, default: None },
                _ => Reference::Literal,
            },
            Syntax::AmazonQ if field == "command" => shell(body),
            Syntax::AmazonQ if field.starts_with("env.") || field.starts_with("headers.") => {
                env_only(body)
            }
            Syntax::AmazonQ => Reference::Literal,
        }
    }

    /// Whether the host leaves `field` out when its variable is unset (or, for a
    /// header, blank) rather than failing.
    pub fn is_optional(&self, field: &str) -> bool {
        self.optional.iter().any(|f| f == field)
    }

    /// Whether `field` is read as [`Syntax::Shell`] reads it (so an unclosed `${` is
    /// an error, not text).
    pub fn shell_reading(&self, field: &str) -> bool {
        self.named.iter().any(|f| f == field)
            || match self.syntax {
                Syntax::Shell | Syntax::Cursor => true,
                Syntax::AmazonQ => field == "command",
                _ => false,
            }
    }
}

fn is_name(var: &str) -> bool {
    !var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `workspaceFolder`, `userHome` and the other names VS Code and Cursor answer
/// themselves.
fn own(body: &str) -> Option<Own> {
    match body {
        "workspaceFolder" | "workspaceRoot" => Some(Own::WorkspaceFolder),
        "workspaceFolderBasename" | "workspaceRootFolderName" => Some(Own::WorkspaceFolderBasename),
        "userHome" => Some(Own::UserHome),
        "pathSeparator" | "/" => Some(Own::PathSeparator),
        _ => None,
    }
}

/// `${VAR}`, `${VAR:-default}`, `${env:VAR}`, `${workspaceFolder}`; `${input:..}`
/// refused.
fn shell(body: &str) -> Reference<'_> {
    if body == "workspaceFolder" {
        return Reference::Own(Own::WorkspaceFolder);
    }
    if let Some(input) = body.strip_prefix("input:") {
        return Reference::Refused(input_refused(input));
    }
    let body = body.strip_prefix("env:").unwrap_or(body);
    let (var, default) = match body.split_once(":-") {
        Some((var, default)) => (var, Some(default)),
        None => (body, None),
    };
    if !is_name(var) {
        return Reference::Refused(format!("\"${{{body}}}\" is not a variable reference"));
    }
    Reference::Env { var, default }
}

fn input_refused(input: &str) -> String {
    format!(
        "VS Code input variable ${{input:{input}}} cannot be answered here; use ${{env:NAME}} instead"
    )
}

/// VS Code's reading of `${body}`.
fn vscode(body: &str) -> Reference<'_> {
    // Nesting is not resolved: the reference stays as written.
    if body.contains("${") {
        return Reference::Literal;
    }
    if let Some(own) = own(body) {
        return Reference::Own(own);
    }
    let (name, argument) = match body.split_once(':') {
        Some((name, argument)) => (name, Some(argument)),
        None => (body, None),
    };
    let cannot = |what: &str| {
        Reference::Refused(format!(
            "VS Code's ${{{body}}} ({what}) cannot be answered here; write the value, or use ${{env:NAME}}"
        ))
    };
    match (name, argument) {
        ("env", Some(var)) if is_name(var) => Reference::Env { var, default: None },
        ("env", _) => Reference::Refused(format!("\"${{{body}}}\" is not a variable reference")),
        ("input", Some(input)) => Reference::Refused(input_refused(input)),
        ("config", _) => cannot("a VS Code setting"),
        ("command", _) => cannot("a command VS Code runs"),
        ("cwd", None) => Reference::Own(Own::WorkspaceFolder),
        (
            "workspaceFolder"
            | "workspaceRoot"
            | "workspaceFolderBasename"
            | "workspaceRootFolderName",
            Some(_),
        ) => cannot("a folder of a multi-root workspace"),
        (
            "file"
            | "fileWorkspaceFolder"
            | "fileWorkspaceFolderBasename"
            | "relativeFile"
            | "relativeFileDirname"
            | "fileBasename"
            | "fileBasenameNoExtension"
            | "fileDirname"
            | "fileExtname"
            | "fileDirnameBasename"
            | "lineNumber"
            | "columnNumber"
            | "selectedText"
            | "execPath"
            | "execInstallFolder"
            | "extensionInstallFolder"
            | "defaultBuildTask",
            _,
        ) => cannot("known only to the running editor"),
        _ => Reference::Literal,
    }
}

/// A value as written in `host`'s file, as a `${VAR}` template.
///
/// - Claude Code, Kiro, VS Code, Cursor and the rest: as written, each later read by
///   its host's own [`Syntax`].
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
        let rest = &value[i + c.len_utf8()..];
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

/// A piece of a URL template: literal text, or an expanded `${VAR}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlPart {
    Text(String),
    Var { name: String, value: String },
}

/// Where in a URL the text read so far ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Component {
    Scheme,
    Authority,
    Path,
    Query,
    Fragment,
}

/// Characters kept as they are in a path value: unreserved, sub-delims, `:`, `@`, `/`.
const PATH_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'!')
    .remove(b'$')
    .remove(b'&')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'*')
    .remove(b'+')
    .remove(b',')
    .remove(b';')
    .remove(b'=')
    .remove(b':')
    .remove(b'@')
    .remove(b'/');
/// Characters kept as they are in a userinfo, query or fragment value: unreserved only.
const UNRESERVED_ONLY: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Joins a URL template's parts, each variable percent-encoded for the component it
/// lands in, so that a value can never move the scheme, userinfo, host or port.
///
/// A variable standing for the whole URL, or starting it (an origin such as
/// `${BASE}/mcp`), or for the whole host, is taken as written; a host value may not
/// hold `@`, `/`, `?`, `#` or `\\`. A variable inside the scheme, part of a host or a
/// port is refused unless its value is a plain host label or a number.
///
/// Returns the URL and, per variable, the text it became (to redact in that form too).
pub fn expand_url(parts: &[UrlPart]) -> Result<(String, Vec<(String, String)>), String> {
    let mut url = UrlState::default();
    let mut inserted = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        match part {
            UrlPart::Text(text) => url.literal(text),
            UrlPart::Var { name, value } => {
                let next_text = match parts.get(i + 1) {
                    Some(UrlPart::Text(t)) => Some(t.as_str()),
                    _ => None,
                };
                let start = url.out.len();
                url.variable(name, value, &parts[i + 1..], next_text)?;
                inserted.push((name.clone(), url.out[start..].to_string()));
            }
        }
    }
    Ok((url.out, inserted))
}

#[derive(Default)]
struct UrlState {
    out: String,
    component: Option<Component>,
    /// Where the host starts in `out`, once in the authority.
    host_start: usize,
    in_port: bool,
    in_brackets: bool,
}

impl UrlState {
    fn component(&self) -> Component {
        self.component.unwrap_or(Component::Scheme)
    }

    fn literal(&mut self, text: &str) {
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            let mut len = c.len_utf8();
            match (self.component(), c) {
                (Component::Scheme, ':') => {
                    if rest.starts_with("://") {
                        len = 3;
                        self.component = Some(Component::Authority);
                        self.host_start = self.out.len() + 3;
                    } else {
                        self.component = Some(Component::Path);
                    }
                }
                (Component::Authority, '/') => self.component = Some(Component::Path),
                (Component::Authority, '?') | (Component::Path, '?') => {
                    self.component = Some(Component::Query)
                }
                (Component::Authority | Component::Path | Component::Query, '#') => {
                    self.component = Some(Component::Fragment)
                }
                (Component::Authority, '@') => {
                    self.host_start = self.out.len() + 1;
                    self.in_port = false;
                }
                (Component::Authority, '[') => self.in_brackets = true,
                (Component::Authority, ']') => self.in_brackets = false,
                (Component::Authority, ':') if !self.in_brackets => self.in_port = true,
                _ => {}
            }
            self.out.push_str(&rest[..len]);
            rest = &rest[len..];
        }
    }

    fn variable(
        &mut self,
        name: &str,
        value: &str,
        after: &[UrlPart],
        next_text: Option<&str>,
    ) -> Result<(), String> {
        let refuse = |what: &str| {
            Err(format!(
                "the value of ${{{name}}} would change the URL's {what}; only a variable standing for the whole URL or the whole host may do that"
            ))
        };
        match self.component() {
            Component::Scheme if self.out.is_empty() => self.literal(value),
            Component::Scheme => return refuse("scheme"),
            Component::Authority if userinfo_follows(after) => {
                self.out.extend(utf8_percent_encode(value, UNRESERVED_ONLY));
            }
            Component::Authority if self.in_port => {
                if !value.chars().all(|c| c.is_ascii_digit()) {
                    return refuse("port");
                }
                self.out.push_str(value);
            }
            Component::Authority => {
                let whole_host = self.out.len() == self.host_start
                    && next_text.is_none_or(|t| t.starts_with([':', '/', '?', '#']));
                if whole_host {
                    if value.is_empty() || value.contains(['@', '/', '?', '#', '\\']) {
                        return refuse("authority");
                    }
                    self.literal(value);
                } else {
                    let label = !value.is_empty()
                        && value
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
                    if !label {
                        return refuse("host");
                    }
                    self.out.push_str(value);
                }
            }
            Component::Path => self.out.extend(utf8_percent_encode(value, PATH_VALUE)),
            Component::Query | Component::Fragment => {
                self.out.extend(utf8_percent_encode(value, UNRESERVED_ONLY));
            }
        }
        Ok(())
    }
}

/// Whether an `@` comes later in the authority's literal text: then a variable here
/// is in the userinfo.
fn userinfo_follows(after: &[UrlPart]) -> bool {
    for part in after {
        if let UrlPart::Text(text) = part {
            for c in text.chars() {
                match c {
                    '@' => return true,
                    '/' | '?' | '#' => return false,
                    _ => {}
                }
            }
        }
    }
    false
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
    fn gemini_values_with_non_ascii_characters_are_translated_whole() {
        // Found by the `config` fuzz target: a character of more than one byte before
        // a `$` was sliced inside.
        assert_eq!(
            translate(
                "caf\u{e9} $\u{e9}t\u{e9} \u{fffd}$TOKEN\u{1f600}",
                Host::GeminiCli
            )
            .unwrap(),
            "caf\u{e9} $\u{e9}t\u{e9} \u{fffd}${TOKEN}\u{1f600}"
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

    fn url(parts: &[(&str, Option<&str>)]) -> Result<String, String> {
        let parts: Vec<UrlPart> = parts
            .iter()
            .map(|(text, value)| match value {
                None => UrlPart::Text(text.to_string()),
                Some(v) => UrlPart::Var {
                    name: text.to_string(),
                    value: v.to_string(),
                },
            })
            .collect();
        expand_url(&parts).map(|(url, _)| url)
    }

    #[test]
    fn a_variable_in_a_query_or_path_is_percent_encoded_for_its_component() {
        assert_eq!(
            url(&[
                ("https://api.example.com/", None),
                ("ORG", Some("a b?c#d")),
                ("/mcp?key=", None),
                ("KEY", Some("k&x=1#f+g")),
            ])
            .unwrap(),
            "https://api.example.com/a%20b%3Fc%23d/mcp?key=k%26x%3D1%23f%2Bg"
        );
    }

    #[test]
    fn a_variable_in_the_userinfo_cannot_move_the_host() {
        assert_eq!(
            url(&[
                ("https://", None),
                ("USER", Some("me@evil.com:1/")),
                ("@api.example.com/mcp", None),
            ])
            .unwrap(),
            "https://me%40evil.com%3A1%2F@api.example.com/mcp"
        );
    }

    #[test]
    fn whole_url_origin_and_whole_host_variables_are_taken_as_written() {
        assert_eq!(
            url(&[("URL", Some("https://x.example/mcp?a=b"))]).unwrap(),
            "https://x.example/mcp?a=b"
        );
        assert_eq!(
            url(&[("BASE", Some("https://x.example:8443")), ("/mcp", None)]).unwrap(),
            "https://x.example:8443/mcp"
        );
        assert_eq!(
            url(&[
                ("https://", None),
                ("HOST", Some("x.example:8443")),
                ("/mcp", None)
            ])
            .unwrap(),
            "https://x.example:8443/mcp"
        );
        assert_eq!(
            url(&[
                ("https://", None),
                ("TENANT", Some("acme")),
                (".example.com/mcp", None)
            ])
            .unwrap(),
            "https://acme.example.com/mcp"
        );
    }

    #[test]
    fn a_value_that_would_move_the_authority_is_refused() {
        let cases: [&[(&str, Option<&str>)]; 4] = [
            &[
                ("https://", None),
                ("TENANT", Some("evil.com/x?")),
                (".example.com/mcp", None),
            ],
            &[
                ("https://", None),
                ("HOST", Some("evil.com@x")),
                ("/mcp", None),
            ],
            &[
                ("https://api.example.com:", None),
                ("PORT", Some("80@evil.com")),
                ("/mcp", None),
            ],
            &[("http", None), ("S", Some("s://evil.com")), ("://x/", None)],
        ];
        for case in cases {
            let err = url(case).unwrap_err();
            assert!(err.contains("would change the URL's"), "{err}");
        }
    }
}
