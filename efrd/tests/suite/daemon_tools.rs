//! Tool calls through the real efrd: the hidden shell, apply_patch, the policy of the modes, and questions answered
//! through approval.respond.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use efr_protocol::ErrorCode;
use efr_test_support::scripted::Reply;
use serde_json::{Value, json};

use common::tools::{next_event, patch_call, prompt_in, shell_call, start, text, tool_output};
use common::{command_id, daemon, events_until, git, model, subscribe};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cautious_runs_ls_at_once_and_the_model_gets_its_output() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("hello.txt"), "hi").unwrap();
    let server = model(vec![shell_call("call_ls", "ls"), text("there is hello.txt")]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, _, id) = start(&mut client, project.path(), "cautious", "what is here?").await;
    let events = events_until(&mut client, id, "turn_completed").await;
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert!(!kinds.contains(&"approval_requested"), "{kinds:?}");
    let started = events.iter().find(|e| e["kind"] == "tool_call_started").unwrap();
    assert_eq!(started["tool"], "shell");
    assert_eq!(started["input"], json!({"command": "ls"}));
    // The project is under /tmp: cautious's read runs contained all the same, the project shown read-only.
    assert_eq!(started["launch"]["kind"], "contained", "{started}");
    let completed = events.iter().find(|e| e["kind"] == "tool_call_completed").unwrap();
    assert_eq!(completed["status"], "ok", "{completed}");
    assert_eq!(completed["exit_code"], 0);
    assert!(
        completed["output"].as_str().unwrap().contains("hello.txt"),
        "{completed}"
    );
    assert!(tool_output(&server, "call_ls").contains("hello.txt"));
    assert_eq!(common::text_of(&events), "there is hello.txt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_mode_waits_for_approval_before_a_patch_and_applies_it_after_allow() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let patch = "*** Begin Patch\n*** Add File: notes.md\n+# Notes\n+größe 🙂\n*** End Patch\n";
    let server = model(vec![patch_call("call_patch", patch), text("done")]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "manual", "write notes").await;
    let asked = events_until(&mut client, id, "approval_requested").await;
    let question = asked.last().unwrap();
    assert_eq!(question["call_id"], "call_patch");
    assert!(
        !project.path().join("notes.md").exists(),
        "nothing runs before the answer"
    );

    // Two other terminals answer at once: exactly one wins, the other gets conflict.
    let mut second = efrd.client().await.unwrap();
    let mut third = efrd.client().await.unwrap();
    let answer = |id: String| json!({"command_id": id, "conversation_id": conversation, "call_id": "call_patch", "decision": "allow"});
    let (first_id, other_id) = (command_id(), command_id());
    let (a, b) = tokio::join!(
        second.call("approval.respond", answer(first_id.clone())),
        third.call("approval.respond", answer(other_id.clone()))
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    let (winner, loser, winner_id) = match (a, b) {
        (Ok(winner), Err(loser)) => (winner, loser, first_id),
        (Err(loser), Ok(winner)) => (winner, loser, other_id),
        (a, b) => panic!("one winner: {a:?} {b:?}"),
    };
    assert_eq!(loser.code, ErrorCode::Conflict);
    assert!(winner["seq"].is_u64());
    assert_eq!(
        client.ok("approval.respond", answer(winner_id)).await.unwrap(),
        winner,
        "a repeat returns the stored result"
    );

    let rest = events_until(&mut client, id, "turn_completed").await;
    let resolved = rest.iter().find(|e| e["kind"] == "approval_resolved").unwrap();
    assert_eq!(resolved["decision"], "allow");
    let completed = rest.iter().find(|e| e["kind"] == "tool_call_completed").unwrap();
    assert_eq!(completed["status"], "ok");
    assert_eq!(completed["changes"]["files"][0]["path"], "notes.md");
    assert_eq!(completed["changes"]["files"][0]["kind"], "added");
    assert_eq!(completed["changes"]["added"], 2);
    assert_eq!(
        completed["diff"], "--- /dev/null\n+++ b/notes.md\n@@ -0,0 +1,2 @@\n+# Notes\n+größe 🙂\n",
        "the diff of an added file, in git's form"
    );
    assert_eq!(
        std::fs::read_to_string(project.path().join("notes.md")).unwrap(),
        "# Notes\ngröße 🙂\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cautious_asks_before_the_network_and_a_denial_reaches_the_model() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![
        shell_call("call_curl", "curl https://example.com"),
        text("ok, I will not"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "cautious", "fetch it").await;
    let asked = events_until(&mut client, id, "approval_requested").await;
    let question = asked.last().unwrap();
    assert!(question["reason"].as_str().unwrap().contains("network"), "{question}");
    assert!(question["summary"].as_str().unwrap().contains("curl"), "{question}");
    let deny = json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_curl", "decision": "deny"});
    client.ok("approval.respond", deny).await.unwrap();
    let rest = events_until(&mut client, id, "turn_completed").await;
    let completed = rest.iter().find(|e| e["kind"] == "tool_call_completed").unwrap();
    assert_eq!(completed["status"], "denied");
    assert!(tool_output(&server, "call_curl").contains("denied"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_while_a_question_waits_ends_the_turn_cleanly() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![shell_call("call_rm", "rm -rf build")]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "manual", "clean").await;
    events_until(&mut client, id, "approval_requested").await;
    client
        .ok(
            "turn.interrupt",
            json!({"command_id": command_id(), "conversation_id": conversation}),
        )
        .await
        .unwrap();
    let rest = common::events_through(&mut client, id, "turn_interrupted").await;
    let kinds: Vec<&str> = rest.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    // The last snapshots of the project and of `$SCRATCH` (made before the turn's first snapshot, for undo).
    assert_eq!(
        kinds,
        [
            "turn_interrupt_requested",
            "approval_resolved",
            "tool_call_completed",
            "snapshot_taken",
            "snapshot_taken",
            "turn_interrupted"
        ]
    );
    assert_eq!(rest[3]["root"], ".");
    assert_eq!(rest[4]["root"], "$SCRATCH");
    assert_eq!(rest[1]["decision"], "deny");
    assert_eq!(rest[2]["status"], "denied");
    // No model call after the interrupt.
    assert_eq!(
        server.requests().iter().filter(|r| r.path == "/v1/responses").count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_mode_refuses_a_floor_and_a_guarded_delete_expires_unanswered() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("keep.txt"), "keep").unwrap();
    let server = model(vec![
        shell_call("call_floor", "rm -rf /"),
        shell_call("call_rm", &format!("rm -rf {}", outside.path().display())),
        shell_call("call_echo", "echo full runs this"),
        text("done"),
    ])
    .await;
    let config = efr_test_support::daemon::config_for(&server.base_url()) + "question_limit_secs = 1\n";
    let efrd = efr_test_support::daemon::TestDaemon::start(
        common::efrd_binary(),
        home.path(),
        Some(&config),
        &[("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")],
    )
    .unwrap();
    let mut client = efrd.client().await.unwrap();
    let sent = prompt_in(&mut client, project.path(), "full", "go").await;
    assert_eq!(sent["settings"]["mode"], "full");
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    let events = events_until(&mut client, id, "turn_completed").await;
    let completed = |call: &str| {
        events
            .iter()
            .find(|e| e["kind"] == "tool_call_completed" && e["call_id"] == call)
            .unwrap()
            .clone()
    };

    let floor = completed("call_floor");
    assert_eq!(floor["status"], "failed");
    assert!(floor["refusal"].is_string(), "{floor}");
    assert!(tool_output(&server, "call_floor").contains("refused"));

    let asked = events.iter().find(|e| e["kind"] == "approval_requested").unwrap();
    assert_eq!(asked["call_id"], "call_rm");
    assert_eq!(asked["expires_in_secs"], 1);
    let expired = events.iter().find(|e| e["kind"] == "approval_expired").unwrap();
    assert_eq!(expired["call_id"], "call_rm");
    assert_eq!(completed("call_rm")["status"], "denied");
    assert!(
        outside.path().join("keep.txt").exists(),
        "an unanswered delete never runs"
    );

    let echo = completed("call_echo");
    assert_eq!(echo["status"], "ok");
    assert!(echo["output"].as_str().unwrap().contains("full runs this"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hidden_password_prompt_is_answered_through_input_respond() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let line = "read -s -p 'Password: ' pw; echo; echo \"got ${#pw} chars\"";
    let server = model(vec![shell_call("call_pw", line), text("ok")]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "ask me").await;
    let wait = next_event(&mut client, id, "tool_call_input_changed").await;
    assert_eq!(wait["input"], "hidden", "{wait}");
    let status = client
        .ok("shell.status", json!({"conversation_id": conversation}))
        .await
        .unwrap();
    assert_eq!(status["busy"]["call_id"], "call_pw");
    assert_eq!(status["busy"]["input"], "hidden");
    // The program's prompt from the live screen, and who let the call run as the user.
    assert_eq!(status["busy"]["prompt"], "Password:", "{status}");
    assert_eq!(status["busy"]["approved_by"], "full_mode", "{status}");

    // A manual answer is fine for this command; an answer of the wrong kind is not.
    let wrong = json!({"conversation_id": conversation, "call_id": "call_pw", "text": "x", "input": "visible"});
    assert_eq!(
        client.call("input.respond", wrong).await.unwrap().unwrap_err().code,
        ErrorCode::Conflict
    );
    let answer = json!({"conversation_id": conversation, "call_id": "call_pw", "text": "hunter22", "input": "hidden"});
    client.ok("input.respond", answer).await.unwrap();
    let done = next_event(&mut client, id, "tool_call_completed").await;
    let output = done["output"].as_str().unwrap();
    assert!(output.contains("got 8 chars"), "{done}");
    assert!(!output.contains("hunter22"), "a hidden answer is never echoed");
    events_until(&mut client, id, "turn_completed").await;
    // After the call's end, an answer is not_found.
    let late = json!({"conversation_id": conversation, "call_id": "call_pw", "text": "x", "input": "hidden"});
    assert_eq!(
        client.call("input.respond", late).await.unwrap().unwrap_err().code,
        ErrorCode::NotFound
    );
    assert!(!efrd.log().contains("hunter22"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_visible_wait_is_answered_and_a_manual_answer_to_a_nested_shell_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![
        shell_call("call_py", "python3 -c 'print(\"hello \" + input(\"name? \"))'"),
        shell_call("call_sh", "bash"),
        text("ok"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "go").await;
    let wait = next_event(&mut client, id, "tool_call_input_changed").await;
    assert_eq!(wait["input"], "visible", "{wait}");
    let answer = json!({"conversation_id": conversation, "call_id": "call_py", "text": "Ada", "input": "visible"});
    client.ok("input.respond", answer).await.unwrap();
    let done = next_event(&mut client, id, "tool_call_completed").await;
    assert!(done["output"].as_str().unwrap().contains("hello Ada"), "{done}");

    // `bash` starts a shell that reads command lines: no manual input for it.
    let started = next_event(&mut client, id, "tool_call_started").await;
    assert_eq!(started["call_id"], "call_sh");
    assert!(started.get("manual_input").is_none(), "{started}");
    let manual = json!({"conversation_id": conversation, "call_id": "call_sh", "text": "exit", "input": "visible", "manual": true});
    assert_eq!(
        client.call("input.respond", manual).await.unwrap().unwrap_err().code,
        ErrorCode::Conflict
    );
    // Stop the nested shell: its call then completes and the turn goes on.
    client
        .ok(
            "shell.interrupt",
            json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_sh", "close": true}),
        )
        .await
        .unwrap();
    events_until(&mut client, id, "turn_completed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_of_the_turn_stops_its_running_command() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    // The command says it runs (a file in the project) from the process that then becomes the sleep.
    let server = model(vec![
        shell_call("call_sleep", "sh -c 'touch running; exec sleep 60'; echo never"),
        text("not reached"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "go").await;
    next_event(&mut client, id, "tool_call_started").await;
    // Interrupt only once the command runs in the shell.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !project.path().join("running").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the command did not start within 20 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let started = std::time::Instant::now();
    client
        .ok(
            "turn.interrupt",
            json!({"command_id": command_id(), "conversation_id": conversation}),
        )
        .await
        .unwrap();
    let events = common::events_through(&mut client, id, "turn_interrupted").await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "the command was stopped, not waited for: {:?}",
        started.elapsed()
    );
    let done = events.iter().find(|e| e["kind"] == "tool_call_completed").unwrap();
    assert_eq!(done["call_id"], "call_sleep");
    // SIGINT ends the sleep: the shell's status 130 (128 + SIGINT), a failed call.
    assert_eq!(done["exit_code"], 130, "{done}");
    assert_eq!(done["status"], "failed", "{done}");
    assert!(!done["output"].as_str().unwrap_or("").contains("never"), "{done}");
    let model_calls = server.requests().iter().filter(|r| r.method == "POST").count();
    assert_eq!(model_calls, 1, "no model call after the interrupt");

    // The next turn's model call tells the model why the command ended.
    let params = json!({"command_id": command_id(), "conversation_id": conversation, "text": "go on",
        "context": {"cwd": project.path()}, "settings": {"mode": "full"}});
    client.ok("prompt.send", params).await.unwrap();
    events_until(&mut client, id, "turn_completed").await;
    let output = tool_output(&server, "call_sleep");
    assert!(output.contains("the user interrupted the turn"), "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn efrs_own_roots_are_floors_in_full_mode_and_nothing_there_changes() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let efr = home.path().canonicalize().unwrap();
    let lines = [
        format!("touch {}/config/config.toml", efr.display()),
        format!("ls {}/state", efr.display()),
        format!("echo x > {}/data/planted", efr.display()),
        format!("cd {}/run && touch planted", efr.display()),
    ];
    let mut replies: Vec<Reply> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| shell_call(&format!("call_{i}"), line))
        .collect();
    replies.push(text("refused"));
    let server = model(replies).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let config_before = std::fs::metadata(efr.join("config/config.toml"))
        .unwrap()
        .modified()
        .unwrap();
    let (_, _, id) = start(&mut client, project.path(), "full", "go").await;
    let events = events_until(&mut client, id, "turn_completed").await;
    let completed: Vec<&Value> = events.iter().filter(|e| e["kind"] == "tool_call_completed").collect();
    assert_eq!(completed.len(), lines.len());
    for (done, line) in completed.iter().zip(&lines) {
        assert!(
            done["refusal"].as_str().is_some_and(|r| r.contains("floor")),
            "{line}: {done}"
        );
    }
    assert_eq!(
        std::fs::metadata(efr.join("config/config.toml"))
            .unwrap()
            .modified()
            .unwrap(),
        config_before
    );
    assert!(!efr.join("data/planted").exists());
    assert!(!efr.join("run/planted").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_program_zsh_runs_the_calls_in_zsh_and_carries_cd_and_export() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join("sub")).unwrap();
    let server = model(vec![
        shell_call("call_1", "cd sub && export EFR_SEEN=yes; echo \"zsh $ZSH_VERSION\""),
        shell_call("call_2", "echo \"$PWD $EFR_SEEN\""),
        text("done"),
    ])
    .await;
    let config = format!(
        "{}\n[shell]\nprogram = \"zsh\"\n",
        efr_test_support::daemon::config_for(&server.base_url())
    );
    let efrd = efr_test_support::daemon::TestDaemon::start(
        common::efrd_binary(),
        home.path(),
        Some(&config),
        &[("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")],
    )
    .unwrap();
    let mut client = efrd.client().await.unwrap();
    // Full mode is refused with a zsh hidden shell (no_zsh): manual, each call allowed.
    let (_, conversation, id) = start(&mut client, project.path(), "manual", "go").await;
    for call in ["call_1", "call_2"] {
        events_until(&mut client, id, "approval_requested").await;
        client
            .ok(
                "approval.respond",
                json!({"command_id": command_id(), "conversation_id": conversation, "call_id": call,
                    "decision": "allow"}),
            )
            .await
            .unwrap();
    }
    events_until(&mut client, id, "turn_completed").await;
    let first = tool_output(&server, "call_1");
    let version = first.trim().strip_prefix("zsh ").unwrap_or("");
    assert!(!version.is_empty(), "the call ran in zsh: {first:?}");
    let second = tool_output(&server, "call_2");
    let sub = project.path().join("sub").canonicalize().unwrap();
    assert!(second.contains(&format!("{} yes", sub.display())), "{second:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turns_changes_and_conversation_diff_match_git_diff() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    std::fs::write(
        root.join("lib.rs"),
        "fn one() -> u32 {\n    1\n}\n\nfn two() -> u32 {\n    2\n}\n",
    )
    .unwrap();
    std::fs::write(root.join(".gitignore"), ".env\n").unwrap();
    git(root, &["init", "-q"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "start"]);
    let patch = "*** Begin Patch\n*** Update File: lib.rs\n@@ fn two() -> u32 {\n-    2\n+    22\n*** End Patch\n";
    let server = model(vec![
        patch_call("call_patch", patch),
        shell_call("call_new", "printf 'fresh\\n' > new.txt && echo SECRET=1 > .env"),
        text("done"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (sent, conversation, id) = start(&mut client, root, "full", "change things").await;
    let events = events_until(&mut client, id, "turn_completed").await;
    let done = events.last().unwrap();
    let paths: Vec<&str> = done["changes"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, [".env", "lib.rs", "new.txt"], "{done}");

    let diff = client
        .ok("conversation.diff", json!({"conversation_id": conversation}))
        .await
        .unwrap();
    assert_eq!(diff["turn_id"], sent["turn_id"]);
    let ours = diff["diff"].as_str().unwrap();
    assert!(ours.contains(".env: ignored file, content not shown"), "{ours}");
    git(root, &["add", "-N", "new.txt"]);
    let theirs: String = git(root, &["diff", "--no-color", "--no-ext-diff"])
        .lines()
        .filter(|l| !(l.starts_with("diff --git") || l.starts_with("index ") || l.starts_with("new file mode")))
        .map(|l| format!("{l}\n"))
        .collect();
    let ours_without_ignored: String = ours
        .lines()
        .filter(|l| !l.starts_with(".env:"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(ours_without_ignored, theirs);
    let stat = client
        .ok(
            "conversation.diff",
            json!({"conversation_id": conversation, "stat": true}),
        )
        .await
        .unwrap();
    assert!(stat.get("diff").is_none());
    assert_eq!(stat["changes"], done["changes"]);

    // The turn alone names its conversation; an unknown conversation is not_found; neither, without a tty, invalid.
    let by_turn = client
        .ok("conversation.diff", json!({"turn_id": sent["turn_id"], "stat": true}))
        .await
        .unwrap();
    assert_eq!(by_turn["changes"], done["changes"]);
    let unknown = json!({"conversation_id": "0190f5b2-7c1e-7a61-9d2e-5b8f6a3c2d10"});
    let error = client.call("conversation.diff", unknown).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::NotFound, "{error:?}");
    assert!(error.message.contains("no conversation"), "{error:?}");
    let error = client.call("conversation.diff", json!({})).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid, "{error:?}");
    let unknown = json!({"turn_id": "0190f5b2-7c1e-7a61-9d2e-5b8f6a3c2d11"});
    let error = client.call("conversation.diff", unknown).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::NotFound, "{error:?}");
    assert!(error.message.contains("no such turn"), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_compat_server_that_needs_a_key_gets_it_from_the_environment_and_calls_never_see_it() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![
        shell_call("call_env", "echo compat=${OPENAI_COMPAT_API_KEY:-unset}"),
        text("done"),
    ])
    .await;
    let config = format!(
        "[model]\nprovider = \"openai-compat\"\nmodel = \"gpt-5\"\n\n[providers.openai-compat]\nbase_url = \"{}\"\n\
         key_required = true\n\n[permissions]\nallow_full = true\nallow_full_as_root = true\n",
        server.base_url()
    );
    // Without the variable: the turn fails with how to give the key.
    let mut bare = efr_test_support::daemon::TestDaemon::start(common::efrd_binary(), home.path(), Some(&config), &[])
        .expect("efrd starts");
    let mut client = bare.client().await.unwrap();
    let (_, _, id) = start(&mut client, project.path(), "full", "hi").await;
    let events = common::events_through(&mut client, id, "turn_failed").await;
    let failed = events.last().unwrap();
    assert!(
        failed
            .to_string()
            .contains("set OPENAI_COMPAT_API_KEY in efrd's environment"),
        "{failed}"
    );
    drop(client);
    bare.stop(std::time::Duration::from_secs(10)).unwrap();

    let key = "sk-compat-0000000000000000c0de";
    let efrd = efr_test_support::daemon::TestDaemon::start(
        common::efrd_binary(),
        home.path(),
        Some(&config),
        &[("OPENAI_COMPAT_API_KEY", key)],
    )
    .expect("efrd starts");
    let mut client = efrd.client().await.unwrap();
    let (_, _, id) = start(&mut client, project.path(), "full", "check").await;
    events_until(&mut client, id, "turn_completed").await;
    let request = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/chat/completions")
        .unwrap();
    assert_eq!(request.header("authorization"), Some("Bearer sk-...c0de"));
    // The hidden shell never had the key (Chat Completions: the output is a `tool` message's content).
    let last = server.requests().last().unwrap().body.to_string();
    assert!(last.contains(r#""content":"compat=unset\n""#), "{last}");
    assert!(!efrd.log().contains(key));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_folders_of_tools_are_not_changes_even_without_a_gitignore() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    std::fs::create_dir(root.join("pkg")).unwrap();
    std::fs::write(root.join("app.py"), "import pkg\nprint(1)\n").unwrap();
    std::fs::write(root.join("pkg/__init__.py"), "VALUE = 1\n").unwrap();
    // No .gitignore and no git: only the built-in list of cache folders can tell these apart. Python writes real
    // bytecode caches; pytest's cache (with the `*` .gitignore pytest puts in it) and a build tool's cache in
    // node_modules/.cache are written as those tools write them.
    let command = "python3 -c 'import compileall, sys; sys.exit(not compileall.compile_dir(\".\", quiet=1))' \
         && python3 app.py \
         && printf 'import pkg\\nprint(2)\\n' > app.py \
         && mkdir -p .pytest_cache/v/cache node_modules/.cache/babel-loader \
         && printf '*\\n' > .pytest_cache/.gitignore && echo '{}' > .pytest_cache/v/cache/lastfailed \
         && echo '{}' > node_modules/.cache/babel-loader/x.json && echo 'module.exports = 1' > node_modules/dep.js \
         && ls pkg/__pycache__";
    let server = model(vec![shell_call("call_py", command), text("done")]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, _, id) = start(&mut client, root, "full", "run it").await;
    let events = events_until(&mut client, id, "turn_completed").await;
    let completed = events.iter().find(|e| e["kind"] == "tool_call_completed").unwrap();
    assert_eq!(completed["exit_code"], 0, "{completed}");
    assert!(completed["output"].as_str().unwrap().contains(".pyc"), "{completed}");
    let paths = |changes: &Value| -> Vec<String> {
        changes["files"]
            .as_array()
            .unwrap_or_else(|| panic!("no changes: {changes}"))
            .iter()
            .map(|f| f["path"].as_str().unwrap().to_owned())
            .collect()
    };
    // node_modules itself is not a cache (it holds installed packages): its files stay changes.
    let real = ["app.py", "node_modules/dep.js"];
    assert_eq!(paths(&completed["changes"]), real, "{completed}");
    let done = events.last().unwrap();
    assert_eq!(paths(&done["changes"]), real, "{done}");
    assert!(!done.to_string().contains("pycache"), "{done}");
}
