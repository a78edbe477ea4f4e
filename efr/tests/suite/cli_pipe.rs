//! `efr "prompt"` with stdout to a pipe, against the real efrd over its real socket and a scripted model: the plain
//! transcript, `--json`, exit codes, no provider logged in, flags in front of a command, questions without a
//! terminal on stdin, a prompt queued behind a running turn, a prompt from stdin, and a stdout whose reader left.
//! efr's other commands are in cli_commands.rs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use common::{daemon, efr_run, model, run_efr, run_efr_bytes, shell, text, texts};
use efr_protocol::events::{Event, EventBody};
use efr_protocol::wire::{AdminStatusResult, ModelsListResult};

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
    let (last, lines) = lines.split_last().unwrap();
    assert_eq!(
        lines,
        [
            "turn started · cautious · gpt-5 · medium",
            "assistant: Hello **there**.",
            "",
            "  A second line.",
            "turn completed · 120 in / 30 out · context 0% of 400k",
        ],
        "{stdout}"
    );
    assert!(!stdout.contains('\x1b'), "no ANSI in a pipe: {stdout:?}");
    // Without a terminal on stdin, the last line names the conversation, which nothing else would find again.
    let id = last
        .strip_prefix("conversation ")
        .and_then(|rest| rest.split_once(' '))
        .map(|(id, _)| id)
        .unwrap_or_else(|| panic!("no conversation line: {stdout}"));
    assert_eq!(
        *last,
        format!("conversation {id} (go on with: efr --conversation {id} ...)")
    );
    let shell = efr_run(home.path(), project.path(), &["shell", "--conversation", id], None).await;
    assert_eq!(
        texts(&shell),
        ("the hidden shell is free\n".to_owned(), String::new()),
        "a real id"
    );
    // The prompt reached the model with the words joined.
    let request = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/responses")
        .unwrap();
    assert!(request.body.to_string().contains("say hi"), "{}", request.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_escapes_from_the_model_never_reach_the_transcript() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![
        shell("call_1", "echo 'x\u{1b}]2;PWNED\u{7}y' # \u{1b}[41m"),
        text("Hi \u{1b}]2;PWNED\u{7}\u{1b}[41mthere\u{1b}[0m, \u{1b}]52;c;cm0gLXJmIH4K\u{1b}\\clip\u{9b}2J\rend."),
    ])
    .await;
    let _efrd = daemon(home.path(), &server, true);
    let out = efr_run(
        home.path(),
        project.path(),
        &["--new", "--mode", "full", "say hi"],
        None,
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(!out.stdout.contains(&0x1b) && !out.stdout.contains(&0x07), "{stdout:?}");
    assert!(!stdout.contains(['\u{9b}', '\r']), "{stdout:?}");
    // Shown as marks, never dropped: nothing of a command or a message is hidden.
    assert!(stdout.contains("$ echo 'x␛]2;PWNED␇y' # ␛[41m\n"), "{stdout:?}");
    assert!(
        stdout.contains("assistant: Hi ␛]2;PWNED␇␛[41mthere␛[0m, ␛]52;c;cm0gLXJmIH4K␛\\clip<U+009B>2J␍end.\n"),
        "{stdout:?}"
    );
}

/// Whether `c` would act on a terminal that shows it: a C0 control but `\n` (serde_json escapes those), DEL, a C1
/// control, or a bidi embedding, override or isolate.
fn acts_on_a_terminal(c: char) -> bool {
    (c.is_control() && c != '\n') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_escapes_every_control_character_and_parses_back_to_the_same_text() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let nasty = "Hi \u{1b}[41mred\u{1b}[0m \u{9b}2J \u{1b}]52;c;cm0gLXJmIH4K\u{7} \u{202e}txt.exe\u{202c} \u{2066}isolated\u{2069}\u{7f}";
    // The command's line holds them raw (in a comment); its output holds U+202E and U+009B (printf makes the bytes).
    let command = format!("printf 'out \\342\\200\\256 \\302\\233 end\\n' # {nasty}");
    let server = model(vec![shell("call_1", &command), text(nasty)]).await;
    let _efrd = daemon(home.path(), &server, true);
    let out = efr_run(
        home.path(),
        project.path(),
        &["--new", "--mode", "full", "--json", "show me"],
        None,
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let raw: Vec<char> = stdout.chars().filter(|c| acts_on_a_terminal(*c)).collect();
    assert!(
        raw.is_empty(),
        "raw control characters on stdout: {raw:?} in {stdout:?}"
    );
    // Each line is still JSON, and it gives back the very text efrd sent.
    let events: Vec<Event> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let said = events.iter().find_map(|e| match &e.body {
        EventBody::AssistantMessageCompleted(m) => Some(m.text.clone()),
        _ => None,
    });
    assert_eq!(said.as_deref(), Some(nasty), "{stdout}");
    let typed = events.iter().find_map(|e| match &e.body {
        EventBody::ToolCallStarted(call) => call.input["command"].as_str().map(str::to_owned),
        _ => None,
    });
    assert_eq!(typed.as_deref(), Some(command.as_str()), "{stdout}");
    let output = events.iter().find_map(|e| match &e.body {
        EventBody::ToolCallCompleted(call) => Some(call.output.clone()),
        _ => None,
    });
    // (efrd's ANSI removal takes the CSI out of a command's output; the override stays, as text.)
    assert!(output.is_some_and(|o| o.contains("out \u{202e} ")), "{stdout}");
    assert!(
        stdout.contains(r"\u202e") && stdout.contains(r"\u009b") && stdout.contains(r"\u2066"),
        "{stdout}"
    );
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
fn bad_input_is_refused_before_anything_is_sent() {
    let home = tempfile::tempdir().unwrap();
    let conversation = "6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11";
    let dash = "efr: `-` reads the prompt from stdin and takes no other words";
    let cases: [(&[&str], &str); 10] = [
        (&["prompt", "--new", "  "], "the prompt is empty"),
        (&["-", "extra", "words"], dash),
        (&["--new", "explain", "-"], dash),
        (
            &["diff"],
            "efr diff needs --conversation ID when stdin is not a terminal",
        ),
        (
            &["diff", "--conversation", conversation, "--turn", "nonsense"],
            "--turn: `nonsense` is not a turn id (a UUID)",
        ),
        (
            &["--mode", "auto", "diff"],
            "--mode is a prompt's flag, not one of `efr diff`",
        ),
        (
            &["--new", "status"],
            "--new is a prompt's flag, not one of `efr status`",
        ),
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
        // 1 is bad input (README, "Exit codes"); 2 would be efrd not reached, a panic 101.
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?} must fail as bad input before it connects: {stderr}"
        );
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    // clap quotes the flag it refuses: shown with visible marks, never raw.
    let flag = "--\u{1b}]0;TITLE\u{7}\u{9b}31m\u{202e}x";
    let out = run_efr(home.path(), home.path(), &[flag, "hi"], None);
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--␛]0;TITLE␇<U+009B>31m<U+202E>x"), "{stderr:?}");
    let raw: Vec<char> = stderr.chars().filter(|c| acts_on_a_terminal(*c)).collect();
    assert!(
        raw.is_empty(),
        "raw control characters on stderr: {raw:?} in {stderr:?}"
    );
    let relative = std::process::Command::new(common::efr())
        .args(["status"])
        .env("EFR_HOME", "relative/home")
        .output()
        .unwrap();
    assert_eq!(relative.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&relative.stderr).contains("EFR_HOME must be an absolute path"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flags_in_front_of_a_command_run_the_command_and_quoted_words_stay_a_prompt() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![text("one"), text("two")]).await;
    let _efrd = daemon(home.path(), &server, true);

    let status = efr_run(home.path(), project.path(), &["--json", "status"], None).await;
    assert_eq!(status.status.code(), Some(0), "{}", texts(&status).1);
    let status: AdminStatusResult = serde_json::from_slice(&status.stdout).unwrap();
    assert!(status.providers.iter().any(|p| p.provider == "openai-api"));
    let models = efr_run(home.path(), project.path(), &["--json", "models"], None).await;
    let _: ModelsListResult = serde_json::from_slice(&models.stdout).unwrap();
    let unknown = "00000000-0000-4000-8000-000000000000";
    let diff = efr_run(
        home.path(),
        project.path(),
        &["--json", "diff", "--conversation", unknown],
        None,
    )
    .await;
    assert_eq!(texts(&diff).1, format!("efr: no such conversation: {unknown}\n"));
    let refused = efr_run(home.path(), project.path(), &["--mode", "auto", "diff"], None).await;
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        server.requests().iter().all(|r| r.path != "/v1/responses"),
        "no prompt was sent"
    );

    // One argument with spaces, and `efr prompt status`, are prompts.
    for (args, sent) in [
        (&["--new", "status of the build"][..], "status of the build"),
        (&["prompt", "--new", "status"], "\\n\\nstatus\""),
    ] {
        let out = efr_run(home.path(), project.path(), args, None).await;
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stdout}\n{stderr}");
        assert!(stdout.contains("turn completed"), "{stdout}");
        let last = server
            .requests()
            .into_iter()
            .rfind(|r| r.path == "/v1/responses")
            .unwrap();
        assert!(last.body.to_string().contains(sent), "{args:?}: {}", last.body);
    }

    let help = run_efr(home.path(), project.path(), &["--help"], None);
    let (help, _) = texts(&help);
    assert!(
        help.contains("efr prompt status") && help.contains("efr --json status"),
        "{help}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_terminal_a_question_is_denied_with_a_notice_and_the_turn_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![shell("call_1", "echo asked"), text("it was denied")]).await;
    let _efrd = daemon(home.path(), &server, true);
    let out = efr_run(
        home.path(),
        project.path(),
        &["--new", "--mode", "manual", "run it"],
        None,
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("efr: denied: echo asked (efr cannot ask without a terminal on stdin"),
        "{stderr}"
    );
    assert!(stdout.contains("answer: deny"), "{stdout}");
    assert!(!stdout.contains("    asked"), "the command did not run: {stdout}");
    assert!(stdout.contains("assistant: it was denied\nturn completed"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_terminal_an_input_wait_interrupts_the_turn_with_a_notice() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![
        shell("call_pw", "read -s -p 'Password: ' pw; echo got-${#pw}"),
        text("never"),
    ])
    .await;
    let _efrd = daemon(home.path(), &server, true);
    let out = efr_run(
        home.path(),
        project.path(),
        &["--new", "--mode", "full", "ask me"],
        None,
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "efr: $ read -s -p 'Password: ' pw; echo got-${#pw} waits for input, and efr cannot ask without a \
             terminal on stdin: interrupting the turn"
        ),
        "{stderr}"
    );
    assert!(stdout.contains("turn interrupted"), "{stdout}");
    assert!(!stdout.contains("    got-"), "the read never got an answer: {stdout}");
}

/// `efr` with a stdout pipe whose reader already left: it must end quietly, status 0.
fn run_into_closed_pipe(home: &std::path::Path, args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let child = std::process::Command::new(common::efr())
        .args(args)
        .env("EFR_HOME", home)
        .env_remove("EFR_RUNTIME_DIR")
        .stdin(std::process::Stdio::null())
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.wait_with_output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_left_ends_each_command_quietly() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let _efrd = daemon(home.path(), &server, true);
    for args in [
        &["status"][..],
        &["status", "--json"],
        &["models"],
        &["sandbox", "check", "--json"],
        &["shell-init", "bash"],
    ] {
        let home = home.path().to_owned();
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let out = tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run_into_closed_pipe(&home, &args)
        })
        .await
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert_eq!(stderr, "", "no panic, no message");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_behind_a_running_turn_says_it_is_queued() {
    use std::io::BufRead;
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    // The first turn's command runs until the test lets it go (bounded to 60 s), so the second prompt surely
    // arrives while it runs, however slow the machine.
    let release = project.path().join("release");
    let wait = format!(
        "for i in $(seq 600); do [ -e {} ] && break; sleep 0.1; done; echo released",
        release.display()
    );
    let server = model(vec![shell("call_1", &wait), text("first done"), text("second done")]).await;
    let _efrd = daemon(home.path(), &server, true);

    let mut first = std::process::Command::new(common::efr())
        .args(["--new", "--mode", "full", "--json", "first"])
        .current_dir(project.path())
        .env("EFR_HOME", home.path())
        .env_remove("EFR_RUNTIME_DIR")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = first.stdout.take().unwrap();
    // Read until the first turn's shell call runs; the conversation id comes with the first event.
    let conversation = tokio::task::spawn_blocking(move || {
        let mut lines = std::io::BufReader::new(stdout).lines();
        let mut conversation = None;
        for line in lines.by_ref() {
            let event: Event = serde_json::from_str(&line.unwrap()).unwrap();
            conversation.get_or_insert(event.conversation_id.to_string());
            if event.body.kind() == "tool_call_started" {
                break;
            }
        }
        // Keep reading, so the first efr never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        conversation.unwrap()
    })
    .await
    .unwrap();

    let mut second = std::process::Command::new(common::efr())
        .args(["--conversation", &conversation, "second"])
        .current_dir(project.path())
        .env("EFR_HOME", home.path())
        .env_remove("EFR_RUNTIME_DIR")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let second_stdout = second.stdout.take().unwrap();
    // The second efr says it is queued while the first command still runs; only then is that command let go.
    let (first_line, rest) = tokio::task::spawn_blocking(move || {
        let mut lines = std::io::BufReader::new(second_stdout).lines();
        let first_line = lines.next().map(Result::unwrap);
        std::fs::write(release, "").unwrap();
        let rest: Vec<String> = lines.map(Result::unwrap).collect();
        (first_line, rest.join("\n"))
    })
    .await
    .unwrap();
    let out = tokio::task::spawn_blocking(move || second.wait_with_output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        first_line.as_deref(),
        Some("queued behind the running turn"),
        "{rest}\n{stderr}"
    );
    assert_eq!(out.status.code(), Some(0), "{rest}\n{stderr}");
    assert!(rest.contains("assistant: second done"), "{rest}");
    let first = tokio::task::spawn_blocking(move || first.wait().unwrap())
        .await
        .unwrap();
    assert_eq!(first.code(), Some(0));

    // A prompt to an idle conversation is not queued.
    server.push(efr_test_support::scripted::Step::Reply(text("third")));
    let out = efr_run(
        home.path(),
        project.path(),
        &["--conversation", &conversation, "third"],
        None,
    )
    .await;
    assert!(
        !texts(&out).0.contains("queued") && !texts(&out).1.contains("queued"),
        "{:?}",
        texts(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dash_reads_the_prompt_from_stdin_and_a_gone_working_directory_is_said() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![text("read it"), text("no cwd")]).await;
    let _efrd = daemon(home.path(), &server, true);
    let long = format!("explain this:\n{}", "line of text\n".repeat(20_000));
    let out = efr_run(home.path(), project.path(), &["--new", "-"], Some(&long)).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let request = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/responses")
        .unwrap();
    let body = request.body.to_string();
    assert!(body.contains("explain this:") && body.matches("line of text").count() == 20_000);

    // A working directory removed under efr: a notice, and the prompt still goes.
    let gone = project.path().join("gone");
    let script = format!(
        "mkdir {gone} && cd {gone} && rmdir {gone} && exec {efr} --new hello",
        gone = gone.display(),
        efr = common::efr().display()
    );
    let home_path = home.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("sh")
            .args(["-c", &script])
            .env("EFR_HOME", &home_path)
            .env_remove("EFR_RUNTIME_DIR")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("the working directory is gone"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dash_refuses_stdin_over_8_mib_or_not_utf8_and_sends_nothing() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![text("never")]).await;
    let _efrd = daemon(home.path(), &server, true);
    let over = vec![b'a'; 8 * 1024 * 1024 + 1];
    let latin1 = b"explain gr\xf6\xdfe\n".to_vec();
    for (input, message) in [
        (over, "efr: the prompt on stdin is over 8 MiB\n"),
        (latin1, "efr: the prompt on stdin is not UTF-8 text\n"),
    ] {
        let (home, cwd) = (home.path().to_owned(), project.path().to_owned());
        let out =
            tokio::task::spawn_blocking(move || run_efr_bytes(&home, &cwd, &["--new", "-"], Some(input.as_slice())))
                .await
                .unwrap();
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
        assert_eq!(stderr, message);
        assert_eq!(stdout, "");
    }
    assert!(
        server.requests().iter().all(|r| r.path != "/v1/responses"),
        "no refused prompt reached the model"
    );
    // Exactly 8 MiB is still a prompt's size: efr sends it and the turn starts (the scripted server then refuses so
    // large a body, which is not efr's limit).
    let exact = "a".repeat(8 * 1024 * 1024);
    let (home_path, cwd) = (home.path().to_owned(), project.path().to_owned());
    let out =
        tokio::task::spawn_blocking(move || run_efr_bytes(&home_path, &cwd, &["--new", "-"], Some(exact.as_bytes())))
            .await
            .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(!stderr.contains("over 8 MiB"), "{stderr}");
    assert!(stdout.starts_with("turn started"), "{stdout}\n{stderr}");
}
