//! `efr-helper`: what efr's helper processes share, and how efrd starts one.
//!
//! A helper (`efr-proxy`, `efr-bus-proxy`) is started as `PROGRAM --control-fd 3 --sockets DIR` with one end of a
//! Unix socket pair as its fd 3; it hardens itself, then answers requests on that socket until the other end
//! closes. The sandbox's launcher uses the same hardening layers for its own privilege drop.
//!
//! - [`spawn`]: the parent's side: [`spawn::HelperCommand`] starts a helper with a fresh socket pair, the child's
//!   end as its fd 3, and hands back the child and the parent's end.
//! - [`start`]: the helper's first steps: take over the control socket from its descriptor, check the sockets
//!   folder, make new sockets private.
//! - [`control`]: the request loop over the control socket, generic over a [`control::Handler`] that each helper
//!   implements with its own messages.
//! - [`harden`]: the layers: capabilities emptied and read back, no_new_privs, a Landlock ruleset that is a hard
//!   requirement, seccomp filters. Each helper keeps its own policy (its allow-list, its paths).

pub mod control;
pub mod harden;
pub mod spawn;
pub mod start;
