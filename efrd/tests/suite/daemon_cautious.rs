//! Cautious's read-only commands in efr's read-only sandbox, with the real launcher and bubblewrap
//! (docs/adr/0009-cautious-reads-contained.md): reads of credential stores and efr's state root see empty masks and
//! ask nothing, a repository's planted git config runs nothing, common reads give the same output contained (by
//! bubblewrap, or by Landlock alone) as direct, and a project under /tmp is read contained. Without bubblewrap:
//! `daemon_landlock_only.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use common::auto::{bounded, daemon_with, tempdir};
use common::tools::{event_of, prompt_to, shell_call, start, text, tool_output};
use common::{command_id, events_until, model};

/// The bytes of the planted secrets; none may reach the model.
const SSH_SECRET: &str = "SSH-PRIVATE-KEY-BYTES-0f9e";
const STATE_SECRET: &str = "sk-STATE-ROOT-KEY-7c1d";

fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=Host", "-c", "user.email=host@example.invalid"])
        .args(args)
        // Fixed dates, so that two projects made alike have the same commits.
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .output()
        .expect("git runs (apt-get install git)");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A home with a private key in `~/.ssh` and a project `~/proj` (a git repository with a file).
fn home_with_a_key() -> tempfile::TempDir {
    let home = tempdir();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(
        home.path().join(".ssh/id_ed25519"),
        format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{SSH_SECRET}\n-----END OPENSSH PRIVATE KEY-----\n"),
    )
    .unwrap();
    let project = home.path().join("proj");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("README"), "hello\n").unwrap();
    git(&project, &["init", "-q"]);
    git(&project, &["add", "README"]);
    git(&project, &["commit", "-qm", "one"]);
    home
}

/// Answers the next question of the subscription `id`, which must be about `call`; the events through it go to
/// `seen`.
async fn answer(
    client: &mut efr_test_support::client::Client,
    id: efr_protocol::frame::RequestId,
    conversation: &str,
    call: &str,
    seen: &mut Vec<Value>,
) -> Value {
    let events = bounded("a question", common::events_through(client, id, "approval_requested")).await;
    let asked = events.last().unwrap().clone();
    assert_eq!(asked["call_id"], call, "{asked}");
    seen.extend(events);
    let allow =
        json!({"command_id": command_id(), "conversation_id": conversation, "call_id": call, "decision": "allow"});
    client.ok("approval.respond", allow).await.unwrap();
    asked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cautious_reads_of_credential_stores_ask_nothing_and_see_empty_masks() {
    let home = home_with_a_key();
    let project = home.path().join("proj");
    // A link in the project to efr's state root (EFR_HOME/state in the tests).
    std::os::unix::fs::symlink(home.path().join("state"), project.join("statelink")).unwrap();
    let reads = [
        ("call_tilde", "cat ~/.ssh/id_ed25519"),
        ("call_home", "cat \"$HOME/.ssh/id_ed25519\""),
        ("call_glob", "cat $HOME/.ssh/*"),
        ("call_head", "head -c 100 ~/.ssh/id_ed25519"),
        ("call_base64", "base64 ~/.ssh/id_ed25519"),
        ("call_pwd", "cat \"$PWD/../state/keys/openai\""),
        ("call_link", "cat statelink/keys/openai"),
        ("call_grep", "grep -r PRIVATE ~"),
    ];
    let mut replies: Vec<_> = reads.iter().map(|(id, line)| shell_call(id, line)).collect();
    replies.push(shell_call(
        "call_export",
        "export x='cat ~/.ssh/id_ed25519; echo evaluated'",
    ));
    replies.push(shell_call("call_eval", "eval \"$x\""));
    replies.push(text("read"));
    let server = model(replies).await;
    let efrd = daemon_with(home.path(), &server, &[]);
    // efr's state root exists once efrd runs; a key in it, as `efr login` would store one.
    std::fs::create_dir_all(home.path().join("state/keys")).unwrap();
    std::fs::write(home.path().join("state/keys/openai"), STATE_SECRET).unwrap();
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, &project, "cautious", "read").await;

    // The export asks (it changes the hidden shell) and runs direct; the eval, which efr cannot see into, runs in
    // the read-only sandbox without a question.
    let mut events = Vec::new();
    let asked = answer(&mut client, id, &conversation, "call_export", &mut events).await;
    assert!(asked["reason"].as_str().unwrap().contains("cautious asks"), "{asked}");
    events.extend(bounded("cautious turn", events_until(&mut client, id, "turn_completed")).await);
    let questions: Vec<&str> = events
        .iter()
        .filter(|e| e["kind"] == "approval_requested")
        .map(|e| e["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(questions, ["call_export"], "only the export asked");

    for (call, line) in reads.iter().chain([&("call_eval", "eval \"$x\"")]) {
        let started = event_of(&events, "tool_call_started", call);
        assert_eq!(started["launch"], json!({"kind": "contained"}), "{line}: {started}");
        let done = event_of(&events, "tool_call_completed", call);
        assert!(done["sandbox"].get("setup_error").is_none(), "{line}: {done}");
        let seen = tool_output(&server, call);
        for secret in [SSH_SECRET, STATE_SECRET] {
            assert!(!seen.contains(secret), "{line} read a secret: {seen}");
            assert!(!done.to_string().contains(secret), "{line} recorded a secret: {done}");
        }
    }
    // The masks read as empty folders: the key is not there.
    for call in ["call_tilde", "call_home", "call_pwd", "call_link"] {
        let seen = tool_output(&server, call);
        assert!(seen.contains("No such file or directory"), "{call}: {seen}");
        // The model is told where the failure may come from.
        assert!(seen.contains("ran in efr's read-only sandbox"), "{call}: {seen}");
    }
    // The export carried over from the hidden shell into the contained eval, which ran its line.
    assert!(tool_output(&server, "call_eval").contains("evaluated"));
    let export = event_of(&events, "tool_call_started", "call_export");
    assert_eq!(export["launch"]["kind"], "direct", "{export}");
    // grep over the home folder found the project's files but nothing in the masks.
    let grep = tool_output(&server, "call_grep");
    assert!(!grep.contains(".ssh/id_ed25519:"), "{grep}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_config_planted_by_a_contained_call_runs_nothing_in_a_cautious_git_read() {
    let home = home_with_a_key();
    let project = home.path().join("proj");
    let outside = tempdir();
    let marker = outside.path().join("planted-ran");
    let program = format!("echo PLANTED-RAN >&2; touch {}; false", marker.display());
    // In `sub`: an fsmonitor and a hooks folder with the hook an index refresh runs. In `wt`, a worktree of `sub`:
    // its commondir pointed at a planted git folder whose config names an fsmonitor.
    let plant = format!(
        "git init -q sub && git -C sub -c user.name=M -c user.email=m@example.invalid commit --allow-empty -qm x && \
         git -C sub worktree add -q ../wt && \
         git -C sub config core.fsmonitor '{program}' && \
         mkdir sub/hooks && printf '#!/bin/sh\\n{program}\\n' > sub/hooks/post-index-change && \
         chmod +x sub/hooks/post-index-change && git -C sub config core.hooksPath hooks && \
         mkdir evil && cp -r sub/.git/objects sub/.git/refs sub/.git/HEAD evil/ && \
         printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"{}\"\\n' > evil/config && \
         echo \"$PWD/evil\" > sub/.git/worktrees/wt/commondir && echo planted",
        program.replace('"', "\\\"")
    );
    let server = model(vec![
        shell_call("call_plant", &plant),
        text("planted"),
        shell_call("call_sub", "git -C sub status --short"),
        shell_call("call_cd", "cd sub && git status"),
        shell_call("call_wt", "git -C wt status --short"),
        shell_call("call_diff", "git -C wt diff"),
        text("read"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, &project, "auto", "plant").await;
    bounded("auto turn", events_until(&mut client, id, "turn_completed")).await;
    let planted = tool_output(&server, "call_plant");
    assert!(planted.contains("planted"), "{planted}");
    // The plant works: git on the host runs it, in `sub` and in the worktree.
    for repo in ["sub", "wt"] {
        let _ = Command::new("git")
            .arg("-C")
            .arg(project.join(repo))
            .args(["status", "--short"])
            .output()
            .unwrap();
        assert!(
            marker.exists(),
            "the plant in {repo} does not run on the host, so the test proves nothing"
        );
        std::fs::remove_file(&marker).unwrap();
    }

    prompt_to(&mut client, Some(&conversation), &project, "cautious", "status").await;
    let events = bounded("cautious turn", events_until(&mut client, id, "turn_completed")).await;
    assert!(
        events.iter().all(|e| e["kind"] != "approval_requested"),
        "no question: {events:?}"
    );
    for call in ["call_sub", "call_cd", "call_wt", "call_diff"] {
        let started = event_of(&events, "tool_call_started", call);
        assert_eq!(started["launch"], json!({"kind": "contained"}), "{started}");
        let seen = tool_output(&server, call);
        assert!(!seen.contains("PLANTED-RAN"), "{call} ran the planted program: {seen}");
    }
    assert!(!marker.exists(), "a planted program ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn common_reads_print_the_same_contained_as_direct() {
    let lines = [
        "ls",
        "ls -la src | wc -l",
        "cat README",
        "grep -rn hello .",
        "sed -n '1,2p' src/lib.rs",
        "find . -name '*.rs' | sort",
        "head -n 1 src/lib.rs",
        "wc -l README src/lib.rs",
        "git status --short",
        "git log --oneline",
        "git diff",
        "git show --stat HEAD | tail -n 2",
        "cat README | tr a-z A-Z",
        "awk '{print $1}' src/lib.rs",
        "sort README | uniq -c",
        "git rev-parse --show-toplevel",
        "pwd",
        "du -s src | cut -f2",
        "stat -c %s README",
        // Last: a contained call's `cd` does not carry to the next call, a direct one's does.
        "cd src && ls",
    ];
    let mut outputs: Vec<Vec<String>> = Vec::new();
    // bubblewrap's read-only sandbox, Landlock and seccomp alone (no bubblewrap), and direct (full mode).
    for (launch, mode, envs) in [
        ("contained", "cautious", vec![]),
        ("contained", "cautious", vec![("EFR_BWRAP", "/nonexistent/bwrap")]),
        ("direct", "full", vec![]),
    ] {
        let home = home_with_a_key();
        // The same path in both runs, so `pwd` and `git rev-parse` print the same.
        let project = home.path().join("proj");
        std::fs::write(project.join("src/lib.rs"), "pub fn hello() {}\nfn two() {}\n").unwrap();
        git(&project, &["add", "src/lib.rs"]);
        git(&project, &["commit", "-qm", "two"]);
        std::fs::write(project.join("README"), "hello\nworld\n").unwrap();
        let mut replies: Vec<_> = lines
            .iter()
            .enumerate()
            .map(|(n, line)| shell_call(&format!("call_{n}"), line))
            .collect();
        replies.push(text("done"));
        let server = model(replies).await;
        let efrd = daemon_with(home.path(), &server, &envs);
        let mut client = efrd.client().await.unwrap();
        let (_, _, id) = start(&mut client, &project, mode, "read").await;
        let events = bounded("the turn", events_until(&mut client, id, "turn_completed")).await;
        assert!(
            events.iter().all(|e| e["kind"] != "approval_requested"),
            "{launch} {envs:?}: {events:?}"
        );
        let mut seen = Vec::new();
        for (n, line) in lines.iter().enumerate() {
            let call = format!("call_{n}");
            let started = event_of(&events, "tool_call_started", &call);
            assert_eq!(started["launch"]["kind"], launch, "{line}: {started}");
            // Each run has its own home folder: its name is the only difference allowed.
            seen.push(tool_output(&server, &call).replace(&home.path().display().to_string(), "$HOME"));
        }
        outputs.push(seen);
        drop(efrd);
    }
    for (n, line) in lines.iter().enumerate() {
        assert_eq!(outputs[0][n], outputs[2][n], "{line}: contained and direct differ");
        assert_eq!(outputs[1][n], outputs[2][n], "{line}: Landlock alone and direct differ");
        assert!(
            !outputs[0][n].contains("exit status"),
            "{line} failed: {}",
            outputs[0][n]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_under_tmp_is_read_contained_with_the_project_shown_read_only() {
    // The home is under the target folder; the project under /tmp, which the read-only sandbox's private /tmp would
    // hide without its read-only bind.
    let home = home_with_a_key();
    let project = tempfile::Builder::new().prefix("efr-ro-").tempdir_in("/tmp").unwrap();
    std::fs::write(project.path().join("README.md"), "hello from tmp\n").unwrap();
    git(project.path(), &["init", "-q"]);
    git(project.path(), &["add", "README.md"]);
    git(project.path(), &["commit", "-qm", "one"]);
    let server = model(vec![
        shell_call("call_cat", "cat README.md"),
        shell_call("call_git", "git status --short; git log --oneline | wc -l"),
        shell_call("call_key", "cat ~/.ssh/id_ed25519"),
        shell_call(
            "call_write",
            "echo x > made.txt 2>/dev/null || echo refused; cat README.md >/dev/null",
        ),
        text("read"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "cautious", "read").await;
    let mut events = Vec::new();
    // The write asks; allowed, it runs direct, as any cautious write.
    answer(&mut client, id, &conversation, "call_write", &mut events).await;
    events.extend(bounded("cautious turn", events_until(&mut client, id, "turn_completed")).await);
    for call in ["call_cat", "call_git", "call_key"] {
        let started = event_of(&events, "tool_call_started", call);
        assert_eq!(started["launch"], json!({"kind": "contained"}), "{call}: {started}");
        let done = event_of(&events, "tool_call_completed", call);
        assert!(done["sandbox"].get("setup_error").is_none(), "{call}: {done}");
    }
    assert!(
        events.iter().all(|e| e["kind"] != "sandbox_unavailable"),
        "the sandbox ran: {events:?}"
    );
    assert!(tool_output(&server, "call_cat").contains("hello from tmp"));
    assert!(
        tool_output(&server, "call_git").contains('1'),
        "{}",
        tool_output(&server, "call_git")
    );
    assert!(!tool_output(&server, "call_key").contains(SSH_SECRET));
}
