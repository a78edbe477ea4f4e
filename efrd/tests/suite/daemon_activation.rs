//! efrd started the systemd way: `systemd-socket-activate` holds the socket and starts efrd on the first connection,
//! passing it as fd 3 (LISTEN_FDS). And a peer of another uid is closed before a byte is read.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use efr_test_support::client::Client;
use efr_test_support::daemon::config_for;
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
    let sent = prompt(&mut client, None, "hello").await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_efrd_exits_after_idle_exit_secs_but_not_while_a_client_is_connected() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let config = config_for(&server.base_url()) + "\n[daemon]\nidle_exit_secs = 1\nlog_level = \"debug\"\n";
    let mut efrd = efr_test_support::daemon::TestDaemon::start(efrd_binary(), home.path(), Some(&config), &[]).unwrap();
    let mut client = efrd.client().await.unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(
        client.ok("models.list", json!(null)).await.is_ok(),
        "an open connection keeps efrd running"
    );
    drop(client);
    let started = Instant::now();
    let status = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        while efrd.socket().exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        efrd.stop(Duration::from_secs(5)).ok().map(|_| efrd.log())
    });
    let log = status.await.unwrap().unwrap_or_default();
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "efrd did not exit when idle"
    );
    assert!(log.contains("idle: stopping"), "{log}");
    assert!(log.contains("DEBUG"), "[daemon] log_level applies: {log}");
}
