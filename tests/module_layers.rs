//! The modules that carry a pin from the lock to a verdict are layered, data flowing
//! one way: the lock and package pins at the bottom, then screening of definitions,
//! then profiles and drift, then the policy that judges drift. A module may use one
//! below it, never one above, so no two of them import each other round a loop.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Bottom first: each may use only those before it.
const LAYERS: &[&str] = &[
    "action", "package", "lock", "screen", "profile", "drift", "policy",
];

/// The `crate::<module>` names a source file uses, comments and its unit tests left out.
fn uses(source: &str, known: &[&str]) -> BTreeSet<String> {
    let code: String = source
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or_default()
        .lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        let names: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group
                .split('}')
                .next()
                .unwrap_or_default()
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .collect(),
            None => vec![
                rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or_default(),
            ],
        };
        out.extend(
            names
                .into_iter()
                .filter(|n| known.contains(n))
                .map(String::from),
        );
    }
    out
}

fn sources(module: &str) -> Vec<std::path::PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let file = src.join(format!("{module}.rs"));
    if file.is_file() {
        return vec![file];
    }
    let mut out = Vec::new();
    let mut dirs = vec![src.join(module)];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn lock_package_drift_and_policy_never_import_a_module_above_them() {
    let mut wrong: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (level, module) in LAYERS.iter().enumerate() {
        let files = sources(module);
        assert!(!files.is_empty(), "no source for {module}");
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for used in uses(&text, LAYERS) {
                let at = LAYERS.iter().position(|m| *m == used).unwrap();
                if at > level {
                    wrong.entry(module.to_string()).or_default().insert(used);
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "modules importing one above them (order, bottom first: {LAYERS:?}): {wrong:?}"
    );
}

#[test]
fn the_layer_check_sees_grouped_and_plain_imports() {
    let source = "use crate::{lock, policy::Action};\nfn f() { crate::verdict::drift::x(); }\n// crate::records::profile in a comment\n";
    let found = uses(source, LAYERS);
    assert_eq!(
        found,
        ["drift", "lock", "policy"]
            .into_iter()
            .map(String::from)
            .collect()
    );
}
