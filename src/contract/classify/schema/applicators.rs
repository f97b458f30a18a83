//! Keywords that apply subschemas by position or by branch: `prefixItems` (and
//! draft-07 list `items`), `anyOf`, `oneOf`, `allOf`.

use serde_json::Value;

use super::{Shift, Walk, canon};
use crate::contract::classify::{Class, Direction};

impl Walk<'_> {
    /// `prefixItems`, or draft-07 array-form `items`: position by position.
    pub(super) fn tuple(
        &mut self,
        pointer: &str,
        x: Option<&Value>,
        y: Option<&Value>,
        field: Option<&str>,
        depth: usize,
    ) {
        let (Some(Value::Array(a)), Some(Value::Array(b))) = (x, y) else {
            let shift = match (x, y) {
                (None, Some(Value::Array(_))) => Shift::Narrowed,
                (Some(Value::Array(_)), None) => Shift::Widened,
                _ => Shift::Imprecise,
            };
            let what = match shift {
                Shift::Narrowed => "positional item schemas added",
                Shift::Widened => "positional item schemas removed",
                _ => "item schemas changed between positional and single form",
            };
            return self.shift(shift, pointer, x, y, what.into(), false);
        };
        for (i, (p, q)) in a.iter().zip(b).enumerate() {
            self.node(p, q, &format!("{pointer}/{i}"), field, depth + 1);
        }
        if a.len() != b.len() {
            let (shift, what) = if b.len() > a.len() {
                (Shift::Narrowed, "more positions constrained")
            } else {
                (Shift::Widened, "fewer positions constrained")
            };
            self.shift(
                shift,
                pointer,
                x,
                y,
                format!("{what} ({} -> {})", a.len(), b.len()),
                false,
            );
        }
    }

    /// `anyOf`/`oneOf` (`union`) or `allOf`: branches added or removed are precise;
    /// a single edited branch is compared in place; anything else is imprecise.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn branches(
        &mut self,
        key: &str,
        pointer: &str,
        x: Option<&Value>,
        y: Option<&Value>,
        union: bool,
        field: Option<&str>,
        depth: usize,
    ) {
        let target = self.is_target(field);
        let (a, b) = match (x, y) {
            (None, Some(_)) => {
                return self.shift(
                    Shift::Narrowed,
                    pointer,
                    x,
                    y,
                    format!("`{key}` added"),
                    target,
                );
            }
            (Some(_), None) => {
                return self.shift(
                    Shift::Widened,
                    pointer,
                    x,
                    y,
                    format!("`{key}` removed"),
                    target,
                );
            }
            (Some(Value::Array(a)), Some(Value::Array(b))) => (a, b),
            _ => {
                return self.shift(
                    Shift::Imprecise,
                    pointer,
                    x,
                    y,
                    format!("`{key}` is not a list of schemas"),
                    false,
                );
            }
        };
        let mut left: Vec<(usize, String)> = b.iter().map(canon).enumerate().collect();
        let mut removed = Vec::new();
        for (i, branch) in a.iter().enumerate() {
            let c = canon(branch);
            match left.iter().position(|(_, d)| *d == c) {
                Some(at) => {
                    left.remove(at);
                }
                None => removed.push(i),
            }
        }
        let added: Vec<usize> = left.into_iter().map(|(i, _)| i).collect();
        if key == "oneOf" && !(removed.is_empty() && added.is_empty()) {
            // Exactly one branch must match: a branch added can make a value match two
            // (refused), a branch removed can make it match one (accepted).
            self.shift(
                Shift::Imprecise,
                pointer,
                x,
                y,
                format!(
                    "`oneOf` changed ({} branch(es) removed, {} added); exactly one branch must match, so values can be refused or accepted either way",
                    removed.len(),
                    added.len()
                ),
                false,
            );
            self.target_branches(key, pointer, x, y, &added, b);
            return;
        }
        let grows = |more: bool| {
            if more == union {
                Shift::Widened
            } else {
                Shift::Narrowed
            }
        };
        match (removed.as_slice(), added.as_slice()) {
            ([], []) => self.push(
                Class::Cosmetic,
                pointer,
                x,
                y,
                format!("`{key}` branches reordered"),
            ),
            ([], more) => {
                self.shift(
                    grows(true),
                    pointer,
                    x,
                    y,
                    format!("`{key}`: {} branch(es) added", more.len()),
                    target,
                );
                self.target_branches(key, pointer, x, y, more, b);
            }
            (fewer, []) => self.shift(
                grows(false),
                pointer,
                x,
                y,
                format!("`{key}`: {} branch(es) removed", fewer.len()),
                target,
            ),
            ([i], [j]) => self.node(&a[*i], &b[*j], &format!("{pointer}/{j}"), field, depth + 1),
            (fewer, more) => self.shift(
                Shift::Imprecise,
                pointer,
                x,
                y,
                format!(
                    "`{key}` rewritten ({} branch(es) removed, {} added)",
                    fewer.len(),
                    more.len()
                ),
                false,
            ),
        }
    }

    /// An input branch added that accepts a field selecting a target widens authority.
    pub(super) fn target_branches(
        &mut self,
        key: &str,
        pointer: &str,
        x: Option<&Value>,
        y: Option<&Value>,
        added: &[usize],
        branches: &[Value],
    ) {
        let inner = added
            .iter()
            .find_map(|j| self.classifier.target_inside(&branches[*j]));
        if self.dir == Direction::Input
            && let Some(inner) = inner
        {
            self.push(
                Class::Authority,
                pointer,
                x,
                y,
                format!(
                    "a new `{key}` branch accepts `{inner}`, which selects a target or identity"
                ),
            );
        }
    }
}
