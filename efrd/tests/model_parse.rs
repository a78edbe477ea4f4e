//! The three stream parsers on the providers' documented streams (tests/data/provider-streams, copied from
//! shared/provider-streams) and on hand-written streams in the documented shapes (tests/data/streams): every chunking
//! down to single bytes, multi-byte UTF-8 split across chunks, tool input split mid-token, unknown events, truncated
//! streams and error events.

// Test helpers outside #[test] functions may panic too (team rule: tests may unwrap).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::PathBuf;

use bytes::Bytes;
use efrd::model::anthropic::MessagesParser;
use efrd::model::compat::ChatParser;
use efrd::model::openai::ResponsesParser;
use efrd::model::parse::{StreamParser, parse_chunks};
use efrd::model::{ModelError, ModelEvent, ReasoningCarry, StopReason, Usage};

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

// ---- Responses -------------------------------------------------------------------------------------------------

#[test]
fn responses_text_docs() {
    let events = ok(parse_all_ways(Kind::Responses, &data("openai_responses_text.sse")));
    assert_eq!(text_of(&events, 0), "Hello! How can I assist you today?");
    let n = events.len();
    assert_eq!(
        events[n - 2],
        ModelEvent::Usage(Usage {
            input: 11,
            output: 10,
            ..Usage::default()
        })
    );
    assert_eq!(
        events[n - 1],
        ModelEvent::Stop {
            reason: StopReason::EndTurn,
            empty: false
        }
    );
    assert!(
        events
            .iter()
            .all(|e| !matches!(e, ModelEvent::TextDelta { index, .. } if *index != 0))
    );
}

#[test]
fn responses_failed_docs_is_a_server_error() {
    let results = parse_all_ways(Kind::Responses, &data("openai_responses_failed_spec.sse"));
    assert_eq!(
        results,
        vec![Err(ModelError::Server {
            status: None,
            message: "The model failed to generate a response.".into()
        })]
    );
}

#[test]
fn responses_incomplete_docs_is_max_tokens() {
    let events = ok(parse_all_ways(
        Kind::Responses,
        &data("openai_responses_incomplete_spec.sse"),
    ));
    assert_eq!(
        events,
        vec![ModelEvent::Stop {
            reason: StopReason::MaxTokens,
            empty: true
        }]
    );
}

#[test]
fn responses_error_event_docs() {
    let results = parse_all_ways(Kind::Responses, &data("openai_responses_error_event_spec.sse"));
    assert_eq!(
        results,
        vec![Err(ModelError::Server {
            status: None,
            message: "Something went wrong".into()
        })]
    );
}

#[test]
fn responses_tools_and_reasoning() {
    let events = ok(parse_all_ways(
        Kind::Responses,
        &data("streams/openai_responses_tools_reasoning.sse"),
    ));
    // The title comes with the delta that closes its `**`, and the delta keeps the text.
    assert_eq!(
        events[0],
        ModelEvent::ReasoningDelta {
            delta: "**Checking the".into(),
            title: None
        }
    );
    assert_eq!(
        events[1],
        ModelEvent::ReasoningDelta {
            delta: " weather**\n\nThe user wants the weather in München.".into(),
            title: Some("Checking the weather".into())
        }
    );
    let ModelEvent::ReasoningDone {
        text,
        carry:
            Some(ReasoningCarry::OpenAi {
                id,
                summary,
                encrypted_content,
            }),
    } = &events[2]
    else {
        panic!("reasoning done: {:?}", events[2]);
    };
    assert_eq!(
        text,
        "**Checking the weather**\n\nThe user wants the weather in München."
    );
    assert_eq!(
        id.as_deref(),
        Some("rs_6876cf02e0bc8192b74af0fb64b715ff06fa2fcced15a5ac")
    );
    assert_eq!(summary.len(), 1);
    assert_eq!(
        encrypted_content.as_deref(),
        Some("gAAAAABodc8C5s5d_encrypted_example==")
    );

    assert_eq!(
        events[3],
        ModelEvent::ToolCallStarted {
            call_id: "call_12345xyz".into(),
            tool: "get_weather".into(),
            freeform: false
        }
    );
    let deltas: Vec<(String, u64)> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ToolInputDelta { call_id, delta, bytes } if call_id == "call_12345xyz" => {
                Some((delta.clone(), *bytes))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas,
        vec![
            ("{\"loc".into(), 5),
            ("ation\":\"Mü".into(), 16),
            ("nchen, DE\"}".into(), 27)
        ]
    );
    let done: Vec<&ModelEvent> = events
        .iter()
        .filter(|e| matches!(e, ModelEvent::ToolCallDone { .. }))
        .collect();
    assert_eq!(
        done,
        vec![
            &ModelEvent::ToolCallDone {
                call_id: "call_12345xyz".into(),
                tool: "get_weather".into(),
                freeform: false,
                input: "{\"location\":\"München, DE\"}".into()
            },
            &ModelEvent::ToolCallDone {
                call_id: "call_aGiFQkRWSWAIsMQ19fKqxUgb".into(),
                tool: "apply_patch".into(),
                freeform: true,
                input: "*** Begin Patch\n*** Add File: hi.txt\n+größe 🙂\n*** End Patch".into()
            }
        ]
    );
    let n = events.len();
    assert_eq!(
        events[n - 2],
        ModelEvent::Usage(Usage {
            input: 2000,
            cached_input: 1536,
            output: 320,
            reasoning: 192,
            ..Usage::default()
        })
    );
    // Tool calls and no text: not empty.
    assert_eq!(
        events[n - 1],
        ModelEvent::Stop {
            reason: StopReason::EndTurn,
            empty: false
        }
    );
}

// ---- Messages --------------------------------------------------------------------------------------------------

#[test]
fn messages_text_docs() {
    let events = ok(parse_all_ways(Kind::Messages, &data("anthropic_text_docs.sse")));
    assert_eq!(text_of(&events, 0), "Hello!");
    let n = events.len();
    assert_eq!(
        events[n - 2],
        ModelEvent::Usage(Usage {
            input: 25,
            output: 15,
            ..Usage::default()
        })
    );
    assert_eq!(
        events[n - 1],
        ModelEvent::Stop {
            reason: StopReason::EndTurn,
            empty: false
        }
    );
}

#[test]
fn messages_tool_use_docs_splits_input_mid_token() {
    let events = ok(parse_all_ways(Kind::Messages, &data("anthropic_tool_use_docs.sse")));
    assert_eq!(
        text_of(&events, 0),
        "Okay, let's check the weather for San Francisco, CA:"
    );
    assert!(events.contains(&ModelEvent::ToolCallStarted {
        call_id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
        tool: "get_weather".into(),
        freeform: false
    }));
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ToolInputDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    // The empty first input_json_delta yields nothing; the rest split tokens ("fah" + "renheit").
    assert_eq!(deltas.len(), 8);
    assert_eq!(deltas[6], "\"unit\": \"fah");
    let Some(ModelEvent::ToolCallDone { input, .. }) =
        events.iter().find(|e| matches!(e, ModelEvent::ToolCallDone { .. }))
    else {
        panic!("no tool call done");
    };
    let input: serde_json::Value = serde_json::from_str(input).expect("JSON input");
    assert_eq!(
        input,
        serde_json::json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
    );
    let Some(ModelEvent::ToolInputDelta { bytes, .. }) = events
        .iter()
        .rev()
        .find(|e| matches!(e, ModelEvent::ToolInputDelta { .. }))
    else {
        panic!("no delta");
    };
    assert_eq!(
        *bytes,
        r#"{"location": "San Francisco, CA", "unit": "fahrenheit"}"#.len() as u64
    );
    let n = events.len();
    assert_eq!(
        events[n - 2],
        ModelEvent::Usage(Usage {
            input: 472,
            output: 89,
            ..Usage::default()
        })
    );
    assert_eq!(
        events[n - 1],
        ModelEvent::Stop {
            reason: StopReason::EndTurn,
            empty: false
        }
    );
}

#[test]
fn messages_thinking_docs_carries_the_signature() {
    let events = ok(parse_all_ways(Kind::Messages, &data("anthropic_thinking_docs.sse")));
    let thinking: String = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ReasoningDelta { delta, title: None } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert!(thinking.starts_with("Let me solve this step by step"));
    assert!(events.contains(&ModelEvent::ReasoningDone {
        text: thinking.clone(),
        carry: Some(ReasoningCarry::Anthropic {
            signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds...".into()
        })
    }));
    assert_eq!(text_of(&events, 0), "27 * 453 = 12,231");
    // The thinking examples carry no usage: no Usage event.
    assert!(!events.iter().any(|e| matches!(e, ModelEvent::Usage(_))));
    assert_eq!(
        last(&events),
        &ModelEvent::Stop {
            reason: StopReason::EndTurn,
            empty: false
        }
    );
}

#[test]
fn messages_adaptive_thinking_with_multibyte_text() {
    let events = ok(parse_all_ways(
        Kind::Messages,
        &data("anthropic_thinking_adaptive_utf8_docs.sse"),
    ));
    let Some(ModelEvent::ReasoningDone { text, carry }) =
        events.iter().find(|e| matches!(e, ModelEvent::ReasoningDone { .. }))
    else {
        panic!("no reasoning");
    };
    assert!(text.contains("1071 = 2 × 462 + 147"));
    assert!(matches!(carry, Some(ReasoningCarry::Anthropic { signature }) if signature.starts_with("EqQB")));
    assert_eq!(
        text_of(&events, 0),
        "The greatest common divisor of 1071 and 462 is **21**."
    );
}

#[test]
fn messages_error_docs_is_overloaded() {
    let results = parse_all_ways(Kind::Messages, &data("anthropic_error_overloaded_docs.sse"));
    assert_eq!(
        results,
        vec![Err(ModelError::Overloaded {
            retry_after: None,
            message: "Overloaded".into()
        })]
    );
}

#[test]
fn messages_error_event_mid_stream_keeps_what_came_before() {
    let text = data("anthropic_text_docs.sse");
    let cut = text.find("event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"text_delta\", \"text\": \"!\"").expect("second delta");
    let broken = format!(
        "{}event: error\ndata: {{\"type\": \"error\", \"error\": {{\"type\": \"api_error\", \"message\": \"Internal server error\"}}}}\n\n{}",
        &text[..cut],
        &text[cut..]
    );
    let results = parse_all_ways(Kind::Messages, &broken);
    assert_eq!(
        results,
        vec![
            Ok(ModelEvent::TextDelta {
                index: 0,
                offset: 0,
                delta: "Hello".into()
            }),
            Err(ModelError::Server {
                status: None,
                message: "Internal server error".into()
            })
        ]
    );
}

#[test]
fn messages_freeform_fallback_gives_back_the_text() {
    let events = ok(parse_all_ways(
        Kind::Messages,
        &data("streams/anthropic_freeform_fallback.sse"),
    ));
    assert_eq!(
        events[0],
        ModelEvent::ToolCallStarted {
            call_id: "toolu_01D7FLrfh4GYq7yT1ULFeyMV".into(),
            tool: "apply_patch".into(),
            freeform: true
        }
    );
    assert!(events.contains(&ModelEvent::ToolCallDone {
        call_id: "toolu_01D7FLrfh4GYq7yT1ULFeyMV".into(),
        tool: "apply_patch".into(),
        freeform: true,
        input: "*** Begin Patch\n*** Add File: a.txt\n+\"quoted\" größe\n*** End Patch".into()
    }));
    // Anthropic's input_tokens leaves the cache out; efr's input holds it.
    let n = events.len();
    assert_eq!(
        events[n - 2],
        ModelEvent::Usage(Usage {
            input: 12 + 2048 + 4096,
            cached_input: 4096,
            cache_write: 2048,
            cache_write_1h: 1024,
            output: 42,
            reasoning: 0
        })
    );
}

#[test]
fn messages_multibyte_text_split_at_every_byte() {
    // The documented text stream with its text replaced by multi-byte text: größe is 7 bytes, 🙂 is 4.
    let text = data("anthropic_text_docs.sse")
        .replace("\"Hello\"", "\"größe 🙂\"")
        .replace("\"!\"", "\"🙂größe\"");
    let events = ok(parse_all_ways(Kind::Messages, &text));
    assert_eq!(
        events[0],
        ModelEvent::TextDelta {
            index: 0,
            offset: 0,
            delta: "größe 🙂".into()
        }
    );
    assert_eq!(
        events[1],
        ModelEvent::TextDelta {
            index: 0,
            offset: 12,
            delta: "🙂größe".into()
        }
    );
}

// ---- Chat Completions ------------------------------------------------------------------------------------------

#[test]
fn chat_text_docs() {
    let events = ok(parse_all_ways(Kind::Chat, &data("openai_chat_text.sse")));
    assert_eq!(
        text_of(&events, 0),
        "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend \
         checking a reliable weather website or a weather app."
    );
    let n = events.len();
    assert_eq!(
        events[n - 2],
        ModelEvent::Usage(Usage {
            input: 14,
            output: 30,
            ..Usage::default()
        })
    );
    assert_eq!(
        events[n - 1],
        ModelEvent::Stop {
            reason: StopReason::EndTurn,
            empty: false
        }
    );
}

#[test]
fn chat_ollama_multibyte_text() {
    let events = ok(parse_all_ways(
        Kind::Chat,
        &data("ollama_chat_text_utf8_reconstructed.sse"),
    ));
    assert_eq!(text_of(&events, 0), "Bonjour ! 👋 Ça va ?");
    assert!(events.contains(&ModelEvent::Usage(Usage {
        input: 11,
        output: 9,
        ..Usage::default()
    })));
}

#[test]
fn chat_parallel_tool_calls_split_mid_token() {
    let events = ok(parse_all_ways(Kind::Chat, &data("streams/openai_chat_tool_calls.sse")));
    let done: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ToolCallDone {
                call_id,
                input,
                freeform: false,
                ..
            } => Some((call_id.clone(), input.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        done,
        vec![
            (
                "call_DdmO9pD3xa9XTPNJ32zg2hcA".into(),
                "{\"location\": \"Paris, France\"}".into()
            ),
            (
                "call_Jz2s4m0Yc2wq0bZkqYl3T8vE".into(),
                "{\"location\": \"Bogotá, Colombia\"}".into()
            )
        ]
    );
    assert_eq!(
        last(&events),
        &ModelEvent::Stop {
            reason: StopReason::EndTurn,
            empty: false
        }
    );
}

#[test]
fn chat_error_chunk_fails_the_stream() {
    let text = data("openai_chat_text.sse");
    let cut = text.find("data: {").expect("chunk") + 1;
    let cut = cut + text[cut..].find("data: {").expect("second chunk");
    let broken = format!(
        "{}data: {{\"error\": {{\"message\": \"the request exceeds the available context size\", \"type\": \"exceed_context_size_error\", \"code\": 400}}}}\n\n{}",
        &text[..cut],
        &text[cut..]
    );
    let results = parse_all_ways(Kind::Chat, &broken);
    assert_eq!(
        results,
        vec![Err(ModelError::ContextOverflow {
            message: "the request exceeds the available context size".into()
        })]
    );
}

#[test]
fn chat_named_error_event_fails_the_stream() {
    let text = "event: error\ndata: {\"error\": {\"message\": \"server busy\", \"type\": \"overloaded\"}}\n\n";
    let results = parse_all_ways(Kind::Chat, text);
    assert_eq!(
        results,
        vec![Err(ModelError::Overloaded {
            retry_after: None,
            message: "server busy".into()
        })]
    );
}

// ---- Every parser ----------------------------------------------------------------------------------------------

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
