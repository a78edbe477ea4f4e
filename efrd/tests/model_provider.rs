//! Providers end to end: real HTTP over loopback against the scripted model server, in each wire format — requests
//! as sent, events as parsed, retries (429 with Retry-After, 500, 529, a broken connection), a 401 that is not
//! retried and marks the key refused, context overflow, and streams cut after output.

// Test helpers outside #[test] functions may panic too (team rule: tests may unwrap).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use efr_test_support::scripted::{
    HttpError, Reply, ReplyEvent, Script, ScriptToolCall, ScriptUsage, ScriptedModel, Step,
};
use efrd::model::{
    Auth, EnvKeys, HistoryItem, KeyStore, ModelError, ModelEvent, ModelRequest, Provider, ProviderConfig, ProviderKind,
    ReasoningCarry, RetryConfig, StopReason, Tool, Usage,
};
use futures::StreamExt;
use serde_json::json;

const OPENAI_KEY: &str = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789a1b2";
const ANTHROPIC_KEY: &str = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789c3d4";

fn fast_retry(max_attempts: u32) -> RetryConfig {
    RetryConfig {
        max_attempts,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
        max_retry_after: Duration::from_secs(5),
    }
}

struct Fixture {
    server: ScriptedModel,
    keys: Arc<KeyStore>,
    _state: tempfile::TempDir,
}

async fn fixture(steps: Vec<Step>) -> Fixture {
    let server = ScriptedModel::start(Script {
        steps,
        ..Script::default()
    })
    .await
    .expect("server");
    let state = tempfile::tempdir().expect("tempdir");
    let env = EnvKeys::new(Some(OPENAI_KEY.into()), Some(ANTHROPIC_KEY.into()));
    let keys = Arc::new(KeyStore::open(state.path(), env));
    Fixture {
        server,
        keys,
        _state: state,
    }
}

impl Fixture {
    fn provider(&self, kind: ProviderKind, retry: RetryConfig) -> Provider {
        let mut config = ProviderConfig::new(kind, self.server.base_url());
        config.retry = retry;
        config.idle_timeout = Duration::from_secs(10);
        let auth = if kind == ProviderKind::OpenAiCompat {
            Auth::None
        } else {
            Auth::Store(Arc::clone(&self.keys))
        };
        Provider::new(config, auth).expect("provider")
    }
}

async fn collect(provider: &Provider, request: &ModelRequest) -> Vec<Result<ModelEvent, ModelError>> {
    provider.stream(request).collect().await
}

fn request() -> ModelRequest {
    let mut request = ModelRequest::new("model-x");
    request.instructions = "Be brief.".into();
    request.history.push(HistoryItem::UserText { text: "Hi".into() });
    request
}

fn reply(events: Vec<ReplyEvent>) -> Step {
    Step::Reply(Reply {
        events,
        ..Reply::default()
    })
}

fn text(events: &[Result<ModelEvent, ModelError>]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Ok(ModelEvent::TextDelta { delta, .. }) => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

fn error(status: u16) -> Step {
    Step::HttpError(HttpError {
        status,
        ..HttpError::default()
    })
}

const KINDS: [ProviderKind; 3] = [
    ProviderKind::OpenAiApi,
    ProviderKind::AnthropicApi,
    ProviderKind::OpenAiCompat,
];

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

#[tokio::test]
async fn retries_429_with_retry_after_then_succeeds() {
    let steps = vec![
        Step::HttpError(HttpError {
            status: 429,
            retry_after: Some("1".into()),
            ..HttpError::default()
        }),
        reply(vec![ReplyEvent::Text("ok".into())]),
    ];
    for kind in [ProviderKind::OpenAiApi, ProviderKind::AnthropicApi] {
        let f = fixture(steps.clone()).await;
        let started = Instant::now();
        let events = collect(&f.provider(kind, fast_retry(3)), &request()).await;
        assert!(
            started.elapsed() >= Duration::from_secs(1),
            "{kind}: Retry-After honoured"
        );
        assert_eq!(text(&events), "ok", "{kind}");
        assert_eq!(f.server.requests().len(), 2, "{kind}");
    }
}

#[tokio::test]
async fn retries_500_529_and_broken_connections() {
    let steps = vec![
        error(500),
        error(529),
        // A connection that breaks before any event is a transport error, retried.
        reply(vec![ReplyEvent::Disconnect]),
        // So is an overloaded error event before any output.
        reply(vec![ReplyEvent::Error {
            kind: "overloaded_error".into(),
            message: "Overloaded".into(),
        }]),
        reply(vec![ReplyEvent::Text("finally".into())]),
    ];
    for kind in KINDS {
        let f = fixture(steps.clone()).await;
        let events = collect(&f.provider(kind, fast_retry(5)), &request()).await;
        assert_eq!(text(&events), "finally", "{kind}: {events:?}");
        assert_eq!(f.server.requests().len(), 5, "{kind}");
        assert_eq!(f.server.steps_left(), 0);
    }
}

#[tokio::test]
async fn retries_stop_after_max_attempts() {
    let f = fixture(vec![
        error(500),
        error(503),
        error(502),
        reply(vec![ReplyEvent::Text("never".into())]),
    ])
    .await;
    let events = collect(&f.provider(ProviderKind::OpenAiApi, fast_retry(3)), &request()).await;
    assert_eq!(events.len(), 1);
    assert!(
        matches!(&events[0], Err(ModelError::Server { status: Some(502), .. })),
        "{events:?}"
    );
    assert_eq!(f.server.requests().len(), 3);
}

#[tokio::test]
async fn retry_after_beyond_the_limit_fails_at_once() {
    let steps = vec![
        Step::HttpError(HttpError {
            status: 429,
            retry_after: Some("3600".into()),
            ..HttpError::default()
        }),
        reply(vec![ReplyEvent::Text("never".into())]),
    ];
    let f = fixture(steps).await;
    let events = collect(&f.provider(ProviderKind::AnthropicApi, fast_retry(3)), &request()).await;
    assert!(
        matches!(&events[..], [Err(ModelError::RateLimited { retry_after: Some(d), .. })] if *d > Duration::from_secs(3000)),
        "{events:?}"
    );
    assert_eq!(f.server.requests().len(), 1);
}

#[tokio::test]
async fn a_401_is_not_retried_and_marks_the_key_refused() {
    for kind in [ProviderKind::OpenAiApi, ProviderKind::AnthropicApi] {
        let f = fixture(vec![error(401), reply(vec![ReplyEvent::Text("never".into())])]).await;
        assert_eq!(f.keys.status(kind).refused_at, None);
        let events = collect(&f.provider(kind, fast_retry(4)), &request()).await;
        assert_eq!(events.len(), 1, "{kind}");
        let Err(error @ ModelError::KeyRefused { provider, .. }) = &events[0] else {
            panic!("{kind}: {events:?}");
        };
        assert_eq!(provider, kind.name());
        assert!(error.to_string().contains("log in again"), "{error}");
        assert_eq!(f.server.requests().len(), 1, "{kind}: a refused key is not retried");
        let status = f.keys.status(kind);
        assert!(status.refused_at.is_some(), "{kind}");
        assert!(status.checked_at.is_some(), "{kind}");
    }
}

#[tokio::test]
async fn context_overflow_is_typed_and_not_retried() {
    let step = Step::HttpError(HttpError {
        status: 400,
        context_overflow: true,
        ..HttpError::default()
    });
    for kind in KINDS {
        let f = fixture(vec![step.clone(), reply(vec![ReplyEvent::Text("never".into())])]).await;
        let events = collect(&f.provider(kind, fast_retry(4)), &request()).await;
        assert!(
            matches!(&events[..], [Err(ModelError::ContextOverflow { .. })]),
            "{kind}: {events:?}"
        );
        assert_eq!(f.server.requests().len(), 1, "{kind}");
    }
}

#[tokio::test]
async fn errors_after_output_end_the_stream_without_retry() {
    let cases = [
        (ReplyEvent::Disconnect, "transport"),
        (ReplyEvent::End, "truncated"),
        (
            ReplyEvent::Error {
                kind: "overloaded_error".into(),
                message: "Overloaded".into(),
            },
            "error event",
        ),
    ];
    for kind in KINDS {
        for (last, what) in &cases {
            let f = fixture(vec![
                reply(vec![
                    ReplyEvent::Text("partial".into()),
                    ReplyEvent::DelayMs(20),
                    last.clone(),
                ]),
                reply(vec![ReplyEvent::Text("never".into())]),
            ])
            .await;
            let events = collect(&f.provider(kind, fast_retry(4)), &request()).await;
            assert_eq!(text(&events), "partial", "{kind} {what}");
            let error = events.last().expect("events").as_ref().expect_err("ends with an error");
            match *what {
                "transport" => assert!(matches!(error, ModelError::Transport { .. }), "{kind}: {error:?}"),
                "truncated" => assert_eq!(error, &ModelError::StreamEnded, "{kind}"),
                _ => assert!(matches!(error, ModelError::Overloaded { .. }), "{kind}: {error:?}"),
            }
            assert_eq!(f.server.requests().len(), 1, "{kind} {what}: no retry after output");
        }
    }
}

#[tokio::test]
async fn stop_reasons_map_per_format() {
    let cases = [
        (ProviderKind::OpenAiApi, "max_tokens", StopReason::MaxTokens),
        (ProviderKind::OpenAiApi, "content_filter", StopReason::ContentFilter),
        (ProviderKind::AnthropicApi, "max_tokens", StopReason::MaxTokens),
        (ProviderKind::AnthropicApi, "refusal", StopReason::Refusal),
        (ProviderKind::AnthropicApi, "pause_turn", StopReason::PauseTurn),
        (ProviderKind::OpenAiCompat, "max_tokens", StopReason::MaxTokens),
        (ProviderKind::OpenAiCompat, "content_filter", StopReason::ContentFilter),
    ];
    for (kind, stop, expected) in cases {
        let step = Step::Reply(Reply {
            stop: Some(stop.into()),
            ..Reply::default()
        });
        let f = fixture(vec![step]).await;
        let events = collect(&f.provider(kind, fast_retry(1)), &request()).await;
        assert_eq!(
            events,
            vec![Ok(ModelEvent::Stop {
                reason: expected,
                empty: true
            })],
            "{kind} {stop}"
        );
    }
    // A refusal part (Responses, Chat) is text with the refusal stop.
    for kind in [ProviderKind::OpenAiApi, ProviderKind::OpenAiCompat] {
        let f = fixture(vec![reply(vec![ReplyEvent::Refusal("I can't help with that.".into())])]).await;
        let events = collect(&f.provider(kind, fast_retry(1)), &request()).await;
        assert_eq!(text(&events), "I can't help with that.");
        assert_eq!(
            events.last(),
            Some(&Ok(ModelEvent::Stop {
                reason: StopReason::Refusal,
                empty: false
            })),
            "{kind}"
        );
    }
}

#[tokio::test]
async fn a_missing_key_fails_before_any_request() {
    let f = fixture(Vec::new()).await;
    let state = tempfile::tempdir().expect("tempdir");
    let empty = Arc::new(KeyStore::open(state.path(), EnvKeys::default()));
    let provider = Provider::new(
        ProviderConfig::new(ProviderKind::AnthropicApi, f.server.base_url()),
        Auth::Store(empty),
    )
    .expect("provider");
    let events = collect(&provider, &request()).await;
    assert_eq!(
        events,
        vec![Err(ModelError::MissingKey {
            provider: "anthropic-api".into()
        })]
    );
    assert!(f.server.requests().is_empty());
}

#[tokio::test]
async fn a_silent_provider_times_out() {
    let f = fixture(vec![reply(vec![
        ReplyEvent::DelayMs(2_000),
        ReplyEvent::Text("late".into()),
    ])])
    .await;
    let mut config = ProviderConfig::new(ProviderKind::OpenAiCompat, format!("{}/v1/", f.server.base_url()));
    config.retry = fast_retry(1);
    config.idle_timeout = Duration::from_millis(300);
    let provider = Provider::new(config, Auth::None).expect("provider");
    let events = collect(&provider, &request()).await;
    // The first chunk (role) came at once; then nothing for longer than the idle limit.
    assert!(
        matches!(events.last(), Some(Err(ModelError::Transport { message })) if message.contains("no answer")),
        "{events:?}"
    );
    // A base URL that ends with /v1/ is not doubled.
    assert_eq!(f.server.requests()[0].path, "/v1/chat/completions");
}

#[tokio::test]
async fn a_server_that_is_gone_is_a_transport_error() {
    let server = ScriptedModel::start(Script::default()).await.expect("server");
    let base = server.base_url();
    drop(server);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut config = ProviderConfig::new(ProviderKind::OpenAiCompat, base);
    config.retry = fast_retry(2);
    let provider = Provider::new(config, Auth::None).expect("provider");
    let events = collect(&provider, &request()).await;
    assert!(matches!(&events[..], [Err(ModelError::Transport { .. })]), "{events:?}");
}

#[test]
fn reasoning_goes_back_only_to_the_provider_that_made_it() {
    use efrd::model::anthropic::{self, AnthropicOptions};
    use efrd::model::{compat, openai};
    let mut req = request();
    req.history.push(HistoryItem::Reasoning {
        text: "thinking".into(),
        carry: Some(ReasoningCarry::Anthropic {
            signature: "sig".into(),
        }),
    });
    req.history.push(HistoryItem::Reasoning {
        text: "summary".into(),
        carry: Some(ReasoningCarry::OpenAi {
            id: Some("rs_1".into()),
            summary: vec!["summary".into()],
            encrypted_content: Some("enc".into()),
        }),
    });
    req.history.push(HistoryItem::ToolCall {
        call_id: "t1".into(),
        tool: "shell".into(),
        freeform: false,
        input: "{\"command\":\"ls\"}".into(),
    });
    req.history.push(HistoryItem::ToolOutput {
        call_id: "t1".into(),
        output: "a.txt".into(),
        is_error: true,
    });

    let body = anthropic::request_body(&req, AnthropicOptions::default());
    let assistant = &body["messages"][1]["content"];
    assert_eq!(
        assistant[0],
        json!({"type": "thinking", "thinking": "thinking", "signature": "sig"})
    );
    assert_eq!(
        assistant[1],
        json!({"type": "tool_use", "id": "t1", "name": "shell", "input": {"command": "ls"}})
    );
    assert_eq!(
        assistant.as_array().map(Vec::len),
        Some(2),
        "OpenAI's reasoning is not sent to Anthropic"
    );
    assert_eq!(body["messages"][2]["content"][0]["is_error"], json!(true));

    let body = openai::request_body(&req);
    let input = body["input"].as_array().expect("input");
    assert_eq!(
        input[1],
        json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "summary"}], "encrypted_content": "enc"})
    );
    assert_eq!(input[2]["type"], json!("function_call"));
    assert_eq!(input[3]["type"], json!("function_call_output"));
    assert_eq!(input.len(), 4, "Anthropic's thinking is not sent to OpenAI");

    let body = compat::request_body(&req);
    assert_eq!(
        body["messages"].as_array().map(Vec::len),
        Some(4),
        "system, user, assistant with the call, tool"
    );
}

#[test]
fn anthropic_thinking_budget_fits_under_max_tokens() {
    use efrd::model::anthropic::{self, AnthropicOptions};
    let mut req = request();
    req.effort = Some("high".into());
    let body = anthropic::request_body(&req, AnthropicOptions::default());
    assert_eq!(body["max_tokens"], json!(anthropic::DEFAULT_MAX_TOKENS));
    assert_eq!(
        body["thinking"]["budget_tokens"],
        json!(anthropic::DEFAULT_MAX_TOKENS - 1)
    );
    req.effort = Some("low".into());
    assert_eq!(
        anthropic::request_body(&req, AnthropicOptions::default())["thinking"]["budget_tokens"],
        json!(4_000)
    );
    // Too small an output limit leaves no room for thinking; so does an effort that means none.
    req.max_output = Some(1_000);
    assert!(
        anthropic::request_body(&req, AnthropicOptions::default())
            .get("thinking")
            .is_none()
    );
    req.max_output = Some(0);
    assert!(
        anthropic::request_body(&req, AnthropicOptions::default())
            .get("thinking")
            .is_none()
    );
    req.max_output = None;
    req.effort = Some("minimal".into());
    assert!(
        anthropic::request_body(&req, AnthropicOptions::default())
            .get("thinking")
            .is_none()
    );
    // One-hour caching covers the system prompt; the newest turn stays at five minutes.
    let body = anthropic::request_body(&req, AnthropicOptions { cache_1h: true });
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
}
