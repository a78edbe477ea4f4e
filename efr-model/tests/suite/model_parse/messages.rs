//! The Messages parser on its documented streams.

use super::*;

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
