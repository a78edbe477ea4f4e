//! conversations.search and conversation.search: params checked here, the search in [`crate::search::run`], the
//! rows made as conversations.recent makes them ([`crate::conversation::rows`]).

use efr_protocol::ErrorBody;
use efr_protocol::wire::{
    ConversationSearchParams, ConversationSearchResult, ConversationsSearchParams, ConversationsSearchResult,
    SearchRow, SearchStats,
};
use efr_store::PageRequest;
use serde_json::Value;

use super::{params, result};
use crate::conversation::rows::{self, Asker};
use crate::search::run;
use crate::server::RequestCtx;

/// conversations.search's default and largest `limit` (spec: 50 when absent, 200 at most).
pub const LIMIT_DEFAULT: u32 = 50;
/// See [`LIMIT_DEFAULT`].
pub const LIMIT_MAX: u32 = 200;
/// conversation.search's default and largest `limit` (spec: 20 when absent, 50 at most).
pub const HITS_DEFAULT: u32 = 20;
/// See [`HITS_DEFAULT`].
pub const HITS_MAX: u32 = 50;

/// How many of the newest rows an empty query (and `current`) reads.
const RECENT_SCAN: u32 = 500;

fn limit(asked: Option<u32>, default: u32, max: u32) -> Result<usize, ErrorBody> {
    let limit = asked.unwrap_or(default);
    if (1..=max).contains(&limit) {
        Ok(limit as usize)
    } else {
        Err(ErrorBody::invalid(format!(
            "bad params: `limit` must be 1 to {max}, not {limit}"
        )))
    }
}

/// The first 8 hex digits of an id.
fn short_id(id: &impl ToString) -> String {
    id.to_string().chars().take(8).collect()
}

/// conversations.search: the best conversations for `query`; an empty query gives the recent ones.
///
/// # Errors
/// `invalid` for a query over 1 KiB or of more than 16 words, a `limit` outside 1 to 200, a relative `pwd`;
/// `unavailable` when the store fails.
pub async fn conversations_search(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let started = std::time::Instant::now();
    let params: ConversationsSearchParams = params(raw)?;
    let limit = limit(params.limit, LIMIT_DEFAULT, LIMIT_MAX)?;
    if params.pwd.as_ref().is_some_and(|pwd| !pwd.is_absolute()) {
        return Err(ErrorBody::invalid("bad params: `pwd` must be an absolute path"));
    }
    let terms = run::terms_of(&params.query)?;
    let registry = ctx.daemon.projects.current();
    let places = crate::routing::RoutingPlaces {
        registry: &registry,
        terminals: &ctx.daemon.terminals,
    };
    let asker = Asker {
        tty: params.tty.as_deref(),
        pwd: params.pwd.as_deref(),
        places: Some(&places),
    };
    let store = &ctx.daemon.store;
    // The newest rows: the whole answer of an empty query, and the terminal's current conversation.
    let recent = if terms.is_empty() || asker.tty.is_some() {
        let page = store
            .list_conversations(PageRequest {
                limit: RECENT_SCAN,
                after: None,
            })
            .await
            .map_err(ErrorBody::from)?;
        rows::recent(&page.conversations, asker, limit)
    } else {
        rows::recent(&[], asker, limit)
    };
    if terms.is_empty() {
        let rows = recent
            .conversations
            .into_iter()
            .map(|conversation| SearchRow {
                short_id: short_id(&conversation.summary.conversation_id),
                conversation,
                title_ranges: None,
                hit: None,
            })
            .collect();
        let stats = params.stats.then(|| SearchStats {
            rows_scanned: 0,
            conversations_scored: 0,
            titles_scored: 0,
            elapsed_us: u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        });
        return result(&ConversationsSearchResult {
            rows,
            scope: recent.scope,
            current: recent.current,
            partial: None,
            index: None,
            stats,
        });
    }
    let outcome = run::conversations(store, &terms, limit).await?;
    let rows = outcome
        .matches
        .into_iter()
        .map(|found| SearchRow {
            short_id: short_id(&found.summary.id),
            conversation: rows::recent_row(&found.summary, asker),
            title_ranges: found.title_ranges,
            hit: found.hit,
        })
        .collect();
    let mut stats = outcome.stats;
    stats.elapsed_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    result(&ConversationsSearchResult {
        rows,
        scope: recent.scope,
        current: recent.current,
        partial: outcome.partial,
        index: outcome.index,
        stats: params.stats.then_some(stats),
    })
}

/// conversation.search: the hits of `query` in one conversation, its title first, then newest first.
///
/// # Errors
/// `invalid` for an empty query, a query over 1 KiB or of more than 16 words, a `limit` outside 1 to 50;
/// `not_found` for a conversation that does not exist; `unavailable` when the store fails.
pub async fn conversation_search(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: ConversationSearchParams = params(raw)?;
    let limit = limit(params.limit, HITS_DEFAULT, HITS_MAX)?;
    let terms = run::terms_of(&params.query)?;
    if terms.is_empty() {
        return Err(ErrorBody::invalid("bad params: `query` is empty"));
    }
    let (hits, title, partial) = run::conversation(&ctx.daemon.store, params.conversation_id, &terms, limit).await?;
    result(&ConversationSearchResult { hits, title, partial })
}
