//! Bench: a phone over the tailnet listener against the terminal's Unix socket (docs/architecture.md, "Budgets";
//! `cargo bench -p efrd --bench phone`, also run by `cargo xtask bench`). Needs root (network namespaces).
//!
//! The bench makes two network namespaces linked by a veth pair, as the listener's tests do: the desk (efrd at the
//! tailnet-like address [`DESK`], the scripted model server on its loopback, and tailscaled's LocalAPI double) and the
//! phone's side ([`PHONE`]). Nothing connects to a tailnet address from the host's namespace: the bench's own thread
//! enters the desk before its runtime starts, and the phone's side runs on a thread of its own inside the phone's
//! namespace. It pairs devices through the real pairing (device.pair_start / device.enroll / device.pair_confirm)
//! and proves them with device.prove. It measures:
//!
//! - `first draft`: prompt.send sent → the turn's first text draft (a draft item) read on the same connection,
//!   which follows its conversation (conversation.subscribe with drafts), over the Unix socket and over a proven WebSocket, one
//!   prompt of each in turn (which goes first alternates) so both see the same load; p50 and p99 of [`PROMPTS`]
//!   each. Budget: the median of the per-prompt-pair ratios (WebSocket over Unix socket), printed with its spread,
//!   at most [`RATIO_BUDGET`]: the listener's framing, masking and its bridge to the server's
//!   frames must stay small beside efrd's own work on a turn (both paths share everything else). The p99 ratio is
//!   printed, with no budget (a single slow prompt moves it).
//! - `RSS`: efrd's `VmRSS` with the listener up and no phone connected, then with [`DEVICES`] proven phones
//!   connected, each following conversations.watch as a phone's home screen does. Budget: the growth under
//!   [`DEVICES_RSS_BUDGET_KIB`], [`PHONE_RSS_BUDGET_KIB`] a phone: far more phones than one user has must stay small
//!   next to efrd's idle budget of 10 MiB (the WebSocket's buffers are sized for a phone's small frames:
//!   `efrd/src/server/websocket.rs`).
//!
//! Every loop is bounded in count and in time ([`PHASE_LIMIT`]). Exits with status 1 when a budget fails, 2 when the
//! bench itself cannot run.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use efr_protocol::frame::RequestId;
use efr_test_support::bench::{Pairs, load_average};
use efr_test_support::client::{Client, StreamFrame};
use efr_test_support::daemon::{TestDaemon, config_for};
use efr_test_support::netns::NetNs;
use efr_test_support::proc::rss_kib;
use efr_test_support::scripted::{Reply, Script, ScriptedModel, Step};
use efr_test_support::subscription::Frames;
use efr_test_support::tailscaled::{LocalApiDouble, status_json, whois_json};
use serde_json::{Value, json};

use ws::{Device, Phone};

mod ws;

/// The desk's tailnet-like address (in 100.64.0.0/10, only inside the bench's namespaces).
const DESK: Ipv4Addr = Ipv4Addr::new(100, 101, 102, 103);
/// The phone's address.
const PHONE: Ipv4Addr = Ipv4Addr::new(100, 90, 1, 2);
/// The listener's port.
const PORT: u16 = 8765;
/// The Tailscale user both nodes belong to.
const USER: i64 = 12345;

/// The WebSocket's first draft p50 may be at most this many times the Unix socket's.
const RATIO_BUDGET: f64 = 1.5;
/// Prompts measured per transport.
const PROMPTS: usize = 100;
/// Prompts per transport before the measured ones.
const PROMPT_WARMUP: usize = 10;
/// Proven phones of the RSS measure.
const DEVICES: usize = 20;
/// What one proven phone may add to efrd's RSS, in KiB: its WebSocket's buffers, its session and its watch.
const PHONE_RSS_BUDGET_KIB: u64 = 64;
/// What [`DEVICES`] proven phones may add to efrd's RSS, in KiB.
const DEVICES_RSS_BUDGET_KIB: u64 = PHONE_RSS_BUDGET_KIB * DEVICES as u64;
/// RSS samples taken on each side of the RSS measure, [`SAMPLE_EVERY`] apart.
const RSS_SAMPLES: usize = 10;
/// The time between two RSS samples.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// The most any one phase may take before the bench gives up with an error.
const PHASE_LIMIT: Duration = Duration::from_secs(180);
/// The key efrd gets through the environment: a dummy for the scripted server, never printed.
const BENCH_KEY: &str = "sk-proj-benchkey000000000000000a1b2";

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("phone bench: {error:#}");
            ExitCode::from(2)
        }
    }
}

/// Makes the namespaces, moves this thread into the desk's, and runs the bench on a runtime whose threads start
/// there too.
fn run() -> Result<bool> {
    let desk = NetNs::new(&[], &[]).context("the desk's namespace (the bench runs as root)")?;
    let phone = Arc::new(NetNs::new(&[], &[]).context("the phone's namespace")?);
    desk.link(&phone, &[IpAddr::V4(DESK)], &[IpAddr::V4(PHONE)])?;
    desk.enter()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("the async runtime")?;
    runtime.block_on(bench(phone))
}

/// What the phone's side measured.
struct Measures {
    unix: Vec<Duration>,
    websocket: Vec<Duration>,
    rss_before: u64,
    rss_with: u64,
}

/// Starts the model, tailscaled's double and efrd in the desk, then runs the phone's side.
async fn bench(phone_ns: Arc<NetNs>) -> Result<bool> {
    println!(
        "phone: efrd {} ({}), {} cores, load average {}, veth between two namespaces",
        env!("CARGO_PKG_VERSION"),
        if cfg!(debug_assertions) { "debug" } else { "release" },
        std::thread::available_parallelism().map_or(0, std::num::NonZero::get),
        load_average(),
    );
    let script = Script {
        models: vec!["gpt-5".into()],
        ..Script::default()
    };
    let model = Arc::new(
        ScriptedModel::start(script)
            .await
            .context("the scripted model server")?,
    );
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).context("a temporary EFR_HOME")?;
    let api = LocalApiDouble::start(
        &home.path().join("tailscaled.sock"),
        status_json(DESK, "n7fLaptop22CNTRL", USER, "ada.github", "laptop.tail3f2a.ts.net."),
    )?;
    let phone_node = whois_json(
        "nKq3wPhone11CNTRL",
        "ada-pixel.tail3f2a.ts.net.",
        USER,
        "ada@github",
        &[],
        0,
        "android",
    );
    api.set_whois(IpAddr::V4(PHONE), phone_node);
    let config = format!(
        "{}\n[remote]\nenabled = true\nport = {PORT}\ntailscaled_socket = \"{}\"\n",
        config_for(&model.base_url()),
        api.path().display()
    );
    let mut efrd = TestDaemon::start(
        Path::new(env!("CARGO_BIN_EXE_efrd")),
        home.path(),
        Some(&config),
        &[("OPENAI_API_KEY", BENCH_KEY)],
    )
    .context("efrd starts")?;
    let pid = efrd.pid().ok_or_else(|| anyhow!("efrd is not running"))?;
    let socket = efrd.socket();
    let measures = on_phone(&phone_ns, move || phone_side(socket, model, pid)).await?;
    efrd.stop(Duration::from_secs(5)).context("efrd stops")?;
    Ok(report(&measures))
}

/// Runs `f` on a thread of its own inside `ns`, with its own runtime.
async fn on_phone<F, Fut, T>(ns: &Arc<NetNs>, f: F) -> Result<T>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Result<T>>,
    T: Send + 'static,
{
    let ns = Arc::clone(ns);
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let result = ns.enter().and_then(|()| {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(f())
        });
        let _ = tx.send(result);
    });
    rx.await.context("the phone's thread panicked")?
}

/// The phone's side: pairs the devices, then measures the first draft on both transports and the RSS.
async fn phone_side(socket: PathBuf, model: Arc<ScriptedModel>, pid: u32) -> Result<Measures> {
    let listener = SocketAddr::from((DESK, PORT));
    let mut terminal = Client::connect_raw(&socket).await?;
    let hello = json!({"protocol": efr_protocol::PROTOCOL_VERSION, "client": {"name": "efr-bench", "version": "1"}});
    let hello = terminal.ok("hello", hello).await?;
    let daemon_id = hello["daemon_id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("hello without daemon_id: {hello}"))?;
    phase("listening", wait_for_listener(listener)).await?;
    let devices = phase("pairing", async {
        let mut devices = Vec::with_capacity(DEVICES);
        for _ in 0..DEVICES {
            devices.push(ws::pair(&mut terminal, PHONE, listener).await?);
        }
        Ok(devices)
    })
    .await?;

    let (unix, websocket) = phase(
        "first draft",
        first_drafts(&socket, listener, &devices[0], &daemon_id, &model),
    )
    .await?;
    if model.steps_left() != 0 {
        bail!("the model server holds {} unplayed replies", model.steps_left());
    }

    let (rss_before, rss_with) = phase("RSS", devices_rss(listener, &devices, &daemon_id, pid)).await?;
    Ok(Measures {
        unix,
        websocket,
        rss_before,
        rss_with,
    })
}

/// Waits (bounded by its phase) until the listener takes a WebSocket.
async fn wait_for_listener(listener: SocketAddr) -> Result<()> {
    loop {
        if Phone::open(PHONE, listener).await.is_ok() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs `future` within [`PHASE_LIMIT`].
async fn phase<T>(name: &str, future: impl Future<Output = Result<T>>) -> Result<T> {
    tokio::time::timeout(PHASE_LIMIT, future)
        .await
        .map_err(|_| anyhow!("the {name} phase took more than {PHASE_LIMIT:?}"))?
        .with_context(|| format!("the {name} phase"))
}

impl Frames for Phone {
    fn send(&mut self, method: &str, params: Value, ack: bool) -> impl Future<Output = Result<RequestId>> {
        Phone::send(self, method, params, ack)
    }
    fn next_of(&mut self, id: RequestId) -> impl Future<Output = Result<StreamFrame>> {
        Phone::next_of(self, id)
    }
}

/// A conversation that `conn` made with a first prompt and follows; the subscription's id.
struct Followed {
    conversation: String,
    subscription: RequestId,
}

/// A short answer in one burst, with usage.
fn reply() -> Reply {
    Reply::text("The answer: 42, größe 🙂.").with_usage(120, 12)
}

/// prompt.send params with a fresh command id; into `conversation` when given, else a new one.
fn prompt_params(conversation: Option<&str>) -> Value {
    let mut params = json!({"command_id": uuid::Uuid::new_v4().to_string(), "text": "again"});
    if let Some(conversation) = conversation {
        params["conversation_id"] = json!(conversation);
    }
    params
}

/// Sends a first prompt (not measured), subscribes to its conversation and reads its turn to the end.
async fn follow(conn: &mut impl Frames, model: &ScriptedModel) -> Result<Followed> {
    model.push(Step::Reply(reply()));
    let request = conn.send("prompt.send", prompt_params(None), false).await?;
    let StreamFrame::Item(sent) = conn.next_of(request).await? else {
        bail!("the first prompt.send has no result");
    };
    let conversation = sent["conversation_id"]
        .as_str()
        .ok_or_else(|| anyhow!("a prompt.send result without conversation_id: {sent}"))?
        .to_owned();
    let params = json!({"conversation_id": conversation, "after_seq": 0, "drafts": true});
    let subscription = conn.send("conversation.subscribe", params, false).await?;
    item_until(conn, subscription, |item| item["event"]["kind"] == "turn_completed").await?;
    Ok(Followed {
        conversation,
        subscription,
    })
}

/// Reads `subscription`'s items (drafts and events) until `done` holds for one; that item.
async fn item_until(conn: &mut impl Frames, subscription: RequestId, done: impl Fn(&Value) -> bool) -> Result<Value> {
    let deadline = Instant::now() + PHASE_LIMIT;
    loop {
        if Instant::now() > deadline {
            bail!("the awaited item did not come within {PHASE_LIMIT:?}");
        }
        match conn.next_of(subscription).await? {
            StreamFrame::Item(item) if done(&item) => return Ok(item),
            StreamFrame::Item(_) => {}
            other => bail!("the subscription ended: {other:?}"),
        }
    }
}

/// One measured prompt: prompt.send → the turn's first text draft (a draft item, the subscription asked for drafts)
/// on `followed`'s subscription.
async fn first_draft(conn: &mut impl Frames, followed: &Followed, model: &ScriptedModel) -> Result<Duration> {
    model.push(Step::Reply(reply()));
    let started = Instant::now();
    let request = conn
        .send("prompt.send", prompt_params(Some(&followed.conversation)), false)
        .await?;
    let first = item_until(conn, followed.subscription, |item| {
        item["draft"]["draft"]["kind"] == "text"
    })
    .await?;
    let elapsed = started.elapsed();
    item_until(conn, followed.subscription, |item| {
        item["event"]["kind"] == "turn_completed"
    })
    .await?;
    let StreamFrame::Item(result) = conn.next_of(request).await? else {
        bail!("prompt.send has no result");
    };
    // The draft timed is this prompt's turn's first one, not a late one of an earlier turn.
    if first["draft"]["turn_id"] != result["turn_id"] || first["draft"]["draft"]["offset"] != json!(0) {
        bail!("the first draft read is not its turn's first: {first} (result {result})");
    }
    Ok(elapsed)
}

/// [`PROMPT_WARMUP`] then [`PROMPTS`] prompts on each transport, one of each in turn, each into its own
/// conversation. Returns the measured times of the Unix socket and of the WebSocket.
async fn first_drafts(
    socket: &Path,
    listener: SocketAddr,
    device: &Device,
    daemon_id: &str,
    model: &ScriptedModel,
) -> Result<(Vec<Duration>, Vec<Duration>)> {
    let mut unix = Client::connect(socket).await?;
    let mut phone = Phone::proven(PHONE, listener, device, daemon_id).await?;
    let unix_followed = follow(&mut unix, model).await?;
    let phone_followed = follow(&mut phone, model).await?;
    let mut unix_times = Vec::with_capacity(PROMPTS);
    let mut phone_times = Vec::with_capacity(PROMPTS);
    for round in 0..PROMPT_WARMUP + PROMPTS {
        // Which side runs first alternates: neither always finds the other's work done.
        let (on_unix, on_phone) = if round % 2 == 0 {
            let on_unix = first_draft(&mut unix, &unix_followed, model).await?;
            (on_unix, first_draft(&mut phone, &phone_followed, model).await?)
        } else {
            let on_phone = first_draft(&mut phone, &phone_followed, model).await?;
            (first_draft(&mut unix, &unix_followed, model).await?, on_phone)
        };
        if round >= PROMPT_WARMUP {
            unix_times.push(on_unix);
            phone_times.push(on_phone);
        }
    }
    Ok((unix_times, phone_times))
}

/// efrd's RSS (the highest of [`RSS_SAMPLES`]) with no phone connected, then with every device proven on a
/// connection of its own that follows conversations.watch. Returns (before, with), in KiB.
async fn devices_rss(listener: SocketAddr, devices: &[Device], daemon_id: &str, pid: u32) -> Result<(u64, u64)> {
    let before = peak_rss(pid).await?;
    let mut phones = Vec::with_capacity(devices.len());
    for device in devices {
        let mut phone = Phone::proven(PHONE, listener, device, daemon_id).await?;
        let watch = phone.send("conversations.watch", json!({}), false).await?;
        match phone.next_of(watch).await? {
            StreamFrame::Item(item) if item["kind"] == "snapshot" => {}
            other => bail!("conversations.watch: expected its snapshot, got {other:?}"),
        }
        phones.push(phone);
    }
    let with = peak_rss(pid).await?;
    // Every phone is still connected and answered: a round trip on each.
    for phone in &mut phones {
        phone.ok("conversations.recent", json!({})).await?;
    }
    Ok((before, with))
}

/// The highest of [`RSS_SAMPLES`] samples of `pid`'s RSS, [`SAMPLE_EVERY`] apart.
async fn peak_rss(pid: u32) -> Result<u64> {
    let mut peak = 0;
    for _ in 0..RSS_SAMPLES {
        peak = peak.max(rss_kib(pid)?);
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
    Ok(peak)
}

/// Prints every measure next to its budget; returns whether all hold.
fn report(measures: &Measures) -> bool {
    let (unix50, unix99) = (percentile(&measures.unix, 50), percentile(&measures.unix, 99));
    let (ws50, ws99) = (percentile(&measures.websocket, 50), percentile(&measures.websocket, 99));
    println!(
        "{:<60} {:>10}   (p99 {})",
        format!("prompt.send → first draft, Unix socket, p50 of {}", measures.unix.len()),
        millis(unix50),
        millis(unix99)
    );
    println!(
        "{:<60} {:>10}   (p99 {})",
        format!(
            "prompt.send → first draft, WebSocket, p50 of {}",
            measures.websocket.len()
        ),
        millis(ws50),
        millis(ws99)
    );
    let mut pairs = Pairs::new();
    for (ws, unix) in measures.websocket.iter().zip(&measures.unix) {
        pairs.push(ws.as_secs_f64(), unix.as_secs_f64().max(1e-9));
    }
    let ratio = pairs.ratios();
    let ratio_ok = ratio.median <= RATIO_BUDGET;
    println!(
        "{:<60} {ratio}   [budget ≤ {RATIO_BUDGET}×: {}]   (ratio of the p99s {:.2}×, no budget)",
        "first draft, WebSocket / Unix socket, per prompt pair",
        verdict(ratio_ok),
        ws99.as_secs_f64() / unix99.as_secs_f64().max(1e-9)
    );
    let added = measures.rss_with.saturating_sub(measures.rss_before);
    let rss_ok = added < DEVICES_RSS_BUDGET_KIB;
    println!(
        "{:<60} {:>6} MiB   [budget < {} MiB: {}]  ({} → {} MiB, {:.1} KiB per phone)",
        format!("RSS added by {DEVICES} proven phones"),
        mib(added),
        mib(DEVICES_RSS_BUDGET_KIB),
        verdict(rss_ok),
        mib(measures.rss_before),
        mib(measures.rss_with),
        added as f64 / DEVICES as f64
    );
    ratio_ok && rss_ok
}

/// The `p`th percentile (nearest rank) of `times`; zero for none.
fn percentile(times: &[Duration], p: usize) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort_unstable();
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (sorted.len() * p).div_ceil(100).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn millis(time: Duration) -> String {
    format!("{:.3} ms", time.as_secs_f64() * 1e3)
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

fn verdict(pass: bool) -> &'static str {
    if pass { "PASS" } else { "FAIL" }
}
