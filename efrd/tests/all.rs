//! efrd's integration tests, in one test binary: each file of `suite/` is a module (`suite::daemon_tools::...`),
//! and `common` is their shared setup. One binary links SQLite, reqwest and tree-sitter once instead of once per
//! file (the layout of codex-rs's `core/tests/all.rs` and ripgrep's `tests/tests.rs`).

mod common;
mod suite;
