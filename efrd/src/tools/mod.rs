//! The model's hands: what a tool call does to the machine (docs/architecture.md, "Tools").
//!
//! - [`patch`]: `apply_patch`, the parser and the atomic applier of the `*** Begin Patch` format that current models
//!   write.
//!
//! - [`spec`]: the tools given to the model, and the reading of a call it made.
//!
//! Each tool is a library here; the turn loop calls it and turns its outcome into events.

pub mod shell;
pub mod spec;
