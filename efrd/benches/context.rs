//! Bench: compaction and the context's numbers on a 2,000-turn conversation (docs/architecture.md, "Budgets";
//! `cargo bench -p efrd --bench context`, also run by `cargo xtask bench`).
//!
//! - `request`: building a model call's request (the copy's items cloned and the Responses body written as JSON)
//!   for each turn of a generated 2,000-turn conversation (each turn a prompt, a shell call with a 2 KB output and an
//!   answer) under a 200k window, compacting as efrd does when the count reaches the trigger (the summary is a fixed
//!   text: no model). Budget: p50 under 5 ms.
//! - `compaction CPU`: the thread CPU time of each of those compactions without the model (the cut, the summary's
//!   request built, the copy after it). Budget: under 50 ms, the highest of them.
//! - `conversation.context`: the method's round trip on the real efrd (release build) with a 2,000-turn conversation
//!   made through the scripted model server (compacted as it goes, the summaries answered by the server), p50 of 50
//!   calls. Budget: under 20 ms.
//!
//! Prints the load average with the numbers; exits 1 when a budget fails, 2 when the bench cannot run.

#![allow(clippy::print_stdout, clippy::print_stderr, clippy::expect_used)] // A bench: a broken setup is a failed run.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use efr_model::{HistoryItem, ModelRequest, Usage};
use efr_protocol::ids::TurnId;
use efr_protocol::wire::CompactTrigger;
use efr_test_support::daemon::TestDaemon;
use efr_test_support::scripted::{Reply, Script, ScriptedModel, Step, When};
use efrd::compact::{self, Input, Limits, Meter, ModelHistory};
use efrd::config::context::ContextSection;
use serde_json::json;

const TURNS: usize = 2_000;
const REQUEST_BUDGET: Duration = Duration::from_millis(5);
const COMPACTION_BUDGET: Duration = Duration::from_millis(50);
const CONTEXT_BUDGET: Duration = Duration::from_millis(20);
const CONTEXT_CALLS: usize = 50;

fn main() -> ExitCode {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "load average: {}",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    let (requests, compactions) = in_process();
    let mut ok = true;
    ok &= report(
        "request of a 2,000-turn conversation (p50)",
        median(&requests),
        REQUEST_BUDGET,
        &requests,
    );
    let worst = compactions.iter().max().copied().unwrap_or_default();
    ok &= report(
        &format!(
            "compaction CPU without the model ({} compactions, the highest)",
            compactions.len()
        ),
        worst,
        COMPACTION_BUDGET,
        &compactions,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    match runtime.block_on(daemon_context()) {
        Ok(calls) => ok &= report("conversation.context (p50)", median(&calls), CONTEXT_BUDGET, &calls),
        Err(error) => {
            eprintln!("bench context: {error:#}");
            return ExitCode::from(2);
        }
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// One generated turn: a prompt, a shell call with a 2 KB output, an answer.
fn turn_items(n: usize) -> (String, Vec<HistoryItem>) {
    let prompt = format!(
        "Step {n}: go on with the parser and say what changed. {}",
        "context ".repeat(30)
    );
    let items = vec![
        HistoryItem::tool_call(
            format!("call_{n}"),
            "shell".into(),
            false,
            r#"{"command":"cargo test -p lex"}"#.into(),
        ),
        HistoryItem::ToolOutput {
            call_id: format!("call_{n}"),
            output: format!("test lex::t{n} ... ok\n").repeat(90),
            is_error: false,
        },
        HistoryItem::AssistantText {
            text: "The tests pass; the change is in src/lex.rs. ".repeat(12),
        },
    ];
    (prompt, items)
}

/// Runs the generated conversation: each turn's request built and timed, a compaction at the trigger (CPU timed).
fn in_process() -> (Vec<Duration>, Vec<Duration>) {
    let limits = Limits::of(&ContextSection::default(), Some(200_000));
    let mut base = ModelRequest::new("gpt-5");
    base.instructions = "You are efr. ".repeat(600);
    let prefix_tokens = 3_000;
    let mut history = ModelHistory::default();
    let mut requests = Vec::with_capacity(TURNS);
    let mut compactions = Vec::new();
    for n in 0..TURNS {
        let turn_id = TurnId::new();
        let (prompt, items) = turn_items(n);
        history.push_prompt(turn_id, prompt);
        if limits.auto && Meter::new(prefix_tokens).tokens(history.items()) >= limits.trigger {
            let started = thread_cpu();
            let input = Input {
                history: &history,
                running: Some(turn_id),
                running_message: None,
                trigger: CompactTrigger::Auto,
                focus: None,
                limits,
                tokens_before: limits.trigger,
                prefix_tokens,
                request: &base,
                fresh: "<environment>\nmode: auto\n</environment>\n".into(),
            };
            let cut = compact::cut(&history, Some(turn_id), &compact::rules(&limits, prefix_tokens)).expect("a cut");
            let request = compact::summary_request(&base, cut.material.clone(), None, 8_192);
            std::hint::black_box(efr_model::openai::request_body(&request));
            let compacted = compact::finish(
                &input,
                &cut,
                "## Goals and constraints\n- keep going".into(),
                Usage::default(),
            );
            compactions.push(thread_cpu() - started);
            history = compacted.history;
        }
        let started = Instant::now();
        let mut request = base.clone();
        request.history = history.items().to_vec();
        std::hint::black_box(efr_model::openai::request_body(&request));
        requests.push(started.elapsed());
        history.extend(items);
    }
    (requests, compactions)
}

/// The thread's CPU time so far.
fn thread_cpu() -> Duration {
    let mut spec = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &raw mut spec) };
    Duration::new(
        u64::try_from(spec.tv_sec).unwrap_or(0),
        u32::try_from(spec.tv_nsec).unwrap_or(0),
    )
}

/// A real efrd with a 2,000-turn conversation; the round trips of conversation.context on it.
async fn daemon_context() -> Result<Vec<Duration>> {
    let steps = (0..TURNS)
        .map(|_| Step::Reply(Reply::text("The tests pass; the change is in src/lex.rs. ".repeat(12))))
        .collect();
    let server = ScriptedModel::start(Script {
        steps,
        when: vec![When {
            contains: "<compaction_request>".into(),
            step: Step::Reply(Reply::text("## Goals and constraints\n- keep going")),
        }],
        usage_from_body: true,
        models: vec!["gpt-5".into()],
        ..Script::default()
    })
    .await?;
    let home = tempfile::Builder::new()
        .prefix("efr-bench-context")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let config = efr_test_support::daemon::config_for(&server.base_url());
    let efrd = TestDaemon::start(
        Path::new(env!("CARGO_BIN_EXE_efrd")),
        home.path(),
        Some(&config),
        &[("OPENAI_API_KEY", "sk-proj-benchkey000000000000000a1b2")],
    )
    .context("efrd starts")?;
    let mut client = efrd.client().await?;
    let cwd = tempfile::tempdir()?;
    let mut conversation: Option<String> = None;
    let (mut sub, mut last_seq) = (None, 0u64);
    for n in 0..TURNS {
        let mut params = json!({"command_id": uuid::Uuid::new_v4().to_string(), "text": format!("Step {n}: go on. {}", "context ".repeat(30)), "context": {"cwd": cwd.path()}, "settings": {"mode": "cautious"}});
        if let Some(id) = &conversation {
            params["conversation_id"] = json!(id);
        }
        let sent = client.ok("prompt.send", params).await?;
        if conversation.is_none() {
            let id = sent["conversation_id"].as_str().context("an id")?.to_owned();
            let (subscription, _) = efr_test_support::subscription::subscribe(&mut client, &id, Some(0)).await?;
            sub = Some(subscription);
            conversation = Some(id);
        }
        let events =
            efr_test_support::subscription::events_through(&mut client, sub.context("subscribed")?, "turn_completed")
                .await?;
        last_seq = events.last().and_then(|e| e["seq"].as_u64()).unwrap_or(last_seq);
        if n % 100 == 0 {
            server.clear_requests();
        }
    }
    let conversation = conversation.context("a conversation")?;
    let mut calls = Vec::with_capacity(CONTEXT_CALLS);
    for _ in 0..CONTEXT_CALLS {
        let started = Instant::now();
        client
            .ok("conversation.context", json!({"conversation_id": conversation}))
            .await?;
        calls.push(started.elapsed());
    }
    println!("  ({TURNS} turns through efrd, last seq {last_seq})");
    Ok(calls)
}

fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

/// Prints one measure with its spread and PASS or FAIL against `budget`.
fn report(name: &str, value: Duration, budget: Duration, samples: &[Duration]) -> bool {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let at = |q: usize| {
        sorted
            .get((sorted.len().saturating_sub(1)) * q / 100)
            .copied()
            .unwrap_or_default()
    };
    let pass = value < budget;
    println!(
        "{name}: {:.3} ms (p10 {:.3}, p90 {:.3}, max {:.3}; budget {} ms) {}",
        value.as_secs_f64() * 1e3,
        at(10).as_secs_f64() * 1e3,
        at(90).as_secs_f64() * 1e3,
        sorted.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
        budget.as_millis(),
        if pass { "PASS" } else { "FAIL" }
    );
    pass
}
