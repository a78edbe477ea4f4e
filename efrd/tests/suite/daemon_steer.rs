//! Steering through the real efrd and the scripted model: turn.steer read by the next model call, every late case
//! with and without if_late, prompt.withdraw (by turn, newest from a terminal, its races with the start of the
//! prompt), and turn.interrupt's resend and withdraw in the step of turn_interrupt_requested.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::time::Duration;

use efr_protocol::{ErrorBody, ErrorCode};
use efr_test_support::client::Client;
use efr_test_support::scripted::{Reply, ReplyEvent, ScriptedModel};
use efr_test_support::subscription;
use serde_json::{Value, json};

use common::{command_id, daemon, model, prompt, subscribe};

/// The kinds that end a turn, a withdrawn prompt's included.
const ENDS: &[&str] = &[
    "turn_completed",
    "turn_failed",
    "turn_interrupted",
    "turn_cancelled",
    "prompt_withdrawn",
];

/// A reply that streams a word, then waits `ms` before its last word.
fn slow(ms: u64) -> Reply {
    Reply::of(vec![
        ReplyEvent::Text("working ".into()),
        ReplyEvent::DelayMs(ms),
        ReplyEvent::Text("done".into()),
    ])
}

/// The params of turn.steer, with the queue object of `if_late` when asked.
fn steer_params(conversation: &str, text: &str, if_late: bool) -> Value {
    let mut params = json!({"command_id": command_id(), "conversation_id": conversation, "text": text});
    if if_late {
        params["if_late"] = json!({"kind": "queue", "context": {"tty": "/dev/pts/9"}});
    }
    params
}

async fn steer(client: &mut Client, conversation: &str, text: &str, if_late: bool) -> Result<Value, ErrorBody> {
    client
        .call("turn.steer", steer_params(conversation, text, if_late))
        .await
        .unwrap()
}

/// Reads subscription `id` until the end of `turn` (a withdrawn prompt's end included); every event read.
async fn until_end_of(client: &mut Client, id: efr_protocol::frame::RequestId, turn: &Value) -> Vec<Value> {
    subscription::read_until(client, id, "the turn's end", true, |e| {
        e["turn_id"] == *turn && ENDS.contains(&e["kind"].as_str().unwrap_or(""))
    })
    .await
    .unwrap_or_else(|error| panic!("{error:#}"))
}

/// Reads subscription `id` until every one of `turns` has ended; every event read.
async fn until_ends_of(client: &mut Client, id: efr_protocol::frame::RequestId, turns: &[&Value]) -> Vec<Value> {
    let mut open: Vec<&Value> = turns.to_vec();
    subscription::read_until(client, id, "the turns' ends", true, |e| {
        if ENDS.contains(&e["kind"].as_str().unwrap_or("")) {
            open.retain(|turn| **turn != e["turn_id"]);
        }
        open.is_empty()
    })
    .await
    .unwrap_or_else(|error| panic!("{error:#}"))
}

fn kinds_of<'a>(events: &'a [Value], turn: &Value) -> Vec<&'a str> {
    events
        .iter()
        .filter(|e| e["turn_id"] == *turn)
        .map(|e| e["kind"].as_str().unwrap())
        .collect()
}

/// The text the model got in request `n` (Responses format), as one string.
fn request_text(server: &ScriptedModel, n: usize) -> String {
    let calls: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/v1/responses")
        .collect();
    calls[n].body["input"].to_string()
}

/// A late steer: without if_late it is conflict (whose message says why) and records nothing; with it, it becomes
/// prompt_queued of a new turn under its command id, never turn_steered, and that prompt runs.
async fn assert_late(client: &mut Client, conversation: &str, why: &str, turn_id: Option<&Value>) -> Value {
    let mut params = steer_params(conversation, "late words", false);
    if let Some(turn) = turn_id {
        params["turn_id"] = turn.clone();
    }
    let error = client.call("turn.steer", params).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Conflict, "{error:?}");
    assert!(error.message.contains(why), "{}", error.message);

    let mut params = steer_params(conversation, "late words", true);
    if let Some(turn) = turn_id {
        params["turn_id"] = turn.clone();
    }
    let queued = client.ok("turn.steer", params.clone()).await.unwrap();
    assert_eq!(queued["queued"], true);
    // The same command id again: the same result, nothing more recorded.
    assert_eq!(client.ok("turn.steer", params.clone()).await.unwrap(), queued);
    let log = common::whole_log(client, conversation).await;
    let event = log
        .iter()
        .find(|e| e["seq"] == queued["seq"])
        .expect("the seq of the result is in the log");
    assert_eq!(event["kind"], "prompt_queued");
    assert_eq!(event["turn_id"], queued["turn_id"]);
    assert_eq!(event["command_id"], params["command_id"]);
    assert_eq!(event["text"], "late words");
    assert!(
        !log.iter()
            .any(|e| e["kind"] == "turn_steered" && e["command_id"] == params["command_id"]),
        "a late steer is never turn_steered"
    );
    assert_eq!(
        log.iter().filter(|e| e["command_id"] == params["command_id"]).count(),
        1
    );
    queued
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_is_read_by_the_next_model_call() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let server = model(vec![
        common::tools::shell_call("c1", "sleep 1"),
        Reply::text("steered answer"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (sent, conversation, id) = common::tools::start(&mut client, project.path(), "full", "build it").await;
    common::tools::next_event(&mut client, id, "tool_call_started").await;

    let params = steer_params(&conversation, "use the other crate, größe 🙂", true);
    let result = client.ok("turn.steer", params.clone()).await.unwrap();
    assert_eq!(result["turn_id"], sent["turn_id"]);
    assert_eq!(result.get("queued"), None, "a steer that is read is not queued");
    assert_eq!(client.ok("turn.steer", params).await.unwrap(), result);

    let events = until_end_of(&mut client, id, &sent["turn_id"]).await;
    let kinds = kinds_of(&events, &sent["turn_id"]);
    let steered = events.iter().find(|e| e["kind"] == "turn_steered").unwrap();
    assert_eq!(steered["seq"], result["seq"]);
    assert_eq!(steered["text"], "use the other crate, größe 🙂");
    assert_eq!(steered["origin"], "terminal");
    let delivered = events.iter().find(|e| e["kind"] == "steering_delivered").unwrap();
    assert_eq!(delivered["steers"], json!([result["seq"]]));
    let at = |kind: &str| kinds.iter().position(|k| *k == kind).unwrap();
    assert!(at("tool_call_completed") < at("steering_delivered"), "{kinds:?}");
    assert!(
        at("steering_delivered") < at("assistant_message_completed"),
        "{kinds:?}"
    );
    assert_eq!(kinds.last(), Some(&"turn_completed"));
    assert_eq!(kinds.iter().filter(|k| **k == "turn_steered").count(), 1);
    // The first call never saw it; the second has it after the call's output.
    assert!(!request_text(&server, 0).contains("other crate"));
    let second = request_text(&server, 1);
    let output = second.find("function_call_output").unwrap();
    let words = second
        .find("use the other crate, größe 🙂")
        .expect("the steer reached the model");
    assert!(output < words, "{second}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_when_no_turn_runs_is_late() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let server = model(vec![Reply::text("first"), Reply::text("second")]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let sent = prompt(&mut client, project.path(), None, "hello").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    until_end_of(&mut client, id, &sent["turn_id"]).await;

    let queued = assert_late(&mut client, &conversation, "no turn runs", None).await;
    let events = until_end_of(&mut client, id, &queued["turn_id"]).await;
    assert_eq!(
        kinds_of(&events, &queued["turn_id"]).last(),
        Some(&"turn_completed"),
        "the queued steer runs as a turn"
    );
    assert!(request_text(&server, 1).contains("late words"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_naming_a_turn_that_does_not_run_is_late() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let server = model(vec![Reply::text("first"), slow(20_000), Reply::text("late")]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let first = prompt(&mut client, project.path(), None, "hello").await;
    let conversation = first["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    until_end_of(&mut client, id, &first["turn_id"]).await;
    // A turn runs, but not the one named.
    let running = prompt(&mut client, project.path(), Some(&conversation), "long").await;
    common::events_until(&mut client, id, "turn_started").await;

    let queued = assert_late(&mut client, &conversation, "does not run", Some(&first["turn_id"])).await;
    let log = common::whole_log(&mut client, &conversation).await;
    assert!(!kinds_of(&log, &running["turn_id"]).contains(&"turn_steered"));
    client
        .ok(
            "turn.interrupt",
            json!({"command_id": command_id(), "conversation_id": conversation}),
        )
        .await
        .unwrap();
    let events = until_end_of(&mut client, id, &queued["turn_id"]).await;
    assert_eq!(kinds_of(&events, &queued["turn_id"]).last(), Some(&"turn_completed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_after_an_interrupt_request_is_late() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    // The call ignores SIGINT for a while, so the interrupted turn still runs when the steers come.
    let server = model(vec![
        common::tools::shell_call("c1", "sh -c 'trap \"\" INT; sleep 3'"),
        Reply::text("late"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (sent, conversation, id) = common::tools::start(&mut client, project.path(), "full", "wait").await;
    common::tools::next_event(&mut client, id, "tool_call_started").await;
    let interrupt = json!({"command_id": command_id(), "conversation_id": conversation});
    client.ok("turn.interrupt", interrupt).await.unwrap();
    let queued = assert_late(&mut client, &conversation, "interrupt", None).await;
    let events = until_end_of(&mut client, id, &queued["turn_id"]).await;
    let log: Vec<&str> = kinds_of(&events, &sent["turn_id"]);
    assert!(!log.contains(&"turn_steered"), "{log:?}");
    // It was queued while the interrupted turn still ran.
    let ended = events
        .iter()
        .find(|e| e["turn_id"] == sent["turn_id"] && e["kind"] == "turn_interrupted")
        .unwrap();
    assert!(queued["seq"].as_u64().unwrap() < ended["seq"].as_u64().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_after_the_model_answered_is_late() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    // Many files: the turn's last snapshot, after the model's answer, takes a while.
    for i in 0..3000 {
        std::fs::write(project.path().join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    for if_late in [false, true] {
        let mut replies = vec![common::tools::shell_call("c1", "true")];
        replies.extend(std::iter::repeat_n(Reply::text("answer"), 400));
        let server = model(replies).await;
        let efrd = daemon(home.path(), &server);
        let mut client = efrd.client().await.unwrap();
        let mut other = efrd.client().await.unwrap();
        let (sent, conversation, id) = common::tools::start(&mut client, project.path(), "full", "go").await;
        common::tools::next_event(&mut client, id, "tool_call_completed").await;
        // Steer until a steer is late: those before the answer are read by one more model call each.
        let mut late = None;
        for _ in 0..2000 {
            match steer(&mut other, &conversation, "more", if_late).await {
                Ok(result) if result["queued"] == true => {
                    late = Some(Ok(result));
                    break;
                }
                Ok(_) => {}
                Err(error) => {
                    late = Some(Err(error));
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let late = late.expect("a steer became late");
        let events = until_end_of(&mut client, id, &sent["turn_id"]).await;
        let ended = events.last().unwrap()["seq"].as_u64().unwrap();
        match late {
            Err(error) => {
                assert!(!if_late);
                assert_eq!(error.code, ErrorCode::Conflict);
                assert!(error.message.contains("answered"), "{}", error.message);
            }
            Ok(queued) => {
                assert!(if_late);
                // Queued while the turn still ran: the model had answered.
                assert!(queued["seq"].as_u64().unwrap() < ended, "{queued} {ended}");
                until_end_of(&mut client, id, &queued["turn_id"]).await;
            }
        }
        // Every steer that was recorded was read.
        let log = common::whole_log(&mut client, &conversation).await;
        let steered: Vec<&Value> = log
            .iter()
            .filter(|e| e["kind"] == "turn_steered")
            .map(|e| &e["seq"])
            .collect();
        let delivered: Vec<&Value> = log
            .iter()
            .filter(|e| e["kind"] == "steering_delivered")
            .flat_map(|e| e["steers"].as_array().unwrap())
            .collect();
        assert_eq!(steered, delivered);
    }
}

/// prompt.send from terminal `tty` into `conversation`.
async fn prompt_from(
    client: &mut Client,
    project: &std::path::Path,
    conversation: &str,
    tty: &str,
    text: &str,
) -> Value {
    let params = json!({"command_id": command_id(), "conversation_id": conversation, "text": text,
        "context": {"cwd": project, "tty": tty}});
    client.ok("prompt.send", params).await.unwrap()
}

fn withdraw_params(conversation: &str, target: &Value) -> Value {
    json!({"command_id": command_id(), "conversation_id": conversation, "target": target})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_withdraw_takes_back_a_waiting_prompt_by_turn_or_the_newest_of_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let server = model(vec![slow(20_000), Reply::text("third")]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let running = prompt(&mut client, project.path(), None, "long").await;
    let conversation = running["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    common::events_until(&mut client, id, "turn_started").await;
    let first = prompt_from(&mut client, project.path(), &conversation, "/dev/pts/4", "first").await;
    let second = prompt_from(&mut client, project.path(), &conversation, "/dev/pts/4", "second").await;
    let third = prompt_from(&mut client, project.path(), &conversation, "/dev/pts/5", "third").await;

    let newest = withdraw_params(&conversation, &json!({"kind": "newest_from_tty", "tty": "/dev/pts/4"}));
    let result = client.ok("prompt.withdraw", newest.clone()).await.unwrap();
    assert_eq!(result["withdrawn"]["turn_id"], second["turn_id"]);
    assert_eq!(result["withdrawn"]["text"], "second");
    // Idempotent by command id.
    assert_eq!(client.ok("prompt.withdraw", newest).await.unwrap(), result);
    let by_turn = withdraw_params(&conversation, &json!({"kind": "turn", "turn_id": first["turn_id"]}));
    let by_turn = client.ok("prompt.withdraw", by_turn).await.unwrap();
    assert_eq!(by_turn["withdrawn"]["text"], "first");

    for (target, code) in [
        (
            json!({"kind": "turn", "turn_id": first["turn_id"]}),
            ErrorCode::NotFound,
        ),
        (
            json!({"kind": "newest_from_tty", "tty": "/dev/pts/4"}),
            ErrorCode::NotFound,
        ),
        (
            json!({"kind": "newest_from_tty", "tty": "/dev/pts/77"}),
            ErrorCode::NotFound,
        ),
        (
            json!({"kind": "turn", "turn_id": running["turn_id"]}),
            ErrorCode::Conflict,
        ),
    ] {
        let error = client
            .call("prompt.withdraw", withdraw_params(&conversation, &target))
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(error.code, code, "{target}: {error:?}");
    }
    let bad = client
        .call(
            "prompt.withdraw",
            withdraw_params(&conversation, &json!({"kind": "oldest"})),
        )
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(bad.code, ErrorCode::Invalid);

    client
        .ok(
            "turn.interrupt",
            json!({"command_id": command_id(), "conversation_id": conversation}),
        )
        .await
        .unwrap();
    let events = until_end_of(&mut client, id, &third["turn_id"]).await;
    for (withdrawn, seq) in [
        (&second, &result["withdrawn"]["seq"]),
        (&first, &by_turn["withdrawn"]["seq"]),
    ] {
        let log = common::whole_log(&mut client, &conversation).await;
        let kinds = kinds_of(&log, &withdrawn["turn_id"]);
        assert_eq!(kinds, ["prompt_queued", "prompt_withdrawn"]);
        let event = log.iter().find(|e| e["seq"] == *seq).unwrap();
        assert_eq!(event["kind"], "prompt_withdrawn");
        assert_eq!(event["origin"], "terminal");
    }
    assert_eq!(kinds_of(&events, &third["turn_id"]).last(), Some(&"turn_completed"));
    // Only the running turn and the third prompt reached the model.
    assert_eq!(
        server.requests().iter().filter(|r| r.path == "/v1/responses").count(),
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn withdraw_races_with_the_start_of_the_prompt_lose_none_and_run_none_twice() {
    const RACES: usize = 200;
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let reply = Reply::of(vec![
        ReplyEvent::Text("a".into()),
        ReplyEvent::DelayMs(8),
        ReplyEvent::Text("b".into()),
    ]);
    let server = model(std::iter::repeat_n(reply, 2 * RACES).collect()).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let mut other = efrd.client().await.unwrap();
    let first = prompt(&mut client, project.path(), None, "start").await;
    let conversation = first["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    let (mut withdrawn, mut started, mut ran) = (0, 0, 1);
    let mut running = first["turn_id"].clone();
    for race in 0..RACES {
        // The prompt waits behind the running turn, which ends within a few milliseconds: the withdraw lands before
        // the prompt starts, or as it starts, or after.
        let waiting = prompt_from(&mut other, project.path(), &conversation, "/dev/pts/4", "next").await;
        tokio::time::sleep(Duration::from_micros((race as u64 * 397) % 80_000)).await;
        let target = json!({"kind": "turn", "turn_id": waiting["turn_id"]});
        let answer = other
            .call("prompt.withdraw", withdraw_params(&conversation, &target))
            .await
            .unwrap();
        match answer {
            Ok(result) => {
                withdrawn += 1;
                assert_eq!(result["withdrawn"]["turn_id"], waiting["turn_id"]);
                let end = until_ends_of(&mut client, id, &[&running, &waiting["turn_id"]]).await;
                let kinds = kinds_of(&end, &waiting["turn_id"]);
                assert_eq!(kinds.last(), Some(&"prompt_withdrawn"), "{kinds:?}");
                assert!(!kinds.contains(&"turn_started"), "{kinds:?}");
                // Something must run for the next race to wait behind.
                let next = prompt_from(&mut other, project.path(), &conversation, "/dev/pts/4", "keep").await;
                ran += 1;
                running = next["turn_id"].clone();
            }
            Err(error) => {
                until_end_of(&mut client, id, &running).await;
                started += 1;
                assert_eq!(error.code, ErrorCode::Conflict, "{error:?}");
                ran += 1;
                running = waiting["turn_id"].clone();
            }
        }
    }
    until_end_of(&mut client, id, &running).await;
    let log = common::whole_log(&mut client, &conversation).await;
    let turns: Vec<&Value> = log
        .iter()
        .filter(|e| e["kind"] == "prompt_queued")
        .map(|e| &e["turn_id"])
        .collect();
    assert_eq!(turns.len(), RACES + 1 + withdrawn);
    for turn in turns {
        let kinds = kinds_of(&log, turn);
        let starts = kinds.iter().filter(|k| **k == "turn_started").count();
        let ends = kinds.iter().filter(|k| ENDS.contains(k)).count();
        assert_eq!(ends, 1, "every prompt ends once: {kinds:?}");
        if kinds.contains(&"prompt_withdrawn") {
            assert_eq!(starts, 0, "a withdrawn prompt never runs: {kinds:?}");
        } else {
            assert_eq!(starts, 1, "{kinds:?}");
            assert_eq!(kinds.last(), Some(&"turn_completed"), "{kinds:?}");
        }
    }
    assert_eq!(
        server.requests().iter().filter(|r| r.path == "/v1/responses").count(),
        ran
    );
    assert!(
        withdrawn > 0 && started > 0,
        "both sides of the race: {withdrawn} withdrawn, {started} started"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_resends_and_withdraws_in_the_step_of_its_request() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let server = model(vec![slow(20_000), Reply::text("resent answer")]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let sent = prompt(&mut client, project.path(), None, "long").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    common::events_until(&mut client, id, "assistant_message_updated").await;
    let s1 = steer(&mut client, &conversation, "one", false).await.unwrap();
    let s2 = steer(&mut client, &conversation, "two", false).await.unwrap();
    let s3 = steer(&mut client, &conversation, "three", false).await.unwrap();
    let queued = prompt_from(&mut client, project.path(), &conversation, "/dev/pts/4", "queued").await;

    // A seq that is no unread steer: conflict, and nothing is recorded (the turn still takes steers).
    let wrong = json!({"command_id": command_id(), "conversation_id": conversation, "resend_steers": [1]});
    let error = client.call("turn.interrupt", wrong).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Conflict, "{error:?}");
    let both = json!({"command_id": command_id(), "conversation_id": conversation,
        "resend_steers": [s1["seq"]], "withdraw_steers": [s1["seq"]]});
    assert_eq!(
        client.call("turn.interrupt", both).await.unwrap().unwrap_err().code,
        ErrorCode::Invalid
    );

    let params = json!({"command_id": command_id(), "conversation_id": conversation,
        "resend_steers": [s1["seq"], s3["seq"]], "withdraw_steers": [s2["seq"]], "withdraw": [queued["turn_id"]]});
    let result = client.ok("turn.interrupt", params.clone()).await.unwrap();
    assert_eq!(client.ok("turn.interrupt", params).await.unwrap(), result);
    let seq = result["seq"].as_u64().unwrap();
    assert_eq!(result["withdrawn_steers"], json!([{"seq": s2["seq"], "text": "two"}]));
    assert_eq!(result["withdrawn"][0]["turn_id"], queued["turn_id"]);
    assert_eq!(result["withdrawn"][0]["text"], "queued");
    assert_eq!(result["resent"]["steers"], json!([s1["seq"], s3["seq"]]));
    let resent_turn = result["resent"]["turn_id"].clone();

    let events = until_end_of(&mut client, id, &resent_turn).await;
    let step: Vec<&Value> = events
        .iter()
        .filter(|e| (seq..seq + 4).contains(&e["seq"].as_u64().unwrap()))
        .collect();
    let kinds: Vec<&str> = step.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "turn_interrupt_requested",
            "steering_withdrawn",
            "prompt_withdrawn",
            "prompt_queued"
        ]
    );
    assert_eq!(step[0]["at"], step[3]["at"], "one step, one commit");
    assert_eq!(step[1]["steers"], json!([s2["seq"]]));
    assert_eq!(step[2]["turn_id"], queued["turn_id"]);
    assert_eq!(step[2]["seq"], result["withdrawn"][0]["seq"]);
    assert_eq!(step[3]["turn_id"], resent_turn);
    assert_eq!(step[3]["seq"], result["resent"]["seq"]);
    assert_eq!(step[3]["text"], "one\n\nthree");
    assert_eq!(step[3]["steers"], json!([s1["seq"], s3["seq"]]));
    assert_eq!(
        step[3]["context"]["tty"], "/dev/pts/9",
        "the interrupted turn's context"
    );
    // The interrupted turn read no steer; the resent prompt ran next, and only it reached the model.
    assert!(!kinds_of(&events, &sent["turn_id"]).contains(&"steering_delivered"));
    assert_eq!(kinds_of(&events, &resent_turn).last(), Some(&"turn_completed"));
    let second = request_text(&server, 1);
    assert!(second.contains("one\\n\\nthree") && !second.contains("two"), "{second}");
    assert_eq!(
        server.requests().iter().filter(|r| r.path == "/v1/responses").count(),
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_that_no_model_call_read_is_taken_back_when_the_turn_fails() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let failing = Reply::of(vec![
        ReplyEvent::Text("working ".into()),
        ReplyEvent::DelayMs(1_500),
        ReplyEvent::Error {
            kind: "invalid_request_error".into(),
            message: "the request is not valid".into(),
        },
    ]);
    let server = model(vec![failing]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let sent = prompt(&mut client, project.path(), None, "hello").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let steered = steer(&mut client, &conversation, "and also this", false).await.unwrap();
    let events = until_end_of(&mut client, id, &sent["turn_id"]).await;
    let kinds = kinds_of(&events, &sent["turn_id"]);
    assert_eq!(kinds.last(), Some(&"turn_failed"), "{kinds:?}");
    let withdrawn = events
        .iter()
        .find(|e| e["kind"] == "steering_withdrawn")
        .unwrap_or_else(|| panic!("the unread steer is taken back: {kinds:?}"));
    assert_eq!(withdrawn["steers"], json!([steered["seq"]]), "{withdrawn}");
    assert_eq!(withdrawn["origin"], "daemon");
    assert!(!kinds.contains(&"steering_delivered"), "{kinds:?}");
}
