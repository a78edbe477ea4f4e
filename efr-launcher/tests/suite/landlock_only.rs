//! A read-only call contained by Landlock and seccomp alone (docs/adr/0020-landlock-only-reads.md), where bubblewrap
//! cannot start: it reads around the masks, writes nowhere but its scratch folder, opens no socket, and the report
//! says which containment ran.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use efr_protocol::internal::{Containment, LaunchPlan, LaunchReport};
use support::{Fixture, SSH_SECRET, User, config_mask};

/// The fixture's plan for `line` with no writable root and containment `landlock`; `outside/secret.txt` is an extra
/// mask. No bubblewrap is needed: the plan names one that does not exist.
fn plan(fx: &Fixture, line: &str) -> LaunchPlan {
    let mut plan = fx.plan(line);
    plan.bwrap = "/nonexistent/bwrap".into();
    plan.writable.clear();
    plan.masks.push(config_mask(&fx.outside.join("secret.txt")));
    plan.containment = Containment::Landlock;
    plan
}

#[test]
fn a_read_only_call_contained_by_landlock_alone_reads_around_the_masks_and_writes_nothing() {
    let fx = Fixture::new(User::Nobody);
    std::fs::write(fx.project.join("README.md"), "the readme\n").unwrap();
    std::fs::write(fx.outside.join("secret.txt"), "EXTRA-MASKED-1234").unwrap();
    let key = fx.home.join(".ssh/id_ed25519");
    let secret = fx.outside.join("secret.txt");
    for line in [
        format!("cat {}", key.display()),
        format!("K={}; cat $K", key.display()),
        "cat \"$HOME/.ssh/\"*".to_owned(),
        format!("cat {}", secret.display()),
        format!("/usr/bin/python3 -c 'print(open(\"{}\").read())'", key.display()),
        format!("grep -r SECRET {}", fx.home.display()),
    ] {
        let run = fx.run(&plan(&fx, &line));
        assert!(run.exited().is_some(), "{line}: {}", run.describe());
        for hidden in [SSH_SECRET, "EXTRA-MASKED-1234"] {
            assert!(!run.stdout.contains(hidden), "{line} read a mask: {}", run.describe());
        }
    }
    // Reads elsewhere work, from the project and around the masks.
    let run = fx.run(&plan(
        &fx,
        "ls && cat README.md && cat ../outside/existing && ls ../home",
    ));
    assert_eq!(run.exited(), Some(0), "{}", run.describe());
    assert!(
        run.stdout.contains("the readme") && run.stdout.contains("before"),
        "{}",
        run.describe()
    );
    let sandboxed = run
        .report
        .iter()
        .find_map(|line| match line {
            LaunchReport::Sandboxed { containment, .. } => Some(*containment),
            _ => None,
        })
        .unwrap();
    assert_eq!(sandboxed, Containment::Landlock);
    // Writes: nowhere but the scratch folder, which goes with the call.
    let run = fx.run(&plan(
        &fx,
        "echo x > made.txt || echo refused; echo y > \"$TMPDIR/f\" && cat \"$TMPDIR/f\" && echo \"$TMPDIR\"",
    ));
    assert_eq!(run.exited(), Some(0), "{}", run.describe());
    assert!(run.stdout.contains("refused\ny\n"), "{}", run.describe());
    assert!(!fx.project.join("made.txt").exists());
    let scratch = run.stdout.lines().last().unwrap();
    assert!(scratch.starts_with("/tmp/efr-ro-"), "{}", run.describe());
    assert!(!std::path::Path::new(scratch).exists(), "the scratch folder stayed");
    // No socket of any family, and nothing of the host's /tmp or /dev/shm.
    let host_tmp = tempfile::Builder::new()
        .prefix("efr-host-")
        .tempfile_in("/tmp")
        .unwrap();
    std::fs::write(host_tmp.path(), "HOST-TMP-FILE").unwrap();
    std::fs::set_permissions(host_tmp.path(), std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let line = format!(
        "/usr/bin/python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>&1 | tail -1; \
         /usr/bin/python3 -c 'import socket; socket.socket()' 2>&1 | tail -1; cat {} || echo no-tmp",
        host_tmp.path().display()
    );
    let run = fx.run(&plan(&fx, &line));
    assert_eq!(run.exited(), Some(0), "{}", run.describe());
    assert_eq!(
        run.stdout.matches("Address family not supported").count(),
        2,
        "{}",
        run.describe()
    );
    assert!(
        !run.stdout.contains("HOST-TMP-FILE") && run.stdout.contains("no-tmp"),
        "{}",
        run.describe()
    );
}

#[test]
fn a_plan_with_landlock_containment_and_a_writable_root_is_refused() {
    let fx = Fixture::new(User::Nobody);
    let mut plan = plan(&fx, "true");
    plan.writable = fx.plan("true").writable;
    let run = fx.run(&plan);
    assert!(
        matches!(run.end(), Some(LaunchReport::SetupError { .. })),
        "{}",
        run.describe()
    );
}
