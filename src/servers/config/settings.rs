//! Settings files that turn servers off from outside their entries: Claude Code's
//! `disabledMcpjsonServers`, Gemini CLI's `mcp.excluded` / `mcp.allowed` and its
//! `~/.gemini/mcp-server-enablement.json`. They are not server configs: they are read
//! after the configs, as modifiers of the entries found, and only when an entry of
//! their host is found.
//!
//! A lock is shared by the team, and CI has no personal settings: what CI verifies is
//! what the agent receives. So a setting committed with the project turns the server
//! off (skipped, naming the file). A personal setting (the developer's own files) never
//! makes one developer's `update` drop a pin the team needs: a project server it turns
//! off stays pinned, with a note saying so; a server of the developer's own (a
//! user-level file) is skipped, as the host skips it.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::shape::{self, Format};
use super::{ConfigError, Host, Scope};

/// The most of a settings file read: settings are small, and a file larger than this
/// is refused rather than read whole.
pub const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

/// What the settings say of one entry, when they say anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The host does not start it, for everyone who uses the project (or, for the
    /// user's own server, for this user): not pinned.
    Skip(String),
    /// Turned off only in this developer's own settings: still pinned for the project.
    Note(String),
}

/// Who a settings file belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// Committed with the project: every checkout, and CI, has it.
    Project,
    /// The developer's own (gitignored or in the home directory).
    Personal,
}

/// One Claude Code settings file's `disabledMcpjsonServers`.
#[derive(Debug)]
struct ClaudeFile {
    shown: String,
    owner: Owner,
    disabled: Vec<String>,
}

/// What `~/.claude.json` keeps for this project (`projects["<dir>"]`): the servers
/// `/mcp` turned off (`disabledMcpServers`) and the `.mcp.json` servers the user
/// rejected when asked (`disabledMcpjsonServers`). Both are the user's own.
#[derive(Debug, Default)]
struct ClaudeJson {
    shown: String,
    disabled: Vec<String>,
    rejected: Vec<String>,
}

/// One Gemini CLI settings file's `mcp.allowed` and `mcp.excluded`.
#[derive(Debug)]
struct GeminiFile {
    shown: String,
    owner: Owner,
    allowed: Option<Vec<String>>,
    excluded: Vec<String>,
}

/// Gemini CLI's settings files and its enablement file.
#[derive(Debug, Default)]
struct Gemini {
    files: Vec<GeminiFile>,
    /// `~/.gemini/mcp-server-enablement.json`: the (lower-cased) names set
    /// `{"enabled": false}`, and the file as shown.
    disabled: Option<(String, Vec<String>)>,
}

/// The settings files of one project and user, read once each when first needed.
#[derive(Debug)]
pub(crate) struct Modifiers {
    project_dir: PathBuf,
    home: Option<PathBuf>,
    gemini_dir: Option<PathBuf>,
    claude: Option<Vec<ClaudeFile>>,
    claude_json: Option<Option<ClaudeJson>>,
    gemini: Option<Gemini>,
    /// Settings files a host itself would ignore (and so mcp-lock ignores): what
    /// `mcp-lock` warns of.
    pub warnings: Vec<String>,
}

impl Modifiers {
    /// The settings of `project_dir`, with the home directory from `lookup`.
    pub fn new(project_dir: &Path, lookup: &dyn Fn(&str) -> Option<String>) -> Self {
        let home = lookup("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
        Modifiers {
            project_dir: project_dir.to_path_buf(),
            gemini_dir: super::user::gemini_dir(home.clone(), lookup),
            home,
            claude: None,
            claude_json: None,
            gemini: None,
            warnings: Vec::new(),
        }
    }

    /// What the settings say of the entry `name` of a file of `host` (`scope` is
    /// Claude Code's scope of it; `personal` when it was read from a user-level file).
    pub fn judge(
        &mut self,
        host: Host,
        scope: Option<Scope>,
        name: &str,
        personal: bool,
    ) -> Result<Option<Verdict>, ConfigError> {
        let said = match host {
            // Claude Code docs ("Settings"): disabledMcpjsonServers rejects servers of
            // `.mcp.json` files, the project scope; user and local servers are not
            // concerned. enabledMcpjsonServers and enableAllProjectMcpServers only
            // approve: an unapproved server is asked about (and `claude -p` starts it
            // unasked), so they leave the pin as it is.
            Host::ClaudeCode => {
                let settings = match scope {
                    Some(Scope::Project) => self.claude_says(name),
                    _ => None,
                };
                settings.or_else(|| self.claude_json_says(name, scope))
            }
            Host::GeminiCli => self.gemini_says(name)?,
            _ => None,
        };
        Ok(said.map(|(owner, why)| match owner {
            Owner::Project => Verdict::Skip(why),
            Owner::Personal if personal => Verdict::Skip(why),
            Owner::Personal => Verdict::Note(format!(
                "{why}: turned off in your own settings; still pinned for the project"
            )),
        }))
    }

    fn claude_says(&mut self, name: &str) -> Option<(Owner, String)> {
        if self.claude.is_none() {
            let files = self.claude_files();
            self.claude = Some(files);
        }
        let files = self.claude.as_ref()?;
        // A committed setting first: it decides for everyone.
        [Owner::Project, Owner::Personal]
            .into_iter()
            .find_map(|owner| {
                files
                    .iter()
                    .filter(|f| f.owner == owner)
                    .find(|f| f.disabled.iter().any(|n| n == name))
                    .map(|f| (owner, format!("disabledMcpjsonServers in {}", f.shown)))
            })
    }

    /// What `~/.claude.json` says of `name` for this project: `/mcp` turned it off
    /// (any scope), or, for a `.mcp.json` server, the user rejected it. The user's
    /// own, so a project server stays pinned with a note, and a server of
    /// `~/.claude.json` itself is skipped. Read only when a Claude Code entry is
    /// found. From Claude Code's documentation and issues (anthropics/claude-code
    /// #13311, #78314: the key `/mcp` writes); closed source.
    fn claude_json_says(&mut self, name: &str, scope: Option<Scope>) -> Option<(Owner, String)> {
        if self.claude_json.is_none() {
            let read = self.claude_json_file();
            self.claude_json = Some(read);
        }
        let file = self.claude_json.as_ref()?.as_ref()?;
        if file.disabled.iter().any(|n| n == name) {
            return Some((
                Owner::Personal,
                format!(
                    "disabledMcpServers of this project in {} (/mcp disable)",
                    file.shown
                ),
            ));
        }
        (scope == Some(Scope::Project) && file.rejected.iter().any(|n| n == name)).then(|| {
            (
                Owner::Personal,
                format!("disabledMcpjsonServers of this project in {}", file.shown),
            )
        })
    }

    /// `~/.claude.json`'s entry for this project. The file holds much more than
    /// settings (history, caches): read up to [`super::MAX_DISCOVERED_BYTES`], as a
    /// config is; one unreadable or not JSON is ignored with a warning.
    fn claude_json_file(&mut self) -> Option<ClaudeJson> {
        let path = self.home.as_ref()?.join(".claude.json");
        let shown = self.shown(&path);
        let ignored = "the servers it turns off for this project are not known";
        let text = match read_capped(&path, &shown, super::MAX_DISCOVERED_BYTES) {
            Ok(text) => text?,
            Err(e) => {
                self.warnings.push(format!("{e}; {ignored}"));
                return None;
            }
        };
        let root = match shape::parse(&text, Format::Json, &shown) {
            Ok(root) => root,
            Err(e) => {
                self.warnings.push(format!("{e}; {ignored}"));
                return None;
            }
        };
        let key = super::project_key(&self.project_dir);
        let given = self.project_dir.display().to_string();
        let projects = root.get("projects")?;
        let entry = projects.get(&key).or_else(|| projects.get(&given))?;
        let mut list = |member: &str| match entry.get(member) {
            None | Some(Value::Null) => Vec::new(),
            Some(value) => names(value).unwrap_or_else(|| {
                self.warnings.push(format!(
                    "{shown}: \"{member}\" of this project is not a list of names; {ignored}"
                ));
                Vec::new()
            }),
        };
        let disabled = list("disabledMcpServers");
        let rejected = list("disabledMcpjsonServers");
        Some(ClaudeJson {
            shown,
            disabled,
            rejected,
        })
    }

    /// Claude Code's settings files: `.claude/settings.json` (shared, committed),
    /// `.claude/settings.local.json` and `~/.claude/settings.json` (personal). Claude
    /// Code ignores an invalid settings file with a warning; so does mcp-lock.
    fn claude_files(&mut self) -> Vec<ClaudeFile> {
        let mut places = vec![
            (
                self.project_dir.join(".claude/settings.json"),
                Owner::Project,
            ),
            (
                self.project_dir.join(".claude/settings.local.json"),
                Owner::Personal,
            ),
        ];
        if let Some(home) = &self.home {
            places.push((home.join(".claude/settings.json"), Owner::Personal));
        }
        let mut files = Vec::new();
        for (path, owner) in places {
            let shown = self.shown(&path);
            let text = match read_bounded(&path, &shown) {
                Ok(Some(text)) => text,
                Ok(None) => continue,
                Err(e) => {
                    self.warnings
                        .push(format!("{e}; the servers it turns off are not known"));
                    continue;
                }
            };
            let root = match shape::parse(&text, Format::Json, &shown) {
                Ok(root) => root,
                Err(e) => {
                    self.warnings.push(format!(
                        "{e}; Claude Code ignores an invalid settings file, and so does mcp-lock"
                    ));
                    continue;
                }
            };
            if !root.is_object() {
                self.warnings.push(format!(
                    "{shown}: not a JSON object; Claude Code ignores an invalid settings file, and so does mcp-lock"
                ));
                continue;
            }
            let disabled = match root.get("disabledMcpjsonServers") {
                None | Some(Value::Null) => Vec::new(),
                Some(value) => match names(value) {
                    Some(names) => names,
                    None => {
                        self.warnings.push(format!(
                            "{shown}: \"disabledMcpjsonServers\" is not a list of names; Claude Code ignores an invalid settings file, and so does mcp-lock"
                        ));
                        continue;
                    }
                },
            };
            files.push(ClaudeFile {
                shown,
                owner,
                disabled,
            });
        }
        files
    }

    fn gemini_says(&mut self, name: &str) -> Result<Option<(Owner, String)>, ConfigError> {
        if self.gemini.is_none() {
            let gemini = self.gemini_files()?;
            self.gemini = Some(gemini);
        }
        let Some(gemini) = self.gemini.as_ref() else {
            return Ok(None);
        };
        // What the project's own files say decides for everyone; then what the
        // developer's files add (google-gemini/gemini-cli
        // packages/core/src/tools/mcp-client-manager.ts, isBlockedBySettings then
        // isDisabledByUser).
        let committed: Vec<&GeminiFile> = gemini
            .files
            .iter()
            .filter(|f| f.owner == Owner::Project)
            .collect();
        if let Some(why) = blocked(&committed, name) {
            return Ok(Some((Owner::Project, why)));
        }
        let all: Vec<&GeminiFile> = gemini.files.iter().collect();
        if let Some(why) = blocked(&all, name) {
            return Ok(Some((Owner::Personal, why)));
        }
        // mcpServerEnablement.ts: the name lower-cased and trimmed is the key.
        if let Some((shown, disabled)) = &gemini.disabled
            && disabled.contains(&name.trim().to_lowercase())
        {
            return Ok(Some((
                Owner::Personal,
                format!("disabled in {shown} (gemini mcp disable)"),
            )));
        }
        Ok(None)
    }

    /// Gemini CLI's workspace `.gemini/settings.json` (committed) and user
    /// `~/.gemini/settings.json` (google-gemini/gemini-cli
    /// packages/cli/src/config/settings.ts, loadSettings: the workspace file is not
    /// read separately when the project is the home directory). A settings file that
    /// is not JSON stops Gemini CLI ("Please fix the configuration file(s)"): an
    /// error here too. The enablement file, when unreadable, is ignored with an error
    /// message by Gemini CLI (mcpServerEnablement.ts, readConfig): a warning here.
    fn gemini_files(&mut self) -> Result<Gemini, ConfigError> {
        let user_dir = self.gemini_dir();
        let workspace = self.project_dir.join(".gemini/settings.json");
        let user = user_dir.as_ref().map(|d| d.join("settings.json"));
        let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        let mut places = Vec::new();
        if !user.as_deref().is_some_and(|u| same(u, &workspace)) {
            places.push((workspace, Owner::Project));
        }
        if let Some(user) = user {
            places.push((user, Owner::Personal));
        }
        let mut gemini = Gemini::default();
        for (path, owner) in places {
            let shown = self.shown(&path);
            let Some(text) = read_bounded(&path, &shown)? else {
                continue;
            };
            let root = shape::parse(&text, Format::Json, &shown)?;
            if !root.is_object() {
                return Err(ConfigError::Shape {
                    path: shown,
                    message: "the settings file is not a JSON object".into(),
                });
            }
            let mcp = root.get("mcp");
            // settings.ts, getConsolidatedExcludedMcpServers and
            // getConsolidatedAllowedMcpServers: a member that is not a list is not used.
            let list = |key: &str| {
                mcp.and_then(|m| m.get(key))
                    .and_then(Value::as_array)
                    .map(|items| {
                        items
                            .iter()
                            .filter_map(Value::as_str)
                            .map(String::from)
                            .collect::<Vec<_>>()
                    })
            };
            gemini.files.push(GeminiFile {
                shown,
                owner,
                allowed: list("allowed"),
                excluded: list("excluded").unwrap_or_default(),
            });
        }
        if let Some(dir) = user_dir {
            let path = dir.join("mcp-server-enablement.json");
            let shown = self.shown(&path);
            let read = read_bounded(&path, &shown).and_then(|text| {
                text.map(|text| shape::parse(&text, Format::Json, &shown))
                    .transpose()
            });
            match read {
                Ok(Some(Value::Object(map))) => {
                    let disabled = map
                        .iter()
                        .filter(|(_, state)| state.get("enabled") == Some(&Value::Bool(false)))
                        .map(|(name, _)| name.clone())
                        .collect();
                    gemini.disabled = Some((shown, disabled));
                }
                Ok(None) => {}
                Ok(Some(_)) => self.warnings.push(format!(
                    "{shown}: not a JSON object; Gemini CLI ignores it, and so does mcp-lock"
                )),
                Err(e) => self
                    .warnings
                    .push(format!("{e}; Gemini CLI ignores it, and so does mcp-lock")),
            }
        }
        Ok(gemini)
    }

    /// Gemini CLI's own directory ([`super::user::gemini_dir`]: `~/.gemini`, or
    /// under `GEMINI_CLI_HOME`).
    fn gemini_dir(&self) -> Option<PathBuf> {
        self.gemini_dir.clone()
    }

    /// A settings file as messages show it: relative to the project, `~/…` in the
    /// home directory, else in full.
    fn shown(&self, path: &Path) -> String {
        if let Ok(rel) = path.strip_prefix(&self.project_dir) {
            return rel.display().to_string();
        }
        if let Some(rel) = self.home.as_ref().and_then(|h| path.strip_prefix(h).ok()) {
            return format!("~/{}", rel.display());
        }
        path.display().to_string()
    }
}

/// Which `.mcp.json` servers of a project Claude Code starts without asking: those its
/// settings files (`.claude/settings.json`, `.claude/settings.local.json`,
/// `~/.claude/settings.json`) or `~/.claude.json`'s entry for the project approve
/// (`enableAllProjectMcpServers`, `enabledMcpjsonServers`, the latter written when the
/// user approves a server when asked) and none rejects (`disabledMcpjsonServers`).
/// A server not approved is asked about before it starts: nothing that only reads a
/// project may start it first. Files that do not read approve nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaudeApproval {
    pub all: bool,
    pub enabled: Vec<String>,
    pub disabled: Vec<String>,
}

impl ClaudeApproval {
    pub fn read(project_dir: &Path, lookup: &dyn Fn(&str) -> Option<String>) -> Self {
        let home = lookup("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
        let mut approval = ClaudeApproval::default();
        let mut objects: Vec<Value> = Vec::new();
        let mut files = vec![
            project_dir.join(".claude/settings.json"),
            project_dir.join(".claude/settings.local.json"),
        ];
        if let Some(home) = &home {
            files.push(home.join(".claude/settings.json"));
        }
        let parsed = |path: &Path, max: u64| -> Option<Value> {
            let shown = path.display().to_string();
            let text = read_capped(path, &shown, max).ok()??;
            shape::parse(&text, Format::Json, &shown).ok()
        };
        objects.extend(files.iter().filter_map(|f| parsed(f, MAX_SETTINGS_BYTES)));
        if let Some(root) = home
            .as_ref()
            .and_then(|h| parsed(&h.join(".claude.json"), super::MAX_DISCOVERED_BYTES))
        {
            let projects = root.get("projects");
            let key = super::project_key(project_dir);
            let given = project_dir.display().to_string();
            if let Some(entry) = projects.and_then(|p| p.get(&key).or_else(|| p.get(&given))) {
                objects.push(entry.clone());
            }
        }
        for object in &objects {
            approval.all |= object.get("enableAllProjectMcpServers") == Some(&Value::Bool(true));
            let list = |member: &str| object.get(member).and_then(names).unwrap_or_default();
            approval.enabled.extend(list("enabledMcpjsonServers"));
            approval.disabled.extend(list("disabledMcpjsonServers"));
        }
        approval
    }

    /// Whether Claude Code starts the `.mcp.json` server `name` unasked.
    pub fn approves(&self, name: &str) -> bool {
        !self.disabled.iter().any(|n| n == name)
            && (self.all || self.enabled.iter().any(|n| n == name))
    }
}

/// The names of the servers Claude Code has from `~/.claude.json` for this project:
/// its top-level `mcpServers` (user scope) and `projects["<dir>"].mcpServers` (local
/// scope). Their tools get names as the project's do, so a name two servers share is
/// known only with these. No file: none; a file that cannot be read: the error.
pub fn claude_user_server_names(
    project_dir: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<String>, ConfigError> {
    let (user, local) = claude_user_server_scopes(project_dir, lookup)?;
    Ok(user.into_iter().chain(local).collect())
}

/// The names of the user's own Claude Code servers for `project_dir` in
/// `~/.claude.json`: user scope (its top-level `mcpServers`), then local scope (its
/// `projects["<dir>"].mcpServers`).
pub fn claude_user_server_scopes(
    project_dir: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(Vec<String>, Vec<String>), ConfigError> {
    let Some(home) = lookup("HOME").filter(|h| !h.is_empty()).map(PathBuf::from) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let path = home.join(".claude.json");
    let shown = path.display().to_string();
    let Some(text) = read_capped(&path, &shown, super::MAX_DISCOVERED_BYTES)? else {
        return Ok((Vec::new(), Vec::new()));
    };
    let root = shape::parse(&text, Format::Json, &shown)?;
    let key = super::project_key(project_dir);
    let given = project_dir.display().to_string();
    let local = root
        .get("projects")
        .and_then(|p| p.get(&key).or_else(|| p.get(&given)))
        .and_then(|entry| entry.get("mcpServers"));
    let names = |servers: Option<&Value>| -> Vec<String> {
        servers
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    Ok((names(root.get("mcpServers")), names(local)))
}

/// Why Gemini CLI does not start `name` under these settings files, if it does not:
/// an excluded list naming it (lists of every file add up), or the allowed lists
/// (one list that all files' lists have in common) not naming it. Matched as
/// `isBlockedBySettings` matches: exactly.
fn blocked(files: &[&GeminiFile], name: &str) -> Option<String> {
    if let Some(file) = files.iter().find(|f| f.excluded.iter().any(|n| n == name)) {
        return Some(format!("in mcp.excluded of {}", file.shown));
    }
    let lists: Vec<&&GeminiFile> = files.iter().filter(|f| f.allowed.is_some()).collect();
    let (first, rest) = lists.split_first()?;
    // settings.ts, getConsolidatedAllowedMcpServers: the first list's names that
    // every other list has (compared lower-cased and trimmed); an empty result
    // allows every server.
    let norm = |n: &str| n.trim().to_lowercase();
    let common: Vec<&String> = first
        .allowed
        .iter()
        .flatten()
        .filter(|n| {
            rest.iter()
                .all(|f| f.allowed.iter().flatten().any(|m| norm(m) == norm(n)))
        })
        .collect();
    if common.is_empty() || common.iter().any(|n| *n == name) {
        return None;
    }
    let lacking = lists
        .iter()
        .find(|f| !f.allowed.iter().flatten().any(|n| n == name))
        .unwrap_or(first);
    Some(format!("not in mcp.allowed of {}", lacking.shown))
}

/// A list of strings, or `None` when the value is anything else.
fn names(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(String::from))
        .collect()
}

/// A settings file's text; `None` when there is none (nothing there, or not a file).
/// Refused past [`MAX_SETTINGS_BYTES`] or when not UTF-8.
fn read_bounded(path: &Path, shown: &str) -> Result<Option<String>, ConfigError> {
    read_capped(path, shown, MAX_SETTINGS_BYTES)
}

/// [`read_bounded`] with another cap.
fn read_capped(path: &Path, shown: &str, max: u64) -> Result<Option<String>, ConfigError> {
    if !path.is_file() {
        return Ok(None);
    }
    let error = |source: std::io::Error| ConfigError::Read {
        path: shown.to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(error)?;
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).map_err(error)?;
    if bytes.len() as u64 > max {
        return Err(ConfigError::Shape {
            path: shown.to_string(),
            message: format!(
                "larger than {} KiB; a settings file that large is not read",
                max / 1024
            ),
        });
    }
    String::from_utf8(bytes).map(Some).map_err(|_| {
        error(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not UTF-8 text",
        ))
    })
}

/// opencode's top-level `tools` map (`"<server>_<tool>": false`, keys are patterns)
/// and `permission` map, as rules over the names opencode gives MCP tools, in the
/// order opencode weighs them (anomalyco/opencode, formerly sst/opencode:
/// packages/opencode/src/config/config.ts turns the legacy `tools` map into
/// `permission` entries, `permission` winning for the same key; permission/next.ts,
/// `disabled`: the last rule whose permission pattern matches a tool decides, and
/// hides it when it denies for every input). `prefix` is the server's part of the
/// names (see [`opencode_name`]).
pub(crate) fn opencode_rules(root: &Value, prefix: &str) -> Result<Vec<NameRule>, String> {
    // (key, value): the `tools` keys in their order, `permission` overriding a key's
    // value in place and adding its own keys after (remeda mergeDeep).
    let mut ordered: Vec<(String, Value)> = Vec::new();
    match root.get("tools") {
        None | Some(Value::Null) => {}
        Some(Value::Object(tools)) => {
            for (key, shown) in tools {
                let Value::Bool(shown) = shown else {
                    return Err(format!(
                        "\"tools\".{key:?} is not true or false (opencode's tools map says whether each tool is shown)"
                    ));
                };
                let action = if *shown { "allow" } else { "deny" };
                ordered.push((key.clone(), Value::String(action.into())));
            }
        }
        Some(_) => {
            return Err(
                "\"tools\" is not a map of tool names to true or false (opencode's tools map)"
                    .into(),
            );
        }
    }
    if let Some(Value::Object(permission)) = root.get("permission") {
        for (key, value) in permission {
            match ordered.iter_mut().find(|(k, _)| k == key) {
                Some((_, v)) => *v = value.clone(),
                None => ordered.push((key.clone(), value.clone())),
            }
        }
    }
    let mut rules = Vec::new();
    for (key, value) in ordered {
        // permission/next.ts, fromConfig: an action is for every input ("*"); an
        // object gives one rule per input pattern.
        let per_input: Vec<(bool, &str)> = match &value {
            Value::String(action) => vec![(true, action.as_str())],
            Value::Object(inputs) => inputs
                .iter()
                .filter_map(|(input, action)| Some((input == "*", action.as_str()?)))
                .collect(),
            _ => continue,
        };
        for (every_input, action) in per_input {
            rules.push(NameRule {
                pattern: key.clone(),
                prefix: prefix.to_string(),
                hides: every_input && action == "deny",
            });
        }
    }
    Ok(rules)
}

/// A rule over the name a host gives a server's tool (opencode: `<server>_<tool>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameRule {
    /// The pattern, as opencode matches it (`*` any run of characters, `?` one).
    pub pattern: String,
    /// The server's part of the host's names for its tools, `<server>_`.
    pub prefix: String,
    /// Whether a tool this rule decides is hidden from the agent.
    pub hides: bool,
}

impl NameRule {
    /// Whether the rule's pattern matches the host's name for `tool`.
    pub fn matches(&self, tool: &str) -> bool {
        let name = format!("{}{}", self.prefix, tool_name_part(tool));
        wildcard(&name, &self.pattern)
    }
}

/// The server's part of the names opencode gives its tools: `<server>_`.
pub(crate) fn opencode_name(server: &str) -> String {
    format!("{}_", tool_name_part(server))
}

/// A server's or tool's name as an agent host writes it into the names it gives
/// tools (Claude Code's `mcp__<server>__<tool>`, opencode's `<server>_<tool>`,
/// packages/opencode/src/mcp/index.ts `tools`): every character other than an ASCII
/// letter, a digit, `_` or `-` made `_`.
pub fn tool_name_part(name: &str) -> String {
    // The hosts replace with a JavaScript regular expression without the `u` flag:
    // one `_` per UTF-16 code unit, so a character outside the BMP becomes `__`.
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else {
            out.extend(std::iter::repeat_n('_', c.len_utf16()));
        }
    }
    out
}

/// opencode's `Wildcard.match` (packages/opencode/src/util/wildcard.ts) on a name with
/// no `/` in it, as a tool's name never has: `*` and `**` match any run of
/// characters, `?` one character, `**/` nothing, a trailing ` *` is optional, a
/// backslash is a `/` (which matches nothing here), anything else itself.
fn wildcard(name: &str, pattern: &str) -> bool {
    let pattern = pattern.replace('\\', "/").replace("**/", "");
    if let Some(head) = pattern.strip_suffix(" *")
        && !head.ends_with('*')
        && glob(name, head)
    {
        return true;
    }
    glob(name, &pattern)
}

/// `*` any run of characters, `?` any one, the rest literally.
fn glob(name: &str, pattern: &str) -> bool {
    crate::base::text::wildcard(name, pattern)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod gemini_tests;
