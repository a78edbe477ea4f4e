//! Bench: conversations.search on a generated corpus (docs/architecture.md, "Budgets"; `cargo bench -p efrd --bench
//! search`, also run by `cargo xtask bench`).
//!
//! The corpus: 10,000 conversations × 50 events, made by a seeded generator (the same corpus on every run): each
//! conversation has a title, and its turns have a prompt, shell commands and answers (20 indexed texts a
//! conversation, 200,000 in all) drawn from a vocabulary of 4,000 made-up words and a few Unicode ones, so some words
//! are common and most are rare. It is written through the store as efrd writes it (events and their entries in one
//! commit) on a real SQLite file on the target's disk.
//!
//! The search: efrd's own code (`efrd::search::run::conversations`, limit 50) for 300 seeded queries (one common
//! word, one rare word, two words, a word of two characters, a part of a word, a word that is not in the corpus),
//! after a warm-up of 30. Budget: p50 under 20 ms and p99 under 100 ms.
//!
//! Exits 1 when a budget fails.

#![allow(clippy::print_stdout, clippy::print_stderr, clippy::expect_used)] // A bench: a broken setup is a failed run.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use efr_protocol::events::{
    AssistantMessageCompleted, ConversationCreated, Event, EventBody, PromptQueued, ToolCallStarted,
};
use efr_protocol::ids::{CallId, ConversationId, Timestamp, TurnId};
use efr_protocol::wire::Origin;
use efr_store::{Commit, ConversationSummary, EventRow, Store};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The corpus's size.
const CONVERSATIONS: usize = 10_000;
/// Events per conversation.
const EVENTS_EACH: usize = 50;
/// Words of the vocabulary.
const VOCABULARY: usize = 4_000;
/// Queries measured, after [`WARM_UP`].
const QUERIES: usize = 300;
/// Queries run first, not measured.
const WARM_UP: usize = 30;
/// The budgets.
const BUDGET_P50: Duration = Duration::from_millis(20);
/// See [`BUDGET_P50`].
const BUDGET_P99: Duration = Duration::from_millis(100);
/// Commits written at once while the corpus is made.
const WRITERS: usize = 8;

/// A made-up word of 3 to 9 letters.
fn made_up(rng: &mut StdRng) -> String {
    const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
    let length = rng.random_range(3..10);
    (0..length)
        .map(|_| char::from(LETTERS[rng.random_range(0..LETTERS.len())]))
        .collect()
}

/// The vocabulary: made-up words and a few of other scripts.
fn vocabulary(rng: &mut StdRng) -> Vec<String> {
    let mut words: Vec<String> = (0..VOCABULARY).map(|_| made_up(rng)).collect();
    for word in ["größe", "café", "中文文档", "🙂", "naïve", "Ärger", "日本語", "ünïcödé"] {
        words.push(word.to_owned());
    }
    words
}

/// A word drawn with a skew: low indexes are common (about Zipf's law), high ones rare.
fn word<'a>(rng: &mut StdRng, words: &'a [String]) -> &'a str {
    let x: f64 = rng.random_range(0.0..1.0);
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let index = ((words.len() as f64).powf(x) - 1.0) as usize;
    &words[index.min(words.len() - 1)]
}

fn sentence(rng: &mut StdRng, words: &[String], length: usize) -> String {
    (0..length).map(|_| word(rng, words)).collect::<Vec<_>>().join(" ")
}

/// The events of one generated conversation: created, then turns of a prompt, shell calls and an answer, with
/// filler events (updates, not indexed) up to [`EVENTS_EACH`].
fn conversation(rng: &mut StdRng, words: &[String], id: ConversationId, at: Timestamp) -> Vec<Event> {
    let mut bodies: Vec<(Option<TurnId>, EventBody)> = vec![(
        None,
        EventBody::ConversationCreated(ConversationCreated {
            cwd: None,
            tty: None,
            route: None,
        }),
    )];
    while bodies.len() < EVENTS_EACH {
        let turn = Some(TurnId::new());
        bodies.push((
            turn,
            EventBody::PromptQueued(PromptQueued {
                text: sentence(rng, words, 12),
                command_id: None,
                origin: Origin::Terminal,
                context: None,
                settings: None,
                steers: Vec::new(),
            }),
        ));
        for call in 0..2 {
            let command = format!(
                "grep -rn {} src/ | {} --{}",
                word(rng, words),
                word(rng, words),
                word(rng, words)
            );
            let started: ToolCallStarted = serde_json::from_value(serde_json::json!({
                "call_id": CallId::from(format!("call_{call}").as_str()),
                "tool": "shell",
                "input": {"command": command},
            }))
            .expect("a tool_call_started");
            bodies.push((turn, EventBody::ToolCallStarted(started)));
        }
        bodies.push((
            turn,
            EventBody::AssistantMessageCompleted(AssistantMessageCompleted {
                index: 0,
                text: sentence(rng, words, 60),
            }),
        ));
        for _ in 0..6 {
            let filler = serde_json::from_value(serde_json::json!({
                "kind": "assistant_message_updated", "index": 0, "offset": 0, "delta": "…"
            }));
            if let Ok(body) = filler {
                bodies.push((turn, body));
            }
        }
    }
    bodies.truncate(EVENTS_EACH);
    bodies
        .into_iter()
        .zip(1..)
        .map(|((turn_id, body), seq)| Event {
            seq,
            at,
            conversation_id: id,
            turn_id,
            body,
        })
        .collect()
}

/// One conversation's commit, as the actor makes it: the summary, the events and their index entries.
fn commit(rng: &mut StdRng, words: &[String], at: Timestamp) -> Result<Commit> {
    let id = ConversationId::new();
    let events = conversation(rng, words, id, at);
    let title = sentence(rng, words, 5);
    let entries = efrd::search::extract::entries_of(&events, Some(&title));
    let rows = events
        .iter()
        .map(|event| {
            Ok(EventRow {
                conversation_id: id,
                seq: event.seq,
                kind: event.body.kind().to_owned(),
                turn_id: event.turn_id,
                at,
                body: serde_json::to_string(event)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let summary = ConversationSummary {
        id,
        title: Some(title),
        status: "idle".into(),
        cwd: Some("/home/ada/project".into()),
        created_at: at,
        updated_at: at,
        turn_count: 8,
        extra: serde_json::Map::new(),
    };
    Ok(Commit::events(rows).with_conversation(summary).with_index(entries))
}

/// Writes the corpus, oldest conversation first (a minute apart, ending now).
async fn corpus(store: &Store, rng: &mut StdRng, words: &[String]) -> Result<()> {
    let now = Timestamp::now().as_millis();
    let mut pending = Vec::new();
    for i in 0..CONVERSATIONS {
        let minutes = i64::try_from(CONVERSATIONS - i).unwrap_or(0);
        let at = Timestamp::from_millis(now - minutes * 60_000).context("a time")?;
        let commit = commit(rng, words, at)?;
        let store = store.clone();
        pending.push(tokio::spawn(async move { store.commit(commit).await }));
        if pending.len() == WRITERS {
            for task in pending.drain(..) {
                task.await??;
            }
        }
    }
    for task in pending {
        task.await??;
    }
    Ok(())
}

/// The seeded queries: each of the shapes in turn.
fn queries(rng: &mut StdRng, words: &[String]) -> Vec<String> {
    (0..QUERIES + WARM_UP)
        .map(|i| match i % 6 {
            0 => words[rng.random_range(0..20)].clone(),
            1 => words[rng.random_range(1000..VOCABULARY)].clone(),
            2 => format!("{} {}", word(rng, words), word(rng, words)),
            3 => made_up(rng).chars().take(2).collect(),
            4 => {
                let whole = &words[rng.random_range(0..words.len())];
                whole.chars().take(4).collect()
            }
            _ => format!("zz{}", made_up(rng)),
        })
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn main() -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut rng = StdRng::seed_from_u64(0x5ea2c4);
        let words = vocabulary(&mut rng);
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
        let path = dir.path().join("efr.db");
        let store = Store::open(&path).await?;
        let made = Instant::now();
        corpus(&store, &mut rng, &words).await?;
        let size = std::fs::metadata(&path).map_or(0, |m| m.len())
            + std::fs::metadata(path.with_extension("db-wal")).map_or(0, |m| m.len());
        println!(
            "search corpus: {CONVERSATIONS} conversations × {EVENTS_EACH} events written in {:.1} s, {:.0} MiB",
            made.elapsed().as_secs_f64(),
            size as f64 / (1024.0 * 1024.0)
        );
        let mut times = Vec::with_capacity(QUERIES);
        let (mut partial, mut rows) = (0, 0);
        for (i, query) in queries(&mut rng, &words).iter().enumerate() {
            let terms = efrd::search::run::terms_of(query).map_err(|e| anyhow::anyhow!("{}", e.message))?;
            let started = Instant::now();
            let outcome = efrd::search::run::conversations(&store, &terms, 50)
                .await
                .map_err(|e| anyhow::anyhow!("{}", e.message))?;
            let elapsed = started.elapsed();
            if i >= WARM_UP {
                times.push(elapsed);
                partial += usize::from(outcome.partial.is_some());
                rows += outcome.matches.len();
            }
        }
        store.close().await?;
        times.sort();
        let (p50, p99) = (percentile(&times, 0.5), percentile(&times, 0.99));
        let ok = p50 < BUDGET_P50 && p99 < BUDGET_P99;
        println!(
            "conversations.search: p50 {:.2} ms (budget < {} ms), p99 {:.2} ms (budget < {} ms), max {:.2} ms; \
             {QUERIES} queries, {:.1} rows each, {partial} partial  [{}]",
            p50.as_secs_f64() * 1000.0,
            BUDGET_P50.as_millis(),
            p99.as_secs_f64() * 1000.0,
            BUDGET_P99.as_millis(),
            times.last().map_or(0.0, |t| t.as_secs_f64() * 1000.0),
            rows as f64 / QUERIES as f64,
            if ok { "ok" } else { "OVER BUDGET" }
        );
        anyhow::Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
    })
}
