//! Landlock: the ABI asked for, a ruleset that is a hard requirement, and its enforcement checked.
//!
//! - **ABI pinned**: the rights of Landlock ABI [`PINNED_ABI`] (6, Linux 6.12), or of the kernel's own ABI when
//!   that is lower, and nothing newer: rights never tested with are never asked for.
//! - **Handled**: every filesystem right of that ABI, the network rights a caller names (ABI 4), and the scope of
//!   abstract Unix sockets and signals (ABI 6).
//! - **Checked**: the ruleset is built with `CompatLevel::HardRequirement` and [`enforce`] fails unless the status
//!   is `FullyEnforced` with no_new_privs. There is no quiet fall to weaker isolation.

use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};

/// The newest Landlock ABI asked for.
pub const PINNED_ABI: u32 = 6;

/// The kernel's Landlock ABI version: 0 when Landlock is missing or off.
#[must_use]
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

/// The ABI used on a kernel with ABI `kernel`: the lower of it and [`PINNED_ABI`].
#[must_use]
pub fn effective_abi(kernel: u32) -> u32 {
    kernel.min(PINNED_ABI)
}

/// The ABI used on this kernel ([`effective_abi`] of [`kernel_abi`]).
///
/// # Errors
/// Landlock is missing or off.
pub fn available_abi() -> Result<u32, String> {
    match effective_abi(kernel_abi()) {
        0 => Err("Landlock is not available in this kernel (built without it, or not enabled at boot)".into()),
        version => Ok(version),
    }
}

/// `Landlock: <what>: <error>`.
fn fail(what: &str, err: &dyn std::fmt::Display) -> String {
    format!("Landlock: {what}: {err}")
}

/// The [`ABI`] of version `version` (1 to [`PINNED_ABI`]).
#[must_use]
pub fn abi(version: u32) -> ABI {
    ABI::from(i32::try_from(version).unwrap_or(0))
}

/// A created ruleset, a hard requirement, for ABI `version` (from [`available_abi`]): every filesystem right
/// handled, `net` handled from ABI 4 (none below it; empty for none), abstract Unix sockets and signals scoped from
/// ABI 6. Nothing is granted yet: add rules, then [`enforce`].
///
/// # Errors
/// The kernel or the crate refused a part, in words naming it.
pub fn ruleset(version: u32, net: BitFlags<AccessNet>) -> Result<RulesetCreated, String> {
    let abi = abi(version);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(|e| fail("handled access", &e))?;
    if version >= 4 && !net.is_empty() {
        ruleset = ruleset
            .handle_access(net)
            .map_err(|e| fail("handled network access", &e))?;
    }
    if version >= 6 {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(|e| fail("scope", &e))?;
    }
    ruleset.create().map_err(|e| fail("create", &e))
}

/// Grants `access` beneath `path` in `ruleset`.
///
/// # Errors
/// `path` could not be opened, or the rule was refused, in words naming `path`.
pub fn allow(ruleset: RulesetCreated, path: &Path, access: BitFlags<AccessFs>) -> Result<RulesetCreated, String> {
    let fd = PathFd::new(path).map_err(|e| fail(&format!("open {}", path.display()), &e))?;
    ruleset
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| fail(&format!("rule for {}", path.display()), &e))
}

/// Restricts the calling thread (and the threads and programs it starts) with `ruleset`, made for ABI `version`.
///
/// # Errors
/// The kernel refused, or the status is other than fully enforced with no_new_privs.
pub fn enforce(ruleset: RulesetCreated, version: u32) -> Result<(), String> {
    let status = ruleset.restrict_self().map_err(|e| fail("restrict", &e))?;
    if status.ruleset != RulesetStatus::FullyEnforced || !status.no_new_privs {
        return Err(format!(
            "Landlock ABI {version} is not fully enforced ({:?}, no_new_privs {})",
            status.ruleset, status.no_new_privs
        ));
    }
    Ok(())
}

/// The ruleset of a helper that serves sockets in `sockets`: making a socket and removing a file beneath it are the
/// only filesystem rights granted (a helper opens no file after it hardens), binding a TCP port is handled and
/// never granted.
///
/// # Errors
/// As [`available_abi`], [`ruleset`], [`allow`] and [`enforce`].
pub fn sockets_folder(sockets: &Path) -> Result<(), String> {
    let version = available_abi()?;
    let ruleset = ruleset(version, AccessNet::BindTcp.into())?;
    let ruleset = allow(ruleset, sockets, AccessFs::MakeSock | AccessFs::RemoveFile)?;
    enforce(ruleset, version)
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
        // make every contained call and every helper refuse, which other tests would show too.
        assert!(kernel_abi() >= 1, "this kernel has no Landlock");
        assert_eq!(available_abi(), Ok(effective_abi(kernel_abi())));
    }
}
