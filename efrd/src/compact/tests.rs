//! The rules of compaction without a model: the cut (kept turns, shortened outputs, left-out turns, the earlier
//! summary never lost), the copy after a compaction (the same live and from the log), the meter and the limits.

use efr_model::{HistoryItem, Usage};
use efr_protocol::ids::TurnId;
use efr_protocol::wire::{CompactTrigger, Compaction};

use super::*;
use crate::config::context::ContextSection;

fn turn(history: &mut ModelHistory, n: usize, output_bytes: usize) -> TurnId {
    let id = TurnId::new();
    history.push_prompt(id, format!("PROMPT-{n}"));
    history.push(HistoryItem::tool_call(
        format!("c{n}"),
        "shell".into(),
        false,
        "{}".into(),
    ));
    history.push(HistoryItem::ToolOutput {
        call_id: format!("c{n}"),
        output: format!("OUT-{n}:{}", "x".repeat(output_bytes)),
        is_error: false,
    });
    history.push(HistoryItem::AssistantText {
        text: format!("ANSWER-{n}"),
    });
    id
}

fn rules(keep_turns: u32, keep_budget: u64, material_budget: u64) -> CutRules {
    CutRules {
        keep_turns,
        keep_budget,
        material_budget,
    }
}

fn compaction(kept_turns: u32, through_turn: TurnId) -> Compaction {
    Compaction {
        compaction_id: efr_protocol::ids::CompactionId::new(),
        trigger: CompactTrigger::Manual,
        focus: None,
        model: "gpt-5".into(),
        window: 1_000,
        limit: 800,
        tokens_before: 900,
        tokens_after: 100,
        through_turn,
        through_message: None,
        kept_turns,
        pruned_outputs: 0,
        pruned_tokens: 0,
        omitted_turns: 0,
        omitted_messages: 0,
        summary: "SUMMARY-A".into(),
        usage: efr_protocol::wire::Usage::default(),
        fresh: Some("<environment>\n</environment>\n".into()),
    }
}

fn texts(items: &[HistoryItem]) -> String {
    items
        .iter()
        .map(|item| match item {
            HistoryItem::UserText { text } | HistoryItem::AssistantText { text } => text.clone(),
            HistoryItem::ToolOutput { output, .. } => output.clone(),
            _ => String::new(),
        })
        .collect::<Vec<_>>()
        .join("|")
}

#[test]
fn the_newest_turns_stay_whole_and_the_rest_is_summarised() {
    let mut history = ModelHistory::default();
    let ids: Vec<TurnId> = (0..5).map(|n| turn(&mut history, n, 10)).collect();
    let cut = cut(&history, None, &rules(2, 10_000, 10_000)).unwrap();
    assert_eq!(cut.kept_turns, 2);
    assert_eq!(cut.through_turn, ids[2]);
    let material = texts(&cut.material);
    assert!(material.contains("PROMPT-0") && material.contains("PROMPT-2") && !material.contains("PROMPT-3"));
    let after = history.compacted(&compaction(cut.kept_turns, cut.through_turn), None);
    let text = texts(after.items());
    assert!(
        text.starts_with("<environment>") && text.contains("SUMMARY-A"),
        "{text}"
    );
    assert!(
        text.contains("PROMPT-3") && text.contains("PROMPT-4") && !text.contains("PROMPT-2"),
        "{text}"
    );
    assert_eq!(after.turns().iter().map(|t| t.turn_id).collect::<Vec<_>>(), ids[3..]);
    assert!(after.is_summarised() && after.summary_bytes() > 0);
}

#[test]
fn kept_turns_shrink_to_their_budget_and_something_is_always_covered() {
    let mut history = ModelHistory::default();
    for n in 0..3 {
        turn(&mut history, n, 4_000);
    }
    // Each turn is over 1000 tokens: a keep budget of 1500 keeps one.
    assert_eq!(cut(&history, None, &rules(2, 1_500, 100_000)).unwrap().kept_turns, 1);
    // Two turns and keep_turns 2: one is kept, so that one is summarised.
    let mut two = ModelHistory::default();
    turn(&mut two, 0, 10);
    turn(&mut two, 1, 10);
    assert_eq!(cut(&two, None, &rules(2, 100_000, 100_000)).unwrap().kept_turns, 1);
    assert!(cut(&ModelHistory::default(), None, &rules(2, 100, 100)).is_none());
}

#[test]
fn a_running_turn_keeps_its_prompt_and_its_work_is_covered() {
    let mut history = ModelHistory::default();
    let first = turn(&mut history, 0, 10);
    let running = TurnId::new();
    history.push_prompt(running, "PROMPT-RUNNING".into());
    // Only its prompt so far: the finished turn is covered, nothing of the running one.
    let at_start = cut(&history, Some(running), &rules(0, 100_000, 100_000)).unwrap();
    assert_eq!((at_start.through_turn, at_start.covers_running), (first, false));
    history.push(HistoryItem::AssistantText {
        text: "WORK-SO-FAR".into(),
    });
    let during = cut(&history, Some(running), &rules(0, 100_000, 100_000)).unwrap();
    assert_eq!((during.through_turn, during.covers_running), (running, true));
    assert!(texts(&during.material).contains("WORK-SO-FAR"));
    let after = history.compacted(&compaction(0, running), Some(running));
    let text = texts(after.items());
    assert!(text.ends_with("PROMPT-RUNNING") && !text.contains("WORK-SO-FAR") && !text.contains("PROMPT-0"));
    assert_eq!(after.turns().len(), 1);
}

#[test]
fn old_outputs_are_shortened_first_then_old_turns_left_out_never_the_earlier_summary() {
    let mut history = ModelHistory::default();
    turn(&mut history, 0, 10);
    turn(&mut history, 1, 10);
    let history = history.compacted(&compaction(0, TurnId::new()), None);
    let mut history = history;
    for n in 2..8 {
        turn(&mut history, n, 20_000);
    }
    // Shortening alone fits: every long output is cut to its head and tail, oldest first.
    let shortened = cut(&history, None, &rules(0, 0, 4_000)).unwrap();
    assert!(shortened.pruned_outputs > 0 && shortened.pruned_tokens > 0 && shortened.omitted_turns == 0);
    assert!(texts(&shortened.material).contains("left out of the summary's request"));
    // A budget too small for shortening: the oldest turns are left out, the earlier summary stays first.
    let tight = cut(&history, None, &rules(0, 0, 1_000)).unwrap();
    assert!(tight.omitted_turns > 0 && tight.omitted_messages >= 2 * tight.omitted_turns);
    let material = texts(&tight.material);
    assert!(
        material.starts_with("<environment>") && material.contains("SUMMARY-A"),
        "{material}"
    );
    assert!(
        !material.contains("PROMPT-2") && material.contains("PROMPT-7"),
        "{material}"
    );
}

#[test]
fn a_shortened_output_keeps_its_head_and_tail_on_character_boundaries() {
    let output = format!("{}{}", "ü".repeat(2_000), "END");
    let short = cut::shorten(&output);
    assert!(short.len() < output.len() && short.ends_with("END"));
    assert!(short.contains("bytes of this output were left out"));
}

#[test]
fn the_meter_adds_the_estimate_of_what_came_after_the_last_count() {
    let mut meter = Meter::new(100);
    let items = vec![HistoryItem::UserText { text: "x".repeat(400) }];
    assert_eq!(meter.tokens(&items), 200, "no count yet: the prefix and the estimate");
    let usage = Usage {
        input: 900,
        output: 100,
        ..Usage::default()
    };
    meter.counted(&usage, 400);
    let mut more = items.clone();
    more.push(HistoryItem::AssistantText { text: "y".repeat(40) });
    assert_eq!(meter.tokens(&more), 1_010);
    assert_eq!(meter.last_count(), Some(1_000));
    meter.reset();
    assert_eq!(meter.tokens(&more), 210);
}

#[test]
fn the_limits_follow_the_config_and_assume_a_window_when_unknown() {
    let limits = Limits::of(&ContextSection::default(), Some(200_000));
    assert_eq!(
        (limits.window, limits.trigger, limits.hard_cap),
        (200_000, 160_000, 200_000)
    );
    assert!(limits.window_known && limits.auto);
    let unknown = Limits::of(&ContextSection::default(), None);
    assert_eq!((unknown.window, unknown.window_known), (meter::ASSUMED_WINDOW, false));
    assert_eq!(summary_max_output(8_000), 800);
    assert_eq!(summary_max_output(2_000), 512);
    assert_eq!(summary_max_output(1_000_000), 8_192);
}

#[test]
fn the_summary_request_shares_the_prefix_and_ends_with_the_request_and_the_focus() {
    let mut base = efr_model::ModelRequest::new("gpt-5");
    base.instructions = "INSTRUCTIONS".into();
    let request = summary_request(
        &base,
        vec![HistoryItem::UserText { text: "a".into() }],
        Some("THE PARSER"),
        900,
    );
    assert_eq!(request.instructions, "INSTRUCTIONS");
    assert_eq!(request.max_output, Some(900));
    let HistoryItem::UserText { text } = request.history.last().unwrap() else {
        panic!("the request is last");
    };
    assert!(text.starts_with(REQUEST) && text.contains("<focus>\nTHE PARSER\n</focus>"));
}

#[test]
fn the_prompt_of_a_turn_that_never_started_is_taken_back_alone() {
    let mut history = ModelHistory::default();
    let first = turn(&mut history, 0, 10);
    let kept = history.clone();
    let never = TurnId::new();
    history.push_prompt(never, "PROMPT-NEVER".into());
    assert!(!history.pop_prompt(first), "only the last turn's prompt is taken back");
    assert!(history.pop_prompt(never));
    assert_eq!(history, kept, "the copy is as before the prompt");
    assert!(!history.pop_prompt(never), "taken back once");
    // A turn with more than its prompt is not taken back: its work is the model's.
    let running = TurnId::new();
    history.push_prompt(running, "PROMPT-RUNNING".into());
    history.push(HistoryItem::AssistantText { text: "WORK".into() });
    assert!(!history.pop_prompt(running));
    assert_eq!(history.turns().len(), 2);
}
