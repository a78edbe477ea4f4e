//! What the tests share: a real `dbus-daemon` on a socket of the test's own, services on it (zbus), the filter
//! serving a plan in this process or as its own binary, and raw D-Bus connections for the traps.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::collections::HashMap;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use efr_bus_proxy::policy::{Level, NamePattern, Policy, Rule};
use efr_bus_proxy::report::Refusals;
use efr_bus_proxy::serve::{MAX_MESSAGE, Plan, serve};
use efr_protocol::wire::{Bus, BusRefusal};
use efr_test_support::dbus::DbusDaemon;
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use zbus::message::Message;

/// A real dbus-daemon, ended when dropped.
pub struct RealBus {
    _dir: TempDir,
    pub socket: PathBuf,
    pub kind: Bus,
    daemon: DbusDaemon,
}

impl RealBus {
    /// Starts a session bus (`Bus::Session`) or a system-like one (`Bus::System`: the system bus's type, with a
    /// policy open to the test's user) on a socket in a new folder.
    pub fn start(kind: Bus) -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let socket = dir.path().join("bus");
        Self::start_in(kind, dir, socket)
    }

    /// The same on a given socket path (a bus that restarts where it was).
    pub fn start_at(kind: Bus, socket: &Path) -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        Self::start_in(kind, dir, socket.to_owned())
    }

    fn start_in(kind: Bus, dir: TempDir, socket: PathBuf) -> Self {
        let kind_name = if kind == Bus::System { "system" } else { "session" };
        let daemon = DbusDaemon::start(kind_name, &socket, true).expect("a real bus");
        Self {
            _dir: dir,
            socket,
            kind,
            daemon,
        }
    }

    /// The bus's address.
    pub fn address(&self) -> String {
        self.daemon.address()
    }

    /// Ends the daemon (a bus that goes away, as when the session's bus restarts).
    pub fn stop(&mut self) {
        self.daemon.stop();
    }
}

/// Waits (at most 10 s) for a socket file.
pub fn wait_for(socket: &Path) {
    let start = Instant::now();
    while !socket.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{} did not appear",
            socket.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The test service: the notification daemon's interface, plus what the traps need.
pub struct Notifications;

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl Notifications {
    fn get_server_information(&self) -> (String, String, String, String) {
        ("efr-test".into(), "efr".into(), "1".into(), "1.2".into())
    }

    #[allow(clippy::too_many_arguments)]
    fn notify(
        &self,
        _app: &str,
        _replaces: u32,
        _icon: &str,
        _summary: &str,
        _body: &str,
        _actions: Vec<String>,
        _hints: HashMap<String, zbus::zvariant::OwnedValue>,
        _timeout: i32,
    ) -> u32 {
        7
    }

    /// The object path the call was made on.
    #[allow(clippy::needless_pass_by_value)] // zbus hands the header by value.
    fn path(&self, #[zbus(header)] header: zbus::message::Header<'_>) -> String {
        header.path().map(ToString::to_string).unwrap_or_default()
    }

    /// The size of the file passed.
    #[allow(clippy::needless_pass_by_value)] // zbus hands the descriptor by value.
    fn size_of(&self, fd: zbus::zvariant::Fd<'_>) -> u64 {
        let file = std::fs::File::from(fd.as_fd().try_clone_to_owned().expect("dup"));
        file.metadata().map(|m| m.len()).unwrap_or(0)
    }

    /// A descriptor of `/dev/null`, in the reply.
    fn open_null(&self) -> zbus::zvariant::OwnedFd {
        zbus::zvariant::OwnedFd::from(std::os::fd::OwnedFd::from(
            std::fs::File::open("/dev/null").expect("open /dev/null"),
        ))
    }

    /// Answers after two seconds.
    async fn slow(&self) -> u32 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        1
    }
}

/// A path of 300 bytes, over the 255 that some filters assumed.
pub fn long_path() -> String {
    format!("/org/freedesktop/Notifications/{}", "a".repeat(269))
}

/// A connection to the real bus owning `name`, serving [`Notifications`] at its usual path and at [`long_path`].
pub async fn service(bus: &RealBus, name: &str) -> zbus::Connection {
    zbus::connection::Builder::address(bus.address().as_str())
        .expect("an address")
        .name(name.to_owned())
        .expect("a name")
        .serve_at("/org/freedesktop/Notifications", Notifications)
        .expect("an object")
        .serve_at(long_path(), Notifications)
        .expect("an object")
        .build()
        .await
        .expect("the service connects")
}

/// A plan served in this process, so that the test reads its refusals.
pub struct Filtered {
    pub socket: PathBuf,
    pub refusals: Arc<Refusals>,
    _dir: TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl Filtered {
    /// Serves `policy` onto `bus` (messages up to `max_message` bytes).
    pub fn start(bus: &RealBus, policy: Policy, max_message: usize) -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let socket = dir.path().join("filtered");
        let listener = tokio::net::UnixListener::bind(&socket).expect("listen");
        let refusals = Arc::new(Refusals::new(bus.kind));
        let plan = Plan {
            upstream: bus.socket.clone(),
            policy: Arc::new(policy),
            refusals: Arc::clone(&refusals),
            max_message,
            uid: nix::unistd::getuid().as_raw(),
            connections: std::sync::atomic::AtomicU64::new(0),
            clients: Default::default(),
        };
        let task = tokio::spawn(serve(listener, Arc::new(plan)));
        Self {
            socket,
            refusals,
            _dir: dir,
            task,
        }
    }

    /// The default session policy, plus SEE of `org.example.Seen`.
    pub fn default_on(bus: &RealBus) -> Self {
        let mut policy = Policy::session_default();
        policy.names.push((name("org.example.Seen"), Level::See));
        Self::start(bus, policy, MAX_MESSAGE)
    }

    /// The address of the filtered socket.
    pub fn address(&self) -> String {
        format!("unix:path={}", self.socket.display())
    }

    /// The refusals so far.
    pub fn refused(&self) -> (Vec<BusRefusal>, u64) {
        self.refusals.snapshot()
    }

    /// A zbus client connection through the filter (zbus pipelines AUTH, BEGIN and Hello).
    pub async fn zbus(&self) -> zbus::Connection {
        zbus::connection::Builder::address(self.address().as_str())
            .expect("an address")
            .build()
            .await
            .expect("a zbus client connects through the filter")
    }
}

impl Drop for Filtered {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub fn name(text: &str) -> NamePattern {
    NamePattern::parse(text).expect("a name pattern")
}

pub fn rule(text: &str) -> Rule {
    Rule::parse(text).expect("a rule")
}

/// Runs a client program with the session (or system) bus pointed at `address`; its status, stdout and stderr.
pub async fn run(program: &str, args: &[&str], bus: Bus, address: &str) -> (bool, String, String) {
    let variable = if bus == Bus::System {
        "DBUS_SYSTEM_BUS_ADDRESS"
    } else {
        "DBUS_SESSION_BUS_ADDRESS"
    };
    let output = tokio::time::timeout(
        Duration::from_secs(20),
        tokio::process::Command::new(program)
            .args(args)
            .env(variable, address)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("{program} did not end in 20 s"))
    .unwrap_or_else(|e| panic!("{program} is missing ({e}): cargo xtask ci installs it"));
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A connection by hand: the traps need bytes no library sends.
pub struct Raw {
    pub stream: UnixStream,
    buf: Vec<u8>,
}

impl Raw {
    /// Connects without authenticating.
    pub async fn connect(socket: &Path) -> Self {
        Self {
            stream: UnixStream::connect(socket).await.expect("connect"),
            buf: Vec::new(),
        }
    }

    /// Authenticates and says Hello in one write (pipelined, as zbus and sd-bus do); returns the unique name.
    pub async fn pipelined(socket: &Path) -> (Self, String) {
        let mut raw = Self::connect(socket).await;
        let mut bytes = b"\0AUTH EXTERNAL 30\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n".to_vec();
        bytes.extend_from_slice(
            call(
                "org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus",
                "Hello",
                1,
            )
            .data()
            .bytes(),
        );
        raw.stream.write_all(&bytes).await.expect("write");
        assert!(raw.line().await.starts_with("OK "));
        assert_eq!(raw.line().await, "AGREE_UNIX_FD");
        let reply = raw.message().await.expect("the Hello reply");
        assert_eq!(reply.header().reply_serial().map(std::num::NonZeroU32::get), Some(1));
        let unique: String = reply.body().deserialize().expect("a unique name");
        (raw, unique)
    }

    /// Reads one authentication line.
    pub async fn line(&mut self) -> String {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line: Vec<u8> = self.buf.drain(..end + 2).take(end).collect();
                return String::from_utf8(line).expect("a text line");
            }
            self.fill().await;
        }
    }

    async fn fill(&mut self) -> usize {
        let mut chunk = vec![0_u8; 65536];
        let read = tokio::time::timeout(Duration::from_secs(10), self.stream.read(&mut chunk))
            .await
            .expect("the filter answers within 10 s");
        // A reset is the filter closing with bytes of ours unread: the end, as for the tests.
        let n = match read {
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => 0,
            read => read.expect("read"),
        };
        self.buf.extend_from_slice(&chunk[..n]);
        n
    }

    /// Reads the next message (not NameAcquired); `None` when the filter closed the connection.
    pub async fn message(&mut self) -> Option<Message> {
        loop {
            while self.buf.len() < 16 || self.buf.len() < frame_len(&self.buf) {
                if self.fill().await == 0 {
                    return None;
                }
            }
            let len = frame_len(&self.buf);
            let bytes: Vec<u8> = self.buf.drain(..len).collect();
            let data = zbus::zvariant::serialized::Data::new(
                bytes,
                zbus::zvariant::serialized::Context::new_dbus(zbus::zvariant::Endian::Little, 0),
            );
            // SAFETY: the bytes are the filter's output, parsed and checked by zbus; no descriptors.
            let message = unsafe { Message::from_bytes(data) }.expect("a message");
            if message.header().member().map(zbus::names::MemberName::as_str) != Some("NameAcquired") {
                return Some(message);
            }
        }
    }

    /// Splits into a reader (this) and the socket's write half.
    pub fn split(self) -> (RawReader, tokio::net::unix::OwnedWriteHalf) {
        let (read, write) = self.stream.into_split();
        (RawReader { read, buf: self.buf }, write)
    }

    /// Sends a message as is.
    pub async fn send(&mut self, message: &Message) {
        self.stream.write_all(message.data().bytes()).await.expect("write");
    }
}

fn frame_len(buf: &[u8]) -> usize {
    let u = |at: usize| u32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]) as usize;
    (16 + u(12)).next_multiple_of(8) + u(4)
}

/// A little-endian method call with this serial and no body.
pub fn call(destination: &str, path: &str, interface: &str, member: &str, serial: u32) -> Message {
    Message::method_call(path, member)
        .and_then(|b| b.destination(destination))
        .and_then(|b| b.interface(interface))
        .map(|b| {
            b.endian(zbus::zvariant::Endian::Little)
                .serial(std::num::NonZeroU32::new(serial).expect("non-zero"))
        })
        .and_then(|b| b.build(&()))
        .expect("a call")
}

/// The same with a body.
pub fn call_with<B>(destination: &str, path: &str, interface: &str, member: &str, serial: u32, body: &B) -> Message
where
    B: serde::Serialize + zbus::zvariant::DynamicType,
{
    Message::method_call(path, member)
        .and_then(|b| b.destination(destination))
        .and_then(|b| b.interface(interface))
        .map(|b| {
            b.endian(zbus::zvariant::Endian::Little)
                .serial(std::num::NonZeroU32::new(serial).expect("non-zero"))
        })
        .and_then(|b| b.build(body))
        .expect("a call")
}

/// The error name of a reply, `None` for a method return.
pub fn error_name(message: &Message) -> Option<String> {
    message.header().error_name().map(ToString::to_string)
}

/// Whether `refused` has an entry for `name` (and `member`), and with which count.
pub fn count(refused: &[BusRefusal], name: &str, member: Option<&str>) -> u64 {
    refused
        .iter()
        .filter(|r| r.name == name && (member.is_none() || r.member.as_deref() == member))
        .map(|r| r.count)
        .sum()
}

/// The read half of a [`Raw`] connection.
pub struct RawReader {
    read: tokio::net::unix::OwnedReadHalf,
    buf: Vec<u8>,
}

impl RawReader {
    /// The next message; `None` at the end.
    pub async fn message(&mut self) -> Option<Message> {
        loop {
            while self.buf.len() < 16 || self.buf.len() < frame_len(&self.buf) {
                let mut chunk = vec![0_u8; 65536];
                let n = tokio::time::timeout(Duration::from_secs(10), self.read.read(&mut chunk))
                    .await
                    .expect("the filter answers within 10 s")
                    .expect("read");
                if n == 0 {
                    return None;
                }
                self.buf.extend_from_slice(&chunk[..n]);
            }
            let len = frame_len(&self.buf);
            let bytes: Vec<u8> = self.buf.drain(..len).collect();
            let data = zbus::zvariant::serialized::Data::new(
                bytes,
                zbus::zvariant::serialized::Context::new_dbus(zbus::zvariant::Endian::Little, 0),
            );
            // SAFETY: the bytes are the filter's output, parsed and checked by zbus; no descriptors.
            let message = unsafe { Message::from_bytes(data) }.expect("a message");
            if message.header().member().map(zbus::names::MemberName::as_str) != Some("NameAcquired") {
                return Some(message);
            }
        }
    }
}
