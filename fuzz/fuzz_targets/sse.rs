//! The SSE decoder gives the same events, last event ID and retry delay however the
//! stream is split into reads, and refuses an oversized event whatever the split.
//! Input: one byte for the size limit, eight bytes seeding the split, the stream.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_lock::servers::client::sse::{Event, Parser};

/// What a whole stream gave: its events (up to a refusal), whether it was refused,
/// and the reconnection state it left.
#[derive(Debug, PartialEq)]
struct Outcome {
    events: Vec<Event>,
    refused: bool,
    last_id: Option<String>,
    retry: Option<u64>,
}

fn run(stream: &[u8], max: usize, chunks: impl Iterator<Item = usize>) -> (Outcome, Parser) {
    let mut parser = Parser::new(max);
    let mut events = Vec::new();
    let mut refused = false;
    let mut rest = stream;
    for size in chunks {
        if rest.is_empty() {
            break;
        }
        let (chunk, tail) = rest.split_at(size.min(rest.len()));
        rest = tail;
        match parser.feed(chunk) {
            Ok(more) => events.extend(more),
            Err(_) => {
                refused = true;
                break;
            }
        }
    }
    if !refused && !rest.is_empty() {
        match parser.feed(rest) {
            Ok(more) => events.extend(more),
            Err(_) => refused = true,
        }
    }
    let outcome = Outcome {
        events,
        refused,
        last_id: parser.last_event_id().map(str::to_string),
        retry: parser.retry_ms(),
    };
    (outcome, parser)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 9 {
        return;
    }
    let max = 16 + usize::from(data[0]) * 8;
    let mut seed = u64::from_le_bytes(data[1..9].try_into().unwrap()) | 1;
    let stream = &data[9..];
    let (whole, parser) = run(stream, max, std::iter::once(stream.len()));
    // Reads of 0..=7 bytes (empty reads included), from the seed.
    let split = std::iter::from_fn(|| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        Some((seed % 8) as usize)
    });
    let (pieces, _) = run(stream, max, split.take(stream.len() * 8 + 8));
    if pieces.refused || whole.refused {
        // A refusal drops the events of the read it happened in: only compare that
        // both refused.
        assert_eq!(
            pieces.refused, whole.refused,
            "refusal depends on the split"
        );
    } else {
        assert_eq!(pieces, whole, "events depend on the split");
    }
    let (bytes, _) = run(stream, max, std::iter::repeat(1));
    if !whole.refused {
        assert_eq!(bytes, whole, "byte-at-a-time differs from whole");
    }
    // A reconnected parser keeps the ID and delay, nothing else.
    let again = parser.reconnected();
    assert_eq!(again.last_event_id(), whole.last_id.as_deref());
    assert_eq!(again.retry_ms(), whole.retry);
});
