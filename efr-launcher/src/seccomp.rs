//! The seccomp filters of the inner stage: socket families, denied system calls, and the x32 guard.
//!
//! Three filters, built with seccompiler except the guard, all allow-by-default for what they do not name (the
//! mounts, Landlock and the capabilities do the rest):
//!
//! 1. **Socket families** (`socket`, `socketpair`): default-deny. A family not in the list fails with `EAFNOSUPPORT`,
//!    the answer of a kernel without it, so programs fall back cleanly.
//!    - none (own network namespace) and `open_network`: `AF_UNIX`, `AF_INET`, `AF_INET6`, `AF_NETLINK`. In its own
//!      namespace the call reaches only its own loopback (tests that start a local server work).
//!    - `net_view` (the host's namespace): `AF_UNIX` and `AF_NETLINK` only (docs/protocol.md, "The contract": "the
//!      network view (phase D1)").
//!    - Never: `AF_PACKET`, `AF_VSOCK` (not bound to a network namespace: it reaches the host and VMs),
//!      `AF_BLUETOOTH`, `AF_ALG`, `AF_KEY`, `AF_XDP` and the rest.
//!
//!    `AF_UNIX` is always allowed: many programs need socket pairs, and which Unix sockets a call can reach is
//!    decided by what it can see (`/run/user/$UID` masked, a `socket` grant binds one socket in) and, for abstract
//!    sockets, by its own network namespace or the Landlock scope.
//! 2. **Denied calls**, `EPERM`: `io_uring_setup`, `io_uring_enter`, `io_uring_register` (io_uring runs operations
//!    that seccomp cannot see), `ptrace`, `process_vm_readv`, `process_vm_writev` (no reading or steering of other
//!    processes), `keyctl`, `add_key`, `request_key` (the kernel keyrings are credential stores too).
//! 3. **x32 guard** (x86_64): x32 calls use the same audit arch as x86_64 with bit 30 set in the number, so a
//!    filter keyed on x86_64 numbers does not see them. Any number with that bit fails with `EPERM`. Calls of other
//!    arches (i386 through `int 0x80`) are killed by seccompiler's arch check in filters 1 and 2.

use std::collections::BTreeMap;

use efr_protocol::internal::Network;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch, sock_filter,
};

/// Socket families a call may open on `network`.
pub fn allowed_families(network: Network) -> &'static [i32] {
    match network {
        Network::None | Network::OpenNetwork => &[libc::AF_UNIX, libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK],
        Network::NetView => &[libc::AF_UNIX, libc::AF_NETLINK],
    }
}

/// The system calls of filter 2.
pub const DENIED_CALLS: &[(&str, i64)] = &[
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
];

/// Builds the filters for `network`, in the order they are loaded.
///
/// # Errors
///
/// seccompiler's error for an architecture it does not support.
pub fn filters(network: Network) -> Result<Vec<BpfProgram>, seccompiler::Error> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let family_rule = SeccompRule::new(
        allowed_families(network)
            .iter()
            .map(|family| SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family_value(*family)))
            .collect::<Result<_, _>>()?,
    )?;
    let sockets: BTreeMap<i64, Vec<SeccompRule>> = [
        (libc::SYS_socket, vec![family_rule.clone()]),
        (libc::SYS_socketpair, vec![family_rule]),
    ]
    .into();
    let sockets = SeccompFilter::new(sockets, SeccompAction::Allow, errno(libc::EAFNOSUPPORT), arch)?;
    let denied: BTreeMap<i64, Vec<SeccompRule>> = DENIED_CALLS.iter().map(|(_, nr)| (*nr, Vec::new())).collect();
    let denied = SeccompFilter::new(denied, SeccompAction::Allow, errno(libc::EPERM), arch)?;
    let mut programs = vec![BpfProgram::try_from(sockets)?, BpfProgram::try_from(denied)?];
    if cfg!(target_arch = "x86_64") {
        programs.push(x32_guard());
    }
    Ok(programs)
}

/// Loads `programs` into the calling thread (no_new_privs must be set).
///
/// # Errors
///
/// The kernel's refusal.
pub fn apply(programs: &[BpfProgram]) -> Result<(), seccompiler::Error> {
    for program in programs {
        seccompiler::apply_filter(program)?;
    }
    Ok(())
}

/// The x32 guard (filter 3): `nr & 0x40000000` on x86_64 → `EPERM`.
pub fn x32_guard() -> BpfProgram {
    /// `struct seccomp_data`: `nr` at offset 0, `arch` at offset 4.
    const NR: u32 = 0;
    const ARCH: u32 = 4;
    /// `AUDIT_ARCH_X86_64`: EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE.
    const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    let load = |k| stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, k);
    vec![
        load(ARCH),
        // Not x86_64: not ours to judge (0 → next, 3 → allow).
        jump(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, AUDIT_ARCH_X86_64, 0, 3),
        load(NR),
        jump(libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K, X32_SYSCALL_BIT, 0, 1),
        stmt(
            libc::BPF_RET | libc::BPF_K,
            libc::SECCOMP_RET_ERRNO | u32_of(libc::EPERM),
        ),
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ]
}

fn errno(value: i32) -> SeccompAction {
    SeccompAction::Errno(u32_of(value))
}

fn family_value(family: i32) -> u64 {
    u64::from(u32_of(family))
}

/// Errno values and families are small and positive.
fn u32_of(value: i32) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

fn stmt(code: u32, k: u32) -> sock_filter {
    sock_filter {
        code: code_of(code),
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter {
        code: code_of(code),
        jt,
        jf,
        k,
    }
}

/// BPF opcodes fit in 16 bits.
fn code_of(code: u32) -> u16 {
    u16::try_from(code).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_follow_the_network() {
        assert!(allowed_families(Network::None).contains(&libc::AF_INET));
        assert!(allowed_families(Network::OpenNetwork).contains(&libc::AF_INET6));
        assert_eq!(allowed_families(Network::NetView), [libc::AF_UNIX, libc::AF_NETLINK]);
        for network in [Network::None, Network::NetView, Network::OpenNetwork] {
            let families = allowed_families(network);
            assert!(!families.contains(&libc::AF_VSOCK) && !families.contains(&libc::AF_PACKET));
        }
    }

    #[test]
    fn filters_compile_for_every_network() {
        for network in [Network::None, Network::NetView, Network::OpenNetwork] {
            let programs = filters(network).unwrap();
            assert_eq!(programs.len(), if cfg!(target_arch = "x86_64") { 3 } else { 2 });
            assert!(programs.iter().all(|p| !p.is_empty()));
        }
        // Fewer families, fewer comparisons: the net_view filter is shorter.
        assert!(filters(Network::NetView).unwrap()[0].len() < filters(Network::None).unwrap()[0].len());
    }

    #[test]
    fn the_x32_guard_denies_numbers_with_bit_30() {
        let guard = x32_guard();
        assert_eq!(guard[3].k, 0x4000_0000);
        assert_eq!(guard[4].k, libc::SECCOMP_RET_ERRNO | 1);
        assert_eq!(guard[5].k, libc::SECCOMP_RET_ALLOW);
        // Both jumps of the arch check land inside the program.
        assert_eq!(1 + 1 + usize::from(guard[1].jf), guard.len() - 1);
    }
}
