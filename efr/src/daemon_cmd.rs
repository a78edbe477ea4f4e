//! `efr daemon install|uninstall|run`: starting efrd the systemd way, or in the foreground.
//!
//! - `install [--efrd PATH]` writes `efrd.socket` and `efrd.service` (the repository's `systemd/` units, with
//!   `ExecStart=` set to the installed efrd, see [`units`]) into the user unit folder (`$XDG_CONFIG_HOME/systemd/user`,
//!   by default `~/.config/systemd/user`), then runs `systemctl --user daemon-reload` and
//!   `systemctl --user enable --now efrd.socket`, printing each step (docs/architecture.md, "Start, stop and systemd").
//!   efrd then starts on the first connection to its socket.
//! - `uninstall` runs `systemctl --user disable --now efrd.socket efrd.service`, removes the two files and reloads.
//! - `run [--efrd PATH] [-- ARGS...]` replaces this process with efrd in the foreground (logs on the terminal), for
//!   debugging or where no systemd user manager runs.
//!
//! Which efrd: `--efrd PATH`, else `efrd` next to this efr executable (as `cargo install` and `cargo xtask install`
//! put them), else the first `efrd` on PATH. Nothing is written until the efrd is found and `systemctl --user`
//! reaches a manager, so a failed install leaves no half-written units behind.

/// Prints a line of progress; a closed stdout is not a reason to stop halfway through an install.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

mod systemctl;
pub mod units;

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use self::systemctl::SystemctlError;
use self::units::{SERVICE_UNIT, SOCKET_UNIT, UnitError};

/// The `efr daemon` subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum DaemonCommand {
    /// Writes the systemd user units and enables efrd.socket.
    Install {
        /// The efrd to run (default: `efrd` next to this efr, else on PATH).
        #[arg(long, value_name = "PATH")]
        efrd: Option<PathBuf>,
    },
    /// Disables and removes the units.
    Uninstall,
    /// Runs efrd in the foreground, for debugging.
    Run {
        /// The efrd to run (default: `efrd` next to this efr, else on PATH).
        #[arg(long, value_name = "PATH")]
        efrd: Option<PathBuf>,
        /// Arguments passed to efrd as they are.
        #[arg(last = true, value_name = "EFRD_ARGS")]
        args: Vec<OsString>,
    },
}

/// Why an `efr daemon` command failed. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// No efrd next to efr nor on PATH.
    #[error(
        "cannot find efrd next to this efr ({next_to}) nor on PATH; install it (`cargo install --path efrd`) or \
         pass --efrd PATH"
    )]
    NoEfrd {
        /// The folder of this efr executable, or `?` when unknown.
        next_to: String,
    },
    /// `--efrd` names no executable file.
    #[error("--efrd {0}: not an executable file")]
    NotExecutable(PathBuf),
    /// The units cannot be rendered or placed.
    #[error(transparent)]
    Unit(#[from] UnitError),
    /// A `systemctl --user` step failed.
    #[error(transparent)]
    Systemctl(#[from] SystemctlError),
    /// A file operation failed.
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        /// What was being done: `write`, `remove`, `create the folder`.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// efrd could not be started by `run`.
    #[error("cannot run {}: {source}", path.display())]
    Exec {
        /// The efrd.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// Runs one `efr daemon` subcommand; what went wrong is printed to stderr (exit status 1). `run` only returns when
/// efrd could not be started.
pub fn run(command: &DaemonCommand) -> ExitCode {
    let outcome = match command {
        DaemonCommand::Install { efrd } => install(efrd.as_deref()),
        DaemonCommand::Uninstall => uninstall(),
        DaemonCommand::Run { efrd, args } => run_foreground(efrd.as_deref(), args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // The error may quote systemctl or a path.
            eprintln!("efr daemon: {}", crate::clean::printable(&error.to_string()));
            ExitCode::FAILURE
        }
    }
}

fn install(efrd: Option<&Path>) -> Result<(), DaemonError> {
    let efrd = find_efrd(efrd)?;
    let (socket_text, service_text) = units::render(&efrd)?;
    let dir = units::unit_dir_from(|var| std::env::var_os(var))?;
    systemctl::check_user_manager()?;
    say!("efrd: {}", efrd.display());
    std::fs::create_dir_all(&dir).map_err(|source| DaemonError::Io {
        what: "create the folder",
        path: dir.clone(),
        source,
    })?;
    for (name, text) in [(SOCKET_UNIT, &socket_text), (SERVICE_UNIT, &service_text)] {
        let path = dir.join(name);
        write_file(&path, text)?;
        say!("wrote {}", path.display());
    }
    step(&["daemon-reload"])?;
    step(&["enable", "--now", SOCKET_UNIT])?;
    if systemctl::run(&["is-active", "--quiet", SERVICE_UNIT]).is_ok() {
        // enable --now does not restart a service that already runs (an earlier install's efrd).
        say!(
            "note: efrd.service was already running and still runs the efrd it started with; \
             `systemctl --user restart efrd.service` switches to this one"
        );
    }
    say!("efrd starts on the first connection to its socket; try `efr status`");
    Ok(())
}

fn uninstall() -> Result<(), DaemonError> {
    let dir = units::unit_dir_from(|var| std::env::var_os(var))?;
    let present: Vec<PathBuf> = [SOCKET_UNIT, SERVICE_UNIT]
        .iter()
        .map(|name| dir.join(name))
        .filter(|path| path.symlink_metadata().is_ok())
        .collect();
    if present.is_empty() {
        say!("no efrd units in {}; nothing to remove", dir.display());
        return Ok(());
    }
    systemctl::check_user_manager()?;
    step(&["disable", "--now", SOCKET_UNIT, SERVICE_UNIT])?;
    for path in &present {
        std::fs::remove_file(path).map_err(|source| DaemonError::Io {
            what: "remove",
            path: path.clone(),
            source,
        })?;
        say!("removed {}", path.display());
    }
    step(&["daemon-reload"])?;
    Ok(())
}

fn run_foreground(efrd: Option<&Path>, args: &[OsString]) -> Result<(), DaemonError> {
    let path = find_efrd(efrd)?;
    // exec only returns on failure.
    let source = std::process::Command::new(&path).args(args).exec();
    Err(DaemonError::Exec { path, source })
}

/// Runs a `systemctl --user` step and says so.
fn step(args: &[&str]) -> Result<(), SystemctlError> {
    systemctl::run(args)?;
    say!("ran systemctl --user {}", args.join(" "));
    Ok(())
}

/// Writes `text` to `path` through a temporary file in the same folder, so the manager never reads half a unit.
fn write_file(path: &Path, text: &str) -> Result<(), DaemonError> {
    let io = |source| DaemonError::Io {
        what: "write",
        path: path.to_owned(),
        source,
    };
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".efr-new");
    let temporary = PathBuf::from(temporary);
    std::fs::write(&temporary, text).map_err(io)?;
    std::fs::rename(&temporary, path).map_err(|error| {
        let _ = std::fs::remove_file(&temporary);
        io(error)
    })
}

/// The efrd to run: `explicit` (made absolute; must be an executable file), else `efrd` next to this executable,
/// else the first executable `efrd` on PATH.
///
/// # Errors
/// [`DaemonError::NotExecutable`] for a bad `explicit`; [`DaemonError::NoEfrd`] when none is found.
pub fn find_efrd(explicit: Option<&Path>) -> Result<PathBuf, DaemonError> {
    if let Some(path) = explicit {
        let path = std::path::absolute(path).map_err(|_| DaemonError::NotExecutable(path.to_owned()))?;
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(DaemonError::NotExecutable(path))
        };
    }
    let here = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_owned));
    if let Some(candidate) = here.as_ref().map(|dir| dir.join("efrd"))
        && is_executable(&candidate)
    {
        return Ok(candidate);
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .filter_map(|dir| std::path::absolute(dir.join("efrd")).ok())
            .find(|candidate| is_executable(candidate))
    });
    on_path.ok_or_else(|| DaemonError::NoEfrd {
        next_to: here.map_or_else(|| "?".to_owned(), |dir| dir.display().to_string()),
    })
}

/// A regular file (after symlinks) with an execute bit.
fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_efrd_must_be_an_executable_file() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("efrd");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        assert!(matches!(find_efrd(Some(&plain)), Err(DaemonError::NotExecutable(p)) if p == plain));
        assert!(matches!(
            find_efrd(Some(dir.path())),
            Err(DaemonError::NotExecutable(_))
        ));
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(find_efrd(Some(&plain)).unwrap(), plain);
    }

    #[test]
    fn a_unit_is_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SOCKET_UNIT);
        write_file(&path, "old\nlonger text\n").unwrap();
        write_file(&path, "new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file is left"
        );
    }

    #[test]
    fn a_write_into_a_missing_folder_says_which_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join(SERVICE_UNIT);
        let error = write_file(&path, "x").unwrap_err();
        assert!(error.to_string().contains("cannot write"), "{error}");
        assert!(error.to_string().contains("missing/efrd.service"), "{error}");
    }
}
