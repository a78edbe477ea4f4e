//! Auto mode through the real efrd with the real `efr-launcher` and bubblewrap (issue 7 items 4–5, issue 5's
//! changes of a shell call): contained calls in the hidden shell, what they can and cannot reach, input waits and
//! detaching inside the sandbox, setup errors, the fallback to cautious without bubblewrap, and a shell call's own
//! `changes`.
//!
//! The temporary home and projects live under cargo's target tmp folder, not `/tmp`: a contained call has a private
//! `/tmp`, so a home there would be hidden by it and prove nothing about the masks.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use efr_test_support::client::Client;
use efr_test_support::daemon::{TestDaemon, config_for};
use efr_test_support::scripted::{Reply, ReplyEvent, ScriptToolCall, ScriptedModel};
use serde_json::{Value, json};

use common::{command_id, events_through, events_until, model, subscribe};

/// The launcher next to efrd, where efrd looks for it; built when it is not there yet.
fn launcher() -> &'static Path {
    static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();
    LAUNCHER.get_or_init(|| {
        let efrd = common::efrd_binary();
        let launcher = efrd.with_file_name("efr-launcher");
        if !launcher.is_file() {
            let mut build = Command::new(env!("CARGO"));
            build.args(["build", "-p", "efr-launcher", "--bin", "efr-launcher"]);
            if efrd.parent().and_then(Path::file_name) == Some(OsStr::new("release")) {
                build.arg("--release");
            }
            let status = build.status().expect("run cargo to build efr-launcher");
            assert!(status.success(), "cannot build efr-launcher for the auto tests");
        }
        assert!(launcher.is_file(), "efr-launcher is not at {}", launcher.display());
        launcher
    })
}

/// A temporary folder outside `/tmp` (see the module docs).
fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn shell_call(id: &str, command: &str) -> Reply {
    shell_call_with(id, &json!({ "command": command }))
}

fn shell_call_with(id: &str, input: &Value) -> Reply {
    Reply {
        events: vec![ReplyEvent::ToolCall(ScriptToolCall {
            id: id.into(),
            name: "shell".into(),
            freeform: false,
            input: vec![input.to_string()],
        })],
        ..Reply::default()
    }
}

fn patch_call(id: &str, patch: &str) -> Reply {
    Reply {
        events: vec![ReplyEvent::ToolCall(ScriptToolCall {
            id: id.into(),
            name: "apply_patch".into(),
            freeform: true,
            input: vec![patch.into()],
        })],
        ..Reply::default()
    }
}

fn text(answer: &str) -> Reply {
    Reply {
        events: vec![ReplyEvent::Text(answer.into())],
        ..Reply::default()
    }
}

/// efrd in `home` with the launcher next to it and `envs` added.
fn daemon_with(home: &Path, server: &ScriptedModel, envs: &[(&str, &str)]) -> TestDaemon {
    launcher();
    let mut all = vec![("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")];
    all.extend_from_slice(envs);
    TestDaemon::start(common::efrd_binary(), home, Some(&config_for(&server.base_url())), &all).expect("efrd starts")
}

async fn prompt_in(client: &mut Client, conversation: Option<&str>, cwd: &Path, mode: &str, text: &str) -> Value {
    let mut params =
        json!({"command_id": command_id(), "text": text, "context": {"cwd": cwd}, "settings": {"mode": mode}});
    if let Some(id) = conversation {
        params["conversation_id"] = json!(id);
    }
    client.ok("prompt.send", params).await.unwrap()
}

/// What the model got back for `call_id`.
fn tool_output(server: &ScriptedModel, call_id: &str) -> String {
    let requests = server.requests();
    let body = requests
        .iter()
        .rev()
        .map(|r| r.body.to_string())
        .find(|b| b.contains(call_id))
        .unwrap();
    let input: Value = serde_json::from_str(&body).unwrap();
    let items = input["input"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .find(|item| item["call_id"] == call_id && item["output"].is_string())
        .map(|item| item["output"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("no output for {call_id} in {body}"))
}

/// The event of `kind` for `call_id` among `events`.
fn event_of<'a>(events: &'a [Value], kind: &str, call_id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["kind"] == kind && e["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no {kind} of {call_id} in {events:#?}"))
}

/// The shown paths of a completion's changes.
fn changed_paths(completed: &Value) -> Vec<String> {
    completed["changes"]["files"]
        .as_array()
        .map(|files| files.iter().map(|f| f["path"].as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

/// Runs `f` with a bound: a hung daemon fails the test instead of hanging it.
async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .unwrap_or_else(|_| panic!("{what} took over 60 s"))
}

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
        shell_call("call_masked", "cat ~/.ssh/id_test; ls -A ~/.ssh | wc -l"),
        shell_call("call_state", "cat \"$EFR_HOME/state/daemon_id\""),
        shell_call(
            "call_net",
            &format!("curl -sS --max-time 5 http://127.0.0.1:{port}/ || echo NET-FAILED"),
        ),
        shell_call("call_env", "echo key=${OPENAI_API_KEY:-none} scratch=${SCRATCH:+set}"),
        patch_call(
            "call_patch_out",
            &format!(
                "*** Begin Patch\n*** Add File: {}\n+no\n*** End Patch\n",
                home.path().join("outside.txt").display()
            ),
        ),
        patch_call(
            "call_patch_in",
            "*** Begin Patch\n*** Add File: in.txt\n+yes\n*** End Patch\n",
        ),
        text("checked"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let sent = prompt_in(&mut client, None, project.path(), "auto", "check the sandbox").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
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

    // A write outside the writable roots fails, and the model sees the command's own error.
    let done = event_of(&events, "tool_call_completed", "call_outside");
    assert_eq!(done["status"], "failed", "{done}");
    let seen = tool_output(&server, "call_outside");
    assert!(
        seen.contains("Read-only file system") || seen.contains("Permission denied"),
        "{seen}"
    );
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
    assert_eq!(done["status"], "failed", "{done}");
    assert!(tool_output(&server, "call_patch_out").contains("not writable in efr's sandbox"));
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
    let sent = prompt_in(&mut client, None, project.path(), "full", "prepare").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    bounded("turn 1", events_until(&mut client, id, "turn_completed")).await;

    prompt_in(&mut client, Some(&conversation), project.path(), "auto", "look").await;
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

    prompt_in(&mut client, Some(&conversation), project.path(), "full", "move").await;
    bounded("turn 3", events_until(&mut client, id, "turn_completed")).await;
    prompt_in(&mut client, Some(&conversation), project.path(), "auto", "break").await;
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
    let sent = prompt_in(&mut client, None, project.path(), "auto", "ask me").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
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
    let sent = prompt_in(&mut client, None, project.path(), "auto", "list").await;
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
    // The turn runs as cautious: ls runs direct, at once.
    let call = event_of(&events, "tool_call_started", "call_ls");
    assert_eq!(call["launch"]["kind"], "direct");
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
    let sent = prompt_in(&mut client, None, project.path(), "full", "edit").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
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
    let sent = prompt_in(&mut client, None, project.path(), "auto", "sleep").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_typed_in_the_home_folder_has_no_project_so_dotfiles_stay_out_of_reach() {
    let home = tempdir();
    std::fs::write(home.path().join(".bashrc"), "# mine\n").unwrap();
    let server = model(vec![
        shell_call("call_rc", "echo 'alias ls=evil' >> ~/.bashrc"),
        text("contained"),
        patch_call(
            "call_unit",
            "*** Begin Patch\n*** Add File: .config/systemd/user/evil.service\n+[Service]\n*** End Patch\n",
        ),
        text("asked"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();

    // auto: the home folder is read-only inside the sandbox.
    let sent = prompt_in(&mut client, None, home.path(), "auto", "go").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    bounded("auto turn", events_until(&mut client, id, "turn_completed")).await;
    let output = tool_output(&server, "call_rc");
    assert!(output.contains("Read-only file system"), "{output}");
    assert!(
        output.contains("this call ran in efr's sandbox"),
        "the model is told why: {output}"
    );
    assert_eq!(
        std::fs::read_to_string(home.path().join(".bashrc")).unwrap(),
        "# mine\n"
    );

    // cautious: a patch in the home folder is outside any project, so it asks; denied, nothing is written.
    prompt_in(&mut client, Some(&conversation), home.path(), "cautious", "again").await;
    let events = bounded(
        "cautious turn",
        common::events_through(&mut client, id, "approval_requested"),
    )
    .await;
    let asked = events.last().unwrap();
    assert_eq!(asked["call_id"], "call_unit", "{asked}");
    client
        .ok(
            "approval.respond",
            json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_unit", "decision": "deny"}),
        )
        .await
        .unwrap();
    bounded("cautious end", events_until(&mut client, id, "turn_completed")).await;
    assert!(!home.path().join(".config/systemd/user/evil.service").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_through_a_link_out_of_the_project_is_judged_where_it_writes() {
    let home = tempdir();
    let project = tempdir();
    let outside = tempdir();
    std::fs::write(outside.path().join("target.txt"), "mine\n").unwrap();
    std::os::unix::fs::symlink(outside.path().join("target.txt"), project.path().join("link.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path(), project.path().join("dir")).unwrap();
    std::os::unix::fs::symlink(home.path().join("config"), project.path().join("cfg")).unwrap();
    // Links to a file the sandbox masks (a credential store under HOME): a patch must not read it out.
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_test"), "SECRET-KEY-MATERIAL\n").unwrap();
    std::os::unix::fs::symlink(home.path().join(".ssh/id_test"), project.path().join("k1")).unwrap();
    std::os::unix::fs::symlink(home.path().join(".ssh/id_test"), project.path().join("k2")).unwrap();
    let steal = "*** Begin Patch\n*** Update File: k1\n*** Move to: leak.txt\n*** End Patch\n";
    let show = "*** Begin Patch\n*** Delete File: k2\n*** End Patch\n";
    let update = "*** Begin Patch\n*** Update File: link.txt\n@@\n-mine\n+theirs\n*** End Patch\n";
    let add = "*** Begin Patch\n*** Add File: dir/escape.sh\n+evil\n*** End Patch\n";
    let config = "*** Begin Patch\n*** Add File: cfg/injected.toml\n+[model]\n*** End Patch\n";
    let server = model(vec![
        patch_call("call_update", update),
        patch_call("call_add", add),
        patch_call("call_cfg", config),
        patch_call("call_steal", steal),
        patch_call("call_show", show),
        text("auto done"),
        patch_call("call_cautious", update),
        text("cautious done"),
        patch_call("call_full", config),
        text("full done"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();

    // auto: each write lands outside the sandbox's writable roots, so each fails and nothing changes.
    let sent = prompt_in(&mut client, None, project.path(), "auto", "go").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    let events = bounded("auto turn", events_until(&mut client, id, "turn_completed")).await;
    for call in ["call_update", "call_add"] {
        let done = event_of(&events, "tool_call_completed", call);
        assert_eq!(done["status"], "failed", "{done}");
        assert!(
            tool_output(&server, call).contains("not writable in efr's sandbox"),
            "{call}"
        );
    }
    // Reading a masked file through a link is refused too, and nothing of it shows.
    for call in ["call_steal", "call_show"] {
        let done = event_of(&events, "tool_call_completed", call);
        assert_eq!(done["status"], "failed", "{done}");
        assert!(!done.to_string().contains("SECRET-KEY-MATERIAL"), "{done}");
        assert!(
            tool_output(&server, call).contains("hides from a contained call"),
            "{call}"
        );
    }
    assert!(!project.path().join("leak.txt").exists());
    assert!(
        std::fs::symlink_metadata(project.path().join("k2")).is_ok(),
        "the link stays"
    );
    // efr's own config is a floor before it is a sandbox matter: refused in every mode.
    let done = event_of(&events, "tool_call_completed", "call_cfg");
    assert_eq!(done["status"], "failed", "{done}");
    assert!(done["refusal"].is_string(), "{done}");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("target.txt")).unwrap(),
        "mine\n"
    );
    assert!(!outside.path().join("escape.sh").exists());
    assert!(!home.path().join("config/injected.toml").exists());

    // cautious: the update writes outside the project, so it asks (denied here).
    prompt_in(&mut client, Some(&conversation), project.path(), "cautious", "again").await;
    let events = bounded(
        "cautious ask",
        common::events_through(&mut client, id, "approval_requested"),
    )
    .await;
    assert_eq!(events.last().unwrap()["call_id"], "call_cautious");
    client
        .ok(
            "approval.respond",
            json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_cautious",
                "decision": "deny"}),
        )
        .await
        .unwrap();
    bounded("cautious end", events_until(&mut client, id, "turn_completed")).await;
    assert_eq!(
        std::fs::read_to_string(outside.path().join("target.txt")).unwrap(),
        "mine\n"
    );

    // full: efr's own config is a floor, reached through a link or not.
    prompt_in(&mut client, Some(&conversation), project.path(), "full", "once more").await;
    let events = bounded("full turn", events_until(&mut client, id, "turn_completed")).await;
    let done = event_of(&events, "tool_call_completed", "call_full");
    assert_eq!(done["status"], "failed", "{done}");
    assert!(done["refusal"].is_string(), "{done}");
    assert!(!home.path().join("config/injected.toml").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_direct_call_set_in_the_hidden_shell_never_runs_around_a_contained_call() {
    let home = tempdir();
    let project = tempdir();
    let outside = tempdir();
    std::fs::create_dir(project.path().join("sub")).unwrap();
    let out = outside.path().display();
    let setup = format!(
        "trap 'touch {out}/trap' DEBUG; trap 'touch {out}/exit' EXIT; trap 'touch {out}/hup' HUP; \
         PROMPT_COMMAND='touch {out}/prompt'; printf() {{ touch {out}/function; builtin printf \"$@\"; }}; cd sub"
    );
    let server = model(vec![
        shell_call("call_setup", &setup),
        text("set"),
        shell_call("call_contained", "echo contained; pwd"),
        text("ran"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let sent = prompt_in(&mut client, None, project.path(), "full", "set up").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    bounded("full turn", events_until(&mut client, id, "turn_completed")).await;
    // The hooks ran as the full turn went on; from here on, nothing may touch these files.
    for name in ["trap", "prompt", "function", "exit", "hup"] {
        let _ = std::fs::remove_file(outside.path().join(name));
    }

    prompt_in(
        &mut client,
        Some(&conversation),
        project.path(),
        "auto",
        "now contained",
    )
    .await;
    let events = bounded("auto turn", events_until(&mut client, id, "turn_completed")).await;
    let done = event_of(&events, "tool_call_completed", "call_contained");
    assert_eq!(done["status"], "ok", "{done}");
    let output = done["output"].as_str().unwrap();
    assert!(output.contains("contained"), "{done}");
    // The working directory carries to the new shell.
    assert!(output.trim_end().ends_with("/sub"), "{done}");
    let touched: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(touched.is_empty(), "ran outside the sandbox: {touched:?}");
}

/// Runs git on the host (outside any sandbox) in `repo`.
fn host_git(repo: &Path, args: &[&str]) -> std::process::Output {
    let output = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.name=Host", "-c", "user.email=host@example.invalid"])
        .args(args)
        .output()
        .expect("run git");
    assert!(
        output.status.success() || args.first() == Some(&"config"),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_config_hooks_and_efrs_home_inside_the_project_are_out_of_a_contained_calls_reach() {
    // The project is a git repository that holds the daemon's EFR_HOME (as /var/tmp holds /var/tmp/efr-home); the
    // user's HOME is elsewhere, so the project is not above the home folder.
    let project = tempdir();
    let user_home = tempdir();
    let outside = tempdir();
    let efr_home = project.path().join("efr-home");
    std::fs::create_dir(&efr_home).unwrap();
    host_git(project.path(), &["init", "-q"]);
    std::fs::write(project.path().join("tracked.txt"), "one\n").unwrap();
    host_git(project.path(), &["add", "tracked.txt"]);
    host_git(project.path(), &["commit", "-qm", "one"]);
    let marker = outside.path().join("fsmonitor-ran");
    let hook = "printf '#!/bin/sh\\ntouch /tmp/hooked\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit";
    let commit = "echo two >> tracked.txt && git add tracked.txt && \
                  git -c user.name=Model -c user.email=model@example.invalid commit -qm two && git log --format=%s";
    // Built at run time, so the floors (a static check of the line) do not see efr's roots: the sandbox must hold.
    let swap_home = "h=efr-home; mv \"$h\" moved && mkdir -p \"$h/config\" && \
                     echo 'default_mode = \"full\"' > \"$h/config/config.toml\"";
    let server = model(vec![
        shell_call(
            "call_config",
            &format!("git config core.fsmonitor 'touch {}; false'", marker.display()),
        ),
        shell_call("call_hook", hook),
        shell_call("call_swap_git", "mv .git .git-moved"),
        shell_call("call_commit", commit),
        shell_call("call_swap_home", swap_home),
        shell_call("call_add_home", "h=efr-home; mkdir \"$h/new\""),
        text("tried"),
    ])
    .await;
    let user_home_str = user_home.path().to_str().unwrap();
    let efrd = daemon_with(&efr_home, &server, &[("HOME", user_home_str)]);
    let config_before = std::fs::read_to_string(efr_home.join("config/config.toml")).unwrap();
    let mut client = efrd.client().await.unwrap();
    let sent = prompt_in(&mut client, None, project.path(), "auto", "try to get out").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    let events = bounded("the auto turn", events_until(&mut client, id, "turn_completed")).await;
    for call in [
        "call_config",
        "call_hook",
        "call_swap_git",
        "call_commit",
        "call_swap_home",
        "call_add_home",
    ] {
        let started = event_of(&events, "tool_call_started", call);
        assert_eq!(started["launch"], json!({"kind": "contained"}), "{started}");
        let done = event_of(&events, "tool_call_completed", call);
        assert!(done["sandbox"].get("setup_error").is_none(), "{done}");
        let expected = if call == "call_commit" { "ok" } else { "failed" };
        assert_eq!(done["status"], expected, "{call}: {done}");
    }

    // git's config and hooks are as they were, and the git folder is where it was.
    let fsmonitor = host_git(project.path(), &["config", "--get", "core.fsmonitor"]);
    assert!(
        fsmonitor.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&fsmonitor.stdout)
    );
    assert!(!project.path().join(".git/hooks/pre-commit").exists());
    assert!(!project.path().join(".git-moved").exists());
    // git itself worked inside the sandbox: the commit is there.
    assert!(tool_output(&server, "call_commit").contains("two"));
    let log = host_git(project.path(), &["log", "--format=%s"]);
    assert_eq!(String::from_utf8_lossy(&log.stdout), "two\none\n");
    // A read-only git command on the host, as a cautious turn would run it, runs nothing of the call's.
    host_git(project.path(), &["status", "--short"]);
    assert!(!marker.exists(), "git ran the call's fsmonitor outside the sandbox");

    // efr's home inside the project cannot be moved aside or added to; its config is the daemon's.
    let swap = tool_output(&server, "call_swap_home");
    assert!(swap.contains("busy") || swap.contains("Read-only"), "{swap}");
    assert!(!project.path().join("moved").exists());
    assert!(!efr_home.join("new").exists());
    assert_eq!(
        std::fs::read_to_string(efr_home.join("config/config.toml")).unwrap(),
        config_before
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commondir_planted_in_the_projects_git_folder_is_taken_away() {
    let home = tempdir();
    let project = tempdir();
    let outside = tempdir();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(project.path())
            .env("HOME", home.path())
            .status()
            .expect("git runs (apt-get install git)");
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    let pwned = outside.path().join("pwned");
    let plant = format!(
        "mkdir .evil && cp -r .git/objects .git/refs .git/HEAD .evil/ && \
         printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"touch {}; false\"\\n' > .evil/config && \
         echo ../.evil > .git/commondir && echo planted",
        pwned.display()
    );
    let server = model(vec![shell_call("call_plant", &plant), text("done")]).await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let sent = prompt_in(&mut client, None, project.path(), "auto", "plant").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    bounded("auto turn", events_until(&mut client, id, "turn_completed")).await;
    let seen = tool_output(&server, "call_plant");
    assert!(seen.contains("planted"), "the call ran contained and wrote it: {seen}");
    assert!(seen.contains("efr removed"), "{seen}");
    assert!(!project.path().join(".git/commondir").exists());
    // Outside the sandbox, git reads the project's own config again: nothing runs.
    git(&["status", "--short"]);
    assert!(!pwned.exists(), "the planted fsmonitor ran");
}
