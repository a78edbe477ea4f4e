//! Coalescing of text deltas into `assistant_message_updated` events.
//!
//! A provider streams text in pieces of a few bytes, hundreds per second. Storing each as an event would make the log
//! grow with the stream's chunking rather than with the answer, so the turn merges deltas of one message and records
//! them at most once per [`TextCoalescer::interval`] (tens of events a second, not thousands). No byte is lost: a
//! change of message, a tool call, the end of the call or an interrupt flushes what waits.

use std::time::{Duration, Instant};

use efr_protocol::events::AssistantMessageUpdated;

/// The default time between two updates of one message: 50 ms, at most 20 events a second.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(50);

/// The most text one update holds before it is flushed regardless of time (64 KiB).
pub const MAX_PENDING_BYTES: usize = 64 * 1024;

/// Merges consecutive deltas of one message.
#[derive(Debug)]
pub struct TextCoalescer {
    interval: Duration,
    pending: Option<AssistantMessageUpdated>,
    since: Option<Instant>,
}

impl Default for TextCoalescer {
    fn default() -> Self {
        Self::new(DEFAULT_INTERVAL)
    }
}

impl TextCoalescer {
    /// A coalescer that flushes at most once per `interval`.
    #[must_use]
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            pending: None,
            since: None,
        }
    }

    /// The interval between updates.
    #[must_use]
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Adds a delta of message `index` at byte `offset`. Returns the updates to record now, oldest first: the
    /// pending text of another message (a change of message flushes it), and this message's text when its interval
    /// has passed or it grew past [`MAX_PENDING_BYTES`].
    pub fn push(&mut self, index: u32, offset: u64, delta: &str, now: Instant) -> Vec<AssistantMessageUpdated> {
        let mut ready = Vec::new();
        match &mut self.pending {
            Some(pending) if pending.index == index && pending.offset + pending.delta.len() as u64 == offset => {
                pending.delta.push_str(delta);
            }
            _ => {
                // Another message, or a gap the provider layer should never produce: flush and start anew.
                ready.extend(self.flush());
                self.pending = Some(AssistantMessageUpdated {
                    index,
                    offset,
                    delta: delta.to_owned(),
                });
                self.since = Some(now);
            }
        }
        // A huge delta becomes several updates of at most MAX_PENDING_BYTES, cut at character boundaries, so an
        // event never nears the frame limit.
        if let Some(pending) = self.pending.as_mut() {
            while pending.delta.len() > MAX_PENDING_BYTES {
                let mut cut = MAX_PENDING_BYTES;
                while !pending.delta.is_char_boundary(cut) {
                    cut -= 1;
                }
                let rest = pending.delta.split_off(cut);
                let piece = std::mem::replace(&mut pending.delta, rest);
                ready.push(AssistantMessageUpdated { index: pending.index, offset: pending.offset, delta: piece });
                pending.offset += cut as u64;
            }
        }
        let due = self
            .since
            .is_some_and(|since| now.duration_since(since) >= self.interval);
        let big = self
            .pending
            .as_ref()
            .is_some_and(|p| p.delta.len() >= MAX_PENDING_BYTES);
        if due || big {
            ready.extend(self.flush());
        }
        ready
    }

    /// When the pending text must be flushed even if no delta comes (`None` when nothing waits).
    #[must_use]
    pub fn deadline(&self) -> Option<Instant> {
        self.pending.as_ref().and(self.since).map(|since| since + self.interval)
    }

    /// Takes what waits, if anything.
    pub fn flush(&mut self) -> Option<AssistantMessageUpdated> {
        self.since = None;
        self.pending.take().filter(|p| !p.delta.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_within_the_interval_merge_into_one_update() {
        let t0 = Instant::now();
        let mut c = TextCoalescer::new(Duration::from_millis(50));
        assert!(c.push(0, 0, "gr", t0).is_empty());
        assert!(c.push(0, 2, "öß", t0 + Duration::from_millis(10)).is_empty());
        let ready = c.push(0, 6, "e", t0 + Duration::from_millis(60));
        assert_eq!(
            ready,
            vec![AssistantMessageUpdated {
                index: 0,
                offset: 0,
                delta: "größe".into()
            }]
        );
        assert_eq!(c.deadline(), None);
        assert_eq!(c.flush(), None);
    }

    #[test]
    fn a_new_message_flushes_the_previous_one_first() {
        let t0 = Instant::now();
        let mut c = TextCoalescer::new(Duration::from_secs(1));
        c.push(0, 0, "a", t0);
        let ready = c.push(1, 0, "🙂", t0);
        assert_eq!(
            ready,
            vec![AssistantMessageUpdated {
                index: 0,
                offset: 0,
                delta: "a".into()
            }]
        );
        assert_eq!(c.deadline(), Some(t0 + Duration::from_secs(1)));
        assert_eq!(
            c.flush(),
            Some(AssistantMessageUpdated {
                index: 1,
                offset: 0,
                delta: "🙂".into()
            })
        );
    }

    #[test]
    fn a_fast_stream_makes_few_events_and_loses_no_byte() {
        let t0 = Instant::now();
        let mut c = TextCoalescer::new(Duration::from_millis(50));
        let mut events = Vec::new();
        let mut offset = 0_u64;
        let mut sent = String::new();
        // 10,000 deltas over one simulated second.
        for i in 0..10_000_u64 {
            let delta = if i % 3 == 0 { "ü" } else { "x" };
            events.extend(c.push(0, offset, delta, t0 + Duration::from_micros(i * 100)));
            offset += delta.len() as u64;
            sent.push_str(delta);
        }
        events.extend(c.flush());
        assert!(events.len() <= 21, "{} events", events.len());
        let mut rebuilt = String::new();
        for e in &events {
            assert_eq!(e.offset, rebuilt.len() as u64, "offsets are contiguous");
            rebuilt.push_str(&e.delta);
        }
        assert_eq!(rebuilt, sent);
    }

    #[test]
    fn a_huge_delta_is_cut_into_bounded_updates_at_character_boundaries() {
        let mut c = TextCoalescer::new(Duration::from_secs(10));
        let big = "y".repeat(MAX_PENDING_BYTES);
        assert_eq!(c.push(0, 0, &big, Instant::now()).len(), 1);
        let huge = "ü".repeat(MAX_PENDING_BYTES * 2 + 1);
        let mut ready = c.push(1, 0, &huge, Instant::now());
        ready.extend(c.flush());
        assert!(ready.iter().all(|u| u.delta.len() <= MAX_PENDING_BYTES));
        assert!(ready.len() >= 4);
        let mut offset = 0;
        let mut rebuilt = String::new();
        for u in &ready {
            assert_eq!((u.index, u.offset), (1, offset));
            offset += u.delta.len() as u64;
            rebuilt.push_str(&u.delta);
        }
        assert_eq!(rebuilt, huge);
    }
}
