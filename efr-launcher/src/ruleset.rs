//! The Landlock ruleset of the inner stage.
//!
//! - **ABI pinned**: the launcher asks for what Landlock ABI [`PINNED_ABI`] (6, Linux 6.12) defines, or for the
//!   kernel's own ABI when that is lower, and for nothing newer: rights it was never tested with are never asked.
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
//!   status is `FullyEnforced` with no_new_privs. There is no quiet fall to weaker isolation: the ABI in force is
//!   reported (`sandboxed.landlock_abi`, `sandbox_status.landlock_abi`).

use std::path::{Path, PathBuf};

use efr_protocol::internal::Network;
use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};

/// The newest Landlock ABI the launcher asks for.
pub const PINNED_ABI: ABI = ABI::V6;

/// What was enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Enforced {
    /// The ABI whose rights are handled.
    pub abi: u32,
    /// Abstract Unix sockets and signals are scoped.
    pub scoped: bool,
}

/// The kernel's Landlock ABI version: 0 when Landlock is missing or off.
pub fn kernel_abi() -> u32 {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only returns the version; it reads
    // and writes no memory.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0_usize,
            1_u32,
        )
    };
    u32::try_from(version).unwrap_or(0)
}

/// The ABI the launcher uses on a kernel with `kernel` (the lower of the two).
pub fn effective_abi(kernel: u32) -> u32 {
    kernel.min(PINNED_ABI as u32)
}

/// Applies the ruleset to the calling thread (and so to the command it execs).
///
/// # Errors
///
/// Why the launch is refused: no Landlock, `net_view` without ABI 6, a rule that could not be added, or a status
/// other than fully enforced.
pub fn apply(network: Network, writable: &[PathBuf], devices: &[PathBuf]) -> Result<Enforced, String> {
    let kernel = kernel_abi();
    let version = effective_abi(kernel);
    if version == 0 {
        return Err("Landlock is not available in this kernel (built without it, or not enabled at boot)".into());
    }
    let scoped = version >= 6;
    if network == Network::NetView && !scoped {
        return Err(format!(
            "net_view needs Landlock ABI 6 to scope abstract Unix sockets; this kernel has ABI {kernel}"
        ));
    }
    let abi = ABI::from(i32::try_from(version).unwrap_or(0));
    let fail = |what: &str, err: &dyn std::fmt::Display| format!("Landlock: {what}: {err}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(|e| fail("handled access", &e))?;
    if scoped {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(|e| fail("scope", &e))?;
    }
    let mut created = ruleset.create().map_err(|e| fail("create", &e))?;
    let mut rules: Vec<(PathBuf, landlock::BitFlags<AccessFs>)> = vec![
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
    for (path, access) in rules {
        let fd = PathFd::new(&path).map_err(|e| fail(&format!("open {}", display(&path)), &e))?;
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| fail(&format!("rule for {}", display(&path)), &e))?;
    }
    let status = created.restrict_self().map_err(|e| fail("restrict", &e))?;
    if status.ruleset != RulesetStatus::FullyEnforced || !status.no_new_privs {
        return Err(format!(
            "Landlock ABI {version} is not fully enforced ({:?}, no_new_privs {})",
            status.ruleset, status.no_new_privs
        ));
    }
    Ok(Enforced { abi: version, scoped })
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
    let version = effective_abi(kernel_abi());
    if version == 0 {
        return Err("Landlock is not available in this kernel (built without it, or not enabled at boot)".into());
    }
    let abi = ABI::from(i32::try_from(version).unwrap_or(0));
    let fail = |what: &str, err: &dyn std::fmt::Display| format!("Landlock: {what}: {err}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(|e| fail("handled access", &e))?;
    if version >= 4 {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(|e| fail("handled network access", &e))?;
    }
    if version >= 6 {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(|e| fail("scope", &e))?;
    }
    let status = ruleset
        .create()
        .map_err(|e| fail("create", &e))?
        .restrict_self()
        .map_err(|e| fail("restrict", &e))?;
    if status.ruleset != RulesetStatus::FullyEnforced || !status.no_new_privs {
        return Err(format!(
            "Landlock ABI {version} is not fully enforced ({:?}, no_new_privs {})",
            status.ruleset, status.no_new_privs
        ));
    }
    Ok(())
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pinned_abi_caps_the_kernels() {
        assert_eq!(effective_abi(0), 0);
        assert_eq!(effective_abi(3), 3);
        assert_eq!(effective_abi(6), 6);
        assert_eq!(effective_abi(9), 6);
    }

    #[test]
    fn this_kernel_has_landlock() {
        // The machines efr's tests run on have Landlock (docs/architecture.md, "Testing"); a kernel without it would
        // make every contained call refuse, which the battery would show too.
        assert!(kernel_abi() >= 1, "this kernel has no Landlock");
    }
}
