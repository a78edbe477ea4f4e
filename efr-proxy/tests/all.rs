//! efr-proxy's integration tests, in one test binary: each file of `suite/` is a module. Every test runs the real
//! `efr-proxy` binary, hardened, inside a network namespace of its own (the tests run as root).

mod suite;
