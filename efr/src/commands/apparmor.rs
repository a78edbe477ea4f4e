//! `efr sandbox setup-apparmor`: the fix for Ubuntu's `kernel.apparmor_restrict_unprivileged_userns` (docs/modes.md,
//! "When the sandbox cannot start").
//!
//! Ubuntu 23.10 and later let a program make a user namespace with capabilities only when an AppArmor profile
//! allows it. The narrowest fix is such a profile for the two programs that need one, bubblewrap and efr-launcher,
//! written as Ubuntu's own `/etc/apparmor.d/bwrap-userns-restrict` and `unprivileged_userns` profiles are
//! (`flags=(unconfined)`, `userns,`): every other program stays restricted, unlike turning the sysctl off.
//!
//! As root the command writes the profile and loads it with `apparmor_parser -r`; as another user it writes nothing
//! and prints the file and the two root commands that install it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use crate::report;

/// Where the profile goes.
pub const PROFILE_PATH: &str = "/etc/apparmor.d/efr-bwrap";

/// Where an installed efr-launcher is looked for when none is next to efr.
const LAUNCHER_FALLBACK: &str = "/usr/lib/efr/efr-launcher";

/// The profile for `bwrap` and `launcher` (absolute paths). A path with a blank or a quote is quoted as AppArmor
/// reads it.
#[must_use]
pub fn profile(bwrap: &Path, launcher: &Path) -> String {
    let mut out = String::from(
        "# Written by `efr sandbox setup-apparmor`: lets bubblewrap and efr-launcher make user namespaces under\n\
         # kernel.apparmor_restrict_unprivileged_userns, and no other program (docs/modes.md,\n\
         # \"When the sandbox cannot start\").\n\
         abi <abi/4.0>,\n\
         include <tunables/global>\n",
    );
    for (name, path) in [("efr-bwrap", bwrap), ("efr-launcher", launcher)] {
        let _ = write!(
            out,
            "\nprofile {name} {} flags=(unconfined) {{\n  userns,\n\n  # Site-specific additions and overrides.\n  \
             include if exists <local/{name}>\n}}\n",
            quoted(path)
        );
    }
    out
}

fn quoted(path: &Path) -> String {
    let text = path.display().to_string();
    if text.chars().any(|c| c.is_whitespace() || c == '"') {
        format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        text
    }
}

/// bubblewrap as efrd finds it: `$EFR_BWRAP`, else `bwrap` on `PATH`.
fn find_bwrap() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("EFR_BWRAP") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("bwrap"))
        .find(|candidate| candidate.is_file())
}

/// efr-launcher as efrd finds it: `$EFR_LAUNCHER`, else next to this program, else the installed one.
fn find_launcher() -> PathBuf {
    if let Some(path) = std::env::var_os("EFR_LAUNCHER") {
        return PathBuf::from(path);
    }
    std::env::current_exe()
        .ok()
        .map(|exe| exe.with_file_name("efr-launcher"))
        .filter(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from(LAUNCHER_FALLBACK))
}

/// Runs `efr sandbox setup-apparmor`: 0 when the profile is installed (or, not as root, printed with how to install
/// it), 1 when bubblewrap is not found or writing or loading the profile failed.
#[must_use]
pub fn setup(print_only: bool) -> ExitCode {
    let Some(bwrap) = find_bwrap() else {
        report::error("bubblewrap is not installed (no bwrap on PATH, no $EFR_BWRAP): install it first");
        return ExitCode::from(report::FAILED);
    };
    let launcher = find_launcher();
    let (bwrap, launcher) = (canonical(&bwrap), canonical(&launcher));
    let text = profile(&bwrap, &launcher);
    if print_only || !nix::unistd::geteuid().is_root() {
        let why = if print_only {
            "as asked, nothing was written"
        } else {
            "installing an AppArmor profile needs root"
        };
        crate::out::print(&format!(
            "{text}\n# {why}. To install this profile, save it as {PROFILE_PATH} and load it:\n\
             #   sudo tee {PROFILE_PATH} < saved-file\n#   sudo apparmor_parser -r {PROFILE_PATH}\n\
             # or run `sudo efr sandbox setup-apparmor`.\n"
        ));
        return ExitCode::SUCCESS;
    }
    if let Err(err) = std::fs::write(PROFILE_PATH, &text) {
        report::error(&format!("cannot write {PROFILE_PATH}: {err}"));
        return ExitCode::from(report::FAILED);
    }
    match Command::new("apparmor_parser").arg("-r").arg(PROFILE_PATH).status() {
        Ok(status) if status.success() => {
            crate::out::print(&format!(
                "wrote {PROFILE_PATH} and loaded it: bubblewrap ({}) and efr-launcher ({}) may make user \
                 namespaces; `efr sandbox check` tells whether the sandbox starts now\n",
                bwrap.display(),
                launcher.display()
            ));
            ExitCode::SUCCESS
        }
        Ok(status) => {
            report::error(&format!(
                "wrote {PROFILE_PATH}, but `apparmor_parser -r {PROFILE_PATH}` failed ({status})"
            ));
            ExitCode::from(report::FAILED)
        }
        Err(err) => {
            report::error(&format!(
                "wrote {PROFILE_PATH}, but cannot run apparmor_parser ({err}); it loads at the next boot"
            ));
            ExitCode::from(report::FAILED)
        }
    }
}

/// The path with links resolved (AppArmor attaches a profile to the program's real path); as given when it cannot
/// be resolved.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_allows_user_namespaces_to_the_two_programs_only() {
        let text = profile(Path::new("/usr/bin/bwrap"), Path::new("/usr/lib/efr/efr-launcher"));
        assert!(text.contains("abi <abi/4.0>,\ninclude <tunables/global>\n"), "{text}");
        assert!(
            text.contains(
                "profile efr-bwrap /usr/bin/bwrap flags=(unconfined) {\n  userns,\n\n  \
                 # Site-specific additions and overrides.\n  include if exists <local/efr-bwrap>\n}\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("profile efr-launcher /usr/lib/efr/efr-launcher flags=(unconfined) {\n  userns,\n"),
            "{text}"
        );
        assert_eq!(text.matches("profile ").count(), 2, "{text}");
        assert!(!text.contains("sysctl"), "{text}");
    }

    #[test]
    fn a_path_with_a_blank_is_quoted() {
        let text = profile(Path::new("/opt/my tools/bwrap"), Path::new("/usr/lib/efr/efr-launcher"));
        assert!(
            text.contains("profile efr-bwrap \"/opt/my tools/bwrap\" flags"),
            "{text}"
        );
    }
}
