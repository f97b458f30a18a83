//! Exit codes: part of the interface, documented in README.md.

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
            ExitCode::Interrupted => 130,
        }
    }
}

impl ExitCode {
    /// The code for a set of verdicts: drift outranks an unverified server, so CI can
    /// tell "the contract changed" from "we could not check".
    pub fn for_verdicts(verdicts: impl IntoIterator<Item = crate::drift::Verdict>) -> Self {
        use crate::drift::Verdict;
        let mut code = ExitCode::Success;
        for verdict in verdicts {
            match verdict {
                Verdict::Stale => return ExitCode::Drift,
                Verdict::Incomplete | Verdict::Unverifiable => code = ExitCode::Unverified,
                Verdict::Converged => {}
            }
        }
        code
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drift::Verdict;

    #[test]
    fn codes_are_stable() {
        let codes: Vec<i32> = [
            ExitCode::Success,
            ExitCode::Drift,
            ExitCode::Usage,
            ExitCode::Unverified,
            ExitCode::ApprovalNeeded,
            ExitCode::Interrupted,
        ]
        .into_iter()
        .map(i32::from)
        .collect();
        assert_eq!(codes, [0, 1, 2, 3, 4, 130]);
    }

    #[test]
    fn stale_outranks_unverifiable() {
        let code =
            ExitCode::for_verdicts([Verdict::Unverifiable, Verdict::Stale, Verdict::Converged]);
        assert_eq!(code, ExitCode::Drift);
        assert_eq!(
            ExitCode::for_verdicts([Verdict::Incomplete]),
            ExitCode::Unverified
        );
        assert_eq!(ExitCode::for_verdicts([]), ExitCode::Success);
    }
}
