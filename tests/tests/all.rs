//! The test-support crate's own integration tests, in one test binary: each file of `suite/` is a module.

mod suite;
