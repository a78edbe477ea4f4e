//! The model's copy of a conversation: its history items with the turns they belong to, and what a compaction
//! makes of it.
//!
//! Every turn's items start with its prompt (one [`HistoryItem::UserText`]); after a compaction the first item is the
//! summary (the fresh context block and the summary, also a user message), which belongs to no turn. The same rule
//! ([`ModelHistory::compacted`]) shrinks the copy in a running daemon and when a log with conversation_compacted is
//! read again, so both give the same requests.

use efr_model::HistoryItem;
use efr_protocol::ids::TurnId;
use efr_protocol::wire::Compaction;

/// Where one turn's items start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnStart {
    /// The turn.
    pub turn_id: TurnId,
    /// The index of its prompt in the items.
    pub index: usize,
}

/// The model's copy of a conversation, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelHistory {
    items: Vec<HistoryItem>,
    turns: Vec<TurnStart>,
    /// The first item is a compaction's summary.
    summarised: bool,
}

impl ModelHistory {
    /// The items, oldest first: what a request sends.
    #[must_use]
    pub fn items(&self) -> &[HistoryItem] {
        &self.items
    }

    /// The turns, oldest first.
    #[must_use]
    pub fn turns(&self) -> &[TurnStart] {
        &self.turns
    }

    /// The bytes of the summary item; 0 when the copy has no summary.
    #[must_use]
    pub fn summary_bytes(&self) -> u64 {
        match self.items.first() {
            Some(item) if self.summarised => crate::prompt::context::item_bytes(item),
            _ => 0,
        }
    }

    /// The copy has a summary as its first item.
    #[must_use]
    pub fn is_summarised(&self) -> bool {
        self.summarised
    }

    /// Starts turn `turn_id` with its prompt as the model reads it.
    pub fn push_prompt(&mut self, turn_id: TurnId, text: String) {
        self.turns.push(TurnStart {
            turn_id,
            index: self.items.len(),
        });
        self.items.push(HistoryItem::UserText { text });
    }

    /// Takes back the prompt of `turn_id` when it is the last turn and nothing was added after its prompt: a turn
    /// whose start was never committed. `false` (nothing changed) otherwise.
    pub fn pop_prompt(&mut self, turn_id: TurnId) -> bool {
        match self.turns.last() {
            Some(last) if last.turn_id == turn_id && last.index + 1 == self.items.len() => {
                self.items.truncate(last.index);
                self.turns.pop();
                true
            }
            _ => false,
        }
    }

    /// Adds an item of the last turn (an answer, a tool call, its output).
    pub fn push(&mut self, item: HistoryItem) {
        self.items.push(item);
    }

    /// Adds items of the last turn.
    pub fn extend(&mut self, items: impl IntoIterator<Item = HistoryItem>) {
        self.items.extend(items);
    }

    /// The items of turn number `n` (of [`Self::turns`]).
    #[must_use]
    pub fn turn_items(&self, n: usize) -> &[HistoryItem] {
        let start = self.turns[n].index;
        let end = self.turns.get(n + 1).map_or(self.items.len(), |next| next.index);
        &self.items[start..end]
    }

    /// The copy after `compaction`: its summary (after the fresh context block), then the newest
    /// `compaction.kept_turns` whole turns before `running`, then the prompt of `running` when it is the last turn
    /// (a compaction in a running turn covers what that turn did so far, not what it was asked).
    #[must_use]
    pub fn compacted(&self, compaction: &Compaction, running: Option<TurnId>) -> Self {
        let running_last = running.is_some_and(|id| self.turns.last().is_some_and(|t| t.turn_id == id));
        let finished = self.turns.len() - usize::from(running_last);
        let kept = usize::try_from(compaction.kept_turns)
            .unwrap_or(usize::MAX)
            .min(finished);
        let mut out = Self {
            items: vec![HistoryItem::UserText {
                text: summary_text(compaction.fresh.as_deref(), &compaction.summary),
            }],
            turns: Vec::new(),
            summarised: true,
        };
        for n in finished - kept..finished {
            out.turns.push(TurnStart {
                turn_id: self.turns[n].turn_id,
                index: out.items.len(),
            });
            out.items.extend(self.turn_items(n).iter().cloned());
        }
        if running_last && let Some(last) = self.turns.last() {
            out.turns.push(TurnStart {
                turn_id: last.turn_id,
                index: out.items.len(),
            });
            out.items.push(self.items[last.index].clone());
        }
        out
    }
}

/// The text of the summary item: the fresh context block, then the summary in a frame that tells the model what it
/// is.
#[must_use]
pub fn summary_text(fresh: Option<&str>, summary: &str) -> String {
    format!(
        "{}<conversation_summary>\nEarlier turns of this conversation were compacted to save context. This is the \
         summary you wrote of them; the user still sees the whole transcript.\n\n{}\n</conversation_summary>\n",
        fresh.unwrap_or_default(),
        summary.trim_end()
    )
}
