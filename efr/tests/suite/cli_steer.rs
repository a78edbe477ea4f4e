//! The input row of a running turn in a real terminal (tmux): a line and Enter steers the turn (its next model call
//! reads it), a line and Tab queues it, Ctrl+X withdraws the queued one; then Ctrl+C on a turn with an unread steer
//! asks whether to send it again, and `y` resends it as the prompt that runs next. And the drafts of a turn on a
//! terminal: the reasoning as a dim live line, the text as it streams.

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
    // The pane holds the first run's `EXIT=0` too: wait for the second exit.
    let pane = tmux
        .wait_until("a second EXIT=<code>", 30, |pane| {
            pane.match_indices("EXIT=")
                .filter(|(at, _)| pane[at + 5..].starts_with(|c: char| c.is_ascii_digit()))
                .count()
                >= 2
        })
        .await;
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

/// The drafts on a terminal: the reasoning as a dim live line while the model thinks, then the text's unfinished
/// line shown plainly as it streams, before any event of the message; the finished answer rendered as Markdown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_and_text_drafts_show_live_in_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let reply = Reply::of(vec![
        ReplyEvent::Reasoning {
            text: "weighing the two crates".into(),
            title: None,
        },
        ReplyEvent::DelayMs(3000),
        ReplyEvent::Text("The **answer** streams without".into()),
        ReplyEvent::DelayMs(3000),
        ReplyEvent::Text(" a break.\n\nDone.".into()),
    ]);
    let server = model(vec![reply]).await;
    let _efrd = daemon(home.path(), &server, true);
    let tmux = Tmux::start(project.path(), home.path());
    tmux.wait_for("$ ", 10).await;
    let efr = efr().display().to_string();
    tmux.literal(&format!("'{efr}' --new 'which crate?'; echo EXIT=$?"));
    tmux.keys(&["Enter"]);

    tmux.wait_for("weighing the two crates", 20).await;
    let styled = String::from_utf8_lossy(&tmux.run(&["capture-pane", "-p", "-e"]).stdout).into_owned();
    // Dim from the last `ESC[2m` before it, with no reset between (tmux writes an attribute where it changes).
    let at = styled.find("weighing the two crates").unwrap();
    let dim = styled[..at]
        .rfind("\x1b[2m")
        .expect("a dim attribute before the reasoning");
    assert!(
        !["\x1b[0m", "\x1b[m", "\x1b[22m"]
            .iter()
            .any(|reset| styled[dim..at].contains(reset)),
        "the reasoning is dim: {styled:?}"
    );
    // The text replaces the reasoning as it streams, plainly (the block is not finished: no Markdown yet).
    let pane = tmux.wait_for("The **answer** streams without", 20).await;
    assert!(!pane.contains("weighing the two crates"), "{pane}");
    assert!(
        !pane.contains("EXIT=0"),
        "shown before the message is committed whole: {pane}"
    );
    let pane = tmux.wait_for_exit(20).await;
    assert!(pane.contains("EXIT=0"), "{pane}");
    assert!(
        pane.contains("The answer streams without a break."),
        "rendered as Markdown at last: {pane}"
    );
    assert!(!pane.contains("**answer**"), "{pane}");
}
