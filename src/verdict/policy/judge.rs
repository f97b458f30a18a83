//! Judging with a loaded policy: the action each change gets, what is served, what is
//! accepted.

use super::*;

impl Policy {
    /// Sets every named rule to `action` (from a `--fail`/`--warn`/`--allow` flag).
    pub fn set(&mut self, rules: &[Rule], action: Action) {
        for rule in rules {
            self.verify.insert(*rule, action);
        }
    }

    pub fn action(&self, rule: Rule) -> Action {
        if self.exact {
            return Action::Fail;
        }
        self.verify.get(&rule).copied().unwrap_or(Action::Fail)
    }

    /// The kinds listed and pinned for one server.
    pub fn surface_for(&self, server: &str) -> Surface {
        self.surface_per_server
            .get(server)
            .copied()
            .unwrap_or(self.surface)
    }

    pub fn classifier(&self) -> Classifier {
        Classifier::with_target_fields(&self.target_fields)
    }

    /// Classifies every change in a report and decides what each one does. A server
    /// the lock does not pin, or a tool that cannot be pinned, always fails.
    pub fn evaluate(&self, report: &mut ServerReport) {
        let classifier = self.classifier();
        for change in &mut report.changes {
            self.judge_with(&classifier, change, Some(&report.name));
        }
        // Kinds not pinned yet are judged for the person who will pin them; they never
        // count against the run.
        for change in &mut report.pending {
            self.judge_with(&classifier, change, Some(&report.name));
        }
        for change in &mut report.server_changes {
            change.action = match change.rule.and_then(Rule::parse) {
                Some(rule) => Some(self.action(rule)),
                None => change.class.map(|c| self.action(Rule::Class(c))),
            };
        }
        if let Some(package) = &mut report.package {
            package.action = self.package_action(package.status);
        }
        // Denial is no difference from the pins: exact mode leaves it alone.
        let denied = self
            .verify
            .get(&Rule::ToolDenied)
            .copied()
            .unwrap_or_default();
        for d in &mut report.denied {
            d.action = denied;
        }
        let worst_change = report
            .changes
            .iter()
            .map(|c| c.action)
            .chain(report.server_changes.iter().filter_map(|c| c.action))
            .chain(report.package.iter().map(|p| p.action))
            .chain(report.denied.iter().map(|d| d.action))
            .max()
            .unwrap_or_default();
        // A server checked completely that the lock does not pin fails; one that could
        // not be checked is left to its verdict.
        report.action = if !report.pinned && report.verdict == Verdict::Stale {
            Action::Fail
        } else {
            worst_change
        };
    }

    /// What a package check's status does: the one rule `verify` applies to a
    /// server's package and the guard to the launch it is about to start.
    pub fn package_action(&self, status: PackageStatus) -> Action {
        match status {
            PackageStatus::Changed => self.action(Rule::PackageChanged),
            PackageStatus::DependencyChanged => self.action(Rule::DependencyChanged),
            // Floating is no difference from the pins: exact mode leaves it alone.
            PackageStatus::Floating => self
                .verify
                .get(&Rule::PackageFloating)
                .copied()
                .unwrap_or(Action::Warn),
            // Nothing moved from a pin either: what is not pinned is reported.
            PackageStatus::ClosureUnpinned => self
                .verify
                .get(&Rule::ClosureUnpinned)
                .copied()
                .unwrap_or(Action::Warn),
            _ => Action::Allow,
        }
    }

    /// Classifies one change and decides what it does: what [`Policy::evaluate`] does
    /// to each tool change of a report, for the guard's one tool at a time.
    pub fn judge(&self, change: &mut ToolChange) {
        let home = self.screen.context.home.clone();
        self.judge_with(&self.classifier(), change, home.as_deref());
    }

    /// [`Policy::judge`] for a definition of `server`.
    pub fn judge_in(&self, server: &str, change: &mut ToolChange) {
        self.judge_with(&self.classifier(), change, Some(server));
    }

    fn judge_with(&self, classifier: &Classifier, change: &mut ToolChange, server: Option<&str>) {
        change.findings = match change.change {
            ChangeKind::Added => change
                .live
                .as_ref()
                .map(|d| classifier.item_added(change.kind, d))
                .unwrap_or_default(),
            ChangeKind::Removed => classifier.item_removed(change.kind),
            ChangeKind::Renamed => {
                let from = change.renamed_from.as_deref().unwrap_or_default();
                classifier.renamed(change.kind, from, &change.tool)
            }
            ChangeKind::Changed => match (&change.pinned, &change.live) {
                (Some(a), Some(b)) => match change.kind {
                    Kind::Tool => classifier.classify(a, b),
                    Kind::Prompt => classifier.classify_prompt(a, b),
                    Kind::ResourceTemplate => classifier.classify_template(a, b),
                    Kind::Resource => classifier.classify_resource(a, b),
                },
                _ => Vec::new(),
            },
        };
        change.class = worst(&change.findings);
        // What would become approved is screened: a new or changed definition's live
        // side (a removal approves nothing).
        change.screening = match (&change.live, change.change) {
            (Some(live), ChangeKind::Added | ChangeKind::Changed | ChangeKind::Renamed) => {
                let server = server.unwrap_or_default();
                let mut found = crate::verdict::screen::screen(
                    change.kind,
                    &live.to_value(),
                    server,
                    &self.screen.context,
                );
                self.decide_screened(server, &change.tool, &mut found);
                found
            }
            _ => Vec::new(),
        };
        change.action = self.action_for(change);
    }

    /// Marks each finding on the definition `name` of `server` accepted (by
    /// `[screen] accept`) or not, and sets what the policy does with it: an accepted
    /// one is allowed.
    pub fn decide_screened(&self, server: &str, name: &str, found: &mut [Screened]) {
        for f in found {
            f.accepted = self
                .screen
                .accept
                .iter()
                .any(|a| a.covers(server, name, f.rule));
            f.action = if f.accepted {
                Action::Allow
            } else {
                self.action(Rule::Screen(f.severity))
            };
        }
    }
    /// What the guard does with a tool a judged change concerns: the other half of
    /// the verify/guard invariant. A change verify fails is hidden; one it passes is
    /// served, as the approved definition when every finding is additive or cosmetic
    /// (old calls keep working, and the model reads what a person approved), else as
    /// the live one. A removal has nothing to serve (`Hide`); whether calls to the
    /// removed tool still go through is its action's to say.
    pub fn serve(&self, change: &ToolChange) -> Serve {
        if change.action == Action::Fail {
            return Serve::Hide;
        }
        let compatible = change
            .findings
            .iter()
            .all(|f| matches!(f.class, Class::Additive | Class::Cosmetic));
        match change.change {
            ChangeKind::Changed if compatible && change.pinned.is_some() => Serve::Pinned,
            ChangeKind::Removed => Serve::Hide,
            _ => Serve::Live,
        }
    }

    /// What a classified change does: its rule's action, or a finding's that
    /// instructs the model if that is stricter (a new tool whose description tells the
    /// model what to do is judged as text too). A tool that cannot be pinned fails.
    pub fn action_for(&self, change: &ToolChange) -> Action {
        if !change.is_pinnable() {
            return Action::Fail;
        }
        change
            .findings
            .iter()
            .filter(|f| f.instructs_model)
            .map(|f| self.action(Rule::Class(f.class)))
            .chain(change.screening.iter().map(|f| f.action))
            .fold(self.action(Rule::of(change)), Action::max)
    }

    /// Whether `update` may accept a tool change without asking: its rule, and the
    /// class of every finding that instructs the model, are accepted, and screening
    /// found nothing the policy fails.
    pub fn accepts(&self, change: &ToolChange) -> bool {
        change.is_pinnable()
            && !change.screening.iter().any(|f| f.action == Action::Fail)
            && self.accept.contains(&Rule::of(change))
            && change
                .findings
                .iter()
                .filter(|f| f.instructs_model)
                .all(|f| self.accept.contains(&Rule::Class(f.class)))
    }
}
