//! Bench: efr-proxy's tunnel against a direct connection (docs/architecture.md, "Budgets").
//!
//! - **Throughput**: 1 GiB written through a tunnel (Unix socket → efr-proxy → TCP) against the same written over
//!   a direct loopback TCP connection to the same sink; budget: the tunnel at least 80% of direct. [`RUNS`] pairs,
//!   the sides interleaved run by run; the verdict is the median of the per-pair ratios, printed with its spread and
//!   the load average. A run of 256 MiB direct lasted 50 to 250 ms, and its rate jumped between about 1.5 and 5
//!   GiB/s with where the scheduler put its two threads; a GiB a run averages that out (docs/adr/0010-efr-proxy.md,
//!   "Measurements").
//! - **Connect latency**: from connecting to the first byte back (the ClientHello sent, one byte answered), through
//!   the proxy (CONNECT, `200`, the SNI check, one resolution, the connection) and direct; p50 and p99 of each and
//!   what the proxy adds.
//! - **Memory**: efr-proxy's RSS idle (one plan open) and with [`OPEN_TUNNELS`] tunnels open, and the pipes it holds
//!   for them just opened and once idle (the relay releases an idle direction's pipe).
//!
//! It runs as the tests do: the real binary, hardened, in a network namespace of its own with the sink at a public
//! address on its loopback (root is needed). Prints `PASS` or `FAIL` and exits with status 1 on `FAIL`. Run with
//! `cargo bench -p efr-proxy --bench tunnel`.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, ExitCode};
use std::sync::Arc;
use std::time::{Duration, Instant};

use efr_helper::spawn::HelperCommand;
use efr_protocol::codec::{FrameReader, FrameWriter};
use efr_protocol::internal::proxy::Opened;
use efr_test_support::bench::{Pairs, load_average};
use efr_test_support::netns::NetNs;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The throughput budget: the tunnel's rate over the direct rate.
const BUDGET_RATIO: f64 = 0.8;
/// Bytes per throughput run.
const TRANSFER: usize = 1 << 30;
/// Throughput pairs (16 GiB through each side in all).
const RUNS: usize = 16;
/// Timed connections of each for the latency.
const LATENCY_RUNS: usize = 300;
/// Tunnels held open for the memory figure.
const OPEN_TUNNELS: usize = 1000;
/// The sink's public address on the namespace's loopback.
const SINK: IpAddr = IpAddr::V4(Ipv4Addr::new(11, 0, 0, 1));
/// The sink's name.
const NAME: &str = "bench.test";
/// The size of each write.
const CHUNK: usize = 64 * 1024;

fn main() -> ExitCode {
    match bench() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("tunnel: {err}");
            ExitCode::FAILURE
        }
    }
}

type Result<T> = std::result::Result<T, String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn bench() -> Result<bool> {
    raise_nofile()?;
    let netns = NetNs::new(&[SINK], &[(NAME, SINK)]).map_err(err)?;
    let sink = start_sink(&netns)?;
    let mut proxy = Proxy::start(&netns)?;
    let plan = proxy.open(NAME)?;
    let hello = client_hello()?;

    // Throughput: the two sides in pairs, run by run; the verdict is the median of the pairs' ratios.
    let load = load_average();
    let payload = vec![0x5a_u8; CHUNK];
    let pairs = Pairs::interleaved(
        RUNS,
        || -> Result<f64> {
            let mut tunnel = tunnel_to(&plan.socket, &hello)?;
            let through = transfer(&mut tunnel, &payload, |s| s.shutdown(std::net::Shutdown::Write))?;
            Ok(rate(through))
        },
        || -> Result<f64> {
            let direct = netns
                .run(|| -> Result<Duration> {
                    let mut stream = TcpStream::connect(sink).map_err(err)?;
                    stream.set_nodelay(true).map_err(err)?;
                    handshake(&mut stream, &hello)?;
                    transfer(&mut stream, &payload, |s| s.shutdown(std::net::Shutdown::Write))
                })
                .map_err(err)??;
            Ok(rate(direct))
        },
    )?;
    let ratio = pairs.ratios();
    let pass = ratio.median >= BUDGET_RATIO;
    println!(
        "tunnel throughput: {:.0} MiB/s through efr-proxy, {:.0} MiB/s direct (medians of {RUNS} pairs of {} MiB); \
         ratio {ratio} (budget >= {BUDGET_RATIO}); load average {load} {}",
        pairs.a().median,
        pairs.b().median,
        TRANSFER >> 20,
        if pass { "PASS" } else { "FAIL" }
    );

    // Connect latency.
    let mut direct = Vec::with_capacity(LATENCY_RUNS);
    let mut through = Vec::with_capacity(LATENCY_RUNS);
    for _ in 0..LATENCY_RUNS {
        direct.push(
            netns
                .run(|| -> Result<Duration> {
                    let started = Instant::now();
                    let mut stream = TcpStream::connect(sink).map_err(err)?;
                    stream.set_nodelay(true).map_err(err)?;
                    handshake(&mut stream, &hello)?;
                    Ok(started.elapsed())
                })
                .map_err(err)??,
        );
        let started = Instant::now();
        let _tunnel = tunnel_to(&plan.socket, &hello)?;
        through.push(started.elapsed());
    }
    direct.sort();
    through.sort();
    let pct = |runs: &[Duration], p: usize| runs[(runs.len() * p / 100).min(runs.len() - 1)];
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "connect latency: through efr-proxy p50 {:.0} µs, p99 {:.0} µs; direct p50 {:.0} µs, p99 {:.0} µs; CONNECT adds p50 {:.0} µs, p99 {:.0} µs ({LATENCY_RUNS} connections each)",
        micros(pct(&through, 50)),
        micros(pct(&through, 99)),
        micros(pct(&direct, 50)),
        micros(pct(&direct, 99)),
        micros(pct(&through, 50)) - micros(pct(&direct, 50)),
        micros(pct(&through, 99)) - micros(pct(&direct, 99)),
    );

    // Memory.
    // The latency's last tunnels end and release their pipes first.
    std::thread::sleep(efr_proxy::relay::PIPE_IDLE * 2);
    let idle = proxy.rss_kib()?;
    let own_pipe_ends = proxy.pipe_ends()?;
    let mut open = Vec::with_capacity(OPEN_TUNNELS);
    for _ in 0..OPEN_TUNNELS {
        open.push(tunnel_to(&plan.socket, &hello)?);
    }
    let loaded = proxy.rss_kib()?;
    let pipes = proxy.pipe_ends()?.saturating_sub(own_pipe_ends) / 2;
    println!(
        "efr-proxy RSS: {:.1} MiB idle, {:.1} MiB with {OPEN_TUNNELS} open tunnels ({:.1} KiB per tunnel)",
        idle as f64 / 1024.0,
        loaded as f64 / 1024.0,
        loaded.saturating_sub(idle) as f64 / OPEN_TUNNELS as f64
    );
    // Each tunnel's answer (one byte) made a pipe; an idle direction releases its pipe.
    std::thread::sleep(efr_proxy::relay::PIPE_IDLE * 2);
    println!(
        "efr-proxy pipes with {OPEN_TUNNELS} open tunnels: {pipes} just opened, {} after {:?} idle; RSS then {:.1} MiB",
        proxy.pipe_ends()?.saturating_sub(own_pipe_ends) / 2,
        efr_proxy::relay::PIPE_IDLE * 2,
        proxy.rss_kib()? as f64 / 1024.0
    );
    drop(open);
    let closed = proxy.close(plan.plan)?;
    println!(
        "plan closed: {} tunnels, {} bytes sent, {} refusals",
        closed["tunnels"],
        closed["bytes_sent"],
        closed["blocked"].as_array().map_or(0, Vec::len)
    );
    Ok(pass)
}

/// MiB/s of one [`TRANSFER`] that took `took`.
fn rate(took: Duration) -> f64 {
    TRANSFER as f64 / took.as_secs_f64() / f64::from(1 << 20)
}

/// Writes [`TRANSFER`] bytes, ends the write side, and waits for the sink to close (it has read everything).
fn transfer<S: Read + Write>(
    stream: &mut S,
    payload: &[u8],
    shutdown: impl FnOnce(&S) -> std::io::Result<()>,
) -> Result<Duration> {
    let started = Instant::now();
    let mut left = TRANSFER;
    while left > 0 {
        let n = left.min(payload.len());
        stream.write_all(&payload[..n]).map_err(err)?;
        left -= n;
    }
    shutdown(stream).map_err(err)?;
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).map_err(err)?;
    Ok(started.elapsed())
}

/// Sends the ClientHello and waits for the sink's one byte.
fn handshake<S: Read + Write>(stream: &mut S, hello: &[u8]) -> Result<()> {
    stream.write_all(hello).map_err(err)?;
    let mut byte = [0_u8; 1];
    stream.read_exact(&mut byte).map_err(err)
}

/// A tunnel through the plan's socket, the hello sent and answered.
fn tunnel_to(socket: &Path, hello: &[u8]) -> Result<UnixStream> {
    let mut stream = UnixStream::connect(socket).map_err(err)?;
    stream
        .write_all(format!("CONNECT {NAME}:443 HTTP/1.1\r\nHost: {NAME}:443\r\n\r\n").as_bytes())
        .map_err(err)?;
    let expected = b"HTTP/1.1 200 Connection established\r\n\r\n";
    let mut head = vec![0_u8; expected.len()];
    stream.read_exact(&mut head).map_err(err)?;
    if head != expected {
        return Err(format!("the proxy answered {:?}", String::from_utf8_lossy(&head)));
    }
    handshake(&mut stream, hello)?;
    Ok(stream)
}

/// A ClientHello for [`NAME`], as rustls sends it.
fn client_hello() -> Result<Vec<u8>> {
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(err)?
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    let mut client = rustls::ClientConnection::new(Arc::new(config), NAME.try_into().map_err(err)?).map_err(err)?;
    let mut hello = Vec::new();
    client.write_tls(&mut hello).map_err(err)?;
    Ok(hello)
}

/// The sink, on 443 inside the namespace: per connection, reads the first bytes, answers one byte, then reads
/// everything until the end and closes.
fn start_sink(netns: &NetNs) -> Result<SocketAddr> {
    let listener = netns
        .run(|| std::net::TcpListener::bind(SocketAddr::new(SINK, 443)))
        .map_err(err)?
        .map_err(err)?;
    let addr = listener.local_addr().map_err(err)?;
    listener.set_nonblocking(true).map_err(err)?;
    std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            return;
        };
        runtime.block_on(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let _ = stream.set_nodelay(true);
                    let mut buf = vec![0_u8; 256 * 1024];
                    if stream.read(&mut buf).await.unwrap_or(0) == 0 || stream.write_all(b"k").await.is_err() {
                        return;
                    }
                    while stream.read(&mut buf).await.unwrap_or(0) > 0 {}
                });
            }
        });
    });
    Ok(addr)
}

struct Proxy {
    child: Child,
    reader: FrameReader<UnixStream>,
    writer: FrameWriter<UnixStream>,
    _sockets: tempfile::TempDir,
    next: u64,
}

impl Proxy {
    fn start(netns: &NetNs) -> Result<Self> {
        let sockets = tempfile::Builder::new()
            .prefix("tunnel-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .map_err(err)?;
        let command = netns.command(env!("CARGO_BIN_EXE_efr-proxy"));
        let (child, ours) = HelperCommand::wrapping(command, sockets.path())
            .spawn()
            .map_err(|e| format!("cannot start efr-proxy: {e}"))?;
        Ok(Self {
            child,
            reader: FrameReader::new(ours.try_clone().map_err(err)?),
            writer: FrameWriter::new(ours),
            _sockets: sockets,
            next: 1,
        })
    }

    fn request(&mut self, method: &str, params: &serde_json::Value) -> Result<serde_json::Value> {
        let id = self.next;
        self.next += 1;
        self.writer
            .write_frame(&json!({"id": id, "method": method, "params": params}))
            .map_err(err)?;
        let mut frame = self
            .reader
            .read_frame()
            .map_err(err)?
            .ok_or("efr-proxy closed its control socket")?;
        match frame.remove("item") {
            Some(item) => {
                self.reader.read_frame().map_err(err)?;
                Ok(item)
            }
            None => Err(format!("{method}: {frame:?}")),
        }
    }

    fn open(&mut self, host: &str) -> Result<Opened> {
        let item = self.request("proxy.open", &json!({"call": "bench", "allow": [host], "deny": []}))?;
        serde_json::from_value(item).map_err(err)
    }

    fn close(&mut self, plan: u64) -> Result<serde_json::Value> {
        self.request("proxy.close", &json!({"plan": plan}))
    }

    /// The pipe ends among the proxy's descriptors (its standard output and error may be pipes too).
    fn pipe_ends(&self) -> Result<usize> {
        let mut ends = 0;
        for entry in std::fs::read_dir(format!("/proc/{}/fd", self.child.id())).map_err(err)? {
            let target = std::fs::read_link(entry.map_err(err)?.path()).map_err(err)?;
            ends += usize::from(target.to_string_lossy().starts_with("pipe:"));
        }
        Ok(ends)
    }

    fn rss_kib(&self) -> Result<u64> {
        efr_test_support::proc::rss_kib(self.child.id()).map_err(|e| format!("{e:#}"))
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn raise_nofile() -> Result<()> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write only `limit`.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) != 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        limit.rlim_cur = limit.rlim_max;
        if libc::setrlimit(libc::RLIMIT_NOFILE, &raw const limit) != 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
    }
    Ok(())
}
