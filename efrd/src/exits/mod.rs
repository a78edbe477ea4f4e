//! The exits of auto mode (docs/adr/0016-exit-kinds.md): a contained call that must leave the sandbox asks for an
//! exit, efrd records it with its facts, a chain of judges decides it, and an approved exit runs again with exactly
//! the grants it names.
//!
//! - [`find`]: the exits of a call, from its line before it runs and from its report after it failed;
//! - [`always`]: the always rules: which exits a rule may cover, the rule a question offers, the floors that
//!   disable one;
//! - [`approvers`]: which judges may approve a record (a rule of efrd's policy, not of the wire);
//! - [`judge`]: the chain that decides (the classifier model, the turn's model, then the user). It fails closed.
//!
//! The turn ([`crate::turn`]) records the events and runs the verdict; nothing here runs a call.

pub mod always;
pub mod approvers;
pub mod find;
pub mod judge;
