//! The hardening layers of efr's helpers and of the sandbox's launcher: capabilities, no_new_privs, Landlock
//! ([`landlock`]) and seccomp ([`seccomp`]). Each function acts on the calling thread; applied before any other
//! thread starts, every later thread inherits it.
//!
//! - **Capabilities**: [`drop_capabilities`] empties the bounding set first when it may (`CAP_SETPCAP`), then the
//!   ambient, inheritable, effective and permitted sets, and reads them back: a set that is not empty is an error.
//!   With an empty bounding set even a root exec of a setuid-root program gains nothing. A thread without
//!   `CAP_SETPCAP` (a helper of a user's efrd, which holds no capability at all, while its bounding set is full as
//!   in any login session) cannot empty it; it sets no_new_privs instead, after which no exec can add a capability,
//!   so the bounding set limits nothing it could gain.
//! - **no_new_privs** ([`set_no_new_privs`]): set and read back; Landlock and seccomp need it, and setuid and file
//!   capabilities do nothing after it.
//! - **A socket helper's layers** ([`apply`]): all of the above, then a Landlock ruleset that grants only making and
//!   removing sockets beneath the helper's sockets folder, then the helper's seccomp allow-list.

pub mod landlock;
pub mod seccomp;

use std::path::Path;

use caps::CapSet;

/// The four sets a thread can empty without `CAP_SETPCAP`.
const THREAD_SETS: [CapSet; 4] = [
    CapSet::Ambient,
    CapSet::Inheritable,
    CapSet::Effective,
    CapSet::Permitted,
];

/// Empties the capability sets of the calling thread and checks that they are empty: all five when it holds
/// `CAP_SETPCAP`; else the four it can, with no_new_privs set so that its bounding set gives nothing (see the
/// module's doc).
///
/// # Errors
/// The set that could not be read or emptied, or that is not empty after; no_new_privs that did not hold.
pub fn drop_capabilities() -> Result<(), String> {
    let may_drop_bounding = caps::has_cap(None, CapSet::Effective, caps::Capability::CAP_SETPCAP)
        .map_err(|e| format!("cannot read the effective set: {e}"))?;
    if !may_drop_bounding {
        clear_capabilities()?;
        return set_no_new_privs();
    }
    drop_bounding_set()?;
    clear_capabilities()?;
    let left = caps::read(None, CapSet::Bounding).map_err(|e| format!("cannot read the bounding set: {e}"))?;
    if !left.is_empty() {
        return Err(format!("the Bounding capability set still holds {left:?}"));
    }
    Ok(())
}

/// Drops every capability of the calling thread's bounding set (needs `CAP_SETPCAP` when it is not empty).
///
/// # Errors
/// The set could not be read, or a capability could not be dropped.
pub fn drop_bounding_set() -> Result<(), String> {
    let bounding = caps::read(None, CapSet::Bounding).map_err(|e| format!("cannot read the bounding set: {e}"))?;
    for cap in bounding {
        caps::drop(None, CapSet::Bounding, cap).map_err(|e| format!("cannot drop {cap} from the bounding set: {e}"))?;
    }
    Ok(())
}

/// Empties the calling thread's ambient, inheritable, effective and permitted sets and reads them back (the
/// bounding set is left as it is: see [`drop_bounding_set`]).
///
/// # Errors
/// The set that could not be read or emptied, or that is not empty after.
pub fn clear_capabilities() -> Result<(), String> {
    for set in THREAD_SETS {
        caps::clear(None, set).map_err(|e| format!("cannot clear the {set:?} capability set: {e}"))?;
    }
    for set in THREAD_SETS {
        let left = caps::read(None, set).map_err(|e| format!("cannot read the {set:?} capability set: {e}"))?;
        if !left.is_empty() {
            return Err(format!("the {set:?} capability set still holds {left:?}"));
        }
    }
    Ok(())
}

/// Sets no_new_privs and checks it.
///
/// # Errors
/// The kernel's refusal, or the flag did not stay set.
pub fn set_no_new_privs() -> Result<(), String> {
    nix::sys::prctl::set_no_new_privs().map_err(|e| format!("cannot set no_new_privs: {e}"))?;
    match nix::sys::prctl::get_no_new_privs() {
        Ok(true) => Ok(()),
        Ok(false) => Err("no_new_privs did not stay set".into()),
        Err(e) => Err(format!("cannot read no_new_privs: {e}")),
    }
}

/// Applies every layer of a helper that serves sockets in `sockets`, in order: no capabilities, no_new_privs,
/// [`landlock::sockets_folder`], then the seccomp allow-list of `policy` ([`seccomp::allow_list`]). The calling
/// thread must be the only one, so that every thread started after has the same layers.
///
/// # Errors
/// The layer that failed, in a sentence: the helper must not serve without it.
pub fn apply(sockets: &Path, policy: &seccomp::Policy<'_>) -> Result<(), String> {
    drop_capabilities()?;
    set_no_new_privs()?;
    landlock::sockets_folder(sockets)?;
    seccomp::install(&[seccomp::allow_list(policy)?])
}
