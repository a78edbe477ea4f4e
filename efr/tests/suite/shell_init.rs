//! `efr shell-init bash|zsh` in real interactive shells, driven through tmux.
//!
//! The script is loaded with `eval "$(EFR_SHELL_INIT_EFR=<recorder> efr shell-init <shell>)"`, so `,` calls a
//! recorder (a small shell script that writes its arguments, NUL-separated, to one file per call) instead of efr.
//! Each test types commands with `tmux send-keys` and waits, bounded, for the recorder's files or for a marker on
//! the screen. A marker is typed as `echo M-$((1))` and waited for as `M-1`, so the typed line never matches.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const EFR: &str = env!("CARGO_BIN_EXE_efr");
const WAIT: Duration = Duration::from_secs(15);

/// A shell in a tmux session of its own (its own server socket), killed on drop.
struct Session {
    dir: tempfile::TempDir,
    socket: PathBuf,
    calls: usize,
}

impl Session {
    /// Starts `shell` (bash or zsh, without rc files) with a clean environment plus `envs`.
    fn start(shell: &str, envs: &[(&str, &str)]) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("si")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let socket = dir.path().join("tmux");
        let recorder = dir.path().join("recorder");
        std::fs::create_dir(dir.path().join("calls")).unwrap();
        std::fs::write(
            &recorder,
            format!(
                "#!/bin/sh\ncalls={}\nn=$(ls \"$calls\" | wc -l)\nprintf '%s\\0' \"$@\" > \"$calls/.$n\"\nmv \"$calls/.$n\" \"$calls/$n\"\n",
                dir.path().join("calls").display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&recorder, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let program = match shell {
            "bash" => vec!["bash", "--norc", "--noprofile", "-i"],
            "zsh" => vec!["zsh", "-f", "-i"],
            other => panic!("no such shell {other}"),
        };
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {shell}")])
            .output()
            .unwrap();
        assert!(
            found.status.success(),
            "this test needs {shell} (apt-get install {shell})"
        );
        let mut command = Command::new("tmux");
        command
            .arg("-S")
            .arg(&socket)
            .args(["-f", "/dev/null", "new-session", "-d", "-x", "220", "-y", "60", "--"])
            .args(&program)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env("TERM", "xterm")
            .env("HISTFILE", dir.path().join("history"))
            .env("PS1", "$ ")
            .current_dir(dir.path());
        for (name, value) in envs {
            command.env(name, value);
        }
        let status = command.status().expect("this test needs tmux (apt-get install tmux)");
        assert!(status.success(), "tmux new-session failed: {status}");
        Self { dir, socket, calls: 0 }
    }

    fn recorder(&self) -> PathBuf {
        self.dir.path().join("recorder")
    }

    /// Types `line` and Enter.
    fn type_line(&self, line: &str) {
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["send-keys", "-t", "0", "-l", line])
            .status()
            .unwrap();
        assert!(status.success());
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["send-keys", "-t", "0", "Enter"])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// The screen and the scrollback.
    fn screen(&self) -> String {
        let output = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["capture-pane", "-p", "-J", "-S", "-200", "-t", "0"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Waits until a line of the screen is exactly `line`.
    fn wait_line(&self, line: &str) {
        let deadline = Instant::now() + WAIT;
        while !self.screen().lines().any(|l| l.trim_end() == line) {
            assert!(
                Instant::now() < deadline,
                "no line {line:?} within {WAIT:?}; screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// Types `echo NAME-$((1))` and waits for `NAME-1`: everything typed before has run.
    fn sync(&self, name: &str) {
        self.type_line(&format!("echo {name}-$((1))"));
        self.wait_line(&format!("{name}-1"));
    }

    /// Waits for the next recorded call of `,` and returns its arguments.
    fn next_call(&mut self) -> Vec<String> {
        let path = self.dir.path().join("calls").join(self.calls.to_string());
        let deadline = Instant::now() + WAIT;
        while !path.exists() {
            assert!(
                Instant::now() < deadline,
                "`,` made no call #{} within {WAIT:?}; screen:\n{}",
                self.calls,
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(30));
        }
        self.calls += 1;
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        text.strip_suffix('\0')
            .unwrap_or(&text)
            .split('\0')
            .map(str::to_owned)
            .collect()
    }

    /// No call beyond the ones read.
    fn assert_no_more_calls(&self) {
        let count = std::fs::read_dir(self.dir.path().join("calls")).unwrap().count();
        assert_eq!(count, self.calls, "unexpected extra calls of `,`");
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .status();
    }
}

/// A call split into (flags before `--`, words after it).
fn split(call: &[String]) -> (&[String], &[String]) {
    let at = call.iter().position(|a| a == "--").expect("a `--` in the call");
    (&call[..at], &call[at + 1..])
}

/// The values of every `--recent`.
fn recent(flags: &[String]) -> Vec<&str> {
    flags
        .windows(2)
        .filter(|pair| pair[0] == "--recent")
        .map(|pair| pair[1].as_str())
        .collect()
}

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|w| (*w).to_owned()).collect()
}

/// The whole scenario in one shell: load twice, fail, ask, `,new`, the cap of the recent list.
fn scenario(shell: &str, mut session: Session) {
    let load = format!(
        "eval \"$(EFR_SHELL_INIT_EFR={rec} {EFR} shell-init {shell})\"; eval \"$(EFR_SHELL_INIT_EFR={rec} {EFR} shell-init {shell})\"",
        rec = session.recorder().display()
    );
    session.type_line(&load);
    session.sync("LOADED");
    session.type_line("echo one");
    session.type_line("false");
    // An empty line: no command runs, so `false` stays the last command.
    session.type_line("");
    session.type_line(", why did that fail?");
    let call = session.next_call();
    let (flags, said) = split(&call);
    assert_eq!(
        flags[..7],
        words(&[
            "prompt",
            "--shell",
            shell,
            "--last-command",
            "false",
            "--last-status",
            "1"
        ])[..],
        "{call:?}"
    );
    let lines = recent(flags);
    assert!(lines.ends_with(&["0\techo one", "1\tfalse"]), "{call:?}");
    assert!(
        !lines.iter().any(|l| l.contains("\t,")),
        "a `,` line is never recent: {call:?}"
    );
    assert!(!flags.contains(&"--new".to_owned()), "{call:?}");
    // Globbing is off for the words: `fail?` is sent as typed even though a file matches it.
    assert_eq!(said, words(&["why", "did", "that", "fail?"]));

    // `,` itself did not become the last command.
    session.type_line(", and now?");
    let call = session.next_call();
    assert_eq!(
        call[3..7],
        words(&["--last-command", "false", "--last-status", "1"])[..],
        "{call:?}"
    );

    session.type_line(",new");
    session.wait_line("efr: the next , starts a new conversation");
    session.type_line(", x");
    let call = session.next_call();
    let (flags, said) = split(&call);
    assert!(flags.contains(&"--new".to_owned()), "{call:?}");
    assert_eq!(said, words(&["x"]));
    session.type_line(", y");
    let call = session.next_call();
    assert!(!call.contains(&"--new".to_owned()), "--new is passed once: {call:?}");
    session.type_line(",new z w");
    let call = session.next_call();
    let (flags, said) = split(&call);
    assert!(flags.contains(&"--new".to_owned()), "{call:?}");
    assert_eq!(said, words(&["z", "w"]));

    // Twelve commands: only the last ten are recent, oldest first.
    for n in 1..=12 {
        session.type_line(&format!(": c{n}"));
    }
    session.type_line(", count");
    let call = session.next_call();
    let (flags, _) = split(&call);
    let expected: Vec<String> = (3..=12).map(|n| format!("0\t: c{n}")).collect();
    assert_eq!(
        recent(flags),
        expected.iter().map(String::as_str).collect::<Vec<_>>(),
        "{call:?}"
    );
    assert_eq!(
        call[3..7],
        words(&["--last-command", ": c12", "--last-status", "0"])[..]
    );
    session.assert_no_more_calls();
}

#[test]
fn bash_comma_sends_the_last_command_its_status_and_the_recent_ones() {
    let session = Session::start("bash", &[("PROMPT_COMMAND", "echo USER-HOOK-$?")]);
    std::fs::write(session.dir.path().join("faila"), "").unwrap();
    // The user's own PROMPT_COMMAND stays, once, after efr's hook, and still sees each command's status.
    session.type_line("false");
    session.wait_line("USER-HOOK-1");
    session.type_line(&format!(
        "eval \"$(EFR_SHELL_INIT_EFR={rec} {EFR} shell-init bash)\"",
        rec = session.recorder().display()
    ));
    session.sync("FIRST");
    session.type_line("echo \"PC=[$PROMPT_COMMAND]\"");
    session.wait_line("PC=[__efr_precmd;echo USER-HOOK-$?]");
    session.type_line("(exit 7)");
    session.wait_line("USER-HOOK-7");
    scenario("bash", session);
}

#[test]
fn zsh_comma_sends_the_last_command_its_status_and_the_recent_ones() {
    let session = Session::start("zsh", &[]);
    std::fs::write(session.dir.path().join("faila"), "").unwrap();
    session.type_line("__user_hook() { print USER-HOOK-$? }; precmd_functions+=(__user_hook)");
    // Options some users set that change how plain zsh code reads; the integration must not depend on them.
    session.type_line("setopt ksharrays shwordsplit");
    session.type_line(&format!(
        "eval \"$(EFR_SHELL_INIT_EFR={rec} {EFR} shell-init zsh)\"",
        rec = session.recorder().display()
    ));
    session.sync("FIRST");
    session.type_line("print -r -- HOOKS-${(j:,:)precmd_functions[@]}");
    session.wait_line("HOOKS-__user_hook,__efr_precmd");
    session.type_line("(exit 7)");
    session.wait_line("USER-HOOK-7");
    scenario("zsh", session);
}

#[test]
fn the_script_calls_this_efr_by_its_absolute_path_unless_told_otherwise() {
    let output = Command::new(EFR)
        .args(["shell-init", "bash"])
        .env_remove("EFR_SHELL_INIT_EFR")
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let exe = Path::new(EFR).canonicalize().unwrap();
    assert!(text.contains(&format!("__efr_bin='{}'\n", exe.display())), "{text}");

    let output = Command::new(EFR)
        .args(["shell-init", "zsh"])
        .env("EFR_SHELL_INIT_EFR", "/opt/it's/efr")
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("__efr_bin='/opt/it'\\''s/efr'\n"), "{text}");
    assert!(text.contains("add-zsh-hook precmd __efr_precmd"), "{text}");
}

#[test]
fn an_unknown_shell_is_refused_with_the_choices() {
    let output = Command::new(EFR).args(["shell-init", "fish"]).output().unwrap();
    assert!(!output.status.success());
    assert!(output.stdout.is_empty(), "nothing to eval on error");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("fish") && stderr.contains("bash") && stderr.contains("zsh"),
        "{stderr}"
    );
}
