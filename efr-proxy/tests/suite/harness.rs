//! The proxy under test: the real binary started in a test's namespace with a control socket pair, and clients.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

use efr_helper::spawn::HelperCommand;
use efr_protocol::codec::{FrameReader, FrameWriter};
use efr_protocol::error::ErrorBody;
use efr_protocol::frame::ServerFrame;
use efr_protocol::internal::proxy::{Closed, Opened};
use efr_test_support::netns::NetNs;
use efr_test_support::tls::{TestCa, TlsServer};
use serde_json::{Value, json};

/// The test server's public address, on the namespace's loopback.
pub const SERVER: IpAddr = IpAddr::V4(Ipv4Addr::new(11, 0, 0, 1));

/// A namespace with the test server's address and the battery's names, a TLS server for `allowed.test` and
/// `other.test` on 443, and its CA.
pub struct World {
    pub server: TlsServer,
    pub ca: TestCa,
    pub netns: NetNs,
}

impl World {
    pub fn new() -> Self {
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        let netns = NetNs::new(
            &[SERVER],
            &[
                ("allowed.test", SERVER),
                ("other.test", SERVER),
                ("loop.test", ip("127.0.0.1")),
                ("private.test", ip("10.1.2.3")),
                ("cgnat.test", ip("100.64.1.1")),
                ("metadata.test", ip("169.254.169.254")),
                ("v6loop.test", ip("::1")),
                ("mixed.test", SERVER),
                ("mixed.test", ip("192.168.1.1")),
            ],
        )
        .expect("the test's network namespace (needs root and iproute2)");
        let ca = TestCa::new().unwrap();
        let server = TlsServer::start(&netns, (SERVER, 443).into(), &ca, &["allowed.test", "other.test"]).unwrap();
        Self { server, ca, netns }
    }

    pub fn client_config(&self) -> Arc<rustls::ClientConfig> {
        self.ca.client_config().unwrap()
    }

    /// The exact ClientHello a rustls client sends for `name` (with SNI, or without when `sni` is false).
    pub fn hello(&self, name: &str, sni: bool) -> Vec<u8> {
        let mut config = (*self.client_config()).clone();
        config.enable_sni = sni;
        let mut client = rustls::ClientConnection::new(Arc::new(config), name.to_owned().try_into().unwrap()).unwrap();
        let mut bytes = Vec::new();
        client.write_tls(&mut bytes).unwrap();
        bytes
    }
}

/// The unprivileged user's uid and gid (`nobody` on Debian).
const NOBODY: u32 = 65534;

/// The running proxy.
pub struct Proxy {
    child: Child,
    reader: FrameReader<UnixStream>,
    writer: FrameWriter<UnixStream>,
    control: UnixStream,
    sockets: tempfile::TempDir,
    next: u64,
}

impl Proxy {
    pub fn start(netns: &NetNs) -> Self {
        Self::start_with(
            netns.command(env!("CARGO_BIN_EXE_efr-proxy")),
            tempfile::tempdir().unwrap(),
        )
    }

    /// The proxy of a user's efrd: run as the unprivileged `nobody` (uid and gid 65534, no groups), with every
    /// capability in its bounding set as a login session has, and none in its other sets.
    pub fn start_unprivileged(netns: &NetNs) -> Self {
        let sockets = tempfile::tempdir().unwrap();
        std::os::unix::fs::chown(sockets.path(), Some(NOBODY), Some(NOBODY)).unwrap();
        let mut command = netns.command("setpriv");
        command
            .args([
                format!("--reuid={NOBODY}"),
                format!("--regid={NOBODY}"),
                "--clear-groups".to_owned(),
                "--".to_owned(),
            ])
            .arg(env!("CARGO_BIN_EXE_efr-proxy"));
        Self::start_with(command, sockets)
    }

    fn start_with(command: std::process::Command, sockets: tempfile::TempDir) -> Self {
        let (child, ours) = HelperCommand::wrapping(command, sockets.path())
            .spawn()
            .expect("start efr-proxy");
        Self {
            child,
            reader: FrameReader::new(ours.try_clone().unwrap()),
            control: ours.try_clone().unwrap(),
            writer: FrameWriter::new(ours),
            sockets,
            next: 1,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn sockets(&self) -> &Path {
        self.sockets.path()
    }

    /// Sends raw bytes on the control socket.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_raw(bytes).unwrap();
    }

    /// Reads the next control frame.
    pub fn read(&mut self) -> ServerFrame {
        let frame = self
            .reader
            .read_frame()
            .unwrap()
            .expect("the proxy closed the control socket");
        ServerFrame::from_object(frame).unwrap()
    }

    /// A request and its answer: the item, or the error.
    pub fn request(&mut self, method: &str, params: &Value) -> Result<Value, ErrorBody> {
        let id = self.next;
        self.next += 1;
        self.writer
            .write_frame(&json!({"id": id, "method": method, "params": params}))
            .unwrap();
        match self.read() {
            ServerFrame::Item { id: got, item } => {
                assert_eq!(got, id);
                assert_eq!(self.read(), ServerFrame::End { id });
                Ok(item)
            }
            ServerFrame::Error { id: got, error } => {
                assert_eq!(got, Some(id));
                Err(error)
            }
            other => panic!("unexpected frame {other:?}"),
        }
    }

    pub fn open(&mut self, allow: &[&str], deny: &[&str]) -> Opened {
        let item = self
            .request("proxy.open", &json!({"call": "test", "allow": allow, "deny": deny}))
            .unwrap();
        serde_json::from_value(item).unwrap()
    }

    pub fn close(&mut self, plan: u64) -> Closed {
        let item = self.request("proxy.close", &json!({"plan": plan})).unwrap();
        serde_json::from_value(item).unwrap()
    }

    pub fn fd_count(&self) -> usize {
        self.fds().len()
    }

    /// What the proxy's descriptors point at (`socket:[...]`, `anon_inode:[eventpoll]`, ...).
    pub fn fds(&self) -> Vec<String> {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .unwrap()
            .map(|entry| {
                std::fs::read_link(entry.unwrap().path()).map_or_else(|e| e.to_string(), |p| p.display().to_string())
            })
            .collect()
    }

    /// The proxy's resident memory, in KiB.
    pub fn rss_kib(&self) -> u64 {
        efr_test_support::proc::rss_kib(self.pid()).unwrap()
    }

    /// Ends the proxy by closing the control socket, as efrd's end does; its exit status.
    pub fn end(mut self) -> std::process::ExitStatus {
        let _ = self.control.shutdown(std::net::Shutdown::Both);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "efr-proxy did not exit after its control socket closed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn status_field(pid: u32, field: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
        .trim()
        .to_owned()
}

/// A client connection to a plan's socket.
pub struct Client {
    pub stream: UnixStream,
}

impl Client {
    pub fn connect(socket: &PathBuf) -> Self {
        let stream = UnixStream::connect(socket).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        Self { stream }
    }

    /// Sends a CONNECT for `target` with one Host header.
    pub fn connect_to(socket: &PathBuf, target: &str) -> Self {
        let mut client = Self::connect(socket);
        client.send(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes());
        client
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// The response head (through the empty line), byte by byte so nothing after it is consumed.
    pub fn response_head(&mut self) -> String {
        let mut head = Vec::new();
        let mut byte = [0_u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match self.stream.read(&mut byte) {
                Ok(1) => head.push(byte[0]),
                _ => break,
            }
        }
        String::from_utf8_lossy(&head).into_owned()
    }

    /// Everything until the proxy closes.
    pub fn rest(&mut self) -> Vec<u8> {
        let mut rest = Vec::new();
        let _ = self.stream.read_to_end(&mut rest);
        rest
    }
}
