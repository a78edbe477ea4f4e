//! The hidden shell against a real bash and a real zsh in a real pty. Each scenario runs for both shells.

use std::path::PathBuf;
use std::time::Duration;

use super::*;

/// Generous: the machine is small and tests run in parallel.
const LONG: Duration = Duration::from_secs(30);

struct Fixture {
    _dir: tempfile::TempDir,
    opts: ShellOptions,
}

/// Waits until `done` holds, polling; fails the test after [`LONG`], naming `what`. A shorter bound failed under a
/// load of 12 on 2 cores, where a shell's first prompt alone can take seconds.
async fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + LONG;
    while !done() {
        assert!(std::time::Instant::now() < deadline, "not within {LONG:?}: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

impl Fixture {
    fn new(kind: ShellKind) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let run = dir.path().join("run");
        std::fs::create_dir(&home).unwrap();
        std::fs::create_dir(&run).unwrap();
        let mut opts = ShellOptions::new(kind, home.clone(), run);
        opts.env = vec![
            ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
            ("HOME".into(), home.into()),
            ("LANG".into(), "C.UTF-8".into()),
        ];
        Self { _dir: dir, opts }
    }

    fn home(&self) -> PathBuf {
        self.opts.cwd.clone()
    }

    async fn start(&self) -> HiddenShell {
        HiddenShell::start(self.opts.clone()).await.unwrap()
    }
}

/// Runs `line` to its end and returns the answer.
async fn run(shell: &HiddenShell, line: &str) -> RunAnswer {
    let answer = shell.run(line, LONG).await.unwrap().answer().await;
    assert!(!answer.left_running(), "{line:?} did not end within {LONG:?}");
    answer
}

async fn wait_for(input: &mut tokio::sync::watch::Receiver<InputWait>, what: impl Fn(&InputWait) -> bool) -> InputWait {
    let seen = tokio::time::timeout(LONG, input.wait_for(|w| what(w))).await;
    seen.expect("the wait was not seen in time")
        .expect("the run ended first")
        .clone()
}

macro_rules! both_shells {
    ($($name:ident),* $(,)?) => {
        mod bash {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name(super::ShellKind::Bash).await; })*
        }
        mod zsh {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name(super::ShellKind::Zsh).await; })*
        }
    };
}

both_shells!(
    cd_and_export_carry_over,
    status_and_output_shapes,
    output_is_bounded,
    a_long_command_is_left_running_and_its_end_reported,
    interrupt_stops_the_command,
    interrupt_survives_a_removed_prompt_hook,
    close_then_a_new_shell,
    hidden_password_prompt_is_answered,
    visible_wait_of_python_input,
    raw_mode_password_prompt_looks_secret,
    exit_and_exec_end_the_shell,
    prompt_changes_and_redirects_do_not_lose_markers,
    bad_requests_get_clear_errors,
    a_syntax_error_names_the_command_not_efrs_run_file,
    terminal_settings_a_command_changed_are_put_back_before_the_next_line,
    closed_standard_descriptors_are_reopened_for_the_next_calls,
);

async fn terminal_settings_a_command_changed_are_put_back_before_the_next_line(kind: ShellKind) {
    let fx = Fixture::new(kind);
    let shell = fx.start().await;
    // `d` as the kill character would wipe the typed line up to its last `d` (in `>/dev/tty`).
    run(&shell, "stty kill d eof t").await;
    let answer = run(&shell, "echo second; echo d-and-t").await;
    assert_eq!(answer.output.for_client(), "second\nd-and-t\n");
    assert_eq!(answer.exit_code, Some(0));
    shell.close().await;
}

async fn a_syntax_error_names_the_command_not_efrs_run_file(kind: ShellKind) {
    let fx = Fixture::new(kind);
    let shell = fx.start().await;
    let answer = run(&shell, "echo (").await;
    let output = answer.output.for_client();
    assert_ne!(answer.exit_code, Some(0), "{output}");
    // bash: `bash: command: line 1: syntax error ...`; zsh: `command:1: bad pattern: (`.
    assert!(
        output.starts_with("command:") || output.starts_with("bash: command: line 1:"),
        "{output}"
    );
    assert!(!output.contains("run-"), "{output}");
    // The shell goes on.
    assert_eq!(run(&shell, "echo fine").await.output.for_client(), "fine\n");
    shell.close().await;
}

async fn cd_and_export_carry_over(kind: ShellKind) {
    let fx = Fixture::new(kind);
    std::fs::create_dir(fx.home().join("sub dir")).unwrap();
    let shell = fx.start().await;
    let first = run(
        &shell,
        "cd 'sub dir' && export EFR_TEST_VAR=carried && alias hi='echo hello'",
    )
    .await;
    assert_eq!((first.how, first.exit_code), (Some(EndCause::Ended), Some(0)));
    assert_eq!(first.cwd, Some(fx.home().join("sub dir")));
    let second = run(&shell, "pwd; echo \"$EFR_TEST_VAR\"; sh -c 'echo $EFR_TEST_VAR'; hi").await;
    let expected = format!("{}\ncarried\ncarried\nhello\n", fx.home().join("sub dir").display());
    assert_eq!(second.output.for_client(), expected);
    let status = shell.status().await.unwrap();
    assert_eq!((status.cwd, status.busy), (Some(fx.home().join("sub dir")), None));
    shell.close().await;
}

async fn status_and_output_shapes(kind: ShellKind) {
    let fx = Fixture::new(kind);
    let shell = fx.start().await;
    // No final newline, then a normal line: the next run starts clean.
    assert_eq!(
        run(&shell, "printf 'no newline'").await.output.for_client(),
        "no newline"
    );
    assert_eq!(run(&shell, "echo next").await.output.for_client(), "next\n");
    // A timeout too large for a clock is taken as "a long time".
    let unbounded = shell.run("echo max", Duration::MAX).await.unwrap().answer().await;
    assert_eq!(unbounded.output.for_client(), "max\n");
    // Unicode, colours, stderr and a failing status.
    let colourful = run(
        &shell,
        "printf 'größe 🙂\\n\\033[31m日本語\\033[0m\\n'; echo err >&2; false",
    )
    .await;
    assert_eq!(colourful.output.for_client(), "größe 🙂\n日本語\nerr\n");
    assert_eq!(colourful.exit_code, Some(1));
    // A multi-line command and a heredoc are one run.
    let multi = run(
        &shell,
        "for i in 1 2; do\n  echo \"n$i\"\ndone\ncat <<'EOF'\nheredoc $HOME\nEOF",
    )
    .await;
    assert_eq!(multi.output.for_client(), "n1\nn2\nheredoc $HOME\n");
    // A syntax error ends the run with a failure, and the shell goes on.
    let broken = run(&shell, "echo 'unclosed").await;
    assert_ne!(broken.exit_code, Some(0));
    assert_eq!(run(&shell, "echo still here").await.output.for_client(), "still here\n");
    // A progress line redrawn with \r keeps its last state.
    assert_eq!(
        run(&shell, "printf '10%%\\r50%%\\r100%%\\n'").await.output.for_client(),
        "100%\n"
    );
    shell.close().await;
}

async fn output_is_bounded(kind: ShellKind) {
    let fx = Fixture::new(kind);
    let shell = fx.start().await;
    let lines = 300_000;
    let answer = run(&shell, &format!("yes 'hello world' | head -n {lines}; printf 'last'")).await;
    let out = &answer.output;
    assert_eq!(out.total_lines, lines + 1);
    assert_eq!(out.total_bytes, lines * 12 + 4);
    assert!(out.is_truncated());
    let client = out.for_client();
    assert!(client.len() <= CLIENT_OUTPUT_CAP + 100, "{}", client.len());
    assert!(client.starts_with("hello world\nhello world\n"));
    assert!(client.ends_with("hello world\nlast"));
    let model = out.for_model(OutputLimits::MODEL);
    assert!(model.len() <= 16 * 1024 + 100, "{}", model.len());
    let elided = model.lines().find(|l| l.starts_with("[... ")).unwrap();
    let shown = model.lines().count() as u64 - 1;
    assert!(
        elided.starts_with(&format!("[... {} lines (", lines + 1 - shown)),
        "{elided}"
    );
    // One endless line stays bounded too.
    let answer = run(&shell, "head -c 3000000 /dev/zero | tr '\\0' x").await;
    assert_eq!(answer.output.total_lines, 1);
    assert!(answer.output.for_client().len() < MAX_LINE_BYTES + 100);
    shell.close().await;
}

async fn a_long_command_is_left_running_and_its_end_reported(kind: ShellKind) {
    let fx = Fixture::new(kind);
    let shell = fx.start().await;
    let started = chrono::Utc::now();
    let answer = shell
        .run(
            "echo begun; sleep 2; echo done; exit_status_is=4; (exit 4)",
            Duration::from_millis(700),
        )
        .await
        .unwrap()
        .answer()
        .await;
    assert!(answer.left_running());
    assert_eq!((answer.how, answer.exit_code), (None, None));
    assert_eq!(answer.output.for_client(), "begun\n");
    let status = shell.status().await.unwrap();
    let busy = status.busy.unwrap();
    assert!(busy.left_running && busy.since >= started - chrono::Duration::seconds(1));
    assert!(busy.command.starts_with("echo begun; sleep 2"));
    // The shell takes no other run, and says which command holds it.
    let refused = shell.run("echo other", LONG).await.unwrap_err();
    assert!(
        matches!(&refused, ShellError::Busy { command, .. } if command.starts_with("echo begun; sleep 2")),
        "{refused}"
    );
    assert!(refused.to_string().contains("echo begun; sleep 2"));
    let detached = answer.detached.unwrap();
    let end = tokio::time::timeout(LONG, detached.ended()).await.unwrap();
    assert_eq!((end.how, end.exit_code), (EndCause::Ended, Some(4)));
    assert_eq!(end.output.for_client(), "begun\ndone\n");
    assert_eq!(run(&shell, "echo free").await.output.for_client(), "free\n");
    shell.close().await;
}

async fn interrupt_stops_the_command(kind: ShellKind) {
    let fx = Fixture::new(kind);
    let shell = fx.start().await;
    let answer = shell
        .run("sleep 30", Duration::from_millis(300))
        .await
        .unwrap()
        .answer()
        .await;
    let detached = answer.detached.unwrap();
    shell.interrupt().await.unwrap();
    let end = tokio::time::timeout(LONG, detached.ended()).await.unwrap();
    assert_eq!((end.how, end.exit_code), (EndCause::Stopped, Some(130)));
    // An interrupt that comes before the shell has read the run's line still stops the command.
    let early = shell.run("sleep 30", LONG).await.unwrap();
    shell.interrupt().await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(10), early.answer())
        .await
        .expect("the early interrupt stopped sleep 30");
    assert_eq!((answer.how, answer.exit_code), (Some(EndCause::Stopped), Some(130)));
    // An interrupt is followed into the next foreground group for a while: here the first group ignores SIGINT (as
    // the shell does when it has forked the command but not yet made it the foreground), and the sleep after it
    // gets one of its own.
    let followed = shell
        .run("(trap '' INT; touch ignoring; sleep 0.5); sleep 30", LONG)
        .await
        .unwrap();
    eventually("the first group runs", || fx.home().join("ignoring").exists()).await;
    shell.interrupt().await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(10), followed.answer())
        .await
        .expect("the interrupt followed the command into its next group");
    assert_eq!(answer.how, Some(EndCause::Stopped));
    // A loop that runs in the shell itself stops too (interrupted once it runs).
    let run_ = shell.run("touch looping; while true; do :; done", LONG).await.unwrap();
    eventually("the loop runs", || fx.home().join("looping").exists()).await;
    shell.interrupt().await.unwrap();
    let answer = tokio::time::timeout(LONG, run_.answer()).await.unwrap();
    assert_eq!(answer.how, Some(EndCause::Stopped));
    assert_eq!(run(&shell, "echo after").await.output.for_client(), "after\n");
    shell.close().await;
}

async fn interrupt_survives_a_removed_prompt_hook(kind: ShellKind) {
    let fx = Fixture::new(kind);
    let shell = fx.start().await;
    let remove = match kind {
        ShellKind::Bash => "PROMPT_COMMAND=; PS1='changed> '",
        ShellKind::Zsh => "precmd_functions=(); PS1='changed> '",
    };
    run(&shell, remove).await;
    // The file appears in the process that then becomes the sleep: an interrupt from then on stops the command.
    let run_ = shell.run("sh -c 'touch sleeping; exec sleep 30'", LONG).await.unwrap();
    eventually("the command runs", || fx.home().join("sleeping").exists()).await;
    shell.interrupt().await.unwrap();
    let answer = tokio::time::timeout(LONG, run_.answer()).await.unwrap();
    assert_eq!((answer.how, answer.exit_code), (Some(EndCause::Stopped), Some(130)));
    assert_eq!(run(&shell, "echo ok").await.output.for_client(), "ok\n");
    shell.close().await;
}

async fn close_then_a_new_shell(kind: ShellKind) {
    let fx = Fixture::new(kind);
    let mut slot = ShellSlot::new(fx.opts.clone());
    let first = slot.shell().await.unwrap().clone();
    std::fs::create_dir(fx.home().join("elsewhere")).unwrap();
    let background = run(&first, "cd elsewhere; sleep 60 & echo \"pid=$!\"")
        .await
        .output
        .for_client();
    let background: i32 = background
        .lines()
        .find_map(|l| l.strip_prefix("pid="))
        .unwrap()
        .parse()
        .unwrap();
    let answer = first
        .run("sleep 30", Duration::from_millis(200))
        .await
        .unwrap()
        .answer()
        .await;
    let detached = answer.detached.unwrap();
    slot.close().await;
    let end = tokio::time::timeout(LONG, detached.ended()).await.unwrap();
    assert_eq!((end.how, end.exit_code), (EndCause::Closed, None));
    assert_eq!(first.life(), Life::Closed);
    assert!(matches!(
        first.run("true", LONG).await,
        Err(ShellError::Gone(Life::Closed))
    ));
    // Nothing of the old session survives.
    for pid in [i32::try_from(first.pid()).unwrap(), background] {
        let gone = || {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat.is_empty() || stat.contains(") Z ")
        };
        eventually(&format!("process {pid} ends with the close"), gone).await;
    }
    let second = slot.shell().await.unwrap();
    assert_ne!(second.pid(), first.pid());
    let answer = run(second, "pwd").await;
    assert_eq!(answer.output.for_client(), format!("{}\n", fx.home().display()));
    slot.close().await;
}

async fn hidden_password_prompt_is_answered(kind: ShellKind) {
    let fx = Fixture::new(kind);
    let shell = fx.start().await;
    let line = match kind {
        ShellKind::Bash => "read -r -s -p 'Password: ' pw; echo; echo \"got ${#pw}\"",
        ShellKind::Zsh => "read -r -s 'pw?Password: '; echo; echo \"got ${#pw}\"",
    };
    let run_ = shell.run(line, LONG).await.unwrap();
    let mut input = run_.input();
    let wait = wait_for(&mut input, |w| w.kind != InputKind::None).await;
    assert_eq!(wait.kind, InputKind::Hidden);
    assert_eq!(wait.prompt.as_deref(), Some("Password:"));
    assert!(!wait.looks_secret);
    let status = shell.status().await.unwrap();
    let busy = status.busy.unwrap();
    assert_eq!(
        (busy.input.kind, busy.prompt.as_deref()),
        (InputKind::Hidden, Some("Password:"))
    );
    shell.write_input("hunter2", true).await.unwrap();
    let answer = tokio::time::timeout(LONG, run_.answer()).await.unwrap();
    let out = answer.output.for_client();
    assert!(out.ends_with("got 7\n"), "{out:?}");
    assert!(!out.contains("hunter2"));
    assert_eq!(*input.borrow(), InputWait::NONE);
    shell.close().await;
}

async fn visible_wait_of_python_input(kind: ShellKind) {
    let fx = Fixture::new(kind);
    let shell = fx.start().await;
    let run_ = shell
        .run("python3 -c 'x = input(\"name? \"); print(\"hi\", x)'", LONG)
        .await
        .unwrap();
    let mut input = run_.input();
    let wait = wait_for(&mut input, |w| w.kind != InputKind::None).await;
    assert_eq!(
        (wait.kind, wait.looks_secret, wait.prompt.as_deref()),
        (InputKind::Visible, false, Some("name?"))
    );
    shell.write_input("ana", true).await.unwrap();
    let answer = tokio::time::timeout(LONG, run_.answer()).await.unwrap();
    assert_eq!(answer.output.for_client(), "name? ana\nhi ana\n");
    shell.close().await;
}

async fn raw_mode_password_prompt_looks_secret(kind: ShellKind) {
    let fx = Fixture::new(kind);
    let shell = fx.start().await;
    // A relay-like program: raw mode, a password prompt, a wait in select() rather than read().
    let script = "import os, select, termios, tty\n\
                  old = termios.tcgetattr(0)\n\
                  tty.setraw(0)\n\
                  try:\n    os.write(1, b'[relay] password for ana: ')\n    select.select([0], [], [])\n    got = os.read(0, 100)\n\
                  finally:\n    termios.tcsetattr(0, termios.TCSANOW, old)\n\
                  print('\\nread', len(got.strip()))\n";
    std::fs::write(fx.home().join("relay.py"), script).unwrap();
    let run_ = shell.run("python3 relay.py", LONG).await.unwrap();
    let mut input = run_.input();
    let wait = wait_for(&mut input, |w| w.kind != InputKind::None).await;
    assert_eq!(wait.kind, InputKind::Visible);
    assert!(wait.looks_secret, "{wait:?}");
    assert_eq!(wait.prompt.as_deref(), Some("[relay] password for ana:"));
    shell.write_input("s3cret", true).await.unwrap();
    let answer = tokio::time::timeout(LONG, run_.answer()).await.unwrap();
    assert!(
        answer.output.for_client().ends_with("read 6\n"),
        "{:?}",
        answer.output.for_client()
    );
    shell.close().await;
}

async fn exit_and_exec_end_the_shell(kind: ShellKind) {
    let fx = Fixture::new(kind);
    let mut slot = ShellSlot::new(fx.opts.clone());
    let first = slot.shell().await.unwrap().clone();
    let answer = run(&first, "echo bye; exit 3").await;
    assert_eq!((answer.how, answer.exit_code), (Some(EndCause::ShellExited), Some(3)));
    // Interactive bash says "exit" on its way out.
    assert!(
        answer.output.for_client().starts_with("bye\n"),
        "{:?}",
        answer.output.for_client()
    );
    assert_eq!(first.life(), Life::Exited(Some(3)));
    let gone = first.run("true", LONG).await.unwrap_err();
    assert!(matches!(gone, ShellError::Gone(Life::Exited(Some(3)))), "{gone}");
    assert!(gone.to_string().contains("next call starts a new one"));
    // The slot starts a new shell; `exec` of a program replaces it, and its end ends the shell.
    let second = slot.shell().await.unwrap().clone();
    assert_ne!(second.pid(), first.pid());
    let answer = run(&second, "exec sh -c 'echo from exec; exit 5'").await;
    assert_eq!((answer.how, answer.exit_code), (Some(EndCause::ShellExited), Some(5)));
    assert_eq!(answer.output.for_client(), "from exec\n");
    let third = slot.shell().await.unwrap();
    assert_eq!(run(third, "echo alive").await.output.for_client(), "alive\n");
    slot.close().await;
}

async fn prompt_changes_and_redirects_do_not_lose_markers(kind: ShellKind) {
    let fx = Fixture::new(kind);
    let shell = fx.start().await;
    let change = match kind {
        ShellKind::Bash => "PS1='custom> '; PROMPT_COMMAND='echo prompt noise'; PS0='ps0 noise'",
        ShellKind::Zsh => "PS1='custom> '; precmd() { echo prompt noise; }; preexec() { echo preexec noise; }",
    };
    let answer = run(&shell, change).await;
    assert_eq!(answer.exit_code, Some(0));
    // Prompt strings and hooks print before the run's start marker or after its end marker: not its output.
    assert_eq!(run(&shell, "echo ok").await.output.for_client(), "ok\n");
    // stdout sent away for good: markers still arrive, stderr still shows.
    run(&shell, "exec >/dev/null").await;
    let answer = run(&shell, "echo gone; echo shown >&2").await;
    assert_eq!(answer.output.for_client(), "shown\n");
    shell.close().await;
}

async fn bad_requests_get_clear_errors(kind: ShellKind) {
    let fx = Fixture::new(kind);
    let shell = fx.start().await;
    assert!(matches!(
        shell.run("  \n", LONG).await,
        Err(ShellError::InvalidCommand(_))
    ));
    assert!(matches!(
        shell.run("echo a\0b", LONG).await,
        Err(ShellError::InvalidCommand(_))
    ));
    assert!(matches!(shell.write_input("x", true).await, Err(ShellError::NoRun)));
    assert!(matches!(shell.interrupt().await, Err(ShellError::NoRun)));
    // None of that disturbed the shell.
    assert_eq!(run(&shell, "echo fine").await.output.for_client(), "fine\n");
    shell.close().await;
    assert!(matches!(shell.status().await, Err(ShellError::Gone(Life::Closed))));
    assert!(matches!(shell.write_input("x", false).await, Err(ShellError::Gone(_))));
    // Closing twice is harmless.
    shell.close().await;

    let mut opts = fx.opts.clone();
    opts.cwd = fx.home().join("missing");
    let error = HiddenShell::start(opts).await.unwrap_err();
    assert!(
        matches!(&error, ShellError::Start(m) if m.contains("missing")),
        "{error}"
    );
    let mut opts = fx.opts.clone();
    opts.program = Some("/nonexistent/efr-no-shell".into());
    let error = HiddenShell::start(opts).await.unwrap_err();
    assert!(
        matches!(&error, ShellError::Start(m) if m.contains("efr-no-shell")),
        "{error}"
    );
    let mut opts = fx.opts.clone();
    opts.work_root = fx.home().join("no-root");
    assert!(matches!(HiddenShell::start(opts).await, Err(ShellError::Start(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_never_gets_ready_is_refused() {
    let fx = Fixture::new(ShellKind::Bash);
    let fake = fx.home().join("fake-shell");
    std::fs::write(&fake, "#!/bin/sh\nprintf 'not a shell> '\nsleep 30\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut opts = fx.opts.clone();
    opts.program = Some(fake);
    opts.ready_timeout = Duration::from_millis(800);
    let error = HiddenShell::start(opts.clone()).await.unwrap_err();
    assert!(matches!(&error, ShellError::NotReady { .. }), "{error}");
    // One that ends before it is ready is refused at once, with what its screen showed.
    let quick = fx.home().join("quick-shell");
    std::fs::write(&quick, "#!/bin/sh\necho 'broken rc'\nexit 1\n").unwrap();
    std::fs::set_permissions(&quick, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    opts.program = Some(quick);
    opts.ready_timeout = LONG;
    let started = std::time::Instant::now();
    let error = HiddenShell::start(opts).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        matches!(&error, ShellError::NotReady { screen, .. } if screen.contains("broken rc")),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_command_past_its_limit_ends_with_limit() {
    let mut fx = Fixture::new(ShellKind::Bash);
    fx.opts.detached_limit = Some(Duration::from_millis(500));
    let shell = fx.start().await;
    let answer = shell
        .run("sleep 30", Duration::from_millis(200))
        .await
        .unwrap()
        .answer()
        .await;
    let end = tokio::time::timeout(LONG, answer.detached.unwrap().ended())
        .await
        .unwrap();
    assert_eq!((end.how, end.exit_code), (EndCause::Limit, Some(130)));
    assert_eq!(run(&shell, "echo next").await.output.for_client(), "next\n");
    shell.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_files_are_private_and_removed() {
    let fx = Fixture::new(ShellKind::Bash);
    let shell = fx.start().await;
    let answer = run(
        &shell,
        "ls ../run/shell-*/ | grep -c '^run-'; stat -c %a ../run/shell-*",
    )
    .await;
    // While the run ran, its own command file was there (one), and the folder is 0700.
    assert_eq!(answer.output.for_client(), "1\n700\n");
    let root = fx.opts.work_root.clone();
    let folder = std::fs::read_dir(&root).unwrap().next().unwrap().unwrap().path();
    assert!(
        std::fs::read_dir(&folder)
            .unwrap()
            .all(|e| !e.unwrap().file_name().to_string_lossy().starts_with("run-"))
    );
    shell.close().await;
    eventually("the shell's folder is removed when it ends", || !folder.exists()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_shows_its_given_name_and_its_work_dir_is_the_private_folder() {
    let fx = Fixture::new(ShellKind::Bash);
    let shell = fx.start().await;
    assert!(shell.work_dir().starts_with(&fx.opts.work_root));
    assert!(shell.work_dir().is_dir());
    // The shell runs one line and names it by another: busy errors and the status show the given name.
    let run = shell
        .run_as("sleep 3; echo slept", "the model's line", Duration::from_millis(200))
        .await
        .unwrap();
    assert_eq!(run.command(), "the model's line");
    let answer = run.answer().await;
    let detached = answer.detached.expect("left running");
    assert_eq!(detached.command(), "the model's line");
    match shell.run("true", LONG).await {
        Err(ShellError::Busy { command, .. }) => assert_eq!(command, "the model's line"),
        other => panic!("expected busy, got {other:?}"),
    }
    let status = shell.status().await.unwrap();
    assert_eq!(status.busy.unwrap().command, "the model's line");
    let end = tokio::time::timeout(LONG, detached.ended()).await.unwrap();
    assert!(end.output.for_client().contains("slept"));
    let dir = shell.work_dir().to_path_buf();
    shell.close().await;
    eventually("the work dir is removed with the shell", || !dir.exists()).await;
}

async fn closed_standard_descriptors_are_reopened_for_the_next_calls(kind: ShellKind) {
    let fx = Fixture::new(kind);
    let shell = fx.start().await;
    for (close, name) in [
        ("exec 1>&-", "standard output (fd 1)"),
        ("exec 2>&-", "standard error (fd 2)"),
        ("exec 0<&-", "standard input (fd 0)"),
        ("exec 0</dev/null", "standard input (fd 0)"),
    ] {
        let answer = run(&shell, close).await;
        assert_eq!(
            answer.how,
            Some(EndCause::Ended),
            "{close}: {:?}",
            answer.output.for_client()
        );
        // The model reads what efr did about it in the call's own output.
        let output = answer.output.for_client();
        assert!(
            output.contains(&format!("efr: the shell's {name}")) && output.contains("reopened on the terminal"),
            "{close}: {output:?}"
        );
        let next = run(&shell, "echo ok; echo err >&2").await;
        assert_eq!(next.output.for_client(), "ok\nerr\n", "after {close}");
        assert_eq!(next.exit_code, Some(0), "after {close}");
        // The same shell: cd, variables and functions carried.
        assert_eq!(shell.status().await.unwrap().pid, shell.pid(), "after {close}");
        assert!(shell.is_alive(), "after {close}");
    }
    // Input waits are still seen on the reopened terminal.
    let running = shell.run("read -r answer; echo \"got $answer\"", LONG).await.unwrap();
    let mut input = running.input();
    let wait = wait_for(&mut input, |w| w.kind != InputKind::None).await;
    assert_eq!(wait.kind, InputKind::Visible, "{wait:?}");
    shell.write_input("yes", true).await.unwrap();
    let answer = running.answer().await;
    assert_eq!(answer.output.for_client(), "yes\ngot yes\n");
    // A redirect to a file is the command's choice, kept as in a terminal; only a closed descriptor is reopened.
    run(&shell, "exec 2>/dev/null").await;
    assert_eq!(
        run(&shell, "echo out; echo hidden >&2").await.output.for_client(),
        "out\n"
    );
    shell.close().await;
}
