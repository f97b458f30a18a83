//! The classifier against a corpus of before/after tool definitions: each pair names
//! the class a caller must see, and its findings are checked against a snapshot.
//!
//! Regenerate snapshots after an intended change with
//! `MCP_LOCK_UPDATE_SNAPSHOTS=1 cargo test --test library classify_corpus::`, then review the diff.
//! `cargo test --test classify_corpus -- --nocapture` also prints each class's
//! precision and recall over the corpus.

use std::path::{Path, PathBuf};

use mcp_lock::base::json::Json;
use mcp_lock::contract::classify::{Class, Classifier, Finding, worst};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn render(findings: &[Finding]) -> String {
    let compact = |v: &Option<serde_json::Value>| match v {
        None => "(absent)".to_string(),
        Some(v) => Json::from_value(v).canonical().unwrap_or_default(),
    };
    let mut out = String::new();
    for f in findings {
        let flag = if f.instructs_model {
            " [instructs the model]"
        } else {
            ""
        };
        out.push_str(&format!(
            "{} {}{flag}\n  {}\n  before: {}\n  after:  {}\n",
            f.class,
            if f.pointer.is_empty() {
                "/"
            } else {
                &f.pointer
            },
            f.reason,
            compact(&f.before),
            compact(&f.after),
        ));
    }
    out
}

/// Per class: how many pairs it was expected for and given, precision (of the pairs
/// given the class, how many expected it) and recall (of the pairs expected it, how
/// many got it).
fn precision_table(outcomes: &[(Option<Class>, Option<Class>)]) -> String {
    let mut out = format!(
        "{:<10} {:>8} {:>6} {:>10} {:>7}\n",
        "class", "expected", "given", "precision", "recall"
    );
    for class in Class::ALL {
        let expected = outcomes.iter().filter(|(e, _)| *e == Some(class)).count();
        let given = outcomes.iter().filter(|(_, g)| *g == Some(class)).count();
        let right = outcomes
            .iter()
            .filter(|(e, g)| *e == Some(class) && *g == Some(class))
            .count();
        let ratio = |n: usize, d: usize| {
            if d == 0 {
                "-".to_string()
            } else {
                format!("{:.3}", n as f64 / d as f64)
            }
        };
        out.push_str(&format!(
            "{:<10} {expected:>8} {given:>6} {:>10} {:>7}\n",
            class.as_str(),
            ratio(right, given),
            ratio(right, expected)
        ));
    }
    let right = outcomes.iter().filter(|(e, g)| e == g).count();
    out.push_str(&format!(
        "{right} of {} pairs get their expected class\n",
        outcomes.len()
    ));
    out
}

#[test]
fn every_corpus_pair_gets_its_expected_class_and_snapshot() {
    let update = std::env::var_os("MCP_LOCK_UPDATE_SNAPSHOTS").is_some();
    let classifier = Classifier::default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 50, "the corpus has {} pairs", files.len());
    let mut failures = Vec::new();
    let mut outcomes = Vec::new();
    for file in &files {
        let stem = file.file_stem().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(file).unwrap();
        let case: serde_json::Value = serde_json::from_str(&text).unwrap();
        let before = Json::from_value(&case["before"]);
        let after = Json::from_value(&case["after"]);
        let findings = classifier.classify(&before, &after);
        let got = worst(&findings);
        let expect = Class::parse(case["expect"].as_str().unwrap());
        outcomes.push((expect, got));
        if got != expect {
            failures.push(format!(
                "{stem}: expected {expect:?}, got {got:?}\n{}",
                render(&findings)
            ));
        }
        for also in case["expect_also"].as_array().into_iter().flatten() {
            let class = Class::parse(also.as_str().unwrap()).unwrap();
            if !findings.iter().any(|f| f.class == class) {
                failures.push(format!(
                    "{stem}: expected a {class} finding too\n{}",
                    render(&findings)
                ));
            }
        }
        let snapshot = corpus_dir().join("snapshots").join(format!("{stem}.txt"));
        let rendered = format!(
            "{}\nclass: {}\n\n{}",
            case["about"].as_str().unwrap_or_default(),
            got.map_or("none", |c| c.as_str()),
            render(&findings)
        );
        if update {
            std::fs::create_dir_all(snapshot.parent().unwrap()).unwrap();
            std::fs::write(&snapshot, &rendered).unwrap();
        } else {
            match std::fs::read_to_string(&snapshot) {
                Ok(expected) if expected == rendered => {}
                Ok(expected) => failures.push(format!(
                    "{stem}: findings differ from the snapshot\n--- snapshot\n{expected}\n--- now\n{rendered}"
                )),
                Err(_) => failures.push(format!(
                    "{stem}: no snapshot; run with MCP_LOCK_UPDATE_SNAPSHOTS=1 and review it"
                )),
            }
        }
    }
    println!("{}", precision_table(&outcomes));
    assert!(
        failures.is_empty(),
        "{} of {} pairs failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn the_corpus_covers_every_class_in_both_directions() {
    let mut seen = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(corpus_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let case: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let findings = Classifier::default().classify(
            &Json::from_value(&case["before"]),
            &Json::from_value(&case["after"]),
        );
        for f in findings {
            let side = if f.pointer.starts_with("/inputSchema") {
                "input"
            } else if f.pointer.starts_with("/outputSchema") {
                "output"
            } else {
                "tool"
            };
            seen.insert(format!("{side} {}", f.class));
        }
    }
    for class in ["breaking", "additive", "semantic", "cosmetic"] {
        for side in ["input", "output"] {
            assert!(seen.contains(&format!("{side} {class}")), "{side} {class}");
        }
    }
    for needed in [
        "input authority",
        "tool authority",
        "tool cosmetic",
        "tool semantic",
    ] {
        assert!(seen.contains(needed), "{needed}: {seen:?}");
    }
}
