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

/// Where the profile goes (the package puts it there too).
pub const PROFILE_PATH: &str = "/etc/apparmor.d/efr-bwrap";

/// efr-launcher where the package puts it.
const PACKAGED_LAUNCHER: &str = "/usr/libexec/efr/efr-launcher";

/// The profile's one source, `packaging/apparmor/efr-bwrap`: the package installs it as it is; [`profile`] sets its
/// two variable lines to the programs found here.
pub const SOURCE: &str = include_str!("../../../packaging/apparmor/efr-bwrap");

/// The variable of the source that names bubblewrap.
const BWRAP_VARIABLE: &str = "@{efr_bwrap}=";
/// The variable of the source that names efr-launcher.
const LAUNCHER_VARIABLE: &str = "@{efr_launcher}=";

/// The profile for `bwrap` and `launcher` (absolute paths): [`SOURCE`] with its two variables set to them. A path
/// with a blank or a quote is quoted as AppArmor reads it.
#[must_use]
pub fn profile(bwrap: &Path, launcher: &Path) -> String {
    let mut out = String::with_capacity(SOURCE.len() + 64);
    for line in SOURCE.lines() {
        if line.starts_with(BWRAP_VARIABLE) {
            let _ = writeln!(out, "{BWRAP_VARIABLE}{}", quoted(bwrap));
        } else if line.starts_with(LAUNCHER_VARIABLE) {
            let _ = writeln!(out, "{LAUNCHER_VARIABLE}{}", quoted(launcher));
        } else {
            out.push_str(line);
            out.push('\n');
        }
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

/// efr-launcher as efrd finds it (efrd's `helper_process::beside`, for an efrd beside this efr): `$EFR_LAUNCHER`,
/// else next to this program, else in `../libexec/efr/` beside its folder (`/usr/bin/efr` →
/// `/usr/libexec/efr/efr-launcher`, the package's), else the package's path.
fn find_launcher() -> PathBuf {
    if let Some(path) = std::env::var_os("EFR_LAUNCHER") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().ok();
    let next = exe.as_ref().map(|exe| exe.with_file_name("efr-launcher"));
    let libexec = exe.as_ref().and_then(|exe| {
        exe.parent()?
            .parent()
            .map(|prefix| prefix.join("libexec/efr/efr-launcher"))
    });
    next.into_iter()
        .chain(libexec)
        .find(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from(PACKAGED_LAUNCHER))
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

/// What `efr sandbox check` tells about AppArmor: whether it runs, whether the kernel restricts user namespaces, and
/// whether efr's profile (the packaged one, or one `setup-apparmor` wrote for other paths) is installed and loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppArmorFacts {
    /// AppArmor runs (its securityfs folder exists).
    pub running: bool,
    /// `kernel.apparmor_restrict_unprivileged_userns`, when the kernel has the setting.
    pub restrict_userns: Option<u64>,
    /// The names of the loaded profiles; `None` when they cannot be read (not root on some kernels).
    pub loaded: Option<Vec<String>>,
    /// The text of [`PROFILE_PATH`], when it exists.
    pub installed: Option<String>,
}

/// Where AppArmor lists its loaded profiles, one `NAME (MODE)` a line.
const LOADED_PROFILES: &str = "/sys/kernel/security/apparmor/profiles";

impl AppArmorFacts {
    /// The facts of this machine.
    #[must_use]
    pub fn read() -> Self {
        let loaded = std::fs::read_to_string(LOADED_PROFILES).ok().map(|text| {
            text.lines()
                .map(|line| line.rsplit_once(" (").map_or(line, |(name, _)| name).to_owned())
                .collect()
        });
        Self {
            running: Path::new("/sys/kernel/security/apparmor").is_dir(),
            restrict_userns: std::fs::read_to_string("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
                .ok()
                .and_then(|text| text.trim().parse().ok()),
            loaded,
            installed: std::fs::read_to_string(PROFILE_PATH).ok(),
        }
    }
}

/// The `apparmor:` line of `efr sandbox check` (see [`AppArmorFacts`]).
#[must_use]
pub fn status_line(facts: &AppArmorFacts) -> String {
    if !facts.running {
        return "apparmor: not running; efr's profile is not needed here".to_owned();
    }
    let restricted = facts.restrict_userns.is_some_and(|value| value != 0);
    let Some(text) = &facts.installed else {
        return if restricted {
            "apparmor: efr's profile is not installed, and kernel.apparmor_restrict_unprivileged_userns is on: run \
             `sudo efr sandbox setup-apparmor`"
                .to_owned()
        } else {
            "apparmor: runs; user namespaces are not restricted, so efr's profile is not needed (not installed)"
                .to_owned()
        };
    };
    let origin = if text == SOURCE {
        "the packaged profile"
    } else {
        "the profile of `efr sandbox setup-apparmor`"
    };
    match &facts.loaded {
        Some(names)
            if ["efr-bwrap", "efr-launcher"]
                .iter()
                .all(|want| names.iter().any(|n| n == want)) =>
        {
            format!("apparmor: {origin} {PROFILE_PATH} is loaded")
        }
        Some(_) => format!(
            "apparmor: {origin} {PROFILE_PATH} is NOT loaded{}; load it with `sudo apparmor_parser -r {PROFILE_PATH}`",
            if restricted {
                " (and user namespaces are restricted)"
            } else {
                ""
            }
        ),
        None => format!(
            "apparmor: {origin} {PROFILE_PATH} is installed; whether it is loaded cannot be read ({LOADED_PROFILES})"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_allows_user_namespaces_to_the_two_programs_only() {
        let text = profile(Path::new("/usr/bin/bwrap"), Path::new("/opt/efr/efr-launcher"));
        assert!(text.contains("abi <abi/4.0>,\ninclude <tunables/global>\n"), "{text}");
        assert!(
            text.contains("\n@{efr_bwrap}=/usr/bin/bwrap\n@{efr_launcher}=/opt/efr/efr-launcher\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "profile efr-bwrap @{efr_bwrap} flags=(unconfined) {\n  userns,\n\n  \
                 # Site-specific additions and overrides.\n  include if exists <local/efr-bwrap>\n}\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("profile efr-launcher @{efr_launcher} flags=(unconfined) {\n  userns,\n"),
            "{text}"
        );
        assert_eq!(text.matches("\nprofile ").count(), 2, "{text}");
        assert!(!text.contains("sysctl"), "{text}");
    }

    #[test]
    fn with_the_packages_paths_the_profile_is_the_packaged_source() {
        let text = profile(Path::new("/usr/bin/bwrap"), Path::new(PACKAGED_LAUNCHER));
        assert_eq!(text, SOURCE);
        // Only the two variable lines differ for other paths.
        let other = profile(Path::new("/opt/bwrap"), Path::new("/opt/efr-launcher"));
        let differ = SOURCE.lines().zip(other.lines()).filter(|(a, b)| a != b).count();
        assert_eq!((differ, SOURCE.lines().count()), (2, other.lines().count()));
    }

    #[test]
    fn the_doctor_says_whether_the_packaged_profile_is_loaded() {
        let loaded = |names: &[&str]| Some(names.iter().map(|n| (*n).to_owned()).collect());
        let mut facts = AppArmorFacts {
            running: true,
            restrict_userns: Some(1),
            loaded: loaded(&["efr-bwrap", "efr-launcher", "unconfined"]),
            installed: Some(SOURCE.to_owned()),
        };
        assert_eq!(
            status_line(&facts),
            "apparmor: the packaged profile /etc/apparmor.d/efr-bwrap is loaded"
        );
        facts.loaded = loaded(&["unconfined"]);
        let line = status_line(&facts);
        assert!(
            line.contains("the packaged profile /etc/apparmor.d/efr-bwrap is NOT loaded"),
            "{line}"
        );
        assert!(line.contains("apparmor_parser -r"), "{line}");
        facts.installed = Some(profile(Path::new("/opt/bwrap"), Path::new("/opt/efr-launcher")));
        assert!(status_line(&facts).contains("the profile of `efr sandbox setup-apparmor`"));
        facts.installed = None;
        assert!(status_line(&facts).contains("run `sudo efr sandbox setup-apparmor`"));
        facts.restrict_userns = None;
        assert!(status_line(&facts).contains("not needed (not installed)"));
        facts.running = false;
        assert!(status_line(&facts).starts_with("apparmor: not running"));
    }

    #[test]
    fn a_path_with_a_blank_is_quoted() {
        let text = profile(Path::new("/opt/my tools/bwrap"), Path::new("/usr/lib/efr/efr-launcher"));
        assert!(text.contains("@{efr_bwrap}=\"/opt/my tools/bwrap\"\n"), "{text}");
    }
}
