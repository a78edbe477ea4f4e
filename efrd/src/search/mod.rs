//! Search over conversations (docs/adr/0025-search-index.md): what the index holds, where a query's terms are in a
//! text, how a match scores, the two searches, and the rebuild of the index for a log older than it.
//!
//! The index lives in the store (efr-store's `search`); this module decides what goes in ([`extract`]: titles,
//! prompts, answers and command lines, their secrets replaced by the shared detector `efr_protocol::mask`) and
//! what a query finds ([`run`], [`ranges`], [`rank`]). The conversation actor adds [`extract::entries_of`] to each
//! commit, so an event and its entry's text are written in one savepoint; the store indexes the text within a
//! bounded lag and a search reads what is not indexed yet directly, so it sees every committed entry.

pub mod extract;
pub mod ranges;
pub mod rank;
pub mod rebuild;
pub mod run;
