//! What the model is told: the base instructions, the turn's mode, the project's instructions, the environment
//! block and the per-provider form of the tools (docs/context.md; the structure is in
//! docs/adr/0012-what-the-model-is-told.md).
//!
//! The request's prefix, in order, and what may change it:
//! 1. the tools (Anthropic sends them before the system prompt), the same for every turn of a provider;
//! 2. the instructions: the base text ([`BASE`], or [`BASE_SHORT`]), the mode section of the conversation's first
//!    turn, and the project instructions as read at that turn ([`project`]). They are pinned for the conversation
//!    ([`PromptState`]): byte-stable, so prompt caches hit;
//! 3. the history, which only grows; each turn's prompt starts with that turn's environment block
//!    ([`environment`]) and the notes of what changed since the last turn: `<mode_changed>` (the new mode's section)
//!    and `<instructions_changed>` (a project instruction file changed, with its new text). A note is appended, never
//!    written into the pinned instructions, so history is never rewritten.
//!
//! The texts are Markdown files in `efrd/src/prompt/text/`, built into efrd (`include_str!`); a change to one shows in
//! the golden requests of `efrd/tests/suite/prompt_golden.rs` as a reviewed diff.

pub mod context;
pub mod environment;
pub mod project;

use std::fmt::Write as _;

use efr_protocol::wire::Mode;

use self::project::{DocFile, Outcome, Scope};
use efr_model::{ProviderKind, Tool};

/// The base instructions.
pub const BASE: &str = include_str!("text/base.md");
/// The short base instructions, for small local models (`[instructions] short` with `openai-compat`).
pub const BASE_SHORT: &str = include_str!("text/base_short.md");
/// The description of `apply_patch`, the same text in each provider's form of the tool.
pub const APPLY_PATCH: &str = include_str!("text/apply_patch.md");
/// The short description of `apply_patch`.
pub const APPLY_PATCH_SHORT: &str = include_str!("text/apply_patch_short.md");

/// Which texts a request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// The full texts.
    Full,
    /// The short texts: `openai-compat` with `[instructions] short = true`.
    Short,
}

impl Variant {
    /// The variant of a provider: short only for `openai-compat` when `short` is set.
    #[must_use]
    pub fn of(kind: ProviderKind, short: bool) -> Self {
        if short && kind == ProviderKind::OpenAiCompat {
            Self::Short
        } else {
            Self::Full
        }
    }

    /// The base instructions of this variant.
    #[must_use]
    pub fn base(self) -> &'static str {
        match self {
            Self::Full => BASE,
            Self::Short => BASE_SHORT,
        }
    }

    /// The tools of this variant. `apply_patch` is a freeform tool; each provider module gives it its own form:
    /// a `custom` tool for Responses, the JSON fallback with the same description for Messages and Chat
    /// Completions (docs/architecture.md, "Tools").
    #[must_use]
    pub fn tools(self) -> Vec<Tool> {
        let patch = match self {
            Self::Full => APPLY_PATCH,
            Self::Short => APPLY_PATCH_SHORT,
        };
        crate::tools::spec::model_tools_with(patch.trim_end())
    }
}

/// The section of the instructions that says what a mode lets run.
#[must_use]
pub fn mode_section(mode: Mode) -> &'static str {
    match mode {
        // A mode this efrd does not know never runs a turn; the strictest text fits it.
        Mode::Manual | Mode::Unknown => include_str!("text/mode_manual.md"),
        Mode::Cautious => include_str!("text/mode_cautious.md"),
        Mode::Auto => include_str!("text/mode_auto.md"),
        Mode::Full => include_str!("text/mode_full.md"),
    }
}

/// A mode's wire name.
#[must_use]
pub fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Manual => "manual",
        Mode::Cautious => "cautious",
        Mode::Auto => "auto",
        Mode::Full => "full",
        Mode::Unknown => "unknown",
    }
}

/// The project instructions as the instructions carry them; empty when no file was read or listed.
#[must_use]
pub fn project_block(files: &[DocFile]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "# Project instructions\n\nFrom the user's instruction files, most general first. A file applies to the \
         folder that holds it and below; where two disagree, the more specific (later) one wins, and the user's \
         prompt wins over both.\n",
    );
    for file in files {
        let place = match file.scope {
            Scope::Global => " (the user's own, for every project)",
            Scope::Project => "",
        };
        let _ = write!(out, "\n## {}{place}\n\n", file.path.display());
        match &file.outcome {
            Outcome::Read { .. } => out.push_str(&file.text),
            other => {
                let _ = writeln!(out, "[efr: not read: {}]", not_read_reason(other));
            }
        }
    }
    out
}

/// Why a file was not read, in words.
#[must_use]
pub fn not_read_reason(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Read { .. } => "read".to_owned(),
        Outcome::Masked => "it is in a folder that efr's sandbox masks".to_owned(),
        Outcome::LinkOutside { .. } => "it is a link that leads outside the project".to_owned(),
        Outcome::OverBudget { total } => {
            format!("the files before it used up [instructions] max_bytes ({total} bytes left out)")
        }
        Outcome::Unreadable(reason) => reason.clone(),
    }
}

/// The instructions of a conversation: base, mode section, project block.
#[must_use]
pub fn instructions(variant: Variant, mode: Mode, files: &[DocFile]) -> String {
    let mut out = String::new();
    out.push_str(variant.base());
    out.push('\n');
    out.push_str(mode_section(mode));
    let project = project_block(files);
    if !project.is_empty() {
        out.push('\n');
        out.push_str(&project);
    }
    out
}

/// What the instructions were built from: pinned at a conversation's first turn.
#[derive(Debug, Clone)]
struct Pinned {
    variant: Variant,
    mode: Mode,
    files: Vec<DocFile>,
    text: String,
}

/// The sizes of one turn's parts, for `conversation.context`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartSizes {
    /// The base instructions, in bytes.
    pub base: u64,
    /// The mode section, in bytes.
    pub mode: u64,
    /// The project block, in bytes.
    pub project: u64,
    /// The tools as JSON, in bytes.
    pub tools: u64,
    /// The environment block, in bytes.
    pub environment: u64,
    /// The notes of the turn (mode and instruction changes), in bytes.
    pub notes: u64,
}

/// One turn's prompt: the pinned instructions, the tools, and what goes before the prompt's text.
#[derive(Debug, Clone)]
pub struct TurnPrompt {
    /// The instructions (pinned: the same bytes every turn of the conversation).
    pub instructions: String,
    /// The tools in this variant.
    pub tools: Vec<Tool>,
    /// The environment block and the notes, to put before the prompt's text.
    pub preamble: String,
    /// The environment block alone: the fresh context block a compaction sends before its summary.
    pub environment: String,
    /// The instruction files as read at this turn (for `efr context`).
    pub files: Vec<DocFile>,
    /// The parts' sizes.
    pub sizes: PartSizes,
}

/// A conversation's memory of what its model was told: the pinned instructions, the mode and the files it knows.
/// It lives in the conversation's actor; after a restart the first turn pins anew (one cache miss).
#[derive(Debug, Clone, Default)]
pub struct PromptState {
    pinned: Option<Pinned>,
    told_mode: Option<Mode>,
    known_files: Vec<DocFile>,
}

impl PromptState {
    /// The prompt of a turn with `mode`, given the files read now and the environment block; records what the model
    /// now knows (the notes are given once).
    pub fn turn(&mut self, variant: Variant, mode: Mode, files: Vec<DocFile>, environment: &str) -> TurnPrompt {
        let mut notes = String::new();
        match &self.pinned {
            None => {}
            Some(_) => {
                if let Some(told) = self.told_mode
                    && told != mode
                {
                    notes.push_str(&mode_note(told, mode));
                }
                let changed = instructions_note(&self.known_files, &files);
                notes.push_str(&changed);
            }
        }
        let pinned = match self.pinned.take() {
            Some(pinned) if pinned.variant == variant => pinned,
            // First turn, or the provider changed the variant: a new prefix (the cache starts over anyway).
            other => {
                let (mode, files) = other.map_or((mode, files.clone()), |p| (p.mode, p.files));
                Pinned {
                    variant,
                    mode,
                    text: instructions(variant, mode, &files),
                    files,
                }
            }
        };
        let tools = variant.tools();
        let sizes = PartSizes {
            base: variant.base().len() as u64 + 1,
            mode: mode_section(pinned.mode).len() as u64,
            project: project_block(&pinned.files).len() as u64 + u64::from(!pinned.files.is_empty()),
            tools: serde_json::to_string(&tools).map_or(0, |json| json.len() as u64),
            environment: environment.len() as u64,
            notes: notes.len() as u64,
        };
        let prompt = TurnPrompt {
            instructions: pinned.text.clone(),
            tools,
            preamble: format!("{environment}{notes}"),
            environment: environment.to_owned(),
            files: files.clone(),
            sizes,
        };
        self.pinned = Some(pinned);
        self.told_mode = Some(mode);
        self.known_files = files;
        prompt
    }
}

fn mode_note(from: Mode, to: Mode) -> String {
    format!(
        "<mode_changed>\nThe user changed the permission mode from {} to {}. From this turn on, this replaces the \
         mode section of the instructions:\n\n{}</mode_changed>\n",
        mode_name(from),
        mode_name(to),
        mode_section(to)
    )
}

/// The note for instruction files that changed, appeared or went away since `known`; empty when none did.
fn instructions_note(known: &[DocFile], now: &[DocFile]) -> String {
    let mut out = String::new();
    for file in now {
        let before = known.iter().find(|k| k.path == file.path);
        if before.is_some_and(|b| b.outcome == file.outcome && b.text == file.text) {
            continue;
        }
        let what = if before.is_some() { "changed" } else { "is new" };
        let _ = write!(out, "\n## {} ({what})\n\n", file.path.display());
        match &file.outcome {
            Outcome::Read { .. } => out.push_str(&file.text),
            other => {
                let _ = writeln!(out, "[efr: not read: {}]", not_read_reason(other));
            }
        }
    }
    for file in known {
        if !now.iter().any(|n| n.path == file.path) {
            let _ = write!(
                out,
                "\n## {} (removed)\n\nIts instructions no longer apply.\n",
                file.path.display()
            );
        }
    }
    if out.is_empty() {
        return out;
    }
    format!(
        "<instructions_changed>\nInstruction files changed since the instructions were written; what follows \
         replaces what they say for these files.\n{out}</instructions_changed>\n"
    )
}

#[cfg(test)]
mod tests;
