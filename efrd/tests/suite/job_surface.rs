//! The surface check of a contained job at its end: what it wrote that code outside the sandbox runs from is in
//! job_ended (`surface_changes`), and an executable one has lost its executable bits (`quarantined`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::os::unix::fs::PermissionsExt as _;

use serde_json::json;

use crate::common;
use common::auto::{bounded, tempdir};
use common::tools::{shell_call_with, start, text};
use common::{daemon, events_through, git, model};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contained_jobs_hook_is_reported_at_its_end_and_left_not_executable() {
    let home = tempdir();
    let project = tempdir();
    let root = project.path();
    git(root, &["init", "-q"]);
    // Git takes hooks from .githooks (the sandbox keeps .git/hooks read-only; this folder it may write).
    git(root, &["config", "core.hooksPath", ".githooks"]);
    let line = "sleep 1; mkdir -p .githooks && printf '#!/bin/sh\\nexit 0\\n' > .githooks/pre-commit && \
                chmod 755 .githooks/pre-commit && echo 'fn main() {}' > main.rs";
    let server = model(vec![
        shell_call_with("call_job", &json!({"command": line, "background": true})),
        text("it runs"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, _, id) = start(&mut client, root, "auto", "write a hook in the background").await;
    let events = bounded("the job's end", events_through(&mut client, id, "job_ended")).await;
    let ended = events.last().unwrap();
    assert_eq!(ended["state"], "exited", "{ended}");
    assert_eq!(
        ended["surface_changes"],
        json!([{"path": ".githooks/pre-commit", "surface": "git_hook", "change": "added", "runs_code": true}]),
        "only the hook, not main.rs: {ended}"
    );
    assert_eq!(ended["quarantined"], json!([".githooks/pre-commit"]), "{ended}");
    let mode = std::fs::metadata(root.join(".githooks/pre-commit"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0, "the hook is not executable: {mode:o}");
}
