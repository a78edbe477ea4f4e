//! `efr daemon install|uninstall` against a real `systemd --user` manager (docs/architecture.md, "Testing"), and the
//! errors of `efr daemon` where systemd is missing or unreachable.
//!
//! The manager test needs root, as CI runs it: without root it fails and says so (it never skips). It installs the
//! units with `efr daemon install --efrd <built efrd>`, checks that the first `efr status` starts efrd through the
//! socket (efrd.service inactive before, active after, its STATUS line shown by `systemctl --user status`), then
//! stops efrd with `systemctl --user stop` and checks that the next connection starts it again with the event log
//! kept, and finally that `efr daemon uninstall` removes it all.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use crate::common::efrd;
use efr_test_support::client::Client;
use efr_test_support::daemon::config_for;
use efr_test_support::scripted::{Reply, Script, ScriptedModel};
use efr_test_support::subscription;
use efr_test_support::systemd::{UserManager, require_root};
use serde_json::{Value, json};

const EFR: &str = env!("CARGO_BIN_EXE_efr");
const STATE_TIMEOUT: Duration = Duration::from_secs(20);

/// Runs efr with the manager's environment (and nothing else but PATH and LANG).
fn efr(manager: &UserManager, args: &[&OsStr]) -> Output {
    Command::new(EFR)
        .args(args)
        .env_clear()
        .envs(manager.envs())
        .output()
        .expect("run efr")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn scratch() -> tempfile::TempDir {
    // Not /tmp: the target folder is shared with every process of the test, the manager's units included.
    tempfile::Builder::new()
        .prefix("sd")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

async fn prompt(client: &mut Client, cwd: &Path, text: &str) -> String {
    let params = json!({
        "command_id": uuid::Uuid::new_v4().to_string(),
        "text": text,
        "context": {"cwd": cwd, "tty": "/dev/pts/97"},
    });
    let result = client.ok("prompt.send", params).await.unwrap();
    result["conversation_id"].as_str().unwrap().to_owned()
}

/// Subscribes from the start of the log and reads events until one of kind `until`.
async fn events_until(client: &mut Client, conversation: &str, until: &str) -> Vec<Value> {
    let (id, _) = subscription::subscribe(client, conversation, Some(0)).await.unwrap();
    let events = subscription::events_through(client, id, until)
        .await
        .unwrap_or_else(|error| panic!("{error:#}"));
    client.cancel(id).await.unwrap();
    events
}

#[test]
fn efr_daemon_install_starts_efrd_through_the_socket_and_a_restart_keeps_the_log() {
    require_root().unwrap();
    let dir = scratch();
    let mut manager = UserManager::start(&dir.path().join("manager")).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(Script::replies([Reply::text(
            "kept across restarts",
        )])))
        .unwrap();
    let config = manager.config_home().join("efr");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), config_for(&model.base_url())).unwrap();

    let install = efr(
        &manager,
        &[
            "daemon".as_ref(),
            "install".as_ref(),
            "--efrd".as_ref(),
            efrd().as_os_str(),
        ],
    );
    let stdout = text(&install.stdout);
    assert!(
        install.status.success(),
        "install failed: {}{stdout}",
        text(&install.stderr)
    );
    let units = manager.config_home().join("systemd").join("user");
    let service = std::fs::read_to_string(units.join("efrd.service")).unwrap();
    assert!(
        service.contains(&format!("\nExecStart={}\n", efrd().display())),
        "{service}"
    );
    assert!(units.join("efrd.socket").is_file());
    assert!(
        stdout.contains("ran systemctl --user enable --now efrd.socket"),
        "{stdout}"
    );

    // Listening, and nothing started yet.
    manager.wait_state("efrd.socket", "active", STATE_TIMEOUT).unwrap();
    assert_eq!(manager.property("efrd.service", "ActiveState").unwrap(), "inactive");
    let socket = manager.runtime_dir().join("efr").join("daemon.sock");
    assert!(socket.exists(), "systemd listens on {}", socket.display());

    // The first `efr status` starts efrd through the socket.
    let status = efr(&manager, &["status".as_ref()]);
    assert!(
        status.status.success(),
        "efr status failed: {}{}\nmanager log:\n{}",
        text(&status.stderr),
        text(&status.stdout),
        manager.log()
    );
    manager.wait_state("efrd.service", "active", STATE_TIMEOUT).unwrap();
    let first_pid = manager.property("efrd.service", "MainPID").unwrap();
    let shown = manager.systemctl_ok(&["status", "--no-pager", "efrd.service"]).unwrap();
    assert!(shown.contains("Active: active (running)"), "{shown}");
    assert!(shown.contains("Status: \"listening on"), "{shown}");
    assert!(
        manager
            .property("efrd.service", "StatusText")
            .unwrap()
            .starts_with("listening on"),
        "{shown}"
    );

    // A conversation before the restart.
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let conversation = runtime.block_on(async {
        let mut client = Client::connect(&socket).await.unwrap();
        // A stored login (in efrd's state root, so it outlives the restart too).
        let key = json!({"provider": "openai-api", "key": "sk-proj-testkey0000000000000000a1b2"});
        client.ok("admin.login_api_key", key).await.unwrap();
        let conversation = prompt(&mut client, &project, "remember me").await;
        events_until(&mut client, &conversation, "turn_completed").await;
        conversation
    });

    // Stop efrd; the socket stays and the next connection starts it again, with the log.
    manager.systemctl_ok(&["stop", "efrd.service"]).unwrap();
    manager.wait_state("efrd.service", "inactive", STATE_TIMEOUT).unwrap();
    assert_eq!(manager.property("efrd.socket", "ActiveState").unwrap(), "active");
    runtime.block_on(async {
        let mut client = Client::connect(&socket).await.unwrap();
        let list = client.ok("conversations.list", json!({"limit": 50})).await.unwrap();
        let listed = list["conversations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|row| row["conversation_id"] == conversation.as_str());
        assert!(listed, "the conversation is listed after the restart: {list}");
        let events = events_until(&mut client, &conversation, "turn_completed").await;
        assert!(
            events
                .iter()
                .any(|e| e["kind"] == "prompt_queued" || e["kind"] == "turn_started"),
            "{events:?}"
        );
        assert!(
            events.iter().any(|e| e.to_string().contains("kept across restarts")),
            "the answer is in the log after the restart: {events:?}"
        );
    });
    manager.wait_state("efrd.service", "active", STATE_TIMEOUT).unwrap();
    assert_ne!(
        manager.property("efrd.service", "MainPID").unwrap(),
        first_pid,
        "a new efrd"
    );

    // Installing again while efrd runs rewrites the units and says that the running efrd stays as it is.
    let again = efr(
        &manager,
        &[
            "daemon".as_ref(),
            "install".as_ref(),
            "--efrd".as_ref(),
            efrd().as_os_str(),
        ],
    );
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(
        text(&again.stdout).contains("efrd.service was already running"),
        "{}",
        text(&again.stdout)
    );
    assert_eq!(manager.property("efrd.service", "ActiveState").unwrap(), "active");

    // Uninstall: units disabled, stopped and removed.
    let uninstall = efr(&manager, &["daemon".as_ref(), "uninstall".as_ref()]);
    assert!(
        uninstall.status.success(),
        "uninstall failed: {}",
        text(&uninstall.stderr)
    );
    assert!(!units.join("efrd.service").exists() && !units.join("efrd.socket").exists());
    manager.wait_state("efrd.service", "inactive", STATE_TIMEOUT).unwrap();
    assert_ne!(manager.property("efrd.socket", "ActiveState").unwrap(), "active");
    assert!(!socket.exists(), "the socket is removed with its unit");
    manager.stop().unwrap();
}

/// A folder with a fake `systemctl` (a real process that fails as one without a user manager does) and `sh`.
fn path_with_systemctl(dir: &Path, script: &str) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let systemctl = bin.join("systemctl");
    std::fs::write(&systemctl, script).unwrap();
    std::fs::set_permissions(&systemctl, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

fn install_with(dir: &Path, path: &Path, efrd: &Path) -> Output {
    Command::new(EFR)
        .args(["daemon", "install", "--efrd"])
        .arg(efrd)
        .env_clear()
        .env("PATH", path)
        .env("HOME", dir.join("home"))
        .output()
        .unwrap()
}

#[test]
fn install_without_systemctl_says_so_and_writes_nothing() {
    let dir = scratch();
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let output = install_with(dir.path(), &empty, efrd());
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("systemctl cannot be started"), "{stderr}");
    assert!(stderr.contains("efr daemon run"), "{stderr}");
    assert!(!dir.path().join("home").join(".config").exists(), "nothing written");
}

#[test]
fn install_without_a_user_manager_says_so_and_writes_nothing() {
    let dir = scratch();
    let bin = path_with_systemctl(
        dir.path(),
        "#!/bin/sh\necho 'Failed to connect to bus: No medium found' >&2\nexit 1\n",
    );
    let output = install_with(dir.path(), &bin, efrd());
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("cannot reach your systemd user manager"), "{stderr}");
    assert!(stderr.contains("No medium found"), "systemctl's own words: {stderr}");
    assert!(stderr.contains("efr daemon run"), "{stderr}");
    assert!(!dir.path().join("home").join(".config").exists(), "nothing written");
}

#[test]
fn install_of_an_efrd_that_is_not_there_is_refused() {
    let dir = scratch();
    let output = install_with(dir.path(), Path::new("/usr/bin:/bin"), &dir.path().join("nope"));
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("not an executable file"), "{stderr}");
}

#[test]
fn daemon_run_execs_efrd_with_the_arguments() {
    let output = Command::new(EFR)
        .args(["daemon", "run", "--efrd"])
        .arg(efrd())
        .args(["--", "--version"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains(env!("CARGO_PKG_VERSION")),
        "{}",
        text(&output.stdout)
    );
}

/// `systemd-analyze verify --user` on unit files, with a runtime folder of its own.
fn analyze_verify(runtime: &Path, units: &[PathBuf]) -> Output {
    std::fs::create_dir_all(runtime).unwrap();
    std::fs::set_permissions(runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    Command::new("systemd-analyze")
        .args(["verify", "--user"])
        .args(units)
        .env("XDG_RUNTIME_DIR", runtime)
        .output()
        .expect("this test needs systemd-analyze (apt-get install systemd)")
}

#[test]
fn install_writes_units_that_systemd_analyze_verify_accepts_and_enables_the_socket() {
    let dir = scratch();
    // A systemctl that succeeds and records its arguments: what install asks of the manager.
    let bin = path_with_systemctl(
        dir.path(),
        "#!/bin/sh\nif [ \"$2\" = is-active ]; then exit 3; fi\necho \"$*\" >> \"$0.log\"\n",
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let output = Command::new(EFR)
        .args(["daemon", "install", "--efrd"])
        .arg(efrd())
        .env_clear()
        .env("PATH", &path)
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let calls = std::fs::read_to_string(bin.join("systemctl.log")).unwrap();
    assert_eq!(
        calls,
        "--user show --property=Version\n--user daemon-reload\n--user enable --now efrd.socket\n"
    );
    let units = dir.path().join("config").join("systemd").join("user");
    let files = [units.join("efrd.socket"), units.join("efrd.service")];
    let verify = analyze_verify(&dir.path().join("run"), &files);
    assert!(
        verify.status.success() && verify.stderr.is_empty(),
        "systemd-analyze verify: {}{}",
        text(&verify.stderr),
        text(&verify.stdout)
    );

    // The same check fails for a unit whose ExecStart names no executable: it is not a check that always passes.
    let broken = units.join("efrd.service");
    let service = std::fs::read_to_string(&broken).unwrap();
    std::fs::write(
        &broken,
        service.replace(&efrd().display().to_string(), "/nonexistent/efrd"),
    )
    .unwrap();
    let verify = analyze_verify(&dir.path().join("run"), &files);
    assert!(
        text(&verify.stderr).contains("/nonexistent/efrd"),
        "{}",
        text(&verify.stderr)
    );
}

#[test]
fn uninstall_without_a_user_manager_says_so_and_keeps_the_units() {
    let dir = scratch();
    let bin = path_with_systemctl(
        dir.path(),
        "#!/bin/sh\necho 'Failed to connect to bus: No medium found' >&2\nexit 1\n",
    );
    let units = dir.path().join("config").join("systemd").join("user");
    std::fs::create_dir_all(&units).unwrap();
    std::fs::write(units.join("efrd.socket"), "[Socket]\n").unwrap();
    let output = Command::new(EFR)
        .args(["daemon", "uninstall"])
        .env_clear()
        .env("PATH", &bin)
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("cannot reach your systemd user manager"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(units.join("efrd.socket")).unwrap(),
        "[Socket]\n",
        "kept"
    );
}

#[test]
fn uninstall_with_nothing_installed_changes_nothing() {
    let dir = scratch();
    let bin = path_with_systemctl(dir.path(), "#!/bin/sh\necho called >> \"$0.log\"\nexit 1\n");
    let output = Command::new(EFR)
        .args(["daemon", "uninstall"])
        .env_clear()
        .env("PATH", &bin)
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("nothing to remove"));
    assert!(!bin.join("systemctl.log").exists(), "systemctl was not called");
}
