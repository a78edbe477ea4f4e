//! A socket helper's layers ([`efr_helper::harden::apply`]), applied in a child process (this test's own binary,
//! run again with [`CHILD`] set) and checked from inside it and from `/proc`. A plain `main`, not libtest's harness:
//! the child hardens its only thread, as a helper does before it starts its runtime.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use efr_helper::harden::seccomp::Policy;

/// Set in the child: its sockets folder. Its presence makes the binary act as the child.
const CHILD: &str = "EFR_HELPER_HARDEN_SOCKETS";
/// Set in the child: a folder outside its sockets folder.
const OUTSIDE: &str = "EFR_HELPER_HARDEN_OUTSIDE";

/// What the child's policy adds to the runtime's calls: a listener in its folder and its removal.
const CALLS: &[(&str, i64)] = &[
    ("bind", libc::SYS_bind),
    ("listen", libc::SYS_listen),
    ("unlinkat", libc::SYS_unlinkat),
    #[cfg(target_arch = "x86_64")]
    ("unlink", libc::SYS_unlink),
];

fn main() -> ExitCode {
    if let (Some(sockets), Some(outside)) = (std::env::var_os(CHILD), std::env::var_os(OUTSIDE)) {
        return child(Path::new(&sockets), Path::new(&outside));
    }
    if !nix::unistd::geteuid().is_root() {
        // Emptying the bounding set needs CAP_SETPCAP: the test cannot run its real part, so it fails and says so.
        eprintln!(
            "harden: needs root (emptying the bounding set needs CAP_SETPCAP); run the tests as root, as CI does"
        );
        return ExitCode::FAILURE;
    }
    parent();
    println!("harden: ok");
    ExitCode::SUCCESS
}

fn parent() {
    let sockets = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, sockets.path())
        .env(OUTSIDE, outside.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    assert_eq!(first, "checked", "the child's checks failed");
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    for (field, want) in [
        ("CapInh", "0000000000000000"),
        ("CapPrm", "0000000000000000"),
        ("CapEff", "0000000000000000"),
        ("CapBnd", "0000000000000000"),
        ("CapAmb", "0000000000000000"),
        ("NoNewPrivs", "1"),
        ("Seccomp", "2"),
    ] {
        assert_eq!(field_of(&status, field), want, "{field} in\n{status}");
    }
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
}

fn field_of<'a>(status: &'a str, name: &str) -> &'a str {
    status
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .map_or("", str::trim)
}

/// Hardens itself, checks what it may and may not do, says `checked` and waits for its stdin to end.
fn child(sockets: &Path, outside: &Path) -> ExitCode {
    let policy = Policy {
        calls: &[CALLS],
        families: &[libc::AF_UNIX],
    };
    if let Err(error) = efr_helper::harden::apply(sockets, &policy) {
        eprintln!("harden: {error}");
        return ExitCode::FAILURE;
    }
    let failures = checks(sockets, outside);
    if !failures.is_empty() {
        eprintln!("harden: {}", failures.join("; "));
        return ExitCode::FAILURE;
    }
    println!("checked");
    let _ = std::io::stdin().read(&mut [0_u8; 1]);
    ExitCode::SUCCESS
}

fn checks(sockets: &Path, outside: &Path) -> Vec<String> {
    let mut failures = Vec::new();
    let mut check = |ok: bool, what: &str| {
        if !ok {
            failures.push(what.to_owned());
        }
    };
    let inside: PathBuf = sockets.join("plan.sock");
    let listener = UnixListener::bind(&inside);
    check(listener.is_ok(), "a socket in the sockets folder");
    check(std::fs::remove_file(&inside).is_ok(), "removing it");
    let refused = UnixListener::bind(outside.join("plan.sock")).err();
    check(
        refused.and_then(|e| e.raw_os_error()) == Some(libc::EACCES),
        "Landlock refuses a socket elsewhere",
    );
    // SAFETY: socket() takes no pointer; a descriptor it returned is closed at once.
    let inet = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
    let errno = std::io::Error::last_os_error().raw_os_error();
    check(inet == -1 && errno == Some(libc::EPERM), "seccomp refuses AF_INET");
    let opened = std::fs::File::open("/etc/hostname").err();
    check(
        opened.and_then(|e| e.raw_os_error()) == Some(libc::EPERM),
        "seccomp refuses opening a file",
    );
    failures
}
