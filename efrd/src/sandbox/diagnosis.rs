//! Why the sandbox cannot start, and the narrowest fix: the doctor behind `efr sandbox check`
//! (docs/modes.md, "When the sandbox cannot start").
//!
//! [`KernelFacts::read`] reads the facts (the bubblewrap program's mode and version, the user-namespace sysctls, the
//! LSM list); the rest are pure functions from facts (and the launcher's setup error) to a [`Finding`]: the cause,
//! the sentence that names it and the fix. Each fix is the narrowest that works: for Ubuntu's AppArmor restriction
//! a profile for bubblewrap and efr-launcher only, never turning the restriction off for every program.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The oldest bubblewrap efr can use: 0.6 (Ubuntu 22.04's 0.6.1) has every option efr needs. Two come later and are
/// left out for an older one (efrd's probe fits the plan to the version found): `--size`, the bound of
/// `/dev/shm` (0.7.0), and `--disable-userns` (0.8.0), whose refusal of a nested user namespace the inner stage's
/// seccomp filter makes on every version.
pub const MIN_BWRAP: (u64, u64) = (0, 6);

/// The command that installs efr's AppArmor profile (efr/src/commands/apparmor.rs).
pub const SETUP_APPARMOR: &str = "sudo efr sandbox setup-apparmor";

/// Where the facts are read: `/proc/sys` and the LSM list. Tests point them at files of their own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelPaths {
    /// The sysctl tree, `/proc/sys`.
    pub proc_sys: PathBuf,
    /// The active Linux security modules, comma-separated: `/sys/kernel/security/lsm`.
    pub lsm: PathBuf,
}

impl Default for KernelPaths {
    fn default() -> Self {
        Self {
            proc_sys: PathBuf::from("/proc/sys"),
            lsm: PathBuf::from("/sys/kernel/security/lsm"),
        }
    }
}

/// What the doctor knows of the system. `None`: not known (the file is absent or does not read as a number).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelFacts {
    /// `user.max_user_namespaces`.
    pub max_user_namespaces: Option<u64>,
    /// Debian's `kernel.unprivileged_userns_clone` (absent from other kernels).
    pub unprivileged_userns_clone: Option<u64>,
    /// Ubuntu's `kernel.apparmor_restrict_unprivileged_userns` (23.10 and later).
    pub apparmor_restrict_userns: Option<u64>,
    /// The active LSMs, such as `["lockdown", "capability", "landlock", "yama", "apparmor"]`.
    pub lsm: Option<Vec<String>>,
}

impl KernelFacts {
    /// Reads the facts under `paths`; a file that cannot be read is an unknown fact.
    #[must_use]
    pub fn read(paths: &KernelPaths) -> Self {
        let number = |name: &str| {
            std::fs::read_to_string(paths.proc_sys.join(name))
                .ok()
                .and_then(|text| text.trim().parse::<u64>().ok())
        };
        Self {
            max_user_namespaces: number("user/max_user_namespaces"),
            unprivileged_userns_clone: number("kernel/unprivileged_userns_clone"),
            apparmor_restrict_userns: number("kernel/apparmor_restrict_unprivileged_userns"),
            lsm: std::fs::read_to_string(&paths.lsm)
                .ok()
                .map(|text| text.trim().split(',').map(str::to_owned).collect()),
        }
    }
}

/// Why the sandbox cannot start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// bubblewrap is not installed.
    BwrapMissing,
    /// bubblewrap is older than [`MIN_BWRAP`].
    BwrapTooOld,
    /// bubblewrap is setuid root.
    BwrapSetuid,
    /// The kernel allows no user namespaces (`user.max_user_namespaces` is 0).
    UserNamespacesOff,
    /// Debian's `kernel.unprivileged_userns_clone` is 0.
    UnprivilegedUsernsOff,
    /// Ubuntu's AppArmor keeps unconfined programs from using user namespaces.
    AppArmorUserns,
    /// Landlock is not among the active LSMs.
    LandlockOff,
}

/// A cause, in words, and its fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The cause.
    pub cause: Cause,
    /// What is wrong, one sentence.
    pub reason: String,
    /// The narrowest fix, for a person.
    pub fix: String,
}

/// The fix of a missing bubblewrap.
#[must_use]
pub fn bwrap_missing_fix() -> String {
    "install bubblewrap 0.6.0 or newer, 0.8.0 or newer for every layer (the `bubblewrap` package), or set \
     $EFR_BWRAP to its path"
        .to_owned()
}

/// The problem of an installed bubblewrap at `path` with `mode` (its file mode): setuid root. Checked before any
/// run: a setuid bubblewrap may well start a sandbox, only not the one efr asks for.
#[must_use]
pub fn bwrap_problem(path: &Path, mode: u32) -> Option<Finding> {
    (mode & 0o4000 != 0).then(|| Finding {
        cause: Cause::BwrapSetuid,
        reason: format!("bubblewrap at {} is setuid root", path.display()),
        fix: format!(
            "efr needs the non-setuid bubblewrap, which builds the sandbox in a user namespace: a setuid one refuses \
             `--size` (the bound of the sandbox's /dev/shm) and runs its setup as root. Remove the bit with `sudo \
             chmod u-s {}` (the kernel must then allow user namespaces to unprivileged users)",
            path.display()
        ),
    })
}

/// Whether bubblewrap `version` (such as `0.8.0`) is older than [`MIN_BWRAP`]; a version that does not read as
/// numbers is taken as new enough. Used on a setup error only: its own refusal is the proof, and a program that
/// calls itself older may still take every option efr passes.
#[must_use]
pub fn bwrap_too_old(version: &str) -> Option<Finding> {
    let mut numbers = version.split('.').map(|part| part.parse::<u64>().ok());
    let (Some(major), Some(minor)) = (numbers.next().flatten(), numbers.next().flatten()) else {
        return None;
    };
    ((major, minor) < MIN_BWRAP).then(|| Finding {
        cause: Cause::BwrapTooOld,
        reason: format!("bubblewrap {version} is too old (efr needs 0.6.0 or newer)"),
        fix: "install bubblewrap 0.6.0 or newer (0.8.0 or newer for every layer: `--size` bounds the sandbox's \
              /dev/shm from 0.7.0, `--disable-userns` refuses nested user namespaces from 0.8.0)"
            .to_owned(),
    })
}

/// The file mode of `path` (0 when it cannot be read).
#[must_use]
pub fn file_mode(path: &Path) -> u32 {
    std::fs::metadata(path).map_or(0, |meta| meta.permissions().mode())
}

/// Whether the kernel lets an unprivileged user make a user namespace, from the sysctls; `None` when it does (or
/// the facts do not say it does not).
#[must_use]
pub fn user_namespaces_problem(facts: &KernelFacts) -> Option<Finding> {
    if facts.max_user_namespaces == Some(0) {
        return Some(Finding {
            cause: Cause::UserNamespacesOff,
            reason: "the kernel allows no user namespaces (user.max_user_namespaces is 0)".to_owned(),
            fix: sysctl_fix("user.max_user_namespaces = 15000"),
        });
    }
    (facts.unprivileged_userns_clone == Some(0)).then(|| Finding {
        cause: Cause::UnprivilegedUsernsOff,
        reason: "the kernel allows user namespaces to root only (kernel.unprivileged_userns_clone is 0)".to_owned(),
        fix: sysctl_fix("kernel.unprivileged_userns_clone = 1"),
    })
}

fn sysctl_fix(line: &str) -> String {
    format!("write `{line}` to /etc/sysctl.d/60-efr-userns.conf, then run `sudo sysctl --system`")
}

/// The cause of the launcher's setup error `message` (bubblewrap's own words, or the inner stage's refusal), given
/// bubblewrap's `version` and the facts; `None` when no known cause explains it.
///
/// bubblewrap's words under Ubuntu's AppArmor restriction are `loopback: Failed RTM_NEWADDR: Operation not
/// permitted` (with a network namespace) or `setting up uid map: Permission denied`: the namespace is made, but
/// AppArmor strips its capabilities.
#[must_use]
pub fn setup_error_cause(message: &str, version: Option<&str>, facts: &KernelFacts) -> Option<Finding> {
    let lower = message.to_ascii_lowercase();
    let apparmor = lower.contains("failed rtm_newaddr")
        || lower.contains("setting up uid map: permission denied")
        || lower.contains("write to uid_map");
    if apparmor && facts.apparmor_restrict_userns != Some(0) {
        let setting = match facts.apparmor_restrict_userns {
            Some(value) => format!("kernel.apparmor_restrict_unprivileged_userns is {value}"),
            None => "as kernel.apparmor_restrict_unprivileged_userns does on Ubuntu 24.04".to_owned(),
        };
        return Some(Finding {
            cause: Cause::AppArmorUserns,
            reason: format!("AppArmor keeps bubblewrap from using its user namespace ({setting})"),
            fix: format!(
                "run `{SETUP_APPARMOR}`: it installs an AppArmor profile that allows user namespaces to bubblewrap \
                 and efr-launcher only (rather than turning the restriction off for every program)"
            ),
        });
    }
    if lower.contains("no permissions to creat") || lower.contains("creating new namespace failed") {
        return user_namespaces_problem(facts).or_else(|| {
            Some(Finding {
                cause: Cause::UserNamespacesOff,
                reason: "the kernel refused bubblewrap a user namespace".to_owned(),
                fix: sysctl_fix("user.max_user_namespaces = 15000"),
            })
        });
    }
    if lower.contains("landlock is not available") {
        return landlock_problem(facts);
    }
    if lower.contains("unknown option --") {
        // efrd leaves out the options a bubblewrap of its version lacks: one refused anyway is older than it says.
        let too_old = bwrap_too_old("0.5").map(|finding| Finding {
            reason: "this bubblewrap does not know an option efr passes (efr needs 0.6.0 or newer)".to_owned(),
            ..finding
        });
        return version.and_then(bwrap_too_old).or(too_old);
    }
    if lower.contains("not permitted in setuid mode") {
        return bwrap_problem(Path::new("bwrap"), 0o4755);
    }
    None
}

/// Landlock is not an active LSM: the fix adds it to the kernel's command line, after the modules now active.
/// `None` when the list is unknown and nothing names a fix more precise than the refusal.
#[must_use]
pub fn landlock_problem(facts: &KernelFacts) -> Option<Finding> {
    let list = facts.lsm.as_ref()?;
    if list.iter().any(|lsm| lsm == "landlock") {
        return None;
    }
    let mut wanted = list.clone();
    wanted.push("landlock".to_owned());
    Some(Finding {
        cause: Cause::LandlockOff,
        reason: format!(
            "Landlock is not an active security module (the kernel runs {})",
            list.join(",")
        ),
        fix: format!(
            "boot the kernel with `lsm={}` (add it to GRUB_CMDLINE_LINUX in /etc/default/grub, run `sudo \
             update-grub` and reboot); a kernel built without CONFIG_SECURITY_LANDLOCK needs a newer one",
            wanted.join(",")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ubuntu() -> KernelFacts {
        KernelFacts {
            max_user_namespaces: Some(63_000),
            unprivileged_userns_clone: None,
            apparmor_restrict_userns: Some(1),
            lsm: Some(vec![
                "lockdown".into(),
                "capability".into(),
                "landlock".into(),
                "apparmor".into(),
            ]),
        }
    }

    #[test]
    fn apparmor_restriction_is_named_with_the_profile_not_the_sysctl() {
        for message in [
            "bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted",
            "bwrap: setting up uid map: Permission denied",
        ] {
            let found = setup_error_cause(message, None, &ubuntu()).unwrap();
            assert_eq!(found.cause, Cause::AppArmorUserns, "{message}");
            assert!(
                found.reason.contains("apparmor_restrict_unprivileged_userns is 1"),
                "{found:?}"
            );
            assert!(found.fix.contains("efr sandbox setup-apparmor"), "{found:?}");
            assert!(
                !found.fix.contains("sysctl"),
                "the fix never turns the restriction off: {found:?}"
            );
        }
        // A kernel that says the restriction is off: the words are not AppArmor's.
        let off = KernelFacts {
            apparmor_restrict_userns: Some(0),
            ..ubuntu()
        };
        assert_eq!(
            setup_error_cause("bwrap: loopback: Failed RTM_NEWADDR: x", None, &off),
            None
        );
        // Unknown (no such sysctl here): still the likely cause.
        let unknown = KernelFacts {
            apparmor_restrict_userns: None,
            ..ubuntu()
        };
        let found = setup_error_cause("bwrap: setting up uid map: Permission denied", None, &unknown).unwrap();
        assert_eq!(found.cause, Cause::AppArmorUserns);
    }

    #[test]
    fn user_namespaces_off_names_the_sysctl_file() {
        let off = KernelFacts {
            max_user_namespaces: Some(0),
            ..ubuntu()
        };
        let found = user_namespaces_problem(&off).unwrap();
        assert_eq!(found.cause, Cause::UserNamespacesOff);
        assert!(found.fix.contains("`user.max_user_namespaces = 15000`"), "{found:?}");
        assert!(found.fix.contains("/etc/sysctl.d/"), "{found:?}");
        let debian = KernelFacts {
            unprivileged_userns_clone: Some(0),
            ..ubuntu()
        };
        let found = user_namespaces_problem(&debian).unwrap();
        assert_eq!(found.cause, Cause::UnprivilegedUsernsOff);
        assert!(
            found.fix.contains("`kernel.unprivileged_userns_clone = 1`"),
            "{found:?}"
        );
        assert_eq!(user_namespaces_problem(&ubuntu()), None);
        assert_eq!(
            user_namespaces_problem(&KernelFacts::default()),
            None,
            "unknown is not off"
        );
        // bubblewrap's own words when the kernel refuses.
        let found = setup_error_cause(
            "bwrap: No permissions to creating new namespace, likely because the kernel does not allow \
             non-privileged user namespaces.",
            None,
            &debian,
        )
        .unwrap();
        assert_eq!(found.cause, Cause::UnprivilegedUsernsOff);
    }

    #[test]
    fn landlock_missing_from_the_lsm_list_gets_the_kernel_command_line() {
        let without = KernelFacts {
            lsm: Some(vec![
                "lockdown".into(),
                "capability".into(),
                "yama".into(),
                "apparmor".into(),
            ]),
            ..ubuntu()
        };
        let message = "Landlock is not available in this kernel (built without it, or not enabled at boot)";
        let found = setup_error_cause(message, None, &without).unwrap();
        assert_eq!(found.cause, Cause::LandlockOff);
        assert!(
            found.fix.contains("`lsm=lockdown,capability,yama,apparmor,landlock`"),
            "{found:?}"
        );
        assert_eq!(landlock_problem(&ubuntu()), None, "landlock is listed");
        assert_eq!(landlock_problem(&KernelFacts::default()), None, "unknown list");
    }

    #[test]
    fn an_old_or_setuid_bubblewrap_says_what_needs_which_version() {
        let path = Path::new("/usr/bin/bwrap");
        let old = bwrap_too_old("0.5.0").unwrap();
        assert_eq!(old.cause, Cause::BwrapTooOld);
        assert!(
            old.fix.contains("0.6.0 or newer") && old.fix.contains("from 0.8.0") && old.fix.contains("from 0.7.0"),
            "{old:?}"
        );
        assert_eq!(bwrap_too_old("0.4.1").unwrap().cause, Cause::BwrapTooOld);
        assert_eq!(bwrap_too_old("0.6.1"), None);
        assert_eq!(bwrap_too_old("0.7.0"), None);
        assert_eq!(bwrap_too_old("0.8.0"), None);
        assert_eq!(bwrap_too_old("0.11.0"), None);
        assert_eq!(bwrap_too_old("git"), None);
        assert_eq!(bwrap_problem(path, 0o100_755), None);
        let setuid = bwrap_problem(path, 0o104_755).unwrap();
        assert_eq!(setuid.cause, Cause::BwrapSetuid);
        assert!(setuid.fix.contains("non-setuid") && setuid.fix.contains("sudo chmod u-s /usr/bin/bwrap"));
        let found = setup_error_cause(
            "bwrap: The --size option is not permitted in setuid mode",
            None,
            &ubuntu(),
        );
        assert_eq!(found.map(|f| f.cause), Some(Cause::BwrapSetuid));
        let found = setup_error_cause("bwrap: Unknown option --clearenv", Some("0.4.1"), &ubuntu()).unwrap();
        assert_eq!(found.cause, Cause::BwrapTooOld);
        assert!(found.reason.starts_with("bubblewrap 0.4.1 is too old"), "{found:?}");
        // A bubblewrap that calls itself new but refuses an option: the refusal decides.
        let found = setup_error_cause("bwrap: Unknown option --size", Some("0.9.0"), &ubuntu()).unwrap();
        assert_eq!(found.cause, Cause::BwrapTooOld);
    }

    #[test]
    fn an_unknown_error_has_no_fix() {
        assert_eq!(
            setup_error_cause("bwrap: Can't mount proc on /newroot/proc", None, &ubuntu()),
            None
        );
    }

    #[test]
    fn facts_are_read_from_the_given_paths() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("user")).unwrap();
        std::fs::create_dir_all(dir.path().join("kernel")).unwrap();
        std::fs::write(dir.path().join("user/max_user_namespaces"), "0\n").unwrap();
        std::fs::write(dir.path().join("kernel/apparmor_restrict_unprivileged_userns"), "1\n").unwrap();
        std::fs::write(dir.path().join("lsm"), "capability,yama\n").unwrap();
        let facts = KernelFacts::read(&KernelPaths {
            proc_sys: dir.path().to_path_buf(),
            lsm: dir.path().join("lsm"),
        });
        assert_eq!(
            facts,
            KernelFacts {
                max_user_namespaces: Some(0),
                unprivileged_userns_clone: None,
                apparmor_restrict_userns: Some(1),
                lsm: Some(vec!["capability".into(), "yama".into()]),
            }
        );
    }
}
