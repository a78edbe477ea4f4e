//! Retries, refused keys, context overflow, stop reasons, timeouts and broken servers.

use super::*;

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
        let step = Reply::default().with_stop(stop).into();
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
