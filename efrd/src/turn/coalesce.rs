//! Coalescing of text deltas into `assistant_message_updated` events.
//!
//! A provider streams text in pieces of a few bytes, hundreds per second. Storing each as an event would make the log
//! grow with the stream's chunking rather than with the answer, so the turn merges deltas of one message and records
//! them at most once per [`TextCoalescer::interval`] (tens of events a second, not thousands). No byte is lost: a
//! change of message, a tool call, the end of the call or an interrupt flushes what waits.
//!
//! The limit is a rate, not a delay: a delta that comes when no update was recorded within the last interval (the
//! first words of an answer, a slow stream) is recorded at once, and only the deltas that follow it closely wait. So
//! the first words reach the user without the interval's wait (docs/architecture.md, "Budgets": prompt.send to first
//! delta under 20 ms of efrd's own time; holding them for the interval cost 50 ms, measured by `cargo bench -p efrd
//! --bench daemon`).

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
    /// Where the current rate window began: the last update's time. `None` before the first update, so it goes out
    /// at once.
    window: Option<Instant>,
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
            window: None,
        }
    }

    /// The interval between updates.
    #[must_use]
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Adds a delta of message `index` at byte `offset`. Returns the updates to record now, oldest first: the
    /// pending text of another message (a change of message flushes it), and this message's text when the interval
    /// since the last update has passed (at once when there was none) or it grew past [`MAX_PENDING_BYTES`].
    pub fn push(&mut self, index: u32, offset: u64, delta: &str, now: Instant) -> Vec<AssistantMessageUpdated> {
        let mut ready = Vec::new();
        match &mut self.pending {
            Some(pending) if pending.index == index && pending.offset + pending.delta.len() as u64 == offset => {
                pending.delta.push_str(delta);
            }
            _ => {
                // Another message, or a gap the provider layer should never produce: flush and start anew.
                ready.extend(self.take(now));
                self.pending = Some(AssistantMessageUpdated {
                    index,
                    offset,
                    delta: delta.to_owned(),
                });
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
                ready.push(AssistantMessageUpdated {
                    index: pending.index,
                    offset: pending.offset,
                    delta: piece,
                });
                pending.offset += cut as u64;
            }
        }
        let due = self.window.is_none_or(|window| now >= window + self.interval);
        let big = self
            .pending
            .as_ref()
            .is_some_and(|p| p.delta.len() >= MAX_PENDING_BYTES);
        if due || big {
            ready.extend(self.take(now));
        }
        ready
    }

    /// When the pending text must be flushed even if no delta comes (`None` when nothing waits).
    #[must_use]
    pub fn deadline(&self) -> Option<Instant> {
        self.pending
            .as_ref()
            .and(self.window)
            .map(|window| window + self.interval)
    }

    /// Takes what waits, if anything. Called at [`Self::deadline`] or when the message ends; the next window starts
    /// at the deadline, so a stream flushed by its deadlines still gets one update per interval, not two.
    pub fn flush(&mut self) -> Option<AssistantMessageUpdated> {
        let next = self.window.map(|window| window + self.interval);
        let taken = self.pending.take().filter(|p| !p.delta.is_empty());
        if taken.is_some() {
            self.window = next;
        }
        taken
    }

    /// Takes what waits at `now`; a window starts at `now` when something was taken.
    fn take(&mut self, now: Instant) -> Option<AssistantMessageUpdated> {
        let taken = self.pending.take().filter(|p| !p.delta.is_empty());
        if taken.is_some() {
            self.window = Some(now);
        }
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(index: u32, offset: u64, delta: &str) -> AssistantMessageUpdated {
        AssistantMessageUpdated {
            index,
            offset,
            delta: delta.into(),
        }
    }

    #[test]
    fn the_first_delta_goes_out_at_once_and_the_next_ones_merge_within_the_interval() {
        let t0 = Instant::now();
        let mut c = TextCoalescer::new(Duration::from_millis(50));
        assert_eq!(c.push(0, 0, "gr", t0), vec![update(0, 0, "gr")]);
        assert_eq!(c.deadline(), None, "nothing waits");
        assert!(c.push(0, 2, "öß", t0 + Duration::from_millis(10)).is_empty());
        assert_eq!(c.deadline(), Some(t0 + Duration::from_millis(50)));
        let ready = c.push(0, 6, "e", t0 + Duration::from_millis(60));
        assert_eq!(ready, vec![update(0, 2, "öße")]);
        assert_eq!(c.deadline(), None);
        assert_eq!(c.flush(), None);
    }

    #[test]
    fn a_slow_stream_is_not_held_back() {
        let t0 = Instant::now();
        let mut c = TextCoalescer::new(Duration::from_millis(50));
        assert_eq!(c.push(0, 0, "a", t0).len(), 1);
        let later = t0 + Duration::from_millis(80);
        assert_eq!(c.push(0, 1, "b", later), vec![update(0, 1, "b")]);
    }

    #[test]
    fn a_deadline_flush_starts_the_next_window_at_the_deadline() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut c = TextCoalescer::new(ms(50));
        assert_eq!(c.push(0, 0, "a", t0).len(), 1);
        assert!(c.push(0, 1, "b", t0 + ms(1)).is_empty());
        assert_eq!(c.deadline(), Some(t0 + ms(50)));
        assert_eq!(c.flush(), Some(update(0, 1, "b")));
        // Right after the deadline's update, a delta waits for the next one: one update per interval, not two.
        assert!(c.push(0, 2, "c", t0 + ms(51)).is_empty());
        assert_eq!(c.deadline(), Some(t0 + ms(100)));
    }

    #[test]
    fn a_new_message_flushes_the_previous_one_first() {
        let t0 = Instant::now();
        let mut c = TextCoalescer::new(Duration::from_secs(1));
        assert_eq!(c.push(0, 0, "a", t0), vec![update(0, 0, "a")]);
        assert!(c.push(0, 1, "b", t0).is_empty());
        let ready = c.push(1, 0, "🙂", t0);
        assert_eq!(ready, vec![update(0, 1, "b")]);
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
