//! The refusals of one plan, as `bus_refused` reports them (docs/protocol.md, sandbox_summary): at most
//! [`MAX_ENTRIES`] distinct (bus, name, member, path) with a count, and how many refusals did not fit.

use std::sync::Mutex;

use efr_protocol::wire::{Bus, BusRefusal};

/// The most distinct refusals kept (the protocol's bound on `bus_refused`).
pub const MAX_ENTRIES: usize = 16;

/// The refusals counted so far; shared by the plan's connections.
#[derive(Debug)]
pub struct Refusals {
    bus: Bus,
    inner: Mutex<Tally>,
}

#[derive(Debug, Default)]
struct Tally {
    entries: Vec<BusRefusal>,
    more: u64,
}

impl Refusals {
    /// None yet, on `bus`.
    #[must_use]
    pub fn new(bus: Bus) -> Self {
        Self {
            bus,
            inner: Mutex::new(Tally::default()),
        }
    }

    /// Counts one refusal of a message addressed to `name`.
    pub fn add(&self, name: &str, member: Option<&str>, path: Option<&str>) {
        let mut tally = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(entry) = tally
            .entries
            .iter_mut()
            .find(|e| e.name == name && e.member.as_deref() == member && e.path.as_deref() == path)
        {
            entry.count += 1;
        } else if tally.entries.len() < MAX_ENTRIES {
            tally.entries.push(BusRefusal {
                bus: self.bus,
                name: name.to_owned(),
                member: member.map(str::to_owned),
                path: path.map(str::to_owned),
                count: 1,
            });
        } else {
            tally.more += 1;
        }
    }

    /// The entries and the count of refusals that did not fit.
    #[must_use]
    pub fn snapshot(&self) -> (Vec<BusRefusal>, u64) {
        let tally = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        (tally.entries.clone(), tally.more)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_counted_and_bounded() {
        let refusals = Refusals::new(Bus::Session);
        refusals.add("org.a", Some("M"), Some("/"));
        refusals.add("org.a", Some("M"), Some("/"));
        for i in 0..20 {
            refusals.add(&format!("org.n{i}"), None, None);
        }
        let (entries, more) = refusals.snapshot();
        assert_eq!(entries.len(), MAX_ENTRIES);
        assert_eq!(entries[0].count, 2);
        assert_eq!(more, 5);
    }
}
