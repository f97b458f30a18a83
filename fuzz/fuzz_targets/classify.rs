//! The classifier on random definition pairs: it never panics, and a pair whose
//! canonical forms differ is never reported as no change. Input: a kind byte, the
//! pinned definition, a NUL byte, the live definition (NUL never occurs in JSON text).

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_lock::contract::classify::{Classifier, worst};
use mcp_lock::base::json::Json;
use mcp_lock::contract::surface::Kind;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Some(at) = rest.iter().position(|&b| b == 0) else {
        return;
    };
    let (Ok(a), Ok(b)) = (
        std::str::from_utf8(&rest[..at]),
        std::str::from_utf8(&rest[at + 1..]),
    ) else {
        return;
    };
    let (Ok(pinned), Ok(live)) = (Json::parse(a), Json::parse(b)) else {
        return;
    };
    let classifier = Classifier::default();
    let kind = Kind::ALL[usize::from(selector) % Kind::ALL.len()];
    let findings = match kind {
        Kind::Tool => classifier.classify(&pinned, &live),
        Kind::Prompt => classifier.classify_prompt(&pinned, &live),
        Kind::ResourceTemplate => classifier.classify_template(&pinned, &live),
        Kind::Resource => classifier.classify_resource(&pinned, &live),
    };
    let differ = pinned.canonical().ok() != live.canonical().ok();
    if differ {
        assert!(
            !findings.is_empty(),
            "{kind:?} pair reported as no change:\n{a}\n{b}"
        );
    }
    // Worst first, as every report reads them.
    if let Some(first) = findings.first() {
        assert_eq!(Some(first.class), worst(&findings));
    }
    // Two definitions with one canonical form are the same definition.
    if let (Ok(x), Ok(y)) = (pinned.canonical(), live.canonical())
        && x == y
    {
        assert!(
            findings.is_empty(),
            "{kind:?} identical pair has findings: {findings:?}"
        );
    }
    let _ = classifier.tool_added(&live);
    let _ = classifier.item_added(kind, &live);
});
