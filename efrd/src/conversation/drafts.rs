//! The draft path of a conversation (ADR 0024): what its running turn got from the model before the log has it, to
//! the subscribers that asked for drafts (spec, "drafts", "streams for the phone").
//!
//! The turn publishes each draft into the conversation's [`DraftHub`] at once, beside the actor rather than through
//! its mailbox: a draft never waits and is never lost on the way. The hub keeps the running turn's live state (its
//! current message and its reasoning so far: the snapshot's `live`, and the first drafts of a resume) and one
//! [`DraftQueue`] per subscriber. A queue merges a draft into the one before it when they continue each other
//! (text of the same message, the turn's reasoning, the input of the same call, the newer context), so a subscriber
//! that reads slowly gets fewer, larger drafts whose bytes are all there: merged, never dropped, and a draft never
//! ends a subscription.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};

use efr_protocol::ids::TurnId;
use efr_protocol::wire::{Draft, DraftPart, SnapshotLive};
use tokio::sync::Notify;

/// The texts of a turn's drafts: its messages by index and its reasoning. One copy per conversation, shared by the
/// queues: a waiting text draft is a range of it, so a subscriber that does not read costs a few bytes, not a copy.
#[derive(Debug, Default)]
struct TurnTexts {
    messages: HashMap<u32, String>,
    /// The index of the message that grew last.
    current: Option<u32>,
    reasoning: String,
    title: Option<String>,
}

type Texts = Arc<RwLock<TurnTexts>>;

fn read(texts: &Texts) -> std::sync::RwLockReadGuard<'_, TurnTexts> {
    texts.read().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Debug, Default)]
struct Inner {
    /// The running turn and its texts.
    live: Option<(TurnId, Texts)>,
    subscribers: Vec<Weak<DraftQueue>>,
}

/// A conversation's drafts: its running turn's live state and its subscribers' queues.
#[derive(Debug, Default)]
pub struct DraftHub {
    /// The conversation's last committed seq: a draft's `after_seq`.
    seq: AtomicU64,
    inner: Mutex<Inner>,
}

impl DraftHub {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The conversation committed up to `seq` (the actor calls this after each commit).
    pub fn set_seq(&self, seq: u64) {
        self.seq.store(seq, Ordering::Release);
    }

    /// A draft of `turn_id`: kept in the live state and put in every subscriber's queue.
    pub fn publish(&self, turn_id: TurnId, part: DraftPart) {
        let after_seq = self.seq.load(Ordering::Acquire);
        let mut inner = self.lock();
        let texts = match &inner.live {
            Some((live, texts)) if *live == turn_id => Arc::clone(texts),
            _ => {
                let texts = Texts::default();
                inner.live = Some((turn_id, Arc::clone(&texts)));
                texts
            }
        };
        let pending = Pending::of(turn_id, after_seq, part, &texts);
        inner.subscribers.retain(|queue| match queue.upgrade() {
            Some(queue) => {
                queue.push(pending.clone());
                true
            }
            None => false,
        });
    }

    /// The turn ended: the hub lets its texts go (a queue that still holds a range of them keeps them).
    pub fn end_turn(&self, turn_id: TurnId) {
        let mut inner = self.lock();
        if inner.live.as_ref().is_some_and(|(live, _)| *live == turn_id) {
            inner.live = None;
        }
    }

    /// A new subscriber's queue, which first holds the running turn's reasoning and current message from offset 0
    /// (spec: the first drafts of a resume; a client cuts the bytes it has). The queue lives while the caller
    /// holds it.
    pub fn subscribe(&self) -> Arc<DraftQueue> {
        let queue = Arc::new(DraftQueue::default());
        let mut inner = self.lock();
        let after_seq = self.seq.load(Ordering::Acquire);
        if let Some((turn_id, texts)) = &inner.live {
            let held = read(texts);
            if !held.reasoning.is_empty() {
                queue.push(Pending::Reasoning {
                    turn_id: *turn_id,
                    after_seq,
                    range: (0, held.reasoning.len()),
                    title: held.title.clone(),
                    texts: Arc::clone(texts),
                });
            }
            if let Some(index) = held.current {
                let len = held.messages.get(&index).map_or(0, String::len);
                queue.push(Pending::Text {
                    turn_id: *turn_id,
                    after_seq,
                    index,
                    range: (0, len),
                    texts: Arc::clone(texts),
                });
            }
        }
        // Subscribers that left go here too, so a conversation without a running turn keeps no dead entries.
        inner.subscribers.retain(|q| q.strong_count() > 0);
        inner.subscribers.push(Arc::downgrade(&queue));
        queue
    }

    /// The snapshot's `live`: the running turn's current message and reasoning, `None` when its model has said
    /// nothing yet.
    #[must_use]
    pub fn live(&self) -> Option<SnapshotLive> {
        let inner = self.lock();
        let (turn_id, texts) = inner.live.as_ref()?;
        let held = read(texts);
        let index = held.current.unwrap_or(0);
        let text = held.messages.get(&index).cloned().unwrap_or_default();
        if text.is_empty() && held.reasoning.is_empty() {
            return None;
        }
        Some(SnapshotLive {
            turn_id: *turn_id,
            after_seq: self.seq.load(Ordering::Acquire),
            index,
            text_bytes: text.len() as u64,
            text,
            reasoning: Some(held.reasoning.clone()).filter(|r| !r.is_empty()),
            reasoning_title: held.title.clone(),
        })
    }

    /// How many subscribers' queues are alive.
    #[must_use]
    pub fn subscribers(&self) -> usize {
        self.lock().subscribers.iter().filter(|q| q.strong_count() > 0).count()
    }
}

/// The most bytes of text one text or reasoning draft carries; a longer merged range goes as several drafts, back to
/// back. It bounds what a subscriber that does not read holds in efrd (the frame it is blocked on) and keeps a draft
/// far under the 16 MiB frame limit whatever the size of the answer (spec, "transport").
pub const MAX_DRAFT_BYTES: usize = 16 * 1024;

/// A draft that waits in a queue: text and reasoning as a byte range of the turn's texts, the rest as it came.
#[derive(Debug, Clone)]
enum Pending {
    Text {
        turn_id: TurnId,
        after_seq: u64,
        index: u32,
        range: (usize, usize),
        texts: Texts,
    },
    Reasoning {
        turn_id: TurnId,
        after_seq: u64,
        range: (usize, usize),
        title: Option<String>,
        texts: Texts,
    },
    Other(Draft),
}

impl Pending {
    /// Adds a text or reasoning delta to the turn's texts and makes its range; a delta that does not continue its
    /// text (none does: the turn's offsets are contiguous) goes as it came.
    fn of(turn_id: TurnId, after_seq: u64, part: DraftPart, texts: &Texts) -> Self {
        let mut held = texts.write().unwrap_or_else(PoisonError::into_inner);
        match part {
            DraftPart::Text { index, offset, delta } => {
                let message = held.messages.entry(index).or_default();
                if offset == message.len() as u64 {
                    let from = message.len();
                    message.push_str(&delta);
                    let range = (from, message.len());
                    held.current = Some(index);
                    return Self::Text {
                        turn_id,
                        after_seq,
                        index,
                        range,
                        texts: Arc::clone(texts),
                    };
                }
                Self::Other(Draft {
                    turn_id,
                    after_seq,
                    draft: DraftPart::Text { index, offset, delta },
                })
            }
            DraftPart::Reasoning { offset, delta, title } if offset == held.reasoning.len() as u64 => {
                let from = held.reasoning.len();
                held.reasoning.push_str(&delta);
                if title.is_some() {
                    held.title.clone_from(&title);
                }
                Self::Reasoning {
                    turn_id,
                    after_seq,
                    range: (from, held.reasoning.len()),
                    title,
                    texts: Arc::clone(texts),
                }
            }
            draft => Self::Other(Draft {
                turn_id,
                after_seq,
                draft,
            }),
        }
    }

    /// The draft as the wire has it: the bytes of its range.
    fn draft(self) -> Draft {
        match self {
            Self::Text {
                turn_id,
                after_seq,
                index,
                range: (from, to),
                texts,
            } => Draft {
                turn_id,
                after_seq,
                draft: DraftPart::Text {
                    index,
                    offset: from as u64,
                    delta: read(&texts)
                        .messages
                        .get(&index)
                        .map(|m| m[from..to].to_owned())
                        .unwrap_or_default(),
                },
            },
            Self::Reasoning {
                turn_id,
                after_seq,
                range: (from, to),
                title,
                texts,
            } => Draft {
                turn_id,
                after_seq,
                draft: DraftPart::Reasoning {
                    offset: from as u64,
                    delta: read(&texts).reasoning[from..to].to_owned(),
                    title,
                },
            },
            Self::Other(draft) => draft,
        }
    }

    /// Splits a text or reasoning range longer than [`MAX_DRAFT_BYTES`] at the last character boundary within the
    /// bound: the first part, and the rest to send next (which keeps no title: a reasoning title goes once).
    fn split(self) -> (Self, Option<Self>) {
        let at = |text: &str, (from, to): (usize, usize)| {
            if to - from <= MAX_DRAFT_BYTES {
                return None;
            }
            let mut cut = from + MAX_DRAFT_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            Some(cut)
        };
        match self {
            Self::Text {
                turn_id,
                after_seq,
                index,
                range,
                texts,
            } => {
                let cut = read(&texts).messages.get(&index).and_then(|m| at(m, range));
                let Some(cut) = cut else {
                    return (
                        Self::Text {
                            turn_id,
                            after_seq,
                            index,
                            range,
                            texts,
                        },
                        None,
                    );
                };
                let rest = Self::Text {
                    turn_id,
                    after_seq,
                    index,
                    range: (cut, range.1),
                    texts: Arc::clone(&texts),
                };
                (
                    Self::Text {
                        turn_id,
                        after_seq,
                        index,
                        range: (range.0, cut),
                        texts,
                    },
                    Some(rest),
                )
            }
            Self::Reasoning {
                turn_id,
                after_seq,
                range,
                title,
                texts,
            } => {
                let cut = at(&read(&texts).reasoning, range);
                let Some(cut) = cut else {
                    return (
                        Self::Reasoning {
                            turn_id,
                            after_seq,
                            range,
                            title,
                            texts,
                        },
                        None,
                    );
                };
                let rest = Self::Reasoning {
                    turn_id,
                    after_seq,
                    range: (cut, range.1),
                    title: None,
                    texts: Arc::clone(&texts),
                };
                (
                    Self::Reasoning {
                        turn_id,
                        after_seq,
                        range: (range.0, cut),
                        title,
                        texts,
                    },
                    Some(rest),
                )
            }
            other @ Self::Other(_) => (other, None),
        }
    }

    /// Merges `next` into `self` when it continues it; `false` when they stay two drafts.
    fn merge(&mut self, next: &Self) -> bool {
        match (self, next) {
            (
                Self::Text {
                    turn_id,
                    after_seq,
                    index,
                    range,
                    ..
                },
                Self::Text {
                    turn_id: next_turn,
                    after_seq: next_seq,
                    index: next_index,
                    range: next_range,
                    ..
                },
            ) if turn_id == next_turn && index == next_index && range.1 == next_range.0 => {
                range.1 = next_range.1;
                *after_seq = *next_seq;
                true
            }
            (
                Self::Reasoning {
                    turn_id,
                    after_seq,
                    range,
                    title,
                    ..
                },
                Self::Reasoning {
                    turn_id: next_turn,
                    after_seq: next_seq,
                    range: next_range,
                    title: next_title,
                    ..
                },
            ) if turn_id == next_turn && range.1 == next_range.0 => {
                range.1 = next_range.1;
                *after_seq = *next_seq;
                if next_title.is_some() {
                    title.clone_from(next_title);
                }
                true
            }
            (Self::Other(last), Self::Other(next)) if last.turn_id == next.turn_id => {
                let replaces = match (&last.draft, &next.draft) {
                    (DraftPart::ToolInput { call, .. }, DraftPart::ToolInput { call: next_call, .. }) => {
                        call == next_call
                    }
                    (DraftPart::Context(_), DraftPart::Context(_)) => true,
                    _ => false,
                };
                if replaces {
                    *last = next.clone();
                }
                replaces
            }
            _ => false,
        }
    }
}

/// One subscriber's drafts that wait to be sent, merged where they continue each other.
#[derive(Debug, Default)]
pub struct DraftQueue {
    pending: Mutex<VecDeque<Pending>>,
    ready: Notify,
}

impl DraftQueue {
    fn push(&self, draft: Pending) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let merged = pending.back_mut().is_some_and(|last| last.merge(&draft));
        if !merged {
            pending.push_back(draft);
        }
        drop(pending);
        self.ready.notify_one();
    }

    /// The next draft, merged with every draft that continued it while it waited, at most [`MAX_DRAFT_BYTES`] of
    /// text; the rest of a longer range stays first in the queue.
    pub async fn next(&self) -> Draft {
        loop {
            let notified = self.ready.notified();
            if let Some(first) = self.take() {
                return first.draft();
            }
            notified.await;
        }
    }

    /// The first waiting draft, cut to the bound (its rest stays first).
    fn take(&self) -> Option<Pending> {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let (first, rest) = pending.pop_front()?.split();
        if let Some(rest) = rest {
            pending.push_front(rest);
        }
        Some(first)
    }

    /// How many drafts wait (merged ones count once).
    #[must_use]
    pub fn waiting(&self) -> usize {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(offset: u64, delta: &str) -> DraftPart {
        DraftPart::Text {
            index: 0,
            offset,
            delta: delta.into(),
        }
    }

    #[tokio::test]
    async fn a_queue_merges_what_continues_and_keeps_the_rest_in_order() {
        let hub = DraftHub::default();
        let turn = TurnId::new();
        let queue = hub.subscribe();
        hub.publish(turn, text(0, "grö"));
        hub.set_seq(7);
        hub.publish(turn, text(4, "ße"));
        hub.publish(
            turn,
            DraftPart::ToolInput {
                call: 0,
                tool: "shell".into(),
                bytes: 3,
            },
        );
        hub.publish(
            turn,
            DraftPart::ToolInput {
                call: 0,
                tool: "shell".into(),
                bytes: 9,
            },
        );
        let first = queue.next().await;
        assert_eq!(first.draft, text(0, "größe"));
        assert_eq!(first.after_seq, 7, "a merged draft is as new as its last part");
        assert!(matches!(
            queue.next().await.draft,
            DraftPart::ToolInput { bytes: 9, .. }
        ));
        assert_eq!(queue.waiting(), 0);
    }

    #[tokio::test]
    async fn a_long_merged_range_goes_as_drafts_of_at_most_the_bound_cut_between_characters() {
        let hub = DraftHub::default();
        let turn = TurnId::new();
        let queue = hub.subscribe();
        let piece = "größe 🙂 ".repeat(100);
        let mut sent = String::new();
        while sent.len() < 3 * MAX_DRAFT_BYTES {
            hub.publish(turn, text(sent.len() as u64, &piece));
            sent.push_str(&piece);
        }
        assert_eq!(queue.waiting(), 1, "the pieces merged into one range");
        let mut got = String::new();
        while got.len() < sent.len() {
            let DraftPart::Text { offset, delta, .. } = queue.next().await.draft else {
                panic!("a text draft");
            };
            assert_eq!(offset, got.len() as u64, "each part starts where the last ended");
            assert!(delta.len() <= MAX_DRAFT_BYTES && !delta.is_empty());
            got.push_str(&delta);
        }
        assert_eq!(got, sent);
        assert_eq!(queue.waiting(), 0);
    }

    #[tokio::test]
    async fn a_held_reasoning_draft_waits_past_the_message_the_tool_call_and_the_turn_end_whole() {
        let hub = DraftHub::default();
        let turn = TurnId::new();
        let slow = hub.subscribe();
        hub.publish(
            turn,
            DraftPart::Reasoning {
                offset: 0,
                delta: "weigh ".into(),
                title: None,
            },
        );
        hub.publish(
            turn,
            DraftPart::Reasoning {
                offset: 6,
                delta: "größe".into(),
                title: Some("Plan".into()),
            },
        );
        hub.publish(turn, text(0, "answer"));
        hub.publish(
            turn,
            DraftPart::ToolInput {
                call: 0,
                tool: "shell".into(),
                bytes: 4,
            },
        );
        // The turn ends before the slow subscriber reads: nothing it holds is lost.
        hub.end_turn(turn);
        assert_eq!(
            slow.next().await.draft,
            DraftPart::Reasoning {
                offset: 0,
                delta: "weigh größe".into(),
                title: Some("Plan".into()),
            }
        );
        assert_eq!(slow.next().await.draft, text(0, "answer"));
        assert!(matches!(slow.next().await.draft, DraftPart::ToolInput { bytes: 4, .. }));
        assert_eq!(slow.waiting(), 0);
    }

    #[tokio::test]
    async fn a_late_subscriber_starts_from_offset_0_and_the_live_state_ends_with_the_turn() {
        let hub = DraftHub::default();
        let turn = TurnId::new();
        hub.publish(
            turn,
            DraftPart::Reasoning {
                offset: 0,
                delta: "think".into(),
                title: Some("Plan".into()),
            },
        );
        hub.publish(turn, text(0, "hello "));
        hub.publish(turn, text(6, "🙂"));
        let live = hub.live().unwrap();
        assert_eq!((live.text.as_str(), live.text_bytes), ("hello 🙂", 10));
        assert_eq!(live.reasoning_title.as_deref(), Some("Plan"));
        let queue = hub.subscribe();
        assert!(matches!(
            queue.next().await.draft,
            DraftPart::Reasoning { offset: 0, .. }
        ));
        assert_eq!(queue.next().await.draft, text(0, "hello 🙂"));
        hub.end_turn(turn);
        assert!(hub.live().is_none());
        drop(queue);
        assert_eq!(hub.subscribers(), 0);
    }
}
