//! Cautious where bubblewrap cannot start (docs/adr/0020-landlock-only-reads.md), with the real launcher: a
//! `bwrap` that fails as AppArmor's restriction of user namespaces makes it fail, so the reads run contained by
//! Landlock and seccomp alone: a key, a path of `[sandbox] extra_masks` and a key named through a variable stay out
//! of reach, while plain reads run at once, and an interrupt ends every process of such a read. Without a launcher
//! at all, nothing can contain a read, and every read asks.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use efr_test_support::daemon::{TestDaemon, config_for};
use serde_json::{Value, json};

use common::auto::{bounded, deny_every_question, launcher, tempdir};
use common::model;
use common::tools::{event_of, shell_call, start, text, tool_output};

const SSH_SECRET: &str = "SSH-PRIVATE-KEY-BYTES-5a1b";
const VAULT_SECRET: &str = "VAULT-EXTRA-MASK-9e3c";

/// A `bwrap` that answers `--version` and fails every sandbox as bubblewrap does under Ubuntu's
/// `kernel.apparmor_restrict_unprivileged_userns`.
fn apparmor_bwrap(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("bwrap");
    std::fs::write(
        &path,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'bubblewrap 0.9.0'; exit 0; fi\n\
         echo 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A home with a key in `~/.ssh`, a vault that the config masks, and a project `~/proj` (a repository).
fn home() -> tempfile::TempDir {
    let home = tempdir();
    let h = home.path();
    std::fs::create_dir_all(h.join(".ssh")).unwrap();
    std::fs::write(h.join(".ssh/id_ed25519"), SSH_SECRET).unwrap();
    std::fs::create_dir_all(h.join("vault")).unwrap();
    std::fs::write(h.join("vault/token"), VAULT_SECRET).unwrap();
    let project = h.join("proj");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("README.md"), "the readme\n").unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "README.md"],
        &[
            "-c",
            "user.name=H",
            "-c",
            "user.email=h@x.invalid",
            "commit",
            "-qm",
            "one",
        ],
    ] {
        assert!(
            Command::new("git")
                .args(args)
                .current_dir(&project)
                .status()
                .unwrap()
                .success()
        );
    }
    home
}

fn daemon(home: &Path, server: &efr_test_support::scripted::ScriptedModel, envs: &[(&str, &str)]) -> TestDaemon {
    launcher();
    let config = format!(
        "{}\n[sandbox]\nextra_masks = [{:?}]\n",
        config_for(&server.base_url()),
        home.join("vault")
    );
    let mut all = vec![("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")];
    all.extend_from_slice(envs);
    TestDaemon::start(common::efrd_binary(), home, Some(&config), &all).expect("efrd starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_bubblewrap_cautious_reads_run_contained_by_landlock_and_keep_out_of_the_masks() {
    let home = home();
    let fake = tempdir();
    let bwrap = apparmor_bwrap(fake.path());
    let secret_reads = [
        ("call_var", "K=~/.ssh/id_ed25519; cat $K"),
        ("call_key", "cat ~/.ssh/id_ed25519"),
        ("call_vault", "cat ~/vault/token"),
        (
            "call_py",
            "python3 -c 'print(open(\"'\"$HOME\"'/.ssh/id_ed25519\").read())'",
        ),
        ("call_eval", "x='cat ~/.ssh/id_ed25519 ~/vault/token'; eval \"$x\""),
    ];
    let plain_reads = [
        ("call_git", "git status --short && git log --oneline"),
        ("call_ls", "ls"),
        ("call_readme", "cat README.md"),
    ];
    let mut replies: Vec<_> = secret_reads
        .iter()
        .chain(&plain_reads)
        .map(|(id, line)| shell_call(id, line))
        .collect();
    replies.push(text("read"));
    let server = model(replies).await;
    let efrd = daemon(home.path(), &server, &[("EFR_BWRAP", bwrap.to_str().unwrap())]);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, &home.path().join("proj"), "cautious", "read").await;
    let events = bounded("the turn", deny_every_question(&mut client, id, &conversation)).await;

    // The turn says how its reads run.
    let unavailable = events.iter().find(|e| e["kind"] == "sandbox_unavailable").unwrap();
    let reason = unavailable["reason"].as_str().unwrap();
    assert!(reason.contains("uid map"), "{reason}");
    assert!(reason.contains("contained by Landlock and seccomp alone"), "{reason}");
    // Each secret read failed or asked; none reached the model or the log.
    let log = serde_json::to_string(&events).unwrap();
    for (call, line) in &secret_reads {
        let seen = tool_output(&server, call);
        for secret in [SSH_SECRET, VAULT_SECRET] {
            assert!(!seen.contains(secret), "{line} read a secret: {seen}");
            assert!(!log.contains(secret), "{line} recorded a secret");
        }
        let asked = events
            .iter()
            .any(|e| e["kind"] == "approval_requested" && e["call_id"] == *call);
        let started = event_of(&events, "tool_call_started", call);
        assert!(
            asked || started["launch"] == json!({"kind": "contained"}),
            "{line} ran uncontained: {started}"
        );
    }
    // A plain read of a mask runs at once and Landlock refuses it.
    for call in ["call_key", "call_vault"] {
        let seen = tool_output(&server, call);
        assert!(seen.contains("Permission denied"), "{call}: {seen}");
    }
    // The plain reads ran at once, contained, and gave their output.
    for (call, line) in &plain_reads {
        assert!(
            !events
                .iter()
                .any(|e| e["kind"] == "approval_requested" && e["call_id"] == *call),
            "{line} asked"
        );
        let started = event_of(&events, "tool_call_started", call);
        assert_eq!(started["launch"], json!({"kind": "contained"}), "{line}: {started}");
        assert_eq!(event_of(&events, "tool_call_completed", call)["status"], "ok", "{line}");
    }
    assert!(tool_output(&server, "call_readme").contains("the readme"));
    assert!(tool_output(&server, "call_ls").contains("README.md"));
    assert!(
        tool_output(&server, "call_git").contains("one"),
        "{}",
        tool_output(&server, "call_git")
    );

    // `efr sandbox check` (admin.sandbox_check) names the containment that runs.
    let check = client.ok("admin.sandbox_check", json!(null)).await.unwrap();
    let landlock = check["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "landlock")
        .unwrap();
    assert_eq!(landlock["passed"], true, "{check}");
    assert!(
        landlock["detail"]
            .as_str()
            .unwrap()
            .contains("contained by Landlock and seccomp alone"),
        "{check}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_nothing_to_contain_a_read_cautious_asks_before_every_command() {
    let home = home();
    let server = model(vec![shell_call("call_ls", "ls"), text("asked")]).await;
    let efrd = daemon(
        home.path(),
        &server,
        &[
            ("EFR_BWRAP", "/nonexistent/bwrap"),
            ("EFR_LAUNCHER", "/nonexistent/efr-launcher"),
        ],
    );
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, &home.path().join("proj"), "cautious", "read").await;
    let events: Vec<Value> = bounded("the turn", deny_every_question(&mut client, id, &conversation)).await;
    let asked = event_of(&events, "approval_requested", "call_ls");
    assert_eq!(asked["reason"], efr_policy::UNCONTAINED, "{asked}");
    let unavailable = events.iter().find(|e| e["kind"] == "sandbox_unavailable").unwrap();
    assert!(
        unavailable["reason"]
            .as_str()
            .unwrap()
            .contains("cautious asks before every command"),
        "{unavailable}"
    );
}

/// Whether a process whose command line holds `needle` runs on this machine.
fn process_with(needle: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(needle))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_ends_a_read_contained_by_landlock_and_every_process_of_its_pipeline() {
    let home = home();
    let fake = tempdir();
    let bwrap = apparmor_bwrap(fake.path());
    // An odd duration names the sleep among the machine's processes; the pipeline gives the shell a child.
    let server = model(vec![
        common::tools::shell_call_with("call_sleep", &json!({"command": "sleep 97.25 | cat", "timeout": 1})),
        text("it runs"),
    ])
    .await;
    let efrd = daemon(home.path(), &server, &[("EFR_BWRAP", bwrap.to_str().unwrap())]);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, &home.path().join("proj"), "cautious", "sleep").await;
    let events = bounded(
        "the detach",
        common::events_through(&mut client, id, "shell_command_detached"),
    )
    .await;
    assert_eq!(
        event_of(&events, "tool_call_started", "call_sleep")["launch"],
        json!({"kind": "contained"})
    );
    assert!(process_with("sleep 97.25"), "the contained sleep runs");
    let stop = json!({"command_id": common::command_id(), "conversation_id": conversation, "call_id": "call_sleep"});
    client.ok("shell.interrupt", stop).await.unwrap();
    bounded(
        "the stop",
        common::events_through(&mut client, id, "shell_command_ended"),
    )
    .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while process_with("sleep 97.25") {
        assert!(
            std::time::Instant::now() < deadline,
            "the contained sleep outlived its interrupt"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
