//! The Chat Completions parser on its documented streams.

use super::*;

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
