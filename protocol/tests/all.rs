//! The protocol crate's integration tests, in one test binary: each file of `suite/` is a module
//! (`suite::fixtures::...`).

mod suite;
