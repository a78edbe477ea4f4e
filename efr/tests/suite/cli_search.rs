//! `efr search` with stdout to a pipe, against the real efrd and a scripted model: the rows with their hit lines,
//! `--json`, `--conversation`, no match, and a query too long.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use common::{daemon, efr_run, model, text, texts};
use efr_protocol::wire::ConversationsSearchResult;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn efr_search_prints_the_rows_and_their_hits_and_json_that_parses() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![text("Die Größe passt jetzt. 🙂")]).await;
    let _efrd = daemon(home.path(), &server, true);
    let out = efr_run(
        home.path(),
        project.path(),
        &["--new", "fix the größe of the 🙂 button"],
        None,
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));

    let out = efr_run(home.path(), project.path(), &["search", "--json", "größe"], None).await;
    let result: ConversationsSearchResult = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result.rows.len(), 1);
    let row = &result.rows[0];
    assert_eq!(
        row.conversation.summary.title.as_deref(),
        Some("fix the größe of the 🙂 button")
    );
    let ranges = row.title_ranges.as_ref().unwrap();
    assert_eq!((ranges[0].start, ranges[0].end), (8, 13));
    let id = row.conversation.summary.conversation_id.to_string();
    assert_eq!(row.short_id, id[..8]);

    let out = efr_run(home.path(), project.path(), &["search", "GRÖ", "passt"], None).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.starts_with(&format!("{}  fix the größe of the 🙂 button  ", &id[..8])),
        "{stdout}"
    );
    assert!(
        stdout.contains("          answer:  Die Größe passt jetzt. 🙂\n"),
        "{stdout}"
    );
    assert!(!stdout.contains('\u{1b}'), "no highlight in a pipe: {stdout}");

    let out = efr_run(
        home.path(),
        project.path(),
        &["search", "--conversation", &id, "größe"],
        None,
    )
    .await;
    let stdout = texts(&out).0;
    assert!(
        stdout.starts_with("fix the größe of the 🙂 button\n          title:"),
        "{stdout}"
    );
    assert!(stdout.contains("answer:"), "{stdout}");

    let out = efr_run(home.path(), project.path(), &["search", "zeppelin"], None).await;
    assert_eq!(texts(&out).0, "no conversation matches\n");

    let long = "x".repeat(10 * 1024);
    let out = efr_run(home.path(), project.path(), &["search", &long], None).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(texts(&out).1.contains("at most 1024"), "{}", texts(&out).1);
}
