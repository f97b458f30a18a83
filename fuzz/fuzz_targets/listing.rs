//! The listing fast path (`mcp-lock hash` of a listing, src/base/json/tape.rs) against the
//! tree reader: whatever the tree refuses, the fast path declines; whatever the fast
//! path reads, it gives the names and hashes the tree gives for the same array.
//!
//! Input: any bytes, read as they are, and also wrapped in the three listing shapes
//! (a bare array, `{"tools":[...]}`, a tools/list answer) so the search reaches the
//! definitions without first finding the envelope.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_lock::contract::hash::{HashedTool, ToolHash, hash_listing_text};
use mcp_lock::base::json::{Json, Listed};

fuzz_target!(|data: &[u8]| {
    check(data);
    for (open, close) in [
        (&b"["[..], &b"]"[..]),
        (br#"{"tools":["#, b"]}"),
        (br#"{"jsonrpc":"2.0","id":1,"result":{"tools":["#, b"]}}"),
    ] {
        check(&[open, data, close].concat());
    }
});

fn check(text: &[u8]) {
    let tree = std::str::from_utf8(text)
        .ok()
        .and_then(|t| Json::parse(t).ok());
    match (tree, hash_listing_text(text)) {
        (None, Some(_)) => panic!("the fast path read what the tree refuses"),
        (Some(tree), Some((listed, got))) => {
            assert_eq!(
                Some(got),
                tree_listing(&tree, listed),
                "fast path and tree differ"
            );
        }
        (_, None) => {}
    }
}

fn tree_listing(value: &Json, listed: Listed) -> Option<Vec<ToolHash>> {
    let array = match listed {
        Listed::Array => value.as_array(),
        Listed::Tools => value.get("tools")?.as_array(),
        Listed::ResultTools => value.get("result")?.get("tools")?.as_array(),
    }?;
    Some(
        array
            .iter()
            .map(|d| ToolHash::from(&HashedTool::new(d.clone())))
            .collect(),
    )
}
