//! Each format end to end through the scripted server: events, headers and bodies.

use super::*;

#[tokio::test]
async fn every_format_streams_text_reasoning_tools_and_usage() {
    let script_reply = Reply {
        events: vec![
            ReplyEvent::Reasoning {
                text: "Look first.".into(),
                title: Some("Plan".into()),
            },
            ReplyEvent::Text("Gr".into()),
            ReplyEvent::Text("öße 🙂 und größe".into()),
            ReplyEvent::ToolCall(ScriptToolCall {
                id: "call_1".into(),
                name: "shell".into(),
                freeform: false,
                input: vec!["{\"command\": \"ec".into(), "ho größe\"}".into()],
            }),
            ReplyEvent::ToolCall(ScriptToolCall {
                id: "call_2".into(),
                name: "apply_patch".into(),
                freeform: true,
                input: vec!["*** Begin Patch\n+\"q\" 🙂".into(), "\n*** End Patch".into()],
            }),
        ],
        usage: Some(ScriptUsage {
            input: 100,
            cached_input: 60,
            cache_write: 20,
            cache_write_1h: 5,
            output: 30,
            reasoning: 0,
        }),
        stop: Some("tool_use".into()),
        // Writes of 3 bytes split multi-byte characters between writes.
        chunk_bytes: Some(3),
        chunk_delay_ms: None,
    };
    for kind in KINDS {
        let f = fixture(vec![Step::Reply(script_reply.clone())]).await;
        let provider = f.provider(kind, fast_retry(1));
        let mut req = request();
        req.tools = vec![
            Tool::Function {
                name: "shell".into(),
                description: "Run".into(),
                parameters: json!({"type": "object"}),
            },
            Tool::Freeform {
                name: "apply_patch".into(),
                description: "Patch".into(),
            },
        ];
        let events = collect(&provider, &req).await;
        assert_eq!(text(&events), "Größe 🙂 und größe", "{kind}");
        let events: Vec<ModelEvent> = events.into_iter().map(|e| e.expect("no error")).collect();
        assert!(
            events
                .iter()
                .any(|e| matches!(e, ModelEvent::ReasoningDelta { delta, .. } if delta.contains("Look first."))),
            "{kind}: reasoning"
        );
        let done: Vec<(&str, bool, &str)> = events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCallDone {
                    call_id,
                    freeform,
                    input,
                    ..
                } => Some((call_id.as_str(), *freeform, input.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(
            done,
            vec![
                ("call_1", false, "{\"command\": \"echo größe\"}"),
                ("call_2", true, "*** Begin Patch\n+\"q\" 🙂\n*** End Patch")
            ],
            "{kind}"
        );
        let usage = events.iter().find_map(|e| match e {
            ModelEvent::Usage(usage) => Some(*usage),
            _ => None,
        });
        let expected = match kind {
            // Only Anthropic reports cache writes; Chat and Responses report cached input.
            ProviderKind::AnthropicApi => Usage {
                input: 100,
                cached_input: 60,
                cache_write: 20,
                cache_write_1h: 5,
                output: 30,
                reasoning: 0,
            },
            _ => Usage {
                input: 100,
                cached_input: 60,
                output: 30,
                ..Usage::default()
            },
        };
        assert_eq!(usage, Some(expected), "{kind}");
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Stop {
                reason: StopReason::EndTurn,
                empty: false
            }),
            "{kind}"
        );
        if kind == ProviderKind::OpenAiApi {
            assert!(
                events
                    .iter()
                    .any(|e| matches!(e, ModelEvent::ReasoningDelta { title: Some(t), .. } if t == "Plan"))
            );
            assert!(events.iter().any(|e| matches!(
                e,
                ModelEvent::ReasoningDone {
                    carry: Some(ReasoningCarry::OpenAi {
                        encrypted_content: Some(_),
                        ..
                    }),
                    ..
                }
            )));
        }
        if kind == ProviderKind::AnthropicApi {
            assert!(events.iter().any(|e| matches!(
                e,
                ModelEvent::ReasoningDone {
                    carry: Some(ReasoningCarry::Anthropic { .. }),
                    ..
                }
            )));
        }
    }
}

#[tokio::test]
async fn requests_carry_each_formats_headers_and_body() {
    let f = fixture(vec![reply(vec![ReplyEvent::Text("a".into())]); 3]).await;
    let mut req = request();
    req.effort = Some("high".into());
    req.max_output = Some(8_000);
    req.tools = vec![
        Tool::Function {
            name: "shell".into(),
            description: "Run".into(),
            parameters: json!({"type": "object"}),
        },
        Tool::Freeform {
            name: "apply_patch".into(),
            description: "Patch".into(),
        },
    ];
    req.history.push(HistoryItem::ToolCall {
        call_id: "c1".into(),
        tool: "apply_patch".into(),
        freeform: true,
        input: "*** Begin Patch".into(),
    });
    req.history.push(HistoryItem::ToolOutput {
        call_id: "c1".into(),
        output: "done".into(),
        is_error: false,
    });
    for kind in KINDS {
        let events = collect(&f.provider(kind, fast_retry(1)), &req).await;
        assert!(
            matches!(events.last(), Some(Ok(ModelEvent::Stop { .. }))),
            "{kind}: {events:?}"
        );
    }
    let requests = f.server.requests();
    assert_eq!(requests.len(), 3);

    let openai = &requests[0];
    assert_eq!(openai.path, "/v1/responses");
    assert_eq!(openai.header("authorization"), Some("Bearer sk-proj-...a1b2"));
    assert_eq!(openai.body["stream"], json!(true));
    assert_eq!(openai.body["store"], json!(false));
    assert_eq!(openai.body["instructions"], json!("Be brief."));
    assert_eq!(openai.body["reasoning"], json!({"effort": "high", "summary": "auto"}));
    assert_eq!(openai.body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(openai.body["max_output_tokens"], json!(8_000));
    assert_eq!(openai.body["tools"][1]["type"], json!("custom"));
    assert_eq!(openai.body["input"][1]["type"], json!("custom_tool_call"));
    assert_eq!(
        openai.body["input"][2],
        json!({"type": "custom_tool_call_output", "call_id": "c1", "output": "done"})
    );

    let anthropic = &requests[1];
    assert_eq!(anthropic.path, "/v1/messages");
    assert_eq!(anthropic.header("x-api-key"), Some("sk-ant-...c3d4"));
    assert_eq!(anthropic.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(anthropic.header("authorization"), None);
    let body = &anthropic.body;
    assert_eq!(body["max_tokens"], json!(8_000));
    // high is 32,000 tokens of thinking, cut below max_tokens.
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 7_999}));
    assert_eq!(body["system"][0]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(body["tools"][1]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(body["tools"][1]["input_schema"]["required"], json!(["input"]));
    assert!(body["tools"][0].get("cache_control").is_none());
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages[1]["content"][0]["input"], json!({"input": "*** Begin Patch"}));
    let last = &messages[2]["content"][0];
    assert_eq!(last["type"], json!("tool_result"));
    assert_eq!(last["cache_control"], json!({"type": "ephemeral"}));

    let chat = &requests[2];
    assert_eq!(chat.path, "/v1/chat/completions");
    assert_eq!(
        chat.header("authorization"),
        None,
        "no key for a compat server that wants none"
    );
    assert_eq!(chat.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        chat.body["messages"][0],
        json!({"role": "system", "content": "Be brief."})
    );
    assert_eq!(
        chat.body["messages"][2]["tool_calls"][0]["function"]["arguments"],
        json!("{\"input\":\"*** Begin Patch\"}")
    );
    assert_eq!(
        chat.body["messages"][3],
        json!({"role": "tool", "tool_call_id": "c1", "content": "done"})
    );
}
