//! Bench: a method call's round trip through efr-bus-proxy's filter against a direct one (docs/architecture.md,
//! "Budgets"; docs/bus.md), with xdg-dbus-proxy beside as the floor a filtering proxy reaches.
//!
//! - **Round trip**: `org.freedesktop.DBus.GetId` to a real `dbus-daemon`, one call at a time, after [`WARMUP`]:
//!   [`ROUNDS`] rounds of a batch of [`CALLS`] calls on each of three sides (direct, through efr-bus-proxy, through
//!   xdg-dbus-proxy), interleaved (the order of the sides changes round by round, [`ORDERS`]); the verdict is the
//!   median of the rounds' efr-bus-proxy / direct ratios of p50s, printed with its spread and the load average;
//!   budget: at most [`BUDGET_RATIO`] times direct. xdg-dbus-proxy / direct and efr-bus-proxy / xdg-dbus-proxy are
//!   printed beside the same way, and p50 and p99 of all calls of each side.
//! - **Messages per second**: [`PIPELINED`] calls written in batches of [`BATCH`] before their replies are read, on
//!   each side.
//!
//! The filter is the real binary serving one socket by hand (`--listen`, the default session policy), the reference
//! is `xdg-dbus-proxy --filter` with the same names (a missing xdg-dbus-proxy fails the bench; `cargo xtask ci`
//! installs it); the clients are the crate's own framing and authentication ([`efr_bus_proxy::wire`],
//! [`efr_bus_proxy::sasl`]) with zbus's message types, not a zbus connection (a zbus connection stalled after
//! `AGREE_UNIX_FD` against dbus-daemon). Every step has a time limit, so a stuck peer fails the bench instead of
//! hanging it. Prints `PASS` or `FAIL` and exits with status 1 on `FAIL` or when a step fails. Run with
//! `cargo bench -p efr-bus-proxy --bench roundtrip`.

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
/// Rounds of one batch a side (2,400 timed calls of each side in all).
const ROUNDS: usize = 24;
/// The sides, by index: direct to dbus-daemon, through efr-bus-proxy, through xdg-dbus-proxy.
const DIRECT: usize = 0;
const THROUGH: usize = 1;
const REFERENCE: usize = 2;
const NAMES: [&str; 3] = ["direct", "efr-bus-proxy", "xdg-dbus-proxy"];
/// The orders the sides run in, one a round in turn: each side runs first, second and third equally often.
const ORDERS: [[usize; 3]; 6] = [[0, 1, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0], [1, 0, 2], [0, 2, 1]];
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
    let upstream = format!("unix:path={}", bus.display());
    let filtered = dir.path().join("filtered");
    let _filter = Running(
        Command::new(env!("CARGO_BIN_EXE_efr-bus-proxy"))
            .arg("--listen")
            .arg(&filtered)
            .arg("--upstream")
            .arg(&upstream)
            .arg("--default")
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start efr-bus-proxy: {e}"))?,
    );
    // The reference: xdg-dbus-proxy with the same policy as `--default` (TALK to the notification daemon and the
    // portals). It does the same socket hops and wakeups, so its round trip is the floor a filtering proxy reaches.
    let reference = dir.path().join("reference");
    let _reference = Running(
        Command::new("xdg-dbus-proxy")
            .arg(&upstream)
            .arg(&reference)
            .args([
                "--filter",
                "--talk=org.freedesktop.Notifications",
                "--talk=org.freedesktop.portal.*",
            ])
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start xdg-dbus-proxy (apt-get install xdg-dbus-proxy): {e}"))?,
    );
    wait_for(&filtered)?;
    wait_for(&reference)?;

    let mut sides = [
        Client::connect(&bus).await?,
        Client::connect(&filtered).await?,
        Client::connect(&reference).await?,
    ];
    let load = load_average();
    for side in &mut sides {
        side.warm_up().await?;
    }
    // The sides in rounds, interleaved batch by batch (each order of the three in turn); each pair is the medians of
    // one batch of each side in the same round.
    let (mut pairs, mut floor, mut beside) = (Pairs::new(), Pairs::new(), Pairs::new());
    let mut times: [Vec<Duration>; 3] = Default::default();
    for round in 0..ROUNDS {
        let mut p50 = [0.0; 3];
        for side in ORDERS[round % ORDERS.len()] {
            let batch = sides[side].round_trips().await?;
            p50[side] = percentile(&batch, 50).as_secs_f64();
            times[side].extend(batch);
        }
        pairs.push(p50[THROUGH], p50[DIRECT]);
        floor.push(p50[REFERENCE], p50[DIRECT]);
        beside.push(p50[THROUGH], p50[REFERENCE]);
    }
    for side in &mut times {
        side.sort();
    }
    let ratio = pairs.ratios();
    let pass = ratio.median <= BUDGET_RATIO;
    println!("round trip of GetId, {ROUNDS} rounds of {CALLS} calls one at a time a side (load average {load}):");
    for (side, name) in NAMES.iter().enumerate() {
        println!(
            "  {name:<16} p50 {:>8.1?}  p99 {:>8.1?}",
            percentile(&times[side], 50),
            percentile(&times[side], 99)
        );
    }
    let p99 = |side: usize| percentile(&times[side], 99).as_secs_f64();
    println!(
        "  efr-bus-proxy / direct, the pairs' p50s: {ratio} (budget {BUDGET_RATIO}x); p99 {:.2}x",
        p99(THROUGH) / p99(DIRECT)
    );
    println!(
        "  xdg-dbus-proxy / direct (the floor): {}; p99 {:.2}x",
        floor.ratios(),
        p99(REFERENCE) / p99(DIRECT)
    );
    println!("  efr-bus-proxy / xdg-dbus-proxy: {}", beside.ratios());
    println!("messages per second, {PIPELINED} calls in batches of {BATCH} (each call and its reply):");
    let direct_rate = sides[DIRECT].rate().await?;
    for (side, name) in NAMES.iter().enumerate() {
        let rate = if side == DIRECT {
            direct_rate
        } else {
            sides[side].rate().await?
        };
        println!("  {name:<16} {rate:>10.0}/s  ({:.2} of direct)", rate / direct_rate);
    }
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
        limit("the login", client.login()).await??;
        client.call("Hello").await?;
        Ok(client)
    }

    /// AUTH EXTERNAL, NEGOTIATE_UNIX_FD and BEGIN, each after the answer to the one before: Debian 12's
    /// xdg-dbus-proxy drops commands sent in one write (the three sides log in alike; the login is not timed).
    async fn login(&mut self) -> Result<(), String> {
        let uid = nix::unistd::getuid().as_raw();
        let hex: String = uid.to_string().bytes().map(|b| format!("{b:02x}")).collect();
        let steps = [
            (format!("\0AUTH EXTERNAL {hex}\r\n"), "OK "),
            ("NEGOTIATE_UNIX_FD\r\n".to_owned(), "AGREE_UNIX_FD"),
        ];
        for (command, answer) in steps {
            self.conn
                .write_raw(command.as_bytes())
                .await
                .map_err(|e| format!("cannot write to {}: {e}", self.what.display()))?;
            let line = self.line().await?;
            if !line.starts_with(answer) {
                return Err(format!("{} answered {line:?} to {command:?}", self.what.display()));
            }
        }
        self.conn
            .write_raw(b"BEGIN\r\n")
            .await
            .map_err(|e| format!("cannot write to {}: {e}", self.what.display()))
    }

    /// One line of the authentication.
    async fn line(&mut self) -> Result<String, String> {
        loop {
            let buffer = self.conn.buffer();
            if let Some(end) = buffer.windows(2).position(|w| w == b"\r\n") {
                let line: Vec<u8> = buffer.drain(..end + 2).take(end).collect();
                return Ok(String::from_utf8_lossy(&line).into_owned());
            }
            if self.conn.is_closed() {
                return Err(format!("{} closed during the login", self.what.display()));
            }
            self.conn
                .read_more()
                .await
                .map_err(|e| format!("{}: {e}", self.what.display()))?;
        }
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
