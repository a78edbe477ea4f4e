//! `efr` with stdout to a pipe, against the real efrd over its real socket and a scripted model: the plain
//! transcript, `--json`, exit codes, the hints when efrd is not running or no provider is logged in, `efr login`
//! from stdin, and `--json` of status, models and diff.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

mod common;

use common::{KEY, daemon, efr_run, model, patch, run_efr, shell, text, texts};
use efr_protocol::events::Event;
use efr_protocol::wire::{AdminStatusResult, ConversationDiffResult, ModelsListResult};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_turn_prints_a_readable_transcript_and_exits_0() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![text("Hello **there**.\n\nA second line.")]).await;
    let _efrd = daemon(home.path(), &server, true);
    let out = efr_run(home.path(), project.path(), &["--new", "say", "hi"], None).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "turn started · cautious · gpt-5 · medium",
            "assistant: Hello **there**.",
            "",
            "  A second line.",
            "turn completed · 120 in / 30 out",
        ],
        "{stdout}"
    );
    assert!(!stdout.contains('\x1b'), "no ANSI in a pipe: {stdout:?}");
    // The prompt reached the model with the words joined.
    let request = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/responses")
        .unwrap();
    assert!(request.body.to_string().contains("say hi"), "{}", request.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_prints_one_event_a_line_and_a_shell_call_shows_its_exit_and_tail() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![shell("call_1", "seq 1 15; exit 3"), text("it exited 3")]).await;
    let _efrd = daemon(home.path(), &server, true);

    let out = efr_run(
        home.path(),
        project.path(),
        &["--new", "--mode", "full", "--json", "count"],
        None,
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let events: Vec<Event> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e.body.kind()).collect();
    assert_eq!(kinds.first(), Some(&"prompt_queued"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"turn_completed"), "{kinds:?}");
    assert!(kinds.contains(&"tool_call_completed"), "{kinds:?}");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order: {seqs:?}");

    // The same conversation again, in plain form: the command, its tail (the last 10 lines), its exit.
    let conversation = events[0].conversation_id.to_string();
    server.push(efr_test_support::scripted::Step::Reply(shell(
        "call_2",
        "seq 1 15; exit 3",
    )));
    server.push(efr_test_support::scripted::Step::Reply(text("again")));
    let out = efr_run(
        home.path(),
        project.path(),
        &["--conversation", &conversation, "--mode", "full", "again"],
        None,
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let tail: Vec<String> = (6..=15).map(|i| format!("    {i}")).collect();
    let expected = ["$ seq 1 15; exit 3".to_owned()]
        .into_iter()
        .chain(tail)
        .chain(["exit 3".to_owned()])
        .collect::<Vec<_>>()
        .join("\n");
    assert!(stdout.contains(&expected), "{stdout}");
    assert!(!stdout.contains("    5\n"), "only the tail: {stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_prints_the_error_and_exits_1() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    // No step left: every model call gets a 500, and the retries give up.
    let server = model(vec![]).await;
    let _efrd = daemon(home.path(), &server, true);
    let out = efr_run(home.path(), project.path(), &["--new", "hello"], None).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.lines().any(|l| l.starts_with("turn failed: ")), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_login_efr_says_how_to_log_in() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![text("never")]).await;
    let _efrd = daemon(home.path(), &server, false);
    let out = efr_run(home.path(), project.path(), &["--new", "hello"], None).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("efr login --api-key --provider openai-api"),
        "{stdout}\n{stderr}"
    );
    let status = efr_run(home.path(), project.path(), &["status"], None).await;
    assert!(
        texts(&status).0.contains("no provider is logged in"),
        "{}",
        texts(&status).0
    );
}

#[test]
fn with_efrd_not_running_every_command_says_how_to_start_it_and_exits_2() {
    let home = tempfile::tempdir().unwrap();
    for args in [&["hello there"][..], &["status"], &["models", "--json"], &["diff"]] {
        let out = run_efr(home.path(), home.path(), args, None);
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stdout}\n{stderr}");
        assert!(stderr.contains("efrd is not running"), "{stderr}");
        assert!(
            stderr.contains(&home.path().join("run/daemon.sock").display().to_string()),
            "{stderr}"
        );
        for way in [
            "efr daemon install",
            "systemctl --user start efrd.socket",
            "efr daemon run",
        ] {
            assert!(stderr.contains(way), "{way} missing: {stderr}");
        }
    }
}

#[test]
fn bad_input_is_refused_before_anything_is_sent() {
    let home = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["prompt", "--new", "  "], "the prompt is empty"),
        (&["--recent", "x\tls", "hi"], "--recent"),
        (
            &["--conversation", "not-a-uuid", "hi"],
            "--conversation must be a conversation id",
        ),
        (&["--mode", "yolo", "hi"], "invalid value 'yolo'"),
    ];
    for (args, message) in cases {
        let out = run_efr(home.path(), home.path(), args, None);
        let (_, stderr) = texts(&out);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        assert_ne!(
            out.status.code(),
            Some(2),
            "{args:?} must fail before it connects: {stderr}"
        );
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    let relative = std::process::Command::new(common::efr())
        .args(["status"])
        .env("EFR_HOME", "relative/home")
        .output()
        .unwrap();
    assert_eq!(relative.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&relative.stderr).contains("EFR_HOME must be an absolute path"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_reads_the_key_from_stdin_and_never_prints_it() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let _efrd = daemon(home.path(), &server, false);

    let empty = efr_run(home.path(), home.path(), &["login", "--api-key"], Some("  \n")).await;
    assert_eq!(empty.status.code(), Some(1));
    assert!(texts(&empty).1.contains("no key given"), "{}", texts(&empty).1);

    let out = efr_run(
        home.path(),
        home.path(),
        &["login", "--api-key", "--provider", "openai-api"],
        Some(&format!("{KEY}\n")),
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("sk-proj-...a1b2"), "{stdout}");
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY), "the key never shows");

    let status = efr_run(home.path(), home.path(), &["status", "--json"], None).await;
    let status: AdminStatusResult = serde_json::from_slice(&status.stdout).unwrap();
    let openai = status.providers.iter().find(|p| p.provider == "openai-api").unwrap();
    assert_eq!(openai.key_hint.as_deref(), Some("sk-proj-...a1b2"));
    let readable = efr_run(home.path(), home.path(), &["status"], None).await;
    let (readable, _) = texts(&readable);
    assert!(
        readable.contains("openai-api") && readable.contains("api key sk-proj-...a1b2"),
        "{readable}"
    );
    assert!(!readable.contains(KEY));

    let out = efr_run(home.path(), home.path(), &["logout", "--json"], None).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let logout: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(logout["provider"], "openai-api");
    assert_eq!(logout["logged_out"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_and_diff_print_json_that_parses() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let add = "*** Begin Patch\n*** Add File: notes.md\n+# Notes\n+one\n*** End Patch\n";
    let server = model(vec![patch("call_p", add), text("added notes")]).await;
    let efrd = daemon(home.path(), &server, true);

    let models = efr_run(home.path(), project.path(), &["models", "--json"], None).await;
    let models: ModelsListResult = serde_json::from_slice(&models.stdout).unwrap();
    assert!(models.models.iter().any(|m| m.id == "gpt-5"), "{models:?}");

    let out = efr_run(
        home.path(),
        project.path(),
        &["--new", "--mode", "full", "add notes"],
        None,
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("patch: add notes.md\nok\nchanges: +2 -0 notes.md (added)\n"),
        "{stdout}"
    );

    // Without a conversation and without a tty, efrd has no conversation to diff: its error, exit 1.
    let orphan = efr_run(home.path(), project.path(), &["diff", "--json"], None).await;
    assert_eq!(orphan.status.code(), Some(1));
    assert!(texts(&orphan).1.starts_with("efr: "), "{}", texts(&orphan).1);

    let mut client = efrd.client().await.unwrap();
    let list = client.ok("conversations.list", serde_json::json!({})).await.unwrap();
    let conversation = list["conversations"][0]["conversation_id"].as_str().unwrap().to_owned();
    let diff = efr_run(
        home.path(),
        project.path(),
        &["diff", "--conversation", &conversation, "--json"],
        None,
    )
    .await;
    let diff: ConversationDiffResult = serde_json::from_slice(&diff.stdout).unwrap();
    assert_eq!(diff.changes.files[0].path.to_str(), Some("notes.md"));
    assert!(diff.diff.unwrap().contains("+# Notes"));
    let stat = efr_run(
        home.path(),
        project.path(),
        &["diff", "--stat", "--conversation", &conversation],
        None,
    )
    .await;
    assert_eq!(texts(&stat).0, "+2 -0 notes.md (added)\n");
}
