//! The systemd user units that `efr daemon install` writes, and where they go.
//!
//! The repository's `systemd/efrd.socket` and `systemd/efrd.service` are the templates (compiled in with
//! `include_str!`, so an installed efr carries the units it was built with); only the service's `ExecStart=` line
//! changes, to the installed efrd's absolute path (docs/architecture.md, "Start, stop and systemd").

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The socket unit's file name.
pub const SOCKET_UNIT: &str = "efrd.socket";
/// The service unit's file name.
pub const SERVICE_UNIT: &str = "efrd.service";

const SOCKET_TEMPLATE: &str = include_str!("../../../systemd/efrd.socket");
const SERVICE_TEMPLATE: &str = include_str!("../../../systemd/efrd.service");

/// Why the units cannot be written for a path or an environment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// A path systemd cannot hold in `ExecStart=`: not UTF-8, or with a control character (a newline would end the
    /// line).
    #[error("the efrd path {0:?} cannot be written into a unit file (not UTF-8, or a control character in it)")]
    UnwritablePath(PathBuf),
    /// The service template has no `ExecStart=` line (a broken build).
    #[error("the efrd.service template has no ExecStart= line")]
    NoExecStart,
    /// Neither `XDG_CONFIG_HOME` (absolute) nor `HOME` (absolute) is set.
    #[error("cannot tell where systemd user units go: neither XDG_CONFIG_HOME nor HOME is an absolute path")]
    NoUnitDir,
}

/// The two unit files' texts: (`efrd.socket`, `efrd.service` with `ExecStart=<efrd>`).
///
/// # Errors
/// [`UnitError::UnwritablePath`] for a path that cannot be written into a unit; [`UnitError::NoExecStart`] when the
/// template lost its line.
pub fn render(efrd: &Path) -> Result<(String, String), UnitError> {
    let exec = exec_start_value(efrd)?;
    let mut found = false;
    let mut service = String::with_capacity(SERVICE_TEMPLATE.len() + exec.len());
    for line in SERVICE_TEMPLATE.lines() {
        if line.starts_with("ExecStart=") {
            found = true;
            service.push_str("ExecStart=");
            service.push_str(&exec);
        } else {
            service.push_str(line);
        }
        service.push('\n');
    }
    if !found {
        return Err(UnitError::NoExecStart);
    }
    Ok((SOCKET_TEMPLATE.to_owned(), service))
}

/// `path` as the command of an `ExecStart=` line (systemd.service(5), "Command lines"): `%` is a specifier and `$`
/// a variable, so both are doubled; a path with a space, a quote or a backslash is put in double quotes with `\` and
/// `"` escaped.
///
/// # Errors
/// [`UnitError::UnwritablePath`] when the path is not UTF-8 or holds a control character.
pub fn exec_start_value(path: &Path) -> Result<String, UnitError> {
    let text = path
        .to_str()
        .filter(|text| !text.chars().any(char::is_control))
        .ok_or_else(|| UnitError::UnwritablePath(path.to_owned()))?;
    let escaped = text.replace('%', "%%").replace('$', "$$");
    if escaped.contains([' ', '"', '\'', '\\']) {
        Ok(format!("\"{}\"", escaped.replace('\\', r"\\").replace('"', "\\\"")))
    } else {
        Ok(escaped)
    }
}

/// Where user units go: `$XDG_CONFIG_HOME/systemd/user` (when absolute), else `$HOME/.config/systemd/user`; `get`
/// reads a variable (`None` when unset). The systemd user manager reads this folder
/// (`systemctl --user show -p UnitPath`).
///
/// # Errors
/// [`UnitError::NoUnitDir`] when neither variable is an absolute path.
pub fn unit_dir_from(get: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, UnitError> {
    let absolute = |var: &str| get(var).map(PathBuf::from).filter(|path| path.is_absolute());
    if let Some(config) = absolute("XDG_CONFIG_HOME") {
        return Ok(config.join("systemd").join("user"));
    }
    absolute("HOME")
        .map(|home| home.join(".config").join("systemd").join("user"))
        .ok_or(UnitError::NoUnitDir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exec_start_changes() {
        let (socket, service) = render(Path::new("/home/u/.cargo/bin/efrd")).unwrap();
        assert_eq!(socket, SOCKET_TEMPLATE);
        assert!(service.contains("\nExecStart=/home/u/.cargo/bin/efrd\n"), "{service}");
        assert!(!service.contains("/usr/local/bin/efrd"), "{service}");
        let old: Vec<&str> = SERVICE_TEMPLATE
            .lines()
            .filter(|l| !l.starts_with("ExecStart="))
            .collect();
        let new: Vec<&str> = service.lines().filter(|l| !l.starts_with("ExecStart=")).collect();
        assert_eq!(old, new);
        assert!(service.contains("Type=notify"));
    }

    #[test]
    fn specifiers_variables_and_spaces_are_escaped() {
        assert_eq!(exec_start_value(Path::new("/opt/efrd")).unwrap(), "/opt/efrd");
        assert_eq!(
            exec_start_value(Path::new("/opt/100%/efrd")).unwrap(),
            "/opt/100%%/efrd"
        );
        assert_eq!(exec_start_value(Path::new("/opt/$x/efrd")).unwrap(), "/opt/$$x/efrd");
        assert_eq!(
            exec_start_value(Path::new("/my apps/efrd")).unwrap(),
            "\"/my apps/efrd\""
        );
        assert_eq!(exec_start_value(Path::new(r#"/a"b\c"#)).unwrap(), r#""/a\"b\\c""#);
    }

    #[test]
    fn a_path_with_a_newline_or_not_utf8_is_refused() {
        use std::os::unix::ffi::OsStrExt;
        let newline = Path::new("/opt/efrd\nExecStartPre=/bin/evil");
        assert_eq!(
            exec_start_value(newline),
            Err(UnitError::UnwritablePath(newline.to_owned()))
        );
        let bytes = Path::new(std::ffi::OsStr::from_bytes(b"/opt/\xffefrd"));
        assert!(matches!(render(bytes), Err(UnitError::UnwritablePath(_))));
    }

    #[test]
    fn the_unit_dir_follows_xdg_config_home_then_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |var: &str| pairs.iter().find(|(k, _)| *k == var).map(|(_, v)| OsString::from(v))
        };
        assert_eq!(
            unit_dir_from(env(&[("XDG_CONFIG_HOME", "/c"), ("HOME", "/h")])).unwrap(),
            PathBuf::from("/c/systemd/user")
        );
        assert_eq!(
            unit_dir_from(env(&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/h")])).unwrap(),
            PathBuf::from("/h/.config/systemd/user")
        );
        assert_eq!(unit_dir_from(env(&[("HOME", "")])), Err(UnitError::NoUnitDir));
    }
}
