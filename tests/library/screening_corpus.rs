//! The screening corpus (tests/corpus/screening/): poisoned definitions written from
//! published write-ups, each with its source and the findings it must raise (rule,
//! pointer, a piece of the quote); and benign near-misses that must raise nothing at
//! high severity.

use std::path::PathBuf;

use mcp_lock::contract::surface::Kind;
use mcp_lock::verdict::screen::{Context, Screened, Severity, screen};
use serde_json::Value;

struct Case {
    file: String,
    doc: Value,
}

fn corpus() -> Vec<Case> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/screening");
    let mut cases: Vec<Case> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| Case {
            file: p.file_name().unwrap().to_string_lossy().into_owned(),
            doc: serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap(),
        })
        .collect();
    cases.sort_by(|a, b| a.file.cmp(&b.file));
    cases
}

fn screened(doc: &Value) -> Vec<Screened> {
    let kind = match doc["kind"].as_str().unwrap() {
        "tool" => Kind::Tool,
        "prompt" => Kind::Prompt,
        "resource-template" => Kind::ResourceTemplate,
        other => panic!("kind {other}"),
    };
    let server = doc["server"].as_str().unwrap();
    let mut ctx = Context::default();
    for (name, tools) in doc["context"].as_object().unwrap() {
        let tools = tools.as_array().unwrap();
        ctx.add(name, tools.iter().map(|t| t.as_str().unwrap().to_string()));
    }
    screen(kind, &doc["definition"], server, &ctx)
}

#[test]
fn every_poisoned_definition_of_the_corpus_is_found_with_its_rule_pointer_and_quote() {
    let cases = corpus();
    let poisoned: Vec<&Case> = cases.iter().filter(|c| c.doc["benign"] != true).collect();
    assert!(poisoned.len() >= 30, "{} poisoned cases", poisoned.len());
    let mut missed = Vec::new();
    for case in &poisoned {
        let source = case.doc["source"].as_str().unwrap_or_default();
        assert!(source.contains("https://"), "{}: no source URL", case.file);
        let found = screened(&case.doc);
        for expect in case.doc["expect"].as_array().unwrap() {
            let (rule, pointer, quote) = (
                expect["rule"].as_str().unwrap(),
                expect["pointer"].as_str().unwrap(),
                expect["quote"].as_str().unwrap(),
            );
            let hit = found
                .iter()
                .any(|f| f.rule == rule && f.pointer == pointer && f.quote.contains(quote));
            if !hit {
                missed.push(format!(
                    "{}: {rule} at {pointer} quoting {quote:?}; found {:#?}",
                    case.file,
                    found
                        .iter()
                        .map(|f| (f.rule, f.severity, &f.pointer, &f.quote))
                        .collect::<Vec<_>>()
                ));
            }
        }
    }
    assert!(missed.is_empty(), "missed:\n{}", missed.join("\n"));
}

#[test]
fn every_rule_is_exercised_by_the_corpus() {
    let cases = corpus();
    let expected: std::collections::BTreeSet<&str> = cases
        .iter()
        .flat_map(|c| c.doc["expect"].as_array().into_iter().flatten())
        .map(|e| e["rule"].as_str().unwrap())
        .collect();
    for (rule, _) in mcp_lock::verdict::screen::RULES {
        assert!(expected.contains(rule), "no corpus case expects {rule}");
    }
}

#[test]
fn benign_near_misses_are_not_flagged_high() {
    let cases = corpus();
    let benign: Vec<&Case> = cases.iter().filter(|c| c.doc["benign"] == true).collect();
    assert!(benign.len() >= 5);
    for case in benign {
        let high: Vec<_> = screened(&case.doc)
            .into_iter()
            .filter(|f| f.severity == Severity::High)
            .collect();
        assert!(high.is_empty(), "{}: {high:#?}", case.file);
    }
}
