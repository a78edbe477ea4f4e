//! One module per file of this folder; `tests/all.rs` is the binary that holds them.

mod allowed;
mod battery;
mod control;
mod harness;
mod load;
mod relay;
