//! efrd started the systemd way: `systemd-socket-activate` holds the socket and starts efrd on the first connection,
//! passing it as fd 3 (LISTEN_FDS). And a peer of another uid is closed before a byte is read.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use efr_test_support::client::Client;
use efr_test_support::daemon::{TestDaemon, config_for};
use serde_json::json;

use common::{efrd_binary, model, prompt};

/// Kills the process group of a child on drop, so a failed test leaves nothing behind.
struct Reaper(std::process::Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_connection_starts_efrd_through_socket_activation() {
    let activate = which("systemd-socket-activate")
        .expect("systemd-socket-activate is missing: install the Debian package systemd (cargo xtask ci does)");
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let server = model(vec![common::text_reply("activated", 8, 0)]).await;
    std::fs::create_dir_all(home.path().join("config")).unwrap();
    std::fs::write(home.path().join("config/config.toml"), config_for(&server.base_url())).unwrap();
    let run = home.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
    let socket = run.join("daemon.sock");
    let log = std::fs::File::create(home.path().join("efrd.log")).unwrap();
    let child = Command::new(activate)
        .arg("-l")
        .arg(&socket)
        .arg("-E")
        .arg(format!("EFR_HOME={}", home.path().display()))
        .arg("-E")
        .arg("OPENAI_API_KEY=sk-proj-testkey0000000000000000a1b2")
        .arg(efrd_binary())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap();
    let mut reaper = Reaper(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        assert!(
            Instant::now() < deadline,
            "systemd-socket-activate did not bind {}",
            socket.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Nothing runs efrd yet: the socket belongs to systemd-socket-activate until the first connection.
    let mut client = Client::connect(&socket).await.unwrap();
    let sent = prompt(&mut client, project.path(), None, "hello").await;
    assert!(sent["turn_id"].is_string());
    let status = client.ok("admin.status", json!(null)).await.unwrap();
    assert_eq!(
        status["pid"],
        reaper.0.id(),
        "efrd runs in the process that systemd-socket-activate started"
    );
    let log = std::fs::read_to_string(home.path().join("efrd.log")).unwrap();
    assert!(
        log.contains("source=\"systemd\"") || log.contains("source=systemd"),
        "efrd took systemd's socket:\n{log}"
    );
    assert!(!log.contains("LISTEN_FDS"), "{log}");

    // A graceful stop leaves systemd's socket file in place: it is not efrd's to remove.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(reaper.0.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = reaper.0.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(socket.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_of_another_uid_is_closed_before_a_byte_is_read() {
    assert!(
        nix::unistd::Uid::effective().is_root(),
        "this test changes uid: run it as root, as CI does"
    );
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let efrd = common::daemon(home.path(), &server);
    // Let another user reach the socket at all, so that only efrd's own check can refuse it.
    for path in [home.path().to_owned(), home.path().join("run"), efrd.socket()] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    // `nobody` sends a hello and reads: efrd closes the connection without answering.
    let script = format!(
        "import socket,struct,json,sys\n\
         s=socket.socket(socket.AF_UNIX); s.connect({socket:?})\n\
         body=json.dumps({{'id':1,'method':'hello','params':{{'protocol':1,'client':{{'name':'x','version':'0'}}}}}}).encode()\n\
         try:\n  s.sendall(struct.pack('>I',len(body))+body)\nexcept OSError: pass\n\
         s.settimeout(10)\n\
         try:\n  data=s.recv(100)\nexcept ConnectionResetError:\n  data=b''\n\
         sys.stdout.write(repr(data))\n",
        socket = efrd.socket().display().to_string()
    );
    let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("a python3 that user nobody can run (/usr/bin/python3)");
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            python,
            "-c",
            &script,
        ])
        .output()
        .expect("setpriv (util-linux)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "b''",
        "efrd answered a peer of another uid"
    );
    assert!(efrd.log().contains("is not efrd's uid"), "{}", efrd.log());
    // efrd still serves its own user.
    let mut client = efrd.client().await.unwrap();
    assert!(client.ok("models.list", json!(null)).await.is_ok());
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}

/// efrd with `[daemon] idle_exit_secs = 1` (and debug logs) in `home`, logged in, pointed at `server`.
fn idle_daemon(home: &std::path::Path, server: &efr_test_support::scripted::ScriptedModel) -> TestDaemon {
    let config = config_for(&server.base_url()) + "\n[daemon]\nidle_exit_secs = 1\nlog_level = \"debug\"\n";
    TestDaemon::start(
        efrd_binary(),
        home,
        Some(&config),
        &[("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")],
    )
    .unwrap()
}

/// Asserts that efrd keeps running through `span` (more than its idle time): it is not idle.
async fn runs_through(efrd: &mut TestDaemon, span: Duration, why: &str) {
    let until = Instant::now() + span;
    while Instant::now() < until {
        assert!(efrd.try_wait().unwrap().is_none(), "efrd exited {why}:\n{}", efrd.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits for efrd's own idle exit (no signal) and asserts it was clean: status 0, the reason logged.
async fn idle_exit(mut efrd: TestDaemon) -> String {
    let started = Instant::now();
    let (status, log) = tokio::task::spawn_blocking(move || {
        let status = efrd.wait_exit(Duration::from_secs(10));
        (status, efrd.log())
    })
    .await
    .unwrap();
    let status = status.unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "an idle exit is a clean exit ({status}):\n{log}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "efrd did not exit when idle"
    );
    assert!(log.contains("idle: stopping"), "{log}");
    log
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_efrd_exits_0_after_idle_exit_secs_but_not_while_a_client_is_connected() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let mut efrd = idle_daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    runs_through(&mut efrd, Duration::from_millis(2500), "while a client was connected").await;
    assert!(
        client.ok("models.list", json!(null)).await.is_ok(),
        "an open connection keeps efrd running"
    );
    drop(client);
    let log = idle_exit(efrd).await;
    assert!(log.contains("DEBUG"), "[daemon] log_level applies: {log}");
    assert!(
        !home.path().join("run/daemon.sock").exists(),
        "the idle exit removed its socket"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_efrd_does_not_exit_while_a_turn_runs_without_a_client() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    // The turn's command runs until the test lets it go (bounded to 60 s).
    let release = project.path().join("release");
    let wait = format!(
        "for i in $(seq 600); do [ -e {} ] && break; sleep 0.1; done; echo released",
        release.display()
    );
    let server = model(vec![
        common::tools::shell_call("call_wait", &wait),
        common::tools::text("done"),
    ])
    .await;
    let mut efrd = idle_daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, _, id) = common::tools::start(&mut client, project.path(), "full", "wait").await;
    common::tools::next_event(&mut client, id, "tool_call_started").await;
    drop(client);

    // No client, but a turn runs: more than the idle time passes and efrd stays.
    runs_through(&mut efrd, Duration::from_millis(3000), "while a turn ran").await;
    std::fs::write(&release, "").unwrap();
    // The turn ends; with no client left, efrd exits once idle, cleanly, with the turn in its log.
    idle_exit(efrd).await;
    let calls = server.requests().iter().filter(|r| r.method == "POST").count();
    assert_eq!(calls, 2, "the turn went on to its last model call before efrd exited");
    assert!(common::tools::tool_output(&server, "call_wait").contains("released"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_a_watchdog_efrd_pings_at_least_every_half_period() {
    use std::os::unix::net::UnixDatagram;
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    // The service manager's side: a datagram socket that efrd's sd_notify messages reach.
    let notify = home.path().join("notify");
    let manager = UnixDatagram::bind(&notify).unwrap();
    manager.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let period = Duration::from_millis(1000);
    let notify_env = notify.to_str().unwrap().to_owned();
    let usec = period.as_micros().to_string();
    let mut efrd = TestDaemon::start(
        efrd_binary(),
        home.path(),
        Some(&config_for(&server.base_url())),
        &[("NOTIFY_SOCKET", notify_env.as_str()), ("WATCHDOG_USEC", usec.as_str())],
    )
    .unwrap();

    // Six periods of messages, each with the time it arrived.
    let watched = period * 6;
    let manager = tokio::task::spawn_blocking(move || {
        let mut got = Vec::new();
        let start = Instant::now();
        while start.elapsed() < watched {
            let message = efr_test_support::notify::recv(&manager).expect("a notification within 10 s");
            got.push((Instant::now(), message));
        }
        (manager, got)
    });
    let (manager, got) = manager.await.unwrap();
    let ready = got
        .iter()
        .position(|(_, m)| m.starts_with("READY=1"))
        .unwrap_or_else(|| panic!("{got:?}"));
    let pings: Vec<Instant> = got
        .iter()
        .filter(|(_, m)| m == "WATCHDOG=1\n")
        .map(|(at, _)| *at)
        .collect();
    assert!(pings.len() >= 10, "{} pings in {watched:?}: {got:?}", pings.len());
    // systemd kills a service whose pings are a period apart; efrd pings every half period. A margin of a quarter
    // period absorbs a busy machine's scheduling, and still fails an efrd that pings once a period or never.
    let limit = period / 2 + period / 4;
    let first_gap = pings[0].saturating_duration_since(got[ready].0);
    assert!(first_gap < limit, "the first ping came {first_gap:?} after READY=1");
    for pair in pings.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(gap < limit, "{gap:?} between two pings (limit {limit:?}): {got:?}");
    }

    // A stop says STOPPING=1 and exits 0.
    let status = tokio::task::spawn_blocking(move || efrd.stop(Duration::from_secs(10)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0), "{status}");
    let mut rest = Vec::new();
    while !rest.iter().any(|m: &String| m.starts_with("STOPPING=1")) {
        rest.push(efr_test_support::notify::recv(&manager).expect("STOPPING=1 before the exit"));
    }
}
