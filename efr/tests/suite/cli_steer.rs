//! The input row of a running turn in a real terminal (tmux): a line and Enter steers the turn (its next model call
//! reads it), a line and Tab queues it, Ctrl+X withdraws the queued one; then Ctrl+C on a turn with an unread steer
//! asks whether to send it again, and `y` resends it as the prompt that runs next.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::time::Duration;

use common::tmux::Tmux;
use common::{daemon, efr, model, shell, text};
use efr_test_support::scripted::{Reply, ReplyEvent, ScriptedModel};

/// The inputs of the model calls so far, as JSON text.
fn calls(server: &ScriptedModel) -> Vec<String> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/v1/responses")
        .map(|r| r.body["input"].to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steer_queue_withdraw_and_an_interrupt_that_resends_in_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let slow = Reply::of(vec![
        ReplyEvent::Text("thinking it over ".into()),
        ReplyEvent::DelayMs(20_000),
        ReplyEvent::Text("never".into()),
    ]);
    let server = model(vec![
        shell("call_wait", "sleep 4"),
        text("Steered as asked."),
        slow,
        text("Resent steer answered."),
    ])
    .await;
    let _efrd = daemon(home.path(), &server, true);
    let tmux = Tmux::start(project.path(), home.path());
    tmux.wait_for("$ ", 10).await;
    let efr = efr().display().to_string();

    tmux.literal(&format!("'{efr}' --mode full --new 'wait a bit'; echo EXIT=$?"));
    tmux.keys(&["Enter"]);
    tmux.wait_for("$ sleep 4", 30).await;
    // Enter steers.
    tmux.literal("use the other crate");
    tmux.keys(&["Enter"]);
    tmux.wait_for("steered: the turn's next model call reads it", 10).await;
    // Tab queues; Ctrl+X takes it back.
    tmux.literal("then update the docs");
    tmux.keys(&["Tab"]);
    tmux.wait_for("queued for after this turn", 10).await;
    tmux.keys(&["C-x"]);
    tmux.wait_for("withdrew: then update the docs", 10).await;
    let pane = tmux.wait_for_exit(30).await;
    assert!(pane.contains("EXIT=0"), "{pane}");
    assert!(pane.contains("Steered as asked."), "{pane}");
    let inputs = calls(&server);
    assert_eq!(inputs.len(), 2, "the withdrawn prompt never ran: {inputs:?}");
    assert!(!inputs[0].contains("use the other crate"));
    assert!(
        inputs[1].contains("use the other crate"),
        "the next model call read the steer"
    );

    // A steer that no model call read, then Ctrl+C: efr asks, `y` resends it as the prompt that runs next.
    tmux.keys(&["C-l"]);
    tmux.run(&["clear-history", "-t", "0"]);
    tmux.literal(&format!("'{efr}' --mode full 'think slowly'; echo EXIT=$?"));
    tmux.keys(&["Enter"]);
    // The model's partial paragraph is not shown yet (Markdown per finished block): wait for its call.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while calls(&server).len() < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "the second turn's model call did not come"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tmux.literal("and mind the tests");
    tmux.keys(&["Enter"]);
    let pane = tmux.wait_for("and mind the tests steered:", 10).await;
    eprintln!("{pane}");
    tmux.keys(&["C-c"]);
    tmux.wait_for("send your 1 unread steer again after it? [y]es / [n]o", 10)
        .await;
    tmux.keys(&["y"]);
    let pane = tmux.wait_for_exit(30).await;
    assert!(pane.contains("EXIT=130"), "{pane}");
    assert!(pane.contains("your unread steers run next"), "{pane}");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while calls(&server).len() < 4 {
        assert!(std::time::Instant::now() < deadline, "the resent steer did not run");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        calls(&server)[3].contains("and mind the tests"),
        "the resent prompt carries the steer"
    );
}
