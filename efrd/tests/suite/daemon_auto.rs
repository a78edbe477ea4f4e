//! Auto mode through the real efrd with the real `efr-launcher` and bubblewrap (docs/adr/0004-contained-calls.md):
//! contained calls in the hidden shell, what they can and cannot reach, input waits and detaching inside the sandbox,
//! setup errors, the fallback to cautious without bubblewrap, and a shell call's own `changes`. What efrd itself must
//! keep out of a contained call's reach (patches, the hidden shell's state, git) is in daemon_auto_reach.rs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::time::Duration;

use serde_json::json;

use common::auto::{bounded, changed_paths, daemon_with, tempdir};
use common::tools::{event_of, patch_call, prompt_to, shell_call, shell_call_with, start, text, tool_output};
use common::{command_id, events_through, events_until, model, subscribe};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_runs_each_call_contained_and_only_the_project_and_scratch_are_writable() {
    let home = tempdir();
    let project = tempdir();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_test"), "SECRET-KEY-MATERIAL\n").unwrap();
    // A loopback listener on the host: a contained call must not reach it (no network at all).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = model(vec![
        shell_call("call_write", "touch ok && echo made > \"$SCRATCH/s.txt\" && pwd"),
        shell_call("call_outside", "echo hi > ~/.ssh-probe"),
        // The write outside is an exit (docs/auto.md); the turn's model judges it (no classifier is listed).
        text(r#"{"verdict":"deny","reason":"the user asked only to check the sandbox"}"#),
        // Built at run time, so the line's parser sees no credential store and asks for no exit: the sandbox must
        // hold.
        shell_call("call_masked", "d=.ssh; cat ~/$d/id_test; ls -A ~/$d | wc -l"),
        shell_call("call_state", "cat \"$EFR_HOME/state/daemon_id\""),
        shell_call(
            "call_net",
            &format!("ip=127.0.0.1; curl -sS --max-time 5 http://$ip:{port}/ || echo NET-FAILED"),
        ),
        shell_call("call_env", "echo key=${OPENAI_API_KEY:-none} scratch=${SCRATCH:+set}"),
        patch_call(
            "call_patch_out",
            &format!(
                "*** Begin Patch\n*** Add File: {}\n+no\n*** End Patch\n",
                home.path().join("outside.txt").display()
            ),
        ),
        text(r#"{"verdict":"deny","reason":"the user asked only to check the sandbox"}"#),
        patch_call(
            "call_patch_in",
            "*** Begin Patch\n*** Add File: in.txt\n+yes\n*** End Patch\n",
        ),
        text("checked"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "auto", "check the sandbox").await;
    let events = bounded("the auto turn", events_until(&mut client, id, "turn_completed")).await;

    let started = events.iter().find(|e| e["kind"] == "turn_started").unwrap();
    assert_eq!(started["settings"]["mode"], "auto", "{started}");
    assert!(started["settings"].get("fallback").is_none(), "{started}");
    assert!(!events.iter().any(|e| e["kind"] == "sandbox_unavailable"));

    // A write in the project and in $SCRATCH works and is in the call's changes; the call ran contained.
    let call = event_of(&events, "tool_call_started", "call_write");
    assert_eq!(call["launch"], json!({"kind": "contained"}), "{call}");
    let done = event_of(&events, "tool_call_completed", "call_write");
    assert_eq!(done["status"], "ok", "{done}");
    assert_eq!(done["exit_code"], 0);
    assert!(
        done["sandbox"].is_object(),
        "a contained call has a sandbox summary: {done}"
    );
    assert!(done["sandbox"].get("setup_error").is_none(), "{done}");
    assert_eq!(changed_paths(done), ["$SCRATCH/s.txt", "ok"], "{done}");
    assert!(project.path().join("ok").is_file());
    let scratch = home.path().join("state/scratch").join(&conversation);
    assert_eq!(std::fs::read_to_string(scratch.join("s.txt")).unwrap(), "made\n");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&scratch).unwrap().permissions().mode() & 0o777, 0o700);
    let project_real = std::fs::canonicalize(project.path()).unwrap();
    assert!(
        done["output"]
            .as_str()
            .unwrap()
            .contains(project_real.to_str().unwrap()),
        "the call starts in the shell's directory: {done}"
    );

    // A write outside the writable roots asks for an exit; denied, the call does not run, and the model is told why.
    let done = event_of(&events, "tool_call_completed", "call_outside");
    assert_eq!(done["status"], "denied", "{done}");
    let seen = tool_output(&server, "call_outside");
    assert!(seen.contains("write exit") && seen.contains("ask the user"), "{seen}");
    assert!(!home.path().join(".ssh-probe").exists());

    // A credential store shows empty; efr's own state is masked.
    let done = event_of(&events, "tool_call_completed", "call_masked");
    let output = done["output"].as_str().unwrap();
    assert!(!output.contains("SECRET-KEY-MATERIAL"), "{done}");
    assert!(output.contains("No such file"), "{done}");
    let done = event_of(&events, "tool_call_completed", "call_state");
    assert_eq!(done["status"], "failed", "{done}");
    assert!(
        home.path().join("state/daemon_id").is_file(),
        "the file is there on the host"
    );

    // No network: the loopback listener of the host saw no connection.
    let done = event_of(&events, "tool_call_completed", "call_net");
    assert!(done["output"].as_str().unwrap().contains("NET-FAILED"), "{done}");
    assert!(listener.accept().is_err(), "the contained curl reached the host");

    // The keys efrd holds are not in the call's environment; $SCRATCH is.
    let done = event_of(&events, "tool_call_completed", "call_env");
    assert!(
        done["output"].as_str().unwrap().contains("key=none scratch=set"),
        "{done}"
    );

    // A file tool of a contained call writes only where a contained call may.
    let done = event_of(&events, "tool_call_completed", "call_patch_out");
    assert_eq!(done["status"], "denied", "{done}");
    assert!(tool_output(&server, "call_patch_out").contains("write exit"));
    assert!(!home.path().join("outside.txt").exists());
    let done = event_of(&events, "tool_call_completed", "call_patch_in");
    assert_eq!(done["status"], "ok", "{done}");
    assert_eq!(std::fs::read_to_string(project.path().join("in.txt")).unwrap(), "yes\n");
    assert!(!efrd.log().contains("sk-proj-testkey"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cwd_and_exports_carry_into_contained_calls_and_a_setup_error_is_told_apart() {
    let home = tempdir();
    let project = tempdir();
    // A folder that exists on the host but not inside the sandbox (its /tmp is private).
    let hidden = tempfile::tempdir().unwrap();
    assert!(hidden.path().starts_with("/tmp"), "{}", hidden.path().display());
    let server = model(vec![
        shell_call("call_prep", "mkdir -p sub && cd sub && export EFR_T_VAR=carried"),
        text("ready"),
        shell_call("call_carry", "pwd; echo var=$EFR_T_VAR; cd /; export EFR_T_VAR=changed"),
        shell_call("call_after", "pwd; echo var=$EFR_T_VAR"),
        text("seen"),
        shell_call("call_cd_tmp", &format!("cd {}", hidden.path().display())),
        text("moved"),
        shell_call("call_broken", "echo never ran"),
        text("broken"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "prepare").await;
    bounded("turn 1", events_until(&mut client, id, "turn_completed")).await;

    prompt_to(&mut client, Some(&conversation), project.path(), "auto", "look").await;
    let events = bounded("turn 2", events_until(&mut client, id, "turn_completed")).await;
    let sub = std::fs::canonicalize(project.path().join("sub")).unwrap();
    let done = event_of(&events, "tool_call_completed", "call_carry");
    let output = done["output"].as_str().unwrap();
    assert!(
        output.contains(sub.to_str().unwrap()),
        "the shell's cwd carries over: {done}"
    );
    // A contained call never runs in a shell that a direct call used (its traps and hooks would run outside the
    // sandbox): the new shell starts in the old one's directory, without what the direct calls exported.
    assert!(
        output.contains("var=\n"),
        "a direct call's export does not carry: {done}"
    );
    // A cd or an export inside a contained call stays inside it, as in a subshell.
    let done = event_of(&events, "tool_call_completed", "call_after");
    let output = done["output"].as_str().unwrap();
    assert!(output.contains(sub.to_str().unwrap()), "{done}");
    assert!(output.contains("var=\n"), "{done}");

    prompt_to(&mut client, Some(&conversation), project.path(), "full", "move").await;
    bounded("turn 3", events_until(&mut client, id, "turn_completed")).await;
    prompt_to(&mut client, Some(&conversation), project.path(), "auto", "break").await;
    let events = bounded("turn 4", events_until(&mut client, id, "turn_completed")).await;
    let done = event_of(&events, "tool_call_completed", "call_broken");
    assert_eq!(done["status"], "failed", "{done}");
    let setup_error = done["sandbox"]["setup_error"]
        .as_str()
        .unwrap_or_else(|| panic!("{done}"));
    assert!(setup_error.contains(hidden.path().to_str().unwrap()), "{setup_error}");
    assert!(done.get("exit_code").is_none(), "the command did not run: {done}");
    assert!(!done["output"].as_str().unwrap().contains("never ran"), "{done}");
    let seen = tool_output(&server, "call_broken");
    assert!(seen.contains("sandbox could not start"), "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contained_hidden_wait_is_answered_and_a_long_call_is_left_running_contained() {
    let home = tempdir();
    let project = tempdir();
    let server = model(vec![
        shell_call("call_pw", "read -s -p 'Password: ' pw; echo; echo \"got ${#pw} chars\""),
        shell_call_with(
            "call_long",
            &json!({"command": "sleep 3; echo finally > late.txt", "timeout": 1}),
        ),
        shell_call("call_busy", "echo next"),
        text("waiting"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "auto", "ask me").await;
    let waits = bounded(
        "the hidden wait",
        events_through(&mut client, id, "tool_call_input_changed"),
    )
    .await;
    let wait = waits.last().unwrap();
    assert_eq!(wait["call_id"], "call_pw");
    assert_eq!(wait["input"], "hidden", "{wait}");
    let status = client
        .ok("shell.status", json!({"conversation_id": conversation}))
        .await
        .unwrap();
    assert_eq!(status["busy"]["contained"], true, "{status}");
    let answer = json!({"conversation_id": conversation, "call_id": "call_pw", "text": "hunter22", "input": "hidden"});
    client.ok("input.respond", answer).await.unwrap();

    let events = bounded(
        "the long call's end",
        events_through(&mut client, id, "shell_command_ended"),
    )
    .await;
    let done = event_of(&events, "tool_call_completed", "call_pw");
    assert!(done["output"].as_str().unwrap().contains("got 8 chars"), "{done}");
    assert!(!done["output"].as_str().unwrap().contains("hunter22"));
    let done = event_of(&events, "tool_call_completed", "call_long");
    assert_eq!(done["left_running"], true, "{done}");
    let detached = event_of(&events, "shell_command_detached", "call_long");
    assert_eq!(detached["contained"], true, "{detached}");
    // While it runs, the shell takes no other call, contained or not: the model is told which command holds it.
    let done = event_of(&events, "tool_call_completed", "call_busy");
    assert_eq!(done["status"], "failed", "{done}");
    assert!(
        tool_output(&server, "call_busy").contains("busy with `sleep 3"),
        "{done}"
    );
    let ended = events.last().unwrap();
    assert_eq!(ended["call_id"], "call_long");
    assert_eq!(ended["how"], "ended", "{ended}");
    assert_eq!(ended["exit_code"], 0, "{ended}");
    assert_eq!(
        std::fs::read_to_string(project.path().join("late.txt")).unwrap(),
        "finally\n"
    );
    assert!(!efrd.log().contains("hunter22"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_bubblewrap_auto_falls_back_to_cautious_and_says_why() {
    let home = tempdir();
    let project = tempdir();
    std::fs::write(project.path().join("here.txt"), "x").unwrap();
    let server = model(vec![shell_call("call_ls", "ls"), text("listed")]).await;
    let efrd = daemon_with(home.path(), &server, &[("EFR_BWRAP", "/nonexistent/bwrap")]);
    let mut client = efrd.client().await.unwrap();
    let sent = prompt_to(&mut client, None, project.path(), "auto", "list").await;
    assert_eq!(
        sent["settings"]["mode"], "auto",
        "prompt.send answers before the turn starts"
    );
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    let events = bounded("the fallback turn", events_until(&mut client, id, "turn_completed")).await;
    let started = events.iter().find(|e| e["kind"] == "turn_started").unwrap();
    assert_eq!(started["settings"]["mode"], "cautious", "{started}");
    assert_eq!(started["settings"]["fallback"]["asked"], "auto", "{started}");
    let reason = started["settings"]["fallback"]["reason"].as_str().unwrap();
    assert!(reason.contains("bubblewrap"), "{reason}");
    let unavailable = events.iter().find(|e| e["kind"] == "sandbox_unavailable").unwrap();
    assert_eq!(unavailable["reason"], reason);
    assert!(unavailable.get("call_id").is_none());
    // The turn runs as cautious: ls runs at once, contained by Landlock and seccomp alone.
    assert!(
        unavailable["reason"]
            .as_str()
            .unwrap()
            .contains("Landlock and seccomp alone")
            || reason.contains("bubblewrap"),
        "{unavailable}"
    );
    let call = event_of(&events, "tool_call_started", "call_ls");
    assert_eq!(call["launch"]["kind"], "contained", "{call}");
    let done = event_of(&events, "tool_call_completed", "call_ls");
    assert!(done["output"].as_str().unwrap().contains("here.txt"), "{done}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_shell_call_reports_what_it_changed() {
    let home = tempdir();
    let project = tempdir();
    std::fs::write(project.path().join("edit.txt"), "one\n").unwrap();
    std::fs::write(project.path().join("gone.txt"), "bye\n").unwrap();
    let server = model(vec![
        shell_call(
            "call_edit",
            "printf 'a\\nb\\n' > made.txt && echo two >> edit.txt && rm gone.txt",
        ),
        shell_call("call_read", "cat made.txt"),
        text("done"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let (_, _, id) = start(&mut client, project.path(), "full", "edit").await;
    let events = bounded("the full turn", events_until(&mut client, id, "turn_completed")).await;
    let done = event_of(&events, "tool_call_completed", "call_edit");
    assert_eq!(done["status"], "ok", "{done}");
    assert!(
        done.get("sandbox").is_none(),
        "a direct call has no sandbox summary: {done}"
    );
    let files = done["changes"]["files"].as_array().unwrap();
    let shown: Vec<(&str, &str, u64, u64)> = files
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap(),
                f["kind"].as_str().unwrap(),
                f["added"].as_u64().unwrap_or(0),
                f["removed"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("edit.txt", "modified", 1, 0),
            ("gone.txt", "deleted", 0, 1),
            ("made.txt", "added", 2, 0)
        ],
        "{done}"
    );
    assert!(done.get("diff").is_none(), "a shell call has changes, not a diff");
    // A call that changes nothing has no changes.
    let done = event_of(&events, "tool_call_completed", "call_read");
    assert!(done.get("changes").is_none(), "{done}");
}

/// Whether a process whose command line holds `needle` runs on this machine.
fn process_with(needle: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(needle))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_interrupt_stops_a_contained_command_left_running_and_nothing_of_it_survives() {
    let home = tempdir();
    let project = tempdir();
    // An odd duration names the sleep among the machine's processes.
    let server = model(vec![
        shell_call_with("call_sleep", &json!({"command": "sleep 91.25", "timeout": 1})),
        text("it runs"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "auto", "sleep").await;
    let events = bounded("the detach", events_through(&mut client, id, "shell_command_detached")).await;
    assert_eq!(
        event_of(&events, "shell_command_detached", "call_sleep")["contained"],
        true
    );
    assert!(process_with("sleep 91.25"), "the contained sleep runs");
    client
        .ok(
            "shell.interrupt",
            json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_sleep"}),
        )
        .await
        .unwrap();
    let rest = bounded("the stop", events_through(&mut client, id, "shell_command_ended")).await;
    let ended = rest.last().unwrap();
    assert_eq!(ended["call_id"], "call_sleep");
    assert_eq!(ended["how"], "stopped", "{ended}");
    // The launcher's end takes bubblewrap's pid namespace with it.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while process_with("sleep 91.25") {
        assert!(
            std::time::Instant::now() < deadline,
            "the contained sleep outlived its interrupt"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The shell takes the next call.
    let status = client
        .ok("shell.status", json!({"conversation_id": conversation}))
        .await
        .unwrap();
    assert!(status.get("busy").is_none(), "{status}");
}
