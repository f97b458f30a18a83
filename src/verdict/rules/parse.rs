//! Reading rules from a policy file's `[tools]`, `[prompts]`, `[resource-templates]`
//! and `[profile.NAME.*]` sections, and the user's own file.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::{ArgumentRule, Glob, Hint, KindRules, Layer, RuleSet};

/// A parse error: the byte offset in the file and what is wrong.
pub(crate) type At = (usize, String);

/// The largest compiled argument pattern: a hostile file's pattern cannot take the
/// memory of the process checking calls.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// The most of the user's own file read.
const MAX_USER_FILE_BYTES: u64 = 1 << 20;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawKindRules {
    allow: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    deny: Vec<Spanned<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawToolRules {
    allow: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    deny: Vec<Spanned<String>>,
    #[serde(default)]
    deny_when: Vec<Spanned<String>>,
    #[serde(default)]
    except: Vec<Spanned<String>>,
    #[serde(default)]
    arguments: BTreeMap<Spanned<String>, BTreeMap<String, Spanned<RawArgumentRule>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArgumentRule {
    values: Option<Vec<toml::Value>>,
    pattern: Option<String>,
}

/// The rule sections of one host profile (`[profile.NAME.tools]` and friends).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawHostRules {
    pub tools: Option<RawToolRules>,
    pub prompts: Option<RawKindRules>,
    pub resource_templates: Option<RawKindRules>,
}

impl RawHostRules {
    pub fn is_empty(&self) -> bool {
        self.tools.is_none() && self.prompts.is_none() && self.resource_templates.is_none()
    }

    /// The rules these sections give.
    pub fn read(self) -> Result<RuleSet, At> {
        let mut set = RuleSet::default();
        if let Some(raw) = self.prompts {
            set.prompts = kind_rules(raw.allow, raw.deny)?;
        }
        if let Some(raw) = self.resource_templates {
            set.resource_templates = kind_rules(raw.allow, raw.deny)?;
        }
        if let Some(raw) = self.tools {
            set.tools = kind_rules(raw.allow, raw.deny)?;
            set.tools.except = globs(raw.except)?;
            for hint in raw.deny_when {
                let at = hint.span().start;
                let hint = hint.into_inner();
                let parsed = Hint::parse(&hint).ok_or_else(|| {
                    let known: Vec<&str> = Hint::ALL.iter().map(|h| h.as_str()).collect();
                    (
                        at,
                        format!(
                            "deny-when: {hint:?} is not a hint; use {}",
                            known.join(", ")
                        ),
                    )
                })?;
                set.tools.deny_when.push(parsed);
            }
            for (tool, rules) in raw.arguments {
                let glob = Glob::parse(tool.get_ref()).map_err(|e| (tool.span().start, e))?;
                let mut read = BTreeMap::new();
                for (name, rule) in rules {
                    let at = rule.span().start;
                    read.insert(name, argument_rule(rule.into_inner()).map_err(|e| (at, e))?);
                }
                set.arguments.push((glob, read));
            }
        }
        Ok(set)
    }
}

fn globs(list: Vec<Spanned<String>>) -> Result<Vec<Glob>, At> {
    list.into_iter()
        .map(|g| Glob::parse(g.get_ref()).map_err(|e| (g.span().start, e)))
        .collect()
}

fn kind_rules(
    allow: Option<Vec<Spanned<String>>>,
    deny: Vec<Spanned<String>>,
) -> Result<KindRules, At> {
    Ok(KindRules {
        allow: allow.map(globs).transpose()?,
        deny: globs(deny)?,
        ..KindRules::default()
    })
}

fn argument_rule(raw: RawArgumentRule) -> Result<ArgumentRule, String> {
    if raw.values.is_none() && raw.pattern.is_none() {
        return Err(
            "an argument rule needs `values = [...]` or `pattern = \"...\"` (or both)".into(),
        );
    }
    let pattern = raw
        .pattern
        .map(|p| {
            regex::RegexBuilder::new(&p)
                .size_limit(PATTERN_SIZE_LIMIT)
                .build()
                .map_err(|e| {
                    let first = e.to_string();
                    let first = first.lines().last().unwrap_or("").trim().to_string();
                    format!("pattern {p:?} is not a regular expression: {first}")
                })
        })
        .transpose()?;
    let values = raw
        .values
        .map(|v| {
            v.into_iter()
                .map(|v| serde_json::to_value(v).map_err(|e| format!("values: {e}")))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?;
    Ok(ArgumentRule { values, pattern })
}

/// The user's own file, as far as rules go.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawUserFile {
    /// Read by crate::records::audit::signing.
    #[serde(default)]
    #[allow(dead_code)]
    audit: Option<toml::Value>,
    tools: Option<RawToolRules>,
    prompts: Option<RawKindRules>,
    resource_templates: Option<RawKindRules>,
    #[serde(default)]
    profile: BTreeMap<String, RawHostRules>,
}

/// The rules of the user's own settings text read from `shown`; None when it gives
/// none. The error is one line naming the file and line.
pub fn user_layer_from_text(text: &str, shown: &str) -> Result<Option<Layer>, String> {
    let text = crate::servers::config::shape::without_bom(text);
    let line = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let raw: RawUserFile = toml::from_str(text).map_err(|e| {
        format!(
            "{shown}:{}: {}",
            line(e.span().map_or(0, |s| s.start)),
            e.message().trim()
        )
    })?;
    let at = |(offset, message): At| format!("{shown}:{}: {message}", line(offset));
    let sections = RawHostRules {
        tools: raw.tools,
        prompts: raw.prompts,
        resource_templates: raw.resource_templates,
    };
    let empty = sections.is_empty() && raw.profile.values().all(RawHostRules::is_empty);
    if empty {
        return Ok(None);
    }
    let base = sections.read().map_err(at)?;
    let mut hosts = BTreeMap::new();
    for (name, sections) in raw.profile {
        hosts.insert(name, sections.read().map_err(at)?);
    }
    Ok(Some(Layer {
        source: shown.to_string(),
        user: true,
        base,
        hosts,
    }))
}

/// The text of the user's own settings file at `path`, None when there is none (no
/// file there, or a path through a file): a regular file only, opened without
/// blocking, at most 1 MiB.
pub fn read_user_file(path: &std::path::Path) -> Result<Option<String>, String> {
    match crate::base::files::read_regular_text(path, MAX_USER_FILE_BYTES) {
        Ok(text) => Ok(Some(text)),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(format!(
            "cannot read {}: {e}; make it a regular file of your settings, or remove it",
            path.display()
        )),
    }
}

/// The rules of the user's own settings file
/// ([`crate::records::audit::signing::user_settings_path`]); None when there is no file or it
/// gives no rules. A file that cannot be read or understood is an error: rules an
/// organisation set are never silently dropped.
pub fn load_user_layer(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Option<Layer>, String> {
    let Some(path) = crate::records::audit::signing::user_settings_path(lookup) else {
        return Ok(None);
    };
    match read_user_file(&path)? {
        Some(text) => user_layer_from_text(&text, &path.display().to_string()),
        None => Ok(None),
    }
}
