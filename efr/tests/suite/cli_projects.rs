//! `efr projects`, `efr projects add` and `efr projects remove` against the real efrd: a relative path taken from the
//! working directory, the readable list and its `--json`, and the refusals with exit 1.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use common::{daemon, efr_run, model, texts};
use efr_protocol::wire::ProjectsListResult;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_list_and_remove_from_the_command_line() {
    let home = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(src.path().join("app")).unwrap();
    std::fs::write(src.path().join("notes.txt"), "x").unwrap();
    let server = model(vec![]).await;
    let _efrd = daemon(home.path(), &server, false);
    let app = src.path().join("app").canonicalize().unwrap();

    let empty = efr_run(home.path(), src.path(), &["projects"], None).await;
    assert_eq!(empty.status.code(), Some(0));
    assert!(
        texts(&empty).0.contains("no project is registered"),
        "{}",
        texts(&empty).0
    );

    let added = efr_run(
        home.path(),
        src.path(),
        &["projects", "add", "app", "--name", "The App"],
        None,
    )
    .await;
    let (stdout, stderr) = texts(&added);
    assert_eq!(added.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("added the project the-app"), "{stdout}");
    assert!(stdout.contains(&app.display().to_string()), "{stdout}");

    let list = efr_run(home.path(), src.path(), &["projects", "--json"], None).await;
    let list: ProjectsListResult = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(list.projects.len(), 1);
    assert_eq!(list.projects[0].root, app);
    assert_eq!(list.file, home.path().join("config/projects.toml"));
    let readable = efr_run(home.path(), src.path(), &["projects", "list"], None).await;
    assert!(
        texts(&readable).0.contains("the-app  The App"),
        "{}",
        texts(&readable).0
    );

    for (args, words) in [
        (&["projects", "add", "app"][..], "registered already"),
        (&["projects", "add", "notes.txt"], "is not a folder"),
        (&["projects", "remove", "elsewhere"], "no project"),
    ] {
        let out = efr_run(home.path(), src.path(), args, None).await;
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stdout}\n{stderr}");
        assert!(stderr.contains(words), "{args:?}: {stderr}");
    }

    let removed = efr_run(home.path(), src.path(), &["projects", "remove", "app"], None).await;
    assert_eq!(removed.status.code(), Some(0), "{}", texts(&removed).1);
    let list = efr_run(home.path(), src.path(), &["projects", "--json"], None).await;
    let list: ProjectsListResult = serde_json::from_slice(&list.stdout).unwrap();
    assert!(list.projects.is_empty());
}
