//! The published "tool definition hash, version 1" vectors (tests/data, copied from the
//! conformance folder with its attribution line): every entry must reproduce, and
//! every invalid entry must be refused.

use mcp_lock::base::json::Json;
use mcp_lock::contract::hash::{HashedTool, definition_hash, instructions_hash, listing_set_hash};
use serde_json::Value;

fn vectors() -> Value {
    let text = include_str!("../data/tool-definition-hash-vectors.json");
    serde_json::from_str(text).expect("vector file is JSON")
}

fn listing(pages: &Value) -> Vec<HashedTool> {
    pages
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|page| {
            let page = Json::parse(page.as_str().unwrap()).expect("page parses");
            page.as_array().unwrap().to_vec()
        })
        .map(HashedTool::new)
        .collect()
}

#[test]
fn vector_file_keeps_its_attribution() {
    let about = vectors()["about"].as_str().unwrap().to_string();
    assert!(about.contains("mcp-pin project, MIT license"), "{about}");
}

#[test]
fn every_definition_vector_has_the_published_canonical_form_and_hash() {
    let v = vectors();
    let defs = v["definitions"].as_array().unwrap();
    assert!(defs.len() >= 8);
    for d in defs {
        let about = d["about"].as_str().unwrap();
        let parsed =
            Json::parse(d["input"].as_str().unwrap()).unwrap_or_else(|e| panic!("{about}: {e}"));
        assert_eq!(
            parsed.canonical().unwrap(),
            d["canonical"].as_str().unwrap(),
            "{about}"
        );
        assert_eq!(
            definition_hash(&parsed).unwrap(),
            d["hash"].as_str().unwrap(),
            "{about}"
        );
    }
}

#[test]
fn every_set_vector_has_the_published_lines_and_set_hash() {
    let v = vectors();
    for s in v["sets"].as_array().unwrap() {
        let about = s["about"].as_str().unwrap();
        let tools = listing(&s["pages"]);
        let mut lines: Vec<String> = tools
            .iter()
            .map(|t| format!("{}:{}", t.name.as_ref().unwrap(), t.hash.as_ref().unwrap()))
            .collect();
        lines.sort();
        let expected: Vec<String> = s["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().to_string())
            .collect();
        assert_eq!(lines, expected, "{about}");
        assert_eq!(
            listing_set_hash(&tools).unwrap(),
            s["setHash"].as_str().unwrap(),
            "{about}"
        );
    }
}

#[test]
fn every_instructions_vector_hashes_as_published() {
    let v = vectors();
    for i in v["instructions"].as_array().unwrap() {
        let got = i["instructions"].as_str().map(instructions_hash);
        assert_eq!(got.as_deref(), i["hash"].as_str(), "{}", i["about"]);
    }
}

#[test]
fn every_invalid_vector_is_refused() {
    let v = vectors();
    let invalid = v["invalid"].as_array().unwrap();
    assert!(!invalid.is_empty());
    for entry in invalid {
        let about = entry["about"].as_str().unwrap();
        if let Some(input) = entry["input"].as_str() {
            let parsed = Json::parse(input).expect("invalid entries are still JSON text");
            assert!(definition_hash(&parsed).is_err(), "{about}");
        } else {
            let tools = listing(&entry["pages"]);
            assert!(listing_set_hash(&tools).is_err(), "{about}");
        }
    }
}
