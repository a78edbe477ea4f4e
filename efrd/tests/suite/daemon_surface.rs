//! Surface changes of auto's contained calls through the real efrd, `efr-launcher` and bubblewrap
//! (`docs/auto.md`, "Surface changes"): a call that writes a git hook, an `.envrc`, an executable in a PATH folder
//! of the project, or a plain source file; the questions, their answers (keep, and not: the trash and the old
//! content), the refusals of sandbox.surface_respond, and the turn's report.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use serde_json::{Value, json};

use common::auto::{bounded, daemon_with, tempdir};
use common::tools::{event_of, patch_call, shell_call, start, text, tool_output};
use common::{command_id, events_until, git, model, whole_log};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn respond(conversation: &str, question: &str, keep: bool) -> Value {
    json!({"command_id": command_id(), "conversation_id": conversation, "question_id": question, "keep": keep})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn surface_changes_are_reported_held_asked_and_answered() {
    let home = tempdir();
    let project = tempdir();
    let root = project.path();
    git(root, &["init", "-q"]);
    // Git takes hooks from .githooks (the sandbox keeps .git/hooks read-only; this folder it may write).
    git(root, &["config", "core.hooksPath", ".githooks"]);
    std::fs::write(root.join(".envrc"), "export OLD=1\n").unwrap();
    let hook = "mkdir -p .githooks && printf '#!/bin/sh\\nexit 0\\n' > .githooks/pre-commit && \
                chmod 755 .githooks/pre-commit";
    let server = model(vec![
        shell_call("call_hook", hook),
        shell_call("call_envrc", "echo 'export NEW=1' > .envrc"),
        shell_call("call_src", "echo 'fn main() {}' > main.rs"),
        shell_call(
            "call_bin",
            "mkdir -p bin && printf '#!/bin/sh\\necho deploy\\n' > bin/deploy && chmod 755 bin/deploy",
        ),
        text("done"),
    ])
    .await;
    let path = format!("{}:{}", root.join("bin").display(), std::env::var("PATH").unwrap());
    let efrd = daemon_with(home.path(), &server, &[("PATH", &path)]);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, root, "auto", "set up the repo").await;
    let events = bounded("the auto turn", events_until(&mut client, id, "turn_completed")).await;

    // The hook: changed, asked, and held (not executable until kept); the model hears of it.
    let changed = event_of(&events, "sandbox_surface_changed", "call_hook");
    assert_eq!(
        changed["changes"],
        json!([{"path": ".githooks/pre-commit", "surface": "git_hook", "change": "added", "runs_code": true}]),
        "{changed}"
    );
    let asked = event_of(&events, "surface_question_requested", "call_hook");
    assert_eq!(asked["question_id"], "s1", "{asked}");
    assert_eq!(asked["held"], true, "{asked}");
    assert!(asked.get("turn_id").is_some(), "{asked}");
    assert_eq!(mode(&root.join(".githooks/pre-commit")), 0o644);
    assert!(tool_output(&server, "call_hook").contains("held"), "the model is told");

    // The .envrc: changed and asked; direnv reads it as text, so nothing is held.
    let asked = event_of(&events, "surface_question_requested", "call_envrc");
    assert_eq!(asked["question_id"], "s2", "{asked}");
    assert_eq!(asked["change"]["surface"], "envrc", "{asked}");
    assert_eq!(asked["change"]["change"], "modified", "{asked}");
    assert!(asked.get("held").is_none(), "{asked}");

    // A plain source file is no surface.
    assert!(
        !events
            .iter()
            .any(|e| e["kind"] == "sandbox_surface_changed" && e["call_id"] == "call_src"),
        "{events:#?}"
    );
    assert!(root.join("main.rs").is_file());

    // An executable in a PATH folder of the project.
    let asked = event_of(&events, "surface_question_requested", "call_bin");
    assert_eq!(asked["question_id"], "s3", "{asked}");
    assert_eq!(asked["change"]["surface"], "path_executable", "{asked}");
    assert_eq!(mode(&root.join("bin/deploy")), 0o644);

    // The turn went on without answers; its report, before its end, says each is pending.
    let report = events
        .iter()
        .position(|e| e["kind"] == "turn_surface_report")
        .expect("a report");
    let last_call = events.iter().rposition(|e| e["kind"] == "tool_call_completed").unwrap();
    assert!(report > last_call, "the report comes after the turn's last call");
    let outcomes: Vec<(String, String)> = events[report]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["question_id"].as_str().unwrap().to_owned(),
                f["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let pending = |id: &str| (id.to_owned(), "pending".to_owned());
    assert_eq!(outcomes, [pending("s1"), pending("s2"), pending("s3")]);

    // Not kept: the hook goes to efr's trash.
    let answer = client
        .ok("sandbox.surface_respond", respond(&conversation, "s1", false))
        .await
        .unwrap();
    assert_eq!(answer["outcome"], "removed", "{answer}");
    assert!(!root.join(".githooks/pre-commit").exists());
    let trash = client.ok("trash.list", json!({})).await.unwrap();
    let trashed: Vec<&str> = trash["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(trashed.iter().any(|p| p.ends_with(".githooks/pre-commit")), "{trash}");

    // An answered question is a conflict; one never asked is not found; a bad id is invalid.
    let again = client
        .call("sandbox.surface_respond", respond(&conversation, "s1", true))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(again.code.as_str(), "conflict", "{again:?}");
    let unknown = client
        .call("sandbox.surface_respond", respond(&conversation, "s9", true))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(unknown.code.as_str(), "not_found", "{unknown:?}");
    let bad = client
        .call("sandbox.surface_respond", respond(&conversation, "q1", true))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(bad.code.as_str(), "invalid", "{bad:?}");

    // Kept: the executable gets its bits back.
    let answer = client
        .ok("sandbox.surface_respond", respond(&conversation, "s3", true))
        .await
        .unwrap();
    assert_eq!(answer["outcome"], "kept", "{answer}");
    assert_eq!(mode(&root.join("bin/deploy")), 0o755);

    // Not kept, a changed file: the old content comes back, the new one is in the trash.
    let answer = client
        .ok("sandbox.surface_respond", respond(&conversation, "s2", false))
        .await
        .unwrap();
    assert_eq!(answer["outcome"], "removed", "{answer}");
    assert_eq!(std::fs::read_to_string(root.join(".envrc")).unwrap(), "export OLD=1\n");

    // The answers are in the log, outside the turn.
    let log = whole_log(&mut client, &conversation).await;
    let answers: Vec<(&str, bool, &str)> = log
        .iter()
        .filter(|e| e["kind"] == "surface_question_answered")
        .map(|e| {
            assert!(e.get("turn_id").is_none(), "{e}");
            (
                e["question_id"].as_str().unwrap(),
                e["keep"].as_bool().unwrap(),
                e["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        answers,
        [("s1", false, "removed"), ("s3", true, "kept"), ("s2", false, "removed")]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_without_surface_changes_reports_none_and_numbering_survives_a_restart() {
    let home = tempdir();
    let project = tempdir();
    let root = project.path();
    let server = model(vec![
        shell_call(
            "call_src",
            "echo 'fn main() {}' > main.rs && mkdir -p src && echo x > src/lib.rs",
        ),
        text("plain"),
        shell_call("call_envrc", "echo 'export A=1' > .envrc"),
        text("envrc"),
        shell_call("call_tasks", "mkdir -p .vscode && echo '{}' > .vscode/tasks.json"),
        text("tasks"),
    ])
    .await;
    let mut efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, root, "auto", "plain files").await;
    let events = bounded("the plain turn", events_until(&mut client, id, "turn_completed")).await;
    assert!(
        !events.iter().any(|e| {
            let kind = e["kind"].as_str().unwrap();
            kind.contains("surface")
        }),
        "{events:#?}"
    );

    let sent = common::tools::prompt_to(&mut client, Some(&conversation), root, "auto", "an envrc").await;
    let turn = sent["turn_id"].as_str().unwrap().to_owned();
    let events = bounded(
        "the envrc turn",
        common::events_through(&mut client, id, "turn_completed"),
    )
    .await;
    let asked = event_of(&events, "surface_question_requested", "call_envrc");
    assert_eq!(asked["question_id"], "s1", "{asked}");
    assert_eq!(asked["turn_id"], turn.as_str());

    // After a restart the hold is gone from memory: the question is unavailable, the change stays, and the next
    // question is s2, not s1 again.
    efrd.stop(std::time::Duration::from_secs(20)).unwrap();
    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    let orphan = client
        .call("sandbox.surface_respond", respond(&conversation, "s1", false))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(orphan.code.as_str(), "unavailable", "{orphan:?}");
    assert_eq!(std::fs::read_to_string(root.join(".envrc")).unwrap(), "export A=1\n");
    let (id, _) = common::subscribe(&mut client, &conversation, None).await;
    common::tools::prompt_to(&mut client, Some(&conversation), root, "auto", "tasks").await;
    let events = bounded(
        "the tasks turn",
        common::events_through(&mut client, id, "turn_completed"),
    )
    .await;
    let asked = event_of(&events, "surface_question_requested", "call_tasks");
    assert_eq!(asked["question_id"], "s2", "{asked}");
    assert_eq!(asked["change"]["surface"], "editor_tasks", "{asked}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_that_writes_an_envrc_is_a_surface_change_and_putting_it_back_removes_it() {
    let home = tempdir();
    let project = tempdir();
    let root = project.path();
    git(root, &["init", "-q"]);
    let patch = "*** Begin Patch\n*** Add File: .envrc\n+export TOKEN_URL=https://x.example\n*** Add File: src.txt\n+plain\n*** End Patch";
    let server = model(vec![patch_call("call_patch", patch), text("done")]).await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, root, "auto", "add an envrc").await;
    let events = bounded("the auto turn", events_until(&mut client, id, "turn_completed")).await;

    let done = event_of(&events, "tool_call_completed", "call_patch");
    assert_eq!(done["status"], "ok", "{done}");
    let changed = event_of(&events, "sandbox_surface_changed", "call_patch");
    assert_eq!(
        changed["changes"],
        json!([{"path": ".envrc", "surface": "envrc", "change": "added", "runs_code": true}]),
        "only the .envrc, not the plain file: {changed}"
    );
    let asked = event_of(&events, "surface_question_requested", "call_patch");
    let question = asked["question_id"].as_str().unwrap().to_owned();
    let answer = client
        .ok("sandbox.surface_respond", respond(&conversation, &question, false))
        .await
        .unwrap();
    assert_eq!(answer["outcome"], "removed", "{answer}");
    assert!(
        !root.join(".envrc").exists(),
        "an added file that is not kept is gone (to efr's trash)"
    );
    assert!(root.join("src.txt").is_file());
}
