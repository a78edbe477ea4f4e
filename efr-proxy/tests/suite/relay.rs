//! An allowed tunnel's relay over real sockets, through the real proxy: bytes both ways byte-exact and counted,
//! half-close each way, either side going away mid-transfer ending the tunnel with no descriptor left behind, pipes
//! held only while data flows, and the bytes that came with the request head delivered first and in order.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use efr_test_support::netns::NetNs;

use super::harness::{Proxy, SERVER};

/// The host's name; it resolves to [`SERVER`] in the test's namespace.
const NAME: &str = "bytes.test";
/// The host's port: not 443, so the plan names it.
const PORT: u16 = 8443;
/// How long any one read may wait.
const READ_TIME: Duration = Duration::from_secs(30);

/// A namespace with [`NAME`] at [`SERVER`], a plain TCP listener there (the host: the proxy never looks past the
/// ClientHello), and the proxy with a plan that allows it.
struct Host {
    listener: TcpListener,
    proxy: Proxy,
    plan: efr_protocol::internal::proxy::Opened,
    hello: Vec<u8>,
    /// The pipe ends the proxy holds with no tunnel (its standard output and error may be pipes).
    idle_pipe_ends: usize,
    _netns: NetNs,
}

impl Host {
    fn new() -> Self {
        let netns = NetNs::new(&[SERVER], &[(NAME, SERVER)]).expect("the test's network namespace (needs root)");
        let listener = netns
            .run(|| TcpListener::bind(SocketAddr::new(SERVER, PORT)))
            .unwrap()
            .unwrap();
        let mut proxy = Proxy::start(&netns);
        let plan = proxy.open(&[&format!("{NAME}:{PORT}")], &[]);
        let idle_pipe_ends = pipe_ends(&proxy);
        Self {
            listener,
            proxy,
            plan,
            hello: client_hello(NAME),
            idle_pipe_ends,
            _netns: netns,
        }
    }

    /// The request head of a CONNECT to the host.
    fn head() -> Vec<u8> {
        format!("CONNECT {NAME}:{PORT} HTTP/1.1\r\nHost: {NAME}:{PORT}\r\n\r\n").into_bytes()
    }

    /// A client through the proxy: the CONNECT answered `200`, the hello sent; and the host's end, the hello read
    /// and checked.
    fn tunnel(&self) -> (UnixStream, TcpStream) {
        let mut client = UnixStream::connect(&self.plan.socket).unwrap();
        client.set_read_timeout(Some(READ_TIME)).unwrap();
        client.write_all(&Self::head()).unwrap();
        expect_established(&mut client);
        client.write_all(&self.hello).unwrap();
        let host = self.accept();
        let mut hello = vec![0_u8; self.hello.len()];
        (&host).read_exact(&mut hello).unwrap();
        assert_eq!(hello, self.hello, "the ClientHello is replayed to the host unchanged");
        (client, host)
    }

    fn accept(&self) -> TcpStream {
        let (host, _) = self.listener.accept().unwrap();
        host.set_read_timeout(Some(READ_TIME)).unwrap();
        host
    }

    /// The pipes the proxy holds for tunnels.
    fn pipes(&self) -> usize {
        (pipe_ends(&self.proxy) - self.idle_pipe_ends) / 2
    }

    /// Waits (at most 10 s) for the proxy to hold `count` descriptors; the ones it holds at the end.
    fn wait_for_fds(&self, count: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.proxy.fd_count() != count && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(20));
        }
        self.proxy.fds()
    }
}

/// The pipe ends among the proxy's descriptors.
fn pipe_ends(proxy: &Proxy) -> usize {
    proxy.fds().iter().filter(|fd| fd.starts_with("pipe:")).count()
}

fn expect_established(client: &mut UnixStream) {
    let expected = b"HTTP/1.1 200 Connection established\r\n\r\n";
    let mut head = vec![0_u8; expected.len()];
    client.read_exact(&mut head).unwrap();
    assert_eq!(String::from_utf8_lossy(&head), String::from_utf8_lossy(expected));
}

/// The ClientHello a rustls client sends for `name`.
fn client_hello(name: &str) -> Vec<u8> {
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    let mut client = rustls::ClientConnection::new(Arc::new(config), name.to_owned().try_into().unwrap()).unwrap();
    let mut hello = Vec::new();
    client.write_tls(&mut hello).unwrap();
    hello
}

/// `len` pseudo-random bytes (xorshift64*, seeded by the clock): no two runs carry the same payload.
fn random_bytes(len: usize) -> Vec<u8> {
    let mut state = u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
            & u128::from(u64::MAX),
    )
    .unwrap()
        | 1;
    let mut bytes = Vec::with_capacity(len + 8);
    while bytes.len() < len {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        bytes.extend_from_slice(&state.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

fn read_to_end(mut stream: impl Read) -> Vec<u8> {
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).unwrap();
    bytes
}

/// The first position where two byte strings differ, for a readable failure.
fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .or((a.len() != b.len()).then(|| a.len().min(b.len())))
}

#[test]
fn megabytes_cross_both_ways_byte_exact_and_the_counts_are_exact() {
    let mut host = Host::new();
    let up = random_bytes(9 << 20);
    let down = random_bytes(7 << 20);
    let (client, server) = host.tunnel();
    // Both ways at once, each side writing from one thread and reading on another.
    let (got_up, got_down) = thread::scope(|scope| {
        let writer = {
            let client = client.try_clone().unwrap();
            let up = &up;
            scope.spawn(move || {
                (&client).write_all(up).unwrap();
                client.shutdown(Shutdown::Write).unwrap();
            })
        };
        let server_writer = {
            let server = server.try_clone().unwrap();
            let down = &down;
            scope.spawn(move || {
                (&server).write_all(down).unwrap();
                server.shutdown(Shutdown::Write).unwrap();
            })
        };
        let server_reader = scope.spawn(|| read_to_end(&server));
        let got_down = read_to_end(&client);
        writer.join().unwrap();
        server_writer.join().unwrap();
        (server_reader.join().unwrap(), got_down)
    });
    assert_eq!(
        first_difference(&got_up, &up),
        None,
        "the host got every byte, in order"
    );
    assert_eq!(
        first_difference(&got_down, &down),
        None,
        "the client got every byte, in order"
    );
    let closed = host.proxy.close(host.plan.plan);
    assert_eq!(closed.tunnels, 1);
    assert_eq!(
        closed.bytes_sent,
        (host.hello.len() + up.len()) as u64,
        "the hello and the payload"
    );
    assert_eq!(closed.bytes_received, down.len() as u64);
}

#[test]
fn the_client_ending_its_side_reaches_the_host_and_the_answer_still_comes_back() {
    let mut host = Host::new();
    let (mut client, mut server) = host.tunnel();
    client.write_all(b"the whole question").unwrap();
    client.shutdown(Shutdown::Write).unwrap();
    // The host sees the end of the question: the proxy shut down its side.
    assert_eq!(read_to_end(&server), b"the whole question");
    server.write_all(b"an answer after the end").unwrap();
    server.shutdown(Shutdown::Write).unwrap();
    assert_eq!(read_to_end(&client), b"an answer after the end");
    let closed = host.proxy.close(host.plan.plan);
    assert_eq!(closed.bytes_sent, (host.hello.len() + 18) as u64);
    assert_eq!(closed.bytes_received, 23);
}

#[test]
fn the_host_ending_its_side_reaches_the_client_and_the_client_can_still_send() {
    let mut host = Host::new();
    let (mut client, mut server) = host.tunnel();
    server.write_all(b"everything the host says").unwrap();
    server.shutdown(Shutdown::Write).unwrap();
    assert_eq!(read_to_end(&client), b"everything the host says");
    client.write_all(b"sent after the host's end").unwrap();
    client.shutdown(Shutdown::Write).unwrap();
    assert_eq!(read_to_end(&server), b"sent after the host's end");
    let closed = host.proxy.close(host.plan.plan);
    assert_eq!(closed.bytes_sent, (host.hello.len() + 25) as u64);
    assert_eq!(closed.bytes_received, 24);
}

#[test]
fn the_host_resetting_mid_transfer_ends_the_tunnel_and_leaves_no_descriptor() {
    let host = Host::new();
    let before = host.proxy.fd_count();
    let (client, server) = host.tunnel();
    // The client streams without end; the host reads some of it, then resets the connection.
    let writer = thread::spawn(move || {
        let chunk = vec![0x42_u8; 64 * 1024];
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut client = client;
        while Instant::now() < deadline {
            if client.write_all(&chunk).is_err() {
                return true;
            }
        }
        false
    });
    let mut some = vec![0_u8; 4 << 20];
    (&server).read_exact(&mut some).unwrap();
    assert_eq!(
        host.pipes(),
        1,
        "the data flows through a pipe: splice, allowed by the seccomp filter ({:?})",
        host.proxy.fds()
    );
    reset(&server);
    drop(server);
    assert!(
        writer.join().unwrap(),
        "the client's writes fail once the host reset the tunnel"
    );
    let fds = host.wait_for_fds(before);
    assert_eq!(fds.len(), before, "descriptors after the tunnel ended: {fds:?}");
}

#[test]
fn the_client_going_away_mid_transfer_ends_the_tunnel_and_leaves_no_descriptor() {
    let host = Host::new();
    let before = host.proxy.fd_count();
    let (mut client, server) = host.tunnel();
    // The host streams without end; the client reads some of it, then closes.
    let writer = thread::spawn(move || {
        let chunk = vec![0x24_u8; 64 * 1024];
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut server = server;
        while Instant::now() < deadline {
            if server.write_all(&chunk).is_err() {
                return true;
            }
        }
        false
    });
    let mut some = vec![0_u8; 4 << 20];
    client.read_exact(&mut some).unwrap();
    assert!(some.iter().all(|b| *b == 0x24));
    drop(client);
    assert!(
        writer.join().unwrap(),
        "the host's writes fail once the client went away"
    );
    let fds = host.wait_for_fds(before);
    assert_eq!(fds.len(), before, "descriptors after the tunnel ended: {fds:?}");
}

#[test]
fn an_idle_tunnel_releases_its_pipes_and_makes_them_again_for_new_data() {
    let host = Host::new();
    let (mut client, mut server) = host.tunnel();
    server.write_all(b"ping").unwrap();
    let mut four = [0_u8; 4];
    client.read_exact(&mut four).unwrap();
    assert_eq!(&four, b"ping");
    assert_eq!(host.pipes(), 1, "a pipe while data flows: {:?}", host.proxy.fds());
    // Past the idle time, with nothing sent either way, the tunnel holds no pipe.
    let deadline = Instant::now() + Duration::from_secs(10);
    while host.pipes() > 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(host.pipes(), 0, "an idle tunnel holds no pipe: {:?}", host.proxy.fds());
    client.write_all(b"again").unwrap();
    let mut five = [0_u8; 5];
    server.read_exact(&mut five).unwrap();
    assert_eq!(&five, b"again");
    server.write_all(b"pong").unwrap();
    client.read_exact(&mut four).unwrap();
    assert_eq!(&four, b"pong");
}

#[test]
fn bytes_sent_with_the_request_head_reach_the_host_first_and_in_order() {
    let mut host = Host::new();
    let mut client = UnixStream::connect(&host.plan.socket).unwrap();
    client.set_read_timeout(Some(READ_TIME)).unwrap();
    // One write: the head, the ClientHello and the first application bytes, before the proxy has answered.
    let early = random_bytes(3000);
    let mut first = Host::head();
    first.extend_from_slice(&host.hello);
    first.extend_from_slice(&early);
    client.write_all(&first).unwrap();
    expect_established(&mut client);
    let late = random_bytes(200_000);
    client.write_all(&late).unwrap();
    client.shutdown(Shutdown::Write).unwrap();
    let server = host.accept();
    let got = read_to_end(&server);
    let expected = [host.hello.as_slice(), &early, &late].concat();
    assert_eq!(
        first_difference(&got, &expected),
        None,
        "hello, early bytes, later bytes, in order"
    );
    drop(server);
    assert_eq!(read_to_end(&client), b"");
    let closed = host.proxy.close(host.plan.plan);
    assert_eq!(closed.bytes_sent, expected.len() as u64);
}

/// Closes `stream` with a reset (`SO_LINGER` of zero) rather than an orderly end.
fn reset(stream: &TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt reads `linger` for its size; the descriptor is the open stream's.
    let status = unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(stream),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast(),
            u32::try_from(std::mem::size_of::<libc::linger>()).unwrap(),
        )
    };
    assert_eq!(status, 0, "{}", std::io::Error::last_os_error());
}
