//! What a closed proxy plan tells: the call's `sandbox` summary (`proxied`, `blocked` with counts, at most
//! [`SandboxSummary::MAX_BLOCKED`], and `blocked_more`) and the one line the model gets about what was refused and
//! why, such as `[network: refused github.com:443 denied ×3; 1 more]`.

use efr_protocol::internal::proxy::Closed;
use efr_protocol::wire::{BlockReason, SandboxSummary};

/// Fills `summary` from a closed plan: `proxied`, and the refusals (the proxy sends at most
/// [`SandboxSummary::MAX_BLOCKED`]; any beyond are counted into `blocked_more` here too).
pub fn fill_summary(summary: &mut SandboxSummary, closed: &Closed) {
    summary.proxied = true;
    let mut blocked = closed.blocked.clone();
    let mut more = closed.blocked_more;
    if blocked.len() > SandboxSummary::MAX_BLOCKED {
        more += blocked
            .split_off(SandboxSummary::MAX_BLOCKED)
            .iter()
            .map(|b| b.count)
            .sum::<u64>();
    }
    summary.blocked = blocked;
    summary.blocked_more = more;
}

/// The most refusals the model's line names; the rest are counted as "N more".
const LINE_ENTRIES: usize = 5;

/// The line for the model about a plan's refusals; `None` when the proxy refused nothing.
#[must_use]
pub fn model_line(summary: &SandboxSummary) -> Option<String> {
    if summary.blocked.is_empty() && summary.blocked_more == 0 {
        return None;
    }
    let named: Vec<String> = summary
        .blocked
        .iter()
        .take(LINE_ENTRIES)
        .map(|b| {
            let count = if b.count > 1 {
                format!(" ×{}", b.count)
            } else {
                String::new()
            };
            format!("{}:{} {}{count}", b.host, b.port, b.reason.as_str())
        })
        .collect();
    let more = summary.blocked.iter().skip(LINE_ENTRIES).map(|b| b.count).sum::<u64>() + summary.blocked_more;
    let mut reasons: Vec<BlockReason> = summary.blocked.iter().take(LINE_ENTRIES).map(|b| b.reason).collect();
    reasons.sort_by_key(|r| r.as_str());
    reasons.dedup();
    let why: Vec<&str> = reasons.iter().map(|r| meaning(*r)).collect();
    let mut line = format!("[network: refused {}", named.join(", "));
    if more > 0 {
        line.push_str(&format!("; {more} more"));
    }
    if !why.is_empty() {
        line.push_str(&format!(" ({})", why.join("; ")));
    }
    line.push(']');
    Some(line)
}

/// What a reason means, for the model: what the call can and cannot do about it.
fn meaning(reason: BlockReason) -> &'static str {
    match reason {
        BlockReason::Denied => "denied: on efr's deny list or a host the user holds credentials for; never reachable",
        BlockReason::NotAllowed => "not_allowed: not on the user's [network] allow list",
        BlockReason::IpLiteral => "ip_literal: addresses are refused, use a host name",
        BlockReason::NotTls => "not_tls: only HTTPS (TLS with a matching SNI) passes",
        BlockReason::BadRequest => "bad_request: the proxy request did not parse",
        BlockReason::Limit => "limit: the proxy request was too large or too slow",
        BlockReason::Unknown => "unknown: a reason this efrd does not know",
    }
}

#[cfg(test)]
mod tests {
    use efr_protocol::wire::Blocked;

    use super::*;

    fn blocked(host: &str, reason: BlockReason, count: u64) -> Blocked {
        Blocked {
            host: host.into(),
            port: 443,
            reason,
            count,
        }
    }

    #[test]
    fn the_summary_keeps_32_and_counts_the_rest() {
        let closed = Closed {
            blocked: (0..40)
                .map(|i| blocked(&format!("h{i}.example"), BlockReason::NotAllowed, 2))
                .collect(),
            blocked_more: 3,
            ..Closed::default()
        };
        let mut summary = SandboxSummary::default();
        fill_summary(&mut summary, &closed);
        assert!(summary.proxied);
        assert_eq!(summary.blocked.len(), 32);
        assert_eq!(summary.blocked_more, 3 + 8 * 2);
    }

    #[test]
    fn the_model_line_names_the_refusals_and_why() {
        let mut summary = SandboxSummary {
            proxied: true,
            ..SandboxSummary::default()
        };
        assert_eq!(model_line(&summary), None, "nothing refused, nothing said");
        summary.blocked = vec![blocked("github.com", BlockReason::Denied, 3)];
        summary.blocked_more = 1;
        assert_eq!(
            model_line(&summary).unwrap(),
            "[network: refused github.com:443 denied ×3; 1 more (denied: on efr's deny list or a host the user holds \
             credentials for; never reachable)]"
        );
        summary.blocked = (0..7)
            .map(|i| blocked(&format!("h{i}.example"), BlockReason::NotAllowed, 1))
            .collect();
        summary.blocked_more = 0;
        let line = model_line(&summary).unwrap();
        assert!(
            line.starts_with("[network: refused h0.example:443 not_allowed, h1.example:443 not_allowed"),
            "{line}"
        );
        assert!(
            line.contains("; 2 more (not_allowed: not on the user's [network] allow list)]"),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }
}
