//! mcp-lock's own hash vectors for prompts, resource templates and resources
//! (tests/data/surface-hash-vectors.json, computed outside this code): each definition
//! hashes as the whole object sent, and each kind's set hash is over lines keyed by
//! the kind's key member, never the display name.

use mcp_lock::base::json::Json;
use mcp_lock::contract::hash::{definition_hash, set_hash};
use serde_json::Value;

fn vectors() -> Value {
    let text = include_str!("../data/surface-hash-vectors.json");
    serde_json::from_str(text).expect("vector file is JSON")
}

/// The key member of a kind as the vector file names it.
fn key_member(kind: &str) -> &'static str {
    match kind {
        "prompt" => "name",
        "resource_template" => "uriTemplate",
        "resource" => "uri",
        other => panic!("unknown kind {other}"),
    }
}

#[test]
fn every_surface_definition_vector_has_its_canonical_form_and_hash() {
    let v = vectors();
    let defs = v["definitions"].as_array().unwrap();
    let kinds: Vec<&str> = defs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    for kind in ["prompt", "resource_template", "resource"] {
        assert!(kinds.contains(&kind), "a vector for every kind: {kind}");
    }
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
        let key = key_member(d["kind"].as_str().unwrap());
        assert!(parsed.get(key).is_some(), "{about}: has its key {key}");
    }
}

#[test]
fn every_surface_set_vector_is_keyed_by_the_kinds_key_member() {
    let v = vectors();
    let sets = v["sets"].as_array().unwrap();
    assert!(sets.len() >= 3);
    for s in sets {
        let about = s["about"].as_str().unwrap();
        let key = key_member(s["kind"].as_str().unwrap());
        assert_eq!(s["key"], key, "{about}");
        let definitions: Vec<Json> = s["pages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|page| {
                let page = Json::parse(page.as_str().unwrap()).expect("page parses");
                page.as_array().unwrap().to_vec()
            })
            .collect();
        let entries: Vec<(String, String)> = definitions
            .iter()
            .map(|d| {
                let k = d.get(key).and_then(Json::as_str).expect("a string key");
                (k, definition_hash(d).unwrap())
            })
            .collect();
        let mut lines: Vec<String> = entries.iter().map(|(k, h)| format!("{k}:{h}")).collect();
        lines.sort();
        let expected: Vec<String> = s["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().to_string())
            .collect();
        assert_eq!(lines, expected, "{about}");
        let got = set_hash(entries.iter().map(|(k, h)| (k.as_str(), h.as_str())));
        assert_eq!(got, s["setHash"].as_str().unwrap(), "{about}");
    }
}

#[test]
fn templates_sharing_a_display_name_are_two_lines_of_the_set() {
    let v = vectors();
    let set = v["sets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == "resource_template")
        .expect("a template set vector");
    let lines = set["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[0]
            .as_str()
            .unwrap()
            .starts_with("fixture://docs/{path}:")
    );
    assert!(
        lines[1]
            .as_str()
            .unwrap()
            .starts_with("fixture://tickets/{id}:")
    );
}
