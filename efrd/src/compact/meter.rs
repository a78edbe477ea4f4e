//! How full a conversation's context is: the model's limits, and the count before each model call — the provider's
//! own count of the last call, plus efrd's estimate of what was added after it (4 bytes a token,
//! [`crate::prompt::context::tokens`]).

use efr_model::{HistoryItem, Usage};
use efr_protocol::wire::{ContextFill, Usage as WireUsage};

use crate::config::context::ContextSection;
use crate::prompt::context::item_bytes;

/// The window assumed for a model whose window the catalog does not know, in tokens (`window_known` false): the
/// smallest window of the models efr's catalog lists, so that a guess errs towards compacting early.
pub const ASSUMED_WINDOW: u64 = 128_000;

/// The limits of a conversation's model, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The context window.
    pub window: u64,
    /// The catalog knows `window`.
    pub window_known: bool,
    /// Where an automatic compaction starts: the point a client shows as 100%.
    pub trigger: u64,
    /// The most a request may hold: the window.
    pub hard_cap: u64,
    /// Compaction starts by itself at `trigger`.
    pub auto: bool,
    /// The newest whole turns a compaction keeps.
    pub keep_turns: u32,
}

impl Limits {
    /// The limits of a model whose catalog window is `window` under `[context]`.
    #[must_use]
    pub fn of(section: &ContextSection, window: Option<u64>) -> Self {
        let known = window.filter(|&w| w > 0);
        let window = known.unwrap_or(ASSUMED_WINDOW);
        Self {
            window,
            window_known: known.is_some(),
            trigger: section.trigger(window),
            hard_cap: window,
            auto: section.auto,
            keep_turns: section.keep_turns,
        }
    }

    /// The `context` member of a turn's end event and draft for a count of `tokens`.
    #[must_use]
    pub fn fill(&self, tokens: u64) -> ContextFill {
        ContextFill {
            tokens,
            limit: self.trigger,
            window: self.window,
        }
    }
}

/// The count of a conversation's context as a turn goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meter {
    /// The tokens of the pinned prefix (tools and instructions), for an estimate without a real count.
    prefix_tokens: u64,
    /// The provider's count of the last model call (its input and output) and the bytes of history it covers.
    counted: Option<(u64, u64)>,
}

impl Meter {
    /// A meter for a request whose prefix holds `prefix_tokens`.
    #[must_use]
    pub const fn new(prefix_tokens: u64) -> Self {
        Self {
            prefix_tokens,
            counted: None,
        }
    }

    /// The count of a request with `items`: the last real count and the estimate of the bytes added after it, else
    /// the estimate of the whole request.
    #[must_use]
    pub fn tokens(&self, items: &[HistoryItem]) -> u64 {
        let bytes: u64 = items.iter().map(item_bytes).sum();
        match self.counted {
            Some((tokens, covered)) => tokens + crate::prompt::context::tokens(bytes.saturating_sub(covered)),
            None => self.prefix_tokens + crate::prompt::context::tokens(bytes),
        }
    }

    /// The provider's count of the last model call, when it gave one.
    #[must_use]
    pub fn last_count(&self) -> Option<u64> {
        self.counted.map(|(tokens, _)| tokens)
    }

    /// Takes the provider's count of a model call (`usage`, summed over the call) whose request and answer held
    /// `covered` bytes of history; a call without a count changes nothing.
    pub fn counted(&mut self, usage: &Usage, covered: u64) {
        let tokens = usage.input + usage.output;
        if tokens > 0 {
            self.counted = Some((tokens, covered));
        }
    }

    /// Forgets the real count (the copy was compacted: the count no longer covers it).
    pub fn reset(&mut self) {
        self.counted = None;
    }
}

/// Adds one report of a model call's usage to a sum.
pub fn add_usage(sum: &mut Usage, usage: &Usage) {
    sum.input += usage.input;
    sum.cached_input += usage.cached_input;
    sum.cache_write += usage.cache_write;
    sum.cache_write_1h += usage.cache_write_1h;
    sum.output += usage.output;
    sum.reasoning += usage.reasoning;
}

/// The wire usage of a summed model usage, with `context_tokens` the last call's input plus its output.
#[must_use]
pub fn wire_usage(usage: &Usage, last_call: &Usage) -> WireUsage {
    WireUsage {
        input_tokens: usage.input,
        output_tokens: usage.output,
        cached_input_tokens: usage.cached_input,
        reasoning_tokens: usage.reasoning,
        context_tokens: last_call.input + last_call.output,
        cache_write_tokens: usage.cache_write,
        cache_write_1h_tokens: usage.cache_write_1h,
    }
}
