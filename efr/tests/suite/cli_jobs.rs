//! `efr jobs`, `efr jobs logs` and `efr jobs stop` against a real efrd with a job the scripted model started.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use common::{daemon, efr_run, model, text, texts};
use efr_test_support::scripted::Reply;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn efr_jobs_lists_prints_the_output_of_and_stops_a_job() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let line = "echo first line; echo second line; sleep 600";
    let job = Reply::shell_with("call_job", &serde_json::json!({"command": line, "background": true}));
    let server = model(vec![job, text("it runs")]).await;
    let _efrd = daemon(home.path(), &server, true);
    let out = efr_run(
        home.path(),
        project.path(),
        &["--new", "--mode", "full", "serve it"],
        None,
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("job j1 started: "),
        "the transcript shows the job: {stdout}"
    );

    let out = efr_run(home.path(), project.path(), &["jobs"], None).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("ID  STATE"), "{stdout}");
    let row = stdout.lines().nth(1).unwrap();
    assert!(row.starts_with("j1  running") && row.ends_with(line), "{row}");

    let out = efr_run(home.path(), project.path(), &["status"], None).await;
    assert!(
        texts(&out).0.contains("jobs: 1 running (efr jobs)"),
        "{:?}",
        texts(&out)
    );

    let out = efr_run(home.path(), project.path(), &["jobs", "logs", "j1"], None).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout, "first line\nsecond line\n");

    let out = efr_run(home.path(), project.path(), &["jobs", "stop", "j1"], None).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        (out.status.code(), stdout.as_str()),
        (Some(0), "j1 stopped\n"),
        "{stderr}"
    );
    let out = efr_run(home.path(), project.path(), &["jobs", "stop", "j9"], None).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("no job j9"), "{stderr}");
    let out = efr_run(home.path(), project.path(), &["jobs", "logs", "job1"], None).await;
    assert_eq!(out.status.code(), Some(1), "{:?}", texts(&out));
}
