//! sd_notify against a real Unix datagram socket standing in for the service manager's.

use std::ffi::OsStr;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::{Duration, Instant};

use crate::listen::{ListenError, Notifier};

fn manager() -> (tempfile::TempDir, UnixDatagram, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("notify");
    let socket = UnixDatagram::bind(&path).unwrap();
    socket.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    (tmp, socket, path)
}

fn recv(socket: &UnixDatagram) -> String {
    efr_test_support::notify::recv(socket).unwrap()
}

fn notifier(socket: &str, usec: Option<&str>, pid: Option<&str>) -> Notifier {
    Notifier::new(Some(OsStr::new(socket)), usec.map(OsStr::new), pid.map(OsStr::new), 100).unwrap()
}

#[test]
fn each_message_arrives_as_one_datagram() {
    let (_tmp, socket, path) = manager();
    let n = notifier(path.to_str().unwrap(), None, None);
    assert!(n.is_enabled());
    n.ready("serving on /run/user/1/efr/daemon.sock").unwrap();
    assert_eq!(
        recv(&socket),
        "READY=1\nSTATUS=serving on /run/user/1/efr/daemon.sock\n"
    );
    n.status("2 connections\nand a newline").unwrap();
    assert_eq!(recv(&socket), "STATUS=2 connections and a newline\n");
    n.watchdog().unwrap();
    assert_eq!(recv(&socket), "WATCHDOG=1\n");
    n.stopping("stopping: SIGTERM").unwrap();
    assert_eq!(recv(&socket), "STOPPING=1\nSTATUS=stopping: SIGTERM\n");
}

#[test]
fn abstract_sockets_work() {
    let name = format!("efr-notify-test-{}-{}", std::process::id(), rand::random::<u64>());
    let socket = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    socket.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let n = notifier(&format!("@{name}"), None, None);
    n.ready("up").unwrap();
    assert_eq!(recv(&socket), "READY=1\nSTATUS=up\n");
}

#[test]
fn without_notify_socket_nothing_is_sent_and_nothing_fails() {
    let n = Notifier::new(None, Some(OsStr::new("1000000")), None, 100).unwrap();
    assert!(!n.is_enabled());
    assert_eq!(n.watchdog_interval(), None, "no socket, no pings");
    n.ready("x").unwrap();
    n.watchdog().unwrap();
    n.stopping("x").unwrap();
    assert!(Notifier::new(Some(OsStr::new("")), None, None, 1).unwrap() == Notifier::disabled());
}

#[test]
fn a_manager_that_is_gone_is_an_error() {
    let (tmp, socket, path) = manager();
    drop(socket);
    std::fs::remove_file(&path).unwrap();
    let n = notifier(path.to_str().unwrap(), None, None);
    let err = n.ready("x").unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound, "{err}");
    drop(tmp);
}

#[test]
fn bad_variables_are_errors() {
    let cases = [
        (Some("relative/notify"), None, None, "NOTIFY_SOCKET"),
        (Some("/run/notify"), Some("soon"), None, "WATCHDOG_USEC"),
        (Some("/run/notify"), Some("0"), None, "WATCHDOG_USEC"),
        (Some("/run/notify"), Some("1000"), Some("me"), "WATCHDOG_PID"),
    ];
    for (socket, usec, pid, var) in cases {
        let err = Notifier::new(socket.map(OsStr::new), usec.map(OsStr::new), pid.map(OsStr::new), 1).unwrap_err();
        assert!(
            matches!(&err, ListenError::Env { var: v, .. } if *v == var),
            "{var}: {err:?}"
        );
        assert!(err.to_string().starts_with(var), "{err}");
    }
}

#[test]
fn watchdog_interval_is_half_and_only_for_our_pid() {
    let table = [
        (None, None, None),
        (Some("2000000"), None, Some(Duration::from_secs(1))),
        (Some("2000000"), Some("100"), Some(Duration::from_secs(1))),
        (Some("2000000"), Some("101"), None),
        (Some("3"), None, Some(Duration::from_micros(1))),
    ];
    for (usec, pid, want) in table {
        assert_eq!(
            notifier("/run/notify", usec, pid).watchdog_interval(),
            want,
            "{usec:?} {pid:?}"
        );
    }
}

#[tokio::test]
async fn the_watchdog_task_pings_at_half_the_timeout() {
    let (_tmp, socket, path) = manager();
    // WATCHDOG_USEC = 100 ms: a ping every 50 ms, the first at once.
    let n = notifier(path.to_str().unwrap(), Some("100000"), None);
    let started = Instant::now();
    let task = n.spawn_watchdog().expect("the watchdog is on");
    let socket = tokio::task::spawn_blocking(move || {
        let pings: Vec<String> = (0..4).map(|_| recv(&socket)).collect();
        (pings, socket)
    });
    let (pings, socket) = socket.await.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(pings, vec!["WATCHDOG=1\n"; 4]);
    assert!(
        elapsed >= Duration::from_millis(140),
        "4 pings take at least 3 intervals, took {elapsed:?}"
    );
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    // After the abort no more pings come.
    socket.set_nonblocking(true).unwrap();
    while socket.recv(&mut [0u8; 64]).is_ok() {}
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert_eq!(
        socket.recv(&mut [0u8; 64]).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock
    );

    assert!(notifier(path.to_str().unwrap(), None, None).spawn_watchdog().is_none());
}
