//! `efr resume` against the real efrd, its stdin a real pseudo-terminal (`script` runs it in one): a conversation
//! taken up by the start of its id, its folder printed for `,resume`; the picker chosen with Enter, left with Esc; a
//! list in a pipe; an unknown id, and a resume with no terminal, are exit 1.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::common;

use common::{daemon, efr, efr_run, model, text, texts};
use serde_json::json;

/// `efr ARGS` in `cwd` with a pseudo-terminal as its stdin, stdout and stderr (through `script`), `keys` typed after
/// half a second.
fn efr_in_terminal(home: &Path, cwd: &Path, args: &str, keys: &[u8]) -> Output {
    let line = format!("{} {args}", efr().display());
    let mut child = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(cwd)
        .env("EFR_HOME", home)
        .env_remove("EFR_RUNTIME_DIR")
        .env("SHELL", "/bin/bash")
        .env("TERM", "xterm")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script (util-linux) must be installed");
    let mut stdin = child.stdin.take().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    stdin.write_all(keys).unwrap();
    stdin.flush().unwrap();
    // stdin stays open until efr ends: script would end the session at its end of file.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "efr resume did not end");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_is_resumed_by_its_id_or_from_the_picker_in_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (project, elsewhere) = (work.path().join("app"), work.path().join("elsewhere"));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let project = project.canonicalize().unwrap();
    let server = model(vec![text("first answer"), text("second answer")]).await;
    let efrd = daemon(home.path(), &server, true);
    let mut client = efrd.client().await.unwrap();
    client.ok("admin.project_add", json!({"path": project})).await.unwrap();
    let mut ids = Vec::new();
    for prompt in ["Fix the größe parser", "Write the docs"] {
        let sent = client
            .ok(
                "prompt.send",
                json!({"command_id": uuid(), "text": prompt, "context": {"cwd": project}}),
            )
            .await
            .unwrap();
        ids.push(sent["conversation_id"].as_str().unwrap().to_owned());
        wait_idle(&mut client, &ids[ids.len() - 1]).await;
    }

    // By the start of its id, from a folder outside its project: its folder is printed alone with --print-dir.
    let by_id = efr_in_terminal(
        home.path(),
        &elsewhere,
        &format!("resume --print-dir {}", &ids[0][..8]),
        b"",
    );
    let (stdout, stderr) = texts(&by_id);
    assert_eq!(by_id.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("resumed: Fix the größe parser"), "{stdout}");
    assert!(stdout.trim_end().ends_with(&project.display().to_string()), "{stdout}");

    // The picker: type to filter, Enter chooses.
    let picked = efr_in_terminal(home.path(), &project, "resume", b"docs\r");
    let (stdout, stderr) = texts(&picked);
    assert_eq!(picked.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("resume> "), "the picker was drawn: {stdout}");
    // The first row is the terminal's current conversation; the filter chose the other.
    assert!(
        stdout.contains(&format!("resumed: Write the docs ({})", ids[1])),
        "{stdout}"
    );
    // Esc leaves it with exit 1.
    let left = efr_in_terminal(home.path(), &project, "resume", b"\x1b");
    assert_eq!(left.status.code(), Some(1), "{}", texts(&left).0);

    // Bad input: an unknown id, and a pipe (no terminal).
    let unknown = efr_in_terminal(home.path(), &project, "resume abcdef12", b"");
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        texts(&unknown).0.contains("no recent conversation"),
        "{}",
        texts(&unknown).0
    );
    let piped = efr_run(home.path(), &project, &["resume"], None).await;
    let (stdout, stderr) = texts(&piped);
    assert_eq!(piped.status.code(), Some(0), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&ids[0][..8]) && l.contains("Fix the größe parser")),
        "{stdout}"
    );
    let no_terminal = efr_run(home.path(), &project, &["resume", &ids[0][..8]], None).await;
    assert_eq!(no_terminal.status.code(), Some(1));
    assert!(texts(&no_terminal).1.contains("not one"), "{}", texts(&no_terminal).1);
}

fn uuid() -> String {
    efr_protocol::ids::CommandId::new().to_string()
}

/// Waits until `conversation` is idle (its turn ended), at most 20 s.
async fn wait_idle(client: &mut efr_test_support::client::Client, conversation: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let listed = client.ok("conversations.list", json!({})).await.unwrap();
        let idle = listed["conversations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["conversation_id"] == conversation && c["status"] == "idle");
        if idle {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{conversation} never became idle");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
