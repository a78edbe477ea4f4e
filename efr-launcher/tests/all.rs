//! The launcher's integration tests, in one test binary: each file of `suite/` is a module (`suite::escape::...`),
//! and `support` is their shared fixture (one binary to link instead of one per file).

mod suite;
mod support;
