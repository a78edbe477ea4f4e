//! A call's bus policy. Its grammar and checks live in `efr_protocol::internal::bus_policy`, shared with efrd, which
//! checks the config's `[bus]` rules with the same parser (docs/bus.md, "Policy").

pub use efr_protocol::internal::bus_policy::{Level, NamePattern, Policy, Rule, RuleError};
