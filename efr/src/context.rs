//! The terminal's context that a prompt carries: the tty, the working directory, the user's shell, and the last and
//! recent command lines that the shell integration (`efr shell-init`) passes with the hidden flags.
//!
//! The shell integration passes `--recent LINE` once per command, oldest first; a line may be `STATUS<TAB>LINE` to
//! carry the command's exit status. `last_command` and `recent_commands` reach only the turn's preamble, never an
//! event or the store (spec: "the recent commands of a terminal").

use std::os::fd::AsFd;

use efr_protocol::wire::{Desktop, PromptContext, ShellContext, TerminalCommand};

/// The terminal of stdin, such as `/dev/pts/3`; `None` when stdin is not a terminal.
#[must_use]
pub fn stdin_tty() -> Option<String> {
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    if !nix::unistd::isatty(fd).unwrap_or(false) {
        return None;
    }
    nix::unistd::ttyname(fd)
        .ok()
        .map(|path| path.to_string_lossy().into_owned())
}

/// The shell's name: `--shell` when given, else the basename of `$SHELL`.
#[must_use]
pub fn shell_name(flag: Option<&str>, env_shell: Option<&str>) -> Option<String> {
    flag.map(str::to_owned).or_else(|| {
        env_shell
            .filter(|s| !s.is_empty())
            .and_then(|s| s.rsplit('/').next())
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    })
}

/// The desktop variables of the environment (spec: "desktop grants"); `None` when none of the six is set.
#[must_use]
pub fn desktop_from(get: impl Fn(&str) -> Option<String>) -> Option<Desktop> {
    let var = |name: &str| get(name).filter(|v| !v.is_empty());
    let desktop = Desktop {
        wayland_display: var("WAYLAND_DISPLAY"),
        display: var("DISPLAY"),
        hyprland_instance_signature: var("HYPRLAND_INSTANCE_SIGNATURE"),
        swaysock: var("SWAYSOCK"),
        i3sock: var("I3SOCK"),
        niri_socket: var("NIRI_SOCKET"),
        has_xauthority: var("XAUTHORITY").is_some(),
    };
    let none = Desktop {
        has_xauthority: desktop.has_xauthority,
        ..Desktop::default()
    };
    // has_xauthority alone is not one of the six variables: without them there is no desktop to name.
    (desktop != none).then_some(desktop)
}

/// The prompt's context: the working directory, the tty, and the shell (its name and pid, the parent of efr).
#[must_use]
pub fn prompt_context(tty: Option<String>, shell_flag: Option<&str>) -> PromptContext {
    let env_shell = std::env::var("SHELL").ok();
    let shell = shell_name(shell_flag, env_shell.as_deref());
    let pid = u32::try_from(nix::unistd::getppid().as_raw()).ok();
    let desktop = desktop_from(|name| std::env::var(name).ok());
    PromptContext {
        cwd: std::env::current_dir().ok(),
        tty,
        shell_context: Some(ShellContext { shell, pid, desktop }),
    }
}

/// Why a `--last-status` or `--recent` value cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--recent {value:?}: the status before the tab must be a number")]
pub struct RecentError {
    /// The value as given.
    pub value: String,
}

/// One `--recent` value: `LINE`, or `STATUS<TAB>LINE`.
///
/// # Errors
/// [`RecentError`] when a tab is there and what stands before it is not an exit status.
pub fn parse_recent(value: &str) -> Result<TerminalCommand, RecentError> {
    let (status, command) = match value.split_once('\t') {
        Some((status, command)) => {
            let status = status.trim().parse::<i32>().map_err(|_| RecentError {
                value: value.to_owned(),
            })?;
            (Some(status), command)
        }
        None => (None, value),
    };
    Ok(TerminalCommand {
        command: command.to_owned(),
        status,
        cwd: None,
        ended_at: None,
        duration_ms: None,
    })
}

/// The last command from `--last-command` and `--last-status`; `None` without a line (a status alone says nothing).
#[must_use]
pub fn last_command(line: Option<&str>, status: Option<i32>) -> Option<TerminalCommand> {
    let line = line.filter(|l| !l.trim().is_empty())?;
    Some(TerminalCommand {
        command: line.to_owned(),
        status,
        cwd: None,
        ended_at: None,
        duration_ms: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_lines_carry_an_optional_status() {
        let plain = parse_recent("cargo test").unwrap();
        assert_eq!((plain.command.as_str(), plain.status), ("cargo test", None));
        let failed = parse_recent("101\tcargo test -p efr").unwrap();
        assert_eq!(
            (failed.command.as_str(), failed.status),
            ("cargo test -p efr", Some(101))
        );
        let err = parse_recent("oops\tls").unwrap_err();
        assert!(err.to_string().contains("status"), "{err}");
    }

    #[test]
    fn the_shell_name_comes_from_the_flag_or_shell() {
        assert_eq!(shell_name(Some("zsh"), Some("/bin/bash")).as_deref(), Some("zsh"));
        assert_eq!(shell_name(None, Some("/usr/bin/bash")).as_deref(), Some("bash"));
        assert_eq!(shell_name(None, Some("")), None);
        assert_eq!(shell_name(None, None), None);
    }

    #[test]
    fn a_desktop_needs_one_of_the_six_variables() {
        assert_eq!(desktop_from(|_| None), None);
        assert_eq!(desktop_from(|n| (n == "XAUTHORITY").then(|| "/x".to_owned())), None);
        let wayland = desktop_from(|n| match n {
            "WAYLAND_DISPLAY" => Some("wayland-0".to_owned()),
            "XAUTHORITY" => Some("/x".to_owned()),
            _ => None,
        })
        .unwrap();
        assert_eq!(wayland.wayland_display.as_deref(), Some("wayland-0"));
        assert!(wayland.has_xauthority);
    }

    #[test]
    fn a_last_command_needs_a_line() {
        assert_eq!(last_command(None, Some(1)), None);
        assert_eq!(last_command(Some("  "), Some(1)), None);
        assert_eq!(last_command(Some("make"), Some(2)).unwrap().status, Some(2));
    }
}
