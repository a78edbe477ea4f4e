//! The escape battery (docs/architecture.md, "The sandbox"): real commands run contained by the real launcher, as root
//! and as an unprivileged user, and every escape is refused. Each item first checks that the sandbox came up (a setup
//! error would refuse everything for the wrong reason) and, where it can, runs the same thing outside as a control, so
//! the item fails when the sandbox stops refusing.

// The battery's bodies are shared by the #[test] functions of each user and panic like them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::net::{TcpListener, UdpSocket};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use efr_protocol::wire::Grant;
use support::{Fixture, NETRC_SECRET, Run, SSH_SECRET, User, helper, helper_outside};

/// Collects the battery's findings, so one run reports every escape at once.
#[derive(Default)]
struct Findings(Vec<String>);

impl Findings {
    fn expect(&mut self, item: &str, holds: bool, run: Option<&Run>, note: &str) {
        if !holds {
            let details = run.map(Run::describe).unwrap_or_default();
            self.0.push(format!("{item}: {note}\n{details}"));
        }
    }

    /// The sandbox came up and the command ran to an exit code.
    fn ran(&mut self, item: &str, run: &Run) -> bool {
        let ran = run.exited().is_some();
        self.expect(item, ran, Some(run), "the sandbox did not come up");
        ran
    }
}

/// A UDP "resolver" on loopback that answers every query by echoing it with the answer bit set.
struct Resolver {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Resolver {
    fn start() -> Self {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        let port = socket.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        thread::spawn(move || {
            let mut buf = [0_u8; 512];
            while !flag.load(Ordering::Relaxed) {
                if let Ok((n, from)) = socket.recv_from(&mut buf)
                    && n > 2
                {
                    buf[2] |= 0x80;
                    let _ = socket.send_to(&buf[..n], from);
                }
            }
        });
        Self { port, stop }
    }
}

impl Drop for Resolver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn battery(user: User) {
    let fx = Fixture::new(user);
    let helper = helper().display().to_string();
    let mut findings = Findings::default();
    let outside = |args: &[&str]| helper_outside(user, support::helper(), args);

    // A write outside the writable roots (a folder of its own, the home), while the project stays writable.
    let line = format!(
        "echo x > {o}/new; echo y >> {o}/existing; echo z > {h}/new; echo p > {p}/made",
        o = fx.outside.display(),
        h = fx.home.display(),
        p = fx.project.display()
    );
    let run = fx.run(&fx.plan(&line));
    if findings.ran("write outside", &run) {
        let refused = !fx.outside.join("new").exists()
            && std::fs::read_to_string(fx.outside.join("existing")).unwrap() == "before"
            && !fx.home.join("new").exists();
        findings.expect("write outside", refused, Some(&run), "a file outside the roots changed");
        findings.expect(
            "write in project",
            fx.project.join("made").exists(),
            Some(&run),
            "the project is not writable",
        );
    }

    // A read of masked files: the folder looks empty, the file reads as empty.
    let home = fx.home.display();
    let line = format!("cat {home}/.ssh/id_ed25519; cat {home}/.netrc; ls -A {home}/.ssh; echo end");
    let run = fx.run(&fx.plan(&line));
    if findings.ran("masked read", &run) {
        let leaked = run.stdout.contains(SSH_SECRET) || run.stdout.contains(NETRC_SECRET);
        findings.expect(
            "masked read",
            !leaked && run.stdout.trim() == "end",
            Some(&run),
            "a masked file was read",
        );
    }

    // A TCP connect to a server on the host's loopback.
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port().to_string();
    findings.expect(
        "tcp control",
        outside(&["tcp", "127.0.0.1", &port]).starts_with("ok"),
        None,
        "control failed",
    );
    let run = fx.run(&fx.plan(&format!("{helper} tcp 127.0.0.1 {port}")));
    if findings.ran("tcp connect", &run) {
        findings.expect(
            "tcp connect",
            run.stdout.starts_with("fail"),
            Some(&run),
            "connected to the host",
        );
    }

    // A DNS lookup against a resolver on the host's loopback.
    let resolver = Resolver::start();
    let dns_port = resolver.port.to_string();
    findings.expect(
        "dns control",
        outside(&["dns", &dns_port]).starts_with("ok"),
        None,
        "control failed",
    );
    let run = fx.run(&fx.plan(&format!("{helper} dns {dns_port}")));
    if findings.ran("dns lookup", &run) {
        findings.expect(
            "dns lookup",
            run.stdout.starts_with("fail"),
            Some(&run),
            "the resolver answered",
        );
    }

    // A connect to the session bus in /run/user/$UID (the fixture's runtime folder, masked as RunUser).
    let bus = fx.bus.display().to_string();
    findings.expect(
        "bus control",
        outside(&["unix", &bus]).starts_with("ok"),
        None,
        "control failed",
    );
    let run = fx.run(&fx.plan(&format!("{helper} unix {bus}")));
    if findings.ran("bus connect", &run) {
        findings.expect(
            "bus connect",
            run.stdout.starts_with("fail"),
            Some(&run),
            "reached the bus",
        );
    }

    // A connect to an abstract socket of the host: own namespace, and net_view (the Landlock scope's job).
    let name = fx.abstract_name("abs");
    let _abstract = UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    findings.expect(
        "abstract control",
        outside(&["abstract", &name]).starts_with("ok"),
        None,
        "control failed",
    );
    for (item, grants) in [
        ("abstract socket", vec![]),
        ("abstract socket under net_view", vec![Grant::NetView]),
    ] {
        let mut plan = fx.plan(&format!("{helper} abstract {name}"));
        plan.grants = grants;
        let run = fx.run(&plan);
        if findings.ran(item, &run) {
            findings.expect(
                item,
                run.stdout.starts_with("fail"),
                Some(&run),
                "reached the host's abstract socket",
            );
        }
    }

    // A signal to a process outside (of the same user).
    let mut sleeper = user.command(std::path::Path::new("/bin/sleep"));
    let mut sleeper = sleeper.arg("30").spawn().unwrap();
    let pid = sleeper.id();
    let run = fx.run(&fx.plan(&format!("kill -TERM {pid} && echo sent")));
    if findings.ran("signal", &run) {
        thread::sleep(Duration::from_millis(50));
        let alive = sleeper.try_wait().unwrap().is_none();
        findings.expect(
            "signal",
            alive && !run.stdout.contains("sent"),
            Some(&run),
            "the signal reached it",
        );
    }
    let _ = sleeper.kill();
    let _ = sleeper.wait();

    // ptrace of a process (its own child: the sandbox refuses ptrace altogether).
    findings.expect(
        "ptrace control",
        outside(&["ptrace"]).starts_with("ok"),
        None,
        "control failed",
    );
    let run = fx.run(&fx.plan(&format!("{helper} ptrace")));
    if findings.ran("ptrace", &run) {
        findings.expect(
            "ptrace",
            run.stdout.starts_with("fail errno=1 "),
            Some(&run),
            "ptrace attached",
        );
    }

    // mount, and a nested user namespace (a way to get mount rights back).
    let line = format!(
        "mount -t tmpfs none {p} && echo mounted; unshare -Ur true && echo userns",
        p = fx.project.display()
    );
    let run = fx.run(&fx.plan(&line));
    if findings.ran("mount", &run) {
        let refused = !run.stdout.contains("mounted") && !run.stdout.contains("userns");
        findings.expect("mount", refused, Some(&run), "mount or a user namespace worked");
    }

    // The same without `--disable-userns`, as for a bubblewrap older than 0.8: the seccomp filter alone refuses.
    let mut plan = fx.plan("unshare -Ur true && echo mapped; unshare -U true && echo plain; echo end");
    plan.disable_userns = false;
    let run = fx.run(&plan);
    if findings.ran("userns without --disable-userns", &run) {
        let refused = !run.stdout.contains("mapped") && !run.stdout.contains("plain") && run.stdout.contains("end");
        findings.expect(
            "userns without --disable-userns",
            refused,
            Some(&run),
            "a nested user namespace was made",
        );
    }

    // A setuid-root binary gaining privilege.
    let suid = fx.suid_helper.display().to_string();
    let control = helper_outside(user, &fx.suid_helper, &["caps"]);
    let gains = match user {
        User::Nobody => control.starts_with("euid=0 "),
        User::Root => !control.contains("capeff=0000000000000000"),
    };
    findings.expect(
        "setuid control",
        gains,
        None,
        &format!("the setuid helper gains nothing outside: {control}"),
    );
    let run = fx.run(&fx.plan(&format!("{suid} caps")));
    if findings.ran("setuid", &run) {
        let expected = format!("euid={} capeff=0000000000000000", user.uid());
        findings.expect(
            "setuid",
            run.stdout.trim() == expected,
            Some(&run),
            "the setuid binary gained privilege",
        );
    }

    // io_uring.
    findings.expect(
        "io_uring control",
        outside(&["iouring"]).starts_with("ok"),
        None,
        "control failed",
    );
    let run = fx.run(&fx.plan(&format!("{helper} iouring")));
    if findings.ran("io_uring", &run) {
        findings.expect(
            "io_uring",
            run.stdout.starts_with("fail errno=1 "),
            Some(&run),
            "io_uring_setup worked",
        );
    }

    // An x32 socket call: refused by the x32 guard (EPERM), whatever the kernel's x32 support (ENOSYS without it).
    let control = outside(&["x32"]);
    findings.expect(
        "x32 control",
        !control.starts_with("fail errno=1 "),
        None,
        &format!("control: {control}"),
    );
    let run = fx.run(&fx.plan(&format!("{helper} x32")));
    if findings.ran("x32", &run) {
        findings.expect(
            "x32",
            run.stdout.starts_with("fail errno=1 "),
            Some(&run),
            "the x32 call was not refused",
        );
    }

    drop(resolver);
    assert!(
        findings.0.is_empty(),
        "escapes as {user:?}:\n{}",
        findings.0.join("\n---\n")
    );
}

#[test]
fn escape_battery_as_root() {
    battery(User::Root);
}

#[test]
fn escape_battery_as_an_unprivileged_user() {
    battery(User::Nobody);
}

/// The command sees the plan's environment only and no descriptor but 0, 1 and 2.
#[test]
fn no_environment_or_descriptor_leaks_in() {
    let fx = Fixture::new(User::Root);
    let plan = fx.plan("env; ls /proc/self/fd");
    let run = fx.run_as(User::Root, &plan, &[("EFR_TEST_TOKEN", "leaky-token-1234")]);
    assert_eq!(run.exited(), Some(0), "{}", run.describe());
    assert!(!run.stdout.contains("leaky-token-1234"), "{}", run.describe());
    assert!(
        run.stdout.contains(&format!("HOME={}", fx.home.display())),
        "{}",
        run.describe()
    );
    // `ls` lists 0, 1, 2 and the descriptor it reads /proc/self/fd with.
    let fds: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.chars().all(|c| c.is_ascii_digit()))
        .collect();
    assert_eq!(fds, ["0", "1", "2", "3"], "{}", run.describe());
}
