//! `check-call`: would a call an agent already planned still be valid, and mean the
//! same thing, under the live contract?
//!
//! The call is checked against the pinned input schema (what the plan was made
//! with) and the live one (what the server will apply), and the tool's live
//! definition is compared with its pin, classified and judged by the policy.

use std::fmt::Write as _;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::base::json::Json;
use crate::base::text::escape_for_terminal as esc;
use crate::contract::validate::{ArgumentCheck, ArgumentSchema, Violation};
use crate::records::lock::LockedServer;
use crate::review::report::render_findings;
use crate::servers::client::Listing;
use crate::verdict::drift::{ChangeKind, ServerReport, ToolChange, Verdict};
use crate::verdict::exit_codes::ExitCode;
use crate::verdict::policy::Action;

/// The answer, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallVerdict {
    /// Valid under the pinned and the live schema; the contract holds (or changed
    /// only in ways the policy allows).
    Valid,
    /// The tool changed in a way the policy fails, is gone, or was never pinned.
    ContractChanged,
    /// The contract holds, but the arguments do not fit it.
    InvalidArguments,
    /// The server could not be listed completely.
    Unverified,
    /// The tool rules deny the tool to the host, or the arguments break an argument
    /// rule: nothing is sent, whatever the contract says.
    Denied,
}

/// The arguments against one side's schema.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideCheck {
    /// The tool exists on this side.
    pub present: bool,
    pub hash: Option<String>,
    /// None when there is no schema to check against, or it cannot be used.
    pub valid: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<Violation>,
    /// Why the schema could not be used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unusable: Option<String>,
}

/// Everything check-call found.
#[derive(Debug, Clone, Serialize)]
pub struct CallReport {
    pub server: String,
    /// The client profile whose listing judged the call.
    pub profile: String,
    pub tool: String,
    pub verdict: CallVerdict,
    pub pinned: SideCheck,
    pub live: SideCheck,
    /// The tool's change since the pin, classified, with the policy's action; absent
    /// when it is unchanged (or was never pinned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<ToolChange>,
    /// Server-level drift (instructions, identity) the policy fails.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server_changes: Vec<String>,
    /// Why the server could not be checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The rule that denies the call (verdict `denied`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub denied: Option<crate::verdict::rules::Denial>,
}

impl CallReport {
    /// The server's secrets out of what only this judgement quotes: schema violations
    /// (which can quote the server's schema) and why a schema is unusable. The change,
    /// server changes and error come from a report redacted already.
    pub fn redact(&mut self, secrets: &crate::base::secrets::Secrets) {
        for side in [&mut self.pinned, &mut self.live] {
            for v in &mut side.violations {
                secrets.redact_in_place(&mut v.path);
                secrets.redact_in_place(&mut v.message);
            }
            if let Some(why) = &mut side.unusable {
                secrets.redact_in_place(why);
            }
        }
    }

    pub fn exit_code(&self) -> ExitCode {
        match self.verdict {
            CallVerdict::Valid => ExitCode::Success,
            CallVerdict::ContractChanged => ExitCode::Drift,
            CallVerdict::InvalidArguments => ExitCode::InvalidArguments,
            CallVerdict::Unverified => ExitCode::Unverified,
            CallVerdict::Denied => ExitCode::Denied,
        }
    }
}

fn side(
    definition: Option<&Arc<Json>>,
    hash: Option<String>,
    arguments: &Result<Value, Violation>,
) -> SideCheck {
    let Some(definition) = definition else {
        return SideCheck {
            present: false,
            hash,
            valid: None,
            violations: Vec::new(),
            unusable: None,
        };
    };
    let (valid, violations, unusable) = match arguments {
        // Arguments that cannot be checked fit no schema, as the guard refuses them.
        Err(violation) => (Some(false), vec![violation.clone()], None),
        Ok(arguments) => match ArgumentSchema::for_tool(definition).check(arguments) {
            ArgumentCheck::Valid => (Some(true), Vec::new(), None),
            ArgumentCheck::Invalid(v) => (Some(false), v, None),
            ArgumentCheck::Unusable(reason) => (None, Vec::new(), Some(reason)),
        },
    };
    SideCheck {
        present: true,
        hash,
        valid,
        violations,
        unusable,
    }
}

/// Judges a planned call. `report` is the server's comparison with its pin, already
/// evaluated by the policy, with the definitions the tool rules deny marked
/// ([`crate::live::check::mark_denied`]); `listing` is what the server listed (when it
/// could); `arguments` as [`checkable_arguments`](crate::contract::validate::checkable_arguments) decided; `rules` judge the
/// arguments. A denial outranks every other verdict: such a call is never sent.
pub fn check_call(
    report: &ServerReport,
    pinned: Option<&LockedServer>,
    listing: Option<&Listing>,
    tool: &str,
    arguments: &Result<Value, Violation>,
    rules: &crate::verdict::rules::ToolRules,
) -> CallReport {
    let pin = pinned.and_then(|s| s.tools.get(tool));
    let live = listing.and_then(|l| l.tools.iter().find(|t| t.name.as_deref() == Some(tool)));
    let pinned_side = side(
        pin.map(|p| &p.definition),
        pin.map(|p| p.hash.clone()),
        arguments,
    );
    let live_side = side(
        live.map(|t| &t.definition),
        live.and_then(|t| t.hash.as_ref().ok().cloned()),
        arguments,
    );
    let change = report.changes.iter().find(|c| c.tool == tool).cloned();
    let server_changes: Vec<String> = report
        .server_changes
        .iter()
        .filter(|c| c.drift && c.action == Some(Action::Fail))
        .map(|c| c.field.to_string())
        .collect();
    let complete = matches!(report.verdict, Verdict::Converged | Verdict::Stale);
    let changed = match &change {
        Some(c) => c.action == Action::Fail || c.change == ChangeKind::Removed,
        None => pin.is_none(),
    };
    let fits = |s: &SideCheck| s.valid != Some(false);
    let host = (report.profile != crate::live::check::UNMATCHED).then_some(report.profile.as_str());
    let denied = report
        .denied
        .iter()
        .find(|d| d.kind == crate::contract::surface::Kind::Tool && d.name == tool)
        .map(|d| d.denial.clone())
        .or_else(|| {
            let arguments = arguments.as_ref().ok()?;
            match host {
                Some(p) => rules.check_arguments(p, &report.name, tool, arguments),
                None => rules.check_arguments_unknown_host(&report.name, tool, arguments),
            }
        });
    let verdict = if denied.is_some() {
        CallVerdict::Denied
    } else if !complete {
        CallVerdict::Unverified
    } else if changed || !server_changes.is_empty() || !live_side.present {
        CallVerdict::ContractChanged
    } else if !fits(&pinned_side) || !fits(&live_side) {
        CallVerdict::InvalidArguments
    } else {
        CallVerdict::Valid
    };
    CallReport {
        server: report.name.clone(),
        profile: report.profile.clone(),
        tool: tool.to_string(),
        verdict,
        pinned: pinned_side,
        live: live_side,
        change,
        server_changes,
        error: if complete { None } else { report.error.clone() },
        denied,
    }
}

/// The report for people; every server string escaped.
pub fn render_call(report: &CallReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}/{} [{}]",
        esc(&report.server),
        esc(&report.tool),
        esc(&report.profile)
    );
    let describe = |s: &SideCheck| -> String {
        if !s.present {
            return "no such tool".into();
        }
        match (s.valid, &s.unusable) {
            (Some(true), _) => "arguments valid".into(),
            (Some(false), _) => {
                let problems: Vec<String> = s
                    .violations
                    .iter()
                    .map(|v| {
                        let path = if v.path.is_empty() { "/" } else { &v.path };
                        format!("at {}: {}", esc(path), esc(&v.message))
                    })
                    .collect();
                format!("arguments invalid: {}", problems.join("; "))
            }
            (None, Some(reason)) => format!("schema cannot be used: {}", esc(reason)),
            (None, None) => "not checked".into(),
        }
    };
    if let Some(error) = &report.error {
        let _ = writeln!(
            out,
            "  server:         could not be checked: {}",
            esc(error)
        );
    } else {
        let _ = writeln!(out, "  pinned schema:  {}", describe(&report.pinned));
        let _ = writeln!(out, "  live schema:    {}", describe(&report.live));
    }
    match &report.change {
        Some(change) => {
            let class = change.class.map_or("unclassified", |c| c.as_str());
            let _ = writeln!(
                out,
                "  contract:       {} since the pin ({class}, {})",
                change.change.as_str(),
                change.action.as_str()
            );
            out.push_str(&render_findings(&change.findings, "    "));
        }
        None if report.pinned.present && report.error.is_none() => {
            let _ = writeln!(out, "  contract:       unchanged since the pin");
        }
        None if report.error.is_none() => {
            let _ = writeln!(out, "  contract:       not pinned in the lock");
        }
        None => {}
    }
    if !report.server_changes.is_empty() {
        let _ = writeln!(
            out,
            "  server:         {} changed since the pin",
            report.server_changes.join(", ")
        );
    }
    if let Some(denial) = &report.denied {
        let _ = writeln!(out, "  denied:         {}", esc(&denial.to_string()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::hash::HashedTool;
    use crate::records::lock::{LockedTool, Reached};
    use serde_json::json;

    fn def(required: &[&str]) -> Json {
        Json::from_value(&json!({"name": "deploy", "inputSchema": {"type": "object",
            "properties": {"branch": {"type": "string"}, "region": {"type": "string"}}, "required": required}}))
    }

    fn pinned(definition: &Json) -> LockedServer {
        let hashed = HashedTool::new(definition.clone());
        LockedServer {
            name: "s".into(),
            profile: "bare".into(),
            reached: Reached::Stdio {
                command: "x".into(),
                args: vec![],
                env: vec![],
                code_env: vec![],
            },
            protocol_version: "2025-11-25".into(),
            client_info: Json::Object(vec![]),
            client_capabilities: Json::Object(vec![]),
            server_info: Json::Object(vec![]),
            list_changed: false,
            instructions_hash: None,
            tools: [(
                "deploy".to_string(),
                LockedTool {
                    hash: hashed.hash.unwrap(),
                    definition: definition.clone().into(),
                },
            )]
            .into(),
            prompts: None,
            resource_templates: None,
            resources: None,
        }
    }

    fn converged() -> ServerReport {
        ServerReport {
            verdict: Verdict::Converged,
            error: None,
            ..ServerReport::unverifiable("s", "stdio", String::new())
        }
    }

    #[test]
    fn an_unchanged_contract_and_fitting_arguments_are_valid_and_misfits_say_where() {
        let d = def(&["branch"]);
        let listing = Listing {
            tools: vec![HashedTool::new(d.clone())],
            pages: 1,
            ..Listing::default()
        };
        let report = check_call(
            &converged(),
            Some(&pinned(&d)),
            Some(&listing),
            "deploy",
            &Ok(json!({"branch": "main"})),
            &crate::verdict::rules::ToolRules::default(),
        );
        assert_eq!(report.verdict, CallVerdict::Valid);
        assert_eq!(report.exit_code(), ExitCode::Success);
        let report = check_call(
            &converged(),
            Some(&pinned(&d)),
            Some(&listing),
            "deploy",
            &Ok(json!({})),
            &crate::verdict::rules::ToolRules::default(),
        );
        assert_eq!(report.verdict, CallVerdict::InvalidArguments);
        assert_eq!(report.exit_code(), ExitCode::InvalidArguments);
        assert!(render_call(&report).contains("arguments invalid: at /:"));
    }

    #[test]
    fn an_unreachable_server_is_unverified_not_valid() {
        let d = def(&["branch"]);
        let report = check_call(
            &ServerReport::unverifiable("s", "stdio", "spawn failed".into()),
            Some(&pinned(&d)),
            None,
            "deploy",
            &Ok(json!({"branch": "main"})),
            &crate::verdict::rules::ToolRules::default(),
        );
        assert_eq!(report.verdict, CallVerdict::Unverified);
        assert_eq!(report.exit_code(), ExitCode::Unverified);
    }
}
