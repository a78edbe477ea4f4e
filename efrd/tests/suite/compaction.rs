//! Compaction with a real efrd and the scripted model server (docs/context.md, "Compaction"): automatic in a long
//! turn and at the next prompt, manual with a focus, after each provider's overflow error, a summary call that fails,
//! a 200-turn conversation, and a SIGKILL during a compaction.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::path::Path;
use std::time::Duration;

use efr_protocol::ErrorCode;
use efr_protocol::wire::ConversationContextResult;
use efr_test_support::daemon::TestDaemon;
use efr_test_support::scripted::{HttpError, Reply, ReplyEvent, Script, ScriptedModel, Step, When};
use serde_json::{Value, json};

use crate::common::tools::{prompt_to, shell_call, start, text};
use crate::common::{command_id, efrd_binary, events_through, events_until, project, subscribe};

/// The text that marks a summary's request (efrd/src/prompt/text/compact.md).
const ASK: &str = "<compaction_request>";

/// The summary the scripted model writes: it keeps the user's first constraint, as the request asks.
const SUMMARY: &str = "## Goals and constraints\n- \"Never edit vendor/ (PLANTED-CONSTRAINT-7)\"\n\n## Plan\n- go on";

/// A model server that answers every summary's request with [`SUMMARY`] and the other calls with `steps`, counting
/// usage from the request's size.
async fn server(steps: Vec<Step>) -> ScriptedModel {
    ScriptedModel::start(Script {
        steps,
        when: vec![When {
            contains: ASK.into(),
            step: Step::Reply(Reply::text(SUMMARY)),
        }],
        usage_from_body: true,
        models: vec!["gpt-5".into()],
        ..Script::default()
    })
    .await
    .expect("scripted model server")
}

/// efrd with `provider` and its model `model` whose context window is `window` tokens.
fn daemon(home: &Path, server: &ScriptedModel, provider: &str, model: &str, window: u64) -> TestDaemon {
    let url = server.base_url();
    let config = format!(
        "[model]\nprovider = \"{provider}\"\nmodel = \"{model}\"\n\n[[model.extra_models]]\nid = \"{model}\"\n\
         context_window = {window}\n\n\
         [providers.openai-api]\nbase_url = \"{url}\"\nretry = {{ max_attempts = 1 }}\n\n\
         [providers.anthropic-api]\nbase_url = \"{url}\"\nretry = {{ max_attempts = 1 }}\n\n\
         [providers.openai-compat]\nbase_url = \"{url}\"\nkey_required = false\nretry = {{ max_attempts = 1 }}\n"
    );
    TestDaemon::start(
        efrd_binary(),
        home,
        Some(&config),
        &[
            ("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2"),
            ("ANTHROPIC_API_KEY", "sk-ant-testkey0000000000000000c3d4"),
        ],
    )
    .expect("efrd starts")
}

/// The model calls that are not summaries, and the summaries' requests, as sent.
fn split(server: &ScriptedModel) -> (Vec<String>, Vec<String>) {
    let bodies: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.body.to_string())
        .collect();
    bodies.into_iter().partition(|body| !body.contains(ASK))
}

/// A model server that answers `answers` in order and every summary's request after 30 s.
async fn slow_summaries(answers: &[&str]) -> ScriptedModel {
    let slow = Reply::of(vec![ReplyEvent::DelayMs(30_000), ReplyEvent::Text(SUMMARY.into())]);
    ScriptedModel::start(Script {
        steps: answers.iter().map(|answer| Step::Reply(text(answer))).collect(),
        when: vec![When {
            contains: ASK.into(),
            step: Step::Reply(slow),
        }],
        models: vec!["gpt-5".into()],
        ..Script::default()
    })
    .await
    .expect("scripted model server")
}

/// Waits (up to 20 s) until a summary's request reached `server`.
async fn summary_asked(server: &ScriptedModel) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while split(server).1.is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the summary's request never came"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The events of kind `kind`.
fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

/// A shell call whose output is about 12 KB, marked with `mark`.
fn big_output(id: &str, mark: &str) -> Step {
    Step::Reply(shell_call(id, &format!("echo {mark}; seq 100000 102400")))
}

async fn context_of(client: &mut efr_test_support::client::Client, conversation: &str) -> ConversationContextResult {
    let value = client
        .ok("conversation.context", json!({ "conversation_id": conversation }))
        .await
        .unwrap();
    serde_json::from_value(value).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_compaction_fires_in_a_long_turn_and_at_the_next_prompt() {
    let home = tempfile::tempdir().unwrap();
    let cwd = project();
    let mut steps: Vec<Step> = (1..=8)
        .map(|n| big_output(&format!("c{n}"), &format!("MARK-c{n}")))
        .collect();
    steps.push(Step::Reply(text("done one")));
    steps.push(Step::Reply(text("done two")));
    let server = server(steps).await;
    let window = 8_000;
    let efrd = daemon(home.path(), &server, "openai-api", "gpt-5", window);
    let mut client = efrd.client().await.unwrap();
    let (sent, conversation, sub) = start(&mut client, cwd.path(), "auto", "Count. Never edit vendor/.").await;
    let first_turn = sent["turn_id"].as_str().unwrap().to_owned();
    let events = events_until(&mut client, sub, "turn_completed").await;
    let compactions = of_kind(&events, "conversation_compacted");
    let sizes: Vec<usize> = split(&server).0.iter().map(String::len).collect();
    let kinds: Vec<&Value> = events.iter().map(|e| &e["kind"]).collect();
    assert_eq!(
        compactions.len(),
        1,
        "one compaction in the long turn: {sizes:?} {kinds:?}"
    );
    let compacted = compactions[0];
    assert_eq!(compacted["trigger"], "auto");
    assert_eq!(compacted["turn_id"], first_turn.as_str());
    assert_eq!(compacted["through_turn"], first_turn.as_str());
    assert_eq!(compacted["summary"], SUMMARY);
    assert!(compacted["tokens_before"].as_u64().unwrap() >= compacted["limit"].as_u64().unwrap());
    assert!(compacted["tokens_after"].as_u64().unwrap() < compacted["tokens_before"].as_u64().unwrap() / 2);
    assert!(compacted["fresh"].as_str().unwrap().starts_with("<environment>"));
    // The calls after it carry the summary and the prompt, not the outputs it replaced.
    let (calls, summaries) = split(&server);
    assert_eq!(summaries.len(), 1);
    assert!(summaries[0].contains("MARK-c1") && summaries[0].contains("Never edit vendor/"));
    let after = calls
        .iter()
        .find(|body| body.contains("conversation_summary"))
        .expect("a call after");
    assert!(!after.contains("MARK-c1") && after.contains("Never edit vendor/"));
    // A second prompt that fills the window compacts before its first model call.
    let big = "Now read this and answer. ".repeat(640);
    let second = prompt_to(&mut client, Some(&conversation), cwd.path(), "auto", &big).await;
    let events = events_until(&mut client, sub, "turn_completed").await;
    let compactions = of_kind(&events, "conversation_compacted");
    assert_eq!(compactions.len(), 1, "one compaction at the next prompt");
    assert_eq!(compactions[0]["turn_id"], second["turn_id"]);
    assert_eq!(compactions[0]["through_turn"], first_turn.as_str());
    let position = |kind: &str| events.iter().position(|e| e["kind"] == kind).unwrap();
    assert!(position("conversation_compacted") < position("assistant_message_completed"));
    // Every model call stayed under the window (4 bytes a token, as efrd estimates).
    let (calls, summaries) = split(&server);
    for body in calls.iter().chain(&summaries) {
        assert!((body.len() as u64) / 4 < window, "a request of {} bytes", body.len());
    }
    let context = context_of(&mut client, &conversation).await;
    assert_eq!(context.compactions.len(), 2);
    assert!(context.model.auto && context.model.window == window);
    let summary = context
        .parts
        .iter()
        .find(|p| p.kind == efr_protocol::wire::ContextPartKind::Summary)
        .unwrap();
    assert!(summary.bytes > SUMMARY.len() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manual_compaction_carries_the_focus_and_keeps_the_prefix_of_the_requests() {
    let home = tempfile::tempdir().unwrap();
    let cwd = project();
    let steps = ["first answer", "second answer", "third answer"]
        .into_iter()
        .map(|t| Step::Reply(text(t)))
        .collect();
    let server = server(steps).await;
    let efrd = daemon(home.path(), &server, "openai-api", "gpt-5", 200_000);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, sub) = start(&mut client, cwd.path(), "cautious", "PROMPT-ONE").await;
    events_until(&mut client, sub, "turn_completed").await;
    prompt_to(&mut client, Some(&conversation), cwd.path(), "cautious", "PROMPT-TWO").await;
    events_until(&mut client, sub, "turn_completed").await;

    let command = command_id();
    let params = json!({"command_id": command, "conversation_id": conversation, "focus": "FOCUS-ON-THE-PARSER"});
    let result = client.ok("conversation.compact", params.clone()).await.unwrap();
    let compaction = &result["compaction"];
    assert_eq!(compaction["trigger"], "manual");
    assert_eq!(compaction["focus"], "FOCUS-ON-THE-PARSER");
    assert_eq!(
        compaction["kept_turns"], 1,
        "the newest turn stays whole; the older one is summarised"
    );
    let events = events_through(&mut client, sub, "conversation_compacted").await;
    let event = events.last().unwrap();
    assert_eq!(event["seq"], result["seq"]);
    assert!(event["turn_id"].is_null());
    // The same command id again: the stored outcome, no second compaction.
    assert_eq!(client.ok("conversation.compact", params).await.unwrap(), result);

    prompt_to(&mut client, Some(&conversation), cwd.path(), "cautious", "PROMPT-THREE").await;
    events_until(&mut client, sub, "turn_completed").await;
    let (calls, summaries) = split(&server);
    assert_eq!(summaries.len(), 1);
    assert!(summaries[0].contains("FOCUS-ON-THE-PARSER") && summaries[0].contains("PROMPT-ONE"));
    let last = calls.last().unwrap();
    assert!(last.contains("conversation_summary") && last.contains("PROMPT-TWO") && !last.contains("PROMPT-ONE"));
    // The prefix (instructions and tools) is the same bytes in every request, the summary's included; the summary's
    // request starts its input with the items of the call before it.
    let parsed: Vec<Value> = calls
        .iter()
        .chain(&summaries)
        .map(|b| serde_json::from_str(b).unwrap())
        .collect();
    for body in &parsed {
        assert_eq!(body["instructions"], parsed[0]["instructions"]);
        assert_eq!(body["tools"], parsed[0]["tools"]);
    }
    let before: Value = serde_json::from_str(&calls[1]).unwrap();
    let summary: Value = serde_json::from_str(&summaries[0]).unwrap();
    let before = before["input"].as_array().unwrap();
    assert_eq!(
        summary["input"].as_array().unwrap()[..before.len() - 1],
        before[..before.len() - 1]
    );

    // Bad input: an unknown conversation, a conversation whose only turn is the running one.
    let unknown = json!({"command_id": command_id(), "conversation_id": uuid::Uuid::new_v4()});
    let error = client.call("conversation.compact", unknown).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::NotFound);
    let missing = json!({"conversation_id": conversation});
    let error = client.call("conversation.compact", missing).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overflow_of_each_provider_compacts_and_retries_once_then_fails_clearly() {
    for (provider, model) in [
        ("openai-api", "gpt-5"),
        ("anthropic-api", "claude-sonnet-4-5"),
        ("openai-compat", "qwen3-coder"),
    ] {
        let overflow = || {
            Step::HttpError(HttpError {
                status: 400,
                context_overflow: true,
                ..HttpError::default()
            })
        };
        let steps = vec![
            Step::Reply(text("one")),
            overflow(),
            Step::Reply(text("after the compaction")),
            overflow(),
            overflow(),
        ];
        let server = server(steps).await;
        let home = tempfile::tempdir().unwrap();
        let cwd = project();
        let efrd = daemon(home.path(), &server, provider, model, 100_000);
        let mut client = efrd.client().await.unwrap();
        let (_, conversation, sub) = start(&mut client, cwd.path(), "cautious", "PROMPT-ONE").await;
        events_until(&mut client, sub, "turn_completed").await;
        prompt_to(&mut client, Some(&conversation), cwd.path(), "cautious", "PROMPT-TWO").await;
        let events = events_through(&mut client, sub, "turn_completed").await;
        let compacted = of_kind(&events, "conversation_compacted");
        assert_eq!(compacted.len(), 1, "{provider}: {events:#?}");
        assert_eq!(compacted[0]["trigger"], "overflow", "{provider}");
        assert_eq!(
            of_kind(&events, "assistant_message_completed")[0]["text"],
            "after the compaction"
        );

        prompt_to(&mut client, Some(&conversation), cwd.path(), "cautious", "PROMPT-THREE").await;
        let events = events_through(&mut client, sub, "turn_failed").await;
        assert_eq!(
            of_kind(&events, "conversation_compacted").len(),
            1,
            "{provider}: one retry only"
        );
        let failed = events.last().unwrap();
        assert_eq!(failed["error"]["code"], "too_large", "{provider}");
        let message = failed["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("even after a compaction") && message.contains("efr compact --focus"),
            "{provider}: {message}"
        );
        let (calls, _) = split(&server);
        assert_eq!(
            calls.len(),
            5,
            "{provider}: a call, a retry, then two in the failing turn"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_summary_call_leaves_the_conversation_usable() {
    let home = tempfile::tempdir().unwrap();
    let cwd = project();
    let server = ScriptedModel::start(Script {
        steps: vec![Step::Reply(text("one")), Step::Reply(text("two"))],
        when: vec![When {
            contains: ASK.into(),
            step: Step::HttpError(HttpError {
                status: 500,
                ..HttpError::default()
            }),
        }],
        models: vec!["gpt-5".into()],
        ..Script::default()
    })
    .await
    .unwrap();
    let efrd = daemon(home.path(), &server, "openai-api", "gpt-5", 200_000);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, sub) = start(&mut client, cwd.path(), "cautious", "PROMPT-ONE").await;
    events_until(&mut client, sub, "turn_completed").await;
    let params = json!({"command_id": command_id(), "conversation_id": conversation});
    let error = client.call("conversation.compact", params).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Unavailable);
    assert!(
        error.message.contains("the conversation is as it was"),
        "{}",
        error.message
    );
    prompt_to(&mut client, Some(&conversation), cwd.path(), "cautious", "PROMPT-TWO").await;
    let events = events_until(&mut client, sub, "turn_completed").await;
    assert!(of_kind(&events, "conversation_compacted").is_empty());
    let (calls, _) = split(&server);
    assert!(
        calls.last().unwrap().contains("PROMPT-ONE"),
        "the whole history is sent"
    );
    assert!(context_of(&mut client, &conversation).await.compactions.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_hundred_turn_conversation_stays_under_the_window_and_keeps_the_first_constraint() {
    const TURNS: usize = 200;
    let home = tempfile::tempdir().unwrap();
    let cwd = project();
    let answer = "Done; the change is in place and the tests pass. ".repeat(20);
    let steps = (0..TURNS).map(|_| Step::Reply(text(&answer))).collect();
    let server = server(steps).await;
    let window = 12_000;
    let efrd = daemon(home.path(), &server, "openai-api", "gpt-5", window);
    let mut client = efrd.client().await.unwrap();
    let first = "Rule for the whole session: Never edit vendor/ (PLANTED-CONSTRAINT-7). Start with step 0.";
    let (_, conversation, sub) = start(&mut client, cwd.path(), "cautious", first).await;
    events_until(&mut client, sub, "turn_completed").await;
    let filler = "Go on with the next step, and say what changed in the files and why. ".repeat(12);
    for n in 1..TURNS {
        let text = format!("Step {n}. {filler}");
        prompt_to(&mut client, Some(&conversation), cwd.path(), "cautious", &text).await;
        let events = events_through(&mut client, sub, "turn_completed").await;
        assert!(of_kind(&events, "turn_failed").is_empty(), "turn {n}: {events:#?}");
    }
    let (calls, summaries) = split(&server);
    assert_eq!(calls.len(), TURNS);
    assert!(summaries.len() >= 3, "{} compactions", summaries.len());
    for body in calls.iter().chain(&summaries) {
        assert!((body.len() as u64) / 4 < window, "a request of {} bytes", body.len());
    }
    for (n, summary) in summaries.iter().enumerate() {
        assert!(
            summary.contains("PLANTED-CONSTRAINT-7"),
            "summary request {n} lost the first constraint"
        );
    }
    assert!(
        !calls.last().unwrap().contains("Start with step 0"),
        "the first prompt itself is summarised"
    );
    let context = context_of(&mut client, &conversation).await;
    assert_eq!(context.compactions.len(), summaries.len());
    assert!(context.estimate.tokens < context.model.trigger);
}

#[test]
fn a_sigkill_during_a_compaction_loses_nothing_and_leaves_no_half_state() {
    crate::common::runtime().block_on(async {
        let home = tempfile::tempdir().unwrap();
        let cwd = project();
        let server = slow_summaries(&["one", "two", "three"]).await;
        let mut efrd = daemon(home.path(), &server, "openai-api", "gpt-5", 200_000);
        let mut client = efrd.client().await.unwrap();
        let (_, conversation, sub) = start(&mut client, cwd.path(), "cautious", "PROMPT-ONE").await;
        events_until(&mut client, sub, "turn_completed").await;
        let mut compacting = efrd.client().await.unwrap();
        let params = json!({"command_id": command_id(), "conversation_id": conversation});
        let pending = tokio::spawn(async move { compacting.call("conversation.compact", params).await });
        summary_asked(&server).await;
        efrd.kill().unwrap();
        assert!(pending.await.unwrap().is_err(), "the connection ends with efrd");
        efrd.restart().unwrap();
        let mut client = efrd.client().await.unwrap();
        let context = context_of(&mut client, &conversation).await;
        assert!(
            context.compactions.is_empty(),
            "not compacted: the event was never committed"
        );
        let log = crate::common::whole_log(&mut client, &conversation).await;
        assert!(of_kind(&log, "conversation_compacted").is_empty());
        assert_eq!(of_kind(&log, "turn_completed").len(), 1);
        let (sub, _) = subscribe(
            &mut client,
            &conversation,
            Some(log.last().unwrap()["seq"].as_u64().unwrap()),
        )
        .await;
        prompt_to(&mut client, Some(&conversation), cwd.path(), "cautious", "PROMPT-TWO").await;
        events_until(&mut client, sub, "turn_completed").await;
        let (calls, _) = split(&server);
        assert!(calls.last().unwrap().contains("PROMPT-ONE") && calls.last().unwrap().contains("PROMPT-TWO"));
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_during_a_compaction_stops_the_turn_at_once_and_records_no_compaction() {
    let home = tempfile::tempdir().unwrap();
    let cwd = project();
    let server = slow_summaries(&["one", "two"]).await;
    let efrd = daemon(home.path(), &server, "openai-api", "gpt-5", 8_000);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, sub) = start(&mut client, cwd.path(), "cautious", "PROMPT-ONE").await;
    events_until(&mut client, sub, "turn_completed").await;
    // A prompt past the trigger: the turn compacts before its first model call, and the summary takes 30 s.
    let big = "Now read this and answer. ".repeat(1_000);
    let sent = prompt_to(&mut client, Some(&conversation), cwd.path(), "cautious", &big).await;
    summary_asked(&server).await;
    let started = std::time::Instant::now();
    let params = json!({"command_id": command_id(), "conversation_id": conversation, "turn_id": sent["turn_id"]});
    client.ok("turn.interrupt", params).await.unwrap();
    let events = events_through(&mut client, sub, "turn_interrupted").await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the interrupt did not wait for the summary"
    );
    assert!(of_kind(&events, "conversation_compacted").is_empty());
    assert!(context_of(&mut client, &conversation).await.compactions.is_empty());
}
