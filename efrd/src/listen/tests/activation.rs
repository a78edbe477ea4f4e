//! Socket activation for real: `systemd-socket-activate` (or `sh` for the broken cases) starts this test binary
//! again as the daemon, with `EFR_LISTEN_TEST_ROLE` set. In that role the same test function runs
//! [`child_main`], which calls `Notifier::from_env` and `Listener::acquire` exactly as efrd's start does and prints
//! a one-line JSON report; the parent test asserts on the report, the served connection and the datagrams that
//! reached its notify socket.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

use crate::config::Roots;
use crate::listen::{Listener, Notifier, activation::LISTEN_VARS, notify::NOTIFY_VARS};

const ROLE: &str = "EFR_LISTEN_TEST_ROLE";
const REPORT: &str = "EFR_LISTEN_REPORT ";
const ACTIVATE: &str = "systemd-socket-activate";

/// True in the re-executed child: the test function then runs [`child_main`] instead of its parent part.
fn is_child() -> bool {
    std::env::var_os(ROLE).is_some()
}

/// The daemon side, run in the child process.
fn child_main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let notifier = Notifier::from_env();
        let roots = Roots::from_process_env().unwrap();
        let acquired = Listener::acquire(&roots);
        let env_left = |vars: &[&str]| vars.iter().any(|v| std::env::var_os(v).is_some());
        let mut report = json!({
            "pid": std::process::id(),
            "listen_env_left": env_left(&LISTEN_VARS),
            "notify_env_left": env_left(&NOTIFY_VARS),
            "notifier_error": notifier.as_ref().err().map(ToString::to_string),
        });
        match &acquired {
            Ok(listener) => {
                let flags = nix::fcntl::fcntl(listener.listener(), nix::fcntl::FcntlArg::F_GETFD).unwrap();
                report["source"] = json!(listener.source().as_str());
                report["name"] = json!(match listener.source() {
                    crate::listen::SocketSource::Systemd { name } => Some(name.clone()),
                    crate::listen::SocketSource::SelfBound => None,
                });
                report["path"] = json!(listener.path());
                report["cloexec"] = json!(flags & libc::FD_CLOEXEC != 0);
            }
            Err(e) => {
                report["error"] = json!(e.to_string());
                report["exit_code"] = json!(e.exit_code());
            }
        }
        println!("{REPORT}{report}");
        let (Ok(listener), Ok(notifier)) = (acquired, notifier) else {
            return;
        };
        if std::env::var(ROLE).as_deref() != Ok("serve") {
            return;
        }

        // Serve the connection that triggered the activation: send the report, wait for the parent's "bye".
        let (stream, _) = tokio::time::timeout(Duration::from_secs(30), listener.accept())
            .await
            .unwrap()
            .unwrap();
        let (read, mut write) = stream.into_split();
        write.write_all(format!("{report}\n").as_bytes()).await.unwrap();
        let mut line = String::new();
        let mut read = tokio::io::BufReader::new(read);
        tokio::time::timeout(Duration::from_secs(30), read.read_line(&mut line))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(line, "bye\n");

        notifier.ready("serving").unwrap();
        let watchdog = notifier.spawn_watchdog().expect("WATCHDOG_USEC is set");
        tokio::time::sleep(notifier.watchdog_interval().unwrap() * 5).await;
        watchdog.abort();
        notifier.stopping("stopping: test over").unwrap();
        let mut rest = Vec::new();
        let _ = read.read_to_end(&mut rest).await;
    });
}

/// `--exact` name of a test in this module.
fn test_name(function: &str) -> String {
    let module = module_path!().split_once("::").map_or(module_path!(), |(_, rest)| rest);
    format!("{module}::{function}")
}

/// The command that runs `function`'s child role: this binary, that one test, its output not captured.
fn child_args(function: &str) -> Vec<String> {
    let exe = std::env::current_exe().unwrap();
    vec![
        exe.to_string_lossy().into_owned(),
        "--exact".into(),
        test_name(function),
        "--nocapture".into(),
        "--test-threads=1".into(),
    ]
}

fn activate() -> Command {
    let found = Command::new(ACTIVATE).arg("--version").stdout(Stdio::null()).status();
    assert!(
        found.is_ok_and(|s| s.success()),
        "{ACTIVATE} (Debian package systemd) is needed for the socket activation tests"
    );
    Command::new(ACTIVATE)
}

fn report_of(output: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    // The test harness prints "test <name> ... " on the same line, before the report.
    let line = stdout
        .lines()
        .find_map(|l| l.split_once(REPORT).map(|(_, r)| r))
        .unwrap_or_else(|| {
            panic!(
                "no report from the child; stdout:\n{stdout}\nstderr:\n{}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    serde_json::from_str(line).unwrap()
}

fn wait_for_path(path: &Path, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "{ACTIVATE} exited before it listened"
        );
        assert!(Instant::now() < deadline, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_output(child: Child) -> Output {
    // The child's own timeouts (30 s) bound this wait.
    child.wait_with_output().unwrap()
}

struct Home {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    roots: Roots,
}

fn home() -> Home {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("efr");
    let roots = Roots::under(&dir);
    roots.create_all().unwrap();
    Home { _tmp: tmp, dir, roots }
}

#[test]
fn systemd_passes_the_socket() {
    if is_child() {
        return child_main();
    }
    let home = home();
    let socket = home.roots.socket_path();
    let notify_path = home.dir.join("notify");
    let manager = UnixDatagram::bind(&notify_path).unwrap();
    manager.set_read_timeout(Some(Duration::from_secs(30))).unwrap();

    let mut child = activate()
        .arg(format!("--listen={}", socket.display()))
        .arg("--fdname=efrd.socket")
        .args(["-E", &format!("{ROLE}=serve")])
        .args(["-E", &format!("EFR_HOME={}", home.dir.display())])
        .args(["-E", &format!("NOTIFY_SOCKET={}", notify_path.display())])
        .args(["-E", "WATCHDOG_USEC=200000"])
        .args(child_args("systemd_passes_the_socket"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_path(&socket, &mut child);

    // This connection makes systemd-socket-activate exec the daemon, which then accepts it.
    let mut stream = UnixStream::connect(&socket).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line).unwrap();
    let served: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(served["source"], "systemd", "{served}");
    assert_eq!(served["name"], "efrd.socket");
    assert_eq!(served["path"], json!(socket));
    assert_eq!(
        served["pid"],
        child.id(),
        "systemd-socket-activate execs the daemon in its own process"
    );
    assert_eq!(served["cloexec"], true);
    assert_eq!(served["listen_env_left"], false, "LISTEN_* are removed for children");
    assert_eq!(
        served["notify_env_left"], false,
        "NOTIFY_SOCKET and WATCHDOG_* are removed for children"
    );

    // While that daemon runs, a self-started one is refused by the lock, naming the running pid.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let err = runtime.block_on(async { Listener::acquire(&home.roots).unwrap_err() });
    assert!(
        matches!(err, crate::listen::ListenError::AlreadyRunning { pid: Some(p), .. } if p == child.id()),
        "{err:?}"
    );
    assert!(socket.exists(), "the refused start left systemd's socket alone");

    stream.write_all(b"bye\n").unwrap();
    let mut datagrams = Vec::new();
    while !datagrams.iter().any(|d: &String| d.starts_with("STOPPING=1")) {
        datagrams.push(efr_test_support::notify::recv(&manager).expect("the daemon's notifications"));
    }
    drop(stream);
    let output = wait_output(child);
    assert!(
        output.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(report_of(&output), served);

    assert_eq!(
        datagrams.first().map(String::as_str),
        Some("READY=1\nSTATUS=serving\n"),
        "{datagrams:?}"
    );
    assert_eq!(
        datagrams.last().map(String::as_str),
        Some("STOPPING=1\nSTATUS=stopping: test over\n")
    );
    let pings = datagrams.iter().filter(|d| *d == "WATCHDOG=1\n").count();
    assert!(
        pings >= 2,
        "five watchdog intervals give at least two pings: {datagrams:?}"
    );
    assert_eq!(pings + 2, datagrams.len(), "nothing else was sent: {datagrams:?}");
}

/// Runs `function`'s child with fd 3 opened on `fd3` by `sh` and `LISTEN_PID` set to the child's own pid.
fn via_sh(function: &str, home: &Home, fd3: &Path, listen_fds: &str) -> Value {
    let output = Command::new("/bin/sh")
        .args(["-c", "export LISTEN_PID=$$; exec \"$@\" 3<\"$EFR_TEST_FD3\"", "sh"])
        .args(child_args(function))
        .env(ROLE, "report")
        .env("EFR_HOME", &home.dir)
        .env("EFR_TEST_FD3", fd3)
        .env("LISTEN_FDS", listen_fds)
        .env("LISTEN_FDNAMES", "efrd.socket")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    report_of(&output)
}

#[test]
fn an_fd_that_is_not_a_socket_is_refused() {
    if is_child() {
        return child_main();
    }
    let home = home();
    let file = home.dir.join("not-a-socket");
    fs::write(&file, b"x").unwrap();
    let report = via_sh("an_fd_that_is_not_a_socket_is_refused", &home, &file, "1");
    let error = report["error"].as_str().unwrap();
    assert!(
        error.starts_with("fd 3 from systemd cannot be used: it is not a socket"),
        "{report}"
    );
    assert_eq!(report["exit_code"], 1);
    assert_eq!(report["listen_env_left"], false);
    assert!(!home.roots.socket_path().exists(), "no socket was bound in its place");
}

#[test]
fn listen_fds_that_do_not_parse_are_refused() {
    if is_child() {
        return child_main();
    }
    let home = home();
    let file = home.dir.join("fd3");
    fs::write(&file, b"x").unwrap();
    let report = via_sh("listen_fds_that_do_not_parse_are_refused", &home, &file, "two");
    let error = report["error"].as_str().unwrap();
    assert!(
        error.starts_with("LISTEN_FDS: socket activation variables are not valid"),
        "{report}"
    );
    assert!(error.ends_with("LISTEN_FDS=two"), "{report}");
    assert_eq!(report["listen_env_left"], false);
}

#[test]
fn variables_for_another_pid_are_dropped_and_efrd_binds_itself() {
    if is_child() {
        return child_main();
    }
    let home = home();
    let output = Command::new(&child_args("variables_for_another_pid_are_dropped_and_efrd_binds_itself")[0])
        .args(&child_args("variables_for_another_pid_are_dropped_and_efrd_binds_itself")[1..])
        .env(ROLE, "report")
        .env("EFR_HOME", &home.dir)
        .env("LISTEN_PID", "1")
        .env("LISTEN_FDS", "1")
        .env("NOTIFY_SOCKET", "/nonexistent/notify")
        .env("WATCHDOG_USEC", "1000000")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report = report_of(&output);
    assert_eq!(report["source"], "self_bound", "{report}");
    assert_eq!(report["path"], json!(home.roots.socket_path()));
    assert_eq!(report["listen_env_left"], false);
    assert_eq!(report["notify_env_left"], false);
    assert_eq!(report["cloexec"], true);
}

#[test]
fn a_bad_notify_socket_is_reported() {
    if is_child() {
        return child_main();
    }
    let home = home();
    let args = child_args("a_bad_notify_socket_is_reported");
    let output = Command::new(&args[0])
        .args(&args[1..])
        .env(ROLE, "report")
        .env("EFR_HOME", &home.dir)
        .env("NOTIFY_SOCKET", "relative/notify")
        .output()
        .unwrap();
    let report = report_of(&output);
    assert_eq!(
        report["notifier_error"], "NOTIFY_SOCKET: must be an absolute path or start with @, not \"relative/notify\"",
        "{report}"
    );
    assert_eq!(report["notify_env_left"], false);
    assert_eq!(report["source"], "self_bound");
}

/// Starts the child under `systemd-socket-activate` with `listen` options, triggers it with `trigger`, and
/// returns its report.
fn activate_with(function: &str, home: &Home, listen: &[String], trigger: impl FnOnce()) -> Value {
    let mut child = activate()
        .args(listen)
        .args(["-E", &format!("{ROLE}=report")])
        .args(["-E", &format!("EFR_HOME={}", home.dir.display())])
        .args(child_args(function))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let first = home.dir.join("first.sock");
    if listen.iter().any(|l| l.ends_with("first.sock")) {
        wait_for_path(&first, &mut child);
    } else {
        // A TCP listener has no path to watch; systemd-socket-activate says when it listens on stderr.
        let mut stderr = child.stderr.take().unwrap();
        let mut seen = Vec::new();
        let mut byte = [0u8; 1];
        while !String::from_utf8_lossy(&seen).contains("Listening on") {
            assert_eq!(
                stderr.read(&mut byte).unwrap(),
                1,
                "{ACTIVATE} exited: {}",
                String::from_utf8_lossy(&seen)
            );
            seen.push(byte[0]);
        }
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    }
    trigger();
    let output = wait_output(child);
    assert!(
        output.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    report_of(&output)
}

#[test]
fn a_datagram_socket_is_refused() {
    if is_child() {
        return child_main();
    }
    let home = home();
    let first = home.dir.join("first.sock");
    let listen = vec!["--datagram".to_owned(), format!("--listen={}", first.display())];
    let report = activate_with("a_datagram_socket_is_refused", &home, &listen, || {
        UnixDatagram::unbound().unwrap().send_to(b"wake", &first).unwrap();
    });
    assert_eq!(
        report["error"],
        "fd 3 from systemd cannot be used: it is a Datagram socket, not a stream socket"
    );
    assert_eq!(report["exit_code"], 1);
}

#[test]
fn two_sockets_are_refused() {
    if is_child() {
        return child_main();
    }
    let home = home();
    let first = home.dir.join("first.sock");
    let listen = vec![
        format!("--listen={}", first.display()),
        format!("--listen={}", home.dir.join("2.sock").display()),
    ];
    let report = activate_with("two_sockets_are_refused", &home, &listen, || {
        drop(UnixStream::connect(&first).unwrap());
    });
    assert_eq!(
        report["error"],
        "LISTEN_FDS: systemd passed 2 sockets; efrd takes exactly one (efrd.socket has one ListenStream=)"
    );
}

#[test]
fn a_tcp_socket_is_refused() {
    if is_child() {
        return child_main();
    }
    let home = home();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = vec![format!("--listen=127.0.0.1:{port}")];
    let report = activate_with("a_tcp_socket_is_refused", &home, &listen, || {
        drop(std::net::TcpStream::connect(("127.0.0.1", port)).unwrap());
    });
    let error = report["error"].as_str().unwrap();
    assert!(
        error.starts_with("fd 3 from systemd cannot be used: it is not a Unix socket"),
        "{report}"
    );
}
