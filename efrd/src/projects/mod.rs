//! The project registry: the folders the user registered as projects, in `projects.toml` in the config root
//! (docs/adr/0030-projects-and-routing.md; the contract's "the project registry").
//!
//! ```toml
//! # A comment the user wrote stays byte for byte when efrd adds or removes a project.
//! [[project]]
//! id = "efr"                       # the route_scope value; made once from the name or the folder's name
//! root = "/home/ada/src/efr"       # absolute; the folder and everything below it
//! name = "efr"                     # optional
//! ```
//!
//! - [`mod@file`]: reading the file (a broken file is an error with its line and column) and the write of one change
//!   through `toml_edit`, which fails with a conflict when the file changed between efrd's read and its rename.
//! - [`Projects`]: the registry in force. It re-reads the file when its size, time or inode changed, so a hand edit
//!   counts at the next prompt without a reload; a broken file keeps the registry read before it.
//!
//! The scope key of a working directory is the project with the longest root that holds it, else outside
//! ([`Registry::holding`]).

pub mod file;

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use efr_protocol::wire::ProjectInfo;

pub use file::{Change, RegistryError};

/// The name of the registry file in the config root.
pub const FILE_NAME: &str = "projects.toml";

/// The registered projects, in the file's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registry {
    /// The projects.
    pub projects: Vec<ProjectInfo>,
}

impl Registry {
    /// The project that holds `dir`: the one with the longest root that is `dir` or a folder above it. `dir` is
    /// compared as given and, when it differs, as its canonical form (a link to a project folder is in it).
    #[must_use]
    pub fn holding(&self, dir: &Path) -> Option<&ProjectInfo> {
        let canonical = std::fs::canonicalize(dir).ok();
        self.projects
            .iter()
            .filter(|p| dir.starts_with(&p.root) || canonical.as_deref().is_some_and(|c| c.starts_with(&p.root)))
            .max_by_key(|p| p.root.as_os_str().len())
    }

    /// The project whose id is `id`.
    #[must_use]
    pub fn by_id(&self, id: &str) -> Option<&ProjectInfo> {
        self.projects.iter().find(|p| p.id == id)
    }
}

/// What identifies one version of the file on disk without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp {
        ino: meta.ino(),
        len: meta.len(),
        mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
    })
}

#[derive(Debug, Default)]
struct Loaded {
    /// The version read; `None` for a file that did not exist (or none read yet).
    stamp: Option<Stamp>,
    /// Whether anything was read yet.
    read: bool,
    registry: Arc<Registry>,
}

/// The registry in force, kept current with its file (see the module docs).
#[derive(Debug)]
pub struct Projects {
    file: PathBuf,
    loaded: Mutex<Loaded>,
    /// One change at a time from this process; the file's own check catches every other writer.
    writing: Mutex<()>,
}

impl Projects {
    /// The registry of `config_root`/projects.toml; nothing is read until it is first used.
    #[must_use]
    pub fn new(config_root: &Path) -> Self {
        Self {
            file: config_root.join(FILE_NAME),
            loaded: Mutex::new(Loaded::default()),
            writing: Mutex::new(()),
        }
    }

    /// The registry file.
    #[must_use]
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The registry in force: the file as it is now, or, when it is broken, the registry read before it (empty when
    /// none was). A broken file is logged once per version.
    #[must_use]
    pub fn current(&self) -> Arc<Registry> {
        match self.refresh() {
            Ok(registry) => registry,
            Err(error) => {
                let loaded = self.loaded.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                tracing::warn!(file = %self.file.display(), %error, "the project registry is broken; the one read before stays");
                Arc::clone(&loaded.registry)
            }
        }
    }

    /// The registry as the file holds it now.
    ///
    /// # Errors
    /// [`RegistryError::Invalid`] for a broken file, [`RegistryError::Io`] when it cannot be read.
    pub fn refresh(&self) -> Result<Arc<Registry>, RegistryError> {
        let now = stamp(&self.file);
        let mut loaded = self.loaded.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if loaded.read && loaded.stamp == now {
            return Ok(Arc::clone(&loaded.registry));
        }
        let registry = Arc::new(file::read(&self.file)?.1);
        *loaded = Loaded {
            stamp: now,
            read: true,
            registry: Arc::clone(&registry),
        };
        Ok(registry)
    }

    /// Registers `path` (or the root of its git repository with `git_root`) under `name`, writes the file and
    /// reloads. Returns the project added.
    ///
    /// # Errors
    /// `Invalid` (a path that is not an absolute folder, no git repository, a broken file), `Conflict` (the root is
    /// registered, or the file changed during the write), `Io`.
    pub fn add(&self, path: &Path, name: Option<&str>, git_root: bool) -> Result<ProjectInfo, RegistryError> {
        self.change(&Change::Add { path, name, git_root })
    }

    /// Removes the project whose root is `path`, writes the file and reloads. Returns the project removed.
    ///
    /// # Errors
    /// `NotFound` when no project has that root; `Invalid` for a broken file; `Conflict`; `Io`.
    pub fn remove(&self, path: &Path) -> Result<ProjectInfo, RegistryError> {
        self.change(&Change::Remove { path })
    }

    fn change(&self, change: &Change<'_>) -> Result<ProjectInfo, RegistryError> {
        let _one = self.writing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let draft = file::prepare(&self.file, change)?;
        let project = draft.project().clone();
        draft.commit()?;
        Ok(project)
    }
}
