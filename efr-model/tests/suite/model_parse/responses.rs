//! The Responses parser on its documented streams.

use super::*;

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
