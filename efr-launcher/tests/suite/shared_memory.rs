//! A contained call has a private, writable, bounded `/dev/shm` (ADR 0004, "What the plan holds"): POSIX semaphores
//! and shared memory work (Python's `multiprocessing.Lock`, `shm_open`), a segment the call makes stays inside, and
//! the host's segments are not seen.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::Path;

use efr_protocol::internal::SHM_SIZE;
use support::{Fixture, User};

/// The Python the sandbox runs: the system's, which every user can read (a `python3` under `/root` could not be run
/// by the unprivileged user).
const PYTHON: &str = "/usr/bin/python3";

/// What the contained script prints: a lock, a named shared memory block, what `/dev/shm` holds and its size.
const SCRIPT: &str = r#"
import multiprocessing, multiprocessing.shared_memory, os, sys
multiprocessing.Lock()
print("lock ok")
block = multiprocessing.shared_memory.SharedMemory(create=True, size=4096)
block.buf[0] = 7
print("shm_open ok")
block.close(); block.unlink()
open("/dev/shm/" + sys.argv[1], "w").write("inside")
print("listing", sorted(os.listdir("/dev/shm")))
st = os.statvfs("/dev/shm")
print("size", st.f_blocks * st.f_frsize)
"#;

fn shared_memory(user: User) {
    assert!(
        Path::new(PYTHON).exists(),
        "this test runs {PYTHON} inside the sandbox (Python's multiprocessing); install python3"
    );
    let fx = Fixture::new(user);
    let tag = format!("efr-test-{}-{}", std::process::id(), user.uid());
    let host_segment = Path::new("/dev/shm").join(format!("{tag}-host"));
    let inside = format!("{tag}-inside");
    std::fs::write(&host_segment, "host").unwrap();
    let script = fx.base.join("shm.py");
    std::fs::write(&script, SCRIPT).unwrap();
    let run = fx.run(&fx.plan(&format!("{PYTHON} {} {inside}", script.display())));
    let leaked_out = Path::new("/dev/shm").join(&inside);
    let leaked = leaked_out.exists();
    let _ = std::fs::remove_file(&host_segment);
    let _ = std::fs::remove_file(&leaked_out);
    assert_eq!(run.exited(), Some(0), "{}", run.describe());
    assert!(run.stdout.contains("lock ok\nshm_open ok\n"), "{}", run.describe());
    assert!(
        run.stdout.contains(&format!("listing ['{inside}']\n")),
        "the host's segment is visible inside, or others are: {}",
        run.describe()
    );
    assert!(!leaked, "a segment made inside appeared in the host's /dev/shm");
    assert!(
        run.stdout.contains(&format!("size {SHM_SIZE}\n")),
        "/dev/shm is not bounded to {SHM_SIZE} bytes: {}",
        run.describe()
    );
}

#[test]
fn shared_memory_works_and_stays_private_as_root() {
    shared_memory(User::Root);
}

#[test]
fn shared_memory_works_and_stays_private_as_an_unprivileged_user() {
    shared_memory(User::Nobody);
}
