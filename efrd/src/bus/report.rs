//! What a closed bus plan tells: the call's `sandbox` summary (`bus_refused` with counts, at most
//! [`SandboxSummary::MAX_BUS_REFUSED`], and `bus_refused_more`) and the one line the model gets about what the bus
//! filter refused, such as `[bus: refused org.example.Secret GetSecret ×3; 1 more (...)]`.

use efr_protocol::internal::bus_proxy::ClosedBus;
use efr_protocol::wire::SandboxSummary;

/// Fills `summary` from a closed bus plan (the proxy sends at most [`SandboxSummary::MAX_BUS_REFUSED`]; any beyond
/// are counted into `bus_refused_more` here too).
pub fn fill_summary(summary: &mut SandboxSummary, closed: &ClosedBus) {
    let mut refused = closed.bus_refused.clone();
    let mut more = closed.bus_refused_more;
    if refused.len() > SandboxSummary::MAX_BUS_REFUSED {
        more += refused
            .split_off(SandboxSummary::MAX_BUS_REFUSED)
            .iter()
            .map(|r| r.count)
            .sum::<u64>();
    }
    summary.bus_refused = refused;
    summary.bus_refused_more = more;
}

/// The most refusals the model's line names; the rest are counted as "N more".
const LINE_ENTRIES: usize = 5;

/// The line for the model about a plan's refusals; `None` when the filter refused nothing.
#[must_use]
pub fn model_line(summary: &SandboxSummary) -> Option<String> {
    if summary.bus_refused.is_empty() && summary.bus_refused_more == 0 {
        return None;
    }
    let named: Vec<String> = summary
        .bus_refused
        .iter()
        .take(LINE_ENTRIES)
        .map(|r| {
            let count = if r.count > 1 {
                format!(" ×{}", r.count)
            } else {
                String::new()
            };
            match &r.member {
                Some(member) => format!("{} {member}{count}", r.name),
                None => format!("{}{count}", r.name),
            }
        })
        .collect();
    let more = summary
        .bus_refused
        .iter()
        .skip(LINE_ENTRIES)
        .map(|r| r.count)
        .sum::<u64>()
        + summary.bus_refused_more;
    let mut line = format!("[bus: refused {}", named.join(", "));
    if more > 0 {
        line.push_str(&format!("; {more} more"));
    }
    line.push_str(
        " (efr's D-Bus filter lets contained calls talk to the notification daemon, the desktop portals and the \
         names of the user's [bus] config only)]",
    );
    Some(line)
}

#[cfg(test)]
mod tests {
    use efr_protocol::wire::{Bus, BusRefusal};

    use super::*;

    fn refusal(name: &str, count: u64) -> BusRefusal {
        BusRefusal {
            bus: Bus::Session,
            name: name.into(),
            member: Some("Get".into()),
            path: Some("/".into()),
            count,
        }
    }

    #[test]
    fn the_summary_keeps_16_and_counts_the_rest() {
        let closed = ClosedBus {
            bus_refused: (0..20).map(|i| refusal(&format!("org.example.N{i}"), 2)).collect(),
            bus_refused_more: 3,
            connections: 1,
        };
        let mut summary = SandboxSummary::default();
        fill_summary(&mut summary, &closed);
        assert_eq!(summary.bus_refused.len(), 16);
        assert_eq!(summary.bus_refused_more, 3 + 4 * 2);
    }

    #[test]
    fn the_model_line_names_the_refusals() {
        let mut summary = SandboxSummary::default();
        assert_eq!(model_line(&summary), None, "nothing refused, nothing said");
        summary.bus_refused = vec![refusal("org.freedesktop.secrets", 3)];
        summary.bus_refused_more = 1;
        let line = model_line(&summary).unwrap();
        assert!(
            line.starts_with("[bus: refused org.freedesktop.secrets Get ×3; 1 more (efr's D-Bus filter"),
            "{line}"
        );
        assert!(line.ends_with(")]") && !line.contains('\n'), "{line}");
    }
}
