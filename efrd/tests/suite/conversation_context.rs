//! conversation.context with a real efrd and the scripted model (docs/protocol.md, "What fills the context"): after
//! a turn in a project with a nested `AGENTS.md`, the result lists every instruction file with its size and whether
//! it was cut, the history's parts and the turn's count; bad requests get clear errors.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use efr_protocol::ErrorCode;
use efr_protocol::wire::{ContextPartKind, ConversationContextResult, InstructionFileState, InstructionScope};
use efr_test_support::scripted::{Reply, ScriptUsage};
use serde_json::json;

use crate::common::tools::{shell_call, start, text};
use crate::common::{daemon, events_until, model};

/// A scripted reply with usage, so that the turn has a real count.
fn counted(mut reply: Reply, input: u64, cached_input: u64) -> Reply {
    reply.usage = Some(ScriptUsage {
        input,
        cached_input,
        output: 20,
        ..ScriptUsage::default()
    });
    reply
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_turn_the_context_lists_the_instruction_files_and_the_history() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(project.path()).unwrap();
    let cwd = root.join("crates/core");
    std::fs::create_dir_all(&cwd).unwrap();
    let status = std::process::Command::new("git")
        .args(["init", "-q", "-b", "trunk"])
        .arg(&root)
        .status()
        .expect("git runs");
    assert!(status.success());
    let global = home.path().join("config");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::write(global.join("AGENTS.md"), "Answer in English.\n").unwrap();
    let root_text = "Run `cargo test` before you answer.\n";
    std::fs::write(root.join("AGENTS.md"), root_text).unwrap();
    // Past the default size bound of all files together (32 KiB): the nested file is cut.
    let nested_text = "Keep functions short.\n".repeat(2_000);
    std::fs::write(cwd.join("AGENTS.md"), &nested_text).unwrap();

    let server = model(vec![
        counted(shell_call("call_ls", "ls"), 900, 0),
        counted(text("done"), 1_400, 800),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, &cwd, "cautious", "look around").await;
    events_until(&mut client, id, "turn_completed").await;

    let value = client
        .ok("conversation.context", json!({ "conversation_id": conversation }))
        .await
        .unwrap();
    let context: ConversationContextResult = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(context.model.id, "gpt-5");
    assert!(context.model.window > 0);
    // The default `[context]`: compaction starts by itself at 80% of the window; the hard cap is the window.
    assert_eq!(
        context.model.trigger,
        context.model.window / 100 * 80 + context.model.window % 100 * 80 / 100
    );
    assert_eq!(context.model.hard_cap, context.model.window);
    assert!(context.model.auto);
    assert!(context.compactions.is_empty());

    let kinds: Vec<_> = context.parts.iter().map(|p| p.kind).collect();
    let known: Vec<_> = ContextPartKind::ALL
        .iter()
        .copied()
        .filter(|k| *k != ContextPartKind::Unknown)
        .collect();
    assert_eq!(kinds, known, "one part per kind, in the order of the request");
    let part = |kind| context.parts.iter().find(|p| p.kind == kind).unwrap();
    assert_eq!(
        context.estimate.bytes,
        context.parts.iter().map(|p| p.bytes).sum::<u64>()
    );

    let files = &part(ContextPartKind::ProjectInstructions).files;
    let listed: Vec<_> = files.iter().map(|f| (f.path.clone(), f.scope, f.state)).collect();
    assert_eq!(
        listed,
        [
            (
                global.join("AGENTS.md"),
                InstructionScope::Global,
                InstructionFileState::Read
            ),
            (
                root.join("AGENTS.md"),
                InstructionScope::Project,
                InstructionFileState::Read
            ),
            (
                cwd.join("AGENTS.md"),
                InstructionScope::Project,
                InstructionFileState::Cut
            ),
        ],
        "{value:#}"
    );
    assert_eq!(
        (files[1].bytes, files[1].total),
        (root_text.len() as u64, Some(root_text.len() as u64))
    );
    let nested = &files[2];
    assert_eq!(nested.total, Some(nested_text.len() as u64));
    assert!(
        nested.bytes > 0 && nested.bytes < nested_text.len() as u64,
        "{nested:?}"
    );
    assert!(part(ContextPartKind::ProjectInstructions).bytes >= files.iter().map(|f| f.bytes).sum::<u64>());

    assert_eq!(part(ContextPartKind::UserMessages).items, 1);
    assert_eq!(part(ContextPartKind::ToolCalls).items, 1);
    assert_eq!(part(ContextPartKind::ToolOutputs).items, 1);
    assert_eq!(part(ContextPartKind::AssistantMessages).items, 1);
    assert!(part(ContextPartKind::Tools).bytes > 0 && part(ContextPartKind::Environment).bytes > 0);
    assert!(context.largest.iter().any(|item| item.label == "shell"), "{value:#}");
    assert!(
        !value.to_string().contains("look around"),
        "never the text of a message: {value}"
    );

    let counted = context.counted.expect("the turn's count");
    assert!(counted.tokens > 0);
    assert_eq!(context.cache.turns, 1);
    assert_eq!(context.cache.input_tokens, 2_300);
    assert_eq!(context.cache.cached_input_tokens, 800);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_conversation_is_not_found_and_bad_params_are_invalid() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![text("hi")]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();

    let unknown = "6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11";
    let error = client
        .call("conversation.context", json!({ "conversation_id": unknown }))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::NotFound);
    assert!(error.message.contains(unknown), "{}", error.message);

    let error = client
        .call("conversation.context", json!({ "conversation_id": "nope" }))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
    assert!(error.message.contains("conversation_id"), "{}", error.message);
    let error = client
        .call("conversation.context", json!({}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);

    // A model that models.list does not have is invalid.
    let (_, conversation, id) = start(&mut client, project.path(), "cautious", "hello").await;
    events_until(&mut client, id, "turn_completed").await;
    let error = client
        .call(
            "conversation.context",
            json!({ "conversation_id": conversation, "model": "gpt-0" }),
        )
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
    assert_eq!(error.data.unwrap()["setting"], "model");
}
