//! One call's plan: its rules (deny first, then allow) and the tally of what its connections did.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use efr_protocol::internal::host::HostPattern;
use efr_protocol::internal::proxy::{Closed, OpenPlan, decide};
use efr_protocol::wire::{BlockReason, Blocked, SandboxSummary};

/// Distinct (host, port, reason) entries a tally keeps; refusals past them only count in `blocked_more`. Bounds a
/// plan's memory whatever a call tries.
pub const MAX_TALLY_ENTRIES: usize = 1024;

/// The longest host kept in the tally, in bytes (a DNS name is at most 253); a longer one is cut.
const MAX_TALLY_HOST: usize = 255;

/// The rules of one plan.
#[derive(Debug, Clone)]
pub struct Rules {
    allow: Vec<HostPattern>,
    deny: Vec<HostPattern>,
}

impl Rules {
    /// The rules of `plan`.
    #[must_use]
    pub fn new(plan: &OpenPlan) -> Self {
        Self {
            allow: plan.allow.clone(),
            deny: plan.deny.clone(),
        }
    }

    /// Whether a host (normal form) may be reached on `port`: the deny list first (`denied`), then the allow list
    /// (`not_allowed` when no entry matches).
    ///
    /// # Errors
    /// The reason of the refusal.
    pub fn check(&self, host: &str, port: u16) -> Result<(), BlockReason> {
        decide(&self.allow, &self.deny, host, port).refusal()
    }
}

/// What one plan's connections did, shared by its tunnels.
#[derive(Debug, Default)]
pub struct Tally {
    refusals: Mutex<Refusals>,
    tunnels: AtomicU64,
    sent: AtomicU64,
    received: AtomicU64,
}

#[derive(Debug, Default)]
struct Refusals {
    counts: HashMap<(String, u16, BlockReason), u64>,
    overflow: u64,
}

impl Tally {
    /// Counts one refusal.
    pub fn refuse(&self, host: &str, port: u16, reason: BlockReason) {
        let mut host = host.to_owned();
        if host.len() > MAX_TALLY_HOST {
            let mut cut = MAX_TALLY_HOST;
            while !host.is_char_boundary(cut) {
                cut -= 1;
            }
            host.truncate(cut);
        }
        let mut refusals = self.refusals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let full = refusals.counts.len() >= MAX_TALLY_ENTRIES;
        let key = (host, port, reason);
        match refusals.counts.get_mut(&key) {
            Some(count) => *count += 1,
            None if full => refusals.overflow += 1,
            None => {
                refusals.counts.insert(key, 1);
            }
        }
    }

    /// Counts one tunnel opened to a host.
    pub fn tunnel(&self) {
        self.tunnels.fetch_add(1, Ordering::Relaxed);
    }

    /// The counter of bytes from the call to the hosts.
    #[must_use]
    pub fn sent(&self) -> &AtomicU64 {
        &self.sent
    }

    /// The counter of bytes from the hosts to the call.
    #[must_use]
    pub fn received(&self) -> &AtomicU64 {
        &self.received
    }

    /// The summary: refusals most frequent first (then by host, port and reason, so the order is stable), at most
    /// [`SandboxSummary::MAX_BLOCKED`], the rest counted in `blocked_more`.
    #[must_use]
    pub fn closed(&self) -> Closed {
        let refusals = self.refusals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut blocked: Vec<Blocked> = refusals
            .counts
            .iter()
            .map(|((host, port, reason), count)| Blocked {
                host: host.clone(),
                port: *port,
                reason: *reason,
                count: *count,
            })
            .collect();
        blocked.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| a.host.cmp(&b.host))
                .then_with(|| a.port.cmp(&b.port))
                .then_with(|| a.reason.as_str().cmp(b.reason.as_str()))
        });
        let left_out: u64 = blocked.iter().skip(SandboxSummary::MAX_BLOCKED).map(|b| b.count).sum();
        blocked.truncate(SandboxSummary::MAX_BLOCKED);
        Closed {
            blocked,
            blocked_more: left_out + refusals.overflow,
            tunnels: self.tunnels.load(Ordering::Relaxed),
            bytes_sent: self.sent.load(Ordering::Relaxed),
            bytes_received: self.received.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: &[&str], deny: &[&str]) -> Rules {
        Rules::new(&OpenPlan {
            call: "c".into(),
            allow: allow.iter().map(|p| p.parse().unwrap()).collect(),
            deny: deny.iter().map(|p| p.parse().unwrap()).collect(),
        })
    }

    #[test]
    fn deny_wins_then_allow_decides() {
        let rules = rules(&["**.example.com", "pypi.org:8443"], &["secret.example.com"]);
        assert_eq!(rules.check("a.example.com", 443), Ok(()));
        assert_eq!(rules.check("example.com", 443), Ok(()));
        assert_eq!(rules.check("secret.example.com", 443), Err(BlockReason::Denied));
        assert_eq!(rules.check("pypi.org", 443), Err(BlockReason::NotAllowed));
        assert_eq!(rules.check("pypi.org", 8443), Ok(()));
        // Deny `*` with an allow entry: deny wins for every host.
        let rules = self::rules(&["allowed.example"], &["*"]);
        assert_eq!(rules.check("allowed.example", 443), Err(BlockReason::Denied));
        // A deny entry without a port is every port; one with a port is that port only.
        let rules = self::rules(&["*:22", "*:8443"], &["*"]);
        assert_eq!(rules.check("allowed.example", 22), Err(BlockReason::Denied));
        assert_eq!(rules.check("allowed.example", 8443), Err(BlockReason::Denied));
        let rules = self::rules(&["*:22", "*:8443"], &["secret.example", "other.example:8443"]);
        assert_eq!(rules.check("secret.example", 22), Err(BlockReason::Denied));
        assert_eq!(rules.check("other.example", 8443), Err(BlockReason::Denied));
        assert_eq!(rules.check("other.example", 22), Ok(()));
    }

    #[test]
    fn the_tally_keeps_the_most_frequent_and_counts_the_rest() {
        let tally = Tally::default();
        for n in 0..40_u16 {
            for _ in 0..=n {
                tally.refuse(&format!("h{n}.example"), 443, BlockReason::NotAllowed);
            }
        }
        let closed = tally.closed();
        assert_eq!(closed.blocked.len(), SandboxSummary::MAX_BLOCKED);
        assert_eq!(closed.blocked[0].host, "h39.example");
        assert_eq!(closed.blocked[0].count, 40);
        // The 8 least frequent (1 + 2 + ... + 8 refusals) are left out.
        assert_eq!(closed.blocked_more, 36);
    }

    #[test]
    fn the_tally_is_bounded() {
        let tally = Tally::default();
        for n in 0..(MAX_TALLY_ENTRIES + 10) {
            tally.refuse(&format!("h{n}.example"), 443, BlockReason::Denied);
        }
        tally.refuse(&"x".repeat(1000), 443, BlockReason::Denied);
        let closed = tally.closed();
        assert_eq!(closed.blocked.len(), SandboxSummary::MAX_BLOCKED);
        assert_eq!(
            closed.blocked_more,
            (MAX_TALLY_ENTRIES + 11 - SandboxSummary::MAX_BLOCKED) as u64
        );
    }
}
