//! The project registry through the real socket: projects.list, admin.project_add and admin.project_remove, with
//! `projects.toml` in the config root written with toml_edit.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use efr_protocol::ErrorCode;
use serde_json::json;

use common::model;

const COMMENT: &str = "# My projects — efrd keeps this line, größe and all.\n\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_list_and_remove_keep_the_users_comment_byte_for_byte() {
    let home = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let efr = src.path().join("efr");
    std::fs::create_dir_all(efr.join("protocol")).unwrap();
    let server = model(vec![]).await;
    let efrd = common::daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let file = home.path().join("config/projects.toml");

    let empty = client.ok("projects.list", json!({})).await.unwrap();
    assert_eq!(empty, json!({"file": file, "projects": []}));

    std::fs::write(&file, COMMENT).unwrap();
    let added = client
        .ok("admin.project_add", json!({"path": efr, "name": "efr"}))
        .await
        .unwrap();
    let project = json!({"id": "efr", "root": efr, "name": "efr"});
    assert_eq!(added["project"], project);
    assert_eq!(added["file"], json!(file));
    assert_eq!(added["reload"], json!({"applied": true}));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with(COMMENT), "{text}");
    assert!(text.contains(&format!("root = \"{}\"", efr.display())), "{text}");

    let list = client.ok("projects.list", json!(null)).await.unwrap();
    assert_eq!(list["projects"], json!([project]));

    let removed = client.ok("admin.project_remove", json!({"path": efr})).await.unwrap();
    assert_eq!(removed["project"], project);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), COMMENT);
    let list = client.ok("projects.list", json!({})).await.unwrap();
    assert_eq!(list["projects"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_registrations_are_refused_with_the_contracts_codes_and_lose_nothing() {
    let home = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let folder = src.path().join("app");
    std::fs::create_dir_all(&folder).unwrap();
    let a_file = src.path().join("notes.txt");
    std::fs::write(&a_file, "not a folder").unwrap();
    let server = model(vec![]).await;
    let efrd = common::daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let file = home.path().join("config/projects.toml");

    client.ok("admin.project_add", json!({"path": folder})).await.unwrap();
    let before = std::fs::read(&file).unwrap();

    let cases = [
        (
            "admin.project_add",
            json!({"path": a_file}),
            ErrorCode::Invalid,
            "is not a folder",
        ),
        (
            "admin.project_add",
            json!({"path": src.path().join("gone")}),
            ErrorCode::Invalid,
            "does not exist",
        ),
        (
            "admin.project_add",
            json!({"path": "relative/app"}),
            ErrorCode::Invalid,
            "absolute",
        ),
        (
            "admin.project_add",
            json!({"path": folder}),
            ErrorCode::Conflict,
            "registered already",
        ),
        (
            "admin.project_add",
            json!({"path": folder.join(".")}),
            ErrorCode::Conflict,
            "registered already",
        ),
        (
            "admin.project_add",
            json!({"path": folder, "git_root": true}),
            ErrorCode::Invalid,
            "no git repository",
        ),
        (
            "admin.project_remove",
            json!({"path": a_file}),
            ErrorCode::NotFound,
            "no project",
        ),
        ("admin.project_add", json!({}), ErrorCode::Invalid, "path"),
    ];
    for (method, params, code, words) in cases {
        let error = client.call(method, params.clone()).await.unwrap().unwrap_err();
        assert_eq!(error.code, code, "{method} {params}: {error:?}");
        assert!(error.message.contains(words), "{method} {params}: {}", error.message);
    }
    assert_eq!(std::fs::read(&file).unwrap(), before, "nothing was written");

    // A broken file: every call says so, with the line, and the file stays as the user left it.
    let broken = "[[project]]\nid = \"app\"\nroot = [\n";
    std::fs::write(&file, broken).unwrap();
    for (method, params) in [
        ("projects.list", json!({})),
        ("admin.project_add", json!({"path": src.path()})),
        ("admin.project_remove", json!({"path": folder})),
    ] {
        let error = client.call(method, params).await.unwrap().unwrap_err();
        assert_eq!(error.code, ErrorCode::Invalid, "{method}: {error:?}");
        assert!(
            error.data.as_ref().is_some_and(|d| d["line"].is_u64()),
            "{method}: {error:?}"
        );
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), broken);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_root_registers_the_root_of_the_repository() {
    let home = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let repo = src.path().join("repo");
    let deep = repo.join("crates/inner");
    std::fs::create_dir_all(&deep).unwrap();
    let status = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status()
        .expect("git runs (apt package git)");
    assert!(status.success());
    let server = model(vec![]).await;
    let efrd = common::daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();

    let added = client
        .ok("admin.project_add", json!({"path": deep, "git_root": true}))
        .await
        .unwrap();
    assert_eq!(added["project"], json!({"id": "repo", "root": repo}));
    // Without the flag the folder itself is a project of its own (the deeper root wins for its folders).
    let inner = client.ok("admin.project_add", json!({"path": deep})).await.unwrap();
    assert_eq!(inner["project"]["root"], json!(deep));
}
