//! The rebuild of the index for the events written before it existed (a log from an efrd before search): a task
//! that reads them in pages of [`PAGE`] events, oldest first, and writes their entries with how far it got, one
//! transaction per page, resting [`REST`] between pages so that live commits and reads keep their pace. Until it
//! ends, conversations.search says how far it got (`index`, a percent). It starts after READY=1 and resumes where it
//! stopped after a restart (the progress is in the database).

use std::time::Duration;

use efr_protocol::events::{Event, EventBody};
use efr_protocol::ids::{ConversationId, Timestamp};
use efr_store::{IndexEntry, Store};

use super::extract::{entry_of, title_entry};

/// Events per page of the rebuild.
pub const PAGE: u32 = 500;

/// The pause between two pages.
pub const REST: Duration = Duration::from_millis(5);

/// Runs the rebuild to its end; a store error stops it (logged), and the next start resumes it.
pub async fn run(store: Store) {
    match rebuild(&store).await {
        Ok(0) => {}
        Ok(pages) => tracing::info!(pages, "search index: the rebuild is complete"),
        Err(error) => tracing::warn!(%error, "search index: the rebuild stopped; it resumes at the next start"),
    }
}

async fn rebuild(store: &Store) -> Result<u64, efr_store::StoreError> {
    let mut pages = 0;
    loop {
        let state = store.search_rebuild_state().await?;
        if state.complete() {
            return Ok(pages);
        }
        let page = store.search_rebuild_events(state.done, state.target, PAGE).await?;
        let Some(&(last, _)) = page.last() else {
            store.index_backfill(Vec::new(), state.target).await?;
            return Ok(pages);
        };
        let mut entries: Vec<IndexEntry> = Vec::new();
        let mut created: Vec<(ConversationId, Timestamp)> = Vec::new();
        for (rowid, row) in page {
            match serde_json::from_str::<Event>(&row.body) {
                Ok(event) => {
                    entries.extend(entry_of(&event));
                    if matches!(event.body, EventBody::ConversationCreated(_)) {
                        created.push((event.conversation_id, event.at));
                    }
                }
                Err(error) => {
                    tracing::warn!(rowid, %error, "search index: an event that does not parse is not indexed");
                }
            }
        }
        if !created.is_empty() {
            let summaries = store.conversations(created.iter().map(|(id, _)| *id).collect()).await?;
            for (id, at) in created {
                if let Some(title) = summaries.iter().find(|s| s.id == id).and_then(|s| s.title.as_deref()) {
                    entries.push(title_entry(id, title, at));
                }
            }
        }
        store.index_backfill(entries, last).await?;
        pages += 1;
        tokio::time::sleep(REST).await;
    }
}
