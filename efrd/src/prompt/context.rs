//! The sizes of what fills a request, for `conversation.context` (docs/protocol.md, "What fills the context"): the
//! parts of a turn's prompt and of the history, the instruction files found, the largest items. Sizes and labels
//! only, never text.

use std::collections::HashMap;

use efr_protocol::wire::{
    ContextItem, ContextPart, ContextPartKind, ContextSize, InstructionFile, InstructionFileState, InstructionScope,
};

use super::TurnPrompt;
use super::project::{DocFile, Outcome, Scope};
use efr_model::HistoryItem;

/// How many of the largest items the result names.
pub const LARGEST: usize = 5;

/// The estimated tokens of `bytes` of text: one token per 4 bytes, rounded up (a common rule for English text and
/// code; the provider's own count comes back as `usage`).
#[must_use]
pub const fn tokens(bytes: u64) -> u64 {
    bytes.div_ceil(4)
}

/// The bytes an item adds to a request, as efr counts them: its text (a tool call's name and input, a reasoning's
/// text and its opaque carry-over, which goes back to the provider too), without the provider's framing.
#[must_use]
pub fn item_bytes(item: &HistoryItem) -> u64 {
    let bytes = match item {
        HistoryItem::UserText { text } | HistoryItem::AssistantText { text } => text.len(),
        HistoryItem::Reasoning { text, carry } => {
            let carried = carry
                .as_ref()
                .and_then(|carry| serde_json::to_string(carry).ok())
                .map_or(0, |json| json.len());
            text.len() + carried
        }
        HistoryItem::ToolCall { tool, input, .. } => tool.len() + input.len(),
        HistoryItem::ToolOutput { output, .. } => output.len(),
    };
    bytes as u64
}

/// The estimated tokens of `items`.
#[must_use]
pub fn items_tokens(items: &[HistoryItem]) -> u64 {
    tokens(items.iter().map(item_bytes).sum())
}

/// What `conversation.context` says of a request: its parts, their sum, the largest items of the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fill {
    /// One part per kind this daemon knows, in the order of the request.
    pub parts: Vec<ContextPart>,
    /// The sum of the parts.
    pub estimate: ContextSize,
    /// The largest items of the history, largest first, at most [`LARGEST`].
    pub largest: Vec<ContextItem>,
}

/// The fill of the request that `prompt` (the next turn's, without the text of its prompt) makes after `history`,
/// whose first item is a compaction's summary when `summarised` (that item is the part `summary`, not a user
/// message).
#[must_use]
pub fn fill(prompt: &TurnPrompt, history: &[HistoryItem], summarised: bool) -> Fill {
    let (summary, history) = match history.split_first() {
        Some((first, rest)) if summarised => (item_bytes(first), rest),
        _ => (0, history),
    };
    let sizes = &prompt.sizes;
    let mut parts = vec![
        part(ContextPartKind::Tools, sizes.tools, 0),
        part(ContextPartKind::Instructions, sizes.base, 0),
        part(ContextPartKind::Mode, sizes.mode, 0),
        ContextPart {
            files: files(&prompt.files),
            ..part(ContextPartKind::ProjectInstructions, sizes.project, 0)
        },
        part(ContextPartKind::Summary, summary, u64::from(summary > 0)),
    ];
    let (history_parts, largest) = history_fill(history);
    parts.extend(history_parts);
    parts.push(part(ContextPartKind::Environment, sizes.environment, 0));
    parts.push(part(ContextPartKind::Notes, sizes.notes, 0));
    let estimate = ContextSize {
        bytes: parts.iter().map(|p| p.bytes).sum(),
        tokens: parts.iter().map(|p| p.tokens).sum(),
    };
    Fill {
        parts,
        estimate,
        largest,
    }
}

fn part(kind: ContextPartKind, bytes: u64, items: u64) -> ContextPart {
    ContextPart {
        kind,
        bytes,
        tokens: tokens(bytes),
        items,
        files: Vec::new(),
    }
}

/// The history's parts (user messages, assistant messages, reasoning, tool calls, tool outputs) and its largest
/// items.
fn history_fill(history: &[HistoryItem]) -> (Vec<ContextPart>, Vec<ContextItem>) {
    const KINDS: [ContextPartKind; 5] = [
        ContextPartKind::UserMessages,
        ContextPartKind::AssistantMessages,
        ContextPartKind::Reasoning,
        ContextPartKind::ToolCalls,
        ContextPartKind::ToolOutputs,
    ];
    let mut sums = [(0u64, 0u64); KINDS.len()];
    let mut items = Vec::with_capacity(history.len());
    let mut tools: HashMap<&str, &str> = HashMap::new();
    for item in history {
        let (index, label) = match item {
            HistoryItem::UserText { .. } => (0, "user message"),
            HistoryItem::AssistantText { .. } => (1, "assistant message"),
            HistoryItem::Reasoning { .. } => (2, "reasoning"),
            HistoryItem::ToolCall { call_id, tool, .. } => {
                tools.insert(call_id, tool);
                (3, tool.as_str())
            }
            HistoryItem::ToolOutput { call_id, .. } => {
                let tool = tools.get(call_id.as_str()).copied().unwrap_or("tool output");
                (4, tool)
            }
        };
        let bytes = item_bytes(item);
        sums[index].0 += bytes;
        sums[index].1 += 1;
        items.push(ContextItem {
            kind: KINDS[index],
            label: label.to_owned(),
            bytes,
            tokens: tokens(bytes),
        });
    }
    // Largest first; the earlier item first among equals (a stable sort).
    items.sort_by_key(|item| std::cmp::Reverse(item.bytes));
    items.truncate(LARGEST);
    let parts = KINDS
        .iter()
        .zip(sums)
        .map(|(&kind, (bytes, count))| part(kind, bytes, count))
        .collect();
    (parts, items)
}

/// The instruction files as the wire names them: what was read, its size, whether it was cut, or why not.
#[must_use]
pub fn files(files: &[DocFile]) -> Vec<InstructionFile> {
    files
        .iter()
        .map(|file| {
            let (state, bytes, total, reason) = match &file.outcome {
                Outcome::Read { bytes, total } if bytes < total => {
                    (InstructionFileState::Cut, *bytes, Some(*total), None)
                }
                Outcome::Read { bytes, total } => (InstructionFileState::Read, *bytes, Some(*total), None),
                Outcome::Masked => (InstructionFileState::Masked, 0, None, None),
                Outcome::LinkOutside { .. } => (InstructionFileState::LinkOutside, 0, None, None),
                Outcome::OverBudget { total } => (InstructionFileState::OverBudget, 0, Some(*total), None),
                Outcome::Unreadable(reason) => (InstructionFileState::Unreadable, 0, None, Some(reason.clone())),
            };
            InstructionFile {
                path: file.path.clone(),
                scope: match file.scope {
                    Scope::Global => InstructionScope::Global,
                    Scope::Project => InstructionScope::Project,
                },
                state,
                bytes,
                total,
                reason,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::{PromptState, Variant};
    use efr_protocol::wire::Mode;

    fn doc(path: &str, outcome: Outcome) -> DocFile {
        DocFile {
            path: path.into(),
            scope: Scope::Project,
            text: String::new(),
            outcome,
        }
    }

    #[test]
    fn every_part_is_there_once_in_the_order_of_the_request_and_sums_to_the_estimate() {
        let prompt =
            PromptState::default().turn(Variant::Full, Mode::Auto, Vec::new(), "<environment>\n</environment>\n");
        let history = vec![
            HistoryItem::UserText { text: "hello".into() },
            HistoryItem::ToolCall {
                call_id: "c1".into(),
                tool: "shell".into(),
                freeform: false,
                input: "{\"command\":\"ls\"}".into(),
            },
            HistoryItem::ToolOutput {
                call_id: "c1".into(),
                output: "x".repeat(4_001),
                is_error: false,
            },
            HistoryItem::AssistantText { text: "done".into() },
        ];
        let fill = fill(&prompt, &history, false);
        let kinds: Vec<_> = fill.parts.iter().map(|p| p.kind).collect();
        let known: Vec<_> = ContextPartKind::ALL
            .iter()
            .copied()
            .filter(|k| *k != ContextPartKind::Unknown)
            .collect();
        assert_eq!(kinds, known);
        assert_eq!(fill.estimate.bytes, fill.parts.iter().map(|p| p.bytes).sum::<u64>());
        let outputs = &fill.parts[9];
        assert_eq!(
            (outputs.kind, outputs.bytes, outputs.tokens, outputs.items),
            (ContextPartKind::ToolOutputs, 4_001, 1_001, 1)
        );
        assert_eq!(fill.parts[0].bytes, prompt.sizes.tools);
        assert_eq!(fill.largest[0].label, "shell");
        assert_eq!(fill.largest[0].kind, ContextPartKind::ToolOutputs);
        assert_eq!(fill.largest.len(), 4);
    }

    #[test]
    fn a_cut_file_says_so_with_both_sizes() {
        let listed = files(&[
            doc("/p/AGENTS.md", Outcome::Read { bytes: 10, total: 10 }),
            doc("/p/a/AGENTS.md", Outcome::Read { bytes: 6, total: 90 }),
            doc("/p/a/b/AGENTS.md", Outcome::OverBudget { total: 7 }),
            doc("/p/a/b/c/AGENTS.md", Outcome::Unreadable("it is not UTF-8".into())),
        ]);
        let states: Vec<_> = listed.iter().map(|f| (f.state, f.bytes, f.total)).collect();
        assert_eq!(
            states,
            [
                (InstructionFileState::Read, 10, Some(10)),
                (InstructionFileState::Cut, 6, Some(90)),
                (InstructionFileState::OverBudget, 0, Some(7)),
                (InstructionFileState::Unreadable, 0, None),
            ]
        );
        assert_eq!(listed[3].reason.as_deref(), Some("it is not UTF-8"));
    }
}
