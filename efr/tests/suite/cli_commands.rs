//! efr's commands other than a prompt, with stdout to a pipe, against the real efrd and a scripted model: the hints
//! when efrd is not running or failed to start, `efr login` from stdin (and refused from argv), `--json` of status,
//! models and diff, `efr context`, `efr config reload`, and `efr shell` / `efr shell stop`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use common::{KEY, daemon, efr_run, model, patch, run_efr, text, texts};
use efr_protocol::events::Event;
use efr_protocol::wire::{AdminStatusResult, ConversationContextResult, ConversationDiffResult, ModelsListResult};

#[test]
fn with_efrd_not_running_every_command_says_how_to_start_it_and_exits_2() {
    let home = tempfile::tempdir().unwrap();
    let diff = ["diff", "--conversation", "6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11"];
    for args in [&["hello there"][..], &["status"], &["models", "--json"], &diff] {
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
    // The second file's name and line hold escapes (a title, a colour): `efr diff` to a pipe keeps them byte for
    // byte, so that the patch still applies.
    let add = "*** Begin Patch\n*** Add File: notes.md\n+# Notes\n+one\n*** Add File: escd\u{1b}]0;FILETITLE\u{7}.txt\n\
               +\u{1b}]0;DIFFTITLE\u{7}\u{1b}[41mRED\n*** End Patch\n";
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
        stdout.contains(
            "patch: add notes.md, add escd␛]0;FILETITLE␇.txt\nok\nchanges: +1 -0 escd␛]0;FILETITLE␇.txt (added)\n\
             changes: +2 -0 notes.md (added)\n"
        ),
        "{stdout}"
    );

    // Without a conversation and without a tty there is no conversation to diff: said before efrd is asked.
    let orphan = efr_run(home.path(), project.path(), &["diff", "--json"], None).await;
    assert_eq!(orphan.status.code(), Some(1));
    assert_eq!(
        texts(&orphan).1,
        "efr: efr diff needs --conversation ID when stdin is not a terminal (efr's last line names the \
         conversation then; `efr --json` too)\n"
    );
    let unknown = "00000000-0000-4000-8000-000000000000";
    let out = efr_run(home.path(), project.path(), &["diff", "--conversation", unknown], None).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(texts(&out).1, format!("efr: no such conversation: {unknown}\n"));

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
    assert!(
        diff.changes.files.iter().any(|f| f.path.to_str() == Some("notes.md")),
        "{diff:?}"
    );
    assert!(diff.diff.unwrap().contains("+# Notes"));
    let stat = efr_run(
        home.path(),
        project.path(),
        &["diff", "--stat", "--conversation", &conversation],
        None,
    )
    .await;
    assert_eq!(
        texts(&stat).0,
        "+1 -0 escd\u{1b}]0;FILETITLE\u{7}.txt (added)\n+2 -0 notes.md (added)\n+3 -0 in all\n"
    );
    let piped = efr_run(
        home.path(),
        project.path(),
        &["diff", "--conversation", &conversation],
        None,
    )
    .await;
    let piped = texts(&piped).0;
    assert!(piped.contains("+\u{1b}]0;DIFFTITLE\u{7}\u{1b}[41mRED\n"), "{piped:?}");
    assert!(
        piped.starts_with("+1 -0 escd\u{1b}]0;FILETITLE\u{7}.txt (added)\n"),
        "{piped:?}"
    );
}

#[test]
fn an_efrd_that_fails_to_start_under_socket_activation_gets_a_hint() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("config")).unwrap();
    std::fs::write(
        home.path().join("config/config.toml"),
        "[permissions]\ndefault_mode = \"yolo\"\n",
    )
    .unwrap();
    let run = home.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    let socket = run.join("daemon.sock");
    // systemd's own tool: it listens, and on the first connection runs efrd with the socket, as efrd.socket does.
    let mut activator = std::process::Command::new("systemd-socket-activate")
        .arg("-l")
        .arg(&socket)
        .arg("-E")
        .arg(format!("EFR_HOME={}", home.path().display()))
        .arg(common::efrd())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("systemd-socket-activate runs (Debian package systemd)");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !socket.exists() {
        assert!(std::time::Instant::now() < deadline, "the socket never showed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = run_efr(home.path(), home.path(), &["status"], None);
    let _ = activator.kill();
    let _ = activator.wait();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("efrd may have failed to start"), "{stderr}");
    assert!(stderr.contains("journalctl --user -u efrd"), "{stderr}");
    assert!(stderr.contains("efr daemon run"), "{stderr}");
}

#[test]
fn a_key_on_the_login_command_line_is_refused_and_never_echoed() {
    let home = tempfile::tempdir().unwrap();
    let secret = "sk-oncmdline-0123456789";
    for args in [
        &["login", "--api-key", secret][..],
        &["--json", "login", "--api-key", secret],
        &["login", "--api-key", "--provider", secret],
        &["login", &format!("--api-key={secret}")],
    ] {
        let out = run_efr(home.path(), home.path(), args, None);
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.starts_with("efr login"), "{args:?}: {stderr}");
        assert!(stderr.contains("usage: efr login --api-key"), "{args:?}: {stderr}");
        assert!(
            !stdout.contains("0123456789") && !stderr.contains("0123456789"),
            "{args:?} echoed the key: {stdout}\n{stderr}"
        );
    }
    let out = run_efr(home.path(), home.path(), &["login", "--api-key", secret], None);
    assert!(
        texts(&out).1.contains(
            "efr login reads the key from stdin or asks for it; a key on the command line is refused (it would \
             stay in your shell history)"
        ),
        "{}",
        texts(&out).1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_reload_applies_a_good_file_and_says_where_a_broken_one_is_wrong() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let _efrd = daemon(home.path(), &server, true);
    let config = home.path().join("config/config.toml");
    let good = std::fs::read_to_string(&config).unwrap();

    // The harness's config ends with its `[permissions]` table (full mode allowed), so keys of it are appended.
    std::fs::write(&config, format!("{good}default_mode = \"manual\"\n")).unwrap();
    let output = efr_run(home.path(), home.path(), &["config", "reload"], None).await;
    let (stdout, stderr) = texts(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.starts_with("config.toml applied"), "{stdout}");

    std::fs::write(&config, format!("{good}\n[shell]\nprogram = \"fish\"\n")).unwrap();
    let output = efr_run(home.path(), home.path(), &["config", "reload"], None).await;
    let (stdout, stderr) = texts(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("not applied at line") && stdout.contains("shell.program"),
        "{stdout}"
    );

    // efrd quotes the bad value; its escapes never reach the output.
    std::fs::write(
        &config,
        format!("{good}\n[shell]\nprogram = \"bogus\\u001b]0;T2\\u0007\"\n"),
    )
    .unwrap();
    let output = efr_run(home.path(), home.path(), &["config", "reload"], None).await;
    let (stdout, stderr) = texts(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("`bogus␛]0;T2␇`"), "{stdout:?}");
    assert!(!stdout.contains(['\u{1b}', '\u{7}']), "{stdout:?}");

    let output = efr_run(home.path(), home.path(), &["--json", "config", "reload"], None).await;
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["applied"], false, "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn efr_shell_shows_a_command_left_running_and_stops_it() {
    use efr_test_support::scripted::Reply;
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let long = Reply::shell_with("call_long", &serde_json::json!({"command": "sleep 300", "timeout": 1}))
        .with_stop("tool_use");
    let server = model(vec![long, text("it still runs")]).await;
    let _efrd = daemon(home.path(), &server, true);
    let run = |args: Vec<String>| {
        let home = home.path().to_owned();
        let project = project.path().to_owned();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            efr_run(&home, &project, &args, None).await
        }
    };
    let words = |s: &[&str]| s.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();

    let out = run(words(&["--new", "--mode", "full", "--json", "start it"])).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let first: Event = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    let id = first.conversation_id.to_string();

    // Without a terminal and without --conversation, efr cannot tell whose shell.
    let out = run(words(&["shell"])).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        texts(&out).1.contains("efr shell needs --conversation ID"),
        "{}",
        texts(&out).1
    );

    let out = run(words(&["shell", "--conversation", &id])).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("$ sleep 300\n  running for "), "{stdout}");
    assert!(stdout.contains("outside the sandbox (full mode)"), "{stdout}");

    let out = run(words(&["shell", "stop", "--conversation", &id])).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout, "$ sleep 300: stopped (SIGINT)\n");

    let out = run(words(&["shell", "status", "--conversation", &id, "--json"])).await;
    let status: serde_json::Value = serde_json::from_str(texts(&out).0.trim()).unwrap();
    assert!(status.get("busy").is_none_or(serde_json::Value::is_null), "{status}");
    let out = run(words(&["shell", "stop", "--conversation", &id])).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        texts(&out).1.contains("the hidden shell is free: nothing to stop"),
        "{}",
        texts(&out).1
    );

    let unknown = "6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11";
    let out = run(words(&["shell", "--conversation", unknown])).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(texts(&out).1.contains("no such conversation"), "{}", texts(&out).1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn efr_shell_stop_exits_1_when_the_command_survives_sigint() {
    use efr_test_support::scripted::Reply;
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    // SIGINT is ignored by the shell that sources the command and so by its sleep: only closing the shell ends it.
    let stubborn = Reply::shell_with(
        "call_stubborn",
        &serde_json::json!({"command": "trap '' INT; sleep 600", "timeout": 1}),
    )
    .with_stop("tool_use");
    let server = model(vec![stubborn, text("it still runs")]).await;
    let _efrd = daemon(home.path(), &server, true);
    let out = efr_run(
        home.path(),
        project.path(),
        &["--new", "--mode", "full", "--json", "start it"],
        None,
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let first: Event = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    let id = first.conversation_id.to_string();

    let out = efr_run(
        home.path(),
        project.path(),
        &["shell", "stop", "--conversation", &id],
        None,
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert_eq!(stdout, "", "nothing claims it stopped");
    // efr looks for 5 s after the stop (STOP_WAIT in efr/src/commands/shell.rs).
    assert_eq!(
        stderr,
        "efr: $ trap '' INT; sleep 600 still runs 5s after the stop; `efr shell stop --close` closes the hidden \
         shell\n"
    );
    let out = efr_run(home.path(), project.path(), &["shell", "--conversation", &id], None).await;
    assert!(
        texts(&out).0.starts_with("$ trap '' INT; sleep 600\n"),
        "still running: {:?}",
        texts(&out)
    );

    // --close ends it.
    let out = efr_run(
        home.path(),
        project.path(),
        &["shell", "stop", "--close", "--conversation", &id],
        None,
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout, "$ trap '' INT; sleep 600: closed the hidden shell\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn efr_context_lists_the_instruction_files_read_and_the_parts() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(project.path()).unwrap();
    let nested = root.join("sub");
    std::fs::create_dir_all(&nested).unwrap();
    let status = std::process::Command::new("git")
        .args(["init", "-q"])
        .arg(&root)
        .status()
        .expect("git runs");
    assert!(status.success());
    std::fs::write(root.join("AGENTS.md"), "Run the tests.\n").unwrap();
    std::fs::write(nested.join("AGENTS.md"), "No unsafe.\n").unwrap();
    let server = model(vec![text("hello"), text("## Goals and constraints\n- run the tests")]).await;
    let efrd = daemon(home.path(), &server, true);
    let out = efr_run(home.path(), &nested, &["--new", "hi"], None).await;
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    let mut client = efrd.client().await.unwrap();
    let list = client.ok("conversations.list", serde_json::json!({})).await.unwrap();
    let conversation = list["conversations"][0]["conversation_id"].as_str().unwrap().to_owned();

    let json = efr_run(
        home.path(),
        &nested,
        &["context", "--conversation", &conversation, "--json"],
        None,
    )
    .await;
    assert_eq!(json.status.code(), Some(0), "{:?}", texts(&json));
    let context: ConversationContextResult = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(context.model.id, "gpt-5");

    let readable = efr_run(
        home.path(),
        &nested,
        &["context", "--conversation", &conversation],
        None,
    )
    .await;
    let (stdout, stderr) = texts(&readable);
    assert_eq!(readable.status.code(), Some(0), "{stdout}\n{stderr}");
    // The picture first: one bar of the parts, letters in a pipe, the trigger marked.
    let bar = stdout.lines().nth(1).unwrap();
    assert!(
        stdout.starts_with("gpt-5: ") && bar.starts_with("[t") && bar.contains('|'),
        "{stdout}"
    );
    assert!(!stdout.contains('\x1b'), "no ANSI in a pipe: {stdout:?}");
    assert!(stdout.contains("\nmodel gpt-5: window "), "{stdout}");
    assert!(stdout.contains("\nproject_instructions "), "{stdout}");
    let line = |path: &std::path::Path, size: usize| {
        format!("  read       {size} of {size} bytes")
            + &" ".repeat(33 - format!("{size} of {size} bytes").len())
            + &format!(" {}\n", path.display())
    };
    assert!(stdout.contains(&line(&root.join("AGENTS.md"), 15)), "{stdout}");
    assert!(stdout.contains(&line(&nested.join("AGENTS.md"), 11)), "{stdout}");

    // `efr compact` with a focus: one line with its numbers; `efr context` then lists it.
    let compact = ["compact", "--conversation", &conversation, "--focus", "keep the tests"];
    let out = efr_run(home.path(), &nested, &compact, None).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("context compacted (by hand): "), "{stdout}");
    let summary_request = server.requests().last().unwrap().body.to_string();
    assert!(summary_request.contains("keep the tests"), "{summary_request}");
    let readable = efr_run(
        home.path(),
        &nested,
        &["context", "--conversation", &conversation],
        None,
    )
    .await;
    assert!(
        texts(&readable).0.contains("\ncompactions: 1; "),
        "{:?}",
        texts(&readable)
    );

    let unknown = "00000000-0000-4000-8000-000000000000";
    let out = efr_run(home.path(), &nested, &["compact", "--conversation", unknown], None).await;
    assert_eq!(out.status.code(), Some(1), "{:?}", texts(&out));
    let out = efr_run(home.path(), &nested, &["context", "--conversation", unknown], None).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(texts(&out).1, format!("efr: no such conversation: {unknown}\n"));
    let out = efr_run(home.path(), &nested, &["context", "--conversation", "x"], None).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        texts(&out).1,
        "efr: --conversation: `x` is not a conversation id (a UUID)\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn efr_delete_deletes_a_conversation_and_says_why_it_does_not() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![text("hello")]).await;
    let efrd = daemon(home.path(), &server, true);
    let out = efr_run(home.path(), project.path(), &["--new", "delete me later"], None).await;
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    let mut client = efrd.client().await.unwrap();
    let list = client.ok("conversations.list", serde_json::json!({})).await.unwrap();
    let conversation = list["conversations"][0]["conversation_id"].as_str().unwrap().to_owned();

    let out = efr_run(home.path(), project.path(), &["delete", &conversation], None).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout, format!("deleted: delete me later ({conversation})\n"));
    let list = client.ok("conversations.list", serde_json::json!({})).await.unwrap();
    assert!(list["conversations"].as_array().unwrap().is_empty(), "{list}");

    // Deleted, unknown, or not an id: exit 1 with efrd's reason or efr's.
    let out = efr_run(home.path(), project.path(), &["delete", &conversation], None).await;
    assert_eq!(out.status.code(), Some(1), "{:?}", texts(&out));
    assert_eq!(texts(&out).1, format!("efr: no conversation {conversation}\n"));
    let out = efr_run(home.path(), project.path(), &["delete", "x", "--json"], None).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        texts(&out).1.starts_with("efr: `x` is not a conversation id"),
        "{:?}",
        texts(&out)
    );
}
