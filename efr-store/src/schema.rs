//! Opening the database and migrating its schema.
//!
//! Migrations are numbered SQL files under `migrations/` (`0001_init.sql`, ...), embedded in the binary with
//! `include_str!`. The version a file holds is `PRAGMA user_version`; every pending migration runs in order inside
//! one `BEGIN IMMEDIATE` transaction that also sets the new version, so an upgrade is all or nothing. A file whose
//! version is above the newest migration was written by a newer efrd and is refused untouched
//! ([`StoreError::NewerSchema`]), since this build cannot know what the newer columns mean.
//!
//! Connection settings (docs/architecture.md, "The event log"): the writer runs in WAL mode (readers never block it nor
//! it them) with `synchronous=FULL` (a commit that returned survives power loss: SQLite syncs the WAL at every commit)
//! and `foreign_keys=ON`. Readers set `query_only` so that a bug cannot write around the writer thread. Every
//! connection waits up to [`BUSY_TIMEOUT`] for a lock instead of failing at once.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::error::{Result, StoreError};

/// One numbered migration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    /// The schema version the migration produces; the migrations count 1, 2, 3, ... with no gap.
    pub(crate) version: i64,
    /// Its file name without `.sql`, for error messages.
    pub(crate) name: &'static str,
    /// The SQL, run as one batch.
    pub(crate) sql: &'static str,
}

/// Every migration, in order.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "0001_init",
        sql: include_str!("migrations/0001_init.sql"),
    },
    Migration {
        version: 2,
        name: "0002_devices",
        sql: include_str!("migrations/0002_devices.sql"),
    },
    Migration {
        version: 3,
        name: "0003_search",
        sql: include_str!("migrations/0003_search.sql"),
    },
    Migration {
        version: 4,
        name: "0004_delete",
        sql: include_str!("migrations/0004_delete.sql"),
    },
    Migration {
        version: 5,
        name: "0005_search_follow",
        sql: include_str!("migrations/0005_search_follow.sql"),
    },
];

/// The schema version this build writes: the version of the newest migration.
pub const SCHEMA_VERSION: i64 = 5;

/// How long a connection waits for a lock before it fails with `SQLITE_BUSY`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The WAL file is truncated to at most this many bytes after a checkpoint, so a burst does not leave it large.
const JOURNAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;

/// Checkpoint after this many WAL pages (16 MiB at 4 KiB pages) rather than SQLite's 1000: a busy log rewrites the
/// same hot index pages, and each checkpoint copies a hot page once however often the WAL holds it.
pub(crate) const WAL_AUTOCHECKPOINT: i64 = 4096;

/// The writer's page cache, in KiB (SQLite's negative form): room for the hot pages of many active conversations.
const WRITER_CACHE_KIB: i64 = 16 * 1024;

/// Each read connection's page cache, in KiB (SQLite's negative form; its default is 2,000 KiB). Reads find their
/// pages in the kernel's page cache at the cost of a copy, so a cache of their own buys little, while four of them
/// filling to the default as the file grows were most of a long-running efrd's growth (docs/operations.md, "A long
/// run").
const READER_CACHE_KIB: i64 = 512;

/// Opens (creating it, mode 0600, when missing) the database at `path` for the writer thread, applies its settings
/// and migrates it to [`SCHEMA_VERSION`].
///
/// # Errors
/// [`StoreError::Open`] (missing folder, no permission, WAL unavailable, a migration failed),
/// [`StoreError::NotADatabase`], [`StoreError::Corrupt`], [`StoreError::NewerSchema`], [`StoreError::DiskFull`].
pub(crate) fn open_writer(path: &Path) -> Result<Connection> {
    create_private(path)?;
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| StoreError::at_open(path, e))?;
    // Refuse a newer file before anything, even the switch to WAL, writes to it.
    let found = user_version(&conn).map_err(|e| StoreError::at_open(path, e))?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    configure_writer(&conn).map_err(|e| StoreError::at_open(path, e))?;
    incremental_vacuum_on(&conn).map_err(|e| StoreError::at_open(path, e))?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .map_err(|e| StoreError::at_open(path, e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Open {
            path: path.to_owned(),
            reason: format!("SQLite cannot use WAL mode there (journal mode stays {mode})"),
        });
    }
    migrate(&mut conn, path, MIGRATIONS)?;
    Ok(conn)
}

/// Opens a read connection to the database that [`open_writer`] already created and migrated.
///
/// # Errors
/// As [`open_writer`], without the migration errors.
pub(crate) fn open_reader(path: &Path) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| StoreError::at_open(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .and_then(|()| conn.pragma_update(None, "query_only", true))
        .and_then(|()| conn.pragma_update(None, "cache_size", -READER_CACHE_KIB))
        .map_err(|e| StoreError::at_open(path, e))?;
    Ok(conn)
}

/// Creates the database file with mode 0600 when it does not exist: the log holds prompts and outputs, and SQLite
/// gives its `-wal` and `-shm` files the mode of the database file.
fn create_private(path: &Path) -> Result<()> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map(drop)
        .map_err(|e| StoreError::Open {
            path: path.to_owned(),
            reason: e.to_string(),
        })
}

/// The writer's per-connection settings (they are not stored in the file).
fn configure_writer(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.pragma_update(None, "journal_size_limit", JOURNAL_SIZE_LIMIT)?;
    conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT)?;
    conn.pragma_update(None, "cache_size", -WRITER_CACHE_KIB)?;
    // What a write frees inside a page (a deleted cell, the old place of a moved one) is overwritten with zeros as
    // the page is written anyway (CPU only, no extra I/O): the bytes of a deleted conversation leave the pages that
    // stay, and the pages freed whole leave with the incremental vacuum (`crate::delete`).
    conn.pragma_update(None, "secure_delete", "FAST")?;
    // The writer reuses a handful of statements thousands of times a second.
    conn.set_prepared_statement_cache_capacity(32);
    Ok(())
}

/// Turns on `auto_vacuum = INCREMENTAL`, so that the pages a delete frees can be given back to the file system
/// (`crate::delete::reclaim`). A new file takes it before its first page is written; a file from before it takes it
/// through one `VACUUM` (a rewrite of the file, once: it needs as much free disk as the file holds).
fn incremental_vacuum_on(conn: &Connection) -> rusqlite::Result<()> {
    /// `PRAGMA auto_vacuum`'s value for INCREMENTAL.
    const INCREMENTAL: i64 = 2;
    let mode: i64 = conn.query_row("PRAGMA auto_vacuum", [], |row| row.get(0))?;
    if mode == INCREMENTAL {
        return Ok(());
    }
    conn.pragma_update(None, "auto_vacuum", INCREMENTAL)?;
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |row| row.get(0))?;
    if pages > 0 {
        tracing::info!(
            pages,
            "event store: rewriting the file once so that deletes can free space"
        );
        conn.execute_batch("VACUUM")?;
    }
    Ok(())
}

/// The schema version stored in the file (0 for a new file).
pub(crate) fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// Applies the migrations of `migrations` above the file's version, all in one transaction.
///
/// # Errors
/// [`StoreError::NewerSchema`] for a file above the newest migration (nothing changed); [`StoreError::Open`] naming
/// the migration that failed (nothing changed: the transaction rolls back); SQLite errors as classified.
pub(crate) fn migrate(conn: &mut Connection, path: &Path, migrations: &[Migration]) -> Result<i64> {
    let supported = migrations.last().map_or(0, |m| m.version);
    let found = user_version(conn).map_err(|e| StoreError::at_open(path, e))?;
    if found > supported {
        return Err(StoreError::NewerSchema { found, supported });
    }
    if found == supported {
        return Ok(found);
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for migration in migrations.iter().filter(|m| m.version > found) {
        tx.execute_batch(migration.sql).map_err(|e| match StoreError::from(e) {
            StoreError::Sqlite(e) => StoreError::Open {
                path: path.to_owned(),
                reason: format!("migration {} failed: {e}", migration.name),
            },
            other => other,
        })?;
    }
    tx.pragma_update(None, "user_version", supported)?;
    tx.commit()?;
    tracing::info!(path = %path.display(), from = found, to = supported, "event store migrated");
    Ok(supported)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_without_gaps() {
        for (i, migration) in MIGRATIONS.iter().enumerate() {
            assert_eq!(migration.version, i64::try_from(i + 1).unwrap(), "{}", migration.name);
            assert!(migration.name.starts_with(&format!("{:04}_", migration.version)));
        }
        assert_eq!(MIGRATIONS.last().unwrap().version, SCHEMA_VERSION);
    }

    #[test]
    fn a_failing_migration_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("efr.db");
        let mut conn = Connection::open(&path).unwrap();
        let broken = [
            Migration {
                version: 1,
                name: "0001_ok",
                sql: "CREATE TABLE a (x INTEGER);",
            },
            Migration {
                version: 2,
                name: "0002_broken",
                sql: "CREATE TABLE b (x INTEGER); INSERT INTO nowhere VALUES (1);",
            },
        ];
        let err = migrate(&mut conn, &path, &broken).unwrap_err();
        let StoreError::Open { reason, .. } = &err else {
            panic!("expected Open, got {err:?}");
        };
        assert!(reason.contains("0002_broken"), "{reason}");
        assert_eq!(user_version(&conn).unwrap(), 0);
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(tables, 0, "the first migration was rolled back too");

        // The good prefix alone applies, and a second run is a no-op.
        assert_eq!(migrate(&mut conn, &path, &broken[..1]).unwrap(), 1);
        assert_eq!(migrate(&mut conn, &path, &broken[..1]).unwrap(), 1);
        assert_eq!(user_version(&conn).unwrap(), 1);
    }
}
