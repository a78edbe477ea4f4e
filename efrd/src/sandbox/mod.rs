//! The sandbox of contained calls, efrd's side (docs/architecture.md, "The sandbox").
//!
//! - [`probe`](mod@probe): runs real contained commands through `efr-launcher` and reports what works (bubblewrap, user
//!   namespaces, Landlock, seccomp, the net_view self-test), for `admin.sandbox_check` and `admin.status`.
//! - [`explain`](mod@explain): what a contained call would see at a path and which rule decides, for `sandbox.explain`.
//! - [`bus_test`]: the probe's bus self-test (`efr-bus-proxy` answers Hello and refuses a hidden name on the
//!   session bus).
//! - [`proxy_test`]: the probe's proxy self-test (a contained call through `efr-proxy`: an allowed host answered,
//!   a denied one refused).
//! - [`plan`]: the base plan of a contained call (project root, `$SCRATCH`, the masks) and its [`Layout`].
//! - [`protect`]: what a call may not change inside its writable roots (git's config and hooks, efr's roots).
//! - [`grants`]: the sockets of a call's `desktop` and whole-`bus` grants, resolved into its plan.
//! - [`git_link`]: a project's `.git` link, read before a contained call and put back after it if the call changed it.
//! - [`state`]: the cached probe of the daemon.
//! - [`live`]: whether a sandbox efrd started still runs (a command left running in one).
//!
//! The launch plan itself, its mounts and the launcher's report are in `efr_protocol::internal`, shared with
//! `efr-launcher`.

pub mod bus_test;
pub mod diagnosis;
pub mod explain;
pub mod git_link;
pub mod grants;
pub mod live;
pub mod plan;
pub mod probe;
pub mod protect;
pub mod proxy_test;
pub mod state;

pub use diagnosis::{KernelFacts, KernelPaths};
pub use explain::{ExplainError, Explanation, View, explain};
pub use plan::{Layout, base_plan, project_root};
pub use probe::{Probe, ProbeOptions, find_program, probe};
pub use state::SandboxState;
