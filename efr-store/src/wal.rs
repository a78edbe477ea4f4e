//! The write-ahead log gets its size before it is written: a commit's sync then writes over blocks the file already
//! has, instead of growing it (docs/adr/0034-the-start-overlaps-its-commit.md).
//!
//! On a journaling file system such as ext4, the `fdatasync` of a file that grew also commits the file system's
//! journal (the new size, the new blocks): one more write and device flush per commit. SQLite appends to its WAL until
//! the first checkpoint wraps it, here after [`crate::schema::WAL_AUTOCHECKPOINT`] pages (16 MiB), and the store
//! empties the WAL when it closes and after a delete's reclaim; so the commits of a fresh efrd, the very ones of a
//! user's first prompts after a start, all appended. Measured on this machine's disk (15 pages a sync, p50 of 300):
//! an appending sync 0.29–0.48 ms, one that writes over 0.24–0.28 ms; efrd's first delta, which waits for two syncs,
//! went from 1.38–1.69 ms to 0.89–1.13 ms.
//!
//! The bytes are real zeros: a sparse file (`set_len`) or `fallocate`'s unwritten extents would make each first write
//! into them a change of the file system's metadata again.
//!
//! Why zeros after the last frame are safe: SQLite reads a WAL frame by frame and stops at the first frame whose salt
//! (the WAL header's) or running checksum does not match (sqlite.org/fileformat2.html, "WAL file format"); zeros, or
//! frames of an earlier generation, end the read, as after every checkpoint that restarts the WAL. The size is given
//! only to an empty WAL (right after a `TRUNCATE` checkpoint that completed), which holds no frame at all.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::PathBuf;

use rusqlite::Connection;

/// The frames the WAL is given room for: the autocheckpoint's, and room for the commits of one batch past it (the
/// checkpoint runs after the commit that crossed it).
const FRAMES: u64 = crate::schema::WAL_AUTOCHECKPOINT.unsigned_abs() + 256;

/// Bytes of a WAL frame's header (sqlite.org/fileformat2.html, "WAL file format").
const FRAME_HEADER: u64 = 24;

/// Bytes of the WAL's own header.
const WAL_HEADER: u64 = 32;

/// Zeros written per call.
const CHUNK: usize = 1 << 20;

/// Checkpoints the WAL into the database file and, when that emptied it, gives it room for [`FRAMES`] frames of
/// zeros, synced. Returns the WAL's size after it, in bytes; `None` when it was not given one (a reader held an older
/// snapshot, or the file failed: logged, the WAL then grows as SQLite writes it, slower syncs and nothing else).
pub(crate) fn presize(conn: &Connection) -> Option<u64> {
    let result = (|| -> std::result::Result<Option<u64>, String> {
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(|e| e.to_string())?;
        let page_size: u64 = conn
            .query_row("PRAGMA page_size", [], |row| row.get(0))
            .map_err(|e| e.to_string())?;
        let Some(path) = wal_path(conn) else {
            return Ok(None);
        };
        let mut file = OpenOptions::new().write(true).open(&path).map_err(|e| e.to_string())?;
        if file.metadata().map_err(|e| e.to_string())?.len() != 0 {
            return Ok(None);
        }
        let size = room(page_size);
        let zeros = vec![0_u8; CHUNK];
        let mut left = size;
        while left > 0 {
            let n = usize::try_from(left).unwrap_or(CHUNK).min(CHUNK);
            file.write_all(&zeros[..n]).map_err(|e| e.to_string())?;
            left -= n as u64;
        }
        file.sync_all().map_err(|e| e.to_string())?;
        Ok(Some(size))
    })();
    match result {
        Ok(size) => size,
        Err(error) => {
            tracing::warn!(%error, "event store: the WAL keeps growing as it is written (its room could not be made)");
            None
        }
    }
}

/// The bytes of a WAL with room for [`FRAMES`] frames of `page_size` bytes.
pub(crate) fn room(page_size: u64) -> u64 {
    WAL_HEADER + FRAMES * (FRAME_HEADER + page_size)
}

/// The `-wal` file beside the connection's database; `None` for an in-memory one.
pub(crate) fn wal_path(conn: &Connection) -> Option<PathBuf> {
    let path = conn.path().filter(|p| !p.is_empty())?;
    Some(PathBuf::from(format!("{path}-wal")))
}
