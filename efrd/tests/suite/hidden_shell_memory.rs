//! The hidden shell's memory stays bounded under 50 MiB of output.
//!
//! It measures its RSS alone in a process (`common::alone`), so no other test allocates in the process meanwhile.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::time::Duration;

use efr_test_support::proc::rss_kib;
use efrd::tools::shell::{CLIENT_OUTPUT_CAP, HiddenShell, OutputLimits, ShellKind, ShellOptions};

#[test]
fn fifty_mib_of_output_keep_memory_bounded() {
    common::alone(module_path!(), "fifty_mib_of_output_keep_memory_bounded", || {
        common::runtime().block_on(measure());
    });
}

async fn measure() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = ShellOptions::new(ShellKind::Bash, dir.path().to_owned(), dir.path().to_owned());
    opts.env = vec![
        ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
        ("LANG".into(), "C.UTF-8".into()),
    ];
    let shell = HiddenShell::start(opts).await.unwrap();
    // Warm up: a first run with a full client window, so that the allocations every run makes are in place.
    let warm = shell
        .run("yes warm-up-line | head -c 4000000", Duration::from_secs(60))
        .await
        .unwrap()
        .answer()
        .await;
    assert!(warm.output.is_truncated());
    drop(warm);
    let before = rss_kib(std::process::id()).unwrap();

    let size: u64 = 50 * 1024 * 1024;
    let line = format!("yes 'the quick brown fox jumps' | head -c {size}");
    let answer = shell.run(&line, Duration::from_secs(300)).await.unwrap().answer().await;
    let after = rss_kib(std::process::id()).unwrap();

    assert!(!answer.left_running(), "50 MiB did not pass within 300 s");
    assert_eq!(answer.exit_code, Some(0));
    let out = &answer.output;
    // Every byte was seen and counted ("\r\n" from the terminal is "\n" again in the text).
    assert_eq!(out.total_bytes, size);
    assert_eq!(out.total_lines, size.div_ceil(26));
    let client = out.for_client();
    assert!(
        client.len() <= CLIENT_OUTPUT_CAP + 100,
        "client output is {} bytes",
        client.len()
    );
    let model = out.for_model(OutputLimits::MODEL);
    assert!(model.len() <= 16 * 1024 + 100, "model output is {} bytes", model.len());
    assert!(model.contains(" lines (") && model.contains(" bytes) elided ...]"));
    let grown = after.saturating_sub(before);
    eprintln!("RSS before {before} KiB, after {after} KiB: grew {grown} KiB while 50 MiB passed");
    assert!(
        grown < 8 * 1024,
        "RSS grew by {grown} KiB while 50 MiB passed (before {before} KiB, after {after} KiB)"
    );
    shell.close().await;
}
