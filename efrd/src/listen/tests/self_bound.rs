//! Self-binding in a tempdir: modes, the lock, stale and live sockets, files in the way, the drop.

use std::fs;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener as StdListener, UnixStream as StdStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use tokio::io::AsyncWriteExt;

use crate::config::Roots;
use crate::listen::{EXIT_ALREADY_RUNNING, ListenError, Listener, SocketSource};

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

fn roots() -> (tempfile::TempDir, Roots) {
    let tmp = tempfile::tempdir().unwrap();
    let roots = Roots::under(&tmp.path().join("efr"));
    (tmp, roots)
}

/// The listener accepts a real connection and the bytes flow.
async fn serves(listener: &Listener) {
    let path = listener.path().to_owned();
    let client = tokio::task::spawn_blocking(move || {
        let mut stream = StdStream::connect(&path).unwrap();
        let mut got = String::new();
        stream.read_to_string(&mut got).unwrap();
        got
    });
    let (mut stream, _) = listener.accept().await.unwrap();
    stream.write_all(b"hello").await.unwrap();
    drop(stream);
    assert_eq!(client.await.unwrap(), "hello");
}

#[tokio::test]
async fn binds_with_private_modes_and_serves() {
    let (_tmp, roots) = roots();
    let listener = Listener::acquire(&roots).unwrap();
    assert_eq!(listener.source(), &SocketSource::SelfBound);
    assert_eq!(listener.path(), roots.socket_path());
    assert!(fs::symlink_metadata(listener.path()).unwrap().file_type().is_socket());
    assert_eq!(mode(listener.path()), 0o600, "socket");
    assert_eq!(mode(&roots.runtime.path), 0o700, "runtime folder");
    assert_eq!(mode(&roots.lock_path()), 0o600, "lock file");
    assert_eq!(
        fs::read_to_string(roots.lock_path()).unwrap(),
        format!("{}\n", std::process::id())
    );
    assert_eq!(listener.lock().path(), roots.lock_path());
    serves(&listener).await;
}

#[tokio::test]
async fn an_open_runtime_folder_is_made_private() {
    let (_tmp, roots) = roots();
    fs::create_dir_all(&roots.runtime.path).unwrap();
    fs::set_permissions(&roots.runtime.path, fs::Permissions::from_mode(0o755)).unwrap();
    let _listener = Listener::acquire(&roots).unwrap();
    assert_eq!(mode(&roots.runtime.path), 0o700);
}

#[tokio::test]
async fn a_second_acquire_fails_with_the_lock_error() {
    let (_tmp, roots) = roots();
    let first = Listener::acquire(&roots).unwrap();
    let err = Listener::acquire(&roots).unwrap_err();
    match &err {
        ListenError::AlreadyRunning { lock, pid } => {
            assert_eq!(lock, &roots.lock_path());
            assert_eq!(*pid, Some(std::process::id()));
        }
        other => panic!("expected AlreadyRunning, got {other:?}"),
    }
    assert_eq!(err.exit_code(), EXIT_ALREADY_RUNNING);
    assert_eq!(err.exit_code(), 3);
    assert_eq!(
        err.to_string(),
        format!(
            "efrd is already running as pid {} (lock {} is held)",
            std::process::id(),
            roots.lock_path().display()
        )
    );
    // The refused start touched nothing: the first one still serves, its pid is still in the lock file.
    assert_eq!(
        fs::read_to_string(roots.lock_path()).unwrap(),
        format!("{}\n", std::process::id())
    );
    serves(&first).await;
    // Once the first is gone, a new one starts.
    drop(first);
    let again = Listener::acquire(&roots).unwrap();
    serves(&again).await;
}

#[tokio::test]
async fn a_lock_held_by_another_process_refuses_the_start() {
    let (_tmp, roots) = roots();
    fs::create_dir_all(&roots.runtime.path).unwrap();
    fs::write(roots.lock_path(), "4242\n").unwrap();
    // util-linux flock(1) holds the lock in another process, as a running efrd would. With -o its command does not
    // inherit the lock, so killing flock releases it; its own process group lets the test end the command too.
    let mut holder = Command::new("flock")
        .arg("-o")
        .arg(roots.lock_path())
        .args(["-c", "echo locked; exec sleep 30"])
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("flock(1) from util-linux is needed for this test");
    let mut line = [0u8; 7];
    holder.stdout.take().unwrap().read_exact(&mut line).unwrap();
    assert_eq!(&line, b"locked\n");
    let err = Listener::acquire(&roots).unwrap_err();
    assert!(
        matches!(err, ListenError::AlreadyRunning { pid: Some(4242), .. }),
        "{err:?}"
    );
    assert!(!roots.socket_path().exists(), "a refused start binds nothing");
    let group = nix::unistd::Pid::from_raw(i32::try_from(holder.id()).unwrap());
    nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL).unwrap();
    holder.wait().unwrap();
    let listener = Listener::acquire(&roots).unwrap();
    serves(&listener).await;
}

#[tokio::test]
async fn a_stale_socket_is_removed() {
    let (_tmp, roots) = roots();
    fs::create_dir_all(&roots.runtime.path).unwrap();
    // A socket whose listener is gone, as a killed efrd leaves it: connect gets ECONNREFUSED.
    drop(StdListener::bind(roots.socket_path()).unwrap());
    assert_eq!(
        StdStream::connect(roots.socket_path()).unwrap_err().kind(),
        std::io::ErrorKind::ConnectionRefused
    );
    // bind(2) over an existing file fails with EADDRINUSE, so a bound listener means the stale file was removed.
    let listener = Listener::acquire(&roots).unwrap();
    assert_eq!(mode(listener.path()), 0o600);
    serves(&listener).await;
}

#[tokio::test]
async fn a_live_socket_is_never_removed() {
    let (_tmp, roots) = roots();
    fs::create_dir_all(&roots.runtime.path).unwrap();
    // Another process serves the path without our lock (an efrd of an older version, say).
    let live = StdListener::bind(roots.socket_path()).unwrap();
    let ino = fs::symlink_metadata(roots.socket_path()).unwrap().ino();
    let err = Listener::acquire(&roots).unwrap_err();
    assert!(
        matches!(&err, ListenError::SocketInUse { path } if *path == roots.socket_path()),
        "{err:?}"
    );
    assert_eq!(err.exit_code(), EXIT_ALREADY_RUNNING);
    assert_eq!(
        fs::symlink_metadata(roots.socket_path()).unwrap().ino(),
        ino,
        "the same socket file"
    );
    // The probe's connection is in the live listener's backlog; a new client still gets through.
    live.set_nonblocking(false).unwrap();
    let client = std::thread::spawn({
        let path = roots.socket_path();
        move || StdStream::connect(path).unwrap()
    });
    let _probe = live.accept().unwrap();
    let _client = live.accept().unwrap();
    client.join().unwrap();
    // The lock went with the failed acquire: once the path is free, a start succeeds.
    drop(live);
    let listener = Listener::acquire(&roots).unwrap();
    serves(&listener).await;
}

#[tokio::test]
async fn things_that_are_not_sockets_are_left_alone() {
    let (_tmp, roots) = roots();
    fs::create_dir_all(&roots.runtime.path).unwrap();
    fs::write(roots.socket_path(), b"precious").unwrap();
    let err = Listener::acquire(&roots).unwrap_err();
    assert!(matches!(err, ListenError::NotASocket { .. }), "{err:?}");
    assert_eq!(err.exit_code(), 1);
    assert!(err.to_string().contains("is not a socket"), "{err}");
    assert_eq!(fs::read(roots.socket_path()).unwrap(), b"precious");

    fs::remove_file(roots.socket_path()).unwrap();
    fs::create_dir(roots.socket_path()).unwrap();
    assert!(matches!(
        Listener::acquire(&roots).unwrap_err(),
        ListenError::NotASocket { .. }
    ));
    assert!(roots.socket_path().is_dir());

    fs::remove_dir(roots.socket_path()).unwrap();
    std::os::unix::fs::symlink("/nonexistent/efr.sock", roots.socket_path()).unwrap();
    assert!(matches!(
        Listener::acquire(&roots).unwrap_err(),
        ListenError::NotASocket { .. }
    ));
    assert!(
        fs::symlink_metadata(roots.socket_path())
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[tokio::test]
async fn a_runtime_root_that_is_a_file_is_an_error() {
    let (tmp, _) = roots();
    let roots = Roots::under(tmp.path());
    fs::write(&roots.runtime.path, b"x").unwrap();
    let err = Listener::acquire(&roots).unwrap_err();
    assert!(matches!(err, ListenError::Dir(_)), "{err:?}");
    assert!(
        err.to_string().contains(&roots.runtime.path.display().to_string()),
        "{err}"
    );
}

#[tokio::test]
async fn drop_removes_only_our_own_socket() {
    let (_tmp, roots) = roots();
    let listener = Listener::acquire(&roots).unwrap();
    drop(listener);
    assert!(!roots.socket_path().exists(), "our socket goes with us");

    // A socket that replaced ours (someone removed ours and bound anew) stays.
    let listener = Listener::acquire(&roots).unwrap();
    fs::remove_file(roots.socket_path()).unwrap();
    let other = StdListener::bind(roots.socket_path()).unwrap();
    drop(listener);
    assert!(
        fs::symlink_metadata(roots.socket_path())
            .unwrap()
            .file_type()
            .is_socket()
    );
    drop(other);
}

#[test]
fn acquire_outside_a_runtime_is_an_error() {
    let (_tmp, roots) = roots();
    let err = Listener::acquire(&roots).unwrap_err();
    assert!(matches!(err, ListenError::NoRuntime), "{err:?}");
    assert!(!roots.runtime.path.exists(), "nothing was created");
}

/// Many quick starts and stops: the lock and the socket never get in each other's way.
#[tokio::test]
async fn restarts_in_a_row() {
    let (_tmp, roots) = roots();
    for _ in 0..20 {
        let listener = Listener::acquire(&roots).unwrap();
        serves(&listener).await;
    }
}
