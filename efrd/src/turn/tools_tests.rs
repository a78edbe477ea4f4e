//! The turn's own tests of one tool call, with a [`MemorySink`] in place of a conversation: what is decided, asked,
//! run and recorded, in order.

use std::sync::Arc;

use efr_protocol::events::{CallStatus, EventBody, ToolCallCompleted};
use efr_protocol::ids::TurnId;
use efr_protocol::wire::{ApprovalDecision, Launch, Mode};
use tokio_util::sync::CancellationToken;

use super::env::{CallOutput, ToolEnv};
use super::sink::Sink;
use super::sink::memory::MemorySink;
use super::testing::tool_env;
use super::tools::{ModelCall, run_call};
use crate::tools::spec::{APPLY_PATCH, SHELL};

/// Runs one call of `tool` with `input` through `sink`.
async fn call(env: &ToolEnv, sink: &Arc<MemorySink>, tool: &str, freeform: bool, input: &str) -> CallOutput {
    let dyn_sink: Sink = Arc::clone(sink) as Sink;
    let model_call = ModelCall {
        call_id: "c1",
        tool,
        freeform,
        input,
    };
    run_call(env, &dyn_sink, TurnId::new(), model_call, &CancellationToken::new())
        .await
        .expect("the memory sink never goes away")
}

fn shell_input(command: &str) -> String {
    serde_json::json!({ "command": command }).to_string()
}

/// The kinds of the recorded events, in order.
fn kinds(sink: &MemorySink) -> Vec<String> {
    sink.bodies().iter().map(|body| body.kind().to_owned()).collect()
}

fn completion(sink: &MemorySink) -> ToolCallCompleted {
    sink.bodies()
        .into_iter()
        .find_map(|body| match body {
            EventBody::ToolCallCompleted(completed) => Some(completed),
            _ => None,
        })
        .expect("a tool_call_completed")
}

fn started_launch(sink: &MemorySink) -> Option<Launch> {
    sink.bodies().into_iter().find_map(|body| match body {
        EventBody::ToolCallStarted(started) => Some(started.launch),
        _ => None,
    })?
}

async fn close_shell(env: &ToolEnv) {
    let shell = env.shell.lock().await.current().cloned();
    if let Some(shell) = shell {
        shell.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_asks_and_a_denied_command_never_runs() {
    let dir = tempfile::tempdir().unwrap();
    let env = tool_env(dir.path(), "/usr/bin/bwrap", Mode::Manual);
    let sink = MemorySink::answering([ApprovalDecision::Deny]);
    let marker = dir.path().join("home/ran");
    let output = call(
        &env,
        &sink,
        SHELL,
        false,
        &shell_input(&format!("touch {}", marker.display())),
    )
    .await;

    assert!(output.is_error);
    assert!(output.output.contains("the user denied this call"), "{}", output.output);
    assert_eq!(kinds(&sink), ["tool_call_started", "tool_call_completed"]);
    let questions = sink.questions.lock().unwrap();
    assert_eq!(questions.len(), 1);
    assert_eq!(questions[0].1.reason, "manual asks before every command");
    assert_eq!(completion(&sink).status, CallStatus::Denied);
    assert_eq!(started_launch(&sink), Some(Launch::Direct));
    assert!(!marker.exists(), "a denied command ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_command_runs_in_the_hidden_shell_and_its_output_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let env = tool_env(dir.path(), "/usr/bin/bwrap", Mode::Manual);
    let sink = MemorySink::answering([ApprovalDecision::Allow]);
    let output = call(&env, &sink, SHELL, false, &shell_input("echo made-by-the-call; exit 3")).await;
    close_shell(&env).await;

    assert!(output.is_error, "a non-zero exit is an error for the model");
    assert!(output.output.contains("made-by-the-call"), "{}", output.output);
    assert!(output.output.contains("[exit status 3]"), "{}", output.output);
    let completed = completion(&sink);
    assert_eq!((completed.status, completed.exit_code), (CallStatus::Failed, Some(3)));
    assert!(completed.output.contains("made-by-the-call"));
    assert_eq!(kinds(&sink), ["tool_call_started", "tool_call_completed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_floor_refuses_in_full_mode_without_a_question() {
    let dir = tempfile::tempdir().unwrap();
    let env = tool_env(dir.path(), "/usr/bin/bwrap", Mode::Full);
    let sink = MemorySink::answering([]);
    let output = call(&env, &sink, SHELL, false, &shell_input("rm -rf /")).await;

    assert!(output.is_error);
    assert!(
        output.output.starts_with("efr refused this call before it ran"),
        "{}",
        output.output
    );
    assert!(sink.questions.lock().unwrap().is_empty());
    let completed = completion(&sink);
    assert_eq!(completed.status, CallStatus::Failed);
    assert!(completed.refusal.is_some());
    assert_eq!(started_launch(&sink), None, "a refused call has no launch");
}

#[tokio::test]
async fn an_unknown_tool_is_recorded_as_a_failed_call() {
    let dir = tempfile::tempdir().unwrap();
    let env = tool_env(dir.path(), "/usr/bin/bwrap", Mode::Full);
    let sink = MemorySink::answering([]);
    let output = call(&env, &sink, "browse", false, "{}").await;

    assert!(output.is_error);
    assert_eq!(kinds(&sink), ["tool_call_started", "tool_call_completed"]);
    assert_eq!(completion(&sink).output, output.output);
}

#[tokio::test]
async fn cautious_applies_a_patch_inside_the_project_without_a_question() {
    let dir = tempfile::tempdir().unwrap();
    let env = tool_env(dir.path(), "/usr/bin/bwrap", Mode::Cautious);
    let sink = MemorySink::answering([]);
    let patch = "*** Begin Patch\n*** Add File: notes.txt\n+first line\n*** End Patch\n";
    let output = call(&env, &sink, APPLY_PATCH, true, patch).await;

    assert!(!output.is_error, "{}", output.output);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("home/notes.txt")).unwrap(),
        "first line\n"
    );
    assert!(sink.questions.lock().unwrap().is_empty());
    let completed = completion(&sink);
    assert_eq!(completed.status, CallStatus::Ok);
    let changes = completed.changes.expect("the patch's changes");
    assert_eq!(changes.files.len(), 1);
    assert_eq!((changes.files[0].added, changes.files[0].removed), (1, 0));
}

#[tokio::test]
async fn cautious_asks_before_a_patch_outside_the_project_and_a_denial_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let env = tool_env(dir.path(), "/usr/bin/bwrap", Mode::Cautious);
    let sink = MemorySink::answering([ApprovalDecision::Deny]);
    let outside = dir.path().join("outside.txt");
    let patch = format!(
        "*** Begin Patch\n*** Add File: {}\n+x\n*** End Patch\n",
        outside.display()
    );
    let output = call(&env, &sink, APPLY_PATCH, true, &patch).await;

    assert!(output.is_error);
    assert_eq!(sink.questions.lock().unwrap().len(), 1);
    assert_eq!(completion(&sink).status, CallStatus::Denied);
    assert!(!outside.exists());
}

#[tokio::test]
async fn a_patch_that_cannot_apply_fails_before_any_decision() {
    let dir = tempfile::tempdir().unwrap();
    let env = tool_env(dir.path(), "/usr/bin/bwrap", Mode::Manual);
    let sink = MemorySink::answering([ApprovalDecision::Allow]);
    let patch = "*** Begin Patch\n*** Update File: missing.txt\n@@\n-a\n+b\n*** End Patch\n";
    let output = call(&env, &sink, APPLY_PATCH, true, patch).await;

    assert!(output.is_error);
    assert!(output.output.contains("no file changed"), "{}", output.output);
    assert!(
        sink.questions.lock().unwrap().is_empty(),
        "nothing to ask about a patch that cannot apply"
    );
    assert_eq!(kinds(&sink), ["tool_call_started", "tool_call_completed"]);
}
