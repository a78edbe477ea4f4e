//! Experiment (on demand, not a budget): where the search index's write time goes. `cargo bench -p efr-store --bench
//! index_cost`; the figures are in docs/adr/0025-search-index.md.
//!
//! Each line writes 8,000 texts (the store bench's shape B: about 400 characters of seeded random words) into a
//! table like `search_entries` and an external-content FTS5 index over it, in transactions of the size shown, on a
//! real file with the store's settings (WAL, `synchronous=FULL`, `auto_vacuum=INCREMENTAL`,
//! `secure_delete=FAST`), and prints the wall and CPU time per text. One setting changes per line. The last lines
//! time the secret detector (`efr_protocol::mask`) on the same texts.

#![allow(clippy::print_stdout)] // An experiment that prints its figures.

use std::time::{Duration, Instant};

use anyhow::Result;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rusqlite::Connection;

/// Texts per line.
const TEXTS: usize = 8_000;

/// About `chars` characters of seeded random words of 2 to 9 letters (the store bench's text).
fn random_words(rng: &mut StdRng, chars: usize) -> String {
    const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
    let mut text = String::with_capacity(chars + 20);
    while text.len() < chars {
        let length = rng.random_range(2..10);
        text.extend((0..length).map(|_| char::from(LETTERS[rng.random_range(0..LETTERS.len())])));
        text.push(' ');
    }
    text
}

/// About `chars` characters drawn from a vocabulary of 4,000 made-up words with a Zipf-like skew (the search
/// bench's text): words repeat, as in prose.
fn vocabulary_words(rng: &mut StdRng, words: &[String], chars: usize) -> String {
    let mut text = String::with_capacity(chars + 20);
    while text.len() < chars {
        let x: f64 = rng.random_range(0.0..1.0);
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let index = ((words.len() as f64).powf(x) - 1.0) as usize;
        text.push_str(&words[index.min(words.len() - 1)]);
        text.push(' ');
    }
    text
}

fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct we pass; a zeroed rusage is a valid value for it.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let micros = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    micros(usage.ru_utime) + micros(usage.ru_stime)
}

/// One line of the experiment.
struct Setup<'a> {
    label: &'a str,
    /// The FTS5 options after `content_rowid`; `None` writes the table only.
    fts: Option<&'a str>,
    /// `INSERT INTO search_index (search_index, rank) VALUES ...` settings.
    settings: &'a [(&'a str, i64)],
    secure_delete: &'a str,
    per_transaction: usize,
}

fn run(setup: &Setup<'_>, texts: &[String]) -> Result<()> {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let path = dir.path().join("x.db");
    let conn = Connection::open(&path)?;
    conn.pragma_update(None, "auto_vacuum", 2)?;
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "secure_delete", setup.secure_delete)?;
    conn.execute_batch("CREATE TABLE e (id INTEGER PRIMARY KEY, text TEXT NOT NULL) STRICT;")?;
    if let Some(options) = setup.fts {
        conn.execute_batch(&format!(
            "CREATE VIRTUAL TABLE i USING fts5 (text, content = 'e', content_rowid = 'id', {options});"
        ))?;
        for (name, value) in setup.settings {
            conn.execute(
                "INSERT INTO i (i, rank) VALUES (?1, ?2)",
                rusqlite::params![name, value],
            )?;
        }
    }
    let started = Instant::now();
    let cpu = cpu_time();
    for chunk in texts.chunks(setup.per_transaction) {
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let first: i64 = conn.query_row("SELECT coalesce(max(id), 0) + 1 FROM e", [], |r| r.get(0))?;
        for (id, text) in (first..).zip(chunk) {
            conn.prepare_cached("INSERT INTO e (id, text) VALUES (?1, ?2)")?
                .execute(rusqlite::params![id, text])?;
            if setup.fts.is_some() {
                conn.prepare_cached("INSERT INTO i (rowid, text) VALUES (?1, ?2)")?
                    .execute(rusqlite::params![id, text])?;
            }
        }
        conn.execute_batch("COMMIT")?;
    }
    let wall = started.elapsed().as_secs_f64() * 1e6 / texts.len() as f64;
    let cpu = cpu_time().saturating_sub(cpu).as_secs_f64() * 1e6 / texts.len() as f64;
    drop(conn);
    let size = std::fs::metadata(&path).map_or(0, |m| m.len())
        + std::fs::metadata(path.with_extension("db-wal")).map_or(0, |m| m.len());
    println!(
        "{:<52} {:>5}/txn: {wall:>7.1} µs/text wall, {cpu:>7.1} µs/text CPU, {:>5.1} MiB",
        setup.label,
        setup.per_transaction,
        size as f64 / 1_048_576.0
    );
    Ok(())
}

fn main() -> Result<()> {
    let mut rng = StdRng::seed_from_u64(5);
    let random: Vec<String> = (0..TEXTS).map(|_| random_words(&mut rng, 400)).collect();
    let words: Vec<String> = (0..4_000)
        .map(|_| random_words(&mut rng, 3).trim().to_owned())
        .collect();
    let prose: Vec<String> = (0..TEXTS).map(|_| vocabulary_words(&mut rng, &words, 400)).collect();
    let short: Vec<String> = (0..TEXTS).map(|_| random_words(&mut rng, 100)).collect();
    let long: Vec<String> = (0..TEXTS / 4).map(|_| random_words(&mut rng, 1_600)).collect();
    let base = |label, per_transaction| Setup {
        label,
        fts: Some("tokenize = 'trigram'"),
        settings: &[("secure-delete", 1)],
        secure_delete: "FAST",
        per_transaction,
    };
    println!(
        "load average: {}",
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
    );
    for per_transaction in [160, 2_000] {
        run(
            &Setup {
                fts: None,
                ..base("table only, no FTS5", per_transaction)
            },
            &random,
        )?;
        run(
            &base("trigram (the store today), random words", per_transaction),
            &random,
        )?;
        run(&base("trigram, the search corpus's words", per_transaction), &prose)?;
        run(
            &Setup {
                fts: Some("tokenize = 'unicode61'"),
                ..base("unicode61, random words", per_transaction)
            },
            &random,
        )?;
        run(
            &Setup {
                fts: Some("tokenize = 'unicode61'"),
                ..base("unicode61, the search corpus's words", per_transaction)
            },
            &prose,
        )?;
        run(
            &Setup {
                fts: Some("tokenize = 'trigram', detail = column"),
                ..base("trigram detail=column", per_transaction)
            },
            &random,
        )?;
        run(
            &Setup {
                fts: Some("tokenize = 'trigram', detail = none"),
                ..base("trigram detail=none", per_transaction)
            },
            &random,
        )?;
        run(
            &Setup {
                settings: &[("secure-delete", 1), ("automerge", 0)],
                ..base("trigram automerge=0", per_transaction)
            },
            &random,
        )?;
        run(
            &Setup {
                settings: &[("secure-delete", 1), ("automerge", 16)],
                ..base("trigram automerge=16", per_transaction)
            },
            &random,
        )?;
        run(
            &Setup {
                settings: &[("secure-delete", 1), ("crisismerge", 64)],
                ..base("trigram crisismerge=64", per_transaction)
            },
            &random,
        )?;
        run(
            &Setup {
                settings: &[("secure-delete", 1), ("pgsz", 4000)],
                ..base("trigram pgsz=4000", per_transaction)
            },
            &random,
        )?;
        run(
            &Setup {
                settings: &[],
                ..base("trigram, FTS5 secure-delete off", per_transaction)
            },
            &random,
        )?;
        run(
            &Setup {
                secure_delete: "OFF",
                ..base("trigram, PRAGMA secure_delete=OFF", per_transaction)
            },
            &random,
        )?;
    }
    // The follower's passes: how much a pass's size changes the CPU of each text (efr-store's follow.rs).
    for per_transaction in [16, 64, 256, 1_024] {
        run(
            &base("trigram, the search corpus's words, a pass", per_transaction),
            &prose,
        )?;
    }
    run(&base("trigram, 100-character texts", 160), &short)?;
    run(&base("trigram, 1,600-character texts", 160), &long)?;
    for (label, texts) in [("random words", &random), ("the search corpus's words", &prose)] {
        let started = Instant::now();
        let mut kept = 0;
        for text in texts {
            kept += efr_protocol::mask::mask_secrets(text).len();
        }
        println!(
            "secret detector, {label}: {:.1} µs/text ({kept} bytes kept)",
            started.elapsed().as_secs_f64() * 1e6 / texts.len() as f64
        );
    }
    Ok(())
}
