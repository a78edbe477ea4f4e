//! Grants open what they name and nothing more (the same commands with the matching grant succeed where the grant
//! allows it), as root and as an unprivileged user, with the real launcher and bubblewrap.

// The battery's bodies are shared by the #[test] functions of each user and panic like them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::net::{TcpListener, UdpSocket};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::Path;
use std::thread;
use std::time::Duration;

use efr_protocol::wire::Grant;
use support::{Fixture, NETRC_SECRET, Run, SSH_SECRET, User, helper, launcher};

fn ran(run: &Run) -> &Run {
    assert!(
        run.exited().is_some(),
        "the sandbox did not come up:\n{}",
        run.describe()
    );
    run
}

fn grants(user: User) {
    let fx = Fixture::new(user);
    let helper = helper().display().to_string();

    // write: the named folder becomes writable, its neighbours stay read-only.
    let mut plan = fx.plan(&format!(
        "echo granted > {o}/new; echo no > {h}/new",
        o = fx.outside.display(),
        h = fx.home.display()
    ));
    plan.grants.push(Grant::Write {
        path: fx.outside.clone(),
    });
    ran(&fx.run(&plan));
    assert_eq!(std::fs::read_to_string(fx.outside.join("new")).unwrap(), "granted\n");
    assert!(!fx.home.join("new").exists(), "the write grant opened the home too");

    // unmask: one store shows, the others stay masked.
    let home = fx.home.display();
    let mut plan = fx.plan(&format!("cat {home}/.ssh/id_ed25519; echo; cat {home}/.netrc"));
    plan.grants.push(Grant::Unmask {
        path: fx.home.join(".ssh"),
    });
    let run = fx.run(&plan);
    assert!(ran(&run).stdout.contains(SSH_SECRET), "{}", run.describe());
    assert!(!run.stdout.contains(NETRC_SECRET), "{}", run.describe());

    // socket: the one socket inside masked /run/user/$UID is reachable.
    let mut plan = fx.plan(&format!("{helper} unix {}", fx.bus.display()));
    plan.grants.push(Grant::Socket { path: fx.bus.clone() });
    let run = fx.run(&plan);
    assert!(ran(&run).stdout.starts_with("ok"), "{}", run.describe());

    // open_network: TCP and a DNS query to the host's loopback work.
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let dns_port = udp.local_addr().unwrap().port();
    let responder = thread::spawn(move || {
        udp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut buf = [0_u8; 512];
        if let Ok((n, from)) = udp.recv_from(&mut buf) {
            buf[2] |= 0x80;
            udp.send_to(&buf[..n], from).unwrap();
        }
    });
    let mut plan = fx.plan(&format!("{helper} tcp 127.0.0.1 {port} && {helper} dns {dns_port}"));
    plan.grants.push(Grant::OpenNetwork);
    let run = fx.run(&plan);
    assert_eq!(ran(&run).stdout, "ok\nok\n", "{}", run.describe());
    responder.join().unwrap();

    // net_view: Unix and netlink sockets, no TCP, and the host's abstract sockets stay out of reach. The launcher's
    // own self-test (what efrd's probe runs) passes under net_view and fails without it.
    let name = fx.abstract_name("view");
    let _listener = UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    let self_test = format!("{} self-test net-view --abstract {name}", launcher().display());
    let mut plan = fx.plan(&format!(
        "{self_test} && {helper} netlink; {helper} tcp 127.0.0.1 {port}"
    ));
    plan.grants.push(Grant::NetView);
    let run = fx.run(&plan);
    let lines: Vec<&str> = ran(&run).stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", run.describe());
    assert!(
        lines[1] == "ok" && lines[2].starts_with("fail errno=97 "),
        "{}",
        run.describe()
    );
    let run = fx.run(&fx.plan(&self_test));
    assert_eq!(
        ran(&run).exited(),
        Some(1),
        "the self-test passed outside net_view:\n{}",
        run.describe()
    );

    // device: a node of the host's /dev shows only with its grant.
    let device = ["/dev/fuse", "/dev/kvm", "/dev/loop-control", "/dev/net/tun"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .expect("no device node to grant on this machine (looked for fuse, kvm, loop-control, net/tun)");
    let line = format!("test -c {device} && echo visible || echo hidden");
    let run = fx.run(&fx.plan(&line));
    assert_eq!(ran(&run).stdout, "hidden\n", "{}", run.describe());
    let mut plan = fx.plan(&line);
    plan.grants.push(Grant::Device { path: device.into() });
    let run = fx.run(&plan);
    assert_eq!(ran(&run).stdout, "visible\n", "{}", run.describe());
    drop(tcp);
}

#[test]
fn grants_open_what_they_name_as_root() {
    grants(User::Root);
}

#[test]
fn grants_open_what_they_name_as_an_unprivileged_user() {
    grants(User::Nobody);
}

/// `$SCRATCH` inside masked efr state stays writable; the state around it stays masked (the deepest rule decides).
#[test]
fn scratch_inside_masked_state_is_writable() {
    let fx = Fixture::new(User::Nobody);
    let state = fx.home.join(".local/state/efr");
    let scratch = state.join("scratch/c1");
    std::fs::create_dir_all(&scratch).unwrap();
    std::fs::write(state.join("keys.json"), "SECRET-KEYS").unwrap();
    for path in [
        fx.home.join(".local"),
        fx.home.join(".local/state"),
        state.clone(),
        state.join("scratch"),
        scratch.clone(),
    ] {
        std::os::unix::fs::chown(&path, Some(support::NOBODY), Some(support::NOBODY)).unwrap();
    }
    let mut plan = fx.plan(&format!(
        "cat {}/keys.json; echo made > {}/out",
        state.display(),
        scratch.display()
    ));
    plan.masks.push(efr_protocol::internal::Mask {
        path: state.clone(),
        source: efr_protocol::internal::MaskSource::EfrRoot,
    });
    plan.writable.push(efr_protocol::internal::Writable {
        path: scratch.clone(),
        source: efr_protocol::internal::WritableSource::Scratch,
    });
    let run = fx.run(&plan);
    assert!(!ran(&run).stdout.contains("SECRET-KEYS"), "{}", run.describe());
    assert_eq!(
        std::fs::read_to_string(scratch.join("out")).unwrap(),
        "made\n",
        "{}",
        run.describe()
    );
}

/// A desktop grant binds the one control socket of the prompt terminal's desktop inside the masked runtime folder
/// (here a test-made `wayland-9`): reachable with the grant, not without it, and the folder's other sockets stay
/// masked. A path that is not a socket refuses the call before anything runs.
#[test]
fn a_desktop_grant_reaches_its_wayland_socket_and_nothing_else() {
    use efr_protocol::internal::launch::DesktopSocket;
    use efr_protocol::wire::DesktopKind;

    let fx = Fixture::new(User::Nobody);
    let helper = helper().display().to_string();
    let wayland = fx.run_user.join("wayland-9");
    let _listener = UnixListener::bind(&wayland).unwrap();
    std::os::unix::fs::chown(&wayland, Some(support::NOBODY), Some(support::NOBODY)).unwrap();
    let line = format!(
        "{helper} unix {}; echo \"display=$WAYLAND_DISPLAY\"; {helper} unix {}",
        wayland.display(),
        fx.bus.display()
    );
    let grant = |plan: &mut efr_protocol::internal::LaunchPlan, path: &Path| {
        plan.grants.push(Grant::Desktop {
            desktop: DesktopKind::Wayland,
        });
        plan.desktop_sockets.push(DesktopSocket {
            desktop: DesktopKind::Wayland,
            path: path.to_path_buf(),
        });
        plan.env.insert("WAYLAND_DISPLAY".into(), "wayland-9".into());
        plan.env
            .insert("XDG_RUNTIME_DIR".into(), fx.run_user.display().to_string());
    };

    let run = fx.run(&fx.plan(&line));
    let lines: Vec<&str> = ran(&run).stdout.lines().collect();
    assert!(
        lines[0].starts_with("fail"),
        "reachable without the grant:\n{}",
        run.describe()
    );

    let mut plan = fx.plan(&line);
    grant(&mut plan, &wayland);
    let run = fx.run(&plan);
    let lines: Vec<&str> = ran(&run).stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", run.describe());
    assert_eq!(lines[0], "ok", "{}", run.describe());
    assert_eq!(lines[1], "display=wayland-9", "{}", run.describe());
    assert!(
        lines[2].starts_with("fail"),
        "the bus socket showed:\n{}",
        run.describe()
    );

    let file = fx.run_user.join("wayland-file");
    std::fs::write(&file, "not a socket").unwrap();
    let mut plan = fx.plan(&format!("echo ran > {}/ran", fx.project.display()));
    grant(&mut plan, &file);
    let run = fx.run(&plan);
    assert_eq!(run.exited(), None, "{}", run.describe());
    assert!(run.stderr.contains("is not a socket"), "{}", run.describe());
    assert!(!fx.project.join("ran").exists(), "{}", run.describe());
}
