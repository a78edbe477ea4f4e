//! Bench: a method call's round trip through efr-bus-proxy's filter against a direct one (docs/architecture.md,
//! "Budgets"; docs/bus.md).
//!
//! - **Round trip**: `org.freedesktop.DBus.GetId` to a real `dbus-daemon`, one call at a time, after [`WARMUP`]:
//!   [`PAIRS`] pairs of a batch of [`CALLS`] calls direct and a batch through the filter, interleaved (which side runs
//!   first alternates); the verdict is the median of the pairs' p50 ratios, printed with its spread and the load
//!   average; budget: at most [`BUDGET_RATIO`] times direct. p50 and p99 of all calls of each side beside.
//! - **Messages per second**: [`PIPELINED`] calls written in batches of [`BATCH`] before their replies are read,
//!   direct and through the filter.
//!
//! The filter is the real binary serving one socket by hand (`--listen`, the default session policy); the clients
//! are the crate's own framing and authentication ([`efr_bus_proxy::wire`], [`efr_bus_proxy::sasl`]) with zbus's
//! message types, not a zbus connection (a zbus connection stalled after `AGREE_UNIX_FD` against dbus-daemon). Every
//! step has a time limit, so a stuck peer fails the bench instead of hanging it. Prints `PASS` or `FAIL` and exits
//! with status 1 on `FAIL` or when a step fails. Run with `cargo bench -p efr-bus-proxy --bench roundtrip`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use efr_bus_proxy::serve::MAX_MESSAGE;
use efr_bus_proxy::wire::Conn;
use efr_test_support::bench::{Pairs, load_average};
use efr_test_support::dbus::DbusDaemon;
use tokio::net::UnixStream;
use zbus::message::{Message, Type};

/// Untimed calls before the timed ones.
const WARMUP: usize = 200;
/// Timed calls of each side in one pair, one at a time.
const CALLS: usize = 100;
/// Pairs of batches (2,000 timed calls of each side in all).
const PAIRS: usize = 20;
/// The filter's round trip at most this many times a direct one (docs/architecture.md, "Budgets").
const BUDGET_RATIO: f64 = 2.0;
/// Calls of each for the rate.
const PIPELINED: usize = 20_000;
/// Calls written before their replies are read.
const BATCH: usize = 500;
/// The longest any one step may take.
const STEP: Duration = Duration::from_secs(10);

fn main() -> ExitCode {
    let outcome = tokio::runtime::Runtime::new()
        .map_err(|e| format!("no runtime: {e}"))
        .and_then(|runtime| runtime.block_on(bench()));
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("FAIL: {error}");
            ExitCode::FAILURE
        }
    }
}

/// A child process ended when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn bench() -> Result<bool, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("no temporary folder: {e}"))?;
    let bus = dir.path().join("bus");
    let _daemon = DbusDaemon::start("session", &bus, false)?;
    let filtered = dir.path().join("filtered");
    let _filter = Running(
        Command::new(env!("CARGO_BIN_EXE_efr-bus-proxy"))
            .arg("--listen")
            .arg(&filtered)
            .arg("--upstream")
            .arg(format!("unix:path={}", bus.display()))
            .arg("--default")
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start efr-bus-proxy: {e}"))?,
    );
    wait_for(&filtered)?;

    let mut direct = Client::connect(&bus).await?;
    let mut through = Client::connect(&filtered).await?;
    let load = load_average();
    direct.warm_up().await?;
    through.warm_up().await?;
    // The sides in pairs, interleaved batch by batch (which runs first alternates); each pair is the medians of one
    // batch of each.
    let mut pairs = Pairs::new();
    let (mut direct_times, mut through_times) = (Vec::new(), Vec::new());
    for pair in 0..PAIRS {
        let (d, f) = if pair % 2 == 0 {
            let d = direct.round_trips().await?;
            (d, through.round_trips().await?)
        } else {
            let f = through.round_trips().await?;
            (direct.round_trips().await?, f)
        };
        pairs.push(percentile(&f, 50).as_secs_f64(), percentile(&d, 50).as_secs_f64());
        direct_times.extend(d);
        through_times.extend(f);
    }
    direct_times.sort();
    through_times.sort();
    let (d50, d99) = (percentile(&direct_times, 50), percentile(&direct_times, 99));
    let (f50, f99) = (percentile(&through_times, 50), percentile(&through_times, 99));
    let ratio = pairs.ratios();
    let pass = ratio.median <= BUDGET_RATIO;
    println!("round trip of GetId, {PAIRS} pairs of {CALLS} calls one at a time (load average {load}):");
    println!("  direct          p50 {d50:>8.1?}  p99 {d99:>8.1?}");
    println!("  through filter  p50 {f50:>8.1?}  p99 {f99:>8.1?}");
    println!(
        "  ratio of the pairs' p50s {ratio} (budget {BUDGET_RATIO}x); p99 {:.2}x",
        f99.as_secs_f64() / d99.as_secs_f64()
    );
    let direct_rate = direct.rate().await?;
    let through_rate = through.rate().await?;
    println!("messages per second, {PIPELINED} calls in batches of {BATCH} (each call and its reply):");
    println!("  direct          {direct_rate:>10.0}/s");
    println!(
        "  through filter  {through_rate:>10.0}/s  ({:.2} of direct)",
        through_rate / direct_rate
    );
    println!("{}", if pass { "PASS" } else { "FAIL" });
    Ok(pass)
}

/// Waits (at most 10 s) for a socket file.
fn wait_for(socket: &Path) -> Result<(), String> {
    let start = Instant::now();
    while !socket.exists() {
        if start.elapsed() > STEP {
            return Err(format!("{} did not appear", socket.display()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// A logged-in connection that has said Hello.
struct Client {
    conn: Conn,
    serial: u32,
    what: PathBuf,
}

impl Client {
    async fn connect(socket: &Path) -> Result<Self, String> {
        let stream = limit("connect", UnixStream::connect(socket))
            .await?
            .map_err(|e| format!("cannot connect to {}: {e}", socket.display()))?;
        let mut client = Self {
            conn: Conn::new(stream, MAX_MESSAGE),
            serial: 0,
            what: socket.to_owned(),
        };
        let uid = nix::unistd::getuid().as_raw();
        limit("the login", efr_bus_proxy::sasl::login(&mut client.conn, uid)).await??;
        client.call("Hello").await?;
        Ok(client)
    }

    fn message(&mut self, member: &str) -> Result<Message, String> {
        self.serial += 1;
        let serial = std::num::NonZeroU32::new(self.serial).ok_or("serial overflow")?;
        Message::method_call("/org/freedesktop/DBus", member)
            .and_then(|b| b.destination("org.freedesktop.DBus"))
            .and_then(|b| b.interface("org.freedesktop.DBus"))
            .map(|b| b.serial(serial))
            .and_then(|b| b.build(&()))
            .map_err(|e| format!("cannot build {member}: {e}"))
    }

    /// One call and its answer (signals in between are skipped).
    async fn call(&mut self, member: &str) -> Result<(), String> {
        let message = self.message(member)?;
        limit("a write", self.conn.send(&message))
            .await?
            .map_err(|e| format!("cannot write to {}: {e}", self.what.display()))?;
        self.answer().await
    }

    async fn answer(&mut self) -> Result<(), String> {
        loop {
            let read = limit("an answer", self.conn.read_message()).await?;
            let (message, _) = read
                .map_err(|e| format!("{}: {e}", self.what.display()))?
                .ok_or_else(|| format!("{} closed", self.what.display()))?;
            match message.message_type() {
                Type::MethodReturn => return Ok(()),
                Type::Error => return Err(format!("{} answered with an error", self.what.display())),
                _ => {}
            }
        }
    }

    async fn warm_up(&mut self) -> Result<(), String> {
        for _ in 0..WARMUP {
            self.call("GetId").await?;
        }
        Ok(())
    }

    /// [`CALLS`] calls one at a time: each one's time, sorted.
    async fn round_trips(&mut self) -> Result<Vec<Duration>, String> {
        let mut times = Vec::with_capacity(CALLS);
        for _ in 0..CALLS {
            let start = Instant::now();
            self.call("GetId").await?;
            times.push(start.elapsed());
        }
        times.sort();
        Ok(times)
    }

    /// Calls and replies per second, pipelined.
    async fn rate(&mut self) -> Result<f64, String> {
        let start = Instant::now();
        for _ in 0..PIPELINED / BATCH {
            let mut bytes = Vec::new();
            for _ in 0..BATCH {
                bytes.extend_from_slice(self.message("GetId")?.data().bytes());
            }
            limit("a batch's write", self.conn.write_raw(&bytes))
                .await?
                .map_err(|e| format!("cannot write to {}: {e}", self.what.display()))?;
            for _ in 0..BATCH {
                self.answer().await?;
            }
        }
        Ok(PIPELINED as f64 / start.elapsed().as_secs_f64())
    }
}

/// `future` with the time limit of one step.
async fn limit<T>(what: &str, future: impl std::future::Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(STEP, future)
        .await
        .map_err(|_| format!("{what} took over {STEP:?}"))
}

/// The `p`th percentile of sorted `times`.
fn percentile(times: &[Duration], p: usize) -> Duration {
    times[(times.len() * p / 100).min(times.len() - 1)]
}
