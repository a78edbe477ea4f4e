//! The two searches: over every conversation (conversations.search) and in one (conversation.search).
//!
//! conversations.search asks the index for the entries that hold every term, newest first, at most [`ROW_CAP`]
//! within [`TIME_CAP`] (the result says `partial` when it stopped early), checks and places each match itself
//! ([`super::ranges`]), scores it ([`super::rank`]), keeps each conversation's best, and reads the summaries of the
//! best `limit` conversations in one query. conversation.search reads the conversation's entries (its title first,
//! then newest first) and keeps those that match.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use efr_protocol::ids::{ConversationId, Timestamp};
use efr_protocol::mask::mask_secrets;
use efr_protocol::wire::{SearchHit, SearchKind, SearchPartial, SearchStats, TextRange};
use efr_protocol::{ErrorBody, ErrorCode};
use efr_store::{ConversationSummary, FoundEntry, IndexQuery, Stopped, Store};

use super::ranges::{folded_terms, hit_lines, ranges, text_ranges};
use super::rank::score;

/// The most index entries one search looks at, newest first.
pub const ROW_CAP: usize = 5_000;

/// The most time one search spends reading the index.
pub const TIME_CAP: Duration = Duration::from_millis(50);

/// The longest query, in bytes of UTF-8.
pub const MAX_QUERY_BYTES: usize = 1024;

/// The most distinct words of a query.
pub const MAX_TERMS: usize = 16;

/// The words of `query`: split on whitespace, each distinct. Empty for a query of only whitespace.
///
/// # Errors
/// `invalid` for a query over [`MAX_QUERY_BYTES`] or with more than [`MAX_TERMS`] words.
pub fn terms_of(query: &str) -> Result<Vec<String>, ErrorBody> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(ErrorBody::invalid(format!(
            "bad params: `query` is {} bytes; at most {MAX_QUERY_BYTES}",
            query.len()
        )));
    }
    let mut terms: Vec<String> = Vec::new();
    for word in query.split_whitespace() {
        if !terms.iter().any(|t| t == word) {
            terms.push(word.to_owned());
        }
    }
    if terms.len() > MAX_TERMS {
        return Err(ErrorBody::invalid(format!(
            "bad params: `query` has {} words; at most {MAX_TERMS}",
            terms.len()
        )));
    }
    Ok(terms)
}

/// The wire kind of an entry's kind.
fn kind_of(kind: &str) -> SearchKind {
    SearchKind::ALL
        .iter()
        .copied()
        .find(|k| k.as_str() == kind)
        .unwrap_or(SearchKind::Unknown)
}

/// A conversation's title with its secrets replaced (titles stored before masking existed are masked when shown).
#[must_use]
pub fn shown_title(summary: &ConversationSummary) -> Option<String> {
    summary.title.as_deref().map(|t| mask_secrets(t).into_owned())
}

/// The hit of a found entry whose matches are `found`.
fn hit(found: &FoundEntry, matches: &[(usize, usize)]) -> SearchHit {
    let entry = &found.entry;
    SearchHit {
        kind: kind_of(&entry.kind),
        seq: entry.seq,
        turn_id: entry.turn_id,
        at: entry.at,
        history_cursor: entry.seq.saturating_sub(1).to_string(),
        lines: hit_lines(&entry.text, matches),
    }
}

fn partial(stopped: Option<Stopped>) -> Option<SearchPartial> {
    stopped.map(|s| match s {
        Stopped::RowCap => SearchPartial::RowCap,
        Stopped::TimeCap => SearchPartial::TimeCap,
    })
}

/// One conversation that matched.
#[derive(Debug, Clone)]
pub struct Match {
    /// Its summary row (the title as stored; show [`shown_title`]).
    pub summary: ConversationSummary,
    /// The matches in its shown title; `None` when the title has none.
    pub title_ranges: Option<Vec<TextRange>>,
    /// Its best match outside the title.
    pub hit: Option<SearchHit>,
    /// Its score ([`super::rank`]).
    pub score: f64,
}

/// What conversations.search found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The conversations, best first.
    pub matches: Vec<Match>,
    /// Why it may miss a match.
    pub partial: Option<SearchPartial>,
    /// The percent indexed while a rebuild runs.
    pub index: Option<u8>,
    /// What it cost.
    pub stats: SearchStats,
}

/// A conversation's best entry outside the title so far: its score, its position in the found entries, its matches.
struct BestHit {
    score: f64,
    index: usize,
    matches: Vec<(usize, usize)>,
}

/// The best of one conversation while the entries are read.
#[derive(Default)]
struct Best {
    score: f64,
    hit: Option<BestHit>,
}

/// conversations.search for `terms` (not empty): the best `limit` conversations.
///
/// # Errors
/// `unavailable` when the store fails.
pub async fn conversations(store: &Store, terms: &[String], limit: usize) -> Result<Outcome, ErrorBody> {
    let started = Instant::now();
    let found = store
        .search_index(IndexQuery {
            terms: terms.to_vec(),
            row_cap: ROW_CAP,
            time_cap: TIME_CAP,
        })
        .await
        .map_err(ErrorBody::from)?;
    let folded = folded_terms(terms);
    let now = Timestamp::now();
    let mut best: HashMap<ConversationId, Best> = HashMap::new();
    let mut titles_scored = 0;
    for (i, entry) in found.entries.iter().enumerate() {
        let Some(matches) = ranges(&entry.entry.text, &folded) else {
            continue;
        };
        let kind = kind_of(&entry.entry.kind);
        let score = score(kind, entry.entry.at, now, entry.bm25);
        let slot = best.entry(entry.entry.conversation_id).or_default();
        slot.score = slot.score.max(score);
        if kind == SearchKind::Title {
            titles_scored += 1;
        } else if slot.hit.as_ref().is_none_or(|best| score > best.score) {
            slot.hit = Some(BestHit {
                score,
                index: i,
                matches,
            });
        }
    }
    let conversations_scored = best.len() as u64;
    let mut ranked: Vec<(ConversationId, Best)> = best.into_iter().collect();
    ranked.sort_by(|a, b| b.1.score.total_cmp(&a.1.score));
    ranked.truncate(limit);
    let summaries = store
        .conversations(ranked.iter().map(|(id, _)| *id).collect())
        .await
        .map_err(ErrorBody::from)?;
    let mut by_id: HashMap<ConversationId, ConversationSummary> = summaries.into_iter().map(|s| (s.id, s)).collect();
    let mut matches = Vec::with_capacity(ranked.len());
    for (id, best) in ranked {
        // A conversation deleted since the index was read is left out.
        let Some(summary) = by_id.remove(&id) else { continue };
        let title_ranges = shown_title(&summary)
            .and_then(|title| ranges(&title, &folded))
            .map(|found| text_ranges(&found));
        let hit = best.hit.map(|best| hit(&found.entries[best.index], &best.matches));
        if title_ranges.is_none() && hit.is_none() {
            continue;
        }
        matches.push(Match {
            summary,
            title_ranges,
            hit,
            score: best.score,
        });
    }
    let state = store.search_rebuild_state().await.map_err(ErrorBody::from)?;
    let elapsed = started.elapsed();
    Ok(Outcome {
        matches,
        partial: partial(found.stopped),
        index: (!state.complete()).then(|| state.percent()),
        stats: SearchStats {
            rows_scanned: found.entries.len() as u64,
            conversations_scored,
            titles_scored,
            elapsed_us: u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
        },
    })
}

/// What conversation.search found: hits (the title first, then newest first), the shown title, `partial`.
///
/// # Errors
/// `not_found` for a conversation that does not exist; `unavailable` when the store fails.
pub async fn conversation(
    store: &Store,
    conversation_id: ConversationId,
    terms: &[String],
    limit: usize,
) -> Result<(Vec<SearchHit>, Option<String>, Option<SearchPartial>), ErrorBody> {
    let summary = store
        .conversation(conversation_id)
        .await
        .map_err(ErrorBody::from)?
        .ok_or_else(|| ErrorBody::new(ErrorCode::NotFound, format!("no conversation {conversation_id}")))?;
    let found = store
        .search_entries(conversation_id, ROW_CAP * 4, TIME_CAP)
        .await
        .map_err(ErrorBody::from)?;
    let folded = folded_terms(terms);
    let mut hits = Vec::new();
    for entry in &found.entries {
        if hits.len() == limit {
            break;
        }
        if let Some(matches) = ranges(&entry.entry.text, &folded) {
            hits.push(hit(entry, &matches));
        }
    }
    Ok((hits, shown_title(&summary), partial(found.stopped)))
}
