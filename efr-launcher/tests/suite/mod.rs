//! One module per file of this folder; `tests/all.rs` is the binary that holds them.

mod denied_calls;
mod escape;
mod grants;
mod landlock_only;
mod outcomes;
mod proxy_bridge;
mod shared_memory;
mod start;
