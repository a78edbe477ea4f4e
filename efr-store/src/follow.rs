//! The index follower: the writer thread adds the entries that commits wrote to `search_entries` to the FTS5 index
//! `search_index`, in batches of their own, within a bounded lag (docs/adr/0025-search-index.md, "The follower").
//!
//! A commit writes its entries' texts in its savepoint (cheap: one row each) but not their FTS5 postings, which cost
//! far more (a few hundred tokens each for the trigram tokenizer). The writer thread indexes them after it answered
//! the commits of a batch, once [`FOLLOW_ENTRIES`] entries are pending or the oldest pending one has waited
//! [`FOLLOW_LAG`], whichever comes first, and right away when it is idle past that time. A pass indexes every pending
//! entry, [`FOLLOW_PAGE`] at a time, each page in one transaction with the new `search_follow.indexed` (the last
//! entry id the index holds). So after each round of the writer at most [`FOLLOW_ENTRIES`] entries, written less
//! than [`FOLLOW_LAG`] ago, are not indexed yet, and a search reads those (the tail, above `indexed`) from
//! `search_entries` itself: it sees every committed entry.
//!
//! Its transactions run with `synchronous=NORMAL`: they hold nothing that is not already durable in
//! `search_entries`, so a crash that loses one loses only work, which the next start does again; the log's own
//! commits stay `FULL`. A crash between a commit and its pass leaves a tail, which the writer indexes as soon as it
//! starts (without holding up `Store::open`, so efrd's READY=1 does not wait for it): at most [`FOLLOW_ENTRIES`] plus
//! one batch's entries.

use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension};

use super::error::Result;

/// Entries pending that make a pass due.
///
/// A pass has a fixed cost (FTS5 flushes a segment of its own and merges segments later), large against a few
/// entries: on efrd's busiest load, passes of about 15 entries cost twice the CPU an entry of passes of 300
/// (docs/adr/0025-search-index.md, "Passes of a size"). Hence a long lag and a large batch; the tail they leave is
/// matched by a search in about a millisecond.
pub(crate) const FOLLOW_ENTRIES: u64 = 1_024;

/// The longest an entry waits for its pass while the writer is busy or idle.
pub(crate) const FOLLOW_LAG: Duration = Duration::from_secs(1);

/// Entries indexed in one transaction of a pass.
pub(crate) const FOLLOW_PAGE: i64 = 2_048;

/// What the writer knows of the entries not indexed yet.
#[derive(Debug)]
pub(crate) struct Follower {
    /// Whether it indexes at all ([`crate::StoreOptions::index`]).
    on: bool,
    /// How many entries are not indexed (counted at start and after each pass, added to after each batch).
    pending: u64,
    /// When the oldest of them was written, about; `None` when none is pending.
    since: Option<Instant>,
}

impl Follower {
    /// The follower of a store just opened: what a crash left pending is due at once.
    pub(crate) fn start(conn: &Connection) -> Self {
        let mut follower = Self {
            on: true,
            pending: 0,
            since: None,
        };
        follower.recount(conn);
        if let Some(since) = &mut follower.since {
            *since = Instant::now().checked_sub(FOLLOW_LAG).unwrap_or(*since);
        }
        follower
    }

    /// A follower that never indexes: entries stay pending (a search reads them directly) until a store opened
    /// with the index on indexes them.
    pub(crate) fn off() -> Self {
        Self {
            on: false,
            pending: 0,
            since: None,
        }
    }

    /// Counts the pending entries again, after a write that may have added some (a rebuild's page).
    pub(crate) fn recount(&mut self, conn: &Connection) {
        if !self.on {
            return;
        }
        match pending(conn) {
            Ok(0) => {
                self.pending = 0;
                self.since = None;
            }
            Ok(count) => {
                self.pending = count;
                self.since.get_or_insert_with(Instant::now);
            }
            Err(e) => tracing::warn!(error = %e, "search index: cannot count the entries not indexed yet"),
        }
    }

    /// Notes that a batch wrote `entries` entries.
    pub(crate) fn wrote(&mut self, entries: usize) {
        if self.on && entries > 0 {
            self.pending = self.pending.saturating_add(entries as u64);
            self.since.get_or_insert_with(Instant::now);
        }
    }

    /// Whether a pass is due now.
    pub(crate) fn due(&self) -> bool {
        self.pending >= FOLLOW_ENTRIES || self.since.is_some_and(|since| since.elapsed() >= FOLLOW_LAG)
    }

    /// How long the idle writer may wait for a request before a pass is due; `None` when nothing is pending.
    pub(crate) fn wait(&self) -> Option<Duration> {
        if self.pending >= FOLLOW_ENTRIES {
            return Some(Duration::ZERO);
        }
        self.since.map(|since| FOLLOW_LAG.saturating_sub(since.elapsed()))
    }

    /// Indexes every pending entry, a page per transaction. A failure (a full disk) is logged; the entries stay
    /// pending and the next pass, [`FOLLOW_LAG`] later, tries again (a search reads them from the tail meanwhile).
    pub(crate) fn pass(&mut self, conn: &Connection) {
        if !self.on {
            return;
        }
        loop {
            match index_page(conn) {
                Ok(0) => {
                    self.pending = 0;
                    self.since = None;
                    return;
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "search index: cannot index the newest entries; trying again later");
                    self.since = Some(Instant::now());
                    self.pending = self.pending.min(FOLLOW_ENTRIES - 1);
                    return;
                }
            }
        }
    }
}

/// How many entries are above `search_follow.indexed`.
fn pending(conn: &Connection) -> Result<u64> {
    let count: i64 = conn
        .prepare_cached(
            "SELECT count(*) FROM search_entries WHERE id > (SELECT indexed FROM search_follow WHERE one = 1)",
        )?
        .query_row([], |row| row.get(0))?;
    Ok(u64::try_from(count).unwrap_or(0))
}

/// Indexes the next [`FOLLOW_PAGE`] entries above `indexed` in one transaction; returns how many it indexed.
fn index_page(conn: &Connection) -> Result<usize> {
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let indexed = (|| -> Result<usize> {
        conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
        let written = (|| -> Result<usize> {
            let indexed: i64 = conn
                .prepare_cached("SELECT indexed FROM search_follow WHERE one = 1")?
                .query_row([], |row| row.get(0))?;
            let last: Option<i64> = conn
                .prepare_cached(
                    "SELECT max(id) FROM (SELECT id FROM search_entries WHERE id > ?1 ORDER BY id LIMIT ?2)",
                )?
                .query_row([indexed, FOLLOW_PAGE], |row| row.get(0))
                .optional()?
                .flatten();
            let Some(last) = last else { return Ok(0) };
            let written = conn
                .prepare_cached(
                    "INSERT INTO search_index (rowid, text) \
                     SELECT id, text FROM search_entries WHERE id > ?1 AND id <= ?2 ORDER BY id",
                )?
                .execute([indexed, last])?;
            conn.prepare_cached("UPDATE search_follow SET indexed = ?1 WHERE one = 1")?
                .execute([last])?;
            Ok(written)
        })();
        match written {
            Ok(written) => {
                conn.prepare_cached("COMMIT")?.execute([])?;
                Ok(written)
            }
            Err(e) => {
                if !conn.is_autocommit() {
                    let _ = conn.execute_batch("ROLLBACK");
                }
                Err(e)
            }
        }
    })();
    // The log's commits stay durable at COMMIT whatever happened here.
    conn.pragma_update(None, "synchronous", "FULL")?;
    indexed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_is_due_after_enough_entries_or_enough_time() {
        let idle = Follower {
            on: true,
            pending: 0,
            since: None,
        };
        assert!(!idle.due());
        assert_eq!(idle.wait(), None, "nothing pending: the writer sleeps until a request");
        let mut some = Follower {
            on: true,
            pending: 0,
            since: None,
        };
        some.wrote(3);
        assert!(!some.due(), "3 entries written just now wait for company");
        assert!(some.wait().is_some_and(|w| w > Duration::ZERO && w <= FOLLOW_LAG));
        some.wrote(usize::try_from(FOLLOW_ENTRIES).unwrap_or(256));
        assert!(some.due());
        assert_eq!(some.wait(), Some(Duration::ZERO));
        let old = Follower {
            on: true,
            pending: 1,
            since: Instant::now().checked_sub(FOLLOW_LAG),
        };
        assert!(old.due(), "one entry that waited FOLLOW_LAG is due");
        let mut off = Follower::off();
        off.wrote(usize::try_from(FOLLOW_ENTRIES).unwrap_or(256));
        assert!(!off.due(), "a follower that is off is never due");
        assert_eq!(off.wait(), None);
    }
}
