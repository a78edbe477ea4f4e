//! Two turns at once in one project, through the real efrd: each claims only the changes it can tell are its own, and
//! marks the others `maybe_other` (docs/protocol.md, file_change; `efrd::turn::overlap`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use efr_test_support::scripted::Step;
use serde_json::{Value, json};

use common::tools::{patch_call, shell_call, start, text};
use common::{daemon, events_until, model};

/// The changed files of a `changes` member: (path, maybe_other).
fn marked(changes: &Value) -> Vec<(String, bool)> {
    changes["files"]
        .as_array()
        .unwrap_or_else(|| panic!("no files in {changes}"))
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["maybe_other"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

fn completed_call<'a>(events: &'a [Value], call_id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["kind"] == "tool_call_completed" && e["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no tool_call_completed of {call_id}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_turns_in_one_project_claim_their_own_changes_and_mark_the_others() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(root)
        .status()
        .expect("git (install the Debian package git)");
    assert!(init.success());
    std::fs::write(root.join("kept.txt"), "kept\n").unwrap();
    // Turn A's call says it runs (after its first snapshot), waits (at most 20 s) for the file that turn B's patch
    // adds, then writes its own: the call overlaps B, so nothing tells A's writes from B's.
    let wait = "touch started; for i in $(seq 400); do [ -e go ] && break; sleep 0.05; done; echo a > a.txt";
    let patch = "*** Begin Patch\n*** Add File: go\n+go\n*** Add File: b.txt\n+b\n*** End Patch\n";
    let server = model(vec![
        shell_call("call_a", wait),
        patch_call("call_b", patch),
        text("done"),
        text("done"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut first = efrd.client().await.unwrap();
    let mut second = efrd.client().await.unwrap();
    let (sent_a, conversation_a, sub_a) = start(&mut first, root, "full", "write a").await;
    let started = events_until(&mut first, sub_a, "tool_call_started").await;
    assert_eq!(started.last().unwrap()["call_id"], "call_a");
    let running = std::time::Instant::now();
    while !root.join("started").exists() {
        assert!(running.elapsed().as_secs() < 30, "A's call did not start");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    let (_, conversation_b, sub_b) = start(&mut second, root, "full", "write b").await;
    let events_b = events_until(&mut second, sub_b, "turn_completed").await;
    let events_a = events_until(&mut first, sub_a, "turn_completed").await;

    // B's patch wrote exactly its files: its own, never marked.
    let patch_changes = marked(&completed_call(&events_b, "call_b")["changes"]);
    assert_eq!(patch_changes, [("b.txt".to_owned(), false), ("go".to_owned(), false)]);
    // B's turn: its patch's files are its own; anything else it saw (A's write, when A was quick) is marked.
    let turn_b = marked(&events_b.last().unwrap()["changes"]);
    for (path, maybe_other) in &turn_b {
        assert_eq!(*maybe_other, path == "a.txt", "B's turn: {turn_b:?}");
    }
    assert!(turn_b.iter().any(|(p, _)| p == "b.txt") && turn_b.iter().any(|(p, _)| p == "go"));

    // A's call overlapped B's turn: every change in it may be B's.
    let call_a = marked(&completed_call(&events_a, "call_a")["changes"]);
    assert_eq!(
        call_a,
        [
            ("a.txt".to_owned(), true),
            ("b.txt".to_owned(), true),
            ("go".to_owned(), true),
            ("started".to_owned(), true)
        ]
    );
    let done_a = events_a.last().unwrap();
    let turn_a = marked(&done_a["changes"]);
    assert!(
        turn_a.iter().all(|(_, maybe_other)| *maybe_other),
        "A's turn: {turn_a:?}"
    );
    assert_eq!(turn_a.len(), 4, "{turn_a:?}");

    // conversation.diff marks them as the end event did, also read back later.
    let diff = first
        .ok("conversation.diff", json!({"turn_id": sent_a["turn_id"], "stat": true}))
        .await
        .unwrap();
    assert_eq!(diff["changes"], done_a["changes"]);

    // Undo of A would undo B's work too: each change that may be B's is a conflict, and nothing is written.
    let refused = first
        .call(
            "turn.undo",
            json!({"command_id": common::command_id(), "conversation_id": conversation_a, "turn_id": sent_a["turn_id"]}),
        )
        .await
        .unwrap()
        .unwrap_err();
    let data = refused.data.as_ref().unwrap_or_else(|| panic!("{refused:?}"));
    assert_eq!(data["refused"]["kind"], "conflicts", "{refused:?}");
    assert_eq!(
        data["refused"]["paths"],
        json!(["a.txt", "b.txt", "go", "started"]),
        "{refused:?}"
    );
    assert!(root.join("b.txt").exists() && root.join("a.txt").exists());
    let planned = first
        .ok(
            "turn.undo",
            json!({"command_id": common::command_id(), "conversation_id": conversation_a, "turn_id": sent_a["turn_id"], "dry_run": true}),
        )
        .await
        .unwrap();
    let notes = planned["notes"].to_string();
    assert!(notes.contains("another turn ran in the project"), "{planned}");

    // A later turn that runs alone claims what it changes.
    server.push(Step::Reply(shell_call("call_c", "echo c > c.txt")));
    server.push(Step::Reply(text("done")));
    let sent_c = common::tools::prompt_to(&mut second, Some(&conversation_b), root, "full", "write c").await;
    let events_c = events_until(&mut second, sub_b, "turn_completed").await;
    assert_eq!(events_c.last().unwrap()["turn_id"], sent_c["turn_id"]);
    assert_eq!(
        marked(&completed_call(&events_c, "call_c")["changes"]),
        [("c.txt".to_owned(), false)]
    );
    assert_eq!(
        marked(&events_c.last().unwrap()["changes"]),
        [("c.txt".to_owned(), false)]
    );
}
