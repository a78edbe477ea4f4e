//! One module per file of this folder; `tests/all.rs` is the binary that holds them.

mod escape;
mod grants;
mod outcomes;
