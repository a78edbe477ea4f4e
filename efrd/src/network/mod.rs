//! The network of contained calls, efrd's side (docs/network.md): only `efr-proxy` decides what a call reaches.
//!
//! - [`rules`]: the config's `[network]` lists made into a call's host grants and its proxy plan's allow and deny
//!   lists (the config's `deny` plus the credential hosts that `allow` does not name).
//! - [`credentials`]: the hosts that the user's credential files and helpers hold a token for.
//! - [`explain`](mod@explain): which rule decides a host, for `sandbox.explain_host`.
//! - [`proxy`]: the supervisor of the `efr-proxy` process: started on first need, restarted with backoff, its
//!   state for admin.status; plans opened and closed for each call.
//! - [`control`]: efrd's end of the proxy's control socket (requests and their answers by id).
//! - [`report`]: a closed plan's refusals as the call's `sandbox` summary and the one line the model gets.

pub mod control;
pub mod credentials;
pub mod explain;
pub mod proxy;
pub mod report;
pub mod rules;

pub use explain::explain_host;
pub use proxy::{ProxyError, ProxyPlan, ProxySupervisor};
pub use rules::{CallNetwork, host_grants};
