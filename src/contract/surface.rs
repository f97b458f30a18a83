//! The contract surface: every kind of definition a server lists that a model plans
//! with. Tools always; prompts and resource templates by default; resources when asked
//! for, since many servers list data there rather than contract.

use serde::Serialize;

/// A kind of listed definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Tool,
    Prompt,
    ResourceTemplate,
    Resource,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::Tool,
        Kind::Prompt,
        Kind::ResourceTemplate,
        Kind::Resource,
    ];

    /// `tool`, `prompt`, `resource_template`, `resource`: the JSON report's names.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::ResourceTemplate => "resource_template",
            Kind::Resource => "resource",
        }
    }

    /// How a report names one, before its key: "tool", "prompt", "template",
    /// "resource".
    pub fn noun(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::ResourceTemplate => "template",
            Kind::Resource => "resource",
        }
    }

    /// The member that identifies a definition of this kind: a tool's and a prompt's
    /// `name`, a template's `uriTemplate`, a resource's `uri` (their `name` is only a
    /// display name).
    pub fn key_member(self) -> &'static str {
        match self {
            Kind::Tool | Kind::Prompt => "name",
            Kind::ResourceTemplate => "uriTemplate",
            Kind::Resource => "uri",
        }
    }

    /// The list method, and the member of its result that holds the definitions.
    pub fn list_method(self) -> (&'static str, &'static str) {
        match self {
            Kind::Tool => ("tools/list", "tools"),
            Kind::Prompt => ("prompts/list", "prompts"),
            Kind::ResourceTemplate => ("resources/templates/list", "resourceTemplates"),
            Kind::Resource => ("resources/list", "resources"),
        }
    }

    /// The server capability that says the server offers this kind.
    pub fn capability(self) -> &'static str {
        match self {
            Kind::Tool => "tools",
            Kind::Prompt => "prompts",
            Kind::ResourceTemplate | Kind::Resource => "resources",
        }
    }

    /// The notification that says the list changed.
    pub fn list_changed_notification(self) -> &'static str {
        match self {
            Kind::Tool => "notifications/tools/list_changed",
            Kind::Prompt => "notifications/prompts/list_changed",
            Kind::ResourceTemplate | Kind::Resource => "notifications/resources/list_changed",
        }
    }

    /// The table names in the lock: `[[server.tool]]`, `[[server.prompt]]`,
    /// `[[server.resource_template]]`, `[[server.resource]]`.
    pub fn lock_table(self) -> &'static str {
        self.as_str()
    }

    /// The key a lock entry of this kind names its definition by.
    pub fn lock_key(self) -> &'static str {
        match self {
            Kind::Tool | Kind::Prompt => "name",
            Kind::ResourceTemplate => "uri_template",
            Kind::Resource => "uri",
        }
    }

    /// The set-hash key of a profile: `set_hash` for tools (as in version 1),
    /// `prompts_set_hash`, `resource_templates_set_hash`, `resources_set_hash`.
    pub fn set_hash_key(self) -> &'static str {
        match self {
            Kind::Tool => "set_hash",
            Kind::Prompt => "prompts_set_hash",
            Kind::ResourceTemplate => "resource_templates_set_hash",
            Kind::Resource => "resources_set_hash",
        }
    }

    /// Plural for counts in reports: "tools", "prompts", "templates", "resources".
    pub fn plural(self) -> &'static str {
        match self {
            Kind::Tool => "tools",
            Kind::Prompt => "prompts",
            Kind::ResourceTemplate => "templates",
            Kind::Resource => "resources",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which kinds besides tools a server's listing covers (`[surface]` in
/// `mcp-lock.toml`): prompts and resource templates by default, resources only when
/// asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Surface {
    pub prompts: bool,
    pub resource_templates: bool,
    pub resources: bool,
}

impl Default for Surface {
    fn default() -> Self {
        Surface {
            prompts: true,
            resource_templates: true,
            resources: false,
        }
    }
}

impl Surface {
    /// Whether this kind is listed (tools always are).
    pub fn covers(self, kind: Kind) -> bool {
        match kind {
            Kind::Tool => true,
            Kind::Prompt => self.prompts,
            Kind::ResourceTemplate => self.resource_templates,
            Kind::Resource => self.resources,
        }
    }

    /// The kinds beyond tools that are listed, in order.
    pub fn extra_kinds(self) -> Vec<Kind> {
        Kind::ALL
            .into_iter()
            .filter(|k| *k != Kind::Tool && self.covers(*k))
            .collect()
    }
}
