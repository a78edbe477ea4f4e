//! efr's integration tests, in one test binary: each file of `suite/` is a module (`suite::cli_pipe::...`), and
//! `common` is their shared setup (one binary to link instead of one per file).

mod common;
mod suite;
