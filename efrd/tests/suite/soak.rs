//! The short soak (the long one is `cargo xtask soak`): 5 clients, 300 turns with shell calls, patches and
//! questions against one efrd. Its descriptors stay flat, its log has no gap (each client checks every seq), the
//! database grows by a bounded amount per event, and its RSS after the warm-up grows within a loose bound (a debug
//! build, a short run: the long run holds the 10% budget).

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::time::Duration;

use efr_test_support::soak::{self, SoakPlan};

use crate::common::auto::tempdir;
use crate::common::efrd_binary;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_soak_keeps_descriptors_flat_and_the_log_linear() {
    let home = tempdir();
    let plan = SoakPlan::new(5, 300, Duration::from_secs(300), 50);
    let report = soak::run(efrd_binary(), home.path(), plan).await.unwrap();
    for line in report.lines() {
        eprintln!("soak: {line}");
    }
    assert_eq!(report.turns, plan.turns, "every turn ended within the time limit");
    assert!(
        report.fds.1 <= report.fds.0 + 2,
        "open descriptors stay flat: {:?}",
        report.fds
    );
    assert!(
        (200..4096).contains(&report.bytes_per_event()),
        "the database grows by a bounded amount per event: {} bytes",
        report.bytes_per_event()
    );
    assert!(
        report.rss_growth() < 0.3,
        "RSS after the warm-up: {:?} KiB",
        report.rss_kib
    );
}
