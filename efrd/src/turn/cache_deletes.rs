//! Deletes in real caches (`~/.cache/*`, `~/.cargo/registry`, `~/.npm/_cacache`, ...: the target class `cache`),
//! which apply without a question: what they remove, a tool fetches again by itself. A call whose exits are all
//! such deletes runs with their grants and no judge; efrd measures the targets before and after and records
//! cache_delete_applied with the bytes freed (docs/auto.md, "Cache deletes").

use std::path::{Path, PathBuf};

use efr_protocol::events::{CacheDeleteApplied, EventBody};
use efr_protocol::ids::{CallId, TurnId};
use efr_protocol::wire::{ExitKind, ExitRecord, TargetClass};

use super::sink::Sink;

/// The most entries one measure walks; past it the count stops (the bytes freed are then a lower bound).
const MAX_ENTRIES: u64 = 1_000_000;

/// The cache deletes of one call, measured before it ran.
#[derive(Debug)]
pub struct Measured {
    paths: Vec<PathBuf>,
    before: u64,
}

/// Whether every exit of `records` is a delete whose targets are all real caches (none masked).
#[must_use]
pub fn cache_only(records: &[ExitRecord]) -> bool {
    !records.is_empty()
        && records.iter().all(|record| {
            record.kind == ExitKind::Delete
                && !record.targets.is_empty()
                && record
                    .targets
                    .iter()
                    .all(|target| target.class == TargetClass::Cache && !target.masked)
        })
}

/// Measures the targets of a call whose exits are [`cache_only`]; `None` for any other call.
pub async fn before(records: &[ExitRecord]) -> Option<Measured> {
    if !cache_only(records) {
        return None;
    }
    let mut paths: Vec<PathBuf> = records
        .iter()
        .flat_map(|record| record.targets.iter().map(|target| target.path.clone()))
        .collect();
    paths.dedup();
    let measured = paths.clone();
    let before = tokio::task::spawn_blocking(move || measured.iter().map(|p| bytes(p)).sum())
        .await
        .unwrap_or(0);
    Some(Measured { paths, before })
}

/// After the call: records cache_delete_applied with the bytes it freed. `None` when the sink is gone.
pub async fn after(sink: &Sink, turn_id: TurnId, call_id: &CallId, measured: Measured) -> Option<()> {
    let Measured { paths, before } = measured;
    let again = paths.clone();
    let now: u64 = tokio::task::spawn_blocking(move || again.iter().map(|p| bytes(p)).sum())
        .await
        .unwrap_or(before);
    let event = EventBody::CacheDeleteApplied(CacheDeleteApplied {
        call_id: call_id.clone(),
        paths,
        freed_bytes: before.saturating_sub(now),
    });
    sink.record(turn_id, vec![event]).await.ok()?;
    Some(())
}

/// The bytes of the files at and under `path` (links not followed; at most [`MAX_ENTRIES`] entries); 0 when it is
/// not there.
fn bytes(path: &Path) -> u64 {
    let mut total = 0;
    let mut seen = 0;
    let mut stack = vec![path.to_path_buf()];
    while let Some(next) = stack.pop() {
        seen += 1;
        if seen > MAX_ENTRIES {
            break;
        }
        let Ok(meta) = std::fs::symlink_metadata(&next) else {
            continue;
        };
        if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&next) {
                stack.extend(entries.flatten().map(|entry| entry.path()));
            }
        } else {
            total += meta.len();
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folders_bytes_count_its_files_and_not_a_links_target() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        std::fs::create_dir_all(cache.join("a/b")).unwrap();
        std::fs::write(cache.join("a/one"), vec![0u8; 1000]).unwrap();
        std::fs::write(cache.join("a/b/two"), vec![0u8; 24]).unwrap();
        std::fs::write(dir.path().join("big"), vec![0u8; 100_000]).unwrap();
        std::os::unix::fs::symlink(dir.path().join("big"), cache.join("link")).unwrap();
        let link_len = std::fs::symlink_metadata(cache.join("link")).unwrap().len();
        assert_eq!(bytes(&cache), 1024 + link_len);
        assert_eq!(bytes(&dir.path().join("gone")), 0);
    }
}
