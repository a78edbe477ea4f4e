//! Internal messages between efrd and its helper programs. They are not part of the public protocol: no fixture
//! freezes them, the JSON Schema leaves them out, and efrd and its helpers ship together, so they change freely.
//!
//! - [`launch`]: the launch plan of one contained call, what efrd hands `efr-launcher` (docs/architecture.md, "The
//!   sandbox").
//! - [`mounts`]: the plan's mounts in the order the launcher applies them, shared by the launcher (which turns them
//!   into bubblewrap's arguments) and efrd's `sandbox.explain` (which reads them back for one path).
//! - [`validate`]: the plan's rules and [`PlanError`].
//! - [`masks`]: the documented default list of masked credential stores.
//! - [`report`]: the JSON lines that `efr-launcher` writes about one launch, and its exit codes.
//! - [`host`]: host names and patterns, as the network rules compare them.
//! - [`proxy`]: the control messages between efrd and `efr-proxy`.
//! - [`bus_proxy`]: the control messages between efrd and `efr-bus-proxy`.
//! - [`bus_policy`]: a call's bus policy and the grammar of its names and rules, shared by `efr-bus-proxy` (which
//!   enforces it) and efrd (which checks the config's `[bus]` rules).

pub mod bus_policy;
pub mod bus_proxy;
pub mod error;
pub mod host;
pub mod launch;
pub mod masks;
pub mod mounts;
pub mod proxy;
pub mod report;
pub mod validate;

pub use error::{MAX_EXEC_STRING, PlanError};
pub use launch::{
    Containment, LaunchCommand, LaunchPlan, Mask, MaskSource, Network, Protected, ProtectedSource, ReportTo, Rlimit,
    RlimitResource, SHM_SIZE, Writable, WritableSource,
};
pub use masks::{DEFAULT_HOME_MASKS, default_masks};
pub use mounts::{IfMissing, Mount, MountKind, Rule};
pub use report::{LaunchReport, SETUP_ERROR_EXIT, STDERR_PREFIX, SetupStage};
