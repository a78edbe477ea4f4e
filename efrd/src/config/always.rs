//! `[[auto.always]]`: the always rules, and their save into `config.toml` (docs/auto.md, "Always rules";
//! docs/adr/0026-always-rules.md).
//!
//! ```toml
//! [[auto.always]]
//! kind = "host"                                   # the exit kind the rule approves
//! project = "/home/ada/src/efr"                   # in this project only
//! grants = [{ kind = "host", host = "crates.io" }] # exactly these grants, or a part of them
//! rule = "host crates.io in the project efr"      # the rule in words, as the question offered it
//! ```
//!
//! Which exits a rule may cover, and which floors disable one, is the exits' business (`crate::exits::always`);
//! this module owns the table's shape and the write.
//!
//! The write ([`prepare`], then [`Draft::commit`]) goes through `toml_edit`, so every byte of the file that is not the
//! new rule stays as it was (comments, order, spacing). It fails closed, and each failure is a
//! [`NotSavedReason`]:
//!
//! - `load_check`: the file does not load now (a syntax error, a broken value), or would not load with the rule;
//! - `read_only`: the file (the real file behind a link) has no write bit for its owner, its folder has none, or it
//!   lies on a read-only file system; efrd honours the bits even when it runs as root;
//! - `changed`: the file's bytes changed between efrd's read and its rename (an editor saved meanwhile): the user's
//!   edit stays and the rule is not written;
//! - `io`: any other failure (the folder is gone, the disk is full).

use std::io::{self, Write as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use efr_protocol::wire::always::NotSavedReason;
use efr_protocol::wire::{ExitKind, Grant};
use serde::{Deserialize, Serialize};

use super::key_path::KeyPath;

/// One `[[auto.always]]` table: an exit of `kind` in `project` whose grants are all among `grants` runs without a
/// question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlwaysRule {
    /// The exit kind.
    pub kind: ExitKind,
    /// The project root the rule holds in, absolute.
    pub project: PathBuf,
    /// The grants the rule allows; an exit is covered when each of its grants is one of these.
    pub grants: Vec<Grant>,
    /// The rule in words (as the question's `always` offered it); empty when the user wrote none.
    #[serde(default)]
    pub rule: String,
}

/// The rules of `[[auto.always]]` that need nothing but the file: an absolute project, known grants (a kind this
/// efrd does not know is a type error already).
///
/// # Errors
/// The key and the message of the first broken rule.
pub fn check(rules: &[AlwaysRule]) -> Result<(), (KeyPath, String)> {
    for (i, rule) in rules.iter().enumerate() {
        let at = |key: &str| KeyPath::keys(&["auto", "always"]).index(i).key(key);
        if !rule.project.is_absolute() {
            return Err((
                at("project"),
                "an always rule's project must be an absolute path".to_owned(),
            ));
        }
        if rule.grants.is_empty() {
            return Err((at("grants"), "an always rule needs at least one grant".to_owned()));
        }
        if let Some(j) = rule.grants.iter().position(|g| *g == Grant::Unknown) {
            return Err((
                KeyPath::keys(&["auto", "always"]).index(i).key("grants").index(j),
                "a grant of a kind this efrd does not know".to_owned(),
            ));
        }
    }
    Ok(())
}

/// A rule ready to be written: the file's bytes as read, and its new text.
#[derive(Debug)]
pub struct Draft {
    /// The file written: `config.toml`, or the real file a link of it names.
    real: PathBuf,
    /// The bytes read; `None` when the file did not exist.
    original: Option<Vec<u8>>,
    /// The file's mode, kept for the new file.
    mode: u32,
    /// The new text.
    text: String,
    /// The rule's place among the `[[auto.always]]` tables.
    index: u32,
}

/// Reads `config` (following a link), adds `rule` as the last `[[auto.always]]` table, and checks that the result
/// loads (`load` parses and checks a text). Nothing is written yet.
///
/// # Errors
/// `load_check`, `read_only` or `io` (see the module docs).
pub fn prepare(config: &Path, rule: &AlwaysRule, load: &dyn Fn(&str) -> bool) -> Result<Draft, NotSavedReason> {
    let real = real_file(config)?;
    let original = match std::fs::read(&real) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_reason(&e)),
    };
    let text = match &original {
        Some(bytes) => std::str::from_utf8(bytes).map_err(|_| NotSavedReason::LoadCheck)?,
        None => "",
    };
    if !load(text) {
        return Err(NotSavedReason::LoadCheck);
    }
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|_| NotSavedReason::LoadCheck)?;
    let index = append(&mut doc, rule)?;
    let new_text = doc.to_string();
    if !load(&new_text) {
        return Err(NotSavedReason::LoadCheck);
    }
    let mode = writable(&real, original.is_some())?;
    Ok(Draft {
        real,
        original,
        mode,
        text: new_text,
        index,
    })
}

impl Draft {
    /// The new text of the file.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Writes the new text next to the file, then renames it over the file, unless the file's bytes changed since
    /// [`prepare`] read them. Returns the rule's index.
    ///
    /// # Errors
    /// `changed`, `read_only` or `io` (see the module docs); the file is then as it was.
    pub fn commit(self) -> Result<u32, NotSavedReason> {
        let folder = self.real.parent().ok_or(NotSavedReason::Io)?;
        let name = self.real.file_name().ok_or(NotSavedReason::Io)?.to_string_lossy();
        let temp = folder.join(format!(".{name}.efr-{}.tmp", std::process::id()));
        let written = write_new(&temp, self.text.as_bytes(), self.mode);
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(io_reason(&e));
        }
        let now = match std::fs::read(&self.real) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                return Err(io_reason(&e));
            }
        };
        if now != self.original {
            let _ = std::fs::remove_file(&temp);
            return Err(NotSavedReason::Changed);
        }
        if let Err(e) = std::fs::rename(&temp, &self.real) {
            let _ = std::fs::remove_file(&temp);
            return Err(io_reason(&e));
        }
        // The rename is durable once its folder is synced; a failure here loses nothing that was not written.
        if let Ok(dir) = std::fs::File::open(folder) {
            let _ = dir.sync_all();
        }
        Ok(self.index)
    }
}

/// The file a write goes to: `config`, or the file its link names (a dotfiles checkout, a store of a home manager).
fn real_file(config: &Path) -> Result<PathBuf, NotSavedReason> {
    match std::fs::symlink_metadata(config) {
        Ok(meta) if meta.file_type().is_symlink() => std::fs::canonicalize(config).map_err(|e| io_reason(&e)),
        Ok(meta) if !meta.is_file() => Err(NotSavedReason::Io),
        Ok(_) => Ok(config.to_owned()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(config.to_owned()),
        Err(e) => Err(io_reason(&e)),
    }
}

/// The mode for the new file when efrd may write `real` and its folder: the owner's write bit on both (honoured as
/// root too), and a file system that is not read-only.
fn writable(real: &Path, exists: bool) -> Result<u32, NotSavedReason> {
    let folder = real.parent().ok_or(NotSavedReason::Io)?;
    let dir = std::fs::metadata(folder).map_err(|e| io_reason(&e))?;
    let mode = if exists {
        let meta = std::fs::metadata(real).map_err(|e| io_reason(&e))?;
        if meta.mode() & 0o200 == 0 {
            return Err(NotSavedReason::ReadOnly);
        }
        meta.permissions().mode() & 0o7777
    } else {
        0o600
    };
    if dir.mode() & 0o200 == 0 {
        return Err(NotSavedReason::ReadOnly);
    }
    let read_only_fs =
        nix::sys::statvfs::statvfs(folder).is_ok_and(|s| s.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY));
    if read_only_fs {
        return Err(NotSavedReason::ReadOnly);
    }
    Ok(mode)
}

fn write_new(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    // The umask may have cut the mode: the new file gets the old file's bits exactly.
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    file.write_all(bytes)?;
    file.sync_all()
}

fn io_reason(e: &io::Error) -> NotSavedReason {
    match e.raw_os_error() {
        Some(libc_code) if [libc::EACCES, libc::EPERM, libc::EROFS].contains(&libc_code) => NotSavedReason::ReadOnly,
        _ => NotSavedReason::Io,
    }
}

/// Adds `rule` as the last entry of `auto.always` (an array of tables, or an inline array the user wrote), and
/// returns its index. `[auto]` is made implicit when absent, so no empty header is written.
fn append(doc: &mut toml_edit::DocumentMut, rule: &AlwaysRule) -> Result<u32, NotSavedReason> {
    let root = doc.as_table_mut();
    if !root.contains_key("auto") {
        let mut auto = toml_edit::Table::new();
        auto.set_implicit(true);
        root.insert("auto", toml_edit::Item::Table(auto));
    }
    let auto = root
        .get_mut("auto")
        .and_then(toml_edit::Item::as_table_like_mut)
        .ok_or(NotSavedReason::LoadCheck)?;
    let table = rule_table(rule)?;
    match auto.get_mut("always") {
        None => {
            let mut list = toml_edit::ArrayOfTables::new();
            list.push(table);
            auto.insert("always", toml_edit::Item::ArrayOfTables(list));
            Ok(0)
        }
        Some(toml_edit::Item::ArrayOfTables(list)) => {
            list.push(table);
            u32::try_from(list.len() - 1).map_err(|_| NotSavedReason::LoadCheck)
        }
        Some(toml_edit::Item::Value(toml_edit::Value::Array(list))) => {
            list.push(table.into_inline_table());
            u32::try_from(list.len() - 1).map_err(|_| NotSavedReason::LoadCheck)
        }
        Some(_) => Err(NotSavedReason::LoadCheck),
    }
}

fn rule_table(rule: &AlwaysRule) -> Result<toml_edit::Table, NotSavedReason> {
    let mut table = toml_edit::Table::new();
    table.insert("kind", toml_edit::value(rule.kind.as_str()));
    table.insert("project", toml_edit::value(rule.project.to_string_lossy().as_ref()));
    let mut grants = toml_edit::Array::new();
    for grant in &rule.grants {
        grants.push(inline(&serde_json::to_value(grant).map_err(|_| NotSavedReason::Io)?)?);
    }
    table.insert("grants", toml_edit::value(grants));
    table.insert("rule", toml_edit::value(rule.rule.as_str()));
    Ok(table)
}

/// A grant's JSON form (an object of strings and numbers) as an inline table.
fn inline(value: &serde_json::Value) -> Result<toml_edit::InlineTable, NotSavedReason> {
    let mut table = toml_edit::InlineTable::new();
    for (key, member) in value.as_object().ok_or(NotSavedReason::Io)? {
        let member: toml_edit::Value = match member {
            serde_json::Value::String(s) => s.as_str().into(),
            serde_json::Value::Number(n) => n.as_i64().ok_or(NotSavedReason::Io)?.into(),
            serde_json::Value::Bool(b) => (*b).into(),
            _ => return Err(NotSavedReason::Io),
        };
        table.insert(key, member);
    }
    Ok(table)
}

#[cfg(test)]
#[path = "always_tests.rs"]
mod tests;
