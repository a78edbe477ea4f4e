//! `efr-launcher`: the sandbox of one contained call (docs/architecture.md, "The sandbox").
//!
//! One binary, two stages:
//!
//! - **outer** ([`outer`]): started by efrd's hidden shell with a [launch plan](efr_protocol::internal::LaunchPlan).
//!   It checks the plan, turns it into bubblewrap's options ([`bwrap::bwrap_args`], a pure function), runs
//!   bubblewrap with the launcher itself as the command in inner mode, and reports the outcome on the plan's report
//!   channel: its pid and start time, the sandbox's state, and the command's exit status or a setup error
//!   ([`efr_protocol::internal::report`]).
//! - **inner** ([`inner`]): bubblewrap's child, inside the new namespaces and mounts. It empties every capability
//!   set, sets no_new_privs ([`privileges`]), applies Landlock ([`ruleset`]) and the seccomp filters ([`seccomp`]),
//!   and execs the command. It refuses rather than run a weaker sandbox.
//! - **unshared** ([`unshared`]): a read-only plan with containment `landlock`, where bubblewrap cannot start. The
//!   outer stage starts the inner stage itself, which applies Landlock's rules around the masks ([`cover`]) and the
//!   seccomp filters without sockets (docs/adr/0020-landlock-only-reads.md).
//!
//! What a contained call sees (the plan's mounts, [`efr_protocol::internal::mounts`]): `/` read-only; writable: the
//! call's project roots, `$SCRATCH` and a private `/tmp`; a fresh `/dev` and `/proc`; masked: the credential stores
//! of [`efr_protocol::internal::DEFAULT_HOME_MASKS`], efr's own roots and `/run/user/$UID`; its own network
//! namespace unless a grant keeps the host's. A call with `host` grants (the plan's `proxy`) reaches `efr-proxy`
//! through the [`bridge`]: a listener on the sandbox's loopback that a confined thread of the outer stage forwards
//! to the proxy's socket. [`selftest`] holds the checks that efrd's probe runs inside; [`sockets`] makes the sockets
//! of a contained job's port forwards inside its network namespace.
//!
//! Command line (`main.rs`; the two shapes every call uses are read by [`argv`] without clap):
//!
//! ```text
//! efr-launcher --plan-fd N          the plan on an inherited descriptor (read to its end)
//! efr-launcher --plan-file PATH     the plan in a one-time file (read, then removed)
//! efr-launcher self-test net-view --abstract NAME
//! efr-launcher sockets --pid PID      (only for efrd's port forwards: standard input is a Unix socket)
//! efr-launcher inner --spec-fd N --status-fd N --stderr-fd N [--bridge-fd N]   (only as bubblewrap's child, or
//!                                                                              the unshared outer stage's)
//! ```

pub mod argv;
pub mod bridge;
pub mod bwrap;
pub mod cover;
pub mod inner;
pub mod outer;
pub mod privileges;
pub mod reporter;
pub mod ruleset;
pub mod seccomp;
pub mod selftest;
pub mod sockets;
pub mod spec;
pub mod unshared;
pub mod watch;
