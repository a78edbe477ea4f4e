//! One module per file of this folder; `tests/all.rs` is the binary that holds them.

mod clients;
mod control;
mod faults;
mod forwarding;
mod harness;
mod sandbox;
mod traps;
