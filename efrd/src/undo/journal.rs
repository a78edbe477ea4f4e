//! The journal of undos: per turn, the last undo or redo and its state (`<dir>/<turn_id>.json`), and per undo, the
//! paths done so far (`<dir>/<undo_id>.log`, a line each, synced as it is written), so that an undo killed midway is
//! known after a restart, with what it did.

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::plan::Action;

/// Where an undo or redo got to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// It runs, or efrd ended while it ran (then it is reported as stopped, and the next undo resumes it).
    Running,
    /// Every write was done.
    Done,
    /// A write failed; the next undo or redo of the turn resumes from the tree as it is.
    Stopped,
}

/// The last undo or redo of a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The undo's id.
    pub undo_id: String,
    /// A redo (re-applies the turn) rather than an undo.
    pub redo: bool,
    /// Where it got to.
    pub state: State,
    /// When it started.
    pub at: DateTime<Utc>,
    /// The paths it wrote, with what it did (filled from the log).
    #[serde(default)]
    pub done: Vec<String>,
}

impl Record {
    /// Whether the turn's changes are undone now (an undo finished, or one stopped or killed midway, which is
    /// partly done).
    #[must_use]
    pub fn undone(&self) -> bool {
        !self.redo || self.state != State::Done
    }
}

/// An undo being written.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    turn: String,
    record: Record,
    log: File,
}

impl Journal {
    /// Records that an undo (or redo) of `turn` starts.
    ///
    /// # Errors
    /// The folder or the files cannot be written: nothing was changed then.
    pub fn begin(dir: &Path, turn: &str, undo_id: &str, redo: bool) -> std::io::Result<Self> {
        fs::create_dir_all(dir)?;
        let record = Record {
            undo_id: undo_id.to_owned(),
            redo,
            state: State::Running,
            at: Utc::now(),
            done: Vec::new(),
        };
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(format!("{undo_id}.log")))?;
        let journal = Self {
            dir: dir.to_path_buf(),
            turn: turn.to_owned(),
            record,
            log,
        };
        journal.write()?;
        Ok(journal)
    }

    /// Records that `path` was written (`action`).
    ///
    /// # Errors
    /// The log cannot be written: the undo stops there.
    pub fn done(&mut self, path: &str, action: Action) -> std::io::Result<()> {
        writeln!(self.log, "{action:?} {path}")?;
        self.log.sync_data()
    }

    /// Records where the undo ended.
    ///
    /// # Errors
    /// The record cannot be written.
    pub fn finish(mut self, state: State) -> std::io::Result<Record> {
        self.record.state = state;
        self.write()?;
        Ok(read(&self.dir, &self.turn).unwrap_or(self.record))
    }

    fn write(&self) -> std::io::Result<()> {
        let json = serde_json::to_vec(&self.record).map_err(std::io::Error::other)?;
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
        file.write_all(&json)?;
        file.as_file().sync_all()?;
        file.persist(self.dir.join(format!("{}.json", self.turn)))
            .map(drop)
            .map_err(|error| error.error)
    }
}

/// The last undo or redo of `turn`, with the paths it did; `None` when the turn was never undone.
#[must_use]
pub fn read(dir: &Path, turn: &str) -> Option<Record> {
    let bytes = fs::read(dir.join(format!("{turn}.json"))).ok()?;
    let mut record: Record = serde_json::from_slice(&bytes).ok()?;
    record.done = fs::read_to_string(dir.join(format!("{}.log", record.undo_id)))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    Some(record)
}
