//! Where a target lies: its class (`home`, `project`, `system`, `temp`, `device`, `socket`, `cache`,
//! `build_output`, `trash`), whether the sandbox masks it, whether it is a floor file, and the narrowest folder a
//! write grant may name for it (docs/adr/0016-exit-kinds.md, kinds 3, 4 and 5). Lexical, like the policy's paths: no
//! file is read.

use std::path::{Path, PathBuf};

use efr_protocol::wire::{ExitTarget, TargetClass};

use super::ExitContext;
use efr_policy::paths::{is_within, normalize};

/// The floor files under the home (ADR 0016, kind 5): a file that runs code or sets policy outside the sandbox at a
/// later time. A name ending in `/` is a folder: every file below it.
pub const FLOOR_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".gitconfig",
    ".config/git/config",
    ".ssh/config",
    ".zlogout",
    ".bashrc.d/",
    ".config/fish/",
    ".config/environment.d/",
    ".config/git/",
    ".ssh/authorized_keys",
    ".ssh/authorized_keys2",
    ".ssh/rc",
    ".config/autostart/",
    ".config/systemd/user/",
    ".local/share/systemd/user/",
    ".local/bin/",
    "bin/",
];

/// Caches under the home that a tool fills again by itself.
const CACHES: &[&str] = &[
    ".cache",
    ".cargo/registry",
    ".cargo/git",
    ".npm/_cacache",
    ".npm/_npx",
    ".pnpm-store",
    ".yarn/cache",
    ".m2/repository",
    ".gradle/caches",
    "go/pkg/mod",
    ".rustup/downloads",
    ".rustup/tmp",
];

/// Folder names that hold a build's output. Only in a folder of the home (never the home's own child), so that the
/// user's own `~/build` is not taken for one.
const BUILD_OUTPUTS: &[&str] = &[
    "target",
    "node_modules",
    "dist",
    "build",
    "__pycache__",
    ".next",
    ".pytest_cache",
    ".mypy_cache",
    ".tox",
];

/// The user's trash.
const TRASH: &str = ".local/share/Trash";

impl ExitContext<'_> {
    /// Whether `path` is inside a writable root (a contained call writes it without an exit).
    #[must_use]
    pub fn writable(&self, path: &Path) -> bool {
        self.writable_roots.iter().any(|root| is_within(path, root))
    }

    /// Whether the sandbox masks `path` (inside a masked path).
    #[must_use]
    pub fn masked_path(&self, path: &Path) -> bool {
        self.masked.iter().any(|mask| is_within(path, mask))
    }

    /// The masked path that holds `path`, if one does.
    #[must_use]
    pub fn mask_of(&self, path: &Path) -> Option<PathBuf> {
        self.masked.iter().find(|mask| is_within(path, mask)).cloned()
    }

    /// Whether `path` is a floor file (ADR 0016, kind 5) of the user's home.
    #[must_use]
    pub fn floor_file(&self, path: &Path) -> bool {
        let Some(home) = self.home else { return false };
        let path = normalize(path);
        FLOOR_FILES.iter().any(|floor| match floor.strip_suffix('/') {
            Some(folder) => is_within(&path, &home.join(folder)),
            None => path == home.join(floor),
        })
    }

    /// The class of `path` ([`TargetClass`]): `device` under `/dev`, `temp` under `/tmp` and `/var/tmp`, then under
    /// the home `trash`, `cache`, `build_output` or `home`; a project root that is not writable is `project`;
    /// anything else `system`.
    #[must_use]
    pub fn target_class(&self, path: &Path) -> TargetClass {
        let path = normalize(path);
        if path.starts_with("/dev") {
            return TargetClass::Device;
        }
        if path.starts_with("/tmp") || path.starts_with("/var/tmp") {
            return TargetClass::Temp;
        }
        if self.project_roots.iter().any(|root| is_within(&path, root)) && !self.writable(&path) {
            return TargetClass::Project;
        }
        // A build's output outside the home (`/usr/lib/node_modules`) is a system folder all the same.
        let Some(home) = self.home.filter(|home| path.starts_with(home)) else {
            return TargetClass::System;
        };
        if is_within(&path, &home.join(TRASH)) {
            TargetClass::Trash
        } else if CACHES.iter().any(|cache| is_within(&path, &home.join(cache))) {
            TargetClass::Cache
        } else if build_output(&path, home) {
            TargetClass::BuildOutput
        } else {
            TargetClass::Home
        }
    }

    /// A target of `path` with its class and mask.
    #[must_use]
    pub fn target(&self, path: &Path) -> ExitTarget {
        let path = normalize(path);
        ExitTarget {
            class: self.target_class(&path),
            masked: self.masked_path(&path),
            backup_before_write: false,
            path,
        }
    }

    /// The narrowest folder a write grant names for writing (or deleting) `path`: its parent folder, or the path
    /// itself when the parent is the home, `/` or a folder right under it, or holds a floor file, a masked path or
    /// one of efr's roots (a grant of such a folder would open them too). A path in a command's output is a fact,
    /// never a reason for a wider grant.
    #[must_use]
    pub fn write_grant(&self, path: &Path) -> PathBuf {
        let path = normalize(path);
        let Some(parent) = path.parent() else {
            return path;
        };
        let top = parent.parent().is_none_or(|p| p == Path::new("/"));
        let is_home = self.home.is_some_and(|home| is_within(home, parent));
        let holds = |inner: &Path| is_within(inner, parent);
        let floors = self.home.is_some_and(|home| {
            FLOOR_FILES
                .iter()
                .any(|floor| holds(&home.join(floor.trim_end_matches('/'))))
        });
        let efr = [
            &self.efr_dirs.config,
            &self.efr_dirs.data,
            &self.efr_dirs.state,
            &self.efr_dirs.runtime,
        ]
        .into_iter()
        .flatten()
        .any(|root| holds(root));
        if top || is_home || floors || efr || self.masked.iter().any(|m| holds(m)) {
            path
        } else {
            parent.to_path_buf()
        }
    }
}

/// Whether `path` lies in a build's output folder at least two levels below `base`.
fn build_output(path: &Path, base: &Path) -> bool {
    let Ok(rest) = path.strip_prefix(base) else {
        return false;
    };
    rest.components()
        .skip(1)
        .any(|c| BUILD_OUTPUTS.iter().any(|name| c.as_os_str() == *name))
}
