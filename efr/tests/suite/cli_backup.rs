//! `efr backup PATH [--json]` against the real efrd: a relative PATH is taken from efr's working directory, the copy
//! opens with SQLite and holds the log, an existing PATH is refused with exit 1 and left as it was.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::{daemon, efr_run, model, text, texts};
use efr_protocol::wire::AdminBackupResult;

fn event_count(path: &std::path::Path) -> u64 {
    let conn = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    conn.query_row("SELECT count(*) FROM events", [], |row| row.get(0))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_writes_a_private_copy_and_never_overwrites() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![text("kept in the log")]).await;
    let _efrd = daemon(home.path(), &server, true);
    let work = home.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let turn = efr_run(home.path(), &work, &["remember this"], None).await;
    assert_eq!(turn.status.code(), Some(0), "{:?}", texts(&turn));

    let out = efr_run(home.path(), &work, &["backup", "efr-copy.db"], None).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let copy = work.join("efr-copy.db");
    assert!(
        stdout.contains(&format!("backup written: {}", copy.display())) && stdout.contains("events"),
        "{stdout}"
    );
    assert_eq!(std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777, 0o600);
    let events = event_count(&copy);
    assert!(events >= 4, "the turn's events are in the copy: {events}");

    let before = std::fs::read(&copy).unwrap();
    let again = efr_run(home.path(), &work, &["backup", "efr-copy.db", "--json"], None).await;
    let (stdout, stderr) = texts(&again);
    assert_eq!(again.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("already exists"), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        before,
        "the existing file is left as it was"
    );

    let second = work.join("second.db");
    let json = efr_run(
        home.path(),
        home.path(),
        &["backup", second.to_str().unwrap(), "--json"],
        None,
    )
    .await;
    let (stdout, stderr) = texts(&json);
    assert_eq!(json.status.code(), Some(0), "{stdout}\n{stderr}");
    let result: AdminBackupResult = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(result.path, second);
    assert_eq!(result.events, events, "nothing was committed in between");
    assert_eq!(result.bytes, std::fs::metadata(&second).unwrap().len());
}
