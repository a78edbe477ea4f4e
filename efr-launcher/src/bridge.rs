//! The proxy bridge: how a call with `host` grants reaches `efr-proxy` from its own network namespace
//! (docs/adr/0011-the-proxy-bridge.md).
//!
//! - The inner stage, inside the sandbox's network namespace and already confined, makes a TCP listener on
//!   `127.0.0.1` (an ephemeral port), hands it to the outer stage over a private socket pair ([`send_listener`]),
//!   closes its own copy, and execs the command with [`proxy_env`]. The listener exists before the exec, so the
//!   command's first connect queues in its backlog even before the outer stage accepts it.
//! - The outer stage runs the bridge on a thread of its own ([`Bridge`]): it accepts each connection on that
//!   listener and copies bytes both ways between it and a new connection to the plan's proxy socket. It never reads
//!   what it copies: the proxy decides.
//! - The bridge thread confines itself before it touches the listener, and its connection threads inherit that:
//!   no capabilities, no_new_privs, Landlock with no filesystem access (and no TCP bind or connect from ABI 4),
//!   and seccomp filters that allow Unix sockets only and no exec ([`crate::seccomp::bridge_filters`]). It can
//!   reach nothing but the one proxy socket, which the command can reach itself at [`PROXY_SOCKET_INSIDE`].
//! - The bridge ends with the call: the outer stage stops it when bubblewrap has ended. Its connections end when
//!   the sandbox's processes are gone (their sockets close), or with the launcher.

use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{
    AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags, SockFlag, SockType, getsockopt, recvmsg, sendmsg,
    socketpair, sockopt,
};

use crate::{privileges, ruleset, seccomp};

/// Where the call's proxy socket shows inside the sandbox (read-only bind; `/dev` is bubblewrap's own, and
/// `/dev/log` is a socket there too). The bridge itself uses the socket's path outside.
pub const PROXY_SOCKET_INSIDE: &str = "/dev/efr-proxy";

/// The most connections the bridge carries at once; one more is closed at once (the client sees the connection
/// end). A build's parallel downloads stay far below it.
pub const MAX_CONNECTIONS: usize = 256;

/// Bytes read at once in each direction of a connection.
const BUFFER: usize = 64 * 1024;

/// The stack of a connection's threads: a copy loop with its buffer on the heap.
const STACK: usize = 128 * 1024;

/// The hosts that never go through the proxy: the sandbox's own loopback.
pub const NO_PROXY: &str = "localhost,127.0.0.1,::1";

/// The environment that points the command's clients at the bridge on `port`: `HTTPS_PROXY`, `https_proxy`,
/// `HTTP_PROXY`, `http_proxy` and `ALL_PROXY` (`http://127.0.0.1:port`; curl, git, pip, npm, cargo and Python's
/// urllib read one of them), and `NO_PROXY`/`no_proxy` for the loopback.
pub fn proxy_env(port: u16) -> Vec<(&'static str, String)> {
    let url = format!("http://127.0.0.1:{port}");
    let mut env: Vec<(&'static str, String)> = ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"]
        .into_iter()
        .map(|name| (name, url.clone()))
        .collect();
    env.push(("NO_PROXY", NO_PROXY.to_owned()));
    env.push(("no_proxy", NO_PROXY.to_owned()));
    env
}

/// The inner stage's part: makes the listener on the sandbox's loopback, sends it to the outer stage on `control`,
/// and returns its port. The listener is closed here once sent (the command never holds it).
///
/// # Errors
///
/// The listener cannot be made (no loopback) or sent.
pub fn send_listener(control: &OwnedFd) -> io::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let fds = [listener.as_raw_fd()];
    sendmsg::<()>(
        control.as_raw_fd(),
        &[IoSlice::new(b"l")],
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::empty(),
        None,
    )?;
    Ok(port)
}

/// The socket pair between the outer stage and the inner stage: the outer end and the inner end (close-on-exec;
/// the outer stage makes the inner end inheritable for bubblewrap).
///
/// # Errors
///
/// The kernel's refusal.
pub fn control_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )?)
}

/// How a bridge ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BridgeEnd {
    /// The inner stage sent the listener (else the sandbox never came up, or failed first).
    pub listening: bool,
    /// Connections accepted.
    pub accepted: u64,
    /// Connections closed at once: over [`MAX_CONNECTIONS`], or the proxy socket refused them.
    pub refused: u64,
    /// Why the bridge stopped early, if it did.
    pub error: Option<String>,
}

/// A running bridge on its own confined thread. [`Bridge::stop`] ends it.
#[derive(Debug)]
pub struct Bridge {
    stop: OwnedFd,
    thread: thread::JoinHandle<BridgeEnd>,
    /// The bridge thread's id (tests read its `/proc` status by it: other tests' bridges share the name).
    #[cfg_attr(not(test), allow(dead_code))]
    tid: i32,
}

impl Bridge {
    /// Starts the bridge thread for the proxy socket `proxy` on the outer end `control` of [`control_pair`], and
    /// waits until it has confined itself.
    ///
    /// # Errors
    ///
    /// Why the thread could not start or confine itself; it then serves nothing.
    pub fn start(control: OwnedFd, proxy: PathBuf) -> Result<Self, String> {
        let (stop_r, stop_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .map_err(|e| format!("cannot make the bridge's stop pipe: {e}"))?;
        let (confined_tx, confined_rx) = mpsc::channel();
        let thread = thread::Builder::new()
            .name("proxy-bridge".into())
            .spawn(move || {
                let confined = confine();
                let ok = confined.is_ok();
                let _ = confined_tx.send((confined, nix::unistd::gettid().as_raw()));
                if ok {
                    serve(&control, &stop_r, &proxy)
                } else {
                    BridgeEnd::default()
                }
            })
            .map_err(|e| format!("cannot start the bridge thread: {e}"))?;
        match confined_rx.recv() {
            Ok((Ok(()), tid)) => Ok(Self {
                stop: stop_w,
                thread,
                tid,
            }),
            Ok((Err(message), _)) => {
                let _ = thread.join();
                Err(format!("the proxy bridge cannot confine itself: {message}"))
            }
            Err(_) => Err("the proxy bridge thread ended before it confined itself".into()),
        }
    }

    /// Stops accepting and returns what the bridge did. Connections in flight end by themselves when the sandbox's
    /// processes are gone.
    pub fn stop(self) -> BridgeEnd {
        let _ = nix::unistd::write(&self.stop, b"x");
        drop(self.stop);
        self.thread.join().unwrap_or_else(|_| BridgeEnd {
            error: Some("the bridge thread panicked".into()),
            ..BridgeEnd::default()
        })
    }
}

/// The bridge thread's own sandbox; the connection threads it starts inherit it.
fn confine() -> Result<(), String> {
    privileges::drop_thread_capabilities()?;
    efr_helper::harden::set_no_new_privs()?;
    ruleset::apply_bridge()?;
    let programs = seccomp::bridge_filters().map_err(|e| format!("cannot build the seccomp filters: {e}"))?;
    efr_helper::harden::seccomp::install(&programs)
}

/// Waits for `stop` or `fd` to be readable; true when `fd` is.
fn readable(fd: &impl AsFd, stop: &OwnedFd) -> io::Result<bool> {
    loop {
        let mut fds = [
            PollFd::new(fd.as_fd(), PollFlags::POLLIN),
            PollFd::new(stop.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(Errno::EINTR) => continue,
            Err(err) => return Err(err.into()),
        }
        let ready = |fd: &PollFd<'_>| fd.revents().is_some_and(|events| !events.is_empty());
        if ready(&fds[1]) {
            return Ok(false);
        }
        if ready(&fds[0]) {
            return Ok(true);
        }
    }
}

fn serve(control: &OwnedFd, stop: &OwnedFd, proxy: &std::path::Path) -> BridgeEnd {
    let mut end = BridgeEnd::default();
    let listener = match receive_listener(control, stop) {
        Ok(Some(listener)) => listener,
        Ok(None) => return end,
        Err(err) => {
            end.error = Some(format!("cannot receive the listener: {err}"));
            return end;
        }
    };
    end.listening = true;
    let counts = Arc::new(Counts::default());
    loop {
        match readable(&listener, stop) {
            Ok(true) => {}
            Ok(false) => break,
            Err(err) => {
                end.error = Some(format!("poll: {err}"));
                break;
            }
        }
        let client = match listener.accept() {
            Ok((client, _)) => client,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => {
                end.error = Some(format!("accept: {err}"));
                break;
            }
        };
        end.accepted += 1;
        if counts.active.load(Ordering::Acquire) >= MAX_CONNECTIONS {
            counts.refused.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        counts.active.fetch_add(1, Ordering::AcqRel);
        let guard = Active(Arc::clone(&counts));
        let proxy = proxy.to_path_buf();
        // The connect is on the connection's thread: a proxy slow to accept holds up that connection only.
        let spawned = thread::Builder::new()
            .stack_size(STACK)
            .spawn(move || match UnixStream::connect(&proxy) {
                Ok(upstream) => carry(&client, &upstream),
                // The proxy is gone: the client sees its connection end (efrd reports why the proxy is gone).
                Err(_) => {
                    guard.0.refused.fetch_add(1, Ordering::Relaxed);
                    drop(guard);
                }
            });
        if spawned.is_err() {
            counts.refused.fetch_add(1, Ordering::Relaxed);
        }
    }
    end.refused = counts.refused.load(Ordering::Relaxed);
    end
}

/// What the connection threads count.
#[derive(Default)]
struct Counts {
    active: AtomicUsize,
    refused: AtomicU64,
}

/// Counts one live connection until dropped.
struct Active(Arc<Counts>);

impl Drop for Active {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Takes the listener from the inner stage's one message. `None` when the call ended first (the inner stage refused,
/// or bubblewrap failed).
fn receive_listener(control: &OwnedFd, stop: &OwnedFd) -> io::Result<Option<TcpListener>> {
    if !readable(control, stop)? {
        return Ok(None);
    }
    let mut byte = [0_u8; 1];
    let mut iov = [IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!(RawFd);
    let message = recvmsg::<()>(
        control.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )?;
    let mut received: Vec<OwnedFd> = Vec::new();
    for cmsg in message.cmsgs()? {
        if let ControlMessageOwned::ScmRights(fds) = cmsg {
            // SAFETY: SCM_RIGHTS installed these descriptors in this process for us alone.
            received.extend(fds.into_iter().map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }));
        }
    }
    if message.bytes == 0 && received.is_empty() {
        return Ok(None);
    }
    let mut fds = received.into_iter();
    let (Some(fd), None) = (fds.next(), fds.next()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "expected exactly one descriptor",
        ));
    };
    if !getsockopt(&fd, sockopt::AcceptConn)? {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the descriptor is not a listening socket",
        ));
    }
    Ok(Some(TcpListener::from(fd)))
}

/// Copies both ways until both directions end: the call's half on a thread of its own, the proxy's on this one.
fn carry(client: &TcpStream, upstream: &UnixStream) {
    let (Ok(client_rx), Ok(upstream_tx)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let outbound = thread::Builder::new().stack_size(STACK).spawn(move || {
        let ok = pump(client_rx, &upstream_tx);
        // An end is passed on as an end (the proxy sees the call's EOF); an error cuts the whole connection.
        let _ = upstream_tx.shutdown(if ok { Shutdown::Write } else { Shutdown::Both });
    });
    let ok = pump(upstream, client);
    let _ = client.shutdown(if ok { Shutdown::Write } else { Shutdown::Both });
    if let Ok(outbound) = outbound {
        let _ = outbound.join();
    }
}

/// Copies `from` into `to` until `from` ends (true) or either fails (false).
fn pump(mut from: impl Read, mut to: impl Write) -> bool {
    let mut buffer = vec![0_u8; BUFFER];
    loop {
        match from.read(&mut buffer) {
            Ok(0) => return true,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    return false;
                }
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;
    use std::time::Duration;

    use super::*;

    /// The `/proc` status lines of this process's thread named `name`.
    /// The `/proc` status of thread `tid` of this process.
    fn thread_status(tid: i32) -> String {
        std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap()
    }

    fn field<'a>(status: &'a str, name: &str) -> &'a str {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name).and_then(|rest| rest.strip_prefix(':')))
            .unwrap_or_else(|| panic!("no {name} in {status}"))
            .trim()
    }

    #[test]
    fn the_bridge_is_confined_and_carries_both_ways() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("proxy.sock");
        let proxy = UnixListener::bind(&socket).unwrap();
        let (outer, inner) = control_pair().unwrap();
        let bridge = Bridge::start(outer, socket).unwrap();

        // Only the bridge's thread is confined: seccomp filters, no_new_privs, no capabilities.
        let status = thread_status(bridge.tid);
        assert!(status.starts_with("Name:\tproxy-bridge\n"), "{status}");
        assert_eq!(field(&status, "NoNewPrivs"), "1", "{status}");
        assert_eq!(field(&status, "Seccomp"), "2", "{status}");
        for caps in ["CapEff", "CapPrm", "CapInh", "CapAmb"] {
            assert_eq!(field(&status, caps), "0000000000000000", "{caps}: {status}");
        }
        if nix::unistd::geteuid().is_root() {
            assert_eq!(field(&status, "CapBnd"), "0000000000000000", "{status}");
        }
        let own = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        assert_eq!(field(&own, "Seccomp"), "0", "the test's own thread was confined too");

        // What the inner stage does: a listener, sent on the pair.
        let port = send_listener(&inner).unwrap();
        let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        client.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let (mut upstream, _) = proxy.accept().unwrap();
        upstream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        client.write_all(b"CONNECT example.test:443 HTTP/1.1\r\n\r\n").unwrap();
        let mut head = [0_u8; 37];
        upstream.read_exact(&mut head).unwrap();
        assert_eq!(&head, b"CONNECT example.test:443 HTTP/1.1\r\n\r\n");
        upstream.write_all(b"HTTP/1.1 200 OK\r\n\r\n").unwrap();
        // The proxy's end passes on as an end; the call's side stays open for its own end.
        drop(upstream);
        let mut answer = String::new();
        client.read_to_string(&mut answer).unwrap();
        assert_eq!(answer, "HTTP/1.1 200 OK\r\n\r\n");
        drop(client);

        let end = bridge.stop();
        assert_eq!(
            end,
            BridgeEnd {
                listening: true,
                accepted: 1,
                refused: 0,
                error: None
            }
        );
    }

    #[test]
    fn a_bridge_whose_call_never_came_up_stops_cleanly() {
        let (outer, inner) = control_pair().unwrap();
        let bridge = Bridge::start(outer, "/nonexistent/proxy.sock".into()).unwrap();
        drop(inner);
        assert_eq!(bridge.stop(), BridgeEnd::default());
    }

    #[test]
    fn the_environment_names_the_bridge_for_every_client() {
        let env = proxy_env(40123);
        let value = |name: &str| env.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str());
        for name in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"] {
            assert_eq!(value(name), Some("http://127.0.0.1:40123"), "{name}");
        }
        assert_eq!(value("NO_PROXY"), Some("localhost,127.0.0.1,::1"));
        assert_eq!(value("no_proxy"), Some("localhost,127.0.0.1,::1"));
        assert_eq!(env.len(), 7);
    }
}
