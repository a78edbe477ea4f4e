//! Which changes of a turn's project may be another turn's (efrd's `turn::overlap`), saved beside the turn's
//! snapshots so that conversation.diff marks them after the turn and undo treats them as conflicts.
//!
//! ```text
//! <dir>/maybe_other/<turn_id>.json   {"version": 1, "paths": [absolute paths]}
//! ```
//!
//! Written only for a turn that ran beside another and saw changes it cannot claim; removed with the turn's snapshots.

use std::collections::BTreeSet;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use efr_protocol::ids::TurnId;
use serde::{Deserialize, Serialize};

/// The folder of the saved marks, in the snapshot store's folder.
const MARKS: &str = "maybe_other";

/// What [`save`] writes: `{"version": 1, "paths": [absolute paths]}`.
#[derive(Debug, Serialize, Deserialize)]
struct Marks {
    version: u32,
    paths: BTreeSet<PathBuf>,
}

/// Saves which changes of `turn_id`'s project may be another turn's, for conversation.diff and undo after the turn:
/// `<dir>/maybe_other/<turn_id>.json` (folder 0700, file 0600, written to a temporary file and renamed).
///
/// # Errors
/// The folder or the file cannot be written.
pub fn save(dir: &Path, turn_id: TurnId, paths: &BTreeSet<PathBuf>) -> std::io::Result<()> {
    let folder = dir.join(MARKS);
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&folder)?;
    let marks = Marks {
        version: 1,
        paths: paths.clone(),
    };
    let mut file = tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(&folder)?;
    serde_json::to_writer(&mut file, &marks)?;
    file.as_file().sync_all()?;
    file.persist(folder.join(format!("{turn_id}.json")))
        .map_err(|e| e.error)?;
    Ok(())
}

/// The changes of `turn_id`'s project saved as maybe another turn's; empty when none were saved (a turn that ran
/// alone) or the file cannot be read (then nothing is marked: the diff still shows every change).
#[must_use]
pub fn load(dir: &Path, turn_id: TurnId) -> BTreeSet<PathBuf> {
    let path = dir.join(MARKS).join(format!("{turn_id}.json"));
    std::fs::read(&path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Marks>(&bytes).ok())
        .map(|marks| marks.paths)
        .unwrap_or_default()
}

/// Removes the saved marks of `turn_id`, if any.
pub fn remove(dir: &Path, turn_id: TurnId) {
    let _ = std::fs::remove_file(dir.join(MARKS).join(format!("{turn_id}.json")));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_marks_read_back_and_a_missing_file_marks_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let id = TurnId::new();
        assert!(load(dir.path(), id).is_empty());
        let paths: BTreeSet<PathBuf> = [PathBuf::from("/p/a"), PathBuf::from("/p/b c")].into();
        save(dir.path(), id, &paths).unwrap();
        assert_eq!(load(dir.path(), id), paths);
        let file = dir.path().join(MARKS).join(format!("{id}.json"));
        assert_eq!(std::fs::metadata(file).unwrap().permissions().mode() & 0o777, 0o600);
    }
}
