//! The four roots of efrd's files: config, data, state and runtime.
//!
//! Which folder each root is comes from the environment alone, by a pure function ([`Roots::from_env_map`]), so
//! the rules are table-tested without touching the process. Creating the folders is a separate step
//! ([`Roots::create_all`]), done once at start.
//!
//! The rules (docs/architecture.md, "Configuration and roots"); for each root the first column that applies wins, and
//! names its source:
//!
//! | root    | `dir_variable`    | `efr_home` (`EFR_HOME=H`) | `xdg`                                        |
//! |---------|-------------------|---------------------------|-----------------------------------------------|
//! | config  | `EFR_CONFIG_DIR`  | `H/config`                | `$XDG_CONFIG_HOME/efr` or `~/.config/efr`     |
//! | data    | `EFR_DATA_DIR`    | `H/data`                  | `$XDG_DATA_HOME/efr` or `~/.local/share/efr`  |
//! | state   | `EFR_STATE_DIR`   | `H/state`                 | `$XDG_STATE_HOME/efr` or `~/.local/state/efr` |
//! | runtime | `EFR_RUNTIME_DIR` | `H/run`                   | `$XDG_RUNTIME_DIR/efr`                        |
//!
//! With no usable `XDG_RUNTIME_DIR`, the runtime root is `/run/user/$UID/efr` (source `run_user`).
//!
//! - An `EFR_*` variable names the folder itself (no `efr` is appended); it must be absolute, else
//!   [`RootsError::Relative`]: the user asked for it explicitly, so guessing would hide a mistake.
//! - An `XDG_*` variable that is empty or relative is ignored, as the XDG Base Directory spec says ("If an
//!   implementation encounters a relative path in any of these variables it should consider the path invalid and
//!   ignore it"); the XDG default under `$HOME` is then used and the source is still `xdg`.
//! - An empty variable counts as unset, for `EFR_*` too, so `EFR_HOME= efrd` means "no EFR_HOME".
//! - `EFR_HOME` uses `run/` (not `runtime/`) for the runtime root, the name systemd and `/run` use for it.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Where a root's path came from; reported by `admin.status` (the contract: "each a path and a source:
/// dir_variable, efr_home, xdg or run_user").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RootSource {
    /// The root's own variable: `EFR_CONFIG_DIR`, `EFR_DATA_DIR`, `EFR_STATE_DIR` or `EFR_RUNTIME_DIR`.
    DirVariable,
    /// A folder below `EFR_HOME`.
    EfrHome,
    /// An XDG base directory, from its variable or its default under `$HOME`.
    Xdg,
    /// `/run/user/$UID/efr`, the runtime root when `XDG_RUNTIME_DIR` is not set.
    RunUser,
}

impl RootSource {
    /// The snake_case wire name (`dir_variable`, `efr_home`, `xdg`, `run_user`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::DirVariable => "dir_variable",
            Self::EfrHome => "efr_home",
            Self::Xdg => "xdg",
            Self::RunUser => "run_user",
        }
    }
}

impl fmt::Display for RootSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One root: an absolute folder and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// The folder, always absolute.
    pub path: PathBuf,
    /// Which rule chose it.
    pub source: RootSource,
}

/// The four roots of efrd (docs/architecture.md, "Configuration and roots").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    /// `config.toml` and, later, other files the user edits.
    pub config: Root,
    /// The event store (`efr.db`) and other durable data.
    pub data: Root,
    /// Provider keys (files mode 0600) and other state that is not the user's data.
    pub state: Root,
    /// The socket (`daemon.sock`), the single-instance lock (`efrd.lock`) and other per-boot files.
    pub runtime: Root,
    /// The user's home folder: `$HOME` when it is set and absolute, else `None` (an empty or relative `HOME` is
    /// ignored, as for the XDG defaults). The one place efrd reads `HOME`; the policy (`~`, `$HOME`, the floors),
    /// the sandbox's home and the paths shown to clients take it from here.
    pub home: Option<PathBuf>,
}

/// Why the roots cannot be resolved from the environment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RootsError {
    /// An `EFR_*` variable holds a relative path.
    #[error("{var} must be an absolute path, but it is {value:?}")]
    Relative {
        /// The variable, such as `EFR_HOME`.
        var: &'static str,
        /// Its value, lossily converted for the message.
        value: String,
    },
    /// An XDG root has neither its variable nor an absolute `$HOME` to default from.
    #[error("cannot find the {root} folder: neither {var} nor HOME is set to an absolute path")]
    NoHome {
        /// The root's name: `config`, `data` or `state`.
        root: &'static str,
        /// The XDG variable that was missing, such as `XDG_CONFIG_HOME`.
        var: &'static str,
    },
}

/// The rules of one root, in the order of the module table.
struct Rule {
    name: &'static str,
    dir_var: &'static str,
    home_sub: &'static str,
    xdg_var: &'static str,
    /// The XDG default below `$HOME`; `None` for the runtime root, which falls back to `/run/user/$UID`.
    xdg_default: Option<&'static str>,
}

const RULES: [Rule; 4] = [
    Rule {
        name: "config",
        dir_var: "EFR_CONFIG_DIR",
        home_sub: "config",
        xdg_var: "XDG_CONFIG_HOME",
        xdg_default: Some(".config"),
    },
    Rule {
        name: "data",
        dir_var: "EFR_DATA_DIR",
        home_sub: "data",
        xdg_var: "XDG_DATA_HOME",
        xdg_default: Some(".local/share"),
    },
    Rule {
        name: "state",
        dir_var: "EFR_STATE_DIR",
        home_sub: "state",
        xdg_var: "XDG_STATE_HOME",
        xdg_default: Some(".local/state"),
    },
    Rule {
        name: "runtime",
        dir_var: "EFR_RUNTIME_DIR",
        home_sub: "run",
        xdg_var: "XDG_RUNTIME_DIR",
        xdg_default: None,
    },
];

/// The file name of the config file inside the config root.
pub const CONFIG_FILE: &str = "config.toml";
/// The socket's file name inside the runtime root (the spec: `$XDG_RUNTIME_DIR/efr/daemon.sock`).
pub const SOCKET_FILE: &str = "daemon.sock";
/// The single-instance lock's file name inside the runtime root.
pub const LOCK_FILE: &str = "efrd.lock";

impl Roots {
    /// Resolves the roots from an environment map and the user's uid (for `/run/user/$UID`). Pure: it reads
    /// nothing but its arguments.
    ///
    /// # Errors
    /// [`RootsError::Relative`] for an `EFR_*` variable that is not absolute; [`RootsError::NoHome`] when an XDG
    /// root has no usable variable and `HOME` is unset or relative.
    pub fn from_env_map(env: &HashMap<OsString, OsString>, uid: u32) -> Result<Self, RootsError> {
        let get = |name: &str| env.get(OsStr::new(name)).filter(|v| !v.is_empty());
        let efr_home = match get("EFR_HOME") {
            Some(value) => Some(absolute("EFR_HOME", value)?),
            None => None,
        };
        let home = get("HOME").map(PathBuf::from).filter(|p| p.is_absolute());

        let resolve = |rule: &Rule| -> Result<Root, RootsError> {
            if let Some(value) = get(rule.dir_var) {
                let path = absolute(rule.dir_var, value)?;
                return Ok(Root {
                    path,
                    source: RootSource::DirVariable,
                });
            }
            if let Some(home) = &efr_home {
                return Ok(Root {
                    path: home.join(rule.home_sub),
                    source: RootSource::EfrHome,
                });
            }
            // XDG: a relative value is invalid and ignored, per the XDG Base Directory spec.
            if let Some(base) = get(rule.xdg_var).map(PathBuf::from).filter(|p| p.is_absolute()) {
                return Ok(Root {
                    path: base.join("efr"),
                    source: RootSource::Xdg,
                });
            }
            match (rule.xdg_default, &home) {
                (Some(sub), Some(home)) => Ok(Root {
                    path: home.join(sub).join("efr"),
                    source: RootSource::Xdg,
                }),
                (Some(_), None) => Err(RootsError::NoHome {
                    root: rule.name,
                    var: rule.xdg_var,
                }),
                (None, _) => Ok(Root {
                    path: PathBuf::from(format!("/run/user/{uid}/efr")),
                    source: RootSource::RunUser,
                }),
            }
        };

        let [config, data, state, runtime] = &RULES;
        Ok(Self {
            config: resolve(config)?,
            data: resolve(data)?,
            state: resolve(state)?,
            runtime: resolve(runtime)?,
            home,
        })
    }

    /// Resolves the roots from this process's environment and real uid.
    ///
    /// # Errors
    /// As [`Roots::from_env_map`].
    pub fn from_process_env() -> Result<Self, RootsError> {
        let env: HashMap<OsString, OsString> = std::env::vars_os().collect();
        Self::from_env_map(&env, nix::unistd::getuid().as_raw())
    }

    /// All four roots below one folder, as `EFR_HOME` would give them, and no home folder; for tests and tools.
    #[must_use]
    pub fn under(home: &Path) -> Self {
        let root = |sub: &str| Root {
            path: home.join(sub),
            source: RootSource::EfrHome,
        };
        Self {
            config: root("config"),
            data: root("data"),
            state: root("state"),
            runtime: root("run"),
            home: None,
        }
    }

    /// `config.toml` in the config root.
    #[must_use]
    pub fn config_file(&self) -> PathBuf {
        self.config.path.join(CONFIG_FILE)
    }

    /// `daemon.sock` in the runtime root.
    #[must_use]
    pub fn socket_path(&self) -> PathBuf {
        self.runtime.path.join(SOCKET_FILE)
    }

    /// `efrd.lock` in the runtime root.
    #[must_use]
    pub fn lock_path(&self) -> PathBuf {
        self.runtime.path.join(LOCK_FILE)
    }

    /// efr's own folders, as the policy's floors protect them: the four roots and the conversations' `$SCRATCH`
    /// folders (`$state/scratch`), which are the calls' own.
    #[must_use]
    pub fn efr_dirs(&self) -> efr_policy::EfrDirs {
        efr_policy::EfrDirs {
            config: Some(self.config.path.clone()),
            data: Some(self.data.path.clone()),
            state: Some(self.state.path.clone()),
            runtime: Some(self.runtime.path.clone()),
            scratch: Some(self.state.path.join(efr_policy::floors::SCRATCH_FOLDER)),
        }
    }

    /// The roots with their names, in a fixed order (config, data, state, runtime).
    #[must_use]
    pub fn iter(&self) -> [(&'static str, &Root); 4] {
        [
            ("config", &self.config),
            ("data", &self.data),
            ("state", &self.state),
            ("runtime", &self.runtime),
        ]
    }

    /// Creates every root that is missing, mode 0700 (missing parents too, also 0700). An existing folder keeps its
    /// mode, except the runtime root, which must be private: see [`ensure_private_dir`].
    ///
    /// # Errors
    /// The first folder that cannot be created, with its path.
    pub fn create_all(&self) -> Result<(), DirError> {
        for (name, root) in self.iter() {
            if name == "runtime" {
                ensure_private_dir(&root.path)?;
            } else {
                create_dir_0700(&root.path)?;
            }
        }
        Ok(())
    }
}

fn absolute(var: &'static str, value: &OsString) -> Result<PathBuf, RootsError> {
    let path = PathBuf::from(value);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(RootsError::Relative {
            var,
            value: value.to_string_lossy().into_owned(),
        })
    }
}

/// A folder that could not be made ready.
#[derive(Debug, thiserror::Error)]
pub enum DirError {
    /// Creating, reading or changing the folder failed.
    #[error("cannot prepare the folder {path}: {source}")]
    Io {
        /// The folder.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The path exists and is not a folder.
    #[error("{path} exists and is not a folder")]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// The folder belongs to another user, so its mode cannot be trusted or fixed.
    #[error("the folder {path} belongs to uid {owner}, not to this user (uid {uid})")]
    NotOwned {
        /// The folder.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// Our uid.
        uid: u32,
    },
}

fn create_dir_0700(path: &Path) -> Result<(), DirError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|source| DirError::Io {
            path: path.to_owned(),
            source,
        })?;
    let meta = fs::metadata(path).map_err(|source| DirError::Io {
        path: path.to_owned(),
        source,
    })?;
    if meta.is_dir() {
        Ok(())
    } else {
        Err(DirError::NotADirectory { path: path.to_owned() })
    }
}

/// Makes `path` a folder of this user with mode 0700: creates it (and missing parents, 0700) when missing, and
/// tightens the mode of an existing folder of ours that others could enter. Used for the runtime root, which holds
/// the socket: only the user may reach it (`DirectoryMode=0700`, docs/architecture.md, "Start, stop and
/// systemd").
///
/// # Errors
/// [`DirError::NotOwned`] for a folder of another uid (never changed); [`DirError::NotADirectory`];
/// [`DirError::Io`] for a failed create, stat or chmod.
pub fn ensure_private_dir(path: &Path) -> Result<(), DirError> {
    create_dir_0700(path)?;
    let io_err = |source| DirError::Io {
        path: path.to_owned(),
        source,
    };
    let meta = fs::metadata(path).map_err(io_err)?;
    let uid = nix::unistd::getuid().as_raw();
    if meta.uid() != uid {
        return Err(DirError::NotOwned {
            path: path.to_owned(),
            owner: meta.uid(),
            uid,
        });
    }
    if meta.mode() & 0o077 != 0 {
        let mode = format!("{:o}", meta.mode() & 0o7777);
        tracing::warn!(path = %path.display(), mode, "folder was open to others; setting mode 0700");
        fs::set_permissions(path, fs::Permissions::from_mode(0o700)).map_err(io_err)?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "roots_tests.rs"]
mod tests;
