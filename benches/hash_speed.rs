//! Parse + canonicalise + hash, in MB/s of tools/list text, beside a bare SHA-256
//! pass over the same bytes: how far the hash recipe is from the hardware. Two ways:
//! the listing fast path `mcp-lock hash` takes (each definition read onto a reused
//! flat tape and hashed at once), and the tree `verify` and `update` build.
//!
//! The input is a tools/list result like a large server's: 10,000 tools, the shape of
//! the fixture server's `--many` tools (about 660 bytes each). Run with
//! `cargo bench --bench hash_speed`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcp_lock::base::json::Json;
use mcp_lock::contract::hash::{
    HashedTool, hash_listing_text, listing_set_hash, tool_hashes_set_hash,
};
use sha2::{Digest, Sha256};

fn listing(tools: usize) -> String {
    let tool = |i: usize| {
        format!(
            concat!(
                r#"{{"name":"bulk_{i:05}","title":"Bulk tool {i}","description":"Synthetic tool number {i} for scale tests: "#,
                r#"it looks up records in collection {c} and returns at most `limit` of them, newest first.","#,
                r#""inputSchema":{{"type":"object","properties":{{"collection":{{"type":"string","description":"Which collection to search."}},"#,
                r#""query":{{"type":"string","description":"Words every record must contain."}},"#,
                r#""limit":{{"type":"integer","minimum":1,"maximum":500,"default":20}},"#,
                r#""since":{{"type":"string","format":"date-time","description":"Only records after this time."}}}},"#,
                r#""required":["collection"],"additionalProperties":false}},"#,
                r#""annotations":{{"readOnlyHint":true,"openWorldHint":false}}}}"#
            ),
            i = i,
            c = i % 97
        )
    };
    let all: Vec<String> = (0..tools).map(tool).collect();
    format!(r#"{{"tools":[{}]}}"#, all.join(","))
}

fn bench(c: &mut Criterion) {
    let text = listing(10_000);
    let mut group = c.benchmark_group("tools_list_10k");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(20);
    group.bench_function("sha256 of the bytes", |b| {
        b.iter(|| Sha256::digest(text.as_bytes()))
    });
    group.bench_function(
        "streamed listing: parse + canonicalise + hash (set hash)",
        |b| {
            b.iter(|| {
                let (_, hashes) = hash_listing_text(text.as_bytes()).expect("a plain listing");
                tool_hashes_set_hash(&hashes).unwrap()
            })
        },
    );
    group.bench_function("tree: parse + canonicalise + hash (set hash)", |b| {
        b.iter(|| {
            let mut value = Json::parse(&text).unwrap();
            let Some(Json::Array(tools)) = value.take("tools") else {
                panic!("a tools/list result");
            };
            let hashed: Vec<HashedTool> = tools.into_iter().map(HashedTool::new).collect();
            listing_set_hash(&hashed).unwrap()
        })
    });
    group.bench_function("tree: parse only", |b| {
        b.iter(|| Json::parse(&text).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
