//! The three stream parsers on the providers' documented streams (tests/data/provider-streams, copied from
//! shared/provider-streams) and on hand-written streams in the documented shapes (tests/data/streams): every chunking
//! down to single bytes, multi-byte UTF-8 split across chunks, tool input split mid-token, unknown events, truncated
//! streams and error events.

// Test helpers outside #[test] functions may panic too (team rule: tests may unwrap).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::PathBuf;

use bytes::Bytes;
use efr_model::anthropic::MessagesParser;
use efr_model::compat::ChatParser;
use efr_model::openai::ResponsesParser;
use efr_model::parse::{StreamParser, parse_chunks};
use efr_model::{ModelError, ModelEvent, ReasoningCarry, StopReason, Usage};

fn data(name: &str) -> String {
    let dir = if name.contains('/') { "" } else { "provider-streams/" };
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(format!("{dir}{name}"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn chunks(text: &str, size: usize) -> Vec<Bytes> {
    text.as_bytes().chunks(size).map(Bytes::copy_from_slice).collect()
}

#[derive(Clone, Copy)]
enum Kind {
    Responses,
    Messages,
    Chat,
}

fn parse(kind: Kind, text: &str, size: usize) -> Vec<Result<ModelEvent, ModelError>> {
    let freeform = vec!["apply_patch".to_owned()];
    let parts = chunks(text, size.max(1));
    match kind {
        Kind::Responses => parse_chunks(ResponsesParser::new(), parts),
        Kind::Messages => parse_chunks(MessagesParser::new(freeform), parts),
        Kind::Chat => parse_chunks(ChatParser::new(freeform), parts),
    }
}

/// Parses `text` whole and in chunks of 1, 2, 3, 5, 7 and 64 bytes; every chunking must give the same events.
fn parse_all_ways(kind: Kind, text: &str) -> Vec<Result<ModelEvent, ModelError>> {
    let whole = parse(kind, text, text.len());
    for size in [1, 2, 3, 5, 7, 64] {
        assert_eq!(parse(kind, text, size), whole, "chunks of {size} bytes");
    }
    whole
}

fn ok(results: Vec<Result<ModelEvent, ModelError>>) -> Vec<ModelEvent> {
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("unexpected error: {e:?}")))
        .collect()
}

/// The text of message `index`, checking that its offsets are the byte lengths before each delta.
fn text_of(events: &[ModelEvent], index: u32) -> String {
    let mut text = String::new();
    for event in events {
        if let ModelEvent::TextDelta {
            index: i,
            offset,
            delta,
        } = event
            && *i == index
        {
            assert_eq!(*offset, text.len() as u64, "offset of {delta:?}");
            assert!(!delta.is_empty());
            text.push_str(delta);
        }
    }
    text
}

fn last(events: &[ModelEvent]) -> &ModelEvent {
    events.last().expect("events")
}

mod chat;
mod every;
mod messages;
mod responses;
