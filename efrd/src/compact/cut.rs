//! Where a compaction cuts: which turns its summary covers, which stay whole, and what the summary's request carries
//! when all it covers does not fit the window (old tool outputs shortened first, then the oldest turns left out).
//!
//! Pure: no model, no store. The earlier summary (the copy's first item, when it has one) is never shortened or left
//! out: it carries the goals and constraints of every earlier compaction.

use efr_model::HistoryItem;
use efr_protocol::ids::TurnId;

use super::history::ModelHistory;
use crate::prompt::context::{item_bytes, tokens};

/// A tool output longer than this many bytes may be shortened in a summary's request.
pub const PRUNE_ABOVE: usize = 2048;
/// What a shortened output keeps of its head, in bytes.
const PRUNE_HEAD: usize = 1024;
/// What a shortened output keeps of its tail, in bytes.
const PRUNE_TAIL: usize = 512;

/// The bounds of a cut, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutRules {
    /// The newest whole turns to keep after the summary (`[context] keep_turns`).
    pub keep_turns: u32,
    /// The most the kept turns may hold; fewer turns are kept past it.
    pub keep_budget: u64,
    /// The most the summary's request may carry of the conversation.
    pub material_budget: u64,
}

/// A cut of a conversation's copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// The whole finished turns kept after the summary.
    pub kept_turns: u32,
    /// What the summary's request carries of the conversation, oldest first (shortened where it had to be).
    pub material: Vec<HistoryItem>,
    /// The last turn the summary covers.
    pub through_turn: TurnId,
    /// The summary covers what the running turn did so far.
    pub covers_running: bool,
    /// Tool outputs shortened in `material`.
    pub pruned_outputs: u64,
    /// The tokens shortening left out.
    pub pruned_tokens: u64,
    /// The oldest covered turns left out of `material`.
    pub omitted_turns: u64,
    /// The user and assistant messages of those turns.
    pub omitted_messages: u64,
}

/// The cut of `history` whose last turn is `running` when a turn runs. `None` when there is nothing to summarise:
/// no finished turn and no work of the running turn.
#[must_use]
pub fn cut(history: &ModelHistory, running: Option<TurnId>, rules: &CutRules) -> Option<Cut> {
    let turns = history.turns();
    let running_last = running.is_some_and(|id| turns.last().is_some_and(|t| t.turn_id == id));
    let finished = turns.len() - usize::from(running_last);
    let running_work = running_last && turns.last().is_some_and(|t| t.index + 1 < history.items().len());
    let turn_tokens = |n: usize| -> u64 { tokens(history.turn_items(n).iter().map(item_bytes).sum()) };
    let mut kept = usize::try_from(rules.keep_turns).unwrap_or(usize::MAX).min(finished);
    while kept > 0 && (finished - kept..finished).map(turn_tokens).sum::<u64>() > rules.keep_budget {
        kept -= 1;
    }
    // Something must be summarised: keep fewer turns rather than none covered.
    while kept > 0 && finished == kept && !running_work {
        kept -= 1;
    }
    let covered = finished - kept;
    if covered == 0 && !running_work {
        return None;
    }
    let mut blocks: Vec<Vec<HistoryItem>> = (0..covered).map(|n| history.turn_items(n).to_vec()).collect();
    if running_work {
        blocks.push(history.turn_items(turns.len() - 1).to_vec());
    }
    let preface = turns.first().map_or(history.items().len(), |t| t.index);
    let preface: Vec<HistoryItem> = history.items()[..preface].to_vec();
    let mut out = Cut {
        kept_turns: u32::try_from(kept).unwrap_or(u32::MAX),
        material: Vec::new(),
        through_turn: if running_work {
            turns[turns.len() - 1].turn_id
        } else {
            turns[covered - 1].turn_id
        },
        covers_running: running_work,
        pruned_outputs: 0,
        pruned_tokens: 0,
        omitted_turns: 0,
        omitted_messages: 0,
    };
    fit(&preface, &mut blocks, rules.material_budget, &mut out);
    out.material = preface.into_iter().chain(blocks.into_iter().flatten()).collect();
    Some(out)
}

/// Shortens the oldest long tool outputs of `blocks`, then leaves out the oldest blocks (never the last), until
/// `preface` and `blocks` fit `budget` tokens; records what it did in `out`.
fn fit(preface: &[HistoryItem], blocks: &mut Vec<Vec<HistoryItem>>, budget: u64, out: &mut Cut) {
    let bytes = |items: &[HistoryItem]| items.iter().map(item_bytes).sum::<u64>();
    let mut total = bytes(preface) + blocks.iter().map(|b| bytes(b)).sum::<u64>();
    let over = |total: u64| tokens(total) > budget;
    'prune: for block in blocks.iter_mut() {
        for item in block.iter_mut() {
            if !over(total) {
                break 'prune;
            }
            if let HistoryItem::ToolOutput { output, .. } = item
                && output.len() > PRUNE_ABOVE
            {
                let before = output.len();
                *output = shorten(output);
                let saved = (before - output.len()) as u64;
                total -= saved;
                out.pruned_outputs += 1;
                out.pruned_tokens += tokens(saved);
            }
        }
    }
    while over(total) && blocks.len() > 1 {
        let block = blocks.remove(0);
        total -= bytes(&block);
        out.omitted_turns += 1;
        out.omitted_messages += block
            .iter()
            .filter(|item| matches!(item, HistoryItem::UserText { .. } | HistoryItem::AssistantText { .. }))
            .count() as u64;
    }
}

/// `output` shortened to its head and tail, with a line that says how much was left out.
#[must_use]
pub fn shorten(output: &str) -> String {
    let head = floor_boundary(output, PRUNE_HEAD);
    let tail = ceil_boundary(output, output.len().saturating_sub(PRUNE_TAIL)).max(head);
    format!(
        "{}\n[efr: {} bytes of this output were left out of the summary's request]\n{}",
        &output[..head],
        tail - head,
        &output[tail..]
    )
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}
