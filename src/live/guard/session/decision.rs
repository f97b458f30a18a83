//! A call's fate: the decision, the refusal the client gets instead of an answer,
//! and the contract a forwarded call's arguments are checked against.

use super::*;
use crate::verdict::rules::{Denial, ToolRules};

/// What to do with a listing that holds a drifted or unpinned tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnDrift {
    /// Leave those tools out of the listing the client sees.
    #[default]
    Hide,
    /// Answer the whole listing with a JSON-RPC error.
    Fail,
}

/// Why the guard answered a call itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// The tool's live definition differs from its pin in a way the policy fails, or
    /// it is no longer listed and the policy fails removals.
    StaleToolSchema,
    /// No pinned profile approves a tool of that name, and the policy fails new tools.
    UnpinnedTool,
    /// The arguments do not fit the input schema of the definition the client was
    /// given.
    InvalidArguments,
    /// The tool list changed (or was never listed) and no checked listing confirms the
    /// tool since.
    ListingNotVerified,
    /// The server answered the handshake under another name than the one pinned, and
    /// the policy fails that (authority): every tool is hidden, every call refused.
    ServerIdentityChanged,
    /// The call would have been forwarded, but its audit entry could not be written
    /// (a full disk, a file size limit): no call goes unrecorded.
    AuditLogUnwritable,
    /// The host's own config hides the tool from its agent (`includeTools`,
    /// `disabled_tools`, …): it is neither pinned nor served.
    FilteredByHost,
    /// The prompt's live definition differs from its pin in a way the policy fails
    /// (or it was renamed, listed twice, or is no longer listed and removals fail).
    StalePrompt,
    /// No pinned profile approves a prompt of that name, and the policy fails new
    /// prompts.
    UnpinnedPrompt,
    /// The prompt list changed (or was never listed) and no checked listing confirms
    /// the prompt since.
    PromptsNotVerified,
    /// The URI matches only resource templates whose live definition the policy fails
    /// (changed, renamed, or no longer listed).
    StaleResourceTemplate,
    /// The URI matches only resource templates no pinned profile approves.
    UnpinnedResourceTemplate,
    /// The resource list changed (or the templates were never listed) and no checked
    /// listing confirms a template the URI matches.
    ResourceTemplatesNotVerified,
    /// A pinned resource whose listing drifted in a way the policy fails.
    StaleResource,
    /// A resource no pinned profile approves (resources pinned on request only).
    UnpinnedResource,
    /// The resource list changed (or was never listed) and no checked listing confirms
    /// the pinned resource since.
    ResourcesNotVerified,
    /// The tool rules (`[tools]` and the host's `[profile.NAME.tools]`, of the
    /// project's `mcp-lock.toml` or the user's own file) deny the tool to this host.
    ToolDenied,
    /// A call's arguments break an argument rule (`[tools.arguments."SERVER/TOOL"]`).
    ArgumentDenied,
    /// The `[prompts]` rules deny the prompt to this host.
    PromptDenied,
    /// The URI matches only resource templates the `[resource-templates]` rules deny
    /// to this host.
    ResourceTemplateDenied,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::StaleToolSchema => "STALE_TOOL_SCHEMA",
            ErrorCode::UnpinnedTool => "UNPINNED_TOOL",
            ErrorCode::InvalidArguments => "INVALID_ARGUMENTS",
            ErrorCode::ListingNotVerified => "LISTING_NOT_VERIFIED",
            ErrorCode::ServerIdentityChanged => "SERVER_IDENTITY_CHANGED",
            ErrorCode::AuditLogUnwritable => "AUDIT_LOG_UNWRITABLE",
            ErrorCode::FilteredByHost => "FILTERED_BY_HOST",
            ErrorCode::StalePrompt => "STALE_PROMPT",
            ErrorCode::UnpinnedPrompt => "UNPINNED_PROMPT",
            ErrorCode::PromptsNotVerified => "PROMPTS_NOT_VERIFIED",
            ErrorCode::StaleResourceTemplate => "STALE_RESOURCE_TEMPLATE",
            ErrorCode::UnpinnedResourceTemplate => "UNPINNED_RESOURCE_TEMPLATE",
            ErrorCode::ResourceTemplatesNotVerified => "RESOURCE_TEMPLATES_NOT_VERIFIED",
            ErrorCode::StaleResource => "STALE_RESOURCE",
            ErrorCode::UnpinnedResource => "UNPINNED_RESOURCE",
            ErrorCode::ResourcesNotVerified => "RESOURCES_NOT_VERIFIED",
            ErrorCode::ToolDenied => "TOOL_DENIED",
            ErrorCode::ArgumentDenied => "ARGUMENT_DENIED",
            ErrorCode::PromptDenied => "PROMPT_DENIED",
            ErrorCode::ResourceTemplateDenied => "RESOURCE_TEMPLATE_DENIED",
        }
    }

    /// Whether the code says the tool rules refused it (not drift): a person has to
    /// change the rules, approving an update does not help.
    pub fn is_denial(self) -> bool {
        matches!(
            self,
            ErrorCode::ToolDenied
                | ErrorCode::ArgumentDenied
                | ErrorCode::PromptDenied
                | ErrorCode::ResourceTemplateDenied
        )
    }
}

/// What the caller has to do before the call can succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequiredAction {
    /// List the tools again (tools/list) and plan with what is offered.
    RefreshTools,
    /// A person has to review the change and move the pin (`mcp-lock update`).
    ApproveUpdate,
    /// Correct the arguments.
    FixArguments,
    /// Nothing is wrong with the call: try again once the problem (the audit log
    /// cannot be written) is fixed.
    RetryLater,
    /// List the prompts again (prompts/list) and use what is offered.
    RefreshPrompts,
    /// List the resource templates again (resources/templates/list).
    RefreshResourceTemplates,
    /// List the resources again (resources/list).
    RefreshResources,
    /// The tool rules deny it: only a person changing the rules (the project's
    /// `mcp-lock.toml` or the user's own file) makes it usable; `mcp-lock update` does
    /// not.
    ChangeRules,
}

/// A call the guard answers itself: it never reaches the server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Refusal {
    pub error_code: ErrorCode,
    pub tool: String,
    pub required_action: RequiredAction,
    pub side_effect_started: bool,
    pub pinned_hash: Option<String>,
    pub live_hash: Option<String>,
    /// Where the arguments do not fit (INVALID_ARGUMENTS only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<Violation>,
    /// A tool no pinned profile saw, offered to a client that matches no pinned
    /// profile: the profile that would pin it, and how.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_profile: Option<Box<MissingProfile>>,
    /// The rule that refused it and its file (TOOL_DENIED, ARGUMENT_DENIED).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub denied_by: Option<Box<Denial>>,
}

/// How a forwarded call's tool was served to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServedAs {
    /// Its live definition is approved (under some profile), and was passed on.
    Approved,
    /// Its live definition is not approved but the policy passes the change, and all
    /// of it is additive or cosmetic: the client was given the approved definition.
    Pinned,
    /// The policy passes a change beyond additive (or a new tool): the client was
    /// given the live definition.
    Live,
    /// A complete listing no longer has it and the policy passes removals: calls
    /// fit the pinned definition.
    Removed,
}

/// A call's fate.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Send it to the server. `unvalidated` says why the arguments could not be checked
    /// (the schema cannot be compiled); the contract itself is confirmed.
    Forward {
        pinned_hash: Option<String>,
        live_hash: Option<String>,
        served: ServedAs,
        unvalidated: Option<String>,
    },
    Refuse(Refusal),
}

/// A tool the client may call, with the input schema its calls' arguments must fit:
/// that of the definition the client was given.
#[derive(Clone)]
pub struct Contract {
    pub tool: String,
    pub pinned_hash: Option<String>,
    pub live_hash: Option<String>,
    pub served: ServedAs,
    pub(super) schema: Arc<ArgumentSchema>,
    /// The argument rules that apply to this server's calls, and the host they are
    /// judged for (None: a client that matched no pinned profile, held to every
    /// host's).
    pub(super) rules: Arc<ToolRules>,
    pub(super) server: String,
    pub(super) host: Option<String>,
}

impl Contract {
    /// Checks a call's arguments against the contract's input schema.
    pub fn judge(&self, arguments: &Value) -> Decision {
        let forward = |unvalidated| Decision::Forward {
            pinned_hash: self.pinned_hash.clone(),
            live_hash: self.live_hash.clone(),
            served: self.served,
            unvalidated,
        };
        let unvalidated = match self.schema.check(arguments) {
            ArgumentCheck::Valid => None,
            ArgumentCheck::Unusable(reason) => Some(reason),
            ArgumentCheck::Invalid(violations) => {
                return Decision::Refuse(Refusal {
                    error_code: ErrorCode::InvalidArguments,
                    tool: self.tool.clone(),
                    required_action: RequiredAction::FixArguments,
                    side_effect_started: false,
                    live_hash: self.live_hash.clone(),
                    pinned_hash: self.pinned_hash.clone(),
                    violations,
                    missing_profile: None,
                    denied_by: None,
                });
            }
        };
        let broken = match &self.host {
            Some(host) => self
                .rules
                .check_arguments(host, &self.server, &self.tool, arguments),
            None => self
                .rules
                .check_arguments_unknown_host(&self.server, &self.tool, arguments),
        };
        if let Some(denial) = broken {
            return Decision::Refuse(Refusal {
                error_code: ErrorCode::ArgumentDenied,
                tool: self.tool.clone(),
                required_action: RequiredAction::FixArguments,
                side_effect_started: false,
                live_hash: self.live_hash.clone(),
                pinned_hash: self.pinned_hash.clone(),
                violations: Vec::new(),
                missing_profile: None,
                denied_by: Some(Box::new(denial)),
            });
        }
        forward(unvalidated)
    }
}

impl Refusal {
    /// The rule that refused the call, escaped for the model (it is the team's text,
    /// but quotes the call's own values).
    fn rule_quoted(&self) -> String {
        self.denied_by
            .as_ref()
            .map(|d| escape_for_terminal(&d.to_string()))
            .unwrap_or_default()
    }

    /// The `tools/call` result the client gets: a short text for the model (which never
    /// repeats the server's new wording) and the same facts in `structuredContent`.
    pub fn to_result(&self, modern: bool) -> Value {
        let tool = short_name(&self.tool);
        let text = match self.error_code {
            ErrorCode::StaleToolSchema => format!(
                "mcp-lock guard did not run `{tool}`: the tool's definition on the server changed since it was approved in mcp.lock (or the server no longer offers it). The call was not sent and nothing was started. Do not retry it with the same plan: list the tools again, and ask the user to review the change with `mcp-lock update`."
            ),
            ErrorCode::UnpinnedTool => match &self.missing_profile {
                None => format!(
                    "mcp-lock guard did not run `{tool}`: no tool of that name is approved in mcp.lock. The call was not sent and nothing was started. Use only the tools listed, or ask the user to approve this one with `mcp-lock update`."
                ),
                Some(missing) => format!(
                    "mcp-lock guard did not run `{tool}`: no tool of that name is approved in mcp.lock, which pins no client profile with this client's capabilities (closest: {}), so what this client is offered was never reviewed. The call was not sent and nothing was started. Use only the tools listed, or ask the user to pin this client: {}.",
                    escape_for_terminal(&missing.closest),
                    escape_for_terminal(&missing.advice())
                ),
            },
            ErrorCode::ServerIdentityChanged => format!(
                "mcp-lock guard did not run `{tool}`: the server answered under another name than the one approved in mcp.lock, so none of its tools are trusted. The call was not sent and nothing was started. Ask the user to review the server with `mcp-lock verify` and approve it with `mcp-lock update`."
            ),
            ErrorCode::ListingNotVerified => format!(
                "mcp-lock guard did not run `{tool}`: the server's tool list changed (or was not listed yet) and has not been checked since. The call was not sent and nothing was started. List the tools again (tools/list), then call it if it is still offered."
            ),
            ErrorCode::AuditLogUnwritable => format!(
                "mcp-lock guard did not run `{tool}`: its audit log cannot be written (is the disk full?), and no call goes unrecorded. The call was not sent and nothing was started. Tell the user; the same call can be sent again once the log can be written."
            ),
            ErrorCode::FilteredByHost => format!(
                "mcp-lock guard did not run `{tool}`: the client's own MCP config leaves this tool out of what the agent may use. The call was not sent and nothing was started. Use only the tools listed."
            ),
            ErrorCode::ToolDenied => format!(
                "mcp-lock guard did not run `{tool}`: the project's tool rules do not allow this agent to use it ({}). The call was not sent and nothing was started. Do not retry it: use only the tools listed, or ask the user to change the rule if this tool is needed.",
                self.rule_quoted()
            ),
            ErrorCode::ArgumentDenied => format!(
                "mcp-lock guard did not run `{tool}`: its arguments break the project's argument rule ({}). The call was not sent and nothing was started. Call it again with a value the rule allows, or ask the user to change the rule.",
                self.rule_quoted()
            ),
            // Codes of prompts, templates and resources never answer a tools/call.
            code @ (ErrorCode::StalePrompt
            | ErrorCode::PromptDenied
            | ErrorCode::ResourceTemplateDenied
            | ErrorCode::UnpinnedPrompt
            | ErrorCode::PromptsNotVerified
            | ErrorCode::StaleResourceTemplate
            | ErrorCode::UnpinnedResourceTemplate
            | ErrorCode::ResourceTemplatesNotVerified
            | ErrorCode::StaleResource
            | ErrorCode::UnpinnedResource
            | ErrorCode::ResourcesNotVerified) => format!(
                "mcp-lock guard did not run `{tool}` ({}). The call was not sent and nothing was started.",
                code.as_str()
            ),
            ErrorCode::InvalidArguments => {
                let problems: Vec<String> = self
                    .violations
                    .iter()
                    .map(|v| {
                        let path = if v.path.is_empty() { "/" } else { &v.path };
                        format!(
                            "at {}: {}",
                            escape_for_terminal(path),
                            escape_for_terminal(&v.message)
                        )
                    })
                    .collect();
                format!(
                    "mcp-lock guard did not run `{tool}`: the arguments do not fit its approved input schema ({}). The call was not sent and nothing was started. Fix the arguments and call again.",
                    problems.join("; ")
                )
            }
        };
        let mut result = json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": self,
            "isError": true,
        });
        if modern {
            result["resultType"] = json!("complete");
        }
        result
    }
}

/// A tool name fit to quote to the model: escaped, and not endless.
pub(super) fn short_name(name: &str) -> String {
    let escaped = escape_for_terminal(name);
    if escaped.chars().count() <= 100 {
        return escaped;
    }
    let mut cut: String = escaped.chars().take(100).collect();
    cut.push('…');
    cut
}
