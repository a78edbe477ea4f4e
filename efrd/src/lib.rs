//! efrd, the efr daemon, as a library so that integration tests can drive it in-process too.
//!
//! One module per concern (ARCHITECTURE.md §3): `model/` (providers, catalog, keys, retry), `store/` (the SQLite
//! event log), and the rest as their issues land.

pub mod model;
pub mod store;
