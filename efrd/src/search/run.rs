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

/// A conversation's best entry outside the title: its position in the found entries and its matches.
struct BestHit {
    index: usize,
    matches: Vec<(usize, usize)>,
}

/// One conversation's best, as the entries are checked best first.
struct Best {
    /// Its best checked entry's score (title or not).
    score: f64,
    /// Its best checked entry outside the title; `None` while none was.
    hit: Option<BestHit>,
}

/// The best `limit` conversations of `found`, best first, each with its score and best hit.
///
/// Every entry is scored first (cheap: kind, age, bm25); then entries are checked and placed ([`ranges`], the
/// costly part) best first, and only while they can still change the result: an entry of a conversation outside
/// the best `limit` already found, or of one whose best hit is known, is not checked. The first checked entry of a
/// conversation carries its best score and the first one outside the title its best hit, as when every entry was
/// checked; a search that reads thousands of entries checks about `limit` of them.
fn best_conversations(
    found: &[FoundEntry],
    folded: &[Vec<char>],
    now: Timestamp,
    limit: usize,
) -> Vec<(ConversationId, Best)> {
    let mut order: Vec<(f64, usize)> = found
        .iter()
        .enumerate()
        .map(|(i, f)| (score(kind_of(&f.entry.kind), f.entry.at, now, f.bm25), i))
        .collect();
    // Best first; of equal scores the newest (found first).
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut ranked: Vec<(ConversationId, Best)> = Vec::new();
    let mut slots: HashMap<ConversationId, usize> = HashMap::new();
    let mut without_hit = 0_usize;
    for (score, i) in order {
        if ranked.len() >= limit && without_hit == 0 {
            break;
        }
        let entry = &found[i].entry;
        let kind = kind_of(&entry.kind);
        let slot = slots.get(&entry.conversation_id).copied();
        match slot {
            None if ranked.len() >= limit => continue,
            Some(slot) if ranked[slot].1.hit.is_some() || kind == SearchKind::Title => continue,
            _ => {}
        }
        let Some(matches) = ranges(&entry.text, folded) else {
            continue;
        };
        let slot = slot.unwrap_or_else(|| {
            ranked.push((entry.conversation_id, Best { score, hit: None }));
            slots.insert(entry.conversation_id, ranked.len() - 1);
            without_hit += 1;
            ranked.len() - 1
        });
        if kind != SearchKind::Title {
            ranked[slot].1.hit = Some(BestHit { index: i, matches });
            without_hit -= 1;
        }
    }
    ranked
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
    let conversations_scored = found
        .entries
        .iter()
        .map(|f| f.entry.conversation_id)
        .collect::<std::collections::HashSet<_>>()
        .len() as u64;
    let titles_scored = found
        .entries
        .iter()
        .filter(|f| kind_of(&f.entry.kind) == SearchKind::Title)
        .count() as u64;
    let ranked = best_conversations(&found.entries, &folded, Timestamp::now(), limit);
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

#[cfg(test)]
mod tests {
    use efr_store::IndexEntry;

    use super::*;

    fn found(conversation_id: ConversationId, kind: &str, text: &str, at: Timestamp) -> FoundEntry {
        FoundEntry {
            entry: IndexEntry {
                conversation_id,
                seq: u64::from(kind != "title"),
                kind: kind.into(),
                turn_id: None,
                at,
                text: text.into(),
            },
            bm25: -1.0,
        }
    }

    #[test]
    fn the_best_conversations_are_ranked_by_their_best_checked_entry() {
        let now = Timestamp::now();
        let old = Timestamp::from_millis(now.as_millis() - 30 * 86_400_000).unwrap_or(now);
        let (a, b, c, d) = (
            ConversationId::new(),
            ConversationId::new(),
            ConversationId::new(),
            ConversationId::new(),
        );
        // Newest first, as the store reads them.
        let entries = vec![
            // a: a recent title and a recent prompt.
            found(a, "title", "fix the parser", now),
            found(a, "prompt", "please fix the parser", now),
            // b: its best-scored entry does not hold the term (the index and the check disagree): the next one counts.
            found(b, "title", "something else", now),
            found(b, "answer", "the parser is fixed", old),
            // c: an old answer only.
            found(c, "answer", "a parser", old),
            // d: a title only, old: a score but no hit.
            found(d, "title", "parser notes", old),
        ];
        let folded = folded_terms(&["parser".to_owned()]);
        let ranked = best_conversations(&entries, &folded, now, 10);
        let order: Vec<ConversationId> = ranked.iter().map(|(id, _)| *id).collect();
        assert_eq!(
            order,
            [a, d, b, c],
            "title 4 beats answer 1 of the same age; recent beats old"
        );
        let best = |id| &ranked.iter().find(|(i, _)| *i == id).expect("ranked").1;
        assert_eq!(
            best(a).hit.as_ref().map(|h| h.index),
            Some(1),
            "the prompt, not the title"
        );
        assert_eq!(best(b).hit.as_ref().map(|h| h.index), Some(3));
        assert!((best(b).score - score(SearchKind::Answer, old, now, -1.0)).abs() < 1e-12);
        assert!(best(d).hit.is_none(), "a title gives a score, not a hit");
        assert_eq!(best(c).hit.as_ref().map(|h| h.matches.clone()), Some(vec![(2, 8)]));
        // Capped: the best two only, each still with its best hit.
        let two = best_conversations(&entries, &folded, now, 2);
        assert_eq!(two.iter().map(|(id, _)| *id).collect::<Vec<_>>(), [a, d]);
        assert_eq!(two[0].1.hit.as_ref().map(|h| h.index), Some(1));
    }
}
