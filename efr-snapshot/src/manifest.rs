//! The manifest format of [`SnapshotStore`](super::SnapshotStore): how a snapshot is written to and read from
//! `<dir>/manifests/<id>.json` (ADR 0014, "Manifest format").
//!
//! # Version 2 (written)
//!
//! ```text
//! {"version":2,"sha256":"<hex of the body>"}\n
//! {"root":..,"taken_at":..,"elapsed_ms":..,..,"parent":"<id>","depth":3,"count":20000,
//!  "files":{"src/a.rs":["file",1100,420,<mtime_ns>,<ctime_ns>,<ino>,"<sha256>",9],..},"removed":["old.rs"]}
//! ```
//!
//! A header line with the SHA-256 of the body, so a damaged manifest is an error rather than a wrong restore, then
//! the body. A *full* manifest (no `parent`, `depth` 0) lists every file; a *delta* names its `parent` (the snapshot
//! it was taken after, stored under that id) and lists only the files added or changed since (`files`) and the paths
//! removed (`removed`), `count` being the files of the whole snapshot; `depth` is its parent's plus one, at most
//! [`MAX_DEPTH`], so reading a snapshot reads at most that many deltas and one full manifest. Each file is an array:
//! kind, size, mode, mtime (ns), ctime (ns), inode, SHA-256 or null, flags (1 kept, 2 binary, 4 ignored, 8 stored).
//!
//! # Version 1 (read)
//!
//! One line of JSON, the whole [`Snapshot`] with `"version": 1` first (efrd before the deltas).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize, Serializer};
use sha2::{Digest, Sha256};

use super::{EntryKind, FileEntry, GitRefs, NotCovered, Snapshot, SnapshotError, Truncated};

/// The manifest format this efrd writes.
pub(crate) const MANIFEST_VERSION: u64 = 2;

/// The format of the manifests before the deltas, still read.
const VERSION_FULL_ONLY: u64 = 1;

/// The most deltas between a snapshot and the full manifest its chain starts from: a save past it writes a full
/// manifest. 32 one-file deltas read in a few milliseconds, and a full one every 32 turns costs 1/32 of a full
/// manifest a turn.
pub(crate) const MAX_DEPTH: u32 = 32;

/// One manifest as read from its file, before its chain is applied.
#[derive(Debug)]
pub(crate) struct Manifest {
    /// The snapshot: with every file (full), or with the files the delta adds or changes.
    pub(crate) snapshot: Snapshot,
    /// A delta's parent id; `None` for a full manifest.
    pub(crate) parent: Option<String>,
    /// Deltas down to the full manifest (0 for a full one).
    pub(crate) depth: u32,
    /// A delta's removed paths.
    pub(crate) removed: Vec<String>,
    /// The files of the whole snapshot.
    pub(crate) count: usize,
}

/// The first line of a version 2 manifest; `parent` and `depth` repeat the body's, so that a removal finds the deltas
/// that name a snapshot without reading whole manifests.
#[derive(Serialize, Deserialize)]
struct Header {
    version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent: Option<String>,
    #[serde(default)]
    depth: u32,
}

/// A file as a JSON array (see the module docs).
#[derive(Serialize, Deserialize)]
struct Compact(EntryKind, u64, u32, i64, i64, u64, Option<String>, u8);

const KEPT: u8 = 1;
const BINARY: u8 = 2;
const IGNORED: u8 = 4;
const STORED: u8 = 8;

impl Compact {
    fn of(entry: &FileEntry) -> Self {
        let flags = [
            (entry.kept, KEPT),
            (entry.binary, BINARY),
            (entry.ignored, IGNORED),
            (entry.stored, STORED),
        ]
        .into_iter()
        .filter(|(set, _)| *set)
        .fold(0, |flags, (_, bit)| flags | bit);
        Self(
            entry.kind,
            entry.size,
            entry.mode,
            entry.mtime_ns,
            entry.ctime_ns,
            entry.ino,
            entry.sha256.clone(),
            flags,
        )
    }

    fn entry(self) -> Result<FileEntry, String> {
        let Self(kind, size, mode, mtime_ns, ctime_ns, ino, sha256, flags) = self;
        if flags & !(KEPT | BINARY | IGNORED | STORED) != 0 {
            return Err(format!("unknown file flags {flags}"));
        }
        Ok(FileEntry {
            kind,
            size,
            mode,
            mtime_ns,
            ctime_ns,
            ino,
            sha256,
            kept: flags & KEPT != 0,
            binary: flags & BINARY != 0,
            ignored: flags & IGNORED != 0,
            stored: flags & STORED != 0,
        })
    }
}

/// Files to write, in path order.
struct FilesOut<'a>(&'a [(&'a str, &'a FileEntry)]);

impl Serialize for FilesOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(path, entry)| (path, Compact::of(entry))))
    }
}

#[derive(Serialize)]
struct BodyOut<'a> {
    root: &'a Path,
    taken_at: &'a DateTime<Utc>,
    elapsed_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    truncated: &'a Option<Truncated>,
    not_kept: u64,
    skipped: u64,
    covered: bool,
    not_covered: &'a BTreeMap<String, NotCovered>,
    #[serde(skip_serializing_if = "Option::is_none")]
    refs: &'a Option<GitRefs>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<&'a str>,
    depth: u32,
    count: usize,
    files: FilesOut<'a>,
    removed: &'a [&'a str],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BodyIn {
    root: PathBuf,
    taken_at: DateTime<Utc>,
    elapsed_ms: u64,
    #[serde(default)]
    truncated: Option<Truncated>,
    not_kept: u64,
    skipped: u64,
    covered: bool,
    not_covered: BTreeMap<String, NotCovered>,
    #[serde(default)]
    refs: Option<GitRefs>,
    #[serde(default)]
    parent: Option<String>,
    depth: u32,
    count: usize,
    files: BTreeMap<String, Compact>,
    removed: Vec<String>,
}

#[derive(Deserialize)]
struct VersionOne {
    #[serde(flatten)]
    snapshot: Snapshot,
}

/// What a manifest to write holds besides its snapshot's header: the files it lists and, for a delta, its parent.
pub(crate) struct Contents<'a> {
    /// The files listed: all (full) or those added or changed (delta), in path order.
    pub(crate) files: Vec<(&'a str, &'a FileEntry)>,
    /// A delta's parent id.
    pub(crate) parent: Option<&'a str>,
    /// A delta's depth (0 for a full manifest).
    pub(crate) depth: u32,
    /// A delta's removed paths.
    pub(crate) removed: Vec<&'a str>,
}

impl<'a> Contents<'a> {
    /// Every file of `snapshot`: a full manifest.
    pub(crate) fn full(snapshot: &'a Snapshot) -> Self {
        Self {
            files: snapshot
                .files
                .iter()
                .map(|(path, entry)| (path.as_str(), entry))
                .collect(),
            parent: None,
            depth: 0,
            removed: Vec::new(),
        }
    }

    /// What `snapshot` changed against `parent`'s files: a delta of `depth` on the snapshot stored as `parent_id`;
    /// `None` when the delta would list more than a quarter of the files (a full manifest is then as cheap).
    pub(crate) fn delta(
        snapshot: &'a Snapshot,
        parent: &'a BTreeMap<String, FileEntry>,
        parent_id: &'a str,
        depth: u32,
    ) -> Option<Self> {
        let bound = snapshot.files.len().max(parent.len()) / 4;
        let mut files = Vec::new();
        let mut removed = Vec::new();
        let mut old = parent.iter().peekable();
        for (path, entry) in &snapshot.files {
            while let Some((gone, _)) = old.next_if(|(old_path, _)| *old_path < path) {
                removed.push(gone.as_str());
            }
            match old.next_if(|(old_path, _)| *old_path == path) {
                Some((_, old_entry)) if old_entry == entry => {}
                _ => files.push((path.as_str(), entry)),
            }
            if files.len() + removed.len() > bound {
                return None;
            }
        }
        removed.extend(old.map(|(gone, _)| gone.as_str()));
        (files.len() + removed.len() <= bound).then_some(Self {
            files,
            parent: Some(parent_id),
            depth,
            removed,
        })
    }
}

/// The bytes of a version 2 manifest of `snapshot` listing `contents`.
pub(crate) fn encode(snapshot: &Snapshot, contents: &Contents<'_>) -> Result<Vec<u8>, serde_json::Error> {
    let body = serde_json::to_vec(&BodyOut {
        root: &snapshot.root,
        taken_at: &snapshot.taken_at,
        elapsed_ms: snapshot.elapsed_ms,
        truncated: &snapshot.truncated,
        not_kept: snapshot.not_kept,
        skipped: snapshot.skipped,
        covered: snapshot.covered,
        not_covered: &snapshot.not_covered,
        refs: &snapshot.refs,
        parent: contents.parent,
        depth: contents.depth,
        count: snapshot.files.len(),
        files: FilesOut(&contents.files),
        removed: &contents.removed,
    })?;
    let mut bytes = serde_json::to_vec(&Header {
        version: MANIFEST_VERSION,
        sha256: Some(format!("{:x}", Sha256::digest(&body))),
        parent: contents.parent.map(str::to_owned),
        depth: contents.depth,
    })?;
    bytes.push(b'\n');
    bytes.extend_from_slice(&body);
    Ok(bytes)
}

/// Reads the manifest `bytes` of the file at `path`.
///
/// # Errors
///
/// [`SnapshotError::Version`] for a format this efrd does not read, [`SnapshotError::Manifest`] for a damaged one
/// (not JSON of the expected shape, a body whose hash differs from its header's).
pub(crate) fn decode(path: &Path, bytes: &[u8]) -> Result<Manifest, SnapshotError> {
    let invalid = |reason: String| SnapshotError::Manifest {
        path: path.to_path_buf(),
        reason,
    };
    let (head, body) = match bytes.iter().position(|byte| *byte == b'\n') {
        Some(end) => (&bytes[..end], &bytes[end + 1..]),
        None => (bytes, &[][..]),
    };
    // A version 1 manifest is one JSON document; one written by hand may span lines.
    let header = serde_json::from_slice::<Header>(head)
        .or_else(|_| serde_json::from_slice::<Header>(bytes))
        .map_err(|error| invalid(error.to_string()))?;
    match header.version {
        VERSION_FULL_ONLY => {
            let snapshot = serde_json::from_slice::<VersionOne>(bytes)
                .map_err(|error| invalid(error.to_string()))?
                .snapshot;
            Ok(Manifest {
                count: snapshot.files.len(),
                snapshot,
                parent: None,
                depth: 0,
                removed: Vec::new(),
            })
        }
        MANIFEST_VERSION => {
            let expected = header
                .sha256
                .ok_or_else(|| invalid("its header has no sha256".to_owned()))?;
            if format!("{:x}", Sha256::digest(body)) != expected {
                return Err(invalid(
                    "its body's SHA-256 differs from its header's: it is damaged".to_owned(),
                ));
            }
            let body: BodyIn = serde_json::from_slice(body).map_err(|error| invalid(error.to_string()))?;
            if body.parent != header.parent || body.depth != header.depth {
                return Err(invalid("its header's parent differs from its body's".to_owned()));
            }
            if body.parent.is_some() != (body.depth > 0) || body.depth > MAX_DEPTH {
                return Err(invalid(format!("its depth {} does not fit its parent", body.depth)));
            }
            let files = body
                .files
                .into_iter()
                .map(|(path, compact)| Ok((path, compact.entry()?)))
                .collect::<Result<BTreeMap<_, _>, String>>()
                .map_err(invalid)?;
            Ok(Manifest {
                snapshot: Snapshot {
                    root: body.root,
                    taken_at: body.taken_at,
                    elapsed_ms: body.elapsed_ms,
                    files,
                    truncated: body.truncated,
                    not_kept: body.not_kept,
                    skipped: body.skipped,
                    covered: body.covered,
                    not_covered: body.not_covered,
                    refs: body.refs,
                    blobs: super::Blobs::default(),
                },
                parent: body.parent,
                depth: body.depth,
                removed: body.removed,
                count: body.count,
            })
        }
        found => Err(SnapshotError::Version {
            path: path.to_path_buf(),
            found,
        }),
    }
}

/// The parent named by the first line `head` of the manifest at `path` (`None` for a full manifest, version 1
/// included).
///
/// # Errors
///
/// [`SnapshotError::Manifest`] when `head` is not a manifest's header.
pub(crate) fn parent_in_header(path: &Path, head: &[u8]) -> Result<Option<String>, SnapshotError> {
    match serde_json::from_slice::<Header>(head) {
        Ok(header) => Ok(header.parent),
        // A version 1 manifest (one line, the whole snapshot) has none; read it whole to be sure it is one.
        Err(_) => std::fs::read(path)
            .map_err(|error| SnapshotError::io(path, error))
            .and_then(|bytes| decode(path, &bytes))
            .map(|manifest| manifest.parent),
    }
}

/// Applies the deltas of a chain to its full manifest: `chain` is the snapshot asked for first, each manifest's
/// parent after it, the full manifest last. Returns the snapshot asked for, with every file.
///
/// # Errors
///
/// [`SnapshotError::Manifest`] (naming the delta at `path_of` its id) when a delta does not fit its parent: a
/// removed path its parent lacks, or a file count other than the one it records.
pub(crate) fn apply_chain(
    mut chain: Vec<(String, Manifest)>,
    path_of: impl Fn(&str) -> PathBuf,
) -> Result<Snapshot, SnapshotError> {
    let Some((base_id, base)) = chain.pop() else {
        unreachable!("a chain has its full manifest");
    };
    let mut base_snapshot = base.snapshot;
    let mut files = std::mem::take(&mut base_snapshot.files);
    if files.len() != base.count {
        return Err(SnapshotError::Manifest {
            path: path_of(&base_id),
            reason: format!("it records {} files and lists {}", base.count, files.len()),
        });
    }
    let mut top = None;
    while let Some((id, delta)) = chain.pop() {
        let invalid = |reason: String| SnapshotError::Manifest {
            path: path_of(&id),
            reason,
        };
        for path in &delta.removed {
            if files.remove(path).is_none() {
                return Err(invalid(format!("it removes {path:?}, which its parent does not have")));
            }
        }
        let mut snapshot = delta.snapshot;
        // One insert each (not `append`, which rebuilds the whole map): a delta lists few files.
        for (path, entry) in std::mem::take(&mut snapshot.files) {
            files.insert(path, entry);
        }
        if files.len() != delta.count {
            return Err(invalid(format!(
                "it records {} files, its parent and its changes make {}",
                delta.count,
                files.len()
            )));
        }
        top = Some(snapshot);
    }
    let mut snapshot = top.unwrap_or(base_snapshot);
    snapshot.files = files;
    Ok(snapshot)
}
