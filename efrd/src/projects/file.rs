//! `projects.toml`: its reading, and the write of one change through `toml_edit`, so every byte that is not the
//! changed project stays as it was (comments, order, spacing).
//!
//! A write reads the file, makes the new text, writes it next to the file and renames it over the file — unless the
//! file's bytes on disk are no longer those it read (an editor saved, another efr wrote): then nothing is written and
//! the change is a conflict, so no edit of the user's is lost.

use std::io::{self, Write as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use efr_protocol::wire::ProjectInfo;
use toml_edit::{ArrayOfTables, DocumentMut, Item, Table, value};

use super::Registry;

/// The key of the array of project tables.
const KEY: &str = "project";

/// Why the registry could not be read or changed. The contract's codes: a broken file or project is `invalid`, a
/// second registration or a file that changed during the write is `conflict`, a root that no project has is
/// `not_found`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// The file or the asked project is broken.
    #[error("{message}")]
    Invalid {
        /// One sentence for a person.
        message: String,
        /// The line of the fault in the file, from 1.
        line: Option<u32>,
        /// Its column, from 1.
        column: Option<u32>,
    },
    /// The root is registered already, or the file changed during the write.
    #[error("{0}")]
    Conflict(String),
    /// No project has that root.
    #[error("{0}")]
    NotFound(String),
    /// The file cannot be read or written.
    #[error("{0}")]
    Io(String),
}

impl RegistryError {
    fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid {
            message: message.into(),
            line: None,
            column: None,
        }
    }
}

/// One change of the registry.
#[derive(Debug, Clone, Copy)]
pub enum Change<'a> {
    /// Register a folder.
    Add {
        /// The folder, absolute.
        path: &'a Path,
        /// Its name; `None`: none.
        name: Option<&'a str>,
        /// Register the root of the git repository that holds `path` instead.
        git_root: bool,
    },
    /// Remove the project with this root.
    Remove {
        /// The root.
        path: &'a Path,
    },
}

/// Reads `file`: its text (empty for a file that does not exist) and its registry.
///
/// # Errors
/// `Invalid` with the line and column of a broken file; `Io`.
pub fn read(file: &Path) -> Result<(Option<Vec<u8>>, Registry), RegistryError> {
    let bytes = match std::fs::read(file) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(RegistryError::Io(format!("cannot read {}: {e}", file.display()))),
    };
    let (_, registry) = parse(file, bytes.as_deref().unwrap_or_default())?;
    Ok((bytes, registry))
}

/// The document and the registry of `bytes`.
fn parse(file: &Path, bytes: &[u8]) -> Result<(DocumentMut, Registry), RegistryError> {
    let text =
        std::str::from_utf8(bytes).map_err(|_| RegistryError::invalid(format!("{} is not UTF-8", file.display())))?;
    let doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let (line, column) = e.span().map_or((None, None), |span| position(text, span.start));
        RegistryError::Invalid {
            message: format!("{} is not valid TOML: {}", file.display(), e.message()),
            line,
            column,
        }
    })?;
    let mut registry = Registry::default();
    let Some(item) = doc.get(KEY) else {
        return Ok((doc, registry));
    };
    let tables = item
        .as_array_of_tables()
        .ok_or_else(|| RegistryError::invalid(format!("{}: `{KEY}` must be [[{KEY}]] tables", file.display())))?;
    for (i, table) in tables.iter().enumerate() {
        let project = project_of(table).map_err(|message| {
            let (line, column) = table.span().map_or((None, None), |span| position(text, span.start));
            RegistryError::Invalid {
                message: format!("{}: project {}: {message}", file.display(), i + 1),
                line,
                column,
            }
        })?;
        if registry
            .projects
            .iter()
            .any(|p| p.id == project.id || p.root == project.root)
        {
            return Err(RegistryError::invalid(format!(
                "{}: project {}: its id or its root is another project's too",
                file.display(),
                i + 1
            )));
        }
        registry.projects.push(project);
    }
    Ok((doc, registry))
}

fn project_of(table: &Table) -> Result<ProjectInfo, String> {
    let text = |key: &str| {
        table
            .get(key)
            .map(|item| item.as_str().ok_or(format!("`{key}` must be a string")))
    };
    let id = text("id").ok_or("`id` is missing")??.to_owned();
    if id.is_empty() {
        return Err("`id` is empty".into());
    }
    let root = PathBuf::from(text("root").ok_or("`root` is missing")??);
    if !root.is_absolute() {
        return Err("`root` must be an absolute path".into());
    }
    let name = text("name").transpose()?.map(str::to_owned);
    Ok(ProjectInfo { id, root, name })
}

/// The line and column (from 1, in characters) of byte `at` of `text`.
fn position(text: &str, at: usize) -> (Option<u32>, Option<u32>) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (u32::try_from(line).ok(), u32::try_from(column).ok())
}

/// A change ready to be written: the file's bytes as read, and its new text.
#[derive(Debug)]
pub struct Draft {
    file: PathBuf,
    original: Option<Vec<u8>>,
    text: String,
    project: ProjectInfo,
}

/// Reads `file` and makes its text with `change`. Nothing is written yet.
///
/// # Errors
/// See [`RegistryError`].
pub fn prepare(file: &Path, change: &Change<'_>) -> Result<Draft, RegistryError> {
    let (original, _) = read(file)?;
    let (mut doc, registry) = parse(file, original.as_deref().unwrap_or_default())?;
    let project = match *change {
        Change::Add { path, name, git_root } => {
            let root = folder_root(path, git_root)?;
            if let Some(held) = registry.projects.iter().find(|p| p.root == root) {
                return Err(RegistryError::Conflict(format!(
                    "{} is registered already, as the project `{}`",
                    root.display(),
                    held.id
                )));
            }
            let name = name.map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned);
            let project = ProjectInfo {
                id: new_id(&registry, name.as_deref(), &root),
                root,
                name,
            };
            append(&mut doc, &project)?;
            project
        }
        Change::Remove { path } => {
            let canonical = std::fs::canonicalize(path).ok();
            let i = registry
                .projects
                .iter()
                .position(|p| p.root == path || canonical.as_deref() == Some(p.root.as_path()))
                .ok_or_else(|| RegistryError::NotFound(format!("no project has the root {}", path.display())))?;
            remove(&mut doc, i);
            registry.projects[i].clone()
        }
    };
    Ok(Draft {
        file: file.to_owned(),
        original,
        text: doc.to_string(),
        project,
    })
}

/// The root to register for `path`: the folder itself (its canonical form), or the root of its git repository.
fn folder_root(path: &Path, git_root: bool) -> Result<PathBuf, RegistryError> {
    if !path.is_absolute() {
        return Err(RegistryError::invalid(format!(
            "{} is not an absolute path",
            path.display()
        )));
    }
    let folder = match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::canonicalize(path)
            .map_err(|e| RegistryError::Io(format!("cannot resolve {}: {e}", path.display())))?,
        Ok(_) => return Err(RegistryError::invalid(format!("{} is not a folder", path.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(RegistryError::invalid(format!("{} does not exist", path.display())));
        }
        Err(e) => return Err(RegistryError::invalid(format!("cannot read {}: {e}", path.display()))),
    };
    if !git_root {
        return Ok(folder);
    }
    // The nearest folder with a `.git` (a folder, or a file for a worktree or a submodule), as git finds it.
    folder
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
        .ok_or_else(|| RegistryError::invalid(format!("{} is in no git repository", folder.display())))
}

/// An id that no project has: the name, else the folder's name, with each character that is not a letter, a digit,
/// `-`, `_` or `.` made `-`; a number after it when it is taken.
fn new_id(registry: &Registry, name: Option<&str>, root: &Path) -> String {
    let base = name
        .map(str::to_owned)
        .or_else(|| root.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let mut slug: String = base
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect::<String>()
        .to_lowercase();
    if slug.is_empty() {
        slug = "project".into();
    }
    let taken = |id: &str| registry.projects.iter().any(|p| p.id == id);
    if !taken(&slug) {
        return slug;
    }
    (2..)
        .map(|n| format!("{slug}-{n}"))
        .find(|id| !taken(id))
        .unwrap_or(slug)
}

fn append(doc: &mut DocumentMut, project: &ProjectInfo) -> Result<(), RegistryError> {
    let root = project
        .root
        .to_str()
        .ok_or_else(|| RegistryError::invalid(format!("{} is not UTF-8", project.root.display())))?;
    let mut table = Table::new();
    // What follows the last table (a comment at the end, or a file of comments only) is the document's trailing
    // text, which toml_edit writes after every table: it goes before the new table instead, where it was.
    let trailing = doc.trailing().as_str().unwrap_or_default().to_owned();
    if !trailing.is_empty() {
        table.decor_mut().set_prefix(trailing);
        doc.set_trailing("");
    }
    table.insert("id", value(project.id.as_str()));
    table.insert("root", value(root));
    if let Some(name) = &project.name {
        table.insert("name", value(name.as_str()));
    }
    let item = doc
        .entry(KEY)
        .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()));
    let tables = item
        .as_array_of_tables_mut()
        .ok_or_else(|| RegistryError::invalid(format!("`{KEY}` must be [[{KEY}]] tables")))?;
    tables.push(table);
    Ok(())
}

/// Removes the `i`th project table; the comments before its header stay, before the next table or at the end.
fn remove(doc: &mut DocumentMut, i: usize) {
    let Some(tables) = doc.get_mut(KEY).and_then(Item::as_array_of_tables_mut) else {
        return;
    };
    let prefix = tables
        .get(i)
        .and_then(|t| t.decor().prefix())
        .and_then(|p| p.as_str())
        .unwrap_or_default()
        .to_owned();
    tables.remove(i);
    // Blank lines go with the table; only a comment is the user's text.
    if prefix.trim().is_empty() {
        return;
    }
    if let Some(next) = tables.get_mut(i) {
        let own = next
            .decor()
            .prefix()
            .and_then(|p| p.as_str())
            .unwrap_or_default()
            .to_owned();
        next.decor_mut().set_prefix(format!("{prefix}{own}"));
    } else {
        let trailing = doc.trailing().as_str().unwrap_or_default().to_owned();
        doc.set_trailing(format!("{prefix}{trailing}"));
    }
}

impl Draft {
    /// The project added or removed.
    #[must_use]
    pub fn project(&self) -> &ProjectInfo {
        &self.project
    }

    /// The new text of the file.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Writes the new text next to the file and renames it over the file, unless the file's bytes changed since
    /// [`prepare`] read them.
    ///
    /// # Errors
    /// `Conflict` when the file changed (it is then as the other writer left it); `Io`.
    pub fn commit(self) -> Result<(), RegistryError> {
        let io = |e: io::Error| RegistryError::Io(format!("cannot write {}: {e}", self.file.display()));
        let folder = self
            .file
            .parent()
            .ok_or_else(|| RegistryError::Io("the file has no folder".into()))?;
        std::fs::create_dir_all(folder).map_err(io)?;
        let temp = folder.join(format!(".{}.efr-{}.tmp", super::FILE_NAME, std::process::id()));
        let mode = std::fs::metadata(&self.file).map_or(0o600, |m| m.permissions().mode() & 0o7777);
        if let Err(e) = write_new(&temp, self.text.as_bytes(), mode) {
            let _ = std::fs::remove_file(&temp);
            return Err(io(e));
        }
        let now = match std::fs::read(&self.file) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                return Err(io(e));
            }
        };
        if now != self.original {
            let _ = std::fs::remove_file(&temp);
            return Err(RegistryError::Conflict(format!(
                "{} changed while efrd wrote it; nothing was written: try again",
                self.file.display()
            )));
        }
        if let Err(e) = std::fs::rename(&temp, &self.file) {
            let _ = std::fs::remove_file(&temp);
            return Err(io(e));
        }
        // The rename is durable once its folder is synced.
        if let Ok(dir) = std::fs::File::open(folder) {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

fn write_new(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests;
