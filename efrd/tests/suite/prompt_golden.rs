//! What the model is told (docs/context.md): the built request of each provider for a sample project with a nested
//! `AGENTS.md`, compared with the checked-in files in `efrd/tests/data/prompt/`; and, with a real efrd and the
//! scripted model server, the prefix that stays byte-stable across a turn's model calls and the notes a later turn
//! gets.
//!
//! A change to the instructions shows as a diff of those files. To accept one, rewrite them and review the diff:
//! `EFR_BLESS=1 cargo test -p efrd --test all prompt_golden` (or `cargo xtask bless`, which runs the same).

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::path::{Path, PathBuf};

use efr_model::anthropic::AnthropicOptions;
use efr_model::{HistoryItem, ModelRequest, ProviderKind, anthropic, compat, openai};
use efr_protocol::wire::Mode;
use efrd::prompt::environment::{Environment, GitState};
use efrd::prompt::project::{self, Lookup};
use efrd::prompt::{PromptState, Variant};
use serde_json::Value;

use crate::common::tools::{shell_call, start, text};
use crate::common::{command_id, daemon, events_until, model, subscribe};

/// The sample project: a global file, one at the project root and one in the working directory's folder.
struct Sample {
    dir: tempfile::TempDir,
    config: PathBuf,
    root: PathBuf,
    cwd: PathBuf,
}

fn sample() -> Sample {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let config = base.join("config");
    let root = base.join("project");
    let cwd = root.join("crates/core");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(config.join("AGENTS.md"), "Answer in English.\n").unwrap();
    std::fs::write(
        root.join("AGENTS.md"),
        "# Sample\n\nRun `cargo test` before you answer. Keep commits small.\n",
    )
    .unwrap();
    std::fs::write(cwd.join("AGENTS.md"), "Code in this crate has no `unsafe`.\n").unwrap();
    Sample { dir, config, root, cwd }
}

fn request(sample: &Sample, kind: ProviderKind, short: bool, model: &str) -> ModelRequest {
    let lookup = Lookup {
        global_dir: Some(&sample.config),
        project_root: Some(&sample.root),
        cwd: &sample.cwd,
        masks: &[],
        max_bytes: 32768,
    };
    let files = project::read(&lookup);
    let environment = Environment {
        os: "Debian GNU/Linux 12 (bookworm)".into(),
        shell: "bash".into(),
        cwd: sample.cwd.clone(),
        project_root: Some(sample.root.clone()),
        git: Some(GitState {
            branch: Some("main".into()),
            detached_at: None,
            dirty: Some(true),
        }),
        date: "2025-06-01".into(),
        model: model.into(),
        mode: "auto".into(),
    };
    let prompt = PromptState::default().turn(Variant::of(kind, short), Mode::Auto, files, &environment.block());
    let mut request = ModelRequest::new(model);
    request.instructions = prompt.instructions;
    request.tools = prompt.tools;
    request.history = vec![HistoryItem::UserText {
        text: format!("{}add a test for the parser", prompt.preamble),
    }];
    request
}

/// Compares `body` (its temporary folder written as `$SAMPLE`) with `efrd/tests/data/prompt/<name>.json`, or
/// rewrites that file when `EFR_BLESS=1`.
fn golden(sample: &Sample, name: &str, body: &Value) {
    let base = std::fs::canonicalize(sample.dir.path()).unwrap();
    let text = serde_json::to_string_pretty(body)
        .unwrap()
        .replace(base.to_str().unwrap(), "$SAMPLE")
        + "\n";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/prompt/{name}.json"));
    if std::env::var("EFR_BLESS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let expected =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}; write it with EFR_BLESS=1", path.display()));
    assert!(
        expected == text,
        "the request of {name} differs from {}; review the change and bless it with EFR_BLESS=1:\n{}",
        path.display(),
        first_difference(&expected, &text)
    );
}

fn first_difference(expected: &str, actual: &str) -> String {
    for (n, (a, b)) in expected.lines().zip(actual.lines()).enumerate() {
        if a != b {
            return format!("line {}:\n- {a}\n+ {b}", n + 1);
        }
    }
    format!(
        "lengths differ: {} and {} lines",
        expected.lines().count(),
        actual.lines().count()
    )
}

#[test]
fn golden_requests_of_each_provider() {
    let sample = sample();
    let req = request(&sample, ProviderKind::OpenAiApi, false, "gpt-5");
    let body = openai::request_body(&req);
    assert_eq!(body["tools"][1]["type"], "custom", "apply_patch is freeform for OpenAI");
    golden(&sample, "openai", &body);

    let req = request(&sample, ProviderKind::AnthropicApi, false, "claude-sonnet-4-5");
    let body = anthropic::request_body(&req, AnthropicOptions::default());
    assert_eq!(
        body["tools"][1]["input_schema"]["required"][0], "input",
        "the JSON form"
    );
    assert_eq!(
        body["tools"][1]["description"].as_str(),
        Some(efrd::prompt::APPLY_PATCH.trim_end()),
        "the same text in the description"
    );
    golden(&sample, "anthropic", &body);

    let req = request(&sample, ProviderKind::OpenAiCompat, false, "qwen3-coder");
    golden(&sample, "compat", &compat::request_body(&req));
    let req = request(&sample, ProviderKind::OpenAiCompat, true, "qwen3-coder");
    let body = compat::request_body(&req);
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with(efrd::prompt::BASE_SHORT)
    );
    golden(&sample, "compat_short", &body);
}

/// The instructions, the tools and the first user message of a Responses request.
fn prefix(body: &Value) -> (Value, Value, Value) {
    (
        body["instructions"].clone(),
        body["tools"].clone(),
        body["input"][0].clone(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prefix_is_stable_across_a_turns_calls_and_later_turns_get_notes() {
    let home = tempfile::tempdir().unwrap();
    let sample = sample();
    std::process::Command::new("git")
        .args(["init", "-q", "-b", "trunk"])
        .arg(&sample.root)
        .status()
        .unwrap();
    let global = home.path().join("config");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::write(global.join("AGENTS.md"), "Answer in English.\n").unwrap();
    let server = model(vec![
        shell_call("call_ls", "ls"),
        shell_call("call_pwd", "pwd"),
        text("done"),
        text("again"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, &sample.cwd, "cautious", "look around").await;
    events_until(&mut client, id, "turn_completed").await;
    let calls = || -> Vec<Value> {
        server
            .requests()
            .into_iter()
            .filter(|r| r.path == "/v1/responses")
            .map(|r| r.body)
            .collect()
    };
    let requests = calls();
    assert_eq!(requests.len(), 3);
    let first = prefix(&requests[0]);
    for later in &requests[1..] {
        assert_eq!(
            prefix(later),
            first,
            "the prefix of each model call of a turn is the same"
        );
    }
    let instructions = first.0.as_str().unwrap();
    assert!(instructions.starts_with(efrd::prompt::BASE));
    assert!(instructions.contains("# Permission mode: cautious"));
    let global_at = instructions.find("Answer in English.").unwrap();
    let root_at = instructions.find("Run `cargo test` before you answer.").unwrap();
    let core_at = instructions.find("has no `unsafe`").unwrap();
    assert!(global_at < root_at && root_at < core_at, "most general first");
    let message = first.2.to_string();
    assert!(
        message.contains(&format!("project root: {}", sample.root.display())),
        "{message}"
    );
    assert!(message.contains("git: branch trunk, uncommitted changes"), "{message}");
    assert!(message.contains("mode: cautious"), "{message}");

    // The next turn: a changed file and another mode are notes in its prompt; the instructions stay as they were.
    std::fs::write(
        sample.cwd.join("AGENTS.md"),
        "Code in this crate may use `unsafe` with a SAFETY comment.\n",
    )
    .unwrap();
    let params = serde_json::json!({
        "command_id": command_id(), "conversation_id": conversation, "text": "and now?",
        "context": {"cwd": sample.cwd}, "settings": {"mode": "manual"}
    });
    client.ok("prompt.send", params).await.unwrap();
    let (id, _) = subscribe(&mut client, &conversation, None).await;
    events_until(&mut client, id, "turn_completed").await;
    let last = calls().pop().unwrap();
    assert_eq!(last["instructions"], first.0, "history is not rewritten");
    let items = last["input"].as_array().unwrap();
    let prompt = items.last().unwrap()["content"][0]["text"].as_str().unwrap();
    assert!(
        prompt.contains("<mode_changed>\nThe user changed the permission mode from cautious to manual."),
        "{prompt}"
    );
    assert!(
        prompt.contains("<instructions_changed>") && prompt.contains("may use `unsafe` with a SAFETY comment"),
        "{prompt}"
    );
    assert!(prompt.ends_with("and now?"), "{prompt}");

    // Across a compaction: the summary's request starts with the bytes of the call before it (the same prefix and
    // the same first items), and so does every call after it (the same prefix, the summary first).
    server.push(efr_test_support::scripted::Step::Reply(text(
        "## Goals and constraints\n- look around",
    )));
    server.push(efr_test_support::scripted::Step::Reply(text("after")));
    let params = serde_json::json!({"command_id": command_id(), "conversation_id": conversation});
    client.ok("conversation.compact", params).await.unwrap();
    let summary = calls().pop().unwrap();
    assert_eq!((&summary["instructions"], &summary["tools"]), (&first.0, &first.1));
    let before = last["input"].as_array().unwrap();
    assert_eq!(
        summary["input"][0], before[0],
        "the summary's request starts as the call before it"
    );
    let params = serde_json::json!({
        "command_id": command_id(), "conversation_id": conversation, "text": "go on",
        "context": {"cwd": sample.cwd}, "settings": {"mode": "manual"}
    });
    client.ok("prompt.send", params).await.unwrap();
    let (id, _) = subscribe(&mut client, &conversation, None).await;
    events_until(&mut client, id, "turn_completed").await;
    let after = calls().pop().unwrap();
    assert_eq!(
        (&after["instructions"], &after["tools"]),
        (&first.0, &first.1),
        "the prefix holds"
    );
    let head = after["input"][0]["content"][0]["text"].as_str().unwrap();
    assert!(
        head.starts_with("<environment>") && head.contains("<conversation_summary>"),
        "{head}"
    );
}
