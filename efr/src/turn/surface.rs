//! How efr shows the surface changes of auto's contained calls (`docs/auto.md`, "Surface changes"): the files a
//! call wrote that code outside the sandbox runs from, the question whether to keep each, and the turn's report.
//! Paths are the model's doing, so every line is made [`printable`].

use efr_protocol::events::{SandboxSurfaceChanged, SurfaceQuestionRequested, TurnSurfaceReport};
use efr_protocol::wire::{FileChangeKind, SurfaceChange, SurfaceKind, SurfaceOutcome};

use crate::clean::printable;

/// What runs a surface, in words.
#[must_use]
pub fn surface_words(kind: SurfaceKind) -> &'static str {
    match kind {
        SurfaceKind::PathExecutable => "a command on your PATH",
        SurfaceKind::PackageBin => "a package's command on your PATH",
        SurfaceKind::Envrc => "direnv runs it",
        SurfaceKind::GitHook => "a git hook",
        SurfaceKind::TaskFile => "a git hook runs its targets",
        SurfaceKind::EditorTasks => "the editor runs its tasks",
        SurfaceKind::PreCommitConfig => "pre-commit runs its hooks",
        SurfaceKind::Unknown => "code outside the sandbox runs it",
    }
}

fn change_word(kind: FileChangeKind) -> &'static str {
    match kind {
        FileChangeKind::Added => "new",
        FileChangeKind::Modified => "changed",
        FileChangeKind::Deleted => "deleted",
        FileChangeKind::Renamed => "moved",
    }
}

fn change_text(change: &SurfaceChange) -> String {
    format!(
        "{} {} ({})",
        change_word(change.change),
        change.path.display(),
        surface_words(change.surface)
    )
}

/// The lines of sandbox_surface_changed: one per file, `surface: new .githooks/pre-commit (a git hook)`.
#[must_use]
pub fn changed_lines(changed: &SandboxSurfaceChanged) -> Vec<String> {
    changed
        .changes
        .iter()
        .map(|change| printable(&format!("surface: {}", change_text(change))).into_owned())
        .collect()
}

/// The line of a surface question in a transcript, or the question asked on a terminal (with its keys).
#[must_use]
pub fn question_text(question: &SurfaceQuestionRequested, keys: bool) -> String {
    let held = if question.held {
        "; not executable until you keep it"
    } else {
        ""
    };
    let text = format!(
        "keep {} ({}, written in the sandbox, runs outside it{held}) [{}]?",
        question.change.path.display(),
        surface_words(question.change.surface),
        question.question_id
    );
    let keys = if keys { "  [y]es / [n]o " } else { "" };
    printable(&format!("{text}{keys}")).into_owned()
}

fn outcome_word(outcome: SurfaceOutcome) -> &'static str {
    match outcome {
        SurfaceOutcome::Kept => "kept",
        SurfaceOutcome::Removed => "removed (in efr's trash)",
        SurfaceOutcome::Pending => "waits for your answer",
        SurfaceOutcome::Failed => "could not be put back",
        SurfaceOutcome::Unknown => "unknown",
    }
}

/// The lines of turn_surface_report: a head line, then one per file with what became of it.
#[must_use]
pub fn report_lines(report: &TurnSurfaceReport) -> Vec<String> {
    std::iter::once(format!("surface report: {} file(s)", report.files.len()))
        .chain(report.files.iter().map(|file| {
            printable(&format!(
                "  {}: {}",
                change_text(&file.change),
                outcome_word(file.outcome)
            ))
            .into_owned()
        }))
        .collect()
}

/// The word shown after an answer given here.
#[must_use]
pub fn answer_word(keep: bool, outcome: SurfaceOutcome) -> String {
    match (keep, outcome) {
        (_, SurfaceOutcome::Failed) => "(not put back: see the turn's report)".to_owned(),
        (true, _) => "kept".to_owned(),
        (false, _) => "removed (in efr's trash)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn surface_events_read_as_lines_and_a_path_cannot_move_the_cursor() {
        let changed: SandboxSurfaceChanged = serde_json::from_value(json!({
            "call_id": "c1",
            "changes": [
                {"path": ".githooks/pre-commit", "surface": "git_hook", "change": "added", "runs_code": true},
                {"path": "bin/\u{1b}[2Jx", "surface": "path_executable", "change": "deleted"}
            ]
        }))
        .unwrap();
        let lines = changed_lines(&changed);
        assert_eq!(lines[0], "surface: new .githooks/pre-commit (a git hook)");
        assert!(!lines[1].contains('\u{1b}'), "{lines:?}");
        let question: SurfaceQuestionRequested = serde_json::from_value(json!({
            "question_id": "s1", "call_id": "c1", "held": true,
            "change": {"path": ".githooks/pre-commit", "surface": "git_hook", "change": "added", "runs_code": true}
        }))
        .unwrap();
        assert_eq!(
            question_text(&question, true),
            "keep .githooks/pre-commit (a git hook, written in the sandbox, runs outside it; not executable until \
             you keep it) [s1]?  [y]es / [n]o "
        );
        let report: TurnSurfaceReport = serde_json::from_value(json!({"files": [
            {"call_id": "c1", "question_id": "s1", "outcome": "pending",
             "change": {"path": ".envrc", "surface": "envrc", "change": "modified", "runs_code": true}},
            {"call_id": "c1", "outcome": "kept",
             "change": {"path": "bin/x", "surface": "surprise", "change": "deleted"}}
        ]}))
        .unwrap();
        assert_eq!(
            report_lines(&report),
            [
                "surface report: 2 file(s)",
                "  changed .envrc (direnv runs it): waits for your answer",
                "  deleted bin/x (code outside the sandbox runs it): kept",
            ]
        );
    }
}
