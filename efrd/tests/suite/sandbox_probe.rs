//! The sandbox probe against the real `efr-launcher` and bubblewrap: a working sandbox is
//! reported with its Landlock ABI and the net_view self-test; a missing bubblewrap, a missing launcher and a
//! bubblewrap that cannot build the sandbox are each reported with why.
//!
//! The launcher is the one built next to efrd (`target/<profile>/efr-launcher`, where an installed efrd finds it
//! too); when it is not there yet, the test builds it with cargo.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use efr_protocol::wire::{ProbeName, SandboxProbe};
use efrd::sandbox::{ProbeOptions, find_program, probe};

use common::auto::launcher;

/// The step `name` of a probe.
fn step(steps: &[SandboxProbe], name: ProbeName) -> &SandboxProbe {
    steps
        .iter()
        .find(|step| step.name == name)
        .unwrap_or_else(|| panic!("no step {name}: {steps:#?}"))
}

fn options(dir: &Path) -> ProbeOptions {
    ProbeOptions {
        launcher: launcher().to_path_buf(),
        bwrap: None,
        home: dir.join("home"),
        runtime_dir: dir.join("run-user"),
        netview_off: false,
        bus_off: false,
        kernel: Default::default(),
    }
}

#[test]
fn a_working_sandbox_reports_its_layers() {
    let dir = tempfile::tempdir().unwrap();
    let found = probe(&options(dir.path()));
    assert!(found.status.available, "{found:#?}");
    assert_eq!(found.status.reason, None);
    assert!(
        found.status.landlock_abi.is_some_and(|abi| (1..=6).contains(&abi)),
        "{found:#?}"
    );
    assert!(
        found.landlock_enforced && found.seccomp && found.user_namespaces,
        "{found:#?}"
    );
    assert!(found.status.netview, "the net_view self-test failed: {found:#?}");
    assert!(!found.status.netview_off);
    assert_eq!(found.paths.launcher.as_deref(), Some(launcher()));
    assert!(
        found.paths.bwrap.as_ref().is_some_and(|p| p.ends_with("bwrap")),
        "{found:#?}"
    );
    let version = found.bwrap_version.clone().unwrap();
    assert!(version.chars().next().is_some_and(|c| c.is_ascii_digit()), "{version}");
    // Every step, in order, passed, with what it found; the proxy's self-test is the daemon's, after this probe
    // (sandbox/proxy_test.rs, tested in sandbox_methods.rs).
    let names: Vec<ProbeName> = found.steps.iter().map(|step| step.name).collect();
    assert_eq!(names, &ProbeName::ALL[..ProbeName::ALL.len() - 2]);
    assert_eq!(ProbeName::ALL[ProbeName::ALL.len() - 2], ProbeName::Proxy);
    assert!(
        found.steps.iter().all(|step| step.passed && step.reason.is_none()),
        "{found:#?}"
    );
    let bwrap = found.paths.bwrap.clone().unwrap();
    assert_eq!(
        step(&found.steps, ProbeName::Bwrap).detail,
        Some(format!("{version} at {}", bwrap.display()))
    );
    assert_eq!(
        step(&found.steps, ProbeName::Landlock).detail,
        Some(format!("ABI {}", found.status.landlock_abi.unwrap()))
    );
    // The user's setting is reported as it is.
    let found = probe(&ProbeOptions {
        netview_off: true,
        bus_off: false,
        ..options(dir.path())
    });
    assert!(found.status.netview_off && found.status.available);
}

#[test]
fn a_missing_bubblewrap_or_launcher_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let found = probe(&ProbeOptions {
        bwrap: Some("/nonexistent/bwrap".into()),
        ..options(dir.path())
    });
    assert!(!found.status.available);
    assert_eq!(
        found.status.reason.as_deref(),
        Some("bubblewrap is not installed at /nonexistent/bwrap")
    );
    assert_eq!(found.paths.bwrap, None);
    let bwrap = step(&found.steps, ProbeName::Bwrap);
    assert!(!bwrap.passed && bwrap.detail.is_none());
    assert_eq!(bwrap.reason, found.status.reason);
    // The launcher is still checked on its own; the steps that need a run are not.
    assert!(step(&found.steps, ProbeName::Launcher).passed);
    let net_view = step(&found.steps, ProbeName::NetView);
    assert!(!net_view.passed);
    assert_eq!(
        net_view.reason.as_deref(),
        Some("not checked: bubblewrap is not installed at /nonexistent/bwrap")
    );
    let found = probe(&ProbeOptions {
        launcher: "/nonexistent/efr-launcher".into(),
        ..options(dir.path())
    });
    assert!(!found.status.available);
    assert!(
        found
            .status
            .reason
            .clone()
            .unwrap()
            .contains("efr-launcher is not installed")
    );
    assert!(step(&found.steps, ProbeName::Bwrap).passed);
    let launcher_step = step(&found.steps, ProbeName::Launcher);
    assert_eq!(launcher_step.reason, found.status.reason);
    assert!(!step(&found.steps, ProbeName::ContainedRun).passed);
    // A PATH without bwrap finds none; the machine's PATH finds the real one.
    assert_eq!(find_program("bwrap", OsStr::new(dir.path().as_os_str())), None);
    assert!(find_program("bwrap", OsStr::new("/usr/local/bin:/usr/bin:/bin")).is_some());
}

#[test]
fn a_bubblewrap_that_cannot_build_the_sandbox_is_a_setup_error() {
    // A real program in bubblewrap's place that answers --version and fails the setup as bubblewrap does on a
    // kernel without user namespaces.
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("bwrap");
    std::fs::write(
        &fake,
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'bubblewrap 0.8.0'; exit 0; }\n\
         echo 'bwrap: No permissions to create new namespace' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let found = probe(&ProbeOptions {
        bwrap: Some(fake.clone()),
        ..options(dir.path())
    });
    assert!(!found.status.available, "{found:#?}");
    assert_eq!(
        found.setup_error.as_deref(),
        Some("bwrap: No permissions to create new namespace")
    );
    assert!(
        found
            .status
            .reason
            .as_deref()
            .unwrap()
            .contains("No permissions to create new namespace")
    );
    assert!(!found.status.netview && !found.landlock_enforced);
    let run = step(&found.steps, ProbeName::ContainedRun);
    assert!(!run.passed);
    assert_eq!(run.reason, found.status.reason);
    // Landlock and seccomp alone contain a `true` all the same: cautious's reads run that way.
    assert!(found.landlock_only, "{found:#?}");
    let landlock = step(&found.steps, ProbeName::Landlock);
    assert!(
        landlock.passed
            && landlock
                .detail
                .as_deref()
                .unwrap()
                .contains("Landlock and seccomp alone")
    );
    let scope = step(&found.steps, ProbeName::LandlockScope);
    assert!(
        scope
            .reason
            .as_deref()
            .unwrap()
            .starts_with("not checked: the sandbox cannot start")
    );
    assert_eq!(found.paths.bwrap, Some(fake));
}

#[test]
fn a_bubblewrap_0_6_runs_without_the_shared_memory_bound_and_disable_userns() {
    // The real bubblewrap behind a program that says it is 0.6.1 (Ubuntu 22.04's) and, like it, refuses `--size`
    // (0.7.0) and `--disable-userns` (0.8.0). The launcher passes its options on `--args FD`, so the program reads
    // them from there.
    let real = find_program("bwrap", OsStr::new("/usr/local/bin:/usr/bin:/bin")).expect("bubblewrap is not installed");
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("bwrap");
    std::fs::write(
        &old,
        format!(
            "#!/bin/bash\n[ \"$1\" = --version ] && {{ echo 'bubblewrap 0.6.1'; exit 0; }}\n\
             [ \"$1\" = --args ] || {{ echo 'bwrap: expected --args' >&2; exit 1; }}\n\
             options=$(mktemp)\ncat <&\"$2\" >\"$options\"\n\
             for new in --size --disable-userns; do\n\
             if tr '\\0' '\\n' <\"$options\" | grep -qx -- $new; then\n\
             rm -f \"$options\"; echo \"bwrap: Unknown option $new\" >&2; exit 1\nfi\ndone\n\
             eval \"exec $2<\\\"\\$options\\\"\"\nrm -f \"$options\"\nexec {} \"$@\"\n",
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o755)).unwrap();
    let found = probe(&ProbeOptions {
        bwrap: Some(old.clone()),
        ..options(dir.path())
    });
    assert_eq!(found.bwrap_version.as_deref(), Some("0.6.1"));
    assert!(found.status.available, "{found:#?}");
    assert!(found.status.netview, "{found:#?}");
    let fitted = |found: &efrd::sandbox::probe::Probe| {
        let mut plan = efr_protocol::internal::LaunchPlan::new("/usr/bin/bwrap", vec!["true".into()], "/");
        found.fit(&mut plan);
        (plan.shm_size, plan.disable_userns)
    };
    assert_eq!(fitted(&found), (None, false), "neither option for 0.6.1");
    // The same program saying 0.7.0 gets the bound, and refuses it as 0.6.1 would: the stand-in is strict.
    let text = std::fs::read_to_string(&old).unwrap();
    std::fs::write(&old, text.replace("bubblewrap 0.6.1", "bubblewrap 0.7.0")).unwrap();
    let refused = probe(&ProbeOptions {
        bwrap: Some(old),
        ..options(dir.path())
    });
    assert_eq!(fitted(&refused), (Some(efr_protocol::internal::SHM_SIZE), false));
    assert!(!refused.status.available);
    assert_eq!(refused.setup_error.as_deref(), Some("bwrap: Unknown option --size"));
}

/// A program in bubblewrap's place that answers `--version` with `version` and fails every setup with `words` on
/// its standard error, as the real one does.
fn failing_bwrap(dir: &Path, version: &str, words: &str, mode: u32) -> std::path::PathBuf {
    let fake = dir.join("bwrap");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo 'bubblewrap {version}'; exit 0; }}\n\
             echo '{words}' >&2\nexit 1\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(mode)).unwrap();
    fake
}

/// `/proc/sys` as a folder of the test's own, with `user/max_user_namespaces`, and the
/// `kernel/<name>` sysctls given.
fn proc_sys(dir: &Path, max_user_namespaces: u64, kernel: &[(&str, &str)]) -> efrd::sandbox::KernelPaths {
    let root = dir.join("proc-sys");
    std::fs::create_dir_all(root.join("user")).unwrap();
    std::fs::create_dir_all(root.join("kernel")).unwrap();
    std::fs::write(
        root.join("user/max_user_namespaces"),
        format!("{max_user_namespaces}\n"),
    )
    .unwrap();
    for (name, value) in kernel {
        std::fs::write(root.join("kernel").join(name), format!("{value}\n")).unwrap();
    }
    efrd::sandbox::KernelPaths {
        proc_sys: root,
        lsm: dir.join("lsm"),
    }
}

#[test]
fn ubuntus_apparmor_restriction_is_named_with_the_profile_as_its_fix() {
    // bubblewrap's words on Ubuntu 24.04 with kernel.apparmor_restrict_unprivileged_userns = 1: the namespace is
    // made, but AppArmor strips its capabilities, so the loopback cannot be set up.
    let dir = tempfile::tempdir().unwrap();
    let fake = failing_bwrap(
        dir.path(),
        "0.9.0",
        "bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted",
        0o755,
    );
    let found = probe(&ProbeOptions {
        bwrap: Some(fake),
        kernel: proc_sys(dir.path(), 63_000, &[("apparmor_restrict_unprivileged_userns", "1")]),
        ..options(dir.path())
    });
    assert!(!found.status.available, "{found:#?}");
    let run = step(&found.steps, ProbeName::ContainedRun);
    let reason = run.reason.as_deref().unwrap();
    assert!(
        reason.contains("Failed RTM_NEWADDR"),
        "the launcher's words stay: {reason}"
    );
    assert!(reason.contains("AppArmor"), "{reason}");
    assert!(
        reason.contains("apparmor_restrict_unprivileged_userns is 1"),
        "{reason}"
    );
    let fix = run.fix.as_deref().unwrap();
    assert!(fix.contains("efr sandbox setup-apparmor"), "{fix}");
    assert!(!fix.contains("sysctl"), "never the sysctl: {fix}");
    // The status (admin.status, the phone's view) carries the same fix; passed steps carry none.
    assert_eq!(found.status.reason.as_deref(), Some(reason));
    assert_eq!(found.status.fix.as_deref(), Some(fix));
    assert!(found.steps.iter().filter(|s| s.passed).all(|s| s.fix.is_none()));
    // The other words bubblewrap uses under the same restriction.
    let fake = failing_bwrap(
        dir.path(),
        "0.9.0",
        "bwrap: setting up uid map: Permission denied",
        0o755,
    );
    let found = probe(&ProbeOptions {
        bwrap: Some(fake),
        kernel: proc_sys(dir.path(), 63_000, &[("apparmor_restrict_unprivileged_userns", "1")]),
        ..options(dir.path())
    });
    let run = step(&found.steps, ProbeName::ContainedRun);
    assert!(
        run.fix.as_deref().unwrap().contains("efr sandbox setup-apparmor"),
        "{run:#?}"
    );
}

#[test]
fn user_namespaces_turned_off_name_the_sysctl_to_write() {
    let dir = tempfile::tempdir().unwrap();
    let found = probe(&ProbeOptions {
        kernel: proc_sys(dir.path(), 0, &[]),
        ..options(dir.path())
    });
    assert!(!found.status.available && !found.user_namespaces, "{found:#?}");
    let userns = step(&found.steps, ProbeName::UserNamespaces);
    assert!(!userns.passed);
    assert!(
        userns
            .reason
            .as_deref()
            .unwrap()
            .contains("user.max_user_namespaces is 0"),
        "{userns:#?}"
    );
    let fix = userns.fix.as_deref().unwrap();
    assert!(
        fix.contains("user.max_user_namespaces = 15000") && fix.contains("/etc/sysctl.d/"),
        "{fix}"
    );
    assert_eq!(found.status.fix.as_deref(), Some(fix));
    // Debian's switch.
    let found = probe(&ProbeOptions {
        kernel: proc_sys(dir.path(), 63_000, &[("unprivileged_userns_clone", "0")]),
        ..options(dir.path())
    });
    let userns = step(&found.steps, ProbeName::UserNamespaces);
    assert!(
        userns
            .fix
            .as_deref()
            .unwrap()
            .contains("kernel.unprivileged_userns_clone = 1"),
        "{userns:#?}"
    );
    // The machine's own facts: the sandbox starts and no step has a fix.
    let found = probe(&options(dir.path()));
    assert!(found.status.available && found.status.fix.is_none(), "{found:#?}");
    assert!(found.steps.iter().all(|s| s.fix.is_none()), "{found:#?}");
}

#[test]
fn a_setuid_bubblewrap_is_refused_with_why() {
    // The real bubblewrap copied with the setuid bit: it runs, but efr does not use it.
    let real = find_program("bwrap", OsStr::new("/usr/local/bin:/usr/bin:/bin")).expect("bubblewrap is not installed");
    let dir = tempfile::tempdir().unwrap();
    let setuid = dir.path().join("bwrap");
    std::fs::copy(&real, &setuid).unwrap();
    std::fs::set_permissions(&setuid, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let found = probe(&ProbeOptions {
        bwrap: Some(setuid.clone()),
        ..options(dir.path())
    });
    assert!(!found.status.available, "{found:#?}");
    let bwrap = step(&found.steps, ProbeName::Bwrap);
    assert!(!bwrap.passed);
    assert!(bwrap.reason.as_deref().unwrap().contains("setuid root"), "{bwrap:#?}");
    let fix = bwrap.fix.as_deref().unwrap();
    assert!(fix.contains("non-setuid") && fix.contains("--size"), "{fix}");
    assert!(fix.contains(&format!("sudo chmod u-s {}", setuid.display())), "{fix}");
    assert_eq!(found.status.fix.as_deref(), Some(fix));
}

#[test]
fn a_bubblewrap_older_than_0_6_is_too_old() {
    // Debian 11's bubblewrap 0.4.1 refuses the first option it does not know.
    let dir = tempfile::tempdir().unwrap();
    let fake = failing_bwrap(dir.path(), "0.4.1", "bwrap: Unknown option --clearenv", 0o755);
    let found = probe(&ProbeOptions {
        bwrap: Some(fake),
        ..options(dir.path())
    });
    let run = step(&found.steps, ProbeName::ContainedRun);
    assert!(
        run.reason.as_deref().unwrap().contains("bubblewrap 0.4.1 is too old"),
        "{run:#?}"
    );
    assert!(run.fix.as_deref().unwrap().contains("0.6.0 or newer"), "{run:#?}");
}
