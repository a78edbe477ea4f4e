//! Ctrl+B in a real terminal (tmux): the running shell command of a turn moves to a background job. A command
//! outside the sandbox shows its preview first, and `y` moves it; `efr jobs` then lists it, and the turn goes on.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use common::tmux::Tmux;
use common::{daemon, efr, efr_run, model, text, texts};
use efr_test_support::scripted::Reply;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_b_moves_a_running_sleep_into_a_job_that_efr_jobs_lists() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let marker = 600_000 + std::process::id() % 40_000;
    let line = format!("sleep {marker}");
    let call = Reply::shell_with("call_run", &serde_json::json!({"command": line, "timeout": 600}));
    let server = model(vec![call, text("It runs in the background now.")]).await;
    let _efrd = daemon(home.path(), &server, true);
    let tmux = Tmux::start(project.path(), home.path());
    tmux.wait_for("$ ", 10).await;
    let efr = efr().display().to_string();
    tmux.literal(&format!("'{efr}' --mode full --new 'sleep a while'; echo EXIT=$?"));
    tmux.keys(&["Enter"]);
    tmux.wait_for(&format!("$ {line}"), 30).await;
    // Ctrl+B before the shell started the command says so; pressed again, it asks.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        tmux.keys(&["C-b"]);
        let pane = tmux
            .wait_until("a preview or a refusal", 10, |pane| {
                pane.contains("keep it running as a background job") || pane.contains("not moved:")
            })
            .await;
        if pane.contains("keep it running as a background job") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never asked:\n{pane}");
        tmux.run(&["clear-history"]);
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    tmux.literal("y");
    tmux.wait_for("moved to background job j1", 10).await;
    tmux.wait_for(&format!("job j1 moved from its call: {line}"), 10).await;
    let pane = tmux.wait_for_exit(30).await;
    assert!(pane.contains("EXIT=0"), "{pane}");
    assert!(pane.contains("It runs in the background now."), "{pane}");

    let out = efr_run(home.path(), project.path(), &["jobs"], None).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let row = stdout.lines().nth(1).unwrap_or_default();
    assert!(row.starts_with("j1  running") && row.ends_with(&line), "{stdout}");
    let out = efr_run(home.path(), project.path(), &["jobs", "stop", "j1"], None).await;
    assert_eq!(texts(&out).0, "j1 stopped\n", "{:?}", texts(&out));
    let left = std::process::Command::new("pgrep")
        .args(["-f", "-x", &line])
        .output()
        .unwrap();
    assert!(left.stdout.is_empty(), "the moved sleep outlived its stop");
}
