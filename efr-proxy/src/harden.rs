//! The proxy's hardening, applied once at start, after it has read what it needs and before it starts any thread
//! (so every thread inherits it): no capabilities, no_new_privs, Landlock and a seccomp allow-list (ADR 0010,
//! "Hardening").
//!
//! - **Capabilities**: all five sets emptied (bounding first) and read back.
//! - **no_new_privs**: set, so that nothing it could exec gains privileges (it execs nothing: `execve` is not in
//!   the allow-list).
//! - **Landlock**: every filesystem right of the ABI is handled and only two are granted, beneath the sockets
//!   folder: making a socket and removing a file. The proxy opens no file after start. With ABI 4 binding a TCP
//!   port is handled and never granted; with ABI 6 abstract Unix sockets and signals are scoped.
//! - **seccomp**: an allow-list ([`ALLOWED_CALLS`], `socket` for `AF_UNIX`, `AF_INET`, `AF_INET6` only, `ioctl`
//!   for `FIONBIO` and `FIOCLEX` only, `socketpair` for `AF_UNIX` only); every other call fails with `EPERM`, and calls of another architecture
//!   (x32, i386) match no rule and fail the same way.

use std::collections::BTreeMap;
use std::path::Path;

use caps::CapSet;
use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};
use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

/// The newest Landlock ABI asked for.
const PINNED_ABI: i32 = 6;

/// The system calls allowed whatever their arguments: memory, threads and futexes (tokio's runtime), epoll and
/// eventfd (its reactor), sockets (the plans' listeners, the tunnels, DNS), signals' bookkeeping (Rust's runtime),
/// removing a plan's socket, time, randomness (hash seeds, DNS ids), and exiting.
pub const ALLOWED_CALLS: &[(&str, i64)] = &[
    ("read", libc::SYS_read),
    ("write", libc::SYS_write),
    ("readv", libc::SYS_readv),
    ("writev", libc::SYS_writev),
    ("close", libc::SYS_close),
    ("fcntl", libc::SYS_fcntl),
    ("mmap", libc::SYS_mmap),
    ("munmap", libc::SYS_munmap),
    ("mprotect", libc::SYS_mprotect),
    ("mremap", libc::SYS_mremap),
    ("madvise", libc::SYS_madvise),
    ("brk", libc::SYS_brk),
    ("futex", libc::SYS_futex),
    ("sched_yield", libc::SYS_sched_yield),
    ("sched_getaffinity", libc::SYS_sched_getaffinity),
    ("clone", libc::SYS_clone),
    ("clone3", libc::SYS_clone3),
    ("set_robust_list", libc::SYS_set_robust_list),
    ("rseq", libc::SYS_rseq),
    ("prctl", libc::SYS_prctl),
    ("gettid", libc::SYS_gettid),
    ("getpid", libc::SYS_getpid),
    ("tgkill", libc::SYS_tgkill),
    ("rt_sigaction", libc::SYS_rt_sigaction),
    ("rt_sigprocmask", libc::SYS_rt_sigprocmask),
    ("rt_sigreturn", libc::SYS_rt_sigreturn),
    ("sigaltstack", libc::SYS_sigaltstack),
    ("epoll_create1", libc::SYS_epoll_create1),
    ("epoll_ctl", libc::SYS_epoll_ctl),
    ("epoll_pwait", libc::SYS_epoll_pwait),
    ("epoll_pwait2", libc::SYS_epoll_pwait2),
    ("eventfd2", libc::SYS_eventfd2),
    ("ppoll", libc::SYS_ppoll),
    ("connect", libc::SYS_connect),
    ("bind", libc::SYS_bind),
    ("listen", libc::SYS_listen),
    ("accept4", libc::SYS_accept4),
    ("getsockopt", libc::SYS_getsockopt),
    ("setsockopt", libc::SYS_setsockopt),
    ("getsockname", libc::SYS_getsockname),
    ("getpeername", libc::SYS_getpeername),
    ("shutdown", libc::SYS_shutdown),
    ("sendto", libc::SYS_sendto),
    ("recvfrom", libc::SYS_recvfrom),
    ("sendmsg", libc::SYS_sendmsg),
    ("recvmsg", libc::SYS_recvmsg),
    ("sendmmsg", libc::SYS_sendmmsg),
    ("recvmmsg", libc::SYS_recvmmsg),
    ("unlinkat", libc::SYS_unlinkat),
    ("clock_gettime", libc::SYS_clock_gettime),
    ("clock_nanosleep", libc::SYS_clock_nanosleep),
    ("nanosleep", libc::SYS_nanosleep),
    ("getrandom", libc::SYS_getrandom),
    ("exit", libc::SYS_exit),
    ("exit_group", libc::SYS_exit_group),
    #[cfg(target_arch = "x86_64")]
    ("epoll_wait", libc::SYS_epoll_wait),
    #[cfg(target_arch = "x86_64")]
    ("poll", libc::SYS_poll),
    #[cfg(target_arch = "x86_64")]
    ("unlink", libc::SYS_unlink),
    #[cfg(target_arch = "x86_64")]
    ("arch_prctl", libc::SYS_arch_prctl),
];

/// The socket families the proxy opens: Unix (its plans' sockets), IPv4 and IPv6 (tunnels and DNS).
const FAMILIES: &[i32] = &[libc::AF_UNIX, libc::AF_INET, libc::AF_INET6];

/// The `ioctl` requests allowed: making a descriptor non-blocking or close-on-exec (Rust's std and mio).
#[allow(clippy::unnecessary_cast)] // The requests' type is not u64 on every target.
const IOCTLS: &[u64] = &[libc::FIONBIO as u64, libc::FIOCLEX as u64];

/// Applies every layer, in order; the calling thread must be the only one.
///
/// # Errors
/// The layer that failed, in a sentence: the proxy must not serve without it.
pub fn apply(sockets: &Path) -> Result<(), String> {
    apply_with(sockets, FAMILIES)
}

/// The same layers with `socket` allowed for `families` only: efr-bus-proxy, which opens Unix sockets only, hardens
/// itself with this.
///
/// # Errors
/// As [`apply`].
pub fn apply_with(sockets: &Path, families: &[i32]) -> Result<(), String> {
    drop_capabilities()?;
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) only sets a flag of this process.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!("cannot set no_new_privs: {}", std::io::Error::last_os_error()));
    }
    landlock(sockets)?;
    seccomp(families)
}

fn drop_capabilities() -> Result<(), String> {
    let bounding = caps::read(None, CapSet::Bounding).map_err(|e| format!("cannot read the bounding set: {e}"))?;
    for cap in bounding {
        caps::drop(None, CapSet::Bounding, cap).map_err(|e| format!("cannot drop {cap} from the bounding set: {e}"))?;
    }
    let sets = [
        CapSet::Ambient,
        CapSet::Inheritable,
        CapSet::Effective,
        CapSet::Permitted,
    ];
    for set in sets {
        caps::clear(None, set).map_err(|e| format!("cannot clear the {set:?} capability set: {e}"))?;
    }
    for set in [
        CapSet::Bounding,
        CapSet::Ambient,
        CapSet::Inheritable,
        CapSet::Effective,
        CapSet::Permitted,
    ] {
        let left = caps::read(None, set).map_err(|e| format!("cannot read the {set:?} set: {e}"))?;
        if !left.is_empty() {
            return Err(format!("the {set:?} capability set is not empty: {left:?}"));
        }
    }
    Ok(())
}

/// The kernel's Landlock ABI version: 0 when Landlock is missing or off.
fn kernel_abi() -> i32 {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only returns the version.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0_usize,
            1_u32,
        )
    };
    i32::try_from(version).unwrap_or(0).max(0)
}

fn landlock(sockets: &Path) -> Result<(), String> {
    let version = kernel_abi().min(PINNED_ABI);
    if version == 0 {
        return Err("Landlock is not available in this kernel".into());
    }
    let abi = ABI::from(version);
    let fail = |what: &str, err: &dyn std::fmt::Display| format!("Landlock: {what}: {err}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(|e| fail("filesystem rights", &e))?;
    if version >= 4 {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp)
            .map_err(|e| fail("network rights", &e))?;
    }
    if version >= 6 {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(|e| fail("scopes", &e))?;
    }
    let folder = PathFd::new(sockets).map_err(|e| fail("the sockets folder", &e))?;
    let status = ruleset
        .create()
        .map_err(|e| fail("create", &e))?
        .add_rule(PathBeneath::new(folder, AccessFs::MakeSock | AccessFs::RemoveFile))
        .map_err(|e| fail("the sockets folder's rule", &e))?
        .restrict_self()
        .map_err(|e| fail("restrict", &e))?;
    if status.ruleset != RulesetStatus::FullyEnforced || !status.no_new_privs {
        return Err(format!("Landlock is not fully enforced: {:?}", status.ruleset));
    }
    Ok(())
}

fn seccomp(families: &[i32]) -> Result<(), String> {
    fn fail(err: impl std::fmt::Display) -> String {
        format!("seccomp: {err}")
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(fail)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        ALLOWED_CALLS.iter().map(|(_, number)| (*number, Vec::new())).collect();
    let eq = |arg: u8, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value)
            .and_then(|condition| SeccompRule::new(vec![condition]))
    };
    let families = families
        .iter()
        .map(|family| eq(0, u64::from(family.unsigned_abs())))
        .collect::<Result<Vec<_>, _>>()
        .map_err(fail)?;
    rules.insert(libc::SYS_socket, families);
    // tokio's signal driver makes one Unix socket pair when the runtime starts.
    rules.insert(
        libc::SYS_socketpair,
        vec![eq(0, libc::AF_UNIX.unsigned_abs().into()).map_err(fail)?],
    );
    let ioctls = IOCTLS
        .iter()
        .map(|request| eq(1, *request))
        .collect::<Result<Vec<_>, _>>()
        .map_err(fail)?;
    rules.insert(libc::SYS_ioctl, ioctls);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Errno(libc::EPERM.unsigned_abs()),
        SeccompAction::Allow,
        arch,
    )
    .map_err(fail)?;
    let program: seccompiler::BpfProgram = filter.try_into().map_err(fail)?;
    seccompiler::apply_filter(&program).map_err(fail)
}
