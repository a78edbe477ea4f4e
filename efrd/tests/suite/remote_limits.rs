//! What a proven phone may do, through a real efrd inside the test's network namespaces (`remote_setup`): its
//! prompts run at most cautious and name no tty; input.respond, turn.undo, admin methods and allow_always are
//! refused; a local_only question stays open for the terminal; and a phone that drops mid-turn resumes after the
//! last seq it saw.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::time::Duration;

use efr_test_support::client::Client;
use serde_json::{Value, json};

use super::remote_setup::{PHONE, call, inside, open, pair_phone, prove, tailnet_with, ws_events};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proven_phone_keeps_to_its_limits() {
    let net = tailnet_with(Some(vec![
        // A line that always asks in cautious (the network), wherever its reads may run.
        crate::common::tools::shell_call("call_q", "curl -s -m 2 http://127.0.0.1:9/ || true"),
        crate::common::tools::text("done"),
    ]))
    .await;
    let mut terminal = Client::connect_raw(&net.daemon.socket()).await.unwrap();
    let hello = terminal
        .ok("hello", json!({"protocol": 1, "client": {"name": "t", "version": "1"}}))
        .await
        .unwrap();
    let daemon_id = hello["daemon_id"].as_str().unwrap().to_owned();
    let (key, device_id) = pair_phone(&mut terminal, &net.phone).await;
    let answers = inside(&net.phone, move || async move {
        let mut ws = open(PHONE).await.unwrap();
        let proved = prove(&mut ws, &key, &device_id, &daemon_id).await;
        assert!(proved.get("item").is_some(), "{proved}");
        let cid = || crate::common::command_id();
        let tty = json!({"command_id": cid(), "text": "hi", "context": {"cwd": "/tmp", "tty": "/dev/pts/3"}});
        let tty = call(&mut ws, 3, "prompt.send", tty).await;
        let sent = json!({"command_id": cid(), "text": "run it", "settings": {"mode": "auto"}});
        let sent = call(&mut ws, 4, "prompt.send", sent).await;
        let conversation = sent["item"]["conversation_id"].clone();
        let input = json!({"conversation_id": conversation, "call_id": "call_q", "text": "y"});
        let input = call(&mut ws, 5, "input.respond", input).await;
        let undo = call(
            &mut ws,
            6,
            "turn.undo",
            json!({"command_id": cid(), "conversation_id": conversation}),
        )
        .await;
        let admin = call(&mut ws, 7, "admin.status", json!({})).await;
        let host = call(&mut ws, 10, "sandbox.explain_host", json!({"host": "github.com"})).await;
        // The question of call_q: allow_always is refused, and the question stays open for an allow.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let always = loop {
            let params = json!({"command_id": cid(), "conversation_id": conversation, "call_id": "call_q",
                                "decision": "allow_always"});
            let answer = call(&mut ws, 8, "approval.respond", params).await;
            if answer["error"]["code"] != "not_found" || std::time::Instant::now() > deadline {
                break answer;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let params = json!({"command_id": cid(), "conversation_id": conversation, "call_id": "call_q",
                            "decision": "allow"});
        let allow = call(&mut ws, 9, "approval.respond", params).await;
        (tty, sent, input, undo, admin, host, always, allow)
    })
    .await;
    let (tty, sent, input, undo, admin, host, always, allow) = answers;
    assert_eq!(tty["error"]["code"], "invalid", "{tty}");
    assert_eq!(
        sent["item"]["settings"]["mode"], "cautious",
        "a phone's turn runs at most cautious: {sent}"
    );
    // What was capped, and why: in the result and in turn_started.
    let fallback = json!({"asked": "auto", "reason": "a turn from a phone runs with at most cautious"});
    assert_eq!(sent["item"]["settings"]["fallback"], fallback, "{sent}");
    let conversation = sent["item"]["conversation_id"].as_str().unwrap();
    let (id, _) = crate::common::subscribe(&mut terminal, conversation, Some(0)).await;
    let events = crate::common::events_through(&mut terminal, id, "turn_started").await;
    let started = events.last().unwrap();
    assert_eq!(started["settings"]["fallback"], fallback, "{started}");
    for refused in [&input, &undo, &admin, &host, &always] {
        assert_eq!(refused["error"]["code"], "forbidden", "{refused}");
    }
    assert!(allow.get("item").is_some(), "the question stayed open: {allow}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_that_drops_mid_turn_resumes_with_after_seq_and_sees_every_event_once() {
    let net = tailnet_with(Some(vec![
        // A line that always asks in cautious (the network), wherever its reads may run.
        crate::common::tools::shell_call("call_q", "curl -s -m 2 http://127.0.0.1:9/ || true"),
        crate::common::tools::text("done"),
    ]))
    .await;
    let mut terminal = Client::connect_raw(&net.daemon.socket()).await.unwrap();
    let hello = terminal
        .ok("hello", json!({"protocol": 1, "client": {"name": "t", "version": "1"}}))
        .await
        .unwrap();
    let daemon_id = hello["daemon_id"].as_str().unwrap().to_owned();
    let (key, device_id) = pair_phone(&mut terminal, &net.phone).await;

    // The phone starts a turn and watches it until the question; then its connection drops without a close.
    let (conversation, before) = {
        let (key, device_id, daemon_id) = (key.clone(), device_id.clone(), daemon_id.clone());
        inside(&net.phone, move || async move {
            let mut ws = open(PHONE).await.unwrap();
            let proved = prove(&mut ws, &key, &device_id, &daemon_id).await;
            assert!(proved.get("item").is_some(), "{proved}");
            let sent = json!({"command_id": crate::common::command_id(), "text": "run it"});
            let sent = call(&mut ws, 3, "prompt.send", sent).await;
            let conversation = sent["item"]["conversation_id"].as_str().unwrap().to_owned();
            let params = json!({"conversation_id": conversation, "after_seq": 0});
            let first = call(&mut ws, 4, "conversation.subscribe", params).await;
            let mut before = vec![first["item"]["event"].clone()];
            assert!(!before[0].is_null(), "{first}");
            if before[0]["kind"] != "approval_requested" {
                before.extend(ws_events(&mut ws, 4, "approval_requested").await);
            }
            drop(ws);
            (conversation, before)
        })
        .await
    };
    let asked = before.last().unwrap();
    assert_eq!(asked["call_id"], "call_q", "{asked}");

    // The question waited: the desk answers it while the phone is away, and the turn goes on to its end.
    let allow = json!({"command_id": crate::common::command_id(), "conversation_id": conversation,
                       "call_id": "call_q", "decision": "allow"});
    terminal.ok("approval.respond", allow).await.unwrap();

    // The phone reconnects, proves again and resumes after the last seq it saw.
    let last = before.last().unwrap()["seq"].as_u64().unwrap();
    let after = {
        let conversation = conversation.clone();
        inside(&net.phone, move || async move {
            let mut ws = open(PHONE).await.unwrap();
            let proved = prove(&mut ws, &key, &device_id, &daemon_id).await;
            assert!(proved.get("item").is_some(), "{proved}");
            let params = json!({"conversation_id": conversation, "after_seq": last});
            let first = call(&mut ws, 3, "conversation.subscribe", params).await;
            let mut after = vec![first["item"]["event"].clone()];
            assert!(!after[0].is_null(), "{first}");
            if after[0]["kind"] != "turn_completed" {
                after.extend(ws_events(&mut ws, 3, "turn_completed").await);
            }
            after
        })
        .await
    };
    let all: Vec<Value> = before.iter().chain(&after).cloned().collect();
    let seqs: Vec<u64> = all.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "no gap and no repeat across the reconnect: {all:?}");
    let kinds: Vec<&str> = all.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "approval_requested").count(),
        1,
        "{kinds:?}"
    );
    assert!(
        after
            .iter()
            .any(|e| e["call_id"] == "call_q" && e["kind"] != "approval_requested"),
        "the desk's answer let the call go on, and the phone saw it: {kinds:?}"
    );
    assert_eq!(kinds.last(), Some(&"turn_completed"), "{kinds:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_only_question_refused_to_a_phone_stays_open_and_the_terminal_answers_it() {
    let net = tailnet_with(Some(vec![
        crate::common::tools::shell_call("call_s", "sudo -n true"),
        crate::common::tools::text("done"),
    ]))
    .await;
    let mut terminal = Client::connect_raw(&net.daemon.socket()).await.unwrap();
    let hello = terminal
        .ok("hello", json!({"protocol": 1, "client": {"name": "t", "version": "1"}}))
        .await
        .unwrap();
    let daemon_id = hello["daemon_id"].as_str().unwrap().to_owned();
    let (key, device_id) = pair_phone(&mut terminal, &net.phone).await;
    let (conversation, asked, refused) = inside(&net.phone, move || async move {
        let mut ws = open(PHONE).await.unwrap();
        let proved = prove(&mut ws, &key, &device_id, &daemon_id).await;
        assert!(proved.get("item").is_some(), "{proved}");
        let sent = json!({"command_id": crate::common::command_id(), "text": "elevate"});
        let sent = call(&mut ws, 3, "prompt.send", sent).await;
        let conversation = sent["item"]["conversation_id"].as_str().unwrap().to_owned();
        let params = json!({"conversation_id": conversation, "after_seq": 0});
        let first = call(&mut ws, 4, "conversation.subscribe", params).await;
        let mut events = vec![first["item"]["event"].clone()];
        assert!(!events[0].is_null(), "{first}");
        if events[0]["kind"] != "approval_requested" {
            events.extend(ws_events(&mut ws, 4, "approval_requested").await);
        }
        let asked = events.pop().unwrap();
        let allow = json!({"command_id": crate::common::command_id(), "conversation_id": conversation,
                           "call_id": "call_s", "decision": "allow"});
        let refused = call(&mut ws, 5, "approval.respond", allow).await;
        (conversation, asked, refused)
    })
    .await;
    assert_eq!(
        (&asked["call_id"], &asked["local_only"]),
        (&json!("call_s"), &json!(true)),
        "{asked}"
    );
    assert_eq!(refused["error"]["code"], "forbidden", "{refused}");

    // The question stayed open: the terminal answers it, and the turn goes on to its end.
    let allow = json!({"command_id": crate::common::command_id(), "conversation_id": conversation,
                       "call_id": "call_s", "decision": "allow"});
    terminal.ok("approval.respond", allow).await.unwrap();
    let params = json!({"conversation_id": conversation, "after_seq": 0});
    let watch = terminal.send("conversation.subscribe", params, false).await.unwrap();
    let turn_ended = |event: &Value| {
        let kind = event["kind"].as_str().unwrap_or_default();
        kind.starts_with("turn_") && kind != "turn_started"
    };
    let events = efr_test_support::subscription::read_until(&mut terminal, watch, "the turn's end", true, turn_ended)
        .await
        .unwrap();
    let mut kinds = Vec::new();
    for event in &events {
        kinds.push(event["kind"].as_str().unwrap_or_default().to_owned());
        if event["kind"] == "approval_resolved" {
            assert_eq!(event["decision"], "allow", "{event}");
        }
    }
    assert!(kinds.iter().any(|kind| kind == "approval_resolved"), "{kinds:?}");
    assert_eq!(kinds.last().map(String::as_str), Some("turn_completed"), "{kinds:?}");
}
