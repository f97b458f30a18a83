//! Exit codes: part of the interface, documented in docs/exit-codes.md.

/// What a run ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Everything checked converged, or the update finished.
    Success,
    /// A server is stale: its live tools differ from the lock.
    Drift,
    /// Usage, config or lock error: nothing was checked or written.
    Usage,
    /// Nothing stale, but a server could not be checked completely.
    Unverified,
    /// `update` found changes that need approval, with no terminal to ask and no `--yes`.
    ApprovalNeeded,
    /// `check-call`: the contract holds, but the arguments do not fit it.
    InvalidArguments,
    /// `guard`: the server ended the session before the client did.
    ServerExited,
    /// `check-call`: the tool rules deny the tool to the host, or the call's
    /// arguments break an argument rule.
    Denied,
    /// Interrupted (Ctrl-C); nothing was written.
    Interrupted,
}

impl From<ExitCode> for i32 {
    fn from(code: ExitCode) -> i32 {
        match code {
            ExitCode::Success => 0,
            ExitCode::Drift => 1,
            ExitCode::Usage => 2,
            ExitCode::Unverified => 3,
            ExitCode::ApprovalNeeded => 4,
            ExitCode::InvalidArguments => 5,
            ExitCode::ServerExited => 1,
            ExitCode::Denied => 6,
            ExitCode::Interrupted => 130,
        }
    }
}

impl ExitCode {
    /// Every exit code, in the order of their numbers (`--help` lists them from this).
    pub const ALL: [ExitCode; 9] = [
        ExitCode::Success,
        ExitCode::Drift,
        ExitCode::ServerExited,
        ExitCode::Usage,
        ExitCode::Unverified,
        ExitCode::ApprovalNeeded,
        ExitCode::InvalidArguments,
        ExitCode::Denied,
        ExitCode::Interrupted,
    ];

    /// The code for evaluated reports: a change the policy fails outranks an unverified
    /// server, so CI can tell "the contract changed" from "we could not check". Drift
    /// the policy only warns about or allows exits 0.
    pub fn for_reports(reports: &[crate::verdict::drift::ServerReport]) -> Self {
        use crate::verdict::drift::Verdict;
        use crate::verdict::policy::Action;
        let mut code = ExitCode::Success;
        for report in reports {
            let package_unverified = report
                .package
                .as_ref()
                .is_some_and(|p| p.status == crate::servers::package::PackageStatus::Unverifiable);
            match report.verdict {
                _ if report.action == Action::Fail => return ExitCode::Drift,
                Verdict::Incomplete | Verdict::Unverifiable => code = ExitCode::Unverified,
                _ if package_unverified => code = ExitCode::Unverified,
                Verdict::Converged | Verdict::Stale => {}
            }
        }
        code
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::drift::{ServerReport, Verdict};
    use crate::verdict::policy::Action;

    #[test]
    fn all_holds_every_code_once_in_the_order_of_their_numbers() {
        for code in ExitCode::ALL {
            // A new variant stops this compiling: add it here and to ALL.
            match code {
                ExitCode::Success
                | ExitCode::Drift
                | ExitCode::Usage
                | ExitCode::Unverified
                | ExitCode::ApprovalNeeded
                | ExitCode::InvalidArguments
                | ExitCode::ServerExited
                | ExitCode::Denied
                | ExitCode::Interrupted => {}
            }
            assert_eq!(ExitCode::ALL.iter().filter(|c| **c == code).count(), 1);
        }
        let numbers: Vec<i32> = ExitCode::ALL.into_iter().map(i32::from).collect();
        assert!(numbers.is_sorted(), "{numbers:?}");
    }

    #[test]
    fn codes_are_stable() {
        let codes: Vec<i32> = [
            ExitCode::Success,
            ExitCode::Drift,
            ExitCode::Usage,
            ExitCode::Unverified,
            ExitCode::ApprovalNeeded,
            ExitCode::InvalidArguments,
            ExitCode::ServerExited,
            ExitCode::Denied,
            ExitCode::Interrupted,
        ]
        .into_iter()
        .map(i32::from)
        .collect();
        assert_eq!(codes, [0, 1, 2, 3, 4, 5, 1, 6, 130]);
    }

    fn report(verdict: Verdict, action: Action) -> ServerReport {
        ServerReport {
            verdict,
            action,
            ..ServerReport::unverifiable("s", "stdio", String::new())
        }
    }

    #[test]
    fn failing_drift_outranks_unverifiable_and_allowed_drift_passes() {
        let code = ExitCode::for_reports(&[
            report(Verdict::Unverifiable, Action::Allow),
            report(Verdict::Stale, Action::Fail),
        ]);
        assert_eq!(code, ExitCode::Drift);
        assert_eq!(
            ExitCode::for_reports(&[report(Verdict::Incomplete, Action::Allow)]),
            ExitCode::Unverified
        );
        assert_eq!(
            ExitCode::for_reports(&[report(Verdict::Stale, Action::Warn)]),
            ExitCode::Success
        );
        assert_eq!(ExitCode::for_reports(&[]), ExitCode::Success);
    }
}
