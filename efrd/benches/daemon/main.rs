//! Bench: the real `efrd` binary against its budgets (docs/architecture.md, "Budgets") (`cargo bench -p efrd --bench
//! daemon`, also run by `cargo xtask bench`).
//!
//! efrd runs as its own process (the release build cargo made for this bench, `CARGO_BIN_EXE_efrd`) in a temporary
//! `EFR_HOME` on the target's disk (not a tmpfs: its SQLite log really syncs), pointed at the scripted model server on
//! loopback. The bench is its client, over the real Unix socket. It measures:
//!
//! - `hello`: the round trip of `hello` on a fresh connection (connect not timed), p50 and p99 over 10,000
//!   connections. Budget: under 1 ms, both. Beside it, as a reference for the machine's noise (no budget), the
//!   round trip of the same frame through a plain echo thread on a Unix socket pair, timed between the hellos so
//!   both see the same load; the 1-minute load average is printed too.
//! - `first delta`: `prompt.send` sent → the turn's first `assistant_message_updated` read by a live subscriber of
//!   the conversation, p50 over 50 prompts into one conversation. The scripted model has no delay before its text,
//!   so nearly all of the time is efrd's own (its commits, the model call over loopback HTTP, parsing, coalescing,
//!   fan-out); the model server's share is its HTTP and a few tens of microseconds (it keeps a request's body as it
//!   came, so its time does not grow with the history that efrd sends).
//!   Two replies: `whole` (the answer in one burst; the stream ends at once) and `streamed` (the first words, then a
//!   pause of [`PAUSE_MS`] before the rest, as a real model streams): the latter shows whether efrd holds the first
//!   words back. Budget: the whole reply's p50 at most 1.5 ms; the streamed one's under 20 ms.
//! - `RSS idle`: efrd's `VmRSS` (`/proc/<pid>/status`) idle after start, once it gave back start-up's pages
//!   ([`efrd::lean::AFTER_START`]), and again after [`TURNS`] turns (in conversations of [`TURNS_EACH`]) and
//!   [`efrd::lean::QUIET`] without one, its conversations let go as after an hour's idleness (the bench's efrd
//!   retires them after [`RETIRE_SECS`]). Budget: at most 10 MiB, both (docs/adr/0033-a-lean-daemon.md). The RSS a
//!   second after start, before that release, is printed beside (no budget).
//! - `RSS with subscribers`: the growth when 100 live subscribers, each on its own connection, read one conversation that streams a long answer
//!   (budget: under 10 MiB). Both sides of the difference are the highest of several samples taken while the same
//!   answer streams, first with one subscriber, then with 101.
//!
//! Every loop is bounded in count and in time ([`PHASE_LIMIT`]). Prints one line per measure with PASS or FAIL next
//! to its budget; exits with status 1 when one fails, 2 when the bench itself cannot run.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use efr_protocol::frame::RequestId;
use efr_test_support::client::{Client, StreamFrame};
use efr_test_support::daemon::{TestDaemon, config_for};
use efr_test_support::proc::rss_kib;
use efr_test_support::scripted::{Reply, ReplyEvent, Script, ScriptedModel, Step};
use efr_test_support::subscription::{events_until, next_event, subscribe};
use serde_json::{Value, json};

use echo::Echo;

mod echo;

/// The hello round trip budget (docs/architecture.md, "Budgets"), for p50 and p99.
const HELLO_BUDGET: Duration = Duration::from_millis(1);
/// Hello round trips measured.
const HELLO_ROUNDS: usize = 10_000;
/// Hello round trips before the measured ones (connection setup paths warm).
const HELLO_WARMUP: usize = 200;

/// efrd's own time from prompt.send to the first delta of the whole reply, p50 (docs/architecture.md, "Budgets").
const FIRST_DELTA_BUDGET: Duration = Duration::from_micros(1_500);
/// The same for the streamed reply: what it catches is a first delta held back for the rest (the pause), so it
/// keeps the first budget's margin.
const STREAMED_DELTA_BUDGET: Duration = Duration::from_millis(20);
/// Prompts measured per reply shape.
const PROMPTS: usize = 50;
/// Prompts before the measured ones (the model connection and the conversation's actor are up).
const PROMPT_WARMUP: usize = 5;
/// The pause of the `streamed` reply after its first words, in milliseconds; much longer than any budget, so a first
/// delta that waits for the rest of the answer shows as a FAIL and not as noise.
const PAUSE_MS: u64 = 200;

/// efrd's idle RSS budget, in KiB (docs/architecture.md, "Budgets": at most 10 MiB).
const IDLE_RSS_BUDGET_KIB: u64 = 10 * 1024;
/// Turns before the second idle measure.
const TURNS: usize = 1_000;
/// Turns per conversation in that run.
const TURNS_EACH: usize = 100;
/// What 100 live subscribers may add to efrd's RSS, in KiB (docs/architecture.md, "Budgets": under 10 MiB).
const SUBSCRIBERS_RSS_BUDGET_KIB: u64 = 10 * 1024;
/// Live subscribers of the RSS measure.
const SUBSCRIBERS: usize = 100;
/// The long answer of the RSS measure: this many text deltas of [`PIECE`], [`PIECE_DELAY_MS`] apart (about 20 s,
/// far more than the measure needs; the turn is interrupted once it is done).
const PIECES: usize = 4_000;
/// One text delta of the long answer (64 bytes, multi-byte text included).
const PIECE: &str = "größe 🙂 streams on and on, word after word, for every subscriber. ";
/// The pause between two deltas of the long answer.
const PIECE_DELAY_MS: u64 = 5;
/// RSS samples taken on each side of the subscriber measure, [`SAMPLE_EVERY`] apart.
const RSS_SAMPLES: usize = 10;
/// The time between two RSS samples.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// The settle after efrd's start before its RSS is first read.
const SETTLE: Duration = Duration::from_secs(1);
/// `[daemon] conversation_idle_secs` of the bench's efrd: well within [`efrd::lean::QUIET`].
const RETIRE_SECS: u64 = 20;
/// How long past efrd's quiet times ([`efrd::lean`]) the idle RSS is read: two of its looks and a margin.
const QUIET_MARGIN: Duration = Duration::from_secs(6);

/// The most any one phase may take before the bench gives up with an error.
const PHASE_LIMIT: Duration = Duration::from_secs(120);
/// The key efrd gets through the environment: a dummy for the scripted server, never printed.
const BENCH_KEY: &str = "sk-proj-benchkey000000000000000a1b2";

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("daemon bench: cannot start the async runtime: {error}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(bench()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("daemon bench: {error:#}");
            ExitCode::from(2)
        }
    }
}

/// Runs every measure; `Ok(false)` when one is over its budget.
async fn bench() -> Result<bool> {
    println!(
        "daemon: efrd {} (release), {} cores, load average {}, EFR_HOME on the target's disk",
        env!("CARGO_PKG_VERSION"),
        std::thread::available_parallelism().map_or(0, std::num::NonZero::get),
        load_average(),
    );
    let mut ok = true;

    // Daemon A: idle RSS first, before anything else ran in it; then hello; then prompts.
    let model = scripted_model().await?;
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).context("a temporary EFR_HOME")?;
    let mut efrd = start(home.path(), &model)?;
    let started = idle_rss(&efrd, SETTLE).await?;
    let idle = idle_rss(&efrd, efrd::lean::AFTER_START + QUIET_MARGIN).await?;
    ok &= report_rss(
        "RSS idle after start",
        idle,
        IDLE_RSS_BUDGET_KIB,
        &format!("  ({}; {} MiB a second after start)", parts(&efrd), mib(started)),
    );

    let (hellos, echoes) = phase("hello", hello_round_trips(&efrd.socket())).await?;
    let (p50, p99) = (percentile(&hellos, 50), percentile(&hellos, 99));
    ok &= report_time(&format!("hello round trip, p50 of {}", hellos.len()), p50, HELLO_BUDGET);
    ok &= report_time(&format!("hello round trip, p99 of {}", hellos.len()), p99, HELLO_BUDGET);
    println!(
        "{:<56} {:>10}   (p99 {}; reference, no budget; load average {})",
        "bare echo round trip, same frame, p50",
        millis(percentile(&echoes, 50)),
        millis(percentile(&echoes, 99)),
        load_average(),
    );

    for (name, reply) in [("whole", whole_reply()), ("streamed", streamed_reply())] {
        let times = phase("first delta", first_delta(&efrd, &model, &reply)).await?;
        let label = format!("prompt.send → first delta, {name} reply, p50 of {}", times.len());
        let budget = if name == "whole" {
            FIRST_DELTA_BUDGET
        } else {
            STREAMED_DELTA_BUDGET
        };
        ok &= report_time(&label, percentile(&times, 50), budget);
        println!("{:>56}  (p99 {})", "", millis(percentile(&times, 99)));
    }
    let busy = phase("turns", turns(&efrd, &model)).await?;
    let quiet = idle_rss(&efrd, efrd::lean::QUIET + QUIET_MARGIN).await?;
    ok &= report_rss(
        &format!("RSS idle after {TURNS} turns"),
        quiet,
        IDLE_RSS_BUDGET_KIB,
        &format!("  ({}; {} MiB right after them)", parts(&efrd), mib(busy)),
    );
    efrd.stop(Duration::from_secs(5)).context("efrd stops")?;

    // Daemon B, fresh, so memory freed by the phases above cannot hide what the subscribers take.
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).context("a temporary EFR_HOME")?;
    let mut efrd = start(home.path(), &model)?;
    let (before, with) = phase("subscribers", subscribers_rss(&efrd, &model)).await?;
    let added = with.saturating_sub(before);
    let note = format!(
        "  ({} → {} MiB, {:.1} KiB per subscriber)",
        mib(before),
        mib(with),
        added as f64 / SUBSCRIBERS as f64
    );
    ok &= report_rss(
        &format!("RSS added by {SUBSCRIBERS} live subscribers"),
        added,
        SUBSCRIBERS_RSS_BUDGET_KIB,
        &note,
    );
    efrd.stop(Duration::from_secs(5)).context("efrd stops")?;
    Ok(ok)
}

/// A scripted model server that lists `gpt-5` and answers the steps pushed later.
async fn scripted_model() -> Result<ScriptedModel> {
    let script = Script {
        models: vec!["gpt-5".into()],
        ..Script::default()
    };
    ScriptedModel::start(script).await.context("the scripted model server")
}

/// efrd in `home`, logged in to openai-api through the environment, pointed at `model`.
fn start(home: &Path, model: &ScriptedModel) -> Result<TestDaemon> {
    // Conversations retire after RETIRE_SECS instead of half an hour, so that the quiet wait after the turns finds
    // efrd as an hour's idleness would (every conversation let go), without waiting the hour.
    let config = config_for(&model.base_url()) + &format!("\n[daemon]\nconversation_idle_secs = {RETIRE_SECS}\n");
    TestDaemon::start(
        Path::new(env!("CARGO_BIN_EXE_efrd")),
        home,
        Some(&config),
        &[("OPENAI_API_KEY", BENCH_KEY)],
    )
    .context("efrd starts")
}

/// Runs `future` within [`PHASE_LIMIT`].
async fn phase<T>(name: &str, future: impl Future<Output = Result<T>>) -> Result<T> {
    tokio::time::timeout(PHASE_LIMIT, future)
        .await
        .map_err(|_| anyhow!("the {name} phase took more than {PHASE_LIMIT:?}"))?
        .with_context(|| format!("the {name} phase"))
}

/// The hello params of this build's protocol.
fn hello_params() -> Value {
    json!({"protocol": efr_protocol::PROTOCOL_VERSION, "client": {"name": "efr-bench", "version": env!("CARGO_PKG_VERSION")}})
}

/// [`HELLO_WARMUP`] then [`HELLO_ROUNDS`] hellos, each on a new connection, each followed by one round trip of the
/// [`Echo`] reference. Returns the measured round trips of both.
async fn hello_round_trips(socket: &Path) -> Result<(Vec<Duration>, Vec<Duration>)> {
    let params = hello_params();
    let mut echo = Echo::start(&json!({"id": 1, "method": "hello", "params": params}))?;
    let mut times = Vec::with_capacity(HELLO_ROUNDS);
    let mut echoes = Vec::with_capacity(HELLO_ROUNDS);
    for round in 0..HELLO_WARMUP + HELLO_ROUNDS {
        let mut client = Client::connect_raw(socket).await?;
        let started = Instant::now();
        let result = client
            .call("hello", params.clone())
            .await?
            .map_err(|e| anyhow!("hello {round} failed: {e}"))?;
        let elapsed = started.elapsed();
        // A real answer, not any frame: the daemon speaks our protocol.
        if result["protocol"] != json!(efr_protocol::PROTOCOL_VERSION) || !result["daemon_id"].is_string() {
            bail!("hello {round}: an answer without protocol and daemon_id: {result}");
        }
        let echoed = echo.round_trip().await?;
        if round >= HELLO_WARMUP {
            times.push(elapsed);
            echoes.push(echoed);
        }
    }
    echo.stop()?;
    Ok((times, echoes))
}

/// The 1-minute load average from `/proc/loadavg`, or `?` when it cannot be read.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

/// A short answer in one burst, with usage, as the scripted server sends it at once.
fn whole_reply() -> Reply {
    Reply::text("The answer: 42, größe 🙂.").with_usage(120, 12)
}

/// The first words at once, then a pause of [`PAUSE_MS`], then the rest.
fn streamed_reply() -> Reply {
    Reply::of(vec![
        ReplyEvent::Text("The answer".into()),
        ReplyEvent::DelayMs(PAUSE_MS),
        ReplyEvent::Text(": 42, größe 🙂.".into()),
    ])
    .with_usage(120, 12)
}

/// prompt.send params with a fresh command id; into `conversation` when given, else a new one.
fn prompt_params(conversation: Option<&str>, text: &str) -> Value {
    let mut params = json!({"command_id": uuid::Uuid::new_v4().to_string(), "text": text});
    if let Some(conversation) = conversation {
        params["conversation_id"] = json!(conversation);
    }
    params
}

/// [`PROMPT_WARMUP`] then [`PROMPTS`] prompts into one conversation, each answered with `reply`, one at a time; a
/// second connection subscribes to the conversation and reads every event. Returns, per measured prompt, the time from
/// sending prompt.send to reading the turn's first `assistant_message_updated`.
async fn first_delta(efrd: &TestDaemon, model: &ScriptedModel, reply: &Reply) -> Result<Vec<Duration>> {
    let mut writer = efrd.client().await?;
    let mut watcher = efrd.client().await?;
    // The first prompt creates the conversation; it is not measured (its actor is not up before it).
    model.push(Step::Reply(reply.clone()));
    let sent = writer.ok("prompt.send", prompt_params(None, "warm up")).await?;
    let conversation = sent["conversation_id"]
        .as_str()
        .ok_or_else(|| anyhow!("a prompt.send result without conversation_id: {sent}"))?
        .to_owned();
    let (subscription, _) = subscribe(&mut watcher, &conversation, Some(0)).await?;
    events_until(&mut watcher, subscription, "turn_completed").await?;

    let mut times = Vec::with_capacity(PROMPTS);
    for round in 0..PROMPT_WARMUP + PROMPTS {
        model.push(Step::Reply(reply.clone()));
        let started = Instant::now();
        let request = writer
            .send("prompt.send", prompt_params(Some(&conversation), "again"), false)
            .await?;
        let first = events_until(&mut watcher, subscription, "assistant_message_updated").await?;
        let elapsed = started.elapsed();
        let first = first
            .last()
            .ok_or_else(|| anyhow!("no event read before the first delta"))?
            .clone();
        events_until(&mut watcher, subscription, "turn_completed").await?;
        let result = match writer.next_of(request).await? {
            StreamFrame::Item(result) => result,
            other => bail!("prompt.send {round}: expected its result, got {other:?}"),
        };
        if writer.next_of(request).await? != StreamFrame::End {
            bail!("prompt.send {round}: no end after its result");
        }
        // The delta timed is this prompt's turn's first one, not a late one of an earlier turn.
        if first["turn_id"] != result["turn_id"] || first["offset"] != json!(0) {
            bail!("prompt {round}: the first delta read is not its turn's first: {first} (result {result})");
        }
        if round >= PROMPT_WARMUP {
            times.push(elapsed);
        }
    }
    watcher.cancel(subscription).await?;
    if model.steps_left() != 0 {
        bail!("the model server holds {} unplayed replies", model.steps_left());
    }
    Ok(times)
}

/// [`TURNS`] turns answered with the whole reply, in conversations of [`TURNS_EACH`], one at a time; efrd's RSS right
/// after them, in KiB.
async fn turns(efrd: &TestDaemon, model: &ScriptedModel) -> Result<u64> {
    let mut client = efrd.client().await?;
    for conversation in 0..TURNS / TURNS_EACH {
        let mut id: Option<String> = None;
        let mut subscription = None;
        for turn in 0..TURNS_EACH {
            model.push(Step::Reply(whole_reply()));
            let text = format!("conversation {conversation}, turn {turn}");
            let sent = client.ok("prompt.send", prompt_params(id.as_deref(), &text)).await?;
            if id.is_none() {
                let new = sent["conversation_id"]
                    .as_str()
                    .ok_or_else(|| anyhow!("a prompt.send result without conversation_id: {sent}"))?
                    .to_owned();
                subscription = Some(subscribe(&mut client, &new, Some(0)).await?.0);
                id = Some(new);
            }
            let subscription = subscription.ok_or_else(|| anyhow!("not subscribed"))?;
            events_until(&mut client, subscription, "turn_completed").await?;
        }
        if let Some(subscription) = subscription {
            client.cancel(subscription).await?;
        }
    }
    let pid = efrd.pid().ok_or_else(|| anyhow!("efrd is not running"))?;
    rss_kib(pid)
}

/// efrd's anonymous and file-backed resident memory now, in MiB, for the report.
fn parts(efrd: &TestDaemon) -> String {
    let Some(pid) = efrd.pid() else {
        return String::new();
    };
    let part = |field| efr_test_support::proc::status_kib(pid, field).map_or(0.0, |kib| kib as f64 / 1024.0);
    format!("anonymous {:.1} MiB, file {:.1} MiB", part("RssAnon"), part("RssFile"))
}

/// efrd's idle RSS in KiB: the median of five samples after `settle`.
async fn idle_rss(efrd: &TestDaemon, settle: Duration) -> Result<u64> {
    let pid = efrd.pid().ok_or_else(|| anyhow!("efrd is not running"))?;
    tokio::time::sleep(settle).await;
    let mut samples = Vec::new();
    for _ in 0..5 {
        samples.push(rss_kib(pid)?);
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
    samples.sort_unstable();
    Ok(samples[samples.len() / 2])
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

/// The long answer of the RSS measure.
fn long_reply() -> Reply {
    Reply::streamed(std::iter::repeat_n(PIECE.to_owned(), PIECES), PIECE_DELAY_MS).with_usage(120, 12)
}

/// Starts a long answer; samples efrd's RSS while it streams to one subscriber, then while it streams to
/// [`SUBSCRIBERS`] more, each reading on its own connection. Returns (before, with), in KiB. Fails when a subscriber
/// does not read the stream live to its end with contiguous seqs, or the answer ended before the measure did.
async fn subscribers_rss(efrd: &TestDaemon, model: &ScriptedModel) -> Result<(u64, u64)> {
    let pid = efrd.pid().ok_or_else(|| anyhow!("efrd is not running"))?;
    let mut writer = efrd.client().await?;
    model.push(Step::Reply(long_reply()));
    let sent = writer.ok("prompt.send", prompt_params(None, "a long one")).await?;
    let conversation = sent["conversation_id"]
        .as_str()
        .ok_or_else(|| anyhow!("a prompt.send result without conversation_id: {sent}"))?
        .to_owned();
    let mut watcher = efrd.client().await?;
    let (watch, _) = subscribe(&mut watcher, &conversation, Some(0)).await?;
    events_until(&mut watcher, watch, "assistant_message_updated").await?;
    // The watcher keeps reading in its own task, so it never falls behind.
    let watcher = tokio::spawn(follow(watcher, watch, None));
    let before = peak_rss(pid).await?;

    let (live_tx, mut live_rx) = tokio::sync::mpsc::channel(SUBSCRIBERS);
    let mut readers = Vec::with_capacity(SUBSCRIBERS);
    for _ in 0..SUBSCRIBERS {
        let mut client = efrd.client().await?;
        let (id, _) = subscribe(&mut client, &conversation, None).await?;
        readers.push(tokio::spawn(follow(client, id, Some(live_tx.clone()))));
    }
    drop(live_tx);
    // Measure only once every subscriber has read a live delta.
    for live in 0..SUBSCRIBERS {
        if live_rx.recv().await.is_none() {
            bail!("only {live} of {SUBSCRIBERS} subscribers read a live delta");
        }
    }
    let with = peak_rss(pid).await?;

    // The answer must still stream: end it now, and every subscriber must see the end.
    let interrupt = json!({"command_id": uuid::Uuid::new_v4().to_string(), "conversation_id": conversation});
    let interrupted = writer.ok("turn.interrupt", interrupt).await?;
    if interrupted["turn_id"] != sent["turn_id"] {
        bail!("the long answer ended before the measure did ({interrupted})");
    }
    for reader in readers {
        reader.await.context("a subscriber task panicked")??;
    }
    watcher.await.context("the watcher task panicked")??;
    Ok((before, with))
}

/// Reads subscription `id` until its turn ends with `turn_interrupted`, checking that seqs are contiguous; signals
/// `live` at its first `assistant_message_updated`. Returns the client, so the connection closes with the caller.
async fn follow(mut client: Client, id: RequestId, mut live: Option<tokio::sync::mpsc::Sender<()>>) -> Result<Client> {
    let mut last_seq: Option<u64> = None;
    // Bounded: at most every delta of the long answer and a few more events.
    for _ in 0..PIECES + 16 {
        let event = next_event(&mut client, id).await?;
        let seq = event["seq"]
            .as_u64()
            .ok_or_else(|| anyhow!("an event without seq: {event}"))?;
        if let Some(last) = last_seq.filter(|last| seq != last + 1) {
            bail!("a subscriber saw seq {seq} after {last}");
        }
        last_seq = Some(seq);
        match event["kind"].as_str() {
            Some("assistant_message_updated") => {
                if let Some(live) = live.take() {
                    live.send(()).await.context("the bench stopped waiting")?;
                }
            }
            Some("turn_interrupted") => return Ok(client),
            Some("turn_completed" | "turn_failed") => bail!("the long answer ended on its own: {event}"),
            _ => {}
        }
    }
    bail!("a subscriber read more events than the long answer has")
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

/// Prints a time next to its budget; returns whether it is under.
fn report_time(label: &str, time: Duration, budget: Duration) -> bool {
    let pass = time < budget;
    println!(
        "{label:<56} {:>10}   [budget < {}: {}]",
        millis(time),
        millis(budget),
        verdict(pass)
    );
    pass
}

/// Prints an RSS (KiB) next to its budget (KiB); returns whether it is under.
fn report_rss(label: &str, kib: u64, budget_kib: u64, note: &str) -> bool {
    let pass = kib < budget_kib;
    println!(
        "{label:<56} {:>6} MiB   [budget < {} MiB: {}]{note}",
        mib(kib),
        mib(budget_kib),
        verdict(pass)
    );
    pass
}
