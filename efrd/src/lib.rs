//! efrd, the efr daemon, as a library so that integration tests can drive it in-process too.
//!
//! One module per concern (ARCHITECTURE.md §3):
//!
//! | module | owns |
//! |---|---|
//! | [`listen`] | socket activation, self-bind, the single-instance lock, sd_notify |
//! | [`config`] | the four roots, `config.toml`, reload |
//! | [`server`] | connections, hello, scopes, dispatch, streams, cancel, backpressure |
//! | [`store`] | the SQLite event log, conversations, command ids |
//! | [`conversation`] | the per-conversation actor: queue, turns, interrupt, subscribers, restart recovery |
//! | [`turn`] | the turn loop: model stream → events |
//! | [`model`] | providers, retries, keys, catalog |
//! | [`daemon`] | the shared state and the daemon's life from start to stop |

pub mod config;
pub mod conversation;
pub mod daemon;
pub mod lifecycle;
pub mod listen;
pub mod model;
pub mod policy;
pub mod sandbox;
pub mod server;
pub mod snapshot;
pub mod store;
pub mod tools;
pub mod turn;
