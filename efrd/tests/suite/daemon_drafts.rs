//! Drafts through the real efrd and the scripted model: the drafts flag of conversation.subscribe, the text,
//! reasoning and tool_input parts with their after_seq and UTF-8 byte offsets, merged for a slow subscriber and never
//! ending its stream, the first drafts of a resume from offset 0, the snapshot's live, and the memory that many
//! drafts subscribers cost.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::time::{Duration, Instant};

use efr_protocol::frame::RequestId;
use efr_test_support::client::{Client, StreamFrame};
use efr_test_support::scripted::{Reply, ReplyEvent};
use serde_json::{Value, json};

use common::{daemon, model, prompt};

/// Subscribes with drafts (and ack); with `after_seq`, no snapshot.
async fn subscribe_drafts(
    client: &mut Client,
    conversation: &str,
    after_seq: Option<u64>,
) -> (RequestId, Option<Value>) {
    let mut params = json!({"conversation_id": conversation, "drafts": true});
    if let Some(seq) = after_seq {
        params["after_seq"] = json!(seq);
    }
    let id = client.send("conversation.subscribe", params, true).await.unwrap();
    assert_eq!(client.next_of(id).await.unwrap(), StreamFrame::Ack);
    if after_seq.is_some() {
        return (id, None);
    }
    match client.next_of(id).await.unwrap() {
        StreamFrame::Item(mut item) => (id, Some(item["snapshot"].take())),
        other => panic!("{other:?}"),
    }
}

/// The text that a message's drafts make, read by offset: a draft starts at or before the end of what came (a
/// resume's first draft starts at 0) and agrees with the bytes it overlaps.
#[derive(Default)]
struct Rebuilt {
    text: String,
    drafts: usize,
    /// The most bytes one draft carried.
    largest: usize,
}

impl Rebuilt {
    fn take(&mut self, offset: usize, delta: &str) {
        assert!(
            offset <= self.text.len(),
            "a draft leaves no gap: {offset} > {}",
            self.text.len()
        );
        let overlap = (self.text.len() - offset).min(delta.len());
        assert_eq!(
            &self.text[offset..offset + overlap],
            &delta[..overlap],
            "a repeated byte is the same byte"
        );
        self.text.push_str(&delta[overlap..]);
        self.drafts += 1;
        self.largest = self.largest.max(delta.len());
    }
}

/// An answer of about `bytes` bytes of multi-byte text, in pieces of about 1 KiB.
fn long_answer(bytes: usize) -> Vec<String> {
    let line = "größe 🙂 — a long answer that streams in many pieces, line ";
    let mut pieces = Vec::new();
    let mut total = 0;
    let mut n = 0;
    while total < bytes {
        let mut piece = String::new();
        while piece.len() < 1024 {
            piece.push_str(line);
            piece.push_str(&n.to_string());
            piece.push('\n');
            n += 1;
        }
        total += piece.len();
        pieces.push(piece);
    }
    pieces
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_of_a_2_mb_answer_gets_merged_drafts_equal_to_the_committed_text() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let pieces = long_answer(2 * 1024 * 1024);
    let server = model(vec![Reply::streamed(pieces.clone(), 0)]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let sent = prompt(&mut client, project.path(), None, "write a lot").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe_drafts(&mut client, &conversation, Some(0)).await;

    let mut rebuilt = Rebuilt::default();
    let mut committed = None;
    let deadline = Instant::now() + Duration::from_secs(120);
    let whole: usize = pieces.iter().map(String::len).sum();
    // Reads slowly until the turn's end is read and the drafts reached the committed text.
    while committed
        .as_ref()
        .is_none_or(|text: &String| rebuilt.text.len() < text.len())
    {
        assert!(
            Instant::now() < deadline,
            "the drafts stopped at {} of {whole} bytes",
            rebuilt.text.len()
        );
        let item = match client.next_of(id).await.unwrap() {
            StreamFrame::Item(item) => item,
            other => panic!("a draft never ends a subscription: {other:?}"),
        };
        if let Some(draft) = item.get("draft") {
            assert_eq!(draft["turn_id"], sent["turn_id"]);
            assert!(draft["after_seq"].as_u64().unwrap() >= sent["seq"].as_u64().unwrap());
            if draft["draft"]["kind"] == "text" {
                assert_eq!(draft["draft"]["index"], 0);
                let offset = usize::try_from(draft["draft"]["offset"].as_u64().unwrap()).unwrap();
                rebuilt.take(offset, draft["draft"]["delta"].as_str().unwrap());
            }
        } else if item["event"]["kind"] == "assistant_message_completed" {
            committed = Some(item["event"]["text"].as_str().unwrap().to_owned());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let committed = committed.unwrap();
    assert_eq!(committed.len(), whole);
    assert!(
        rebuilt.text == committed,
        "the drafts' text is the committed text, byte for byte"
    );
    // Merged: fewer drafts than deltas, and a draft longer than any delta (how many merge depends on the machine's
    // pace; that some do, does not).
    let longest_delta = pieces.iter().map(String::len).max().unwrap();
    assert!(
        rebuilt.drafts < pieces.len() && rebuilt.largest > longest_delta,
        "a slow reader gets merged drafts: {} drafts for {} deltas, the largest {} bytes against deltas of at most {}",
        rebuilt.drafts,
        pieces.len(),
        rebuilt.largest,
        longest_delta
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_snapshot_has_live_and_a_resume_with_drafts_starts_from_offset_0() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let first = Reply::of(vec![
        ReplyEvent::Reasoning {
            text: "Plan: größe".into(),
            title: Some("Plan".into()),
        },
        ReplyEvent::Text("Hällo 🙂 ".into()),
        ReplyEvent::DelayMs(1500),
        ReplyEvent::Text("world".into()),
    ]);
    let server = model(vec![first]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let sent = prompt(&mut client, project.path(), None, "hi").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (plain, _) = common::subscribe(&mut client, &conversation, Some(0)).await;
    common::events_until(&mut client, plain, "assistant_message_updated").await;

    // While the model call waits: the snapshot's live has the message and the reasoning so far.
    let mut watcher = efrd.client().await.unwrap();
    let (_, snapshot) = subscribe_drafts(&mut watcher, &conversation, None).await;
    let live = &snapshot.unwrap()["live"];
    assert_eq!(live["turn_id"], sent["turn_id"]);
    assert_eq!(live["text"], "Hällo 🙂 ");
    assert_eq!(live["text_bytes"], "Hällo 🙂 ".len());
    // Responses writes a title into the summary as `**title**`.
    let reasoning = live["reasoning"].as_str().unwrap().to_owned();
    assert!(reasoning.ends_with("Plan: größe"), "{reasoning}");
    assert_eq!(live["reasoning_title"], "Plan");

    // A resume with drafts: no snapshot, and its first drafts hold the reasoning and the message from offset 0.
    let mut resumer = efrd.client().await.unwrap();
    let (id, _) = subscribe_drafts(&mut resumer, &conversation, Some(sent["seq"].as_u64().unwrap())).await;
    let mut drafts = Vec::new();
    let mut events = Vec::new();
    loop {
        let StreamFrame::Item(item) = resumer.next_of(id).await.unwrap() else {
            panic!()
        };
        if let Some(draft) = item.get("draft") {
            drafts.push(draft["draft"].clone());
        } else {
            let event = item["event"].clone();
            let end = event["kind"] == "turn_completed";
            events.push(event);
            if end && drafts.iter().any(|d| d["kind"] == "text" && d["delta"] == "world") {
                break;
            }
        }
    }
    assert_eq!(drafts[0]["kind"], "reasoning");
    assert_eq!(drafts[0]["offset"], 0);
    assert_eq!(drafts[0]["delta"], reasoning.as_str());
    assert_eq!(
        drafts[1],
        json!({"kind": "text", "index": 0, "offset": 0, "delta": "Hällo 🙂 "})
    );
    let rest = drafts.iter().find(|d| d["delta"] == "world").unwrap();
    assert_eq!(rest["offset"], "Hällo 🙂 ".len(), "offsets count bytes of UTF-8");
    assert_eq!(events.last().unwrap()["kind"], "turn_completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_input_is_drafted_and_a_subscriber_without_the_flag_gets_no_drafts() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    // The model waits before its call, so that the drafts subscription (made once prompt.send named the
    // conversation) is there when the call's input streams: a subscriber that comes later gets no input of a call
    // that started already.
    let input = json!({ "command": "echo drafted" }).to_string();
    let (a, b) = input.split_at(input.len() / 2);
    let server = model(vec![
        Reply::of(vec![
            ReplyEvent::DelayMs(500),
            ReplyEvent::tool_call("c1", "shell", false, vec![a.into(), b.into()]),
        ]),
        Reply::text("done"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let sent = common::tools::prompt_in(&mut client, project.path(), "full", "go").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (drafted, _) = subscribe_drafts(&mut client, &conversation, Some(0)).await;
    let mut other = efrd.client().await.unwrap();
    let (plain, _) = common::subscribe(&mut other, &conversation, Some(0)).await;
    // Without the flag: events only, through the end.
    common::events_until(&mut other, plain, "turn_completed").await;
    let mut inputs = Vec::new();
    loop {
        let StreamFrame::Item(item) = client.next_of(drafted).await.unwrap() else {
            panic!()
        };
        if let Some(draft) = item.get("draft") {
            if draft["draft"]["kind"] == "tool_input" {
                inputs.push(draft["draft"].clone());
            }
        } else if item["event"]["kind"] == "turn_completed" {
            break;
        }
    }
    let input = json!({"command": "echo drafted"}).to_string();
    let last = inputs.last().expect("a tool_input draft");
    assert_eq!(last["call"], 0);
    assert_eq!(last["tool"], "shell");
    assert!(last["bytes"].as_u64().unwrap() <= input.len() as u64 && last["bytes"].as_u64().unwrap() > 0);
}

/// efrd's resident memory now, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib * 1024
}

/// Streams a 2 MB answer to a new conversation while 100 subscribers (with or without drafts) read nothing; the
/// highest resident memory of efrd seen meanwhile.
async fn peak_with_100_subscribers(
    efrd: &efr_test_support::daemon::TestDaemon,
    project: &std::path::Path,
    drafts: bool,
) -> u64 {
    let pid = efrd.pid().unwrap();
    let mut client = efrd.client().await.unwrap();
    let sent = prompt(&mut client, project, None, "write a lot").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let mut idle = Vec::new();
    for _ in 0..100 {
        let mut subscriber = efrd.client().await.unwrap();
        let params = json!({"conversation_id": conversation, "after_seq": 0, "drafts": drafts});
        subscriber.send("conversation.subscribe", params, false).await.unwrap();
        idle.push(subscriber);
    }
    let (id, _) = common::subscribe(&mut client, &conversation, Some(0)).await;
    let mut peak = 0;
    let reader = common::events_through(&mut client, id, "turn_completed");
    tokio::pin!(reader);
    loop {
        tokio::select! {
            _ = &mut reader => break,
            () = tokio::time::sleep(Duration::from_millis(20)) => peak = peak.max(rss(pid)),
        }
    }
    peak.max(rss(pid))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_drafts_subscribers_add_less_than_10_mib() {
    // Each side on a fresh efrd (one that already served a turn keeps its freed memory, which blurs the next peak),
    // the sides interleaved, the median of the differences: one noisy peak cannot decide.
    let project = common::project();
    let mut rounds = Vec::new();
    for _ in 0..3 {
        let mut peaks = [0; 2];
        for (side, drafts) in [false, true].into_iter().enumerate() {
            let home = tempfile::tempdir().unwrap();
            let server = model(vec![Reply::streamed(long_answer(2 * 1024 * 1024), 0)]).await;
            let efrd = daemon(home.path(), &server);
            peaks[side] = peak_with_100_subscribers(&efrd, project.path(), drafts).await;
        }
        rounds.push((peaks[1].saturating_sub(peaks[0]), peaks));
    }
    rounds.sort_unstable();
    let (added, [without, with]) = rounds[1];
    let all: Vec<u64> = rounds.iter().map(|(added, _)| added / 1024).collect();
    assert!(
        added < 10 * 1024 * 1024,
        "100 drafts subscribers added {} KiB, the median of {all:?} KiB ({} KiB without drafts, {} KiB with)",
        added / 1024,
        without / 1024,
        with / 1024
    );
    eprintln!(
        "added KiB per round: {all:?}; the median round: {} KiB without, {} KiB with",
        without / 1024,
        with / 1024
    );
}
