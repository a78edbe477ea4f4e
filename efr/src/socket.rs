//! Where efrd's socket is: `daemon.sock` in efrd's runtime root.
//!
//! The rules mirror efrd's `config::roots` for the runtime root (docs/architecture.md, "Configuration and roots"),
//! first match wins:
//!
//! | variable          | socket                              |
//! |-------------------|-------------------------------------|
//! | `EFR_RUNTIME_DIR` | `$EFR_RUNTIME_DIR/daemon.sock`      |
//! | `EFR_HOME`        | `$EFR_HOME/run/daemon.sock`         |
//! | `XDG_RUNTIME_DIR` | `$XDG_RUNTIME_DIR/efr/daemon.sock`  |
//! | (none)            | `/run/user/$UID/efr/daemon.sock`    |
//!
//! As in efrd, an empty variable counts as unset, an `EFR_*` variable must be absolute (the user asked for it, so
//! guessing would hide a mistake), and an `XDG_RUNTIME_DIR` that is relative is ignored, as the XDG spec says.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The socket's file name inside the runtime root (spec: `$XDG_RUNTIME_DIR/efr/daemon.sock`).
pub const SOCKET_FILE: &str = "daemon.sock";

/// Why the socket path cannot be known from the environment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var} must be an absolute path, but it is {value:?}")]
pub struct SocketPathError {
    /// The variable, such as `EFR_HOME`.
    pub var: &'static str,
    /// Its value, lossily converted for the message.
    pub value: String,
}

/// The socket path for an environment given by `get` (a variable's value, `None` when unset) and the user's uid.
///
/// # Errors
/// [`SocketPathError`] when `EFR_RUNTIME_DIR` or `EFR_HOME` is set to a relative path.
pub fn socket_path_from(get: impl Fn(&str) -> Option<OsString>, uid: u32) -> Result<PathBuf, SocketPathError> {
    let set = |var: &str| get(var).filter(|value| !value.is_empty()).map(PathBuf::from);
    let absolute = |var: &'static str| -> Result<Option<PathBuf>, SocketPathError> {
        match set(var) {
            Some(path) if path.is_absolute() => Ok(Some(path)),
            Some(path) => Err(SocketPathError {
                var,
                value: path.to_string_lossy().into_owned(),
            }),
            None => Ok(None),
        }
    };
    let runtime = if let Some(dir) = absolute("EFR_RUNTIME_DIR")? {
        dir
    } else if let Some(home) = absolute("EFR_HOME")? {
        home.join("run")
    } else if let Some(xdg) = set("XDG_RUNTIME_DIR").filter(|p| p.is_absolute()) {
        xdg.join("efr")
    } else {
        Path::new("/run/user").join(uid.to_string()).join("efr")
    };
    Ok(runtime.join(SOCKET_FILE))
}

/// The socket path of this process's environment.
///
/// # Errors
/// As [`socket_path_from`].
pub fn socket_path() -> Result<PathBuf, SocketPathError> {
    socket_path_from(|var| std::env::var_os(var), nix::unistd::getuid().as_raw())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn path(vars: &[(&str, &str)]) -> Result<PathBuf, SocketPathError> {
        let map: HashMap<String, OsString> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).into())).collect();
        socket_path_from(|var| map.get(var).cloned(), 1000)
    }

    #[test]
    fn the_first_rule_that_applies_wins() {
        let all = [("EFR_RUNTIME_DIR", "/r"), ("EFR_HOME", "/h"), ("XDG_RUNTIME_DIR", "/x")];
        assert_eq!(path(&all).unwrap(), PathBuf::from("/r/daemon.sock"));
        assert_eq!(path(&all[1..]).unwrap(), PathBuf::from("/h/run/daemon.sock"));
        assert_eq!(path(&all[2..]).unwrap(), PathBuf::from("/x/efr/daemon.sock"));
        assert_eq!(path(&[]).unwrap(), PathBuf::from("/run/user/1000/efr/daemon.sock"));
    }

    #[test]
    fn empty_counts_as_unset_and_a_relative_xdg_dir_is_ignored() {
        assert_eq!(
            path(&[("EFR_HOME", ""), ("XDG_RUNTIME_DIR", "run")]).unwrap(),
            PathBuf::from("/run/user/1000/efr/daemon.sock")
        );
    }

    #[test]
    fn a_relative_efr_variable_is_an_error_that_names_it() {
        let err = path(&[("EFR_HOME", "home")]).unwrap_err();
        assert_eq!(err.var, "EFR_HOME");
        assert!(err.to_string().contains("absolute"), "{err}");
        assert_eq!(path(&[("EFR_RUNTIME_DIR", "r")]).unwrap_err().var, "EFR_RUNTIME_DIR");
    }
}
