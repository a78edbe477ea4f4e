//! The real `efr` in a real terminal (tmux): one turn in manual mode with streamed Markdown, an approval answered
//! with the `y` key, and a hidden password wait answered with no echo; then a second turn whose `sleep 30` is
//! interrupted with Ctrl+C, so the turn ends interrupted and efr exits 130.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::time::{Duration, Instant};

use common::tmux::Tmux;
use common::{daemon, efr, model, shell, text};
use efr_test_support::scripted::{Reply, ReplyEvent};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_turn_in_a_terminal_then_ctrl_c_interrupts_the_next() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let first = Reply::of(vec![
        ReplyEvent::Text("## Plan\n\nI will ask for a **password** with `read`.\n\n".into()),
        ReplyEvent::shell("call_pw", "read -s -p 'Password: ' pw; echo got-${#pw}"),
    ])
    .with_stop("tool_use")
    .with_chunks(9, 20);
    let second = shell("call_sleep", "sleep 30");
    let server = model(vec![first, text("It was read."), second, text("never")]).await;
    let _efrd = daemon(home.path(), &server, true);
    let tmux = Tmux::start(project.path(), home.path());
    tmux.wait_for("$ ", 10).await;

    let efr = efr().display().to_string();
    tmux.literal(&format!(
        "'{efr}' --mode manual --new 'ask me a password'; echo EXIT=$?"
    ));
    tmux.keys(&["Enter"]);

    // Streamed Markdown: the heading's and the paragraph's words, rendered (no `**` nor backticks left).
    let pane = tmux.wait_for("[y]es / [n]o", 30).await;
    assert!(
        pane.contains("Plan") && pane.contains("I will ask for a password with read."),
        "{pane}"
    );
    assert!(!pane.contains("**password**") && !pane.contains("`read`"), "{pane}");
    assert!(pane.contains("$ read -s -p 'Password: ' pw; echo got-${#pw}"), "{pane}");
    assert!(!pane.contains("[a]lways"), "no rule offered here: {pane}");

    // One key answers the question: no Enter.
    tmux.keys(&["y"]);
    tmux.wait_for("waits for hidden input", 30).await;
    tmux.literal("hunter2");
    tmux.keys(&["Enter"]);
    let pane = tmux.wait_for_exit(30).await;
    assert!(pane.contains("EXIT=0"), "{pane}");
    assert!(pane.contains("got-7"), "the command read 7 characters: {pane}");
    assert!(pane.contains("It was read."), "{pane}");
    assert!(!pane.contains("hunter2"), "a hidden answer is never shown: {pane}");

    // The second turn goes to the terminal's conversation (no --new); Ctrl+C interrupts it, exit 130.
    tmux.keys(&["C-l"]);
    tmux.run(&["clear-history", "-t", "0"]);
    tmux.literal(&format!("'{efr}' --mode full 'now sleep'; echo EXIT=$?"));
    tmux.keys(&["Enter"]);
    tmux.wait_for("$ sleep 30", 30).await;
    let started = Instant::now();
    tmux.keys(&["C-c"]);
    let pane = tmux.wait_for_exit(25).await;
    assert!(pane.contains("EXIT=130"), "{pane}");
    assert!(pane.contains("interrupted"), "{pane}");
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the interrupt did not wait for sleep 30"
    );

    // Both turns went to one conversation, and the second model call of the second turn never came.
    let calls = server.requests().iter().filter(|r| r.path == "/v1/responses").count();
    assert_eq!(calls, 3, "two calls in the first turn, one in the second");
    let third = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/v1/responses")
        .nth(2)
        .unwrap()
        .body;
    assert!(
        third.to_string().contains("got-7"),
        "the second turn continues the first's conversation"
    );
}

/// On a terminal a mistyped command asks "did you mean `efr …`?": `n` sends nothing (exit 1), `y` runs the command
/// it meant, `p` sends the word as a prompt after all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mistyped_command_on_a_terminal_asks_what_was_meant() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![text("Sent after all.")]).await;
    let _efrd = daemon(home.path(), &server, true);
    let tmux = Tmux::start(project.path(), home.path());
    tmux.wait_for("$ ", 10).await;
    let efr = efr().display().to_string();
    let prompts = || server.requests().iter().filter(|r| r.path == "/v1/responses").count();

    for (answer, exit, shown) in [("n", "EXIT=1", "nothing was sent"), ("y", "EXIT=0", " · up ")] {
        tmux.keys(&["C-l"]);
        tmux.run(&["clear-history", "-t", "0"]);
        tmux.literal(&format!("'{efr}' stauts; echo EXIT=$?"));
        tmux.keys(&["Enter"]);
        tmux.wait_for("did you mean `efr status`? [y: run it", 20).await;
        tmux.literal(answer);
        tmux.keys(&["Enter"]);
        let pane = tmux.wait_for_exit(20).await;
        assert!(pane.contains(exit) && pane.contains(shown), "{answer}: {pane}");
    }
    assert_eq!(prompts(), 0, "neither answer sent a prompt");

    tmux.keys(&["C-l"]);
    tmux.run(&["clear-history", "-t", "0"]);
    tmux.literal(&format!("'{efr}' --new stauts; echo EXIT=$?"));
    tmux.keys(&["Enter"]);
    tmux.wait_for("did you mean", 20).await;
    tmux.literal("p");
    tmux.keys(&["Enter"]);
    let pane = tmux.wait_for_exit(30).await;
    assert!(pane.contains("EXIT=0") && pane.contains("Sent after all."), "{pane}");
    assert_eq!(prompts(), 1);
}
