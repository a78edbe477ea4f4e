//! The model's hands: what a tool call does to the machine (docs/architecture.md, "Tools").
//!
//! - [`spec`]: the tools given to the model, and the reading of a call it made.
//!
//! Each tool is a library here; the turn loop calls it and turns its outcome into events.

pub mod shell;
pub mod spec;
