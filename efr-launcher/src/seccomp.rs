//! The seccomp filters of the inner stage: socket families, denied system calls, absent system calls, and the x32
//! guard.
//!
//! Four filters, built with seccompiler except the guard. Filters 2 to 4 are deny-lists that allow what they do not
//! name (the mounts, Landlock and the capabilities do the rest); `docs/adr/0007-denied-system-calls.md` says what is
//! denied, what is not, and why.
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
//! 2. **Denied calls**, `EPERM`: [`DENIED_CALLS`] whatever their arguments, and three by argument: `clone` with
//!    `CLONE_NEWUSER`, `ioctl` with `TIOCSTI` or `TIOCLINUX` (typing into, or pasting from, a terminal), and
//!    `personality` with anything but [`ALLOWED_PERSONALITIES`]. `ioctl`'s request and `personality`'s persona are
//!    `unsigned int` to the kernel, which drops the upper 32 bits of the register, so only the lower 32 are compared
//!    (a request with junk above still matches); `clone`'s flags are read the same way by the kernel.
//! 3. **Absent calls**, `ENOSYS`: [`ABSENT_CALLS`], as if the kernel lacked them. `clone3` passes its flags in
//!    memory, where seccomp cannot look, so it is refused as missing and libc falls back to `clone`, whose flags
//!    filter 2 checks; the new mount API (`fsopen`, `open_tree`, ...) has no use inside the sandbox.
//! 4. **x32 guard** (x86_64): x32 calls use the same audit arch as x86_64 with bit 30 set in the number, so a
//!    filter keyed on x86_64 numbers does not see them. Any number with that bit fails with `EPERM`. Calls of other
//!    arches (i386 through `int 0x80`) are killed by seccompiler's arch check in filters 1 to 3.
//!
//! The outer stage's proxy bridge thread loads the same four with Unix sockets as its only family and `execve`
//! denied too ([`bridge_filters`], docs/adr/0011-the-proxy-bridge.md).

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

/// The system calls of filter 2 denied whatever their arguments, and why (the reasons, in full, in
/// `docs/adr/0007-denied-system-calls.md`).
pub const DENIED_CALLS: &[(&str, i64)] = &[
    // io_uring runs operations that seccomp cannot see.
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    // No reading or steering of other processes.
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    // The kernel keyrings are credential stores too.
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    // Large kernel surfaces with a record of exploits, of no use to a build or a test: profiling, BPF programs, and
    // userfaultfd (which stretches the race windows of kernel bugs).
    ("perf_event_open", libc::SYS_perf_event_open),
    ("bpf", libc::SYS_bpf),
    ("userfaultfd", libc::SYS_userfaultfd),
    // The kernel itself: kexec and modules (a capability guards them already; this holds should one leak in).
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    // The kernel log (dmesg: addresses), process accounting, and the quotas of the host's file systems.
    ("syslog", libc::SYS_syslog),
    ("acct", libc::SYS_acct),
    ("quotactl", libc::SYS_quotactl),
    ("quotactl_fd", libc::SYS_quotactl_fd),
    // NUMA memory policy and page moves: no use inside, a record of kernel bugs.
    ("mbind", libc::SYS_mbind),
    ("get_mempolicy", libc::SYS_get_mempolicy),
    ("set_mempolicy", libc::SYS_set_mempolicy),
    ("set_mempolicy_home_node", libc::SYS_set_mempolicy_home_node),
    ("migrate_pages", libc::SYS_migrate_pages),
    ("move_pages", libc::SYS_move_pages),
    // Namespaces and mounts of its own: the sandbox's layout is bubblewrap's, and stays so.
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("chroot", libc::SYS_chroot),
    // x86 only: the local descriptor table (16-bit code, a record of information leaks) and a.out libraries.
    #[cfg(target_arch = "x86_64")]
    ("modify_ldt", libc::SYS_modify_ldt),
    #[cfg(target_arch = "x86_64")]
    ("uselib", libc::SYS_uselib),
];

/// The system calls of filter 3, which fail with `ENOSYS` as in a kernel without them, so libc and programs fall
/// back: `clone3` (its flags are in memory, so libc falls back to `clone`, whose flags filter 2 sees) and the new
/// mount API.
pub const ABSENT_CALLS: &[(&str, i64)] = &[
    ("clone3", libc::SYS_clone3),
    ("open_tree", libc::SYS_open_tree),
    ("move_mount", libc::SYS_move_mount),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("mount_setattr", libc::SYS_mount_setattr),
];

/// `PER_LINUX`: the standard personality.
const PER_LINUX: u32 = 0;
/// `PER_LINUX32`: `uname` says the 32-bit machine (`linux32`, `setarch i686`).
const PER_LINUX32: u32 = 0x0008;
/// `ADDR_NO_RANDOMIZE`: no address space randomization for the caller and its children (debuggers, `setarch -R`,
/// ThreadSanitizer's re-exec); it only weakens the call's own processes.
const ADDR_NO_RANDOMIZE: u32 = 0x0004_0000;
/// `0xffffffff`: a query, which changes nothing and returns the current personality.
const PER_QUERY: u32 = 0xffff_ffff;

/// The personalities a call may set. Every other is `EPERM`: the other execution domains and flags such as
/// `UNAME26` (its `uname` leaked kernel memory), `READ_IMPLIES_EXEC` (makes readable memory executable) and
/// `MMAP_PAGE_ZERO` are old kernel paths that no build needs.
pub const ALLOWED_PERSONALITIES: &[u32] = &[
    PER_LINUX,
    PER_LINUX | ADDR_NO_RANDOMIZE,
    PER_LINUX32,
    PER_LINUX32 | ADDR_NO_RANDOMIZE,
    PER_QUERY,
];

/// Builds the filters for `network`, in the order they are loaded.
///
/// # Errors
///
/// seccompiler's error for an architecture it does not support.
pub fn filters(network: Network) -> Result<Vec<BpfProgram>, seccompiler::Error> {
    build(allowed_families(network), &[])
}

/// The signal calls a call contained by Landlock alone may not make when Landlock cannot scope signals (ABI before
/// 6): without a pid namespace its signals would reach every process of the user.
pub const UNSCOPED_SIGNAL_CALLS: &[(&str, i64)] = &[
    ("kill", libc::SYS_kill),
    ("tkill", libc::SYS_tkill),
    ("tgkill", libc::SYS_tgkill),
    ("rt_sigqueueinfo", libc::SYS_rt_sigqueueinfo),
    ("rt_tgsigqueueinfo", libc::SYS_rt_tgsigqueueinfo),
    ("pidfd_send_signal", libc::SYS_pidfd_send_signal),
];

/// The filters of a call contained by Landlock and seccomp alone ([`crate::unshared`]): no socket of any family
/// (without a network namespace, a Unix socket would reach the user's session bus and agents), the signal calls
/// unless `scoped`, and filters 2 to 4 as for any call.
///
/// # Errors
///
/// seccompiler's error for an architecture it does not support.
pub fn unshared_filters(scoped: bool) -> Result<Vec<BpfProgram>, seccompiler::Error> {
    build(&[], if scoped { &[] } else { UNSCOPED_SIGNAL_CALLS })
}

/// The system calls the proxy bridge's thread denies besides [`DENIED_CALLS`]: it never runs a program.
pub const BRIDGE_DENIED_CALLS: &[(&str, i64)] = &[("execve", libc::SYS_execve), ("execveat", libc::SYS_execveat)];

/// The filters of the outer stage's proxy bridge thread (docs/adr/0011-the-proxy-bridge.md): Unix sockets only
/// (it accepts on a listener it was given and connects to the proxy's socket), no exec, and filters 2 to 4 as for a
/// call.
///
/// # Errors
///
/// seccompiler's error for an architecture it does not support.
pub fn bridge_filters() -> Result<Vec<BpfProgram>, seccompiler::Error> {
    build(&[libc::AF_UNIX], BRIDGE_DENIED_CALLS)
}

/// The filters of a contained job's socket maker (`crate::sockets`): TCP sockets of both families only (it makes
/// them for efrd and uses none), no exec, and filters 2 to 4 as for a call.
///
/// # Errors
///
/// seccompiler's error for an architecture it does not support.
pub fn socket_maker_filters() -> Result<Vec<BpfProgram>, seccompiler::Error> {
    build(&[libc::AF_INET, libc::AF_INET6], BRIDGE_DENIED_CALLS)
}

/// The four filters with `families` allowed and `also_denied` added to filter 2.
fn build(families: &[i32], also_denied: &[(&str, i64)]) -> Result<Vec<BpfProgram>, seccompiler::Error> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    // No family allowed: a call with no rule matches always, so every socket is refused.
    let family_rules = if families.is_empty() {
        Vec::new()
    } else {
        vec![SeccompRule::new(
            families
                .iter()
                .map(|family| {
                    SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family_value(*family))
                })
                .collect::<Result<_, _>>()?,
        )?]
    };
    let sockets: BTreeMap<i64, Vec<SeccompRule>> = [
        (libc::SYS_socket, family_rules.clone()),
        (libc::SYS_socketpair, family_rules),
    ]
    .into();
    let sockets = SeccompFilter::new(sockets, SeccompAction::Allow, errno(libc::EAFNOSUPPORT), arch)?;
    let mut denied: BTreeMap<i64, Vec<SeccompRule>> = DENIED_CALLS
        .iter()
        .chain(also_denied)
        .map(|(_, nr)| (*nr, Vec::new()))
        .collect();
    denied.extend(argument_rules()?);
    let denied = SeccompFilter::new(denied, SeccompAction::Allow, errno(libc::EPERM), arch)?;
    let absent: BTreeMap<i64, Vec<SeccompRule>> = ABSENT_CALLS.iter().map(|(_, nr)| (*nr, Vec::new())).collect();
    let absent = SeccompFilter::new(absent, SeccompAction::Allow, errno(libc::ENOSYS), arch)?;
    let mut programs = vec![
        BpfProgram::try_from(sockets)?,
        BpfProgram::try_from(denied)?,
        BpfProgram::try_from(absent)?,
    ];
    if cfg!(target_arch = "x86_64") {
        programs.push(x32_guard());
    }
    Ok(programs)
}

/// The rules of filter 2 that look at an argument: each rule matches (and so denies) when all its conditions hold,
/// a call with several rules when any of them does.
fn argument_rules() -> Result<Vec<(i64, Vec<SeccompRule>)>, seccompiler::Error> {
    // The lower 32 bits of an argument (what the kernel reads of an `unsigned int`), compared with `value`.
    let low =
        |arg: u8, op: SeccompCmpOp, value: u32| SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value.into());
    let clone_newuser = u32_of(libc::CLONE_NEWUSER);
    // Every arch seccompiler supports (x86_64, aarch64, riscv64) passes clone's flags first.
    let clone = vec![SeccompRule::new(vec![low(
        0,
        SeccompCmpOp::MaskedEq(clone_newuser.into()),
        clone_newuser,
    )?])?];
    let ioctl = [libc::TIOCSTI, libc::TIOCLINUX]
        .into_iter()
        .map(|request| SeccompRule::new(vec![low(1, SeccompCmpOp::Eq, request_value(request))?]))
        .collect::<Result<_, _>>()?;
    let personality = vec![SeccompRule::new(
        ALLOWED_PERSONALITIES
            .iter()
            .map(|persona| low(0, SeccompCmpOp::Ne, *persona))
            .collect::<Result<_, _>>()?,
    )?];
    Ok(vec![
        (libc::SYS_clone, clone),
        (libc::SYS_ioctl, ioctl),
        (libc::SYS_personality, personality),
    ])
}

/// The x32 guard (filter 4): `nr & 0x40000000` on x86_64 → `EPERM`.
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

/// Terminal requests fit in 32 bits (the kernel reads them as `unsigned int`).
fn request_value(request: libc::Ioctl) -> u32 {
    u32::try_from(request).unwrap_or(u32::MAX)
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
            let programs = filters(network).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(programs.len(), if cfg!(target_arch = "x86_64") { 4 } else { 3 });
            assert!(programs.iter().all(|p| !p.is_empty()));
        }
        let bridge = bridge_filters().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(bridge.len(), if cfg!(target_arch = "x86_64") { 4 } else { 3 });
    }

    /// Calls whose arguments make them harmless, or a plain error, for root outside any filter, and what the filters
    /// answer. Root keeps its capabilities here, so a refusal can only come from the filters (inside the sandbox the
    /// missing capabilities would refuse some of them too).
    const CASES: &[(&str, i64, [u64; 4], i32)] = &[
        ("unshare(0), a no-op", libc::SYS_unshare, [0; 4], libc::EPERM),
        (
            "setns on no descriptor",
            libc::SYS_setns,
            [u64::MAX, 0, 0, 0],
            libc::EPERM,
        ),
        (
            "perf_event_open without attributes",
            libc::SYS_perf_event_open,
            [0, 0, u64::MAX, u64::MAX],
            libc::EPERM,
        ),
        ("syslog's buffer size", libc::SYS_syslog, [10, 0, 0, 0], libc::EPERM),
        // Flags 0 would unload a loaded kexec image; these flags do not exist.
        (
            "kexec_load with no such flags",
            libc::SYS_kexec_load,
            [0, 0, 0, 0xffff_0000],
            libc::EPERM,
        ),
        (
            "delete_module with no name",
            libc::SYS_delete_module,
            [0; 4],
            libc::EPERM,
        ),
        ("clone3 with no arguments", libc::SYS_clone3, [0; 4], libc::ENOSYS),
        ("fsopen with no name", libc::SYS_fsopen, [0; 4], libc::ENOSYS),
        // socket(AF_INET, SOCK_STREAM, 0) through the x32 entry: the x32 guard.
        ("x32 socket", 0x4000_0000 | libc::SYS_socket, [2, 1, 0, 0], libc::EPERM),
    ];

    /// Loads `programs` in a forked child: seccompiler's own loader, which allocates nothing, even on failure
    /// (efr-helper's `install` formats its error).
    fn load(programs: &[BpfProgram]) -> bool {
        programs
            .iter()
            .all(|program| seccompiler::apply_filter(program).is_ok())
    }

    /// Runs every case in a child process of its own, with the filters loaded when `filtered`, and gives the errno of
    /// each (0 when the call went through).
    fn errnos(filtered: bool) -> Vec<i32> {
        let programs = filters(Network::None).unwrap_or_else(|e| panic!("{e}"));
        let mut fds = [0; 2];
        // SAFETY: pipe writes two descriptors into the array it is given.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the child only makes system calls and writes to the pipe before _exit (nothing that another
        // thread of the test harness could have left locked).
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let mut out = [0_i32; CASES.len()];
            let loaded = !filtered || load(&programs);
            for (slot, (_, nr, args, _)) in out.iter_mut().zip(CASES) {
                // SAFETY: every case's arguments are null pointers, bad descriptors or plain numbers, which the
                // kernel checks; none of them writes to this process's memory.
                let rc = unsafe { libc::syscall(*nr, args[0], args[1], args[2], args[3], 0, 0) };
                *slot = if rc < 0 {
                    std::io::Error::last_os_error().raw_os_error().unwrap_or(-1)
                } else {
                    0
                };
                if rc > 0 && *nr == libc::SYS_clone3 {
                    // SAFETY: a clone3 that went through made a child; it leaves at once.
                    unsafe { libc::_exit(0) };
                }
            }
            if !loaded {
                out = [-1; CASES.len()];
            }
            let bytes: Vec<u8> = out.iter().flat_map(|e| e.to_ne_bytes()).collect();
            // SAFETY: writes the buffer to the pipe, then leaves without running the harness's destructors.
            unsafe {
                libc::write(fds[1], bytes.as_ptr().cast(), bytes.len());
                libc::_exit(0);
            }
        }
        // SAFETY: closes the parent's copy of the write end; the read end is read to its end below.
        unsafe { libc::close(fds[1]) };
        let mut bytes = Vec::new();
        // SAFETY: the read end is this process's own descriptor; File closes it.
        let mut reader = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fds[0]) };
        std::io::Read::read_to_end(&mut reader, &mut bytes).unwrap_or_else(|e| panic!("{e}"));
        // SAFETY: reaps the child forked above.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        assert_eq!(bytes.len(), CASES.len() * 4, "the child did not report");
        bytes
            .chunks_exact(4)
            .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    }

    /// The bridge's filters in a child of its own: `[socket(AF_UNIX), socket(AF_INET), execve(/bin/true)]`'s errnos
    /// (0 for the Unix socket that went through).
    fn bridge_errnos() -> [i32; 3] {
        let programs = bridge_filters().unwrap_or_else(|e| panic!("{e}"));
        let path = c"/bin/true";
        let argv = [path.as_ptr(), std::ptr::null()];
        let mut fds = [0; 2];
        // SAFETY: pipe writes two descriptors into the array it is given.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the child only makes system calls and writes to the pipe before _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let errno = |rc: i64| {
                if rc < 0 {
                    std::io::Error::last_os_error().raw_os_error().unwrap_or(-1)
                } else {
                    0
                }
            };
            let mut out = [-1_i32; 3];
            if load(&programs) {
                // SAFETY: socket and execve take plain numbers and NUL-terminated strings that live here; an execve
                // that went through would replace this child, which then reports nothing.
                unsafe {
                    out[0] = errno(i64::from(libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0)));
                    out[1] = errno(i64::from(libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0)));
                    out[2] = errno(i64::from(libc::execve(path.as_ptr(), argv.as_ptr(), std::ptr::null())));
                }
            }
            let bytes: Vec<u8> = out.iter().flat_map(|e| e.to_ne_bytes()).collect();
            // SAFETY: writes the buffer to the pipe, then leaves without running the harness's destructors.
            unsafe {
                libc::write(fds[1], bytes.as_ptr().cast(), bytes.len());
                libc::_exit(0);
            }
        }
        // SAFETY: closes the parent's copy of the write end; the read end is read to its end below.
        unsafe { libc::close(fds[1]) };
        let mut bytes = Vec::new();
        // SAFETY: the read end is this process's own descriptor; File closes it.
        let mut reader = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fds[0]) };
        std::io::Read::read_to_end(&mut reader, &mut bytes).unwrap_or_else(|e| panic!("{e}"));
        // SAFETY: reaps the child forked above.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        assert_eq!(bytes.len(), 12, "the child did not report (did the exec go through?)");
        let word = |i: usize| i32::from_ne_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        [word(0), word(4), word(8)]
    }

    #[test]
    fn the_bridge_filters_allow_unix_sockets_only_and_no_exec() {
        assert_eq!(bridge_errnos(), [0, libc::EAFNOSUPPORT, libc::EPERM]);
    }

    #[test]
    fn the_filters_refuse_what_root_could_otherwise_do() {
        assert!(
            nix::unistd::geteuid().is_root(),
            "this test runs the calls as root with every capability, so only the filters can refuse them; run it as \
             root (as CI does)"
        );
        let without = errnos(false);
        let with = errnos(true);
        assert!(with.iter().all(|e| *e != -1), "the filters did not load");
        for ((name, _, _, expected), (without, with)) in CASES.iter().zip(without.iter().zip(&with)) {
            assert_ne!(
                without, expected,
                "{name}: the kernel alone gives {expected}, so the case proves nothing"
            );
            assert_eq!(with, expected, "{name}: the filters gave errno {with}");
        }
    }
}
