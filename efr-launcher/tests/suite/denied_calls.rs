//! The seccomp filter's denied calls, from inside real contained calls (`docs/adr/0007-denied-system-calls.md`): the
//! helper's `calls` mode makes each call once and prints its result, and every result must be the one the filter
//! gives (`EPERM`, or `ENOSYS` where libc should fall back), while the calls that ordinary programs need still work.
//! Ordinary programs (Python with threads and processes, git, bash) run too.
//!
//! The helper's arguments are chosen so that, where possible, the kernel's own answer without the filter differs
//! (a query that works, `EFAULT`, `ENOSPC` of the disabled user namespaces, `ENOSYS` of a kernel built without the
//! call): the calls that only check a capability first (`kexec_load`, `acct`, `mount`, ...) say `EPERM` either way
//! inside the sandbox, which has none.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;

use support::{Fixture, User, helper};

const EPERM: &str = "errno=1";
const ENOSYS: &str = "errno=38";
const OK: &str = "ok";

/// Each call of the helper's `calls` mode and what it gives inside the sandbox (and on x86_64 `modify_ldt` and
/// `uselib`, `EPERM`).
const EXPECTED: &[(&str, &str)] = &[
    ("perf_event_open", EPERM),
    ("bpf", EPERM),
    ("userfaultfd", EPERM),
    ("personality_query", OK),
    ("personality_linux", OK),
    ("personality_no_randomize", OK),
    ("personality_uname26", EPERM),
    ("personality_read_implies_exec", EPERM),
    ("personality_uname26_high_bits", EPERM),
    ("unshare_newuser", EPERM),
    ("unshare_files", EPERM),
    ("clone_newuser", EPERM),
    ("clone_fork", OK),
    ("clone3", ENOSYS),
    ("pthread_create", OK),
    ("posix_spawn", OK),
    ("ioctl_tiocsti", EPERM),
    ("ioctl_tiocsti_high_bits", EPERM),
    ("ioctl_tioclinux", EPERM),
    ("ioctl_tcgets", OK),
    ("kexec_load", EPERM),
    ("kexec_file_load", EPERM),
    ("init_module", EPERM),
    ("finit_module", EPERM),
    ("delete_module", EPERM),
    ("syslog", EPERM),
    ("acct", EPERM),
    ("quotactl", EPERM),
    ("quotactl_fd", EPERM),
    ("mbind", EPERM),
    ("get_mempolicy", EPERM),
    ("set_mempolicy", EPERM),
    ("set_mempolicy_home_node", EPERM),
    ("migrate_pages", EPERM),
    ("move_pages", EPERM),
    ("setns", EPERM),
    ("mount", EPERM),
    ("umount2", EPERM),
    ("pivot_root", EPERM),
    ("chroot", EPERM),
    ("open_tree", ENOSYS),
    ("move_mount", ENOSYS),
    ("fsopen", ENOSYS),
    ("fsconfig", ENOSYS),
    ("fsmount", ENOSYS),
    ("fspick", ENOSYS),
    ("mount_setattr", ENOSYS),
];

fn denied_calls(user: User) {
    let fx = Fixture::new(user);
    let run = fx.run(&fx.plan(&format!("{} calls", helper().display())));
    assert_eq!(run.exited(), Some(0), "{}", run.describe());
    let got: BTreeMap<&str, &str> = run.stdout.lines().filter_map(|line| line.split_once(' ')).collect();
    let mut expected = EXPECTED.to_vec();
    if cfg!(target_arch = "x86_64") {
        expected.extend([("modify_ldt", EPERM), ("uselib", EPERM)]);
    }
    let wrong: Vec<String> = expected
        .iter()
        .filter(|(name, expected)| got.get(name) != Some(expected))
        .map(|(name, expected)| format!("{name}: expected {expected}, got {:?}", got.get(name)))
        .collect();
    assert!(
        wrong.is_empty(),
        "as {user:?}:\n{}\n{}",
        wrong.join("\n"),
        run.describe()
    );
    assert_eq!(got.len(), expected.len(), "{}", run.describe());
}

#[test]
fn denied_calls_fail_as_root() {
    denied_calls(User::Root);
}

#[test]
fn denied_calls_fail_as_an_unprivileged_user() {
    denied_calls(User::Nobody);
}

/// Programs that use threads, processes, pipes and a terminal-less shell work under the filter.
#[test]
fn ordinary_programs_still_work() {
    for program in ["/usr/bin/python3", "/usr/bin/git", "/usr/bin/bash"] {
        assert!(
            Path::new(program).exists(),
            "this test runs {program} inside the sandbox; install it"
        );
    }
    let fx = Fixture::new(User::Nobody);
    let python = "import concurrent.futures as f, subprocess, threading, multiprocessing as m\n\
                  threading.Thread(target=print).start()\n\
                  print(subprocess.run(['true']).returncode)\n\
                  with m.Pool(2) as pool: print(sum(pool.map(abs, [-1, -2])))\n\
                  with f.ThreadPoolExecutor(2) as pool: print(sum(pool.map(abs, [-3])))";
    let script = fx.base.join("ordinary.py");
    std::fs::write(&script, python).unwrap();
    let line = format!(
        "/usr/bin/python3 {script} && /usr/bin/bash -c 'echo $((6 * 7)) | cat' && git init -q && \
         git -c user.name=t -c user.email=t@t commit -q --allow-empty -m m && git log --format=%s",
        script = script.display()
    );
    let mut plan = fx.plan(&line);
    plan.env.insert("HOME".into(), fx.project.display().to_string());
    let run = fx.run(&plan);
    assert_eq!(run.exited(), Some(0), "{}", run.describe());
    assert_eq!(run.stdout, "\n0\n3\n3\n42\nm\n", "{}", run.describe());
}
