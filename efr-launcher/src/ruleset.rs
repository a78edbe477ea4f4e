//! The Landlock ruleset of the inner stage.
//!
//! - **ABI pinned**: the launcher asks for what Landlock ABI [`efr_helper::harden::landlock::PINNED_ABI`] (6, Linux
//!   6.12) defines, or for the kernel's own ABI when that is lower, and for nothing newer: rights it was never tested
//!   with are never asked.
//! - **Handled**: every filesystem right of that ABI. Granted: read and execute everywhere (`/`); everything in the
//!   writable roots, the private `/tmp` and the private `/dev/shm` (POSIX semaphores and shared memory); on `/dev`
//!   (the fresh one) the file rights (read, write, truncate, device ioctls) and listing, so `/dev/null` and the
//!   terminal work, and the same on granted devices.
//!   Protected paths inside a writable root (`.git/config`, the folder of efr's roots) get no rule of their own:
//!   Landlock only adds rights below a rule, it cannot take the writable root's away; their read-only mounts make a
//!   write fail with `EROFS`, which is enough.
//! - **Scoped** (ABI 6): abstract Unix sockets and signals stay inside the sandbox. Under `net_view`, which keeps the
//!   host's network namespace (and so its abstract sockets), the scope is required: a kernel without ABI 6 refuses.
//! - **Checked**: the ruleset is built with `CompatLevel::HardRequirement` and the launch is refused unless the
//!   status is `FullyEnforced` with no_new_privs ([`efr_helper::harden::landlock`] builds and checks it). There is no quiet fall to weaker isolation: the ABI in
//!   force is reported (`sandboxed.landlock_abi`, `sandbox_status.landlock_abi`).

use std::path::PathBuf;

use efr_helper::harden::landlock::{abi, allow, available_abi, enforce, kernel_abi, ruleset};
use efr_protocol::internal::Network;

use crate::cover::{Unshared, cover};
use landlock::{Access, AccessFs, AccessNet, BitFlags};

/// What was enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Enforced {
    /// The ABI whose rights are handled.
    pub abi: u32,
    /// Abstract Unix sockets and signals are scoped.
    pub scoped: bool,
}

/// Applies the ruleset to the calling thread (and so to the command it execs).
///
/// # Errors
///
/// Why the launch is refused: no Landlock, `net_view` without ABI 6, a rule that could not be added, or a status
/// other than fully enforced.
pub fn apply(network: Network, writable: &[PathBuf], devices: &[PathBuf]) -> Result<Enforced, String> {
    let version = available_abi()?;
    let scoped = version >= 6;
    if network == Network::NetView && !scoped {
        return Err(format!(
            "net_view needs Landlock ABI 6 to scope abstract Unix sockets; this kernel has ABI {}",
            kernel_abi()
        ));
    }
    let abi = abi(version);
    let mut rules: Vec<(PathBuf, BitFlags<AccessFs>)> = vec![
        ("/".into(), AccessFs::from_read(abi)),
        ("/dev".into(), AccessFs::from_file(abi) | AccessFs::ReadDir),
    ];
    for path in writable {
        rules.push((
            path.clone(),
            if path.is_dir() {
                AccessFs::from_all(abi)
            } else {
                AccessFs::from_file(abi)
            },
        ));
    }
    for path in devices {
        rules.push((path.clone(), AccessFs::from_file(abi)));
    }
    let mut created = ruleset(version, BitFlags::empty())?;
    for (path, access) in rules {
        created = allow(created, &path, access)?;
    }
    enforce(created, version)?;
    Ok(Enforced { abi: version, scoped })
}

/// Applies the ruleset of a call contained by Landlock and seccomp alone ([`crate::cover`]): listing on the way to
/// the hidden paths, reading around them, opening the harmless devices and the call's terminal, every right in the
/// private scratch folder; TCP bind and connect handled and none granted (ABI 4), the scope from ABI 6.
///
/// # Errors
///
/// No Landlock, a rule that could not be added, or a status other than fully enforced.
pub fn apply_unshared(unshared: &Unshared) -> Result<Enforced, String> {
    let version = available_abi()?;
    let abi = abi(version);
    let cover = cover(unshared, std::process::id());
    let read_file = AccessFs::from_read(abi) & AccessFs::from_file(abi);
    let mut created = ruleset(version, AccessNet::from_all(abi))?;
    let rules = cover
        .list
        .iter()
        .map(|path| (path, BitFlags::from(AccessFs::ReadDir)))
        .chain(cover.read_trees.iter().map(|path| (path, AccessFs::from_read(abi))))
        .chain(cover.read_files.iter().map(|path| (path, read_file)))
        .chain(cover.devices.iter().map(|path| (path, AccessFs::from_file(abi))));
    for (path, access) in rules {
        // A path that is gone since the cover listed it (a file removed meanwhile, no /dev/tty without a terminal)
        // is left out: it grants nothing to leave out, and a launch must not fail for it.
        if std::fs::symlink_metadata(path).is_err() {
            continue;
        }
        created = allow(created, path, access)?;
    }
    created = allow(created, &unshared.scratch, AccessFs::from_all(abi))?;
    enforce(created, version)?;
    Ok(Enforced {
        abi: version,
        scoped: version >= 6,
    })
}

/// Applies the proxy bridge's ruleset to the calling thread (Landlock domains are per thread; its threads inherit
/// it): every filesystem right handled and none granted, TCP bind and connect handled and none granted (ABI 4), and
/// the scope of abstract Unix sockets and signals (ABI 6). Connecting to the proxy's pathname socket needs no
/// filesystem right.
///
/// # Errors
///
/// No Landlock, or a status other than fully enforced.
pub fn apply_bridge() -> Result<(), String> {
    let version = available_abi()?;
    let created = ruleset(version, AccessNet::from_all(abi(version)))?;
    enforce(created, version)
}
