//! tests/corpus/rewording/pairs.json: description pairs that change a call's meaning are
//! never graded cosmetic; edits that cannot change it are.

use mcp_lock::contract::classify::rewording::{Grade, grade};
use serde_json::Value;

#[test]
fn no_meaning_changing_pair_is_graded_cosmetic_and_every_harmless_edit_is() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/corpus/rewording/pairs.json"
    );
    let corpus: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut wrong = Vec::new();
    let pairs = corpus["pairs"].as_array().unwrap();
    for pair in pairs {
        let (was, now) = (pair["was"].as_str().unwrap(), pair["now"].as_str().unwrap());
        let changes = pair["changes_meaning"].as_bool().unwrap();
        match (grade(was, now), changes) {
            (Grade::Semantic(_), true) | (Grade::Cosmetic(_), false) => {}
            (Grade::Cosmetic(why), true) => {
                wrong.push(format!("MEANING CHANGE PASSED: {was:?} -> {now:?} ({why})"))
            }
            (Grade::Semantic(why), false) => {
                wrong.push(format!("harmless edit stopped: {was:?} -> {now:?} ({why})"))
            }
        }
    }
    assert!(pairs.len() >= 30, "the corpus holds {} pairs", pairs.len());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
