//! What holds for every parser: truncation, unknown events, CRLF, long lines, broken data.

use super::*;

const DOCUMENTED: &[(&str, Kind)] = &[
    ("openai_responses_text.sse", Kind::Responses),
    ("streams/openai_responses_tools_reasoning.sse", Kind::Responses),
    ("anthropic_text_docs.sse", Kind::Messages),
    ("anthropic_tool_use_docs.sse", Kind::Messages),
    ("anthropic_thinking_docs.sse", Kind::Messages),
    ("streams/anthropic_freeform_fallback.sse", Kind::Messages),
    ("openai_chat_text.sse", Kind::Chat),
    ("ollama_chat_text_utf8_reconstructed.sse", Kind::Chat),
    ("streams/openai_chat_tool_calls.sse", Kind::Chat),
];

/// A stream cut anywhere before its completion event ends with StreamEnded, never with a Stop.
#[test]
fn truncated_streams_never_succeed() {
    for (name, kind) in DOCUMENTED {
        let text = data(name);
        let complete = parse(*kind, &text, text.len());
        assert!(
            matches!(complete.last(), Some(Ok(ModelEvent::Stop { .. }))),
            "{name} parses whole"
        );
        // The completion event is the last one; every cut before its end loses it.
        let end = text.trim_end().len();
        for cut in (0..end).filter(|cut| text.is_char_boundary(*cut)) {
            let results = parse(*kind, &text[..cut], 97);
            assert_eq!(
                results.last(),
                Some(&Err(ModelError::StreamEnded)),
                "{name} cut at {cut}"
            );
            assert!(
                !results.iter().any(|r| matches!(r, Ok(ModelEvent::Stop { .. }))),
                "{name} cut at {cut}"
            );
        }
    }
}

/// Unknown events (and unknown delta kinds) are skipped: the result is the same as without them, and a stream of
/// only unknown events is not a success.
#[test]
fn unknown_events_are_skipped_never_success() {
    let unknown = [
        (
            Kind::Responses,
            "event: response.web_search_call.in_progress\ndata: {\"type\":\"response.web_search_call.in_progress\",\"sequence_number\":3,\"output_index\":0,\"item_id\":\"ws_1\"}\n\nevent: response.future_thing\ndata: {\"type\":\"response.future_thing\",\"anything\":[1,2]}\n\n",
        ),
        (
            Kind::Messages,
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"citations_delta\",\"citation\":{\"type\":\"char_location\"}}}\n\nevent: future_event\ndata: {\"type\":\"future_event\"}\n\n",
        ),
        (Kind::Chat, "event: keepalive\ndata: {}\n\n: a comment line\n\n"),
    ];
    let streams = [
        ("openai_responses_text.sse", "event: response.output_text.delta"),
        ("anthropic_text_docs.sse", "event: content_block_delta"),
        (
            "openai_chat_text.sse",
            "data: {\"id\":\"chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL\",\"object\":\"chat.completion.chunk\",\"created\":1727346168,\"model\":\"gpt-4o-2024-08-06\",\"system_fingerprint\":\"fp_5050236cbd\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"I'm\"}",
        ),
    ];
    for ((kind, extra), (name, before)) in unknown.iter().zip(streams) {
        let text = data(name);
        let at = text.find(before).expect("anchor");
        let with = format!("{}{extra}{}", &text[..at], &text[at..]);
        assert_eq!(parse_all_ways(*kind, &with), parse(*kind, &text, text.len()), "{name}");
        assert_eq!(
            parse(*kind, extra, extra.len()),
            vec![Err(ModelError::StreamEnded)],
            "{name}: only unknown"
        );
    }
}

/// CRLF line ends give the same events, even when a read ends between the CR and the LF (eventsource-stream alone
/// would take the LF for an empty line and drop the event's name).
#[test]
fn crlf_line_ends_split_anywhere() {
    for (name, kind) in [
        ("anthropic_tool_use_docs.sse", Kind::Messages),
        ("openai_responses_text.sse", Kind::Responses),
    ] {
        let text = data(name);
        let crlf = text.replace('\n', "\r\n");
        assert_eq!(parse_all_ways(kind, &crlf), parse(kind, &text, text.len()), "{name}");
    }
}

/// Lone CR line ends (the SSE grammar allows them) give the same events, however the reads fall.
#[test]
fn cr_line_ends_split_anywhere() {
    let text = data("openai_responses_text.sse");
    let cr = text.replace('\n', "\r");
    assert_eq!(
        parse_all_ways(Kind::Responses, &cr),
        parse(Kind::Responses, &text, text.len())
    );
}

/// A line far longer than any read (a long answer's `response.completed` repeats the whole text) parses whole.
#[test]
fn a_long_line_across_many_reads() {
    let long = "größe 🙂 ".repeat(200_000);
    let text = data("anthropic_text_docs.sse").replace("\"Hello\"", &format!("\"{long}\""));
    for size in [1000, 4096, 65536] {
        let events = ok(parse(Kind::Messages, &text, size));
        assert_eq!(text_of(&events, 0), format!("{long}!"), "reads of {size}");
    }
}

#[test]
fn broken_data_is_a_bad_response() {
    let cases: [(Kind, &str); 3] = [
        (
            Kind::Responses,
            "event: response.output_text.delta\ndata: {\"output_index\": \"zero\"}\n\n",
        ),
        (
            Kind::Messages,
            "event: content_block_delta\ndata: {\"index\":7,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
        ),
        (Kind::Chat, "data: {not json\n\n"),
    ];
    for (kind, text) in cases {
        let results = parse(kind, text, text.len());
        assert_eq!(results.len(), 1, "{text}");
        assert!(
            matches!(results[0], Err(ModelError::BadResponse { .. })),
            "{text}: {results:?}"
        );
    }
}

/// A byte sequence that is not UTF-8 is a bad response, not a panic or a success.
#[test]
fn invalid_utf8_is_a_bad_response() {
    let mut bytes =
        b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: ping\ndata: \xff\xfe\n\n"
            .to_vec();
    bytes.extend_from_slice(data("anthropic_text_docs.sse").as_bytes());
    let results = parse_chunks(MessagesParser::new(Vec::new()), vec![Bytes::from(bytes)]);
    assert!(
        matches!(results.last(), Some(Err(ModelError::BadResponse { .. }))),
        "{results:?}"
    );
}

/// Sanity for the trait object: a parser is usable through `dyn StreamParser`.
#[test]
fn parsers_are_object_safe() {
    let mut parser: Box<dyn StreamParser> = Box::new(ChatParser::new(Vec::new()));
    let mut out = Vec::new();
    assert_eq!(parser.event("message", "[DONE]", &mut out), Ok(true));
    assert_eq!(
        out,
        vec![ModelEvent::Stop {
            reason: StopReason::EndTurn,
            empty: true
        }]
    );
}
