//! The network of contained calls, efrd's side (docs/network.md): only `efr-proxy` decides what a call reaches.
//!
//! - [`rules`]: the config's `[network]` lists made into a call's host grants and its proxy plan's allow and deny
//!   lists (the config's `deny` plus the credential hosts that `allow` does not name).
//! - [`credentials`]: the hosts that the user's credential files and helpers hold a token for.
//! - [`explain`](mod@explain): which rule decides a host, for `sandbox.explain_host`.
//! - [`proxy`]: the `efr-proxy` process (supervised by [`crate::helper_process`]): plans opened and closed for
//!   each call.
//! - [`report`]: a closed plan's refusals as the call's `sandbox` summary and the one line the model gets.

pub mod credentials;
pub mod explain;
pub mod proxy;
pub mod report;
pub mod rules;

pub use explain::explain_host;
pub use proxy::{ProxyError, ProxyPlan, ProxySupervisor};
pub use rules::{CallNetwork, host_grants};
