//! The inner stage's process hygiene before Landlock and seccomp: descriptors, resource limits, capabilities and
//! no_new_privs.
//!
//! - Every descriptor above 2 becomes close-on-exec, so nothing that the launcher, bubblewrap or the hidden shell
//!   held open reaches the command.
//! - Capabilities: bubblewrap run by root keeps the full set inside (it maps root to root). The inner stage empties
//!   all five sets and reads them back ([`efr_helper::harden::drop_capabilities`]): a set that is not empty refuses
//!   the launch. With an empty bounding set even a root exec of a setuid-root program gains nothing. The bridge
//!   thread empties its own ([`drop_thread_capabilities`]).
//! - no_new_privs ([`efr_helper::harden::set_no_new_privs`]): set before Landlock and seccomp (both need it);
//!   setuid and file capabilities do nothing after it.

use caps::CapSet;
use efr_helper::harden;
use efr_protocol::internal::{Rlimit, RlimitResource};
use nix::sys::resource::{Resource, setrlimit};

/// Marks every descriptor above 2 close-on-exec.
///
/// # Errors
///
/// The kernel's error (`close_range` exists since Linux 5.11).
pub fn cloexec_above_stderr() -> std::io::Result<()> {
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets a flag on descriptors; it closes none and touches no
    // memory.
    let rc = unsafe { libc::close_range(3, libc::c_uint::MAX, libc::CLOSE_RANGE_CLOEXEC as libc::c_int) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Sets the plan's resource limits.
///
/// # Errors
///
/// Which limit the kernel refused (such as a hard limit above the current one without privilege).
pub fn set_limits(limits: &[Rlimit]) -> Result<(), String> {
    for limit in limits {
        let resource = match limit.resource {
            RlimitResource::Cpu => Resource::RLIMIT_CPU,
            RlimitResource::Fsize => Resource::RLIMIT_FSIZE,
            RlimitResource::Nofile => Resource::RLIMIT_NOFILE,
            RlimitResource::Nproc => Resource::RLIMIT_NPROC,
            RlimitResource::As => Resource::RLIMIT_AS,
            RlimitResource::Core => Resource::RLIMIT_CORE,
        };
        setrlimit(resource, limit.soft, limit.hard).map_err(|err| {
            format!(
                "cannot set the {:?} limit to {}/{}: {err}",
                limit.resource, limit.soft, limit.hard
            )
        })?;
    }
    Ok(())
}

/// Empties the calling thread's effective, permitted, inheritable and ambient sets, and its bounding set when it
/// may (`CAP_SETPCAP`; an unprivileged thread cannot, and with nothing permitted and no_new_privs it gains nothing
/// from it). For the outer stage's proxy bridge thread: capabilities are per thread, so the stage's other threads
/// keep theirs.
///
/// # Errors
///
/// The set that could not be emptied.
pub fn drop_thread_capabilities() -> Result<(), String> {
    let permitted = caps::read(None, CapSet::Permitted).map_err(|e| format!("cannot read the permitted set: {e}"))?;
    if permitted.contains(&caps::Capability::CAP_SETPCAP) {
        harden::drop_bounding_set()?;
    }
    harden::clear_capabilities()
}
