//! 200 parallel connections over 10 plans: every one served, and afterwards the proxy holds no more descriptors
//! than when idle and its memory stays bounded.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::time::Duration;

use super::allowed::fetch;
use super::harness::{Proxy, World};

const PLANS: usize = 10;
const PER_PLAN: usize = 20;

/// RSS the proxy may reach after the load, in KiB: generous for two worker threads and 200 finished tunnels, far
/// below what a leak of buffers per connection would show.
const MAX_RSS_KIB: u64 = 64 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_parallel_connections_leak_nothing() {
    let world = World::new();
    let mut proxy = Proxy::start(&world.netns);
    // Idle: serving (its runtime up), one plan opened and closed.
    let warm = proxy.open(&[], &[]);
    proxy.close(warm.plan);
    let idle = proxy.fd_count();
    let plans: Vec<_> = (0..PLANS).map(|_| proxy.open(&["allowed.test"], &[])).collect();
    let config = world.client_config();
    let mut tasks = tokio::task::JoinSet::new();
    for plan in &plans {
        for _ in 0..PER_PLAN {
            let socket = plan.socket.clone();
            let config = config.clone();
            tasks.spawn(async move { fetch(&socket, "allowed.test", config).await });
        }
    }
    let results = tokio::time::timeout(Duration::from_secs(120), tasks.join_all())
        .await
        .expect("200 requests within 2 minutes");
    for result in results {
        let response = result.unwrap();
        assert!(response.ends_with("hello from allowed.test\n"), "{response}");
    }
    assert_eq!(world.server.requests(), (PLANS * PER_PLAN) as u64);
    for plan in &plans {
        let closed = proxy.close(plan.plan);
        assert_eq!(closed.tunnels, PER_PLAN as u64);
        assert!(closed.blocked.is_empty());
    }
    assert_eq!(
        proxy.fd_count(),
        idle,
        "descriptors after every plan closed: {:?}",
        proxy.fds()
    );
    let rss = proxy.rss_kib();
    assert!(rss < MAX_RSS_KIB, "efr-proxy's RSS after the load: {rss} KiB");
}
