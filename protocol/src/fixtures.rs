//! The registry of the frozen examples in `protocol/fixtures/v1/`: one JSON file per wire type example.
//!
//! Each [`Example`] knows its path relative to the fixture folder, its canonical text (the typed example value,
//! pretty-printed by serde_json with two spaces, in the struct's key order, with a trailing newline), and how to
//! parse a text back into its type and compare the result with the example value. Fixtures are compared byte for
//! byte in both directions (docs/protocol.md, "Summary"):
//!
//! - serialize → file: [`check`] reports a file whose bytes are not the canonical text;
//! - file → value: [`check`] reports a file that does not parse into its type, or parses to another value.
//!
//! [`bless`] writes every file (`cargo xtask bless`); every change of a fixture also needs a line in the changelog of
//! `docs/protocol.md`. A file in the folder that no example claims is reported too, so nothing stale stays behind.

mod admin;
mod always;
mod context;
mod delete;
mod device;
mod enums;
mod events;
mod exits;
mod home;
mod jobs;
mod methods;
mod presence;
mod projects;
mod resume;
mod routing;
mod sandbox;
mod search;
mod steer;
mod surface;
mod undo;
mod values;
mod watch;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The fixture folder of protocol version 1, relative to the crate (`protocol/`).
pub const FIXTURE_DIR: &str = "fixtures/v1";

type Parse = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// One frozen example: a path, its canonical text, and a check that a text parses back to the example value.
pub struct Example {
    path: &'static str,
    text: Result<String, String>,
    parse: Parse,
}

impl Example {
    /// An example of type `T` at `path` (relative to the fixture folder, `/`-separated, such as
    /// `events/turn_started.json`).
    pub fn new<T>(path: &'static str, value: T) -> Self
    where
        T: Serialize + DeserializeOwned + PartialEq + fmt::Debug + Send + Sync + 'static,
    {
        let text = serde_json::to_string_pretty(&value)
            .map(|mut text| {
                text.push('\n');
                text
            })
            .map_err(|error| error.to_string());
        let parse = Box::new(move |text: &str| {
            let parsed: T = serde_json::from_str(text).map_err(|error| format!("does not parse: {error}"))?;
            if parsed == value {
                Ok(())
            } else {
                Err(format!("parses to\n{parsed:#?}\nnot to the example\n{value:#?}"))
            }
        });
        Self { path, text, parse }
    }

    /// The path relative to the fixture folder.
    #[must_use]
    pub fn path(&self) -> &'static str {
        self.path
    }

    /// The canonical text, or why the example value could not be serialized.
    ///
    /// # Errors
    /// serde_json's message when the value does not serialize.
    pub fn text(&self) -> Result<&str, &str> {
        self.text.as_deref().map_err(String::as_str)
    }

    /// Parses `text` into the example's type and compares it with the example value.
    ///
    /// # Errors
    /// A sentence when the text does not parse, or parses to another value.
    pub fn parse_and_compare(&self, text: &str) -> Result<(), String> {
        (self.parse)(text)
    }
}

impl fmt::Debug for Example {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Example")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Every example, in a stable order.
#[must_use]
pub fn examples() -> Vec<Example> {
    let mut all = methods::examples();
    all.extend(admin::examples());
    all.extend(sandbox::examples());
    all.extend(device::examples());
    all.extend(events::examples());
    all.extend(enums::examples());
    all.extend(exits::examples());
    all.extend(exits::event_examples());
    all.extend(watch::examples());
    all.extend(context::examples());
    all.extend(undo::examples());
    all.extend(surface::examples());
    all.extend(presence::examples());
    all.extend(jobs::examples());
    all.extend(steer::examples());
    all.extend(home::examples());
    all.extend(search::examples());
    all.extend(always::examples());
    all.extend(delete::examples());
    all.extend(resume::examples());
    all.extend(projects::examples());
    all.extend(routing::examples());
    all
}

/// What is wrong with one fixture file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The file does not exist.
    Missing,
    /// The file could not be read.
    Unreadable(String),
    /// The example value does not serialize.
    NotSerializable(String),
    /// The file's bytes are not the canonical text: the first line that differs (from 1) and both versions of it.
    Differs {
        /// The first line that differs, from 1.
        line: usize,
        /// That line of the canonical text (empty past its end).
        expected: String,
        /// That line of the file (empty past its end).
        actual: String,
    },
    /// The file does not parse into its type, or parses to another value.
    Parse(String),
    /// No example claims the file.
    Unregistered,
}

/// One fixture file that does not match its example.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureMismatch {
    /// The file, relative to the fixture folder.
    pub path: PathBuf,
    /// What is wrong.
    pub problem: Problem,
}

impl fmt::Display for FixtureMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.problem {
            Problem::Missing => write!(f, "{path}: missing (run `cargo xtask bless`)"),
            Problem::Unreadable(error) => write!(f, "{path}: cannot be read: {error}"),
            Problem::NotSerializable(error) => write!(f, "{path}: the example does not serialize: {error}"),
            Problem::Differs { line, expected, actual } => write!(
                f,
                "{path}: differs from the example at line {line}:\n  example: {expected}\n  file:    {actual}\n\
                 (run `cargo xtask bless` and add a changelog line to docs/protocol.md)"
            ),
            Problem::Parse(error) => write!(f, "{path}: {error}"),
            Problem::Unregistered => {
                write!(
                    f,
                    "{path}: no example claims this file (register it in protocol/src/fixtures/ or remove it)"
                )
            }
        }
    }
}

/// Writes every example's file under `dir` (creating folders), and removes none. Returns the paths written.
///
/// # Errors
/// The first I/O error, or `InvalidData` when an example value does not serialize.
pub fn bless(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for example in examples() {
        let text = example
            .text()
            .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {error}", example.path())))?;
        let path = dir.join(example.path());
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, text)?;
        written.push(path);
    }
    Ok(written)
}

/// Compares every example with its file under `dir`, both ways, and lists the files that no example claims.
/// An empty list means every fixture is current.
#[must_use]
pub fn check(dir: &Path) -> Vec<FixtureMismatch> {
    let examples = examples();
    let mut mismatches = Vec::new();
    for example in &examples {
        let path = PathBuf::from(example.path());
        let mut report = |problem| {
            mismatches.push(FixtureMismatch {
                path: path.clone(),
                problem,
            });
        };
        let file = match std::fs::read_to_string(dir.join(example.path())) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                report(Problem::Missing);
                continue;
            }
            Err(error) => {
                report(Problem::Unreadable(error.to_string()));
                continue;
            }
        };
        match example.text() {
            Ok(text) if text == file => {}
            Ok(text) => report(first_difference(text, &file)),
            Err(error) => report(Problem::NotSerializable(error.to_owned())),
        }
        if let Err(error) = example.parse_and_compare(&file) {
            report(Problem::Parse(error));
        }
    }
    let mut files = Vec::new();
    if let Err(error) = list_files(dir, Path::new(""), &mut files) {
        mismatches.push(FixtureMismatch {
            path: PathBuf::new(),
            problem: Problem::Unreadable(error.to_string()),
        });
    }
    for file in files {
        if !examples.iter().any(|example| Path::new(example.path()) == file) {
            mismatches.push(FixtureMismatch {
                path: file,
                problem: Problem::Unregistered,
            });
        }
    }
    mismatches
}

fn first_difference(expected: &str, actual: &str) -> Problem {
    let mut expected_lines = expected.split('\n');
    let mut actual_lines = actual.split('\n');
    let mut line = 1;
    loop {
        match (expected_lines.next(), actual_lines.next()) {
            (Some(e), Some(a)) if e == a => line += 1,
            (e, a) => {
                return Problem::Differs {
                    line,
                    expected: e.unwrap_or_default().to_owned(),
                    actual: a.unwrap_or_default().to_owned(),
                };
            }
        }
    }
}

/// Lists the files under `root.join(relative)`, relative to `root`. A missing `root` has no files.
fn list_files(root: &Path, relative: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    let entries = match std::fs::read_dir(root.join(relative)) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound && relative.as_os_str().is_empty() => return Ok(()),
        Err(error) => return Err(error),
    };
    for entry in entries {
        let entry = entry?;
        let path = relative.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            list_files(root, &path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_unique_relative_json_files() {
        let examples = examples();
        let mut paths: Vec<_> = examples.iter().map(Example::path).collect();
        paths.sort_unstable();
        let before = paths.len();
        paths.dedup();
        assert_eq!(paths.len(), before, "two examples share a path");
        for path in paths {
            assert!(
                path.ends_with(".json") && !path.starts_with('/') && !path.contains(".."),
                "{path}"
            );
        }
    }

    #[test]
    fn every_example_serializes_and_parses_back() {
        for example in examples() {
            let text = example.text().unwrap_or_else(|e| panic!("{}: {e}", example.path()));
            assert!(text.ends_with("}\n") || text.ends_with("]\n"), "{}", example.path());
            example
                .parse_and_compare(text)
                .unwrap_or_else(|e| panic!("{}: {e}", example.path()));
        }
    }

    #[test]
    fn first_difference_names_the_line() {
        assert_eq!(
            first_difference("a\nb\nc\n", "a\nx\nc\n"),
            Problem::Differs {
                line: 2,
                expected: "b".into(),
                actual: "x".into()
            }
        );
        assert_eq!(
            first_difference("a\n", "a\nextra"),
            Problem::Differs {
                line: 2,
                expected: String::new(),
                actual: "extra".into()
            }
        );
    }
}
