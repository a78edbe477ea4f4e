//! The proxy bridge with real bubblewrap and real clients: a call with a host grant and the plan's `proxy` reaches
//! the proxy's socket through the listener on its loopback, named by the proxy variables; curl, Python's urllib and
//! git send their CONNECT there unmodified. A Unix socket server of the test stands in for `efr-proxy`: it answers
//! each CONNECT with 200 and then echoes, so the clients' TLS fails after the tunnel, which is fine here.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use efr_protocol::internal::{LaunchPlan, LaunchReport, SetupStage};
use efr_protocol::wire::Grant;
use support::{Fixture, Run, User, helper};

/// The stand-in end of a proxy plan: a Unix socket server that records each request line.
struct StandIn {
    path: PathBuf,
    lines: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl StandIn {
    /// Listens at `path` (mode 0666, so an unprivileged launcher's bridge can connect too).
    fn start(path: PathBuf) -> Self {
        let listener = UnixListener::bind(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (lines, stop) = (Arc::clone(&lines), Arc::clone(&stop));
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let lines = Arc::clone(&lines);
                            thread::spawn(move || serve(stream, &lines));
                        }
                        Err(_) => thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
        };
        Self {
            path,
            lines,
            stop,
            thread: Some(thread),
        }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits (bounded) until `count` request lines came in.
    fn wait_for(&self, count: usize) -> Vec<String> {
        let started = Instant::now();
        while self.lines().len() < count && started.elapsed() < Duration::from_secs(5) {
            thread::sleep(Duration::from_millis(10));
        }
        self.lines()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One connection: the head (at most 8 KiB, 10 s), its first line recorded, `200`, then an echo.
fn serve(mut stream: UnixStream, lines: &Mutex<Vec<String>>) {
    stream.set_nonblocking(false).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let text = String::from_utf8_lossy(&head);
    lines
        .lock()
        .unwrap()
        .push(text.lines().next().unwrap_or_default().to_owned());
    if stream
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .is_err()
    {
        return;
    }
    let mut buf = [0_u8; 16 * 1024];
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 || stream.write_all(&buf[..n]).is_err() {
            return;
        }
    }
}

/// A plan for `line` with a host grant and the stand-in as its proxy.
fn proxied(fx: &Fixture, stand_in: &StandIn, line: &str) -> LaunchPlan {
    let mut plan = fx.plan(line);
    plan.grants.push(Grant::Host {
        host: "example.test".into(),
        port: None,
    });
    plan.proxy = Some(stand_in.path.clone());
    plan
}

fn ran(run: &Run) -> &Run {
    assert!(
        run.exited().is_some(),
        "the sandbox did not come up:\n{}",
        run.describe()
    );
    run
}

/// Each client, run in its own call, sends one CONNECT for example.test:443 to the proxy's socket.
fn clients_reach_the_proxy(user: User) {
    let fx = Fixture::new(user);
    let stand_in = StandIn::start(fx.run_user.join("proxy.sock"));
    let clients: &[(&str, &str)] = &[
        ("curl", "curl -sS --max-time 5 https://example.test/"),
        (
            "python",
            "/usr/bin/python3 -c \"import urllib.request; urllib.request.urlopen('https://example.test/', timeout=5)\"",
        ),
        ("git", "GIT_TERMINAL_PROMPT=0 git ls-remote https://example.test/x"),
    ];
    for (i, (name, line)) in clients.iter().enumerate() {
        for program in ["/usr/bin/curl", "/usr/bin/python3", "/usr/local/bin/git"] {
            assert!(Path::new(program).exists(), "this test needs {program}");
        }
        let run = fx.run(&proxied(&fx, &stand_in, line));
        ran(&run);
        let lines = stand_in.wait_for(i + 1);
        assert_eq!(lines.len(), i + 1, "{name} sent no request:\n{}", run.describe());
        assert!(
            lines[i].starts_with("CONNECT example.test:443 HTTP/1."),
            "{name} sent {:?}:\n{}",
            lines[i],
            run.describe()
        );
    }
}

#[test]
fn curl_python_and_git_reach_the_proxy_through_the_bridge() {
    clients_reach_the_proxy(User::Root);
}

#[test]
fn the_bridge_works_for_an_unprivileged_user() {
    let fx = Fixture::new(User::Nobody);
    let stand_in = StandIn::start(fx.run_user.join("proxy.sock"));
    let run = fx.run(&proxied(&fx, &stand_in, "curl -sS --max-time 5 https://example.test/"));
    ran(&run);
    assert_eq!(
        stand_in.wait_for(1),
        ["CONNECT example.test:443 HTTP/1.1"],
        "{}",
        run.describe()
    );
}

/// The listening sockets of the sandbox's network namespace, as `/proc/net/tcp` shows them (local address, hex).
const LISTENERS: &str = "awk '$4 == \"0A\" {print \"listen \" $2}' /proc/net/tcp /proc/net/tcp6";

#[test]
fn the_environment_the_listener_and_the_descriptors() {
    let fx = Fixture::new(User::Root);
    let stand_in = StandIn::start(fx.run_user.join("proxy.sock"));
    let line = format!("env | grep -i _proxy= | sort; {LISTENERS}; ls -l /proc/$$/fd/");

    let run = fx.run(&proxied(&fx, &stand_in, &line));
    let out = &ran(&run).stdout;
    let port = out
        .lines()
        .find_map(|l| l.strip_prefix("HTTPS_PROXY=http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no HTTPS_PROXY:\n{}", run.describe()))
        .parse::<u16>()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    for name in ["ALL_PROXY", "HTTPS_PROXY", "HTTP_PROXY", "http_proxy", "https_proxy"] {
        assert!(out.contains(&format!("{name}={url}\n")), "{name}:\n{}", run.describe());
    }
    for name in ["NO_PROXY", "no_proxy"] {
        assert!(
            out.contains(&format!("{name}=localhost,127.0.0.1,::1\n")),
            "{name}:\n{}",
            run.describe()
        );
    }
    // The bridge's listener, on the sandbox's loopback: the only one there.
    let listeners: Vec<&str> = out.lines().filter(|l| l.starts_with("listen ")).collect();
    assert_eq!(listeners, [format!("listen 0100007F:{port:04X}")], "{}", run.describe());
    // The command holds no socket: the listener stayed with the outer stage.
    assert!(
        out.contains(" 0 -> /dev/null\n"),
        "the listing did not run:\n{}",
        run.describe()
    );
    assert!(
        !out.contains("socket:"),
        "a socket reached the command:\n{}",
        run.describe()
    );

    // Without a proxy: no variables, no listener.
    let run = fx.run(&fx.plan(&line));
    let out = &ran(&run).stdout;
    assert!(!out.to_lowercase().contains("_proxy="), "{}", run.describe());
    assert!(!out.contains("listen "), "{}", run.describe());
    assert!(stand_in.lines().is_empty());
}

#[test]
fn the_bridge_is_the_only_way_out() {
    let fx = Fixture::new(User::Root);
    let stand_in = StandIn::start(fx.run_user.join("proxy.sock"));
    let host_tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let host_port = host_tcp.local_addr().unwrap().port();
    let helper = helper().display().to_string();
    // An address off the machine, the host's loopback, and the proxy's socket itself at its fixed path.
    let line = format!(
        "{helper} tcp 1.1.1.1 443; {helper} tcp 127.0.0.1 {host_port}; {helper} unix /dev/efr-proxy; \
         {helper} tcp 127.0.0.1 \"${{HTTPS_PROXY##*:}}\""
    );
    let run = fx.run(&proxied(&fx, &stand_in, &line));
    let lines: Vec<&str> = ran(&run).stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", run.describe());
    assert!(
        lines[0].starts_with("fail errno=101 "),
        "no route off the sandbox:\n{}",
        run.describe()
    );
    assert!(
        lines[1].starts_with("fail errno=111 "),
        "the host's loopback is another namespace's:\n{}",
        run.describe()
    );
    assert_eq!(lines[2..], ["ok", "ok"], "{}", run.describe());
    drop(host_tcp);
}

#[test]
fn a_proxy_with_open_network_or_a_missing_socket_is_refused() {
    let fx = Fixture::new(User::Root);
    let stand_in = StandIn::start(fx.run_user.join("proxy.sock"));
    let marker = fx.outside.join("ran");
    let mut plan = proxied(&fx, &stand_in, &format!("touch {}", marker.display()));
    plan.grants.push(Grant::OpenNetwork);
    let run = fx.run(&plan);
    match run.end() {
        Some(LaunchReport::SetupError {
            stage: SetupStage::Plan,
            message,
        }) => assert!(message.contains("open_network"), "{}", run.describe()),
        _ => panic!("not refused at plan:\n{}", run.describe()),
    }
    assert!(!marker.exists(), "the command ran");
    // A proxy socket that is not there (the proxy ended): bubblewrap cannot bind it, and nothing runs.
    let mut plan = proxied(&fx, &stand_in, &format!("touch {}", marker.display()));
    plan.proxy = Some(fx.run_user.join("gone.sock"));
    let run = fx.run(&plan);
    assert!(
        matches!(run.end(), Some(LaunchReport::SetupError { stage: SetupStage::Bwrap, message }) if message.contains("gone.sock")),
        "{}",
        run.describe()
    );
    assert!(!marker.exists(), "the command ran");
}
