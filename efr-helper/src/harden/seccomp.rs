//! seccomp: loading filters, and the allow-list of a helper built from its own calls and socket families.
//!
//! An allow-list's default is `EPERM`. It allows [`RUNTIME_CALLS`] (what Rust's runtime and tokio's need, whatever
//! the helper does), the helper's own calls ([`Policy::calls`]), `socket` for the helper's families only,
//! `socketpair` for `AF_UNIX` only (tokio's signal driver makes one pair when the runtime starts) and `ioctl` for
//! `FIONBIO` and `FIOCLEX` only (std and mio make descriptors non-blocking or close-on-exec with them). Calls of
//! another architecture (x32, i386) match no rule and fail the same way.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

/// The system calls a helper on tokio's runtime needs whatever it serves, allowed whatever their arguments:
/// reading and writing descriptors (the control socket among them), memory, threads and futexes, signals'
/// bookkeeping, epoll and eventfd (the reactor), time, randomness (hash seeds) and exiting.
pub const RUNTIME_CALLS: &[(&str, i64)] = &[
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
    ("arch_prctl", libc::SYS_arch_prctl),
];

/// The `ioctl` requests an allow-list allows: making a descriptor non-blocking or close-on-exec.
#[allow(clippy::unnecessary_cast)] // The requests' type is not u64 on every target.
const IOCTLS: &[u64] = &[libc::FIONBIO as u64, libc::FIOCLEX as u64];

/// The calls of a helper that serves plans over sockets, whatever their arguments: its plans' listeners (`bind`,
/// `listen`, `accept4`), its upstream connections (`connect`), messages both ways with the descriptors they carry,
/// socket options and names, and removing a plan's socket when the plan closes.
pub const SOCKET_SERVER_CALLS: &[(&str, i64)] = &[
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
    ("unlinkat", libc::SYS_unlinkat),
    #[cfg(target_arch = "x86_64")]
    ("unlink", libc::SYS_unlink),
];

/// What one helper's allow-list adds to [`RUNTIME_CALLS`].
#[derive(Debug, Clone, Copy)]
pub struct Policy<'a> {
    /// Lists of calls allowed whatever their arguments, by name and number (the helper's sockets and files), such as
    /// [`SOCKET_SERVER_CALLS`] and the helper's own.
    pub calls: &'a [&'a [(&'a str, i64)]],
    /// The socket families `socket` may open (`libc::AF_*`).
    pub families: &'a [i32],
}

/// Builds the allow-list of `policy` (see the module's docs) for this architecture.
///
/// # Errors
/// seccompiler's error for an architecture it does not support or a rule it cannot compile, as a sentence.
pub fn allow_list(policy: &Policy<'_>) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(fail)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = RUNTIME_CALLS
        .iter()
        .chain(policy.calls.iter().copied().flatten())
        .map(|(_, number)| (*number, Vec::new()))
        .collect();
    let families = policy
        .families
        .iter()
        .map(|family| arg_is(0, u64::from(family.unsigned_abs())))
        .collect::<Result<Vec<_>, _>>()
        .map_err(fail)?;
    rules.insert(libc::SYS_socket, families);
    rules.insert(
        libc::SYS_socketpair,
        vec![arg_is(0, libc::AF_UNIX.unsigned_abs().into()).map_err(fail)?],
    );
    let ioctls = IOCTLS
        .iter()
        .map(|request| arg_is(1, *request))
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
    filter.try_into().map_err(fail)
}

/// A rule that matches when the lower 32 bits of argument `arg` equal `value`.
fn arg_is(arg: u8, value: u64) -> Result<SeccompRule, seccompiler::BackendError> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value)
        .and_then(|condition| SeccompRule::new(vec![condition]))
}

fn fail(err: impl std::fmt::Display) -> String {
    format!("seccomp: {err}")
}

/// Loads `programs` into the calling thread, in order (no_new_privs must be set): the threads it starts after
/// inherit them.
///
/// # Errors
/// The kernel's refusal, as a sentence.
pub fn install(programs: &[BpfProgram]) -> Result<(), String> {
    for program in programs {
        seccompiler::apply_filter(program).map_err(|e| format!("cannot load the seccomp filters: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

    use super::*;

    #[test]
    fn an_allow_list_compiles_with_and_without_calls_of_its_own() {
        let empty = allow_list(&Policy {
            calls: &[],
            families: &[libc::AF_UNIX],
        })
        .unwrap();
        let more = allow_list(&Policy {
            calls: &[SOCKET_SERVER_CALLS, &[("sendmmsg", libc::SYS_sendmmsg)]],
            families: &[libc::AF_UNIX, libc::AF_INET],
        })
        .unwrap();
        assert!(more.len() > empty.len());
    }

    #[test]
    fn the_runtime_calls_name_each_number_once() {
        let mut numbers: Vec<i64> = RUNTIME_CALLS.iter().map(|(_, number)| *number).collect();
        numbers.sort_unstable();
        numbers.dedup();
        assert_eq!(numbers.len(), RUNTIME_CALLS.len());
    }
}
