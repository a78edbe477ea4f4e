//! A mistyped command is not a prompt: `efr conversations` and `efr stauts` send nothing to the model (the scripted
//! model server counts its requests), say "did you mean `efr …`?" and fail in a pipe, while `efr prompt WORD` still
//! sends the word.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use common::{daemon, efr_run, model, text, texts};

/// The requests that reached the model (prompts), not the models listing.
fn prompts(server: &efr_test_support::scripted::ScriptedModel) -> usize {
    server.requests().iter().filter(|r| r.path == "/v1/responses").count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mistyped_command_sends_nothing_and_efr_prompt_still_sends_the_word() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![text("listed")]).await;
    let _efrd = daemon(home.path(), &server, true);

    for (word, meant) in [
        ("conversations", "efr context"),
        ("stauts", "efr status"),
        ("list", "efr context"),
        ("log", "efr diff"),
        ("stop", "efr shell stop"),
        ("Sandbox", "efr sandbox"),
    ] {
        let out = efr_run(home.path(), project.path(), &[word], None).await;
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(1), "{word}: {stdout}\n{stderr}");
        assert!(stderr.contains(&format!("did you mean `{meant}`?")), "{word}: {stderr}");
        assert!(stderr.contains(&format!("`efr prompt {word}`")), "{word}: {stderr}");
        assert_eq!(stdout, "", "{word}");
    }
    // With a prompt's flags in front it is still one mistyped word.
    let flagged = efr_run(home.path(), project.path(), &["--mode", "full", "stauts"], None).await;
    assert_eq!(flagged.status.code(), Some(1), "{}", texts(&flagged).1);
    assert_eq!(prompts(&server), 0, "nothing reached the model");

    let sent = efr_run(home.path(), project.path(), &["prompt", "conversations"], None).await;
    let (stdout, stderr) = texts(&sent);
    assert_eq!(sent.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("turn completed"), "{stdout}");
    assert_eq!(prompts(&server), 1);
    let last = server
        .requests()
        .into_iter()
        .rfind(|r| r.path == "/v1/responses")
        .unwrap();
    assert!(last.body.to_string().contains("conversations"), "{}", last.body);
}
